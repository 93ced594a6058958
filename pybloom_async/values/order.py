"""Values placed in a column's order, for range comparisons (``<``, ``BETWEEN``, ...).

:func:`encode_value` says which stored bytes *equal* a value; a range needs where a
value *falls* among the values a column can store, also when no stored value equals
it: 300 in an INT(8) column lies above every one of them, ``2.5`` in an integer
column between 2 and 3, a timestamp finer than the column's unit between two ticks.
:func:`position_of` gives that place exactly, in the column's *key domain*, the
values its statistics are compared in:

* integers (plain, INTEGER, signed or unsigned), DECIMAL (the unscaled value at the
  column's scale), DATE (days), TIME and TIMESTAMP (ticks of the column's unit),
  INT96 (nanoseconds since the epoch) and BOOLEAN (0 and 1): a Python ``int``, a
  ``Fraction`` between two of them, or ``math.inf`` / ``-math.inf`` beyond them all;
* FLOAT, DOUBLE and FLOAT16: the number itself (a ``float`` of the type, or an exact
  ``Fraction`` or ``int`` outside its finite range);
* text, binary, UUID: the bytes, compared as unsigned bytes (a string's UTF-8).

Python compares ``int``, ``float`` and ``Fraction`` exactly, so ``key < position`` is
the exact comparison whatever the types. NaN has no place (:class:`Unordered`).

What is an error is what :func:`encode_value` calls one: a value of the wrong kind
raises :class:`~pybloom_async.errors.UnsupportedTypeError` or
:class:`~pybloom_async.errors.ValueEncodingError`. So does an aware datetime in a
local-time column (it has no one place there) and a column type without an order
(INTERVAL, GEOMETRY, ...). A column whose annotation cannot be read gives
:class:`NeverPrunes`.
"""

from __future__ import annotations

import math
import numbers
import uuid
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import TypeAlias

from ..errors import UnsupportedTypeError, ValueEncodingError
from ..parquet.logical import LogicalKind, LogicalType
from ..parquet.schema import ColumnDescriptor
from ..types import PhysicalType
from .encoded import (
    DECIMAL_STORAGE,
    INT32_RANGE,
    INT64_RANGE,
    MAX_DECIMAL_BYTES,
    UUID_TEXT,
    NeverPrunes,
    bytes_or_refuse,
    decimal_parameters,
    got_text,
    is_bool,
    literal_forms,
    type_error,
    unprobeable,
)
from .temporal import date_position, int96_position, time_position, timestamp_position


@dataclass(frozen=True, slots=True)
class Unordered:
    """The value has no place in the order (NaN): no range holds it."""

    reason: str


Position: TypeAlias = int | float | Fraction | bytes

#: Beyond 10**this, a number lies beyond every key an integer domain holds (the widest:
#: a FIXED_LEN_BYTE_ARRAY(512) decimal, below 2**4096 < 10**1234).
_BEYOND_INTEGERS = 1300
#: Beyond 10**this, a number lies beyond every finite double; a stand-in beyond them
#: all and below infinity (2**1100 > DBL_MAX), and one between 0 and the least subnormal.
_BEYOND_FLOATS = 400
_HUGE = Fraction(2**1100)
_TINY = Fraction(1, 2**1100)
_NAN = Unordered("NaN is neither below nor above any value: no range holds it")


def _decimal_place(value: Decimal, shift: int, floats: bool) -> Position:
    """``value * 10**shift`` exactly, or a stand-in that compares the same with every key."""
    if value.is_zero():
        return 0
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    exponent += shift
    adjusted = len(digits) - 1 + exponent
    negative = -1 if sign else 1
    if floats:
        if adjusted > _BEYOND_FLOATS:
            return negative * _HUGE
        if adjusted < -_BEYOND_FLOATS:
            return negative * _TINY
    else:
        if adjusted > _BEYOND_INTEGERS:
            return negative * math.inf
        if adjusted < 0:
            return Fraction(negative, 2)  # strictly between 0 and +-1, as the value is
    coefficient = int("".join(map(str, digits)))
    if exponent >= 0:
        scale: int = 10**exponent
        return negative * coefficient * scale
    return Fraction(negative * coefficient, 10**-exponent)


def _number(value: object, column: ColumnDescriptor, floats: bool, what: str) -> Position:
    """A number's exact place among numbers (see :data:`Position`)."""
    if is_bool(value):
        raise type_error(f"expected {what}, got a bool", column, value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, Decimal):
        if value.is_nan():
            raise _Unordered
        if value.is_infinite():
            return -math.inf if value.is_signed() else math.inf
        return _decimal_place(value, 0, floats)
    ratio = getattr(value, "as_integer_ratio", None)
    if isinstance(value, numbers.Real) and ratio is not None:
        try:
            num, den = ratio()
        except ValueError:
            raise _Unordered from None
        except OverflowError:
            return math.copysign(math.inf, float(value))
        if floats and isinstance(value, float):
            return float(value)
        return int(num) if den == 1 else Fraction(num, den)
    raise type_error(f"expected {what}, got {got_text(value)}", column, value)


class _Unordered(Exception):
    """NaN met: the value has no place."""


def position_of(value: object, column: ColumnDescriptor) -> Position | Unordered | NeverPrunes:
    """The exact place of a (non-NULL) value among the values ``column`` stores.

    ``value`` is already read by the column's type (as :func:`encode_value` takes it;
    for FLOAT, DOUBLE and FLOAT16 a number is the type's nearest value, or a number
    beyond its range). See the module docstring for the key domains.

    Raises
    ------
    UnsupportedTypeError
        The value is not of the column's kind, the column's type has no order, or an
        aware datetime meets a column without a UTC flag.
    ValueEncodingError
        Text for a UUID column is not a canonical UUID.
    """
    try:
        return _position(value, column)
    except _Unordered:
        return _NAN


def _position(value: object, column: ColumnDescriptor) -> Position | NeverPrunes:
    logical = column.logical_type
    kind = logical.kind if logical is not None else None
    pt = column.physical_type
    if logical is not None and kind is not None and kind is not LogicalKind.UNKNOWN:
        return _logical_position(value, column, logical)
    if pt is PhysicalType.BOOLEAN:
        if not is_bool(value):
            raise type_error(f"expected True or False, got {got_text(value)}", column, value)
        return int(bool(value))
    if pt in (PhysicalType.INT32, PhysicalType.INT64):
        return _number(value, column, False, "an integer")
    if pt in (PhysicalType.FLOAT, PhysicalType.DOUBLE):
        return _number(value, column, True, "a number")
    if pt is PhysicalType.INT96:
        return int96_position(value, column)
    return _bytes(value, column)


def _bytes(value: object, column: ColumnDescriptor) -> bytes:
    if isinstance(value, str):
        # A lone surrogate has no UTF-8 form, but its place among UTF-8 strings is the
        # one 'surrogatepass' gives (UTF-8 orders as code points).
        return value.encode("utf-8", "surrogatepass")
    return bytes_or_refuse(value, column, "text or bytes")


def _logical_position(
    value: object, column: ColumnDescriptor, logical: LogicalType
) -> Position | NeverPrunes:
    kind = logical.kind
    pt = column.physical_type
    binary = pt in (PhysicalType.BYTE_ARRAY, PhysicalType.FIXED_LEN_BYTE_ARRAY)
    if kind in (LogicalKind.STRING, LogicalKind.ENUM, LogicalKind.JSON, LogicalKind.BSON):
        if not binary:
            return unprobeable(column, f"{logical} cannot annotate a {pt.name} column")
        return _bytes(value, column) if kind is not LogicalKind.BSON else _raw(value, column)
    if kind is LogicalKind.UUID:
        if pt is not PhysicalType.FIXED_LEN_BYTE_ARRAY or column.type_length != 16:
            return unprobeable(column, f"{logical} needs a 16-byte FIXED_LEN_BYTE_ARRAY column")
        if isinstance(value, uuid.UUID):
            return value.bytes
        if isinstance(value, str):
            if not UUID_TEXT.fullmatch(value):
                raise ValueEncodingError(
                    f"not a canonical UUID (8-4-4-4-12 hexadecimal digits); "
                    f"{literal_forms(column)}",
                    column=column.path,
                    value=value,
                )
            return uuid.UUID(value).bytes
        return _raw(value, column)
    if kind is LogicalKind.DECIMAL:
        return _decimal_position(value, column, logical)
    if kind is LogicalKind.INTEGER:
        bits, signed = logical.bit_width, logical.is_signed
        expected = PhysicalType.INT64 if bits == 64 else PhysicalType.INT32
        if bits not in (8, 16, 32, 64) or signed is None or pt is not expected:
            return unprobeable(column, f"{logical} cannot annotate a {pt.name} column")
        return _number(value, column, False, "an integer")
    if kind is LogicalKind.FLOAT16:
        if pt is not PhysicalType.FIXED_LEN_BYTE_ARRAY or column.type_length != 2:
            return unprobeable(column, f"{logical} needs a 2-byte FIXED_LEN_BYTE_ARRAY column")
        return _number(value, column, True, "a number")
    if kind is LogicalKind.DATE:
        if pt is not PhysicalType.INT32:
            return unprobeable(column, f"DATE cannot annotate a {pt.name} column")
        days = date_position(value, column)
        return days if days is not None else _number(value, column, False, "a date")
    if kind in (LogicalKind.TIME, LogicalKind.TIMESTAMP):
        unit, utc = logical.unit, logical.is_adjusted_to_utc
        is_time = kind is LogicalKind.TIME
        wanted = PhysicalType.INT64
        if is_time and unit is not None and unit.per_second == 1000:
            wanted = PhysicalType.INT32
        if unit is None or utc is None or pt is not wanted:
            return unprobeable(column, f"{logical} cannot annotate a {pt.name} column")
        place = (
            time_position(value, column, logical)
            if is_time
            else timestamp_position(value, column, logical)
        )
        if place is None:
            return _number(value, column, False, "a raw count of the column's unit")
        return place.numerator if place.denominator == 1 else place
    raise UnsupportedTypeError(
        f"a {logical} column has no order: compare it with =, IN or IS NULL only",
        column=column.path,
    )


def _raw(value: object, column: ColumnDescriptor) -> bytes:
    return bytes_or_refuse(value, column, "the raw stored bytes")


def _decimal_position(
    value: object, column: ColumnDescriptor, logical: LogicalType
) -> Position | NeverPrunes:
    parameters = decimal_parameters(logical)
    pt = column.physical_type
    if parameters is None or pt not in DECIMAL_STORAGE:
        return unprobeable(column, f"unsupported decimal parameters {logical} on {pt.name}")
    scale = parameters[1]
    if is_bool(value) or not isinstance(value, (numbers.Integral, Decimal)):
        raise type_error(f"expected decimal.Decimal or int, got {got_text(value)}", column, value)
    if isinstance(value, numbers.Integral):
        value = Decimal(int(value))
    if value.is_nan():
        raise _Unordered
    if value.is_infinite():
        return -math.inf if value.is_signed() else math.inf
    return _decimal_place(value, scale, False)


def domain_bounds(column: ColumnDescriptor) -> tuple[Position, Position] | None:
    """The least and greatest key the column's type can store (None: not an integer domain
    with known bounds). What a comparison beyond them decides needs no statistics."""
    logical = column.logical_type
    kind = logical.kind if logical is not None else None
    pt = column.physical_type
    if kind is LogicalKind.INTEGER and logical is not None:
        bits, signed = logical.bit_width, logical.is_signed
        if bits not in (8, 16, 32, 64) or signed is None:
            return None
        return (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    if kind is LogicalKind.DECIMAL and pt is PhysicalType.FIXED_LEN_BYTE_ARRAY:
        width = column.type_length
        if width is None or not 1 <= width <= MAX_DECIMAL_BYTES:
            return None
        return -(2 ** (8 * width - 1)), 2 ** (8 * width - 1) - 1
    if kind in (None, LogicalKind.DECIMAL, LogicalKind.DATE, LogicalKind.TIME,
                LogicalKind.TIMESTAMP):  # fmt: skip
        if pt is PhysicalType.INT32:
            return INT32_RANGE
        if pt is PhysicalType.INT64:
            return INT64_RANGE
        if pt in (PhysicalType.FLOAT, PhysicalType.DOUBLE) and kind is None:
            return -math.inf, math.inf
        if pt is PhysicalType.BOOLEAN and kind is None:
            return 0, 1
    return None
