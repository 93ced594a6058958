"""Boundary cases for ranges: per column type, groups of values and literals around them.

Each case is a column type, groups of two values (a row group's or a page's min and
max), literals at, just below and just above each value (finer than the unit, beyond
the type), and the predicates built from them: every comparison, its NOT, BETWEEN and
NOT BETWEEN, the null tests. Shared by the statistics (tests/unit/pruning) and page
index (tests/unit/rows) boundary tests.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa

from pybloom_async.predicate import Between, Compare, IsNotNull, IsNull, Not, Predicate

D = decimal.Decimal
UTC = dt.timezone.utc
DAY = dt.timedelta(days=1)
MS = dt.timedelta(milliseconds=1)
US = dt.timedelta(microseconds=1)
PLUS1 = dt.timezone(dt.timedelta(hours=1))


def _nudge(step: Any) -> Callable[[Any], list[Any]]:
    return lambda v: [v - step, v + step]


def _text_nudge(v: str) -> list[Any]:
    return [v[:-1], v + "\x00", v[:-1] + chr(ord(v[-1]) + 1), v + "a"]


def _bytes_nudge(v: bytes) -> list[Any]:
    up = v[:-1] + bytes([min(v[-1] + 1, 255)]) if v else b"\x00"
    return [v[:-1], v + b"\x00", up]


def _float_nudge(v: float) -> list[Any]:
    if math.isinf(v):
        return [1e308 if v > 0 else -1e308]
    return [float(np.nextafter(v, -math.inf)), float(np.nextafter(v, math.inf)), v - 0.5]


def _f32_nudge(v: float) -> list[Any]:
    f = np.float32(v)
    out = [float(np.nextafter(f, np.float32(-np.inf)))]
    if f < np.finfo(np.float32).max:
        out.append(float(np.nextafter(f, np.float32(np.inf))))
    return out


def _uuid_nudge(v: uuid.UUID) -> list[Any]:
    return [uuid.UUID(int=max(v.int - 1, 0)), uuid.UUID(int=min(v.int + 1, 2**128 - 1))]


#: name -> (Arrow type, row groups as (min, max), literals near a value, extra literals,
#: whether statistics decide exactly, writer options)
CASES: dict[str, tuple[Any, list[tuple[Any, Any]], Callable[[Any], list[Any]], list[Any]]] = {
    "int8": (pa.int8(), [(-128, -5), (0, 0), (3, 127)], _nudge(1), [300, -300, 2.5, -0.5]),
    "int64": (pa.int64(), [(-(2**63), -1), (7, 7), (8, 2**63 - 1)], _nudge(1),
              [2**64, -(2**64), D("7.5"), D("1e400")]),
    "uint32": (pa.uint32(), [(0, 2**31 - 1), (2**31, 2**31), (2**31 + 1, 2**32 - 1)],
               _nudge(1), [-1, 2**32, 2**31 - 0.5]),
    "uint64": (pa.uint64(), [(0, 5), (2**63, 2**64 - 1)], _nudge(1), [2**64, -1]),
    "date": (pa.date32(), [(dt.date(2024, 1, 1), dt.date(2024, 1, 31)),
                           (dt.date(2024, 2, 29), dt.date(2024, 2, 29))], _nudge(DAY), []),
    "ts_ms": (pa.timestamp("ms"), [(dt.datetime(2024, 1, 1), dt.datetime(2024, 1, 1, 0, 0, 1)),
                                   (dt.datetime(2024, 1, 1, 0, 0, 2),) * 2],
              lambda v: [v - MS, v + MS, v - US, v + US], []),
    "ts_us_utc": (pa.timestamp("us", tz="UTC"),
                  [(dt.datetime(2024, 1, 1, tzinfo=UTC), dt.datetime(2024, 1, 2, tzinfo=UTC))],
                  _nudge(US), [dt.datetime(2024, 1, 1, 1, tzinfo=PLUS1)]),
    "time_us": (pa.time64("us"), [(dt.time(1), dt.time(2)), (dt.time(23, 59, 59, 999999),) * 2],
                lambda v: [dt.time(v.hour, v.minute, v.second, max(v.microsecond - 1, 0)),
                           dt.time(v.hour, v.minute, v.second, min(v.microsecond + 1, 999999))],
                [dt.time(0)]),
    "dec": (pa.decimal128(9, 2), [(D("-1.00"), D("1.00")), (D("2.50"), D("2.50"))],
            lambda v: [v - D("0.01"), v + D("0.01"), v - D("0.001"), v + D("0.005")],
            [D("1e10"), D("-1e10"), 1]),
    "dec_wide": (pa.decimal128(30, 3), [(D("-1e20"), D("0.001")), (D("7"), D("7"))],
                 lambda v: [v - D("0.001"), v + D("0.0005")], [D("1e40")]),
    "string": (pa.string(), [("apple", "banana"), ("k", "k"), ("é", "日本")], _text_nudge,
               ["", "\U0010ffff"]),
    "binary": (pa.binary(), [(b"\x00", b"\x7f"), (b"\x80", b"\xff\xff")], _bytes_nudge,
               [b"", b"\xff\xff\xff"]),
    "fixed": (pa.binary(3), [(b"abc", b"abd"), (b"\xff\x00\x00", b"\xff\xff\xff")],
              _bytes_nudge, [b"ab", b"abcd"]),
    "uuid": (pa.uuid(), [(uuid.UUID(int=0), uuid.UUID(int=5)),
                         (uuid.UUID(int=2**127), uuid.UUID(int=2**128 - 1))], _uuid_nudge, []),
    "float64": (pa.float64(), [(-1.5, 2.0), (0.0, 0.0), (3.0, math.inf)], _float_nudge,
                [-0.0, math.nan, 1e400, 5e-324]),
    "float32": (pa.float32(), [(-1.5, 2.0), (0.25, 0.25), (3.0, 3.4028234663852886e38)],
                _f32_nudge, [0.1, 1e39, -1e39, 1e-46, math.nan]),
}  # fmt: skip
FLOATS = {"float32", "float64"}


def literals_of(name: str) -> list[Any]:
    _, groups, near, extra = CASES[name]
    out: list[Any] = []
    for group in groups:
        for value in group:
            out += [value, *near(value)]
    return list(dict.fromkeys([*out, *extra], None)) if name not in FLOATS else [*out, *extra]


def value_of(name: str) -> Callable[[str, Any], Any]:
    def value_of(column: str, literal: Any) -> Any:
        if name == "float32" and isinstance(literal, float) and abs(literal) < 3.5e38:
            return float(np.float32(literal))  # a number means the FLOAT nearest to it
        return literal

    return value_of


def predicates(literals: list[Any]) -> list[tuple[Predicate, bool]]:
    """Each predicate, and whether statistics of two-value row groups decide it exactly."""
    out: list[tuple[Predicate, bool]] = [(IsNull("x"), True), (IsNotNull("x"), True)]
    for value in literals:
        for op in ("<", "<=", ">", ">=", "!="):
            out.append((Compare("x", op, value), True))
            if op != "!=":
                out.append((Not(Compare("x", op, value)), True))
    for low, high in zip(literals, literals[1:] + literals[:1], strict=True):
        out.append((Between("x", low, high), False))  # a range inside (min, max): kept
        out.append((Not(Between("x", low, high)), True))
    return out


def groups_column(name: str) -> tuple[Any, list[list[Any]]]:
    """The column of a case: each group's two values and a NULL, then a group of NULLs."""
    arrow, groups, _, _ = CASES[name]
    groups_rows = [[low, high, None] for low, high in groups] + [[None, None, None]]
    values = [v for group in groups_rows for v in group]
    if pa.types.is_float32(arrow):
        column = pa.array(values, pa.float64()).cast(arrow)
    elif isinstance(arrow, pa.BaseExtensionType):
        column = pa.array([None if v is None else v.bytes for v in values], arrow)
    else:
        column = pa.array(values, arrow)
    return column, groups_rows


def negation(where: Predicate) -> bool:
    """NOT or != : true for a NaN, which statistics and page indexes leave out."""
    return isinstance(where, Not) or (isinstance(where, Compare) and where.op == "!=")


__all__ = ["CASES", "FLOATS", "groups_column", "literals_of", "negation", "predicates", "value_of"]
