"""Lookups through a lake index with its footer digest on a real S3 peer (moto): no footer
read, so a point lookup over 60 files costs the listings, the index and the rows."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.servers import table_guard_lists

from pybloom_async import build_lake_index_sync, lookup_sync, prune_sync
from pybloom_async.io.base import SourceStats
from pybloom_async.read.reader import BloomReader

FILES = 60


def _pyarrow(ids: np.ndarray[Any, Any], i: int) -> bytes:
    sink = io.BytesIO()
    table = pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([f"r{i}"] * len(ids))})
    pq.write_table(table, sink, bloom_filter_options={"id": {"ndv": len(ids), "fpp": 0.01}})
    return sink.getvalue()


def _duckdb(ids: np.ndarray[Any, Any], i: int, tmp: Any) -> bytes:
    duckdb = pytest.importorskip("duckdb")
    path = tmp / f"d{i}.parquet"
    con = duckdb.connect()
    con.register("t", pa.table({"id": pa.array(ids, pa.int64()), "v": [f"r{i}"] * len(ids)}))
    con.execute(f"COPY t TO '{path}' (FORMAT parquet)")
    con.close()
    return path.read_bytes()


@pytest.mark.servers
@pytest.mark.parametrize("writer", ["pyarrow", "duckdb"])
def test_a_point_lookup_over_60_files_reads_no_footer(
    s3_server: Any, writer: str, tmp_path: Any
) -> None:
    rng = np.random.default_rng(7)
    keys = []
    for i in range(FILES):
        ids = rng.integers(0, 2**62, 200)
        data = _pyarrow(ids, i) if writer == "pyarrow" else _duckdb(ids, i, tmp_path)
        s3_server.put(f"digest-{writer}/part-{i:03}.parquet", data)
        keys.append(ids)
    root = s3_server.url(f"digest-{writer}/")
    opts = s3_server.options
    key = int(keys[17][3])
    without = lookup_sync(root, f"id = {key}", options=opts)
    built = build_lake_index_sync(root, ["id"], options=opts)
    assert built.files == FILES and not built.errors
    guard = table_guard_lists(root)
    for where in (f"id = {key}", "id = 5", "id = 6"):
        kept = prune_sync(root, where, use_index="lake", row_groups=False, options=opts)
        reads = sum(v.kept for v in kept)  # the key's file, and any false positive
        # Before the digest: 66 requests for the key (the data listing, the table checks'
        # LIST, the segment listing twice, the directory, one stripe and 60 footers; the
        # row came with its footer).
        stats = SourceStats()
        got = lookup_sync(root, where, options=opts, stats=stats)
        assert got.schema == without.schema
        if where == f"id = {key}":
            assert got.equals(without) and got.num_rows == 1 and reads >= 1
        # The data listing and the segment listing; the directory (which brought the digest
        # of so small a lake), one stripe, and each kept file's chunks.
        assert stats.metadata_requests == 2 + guard
        assert stats.requests == 2 + reads, where


@pytest.mark.servers
def test_a_warm_reader_pays_nothing_for_the_index_but_the_stripe(s3_server: Any) -> None:
    rng = np.random.default_rng(8)
    keys = []
    for i in range(20):
        ids = rng.integers(0, 2**62, 100)
        s3_server.put(f"digest-warm/part-{i:03}.parquet", _pyarrow(ids, i))
        keys.append(ids)
    root = s3_server.url("digest-warm/")
    opts = s3_server.options
    build_lake_index_sync(root, ["id"], options=opts)
    guard = table_guard_lists(root)
    for max_age in (60.0, 0.0):
        reader = BloomReader(options=opts, max_age=max_age)
        first = SourceStats()
        got = lookup_sync(root, f"id = {int(keys[3][0])}", reader=reader, stats=first)
        assert got.num_rows == 1 and first.requests >= 3  # the directory, a stripe, the row
        for i in (5, 11):
            key = int(keys[i][1])
            kept = prune_sync(root, f"id = {key}", use_index="lake", row_groups=False, options=opts)
            stats = SourceStats()
            got = lookup_sync(root, f"id = {key}", reader=reader, stats=stats)
            assert got.column("id").to_pylist() == [key]
            # The data listing (and the table check); the segment listing only once the
            # kept one is older than max_age (its ETag then confirms the directory kept).
            assert stats.metadata_requests == 1 + guard + (max_age == 0)
            # The stripe and the kept files' rows: nothing more for the index.
            assert stats.requests == 1 + sum(v.kept for v in kept)
