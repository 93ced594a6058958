"""A range's end as a comparison of decoded Arrow values, exactly as pruning places it.

Pruning places a literal in the column's order (:func:`pybloom_async.pruning.literals.
order_literal`: ticks of the Parquet unit, unscaled decimals, bytes, floats, with
the places between two values or beyond them all). pyarrow may decode the column to
another unit or scale (a TIMESTAMP(MILLIS) written from seconds reads back as
``timestamp[s]``; INT96 as nanoseconds; DATE as ``date64`` milliseconds), and its
compute functions compare only with values of the array's own type. So the place is
carried into the Arrow type's own numbers, exactly, and the comparison turned into
one whose bound is a value of that type:

* integers, decimals, dates, times, timestamps, booleans (as 0 and 1): ``x < 2.5``
  is ``x <= 2``, ``x > 2.5`` is ``x >= 3``; a bound beyond the type's values makes
  the comparison true or false for every non-NULL value;
* floats: ``x < p`` for a ``p`` between two floats of the type is ``x <= the lower
  one`` (beyond the largest float: ``x <= largest``, so infinity and NaN stay out);
* text and binary: compared as unsigned bytes (UTF-8 for text).

NaN (a literal without a place) is below and above nothing: the comparison is false
for every non-NULL value. NULLs stay unknown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import UnsupportedTypeError
from ..parquet import ColumnDescriptor, LogicalKind
from ..pruning.literals import order_literal
from ..types import PhysicalType
from ..values import NeverPrunes
from ..values.order import Unordered
from .arrow import NULL_BOOL, arrow_scalar, constant_bools, int_storage

_ARROW_NANOS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
_MILLIS_PER_DAY = 86_400_000
_COMPARE = {"<=": pc.less_equal, ">=": pc.greater_equal, "<": pc.less, ">": pc.greater}


@dataclass(frozen=True)
class Bound:
    """``values op scalar`` on the values cast to ``view`` (None: as they are), or, when
    ``op`` is None, ``constant`` for every non-NULL value."""

    op: str | None
    scalar: Any = None
    view: Any = None
    constant: bool = False

    def apply(self, data: Any) -> Any:
        """The three-valued truth of the comparison for each value of ``data``."""
        if self.op is None:
            mask = constant_bools(len(data), self.constant)
            if data.null_count == 0:
                return mask
            return pc.if_else(pc.is_valid(data), mask, NULL_BOOL)
        values = data if self.view is None else data.cast(self.view)
        return _COMPARE[self.op](values, self.scalar)


def range_bound(value: Any, op: str, desc: ColumnDescriptor, data: Any) -> Bound:
    """``column op value`` as a :class:`Bound` on ``data`` (the decoded column).

    Raises
    ------
    PredicateError
        The literal is not a value of the column's type.
    UnsupportedTypeError
        The column's values cannot be compared exactly.
    """
    place = order_literal(value, desc)
    if isinstance(place, Unordered):
        return Bound(None, constant=False)
    if isinstance(place, NeverPrunes):
        raise UnsupportedTypeError(
            f"the column's values cannot be compared exactly: {place.reason}", column=desc.path
        )
    t = data.type
    if pa.types.is_floating(t):
        if isinstance(place, bytes):
            raise _mismatch(desc, t)
        return _float_bound(place, op, t)
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_string(t)
        or (pa.types.is_large_string(t) or pa.types.is_fixed_size_binary(t))
    ):
        if not isinstance(place, bytes):
            raise _mismatch(desc, t)
        return Bound(op, arrow_scalar(place, pa.large_binary()), pa.large_binary())
    if isinstance(place, bytes):
        raise _mismatch(desc, t)
    if pa.types.is_boolean(t):
        return _int_bound(place, op, pa.uint8(), pa.uint8())
    if pa.types.is_integer(t):
        return _int_bound(place, op, t, None)
    if pa.types.is_decimal(t):
        lt = desc.logical_type
        scale = lt.scale if lt is not None and lt.kind is LogicalKind.DECIMAL else 0
        shifted = _times(place, Fraction(10) ** (t.scale - (scale or 0)))
        return _decimal_bound(shifted, op, t)
    storage = int_storage(t)
    if storage is None:
        raise _mismatch(desc, t)
    return _int_bound(_ticks(place, desc, t), op, storage, storage)


def _mismatch(desc: ColumnDescriptor, t: Any) -> UnsupportedTypeError:
    return UnsupportedTypeError(
        f"a {desc.physical_type.name} column decoded as {t} cannot be ordered here",
        column=desc.path,
    )


def _times(place: Any, factor: Fraction) -> Any:
    if isinstance(place, float):  # an infinity: beyond every value either way
        return place
    product = place * factor
    return product.numerator if product.denominator == 1 else product


def _ticks(place: Any, desc: ColumnDescriptor, t: Any) -> Any:
    """The place (in the Parquet column's unit) in the Arrow type's ticks."""
    lt = desc.logical_type
    kind = lt.kind if lt is not None else None
    if kind is LogicalKind.DATE:
        return _times(place, Fraction(_MILLIS_PER_DAY if pa.types.is_date64(t) else 1))
    if desc.physical_type is PhysicalType.INT96:
        parquet_nanos = 1
    elif kind in (LogicalKind.TIMESTAMP, LogicalKind.TIME) and lt is not None and lt.unit:
        parquet_nanos = 10**9 // lt.unit.per_second
    else:
        return place  # a raw count (durations)
    unit = getattr(t, "unit", None)
    if unit not in _ARROW_NANOS:
        raise _mismatch(desc, t)
    return _times(place, Fraction(parquet_nanos, _ARROW_NANOS[unit]))


def _integral(place: Any, op: str) -> tuple[str, int] | bool:
    """``x op place`` over the integers as ``x <= b`` or ``x >= b``, or a constant."""
    if isinstance(place, float):  # +-inf
        return (place > 0) == (op in ("<", "<="))
    exact = isinstance(place, int) or place.denominator == 1
    if op in ("<", "<="):
        bound = int(place) - 1 if op == "<" and exact else math.floor(place)
        return "<=", bound
    bound = int(place) + 1 if op == ">" and exact else math.ceil(place)
    return ">=", bound


def _clamp(rule: tuple[str, int] | bool, low: int, high: int) -> tuple[str, int] | bool:
    if isinstance(rule, bool):
        return rule
    op, bound = rule
    if op == "<=":
        return True if bound >= high else False if bound < low else rule
    return True if bound <= low else False if bound > high else rule


def _int_bound(place: Any, op: str, storage: Any, view: Any) -> Bound:
    info = np.iinfo(storage.to_pandas_dtype())
    rule = _clamp(_integral(place, op), int(info.min), int(info.max))
    if isinstance(rule, bool):
        return Bound(None, constant=rule)
    return Bound(rule[0], arrow_scalar(rule[1], storage), view)


def _decimal_bound(place: Any, op: str, t: Any) -> Bound:
    top = 10**t.precision - 1
    rule = _clamp(_integral(place, op), -top, top)
    if isinstance(rule, bool):
        return Bound(None, constant=rule)
    from decimal import Decimal

    return Bound(rule[0], arrow_scalar(Decimal(f"{rule[1]}E-{t.scale}"), t))


def _float_bound(place: Any, op: str, t: Any) -> Bound:
    dtype = np.float32 if t.bit_width == 32 else np.float64
    if isinstance(place, float) and (math.isinf(place) or float(dtype(place)) == place):
        return Bound(op, arrow_scalar(place, t))
    exact = Fraction(place)
    largest = Fraction(float(np.finfo(dtype).max))
    if exact > largest:
        lower, upper = float(np.finfo(dtype).max), math.inf
    elif exact < -largest:
        lower, upper = -math.inf, -float(np.finfo(dtype).max)
    else:
        near = dtype(float(exact))
        if Fraction(float(near)) == exact:
            return Bound(op, arrow_scalar(float(near), t))
        while Fraction(float(near)) > exact:
            near = np.nextafter(near, dtype(-np.inf))
        lower, upper = float(near), float(np.nextafter(near, dtype(np.inf)))
    if op in ("<", "<="):
        return Bound("<=", arrow_scalar(lower, t))
    return Bound(">=", arrow_scalar(upper, t))
