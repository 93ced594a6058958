"""Rows deleted outside a file, applied to rows by their position and their values."""

from __future__ import annotations

import pytest

from pybloom_async.errors import ParquetFormatError
from pybloom_async.tables.deletes import FileDeletes, equality_deletes, position_deletes

np = pytest.importorskip("numpy")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _parquet(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def test_keep_masks_and_positions() -> None:
    positions = np.array([0, 1, 2, 7, 8, 9], dtype=np.int64)  # rows 3..6 not decoded
    keep = np.array([True, False, True, True, True, True, True, True, False])  # 9 rows
    assert FileDeletes(keep=keep).live(positions).tolist() == [1, 0, 1, 1, 0, 1]
    deleted = np.array([2, 9, 100], dtype=np.int64)
    assert FileDeletes(positions=deleted).live(positions).tolist() == [1, 1, 0, 1, 1, 0]
    assert not FileDeletes() and FileDeletes().live(positions).all()


def test_position_delete_files_by_data_file() -> None:
    data = _parquet(pa.table({
        "file_path": ["s3://b/a.parquet", "s3://b/b.parquet", "s3://b/a.parquet"],
        "pos": pa.array([5, 1, 2], pa.int64()),
    }))  # fmt: skip
    found = position_deletes(data, "d.parquet")
    assert {k: v.tolist() for k, v in found.items()} == {
        "s3://b/a.parquet": [2, 5], "s3://b/b.parquet": [1],
    }  # fmt: skip
    with pytest.raises(ParquetFormatError, match="file_path and pos"):
        position_deletes(_parquet(pa.table({"x": [1]})), "d.parquet")
    with pytest.raises(ParquetFormatError, match="cannot be read"):
        position_deletes(b"not parquet", "d.parquet")


def test_equality_deletes_several_columns_and_nulls() -> None:
    ids = pa.field("id", pa.int32(), metadata={b"PARQUET:field_id": b"1"})
    names = pa.field("name", pa.string(), metadata={b"PARQUET:field_id": b"2"})
    data = _parquet(pa.table(
        [pa.array([1, 2, None], pa.int32()), pa.array(["a", None, "c"])],
        schema=pa.schema([ids, names]),
    ))  # fmt: skip
    # Read by field id as the table's types (int64 now: a promoted column).
    deletes = equality_deletes(data, "e.parquet", [(1, "id", pa.int64()), (2, "name", pa.string())])
    rows = {
        "id": pa.chunked_array([pa.array([1, 1, 2, 2, None, None, 3], pa.int64())]),
        "name": pa.chunked_array([pa.array(["a", "b", None, "x", "c", None, "a"])]),
    }
    live = FileDeletes(equality=[deletes]).live(np.arange(7), lambda c: rows[c])
    # (1, a), (2, NULL) and (NULL, c) are deleted: a null equals a null.
    assert live.tolist() == [0, 1, 0, 1, 0, 1, 1]
    with pytest.raises(ParquetFormatError, match="no column"):
        equality_deletes(data, "e.parquet", [(9, "other", pa.int64())])


def test_iceberg_deletion_vectors_decoded_by_pyiceberg() -> None:
    """A Puffin file of ``deletion-vector-v1`` blobs (the Iceberg spec's framing: length,
    magic, a 64-bit Roaring bitmap, CRC), decoded by pyiceberg, by data file."""
    import struct
    import zlib

    pyroaring = pytest.importorskip("pyroaring")
    pytest.importorskip("pyiceberg")
    from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
    from pyiceberg.table.puffin import PuffinFile

    from pybloom_async.lake.puffin import PuffinBlob, encode_puffin
    from pybloom_async.tables.deletes import vector_deletes

    def vector(rows: list[int]) -> bytes:
        high: dict[int, list[int]] = {}
        for r in rows:
            high.setdefault(r >> 32, []).append(r & 0xFFFFFFFF)
        bitmap = struct.pack("<Q", len(high)) + b"".join(
            struct.pack("<I", k) + pyroaring.BitMap(v).serialize() for k, v in sorted(high.items())
        )
        body = bytes([0xD1, 0xD3, 0x39, 0x64]) + bitmap
        return struct.pack(">I", len(body)) + body + struct.pack(">I", zlib.crc32(body))

    blobs = [
        PuffinBlob(
            "deletion-vector-v1",
            (2147483645,),
            1,
            1,
            properties={"referenced-data-file": path, "cardinality": str(len(rows))},
            payload=vector(rows),
        )
        for path, rows in (("s3://b/a.parquet", [3, 70000]), ("s3://b/b.parquet", [0]))
    ]
    data, _, _ = encode_puffin(blobs, {})
    found = vector_deletes(
        data, "dv.puffin", lambda raw: deletion_vectors_from_puffin_file(PuffinFile(raw))
    )
    assert {k: sorted(v.tolist()) for k, v in found.items()} == {
        "s3://b/a.parquet": [3, 70000], "s3://b/b.parquet": [0],
    }  # fmt: skip
    with pytest.raises(ParquetFormatError, match="cannot be decoded"):
        vector_deletes(
            data[:-30] + b"x" * 30,
            "dv.puffin",
            lambda raw: deletion_vectors_from_puffin_file(PuffinFile(raw)),
        )
