"""Every input the fuzzers (``fuzz/``) found a failure with, replayed, and the fixed behaviour.

Each case names the target that found it; ``fuzz/RESULTS.md`` tells the story. The inputs
are inline (a few bytes each) so the tests need neither atheris nor the corpora.
"""

from __future__ import annotations

import pytest

from pybloom_async.core.filter import SplitBlockBloomFilter
from pybloom_async.core.sizes import decode_header, optimal_num_bytes
from pybloom_async.errors import (
    FilterSizeError,
    FilterTooLargeError,
    InvalidFilterError,
    ParquetFormatError,
)
from pybloom_async.parquet.decode import decode_file_metadata_with

targets = pytest.importorskip("fuzz.targets")

# A complete header announcing 1024 bytes (15 80 10 = field 1, zigzag 2048).
HEADER_1024 = bytes.fromhex("1580101c1c00001c1c00001c1c0000") + b"\x00"


# --------------------------------------------------------------------------- crash inputs

#: A FileMetaData with an unknown field 9 of type i16 whose varint is 4 bytes long.
PYTHON_LENIENT_I16 = bytes.fromhex("1502191c480172001600190c" + "54" + "80808001" + "00")

#: A FileMetaData whose num_rows (i64) is a 10-byte varint with bits past bit 63 in its
#: last byte (minimised from a 4 KB input): the C decoder keeps the low 64 bits, thrift's
#: pure-Python protocol kept them all and decoded another number.
WIDE_I64_FOOTER = bytes.fromhex("1502191c48017200" + "16" + "ceffffffffffffffff26" + "190c00")

#: The same for an i32: version is a 5-byte varint whose last byte carries bits past bit
#: 31 (found second, minimised by hand): the C decoder keeps the low 32 bits (0 here), the
#: fallback refused the number as out of range.
WIDE_I32_FOOTER = bytes.fromhex("15" + "8080808070" + "191c48017200" + "1600" + "190c00")

#: (target, input) pairs exactly as the fuzzers saved them.
CRASHES = [
    # bloom_header: a limit above 2**64 (first byte 0x6d picks 2**70) raised cffi's
    # OverflowError from decode_header instead of being applied.
    ("bloom_header", bytes.fromhex("6d6d6d6d0040006d")),
    # bloom_header: an unknown struct field (id 5) then fields with negative ids; thrift's
    # pure-Python decoder, the harness's reference, read id -4 as numBytes. Kept as a
    # check that the C decoder skips negative ids (it returns 1024, the real numBytes).
    (
        "bloom_header",
        bytes.fromhex(
            "001580101c1c00001c1c00001c1c00001c7474f69774747415020002"
            "2b09091c091909001580000000000000000000001c00"
        ),
    ),
    # bloom_header: an unknown struct field holding an empty set with element type 15
    # (none such in thrift): the C decoder accepted it, thrift's decoders refuse it; the C
    # decoder now refuses it too (csrc/core/header.c).
    (
        "bloom_header",
        bytes.fromhex("001580101c1c00001c1c00001c1c00801c4051515151747474741aff00001c1c40"),
    ),
    # footer: an unknown i16 field whose varint takes 4 bytes (minimised from a 2 KB
    # input): the C decoder refuses it, the pure-Python fallback reads it (see below).
    ("footer", PYTHON_LENIENT_I16),
    # footer: a 10-byte i64 varint carrying bits past bit 63 (minimised, see above): both
    # decoders accepted it and decoded different numbers.
    ("footer", WIDE_I64_FOOTER),
    ("footer", WIDE_I32_FOOTER),
    # reader: raw bytes written over a footer's column chunk (path_in_schema lost). The
    # footer decodes its column chunks on first use, so the error came from
    # footer_and_filters, not from reading the footer; pruning keeps the file (unreadable).
    ("reader", bytes.fromhex("303bd10400000804504152313b30d1")),
    # reader: two bytes written over the footer's row-group list left it empty while
    # FileMetaData.num_rows still says 600; pruning gives no verdict (no row group), as
    # for an empty file. The harness expected a verdict.
    ("reader", bytes.fromhex("2f0301a27a847a7a7a7a7a720003b400")),
    # lookup: a size statistic's definition-level histogram of one entry where the column
    # has two levels (in the third base file, as pyarrow 26 writes it); pyarrow's
    # RowGroupMetaData.column aborted the process. test_hostile_footers.py replays the
    # same damage on a file of its own, whatever pyarrow writes.
    ("lookup", bytes.fromhex("0201bd001602be0000")),
    # c_header: a valid header announcing 2^27 bytes, after unknown fields; its encoding
    # is 19 bytes, where the harness (and the C header's comment) said 18 at most.
    (
        "c_header",
        bytes.fromhex(
            "081580101c1c20001c1c00001c1c002001010101010101010101010101010101010101010181"
            "011580808080808080808000011501001580808080808080808000010015401c1c0000010101"
            "010101010101800001150100158080808001010101010101010101010101010000030101010101"
            "010100"
        ),
    ),
    # footer_scan: a footer with an unknown field of compact type 13 (a UUID, which thrift
    # 0.25 skips as 16 bytes; the fuzzer's input had one among the bytes after a key/value
    # entry): the C footer scanner refused it as malformed where the decoder accepted it.
    ("footer_scan", bytes.fromhex("1504191c4801721500001600190c0d28" + "00" * 16 + "00")),
    # page_header: an unknown field's structure holding an empty list of element type 14
    # (none such in thrift; minimised from the fuzzer's 160 bytes): thrift's decoders
    # refuse it, the compact reader the page header decoder shares with the footer scanner
    # accepted it (csrc/footer/compact.h now refuses it, as csrc/core/header.c did; the
    # footer scanner's case is in tests/unit/parquet/test_scan.py).
    ("page_header", bytes.fromhex("1504" + "8c190e00" + "00")),
]


@pytest.mark.parametrize(
    ("target", "data"), CRASHES, ids=[f"{t}-{i}" for i, (t, _) in enumerate(CRASHES)]
)
def test_crash_inputs_replay_cleanly(target: str, data: bytes) -> None:
    """The target function (properties included) accepts the input that once failed it.

    C targets are replayed through the same C functions via cffi: the decode, and the
    properties their harness checks.
    """
    spec = targets.TARGETS[target]
    if spec.kind == "python":
        spec.run(data)
        return
    from pybloom_async._native import ffi, lib

    limit = 2**64 - 1  # what the harness's first byte (8) picks
    header_len, num_bytes = decode_header(data[1:], max_bytes=limit)
    assert decode_header(data[1 : 1 + header_len], max_bytes=limit) == (header_len, num_bytes)
    out = ffi.new("uint8_t[32]")
    n = lib.pba_bloom_header_encode(num_bytes, out)
    assert 15 <= n <= 19
    assert decode_header(bytes(ffi.buffer(out, n)), max_bytes=limit) == (n, num_bytes)


# --------------------------------------------------------------------------- fixed behaviour


@pytest.mark.parametrize("limit", [2**64 - 1, 2**64, 2**70, 10**30])
def test_limits_beyond_64_bits_are_applied(limit: int) -> None:
    # Found by bloom_header: the limit went to C unclamped.
    assert decode_header(HEADER_1024, max_bytes=limit) == (16, 1024)
    blob = HEADER_1024 + bytes(1024)
    assert SplitBlockBloomFilter.from_bytes(blob, max_bytes=limit).num_bytes == 1024
    assert optimal_num_bytes(10**6, 0.01, max_bytes=limit) == 1 << 21


@pytest.mark.parametrize("size", [2**64 + 1, 2**70 + 3, -(2**70)])
def test_sizes_beyond_64_bits_are_refused_as_sizes(size: int) -> None:
    # Same class of bug as above, in the size check: now FilterSizeError, not OverflowError.
    with pytest.raises(FilterSizeError):
        SplitBlockBloomFilter(size)


def test_powers_of_two_beyond_64_bits_are_too_large() -> None:
    with pytest.raises(FilterTooLargeError, match="above the limit"):
        SplitBlockBloomFilter(2**70)


def test_header_with_negative_field_ids_after_an_unknown_struct() -> None:
    data = CRASHES[1][1][1:]
    assert decode_header(data) == (39, 1024)


def test_both_footer_decoders_skip_negative_field_ids() -> None:
    # Found through bloom_header's reference decoder (thrift's readStruct indexes its spec
    # tuple with the field id). Field -1 of this FileMetaData is an empty struct: both
    # decoders must skip it, not read it as encryption_algorithm (field 8, the last).
    data = targets.NEGATIVE_FIELD_ID_FOOTER
    outcomes = []
    for decoder in ("fastbinary", "python"):
        try:
            meta = decode_file_metadata_with(data, "x.parquet", decoder)
        except ParquetFormatError as exc:
            outcomes.append(type(exc).__name__)
        else:
            outcomes.append(f"ok, {len(meta.row_groups)} row groups")
    assert outcomes == ["ok, 0 row groups", "ok, 0 row groups"]


def test_empty_container_of_an_unknown_type_is_malformed() -> None:
    data = CRASHES[2][1][1:]
    with pytest.raises(InvalidFilterError, match="malformed"):
        decode_header(data)


def test_python_footer_decoder_refuses_overlong_i16_varints() -> None:
    for decoder in ("fastbinary", "python"):
        with pytest.raises(ParquetFormatError):
            decode_file_metadata_with(PYTHON_LENIENT_I16, "x.parquet", decoder)


def test_both_footer_decoders_read_wide_varints_alike() -> None:
    for decoder in ("fastbinary", "python"):
        assert decode_file_metadata_with(WIDE_I64_FOOTER, "x.parquet", decoder).num_rows == (
            0x3FFFFFFFFFFFFFE7
        )
        assert decode_file_metadata_with(WIDE_I32_FOOTER, "x.parquet", decoder).version == 0
    eleven_bytes = WIDE_I64_FOOTER.replace(bytes.fromhex("ff26"), bytes.fromhex("ffff01"))
    for decoder in ("fastbinary", "python"):
        with pytest.raises(ParquetFormatError):
            decode_file_metadata_with(eleven_bytes, "x.parquet", decoder)


def test_largest_headers_are_19_bytes() -> None:
    # Found by c_header: the header comment (and the harness) said 18 at most; numBytes
    # of 2^27 (the default limit) and up take a 5-byte varint.
    from pybloom_async._native import ffi, lib

    out = ffi.new("uint8_t[32]")
    for num_bytes, length in [(32, 15), (1 << 26, 18), (1 << 27, 19), (1 << 30, 19)]:
        n = lib.pba_bloom_header_encode(num_bytes, out)
        assert n == length
        assert decode_header(bytes(ffi.buffer(out, n)), max_bytes=1 << 30) == (n, num_bytes)
