"""The segment layout: round trip, CRCs, and damaged or foreign bytes refused."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pybloom_async.errors import ParquetFormatError
from pybloom_async.lake.format import (
    FORMAT_VERSION,
    MAGIC,
    TRAILER,
    DigestRecords,
    LakeColumn,
    LakeFile,
    Segment,
    decode_directory,
    decode_trailer,
    digest_record,
    encode_segment,
    record_metadata,
    stripe_crc_ok,
)
from pybloom_async.parquet import ColumnDescriptor
from pybloom_async.parquet.logical import LogicalType
from pybloom_async.types import PhysicalType

FILES = [
    LakeFile("a/x.parquet", 10, "e1", None, 5),
    LakeFile("y.parquet", 20, None, 123, None, 2**40 + 3, 1_700_000_000_123_456_789),
]


def _segment() -> tuple[bytes, LakeColumn]:
    desc = ColumnDescriptor(
        index=0,
        path_parts=("user", "id"),
        physical_type=PhysicalType.FIXED_LEN_BYTE_ARRAY,
        type_length=16,
        max_repetition_level=0,
        logical_type=LogicalType.decimal(30, 2),
    )
    col = LakeColumn(desc, 4, 100, 0.01, 0, frozenset({1}), frozenset({0}))
    bits = bytes(range(256)) * 1  # 4 blocks x 2 files x 32 bytes
    return encode_segment(FILES, [(col, bits)]), col


def _directory(data: bytes) -> tuple[int, bytes, int]:
    offset, length, crc = decode_trailer(data[-1000:], len(data), "seg")
    return offset, data[offset : offset + length], crc


def test_round_trip() -> None:
    data, col = _segment()
    offset, packed, crc = _directory(data)
    seg = decode_directory(packed, crc, offset, "seg")
    assert seg.files == tuple(FILES)
    (got,) = seg.columns
    assert got.descriptor.path == "user.id"
    assert got.descriptor.logical_type == col.descriptor.logical_type
    assert got.descriptor.type_length == 16
    assert (got.num_blocks, got.ndv, got.fpp, got.uncovered, got.folded) == (
        4, 100, 0.01, frozenset({1}), frozenset({0})
    )  # fmt: skip
    start, end = got.stripe_range(2, 2)
    assert data[start : end - 4] == bytes(range(128, 192))
    assert stripe_crc_ok(data[start:end])


def _with_directory(
    data: bytes, change: Callable[[dict[str, Any]], None], version: int = 1
) -> bytes:
    """The segment with its directory's JSON changed (CRC and trailer made good)."""
    offset, packed, _ = _directory(data)
    doc = json.loads(zlib.decompress(packed))
    change(doc)
    packed = zlib.compress(json.dumps(doc).encode())
    trailer = TRAILER.pack(offset, len(packed), zlib.crc32(packed), version, 0, MAGIC)
    return data[:offset] + packed + trailer


def _decoded(data: bytes) -> Segment:
    offset, packed, crc = _directory(data)
    return decode_directory(packed, crc, offset, "seg")


def test_local_versions_are_a_key_of_their_own() -> None:
    """Inode and change time sit beside ``files``: older readers read ``files`` unchanged."""
    data, _ = _segment()
    packed = _directory(data)[1]
    doc = json.loads(zlib.decompress(packed))
    assert all(len(entry) == 5 for entry in doc["files"])
    assert doc["local_files"] == [None, [2**40 + 3, 1_700_000_000_123_456_789]]
    # A directory written before the key: no file has a local version.
    older = _decoded(_with_directory(data, lambda d: d.pop("local_files")))
    assert [(f.inode, f.ctime_ns) for f in older.files] == [(None, None), (None, None)]
    assert [f[:5] for f in older.files] == [f[:5] for f in FILES]
    # Objects only: no key written.
    stores = encode_segment([FILES[0]], [])
    assert "local_files" not in json.loads(zlib.decompress(_directory(stores)[1]))


@pytest.mark.parametrize(
    "bad", [[None], "x", [None, [1]], [None, [1, -2]], [None, ["1", 2]], [None, None, None]]
)
def test_malformed_local_versions_are_refused(bad: Any) -> None:
    data, _ = _segment()
    with pytest.raises(ParquetFormatError, match="malformed"):
        _decoded(_with_directory(data, lambda d: d.update(local_files=bad)))


def test_a_flipped_bit_in_a_stripe_fails_its_crc() -> None:
    data, _ = _segment()
    offset, packed, crc = _directory(data)
    start, end = decode_directory(packed, crc, offset, "seg").columns[0].stripe_range(1, 2)
    damaged = bytearray(data[start:end])
    damaged[5] ^= 0x10
    assert not stripe_crc_ok(bytes(damaged))


def test_a_damaged_directory_is_refused() -> None:
    data, _ = _segment()
    offset, packed, crc = _directory(data)
    with pytest.raises(ParquetFormatError, match="CRC"):
        decode_directory(packed[:-1] + bytes([packed[-1] ^ 1]), crc, offset, "seg")
    bad = zlib.compress(b'{"format": "pybloom-async lake index", "version": 1}')
    with pytest.raises(ParquetFormatError, match="malformed"):
        decode_directory(bad, zlib.crc32(bad), offset, "seg")


def test_foreign_or_truncated_bytes_are_refused() -> None:
    data, _ = _segment()
    with pytest.raises(ParquetFormatError, match="magic"):
        decode_trailer(data[:-1] + b"X", len(data), "seg")
    with pytest.raises(ParquetFormatError, match="too short"):
        decode_trailer(b"abc", 3, "seg")
    with pytest.raises(ParquetFormatError, match="offsets"):
        decode_trailer(data[-TRAILER.size :], len(data) + 1, "seg")


def test_a_directory_above_the_cap_is_refused_before_it_is_read() -> None:
    from pybloom_async.lake.format import MAX_DIRECTORY_BYTES

    length = MAX_DIRECTORY_BYTES + 1
    trailer = TRAILER.pack(8, length, 0, 1, 0, MAGIC)
    with pytest.raises(ParquetFormatError, match="above the limit"):
        decode_trailer(trailer, 8 + length + TRAILER.size, "seg")


def _with_digest() -> bytes:
    desc = ColumnDescriptor(0, ("id",), PhysicalType.INT64, None, 0, None)
    col = LakeColumn(desc, 1, 10, 0.01, 0, frozenset(), frozenset())
    records = [digest_record(b"footer of a"), digest_record(b"footer of b")]
    digest = DigestRecords([(records[0], 0), None], [records[1]])
    return encode_segment(FILES, [(col, bytes(64))], digest=digest)


def test_the_digest_lies_between_the_sections_and_the_directory() -> None:
    data = _with_digest()
    seg = _decoded(data)
    assert seg.digest is not None
    (first, none), (schema,) = seg.digest.files, seg.digest.schemas
    assert none is None and seg.digest.schema_of == (0, None)
    assert first[0] == 8 + 2 * 32 + 4 and first[1] == schema[0]
    assert schema[1] == decode_trailer(data, len(data), "seg")[0]
    assert record_metadata(data[first[0] : first[1]], "seg") == b"footer of a"
    assert record_metadata(data[schema[0] : schema[1]], "seg") == b"footer of b"
    damaged = bytearray(data[first[0] : first[1]])
    damaged[2] ^= 0x08
    with pytest.raises(ParquetFormatError, match="CRC"):
        record_metadata(bytes(damaged), "seg")
    for bad in ([[10, 1], None], [[2, 0], None], [None], "x"):
        with pytest.raises(ParquetFormatError, match="malformed"):
            _decoded(_with_directory(data, lambda d, b=bad: d["digest"].update(files=b), 2))


def test_a_segment_of_format_version_1_is_read() -> None:
    """Written by the builder before the digest (three files f0..f2 of 10 ids): read with no
    digest, so its files' footers are read."""
    data = (Path(__file__).parent / "data" / "segment-v1.pbl").read_bytes()
    assert decode_trailer(data, len(data), "seg")[0] == 8 + 3 * 32 + 4
    seg = _decoded(data)
    assert seg.digest is None
    assert [f.name for f in seg.files] == ["f0.parquet", "f1.parquet", "f2.parquet"]
    assert [c.path for c in seg.columns] == ["id"]
    assert FORMAT_VERSION == 2
