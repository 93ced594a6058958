"""The C chunk reader's own calls: page decompression (snappy read in C, the other codecs
from their libraries) against pyarrow's compression, and the reader's argument checks.
Its rows are compared with pyarrow's in test_take.py and test_keyed.py."""

from __future__ import annotations

import io
import os
from typing import Any

import numpy as np
import pytest
from support.wire import varint

from pybloom_async._native import ffi, lib
from pybloom_async.rows.chunk import Chunk, Chunks, codec_available


def _open(
    data: memoryview, codec: int, width: int, optional: bool, num_rows: int, limit: int
) -> Chunk | None:
    """One chunk's reader, opened (None: not read here)."""
    return Chunk.of(Chunks.open([(data, codec, num_rows, limit)], width, optional))


pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

CODECS = {1: "snappy", 2: "gzip", 4: "brotli", 6: "zstd", 7: "lz4_raw"}


def _decompress(codec: int, src: bytes, size: int) -> tuple[int, bytes]:
    out = bytearray(size)
    status = lib.pba_decompress(codec, src, len(src), ffi.from_buffer(out), size)
    return int(status), bytes(out)


def _samples() -> list[bytes]:
    rng = np.random.default_rng(3)
    words = [b"hello", b"world", b"x" * 70, os.urandom(20)]
    return [
        b"",
        b"a",
        os.urandom(1000),
        b"abc" * 10_000,
        bytes(100_000),
        np.arange(50_000, dtype=np.int64).tobytes(),
        b"".join(words[i] for i in rng.integers(0, 4, 20_000)),
    ]


@pytest.mark.parametrize("codec", sorted(CODECS), ids=list(CODECS.values()))
def test_pages_decompress_as_pyarrow_compressed_them(codec: int) -> None:
    if not codec_available(codec):
        pytest.skip(f"{CODECS[codec]} is not built in (its library was not found at build)")
    for data in _samples():
        packed = pa.compress(data, codec=CODECS[codec], asbytes=True)
        assert _decompress(codec, packed, len(data)) == (0, data)
        # Any other size is refused: a page is exactly its header's size.
        assert _decompress(codec, packed, len(data) + 1)[0] == lib.PBA_CHUNK_ERR_CORRUPT
        if data:
            assert _decompress(codec, packed, len(data) - 1)[0] == lib.PBA_CHUNK_ERR_CORRUPT
            assert _decompress(codec, packed[: len(packed) // 2], len(data))[0] != 0


def test_snappy_is_always_built_in_and_damaged_blocks_are_refused() -> None:
    assert codec_available(0) and codec_available(1)
    assert not codec_available(5) and not codec_available(3)  # Hadoop's LZ4, LZO
    corrupt = lib.PBA_CHUNK_ERR_CORRUPT
    # The declared length (a varint), then tags: a literal (tag 0: length - 1 << 2).
    assert _decompress(1, b"\x03\x08abc", 3) == (0, b"abc")
    assert _decompress(1, b"\x03\x08abc", 4)[0] == corrupt  # declares 3
    assert _decompress(1, b"\x03\x08ab", 3)[0] == corrupt  # the literal past the input
    assert _decompress(1, b"\x03\x08abcd", 3)[0] == corrupt  # trailing bytes
    # A copy (tag 1: length 4-11, 11-bit offset) of the literal's bytes, overlapping.
    assert _decompress(1, b"\x07\x08abc\x01\x03", 7) == (0, b"abcabca")
    assert _decompress(1, b"\x07\x08abc\x01\x04", 7)[0] == corrupt  # before the output
    assert _decompress(1, b"\x07\x08abc\x01\x00", 7)[0] == corrupt  # offset zero
    assert _decompress(1, b"\x07\x08abc\x01", 7)[0] == corrupt  # offset cut off
    assert _decompress(1, b"\xff\xff\xff\xff\xff\x01", 1)[0] == corrupt  # varint too long
    assert _decompress(9, b"", 0)[0] == lib.PBA_CHUNK_ERR_CODEC


def _literal(data: bytes) -> bytes:
    assert 1 <= len(data) <= 60
    return bytes([(len(data) - 1) << 2]) + data


@pytest.mark.parametrize("tail", [0, 40], ids=["at-the-end", "before-more"])
def test_snappy_copies_of_every_length_and_offset(tail: int) -> None:
    """Each copy of 1-64 bytes from 1-80 back (runs, patterns, blocks copied whole) after an
    80-byte literal, at the output's end or before more bytes: as the format defines it."""
    rng = np.random.default_rng(5)
    head = rng.integers(0, 256, 80, dtype=np.uint8).tobytes()
    more = rng.integers(0, 256, tail, dtype=np.uint8).tobytes()
    for length in range(1, 65):
        for offset in range(1, 81):
            out = bytearray(head)
            for _ in range(length):
                out.append(out[-offset])
            out += more
            copy = bytes([((length - 1) << 2) | 2]) + offset.to_bytes(2, "little")
            block = _literal(head[:60]) + _literal(head[60:]) + copy
            block += _literal(more) if more else b""
            got = _decompress(1, varint(len(out)) + block, len(out))
            assert got == (0, bytes(out)), (length, offset)


def _file(**options: Any) -> tuple[bytes, Any]:
    sink = io.BytesIO()
    pq.write_table(pa.table({"v": pa.array(range(100), pa.int64())}), sink, **options)
    data = sink.getvalue()
    return data, pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0).column(0)


def test_the_reader_checks_its_arguments() -> None:
    data, meta = _file(compression="snappy")
    start = meta.dictionary_page_offset or meta.data_page_offset
    pages = memoryview(data)[start : start + meta.total_compressed_size]
    limit = meta.total_uncompressed_size
    chunk = _open(pages, 1, 8, True, 100, limit)
    assert chunk is not None
    valid, values, offsets = chunk.take(np.array([0, 50, 99])) or (None, None, None)
    assert valid is not None and offsets is None
    assert valid.tolist() == [1, 1, 1] and values.view(np.int64).tolist() == [0, 50, 99]
    assert chunk.take(np.array([3, 3])) is None  # not strictly ascending
    assert chunk.take(np.array([100])) is None  # past the row group
    assert chunk.take(np.array([-1])) is None
    assert chunk.pages_read == 1
    # A codec not built in, a width not read, too many rows, the wrong row count.
    assert _open(pages, 5, 8, True, 100, limit) is None
    assert _open(pages, 1, 8, True, 1 << 31, limit) is None
    assert _open(pages, 1, 8, True, 101, limit) is None  # pages short of the rows
    spec = ffi.new("pba_chunk *")
    spec.data, spec.len, spec.codec = ffi.from_buffer("uint8_t[]", pages), len(pages), 1
    spec.width, spec.optional, spec.num_rows, spec.limit = 3, 1, 100, limit
    out = ffi.new("pba_chunk_reader **")
    assert lib.pba_chunk_open(spec, out) == lib.PBA_CHUNK_ERR_ARG and out[0] == ffi.NULL
    # Pages that decompress to more than the footer's size of the chunk are refused.
    assert _open(pages, 1, 8, True, 100, 16) is not None
    small = _open(pages, 1, 8, True, 100, 16)
    assert small is not None and small.take(np.array([0])) is None
    assert lib.pba_chunk_gather(ffi.NULL, ffi.NULL, 0) == lib.PBA_CHUNK_ERR_ARG


#: The strings of _strings: NULLs, empty strings and others.
STRINGS = [None if i % 4 == 0 else f"s{i}" * (i % 3) for i in range(50)]


def _strings(compression: str) -> tuple[memoryview, Any]:
    """A chunk of STRINGS as stored (its pages' bytes) and its footer metadata."""
    sink = io.BytesIO()
    pq.write_table(pa.table({"s": pa.array(STRINGS)}), sink, compression=compression)
    data = sink.getvalue()
    meta = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0).column(0)
    start = meta.dictionary_page_offset or meta.data_page_offset
    return memoryview(data)[start : start + meta.total_compressed_size], meta


def test_byte_arrays_are_gathered_exactly() -> None:
    values = STRINGS
    pages, meta = _strings("none")
    chunk = _open(pages, 0, 0, True, 50, meta.total_uncompressed_size)
    assert chunk is not None
    rows = np.array([0, 1, 2, 5, 49])
    taken = chunk.take(rows)
    assert taken is not None
    valid, raw, offsets = taken
    got = [
        bytes(raw[offsets[i] : offsets[i + 1]]).decode() if valid[i] else None
        for i in range(len(rows))
    ]
    assert got == [values[r] for r in rows]


def test_many_chunks_are_taken_in_one_call_and_check_their_arguments() -> None:
    data, meta = _file(compression="snappy")
    start = meta.dictionary_page_offset or meta.data_page_offset
    pages = memoryview(data)[start : start + meta.total_compressed_size]
    source = ffi.from_buffer("uint8_t[]", pages)
    chunks = ffi.new("pba_chunk[]", 2)
    for spec in chunks:
        spec.data, spec.len, spec.codec = source, len(pages), 1
        spec.width, spec.optional, spec.num_rows = 8, 1, 100
        spec.limit = meta.total_uncompressed_size
    rows = np.array([3, 50, 99, 0, 7], dtype=np.int64)  # three of one chunk, two of the other
    counts = np.array([3, 2], dtype=np.uint64)
    valid = np.empty(5, dtype=np.uint8)
    values = np.empty(40, dtype=np.uint8)
    readers = ffi.new("pba_chunk_reader *[]", 2)
    failed = ffi.new("size_t *")

    def call(chunks: Any = chunks, counts: Any = counts, failed: Any = failed) -> int:
        try:
            return int(
                lib.pba_chunks_take(
                    chunks,
                    2,
                    ffi.from_buffer("int64_t[]", rows),
                    ffi.NULL if counts is None else ffi.from_buffer("uint64_t[]", counts),
                    ffi.from_buffer("uint8_t[]", valid),
                    ffi.from_buffer("uint8_t[]", values),
                    ffi.NULL,
                    readers,
                    failed,
                )
            )
        finally:
            lib.pba_chunks_close(readers, 2)
            assert readers[0] == ffi.NULL and readers[1] == ffi.NULL

    assert call() == 0
    assert valid.tolist() == [1] * 5 and values.view(np.int64).tolist() == [3, 50, 99, 0, 7]
    # The second chunk's rows not ascending: its status, and which chunk failed.
    rows[3:] = [7, 0]
    assert call() == lib.PBA_CHUNK_ERR_ARG and failed[0] == 1
    rows[3:] = [0, 7]
    assert call(counts=np.array([2, 3], dtype=np.uint64)) == lib.PBA_CHUNK_ERR_ARG  # 99 then 0
    assert call(counts=None) == lib.PBA_CHUNK_ERR_ARG
    assert call(failed=ffi.NULL) == lib.PBA_CHUNK_ERR_ARG
    chunks[1].width = 4  # the chunks of one call are of one column: one width
    assert call() == lib.PBA_CHUNK_ERR_ARG and failed[0] == 1
    chunks[1].width = 8
    # A reader given in (opened by an earlier call) is used, when it reads that chunk.
    given = ffi.new("pba_chunk_reader **")
    assert lib.pba_chunk_open(ffi.addressof(chunks, 0), given) == 0
    chunks[0].num_rows = 99  # the chunk given is not the reader's: refused
    readers[0] = given[0]
    assert call() == lib.PBA_CHUNK_ERR_ARG and failed[0] == 0  # (and closed by call)
    chunks[0].num_rows = 100
    assert lib.pba_chunk_open(ffi.addressof(chunks, 0), given) == 0
    readers[0] = given[0]
    values[:] = 0
    assert call() == 0 and values.view(np.int64).tolist() == [3, 50, 99, 0, 7]
    # Byte arrays: their offsets need room, and the gather exactly the bytes taken.
    assert lib.pba_chunks_gather(ffi.NULL, 1, ffi.NULL, 0) == lib.PBA_CHUNK_ERR_ARG
    assert lib.pba_chunks_gather(readers, 2, ffi.NULL, 0) == lib.PBA_CHUNK_ERR_ARG  # no readers
    lib.pba_chunks_close(ffi.NULL, 2)  # nothing to close


def test_many_byte_array_chunks_are_gathered_exactly() -> None:
    values = STRINGS
    pages, meta = _strings("snappy")
    source = ffi.from_buffer("uint8_t[]", pages)
    picks = [[1, 2, 5], [], [0, 49], [7]]  # one chunk read four times, one pick each
    chunks = ffi.new("pba_chunk[]", len(picks))
    for spec in chunks:
        spec.data, spec.len, spec.codec = source, len(pages), 1
        spec.width, spec.optional, spec.num_rows = 0, 1, 50
        spec.limit = meta.total_uncompressed_size
    rows = np.array([r for pick in picks for r in pick], dtype=np.int64)
    counts = np.array([len(p) for p in picks], dtype=np.uint64)
    valid = np.empty(len(rows), dtype=np.uint8)
    offsets = np.empty(len(rows) + 1, dtype=np.int64)
    readers = ffi.new("pba_chunk_reader *[]", len(picks))
    failed = ffi.new("size_t *")
    try:
        status = lib.pba_chunks_take(
            chunks,
            len(picks),
            ffi.from_buffer("int64_t[]", rows),
            ffi.from_buffer("uint64_t[]", counts),
            ffi.from_buffer("uint8_t[]", valid),
            ffi.NULL,
            ffi.from_buffer("int64_t[]", offsets),
            readers,
            failed,
        )
        assert status == 0
        raw = np.empty(int(offsets[-1]), dtype=np.uint8)
        out = ffi.from_buffer("uint8_t[]", raw)
        assert lib.pba_chunks_gather(readers, len(picks), out, len(raw)) == 0
        if len(raw):  # one byte short, or one more: refused
            assert lib.pba_chunks_gather(readers, len(picks), out, len(raw) - 1) != 0
        assert lib.pba_chunks_gather(readers, len(picks), ffi.NULL, len(raw) + 1) != 0
    finally:
        lib.pba_chunks_close(readers, len(picks))
    got = [
        bytes(raw[offsets[i] : offsets[i + 1]]).decode() if valid[i] else None
        for i in range(len(rows))
    ]
    assert got == [values[r] for r in rows]
