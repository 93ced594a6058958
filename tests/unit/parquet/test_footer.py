"""Tests for locating and decoding Parquet footers (pybloom_async.parquet: tail, decode, metadata).

Real footers come from the Apache parquet-testing files (read in place, never
copied); crafted ones are encoded here with thrift's own compact protocol from
the same wire classes the decoder uses, so each test controls exactly which
field is missing, wrong or hostile.
"""

from __future__ import annotations

import re
import struct
import time
import tracemalloc
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from thrift.protocol.TCompactProtocol import TCompactProtocol
from thrift.transport.TTransport import TMemoryBuffer

from pybloom_async.errors import EncryptedFileError, InvalidArgumentError, ParquetFormatError
from pybloom_async.parquet import (
    DATA_PAGE,
    MAGIC,
    THRIFT_DECODER,
    CompressionCodec,
    Encoding,
    FileMetaData,
    FooterBounds,
    LogicalKind,
    PageHeaderReader,
    PageType,
    check_leading_magic,
    decode_file_metadata,
    decode_page_header,
    parse_footer_tail,
)
from pybloom_async.parquet import thrift_specs as wire
from pybloom_async.parquet.decode import decode_file_metadata_with
from pybloom_async.types import PhysicalType

Decoder = Literal["fastbinary", "python"]
# The C decoder only runs where footer.py trusts it (thrift >= 0.25): older
# versions crash on the deep-nesting inputs below, which is why it is not used.
DECODERS: list[Decoder] = ["python"] + (["fastbinary"] if THRIFT_DECODER == "fastbinary" else [])


# --- helpers ------------------------------------------------------------------


def encode(obj: Any) -> bytes:
    """Serialize a wire struct with thrift's compact protocol (the writer side)."""
    buf = TMemoryBuffer()
    obj.write(TCompactProtocol(buf))
    return bytes(buf.getvalue())


def parquet_file(metadata: bytes, body: bytes = b"") -> bytes:
    """A complete file around ``metadata``: PAR1, body, footer, length, PAR1."""
    return MAGIC + body + metadata + struct.pack("<I", len(metadata)) + MAGIC


def footer_of(data: bytes) -> bytes:
    location = parse_footer_tail(data, len(data))
    return bytes(location.metadata_bytes(data))


def element(name: str, **fields: Any) -> wire.SchemaElement:
    return wire.SchemaElement(name=name.encode(), **fields)


def column_meta(path: list[str], ptype: int = PhysicalType.INT64, **fields: Any) -> Any:
    base: dict[str, Any] = dict(
        type=ptype,
        encodings=[Encoding.PLAIN, Encoding.RLE],
        path_in_schema=[p.encode() for p in path],
        codec=CompressionCodec.SNAPPY,
        num_values=10,
        total_uncompressed_size=100,
        total_compressed_size=80,
        data_page_offset=4,
    )
    base.update(fields)
    return wire.ColumnMetaData(**base)


def two_column_meta(**overrides: Any) -> wire.FileMetaData:
    """A small valid FileMetaData: root{id: INT64, name: STRING}, one row group."""
    chunks = [
        wire.ColumnChunk(
            file_offset=0,
            meta_data=column_meta(["id"], bloom_filter_offset=500, bloom_filter_length=48),
        ),
        wire.ColumnChunk(
            file_offset=0,
            meta_data=column_meta(
                ["name"],
                PhysicalType.BYTE_ARRAY,
                bloom_filter_offset=548,
                statistics=wire.Statistics(min_value=b"a", max_value=b"z", null_count=0),
                encoding_stats=[wire.PageEncodingStats(page_type=0, encoding=8, count=2)],
            ),
        ),
    ]
    fields: dict[str, Any] = dict(
        version=2,
        schema=[
            element("root", num_children=2),
            element("id", type=PhysicalType.INT64, repetition_type=0),
            element("name", type=PhysicalType.BYTE_ARRAY, repetition_type=1, converted_type=0),
        ],
        num_rows=10,
        row_groups=[wire.RowGroup(columns=chunks, total_byte_size=200, num_rows=10)],
        created_by=b"pybloom-async tests",
        key_value_metadata=[wire.KeyValue(key=b"k", value=b"\xffraw")],
    )
    fields.update(overrides)
    return wire.FileMetaData(**fields)


def decode(buf: bytes, decoder: Decoder) -> FileMetaData:
    return decode_file_metadata_with(buf, "crafted.parquet", decoder)


def varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


# --- locating the footer -------------------------------------------------------


def test_parse_footer_tail_whole_file() -> None:
    meta = encode(two_column_meta())
    data = parquet_file(meta, body=b"x" * 100)
    loc = parse_footer_tail(data, len(data), path="f.parquet")
    assert loc == FooterBounds(
        file_size=len(data),
        metadata_offset=4 + 100,
        metadata_length=len(meta),
        leading_magic_checked=True,
    )
    assert loc.metadata_end == len(data) - 8
    assert bytes(loc.metadata_bytes(data)) == meta
    assert loc.missing_range(len(data)) is None


def test_parse_footer_tail_short_tail_asks_for_the_rest() -> None:
    meta = encode(two_column_meta())
    data = parquet_file(meta, body=b"x" * 100)
    tail = data[-20:]
    loc = parse_footer_tail(tail, len(data))
    assert not loc.leading_magic_checked
    start, end = loc.missing_range(len(tail)) or (-1, -1)
    assert (start, end) == (104, len(data) - 20)
    with pytest.raises(InvalidArgumentError, match="missing_range"):
        loc.metadata_bytes(tail)
    # The reader fetches the missing range and prepends it to the tail.
    assert bytes(loc.metadata_bytes(data[start:end] + tail)) == meta
    # A tail that starts exactly at the footer needs nothing more.
    exact = data[loc.metadata_offset :]
    assert loc.missing_range(len(exact)) is None
    assert bytes(loc.metadata_bytes(exact)) == meta
    assert decode_file_metadata(loc.metadata_bytes(exact)).num_rows == 10


@pytest.mark.parametrize(
    ("data", "file_size", "error", "message"),
    [
        (b"PAR1PAR1", 8, ParquetFormatError, "too small"),
        (b"PAR1\x01\x00\x00\x00PAR1", 12, ParquetFormatError, "too small"),
        (b"PAR1x" + b"\x01\x00\x00\x00PAR2", 13, ParquetFormatError, "trailing magic"),
        (b"PAR1x" + b"\x01\x00\x00\x00PARE", 13, EncryptedFileError, "encrypted"),
        (b"PAR1x" + b"\x02\x00\x00\x00PAR1", 13, ParquetFormatError, "exceeds"),
        (b"PAR1x" + b"\xff\xff\xff\xffPAR1", 13, ParquetFormatError, "exceeds"),
        (b"PAR1x" + b"\x00\x00\x00\x00PAR1", 13, ParquetFormatError, "length is 0"),
        (b"PAR2x" + b"\x01\x00\x00\x00PAR1", 13, ParquetFormatError, "leading magic"),
        (b"PAREx" + b"\x01\x00\x00\x00PAR1", 13, EncryptedFileError, "encrypted"),
        (b"\x00PAR1", 100, InvalidArgumentError, "last 8 bytes"),
        (b"PAR1x" + b"\x01\x00\x00\x00PAR1", 5, InvalidArgumentError, "does not fit"),
    ],
)
def test_parse_footer_tail_rejects(
    data: bytes, file_size: int, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message) as info:
        parse_footer_tail(data, file_size, path="bad.parquet")
    if issubclass(error, ParquetFormatError):
        assert "bad.parquet" in str(info.value)


def test_eight_byte_tail_of_a_big_file_is_enough() -> None:
    loc = parse_footer_tail(b"\x01\x00\x00\x00PAR1", 10**9)
    assert (loc.metadata_offset, loc.metadata_length) == (10**9 - 9, 1)
    assert loc.missing_range(8) == (10**9 - 9, 10**9 - 8)
    assert not loc.leading_magic_checked


def test_check_leading_magic() -> None:
    check_leading_magic(b"PAR1rest")
    with pytest.raises(EncryptedFileError):
        check_leading_magic(b"PARE")
    with pytest.raises(ParquetFormatError, match="leading magic"):
        check_leading_magic(b"PA", path="x")


# --- decoding crafted footers ---------------------------------------------------------


@pytest.mark.parametrize("decoder", DECODERS)
def test_decode_crafted_footer(decoder: Decoder) -> None:
    md = decode(encode(two_column_meta()), decoder)
    assert (md.version, md.num_rows, md.created_by) == (2, 10, "pybloom-async tests")
    assert [c.path for c in md.schema.columns] == ["id", "name"]
    assert md.key_value_metadata is not None
    assert (md.key_value_metadata[0].key, md.key_value_metadata[0].value) == ("k", b"\xffraw")
    (rg,) = md.row_groups
    assert (rg.index, rg.num_rows, rg.total_byte_size) == (0, 10, 200)
    ident, name = rg.columns
    assert ident.physical_type is PhysicalType.INT64 and ident.path == "id"
    assert (ident.bloom_filter_offset, ident.bloom_filter_length) == (500, 48)
    assert ident.has_bloom_filter and name.has_bloom_filter
    assert (name.bloom_filter_offset, name.bloom_filter_length) == (548, None)
    assert ident.statistics is None and ident.encoding_stats is None
    assert name.statistics is not None
    assert (name.statistics.min_value, name.statistics.max_value) == (b"a", b"z")
    assert name.encoding_stats is not None
    (stats,) = name.encoding_stats
    assert stats.page_type is PageType.DATA_PAGE and stats.encoding is Encoding.RLE_DICTIONARY
    assert ident.codec is CompressionCodec.SNAPPY
    assert ident.encodings == (Encoding.PLAIN, Encoding.RLE)
    assert name.column.logical_type is not None
    assert name.column.logical_type.kind is LogicalKind.STRING
    assert md.column_chunks("name") == (name,)


@pytest.mark.parametrize("decoder", DECODERS)
def test_unknown_enum_values_and_fields_pass_through(decoder: Decoder) -> None:
    meta = two_column_meta()
    md_raw = meta.row_groups[0].columns[0].meta_data
    md_raw.codec = 42
    md_raw.encodings = [0, 77]
    md = decode(encode(meta), decoder)
    chunk = md.row_groups[0].columns[0]
    assert chunk.codec == 42 and not isinstance(chunk.codec, CompressionCodec)
    assert chunk.encodings == (Encoding.PLAIN, 77)


def _set(path: str, value: Any) -> Callable[[wire.FileMetaData], None]:
    """A mutation that sets a dotted attribute path (list indices as numbers)."""

    def mutate(meta: wire.FileMetaData) -> None:
        target: Any = meta
        *parents, last = path.split(".")
        for part in parents:
            target = target[int(part)] if part.isdigit() else getattr(target, part)
        setattr(target, last, value)

    return mutate


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize(
    ("mutate", "error", "message"),
    [
        (_set("num_rows", None), ParquetFormatError, "FileMetaData.num_rows is missing"),
        (_set("schema", None), ParquetFormatError, "FileMetaData.schema is missing"),
        (_set("row_groups", None), ParquetFormatError, "row_groups is missing"),
        (_set("version", None), ParquetFormatError, "version is missing"),
        (_set("num_rows", -1), ParquetFormatError, "negative"),
        (_set("row_groups.0.num_rows", -5), ParquetFormatError, "negative"),
        (_set("row_groups.0.columns.0.meta_data", None), ParquetFormatError, "no meta_data"),
        (
            _set("row_groups.0.columns.0.meta_data.type", PhysicalType.INT32),
            ParquetFormatError,
            "does not match the schema's INT64",
        ),
        (
            _set("row_groups.0.columns.1.meta_data.path_in_schema", [b"other"]),
            ParquetFormatError,
            "'other' does not match",
        ),
        (
            _set("row_groups.0.columns.0.meta_data.num_values", None),
            ParquetFormatError,
            "num_values is missing",
        ),
        (
            _set("row_groups.0.columns.0.meta_data.encodings", None),
            ParquetFormatError,
            "encodings is missing",
        ),
        (
            _set(
                "row_groups.0.columns.1.meta_data.encoding_stats",
                [wire.PageEncodingStats(page_type=0, count=1)],
            ),
            ParquetFormatError,
            "encoding is missing",
        ),
        (
            lambda m: m.row_groups[0].columns.pop(),
            ParquetFormatError,
            "1 column chunks but the schema has 2",
        ),
        (_set("encryption_algorithm", wire.Empty()), EncryptedFileError, "plaintext footer"),
        (
            _set("row_groups.0.columns.0.crypto_metadata", wire.Empty()),
            EncryptedFileError,
            "column chunk is encrypted",
        ),
        (_set("schema.0.num_children", 3), ParquetFormatError, "only 2 schema elements follow"),
        (_set("schema.0.num_children", 1), ParquetFormatError, "follow the root"),
        (_set("schema.1.type", 11), ParquetFormatError, "unknown physical type 11"),
        # Size statistics pyarrow's reader refuses (its metadata accessors end the process)
        (
            _set(
                "row_groups.0.columns.1.meta_data.size_statistics",
                wire.SizeStatistics(definition_level_histogram=[1, 2, 3]),
            ),
            ParquetFormatError,
            r"definition-level histogram has 3 entries, not 2 \(row group 0, column 'name'\)",
        ),
        (
            _set(
                "row_groups.0.columns.0.meta_data.size_statistics",
                wire.SizeStatistics(repetition_level_histogram=[10, 0]),
            ),
            ParquetFormatError,
            "repetition-level histogram has 2 entries, not 1",
        ),
        (
            _set(
                "row_groups.0.columns.0.meta_data.size_statistics",
                wire.SizeStatistics(unencoded_byte_array_data_bytes=8),
            ),
            ParquetFormatError,
            "unencoded BYTE_ARRAY sizes for a INT64 column",
        ),
    ],
)
def test_decode_rejects_inconsistent_footers(
    decoder: Decoder,
    mutate: Callable[[wire.FileMetaData], Any],
    error: type[Exception],
    message: str,
) -> None:
    meta = two_column_meta()
    mutate(meta)
    with pytest.raises(error, match=message) as info:
        decode(encode(meta), decoder)
    assert "crafted.parquet" in str(info.value)


@pytest.mark.parametrize("decoder", DECODERS)
def test_size_statistics_as_writers_record_them_are_accepted(decoder: Decoder) -> None:
    meta = two_column_meta()
    meta.row_groups[0].columns[1].meta_data.size_statistics = wire.SizeStatistics(
        unencoded_byte_array_data_bytes=40,
        repetition_level_histogram=[],
        definition_level_histogram=[2, 8],
    )
    meta.row_groups[0].columns[0].meta_data.size_statistics = wire.SizeStatistics(
        definition_level_histogram=[10]
    )
    assert decode(encode(meta), decoder).row_groups[0].columns[1].codec == CompressionCodec.SNAPPY


class _StringRowCount(wire.FileMetaData):
    """A writer that puts num_rows (field 3) on the wire as a string."""

    thrift_spec = tuple(
        (3, 11, "num_rows", "BINARY", None) if i == 3 else f
        for i, f in enumerate(wire.FileMetaData.thrift_spec)
    )


@pytest.mark.parametrize("decoder", DECODERS)
def test_field_with_the_wrong_wire_type_counts_as_missing(decoder: Decoder) -> None:
    meta = two_column_meta()
    fields = {name: getattr(meta, name) for name in vars(meta)}
    fields["num_rows"] = b"ten"
    with pytest.raises(ParquetFormatError, match="num_rows is missing"):
        decode(encode(_StringRowCount(**fields)), decoder)


@pytest.mark.parametrize("decoder", DECODERS)
def test_file_offset_defaults_to_zero_and_file_path_decodes(decoder: Decoder) -> None:
    meta = two_column_meta()
    meta.row_groups[0].columns[0].file_offset = None
    meta.row_groups[0].columns[1].file_path = b"other.parquet"
    md = decode(encode(meta), decoder)
    first, second = md.row_groups[0].columns
    assert first.file_offset == 0 and first.file_path is None
    assert second.file_path == "other.parquet"


# --- hostile footers -----------------------------------------------------------------


def _hostile_inputs() -> dict[str, bytes]:
    # Field headers are (delta << 4) | compact type; 0x15 0x02 sets version = 1.
    big = 2**31 - 1
    return {
        # schema: list<struct> claiming 2**31 - 1 elements in a tiny buffer.
        "huge list": bytes([0x15, 0x02, 0x19, 0xFC]) + varint(big) + b"\x00" * 32,
        # created_by: a string claiming 2 GiB.
        "huge string": bytes([0x15, 0x02, 0x58]) + varint(big) + b"abc",
        # An unknown field (id 20) holding list<i64> of 2**31 - 1 elements.
        "huge skipped list": bytes([0x15, 0x02, 0x09, 0x28, 0xF6]) + varint(big) + b"\x01" * 32,
        # An unknown field holding a million nested lists, then nested structs:
        # unbounded recursion in a decoder would overflow the C stack.
        "deep lists": bytes([0x09, 0x28]) + b"\x19" * 1_000_000 + b"\x00",
        "deep structs": bytes([0x0C, 0x28]) + b"\x1c" * 1_000_000 + b"\x00" * 8,
        # A varint that never ends, and an invalid compact type nibble.
        "endless varint": bytes([0x15]) + b"\xff" * 64,
        "bad type": bytes([0x1E, 0x00]),
        "empty": b"",
        "stop only": b"\x00",
    }


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize("name", sorted(_hostile_inputs()))
def test_hostile_footers_fail_cleanly_fast_and_small(decoder: Decoder, name: str) -> None:
    data = _hostile_inputs()[name]
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(ParquetFormatError) as info:
            decode(data, decoder)
    finally:
        elapsed = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert "crafted.parquet" in str(info.value)
    assert elapsed < 5.0, f"{name}: {elapsed:.2f} s"
    # Nothing proportional to a claimed length (measured: under 30 KB for all).
    assert peak < 2 * len(data) + (1 << 20), f"{name}: peak {peak} bytes"


@pytest.mark.parametrize("decoder", DECODERS)
def test_many_tiny_elements_cost_linear_memory(decoder: Decoder) -> None:
    # 64 Ki empty SchemaElements (one byte each) are an honest list: the cost
    # is one small object per footer byte, never more.
    count = 1 << 16
    data = bytes([0x15, 0x02, 0x19, 0xFC]) + varint(count) + b"\x00" * count + b"\x00"
    tracemalloc.start()
    try:
        with pytest.raises(ParquetFormatError):
            decode(data, decoder)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # Measured: about 121 bytes per input byte with either decoder.
    assert peak < 200 * len(data), f"peak {peak} bytes for {len(data)} input bytes"


def _real_footers(parquet_testing: Path) -> list[bytes]:
    names = [
        "data_index_bloom_encoding_with_length.parquet",
        "nested_maps.snappy.parquet",
        "alltypes_tiny_pages.parquet",
        "byte_array_decimal.parquet",
    ]
    return [footer_of((parquet_testing / "data" / n).read_bytes()) for n in names]


@pytest.mark.parametrize("decoder", DECODERS)
def test_every_truncation_fails_cleanly(parquet_testing: Path, decoder: Decoder) -> None:
    for footer in _real_footers(parquet_testing):
        decode(footer, decoder)  # the whole footer is fine
        # A compact struct can only end at its final STOP byte, so every
        # strict prefix must fail, and fail with our error. Long footers are
        # sampled (about 300 cuts, always including the last 32 bytes).
        step = max(1, len(footer) // 300)
        cuts = sorted(
            set(range(0, len(footer), step)) | set(range(max(0, len(footer) - 32), len(footer)))
        )
        for cut in cuts:
            with pytest.raises(ParquetFormatError):
                decode(footer[:cut], decoder)


@pytest.mark.parametrize("decoder", DECODERS)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_byte_flips_decode_or_fail_cleanly(decoder: Decoder, data: st.DataObject) -> None:
    footer = bytearray(_FLIP_BASE)
    flips = data.draw(
        st.lists(
            st.tuples(st.integers(0, len(footer) - 1), st.integers(1, 255)), min_size=1, max_size=8
        )
    )
    for position, mask in flips:
        footer[position] ^= mask
    try:
        md = decode(bytes(footer), decoder)
    except ParquetFormatError:
        return
    # Whatever decodes is internally consistent.
    for rg in md.row_groups:
        assert len(rg.columns) == len(md.schema.columns)


@pytest.mark.parametrize("decoder", DECODERS)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_real_footers_mangled_decode_or_fail_cleanly(
    parquet_testing: Path, decoder: Decoder, data: st.DataObject
) -> None:
    footers = _real_footers(parquet_testing)
    footer = bytearray(data.draw(st.sampled_from(footers)))
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(footer) - 1))
        action = data.draw(st.sampled_from(["flip", "insert", "delete"]))
        if action == "flip":
            footer[position] ^= data.draw(st.integers(1, 255))
        elif action == "insert":
            footer[position:position] = data.draw(st.binary(min_size=1, max_size=8))
        elif len(footer) > 1:
            del footer[position : position + data.draw(st.integers(1, 8))]
    try:
        md = decode(bytes(footer), decoder)
    except ParquetFormatError:
        return
    for rg in md.row_groups:
        assert len(rg.columns) == len(md.schema.columns)


# The fuzz base is a crafted footer with every kind of field we read, so
# flips land in lists, strings, nested structs and unions alike.
def _flip_base() -> bytes:
    meta = two_column_meta()
    meta.schema.append(
        element(
            "ts",
            type=PhysicalType.INT64,
            repetition_type=1,
            logicalType=wire.LogicalType(
                TIMESTAMP=wire.TimeType(
                    isAdjustedToUTC=True, unit=wire.TimeUnit(MICROS=wire.Empty())
                )
            ),
        )
    )
    meta.schema[0].num_children = 3
    meta.row_groups[0].columns.append(
        wire.ColumnChunk(file_offset=0, meta_data=column_meta(["ts"]))
    )
    return encode(meta)


_FLIP_BASE = _flip_base()


# --- the parquet-testing corpus ------------------------------------------------------

# Files that must not decode, and why. Everything else under data/ and
# bad_data/ must decode.
EXPECTED_FAILURES: dict[str, tuple[type[ParquetFormatError], str]] = {
    # One ColumnMetaData.encodings list declares i16 elements instead of i32
    # (and a path_in_schema name is corrupted); pyarrow's reader ignores both.
    "bad_data/ARROW-GH-41317.parquet": (ParquetFormatError, "malformed|does not match"),
    # A schema element's physical type is -7.
    "bad_data/PARQUET-1481.parquet": (ParquetFormatError, "unknown physical type -7"),
    "data/encrypt_columns_plaintext_footer.parquet.encrypted": (
        EncryptedFileError,
        "plaintext footer",
    ),
    "data/aes256/encrypt_columns_plaintext_footer.parquet.encrypted": (
        EncryptedFileError,
        "plaintext footer",
    ),
}
_ENCRYPTED_FOOTER = (EncryptedFileError, "trailing magic PARE")


def _corpus(root: Path) -> list[Path]:
    files = [p for p in (root / "data").rglob("*") if p.suffix in (".parquet", ".encrypted")]
    files += sorted((root / "bad_data").glob("*.parquet"))
    return sorted(files)


@pytest.mark.parametrize("decoder", DECODERS)
def test_corpus_decodes_or_fails_as_recorded(parquet_testing: Path, decoder: Decoder) -> None:
    problems = []
    files = _corpus(parquet_testing)
    assert len(files) > 60
    for file in files:
        name = file.relative_to(parquet_testing).as_posix()
        data = file.read_bytes()
        expected = EXPECTED_FAILURES.get(name)
        if expected is None and file.suffix == ".encrypted":
            expected = _ENCRYPTED_FOOTER
        try:
            location = parse_footer_tail(data, len(data), path=name)
            md = decode_file_metadata_with(location.metadata_bytes(data), name, decoder)
        except ParquetFormatError as exc:
            if expected is None:
                problems.append(f"{name}: unexpected {exc!r}")
            elif not isinstance(exc, expected[0]) or not re.search(expected[1], str(exc)):
                problems.append(f"{name}: expected {expected}, got {exc!r}")
            elif name not in str(exc):
                problems.append(f"{name}: the error does not name the file: {exc}")
            continue
        if expected is not None:
            problems.append(f"{name}: decoded, expected {expected}")
        elif any(len(rg.columns) != len(md.schema.columns) for rg in md.row_groups):
            problems.append(f"{name}: a row group's chunks do not match the schema")
    assert not problems, "\n".join(problems)


def _pyarrow_codec(codec: int) -> str:
    # pyarrow names LZ4_RAW "LZ4" and the deprecated Hadoop LZ4 "UNKNOWN".
    names = {CompressionCodec.LZ4_RAW: "LZ4", CompressionCodec.LZ4: "UNKNOWN"}
    return names.get(codec, getattr(codec, "name", str(codec)))


def test_corpus_matches_pyarrow(parquet_testing: Path) -> None:
    compared = 0
    for file in _corpus(parquet_testing):
        name = file.relative_to(parquet_testing).as_posix()
        data = file.read_bytes()
        try:
            md = decode_file_metadata(footer_of(data), path=name, lazy=False)
        except ParquetFormatError:
            continue
        try:
            theirs = pq.ParquetFile(file).metadata
        except Exception:  # pyarrow rejects a few files we read (e.g. map key nullability)
            continue
        compared += 1
        assert md.num_rows == theirs.num_rows, name
        assert len(md.row_groups) == theirs.num_row_groups, name
        assert (md.created_by or "") == theirs.created_by, name
        assert len(md.schema.columns) == theirs.num_columns, name
        for column in md.schema.columns:
            other = theirs.schema.column(column.index)
            assert column.path == other.path, name
            assert column.physical_type.name == other.physical_type, (name, column.path)
            assert column.max_definition_level == other.max_definition_level, (name, column.path)
            assert column.max_repetition_level == other.max_repetition_level, (name, column.path)
        for rg in md.row_groups:
            their_rg = theirs.row_group(rg.index)
            assert rg.num_rows == their_rg.num_rows, name
            assert rg.total_byte_size == their_rg.total_byte_size, name
            for chunk in rg.columns:
                other = their_rg.column(chunk.column.index)
                where = (name, rg.index, chunk.path)
                assert chunk.path == other.path_in_schema, where
                assert chunk.physical_type.name == other.physical_type, where
                assert chunk.bloom_filter_offset == other.bloom_filter_offset, where
                assert chunk.bloom_filter_length == other.bloom_filter_length, where
                assert chunk.num_values == other.num_values, where
                assert chunk.data_page_offset == other.data_page_offset, where
                assert chunk.dictionary_page_offset == other.dictionary_page_offset, where
                assert chunk.total_compressed_size == other.total_compressed_size, where
                assert chunk.total_uncompressed_size == other.total_uncompressed_size, where
                assert chunk.file_offset == other.file_offset, where
                assert _pyarrow_codec(chunk.codec) == other.compression, where
    assert compared > 50


def test_bloom_filter_fields_of_the_reference_files(parquet_testing: Path) -> None:
    stats_file = parquet_testing / "data" / "data_index_bloom_encoding_stats.parquet"
    with_length = parquet_testing / "data" / "data_index_bloom_encoding_with_length.parquet"
    (chunk,) = decode_file_metadata(footer_of(stats_file.read_bytes())).row_groups[0].columns
    # Written before bloom_filter_length existed: offset only.
    assert (chunk.bloom_filter_offset, chunk.bloom_filter_length) == (192, None)
    assert chunk.has_bloom_filter and chunk.path == "String"
    assert chunk.encoding_stats is not None
    (chunk,) = decode_file_metadata(footer_of(with_length.read_bytes())).row_groups[0].columns
    assert (chunk.bloom_filter_offset, chunk.bloom_filter_length) == (253, 2064)
    data = with_length.read_bytes()
    # The filter lies after the chunk's pages and before the footer.
    assert chunk.dictionary_page_offset is not None
    assert chunk.dictionary_page_offset + chunk.total_compressed_size <= chunk.bloom_filter_offset
    assert chunk.bloom_filter_offset + chunk.bloom_filter_length <= len(data) - 8 - 524


def test_pyarrow_written_bloom_filters_are_found(tmp_path: Path) -> None:
    import pyarrow as pa

    table = pa.table({"k": pa.array([f"key-{i}" for i in range(100)]), "v": pa.array(range(100))})
    path = tmp_path / "bloom.parquet"
    pq.write_table(table, path, row_group_size=40, bloom_filter_options={"k": {"ndv": 100}})
    data = path.read_bytes()
    md = decode_file_metadata(footer_of(data), path=str(path))
    assert [rg.num_rows for rg in md.row_groups] == [40, 40, 20]
    theirs = pq.ParquetFile(path).metadata
    for rg in md.row_groups:
        key, value = rg.columns
        assert key.has_bloom_filter and not value.has_bloom_filter
        assert key.bloom_filter_offset == theirs.row_group(rg.index).column(0).bloom_filter_offset
        assert key.bloom_filter_length == theirs.row_group(rg.index).column(0).bloom_filter_length
        assert key.bloom_filter_offset is not None
        assert 4 <= key.bloom_filter_offset < len(data) - 8


# --- the lazy model ------------------------------------------------------------------


def _every_attribute(md: FileMetaData) -> list[Any]:
    """Every public value of a footer, in a comparable form (reads every lazy part)."""
    out: list[Any] = [md.version, md.num_rows, md.created_by, md.metadata_length]
    out.append(md.key_value_metadata)
    out.append([(c.index, c.path_parts, c.physical_type, c.logical_type) for c in md.schema])
    for rg in md.row_groups:
        out.append(
            (rg.index, rg.num_rows, rg.total_byte_size, rg.file_offset,
             rg.total_compressed_size, rg.ordinal)
        )  # fmt: skip
        for c in rg.columns:
            stats = c.statistics
            out.append(
                (c.row_group, c.column, c.path, c.physical_type, c.codec, c.num_values,
                 c.encodings, c.data_page_offset, c.dictionary_page_offset, c.index_page_offset,
                 c.total_compressed_size, c.total_uncompressed_size,
                 None if stats is None else sorted(vars(stats).items()), c.encoding_stats,
                 c.bloom_filter_offset, c.bloom_filter_length, c.has_bloom_filter, c.file_path,
                 c.file_offset)
            )  # fmt: skip
    return out


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize(
    ("mutate", "error", "message"),
    [
        (_set("row_groups.0.columns.0.meta_data", None), ParquetFormatError, "no meta_data"),
        (
            _set("row_groups.0.columns.0.meta_data.type", PhysicalType.INT32),
            ParquetFormatError,
            "does not match the schema's INT64",
        ),
        (
            _set("row_groups.0.columns.1.meta_data.path_in_schema", [b"other"]),
            ParquetFormatError,
            "'other' does not match",
        ),
        (
            _set("row_groups.0.columns.0.meta_data.num_values", None),
            ParquetFormatError,
            "num_values is missing",
        ),
        (
            _set("row_groups.0.columns.0.meta_data.num_values", -1),
            ParquetFormatError,
            "num_values is negative",
        ),
        (
            lambda m: m.row_groups[0].columns.pop(),
            ParquetFormatError,
            "1 column chunks but the schema has 2",
        ),
        (_set("row_groups.0.columns", None), ParquetFormatError, "RowGroup.columns is missing"),
        (
            _set("row_groups.0.columns.0.crypto_metadata", wire.Empty()),
            EncryptedFileError,
            "column chunk is encrypted",
        ),
    ],
)
def test_lazy_chunks_are_validated_before_any_is_returned(
    decoder: Decoder,
    mutate: Callable[[wire.FileMetaData], Any],
    error: type[Exception],
    message: str,
) -> None:
    meta = two_column_meta()
    mutate(meta)
    for with_chunks in (False, True):  # chunks read by a pass of their own, or the first
        md = decode_file_metadata_with(
            encode(meta), "crafted.parquet", decoder, lazy=True, with_chunks=with_chunks
        )
        # The head decodes; the chunks fail on first access, every time, naming the file.
        assert md.num_rows == 10 and [rg.num_rows for rg in md.row_groups] == [10]
        for _ in range(2):
            with pytest.raises(error, match=message) as info:
                md.row_groups[0].columns  # noqa: B018
            assert "crafted.parquet" in str(info.value)
        with pytest.raises(error, match=message):
            md.column_chunks("id")
        with pytest.raises(error, match=message):
            md.load()


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize(
    ("mutate", "message", "read"),
    [
        (
            _set("row_groups.0.columns.0.meta_data.encodings", None),
            "encodings is missing",
            lambda c: c.encodings,
        ),
        (
            _set("row_groups.0.columns.0.meta_data.codec", None),
            "codec is missing",
            lambda c: c.codec,
        ),
        (
            _set(
                "row_groups.0.columns.1.meta_data.encoding_stats",
                [wire.PageEncodingStats(page_type=0, count=1)],
            ),
            "encoding is missing",
            lambda c: c.file_offset,
        ),
    ],
)
def test_lazy_details_fail_on_first_read_of_a_detail(
    decoder: Decoder, mutate: Callable[[wire.FileMetaData], Any], message: str, read: Any
) -> None:
    meta = two_column_meta()
    mutate(meta)
    md = decode_file_metadata_with(encode(meta), "crafted.parquet", decoder, lazy=True)
    chunk = md.row_groups[0].columns[0]
    # What pruning and planning read is there; the damaged detail is not.
    assert (chunk.bloom_filter_offset, chunk.bloom_filter_length, chunk.num_values) == (500, 48, 10)
    with pytest.raises(ParquetFormatError, match=message):
        read(chunk)


@pytest.mark.parametrize("decoder", DECODERS)
def test_lazy_key_values_fail_on_first_read(decoder: Decoder) -> None:
    meta = two_column_meta(key_value_metadata=[wire.KeyValue(value=b"no key")])
    md = decode_file_metadata_with(encode(meta), "crafted.parquet", decoder, lazy=True)
    assert md.row_groups[0].columns[0].bloom_filter_offset == 500
    with pytest.raises(ParquetFormatError, match=r"KeyValue\.key is missing"):
        md.key_value_metadata  # noqa: B018
    with pytest.raises(ParquetFormatError, match=r"KeyValue\.key is missing"):
        decode_file_metadata_with(encode(meta), "crafted.parquet", decoder, lazy=False)


@pytest.mark.parametrize("decoder", DECODERS)
def test_lazy_and_eager_decodes_agree_on_the_corpus(
    parquet_testing: Path, decoder: Decoder
) -> None:
    compared = 0
    for file in _corpus(parquet_testing):
        name = file.relative_to(parquet_testing).as_posix()
        data = file.read_bytes()
        try:
            footer = bytes(parse_footer_tail(data, len(data), path=name).metadata_bytes(data))
        except ParquetFormatError:
            continue  # encrypted footers
        try:
            eager = decode_file_metadata_with(footer, name, decoder, lazy=False)
        except ParquetFormatError as exc:
            # The lazy decodes fail too: at once or when the failing part is read.
            for with_chunks in (False, True):
                with pytest.raises(type(exc)):
                    decode_file_metadata_with(
                        footer, name, decoder, lazy=True, with_chunks=with_chunks
                    ).load()
            continue
        lazy = decode_file_metadata_with(footer, name, decoder, lazy=True)
        assert _every_attribute(lazy) == _every_attribute(eager), name
        assert lazy == eager and hash(lazy) == hash(eager)
        one_pass = decode_file_metadata_with(footer, name, decoder, lazy=True, with_chunks=True)
        assert _every_attribute(one_pass) == _every_attribute(eager), name
        compared += 1
    assert compared > 50


def test_decoded_objects_are_read_only_and_pickle() -> None:
    import pickle

    md = decode_file_metadata(encode(two_column_meta()), path="crafted.parquet")
    rg = md.row_groups[0]
    chunk = rg.columns[1]
    stats = chunk.statistics
    assert stats is not None
    for obj, name in ((md, "num_rows"), (rg, "num_rows"), (chunk, "bloom_filter_offset"),
                      (stats, "min_value"), (md.schema, "columns")):  # fmt: skip
        with pytest.raises(AttributeError):
            setattr(obj, name, 1)
    with pytest.raises(AttributeError):
        del stats.min_value
    again = pickle.loads(pickle.dumps(md))
    assert again == md
    assert _every_attribute(again) == _every_attribute(md)
    assert again.row_groups[0] == rg and again.row_groups[0].columns[1] == chunk
    assert hash(again.row_groups[0].columns[1]) == hash(chunk)
    assert stats == again.row_groups[0].columns[1].statistics and hash(stats) == hash(stats)
    assert "bloom_filter_offset=548" in repr(chunk) and "num_rows=10" in repr(rg)


def test_a_decoded_footer_leaves_no_reference_cycle() -> None:
    # A bulk prune decodes thousands of footers; each must be freed when dropped,
    # by reference counting, not left for the cycle collector.
    import gc

    data = encode(two_column_meta())
    gc.collect()
    gc.disable()
    try:
        md = decode_file_metadata(data, path="crafted.parquet")
        _every_attribute(md)
        md.schema.root  # noqa: B018
        del md
        assert gc.collect() == 0
    finally:
        gc.enable()


@pytest.mark.parametrize("decoder", DECODERS)
def test_negative_field_ids_are_unknown_fields(decoder: Decoder) -> None:
    # version 1, schema [root], then field -1 (an empty struct: not encryption_algorithm,
    # the last field of the spec), num_rows 0, row_groups [].
    data = bytes.fromhex("1502191c480172001600190c0c010000")
    md = decode_file_metadata_with(data, "x.parquet", decoder, lazy=False)
    assert (md.num_rows, len(md.row_groups)) == (0, 0)


# --- page headers (PageHeaderReader) -------------------------------------------------------


def _checksummed_file(tmp_path: Path) -> bytes:
    """One row group, one page per chunk, page CRCs written."""
    table = pa.table(
        {
            "i": pa.array(range(50), pa.int64()),
            "s": pa.array([f"v{i}" for i in range(50)]),
            "d": pa.array([i / 3 for i in range(50)]),
        }
    )
    path = tmp_path / "pages.parquet"
    pq.write_table(table, path, compression="none", use_dictionary=False, write_page_checksum=True)
    return path.read_bytes()


@pytest.mark.parametrize("decoder", DECODERS)
def test_page_headers_of_a_pyarrow_file(tmp_path: Path, decoder: Decoder) -> None:
    data = _checksummed_file(tmp_path)
    location = parse_footer_tail(data, len(data))
    md = decode_file_metadata(location.metadata_bytes(data))
    reader = PageHeaderReader(data, path="pages.parquet", decoder=decoder)
    for chunk in md.row_groups[0].columns:
        start = chunk.data_page_offset
        header = reader.read(start, column=chunk.path)
        assert header == decode_page_header(data, start)
        assert header.type == DATA_PAGE and header.num_values == 50
        assert header.encoding == Encoding.PLAIN
        assert header.compressed_page_size == header.uncompressed_page_size
        size = header.compressed_page_size
        assert size is not None and header.crc is not None
        assert header.header_length + size == chunk.total_compressed_size
        body = data[start + header.header_length : start + header.header_length + size]
        assert header.crc & 0xFFFFFFFF == zlib.crc32(body)


@pytest.mark.parametrize("decoder", DECODERS)
def test_page_header_errors(tmp_path: Path, decoder: Decoder) -> None:
    data = _checksummed_file(tmp_path)
    location = parse_footer_tail(data, len(data))
    start = decode_file_metadata(location.metadata_bytes(data)).row_groups[0].columns[0]
    offset = start.data_page_offset
    reader = PageHeaderReader(data, path="pages.parquet", decoder=decoder)
    good = reader.read(offset)
    for bad in (-1, len(data)):
        with pytest.raises(ParquetFormatError, match=rf"offset {bad} lies outside.*pages"):
            reader.read(bad, column="i")
    with pytest.raises(InvalidArgumentError):
        reader.read(True)
    with pytest.raises(InvalidArgumentError):
        PageHeaderReader(bytearray(data))  # type: ignore[arg-type]
    # Every strict prefix of a header fails, naming the file and column; the reader
    # still decodes a good header afterwards.
    for cut in range(offset + 1, offset + good.header_length):
        short = PageHeaderReader(data[:cut], path="pages.parquet", decoder=decoder)
        with pytest.raises(ParquetFormatError, match=r"malformed page header.*pages.*'i'"):
            short.read(offset, column="i")
        assert reader.read(offset) == good
    # Hostile bytes in place of a header: a clean error (deep nesting, huge claims), or,
    # for the two that are an empty struct, an empty header.
    for name, hostile in _hostile_inputs().items():
        hostile_reader = PageHeaderReader(hostile + b"\x00", path="h", decoder=decoder)
        try:
            header = hostile_reader.read(0)
        except ParquetFormatError:
            continue
        assert name in ("stop only", "empty") and header.type is None, name
