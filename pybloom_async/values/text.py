"""Literals typed as text (the CLI, predicate strings) parsed into the value their column holds."""

from __future__ import annotations

import datetime as dt
import math
import re
import struct
import uuid
from decimal import Decimal, InvalidOperation
from fractions import Fraction

from ..errors import ValueEncodingError
from ..parquet.logical import LogicalKind
from ..parquet.schema import ColumnDescriptor
from ..types import PhysicalType
from .encoded import MAX_EXPONENT, UUID_TEXT, WithNanoseconds, literal_forms

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
        f"cannot read the text as {expected}; {literal_forms(column)}",
        column=column.path,
        value=text,
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
        if not UUID_TEXT.fullmatch(text.strip()):
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


def _parse_float(text: str, column: ColumnDescriptor, code: str, expected: str) -> float | Decimal:
    """The nearest value of the type; a number beyond its range as the exact Decimal it is
    (well-formed, but no value of the column: :func:`encode_value` rules it out)."""
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
        result = float(number)
        return number if math.isinf(result) else result
    rounded = _round_to_width(number, code)
    return number if rounded is None else rounded


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
    if magnitude.adjusted() < -MAX_EXPONENT:
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
