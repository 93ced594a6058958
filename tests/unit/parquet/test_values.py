"""Tests for exact probe-value encoding (pybloom_async.values.encode).

Two kinds of evidence: rule tables (each rule of encode_value and
parse_text_value, with its edge cases), and interop with real writers, where
pyarrow writes a one-value column with statistics and a Bloom filter and the
bytes we produce must equal the statistics' PLAIN bytes and be found in the
filter (checked with the spec's SBBF algorithm and the ``xxhash`` package as an
independent oracle, not with this package's C core).
"""

from __future__ import annotations

import datetime as dt
import io
import math
import struct
import uuid
from decimal import Decimal, localcontext
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st
from support import sbbf_model

from pybloom_async.errors import UnsupportedTypeError, ValueEncodingError
from pybloom_async.parquet import (
    ColumnChunk,
    ColumnDescriptor,
    LogicalKind,
    LogicalType,
    TimeUnit,
    decode_file_metadata,
    parse_footer_tail,
)
from pybloom_async.types import PhysicalType as P
from pybloom_async.values import (
    CannotMatch,
    NeverPrunes,
    Probe,
    WithNanoseconds,
    encode_text,
    encode_value,
    parse_text_value,
)

C = ColumnDescriptor.of
L = LogicalType
K = LogicalKind
UTC = dt.timezone.utc
PLUS2 = dt.timezone(dt.timedelta(hours=2))


def col(ptype: P, logical: LogicalType | None = None, width: int | None = None) -> ColumnDescriptor:
    return C(ptype, logical, type_length=width, path="c")


def i32(*values: int) -> tuple[bytes, ...]:
    return tuple(struct.pack("<i", v) for v in values)


def i64(*values: int) -> tuple[bytes, ...]:
    return tuple(struct.pack("<q", v) for v in values)


def cannot(value: object, column: ColumnDescriptor) -> str:
    result = encode_value(value, column)
    assert isinstance(result, CannotMatch), result
    return result.reason


# --- rule tables --------------------------------------------------------------------

INT8 = col(P.INT32, L.integer(8, True))
UINT8 = col(P.INT32, L.integer(8, False))
UINT32 = col(P.INT32, L.integer(32, False))
UINT64 = col(P.INT64, L.integer(64, False))
DEC_9_2 = col(P.INT32, L.decimal(9, 2))
DEC_18_3 = col(P.INT64, L.decimal(18, 3))
DEC_FLBA = col(P.FIXED_LEN_BYTE_ARRAY, L.decimal(13, 2), 6)
DEC_BIN = col(P.BYTE_ARRAY, L.decimal(40, 0))
TS_MS_UTC = col(P.INT64, L.timestamp(TimeUnit.MILLIS, True))
TS_US_LOCAL = col(P.INT64, L.timestamp(TimeUnit.MICROS, False))
TS_NS_UTC = col(P.INT64, L.timestamp(TimeUnit.NANOS, True))
TIME_MS = col(P.INT32, L.time(TimeUnit.MILLIS, True))
TIME_NS_LOCAL = col(P.INT64, L.time(TimeUnit.NANOS, False))
UUID_COL = col(P.FIXED_LEN_BYTE_ARRAY, L(K.UUID), 16)
F16 = col(P.FIXED_LEN_BYTE_ARRAY, L(K.FLOAT16), 2)
U = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")

PROBES: list[tuple[str, ColumnDescriptor, object, tuple[bytes, ...]]] = [
    ("int32", col(P.INT32), 7, i32(7)),
    ("int32 min", col(P.INT32), -(2**31), i32(-(2**31))),
    ("int32 from integral float", col(P.INT32), -3.0, i32(-3)),
    ("int32 from numpy", col(P.INT32), np.int16(-9), i32(-9)),
    ("int32 from Decimal", col(P.INT32), Decimal("12.000"), i32(12)),
    ("int32 from Fraction", col(P.INT32), Fraction(10, 2), i32(5)),
    ("int64 max", col(P.INT64), 2**63 - 1, i64(2**63 - 1)),
    ("int8", INT8, -128, i32(-128)),
    ("uint8", UINT8, 255, i32(255)),
    # UINT(32) is stored as the INT32 with the same bit pattern.
    ("uint32", UINT32, 3_000_000_000, (struct.pack("<I", 3_000_000_000),)),
    ("uint32 max", UINT32, 2**32 - 1, (b"\xff\xff\xff\xff",)),
    ("uint64 max", UINT64, 2**64 - 1, (b"\xff" * 8,)),
    ("boolean", col(P.BOOLEAN), True, (b"\x01",)),
    ("boolean numpy", col(P.BOOLEAN), np.bool_(False), (b"\x00",)),
    ("double", col(P.DOUBLE), 1.5, (struct.pack("<d", 1.5),)),
    ("double zero", col(P.DOUBLE), 0.0, (struct.pack("<d", 0.0), struct.pack("<d", -0.0))),
    (
        "double negative zero",
        col(P.DOUBLE),
        -0.0,
        (struct.pack("<d", 0.0), struct.pack("<d", -0.0)),
    ),
    ("double inf", col(P.DOUBLE), -math.inf, (struct.pack("<d", -math.inf),)),
    ("double from int", col(P.DOUBLE), 2**53, (struct.pack("<d", 2.0**53),)),
    ("double from Decimal", col(P.DOUBLE), Decimal("0.375"), (struct.pack("<d", 0.375),)),
    ("float", col(P.FLOAT), 0.5, (struct.pack("<f", 0.5),)),
    ("double from Fraction", col(P.DOUBLE), Fraction(1, 4), (struct.pack("<d", 0.25),)),
    ("double from float32 inf", col(P.DOUBLE), -np.float32("inf"), (struct.pack("<d", -math.inf),)),
    ("float from float16", col(P.FLOAT), np.float16(0.1), (struct.pack("<f", np.float16(0.1)),)),
    ("float from numpy", col(P.FLOAT), np.float32(0.1), (struct.pack("<f", np.float32(0.1)),)),
    ("float zero", col(P.FLOAT), 0, (struct.pack("<f", 0.0), struct.pack("<f", -0.0))),
    ("float16", F16, 1.5, (struct.pack("<e", 1.5),)),
    ("float16 max", F16, 65504.0, (struct.pack("<e", 65504.0),)),
    ("string", col(P.BYTE_ARRAY, L(K.STRING)), "héllo", ("héllo".encode(),)),
    ("string from bytes", col(P.BYTE_ARRAY, L(K.STRING)), b"\xff", (b"\xff",)),
    ("enum", col(P.BYTE_ARRAY, L(K.ENUM)), "RED", (b"RED",)),
    ("json", col(P.BYTE_ARRAY, L(K.JSON)), '{"a": 1}', (b'{"a": 1}',)),
    ("binary str", col(P.BYTE_ARRAY), "x", (b"x",)),
    ("binary memoryview", col(P.BYTE_ARRAY), memoryview(b"ab"), (b"ab",)),
    ("binary empty", col(P.BYTE_ARRAY), b"", (b"",)),
    ("flba", col(P.FIXED_LEN_BYTE_ARRAY, None, 3), bytearray(b"abc"), (b"abc",)),
    (
        "bson bytes",
        col(P.BYTE_ARRAY, L(K.BSON)),
        b"\x05\x00\x00\x00\x00",
        (b"\x05\x00\x00\x00\x00",),
    ),
    (
        "interval bytes",
        col(P.FIXED_LEN_BYTE_ARRAY, L(K.INTERVAL), 12),
        b"\x01" * 12,
        (b"\x01" * 12,),
    ),
    ("uuid", UUID_COL, U, (bytes.fromhex("00112233445566778899aabbccddeeff"),)),
    ("uuid text", UUID_COL, str(U).upper(), (U.bytes,)),
    ("uuid bytes", UUID_COL, U.bytes, (U.bytes,)),
    ("date", col(P.INT32, L(K.DATE)), dt.date(1970, 1, 2), i32(1)),
    ("date before epoch", col(P.INT32, L(K.DATE)), dt.date(1969, 12, 31), i32(-1)),
    ("date raw days", col(P.INT32, L(K.DATE)), 19000, i32(19000)),
    ("decimal int32", DEC_9_2, Decimal("1.5"), i32(150)),
    ("decimal trailing zeros", DEC_9_2, Decimal("-1.50000"), i32(-150)),
    ("decimal from int", DEC_9_2, 3, i32(300)),
    ("decimal exponent", DEC_9_2, Decimal("1E+2"), i32(10000)),
    ("decimal zero", DEC_9_2, Decimal("-0.000"), i32(0)),
    ("decimal max", DEC_9_2, Decimal("9999999.99"), i32(999999999)),
    ("decimal int64", DEC_18_3, Decimal("-123456789012345.678"), i64(-123456789012345678)),
    # FLBA: big-endian two's complement in exactly type_length bytes.
    ("decimal flba", DEC_FLBA, Decimal("-1.28"), (b"\xff\xff\xff\xff\xff\x80",)),
    ("decimal flba positive", DEC_FLBA, Decimal("123.45"), ((12345).to_bytes(6, "big"),)),
    # BYTE_ARRAY: the minimal two's complement (Java's BigInteger.toByteArray).
    ("decimal binary zero", DEC_BIN, 0, (b"\x00",)),
    ("decimal binary 127", DEC_BIN, 127, (b"\x7f",)),
    ("decimal binary 128", DEC_BIN, 128, (b"\x00\x80",)),
    ("decimal binary -128", DEC_BIN, -128, (b"\x80",)),
    ("decimal binary -129", DEC_BIN, -129, (b"\xff\x7f",)),
    ("decimal binary wide", DEC_BIN, -(10**39), ((-(10**39)).to_bytes(17, "big", signed=True),)),
    ("time millis", TIME_MS, dt.time(1, 0, 0, 1000), i32(3_600_001)),
    ("time utc aware", TIME_MS, dt.time(1, 0, tzinfo=PLUS2), i32(23 * 3_600_000)),
    ("time raw", TIME_MS, 5, i32(5)),
    (
        "time nanos",
        TIME_NS_LOCAL,
        WithNanoseconds(dt.time(0, 0, 1, 2), 3),
        i64(1_000_002_003),
    ),
    (
        "time local aware",
        TIME_NS_LOCAL,
        dt.time(1, tzinfo=PLUS2),
        i64(3600 * 10**9, 23 * 3600 * 10**9),
    ),
    ("timestamp naive as utc", TS_MS_UTC, dt.datetime(1970, 1, 1, 0, 0, 1, 5000), i64(1005)),
    ("timestamp aware to utc", TS_MS_UTC, dt.datetime(1970, 1, 1, 2, tzinfo=PLUS2), i64(0)),
    ("timestamp before epoch", TS_MS_UTC, dt.datetime(1969, 12, 31, 23, 59, 59), i64(-1000)),
    ("timestamp raw", TS_MS_UTC, 42, i64(42)),
    ("timestamp local naive", TS_US_LOCAL, dt.datetime(2000, 1, 1), i64(946_684_800_000_000)),
    (
        "timestamp local aware: wall clock and instant",
        TS_US_LOCAL,
        dt.datetime(2000, 1, 1, tzinfo=PLUS2),
        i64(946_684_800_000_000, 946_684_800_000_000 - 7_200_000_000),
    ),
    (
        "timestamp local aware in UTC",
        TS_US_LOCAL,
        dt.datetime(2000, 1, 1, tzinfo=UTC),
        i64(946_684_800_000_000),
    ),
    (
        "timestamp nanos",
        TS_NS_UTC,
        WithNanoseconds(dt.datetime(1970, 1, 1, 0, 0, 0, 1), 999),
        i64(1999),
    ),
    # INT96: nanoseconds of the day (int64 LE), then the Julian day (int32 LE).
    (
        "int96 epoch",
        col(P.INT96),
        dt.datetime(1970, 1, 1, 0, 0, 1),
        (struct.pack("<qi", 10**9, 2_440_588),),
    ),
    (
        "int96 before epoch",
        col(P.INT96),
        dt.datetime(1969, 12, 31, 23, 59, 59),
        (struct.pack("<qi", 86_399 * 10**9, 2_440_587),),
    ),
    ("int96 raw", col(P.INT96), b"\x00" * 12, (b"\x00" * 12,)),
    ("unrecognized raw", col(P.BYTE_ARRAY, L(K.UNRECOGNIZED)), b"raw", (b"raw",)),
    ("geometry raw", col(P.BYTE_ARRAY, L(K.GEOMETRY)), b"\x01\x01", (b"\x01\x01",)),
]


@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [pytest.param(c, v, e, id=name) for name, c, v, e in PROBES],
)
def test_probe_encodings(
    column: ColumnDescriptor, value: object, expected: tuple[bytes, ...]
) -> None:
    assert encode_value(value, column) == Probe(expected)


# Where numpy's longdouble is wider than a double (x86-64), values a double
# cannot hold exactly.
WIDE_LONGDOUBLE: list[tuple[str, ColumnDescriptor, object, str]] = (
    [
        ("double huge longdouble", col(P.DOUBLE), np.longdouble("1e400"), "beyond the range"),
        ("double longdouble", col(P.DOUBLE), np.longdouble(1) + np.longdouble(2.0**-60), "exactly"),
    ]
    if np.finfo(np.longdouble).nmant > 52
    else []
)

CANNOT: list[tuple[str, ColumnDescriptor, object, str]] = [
    *WIDE_LONGDOUBLE,
    ("null", col(P.INT32), None, "null"),
    ("int32 overflow", col(P.INT32), 2**31, "outside"),
    ("int64 underflow", col(P.INT64), -(2**63) - 1, "outside"),
    ("fraction in int column", col(P.INT64), 2.5, "fractional"),
    ("Decimal fraction in int column", col(P.INT32), Decimal("1.01"), "fractional"),
    ("Fraction in int column", col(P.INT32), Fraction(1, 3), "fractional"),
    ("nan in int column", col(P.INT32), math.nan, "not an integer"),
    ("inf in int column", col(P.INT32), math.inf, "not an integer"),
    ("huge Decimal in int column", col(P.INT64), Decimal("1e999999999"), "outside"),
    ("int8 range", INT8, 128, "outside INT(8)"),
    ("uint8 negative", UINT8, -1, "outside UINT(8)"),
    ("uint32 negative bit pattern", UINT32, -1, "outside"),
    ("uint64 overflow", UINT64, 2**64, "outside"),
    ("float not float32", col(P.FLOAT), 0.1, "not exactly representable"),
    ("float32 overflow", col(P.FLOAT), 1e39, "beyond the range"),
    ("float16 inexact", F16, 0.1, "not exactly representable"),
    ("float16 overflow", F16, 65520.0, "beyond the range"),
    ("double inexact int", col(P.DOUBLE), 2**53 + 1, "not exactly representable"),
    ("double huge int", col(P.DOUBLE), 10**400, "beyond the range"),
    ("double inexact Decimal", col(P.DOUBLE), Decimal("0.1"), "not exactly representable"),
    ("double inexact Fraction", col(P.DOUBLE), Fraction(1, 3), "not exactly representable"),
    ("double huge Fraction", col(P.DOUBLE), Fraction(10**400), "beyond the range"),
    ("flba length", col(P.FIXED_LEN_BYTE_ARRAY, None, 4), b"abc", "3 bytes cannot be stored"),
    ("flba text length", col(P.FIXED_LEN_BYTE_ARRAY, None, 4), "abc", "3 bytes"),
    ("uuid length", UUID_COL, b"short", "5 bytes"),
    ("lone surrogate", col(P.BYTE_ARRAY, L(K.STRING)), "\ud800", "not valid UTF-8"),
    ("decimal scale", DEC_9_2, Decimal("1.234"), "more than 2 fractional digits"),
    ("decimal precision", DEC_9_2, Decimal("10000000"), "more than the column's 9 digits"),
    ("decimal huge exponent", DEC_9_2, Decimal("1e999999999"), "more than the column's 9"),
    ("decimal tiny", DEC_9_2, Decimal("1e-999999999"), "fractional digits"),
    ("decimal nan", DEC_9_2, Decimal("NaN"), "not a decimal"),
    ("decimal huge int", DEC_BIN, 10**5000, "more than 40 digits"),
    ("decimal flba overflow", col(P.FIXED_LEN_BYTE_ARRAY, L.decimal(9, 0), 2), 40000, "2 bytes"),
    ("int96 raw length", col(P.INT96), b"\x00" * 11, "11 bytes"),
    ("millis precision", TS_MS_UTC, dt.datetime(2000, 1, 1, 0, 0, 0, 1), "more precise"),
    ("micros precision", TS_US_LOCAL, WithNanoseconds(dt.datetime(2000, 1, 1), 1), "more precise"),
    ("time precision", TIME_MS, dt.time(0, 0, 0, 1), "more precise"),
    ("timestamp range", TS_NS_UTC, dt.datetime(9999, 1, 1), "64-bit range"),
    ("unknown type", col(P.INT32, L(K.UNKNOWN)), 1, "only nulls"),
]


@pytest.mark.parametrize(
    ("column", "value", "reason"),
    [pytest.param(c, v, r, id=name) for name, c, v, r in CANNOT],
)
def test_cannot_match(column: ColumnDescriptor, value: object, reason: str) -> None:
    assert reason in cannot(value, column)


@pytest.mark.parametrize(
    "column", [col(P.FLOAT), col(P.DOUBLE), F16], ids=["float", "double", "float16"]
)
@pytest.mark.parametrize("nan", [math.nan, -math.nan, np.float32("nan"), Decimal("NaN")])
def test_nan_never_prunes(column: ColumnDescriptor, nan: object) -> None:
    result = encode_value(nan, column)
    assert isinstance(result, NeverPrunes) and "NaN" in result.reason


class _NoOffset(dt.tzinfo):
    """A zone whose offset depends on the date, so a bare time has none."""

    def utcoffset(self, value: dt.datetime | None) -> dt.timedelta | None:
        return None if value is None else dt.timedelta(hours=1)

    def dst(self, value: dt.datetime | None) -> dt.timedelta | None:
        return None


WRONG_TYPES: list[tuple[str, ColumnDescriptor, object]] = [
    ("str in int column", col(P.INT64), "5"),
    ("bool in int column", col(P.INT32), True),
    ("int in boolean column", col(P.BOOLEAN), 1),
    ("bytes in int column", col(P.INT32), b"\x01\x00\x00\x00"),
    ("str in double column", col(P.DOUBLE), "1.0"),
    ("bool in double column", col(P.DOUBLE), False),
    ("int in binary column", col(P.BYTE_ARRAY), 5),
    ("float in decimal column", DEC_9_2, 1.5),
    ("datetime in date column", col(P.INT32, L(K.DATE)), dt.datetime(2000, 1, 1)),
    ("date in timestamp column", TS_MS_UTC, dt.date(2000, 1, 1)),
    ("time in timestamp column", TS_MS_UTC, dt.time(1)),
    ("datetime in time column", TIME_MS, dt.datetime(2000, 1, 1)),
    ("int in uuid column", UUID_COL, 5),
    ("str in geometry column", col(P.BYTE_ARRAY, L(K.GEOMETRY)), "POINT (1 2)"),
    ("int in int96 column", col(P.INT96), 5),
    ("date in int96 column", col(P.INT96), dt.date(2000, 1, 1)),
    ("zone without fixed offset", TIME_MS, dt.time(1, tzinfo=_NoOffset())),
]

# Annotations on physical types they cannot annotate, or with parameters this
# library does not support: no value of such a column can be encoded, so its
# row groups are kept whatever the value (never a false negative).
UNPROBEABLE: list[tuple[str, ColumnDescriptor, object]] = [
    ("timestamp on int32", col(P.INT32, L.timestamp(TimeUnit.MILLIS, True)), 1),
    ("date on int64", col(P.INT64, L(K.DATE)), dt.date(2000, 1, 1)),
    ("int(64) on int32", col(P.INT32, L.integer(64, True)), 1),
    ("int(12)", col(P.INT32, L.integer(12, True)), 1),
    ("uuid on flba(8)", col(P.FIXED_LEN_BYTE_ARRAY, L(K.UUID), 8), U),
    ("string on int32", col(P.INT32, L(K.STRING)), "x"),
    ("decimal on double", col(P.DOUBLE, L.decimal(9, 2)), Decimal(1)),
    ("decimal precision cap", col(P.BYTE_ARRAY, L.decimal(10**6, 0)), Decimal(1)),
    ("decimal absurd width", col(P.FIXED_LEN_BYTE_ARRAY, L.decimal(9, 0), 2**31 - 1), Decimal(1)),
    ("flba without width", col(P.FIXED_LEN_BYTE_ARRAY), b"ab"),
    ("float16 on flba(4)", col(P.FIXED_LEN_BYTE_ARRAY, L(K.FLOAT16), 4), 1.5),
    ("time millis on int64", col(P.INT64, L.time(TimeUnit.MILLIS, True)), dt.time(1)),
]


@pytest.mark.parametrize(
    ("column", "value"), [pytest.param(c, v, id=name) for name, c, v in WRONG_TYPES]
)
def test_wrong_python_types_raise(column: ColumnDescriptor, value: object) -> None:
    with pytest.raises(UnsupportedTypeError) as info:
        encode_value(value, column)
    assert "'c'" in str(info.value)  # the column is named


@pytest.mark.parametrize(
    ("column", "value"), [pytest.param(c, v, id=name) for name, c, v in UNPROBEABLE]
)
def test_unprobeable_column_types_never_prune(column: ColumnDescriptor, value: object) -> None:
    # These raised UnsupportedTypeError, which pruning took for "cannot match":
    # a column whose type cannot be encoded for keeps its row groups instead.
    result = encode_value(value, column)
    assert isinstance(result, NeverPrunes), result
    assert "'c'" in result.reason and "no value of column" in result.reason


def test_bad_uuid_text_raises_value_error() -> None:
    with pytest.raises(ValueEncodingError, match="canonical UUID"):
        encode_value("not-a-uuid", UUID_COL)
    with pytest.raises(ValueEncodingError):
        WithNanoseconds(dt.time(1), 1000)


def test_pandas_style_nanosecond_attribute() -> None:
    class Timestamp(dt.datetime):
        nanosecond = 7

    value = Timestamp(1970, 1, 1, 0, 0, 0, 3)
    assert encode_value(value, TS_NS_UTC) == Probe(i64(3007))
    assert "more precise" in cannot(value, TS_US_LOCAL)


# --- text ---------------------------------------------------------------------------------

TEXTS: list[tuple[str, ColumnDescriptor, str, object]] = [
    ("int", col(P.INT64), " -42 ", -42),
    ("int as decimal", col(P.INT32), "3.0", Decimal("3.0")),
    ("int exponent", col(P.INT64), "1e3", Decimal("1e3")),
    ("uint", UINT64, "18446744073709551615", 2**64 - 1),
    ("bool", col(P.BOOLEAN), "TRUE", True),
    ("bool 0", col(P.BOOLEAN), "0", False),
    ("double", col(P.DOUBLE), "0.1", 0.1),
    ("double negative zero", col(P.DOUBLE), "-0.0", -0.0),
    ("double inf", col(P.DOUBLE), "-Infinity", -math.inf),
    ("double tiny rounds", col(P.DOUBLE), "1e-400", 0.0),
    ("float rounds to float32", col(P.FLOAT), "0.1", float(np.float32(0.1))),
    ("float max", col(P.FLOAT), "3.4028235e38", float(np.finfo(np.float32).max)),
    ("float16 rounds", F16, "0.1", float(np.float16(0.1))),
    ("float16 max", F16, "65519.99", 65504.0),
    ("decimal", DEC_9_2, "-12.50", Decimal("-12.50")),
    ("string verbatim", col(P.BYTE_ARRAY, L(K.STRING)), " 0xab ", " 0xab "),
    ("binary hex", col(P.BYTE_ARRAY), "0xDEADbeef", b"\xde\xad\xbe\xef"),
    ("binary text", col(P.BYTE_ARRAY), "plain", "plain"),
    ("flba hex", col(P.FIXED_LEN_BYTE_ARRAY, None, 2), "0X0102", b"\x01\x02"),
    ("bson hex", col(P.BYTE_ARRAY, L(K.BSON)), "0x00", b"\x00"),
    ("uuid", UUID_COL, str(U), U),
    ("date", col(P.INT32, L(K.DATE)), "2024-02-29", dt.date(2024, 2, 29)),
    ("time", TIME_MS, "01:02", dt.time(1, 2)),
    ("time fraction", TIME_MS, "01:02:03.5", dt.time(1, 2, 3, 500000)),
    ("time zone", TIME_MS, "01:02:03+02:00", dt.time(1, 2, 3, tzinfo=PLUS2)),
    (
        "time nanos",
        TIME_NS_LOCAL,
        "00:00:00.000000001",
        WithNanoseconds(dt.time(0), 1),
    ),
    ("timestamp date only", TS_MS_UTC, "2024-01-01", dt.datetime(2024, 1, 1)),
    ("timestamp T", TS_MS_UTC, "2024-01-01T10:20:30", dt.datetime(2024, 1, 1, 10, 20, 30)),
    (
        "timestamp Z",
        TS_MS_UTC,
        "2024-01-01 10:20:30.123Z",
        dt.datetime(2024, 1, 1, 10, 20, 30, 123000, tzinfo=UTC),
    ),
    (
        "timestamp offset",
        TS_MS_UTC,
        "2024-01-01T10:20+0200",
        dt.datetime(2024, 1, 1, 10, 20, tzinfo=PLUS2),
    ),
    (
        "timestamp nanos",
        TS_NS_UTC,
        "2024-01-01T00:00:00.123456789Z",
        WithNanoseconds(dt.datetime(2024, 1, 1, 0, 0, 0, 123456, tzinfo=UTC), 789),
    ),
    ("int96 timestamp", col(P.INT96), "1970-01-01T00:00:01", dt.datetime(1970, 1, 1, 0, 0, 1)),
    ("int96 hex", col(P.INT96), "0x" + "00" * 12, b"\x00" * 12),
    ("unknown type", col(P.INT32, L(K.UNKNOWN)), "anything", "anything"),
]


@pytest.mark.parametrize(
    ("column", "text", "expected"), [pytest.param(c, t, e, id=n) for n, c, t, e in TEXTS]
)
def test_parse_text_value(column: ColumnDescriptor, text: str, expected: object) -> None:
    value = parse_text_value(text, column)
    assert value == expected and type(value) is type(expected)
    if isinstance(expected, float) and expected == 0:
        assert math.copysign(1, value) == math.copysign(1, expected)  # type: ignore[arg-type]


BAD_TEXTS: list[tuple[str, ColumnDescriptor, str]] = [
    ("int", col(P.INT32), "twelve"),
    ("int inf", col(P.INT32), "inf"),
    ("bool", col(P.BOOLEAN), "yes please"),
    ("double", col(P.DOUBLE), "1.0.0"),
    ("decimal", DEC_9_2, "1,5"),
    ("decimal nan", DEC_9_2, "nan"),
    ("hex odd", col(P.BYTE_ARRAY), "0xabc"),
    ("hex bad", col(P.BYTE_ARRAY), "0xzz"),
    ("bson not hex", col(P.BYTE_ARRAY, L(K.BSON)), "text"),
    ("uuid braces", UUID_COL, "{" + str(U) + "}"),
    ("date format", col(P.INT32, L(K.DATE)), "2024/01/01"),
    ("date invalid", col(P.INT32, L(K.DATE)), "2023-02-29"),
    ("time invalid", TIME_MS, "25:00"),
    ("time garbage", TIME_MS, "noon"),
    ("timestamp invalid", TS_MS_UTC, "2024-13-01T00:00"),
    ("timestamp zone", TS_MS_UTC, "2024-01-01T00:00+25:00"),
    ("timestamp too many digits", TS_MS_UTC, "2024-01-01T00:00:00.1234567891"),
]


@pytest.mark.parametrize(("column", "text"), [pytest.param(c, t, id=n) for n, c, t in BAD_TEXTS])
def test_bad_text_raises(column: ColumnDescriptor, text: str) -> None:
    with pytest.raises(ValueEncodingError) as info:
        parse_text_value(text, column)
    assert "'c'" in str(info.value) and repr(text)[:20] in str(info.value)


def test_encode_text() -> None:
    assert encode_text("1.25", DEC_9_2) == Probe(i32(125))
    assert isinstance(encode_text("nan", col(P.DOUBLE)), NeverPrunes)
    assert isinstance(encode_text("3.5", col(P.INT32)), CannotMatch)
    assert encode_text("0.1", col(P.FLOAT)) == Probe((struct.pack("<f", 0.1),))


def test_well_formed_text_the_column_cannot_hold_cannot_match() -> None:
    # Well-formed values are never errors, however far out of range.
    for text, column, reason in [
        ("9" * 5000, col(P.INT64), "outside the 64-bit integer range"),
        ("300", INT8, "outside INT(8)'s range"),
        ("1.234", DEC_9_2, "more than 2 fractional digits"),
        ("ten chars!", col(P.FIXED_LEN_BYTE_ARRAY, L(K.STRING), 4), "10 bytes cannot be stored"),
        ("1e400", col(P.DOUBLE), "beyond the range of a DOUBLE"),
        ("-1.8e308", col(P.DOUBLE), "beyond the range of a DOUBLE"),
        ("3.5e38", col(P.FLOAT), "beyond the range of a FLOAT"),
        ("1e39", col(P.FLOAT), "beyond the range of a FLOAT"),
        ("65520", F16, "beyond the range of a FLOAT16"),
        ("-7e4", F16, "beyond the range of a FLOAT16"),
    ]:
        result = encode_text(text, column)
        assert isinstance(result, CannotMatch) and reason in result.reason, (text, result)


def test_hex_text_in_unannotated_binary_is_probed_both_ways() -> None:
    # Such columns hold text as often as binary: '0x6162' is b"ab" or the text itself.
    assert encode_text("0x6162", col(P.BYTE_ARRAY)) == Probe((b"ab", b"0x6162"))
    assert encode_text("0x6162", col(P.FIXED_LEN_BYTE_ARRAY, None, 2)) == Probe((b"ab",))
    assert encode_text("0x6162", col(P.FIXED_LEN_BYTE_ARRAY, None, 6)) == Probe((b"0x6162",))
    assert isinstance(encode_text("0x6162", col(P.FIXED_LEN_BYTE_ARRAY, None, 3)), CannotMatch)
    # An annotated column says which it is.
    assert encode_text("0x6162", col(P.BYTE_ARRAY, L(K.STRING))) == Probe((b"0x6162",))
    assert encode_text("0x6162", col(P.BYTE_ARRAY, L(K.BSON))) == Probe((b"ab",))


FORMS: list[tuple[str, ColumnDescriptor, object, str]] = [
    # Python values of the wrong kind: UnsupportedTypeError.
    ("bytes in int", col(P.INT64), b"\x10", "an INT64 column takes integers such as 42"),
    ("int in boolean", col(P.BOOLEAN), 1, "a BOOLEAN column takes TRUE or FALSE"),
    ("int in string", col(P.BYTE_ARRAY, L(K.STRING)), 5, "a STRING column takes text in single"),
    ("float in decimal", DEC_9_2, 1.5, "a DECIMAL(9, 2) column takes numbers such as 12.50"),
    ("datetime in date", col(P.INT32, L(K.DATE)), dt.datetime(2024, 1, 1), "'YYYY-MM-DD'"),
    ("date in time", TIME_MS, dt.date(2024, 1, 1), "a TIME column takes 'HH:MM[:SS"),
    ("time in timestamp", TS_MS_UTC, dt.time(1), "a TIMESTAMP column takes 'YYYY-MM-DD[THH:MM"),
    ("int in uuid", UUID_COL, 5, "a UUID column takes 'xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx'"),
    ("str in geometry", col(P.BYTE_ARRAY, L(K.GEOMETRY)), "POINT", "its raw stored bytes as X'"),
    ("date in int96", col(P.INT96), dt.date(2024, 1, 1), "INT96 timestamp column takes 'YYYY"),
    ("list in float16", F16, [1], "a FLOAT16 column takes numbers"),
    ("bool in double", col(P.DOUBLE), True, "a DOUBLE column takes numbers such as 1.5"),
    ("int in flba", col(P.FIXED_LEN_BYTE_ARRAY, None, 4), 1, "FIXED_LEN_BYTE_ARRAY(4) column"),
]


@pytest.mark.parametrize(
    ("column", "value", "forms"), [pytest.param(c, v, f, id=n) for n, c, v, f in FORMS]
)
def test_errors_name_the_forms_the_column_takes(
    column: ColumnDescriptor, value: object, forms: str
) -> None:
    with pytest.raises(UnsupportedTypeError) as info:
        encode_value(value, column)
    assert forms in str(info.value) and "'c'" in str(info.value)


@pytest.mark.parametrize(
    ("column", "text", "forms"),
    [
        (col(P.INT32, L(K.DATE)), "2024/01/05", "a DATE column takes 'YYYY-MM-DD'"),
        (col(P.INT64), "abc", "an INT64 column takes integers"),
        (col(P.INT64), "0x10", "an INT64 column takes integers"),
        (UINT8, "one", "a UINT(8) column takes integers"),
        (TIME_MS, "noon", "a TIME column takes 'HH:MM[:SS[.fffffffff]]'"),
        (UUID_COL, "nope", "a UUID column takes"),
        (col(P.BOOLEAN), "yes", "a BOOLEAN column takes TRUE or FALSE"),
    ],
)
def test_text_errors_name_the_forms_the_column_takes(
    column: ColumnDescriptor, text: str, forms: str
) -> None:
    for read in (parse_text_value, encode_text):
        with pytest.raises(ValueEncodingError) as info:
            read(text, column)
        assert forms in str(info.value) and repr(text) in str(info.value)


def _midpoint_texts(code: str, int_code: str) -> list[tuple[str, float]]:
    """Decimal texts just above/below midpoints between adjacent values of a format.

    Parsing such text into a double first lands exactly on the midpoint, and
    rounding that double to the narrow format then picks the even neighbour,
    which is wrong half of the time; the exact answer is the nearer neighbour.
    """
    cases = []
    for pattern in (
        (0x3F800001, 0x3DCCCCCD, 0x00000001, 0x7F7FFFFE)
        if code == "<f"
        else (0x3C01, 0x2E66, 0x0001, 0x7BFE)
    ):
        low = struct.unpack(code, struct.pack(int_code, pattern))[0]
        high = struct.unpack(code, struct.pack(int_code, pattern + 1))[0]
        middle = (Fraction(low) + Fraction(high)) / 2
        tiny = (Fraction(high) - Fraction(low)) / 10**30
        for exact, expected in ((middle + tiny, high), (middle - tiny, low)):
            with localcontext() as context:
                context.prec = 400  # enough for every digit of these dyadic numbers
                text = f"{Decimal(exact.numerator) / Decimal(exact.denominator):.300e}"
            cases.append((text, expected))
    return cases


@pytest.mark.parametrize("code", ["<f", "<e"])
def test_narrow_float_text_is_rounded_once(code: str) -> None:
    column = col(P.FLOAT) if code == "<f" else F16
    int_code = "<I" if code == "<f" else "<H"
    for text, expected in _midpoint_texts(code, int_code):
        assert parse_text_value(text, column) == expected, text
        assert parse_text_value("-" + text, column) == -expected, text


@settings(max_examples=300, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_float32_text_round_trips(value: float) -> None:
    # Every float32 printed with enough digits reads back as itself.
    text = repr(float(np.float32(value)))
    assert parse_text_value(text, col(P.FLOAT)) == value
    assert encode_text(text, col(P.FLOAT)) == encode_value(np.float32(value), col(P.FLOAT))


@settings(max_examples=300, deadline=None)
@given(st.decimals(min_value=-(10**6), max_value=10**6, places=3, allow_nan=False))
def test_decimal_text_and_value_agree(value: Decimal) -> None:
    column = col(P.FIXED_LEN_BYTE_ARRAY, L.decimal(12, 3), 8)
    (encoded,) = encode_text(str(value), column).alternatives  # type: ignore[union-attr]
    assert int.from_bytes(encoded, "big", signed=True) == int(value * 1000)


# --- interop: bytes pyarrow stores ------------------------------------------------------


def bloom_contains(data: bytes, chunk: ColumnChunk, plain: bytes) -> bool:
    """Check a writer's filter for ``plain`` with the spec's algorithm (an independent oracle)."""
    assert chunk.bloom_filter_offset is not None and chunk.bloom_filter_length is not None
    blob = data[chunk.bloom_filter_offset : chunk.bloom_filter_offset + chunk.bloom_filter_length]
    # BloomFilterHeader starts with field 1 (numBytes, i32): 0x15, zigzag varint.
    assert blob[0] == 0x15
    raw, shift, i = 0, 0, 1
    while True:
        byte = blob[i]
        raw |= (byte & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if byte < 0x80:
            break
    num_bytes = (raw >> 1) ^ -(raw & 1)
    bitset = blob[len(blob) - num_bytes :]
    return sbbf_model.contains(bitset, xxhash.xxh64_intdigest(plain))


def write_one(array: pa.Array, **options: Any) -> tuple[bytes, ColumnChunk]:
    table = pa.table({"c": array})
    bloom = {} if pa.types.is_boolean(array.type) else {"c": {"ndv": 16, "fpp": 0.0001}}
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="none", bloom_filter_options=bloom, **options)
    data = buf.getvalue()
    md = decode_file_metadata(parse_footer_tail(data, len(data)).metadata_bytes(data))
    (chunk,) = md.row_groups[0].columns
    return data, chunk


NY_LIKE = dt.timezone(dt.timedelta(hours=-5))

INTEROP: list[tuple[str, pa.Array, dict[str, Any], list[object], object]] = [
    # (name, the written one-value column, writer options, probes that must
    #  match, a probe that must not)
    ("int8", pa.array([-5], pa.int8()), {}, [-5, -5.0], -4),
    ("uint8", pa.array([200], pa.uint8()), {}, [200], 201),
    ("int16", pa.array([-30000], pa.int16()), {}, [-30000], 30000),
    ("uint16", pa.array([65535], pa.uint16()), {}, [65535], 65534),
    ("int32", pa.array([-(2**31)], pa.int32()), {}, [-(2**31)], 2**31 - 1),
    ("uint32", pa.array([3_000_000_000], pa.uint32()), {}, [3_000_000_000], 3_000_000_001),
    ("int64", pa.array([-(2**63)], pa.int64()), {}, [-(2**63)], 2**63 - 1),
    ("uint64", pa.array([2**64 - 1], pa.uint64()), {}, [2**64 - 1], 2**63),
    ("float32", pa.array([np.float32(0.1)], pa.float32()), {}, [np.float32(0.1)], 0.5),
    ("float32 -0", pa.array([-0.0], pa.float32()), {}, [0.0, -0.0], 1.0),
    ("float64 +0", pa.array([0.0], pa.float64()), {}, [0.0, -0.0, 0], 2.0),
    ("float64 subnormal", pa.array([5e-324], pa.float64()), {}, [5e-324], 1e-323),
    ("float16", pa.array([np.float16(1.5)], pa.float16()), {}, [1.5], 1.75),
    ("string", pa.array(["héllo"]), {}, ["héllo", "héllo".encode()], "hello"),
    ("large string", pa.array(["x"], pa.large_string()), {}, ["x"], "y"),
    ("dictionary string", pa.array(["ab", "ab"]).dictionary_encode(), {}, ["ab"], "ba"),
    ("binary", pa.array([b"\x00\xff"]), {}, [b"\x00\xff"], b"\xff\x00"),
    ("fixed binary", pa.array([b"abc"], pa.binary(3)), {}, [b"abc", "abc"], b"abd"),
    (
        "decimal flba",
        pa.array([Decimal("-1.25")], pa.decimal128(7, 2)),
        {},
        [Decimal("-1.250"), Decimal("-1.25")],
        Decimal("1.25"),
    ),
    (
        "decimal int32",
        pa.array([Decimal("1234.56")], pa.decimal128(7, 2)),
        {"store_decimal_as_integer": True},
        [Decimal("1234.56")],
        Decimal("1234.57"),
    ),
    (
        "decimal int64",
        pa.array([Decimal("-123456789012.345")], pa.decimal128(15, 3)),
        {"store_decimal_as_integer": True},
        [Decimal("-123456789012.345")],
        Decimal("123456789012.345"),
    ),
    (
        "decimal wide",
        pa.array([Decimal("-12345678901234567890.0123456789")], pa.decimal128(38, 10)),
        {},
        [Decimal("-12345678901234567890.0123456789")],
        Decimal(0),
    ),
    (
        "decimal256",
        pa.array([Decimal("1" * 45 + ".5")], pa.decimal256(50, 1)),
        {},
        [Decimal("1" * 45 + ".50")],
        Decimal("1" * 45),
    ),
    (
        "date",
        pa.array([dt.date(1969, 12, 31)]),
        {},
        [dt.date(1969, 12, 31), -1],
        dt.date(1970, 1, 1),
    ),
    (
        "time ms",
        pa.array([dt.time(1, 2, 3, 4000)], pa.time32("ms")),
        {},
        [dt.time(1, 2, 3, 4000)],
        dt.time(1, 2, 3),
    ),
    (
        "time us",
        pa.array([dt.time(23, 59, 59, 999999)], pa.time64("us")),
        {},
        [dt.time(23, 59, 59, 999999)],
        dt.time(0),
    ),
    (
        "time ns",
        pa.array([3_723_000_000_123], pa.time64("ns")),
        {},
        [WithNanoseconds(dt.time(1, 2, 3), 123)],
        dt.time(1, 2, 3),
    ),
    (
        "timestamp ms local",
        pa.array([dt.datetime(2024, 2, 29, 12, 0, 0, 123000)], pa.timestamp("ms")),
        {},
        # A local-time column stores the wall clock: an aware probe with that
        # wall clock matches too.
        [
            dt.datetime(2024, 2, 29, 12, 0, 0, 123000),
            dt.datetime(2024, 2, 29, 12, 0, 0, 123000, tzinfo=NY_LIKE),
        ],
        dt.datetime(2024, 2, 29, 12),
    ),
    (
        "timestamp us utc",
        pa.array([dt.datetime(2024, 6, 1, 12, tzinfo=PLUS2)], pa.timestamp("us", tz="UTC")),
        {},
        [
            dt.datetime(2024, 6, 1, 12, tzinfo=PLUS2),
            dt.datetime(2024, 6, 1, 5, tzinfo=NY_LIKE),
            dt.datetime(2024, 6, 1, 10),
        ],
        dt.datetime(2024, 6, 1, 12),
    ),
    (
        "timestamp ns utc",
        pa.array([1_700_000_000_123_456_789], pa.timestamp("ns", tz="UTC")),
        {},
        [WithNanoseconds(dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC), 789)],
        dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC),
    ),
    (
        "int96",
        pa.array([dt.datetime(1969, 7, 20, 20, 17, 40, 123456)], pa.timestamp("ns")),
        {"use_deprecated_int96_timestamps": True},
        [dt.datetime(1969, 7, 20, 20, 17, 40, 123456)],
        dt.datetime(1969, 7, 20, 20, 17, 40),
    ),
    (
        "uuid",
        pa.array([U.bytes], pa.uuid()),
        {},
        [U, str(U), U.bytes],
        uuid.UUID(int=0),
    ),
    ("json", pa.array(['{"a": 1}'], pa.json_()), {}, ['{"a": 1}'], '{"a":1}'),
    ("boolean", pa.array([True]), {}, [True], None),
]


@pytest.mark.parametrize(
    ("array", "options", "probes", "miss"),
    [pytest.param(a, o, p, m, id=n) for n, a, o, p, m in INTEROP],
)
def test_bytes_equal_what_pyarrow_stores(
    array: pa.Array, options: dict[str, Any], probes: list[object], miss: object
) -> None:
    data, chunk = write_one(array, **options)
    column = chunk.column
    stats = chunk.statistics
    for probe in probes:
        result = encode_value(probe, column)
        assert isinstance(result, Probe), (probe, result)
        if stats is not None and stats.min_value is not None:
            # One distinct value: min and max are its PLAIN encoding (pyarrow
            # writes -0.0 as min and +0.0 as max for zeros; both are probed).
            assert stats.min_value in result.alternatives, (probe, stats, result)
            assert stats.max_value in result.alternatives, (probe, stats, result)
        if chunk.has_bloom_filter:
            assert any(bloom_contains(data, chunk, alt) for alt in result.alternatives), probe
    if stats is None or stats.min_value is None:
        # No statistics (INT96): the filter is the only witness, so it must exist.
        assert chunk.has_bloom_filter
    if miss is not None:
        result = encode_value(miss, column)
        assert isinstance(result, Probe)
        assert stats is None or stats.min_value not in result.alternatives
        if chunk.has_bloom_filter:
            assert not any(bloom_contains(data, chunk, alt) for alt in result.alternatives)


@pytest.mark.parametrize(
    "name",
    [
        "byte_array_decimal.parquet",
        "int32_decimal.parquet",
        "int64_decimal.parquet",
        "fixed_length_decimal.parquet",
        "fixed_length_decimal_legacy.parquet",
        "float16_nonzeros_and_nans.parquet",
    ],
)
def test_reference_files_from_other_writers(parquet_testing: Path, name: str) -> None:
    # parquet-mr, HVR and parquet-cpp files: every statistics field must be
    # the encoding of some value pyarrow reads back, the exact ones of the
    # smallest and largest; without statistics (HVR's BYTE_ARRAY decimals,
    # uncompressed PLAIN pages) every value's length-prefixed bytes must be
    # in the file.
    path = parquet_testing / "data" / name
    data = path.read_bytes()
    md = decode_file_metadata(parse_footer_tail(data, len(data)).metadata_bytes(data))
    (chunk,) = md.row_groups[0].columns
    values = [
        v
        for v in pq.read_table(path).column(0).to_pylist()
        if v is not None and not (isinstance(v, float) and math.isnan(v))
    ]
    assert len(values) >= 3
    encoded: dict[Any, Probe] = {}
    for value in values:
        result = encode_value(value, chunk.column)
        assert isinstance(result, Probe), (value, result)
        encoded[value] = result
    every = {alt for result in encoded.values() for alt in result.alternatives}
    stats = chunk.statistics
    if stats is None:
        assert chunk.physical_type is P.BYTE_ARRAY and chunk.codec == 0
        for result in encoded.values():
            (plain,) = result.alternatives
            assert struct.pack("<I", len(plain)) + plain in data
        return
    present = [b for b in (stats.min_value, stats.max_value, stats.min, stats.max) if b]
    assert present and all(b in every for b in present), (present, every)
    if stats.min_value is not None and stats.max_value is not None:
        assert stats.min_value in encoded[min(values)].alternatives
        assert stats.max_value in encoded[max(values)].alternatives
