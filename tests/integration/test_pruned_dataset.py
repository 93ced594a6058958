"""pruned_dataset handed to Polars, DuckDB and DataFusion.

For each engine: the rows it finds in the pruned dataset are the rows its own full
scan of the files finds with the same WHERE, and the bytes read (pruning included)
are fewer than the same engine reading the unpruned files through pyarrow. Bytes are
counted on S3 (moto) behind the fault proxy, which logs every request's range.
Azure (azurite) checks the filesystem mapping end to end.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.fault_proxy import FaultProxy

from pybloom_async import pruned_dataset_sync
from pybloom_async.read.fetch import ReaderConfig

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pads = pytest.importorskip("pyarrow.dataset")
pafs = pytest.importorskip("pyarrow.fs")

FILES = 3
GROUPS = 6
ROWS_PER_GROUP = 3000


@dataclass
class Lake:
    root: Path  # the local copies, and nothing else
    files: list[Path]
    keys: list[list[int]]  # per file

    def probe(self) -> list[int]:
        """A key of the first file, one of the last, and one in range but absent."""
        absent = max(max(k) for k in self.keys) - 1
        while any(absent in k for k in self.keys):
            absent -= 1
        return [self.keys[0][17], self.keys[-1][4242], absent]


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Lake:
    """Files whose row groups all span the whole key range: statistics prune nothing."""
    root = tmp_path_factory.mktemp("lake")
    rng = random.Random(20261124)
    n = FILES * GROUPS * ROWS_PER_GROUP
    keys = rng.sample(range(10 * n), n)
    per_file = n // FILES
    files, file_keys = [], []
    for i in range(FILES):
        chunk = keys[i * per_file : (i + 1) * per_file]
        table = pa.table(
            {
                "key": pa.array(chunk, pa.int64()),
                "name": pa.array([f"name-{k:012d}" for k in chunk]),
                "v": pa.array([k / 7 for k in chunk], pa.float64()),
            }
        )
        path = root / f"part-{i}.parquet"
        pq.write_table(
            table,
            path,
            row_group_size=ROWS_PER_GROUP,
            bloom_filter_options={"key": {"ndv": ROWS_PER_GROUP, "fpp": 0.01}},
        )
        files.append(path)
        file_keys.append(chunk)
    return Lake(root, files, file_keys)


def _sorted(rows: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in rows)


# ---- the engines: their own scan of the files, and a scan of a pyarrow dataset --------------


def _polars_native(lake: Lake, keys: list[int]) -> list[tuple[Any, ...]]:
    pl = pytest.importorskip("polars")
    frame = pl.scan_parquet([str(p) for p in lake.files]).filter(pl.col("key").is_in(keys))
    return _sorted(frame.select("key", "name", "v").collect().rows())


def _polars_dataset(ds: Any, keys: list[int]) -> list[tuple[Any, ...]]:
    pl = pytest.importorskip("polars")
    frame = pl.scan_pyarrow_dataset(ds).filter(pl.col("key").is_in(keys))
    return _sorted(frame.select("key", "name", "v").collect().rows())


def _in_list(keys: list[int]) -> str:
    return ", ".join(str(k) for k in keys)


def _duckdb_native(lake: Lake, keys: list[int]) -> list[tuple[Any, ...]]:
    duckdb = pytest.importorskip("duckdb")
    with duckdb.connect() as con:
        query = f"SELECT key, name, v FROM read_parquet(?) WHERE key IN ({_in_list(keys)})"
        return _sorted(con.execute(query, [[str(p) for p in lake.files]]).fetchall())


def _duckdb_dataset(ds: Any, keys: list[int]) -> list[tuple[Any, ...]]:
    duckdb = pytest.importorskip("duckdb")
    with duckdb.connect() as con:
        con.register("t", ds)
        query = f"SELECT key, name, v FROM t WHERE key IN ({_in_list(keys)})"
        return _sorted(con.execute(query).fetchall())


def _datafusion_native(lake: Lake, keys: list[int]) -> list[tuple[Any, ...]]:
    datafusion = pytest.importorskip("datafusion")
    ctx = datafusion.SessionContext()
    ctx.register_parquet("native", str(lake.root))
    table = ctx.sql(f"SELECT key, name, v FROM native WHERE key IN ({_in_list(keys)})")
    return _sorted(zip(*table.to_arrow_table().to_pydict().values(), strict=True))


def _datafusion_dataset(ds: Any, keys: list[int]) -> list[tuple[Any, ...]]:
    datafusion = pytest.importorskip("datafusion")
    ctx = datafusion.SessionContext()
    ctx.register_dataset("t", ds)
    table = ctx.sql(f"SELECT key, name, v FROM t WHERE key IN ({_in_list(keys)})")
    return _sorted(zip(*table.to_arrow_table().to_pydict().values(), strict=True))


Engine = tuple[
    Callable[[Lake, list[int]], list[tuple[Any, ...]]],
    Callable[[Any, list[int]], list[tuple[Any, ...]]],
]
ENGINES: dict[str, Engine] = {
    "polars": (_polars_native, _polars_dataset),
    "duckdb": (_duckdb_native, _duckdb_dataset),
    "datafusion": (_datafusion_native, _datafusion_dataset),
}


# ---- local files -------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_local_rows_are_the_engines_own(lake: Lake, engine: str) -> None:
    native, on_dataset = ENGINES[engine]
    keys = lake.probe()
    ds = pruned_dataset_sync(str(lake.root), f"key IN ({_in_list(keys)})")
    expected = native(lake, keys)
    assert len(expected) == 2
    assert on_dataset(ds, keys) == expected
    kept = sum(len(f.row_groups) for f in ds.get_fragments())
    assert kept < FILES * GROUPS


# ---- S3, bytes counted ------------------------------------------------------------------------


@dataclass
class S3Lake:
    url: str
    keys: list[str]  # object keys, as the proxy sees them in request targets
    sizes: dict[str, int]
    proxy: FaultProxy
    options: dict[str, Any]

    def bytes_read(self) -> int:
        """Bytes the logged GETs asked for (a GET without a range: the whole object)."""
        total = 0
        for exchange in self.proxy.log:
            if exchange.method != "GET" or "?" in exchange.target:
                continue  # HEADs and LISTs carry no file bytes
            if exchange.range is None:
                total += self.sizes[exchange.target]
                continue
            match = re.fullmatch(r"bytes=(\d*)-(\d*)", exchange.range)
            assert match, exchange.range
            start, end = match.groups()
            if not start:
                total += int(end)  # a suffix
            elif not end:
                total += self.sizes[exchange.target] - int(start)
            else:
                total += int(end) - int(start) + 1
        return total

    def filesystem(self) -> Any:
        """pyarrow's own S3 filesystem through the proxy, set up by hand (not by the package)."""
        return pafs.S3FileSystem(
            access_key="testing",
            secret_key="testing",
            region="us-east-1",
            endpoint_override=self.proxy.endpoint.removeprefix("http://"),
            scheme="http",
        )


@pytest.fixture(scope="module")
def s3_lake(lake: Lake, s3_server: Any) -> Iterator[S3Lake]:
    prefix = f"dataset-{os.getpid()}/"
    sizes = {}
    for path in lake.files:
        s3_server.put(prefix + path.name, path.read_bytes())
        sizes[f"/{s3_server.bucket}/{prefix}{path.name}"] = path.stat().st_size
    with FaultProxy(s3_server.endpoint) as proxy:
        options = dict(s3_server.options, endpoint=proxy.endpoint)
        yield S3Lake(s3_server.url(prefix), sorted(sizes), sizes, proxy, options)


@pytest.mark.servers
@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_s3_rows_are_the_engines_own_and_fewer_bytes_are_read(
    lake: Lake, s3_lake: S3Lake, engine: str
) -> None:
    native, on_dataset = ENGINES[engine]
    keys = lake.probe()
    where = f"key IN ({_in_list(keys)})"
    proxy = s3_lake.proxy

    with proxy.faults_applied([]):
        # The files are small (a few hundred kB): the adaptive first suffix read (256 KiB)
        # would read most of each, so pruning reads a fixed 64 KiB tail here, and the
        # bytes compared are what the dataset leaves out.
        config = ReaderConfig(footer_read_bytes=64 * 1024)
        ds = pruned_dataset_sync(s3_lake.url, where, options=s3_lake.options, config=config)
        got = on_dataset(ds, keys)
        pruned_bytes = s3_lake.bytes_read()  # pruning and the engine's scan

    full = pads.dataset(
        [target.lstrip("/") for target in s3_lake.keys],
        filesystem=s3_lake.filesystem(),
        format="parquet",
    )
    with proxy.faults_applied([]):
        everything = on_dataset(full, keys)
        full_bytes = s3_lake.bytes_read()

    expected = native(lake, keys)
    assert len(expected) == 2
    assert got == expected == everything
    assert 0 < pruned_bytes < full_bytes / 2, (pruned_bytes, full_bytes)


# ---- Azure: the filesystem mapping end to end ---------------------------------------------------


@pytest.mark.servers
def test_azurite_dataset_reads_the_rows(lake: Lake, azurite_server: Any) -> None:
    prefix = f"dataset-{os.getpid()}/"
    for path in lake.files:
        azurite_server.put(prefix + path.name, path.read_bytes())
    keys = lake.probe()
    ds = pruned_dataset_sync(
        azurite_server.url(prefix), f"key IN ({_in_list(keys)})", options=azurite_server.options
    )
    assert isinstance(next(iter(ds.get_fragments())).filesystem, pafs.AzureFileSystem)
    got = ds.to_table(filter=pads.field("key").isin(keys), columns=["key", "name", "v"])
    assert _sorted(zip(*got.to_pydict().values(), strict=True)) == _polars_native(lake, keys)


@pytest.mark.servers
def test_s3_reached_through_the_environment_alone(
    lake: Lake, s3_lake: S3Lake, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No options: pruning (obstore) and the dataset (pyarrow) find the same endpoint."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_lake.proxy.endpoint)
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    keys = lake.probe()
    ds = pruned_dataset_sync(s3_lake.url, f"key IN ({_in_list(keys)})")
    got = ds.to_table(filter=pads.field("key").isin(keys), columns=["key", "name", "v"])
    assert _sorted(zip(*got.to_pydict().values(), strict=True)) == _polars_native(lake, keys)
