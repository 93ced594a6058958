"""What encoding a probed value gives (Probe, CannotMatch, NeverPrunes) and the encoders the
value modules share.
"""

from __future__ import annotations

import datetime as dt
import numbers
import re
import struct
from dataclasses import dataclass
from decimal import Decimal
from typing import TypeAlias

import numpy as np

from ..errors import UnsupportedTypeError, ValueEncodingError
from ..parquet.logical import LogicalKind, LogicalType
from ..parquet.schema import ColumnDescriptor
from ..types import PhysicalType


@dataclass(frozen=True, slots=True)
class Probe:
    """PLAIN encodings of one value; it may be present if any of them is in the filter."""

    alternatives: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class CannotMatch:
    """The value cannot occur in the column (the reason says why)."""

    reason: str


@dataclass(frozen=True, slots=True)
class NeverPrunes:
    """The filter cannot rule the value out (e.g. NaN); keep every row group."""

    reason: str


Encoded: TypeAlias = Probe | CannotMatch | NeverPrunes


@dataclass(frozen=True, slots=True)
class WithNanoseconds:
    """A datetime or time plus the nanoseconds (0-999) that Python's types cannot hold.

    :func:`parse_text_value` returns this for text with more than six
    fractional digits; ``pandas.Timestamp`` values (which carry a
    ``nanosecond`` attribute) are understood directly.
    """

    value: dt.datetime | dt.time
    nanosecond: int

    def __post_init__(self) -> None:
        if not 0 <= self.nanosecond <= 999:
            raise ValueEncodingError(
                "nanosecond must be within 0..999 (the rest belongs in the microseconds)",
                value=self.nanosecond,
            )


# --- limits and constants ---------------------------------------------------

INT32_RANGE = (-(2**31), 2**31 - 1)
INT64_RANGE = (-(2**63), 2**63 - 1)
EPOCH = dt.datetime(1970, 1, 1)
EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
NANOS_PER_DAY = 86_400 * 10**9
# The Julian day number of 1970-01-01: INT96 timestamps store nanoseconds of
# the day (int64 LE) followed by the Julian day (int32 LE), as Impala and Spark
# write them.
JULIAN_EPOCH_DAY = 2_440_588
# Decimal columns up to this precision are supported. Arrow's largest decimal
# has 76 digits; the cap keeps a hostile footer (precision 2**31) or probe
# (10**999999999) from making us build enormous integers.
MAX_DECIMAL_PRECISION = 1_000
# FLBA decimals wider than this are refused for the same reason.
MAX_DECIMAL_BYTES = 512
# A number of magnitude beyond 10**+-MAX_EXPONENT is converted without building
# its exact value: no float or 64-bit integer comes near it.
MAX_EXPONENT = 400


def show_value(value: object) -> str:
    """A value for a reason text: its repr, cut short if the value is huge."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"


#: The physical types a DECIMAL annotates.
DECIMAL_STORAGE = (
    PhysicalType.INT32,
    PhysicalType.INT64,
    PhysicalType.BYTE_ARRAY,
    PhysicalType.FIXED_LEN_BYTE_ARRAY,
)


def decimal_parameters(logical: LogicalType) -> tuple[int, int] | None:
    """A DECIMAL's precision and scale, None where they are missing or out of what is
    supported (precision 1 to :data:`MAX_DECIMAL_PRECISION`, scale not negative)."""
    precision, scale = logical.precision, logical.scale
    if precision is None or scale is None or not 1 <= precision <= MAX_DECIMAL_PRECISION:
        return None
    return (precision, scale) if scale >= 0 else None


def got_text(value: object) -> str:
    """``a bool``, ``an int``, ``a datetime``: the value's Python type, for messages."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def type_error(message: str, column: ColumnDescriptor, value: object) -> UnsupportedTypeError:
    """The value is not of the column's kind: the caller's mistake."""
    return UnsupportedTypeError(
        f"{message}; {literal_forms(column)}", column=column.path, value=value, has_value=True
    )


def unprobeable(column: ColumnDescriptor, problem: str) -> NeverPrunes:
    """The column's type cannot be encoded for, whatever the value: keep its row groups."""
    return NeverPrunes(f"{problem}, so no value of column {column.path!r} can be probed")


_TIMESTAMP_FORM = "'YYYY-MM-DD[THH:MM[:SS[.fffffffff]]][Z|+HH:MM]'"
_NUMBER_FORM = "numbers such as 1.5, -0.0, 1e3, NaN or inf"
_BINARY_FORM = "text in single quotes or binary as X'00ff' (str or bytes in Python)"


def literal_forms(column: ColumnDescriptor) -> str:
    """How a value of ``column``'s type is written: the text forms, then the Python types."""
    logical = column.logical_type
    kind = logical.kind if logical is not None else None
    ptype = column.physical_type
    if kind in (LogicalKind.STRING, LogicalKind.ENUM, LogicalKind.JSON):
        return f"a {kind.name} column takes text in single quotes ('abc'; str in Python)"
    if kind is LogicalKind.UNKNOWN:
        return "the column holds only nulls (NULL)"
    if kind is LogicalKind.DECIMAL:
        return f"a {logical} column takes numbers such as 12.50 (decimal.Decimal or int in Python)"
    if kind is LogicalKind.DATE:
        return "a DATE column takes 'YYYY-MM-DD' (datetime.date in Python)"
    if kind is LogicalKind.TIME:
        return "a TIME column takes 'HH:MM[:SS[.fffffffff]]' (datetime.time in Python)"
    if kind is LogicalKind.TIMESTAMP:
        return f"a TIMESTAMP column takes {_TIMESTAMP_FORM} (datetime.datetime in Python)"
    if kind is LogicalKind.UUID:
        return "a UUID column takes 'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx' (uuid.UUID in Python)"
    if kind is LogicalKind.FLOAT16:
        return f"a FLOAT16 column takes {_NUMBER_FORM} (float in Python)"
    if kind is LogicalKind.INTEGER and logical is not None:
        article = "a" if logical.is_signed is False else "an"  # a UINT(8), an INT(8)
        return f"{article} {logical} column takes integers such as 42 (int in Python)"
    if logical is not None:
        return f"a {logical} column takes its raw stored bytes as X'00ff' (bytes in Python)"
    if ptype is PhysicalType.BOOLEAN:
        return "a BOOLEAN column takes TRUE or FALSE (bool in Python)"
    if ptype in (PhysicalType.INT32, PhysicalType.INT64):
        return f"an {ptype.name} column takes integers such as 42 (int in Python)"
    if ptype in (PhysicalType.FLOAT, PhysicalType.DOUBLE):
        return f"a {ptype.name} column takes {_NUMBER_FORM} (float in Python)"
    if ptype is PhysicalType.INT96:
        return (
            f"an INT96 timestamp column takes {_TIMESTAMP_FORM} or its 12 raw bytes as X'...' "
            "(datetime.datetime or bytes in Python)"
        )
    if ptype is PhysicalType.FIXED_LEN_BYTE_ARRAY:
        return f"a FIXED_LEN_BYTE_ARRAY({column.type_length}) column takes {_BINARY_FORM}"
    return f"a {ptype.name} column takes {_BINARY_FORM}"


def probe_of(*alternatives: bytes) -> Probe:
    unique: list[bytes] = []
    for item in alternatives:
        if item not in unique:
            unique.append(item)
    return Probe(tuple(unique))


def bytes_like(value: object) -> bytes | None:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, memoryview):
        return value.tobytes()
    return None


def bytes_or_refuse(value: object, column: ColumnDescriptor, expected: str) -> bytes:
    """The bytes of a bytes-like value; any other is refused as not ``expected`` (what the
    column takes: "text or bytes", "the raw stored bytes")."""
    raw = bytes_like(value)
    if raw is None:
        raise type_error(f"expected {expected}, got {got_text(value)}", column, value)
    return raw


def raw_bytes_only(value: object, column: ColumnDescriptor) -> Encoded:
    return fixed_or_binary(bytes_or_refuse(value, column, "the raw stored bytes"), column)


def fixed_or_binary(raw: bytes, column: ColumnDescriptor) -> Encoded:
    ptype = column.physical_type
    if ptype is PhysicalType.FIXED_LEN_BYTE_ARRAY:
        width = column.type_length
        if width is None:
            return unprobeable(column, "the FIXED_LEN_BYTE_ARRAY column has no type_length")
        if len(raw) != width:
            return CannotMatch(f"{len(raw)} bytes cannot be stored in a {width}-byte column")
        return probe_of(raw)
    if ptype is PhysicalType.BYTE_ARRAY:
        return probe_of(raw)
    width = ptype.fixed_width
    if width is not None and len(raw) == width:
        # Raw PLAIN bytes of a fixed-width type (e.g. an INT96 timestamp).
        return probe_of(raw)
    if width is not None:
        return CannotMatch(f"{len(raw)} bytes cannot be a {ptype.name} value ({width} bytes)")
    raise type_error(f"bytes are not a {ptype.name} value", column, raw)


# --- numbers ----------------------------------------------------------------


def is_bool(value: object) -> bool:
    return isinstance(value, (bool, np.bool_))


def as_int(value: object, column: ColumnDescriptor) -> int | CannotMatch:
    """The exact integer a numeric probe equals, or why no integer column holds it."""
    if is_bool(value):
        raise type_error("expected an integer, got a bool (use 0 or 1)", column, value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            return CannotMatch(f"{show_value(value)} is not an integer")
        if value.adjusted() > MAX_EXPONENT:
            return CannotMatch(f"{show_value(value)} is outside the 64-bit integer range")
        if value != value.to_integral_value():
            return CannotMatch(f"{show_value(value)} has a fractional part")
        return int(value)
    ratio = getattr(value, "as_integer_ratio", None)
    if isinstance(value, numbers.Real) and ratio is not None:
        # float, numpy floating types, Fraction: exact via their integer ratio
        # (which NaN and infinities do not have).
        try:
            num, den = ratio()
        except (ValueError, OverflowError):
            return CannotMatch(f"{show_value(value)} is not an integer")
        if den != 1:
            return CannotMatch(f"{show_value(value)} has a fractional part")
        return int(num)
    raise type_error(f"expected an integer, got {got_text(value)}", column, value)


def pack_int(number: int, ptype: PhysicalType, unsigned_bits: int | None = None) -> Encoded:
    if ptype is PhysicalType.INT32:
        low, high, code = (0, 2**32 - 1, "<I") if unsigned_bits == 32 else (*INT32_RANGE, "<i")
    else:
        low, high, code = (0, 2**64 - 1, "<Q") if unsigned_bits == 64 else (*INT64_RANGE, "<q")
    if not low <= number <= high:
        return CannotMatch(f"{show_value(number)} is outside the column's range [{low}, {high}]")
    return probe_of(struct.pack(code, number))


def encode_plain_int(value: object, column: ColumnDescriptor) -> Encoded:
    number = as_int(value, column)
    if isinstance(number, CannotMatch):
        return number
    return pack_int(number, column.physical_type)


def not_flba(column: ColumnDescriptor, width: int, logical: LogicalType) -> NeverPrunes | None:
    if column.physical_type is not PhysicalType.FIXED_LEN_BYTE_ARRAY or column.type_length != width:
        return unprobeable(column, f"{logical} needs a {width}-byte FIXED_LEN_BYTE_ARRAY column")
    return None


UUID_TEXT = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)
