"""Predicate literals read by a column's type: their encodings (the one rule of literals,
shared by pruning and the rows' matching) and their places in the column's order."""

from __future__ import annotations

import datetime
import decimal
import math
import numbers
import struct
import uuid
from typing import Any

import numpy as np

from ..errors import PredicateError, UnsupportedTypeError, ValueEncodingError
from ..parquet import ColumnDescriptor, LogicalKind
from ..predicate import TextLiteral, literal_text
from ..types import PhysicalType
from ..values import CannotMatch, Encoded, NeverPrunes, encode_text, encode_value, parse_text_value
from ..values.order import Position, Unordered, position_of
from .verdicts import show


def binary_float(column: ColumnDescriptor) -> bool:
    """A binary floating-point column: a number literal means the nearest value of it."""
    lt = column.logical_type
    return column.physical_type in (PhysicalType.FLOAT, PhysicalType.DOUBLE) or (
        lt is not None and lt.kind is LogicalKind.FLOAT16
    )


def _read_as_number(column: ColumnDescriptor) -> bool:
    """A column whose values are exact numbers (integers, decimals, dates, times and
    timestamps as counts): a Python float there is the decimal number it prints as."""
    lt = column.logical_type
    return (lt is not None and lt.kind is LogicalKind.DECIMAL) or column.physical_type in (
        PhysicalType.INT32,
        PhysicalType.INT64,
    )


def literal_of(value: Any) -> str:
    """A literal as the text form writes it, cut short for a message."""
    text = literal_text(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"


#: Beyond this many bits an integer is beyond every binary float type (2**1024 > DBL_MAX).
_BEYOND_FLOATS = 1100


def _quoted(value: Any) -> str | None:
    """The text of a literal the text form writes in quotes, or None for other values."""
    if isinstance(value, TextLiteral):
        return value.text
    if isinstance(value, str):
        return value
    if isinstance(value, datetime.time) and value.tzinfo and value.utcoffset() is None:
        return None  # no fixed offset to write: the encoder says why
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return None


def _number_text(value: Any) -> str | None:
    """A finite int, Decimal or float as the decimal text it stands for, else None.

    A float stands for the number it prints as (``0.1`` is one tenth), as in
    the text form, which writes it so.
    """
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, numbers.Integral):
        number = int(value)
        return str(number) if number.bit_length() <= _BEYOND_FLOATS else None
    if isinstance(value, decimal.Decimal):
        return str(value) if value.is_finite() else None
    if isinstance(value, float) and math.isfinite(value):
        return float.__repr__(value)
    return None


def sort_kind(column: ColumnDescriptor) -> str | None:
    """How min/max statistics of the column compare, or None when we do not use them."""
    pt = column.physical_type
    lt = column.logical_type
    kind = lt.kind if lt is not None else None
    if pt in (PhysicalType.INT32, PhysicalType.INT64):
        if kind is LogicalKind.INTEGER and lt is not None and lt.is_signed is False:
            return "uint"
        if kind in (
            None,
            LogicalKind.INTEGER,
            LogicalKind.DECIMAL,
            LogicalKind.DATE,
            LogicalKind.TIME,
            LogicalKind.TIMESTAMP,
        ):
            return "int"
        return None
    if pt in (PhysicalType.FLOAT, PhysicalType.DOUBLE):
        return "float" if kind is None else None
    if pt in (PhysicalType.BYTE_ARRAY, PhysicalType.FIXED_LEN_BYTE_ARRAY):
        if kind is LogicalKind.DECIMAL:
            return "signed_be"
        if kind in (
            None,
            LogicalKind.STRING,
            LogicalKind.ENUM,
            LogicalKind.JSON,
            LogicalKind.BSON,
            LogicalKind.UUID,
        ):
            return "bytes"
        return None
    return None  # BOOLEAN, INT96: no usable order


def literal_sort_key(kind: str, raw: bytes, pt: PhysicalType) -> Any:
    if kind == "int":
        return int.from_bytes(raw, "little", signed=True)
    if kind == "uint":
        return int.from_bytes(raw, "little", signed=False)
    if kind == "float":
        return struct.unpack("<f" if pt is PhysicalType.FLOAT else "<d", raw)[0]
    if kind == "signed_be":
        return int.from_bytes(raw, "big", signed=True) if raw else 0
    return bytes(raw)


def encode_literal(value: Any, column: ColumnDescriptor) -> Encoded:
    """A predicate literal's exact encodings in ``column``, read by the column's type.

    The one rule for literals of both forms of a predicate (see
    :mod:`pybloom_async.predicate`), for pruning and for code that compares data with a
    predicate and must agree with it (``rows``): a value the text form writes in quotes
    (``str``, dates, times, timestamps, UUIDs) means that text read by the column's type;
    in a FLOAT, DOUBLE or FLOAT16 column a number means the nearest value of the type, as
    SQL reads a literal; a Python float means the decimal it prints as; otherwise a number
    is taken exactly. A literal that is not a value of the column's type is the user's
    mistake; one the column cannot hold is ``CannotMatch``.

    Raises
    ------
    PredicateError
        The literal is not a value of the column's type (naming the column, the value and
        the forms the column takes).
    """
    try:
        text = _quoted(value)
        if text is not None:
            return encode_text(text, column)
        if binary_float(column):
            number = _number_text(value)
            if number is not None:
                return encode_text(number, column)  # the nearest value, as in SQL
            if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
                return CannotMatch(f"{show(value)} is beyond the range of the column's type")
            if isinstance(value, decimal.Decimal):  # NaN and infinities
                return encode_value(float(value), column)
        elif isinstance(value, float) and _read_as_number(column):
            value = decimal.Decimal(float.__repr__(value))  # the number it prints as
        return encode_value(value, column)
    except (ValueEncodingError, UnsupportedTypeError) as exc:
        raise PredicateError(
            f"{literal_of(value)} is not a value of this column: {exc.message}", column=column.path
        ) from None


def order_literal(value: Any, column: ColumnDescriptor) -> Position | Unordered | NeverPrunes:
    """A predicate literal's exact place in ``column``'s order, read as pruning reads it.

    The literal rule of :func:`encode_literal`, for ranges: a quoted text (a ``str``,
    date, time, UUID) is read by the column's type, except that in an unannotated
    binary column it is the text itself (a range has one place, not the two an
    equality probes); in a FLOAT, DOUBLE or FLOAT16 column a number is the type's
    nearest value (beyond its range, the exact number); elsewhere a Python float is the
    decimal number it prints as. See :func:`pybloom_async.values.order.position_of`.

    Raises
    ------
    PredicateError
        The literal is not a value of the column's type, the type has no order, or an
        aware datetime meets a local-time column.
    """
    try:
        return position_of(_read_for_order(value, column), column)
    except (ValueEncodingError, UnsupportedTypeError) as exc:
        raise PredicateError(
            f"{literal_of(value)} is not a value of this column: {exc.message}", column=column.path
        ) from None


def _read_for_order(value: Any, column: ColumnDescriptor) -> Any:
    text = _quoted(value)
    binary = (PhysicalType.BYTE_ARRAY, PhysicalType.FIXED_LEN_BYTE_ARRAY)
    if text is not None:
        if column.logical_type is None and column.physical_type in binary:
            return text
        return parse_text_value(text, column)
    if binary_float(column):
        number = _number_text(value)
        if number is not None:
            return parse_text_value(number, column)  # the nearest value, as in SQL
        return value  # beyond every float, NaN or an infinity: placed exactly
    if isinstance(value, float) and _read_as_number(column):
        return decimal.Decimal(float.__repr__(value))  # the number it prints as
    return value
