"""File-level sidecar indexes (``pybloom_async.index.build``): build, read, prune.

* Layout: index locations; the index file round-trips every supported type, is
  deterministic, and pyarrow and DuckDB read the same fields.
* Zero false negatives: every distinct value present in Spark-written (INT96 included)
  and pyarrow-written files, encoded exactly as pruning encodes probes, is in the index's
  whole-file filter; counts equal the data's; values the in-file filters hold are held by
  the index too; absent values are excluded at about the requested rate.
* Pruning: AND/OR/IN/``<=>`` at file level, then row groups of the files kept (equal to
  ``prune`` on them); ``<=> NULL`` keeps files with nulls and prunes files without.
* Staleness and damage: a rewritten file, or one with the same size and another mtime,
  is kept with ``stale_index``; a missing, damaged, truncated, other-version or oversized
  index keeps the file with ``no_index`` and a reason (``on_error="raise"`` raises).
* Object stores (moto): one request per index, no HEAD after a listing (one per file
  named by URL), verdicts equal to local ones, filters equal to locally built ones.
* Concurrency stays within its bound; the command line's ``index build`` and
  ``prune --use-index``.
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import math
import os
import random
import shutil
import struct
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from support.replacing import HOWS, replace_keeping_time, same_size_files
from support.servers import table_guard_lists
from support.writers import WrittenFiles

from pybloom_async import (
    BloomReader,
    InvalidFilterError,
    ParquetFormatError,
    PhysicalType,
    PredicateError,
    Rule,
    SourceNotFoundError,
    SplitBlockBloomFilter,
    UnsupportedTypeError,
    Verdict,
    col,
    prune_sync,
)
from pybloom_async.apps.cli import main
from pybloom_async.core.hashing import hash_values
from pybloom_async.core.sizes import optimal_num_bytes
from pybloom_async.errors import (
    FilterTooLargeError,
    IndexStaleError,
    InvalidArgumentError,
    SourceError,
)
from pybloom_async.index import build as index_module
from pybloom_async.index import parse as index_parse_module
from pybloom_async.index.build import build_index, build_index_sync
from pybloom_async.index.format import (
    FORMAT_NAME,
    IndexedColumn,
    SidecarIndex,
    encode_index,
    index_location,
    legacy_index_location,
)
from pybloom_async.index.parse import parse_index, read_index, read_index_data
from pybloom_async.index.prune import prune_with_index, prune_with_index_sync
from pybloom_async.io.base import SourceStats
from pybloom_async.io.sinks import remove_if_present
from pybloom_async.io.store import as_store_options
from pybloom_async.parquet import ColumnDescriptor, LogicalKind, LogicalType, TimeUnit
from pybloom_async.read.fetch import ReaderConfig
from pybloom_async.tasks import loops
from pybloom_async.values import NeverPrunes, Probe, encode_value

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pc = pytest.importorskip("pyarrow.compute")


# --------------------------------------------------------------------------- helpers


def key(value: Any) -> tuple[str, Any]:
    """A hashable identity: floats by their bits (0.0 and -0.0 differ)."""
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    return (type(value).__name__, value)


def distinct_values(path: Path, column: str) -> list[Any]:
    """The file's distinct non-null values of a top-level column, as pyarrow reads them."""
    table = pq.ParquetFile(path, arrow_extensions_enabled=True).read(columns=[column])
    found = {key(v): v for v in table.column(0).to_pylist() if v is not None}
    return list(found.values())


def missed_values(entry: IndexedColumn, values: list[Any]) -> list[Any]:
    """Values whose exact encoding (any alternative) is not in the index filter."""
    alternatives: list[bytes] = []
    owners: list[int] = []
    for i, value in enumerate(values):
        encoded = encode_value(value, entry.descriptor)
        if isinstance(encoded, NeverPrunes):
            assert isinstance(value, float) and math.isnan(value), (entry.path, value)
            continue
        assert isinstance(encoded, Probe), (entry.path, value, encoded)
        alternatives.extend(encoded.alternatives)
        owners.extend([i] * len(encoded.alternatives))
    hits = entry.filter.check_hashes(hash_values(alternatives, PhysicalType.BYTE_ARRAY))
    found = np.zeros(len(values), dtype=np.bool_)
    np.logical_or.at(found, np.asarray(owners, dtype=np.intp), hits)
    return [
        v
        for i, v in enumerate(values)
        if not found[i] and not (isinstance(v, float) and math.isnan(v))
    ]


def read_local_index(path: Path) -> SidecarIndex:
    return anyio.run(lambda: read_index(str(path)))


def copy_files(written: WrittenFiles, dest: Path) -> list[Path]:
    """Copies (mtime kept) so that indexes are written next to files this module owns."""
    out = []
    for path in written.files:
        target = dest / path.relative_to(written.root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
        out.append(target)
    return out


def write_lake(root: Path, files: int = 3, rows: int = 400, nulls: bool = True) -> list[Path]:
    """Files with disjoint ``id`` ranges, ``email`` (nulls in the odd files) and ``score``."""
    root.mkdir(parents=True, exist_ok=True)
    paths = []
    for f in range(files):
        ids = list(range(f * rows, (f + 1) * rows))
        emails = [
            None if nulls and f % 2 == 1 and i % 10 == 0 else f"user{i}@example.org" for i in ids
        ]
        table = pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "email": pa.array(emails, pa.string()),
                "score": pa.array([i / 8 for i in ids], pa.float64()),
                "flag": pa.array([i % 2 == 0 for i in ids]),
            }
        )
        path = root / f"part-{f}.parquet"
        pq.write_table(table, path, row_group_size=rows // 4, bloom_filter_options={"id": True})
        paths.append(path)
    return paths


def file_verdicts(verdicts: list[Verdict]) -> dict[str, Verdict]:
    return {Path(v.file).name: v for v in verdicts}


# --------------------------------------------------------------------------- locations


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ("d/x.parquet", os.path.join("d", "_bloom_index", "x.parquet.index.v1.pbi")),
        ("x.parquet", os.path.join("_bloom_index", "x.parquet.index.v1.pbi")),
        ("s3://b/t/p=1/x.parquet", "s3://b/t/p=1/_bloom_index/x.parquet.index.v1.pbi"),
        ("s3://b/x.parquet", "s3://b/_bloom_index/x.parquet.index.v1.pbi"),
        ("file:///d/x.parquet", "file:///d/_bloom_index/x.parquet.index.v1.pbi"),
    ],
)
def test_index_location(data: str, expected: str) -> None:
    """Not a ``.parquet`` name: globs such as ``lake/**/*.parquet`` would read it as data."""
    assert index_location(data) == expected
    assert legacy_index_location(data) == expected.removesuffix(".pbi") + ".parquet"


@pytest.mark.parametrize("bad", ["d/", "s3://b/", "s3://b", "s3://", ""])
def test_index_location_refuses_non_files(bad: str) -> None:
    with pytest.raises(InvalidArgumentError):
        index_location(bad)
    with pytest.raises(InvalidArgumentError):
        legacy_index_location(bad)


@pytest.mark.parametrize("bad", [5, None, b"d/x.parquet"])
def test_index_location_refuses_what_is_no_path(bad: object) -> None:
    """A number, None or bytes raised Python's own TypeError from os.fspath."""
    for locate in (index_location, legacy_index_location):
        with pytest.raises(InvalidArgumentError, match="data_location must be a path or URL"):
            locate(bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="data_location is empty"):
        index_location("")  # it said: "not a file path: it ends with a separator (file )"


# --------------------------------------------------------------------------- the file format

ROUND_TRIP_TYPES: list[ColumnDescriptor] = [
    ColumnDescriptor.of("INT32", LogicalType.integer(8, True), path="c_byte"),
    ColumnDescriptor.of("INT32", LogicalType.integer(16, False), path="c_ushort"),
    ColumnDescriptor.of("INT64", None, path="c_long"),
    ColumnDescriptor.of("INT64", LogicalType.integer(64, False), path="c_ulong"),
    ColumnDescriptor.of("INT96", None, path="c_ts96"),
    ColumnDescriptor.of("FLOAT", None, path="c_float"),
    ColumnDescriptor.of("DOUBLE", None, path="c_double"),
    ColumnDescriptor.of("BYTE_ARRAY", LogicalType(LogicalKind.STRING), path="s.c_string"),
    ColumnDescriptor.of("BYTE_ARRAY", None, path="c_binary"),
    ColumnDescriptor.of("BYTE_ARRAY", LogicalType(LogicalKind.ENUM), path="c_enum"),
    ColumnDescriptor.of("BYTE_ARRAY", LogicalType(LogicalKind.JSON), path="c_json"),
    ColumnDescriptor.of(
        "FIXED_LEN_BYTE_ARRAY", LogicalType(LogicalKind.UUID), type_length=16, path="c_uuid"
    ),
    ColumnDescriptor.of(
        "FIXED_LEN_BYTE_ARRAY", LogicalType(LogicalKind.FLOAT16), type_length=2, path="c_half"
    ),
    ColumnDescriptor.of(
        "FIXED_LEN_BYTE_ARRAY", LogicalType.decimal(20, 3), type_length=9, path="c_dec20"
    ),
    ColumnDescriptor.of("INT32", LogicalType.decimal(9, 2), path="c_dec9"),
    ColumnDescriptor.of("INT64", LogicalType.decimal(18, 0), path="c_dec18"),
    ColumnDescriptor.of("INT32", LogicalType(LogicalKind.DATE), path="c_date"),
    ColumnDescriptor.of("INT64", LogicalType.timestamp(TimeUnit.MICROS, True), path="c_ts"),
    ColumnDescriptor.of("INT64", LogicalType.timestamp(TimeUnit.NANOS, False), path="c_ts_ns"),
    ColumnDescriptor.of("INT32", LogicalType.time(TimeUnit.MILLIS, True), path="c_time"),
]


def sample_index(descriptors: list[ColumnDescriptor] | None = None, **fields: Any) -> SidecarIndex:
    rng = np.random.default_rng(3)
    columns = []
    for i, desc in enumerate(descriptors or ROUND_TRIP_TYPES):
        bloom = SplitBlockBloomFilter.for_ndv(50 * (i + 1), 0.01)
        bloom.insert_hashes(rng.integers(0, 2**63, 50 * (i + 1), dtype=np.uint64))
        columns.append(
            IndexedColumn(
                descriptor=ColumnDescriptor(
                    index=i,
                    path_parts=desc.path_parts,
                    physical_type=desc.physical_type,
                    type_length=desc.type_length,
                    max_repetition_level=i % 2,
                    logical_type=desc.logical_type,
                ),
                ndv=50 * (i + 1),
                fpp=0.01,
                distinct_count=50 * (i + 1) - 1,
                value_count=1000 + i,
                null_count=-1 if i % 2 else i,
                filter=bloom,
            )
        )
    values: dict[str, Any] = {
        "data_file": "part-00000-ünï.parquet",
        "file_size": 123_456_789_012,
        "file_mtime_ns": 1_700_000_000_123_456_789,
        "file_etag": '"0123abcd"',
        "file_inode": 2**40 + 7,
        "file_ctime_ns": 1_700_000_001_987_654_321,
        "num_rows": 10_000_000_000,
        "num_row_groups": 77,
        "columns": tuple(columns),
    }
    values.update(fields)
    return SidecarIndex(**values)


def test_round_trip_every_type() -> None:
    index = sample_index()
    data = encode_index(index)
    assert data == encode_index(index)  # deterministic
    back = parse_index(data, path="x")
    assert back.created_by.startswith("pybloom-async ")
    assert back == SidecarIndex(**{**index.__dict__, "created_by": back.created_by})
    for mine, theirs in zip(index.columns, back.columns, strict=True):
        assert theirs.descriptor == mine.descriptor
        assert theirs.filter.to_bytes() == mine.filter.to_bytes()


def test_other_readers_see_the_same_fields(tmp_path: Path) -> None:
    index = sample_index(ROUND_TRIP_TYPES[:3])
    path = tmp_path / "i.parquet"
    path.write_bytes(encode_index(index))
    row = pq.read_table(path).to_pylist()[0]
    assert row["format"] == FORMAT_NAME and row["format_version"] == 1
    assert row["data_file"] == index.data_file and row["file_etag"] == index.file_etag
    assert row["num_columns"] == 3
    for i, c in enumerate(index.columns):
        got = row[f"column_{i}"]
        assert got["path"] == c.path and got["ndv"] == c.ndv and got["fpp"] == c.fpp
        assert got["bloom_filter"] == c.filter.to_bytes()
    assert row["column_0"]["logical_type"] == "INTEGER(8,true)"
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    try:
        got = con.execute(
            f"SELECT column_1.path, column_1.bloom_filter, file_mtime_ns FROM '{path}'"
        ).fetchone()
    finally:
        con.close()
    assert got == (index.columns[1].path, index.columns[1].filter.to_bytes(), index.file_mtime_ns)


def rewrite(data: bytes, mutate: Callable[[dict[str, Any]], None], **write: Any) -> bytes:
    """The index re-written by pyarrow after ``mutate`` changed its row (same options)."""
    table = pq.read_table(pa.BufferReader(data))
    row = table.to_pylist()[0]
    mutate(row)
    out = io.BytesIO()
    options = {
        "compression": "none",
        "use_dictionary": False,
        "write_statistics": False,
        "write_page_checksum": True,
        "store_schema": False,
    }
    options.update(write)
    pq.write_table(pa.Table.from_pylist([row], schema=table.schema), out, **options)
    return out.getvalue()


def _flip_bitset_byte(data: bytes) -> bytes:
    blob = sample_index().columns[0].filter.to_bytes()
    at = data.find(blob) + len(blob) - 5
    assert at > len(blob)
    return data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1 :]


def _claim(num_bytes: int) -> Callable[[dict[str, Any]], None]:
    """Replace the first filter by a valid header claiming ``num_bytes`` and 32 bytes."""

    def mutate(row: dict[str, Any]) -> None:
        row["column_0"]["bloom_filter"] = _header_for(num_bytes) + b"\x00" * 32

    return mutate


def _header_for(num_bytes: int) -> bytes:
    """A BloomFilterHeader (thrift compact) claiming ``num_bytes``: built by hand."""
    from thrift.protocol.TCompactProtocol import TCompactProtocol
    from thrift.Thrift import TType
    from thrift.transport.TTransport import TMemoryBuffer

    buf = TMemoryBuffer()
    p = TCompactProtocol(buf)
    p.writeStructBegin("BloomFilterHeader")
    p.writeFieldBegin("numBytes", TType.I32, 1)
    p.writeI32(num_bytes)
    p.writeFieldEnd()
    for fid in (2, 3, 4):  # algorithm BLOCK, hash XXHASH, compression UNCOMPRESSED
        p.writeFieldBegin("u", TType.STRUCT, fid)
        p.writeStructBegin("u")
        p.writeFieldBegin("e", TType.STRUCT, 1)
        p.writeStructBegin("e")
        p.writeFieldStop()
        p.writeStructEnd()
        p.writeFieldEnd()
        p.writeFieldStop()
        p.writeStructEnd()
        p.writeFieldEnd()
    p.writeFieldStop()
    p.writeStructEnd()
    return bytes(buf.getvalue())


def _set(field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(row: dict[str, Any]) -> None:
        row[field] = value

    return mutate


def _nullable(data: bytes) -> bytes:
    table = pq.read_table(pa.BufferReader(data))
    out = io.BytesIO()
    schema = pa.schema([pa.field(f.name, f.type, nullable=True) for f in table.schema])
    pq.write_table(table.cast(schema), out, compression="none", use_dictionary=False,
                   write_page_checksum=True)  # fmt: skip
    return out.getvalue()


GOOD = encode_index(sample_index())
DAMAGED: dict[str, tuple[Callable[[], bytes], type[Exception], str]] = {
    "empty": (lambda: b"", ParquetFormatError, "too small"),
    "garbage": (lambda: os.urandom(3000), ParquetFormatError, "magic"),
    "truncated-tail": (lambda: GOOD[:-10], ParquetFormatError, "magic"),
    "truncated-half": (lambda: GOOD[: len(GOOD) // 2], ParquetFormatError, "magic"),
    "truncated-head": (lambda: GOOD[100:], ParquetFormatError, "leading magic"),
    "flipped-bit": (lambda: _flip_bitset_byte(GOOD), ParquetFormatError, "checksum"),
    "huge-footer-length": (
        lambda: GOOD[:-8] + struct.pack("<I", 0x7FFFFFFF) + b"PAR1",
        ParquetFormatError,
        "footer length",
    ),
    "wrong-version": (
        lambda: encode_index(sample_index(format_version=2)),
        ParquetFormatError,
        "version 2 is not supported",
    ),
    "other-format": (lambda: rewrite(GOOD, _set("format", "x")), ParquetFormatError, "format"),
    "compressed": (
        lambda: rewrite(GOOD, lambda row: None, compression="snappy"),
        ParquetFormatError,
        "compressed",
    ),
    "dictionary": (
        lambda: rewrite(GOOD, lambda row: None, use_dictionary=True),
        ParquetFormatError,
        "dictionary",
    ),
    "no-checksum": (
        lambda: rewrite(GOOD, lambda row: None, write_page_checksum=False),
        ParquetFormatError,
        "checksum",
    ),
    "nullable": (lambda: _nullable(GOOD), ParquetFormatError, "optional"),
    "column-count": (lambda: rewrite(GOOD, _set("num_columns", 3)), ParquetFormatError, "num_"),
    "huge-column-count": (
        lambda: rewrite(GOOD, _set("num_columns", 2**31 - 1)),
        ParquetFormatError,
        "num_columns is 2147483647",
    ),
    "negative-size": (lambda: rewrite(GOOD, _set("file_size", -1)), ParquetFormatError, "below"),
    "short-bitset": (lambda: rewrite(GOOD, _claim(1 << 20)), InvalidFilterError, "truncated"),
    "huge-claimed-filter": (
        lambda: rewrite(GOOD, _claim(1 << 30)),
        FilterTooLargeError,
        "above the limit",
    ),
    "plain-parquet": (lambda: _plain_parquet(), ParquetFormatError, "missing"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGED))
def test_parse_refuses_damage(damage: str) -> None:
    make, error, fragment = DAMAGED[damage]
    with pytest.raises(error, match=fragment):
        parse_index(make(), path="i")


def _leaf_chunks(data: bytes) -> list[tuple[str, int, int]]:
    """Per leaf of an index file: its dotted path, where its chunk starts, its size."""
    meta = pq.ParquetFile(pa.BufferReader(data)).metadata.row_group(0)
    return [
        (c.path_in_schema, c.data_page_offset, c.total_compressed_size)
        for c in (meta.column(i) for i in range(meta.num_columns))
    ]


def test_every_page_is_checked() -> None:
    """A byte changed in any field's page (its last byte: the value) is caught by that
    page's CRC32, whichever field it is."""
    leaves = _leaf_chunks(GOOD)
    assert len(leaves) == 12 + 11 * len(sample_index().columns)
    for leaf, start, size in leaves:
        at = start + size - 1
        damaged = GOOD[:at] + bytes([GOOD[at] ^ 0x01]) + GOOD[at + 1 :]
        with pytest.raises(ParquetFormatError, match="checksum mismatch") as info:
            parse_index(damaged, path="i")
        assert info.value.column == leaf


def _without_field(data: bytes, name: str, inner: str | None = None) -> bytes:
    """The index re-written without a top-level field, or without a field of a struct."""
    table = pq.read_table(pa.BufferReader(data))
    if inner is None:
        table = table.drop_columns([name])
    else:
        i = table.schema.get_field_index(name)
        struct_type = table.schema.field(i).type
        kept = [f for f in struct_type if f.name != inner]
        array = table.column(i).combine_chunks()
        children = [array.field(f.name) for f in kept]
        field = pa.field(name, pa.struct(kept), nullable=False)
        table = table.set_column(i, field, pa.StructArray.from_arrays(children, fields=kept))
    return _write_like_an_index(table)


def _write_like_an_index(table: Any) -> bytes:
    out = io.BytesIO()
    options = dict(compression="none", use_dictionary=False, write_statistics=False)
    pq.write_table(table, out, **options, write_page_checksum=True, store_schema=False)
    return out.getvalue()


@pytest.mark.parametrize(
    ("name", "inner"),
    [
        ("format", None),
        ("format_version", None),
        ("file_etag", None),
        ("num_columns", None),
        ("column_1", "path"),
        ("column_0", "ndv"),
        ("column_2", "bloom_filter"),
    ],
)
def test_every_field_is_required(name: str, inner: str | None) -> None:
    damaged = _without_field(GOOD, name, inner)
    with pytest.raises(ParquetFormatError, match="a field is missing") as info:
        parse_index(damaged, path="i")
    assert info.value.column == (name if inner is None else f"{name}.{inner}")


def test_a_field_of_the_wrong_type_is_refused() -> None:
    table = pq.read_table(pa.BufferReader(GOOD))
    i = table.schema.get_field_index("file_size")
    field = pa.field("file_size", pa.int32(), nullable=False)
    table = table.set_column(i, field, pa.array([5], pa.int32()))
    with pytest.raises(ParquetFormatError, match="field is INT32, expected INT64"):
        parse_index(_write_like_an_index(table), path="i")


def _plain_parquet() -> bytes:
    """Another one-row file of REQUIRED PLAIN columns: readable, but not an index."""
    out = io.BytesIO()
    table = pa.table({"a": pa.array([1])}, schema=pa.schema([pa.field("a", pa.int64(), False)]))
    pq.write_table(table, out, compression="none", use_dictionary=False, write_page_checksum=True)
    return out.getvalue()


# --------------------------------------------------------------------------- building


@pytest.fixture(scope="module")
def pyarrow_indexed(
    pyarrow_files: WrittenFiles, tmp_path_factory: pytest.TempPathFactory
) -> tuple[list[Path], list[str]]:
    """Copies of pyarrow's files, indexed on every column but BOOLEAN."""
    files = copy_files(pyarrow_files, tmp_path_factory.mktemp("pyarrow-indexed"))
    columns = [c for c in pq.ParquetFile(files[0]).schema_arrow.names if c != "c_bool"]
    builds = build_index_sync([str(p) for p in files], columns)
    assert [b.error for b in builds] == [None] * len(files), builds
    assert all(b.columns == tuple(columns) and b.index_bytes for b in builds)
    return files, columns


def test_pyarrow_files_no_false_negatives(pyarrow_indexed: tuple[list[Path], list[str]]) -> None:
    """Every distinct value of every column is in the file's index filter."""
    files, columns = pyarrow_indexed
    checked = 0
    for path in files:
        index = read_local_index(path)
        assert [c.path for c in index.columns] == columns
        meta = pq.ParquetFile(path).metadata
        assert (index.num_rows, index.num_row_groups) == (meta.num_rows, meta.num_row_groups)
        assert index.file_size == path.stat().st_size
        assert index.file_mtime_ns == path.stat().st_mtime_ns and index.file_etag == ""
        for column in columns:
            entry = index.column(column)
            assert entry is not None
            values = distinct_values(path, column)
            assert not missed_values(entry, values), (path.name, column)
            checked += len(values)
    assert checked > 100_000


def test_pyarrow_files_counts(pyarrow_indexed: tuple[list[Path], list[str]]) -> None:
    """Null, value and distinct counts equal the data's; filters sized by the distinct count."""
    files, columns = pyarrow_indexed
    for path in files:
        index = read_local_index(path)
        table = pq.read_table(path)
        for column in columns:
            entry = index.column(column)
            assert entry is not None
            data = table.column(column)
            assert entry.null_count == data.null_count, column
            assert entry.value_count == len(data) - data.null_count, column
            if column in ("id", "c_int64", "c_string", "c_large_string", "c_dec38"):
                assert entry.distinct_count == pc.count_distinct(data).as_py(), column
            assert entry.ndv == entry.distinct_count and entry.fpp == 0.01
            assert entry.filter.num_bytes == optimal_num_bytes(entry.distinct_count, 0.01)


def test_index_holds_what_in_file_filters_hold(
    pyarrow_indexed: tuple[list[Path], list[str]],
) -> None:
    """Per value present: found by its row group's filter => found by the index; and the
    index excludes absent values at about the requested rate."""
    files, _ = pyarrow_indexed
    path = files[0]
    index = read_local_index(path)
    entry = index.column("c_int64")
    assert entry is not None
    rng = random.Random(5)
    absent = [rng.randrange(-(2**63), 2**63) for _ in range(20_000)]
    present = set(distinct_values(path, "c_int64"))
    absent = [v for v in absent if v not in present]
    hits = entry.filter.check_hashes(hash_values(np.array(absent, np.int64), "INT64"))
    rate = float(hits.mean())
    assert rate < 0.02, rate  # sized for 1%: a filter that admits all would fail here
    # In-file filters: every value one of them holds is held by the index.
    filters = anyio.run(lambda: BloomReader(max_files=0).bloom_filters(str(path), ["c_int64"]))
    pf = pq.ParquetFile(path)
    for (rg, _), read in filters.items():
        assert read.ok and read.filter is not None
        values = pf.read_row_group(rg, columns=["c_int64"]).column(0).to_numpy()
        hashes = hash_values(values, "INT64")
        assert read.filter.check_hashes(hashes).all()
        assert entry.filter.check_hashes(hashes).all()


def test_pyarrow_files_prune(pyarrow_indexed: tuple[list[Path], list[str]]) -> None:
    """Present values keep their file (and row group); row-group verdicts equal prune's."""
    files, _ = pyarrow_indexed
    locations = [str(p) for p in files]
    rng = random.Random(11)
    excluded = 0
    columns = ("c_int64", "c_string", "c_dec18", "c_ts_us_utc", "c_uuid", "c_fixed", "c_date")
    for column in columns:
        where = col(column) == rng.choice(distinct_values(files[1], column))
        only = prune_with_index_sync(locations, where, row_groups=False)
        assert only[1].kept and only[1].rule is Rule.MAY_MATCH, (column, only)
        assert only[1].num_rows == 6_000 and only[1].row_group is None
        full = prune_with_index_sync(locations, where)
        kept = [loc for loc, v in zip(locations, only, strict=True) if v.kept]
        by_rows = [v for v in full if v.rule is not Rule.SIDECAR_INDEX]
        assert by_rows == prune_sync(kept, where), column
        if not only[0].kept:  # the value is not in part-0: kept only as a false positive
            assert only[0].rule is Rule.SIDECAR_INDEX and full[0] == only[0]
            excluded += 1
    assert excluded >= len(columns) - 1  # at 1% FPP


@pytest.mark.spark
def test_spark_files_no_false_negatives(
    spark_files: WrittenFiles, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Spark's files, INT96 (dictionary-encoded, no in-file filter) included."""
    files = copy_files(spark_files, tmp_path_factory.mktemp("spark-indexed"))
    checked = 0
    for path in files:
        columns = [c for c in pq.ParquetFile(path).schema_arrow.names if c != "c_bool"]
        (build,) = build_index_sync(str(path), columns)
        assert build.error is None, build
        index = read_local_index(path)
        for column in columns:
            entry = index.column(column)
            assert entry is not None
            values = distinct_values(path, column)
            assert not missed_values(entry, values), (path.name, column)
            checked += len(values)
        if "c_ts96" in columns:
            entry = index.column("c_ts96")
            assert entry is not None and entry.descriptor.physical_type is PhysicalType.INT96
            ts = distinct_values(path, "c_ts96")[7]
            kept = prune_with_index_sync(str(path), col("c_ts96") == ts, row_groups=False)
            assert kept[0].kept and kept[0].rule is Rule.MAY_MATCH
            gone = prune_with_index_sync(
                str(path), col("c_ts96") == ts + dt.timedelta(microseconds=1), row_groups=False
            )
            assert not gone[0].kept and gone[0].rule is Rule.SIDECAR_INDEX
    assert checked > 200_000
    bad = build_index_sync(str(files[0]), ["c_bool"])
    assert bad[0].error is not None and "BOOLEAN" in bad[0].error


# --------------------------------------------------------------------------- build options


def test_build_options(tmp_path: Path) -> None:
    (path,) = write_lake(tmp_path / "lake", files=1)
    (b,) = build_index_sync(str(path), ["id", "email"], ndv={"id": 100_000}, fpp=0.001)
    assert b.error is None
    index = read_local_index(path)
    entry_id, entry_email = index.columns
    assert entry_id.ndv == 100_000 and entry_id.distinct_count == 400
    assert entry_id.filter.num_bytes == optimal_num_bytes(100_000, 0.001)
    assert entry_email.ndv == entry_email.distinct_count == 400
    assert entry_id.fpp == entry_email.fpp == 0.001
    (b,) = build_index_sync(str(path), ["email"], ndv=10)
    assert read_local_index(path).columns[0].filter.num_bytes == optimal_num_bytes(10, 0.01)
    # Nothing but the index itself in the folder: the temporary file was renamed.
    assert os.listdir(path.parent / "_bloom_index") == [Path(b.index).name]
    for bad in (
        {"fpp": 0.0},
        {"fpp": 1.5},
        {"ndv": -1},
        {"ndv": {"id": 1.5}},
        {"concurrency": 0},
        {"max_index_bytes": 0},
    ):
        with pytest.raises(InvalidArgumentError):
            build_index_sync(str(path), ["id"], **bad)
    with pytest.raises(InvalidArgumentError):
        build_index_sync(str(path), [])


def test_build_errors_are_reported(tmp_path: Path) -> None:
    paths = write_lake(tmp_path / "lake", files=2)
    path_str = str(paths[0])
    flag = build_index_sync(path_str, ["id", "flag"])
    assert flag[0].error is not None and "BOOLEAN" in flag[0].error and path_str in flag[0].error
    missing = build_index_sync(path_str, ["nope"])
    assert missing[0].error is not None and "nope" in missing[0].error
    assert not Path(index_location(path_str)).exists()
    with pytest.raises(UnsupportedTypeError, match="BOOLEAN"):
        build_index_sync(path_str, ["flag"], on_error="raise")
    with pytest.raises(PredicateError, match="nope"):
        build_index_sync(path_str, ["nope"], on_error="raise")
    too_big = build_index_sync(path_str, ["id"], max_index_bytes=500)
    assert too_big[0].error is not None and "above the limit" in too_big[0].error
    notparquet = tmp_path / "lake" / "junk.parquet"
    notparquet.write_bytes(b"not parquet at all")
    builds = build_index_sync(str(tmp_path / "lake"), ["id"])
    assert [b.error is None for b in builds] == [False, True, True]  # sorted by path
    assert builds[0].file == str(notparquet) and "Parquet" in str(builds[0].error)


def test_rebuild_is_identical_and_replaces(tmp_path: Path) -> None:
    (path,) = write_lake(tmp_path / "lake", files=1)
    build_index_sync(str(path), ["id"])
    first = Path(index_location(str(path))).read_bytes()
    build_index_sync(str(path), ["id"])
    assert Path(index_location(str(path))).read_bytes() == first
    write_lake(tmp_path / "lake", files=1, rows=800)
    build_index_sync(str(path), ["id"])
    assert read_local_index(path).num_rows == 800


def test_nested_columns(tmp_path: Path) -> None:
    """Struct children count parent nulls as nulls; list elements have no usable null count."""
    path = tmp_path / "nested.parquet"
    struct_type = pa.struct([("x", pa.int64())])
    table = pa.table(
        {
            "s": pa.array([{"x": 1}, None, {"x": None}, {"x": 4}], struct_type),
            "l": pa.array([[1, 2], None, [None], []], pa.list_(pa.int64())),
        }
    )
    pq.write_table(table, path)
    (b,) = build_index_sync(str(path), ["s.x", "l.list.element"])
    assert b.error is None
    sx, le = read_local_index(path).columns
    assert (sx.null_count, sx.value_count, sx.descriptor.max_repetition_level) == (2, 2, 0)
    assert (le.null_count, le.value_count, le.descriptor.max_repetition_level) == (-1, 2, 1)
    assert not missed_values(sx, [1, 4]) and not missed_values(le, [1, 2])
    verdict = prune_with_index_sync(
        str(path), col("l.list.element").eq_null_safe(None), row_groups=False
    )
    assert verdict[0].kept and verdict[0].rule is Rule.NEVER_PRUNES
    verdict = prune_with_index_sync(str(path), col("s.x").eq_null_safe(None), row_groups=False)
    assert verdict[0].kept and verdict[0].rule is Rule.MAY_MATCH


# --------------------------------------------------------------------------- pruning


@pytest.fixture
def lake(tmp_path: Path) -> list[Path]:
    paths = write_lake(tmp_path / "lake", files=3)
    builds = build_index_sync(str(tmp_path / "lake"), ["id", "email", "score"])
    assert [b.error for b in builds] == [None] * 3
    return paths


def decide(paths: list[Path], where: Any, **kw: Any) -> dict[str, Verdict]:
    return file_verdicts(
        prune_with_index_sync([str(p) for p in paths], where, row_groups=False, **kw)
    )


def test_predicates(lake: list[Path]) -> None:
    kept = {name: v.kept for name, v in decide(lake, col("id") == 450).items()}
    assert kept == {"part-0.parquet": False, "part-1.parquet": True, "part-2.parquet": False}
    got = decide(lake, "id IN (5, 900) OR email = 'user501@example.org'")
    assert [v.kept for v in got.values()] == [True, True, True]
    got = decide(lake, "id = 5 AND email = 'user500@example.org'")
    assert [v.kept for v in got.values()] == [False, False, False]
    assert all(v.rule is Rule.SIDECAR_INDEX for v in got.values())
    got = decide(lake, "id = 5 AND email = 'user5@example.org'")
    assert [v.kept for v in got.values()] == [True, False, False]
    # A column the index lacks keeps the file, unless another part of an AND rules it out.
    got = decide(lake, "flag = true")
    assert all(v.kept and v.rule is Rule.NO_INDEX for v in got.values())
    assert "not in the sidecar index" in got["part-0.parquet"].reason
    got = decide(lake, "flag = true AND id = 5")
    assert [v.kept for v in got.values()] == [True, False, False]
    got = decide(lake, "flag = true OR id = 5")
    assert all(v.kept for v in got.values())
    # Values the column cannot hold, NaN and 0.0 / -0.0.
    got = decide(lake, col("id") == 2**70)
    assert not any(v.kept for v in got.values()), got
    with pytest.raises(PredicateError, match=r"'abc' is not a value of this column.*INT64"):
        decide(lake, "id = 'abc'")  # not an integer: an error, not a prune
    got = decide(lake, col("score") == float("nan"))
    assert all(v.kept and v.rule is Rule.NEVER_PRUNES for v in got.values())
    got = decide(lake, col("score") == 50.125)  # id 401
    assert [v.kept for v in got.values()] == [False, True, False]


def test_zero_and_negative_zero(tmp_path: Path) -> None:
    for name, value in (("pos", 0.0), ("neg", -0.0)):
        pq.write_table(pa.table({"x": pa.array([value, 1.5])}), tmp_path / f"{name}.parquet")
    build_index_sync(str(tmp_path), ["x"])
    for probe in (0.0, -0.0):
        got = prune_with_index_sync(str(tmp_path), col("x") == probe, row_groups=False)
        assert [v.kept for v in got] == [True, True], probe


def test_null_safe_equality(lake: list[Path]) -> None:
    """``<=> NULL`` keeps the file with nulls, prunes the files without."""
    got = decide(lake, "email <=> NULL")
    assert {n: v.kept for n, v in got.items()} == {
        "part-0.parquet": False,
        "part-1.parquet": True,
        "part-2.parquet": False,
    }
    with_nulls = got["part-1.parquet"]
    assert with_nulls.rule is Rule.MAY_MATCH and "40 nulls" in with_nulls.reason
    assert got["part-0.parquet"].rule is Rule.SIDECAR_INDEX
    # Plain = NULL and IN (..., NULL) never prune; <=> with a value is =.
    assert all(v.kept for v in decide(lake, "email = NULL").values())
    assert all(v.kept for v in decide(lake, "email IN ('x', NULL)").values())
    got = decide(lake, "email <=> 'user5@example.org'")
    assert [v.kept for v in got.values()] == [True, False, False]
    # Row groups: the null-free files are skipped without being opened.
    full = prune_with_index_sync([str(p) for p in lake], "email <=> NULL")
    assert [v.row_group for v in full if v.file == str(lake[0])] == [None]
    assert [v.row_group for v in full if v.file == str(lake[1])] == [0, 1, 2, 3]


def test_row_groups_of_kept_files(lake: list[Path]) -> None:
    where = "id IN (5, 450)"
    out = prune_with_index_sync([str(p) for p in lake], where)
    assert [(Path(v.file).name, v.row_group) for v in out if v.row_group is None] == [
        ("part-2.parquet", None)
    ]
    expected = prune_sync([str(lake[0]), str(lake[1])], where)
    assert [v for v in out if v.row_group is not None] == expected
    kept = [(Path(v.file).name, v.row_group) for v in out if v.kept]
    assert kept == [("part-0.parquet", 0), ("part-1.parquet", 0)]
    report: list[Verdict] = []
    prune_with_index_sync(str(lake[0].parent), where, index_verdicts=report)
    assert [v.rule for v in report] == [Rule.MAY_MATCH, Rule.MAY_MATCH, Rule.SIDECAR_INDEX]


# --------------------------------------------------------------------------- stale and damaged


def test_stale_index_rewritten_file(lake: list[Path]) -> None:
    pq.write_table(pa.table({"id": pa.array([5, 6], pa.int64())}), lake[2])
    got = decide(lake, col("id") == 5)
    assert got["part-2.parquet"].kept and got["part-2.parquet"].rule is Rule.STALE_INDEX
    assert "size" in got["part-2.parquet"].reason
    assert got["part-1.parquet"].rule is Rule.SIDECAR_INDEX
    # The stale file's row groups are then pruned from its own footer: id 5 is there.
    full = prune_with_index_sync([str(p) for p in lake], col("id") == 5)
    assert [(Path(v.file).name, v.row_group, v.kept) for v in full if v.kept] == [
        ("part-0.parquet", 0, True),
        ("part-2.parquet", 0, True),
    ]
    with pytest.raises(IndexStaleError, match="size"):
        prune_with_index_sync([str(p) for p in lake], col("id") == 5, on_error="raise")


def test_stale_index_same_size_other_mtime(lake: list[Path]) -> None:
    st = lake[0].stat()
    os.utime(lake[0], ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    got = decide(lake, col("id") == 450)
    assert got["part-0.parquet"].kept and got["part-0.parquet"].rule is Rule.STALE_INDEX
    assert "modification time" in got["part-0.parquet"].reason
    # Its time set back: the change time still tells (no call sets it back).
    os.utime(lake[0], ns=(st.st_atime_ns, st.st_mtime_ns))
    got = decide(lake, col("id") == 450)
    assert got["part-0.parquet"].rule is Rule.STALE_INDEX
    assert "change time" in got["part-0.parquet"].reason
    assert got["part-2.parquet"].rule is Rule.SIDECAR_INDEX


def test_a_file_of_no_rows_gets_an_empty_index(tmp_path: Path) -> None:
    """pyarrow's empty decimal and dictionary-encoded columns: no chunk to read, no value."""
    tables = {
        "dec.parquet": pa.table({"c": pa.array([], pa.decimal128(38, 10))}),
        "dict.parquet": pa.table({"c": pa.array([], pa.string()).dictionary_encode()}),
        "wide.parquet": pa.table({"c": pa.array([], pa.decimal256(50, 4))}),
    }
    for name, table in tables.items():
        pq.write_table(table, tmp_path / name)
    builds = build_index_sync(str(tmp_path), ["c"])
    assert [(Path(b.file).name, b.error, b.num_rows) for b in builds] == [
        ("dec.parquet", None, 0),
        ("dict.parquet", None, 0),
        ("wide.parquet", None, 0),
    ]
    for name in tables:
        index = read_local_index(tmp_path / name)
        (column,) = index.columns
        assert (column.value_count, column.null_count, column.distinct_count) == (0, 0, 0)
    got = decide([tmp_path / "dict.parquet"], "c = 'x'")["dict.parquet"]
    assert not got.kept and got.rule is Rule.SIDECAR_INDEX


@pytest.mark.parametrize("how", HOWS)
def test_a_file_replaced_at_the_same_size_and_time_is_stale(tmp_path: Path, how: str) -> None:
    """cp -p, rsync -t and tar x carry the time over: the inode or change time tells."""
    data, new = same_size_files(tmp_path)
    assert build_index_sync(str(data), ["id"])[0].error is None
    replace_keeping_time(data, new, how)
    got = decide([data], col("id") == 1005)["a.parquet"]
    assert got.kept and got.rule is Rule.STALE_INDEX, got
    verdicts = prune_sync(str(data), col("id") == 1005, use_index="sidecar")
    assert [v.kept for v in verdicts] == [True]
    with pytest.raises(IndexStaleError):
        prune_with_index_sync(str(data), col("id") == 1005, on_error="raise")


def test_an_index_without_inode_and_change_time_is_stale_for_a_local_file(tmp_path: Path) -> None:
    """Indexes written before the inode and change time were recorded: never trusted locally."""
    data, _ = same_size_files(tmp_path)
    assert build_index_sync(str(data), ["id"])[0].error is None
    location = Path(index_location(str(data)))
    fresh = parse_index(location.read_bytes())
    assert fresh.file_inode == data.stat().st_ino
    assert fresh.file_ctime_ns == data.stat().st_ctime_ns
    assert decide([data], col("id") == 5000)["a.parquet"].rule is Rule.SIDECAR_INDEX
    older = _without_field(_without_field(location.read_bytes(), "file_inode"), "file_ctime_ns")
    location.write_bytes(older)
    back = parse_index(older)
    assert (back.file_inode, back.file_ctime_ns) == (0, 0)
    assert back == SidecarIndex(**{**fresh.__dict__, "file_inode": 0, "file_ctime_ns": 0})
    got = decide([data], col("id") == 5000)["a.parquet"]
    assert got.kept and got.rule is Rule.STALE_INDEX and "older version" in got.reason


def test_index_of_another_file_is_stale(lake: list[Path]) -> None:
    shutil.copy2(index_location(str(lake[0])), index_location(str(lake[1])))
    got = decide(lake, col("id") == 5)
    assert got["part-1.parquet"].kept and got["part-1.parquet"].rule is Rule.STALE_INDEX
    assert "part-0.parquet" in got["part-1.parquet"].reason


def _to_earlier_name(data_file: Path) -> Path:
    """Move a data file's index to the name earlier versions wrote; its new place."""
    legacy = Path(legacy_index_location(str(data_file)))
    os.replace(index_location(str(data_file)), legacy)
    return legacy


def test_an_index_under_its_earlier_name_is_read(lake: list[Path]) -> None:
    """Indexes written by earlier versions (``.index.v1.parquet``) keep pruning."""
    where = col("id") == 450
    current = decide(lake, where)
    legacy = [_to_earlier_name(p) for p in lake]
    assert not any(Path(index_location(str(p))).exists() for p in lake)
    assert decide(lake, where) == current
    assert [v.rule for v in current.values()] == [
        Rule.SIDECAR_INDEX, Rule.MAY_MATCH, Rule.SIDECAR_INDEX
    ]  # fmt: skip
    assert read_local_index(lake[1]) == parse_index(legacy[1].read_bytes())
    # Neither name: the error names the current one.
    legacy[0].unlink()
    with pytest.raises(SourceNotFoundError, match=r"index\.v1\.pbi"):
        read_local_index(lake[0])
    got = decide(lake, where)["part-0.parquet"]
    assert got.kept and got.rule is Rule.NO_INDEX


def test_the_current_name_wins_over_the_earlier(lake: list[Path]) -> None:
    """Both names: the current one is used, stale or not (the file is then kept)."""
    stale = Path(index_location(str(lake[0]))).read_bytes()
    table = pq.read_table(lake[0])
    pq.write_table(table.slice(0, 10), lake[0])  # ids 0..9: a new version of the file
    assert build_index_sync(str(lake[0]), ["id"])[0].error is None
    fresh = Path(index_location(str(lake[0]))).read_bytes()
    Path(legacy_index_location(str(lake[0]))).write_bytes(fresh)
    Path(index_location(str(lake[0]))).write_bytes(stale)
    got = decide(lake, col("id") == 50)["part-0.parquet"]
    assert got.kept and got.rule is Rule.STALE_INDEX  # the fresh one, under the old name: unused
    Path(index_location(str(lake[0]))).write_bytes(fresh)
    Path(legacy_index_location(str(lake[0]))).write_bytes(stale)
    got = decide(lake, col("id") == 50)["part-0.parquet"]
    assert not got.kept and got.rule is Rule.SIDECAR_INDEX


def test_build_removes_the_index_under_its_earlier_name(lake: list[Path]) -> None:
    """A build writes the new name, then removes the old one; a failed build removes nothing."""
    legacy = [_to_earlier_name(p) for p in lake]
    failed = build_index_sync(str(lake[0]), ["no_such_column"])[0]
    assert failed.error is not None and failed.replaced is None
    assert legacy[0].exists() and not Path(index_location(str(lake[0]))).exists()
    builds = build_index_sync([str(p) for p in lake], ["id"])
    assert [b.replaced for b in builds] == [str(p) for p in legacy]
    assert [b.to_dict()["replaced"] for b in builds] == [str(p) for p in legacy]
    assert not any(p.exists() for p in legacy)
    assert all(Path(b.index).exists() for b in builds)
    again = build_index_sync([str(p) for p in lake], ["id"])
    assert [b.replaced for b in again] == [None] * 3


def test_a_legacy_index_that_cannot_be_removed_is_left_with_a_warning(
    lake: list[Path], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    legacy = _to_earlier_name(lake[0])

    def refuse(location: str, *, options: Any = None) -> bool:
        raise SourceError("removing: permission denied", path=location)

    monkeypatch.setattr(index_module, "remove_if_present", refuse)
    with caplog.at_level("WARNING", logger=index_module.__name__):
        build = build_index_sync(str(lake[0]), ["id"])[0]
    assert build.error is None and build.replaced is None and legacy.exists()
    assert "earlier name remains" in caplog.text and "permission denied" in caplog.text
    # The new index is the one read.
    assert Path(index_location(str(lake[0]))).exists()
    assert decide(lake, col("id") == 450)["part-0.parquet"].rule is Rule.SIDECAR_INDEX


def _on_disk(make: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    def damage(data_file: Path) -> None:
        target = Path(index_location(str(data_file)))
        target.write_bytes(make(target.read_bytes()))

    return damage


def _flip_last_filter_byte(data: bytes) -> bytes:
    at = len(data) - 8 - struct.unpack("<I", data[-8:-4])[0] - 2  # the last bitset's end
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


INDEX_DAMAGE: dict[str, tuple[Callable[[Path], None], type[Exception], str]] = {
    "missing": (
        lambda p: os.unlink(index_location(str(p))),
        SourceNotFoundError,
        "no such file",
    ),
    "flipped-bit": (_on_disk(_flip_last_filter_byte), ParquetFormatError, "checksum"),
    "truncated": (_on_disk(lambda d: d[: len(d) - 100]), ParquetFormatError, "magic"),
    "empty": (_on_disk(lambda d: b""), ParquetFormatError, "too small"),
    "wrong-version": (
        _on_disk(lambda d: rewrite(d, _set("format_version", 2))),
        ParquetFormatError,
        "version 2",
    ),
    "huge-claimed-filter": (
        _on_disk(lambda d: rewrite(d, _claim(1 << 30))),
        FilterTooLargeError,
        "above the limit",
    ),
    "huge-footer-length": (
        _on_disk(lambda d: d[:-8] + struct.pack("<I", 0xFFFFFFF0) + b"PAR1"),
        ParquetFormatError,
        "footer length",
    ),
}


@pytest.mark.parametrize("damage", sorted(INDEX_DAMAGE))
def test_unusable_index_keeps_the_file(lake: list[Path], damage: str) -> None:
    apply, error, fragment = INDEX_DAMAGE[damage]
    apply(lake[0])
    got = decide(lake, col("id") == 450)
    assert got["part-0.parquet"].kept and got["part-0.parquet"].rule is Rule.NO_INDEX
    assert fragment in got["part-0.parquet"].reason
    assert not got["part-2.parquet"].kept  # the others still work
    with pytest.raises(error, match=fragment):
        prune_with_index_sync([str(p) for p in lake], col("id") == 450, on_error="raise")


def test_oversized_index_is_not_read(lake: list[Path]) -> None:
    stats = SourceStats()
    got = decide(lake, col("id") == 450, max_index_bytes=1000, stats=stats)
    assert all(v.kept and v.rule is Rule.NO_INDEX for v in got.values())
    assert "above the limit" in got["part-0.parquet"].reason
    assert stats.bytes_read == 0  # local sizes are known before reading: nothing read


def test_build_of_a_missing_file_is_that_files_error(tmp_path: Path) -> None:
    """A local file named directly that does not exist: its result says so (strict: the
    package's SourceNotFoundError), never the OS's FileNotFoundError."""
    missing = str(tmp_path / "missing.parquet")
    (built,) = build_index_sync([missing], ["id"])
    assert built.index_bytes is None and "no such file" in (built.error or "")
    with pytest.raises(SourceNotFoundError, match=r"missing\.parquet"):
        build_index_sync([missing], ["id"], on_error="raise")


def test_missing_data_file(lake: list[Path]) -> None:
    lake[1].unlink()
    got = decide(lake, col("id") == 450)
    assert got["part-1.parquet"].kept and got["part-1.parquet"].rule is Rule.UNREADABLE
    with pytest.raises(SourceNotFoundError):
        prune_with_index_sync([str(p) for p in lake], col("id") == 450, on_error="raise")


# --------------------------------------------------------------------------- async, concurrency


@pytest.mark.anyio
async def test_async_api(tmp_path: Path) -> None:
    write_lake(tmp_path / "lake", files=2)
    builds = await build_index(str(tmp_path / "lake"), ["id"])
    assert [b.error for b in builds] == [None, None]
    out = await prune_with_index(str(tmp_path / "lake"), col("id") == 450, row_groups=False)
    assert [v.kept for v in out] == [False, True]


def test_concurrency_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_lake(tmp_path / "lake", files=10, rows=40)
    build_index_sync(str(tmp_path / "lake"), ["id"])
    real = index_parse_module.read_index_bytes
    now = peak = 0
    lock = threading.Lock()

    async def counted(*args: Any) -> bytes:
        nonlocal now, peak
        with lock:
            now += 1
            peak = max(peak, now)
        try:
            time.sleep(0.05)  # a local file's index is read in a lane thread: blocking
            return await real(*args)
        finally:
            with lock:
                now -= 1

    monkeypatch.setattr(index_parse_module, "read_index_bytes", counted)
    out = prune_with_index_sync(
        str(tmp_path / "lake"),
        "id = 5",
        concurrency=3,
        row_groups=False,
        config=ReaderConfig(local_threads=8),  # more threads than files: the files bound
    )
    assert len(out) == 10 and peak == 3
    real_file = index_module._hash_file
    active = top = 0

    def counted_build(*args: Any) -> Any:
        nonlocal active, top
        active += 1
        top = max(top, active)
        try:
            return real_file(*args)
        finally:
            active -= 1

    monkeypatch.setattr(index_module, "_hash_file", counted_build)
    builds = build_index_sync(str(tmp_path / "lake"), ["id"], concurrency=1)
    assert len(builds) == 10 and top == 1


@pytest.mark.parametrize("concurrency", [1, 2, 5])
def test_both_passes_share_the_concurrency(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, concurrency: int
) -> None:
    """Files being read in either pass are at most ``concurrency``; the threads, fewer.

    Files the index prunes, keeps, and finds stale (read again by the row-group pass)
    are mixed; the verdicts equal the default run's, in file order, while the blocking
    calls in flight (each a worker thread) are the run's lane threads for local files
    (the concurrency, at most the config's ``local_threads``) in both passes, plus one
    for the listing.
    """
    paths = write_lake(tmp_path / "lake", files=12, rows=40)
    build_index_sync(str(tmp_path / "lake"), ["id"])
    for p in paths[1::3]:  # stale: the same bytes, a later modification time
        st = p.stat()
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    where = "id IN (5, 170, 450)"  # in part-0, part-4 and part-11
    expected = prune_with_index_sync(str(tmp_path / "lake"), where)
    read_again = {Path(v.file).name for v in expected if v.row_group is not None}
    assert {p.name for p in paths[1::3]} <= read_again  # the stale files' own row groups
    assert any(v.rule is Rule.SIDECAR_INDEX for v in expected)
    real = loops.in_thread
    now = peak = 0

    async def counted(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        def slow() -> Any:
            time.sleep(0.002)  # long enough for the others to pile up
            return func(*args)

        nonlocal now, peak
        now += 1
        peak = max(peak, now)
        try:
            return await real(slow, **kwargs)
        finally:
            now -= 1

    got: list[Verdict] = []
    monkeypatch.setattr(loops, "in_thread", counted)
    out = prune_with_index_sync(
        str(tmp_path / "lake"), where, concurrency=concurrency, on_file=got.extend
    )
    assert out == [] and got == expected
    threads = min(concurrency, ReaderConfig().local_threads or 1)
    assert threads <= peak <= threads + 1


# --------------------------------------------------------------------------- object stores


@pytest.mark.servers
def test_object_store(s3_server: Any, tmp_path: Path) -> None:
    """One request per index; no HEAD after a listing; results equal local ones."""
    paths = write_lake(tmp_path / "lake", files=4)
    prefix = f"index-{uuid.uuid4().hex}/"
    for p in paths:
        s3_server.put(prefix + p.name, p.read_bytes())
    url = s3_server.url(prefix)
    options = s3_server.options
    stats = SourceStats()
    builds = build_index_sync(url, ["id", "email"], options=options, stats=stats)
    assert [b.error for b in builds] == [None] * 4
    assert builds[0].index == f"{url}_bloom_index/part-0.parquet.index.v1.pbi"
    assert stats.requests == 4  # each object read whole in one request
    # The same filters as built locally.
    build_index_sync([str(p) for p in paths], ["id", "email"])
    for p, b in zip(paths, builds, strict=True):
        remote = anyio.run(lambda b=b: read_index(b.file, options=options))
        local = read_local_index(p)
        assert remote.file_etag and remote.file_size == local.file_size
        for r, loc in zip(remote.columns, local.columns, strict=True):
            assert r.filter.to_bytes() == loc.filter.to_bytes()
    # Listed: one LIST, one request per index, no HEAD.
    where = "id = 450 OR email <=> NULL"
    stats = SourceStats()
    listed = prune_with_index_sync(url, where, options=options, stats=stats, row_groups=False)
    guard = table_guard_lists(url)  # the LISTs that look for a table above the prefix
    assert (stats.requests, stats.metadata_requests) == (4, 1 + guard)
    local = prune_with_index_sync([str(p) for p in paths], where, row_groups=False)
    assert [(Path(v.file).name, v.kept, v.rule, v.reason, v.num_rows) for v in listed] == [
        (Path(v.file).name, v.kept, v.rule, v.reason, v.num_rows) for v in local
    ]
    assert [v.kept for v in listed] == [False, True, False, True]
    # Named by URL: one HEAD per file for its ETag.
    stats = SourceStats()
    named = prune_with_index_sync(
        [s3_server.url(prefix + p.name) for p in paths], where, options=options, stats=stats,
        row_groups=False,
    )  # fmt: skip
    named_guard = table_guard_lists(s3_server.url(prefix + paths[0].name))
    assert named == listed and (stats.requests, stats.metadata_requests) == (4, 4 + named_guard)
    # Full pruning equals the local answer.
    full = prune_with_index_sync(url, where, options=options)
    local_full = prune_with_index_sync([str(p) for p in paths], where)
    assert [(Path(v.file).name, v.row_group, v.kept) for v in full] == [
        (Path(v.file).name, v.row_group, v.kept) for v in local_full
    ]
    # A replaced object (new ETag) makes its index stale; a missing index keeps the file.
    s3_server.put(prefix + paths[0].name, paths[2].read_bytes())
    s3_server.put(prefix + "part-9.parquet", paths[1].read_bytes())
    stats = SourceStats()
    got = file_verdicts(
        prune_with_index_sync(url, "id = 450", options=options, stats=stats, row_groups=False)
    )
    assert got["part-0.parquet"].rule is Rule.STALE_INDEX
    assert got["part-9.parquet"].rule is Rule.NO_INDEX
    assert got["part-1.parquet"].kept and not got["part-2.parquet"].kept
    # Six GETs; SourceStats counts the four that returned data (not part-9's two 404s, its
    # index under the current name and under the earlier one).
    assert (stats.requests, stats.metadata_requests) == (4, 1 + guard)


@pytest.mark.servers
def test_object_store_index_under_its_earlier_name(s3_server: Any, tmp_path: Path) -> None:
    """On a store too: the earlier name is read, and a build removes it (HEAD, DELETE)."""
    paths = write_lake(tmp_path / "lake", files=2)
    prefix = f"index-legacy-{uuid.uuid4().hex}/"
    for p in paths:
        s3_server.put(prefix + p.name, p.read_bytes())
    url = s3_server.url(prefix)
    options = as_store_options(s3_server.options)
    builds = build_index_sync(url, ["id"], options=options)
    assert [(b.error, b.replaced) for b in builds] == [(None, None)] * 2
    where = "id = 450"
    current = prune_with_index_sync(url, where, options=options, row_groups=False)
    reader = BloomReader(options=options, max_files=0)
    for b in builds:
        location, data = anyio.run(lambda b=b: read_index_data(reader, b.file, 1 << 20))
        assert location == b.index
        legacy = legacy_index_location(b.file)
        s3_server.put(legacy.removeprefix(s3_server.url()), data)
        assert remove_if_present(b.index, options=options)
        assert not remove_if_present(b.index, options=options)
    assert prune_with_index_sync(url, where, options=options, row_groups=False) == current
    again = build_index_sync(url, ["id"], options=options)
    assert [b.replaced for b in again] == [legacy_index_location(b.file) for b in builds]
    assert not any(remove_if_present(str(b.replaced), options=options) for b in again)
    assert prune_with_index_sync(url, where, options=options, row_groups=False) == current


# --------------------------------------------------------------------------- command line


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def test_cli_index_build_and_prune(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_lake(tmp_path / "lake", files=3)
    lake_dir = str(tmp_path / "lake")
    code, out = run("index", "build", lake_dir, "--columns", "id,email", "--json")
    assert code == 0
    rows = json.loads(out)
    assert [r["error"] for r in rows] == [None] * 3
    assert rows[0]["columns"] == ["id", "email"] and rows[0]["num_rows"] == 400
    code, out = run("index", "build", lake_dir, "--columns", "id", "--fpp", "0.001",
                    "--ndv", "5000")  # fmt: skip
    assert code == 0 and "3/3 indexes written" in out
    assert read_local_index(tmp_path / "lake" / "part-0.parquet").columns[0].ndv == 5000
    code, out = run("prune", lake_dir, "--use-index", "--where", "id = 450", "--summary")
    assert code == 0
    assert "sidecar indexes: 2/3 files skipped (800 rows); 0 stale, 0 missing" in out
    code, out = run("prune", lake_dir, "--use-index", "--where", "id = 450", "--json")
    rows = json.loads(out)
    assert [r["rule"] for r in rows if r["row_group"] is None] == ["sidecar_index"] * 2
    assert {r["row_group"] for r in rows if r["row_group"] is not None} == {0, 1, 2, 3}
    os.unlink(index_location(str(tmp_path / "lake" / "part-2.parquet")))
    code, out = run("prune", lake_dir, "--use-index", "--where", "id = 450", "--summary")
    assert "1/3 files skipped" in out and "1 missing or unusable" in out
    code, out = run("index", "build", lake_dir, "--columns", "flag")
    assert code == 3 and "0/3 indexes written" in out and "BOOLEAN" in out
    code, out = run("index", "build", lake_dir, "--columns", "flag", "--strict")
    assert code != 0 and "BOOLEAN" in capsys.readouterr().err
    code, _ = run("prune", lake_dir, "--use-index", "--where", "id = 1", "--paimon-types", "id=INT")
    assert code == 2


def test_cli_index_build_migrates_indexes_of_the_earlier_name(lake: list[Path]) -> None:
    legacy = [_to_earlier_name(p) for p in lake[:2]]
    lake_dir = str(lake[0].parent)
    code, out = run("prune", lake_dir, "--use-index", "--where", "id = 450", "--summary")
    assert code == 0 and "sidecar indexes: 2/3 files skipped" in out
    code, out = run("index", "build", lake_dir, "--columns", "id,email,score")
    assert code == 0 and "3/3 indexes written" in out
    assert "2 under the earlier .parquet name removed" in out
    assert not any(p.exists() for p in legacy)
    code, out = run("index", "build", lake_dir, "--columns", "id", "--json")
    assert code == 0 and [r["replaced"] for r in json.loads(out)] == [None] * 3
    code, out = run("prune", lake_dir, "--use-index", "--where", "id = 450", "--summary")
    assert code == 0 and "sidecar indexes: 2/3 files skipped" in out


def test_decimal_and_dates_probe_exactly(tmp_path: Path) -> None:
    table = pa.table(
        {
            "d": pa.array([decimal.Decimal("1.25"), decimal.Decimal("-7.50")], pa.decimal128(9, 2)),
            "day": pa.array([dt.date(2024, 1, 31), dt.date(1969, 12, 31)]),
        }
    )
    pq.write_table(table, tmp_path / "a.parquet", store_decimal_as_integer=True)
    build_index_sync(str(tmp_path), ["d", "day"])
    keep = prune_with_index_sync(str(tmp_path), "d = 1.25 AND day = '1969-12-31'", row_groups=False)
    assert keep[0].kept
    for where in ("d = 1.251", "d = 1.26", "day = '2024-02-01'"):
        assert not prune_with_index_sync(str(tmp_path), where, row_groups=False)[0].kept, where


def test_row_groups_of_kept_files_are_not_held_to_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With its own reader, each kept file's footer and filters are dropped once decided."""
    from pybloom_async.read.reader import BloomReader

    paths = write_lake(tmp_path / "lake", files=3, rows=40)  # no indexes: every file kept
    forgotten: list[str] = []
    real_forget = BloomReader.forget

    def forget(self: BloomReader, location: Any) -> None:
        forgotten.append(self.open(location).path)  # the cache key forget drops
        real_forget(self, location)

    monkeypatch.setattr(BloomReader, "forget", forget)
    out = prune_with_index_sync(str(tmp_path / "lake"), "id = 5")
    assert {v.file for v in out} == {str(p) for p in paths}
    assert sorted(forgotten) == sorted(str(p) for p in paths)
