"""Exact conversion of probe values to the bytes a column stores.

A Parquet Bloom filter holds XXH64 hashes of each value's PLAIN encoding
(parquet-format ``BloomFilter.md``): INT32/INT64/FLOAT/DOUBLE little-endian,
BYTE_ARRAY without its 4-byte length prefix, FIXED_LEN_BYTE_ARRAY and INT96 as
their raw bytes. To probe a filter for a Python value we need exactly the bytes
a writer would have stored for it, so :func:`encode_value` never rounds,
truncates or guesses. It returns one of:

* :class:`Probe`: the PLAIN bytes to hash. Sometimes several, when one value
  has several encodings a writer may have used (``0.0`` and ``-0.0``; an aware
  datetime in a column with local-time semantics). The value may be present
  if *any* alternative is in the filter.
* :class:`CannotMatch`: the value cannot be stored in this column at all (an
  integer out of range, a fraction in an integer column, more digits than a
  decimal's scale), so no row holds it.
* :class:`NeverPrunes`: the filter cannot answer for this value (NaN: writers
  store NaNs with varying bit patterns), or for any value of this column (its
  type annotation is invalid or unsupported, e.g. TIMESTAMP on an INT32), so
  the row group must be kept.

What is an error and what cannot match: a value that is not of the column's
kind at all is the caller's mistake and raises, naming the column, the value
and the forms the column takes. A Python value of a type that does not fit
the column (bytes for an INT64 column, a float for a DECIMAL) raises
:class:`~pybloom_async.errors.UnsupportedTypeError`; text that does not read
as the column's type (``'2024/01/05'`` for a DATE) raises
:class:`~pybloom_async.errors.ValueEncodingError`. A well-formed value that
the column cannot hold (300 for INT(8), 10 bytes for a 4-byte column, more
fractional digits than a decimal's scale) is :class:`CannotMatch`.

:func:`parse_text_value` reads the command line's text into the Python value
the column's type calls for.
"""

from __future__ import annotations

import datetime as dt
import math
import numbers
import re
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import TypeAlias

import numpy as np

from ..errors import UnsupportedTypeError, ValueEncodingError
from ..types import PhysicalType
from .schema import ColumnDescriptor, LogicalKind, LogicalType, TimeUnit

__all__ = [
    "CannotMatch",
    "Encoded",
    "NeverPrunes",
    "Probe",
    "WithNanoseconds",
    "encode_text",
    "encode_value",
    "parse_text_value",
]


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

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
_EPOCH = dt.datetime(1970, 1, 1)
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_NANOS_PER_DAY = 86_400 * 10**9
# The Julian day number of 1970-01-01: INT96 timestamps store nanoseconds of
# the day (int64 LE) followed by the Julian day (int32 LE), as Impala and Spark
# write them.
_JULIAN_EPOCH_DAY = 2_440_588
# Decimal columns up to this precision are supported. Arrow's largest decimal
# has 76 digits; the cap keeps a hostile footer (precision 2**31) or probe
# (10**999999999) from making us build enormous integers.
_MAX_DECIMAL_PRECISION = 1_000
# FLBA decimals wider than this are refused for the same reason.
_MAX_DECIMAL_BYTES = 512
# A number of magnitude beyond 10**+-_MAX_EXPONENT is converted without building
# its exact value: no float or 64-bit integer comes near it.
_MAX_EXPONENT = 400


def _show(value: object) -> str:
    """A value for a reason text: its repr, cut short if the value is huge."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"


def _got(value: object) -> str:
    """``a bool``, ``an int``, ``a datetime``: the value's Python type, for messages."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _fail(message: str, column: ColumnDescriptor, value: object) -> UnsupportedTypeError:
    """The value is not of the column's kind: the caller's mistake."""
    return UnsupportedTypeError(
        f"{message}; {_forms(column)}", column=column.path, value=value, has_value=True
    )


def _unprobeable(column: ColumnDescriptor, problem: str) -> NeverPrunes:
    """The column's type cannot be encoded for, whatever the value: keep its row groups."""
    return NeverPrunes(f"{problem}, so no value of column {column.path!r} can be probed")


_TIMESTAMP_FORM = "'YYYY-MM-DD[THH:MM[:SS[.fffffffff]]][Z|+HH:MM]'"
_NUMBER_FORM = "numbers such as 1.5, -0.0, 1e3, NaN or inf"
_BINARY_FORM = "text in single quotes or binary as X'00ff' (str or bytes in Python)"


def _forms(column: ColumnDescriptor) -> str:
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


# --- encode_value -------------------------------------------------------------


def encode_value(value: object, column: ColumnDescriptor) -> Encoded:
    """Encode a probe value as the PLAIN bytes ``column`` would store for it.

    Parameters
    ----------
    value:
        A Python value of the column's logical type: ``bool``; ``int`` (also for
        DATE/TIME/TIMESTAMP, meaning the raw stored count); ``float``;
        ``decimal.Decimal`` or ``int`` for DECIMAL; ``str`` or ``bytes`` for
        binary columns; ``datetime.date``/``datetime.time``/
        ``datetime.datetime`` (or :class:`WithNanoseconds`) for temporal
        columns; ``uuid.UUID`` or its canonical text for UUID. ``None`` cannot
        match (filters hold no nulls; ``= NULL`` selects no row).
    column:
        The column, from :attr:`Schema.columns` or :meth:`ColumnDescriptor.of`.

    Time zones: for columns adjusted to UTC (``isAdjustedToUTC = true``) an
    aware value is converted to UTC and a naive one is taken as UTC. For
    local-time columns (``false``) and legacy INT96 a naive value is used as
    written; an aware one is probed both as its wall-clock time and converted
    to UTC, since writers differ in which they store.

    Returns :class:`CannotMatch` for a value of the right kind that the
    column cannot hold, and :class:`NeverPrunes` for NaN and for columns whose
    type annotation cannot be encoded for (invalid or unsupported parameters).

    Raises
    ------
    UnsupportedTypeError
        The Python type does not fit the column (e.g. bytes for an INT64
        column; GEOMETRY takes raw bytes only). The message names the forms the
        column takes.
    ValueEncodingError
        A text value for a UUID column is not a canonical UUID.
    """
    if value is None:
        return CannotMatch("null is never stored in a Bloom filter; '= null' selects no row")
    logical = column.logical_type
    kind = logical.kind if logical is not None else None
    if kind is LogicalKind.UNKNOWN:
        return CannotMatch("the column's logical type is UNKNOWN (NULL): it holds only nulls")
    if logical is not None and kind is not None:
        handler = _LOGICAL.get(kind)
        if handler is not None:
            return handler(value, column, logical)
        # Annotations whose values have no Python form here (GEOMETRY, VARIANT,
        # INTERVAL, BSON, ... and types newer than this library): the stored
        # bytes themselves are the only exact probe.
        return _raw_bytes_only(value, column)
    return _PHYSICAL[column.physical_type](value, column)


def encode_text(text: str, column: ColumnDescriptor) -> Encoded:
    """Parse command-line text for ``column`` and encode it (parse, then encode).

    In a BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY column without a type annotation,
    ``0x``-prefixed text is probed both as the binary it spells and as the
    text itself: such columns hold strings as often as binary.

    Raises
    ------
    ValueEncodingError
        The text cannot be read as a value of the column's type (the message
        names the forms the column takes).
    """
    value = parse_text_value(text, column)
    encoded = encode_value(value, column)
    binary = (PhysicalType.BYTE_ARRAY, PhysicalType.FIXED_LEN_BYTE_ARRAY)
    if isinstance(value, bytes) and column.logical_type is None and column.physical_type in binary:
        as_text = encode_value(text, column)
        if isinstance(encoded, Probe) and isinstance(as_text, Probe):
            return _probe(*encoded.alternatives, *as_text.alternatives)
        if isinstance(encoded, CannotMatch) and isinstance(as_text, Probe):
            return as_text
    return encoded


def _probe(*alternatives: bytes) -> Probe:
    unique: list[bytes] = []
    for item in alternatives:
        if item not in unique:
            unique.append(item)
    return Probe(tuple(unique))


def _bytes_like(value: object) -> bytes | None:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, memoryview):
        return value.tobytes()
    return None


def _raw_bytes_only(value: object, column: ColumnDescriptor) -> Encoded:
    raw = _bytes_like(value)
    if raw is None:
        raise _fail(f"expected the raw stored bytes, got {_got(value)}", column, value)
    return _fixed_or_binary(raw, column)


def _fixed_or_binary(raw: bytes, column: ColumnDescriptor) -> Encoded:
    ptype = column.physical_type
    if ptype is PhysicalType.FIXED_LEN_BYTE_ARRAY:
        width = column.type_length
        if width is None:
            return _unprobeable(column, "the FIXED_LEN_BYTE_ARRAY column has no type_length")
        if len(raw) != width:
            return CannotMatch(f"{len(raw)} bytes cannot be stored in a {width}-byte column")
        return _probe(raw)
    if ptype is PhysicalType.BYTE_ARRAY:
        return _probe(raw)
    width = ptype.fixed_width
    if width is not None and len(raw) == width:
        # Raw PLAIN bytes of a fixed-width type (e.g. an INT96 timestamp).
        return _probe(raw)
    if width is not None:
        return CannotMatch(f"{len(raw)} bytes cannot be a {ptype.name} value ({width} bytes)")
    raise _fail(f"bytes are not a {ptype.name} value", column, raw)


# --- numbers ----------------------------------------------------------------


def _is_bool(value: object) -> bool:
    return isinstance(value, (bool, np.bool_))


def _as_int(value: object, column: ColumnDescriptor) -> int | CannotMatch:
    """The exact integer a numeric probe equals, or why no integer column holds it."""
    if _is_bool(value):
        raise _fail("expected an integer, got a bool (use 0 or 1)", column, value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            return CannotMatch(f"{_show(value)} is not an integer")
        if value.adjusted() > _MAX_EXPONENT:
            return CannotMatch(f"{_show(value)} is outside the 64-bit integer range")
        if value != value.to_integral_value():
            return CannotMatch(f"{_show(value)} has a fractional part")
        return int(value)
    ratio = getattr(value, "as_integer_ratio", None)
    if isinstance(value, numbers.Real) and ratio is not None:
        # float, numpy floating types, Fraction: exact via their integer ratio
        # (which NaN and infinities do not have).
        try:
            num, den = ratio()
        except (ValueError, OverflowError):
            return CannotMatch(f"{_show(value)} is not an integer")
        if den != 1:
            return CannotMatch(f"{_show(value)} has a fractional part")
        return int(num)
    raise _fail(f"expected an integer, got {_got(value)}", column, value)


def _pack_int(number: int, ptype: PhysicalType, unsigned_bits: int | None = None) -> Encoded:
    if ptype is PhysicalType.INT32:
        low, high, code = (0, 2**32 - 1, "<I") if unsigned_bits == 32 else (*_INT32, "<i")
    else:
        low, high, code = (0, 2**64 - 1, "<Q") if unsigned_bits == 64 else (*_INT64, "<q")
    if not low <= number <= high:
        return CannotMatch(f"{_show(number)} is outside the column's range [{low}, {high}]")
    return _probe(struct.pack(code, number))


def _encode_plain_int(value: object, column: ColumnDescriptor) -> Encoded:
    number = _as_int(value, column)
    if isinstance(number, CannotMatch):
        return number
    return _pack_int(number, column.physical_type)


def _encode_integer(value: object, column: ColumnDescriptor, logical: LogicalType) -> Encoded:
    bits, signed = logical.bit_width, logical.is_signed
    ptype = column.physical_type
    expected = PhysicalType.INT64 if bits == 64 else PhysicalType.INT32
    if bits not in (8, 16, 32, 64) or signed is None or ptype is not expected:
        return _unprobeable(column, f"{logical} cannot annotate a {ptype.name} column")
    number = _as_int(value, column)
    if isinstance(number, CannotMatch):
        return number
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    if not low <= number <= high:
        return CannotMatch(f"{_show(number)} is outside {logical}'s range [{low}, {high}]")
    # Unsigned 32/64-bit values are stored as the same bit pattern in the
    # signed physical type (LogicalTypes.md, "Unsigned Integers").
    return _pack_int(number, ptype, unsigned_bits=None if signed else bits)


def _encode_boolean(value: object, column: ColumnDescriptor) -> Encoded:
    if not _is_bool(value):
        raise _fail(f"expected True or False, got {_got(value)}", column, value)
    # One byte per value, as the C hasher and arrow-rs hash booleans.
    return _probe(b"\x01" if value else b"\x00")


_NAN_REASON = "NaN never prunes: writers store NaN with varying bit patterns"


def _as_float(value: object, column: ColumnDescriptor) -> float | CannotMatch | NeverPrunes:
    """The double a real-number probe equals exactly, or why it has none."""
    if _is_bool(value):
        raise _fail("expected a number, got a bool", column, value)
    if isinstance(value, numbers.Integral):
        number = int(value)
        try:
            result = float(number)
        except OverflowError:
            return CannotMatch(f"{_show(number)} is beyond the range of a double")
        if result != number:
            return CannotMatch(f"{_show(number)} is not exactly representable as a double")
        return result
    if isinstance(value, Decimal):
        if value.is_nan():
            return NeverPrunes(_NAN_REASON)
        if value.is_infinite():
            return math.copysign(math.inf, -1.0 if value.is_signed() else 1.0)
        if value.is_zero():
            return -0.0 if value.is_signed() else 0.0
        if abs(value.adjusted()) > _MAX_EXPONENT:
            return CannotMatch(f"{_show(value)} is not exactly representable as a double")
        result = float(value)
        if Decimal(result) != value:
            return CannotMatch(f"{_show(value)} is not exactly representable as a double")
        return result
    if isinstance(value, float):  # also numpy.float64
        if math.isnan(value):
            return NeverPrunes(_NAN_REASON)
        return float(value)
    ratio = getattr(value, "as_integer_ratio", None)
    if isinstance(value, numbers.Real) and ratio is not None:
        # Fraction and the other numpy floats (float16/32, longdouble): exact
        # through their integer ratio, which NaN and infinities lack.
        try:
            num, den = ratio()
        except ValueError:
            return NeverPrunes(_NAN_REASON)
        except OverflowError:
            return math.copysign(math.inf, float(value))
        exact = Fraction(num, den)
        try:
            nearest = float(exact)  # correctly rounded
        except OverflowError:
            return CannotMatch(f"{_show(value)} is beyond the range of a double")
        if Fraction(nearest) != exact:
            return CannotMatch(f"{_show(value)} is not exactly representable as a double")
        return nearest
    raise _fail(f"expected a number, got {_got(value)}", column, value)


def _encode_floating(value: object, column: ColumnDescriptor, code: str, name: str) -> Encoded:
    number = _as_float(value, column)
    if not isinstance(number, float):
        return number
    try:
        packed = struct.pack(code, number)
    except OverflowError:
        return CannotMatch(f"{_show(number)} is beyond the range of {name}")
    if struct.unpack(code, packed)[0] != number:
        return CannotMatch(f"{_show(number)} is not exactly representable as {name}")
    if number == 0.0:
        # Writers do not normalise zeros: a column holding 0.0 may have either
        # sign on disk, so probe both (DESIGN.md, "Reference behaviour").
        return _probe(struct.pack(code, 0.0), struct.pack(code, -0.0))
    return _probe(packed)


def _encode_float(value: object, column: ColumnDescriptor) -> Encoded:
    return _encode_floating(value, column, "<f", "a FLOAT (32-bit)")


def _encode_double(value: object, column: ColumnDescriptor) -> Encoded:
    return _encode_floating(value, column, "<d", "a DOUBLE")


def _encode_float16(value: object, column: ColumnDescriptor, logical: LogicalType) -> Encoded:
    wrong = _not_flba(column, 2, logical)
    return wrong or _encode_floating(value, column, "<e", "a FLOAT16")


def _not_flba(column: ColumnDescriptor, width: int, logical: LogicalType) -> NeverPrunes | None:
    if column.physical_type is not PhysicalType.FIXED_LEN_BYTE_ARRAY or column.type_length != width:
        return _unprobeable(column, f"{logical} needs a {width}-byte FIXED_LEN_BYTE_ARRAY column")
    return None


# --- binary and text ----------------------------------------------------------


def _utf8(value: str) -> bytes | CannotMatch:
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:
        return CannotMatch("the text has lone surrogates, so it is not valid UTF-8")


def _encode_binary(value: object, column: ColumnDescriptor) -> Encoded:
    if isinstance(value, str):
        encoded = _utf8(value)
        return encoded if isinstance(encoded, CannotMatch) else _fixed_or_binary(encoded, column)
    raw = _bytes_like(value)
    if raw is None:
        raise _fail(f"expected text or bytes, got {_got(value)}", column, value)
    return _fixed_or_binary(raw, column)


def _encode_text(value: object, column: ColumnDescriptor, logical: LogicalType) -> Encoded:
    if column.physical_type not in (PhysicalType.BYTE_ARRAY, PhysicalType.FIXED_LEN_BYTE_ARRAY):
        return _unprobeable(
            column, f"{logical} cannot annotate a {column.physical_type.name} column"
        )
    return _encode_binary(value, column)


_UUID_TEXT = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


def _encode_uuid(value: object, column: ColumnDescriptor, logical: LogicalType) -> Encoded:
    wrong = _not_flba(column, 16, logical)
    if wrong is not None:
        return wrong
    if isinstance(value, uuid.UUID):
        # LogicalTypes.md: UUIDs are stored big-endian, i.e. UUID.bytes.
        return _probe(value.bytes)
    if isinstance(value, str):
        if not _UUID_TEXT.fullmatch(value):
            raise ValueEncodingError(
                f"not a canonical UUID (8-4-4-4-12 hexadecimal digits); {_forms(column)}",
                column=column.path,
                value=value,
            )
        return _probe(uuid.UUID(value).bytes)
    raw = _bytes_like(value)
    if raw is None:
        raise _fail(f"expected a UUID, got {_got(value)}", column, value)
    return _fixed_or_binary(raw, column)


# --- decimals -----------------------------------------------------------------


def _encode_decimal(value: object, column: ColumnDescriptor, logical: LogicalType) -> Encoded:
    precision, scale = logical.precision, logical.scale
    ptype = column.physical_type
    if (
        precision is None
        or scale is None
        or not 1 <= precision <= _MAX_DECIMAL_PRECISION
        or scale < 0
    ):
        return _unprobeable(column, f"unsupported decimal parameters {logical}")
    if ptype not in (
        PhysicalType.INT32,
        PhysicalType.INT64,
        PhysicalType.BYTE_ARRAY,
        PhysicalType.FIXED_LEN_BYTE_ARRAY,
    ):
        return _unprobeable(column, f"{logical} cannot annotate a {ptype.name} column")
    if _is_bool(value):
        raise _fail("expected a decimal number, got a bool", column, value)
    if isinstance(value, numbers.Integral):
        number = int(value)
        # ~3.33 bits per digit: anything longer than this has too many digits.
        if number.bit_length() > 4 * _MAX_DECIMAL_PRECISION:
            return CannotMatch(f"the value has more than {precision} digits")
        value = Decimal(number)
    if not isinstance(value, Decimal):
        raise _fail(
            f"expected decimal.Decimal or int, got {_got(value)} "
            "(binary floats rarely equal a decimal exactly)",
            column,
            value,
        )
    unscaled = _unscaled(value, precision, scale)
    if isinstance(unscaled, CannotMatch):
        return unscaled
    if ptype is PhysicalType.INT32 or ptype is PhysicalType.INT64:
        return _pack_int(unscaled, ptype)
    if ptype is PhysicalType.FIXED_LEN_BYTE_ARRAY:
        width = column.type_length
        if width is None or not 1 <= width <= _MAX_DECIMAL_BYTES:
            return _unprobeable(column, f"unsupported DECIMAL width {width}")
        try:
            # LogicalTypes.md: big-endian two's complement in the full width.
            return _probe(unscaled.to_bytes(width, "big", signed=True))
        except OverflowError:
            return CannotMatch(f"the unscaled value does not fit {width} bytes")
    # BYTE_ARRAY: "The minimum number of bytes to store the unscaled value
    # should be used" (LogicalTypes.md), i.e. Java's BigInteger.toByteArray().
    magnitude = unscaled if unscaled >= 0 else ~unscaled
    return _probe(unscaled.to_bytes(magnitude.bit_length() // 8 + 1, "big", signed=True))


def _unscaled(value: Decimal, precision: int, scale: int) -> int | CannotMatch:
    """``value * 10**scale`` as an exact integer of at most ``precision`` digits."""
    if not value.is_finite():
        return CannotMatch(f"{_show(value)} is not a decimal number")
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)  # finite decimals have an integer exponent
    # Trailing zeros beyond the scale are harmless (1.500 at scale 1 is 15).
    end = len(digits)
    while end > 1 and exponent < -scale and digits[end - 1] == 0:
        end -= 1
        exponent += 1
    digits = digits[:end]
    if exponent < -scale and any(digits):
        return CannotMatch(f"{_show(value)} has more than {scale} fractional digits")
    if not any(digits):
        return 0
    shift = exponent + scale  # >= 0 here
    leading = next(i for i, d in enumerate(digits) if d)
    count = len(digits) - leading + shift
    if count > precision:
        return CannotMatch(f"{_show(value)} needs more than the column's {precision} digits")
    factor: int = 10**shift
    number = int("".join(map(str, digits[leading:]))) * factor
    return -number if sign else number


# --- dates and times -----------------------------------------------------------


def _split_nanos(value: object) -> tuple[object, int]:
    """Unwrap WithNanoseconds, and read pandas' extra ``nanosecond`` attribute."""
    if isinstance(value, WithNanoseconds):
        return value.value, value.nanosecond
    extra = getattr(value, "nanosecond", 0) if isinstance(value, dt.datetime) else 0
    return value, int(extra) if isinstance(extra, int) else 0


def _offset_nanos(offset: dt.timedelta) -> int:
    return (offset.days * 86_400 + offset.seconds) * 10**9 + offset.microseconds * 1000


def _instants(wall_nanos: int, offset: dt.timedelta | None, adjusted_to_utc: bool) -> list[int]:
    """The stored nanosecond counts to probe, per the time-zone rules of encode_value."""
    if offset is None:
        return [wall_nanos]
    utc = wall_nanos - _offset_nanos(offset)
    return [utc] if adjusted_to_utc else [wall_nanos, utc]


def _to_unit(nanos: int, unit: TimeUnit) -> int | None:
    factor = 10**9 // unit.per_second
    return nanos // factor if nanos % factor == 0 else None


def _encode_date(value: object, column: ColumnDescriptor, logical: LogicalType) -> Encoded:
    if column.physical_type is not PhysicalType.INT32:
        return _unprobeable(column, f"DATE cannot annotate a {column.physical_type.name} column")
    if isinstance(value, dt.datetime):
        raise _fail("expected a date, got a datetime", column, value)
    if isinstance(value, dt.date):
        return _pack_int(value.toordinal() - _EPOCH_ORDINAL, PhysicalType.INT32)
    return _encode_plain_int(value, column)


def _encode_time(value: object, column: ColumnDescriptor, logical: LogicalType) -> Encoded:
    unit, utc = logical.unit, logical.is_adjusted_to_utc
    ptype = column.physical_type
    expected = PhysicalType.INT32 if unit is TimeUnit.MILLIS else PhysicalType.INT64
    if unit is None or utc is None or ptype is not expected:
        return _unprobeable(column, f"{logical} cannot annotate a {ptype.name} column")
    base, extra = _split_nanos(value)
    if not isinstance(base, dt.time):
        if isinstance(base, (dt.datetime, dt.date)):
            raise _fail(f"expected a time of day, got {_got(base)}", column, value)
        return _encode_plain_int(value, column)
    wall = (
        ((base.hour * 60 + base.minute) * 60 + base.second) * 10**9
        + base.microsecond * 1000
        + extra
    )
    offset = base.utcoffset()
    if base.tzinfo is not None and offset is None:
        raise _fail("the time's zone has no fixed UTC offset; use a fixed offset", column, value)
    alternatives: list[bytes] = []
    for nanos in _instants(wall, offset, utc):
        count = _to_unit(nanos % _NANOS_PER_DAY, unit)
        if count is None:
            return CannotMatch(f"{_show(value)} is more precise than the column's {unit.name}")
        packed = _pack_int(count, ptype)
        if isinstance(packed, Probe):
            alternatives.extend(packed.alternatives)
    return _probe(*alternatives)


def _datetime_nanos(value: dt.datetime, extra: int) -> tuple[int, dt.timedelta | None]:
    """Nanoseconds of the wall-clock time since 1970-01-01T00:00, and the UTC offset."""
    delta = value.replace(tzinfo=None) - _EPOCH
    wall = (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1000 + extra
    return wall, value.utcoffset()


def _encode_timestamp(value: object, column: ColumnDescriptor, logical: LogicalType) -> Encoded:
    unit, utc = logical.unit, logical.is_adjusted_to_utc
    if unit is None or utc is None or column.physical_type is not PhysicalType.INT64:
        return _unprobeable(
            column, f"{logical} cannot annotate a {column.physical_type.name} column"
        )
    base, extra = _split_nanos(value)
    if not isinstance(base, dt.datetime):
        if isinstance(base, (dt.date, dt.time)):
            raise _fail(f"expected a datetime, got {_got(base)}", column, value)
        return _encode_plain_int(value, column)
    wall, offset = _datetime_nanos(base, extra)
    alternatives: list[bytes] = []
    for nanos in _instants(wall, offset, utc):
        count = _to_unit(nanos, unit)
        if count is None:
            return CannotMatch(f"{_show(value)} is more precise than the column's {unit.name}")
        packed = _pack_int(count, PhysicalType.INT64)
        if isinstance(packed, Probe):
            alternatives.extend(packed.alternatives)
    if not alternatives:
        return CannotMatch(f"{_show(value)} is outside the 64-bit range of the column's unit")
    return _probe(*alternatives)


def _encode_int96(value: object, column: ColumnDescriptor) -> Encoded:
    base, extra = _split_nanos(value)
    if not isinstance(base, dt.datetime):
        if isinstance(base, (dt.date, dt.time)):
            raise _fail(f"expected a datetime, got {_got(base)}", column, value)
        return _raw_bytes_only(value, column)
    wall, offset = _datetime_nanos(base, extra)
    alternatives = []
    # INT96 carries no UTC flag: Spark stores UTC instants, Impala and Hive
    # local wall-clock times, so an aware value is probed both ways.
    for nanos in _instants(wall, offset, adjusted_to_utc=False):
        day, nanos_of_day = divmod(nanos, _NANOS_PER_DAY)
        julian = day + _JULIAN_EPOCH_DAY
        if _INT32[0] <= julian <= _INT32[1]:
            alternatives.append(struct.pack("<qi", nanos_of_day, julian))
    if not alternatives:
        return CannotMatch(f"{_show(value)} is outside the range of INT96 timestamps")
    return _probe(*alternatives)


_LOGICAL: dict[LogicalKind, Callable[[object, ColumnDescriptor, LogicalType], Encoded]] = {
    LogicalKind.STRING: _encode_text,
    LogicalKind.ENUM: _encode_text,
    LogicalKind.JSON: _encode_text,
    LogicalKind.DECIMAL: _encode_decimal,
    LogicalKind.DATE: _encode_date,
    LogicalKind.TIME: _encode_time,
    LogicalKind.TIMESTAMP: _encode_timestamp,
    LogicalKind.INTEGER: _encode_integer,
    LogicalKind.UUID: _encode_uuid,
    LogicalKind.FLOAT16: _encode_float16,
}

_PHYSICAL: dict[PhysicalType, Callable[[object, ColumnDescriptor], Encoded]] = {
    PhysicalType.BOOLEAN: _encode_boolean,
    PhysicalType.INT32: _encode_plain_int,
    PhysicalType.INT64: _encode_plain_int,
    PhysicalType.INT96: _encode_int96,
    PhysicalType.FLOAT: _encode_float,
    PhysicalType.DOUBLE: _encode_double,
    PhysicalType.BYTE_ARRAY: _encode_binary,
    PhysicalType.FIXED_LEN_BYTE_ARRAY: _encode_binary,
}


# --- parse_text_value -----------------------------------------------------------

_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_DATE_TEXT = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
_ZONE = r"(?P<zone>Z|z|[+-][0-9]{2}(?::?[0-9]{2})?)"
_CLOCK = r"(?P<h>[0-9]{2}):(?P<m>[0-9]{2})(?::(?P<s>[0-9]{2})(?:[.,](?P<frac>[0-9]{1,9}))?)?"
_TIME_TEXT = re.compile(_CLOCK + _ZONE + "?")
_TIMESTAMP_TEXT = re.compile(
    r"(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})(?:[T ]" + _CLOCK + _ZONE + "?)?"
)
_INF_TEXT = re.compile(r"[+-]?(inf|infinity)", re.IGNORECASE)
_NAN_TEXT = re.compile(r"[+-]?nan", re.IGNORECASE)


def _bad(text: str, column: ColumnDescriptor, expected: str) -> ValueEncodingError:
    return ValueEncodingError(
        f"cannot read the text as {expected}; {_forms(column)}", column=column.path, value=text
    )


def parse_text_value(text: str, column: ColumnDescriptor) -> object:
    """Read command-line text as a Python value of ``column``'s type.

    Integers as decimal digits; decimals and floats in the usual notation
    (``1.25``, ``-0.0``, ``1e-3``, ``nan``, ``inf``; FLOAT and FLOAT16 text is
    rounded to the nearest value of that width, as a writer parsing it would);
    dates ``YYYY-MM-DD``; times ``HH:MM[:SS[.fffffffff]]``; timestamps ISO 8601
    (``2024-05-01T12:30:00.123456789+02:00``, ``Z`` for UTC, no zone =
    naive); booleans ``true``/``false``/``1``/``0``; UUIDs in canonical form;
    binary as ``0x`` followed by hex digits; strings as they are.

    Text that is well-formed for the type is returned even when the column
    cannot hold it (``300`` for an INT(8) column, an integer of 5000 digits):
    :func:`encode_value` then answers :class:`CannotMatch`.

    Raises
    ------
    ValueEncodingError
        The text is not a value of the column's type (naming column, text and
        the forms the column takes).
    """
    logical = column.logical_type
    kind = logical.kind if logical is not None else None
    ptype = column.physical_type
    if kind in (LogicalKind.STRING, LogicalKind.ENUM, LogicalKind.JSON, LogicalKind.UNKNOWN):
        return text
    if kind is LogicalKind.DECIMAL:
        return _parse_decimal(text, column)
    if kind is LogicalKind.DATE:
        return _parse_date(text, column)
    if kind is LogicalKind.TIME:
        return _parse_time(text, column)
    if kind is LogicalKind.TIMESTAMP:
        return _parse_timestamp(text, column)
    if kind is LogicalKind.UUID:
        if not _UUID_TEXT.fullmatch(text.strip()):
            raise _bad(text, column, "a canonical UUID")
        return uuid.UUID(text.strip())
    if kind is LogicalKind.FLOAT16:
        return _parse_float(text, column, "<e", "a FLOAT16 number")
    if kind is LogicalKind.INTEGER:
        return _parse_integer(text, column)
    if kind is not None:
        # BSON, INTERVAL, GEOMETRY, ...: raw bytes only.
        return _parse_hex(text, column)
    if ptype is PhysicalType.BOOLEAN:
        lowered = text.strip().lower()
        if lowered in ("true", "1"):
            return True
        if lowered in ("false", "0"):
            return False
        raise _bad(text, column, "a boolean (true, false, 1 or 0)")
    if ptype in (PhysicalType.INT32, PhysicalType.INT64):
        return _parse_integer(text, column)
    if ptype is PhysicalType.FLOAT:
        return _parse_float(text, column, "<f", "a FLOAT number")
    if ptype is PhysicalType.DOUBLE:
        return _parse_float(text, column, "<d", "a DOUBLE number")
    if ptype is PhysicalType.INT96:
        if text.strip().lower().startswith("0x"):
            return _parse_hex(text, column)
        return _parse_timestamp(text, column)
    # Plain BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY: 0x-prefixed hex is binary,
    # anything else is text (stored as UTF-8).
    if text.startswith(("0x", "0X")):
        return _parse_hex(text, column)
    return text


def _parse_hex(text: str, column: ColumnDescriptor) -> bytes:
    body = text.strip()
    if not body.lower().startswith("0x"):
        raise _bad(text, column, "binary written as 0x followed by hex digits")
    try:
        return bytes.fromhex(body[2:])
    except ValueError:
        raise _bad(text, column, "binary written as 0x followed by hex digits") from None


def _parse_integer(text: str, column: ColumnDescriptor) -> int | Decimal:
    body = text.strip()
    if _INT_TEXT.fullmatch(body):
        try:
            return int(body)
        except ValueError:
            # More digits than Python converts to an int: a well-formed integer that
            # no integer column holds, which encode_value rules out.
            return Decimal(body)
    # "3.0" or "1e3" denote integers too; encode_value decides whether they are.
    number = _decimal(body)
    if number is None or not number.is_finite():
        raise _bad(text, column, "an integer")
    return number


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text)
    except (InvalidOperation, ValueError):
        return None


def _parse_decimal(text: str, column: ColumnDescriptor) -> Decimal:
    number = _decimal(text.strip())
    if number is None or not number.is_finite():
        raise _bad(text, column, "a decimal number")
    return number


def _parse_float(text: str, column: ColumnDescriptor, code: str, expected: str) -> float:
    body = text.strip()
    if _NAN_TEXT.fullmatch(body):
        return math.nan
    if _INF_TEXT.fullmatch(body):
        return -math.inf if body.startswith("-") else math.inf
    number = _decimal(body)
    if number is None or not number.is_finite():
        raise _bad(text, column, expected)
    if number.is_zero():
        return -0.0 if number.is_signed() else 0.0
    if code == "<d":
        # CPython's float() rounds decimal text correctly to the nearest double.
        result = float(body)
        if math.isinf(result):
            raise _bad(text, column, f"{expected} within the type's range")
        return result
    rounded = _round_to_width(number, code)
    if rounded is None:
        raise _bad(text, column, f"{expected} within the type's range")
    return rounded


# Largest finite value and the unit in its last place, per binary format:
# float32 max = (2 - 2**-23) * 2**127, float16 max = 65504 with ulp 32.
_FORMAT = {
    "<f": (struct.unpack("<f", b"\xff\xff\x7f\x7f")[0], Fraction(2) ** 104, "<I"),
    "<e": (65504.0, Fraction(32), "<H"),
}


def _round_to_width(number: Decimal, code: str) -> float | None:
    """Round a decimal to the nearest ``code`` (float32/float16) value, ties to even.

    Going through a double first would round twice and can land one unit off,
    so the double only seeds the search and the neighbours are compared
    exactly. Returns None when the value rounds to infinity.
    """
    largest, ulp, int_code = _FORMAT[code]
    negative = number.is_signed()
    # copy_abs() is exact; unary minus would round to the context's 28 digits.
    magnitude = number.copy_abs()
    if magnitude.adjusted() > 40:
        return None
    if magnitude.adjusted() < -_MAX_EXPONENT:
        return -0.0 if negative else 0.0
    exact = Fraction(magnitude)
    if exact >= Fraction(largest) + ulp / 2:
        return None
    seed = struct.pack(code, min(float(exact), largest))
    (pattern,) = struct.unpack(int_code, seed)
    best: tuple[Fraction, int, float] | None = None
    for candidate in (pattern - 1, pattern, pattern + 1):
        if candidate < 0:
            continue
        (value,) = struct.unpack(code, struct.pack(int_code, candidate))
        if not math.isfinite(value):
            continue
        distance = abs(Fraction(value) - exact)
        key = (distance, candidate & 1, value)
        if best is None or key[:2] < best[:2]:
            best = key
    assert best is not None  # the seed itself is always a finite candidate
    return -best[2] if negative else best[2]


def _parse_date(text: str, column: ColumnDescriptor) -> dt.date:
    if not _DATE_TEXT.fullmatch(text.strip()):
        raise _bad(text, column, "a date")
    try:
        return dt.date.fromisoformat(text.strip())
    except ValueError:
        raise _bad(text, column, "a valid date") from None


def _zone(raw: str | None) -> dt.tzinfo | None:
    if raw is None:
        return None
    if raw in ("Z", "z"):
        return dt.timezone.utc
    sign = -1 if raw[0] == "-" else 1
    digits = raw[1:].replace(":", "")
    hours, minutes = int(digits[:2]), int(digits[2:] or 0)
    if hours > 23 or minutes > 59:
        raise ValueError("offset out of range")
    return dt.timezone(sign * dt.timedelta(hours=hours, minutes=minutes))


def _fraction(raw: str | None) -> tuple[int, int]:
    digits = (raw or "").ljust(9, "0")
    return int(digits[:6]), int(digits[6:9])


def _parse_time(text: str, column: ColumnDescriptor) -> dt.time | WithNanoseconds:
    match = _TIME_TEXT.fullmatch(text.strip())
    if match is None:
        raise _bad(text, column, "a time of day")
    try:
        micro, nano = _fraction(match["frac"])
        value = dt.time(
            int(match["h"]),
            int(match["m"]),
            int(match["s"] or 0),
            micro,
            tzinfo=_zone(match["zone"]),
        )
    except ValueError:
        raise _bad(text, column, "a valid time of day") from None
    return WithNanoseconds(value, nano) if nano else value


def _parse_timestamp(text: str, column: ColumnDescriptor) -> dt.datetime | WithNanoseconds:
    match = _TIMESTAMP_TEXT.fullmatch(text.strip())
    if match is None:
        raise _bad(text, column, "an ISO 8601 timestamp")
    try:
        day = dt.date.fromisoformat(match["date"])
        micro, nano = _fraction(match["frac"])
        value = dt.datetime(
            day.year,
            day.month,
            day.day,
            int(match["h"] or 0),
            int(match["m"] or 0),
            int(match["s"] or 0),
            micro,
            tzinfo=_zone(match["zone"]),
        )
    except ValueError:
        raise _bad(text, column, "a valid timestamp") from None
    return WithNanoseconds(value, nano) if nano else value
