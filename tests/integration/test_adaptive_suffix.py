"""Requests per file with the default reader configuration, on S3 (moto).

The default suffix is adaptive: before anything is learned a file's first read covers
256 KiB (the usual layouts), so the files a run reads at once cost one request each; then
the reader learns from the files it read how far from the end their footer and filters
start, and sizes later reads to that. No file ever costs more than two requests (footer +
one merged filter read). Each layout is written here with random keys, so min/max
statistics never decide and every file needs its filter:

* ``far``: filters about 86 KB before the end, where Spark puts them (beyond a 64 KiB
  first read);
* ``pyarrow``: pyarrow's filters right before a small footer;
* ``duckdb``: DuckDB's filters (dictionary-encoded keys) right before its footer.

The many-column files of ``tests/support/writers.py`` (pyarrow: filters 240 KB from the
end; DuckDB) cost one request each too.
"""

from __future__ import annotations

import functools
import json
import os
import random
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.servers import table_guard_lists
from support.writers import WrittenFiles

from pybloom_async import col, prune, prune_sync
from pybloom_async.io.base import FileInfo, SourceStats
from pybloom_async.read.fetch import DEFAULT_READER_CONFIG, ReaderConfig
from pybloom_async.read.reader import BloomReader

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

pytestmark = pytest.mark.servers

FILES = 12
START = DEFAULT_READER_CONFIG.adaptive_start
FLOOR = DEFAULT_READER_CONFIG.min_suffix_bytes


def keys(seed: int, rows: int, distinct: int) -> list[int]:
    rng = random.Random(seed)
    values = [rng.getrandbits(62) for _ in range(distinct)]
    return [values[i % distinct] for i in range(rows)]


def write_far(path: Path, seed: int) -> None:
    """Filters of 64 KiB + 16 KiB right before the footer: about 86 KB from the end."""
    table = pa.table(
        {
            "k": pa.array(keys(seed, 40_000, 40_000), pa.int64()),
            "s": pa.array([f"s{v}" for v in keys(seed + 1, 40_000, 10_000)]),
        }
    )
    options = {"k": {"ndv": 40_000, "fpp": 0.01}, "s": {"ndv": 10_000, "fpp": 0.01}}
    pq.write_table(table, path, bloom_filter_options=options)


def write_pyarrow(path: Path, seed: int) -> None:
    table = pa.table({"k": pa.array(keys(seed, 2_000, 2_000), pa.int64())})
    pq.write_table(table, path, bloom_filter_options={"k": {"ndv": 2_000, "fpp": 0.01}})


def write_duckdb(path: Path, seed: int) -> None:
    duckdb = pytest.importorskip("duckdb")
    source = pa.table({"k": pa.array(keys(seed, 4_000, 400), pa.int64())})
    con = duckdb.connect()
    try:
        con.register("source", source)
        con.execute(f"COPY (SELECT k FROM source) TO '{path}' (FORMAT parquet)")
    finally:
        con.close()


def write_huge(path: Path, seed: int) -> None:
    """A 2 MiB filter: the first filter byte lies beyond any suffix the reader would read."""
    rows = 1_000_000
    table = pa.table({"k": pa.array(keys(seed, rows, rows), pa.int64())})
    pq.write_table(table, path, bloom_filter_options={"k": {"ndv": rows, "fpp": 0.01}})


WRITERS: dict[str, Callable[[Path, int], None]] = {
    "far": write_far,
    "pyarrow": write_pyarrow,
    "duckdb": write_duckdb,
}


@dataclass(frozen=True)
class Dataset:
    name: str
    paths: tuple[Path, ...]
    server: Any

    def url(self, path: Path) -> str:
        return str(self.server.url(f"adaptive/{self.name}/{path.name}"))

    @property
    def prefix(self) -> str:
        return str(self.server.url(f"adaptive/{self.name}/"))


_written: dict[str, Dataset] = {}


def dataset(name: str, server: Any, tmp: Path, count: int = FILES) -> Dataset:
    if name not in _written:
        root = tmp / name
        root.mkdir()
        paths = []
        for i in range(count):
            path = root / f"part-{i:03d}.parquet"
            (write_huge if name == "huge" else WRITERS[name])(path, 1000 * i + 7)
            server.put(f"adaptive/{name}/{path.name}", path.read_bytes())
            paths.append(path)
        _written[name] = Dataset(name, tuple(paths), server)
    return _written[name]


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("adaptive")


def probe_value(path: Path) -> int:
    return int(pq.read_table(path, columns=["k"]).column(0)[3].as_py())


def per_file_requests(
    reader: BloomReader, locations: list[Any], backend: str = "asyncio"
) -> list[int]:
    """Requests of each file read in turn through one reader (its filters of ``k``)."""
    counts = []
    for location in locations:
        reader.stats.reset()
        anyio.run(reader.footer_and_filters, location, ["k"], backend=backend)
        counts.append(reader.stats.requests)
    return counts


def far_from_end(path: Path) -> int:
    metadata = pq.ParquetFile(path).metadata
    offsets = [
        metadata.row_group(g).column(c).to_dict().get("bloom_filter_offset")
        for g in range(metadata.num_row_groups)
        for c in range(metadata.num_columns)
    ]
    return path.stat().st_size - min(int(o) for o in offsets if o is not None)


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_run_costs_one_request_per_file(name: str, s3_server: Any, tmp: Path) -> None:
    """prune over a listed prefix, default config: the files, all read at once, one each."""
    data = dataset(name, s3_server, tmp)
    if name == "far":
        assert all(FLOOR < far_from_end(p) < 100_000 for p in data.paths)
    stats = SourceStats()
    verdicts = prune_sync(
        data.prefix, col("k") == probe_value(data.paths[0]), options=s3_server.options, stats=stats
    )
    assert verdicts[0].kept and sum(not v.kept for v in verdicts) >= FILES - 2, verdicts
    assert stats.requests == FILES, stats
    # The LIST, those that look for a table above the prefix, and the lake index folder's
    # LIST (use_index="auto"; this prefix has none), sent with the first.
    assert stats.metadata_requests == 2 + table_guard_lists(data.prefix), stats


@pytest.mark.parametrize("name", list(WRITERS))
def test_long_lived_reader_learns_the_layout(name: str, s3_server: Any, tmp: Path) -> None:
    data = dataset(name, s3_server, tmp)
    reader = BloomReader(options=s3_server.options)
    counts = per_file_requests(reader, [data.url(p) for p in data.paths])
    assert counts == [1] * FILES, counts
    assert reader.suffix.learned and reader.suffix.propose() < START


def test_a_run_on_trio(s3_server: Any, tmp: Path) -> None:
    """Under trio too, files read concurrently cost one request each."""
    pytest.importorskip("trio")
    data = dataset("far", s3_server, tmp)
    stats = SourceStats()
    where = col("k") == probe_value(data.paths[0])
    run = functools.partial(prune, data.prefix, where, options=s3_server.options, stats=stats)
    verdicts = anyio.run(run, backend="trio")
    assert verdicts[0].kept
    assert stats.requests == FILES, stats


def test_a_fixed_suffix_is_honoured(s3_server: Any, tmp: Path) -> None:
    """An explicit footer_read_bytes turns adaptation off: 64 KiB stays 2 requests a file."""
    data = dataset("far", s3_server, tmp)
    reader = BloomReader(options=s3_server.options, config=ReaderConfig(footer_read_bytes=FLOOR))
    counts = per_file_requests(reader, [data.url(p) for p in data.paths[:4]])
    assert counts == [2] * 4
    assert reader.stats.bytes_read > FLOOR
    assert not reader.suffix.learned


def test_never_more_than_two_requests(s3_server: Any, tmp: Path) -> None:
    """A file whose filter starts 2 MiB from the end costs 2 requests; the layout is kept."""
    far = dataset("far", s3_server, tmp)
    (huge,) = dataset("huge", s3_server, tmp, count=1).paths
    assert far_from_end(huge) > DEFAULT_READER_CONFIG.max_suffix_bytes
    reader = BloomReader(options=s3_server.options)
    urls = [far.url(p) for p in far.paths[:3]]
    counts = per_file_requests(reader, [*urls, dataset("huge", s3_server, tmp).url(huge), urls[0]])
    assert counts[:4] == [1, 1, 1, 2], counts
    reader.clear()
    assert per_file_requests(reader, [urls[1]]) == [1]  # the far file did not spoil the learning
    assert reader.suffix.propose() < DEFAULT_READER_CONFIG.max_suffix_bytes


def test_small_files_are_read_whole_in_one_request(s3_server: Any, tmp: Path) -> None:
    """After learning a suffix larger than a file, the file comes whole, in one request."""
    far = dataset("far", s3_server, tmp)
    small = dataset("pyarrow", s3_server, tmp)
    reader = BloomReader(options=s3_server.options)
    per_file_requests(reader, [far.url(p) for p in far.paths[:2]])
    assert reader.suffix.propose() > small.paths[0].stat().st_size
    counts = per_file_requests(reader, [small.url(small.paths[1])])
    assert counts == [1]
    assert reader.stats.bytes_read == small.paths[1].stat().st_size


def test_the_size_from_the_listing_bounds_the_read(s3_server: Any, tmp: Path) -> None:
    far = dataset("far", s3_server, tmp)
    small = dataset("pyarrow", s3_server, tmp)
    reader = BloomReader(options=s3_server.options)
    per_file_requests(reader, [far.url(p) for p in far.paths[:2]])
    path = small.paths[2]
    size = path.stat().st_size
    counts = per_file_requests(reader, [FileInfo(small.url(path), size)])
    assert counts == [1]
    assert reader.stats.bytes_read == size
    assert reader.stats.metadata_requests == 0


def test_local_files_keep_the_first_suffix(tmp: Path, s3_server: Any) -> None:
    """Local reads do not adapt: every footer read asks for min_suffix_bytes (64 KiB)."""
    data = dataset("far", s3_server, tmp)
    reader = BloomReader()
    counts = per_file_requests(reader, [str(p) for p in data.paths[:3]])
    assert counts == [2, 2, 2]
    assert not reader.suffix.learned


def cli_prune(server: Any, location: str, where: str, *extra: str) -> Any:
    options = server.options
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": options["access_key_id"],
        "AWS_SECRET_ACCESS_KEY": options["secret_access_key"],
        "AWS_REGION": options["region"],
    }
    argv = [
        sys.executable, "-m", "pybloom_async.apps.cli", "prune", location, "--where", where,
        "--summary", "--json", "--endpoint", options["endpoint"], "--allow-http", *extra,
    ]  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)


def test_cli_reads_one_request_per_file_by_default(s3_server: Any, tmp: Path) -> None:
    data = dataset("far", s3_server, tmp)
    where = f"k = {probe_value(data.paths[0])}"
    adaptive = cli_prune(s3_server, data.prefix, where)
    assert adaptive.returncode == 0, adaptive.stderr
    assert json.loads(adaptive.stdout)["requests"] == FILES
    fixed = cli_prune(s3_server, data.prefix, where, "--footer-read", str(FLOOR))
    assert fixed.returncode == 0, fixed.stderr
    assert json.loads(fixed.stdout)["requests"] == 2 * FILES
    bad = cli_prune(s3_server, data.prefix, where, "--footer-read", "4")
    assert bad.returncode == 2, bad.stderr
    assert bad.stderr.count("\n") == 1 and "footer_read_bytes must be >= 8" in bad.stderr


@pytest.mark.parametrize("engine", ["pyarrow_files", "duckdb_files"])
def test_many_column_files_cost_one_request_each(
    engine: str, request: pytest.FixtureRequest, s3_server: Any
) -> None:
    """The many-column files of the interop suite, read at once with the default config."""
    written: WrittenFiles = request.getfixturevalue(engine)
    prefix = f"adaptive/{written.engine}-many/"
    for path in written.files:
        s3_server.put(prefix + path.name, path.read_bytes())
    column = written.key_columns[0]
    value = pq.read_table(written.files[0], columns=[column]).column(0)[1].as_py()
    stats = SourceStats()
    verdicts = prune_sync(
        s3_server.url(prefix), col(column) == value, options=s3_server.options, stats=stats
    )
    assert any(v.kept for v in verdicts)
    assert stats.requests == len(written.files), stats


def write_wide(path: Path, seed: int) -> None:
    """3000 columns, so the footer alone (about 400 KB) is larger than the first read."""
    rng = random.Random(seed)
    table = pa.table(
        {f"c{i}": pa.array([rng.getrandbits(62) for _ in range(8)]) for i in range(3000)}
    )
    options = {f"c{i}": {"ndv": 8, "fpp": 0.01} for i in range(3000)}
    pq.write_table(table, path, bloom_filter_options=options)


def test_a_footer_beyond_the_suffix_brings_the_filters_with_it(s3_server: Any, tmp: Path) -> None:
    """Its second read reaches back before the footer: 2 requests, not a third for filters;
    once learned, one."""
    path = tmp / "wide.parquet"
    write_wide(path, 5)
    s3_server.put("adaptive/wide/wide.parquet", path.read_bytes())
    footer_len = pq.ParquetFile(path).metadata.serialized_size
    assert footer_len > START and far_from_end(path) - footer_len > FLOOR
    reader = BloomReader(options=s3_server.options)
    url = s3_server.url("adaptive/wide/wide.parquet")
    for expected in (2, 1):  # before learning; then the learned suffix covers it all
        reader.stats.reset()
        _, found = anyio.run(reader.footer_and_filters, url, ["c0", "c2999"])
        assert all(f.ok for f in found.values()), found
        assert reader.stats.requests == expected, reader.stats
        reader.clear()


@pytest.mark.spark
def test_spark_files_learned_by_a_long_lived_reader(
    spark_files: WrittenFiles, s3_server: Any
) -> None:
    """Spark's files with filters on every column (about 626 KB from the end, beyond the
    first read): the first costs two requests, the next one, once learned."""
    paths = list(spark_files.prune_files)
    assert all(START < far_from_end(p) < DEFAULT_READER_CONFIG.max_suffix_bytes for p in paths)
    urls = []
    for path in paths:
        s3_server.put(f"adaptive/spark-many/{path.name}", path.read_bytes())
        urls.append(s3_server.url(f"adaptive/spark-many/{path.name}"))
    reader = BloomReader(options=s3_server.options)
    column = spark_files.key_columns[0]
    counts = []
    for url in urls:
        reader.stats.reset()
        anyio.run(reader.footer_and_filters, url, [column])
        counts.append(reader.stats.requests)
    assert counts == [2] + [1] * (len(urls) - 1), counts
