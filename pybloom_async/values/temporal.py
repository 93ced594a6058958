"""Dates, times, timestamps and INT96 encoded as Parquet stores them."""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Iterable
from fractions import Fraction

from ..parquet.logical import LogicalType, TimeUnit
from ..parquet.schema import ColumnDescriptor
from ..types import PhysicalType
from .encoded import (
    EPOCH,
    EPOCH_ORDINAL,
    INT32_RANGE,
    JULIAN_EPOCH_DAY,
    NANOS_PER_DAY,
    CannotMatch,
    Encoded,
    Probe,
    WithNanoseconds,
    bytes_like,
    encode_plain_int,
    got_text,
    pack_int,
    probe_of,
    raw_bytes_only,
    show_value,
    type_error,
    unprobeable,
)

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


def encode_date(value: object, column: ColumnDescriptor, logical: LogicalType) -> Encoded:
    if column.physical_type is not PhysicalType.INT32:
        return unprobeable(column, f"DATE cannot annotate a {column.physical_type.name} column")
    if isinstance(value, dt.datetime):
        raise type_error("expected a date, got a datetime", column, value)
    if isinstance(value, dt.date):
        return pack_int(value.toordinal() - EPOCH_ORDINAL, PhysicalType.INT32)
    return encode_plain_int(value, column)


def encode_time(value: object, column: ColumnDescriptor, logical: LogicalType) -> Encoded:
    unit, utc = logical.unit, logical.is_adjusted_to_utc
    ptype = column.physical_type
    expected = PhysicalType.INT32 if unit is TimeUnit.MILLIS else PhysicalType.INT64
    if unit is None or utc is None or ptype is not expected:
        return unprobeable(column, f"{logical} cannot annotate a {ptype.name} column")
    found = _time_nanos(value, column)
    if found is None:
        return encode_plain_int(value, column)
    wall, offset = found
    days = (nanos % NANOS_PER_DAY for nanos in _instants(wall, offset, utc))
    alternatives = _in_unit(value, days, unit, ptype)
    return alternatives if isinstance(alternatives, CannotMatch) else probe_of(*alternatives)


def _in_unit(
    value: object, instants: Iterable[int], unit: TimeUnit, ptype: PhysicalType
) -> list[bytes] | CannotMatch:
    """Each instant (nanoseconds) as the column stores it: a count of its unit, packed
    (those out of the type's range left out); CannotMatch for a value finer than the unit."""
    alternatives: list[bytes] = []
    for nanos in instants:
        count = _to_unit(nanos, unit)
        if count is None:
            return CannotMatch(f"{show_value(value)} is more precise than the column's {unit.name}")
        packed = pack_int(count, ptype)
        if isinstance(packed, Probe):
            alternatives.extend(packed.alternatives)
    return alternatives


def _wall_nanos(value: dt.datetime, extra: int) -> tuple[int, dt.timedelta | None]:
    """Nanoseconds of the wall-clock time since 1970-01-01T00:00, and the UTC offset."""
    delta = value.replace(tzinfo=None) - EPOCH
    wall = (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1000 + extra
    return wall, value.utcoffset()


def _datetime_nanos(
    value: object, column: ColumnDescriptor
) -> tuple[int, dt.timedelta | None] | None:
    """A datetime's (with its extra nanoseconds) :func:`_wall_nanos`; None for a value that
    is no date or time (a number, raw bytes).

    Raises
    ------
    UnsupportedTypeError
        A date or a time of day.
    """
    base, extra = _split_nanos(value)
    if not isinstance(base, dt.datetime):
        if isinstance(base, (dt.date, dt.time)):
            raise type_error(f"expected a datetime, got {got_text(base)}", column, value)
        return None
    return _wall_nanos(base, extra)


def _time_nanos(value: object, column: ColumnDescriptor) -> tuple[int, dt.timedelta | None] | None:
    """Nanoseconds since midnight of a time of day (with its extra nanoseconds), and its UTC
    offset; None for a value that is no date or time (a number is the raw count).

    Raises
    ------
    UnsupportedTypeError
        A date or a datetime; a time whose zone has no fixed UTC offset.
    """
    base, extra = _split_nanos(value)
    if not isinstance(base, dt.time):
        if isinstance(base, (dt.datetime, dt.date)):
            raise type_error(f"expected a time of day, got {got_text(base)}", column, value)
        return None
    offset = base.utcoffset()
    if base.tzinfo is not None and offset is None:
        why = "the time's zone has no fixed UTC offset; use a fixed offset"
        raise type_error(why, column, value)
    wall = ((base.hour * 60 + base.minute) * 60 + base.second) * 10**9 + base.microsecond * 1000
    return wall + extra, offset


def encode_timestamp(value: object, column: ColumnDescriptor, logical: LogicalType) -> Encoded:
    unit, utc = logical.unit, logical.is_adjusted_to_utc
    if unit is None or utc is None or column.physical_type is not PhysicalType.INT64:
        return unprobeable(
            column, f"{logical} cannot annotate a {column.physical_type.name} column"
        )
    found = _datetime_nanos(value, column)
    if found is None:
        return encode_plain_int(value, column)
    wall, offset = found
    alternatives = _in_unit(value, _instants(wall, offset, utc), unit, PhysicalType.INT64)
    if isinstance(alternatives, CannotMatch):
        return alternatives
    if not alternatives:
        return CannotMatch(f"{show_value(value)} is outside the 64-bit range of the column's unit")
    return probe_of(*alternatives)


def encode_int96(value: object, column: ColumnDescriptor) -> Encoded:
    found = _datetime_nanos(value, column)
    if found is None:
        return raw_bytes_only(value, column)
    wall, offset = found
    alternatives = []
    # INT96 carries no UTC flag: Spark stores UTC instants, Impala and Hive
    # local wall-clock times, so an aware value is probed both ways.
    for nanos in _instants(wall, offset, adjusted_to_utc=False):
        day, nanos_of_day = divmod(nanos, NANOS_PER_DAY)
        julian = day + JULIAN_EPOCH_DAY
        if INT32_RANGE[0] <= julian <= INT32_RANGE[1]:
            alternatives.append(struct.pack("<qi", nanos_of_day, julian))
    if not alternatives:
        return CannotMatch(f"{show_value(value)} is outside the range of INT96 timestamps")
    return probe_of(*alternatives)


# --- places in a column's order (range comparisons) ------------------------------------

_AMBIGUOUS = (
    "a value with a time zone has no one place among the values of a column without a UTC "
    "flag (writers store local or UTC times there): compare it with a value without a zone"
)


def date_position(value: object, column: ColumnDescriptor) -> int | None:
    """Days since 1970-01-01 of a date; None for a value that is not a date or datetime."""
    if isinstance(value, dt.datetime):
        raise type_error("expected a date, got a datetime", column, value)
    if isinstance(value, dt.date):
        return value.toordinal() - EPOCH_ORDINAL
    return None


def _utc_nanos(
    nanos: int, offset: dt.timedelta, value: object, column: ColumnDescriptor, logical: LogicalType
) -> int:
    """Wall-clock nanoseconds with a zone's ``offset`` as UTC, in a column of UTC times; a
    column without the UTC flag has no one place for them (:data:`_AMBIGUOUS`)."""
    if not logical.is_adjusted_to_utc:
        raise type_error(_AMBIGUOUS, column, value)
    return nanos - _offset_nanos(offset)


def time_position(value: object, column: ColumnDescriptor, logical: LogicalType) -> Fraction | None:
    """A time of day in the column's unit (exact: a finer time falls between two units);
    None for a value that is not a time (a number is the raw count)."""
    assert logical.unit is not None
    found = _time_nanos(value, column)
    if found is None:
        return None
    nanos, offset = found
    if offset is not None:
        nanos = _utc_nanos(nanos, offset, value, column, logical) % NANOS_PER_DAY
    return Fraction(nanos, 10**9 // logical.unit.per_second)


def timestamp_position(
    value: object, column: ColumnDescriptor, logical: LogicalType
) -> Fraction | None:
    """A timestamp in the column's unit since the epoch (exact: a finer time falls between
    two units); None for a value that is not a datetime (a number is the raw count)."""
    assert logical.unit is not None
    found = _datetime_nanos(value, column)
    if found is None:
        return None
    wall, offset = found
    if offset is not None:
        wall = _utc_nanos(wall, offset, value, column, logical)
    return Fraction(wall, 10**9 // logical.unit.per_second)


def int96_position(value: object, column: ColumnDescriptor) -> int:
    """An INT96 timestamp as nanoseconds since the epoch: a naive datetime (the stored wall
    clock) or the 12 stored bytes."""
    base, extra = _split_nanos(value)
    if isinstance(base, dt.datetime):
        wall, offset = _wall_nanos(base, extra)
        if offset is not None:
            raise type_error(_AMBIGUOUS, column, value)
        return wall
    raw = bytes_like(value)
    if raw is not None and len(raw) == 12:
        nanos_of_day, julian = struct.unpack("<qi", raw)
        return int((julian - JULIAN_EPOCH_DAY) * NANOS_PER_DAY + nanos_of_day)
    raise type_error(
        f"an INT96 timestamp is ordered by a datetime or its 12 raw bytes, not {got_text(value)}",
        column,
        value,
    )
