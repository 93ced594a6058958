"""The column kinds the differential test writes: Arrow type, values, literals, writers.

A kind's values are kept in a *storage* form that every writer and the oracle agree on:
ints, floats, ``Decimal``, ``str``, ``bytes``, ``bool``; dates as days since the epoch;
times and timestamps as integer ticks of the kind's unit (a timestamp with a zone holds
UTC instants, one without the wall-clock time); a struct as a dict of its children.

``literals`` turns a stored value into a literal a user would write for it, in one of the
forms the product documents for the type (a ``datetime`` or ISO text for a timestamp, an
int, float or exact ``Decimal`` for a number, ...); ``absent`` and ``edges`` give literals
that no row holds, and the values on and beyond the type's boundaries.
"""

from __future__ import annotations

import datetime as dt
import math
import random
import struct
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa

UTC = dt.timezone.utc
EPOCH = dt.datetime(1970, 1, 1)
EPOCH_DATE = dt.date(1970, 1, 1)
#: Nanoseconds per tick of each Arrow time unit.
NANOS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}

Pool = Callable[[random.Random, int], list[Any]]
Literal = Callable[[random.Random, Any], Any]


@dataclass(frozen=True)
class Kind:
    """One column type: how to build it, fill it and probe it.

    ``group`` names the kinds a lake may mix for one column across files (the product
    promotes them: ints widen, text and its large and dictionary forms, floats, decimals);
    ``writers`` the writers that can write it; ``tables`` the table formats that take it.
    """

    name: str
    arrow: pa.DataType
    pool: Pool
    literal: Literal
    absent: Callable[[random.Random], list[Any]]
    edges: tuple[Any, ...] = ()
    group: str = ""
    writers: frozenset[str] = frozenset({"pyarrow", "duckdb"})
    tables: frozenset[str] = frozenset()
    bloom: bool = True  # pyarrow writes a filter for it
    indexable: bool = True  # the sidecar and lake indexes take it
    children: tuple[tuple[str, str], ...] = ()  # struct: (child name, child kind)
    drawn: bool = True  # a lake column may be drawn of it (else: only a shape adds it)

    def array(self, values: Sequence[Any]) -> pa.Array:
        """The Arrow array of stored values (None: null)."""
        return build_array(self, values)


# ---- value pools -----------------------------------------------------------------------


def _ints(low: int, high: int) -> Pool:
    def pool(rng: random.Random, n: int) -> list[Any]:
        edges = [low, high, 0, 1, -1] if low < 0 else [low, high, 0, 1]
        span = min(high - low, 10**6)
        centre = 0 if low < 0 else span // 4
        values = {
            rng.choice(edges)
            if rng.random() < 0.2
            else centre + rng.randrange(-span // 4, span // 4)
            for _ in range(n)
        }
        return sorted(v for v in values if low <= v <= high)

    return pool


def _floats(width: str) -> Pool:
    def pool(rng: random.Random, n: int) -> list[Any]:
        special = [0.0, -0.0, math.nan, math.inf, -math.inf, 1.5, -2.25]
        values: list[float] = []
        for _ in range(n):
            if rng.random() < 0.25:
                values.append(rng.choice(special))
            else:
                values.append(round_float(rng.uniform(-1000, 1000), width))
        return values

    return pool


def round_float(value: float, width: str) -> float:
    """``value`` rounded to the nearest float of ``width`` ('e', 'f' or 'd')."""
    if width == "d":
        return value
    return float(struct.unpack("<" + width, struct.pack("<" + width, value))[0])


def scaled(unscaled: int, scale: int) -> Decimal:
    """``unscaled * 10**-scale`` exactly (``Decimal.scaleb`` rounds to the context's digits)."""
    return Decimal(f"{unscaled}E-{scale}")


def _decimals(precision: int, scale: int) -> Pool:
    top = 10**precision - 1

    def pool(rng: random.Random, n: int) -> list[Any]:
        out = []
        for _ in range(n):
            roll = rng.random()
            if roll < 0.1:
                unscaled = rng.choice([top, -top, 0])
            elif roll < 0.5:
                unscaled = rng.randrange(-(10 ** min(precision, 6)), 10 ** min(precision, 6))
            else:
                unscaled = rng.randrange(-top, top + 1)
            out.append(scaled(unscaled, scale))
        return out

    return pool


_ALPHABET = ["a", "b", "k", "é", "日", "🦆", "'", " ", "z"]


def _texts(rng: random.Random, n: int) -> list[Any]:
    out = {""} if rng.random() < 0.3 else set()
    while len(out) < n:
        out.add("".join(rng.choice(_ALPHABET) for _ in range(rng.randrange(1, 6))))
    return sorted(out)


def _bytes(width: int | None) -> Pool:
    def pool(rng: random.Random, n: int) -> list[Any]:
        out: set[bytes] = set()
        if width is None and rng.random() < 0.3:
            out.add(b"")
        while len(out) < n:
            size = width if width is not None else rng.randrange(1, 6)
            out.add(bytes(rng.choice([0, 1, 0x30, 0x61, 0x7F, 0x80, 0xFF]) for _ in range(size)))
        return sorted(out)

    return pool


def _days(rng: random.Random, n: int) -> list[Any]:
    edges = [0, -1, 19723, -25567]  # epoch, the day before, 2024-01-01, 1900-01-01
    return [
        rng.choice(edges) if rng.random() < 0.2 else rng.randrange(-4000, 30000) for _ in range(n)
    ]


def _ticks(unit: str) -> Pool:
    per_second = 10**9 // NANOS[unit]

    def pool(rng: random.Random, n: int) -> list[Any]:
        out = []
        for _ in range(n):
            seconds = (
                rng.choice([0, -1, 1_700_000_000])
                if rng.random() < 0.2
                else rng.randrange(-(10**9), 2 * 10**9)
            )
            out.append(seconds * per_second + rng.randrange(per_second))
        return out

    return pool


def _clock(unit: str) -> Pool:
    day = 86_400 * 10**9 // NANOS[unit]

    def pool(rng: random.Random, n: int) -> list[Any]:
        return [
            rng.choice([0, day - 1]) if rng.random() < 0.2 else rng.randrange(day) for _ in range(n)
        ]

    return pool


def _uuids(rng: random.Random, n: int) -> list[Any]:
    return [uuid.UUID(int=rng.getrandbits(128)).bytes for _ in range(n)]


def _bools(rng: random.Random, n: int) -> list[Any]:
    return [True, False][: max(1, min(n, 2))]


# ---- literals of a stored value ----------------------------------------------------------


def _int_literal(rng: random.Random, v: int) -> Any:
    roll = rng.random()
    if roll < 0.1 and abs(v) < 2**53:
        return float(v)
    if roll < 0.2:
        return Decimal(v)
    return v


def _float_literal(rng: random.Random, v: float) -> Any:
    if math.isfinite(v) and v == int(v) and abs(v) < 2**53 and rng.random() < 0.2:
        return int(v)
    if math.isfinite(v) and rng.random() < 0.2:
        return Decimal(v)  # the exact binary value as a decimal
    return v


def _decimal_literal(rng: random.Random, v: Decimal) -> Any:
    if v == v.to_integral_value() and rng.random() < 0.3:
        return int(v)
    if rng.random() < 0.2:
        return Decimal(str(v) + "0") if "E" not in str(v) and "." in str(v) else v
    return v


def _text_literal(rng: random.Random, v: str) -> Any:
    return v


def _bytes_literal(rng: random.Random, v: bytes) -> Any:
    if rng.random() < 0.2 and v.isascii() and v.isalnum():
        return v.decode()  # a str probes its UTF-8 bytes
    return v


def _uuid_literal(rng: random.Random, v: bytes) -> Any:
    roll = rng.random()
    if roll < 0.4:
        return uuid.UUID(bytes=v)
    if roll < 0.8:
        return str(uuid.UUID(bytes=v))
    return v


def _date_literal(rng: random.Random, days: int) -> Any:
    day = EPOCH_DATE + dt.timedelta(days=days)
    return day.isoformat() if rng.random() < 0.3 else day


def _iso_fraction(nanos: int) -> str:
    return "" if nanos == 0 else "." + f"{nanos:09d}".rstrip("0")


def timestamp_literal(unit: str, zone: str | None) -> Literal:
    """Literals for a timestamp column: a ``datetime`` when microseconds say it all, else
    ISO text; aware (with a random offset) for a column with a zone, naive otherwise."""

    def literal(rng: random.Random, ticks: int) -> Any:
        nanos = ticks * NANOS[unit]
        seconds, frac = divmod(nanos, 10**9)
        wall = EPOCH + dt.timedelta(seconds=seconds)
        offset = dt.timedelta(minutes=rng.choice([0, 0, 60, -330, 840]))
        if zone is not None:
            wall = (wall.replace(tzinfo=UTC) + offset).replace(tzinfo=dt.timezone(offset))
        if frac % 1000 == 0 and rng.random() < 0.7:
            return wall + dt.timedelta(microseconds=frac // 1000)
        text = wall.replace(tzinfo=None).isoformat(sep=rng.choice("T "))
        text += _iso_fraction(frac)
        if zone is not None:
            text += (
                "Z" if offset == dt.timedelta(0) and rng.random() < 0.5 else wall.isoformat()[-6:]
            )
        return text

    return literal


def _far_future(zone: str | None) -> Callable[[random.Random], list[Any]]:
    def absent(rng: random.Random) -> list[Any]:
        return [dt.datetime(2199, 1, 1, tzinfo=UTC if zone else None)]

    return absent


def time_literal(unit: str) -> Literal:
    def literal(rng: random.Random, ticks: int) -> Any:
        nanos = ticks * NANOS[unit]
        seconds, frac = divmod(nanos, 10**9)
        clock = (EPOCH + dt.timedelta(seconds=seconds)).time()
        if frac % 1000 == 0 and rng.random() < 0.7:
            return clock.replace(microsecond=frac // 1000)
        return clock.isoformat() + _iso_fraction(frac)

    return literal


def _same(rng: random.Random, v: Any) -> Any:
    return v


# ---- absent and boundary literals -----------------------------------------------------------


def _absent_ints(low: int, high: int) -> Callable[[random.Random], list[Any]]:
    def absent(rng: random.Random) -> list[Any]:
        return [rng.randrange(low, high) if high - low > 2 else low, 3.5, Decimal("2.5")]

    return absent


def _absent_floats(rng: random.Random) -> list[Any]:
    return [rng.uniform(-1e6, 1e6), 0.1, Decimal("0.1"), 2**60 + 1]


def _absent_decimals(precision: int, scale: int) -> Callable[[random.Random], list[Any]]:
    def absent(rng: random.Random) -> list[Any]:
        digits = scaled(rng.randrange(10**precision), scale)
        return [digits, scaled(1, scale + 1), Decimal(10) ** (precision - scale)]

    return absent


KINDS: dict[str, Kind] = {}

#: Types DuckDB writes as another Arrow type than pyarrow does (fixed-size binary as BLOB,
#: seconds as microseconds, a zone as UTC, time32 as time64): a column of one of them in
#: files of both writers would not unify, so only pyarrow writes them.
_DUCKDB_CHANGES = (
    pa.binary(4), pa.binary(16), pa.timestamp("s"), pa.timestamp("ms", tz="UTC"),
    pa.timestamp("ns", tz="+05:30"), pa.timestamp("us", tz="Europe/Paris"), pa.time32("ms"),
    pa.timestamp("us", tz="Europe/Berlin"),
)  # fmt: skip


def _writers_of(t: pa.DataType) -> frozenset[str]:
    return frozenset({"pyarrow"}) if t in _DUCKDB_CHANGES else frozenset({"pyarrow", "duckdb"})


def _add(kind: Kind) -> None:
    KINDS[kind.name] = kind


_DELTA_ICEBERG = frozenset({"delta", "iceberg"})
for _name, _t, _lo, _hi, _tables in [
    ("int8", pa.int8(), -(2**7), 2**7 - 1, frozenset({"delta"})),
    ("int16", pa.int16(), -(2**15), 2**15 - 1, frozenset({"delta"})),
    ("int32", pa.int32(), -(2**31), 2**31 - 1, _DELTA_ICEBERG),
    ("int64", pa.int64(), -(2**63), 2**63 - 1, _DELTA_ICEBERG),
    ("uint8", pa.uint8(), 0, 2**8 - 1, frozenset()),
    ("uint16", pa.uint16(), 0, 2**16 - 1, frozenset()),
    ("uint32", pa.uint32(), 0, 2**32 - 1, frozenset()),
    ("uint64", pa.uint64(), 0, 2**64 - 1, frozenset()),
]:
    _add(
        Kind(
            _name, _t, _ints(_lo, _hi), _int_literal, _absent_ints(_lo, _hi),
            edges=(_lo - 1, _hi + 1, _lo, _hi, 2**64, -(2**63) - 1),
            group="sint" if _lo < 0 else "", tables=_tables,
        )
    )  # fmt: skip

_add(Kind("int64_dict", pa.dictionary(pa.int32(), pa.int64()), _ints(-(2**63), 2**63 - 1),
          _int_literal, _absent_ints(-(2**40), 2**40), edges=(2**63,), group="sint"))  # fmt: skip
_add(Kind("float16", pa.float16(), _floats("e"), _float_literal, _absent_floats,
          edges=(65504.0, 65520.0, 1e39, -0.0, math.nan, math.inf, 2.0**-24),
          writers=frozenset({"pyarrow"}), bloom=True))  # fmt: skip
_add(Kind("float32", pa.float32(), _floats("f"), _float_literal, _absent_floats,
          edges=(1e39, -1e39, 3.4028234663852886e38, 1e-46, -0.0, 0.0, math.nan, math.inf),
          group="float", tables=_DELTA_ICEBERG))  # fmt: skip
_add(Kind("float64", pa.float64(), _floats("d"), _float_literal, _absent_floats,
          edges=(1.7976931348623157e308, 5e-324, -0.0, 0.0, math.nan, -math.inf, 2**53 + 1),
          group="float", tables=_DELTA_ICEBERG))  # fmt: skip
_PY_DUCK = frozenset({"pyarrow", "duckdb"})
# Decimals of every storage: INT32 and INT64 (pyarrow's store_decimal_as_integer, DuckDB up to
# 18 digits) or FIXED_LEN_BYTE_ARRAY. Neither writer stores a decimal as BYTE_ARRAY.
for _name, _t, _p, _s, _group, _writers, _tables in [
    ("dec32", pa.decimal32(7, 2), 7, 2, "", _PY_DUCK, frozenset()),
    ("dec64", pa.decimal64(15, 3), 15, 3, "", _PY_DUCK, frozenset()),
    ("dec9", pa.decimal128(9, 2), 9, 2, "dec", _PY_DUCK, _DELTA_ICEBERG),
    ("dec18", pa.decimal128(18, 4), 18, 4, "dec", _PY_DUCK, _DELTA_ICEBERG),
    ("dec38", pa.decimal128(38, 10), 38, 10, "", _PY_DUCK, _DELTA_ICEBERG),
    ("dec40", pa.decimal256(40, 5), 40, 5, "", frozenset({"pyarrow"}), frozenset()),
]:  # fmt: skip
    _add(
        Kind(
            _name, _t, _decimals(_p, _s), _decimal_literal, _absent_decimals(_p, _s),
            edges=(scaled(10**_p, _s), scaled(1, _s + 1), scaled(-(10**_p) + 1, _s)),
            group=_group, writers=_writers, tables=_tables,
        )
    )  # fmt: skip
for _name, _t, _tables in [
    ("string", pa.string(), _DELTA_ICEBERG),
    ("large_string", pa.large_string(), frozenset({"delta"})),
    ("string_view", pa.string_view(), frozenset()),
    ("string_dict", pa.dictionary(pa.int32(), pa.string()), frozenset()),
]:
    _add(Kind(_name, _t, _texts, _text_literal, lambda rng: ["absent", "k" * 7, "É"],
              edges=("", " "), group="text", tables=_tables))  # fmt: skip
for _name, _t, _width, _group, _tables in [
    ("binary", pa.binary(), None, "bin", _DELTA_ICEBERG),
    ("large_binary", pa.large_binary(), None, "bin", frozenset()),
    ("fixed4", pa.binary(4), 4, "", frozenset()),
    ("fixed16", pa.binary(16), 16, "", frozenset()),
]:
    _add(Kind(_name, _t, _bytes(_width), _bytes_literal,
              lambda rng: [b"\x02\x03\x04\x05", b"absent", bytes(16)],
              edges=(b"", b"\x00" * 3, b"\xff" * 5), group=_group, tables=_tables,
              writers=_writers_of(_t)))  # fmt: skip
_add(
    Kind(
        "uuid", pa.uuid(), _uuids, _uuid_literal,
        lambda rng: [uuid.UUID(int=rng.getrandbits(128))], edges=(bytes(16), b"\x01" * 15),
    )
)  # fmt: skip
_add(
    Kind(
        "date32", pa.date32(), _days, _date_literal,
        lambda rng: [dt.date(1800, 1, 1), "2500-06-30"],
        edges=(dt.date(1, 1, 1), dt.date(9999, 12, 31)), tables=_DELTA_ICEBERG,
    )
)  # fmt: skip
_add(Kind("date64", pa.date64(), _days, _date_literal,
          lambda rng: [dt.date(1800, 1, 1)], edges=(dt.date(1969, 12, 31),)))  # fmt: skip
for _name, _unit, _zone, _tables in [
    ("ts_s", "s", None, frozenset()),
    ("ts_ms", "ms", None, frozenset()),
    ("ts_us", "us", None, _DELTA_ICEBERG),
    ("ts_ns", "ns", None, frozenset()),
    ("ts_ms_utc", "ms", "UTC", frozenset()),
    ("ts_us_utc", "us", "UTC", _DELTA_ICEBERG),
    ("ts_ns_tz", "ns", "+05:30", frozenset()),
    ("ts_us_paris", "us", "Europe/Paris", frozenset()),
    ("ts_us_berlin", "us", "Europe/Berlin", frozenset()),  # mixed writers only (shapes.py)
]:
    _add(
        Kind(
            _name, pa.timestamp(_unit, tz=_zone), _ticks(_unit), timestamp_literal(_unit, _zone),
            _far_future(_zone),
            edges=(
                ("2024-01-01T00:00:00.000000001" + ("Z" if _zone else "")),
                dt.datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC if _zone else None),
            ),
            tables=_tables, writers=_writers_of(pa.timestamp(_unit, tz=_zone)),
            drawn=_name != "ts_us_berlin",
        )
    )  # fmt: skip
for _name, _t, _unit, _tables in [
    ("time_ms", pa.time32("ms"), "ms", frozenset()),
    ("time_us", pa.time64("us"), "us", frozenset({"iceberg"})),
    ("time_ns", pa.time64("ns"), "ns", frozenset()),
]:
    _add(Kind(_name, _t, _clock(_unit), time_literal(_unit), lambda rng: ["23:59:59.999999999"],
              edges=(dt.time(0, 0), "00:00:00.000000001"), tables=_tables,
              writers=_writers_of(_t)))  # fmt: skip
_add(Kind("bool", pa.bool_(), _bools, _same, lambda rng: [], bloom=False, indexable=False,
          tables=_DELTA_ICEBERG))  # fmt: skip
_add(
    Kind(
        "struct", pa.struct([("x", pa.int32()), ("y", pa.string())]), lambda rng, n: [],
        _same, lambda rng: [], children=(("x", "int32"), ("y", "string")),
        group="struct", tables=_DELTA_ICEBERG,
    )
)  # fmt: skip
_add(
    Kind(
        "struct64", pa.struct([("x", pa.int64()), ("y", pa.string())]), lambda rng, n: [],
        _same, lambda rng: [], children=(("x", "int64"), ("y", "string")),
        group="struct", tables=_DELTA_ICEBERG,
    )
)  # fmt: skip


def leaf_kind(kind: Kind, path: str) -> Kind:
    """The kind of a predicate leaf: the kind itself, or a struct's child."""
    if not kind.children:
        return kind
    child = path.split(".", 1)[1]
    return KINDS[dict(kind.children)[child]]


def leaves(name: str, kind: Kind) -> list[str]:
    """The leaf paths a column offers to predicates."""
    if kind.children:
        return [f"{name}.{child}" for child, _ in kind.children]
    return [name]


# ---- Arrow arrays from stored values --------------------------------------------------------


def build_array(kind: Kind, values: Sequence[Any]) -> pa.Array:
    """The Arrow array of ``values`` (stored form) for ``kind``."""
    t = kind.arrow
    if kind.children:
        fields = [
            (child, build_array(KINDS[ck], [None if v is None else v[child] for v in values]))
            for child, ck in kind.children
        ]
        mask = pa.array([v is None for v in values], pa.bool_())
        return pa.StructArray.from_arrays(
            [a for _, a in fields], names=[n for n, _ in fields], mask=mask
        )
    if pa.types.is_dictionary(t):
        plain = pa.array(list(values), t.value_type)
        return plain.dictionary_encode().cast(t)
    if pa.types.is_timestamp(t) or pa.types.is_time64(t):
        return pa.array(list(values), pa.int64()).cast(t)
    if pa.types.is_time32(t):
        return pa.array(list(values), pa.int32()).cast(t)
    if pa.types.is_date32(t):
        return pa.array(list(values), pa.int32()).cast(t)
    if pa.types.is_date64(t):
        ms = [None if v is None else v * 86_400_000 for v in values]
        return pa.array(ms, pa.int64()).cast(t)
    if pa.types.is_float16(t):
        return pa.array(list(values), pa.float32()).cast(t)
    return pa.array(list(values), t)


__all__ = ["KINDS", "UTC", "Kind", "build_array", "leaf_kind", "leaves", "round_float", "scaled"]
