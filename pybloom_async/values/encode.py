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
the column's type calls for."""

from __future__ import annotations

import math
import numbers
import struct
import sys
import uuid
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction

from ..errors import ValueEncodingError
from ..parquet.logical import LogicalKind, LogicalType
from ..parquet.schema import ColumnDescriptor
from ..types import PhysicalType
from .encoded import (
    DECIMAL_STORAGE,
    MAX_DECIMAL_BYTES,
    MAX_DECIMAL_PRECISION,
    MAX_EXPONENT,
    UUID_TEXT,
    CannotMatch,
    Encoded,
    NeverPrunes,
    Probe,
    as_int,
    bytes_or_refuse,
    decimal_parameters,
    encode_plain_int,
    fixed_or_binary,
    got_text,
    is_bool,
    literal_forms,
    not_flba,
    pack_int,
    probe_of,
    raw_bytes_only,
    show_value,
    type_error,
    unprobeable,
)
from .temporal import encode_date, encode_int96, encode_time, encode_timestamp
from .text import parse_text_value

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
        The column, from :attr:`~pybloom_async.parquet.Schema.columns` or
        :meth:`~pybloom_async.parquet.ColumnDescriptor.of`.

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
        return raw_bytes_only(value, column)
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
            return probe_of(*encoded.alternatives, *as_text.alternatives)
        if isinstance(encoded, CannotMatch) and isinstance(as_text, Probe):
            return as_text
    return encoded


def _encode_integer(value: object, column: ColumnDescriptor, logical: LogicalType) -> Encoded:
    bits, signed = logical.bit_width, logical.is_signed
    ptype = column.physical_type
    expected = PhysicalType.INT64 if bits == 64 else PhysicalType.INT32
    if bits not in (8, 16, 32, 64) or signed is None or ptype is not expected:
        return unprobeable(column, f"{logical} cannot annotate a {ptype.name} column")
    number = as_int(value, column)
    if isinstance(number, CannotMatch):
        return number
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    if not low <= number <= high:
        return CannotMatch(f"{show_value(number)} is outside {logical}'s range [{low}, {high}]")
    # Unsigned 32/64-bit values are stored as the same bit pattern in the
    # signed physical type (LogicalTypes.md, "Unsigned Integers").
    return pack_int(number, ptype, unsigned_bits=None if signed else bits)


def _encode_boolean(value: object, column: ColumnDescriptor) -> Encoded:
    if not is_bool(value):
        raise type_error(f"expected True or False, got {got_text(value)}", column, value)
    # One byte per value, as the C hasher and arrow-rs hash booleans.
    return probe_of(b"\x01" if value else b"\x00")


_NAN_REASON = "NaN never prunes: writers store NaN with varying bit patterns"


def _as_float(value: object, column: ColumnDescriptor) -> float | CannotMatch | NeverPrunes:
    """The double a real-number probe equals exactly, or why it has none."""
    if is_bool(value):
        raise type_error("expected a number, got a bool", column, value)
    if isinstance(value, numbers.Integral):
        number = int(value)
        try:
            result = float(number)
        except OverflowError:
            return CannotMatch(f"{show_value(number)} is beyond the range of a double")
        if result != number:
            return CannotMatch(f"{show_value(number)} is not exactly representable as a double")
        return result
    if isinstance(value, Decimal):
        if value.is_nan():
            return NeverPrunes(_NAN_REASON)
        if value.is_infinite():
            return math.copysign(math.inf, -1.0 if value.is_signed() else 1.0)
        if value.is_zero():
            return -0.0 if value.is_signed() else 0.0
        if abs(value.adjusted()) > MAX_EXPONENT:
            return CannotMatch(f"{show_value(value)} is not exactly representable as a double")
        result = float(value)
        if Decimal(result) != value:
            return CannotMatch(f"{show_value(value)} is not exactly representable as a double")
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
            return CannotMatch(f"{show_value(value)} is beyond the range of a double")
        if Fraction(nearest) != exact:
            return CannotMatch(f"{show_value(value)} is not exactly representable as a double")
        return nearest
    raise type_error(f"expected a number, got {got_text(value)}", column, value)


#: The largest finite value of each binary float format.
_LARGEST = {
    "<f": struct.unpack("<f", b"\xff\xff\x7f\x7f")[0],
    "<d": sys.float_info.max,
    "<e": 65504.0,
}


def _encode_floating(value: object, column: ColumnDescriptor, code: str, name: str) -> Encoded:
    number = _as_float(value, column)
    if not isinstance(number, float):
        if (
            isinstance(number, CannotMatch)
            and isinstance(value, (Decimal, numbers.Integral))
            and abs(value) > _LARGEST[code]
        ):
            return CannotMatch(f"{show_value(value)} is beyond the range of {name}")
        return number
    try:
        packed = struct.pack(code, number)
    except OverflowError:
        return CannotMatch(f"{show_value(number)} is beyond the range of {name}")
    if struct.unpack(code, packed)[0] != number:
        return CannotMatch(f"{show_value(number)} is not exactly representable as {name}")
    if number == 0.0:
        # Writers do not normalise zeros: a column holding 0.0 may have either
        # sign on disk, so probe both (docs/architecture.md, "Reference behaviour").
        return probe_of(struct.pack(code, 0.0), struct.pack(code, -0.0))
    return probe_of(packed)


def _encode_float(value: object, column: ColumnDescriptor) -> Encoded:
    return _encode_floating(value, column, "<f", "a FLOAT (32-bit)")


def _encode_double(value: object, column: ColumnDescriptor) -> Encoded:
    return _encode_floating(value, column, "<d", "a DOUBLE")


def _encode_float16(value: object, column: ColumnDescriptor, logical: LogicalType) -> Encoded:
    wrong = not_flba(column, 2, logical)
    return wrong or _encode_floating(value, column, "<e", "a FLOAT16")


# --- binary and text ----------------------------------------------------------


def _utf8(value: str) -> bytes | CannotMatch:
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:
        return CannotMatch("the text has lone surrogates, so it is not valid UTF-8")


def _encode_binary(value: object, column: ColumnDescriptor) -> Encoded:
    if isinstance(value, str):
        encoded = _utf8(value)
        return encoded if isinstance(encoded, CannotMatch) else fixed_or_binary(encoded, column)
    return fixed_or_binary(bytes_or_refuse(value, column, "text or bytes"), column)


def _encode_text(value: object, column: ColumnDescriptor, logical: LogicalType) -> Encoded:
    if column.physical_type not in (PhysicalType.BYTE_ARRAY, PhysicalType.FIXED_LEN_BYTE_ARRAY):
        return unprobeable(
            column, f"{logical} cannot annotate a {column.physical_type.name} column"
        )
    return _encode_binary(value, column)


def _encode_uuid(value: object, column: ColumnDescriptor, logical: LogicalType) -> Encoded:
    wrong = not_flba(column, 16, logical)
    if wrong is not None:
        return wrong
    if isinstance(value, uuid.UUID):
        # LogicalTypes.md: UUIDs are stored big-endian, i.e. UUID.bytes.
        return probe_of(value.bytes)
    if isinstance(value, str):
        if not UUID_TEXT.fullmatch(value):
            raise ValueEncodingError(
                f"not a canonical UUID (8-4-4-4-12 hexadecimal digits); {literal_forms(column)}",
                column=column.path,
                value=value,
            )
        return probe_of(uuid.UUID(value).bytes)
    return fixed_or_binary(bytes_or_refuse(value, column, "a UUID"), column)


# --- decimals -----------------------------------------------------------------


def _encode_decimal(value: object, column: ColumnDescriptor, logical: LogicalType) -> Encoded:
    parameters = decimal_parameters(logical)
    ptype = column.physical_type
    if parameters is None:
        return unprobeable(column, f"unsupported decimal parameters {logical}")
    precision, scale = parameters
    if ptype not in DECIMAL_STORAGE:
        return unprobeable(column, f"{logical} cannot annotate a {ptype.name} column")
    if is_bool(value):
        raise type_error("expected a decimal number, got a bool", column, value)
    if isinstance(value, numbers.Integral):
        number = int(value)
        # ~3.33 bits per digit: anything longer than this has too many digits.
        if number.bit_length() > 4 * MAX_DECIMAL_PRECISION:
            return CannotMatch(f"the value has more than {precision} digits")
        value = Decimal(number)
    if not isinstance(value, Decimal):
        raise type_error(
            f"expected decimal.Decimal or int, got {got_text(value)} "
            "(binary floats rarely equal a decimal exactly)",
            column,
            value,
        )
    unscaled = _unscaled(value, precision, scale)
    if isinstance(unscaled, CannotMatch):
        return unscaled
    if ptype is PhysicalType.INT32 or ptype is PhysicalType.INT64:
        return pack_int(unscaled, ptype)
    if ptype is PhysicalType.FIXED_LEN_BYTE_ARRAY:
        width = column.type_length
        if width is None or not 1 <= width <= MAX_DECIMAL_BYTES:
            return unprobeable(column, f"unsupported DECIMAL width {width}")
        try:
            # LogicalTypes.md: big-endian two's complement in the full width.
            return probe_of(unscaled.to_bytes(width, "big", signed=True))
        except OverflowError:
            return CannotMatch(f"the unscaled value does not fit {width} bytes")
    # BYTE_ARRAY: "The minimum number of bytes to store the unscaled value
    # should be used" (LogicalTypes.md), i.e. Java's BigInteger.toByteArray().
    magnitude = unscaled if unscaled >= 0 else ~unscaled
    return probe_of(unscaled.to_bytes(magnitude.bit_length() // 8 + 1, "big", signed=True))


def _unscaled(value: Decimal, precision: int, scale: int) -> int | CannotMatch:
    """``value * 10**scale`` as an exact integer of at most ``precision`` digits."""
    if not value.is_finite():
        return CannotMatch(f"{show_value(value)} is not a decimal number")
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)  # finite decimals have an integer exponent
    # Trailing zeros beyond the scale are harmless (1.500 at scale 1 is 15).
    end = len(digits)
    while end > 1 and exponent < -scale and digits[end - 1] == 0:
        end -= 1
        exponent += 1
    digits = digits[:end]
    if exponent < -scale and any(digits):
        return CannotMatch(f"{show_value(value)} has more than {scale} fractional digits")
    if not any(digits):
        return 0
    shift = exponent + scale  # >= 0 here
    leading = next(i for i, d in enumerate(digits) if d)
    count = len(digits) - leading + shift
    if count > precision:
        return CannotMatch(f"{show_value(value)} needs more than the column's {precision} digits")
    factor: int = 10**shift
    number = int("".join(map(str, digits[leading:]))) * factor
    return -number if sign else number


_LOGICAL: dict[LogicalKind, Callable[[object, ColumnDescriptor, LogicalType], Encoded]] = {
    LogicalKind.STRING: _encode_text,
    LogicalKind.ENUM: _encode_text,
    LogicalKind.JSON: _encode_text,
    LogicalKind.DECIMAL: _encode_decimal,
    LogicalKind.DATE: encode_date,
    LogicalKind.TIME: encode_time,
    LogicalKind.TIMESTAMP: encode_timestamp,
    LogicalKind.INTEGER: _encode_integer,
    LogicalKind.UUID: _encode_uuid,
    LogicalKind.FLOAT16: _encode_float16,
}

_PHYSICAL: dict[PhysicalType, Callable[[object, ColumnDescriptor], Encoded]] = {
    PhysicalType.BOOLEAN: _encode_boolean,
    PhysicalType.INT32: encode_plain_int,
    PhysicalType.INT64: encode_plain_int,
    PhysicalType.INT96: encode_int96,
    PhysicalType.FLOAT: _encode_float,
    PhysicalType.DOUBLE: _encode_double,
    PhysicalType.BYTE_ARRAY: _encode_binary,
    PhysicalType.FIXED_LEN_BYTE_ARRAY: _encode_binary,
}
