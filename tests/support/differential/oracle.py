"""The oracle: every file read whole by pyarrow, the predicate evaluated by our own rules.

Nothing here calls the product. Values are compared in a canonical form per *domain*
(the column's family of values, from its Arrow type and, where Arrow loses it, its Parquet
type): integers, exact decimals, floats, text, bytes, days, nanoseconds.

SQL semantics, as the product's documentation states them (README, "Looking up rows" and
"Pruning row groups"; :mod:`pybloom_async.predicate`):

* ``=`` with a NULL on either side is unknown; ``IN`` is true on a match, unknown when
  it holds a NULL (on either side) and nothing matched, false otherwise; ``<=>`` is
  null-safe (NULL <=> NULL is true); AND and OR are Kleene's; a row is returned when
  the predicate is true.
* A literal compares by its exact value: ``3.0`` equals the integer 3, ``Decimal('2.50')``
  equals ``2.5``; a value the column cannot hold (300 for an INT8, 1e39 for a FLOAT, a
  fraction beyond a decimal's scale, a timestamp finer than the column's unit) matches
  nothing, it is not an error.
* ``0.0`` equals ``-0.0``; NaN equals nothing, not even through ``<=>`` (the docs: "NaN and
  ``= NULL`` match nothing"; SQL engines that order NaN say ``NaN <=> NaN``: the docs win).
* A number on a float column means the float nearest to it in the column's width
  (``literals.encode_literal``: "as in SQL"; the docs: "a number means the type's nearest value"):
  a ``Decimal`` or ``int`` as it is, a Python ``float`` as the decimal it prints as (so
  ``0.1`` is the FLOAT nearest to one tenth, ``1e-46`` is 0.0); elsewhere a number is exact.
* A ``str`` is read as its column's type reads quoted text: a date, time, timestamp or UUID
  in ISO / canonical form, an integer in its usual notation, UTF-8 for binary columns.
* Timestamps: an aware literal is an instant; a naive one is the wall-clock time. On a column
  adjusted to UTC a naive literal is taken as UTC; on a local-time (or INT96) column an aware
  literal matches either its wall-clock time or its instant (``encode_value``'s documented
  rule: writers differ in which they store).
* A file that lacks a predicate column holds NULLs there.
* Ranges (``<``, ``<=``, ``>``, ``>=``, ``BETWEEN``: both ends in) compare by exact value:
  a literal the column cannot hold lies where its value lies (``int8 < 300`` holds for
  every non-NULL row, ``x < 2.5`` up to 2); on a float column the literal is the column's
  nearest float (beyond its range, the exact number); NaN is in no range (a NaN row or a
  NaN literal); text orders as code points (UTF-8 bytes), binary and UUIDs as unsigned
  bytes, booleans FALSE < TRUE. An aware timestamp has no place in a local-time (or INT96)
  column: an ordering with one there is an error (``=`` still matches either reading).
* ``!=`` is NOT ``=``, ``NOT IN`` NOT ``IN``, ``IS NOT NULL`` the opposite of ``IS NULL``;
  NOT is Kleene's (NOT unknown is unknown): ``x != 1`` holds for a NaN row, ``x NOT IN (1,
  NULL)`` for no row, ``NOT x <=> 1`` for the NULLs.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import struct
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pybloom_async.predicate import (
    And,
    Between,
    Compare,
    Eq,
    In,
    IsNotNull,
    Not,
    NotIn,
    Or,
    Predicate,
    TextLiteral,
)

__all__ = [
    "Domain",
    "FileFacts",
    "LiteralTypeError",
    "canonical_rows",
    "check_literals",
    "evaluate",
    "expected_rows",
    "facts_of",
    "leaf_values",
    "read_file",
    "row_key",
]


class LiteralTypeError(Exception):
    """The literal is not a value of the column's type (the product raises PredicateError)."""


@dataclass(frozen=True)
class Domain:
    """How a column's values compare: ``family`` and the details that change equality.

    ``width``: 'e', 'f' or 'd' for floats (a Decimal literal rounds to it). ``utc``: a
    timestamp column adjusted to UTC (a naive literal is UTC); else aware literals match
    by wall clock or instant.
    """

    family: str
    width: str = ""
    utc: bool = False


# ---- domains and canonical values ------------------------------------------------------------


def domain_of(arrow_type: pa.DataType, parquet_column: Any | None = None) -> Domain:
    """The domain of a leaf, from its Arrow type and (when known) its Parquet column."""
    t = arrow_type
    if pa.types.is_dictionary(t):
        return domain_of(t.value_type, parquet_column)
    if isinstance(t, pa.BaseExtensionType):
        if t.extension_name == "arrow.uuid":
            return Domain("uuid")
        return domain_of(t.storage_type, parquet_column)
    logical = str(parquet_column.logical_type) if parquet_column is not None else ""
    if pa.types.is_boolean(t):
        return Domain("bool")
    if pa.types.is_integer(t):
        return Domain("int")
    if pa.types.is_floating(t):
        return Domain("float", width={16: "e", 32: "f", 64: "d"}[t.bit_width])
    if pa.types.is_decimal(t):
        return Domain("decimal")
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return Domain("string")
    if pa.types.is_fixed_size_binary(t) and logical.startswith("UUID"):
        return Domain("uuid")
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t):
        return Domain("binary")
    if pa.types.is_fixed_size_binary(t):
        return Domain("binary")
    if pa.types.is_date(t):
        return Domain("date")
    if pa.types.is_time(t):
        return Domain("time")
    if pa.types.is_timestamp(t):
        int96 = parquet_column is not None and parquet_column.physical_type == "INT96"
        return Domain("timestamp", utc=t.tz is not None and not int96)
    raise NotImplementedError(f"no domain for {t}")


_UNIT_NANOS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}


def canonical(array: pa.Array | pa.ChunkedArray) -> list[Any]:
    """The values of a (flat or struct) array in canonical form: ints for temporal values
    (days, nanoseconds), bytes for UUIDs, dicts of canonical children for structs."""
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
    t = array.type
    if pa.types.is_dictionary(t):
        return canonical(array.cast(t.value_type))
    if isinstance(t, pa.BaseExtensionType):
        return canonical(array.storage)
    if pa.types.is_struct(t):
        children = {t.field(i).name: canonical(c) for i, c in enumerate(array.flatten())}
        valid = array.is_valid().to_pylist()
        return [
            {name: values[i] for name, values in children.items()} if valid[i] else None
            for i in range(len(array))
        ]
    if pa.types.is_string_view(t):
        return canonical(array.cast(pa.large_string()))
    if pa.types.is_binary_view(t):
        return canonical(array.cast(pa.large_binary()))
    if pa.types.is_float16(t):
        return canonical(array.cast(pa.float32()))
    if pa.types.is_date32(t):
        days: list[Any] = array.cast(pa.int32()).to_pylist()
        return days
    if pa.types.is_date64(t):
        return [None if v is None else v // 86_400_000 for v in array.cast(pa.int64()).to_pylist()]
    if pa.types.is_timestamp(t) or pa.types.is_time(t):
        factor = _UNIT_NANOS[t.unit]
        ints = array.cast(pa.int64() if t.bit_width == 64 else pa.int32()).to_pylist()
        return [None if v is None else v * factor for v in ints]
    values: list[Any] = array.to_pylist()
    return values


def leaf_values(table: pa.Table, path: str) -> list[Any] | None:
    """The canonical values of a leaf (``a`` or ``st.x``), None when the table lacks it.

    A struct's NULL makes its children NULL (``StructArray.flatten`` applies the parent's
    validity).
    """
    parts = path.split(".")
    if parts[0] not in table.column_names:
        return None
    values = canonical(table.column(parts[0]))
    for part in parts[1:]:
        if values and not all(v is None or isinstance(v, dict) for v in values):
            return None
        if table.schema.field(parts[0]).type.get_field_index(part) < 0:
            return None
        values = [None if v is None else v[part] for v in values]
    return values


def leaf_type(schema: pa.Schema, path: str) -> pa.DataType | None:
    parts = path.split(".")
    if schema.get_field_index(parts[0]) < 0:
        return None
    t = schema.field(parts[0]).type
    for part in parts[1:]:
        if not pa.types.is_struct(t) or t.get_field_index(part) < 0:
            return None
        t = t.field(part).type
    return t


def row_key(value: Any) -> Any:
    """A hashable key for one canonical value that tells -0.0 from 0.0 and NaN from NaN's
    absence, and decimals by value (2.50 and 2.5 are one key)."""
    if value is None:
        return None
    if isinstance(value, float):
        return ("nan",) if math.isnan(value) else ("float", struct.pack("<d", value))
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, Decimal):
        return ("dec", Fraction(value))
    if isinstance(value, dict):
        return ("struct", tuple(sorted((k, row_key(v)) for k, v in value.items())))
    if isinstance(value, uuid.UUID):
        return value.bytes
    return value


def canonical_rows(
    table: pa.Table, names: Sequence[str], mask: Sequence[bool] | None = None
) -> Counter[tuple[Any, ...]]:
    """The multiset of rows of ``table`` over ``names`` (a missing column reads as NULL),
    only those where ``mask`` holds when one is given."""
    columns = [
        canonical(table.column(n)) if n in table.column_names else [None] * table.num_rows
        for n in names
    ]
    rows = range(table.num_rows) if mask is None else [i for i, m in enumerate(mask) if m]
    return Counter(tuple(row_key(c[i]) for c in columns) for i in rows)


# ---- literals --------------------------------------------------------------------------------

_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_CLOCK = r"(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?"
_TIME = re.compile(_CLOCK)
_STAMP = re.compile(r"(\d{4}-\d{2}-\d{2})(?:[T ]" + _CLOCK + r"(Z|[+-]\d{2}:\d{2})?)?")
_EPOCH = dt.datetime(1970, 1, 1)


def _nanos_of(delta: dt.timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1000


def _clock_nanos(h: str, m: str, s: str | None, frac: str | None) -> int:
    return (int(h) * 3600 + int(m) * 60 + int(s or 0)) * 10**9 + int((frac or "").ljust(9, "0"))


def _timestamp_keys(literal: Any, domain: Domain) -> set[Any]:
    """Nanoseconds the literal equals: the instant, the wall-clock time, or both."""
    if isinstance(literal, dt.datetime):
        wall = _nanos_of(literal.replace(tzinfo=None) - _EPOCH)
        if literal.tzinfo is None:
            return {wall}
        offset = literal.utcoffset()
        assert offset is not None
        instant = wall - _nanos_of(offset)
        return {instant} if domain.utc else {wall, instant}
    if isinstance(literal, str):
        m = _STAMP.fullmatch(literal)
        if m is None:
            raise LiteralTypeError(f"not a timestamp: {literal!r}")
        day = dt.date.fromisoformat(m.group(1))
        wall = (day - _EPOCH.date()).days * 86_400 * 10**9
        if m.group(2) is not None:
            wall += _clock_nanos(m.group(2), m.group(3), m.group(4), m.group(5))
        zone = m.group(6)
        if zone is None:
            return {wall}
        minutes = 0 if zone == "Z" else int(zone[1:3]) * 60 + int(zone[4:6])
        instant = wall - (-1 if zone.startswith("-") else 1) * minutes * 60 * 10**9
        return {instant} if domain.utc else {wall, instant}
    raise LiteralTypeError(f"not a timestamp: {literal!r}")


_INT_LITERAL = re.compile(r"\s*[+-]?[0-9]+\s*")
_FORMATS = {"e": ("<e", "<H"), "f": ("<f", "<I"), "d": ("<d", "<Q")}


def _pattern(code: str, bits: str, value: float) -> int:
    return int(struct.unpack(bits, struct.pack(code, value))[0])


def _from_pattern(code: str, bits: str, pattern: int) -> float:
    return float(struct.unpack(code, struct.pack(bits, pattern))[0])


def _nearest(value: Decimal, width: str) -> float | None:
    """The float of ``width`` nearest to ``value`` (ties to even); None beyond its range
    (where rounding would give an infinity)."""
    code, bits = _FORMATS[width]
    infinity = _pattern(code, bits, math.inf)
    largest = _from_pattern(code, bits, infinity - 1)
    below = _from_pattern(code, bits, infinity - 2)
    exact = Fraction(value)
    # Beyond largest + half an ulp the value rounds to infinity: no finite float holds it.
    if abs(exact) >= Fraction(largest) + (Fraction(largest) - Fraction(below)) / 2:
        return None
    magnitude = abs(exact)
    seed = min(float(magnitude), largest)
    pattern = _pattern(
        code, bits, seed if width == "d" else float(struct.unpack(code, struct.pack(code, seed))[0])
    )
    best: tuple[Fraction, int, float] | None = None
    for candidate in (pattern - 1, pattern, pattern + 1):
        if not 0 <= candidate < infinity:
            continue
        v = _from_pattern(code, bits, candidate)
        key = (abs(Fraction(v) - magnitude), candidate & 1, v)
        if best is None or key[:2] < best[:2]:
            best = key
    assert best is not None
    return -best[2] if exact < 0 else best[2]


def literal_keys(literal: Any, domain: Domain) -> set[Any]:
    """The canonical values a non-NULL literal equals in ``domain`` (empty: none can)."""
    if isinstance(literal, TextLiteral):
        literal = literal.text
    family = domain.family
    if family == "bool":
        if not isinstance(literal, bool):
            raise LiteralTypeError(f"not a boolean: {literal!r}")
        return {literal}
    if isinstance(literal, bool):
        raise LiteralTypeError(f"a boolean for a {family} column")
    if family in ("int", "decimal", "float"):
        if isinstance(literal, float) and math.isnan(literal):
            return set()
        if family == "float" and isinstance(literal, (int, float, Decimal)):
            # Any number: the type's nearest value (a float: the decimal it prints as).
            if isinstance(literal, float):
                if not math.isfinite(literal):
                    return {literal}
                literal = Decimal(repr(literal))
            if isinstance(literal, Decimal) and not literal.is_finite():
                return set() if literal.is_nan() else {float(literal)}
            nearest = _nearest(Decimal(literal), domain.width)
            return set() if nearest is None else {nearest}
        if family == "decimal" and isinstance(literal, float):
            raise LiteralTypeError("a float for a decimal column")
        if family == "int" and isinstance(literal, str):
            # Quoted text read by the column's type: an integer in its usual notation
            # ('007', '+7' are 7; the docs: "'abc' ... for an INT64" is the mistake).
            if not _INT_LITERAL.fullmatch(literal):
                raise LiteralTypeError(f"not an integer: {literal!r}")
            literal = int(literal)
        if not isinstance(literal, (int, float, Decimal)):
            raise LiteralTypeError(f"not a number: {literal!r}")
        return {literal}  # compared exactly with the stored number (Python's == is exact)
    if family == "string":
        if isinstance(literal, bytes):
            try:
                return {literal.decode("utf-8")}
            except UnicodeDecodeError:
                return set()
        if not isinstance(literal, str):
            raise LiteralTypeError(f"not text: {literal!r}")
        return {literal}
    if family == "binary":
        if isinstance(literal, str):
            return {literal.encode("utf-8")}
        if not isinstance(literal, bytes):
            raise LiteralTypeError(f"not bytes: {literal!r}")
        return {literal}
    if family == "uuid":
        if isinstance(literal, uuid.UUID):
            return {literal.bytes}
        if isinstance(literal, str):
            return {uuid.UUID(literal).bytes}
        if isinstance(literal, bytes):
            return {literal}
        raise LiteralTypeError(f"not a UUID: {literal!r}")
    if family == "date":
        if isinstance(literal, dt.date) and not isinstance(literal, dt.datetime):
            return {(literal - _EPOCH.date()).days}
        if isinstance(literal, str) and _DATE.fullmatch(literal):
            return {(dt.date.fromisoformat(literal) - _EPOCH.date()).days}
        raise LiteralTypeError(f"not a date: {literal!r}")
    if family == "time":
        if isinstance(literal, dt.time):
            return {_clock_nanos(str(literal.hour), str(literal.minute), str(literal.second),
                                 f"{literal.microsecond:06d}")}  # fmt: skip
        m = _TIME.fullmatch(literal) if isinstance(literal, str) else None
        if m is None:
            raise LiteralTypeError(f"not a time: {literal!r}")
        return {_clock_nanos(*m.groups())}
    if family == "timestamp":
        return _timestamp_keys(literal, domain)
    raise NotImplementedError(family)


def _equal(value: Any, keys: set[Any]) -> bool:
    if isinstance(value, float) and math.isnan(value):
        return False
    return any(value == k for k in keys)


# ---- ranges ----------------------------------------------------------------------------------


class _NoPlace:
    """NaN: below and above nothing."""


NO_PLACE = _NoPlace()


def place(literal: Any, domain: Domain) -> Any:
    """Where a non-NULL literal lies among the canonical values of ``domain``, as a value
    Python compares exactly with them (NO_PLACE for NaN)."""
    if isinstance(literal, TextLiteral):
        literal = literal.text
    family = domain.family
    if family == "bool":
        if not isinstance(literal, bool):
            raise LiteralTypeError(f"not a boolean: {literal!r}")
        return literal
    if isinstance(literal, bool):
        raise LiteralTypeError(f"a boolean for a {family} column")
    if family in ("int", "decimal"):
        if family == "decimal" and isinstance(literal, float):
            raise LiteralTypeError("a float for a decimal column")
        if family == "int" and isinstance(literal, str):
            # Quoted text read by the column's type, as for equality ('007' is 7).
            if not _INT_LITERAL.fullmatch(literal):
                raise LiteralTypeError(f"not an integer: {literal!r}")
            literal = int(literal)
        if isinstance(literal, float):
            literal = Decimal(repr(literal)) if math.isfinite(literal) else literal
        if not isinstance(literal, (int, float, Decimal)):
            raise LiteralTypeError(f"not a number: {literal!r}")
        if isinstance(literal, (float, Decimal)) and literal != literal:
            return NO_PLACE
        if isinstance(literal, Decimal) and literal.is_infinite():
            return math.inf if literal > 0 else -math.inf
        return literal if isinstance(literal, (int, float)) else Fraction(literal)
    if family == "float":
        if not isinstance(literal, (int, float, Decimal)):
            raise LiteralTypeError(f"not a number: {literal!r}")
        if isinstance(literal, (float, Decimal)) and literal != literal:
            return NO_PLACE
        if isinstance(literal, float) and math.isinf(literal):
            return literal
        if isinstance(literal, Decimal) and literal.is_infinite():
            return math.inf if literal > 0 else -math.inf
        exact = Decimal(repr(literal)) if isinstance(literal, float) else Decimal(literal)
        nearest = _nearest(exact, domain.width)
        return Fraction(exact) if nearest is None else nearest
    if family == "string":
        if isinstance(literal, str):
            return literal.encode("utf-8", "surrogatepass")
        if isinstance(literal, bytes):
            return literal
        raise LiteralTypeError(f"not text: {literal!r}")
    if family in ("binary", "uuid"):
        if family == "uuid" and isinstance(literal, (uuid.UUID, str)):
            return (literal if isinstance(literal, uuid.UUID) else uuid.UUID(literal)).bytes
        if isinstance(literal, str):
            return literal.encode("utf-8", "surrogatepass")
        if not isinstance(literal, bytes):
            raise LiteralTypeError(f"not bytes: {literal!r}")
        return literal
    if (
        family == "timestamp"
        and not domain.utc
        and (
            (isinstance(literal, dt.datetime) and literal.tzinfo is not None)
            or (isinstance(literal, str) and (m := _STAMP.fullmatch(literal)) and m.group(6))
        )
    ):
        raise LiteralTypeError("an aware timestamp has no place in a local-time column")
    (key,) = literal_keys(literal, domain)  # dates, times, timestamps: one instant here
    return key


def _ordered(value: Any, family: str) -> Any:
    """A canonical value as :func:`place` compares it (text as its UTF-8 bytes)."""
    if family == "string":
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, uuid.UUID):
        return value.bytes
    if isinstance(value, Decimal):
        return Fraction(value)  # a Decimal does not compare with a Fraction
    return value


_OPS = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
        ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}  # fmt: skip


def _compare(value: Any, op: str, literal: Any, domain: Domain | None) -> bool | None:
    if value is None or literal is None:
        return None
    assert domain is not None
    where = place(literal, domain)
    if where is NO_PLACE or (isinstance(value, float) and math.isnan(value)):
        return False
    return bool(_OPS[op](_ordered(value, domain.family), where))


def _not(v: bool | None) -> bool | None:
    return None if v is None else not v


def _and(parts: list[bool | None]) -> bool | None:
    return False if False in parts else None if None in parts else True


def _or(parts: list[bool | None]) -> bool | None:
    return True if True in parts else None if None in parts else False


# ---- the evaluator ---------------------------------------------------------------------------


def _leaf(p: Eq | In, row: Mapping[str, Any], domains: Mapping[str, Domain | None]) -> bool | None:
    value = row.get(p.column)
    domain = domains.get(p.column)
    literals = (p.value,) if isinstance(p, Eq) else p.values
    if isinstance(p, Eq) and p.null_safe:
        if p.value is None:
            return value is None
        if value is None:
            return False
        assert domain is not None
        return _equal(value, literal_keys(p.value, domain))
    unknown = value is None or any(v is None for v in literals)
    if value is not None:
        assert domain is not None
        for literal in literals:
            if literal is not None and _equal(value, literal_keys(literal, domain)):
                return True
    return None if unknown else False


def truth(
    p: Predicate, row: Mapping[str, Any], domains: Mapping[str, Domain | None]
) -> bool | None:
    """SQL's three-valued truth of ``p`` on one row (``row``: leaf path -> canonical value)."""
    if isinstance(p, (Eq, In)):
        return _leaf(p, row, domains)
    if isinstance(p, Not):
        return _not(truth(p.child, row, domains))
    if isinstance(p, NotIn):
        return _not(_leaf(In(p.column, p.values), row, domains))
    if isinstance(p, IsNotNull):
        return row.get(p.column) is not None
    if isinstance(p, Compare):
        if p.op == "!=":
            return _not(_leaf(Eq(p.column, p.value), row, domains))
        return _compare(row.get(p.column), p.op, p.value, domains.get(p.column))
    if isinstance(p, Between):
        value, domain = row.get(p.column), domains.get(p.column)
        return _and([_compare(value, ">=", p.low, domain), _compare(value, "<=", p.high, domain)])
    if isinstance(p, And):
        parts = [truth(c, row, domains) for c in p.children]
        return False if False in parts else None if None in parts else True
    if isinstance(p, Or):
        return _or([truth(c, row, domains) for c in p.children])
    raise NotImplementedError(f"the oracle has no rule for {type(p).__name__}")


def check_literals(p: Predicate, domains: Mapping[str, Domain | None]) -> None:
    """Raise LiteralTypeError when a literal is not of its column's type in this file."""
    if isinstance(p, (Eq, In, NotIn)) or (isinstance(p, Compare) and p.op == "!="):
        domain = domains.get(p.column)
        values = p.values if isinstance(p, (In, NotIn)) else (p.value,)
        for literal in values if domain is not None else ():
            if literal is not None:
                literal_keys(literal, domain)
        return
    if isinstance(p, (Compare, Between)):
        domain = domains.get(p.column)
        ends = (p.value,) if isinstance(p, Compare) else (p.low, p.high)
        for literal in ends if domain is not None else ():
            if literal is not None:
                place(literal, domain)
        return
    for child in (p.child,) if isinstance(p, Not) else getattr(p, "children", ()):
        check_literals(child, domains)


def _leaves(p: Predicate) -> Iterator[Any]:
    if not isinstance(p, (And, Or, Not)):
        yield p
    for child in (p.child,) if isinstance(p, Not) else getattr(p, "children", ()):
        yield from _leaves(child)


def columns_of(p: Predicate) -> list[str]:
    return list(dict.fromkeys(leaf.column for leaf in _leaves(p)))


# ---- files -----------------------------------------------------------------------------------


@dataclass
class FileFacts:
    """One file as pyarrow reads it whole: its rows, row groups, leaves and their domains."""

    path: str
    table: pa.Table
    row_group_rows: list[int]
    domains: dict[str, Domain] = field(default_factory=dict)
    leaves: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def top_level(self) -> list[str]:
        return list(self.table.column_names)

    def row_groups_of_rows(self) -> list[int]:
        out: list[int] = []
        for rg, n in enumerate(self.row_group_rows):
            out.extend([rg] * n)
        return out

    def has(self, path: str) -> bool:
        return path in self.domains


def read_file(path: str | Path, predicate_columns: Iterable[str]) -> FileFacts:
    """Read a file whole with pyarrow; canonical values of the predicate's leaves."""
    pf = pq.ParquetFile(path)
    meta = pf.metadata
    rows = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    parquet_columns = {pf.schema.column(i).path: pf.schema.column(i) for i in range(len(pf.schema))}
    return facts_of(pf.read(), str(path), rows, predicate_columns, parquet_columns)


def facts_of(
    table: pa.Table,
    path: str,
    row_group_rows: list[int],
    predicate_columns: Iterable[str],
    parquet_columns: Mapping[str, Any] | None = None,
) -> FileFacts:
    """The oracle's view of rows already read (a file, or a table format's own scan)."""
    facts = FileFacts(path, table, row_group_rows)
    for column in predicate_columns:
        t = leaf_type(table.schema, column)
        values = leaf_values(table, column)
        if t is None or values is None:
            continue
        facts.domains[column] = domain_of(t, (parquet_columns or {}).get(column))
        facts.leaves[column] = values
    return facts


def evaluate(p: Predicate, facts: FileFacts) -> list[bool]:
    """For each row of the file: does ``p`` hold (is it TRUE)?

    Raises LiteralTypeError when a literal is not of a column's type in this file.
    """
    domains: dict[str, Domain | None] = {c: facts.domains.get(c) for c in columns_of(p)}
    check_literals(p, domains)
    columns = {c: facts.leaves.get(c) for c in domains}
    out = []
    for i in range(facts.table.num_rows):
        row = {c: (v[i] if v is not None else None) for c, v in columns.items()}
        out.append(truth(p, row, domains) is True)
    return out


def expected_rows(
    p: Predicate, files: Sequence[FileFacts], names: Sequence[str]
) -> Counter[tuple[Any, ...]]:
    """The multiset of rows (over ``names``) of ``files`` where ``p`` holds."""
    out: Counter[tuple[Any, ...]] = Counter()
    for facts in files:
        mask = evaluate(p, facts)
        if any(mask):
            out.update(canonical_rows(facts.table, names, mask))
    return out


#: SQL's three-valued NOT, AND and OR (None: unknown), for the folders' side of the oracle.
not3, and3, or3 = _not, _and, _or
