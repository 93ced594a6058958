"""The interop files on real object-store peers: moto (S3), azurite (Azure Blob), nginx (HTTP).

The files Spark and pyarrow wrote (``tests/support/writers.py``) are uploaded as they are, Spark's
``_SUCCESS`` and ``.crc`` files included, to servers on 127.0.0.1 (``tests/support/servers.py``).

* ``test_verdicts_match_local``: pruning a prefix (S3, Azure: listed) or the file URLs
  (HTTP: nginx cannot list) gives exactly the local verdicts, for AND/OR predicates.
* ``test_request_counts``: with a fixed 64 KiB suffix read, the data requests counted by
  ``SourceStats`` are the minimum the layout allows, computed here from each file's
  footer: one suffix read per file
  (the footer), plus one merged read when a needed filter lies before the suffix. Without
  ``bloom_filter_length``, one merged guess read, plus one more for a filter larger
  than its guess. Metadata requests: one LIST per prefix; none for files named by URL
  (the suffix read brings the size), except one HEAD per file on Azure (no suffix ranges).
* ``test_cli_prune_s3_exits_cleanly``: 100 ``pybloom-async prune`` processes against S3,
  three at a time: every one exits 0 with the same JSON and no "Fatal Python error"
  (the obstore async-API abort at interpreter exit that docs/architecture.md
  rules out, "Object stores").
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
from support.writers import WrittenFiles, filter_header, filter_locations

from pybloom_async import Predicate, Verdict, col, prune_sync
from pybloom_async.io.base import SourceStats
from pybloom_async.read.fetch import DEFAULT_READER_CONFIG, ReaderConfig
from pybloom_async.read.plan import DEFAULT_PLAN_CONFIG

pq = pytest.importorskip("pyarrow.parquet")

pytestmark = pytest.mark.servers

SUFFIX = DEFAULT_READER_CONFIG.min_suffix_bytes  # 64 KiB, fixed below
FIXED_SUFFIX = ReaderConfig(footer_read_bytes=SUFFIX)
GUESS = DEFAULT_PLAN_CONFIG.guess_bytes  # 256 KiB
MAX_HOLE = DEFAULT_PLAN_CONFIG.max_hole_bytes  # 1 MiB
CLI_RUNS = 100
CLI_WORKERS = 3


# --------------------------------------------------------------------------- peers


@dataclass
class Remote:
    """One server (``tests/support/servers.py``) and the datasets uploaded to it so far."""

    kind: str
    server: Any
    uploaded: set[str] = field(default_factory=set)

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.server.options)

    @property
    def can_list(self) -> bool:
        return self.kind != "http"  # nginx serves files; it cannot list them

    def url(self, key: str) -> str:
        return str(self.server.url(key))


SERVER_FIXTURES = {"s3": "s3_server", "azure": "azurite_server", "http": "nginx_server"}
DATASETS = {
    "spark": "spark_files",
    "pyarrow": "pyarrow_files",
    "pyarrow-no-length": "pyarrow_no_length_files",
    "big-no-length": "big_filter_files",
}


@pytest.fixture(scope="session")
def remotes() -> dict[str, Remote]:
    """Servers by kind, shared by the tests so each dataset is uploaded once per server."""
    return {}


def get_remote(request: pytest.FixtureRequest, kind: str) -> Remote:
    cache = cast(dict[str, Remote], request.getfixturevalue("remotes"))
    if kind not in cache:
        cache[kind] = Remote(kind, request.getfixturevalue(SERVER_FIXTURES[kind]))
    return cache[kind]


@pytest.fixture(params=list(SERVER_FIXTURES))
def remote(request: pytest.FixtureRequest) -> Remote:
    return get_remote(request, str(request.param))


@dataclass(frozen=True)
class Placed:
    """A dataset on a server: its root directory uploaded as is under ``<dataset>/``."""

    written: WrittenFiles
    remote: Remote
    prefix: str

    def url(self, path: Path) -> str:
        return self.remote.url(self.prefix + path.relative_to(self.written.root).as_posix())

    def location(self, paths: Sequence[Path]) -> str | list[str]:
        """What to prune: their directory as a prefix when the store lists, else the URLs."""
        parent = paths[0].parent
        if self.remote.can_list and sorted(parent.glob("*.parquet")) == sorted(paths):
            relative = parent.relative_to(self.written.root).as_posix()
            return self.remote.url(self.prefix if relative == "." else f"{self.prefix}{relative}/")
        return [self.url(p) for p in paths]


def place(request: pytest.FixtureRequest, remote: Remote, dataset: str) -> Placed:
    """Upload the dataset's whole directory (Spark's _SUCCESS and .crc too), once."""
    written = cast(WrittenFiles, request.getfixturevalue(DATASETS[dataset]))
    prefix = f"{dataset}/"
    if dataset not in remote.uploaded:
        for path in sorted(written.root.rglob("*")):
            if path.is_file():
                key = prefix + path.relative_to(written.root).as_posix()
                remote.server.put(key, path.read_bytes())
        remote.uploaded.add(dataset)
    return Placed(written, remote, prefix)


@pytest.fixture(
    params=[pytest.param("spark", marks=pytest.mark.spark), "pyarrow", "pyarrow-no-length"]
)
def placed(request: pytest.FixtureRequest, remote: Remote) -> Placed:
    return place(request, remote, str(request.param))


# --------------------------------------------------------------------------- verdicts


def comparable(verdicts: Sequence[Verdict], name: Callable[[str], str]) -> list[tuple[Any, ...]]:
    return [(name(v.file), v.row_group, v.num_rows, v.kept, v.rule, v.reason) for v in verdicts]


def sample_predicates(written: WrittenFiles) -> list[Predicate]:
    """AND/OR predicates over the key columns with values from the first and last files."""
    a, b = written.key_columns
    first = pq.read_table(written.prune_files[0], columns=[a, b]).to_pylist()
    last = pq.read_table(written.prune_files[-1], columns=[a, b]).to_pylist()
    r1, r2, r3 = first[17], last[-5], last[len(last) // 2]
    return [
        col(a) == r1[a],
        (col(a) == r1[a]) & (col(b) == r1[b]),
        col(a).isin([r1[a], r2[a]]) | (col(b) == r3[b]),
        (col(a) == r2[a]) & col(b).isin([r2[b], r3[b]]) | (col(b) == r1[b]),
    ]


def test_verdicts_match_local(placed: Placed) -> None:
    """The remote verdicts equal the local ones: same files, row groups, rules and reasons."""
    written = placed.written
    files = list(written.prune_files)
    location = placed.location(files)
    if placed.remote.can_list:
        assert isinstance(location, str) and location.endswith("/"), location
    urls = {placed.url(p): str(p) for p in files}
    pruned = 0
    for where in sample_predicates(written):
        local = prune_sync([str(p) for p in files], where)
        remote = prune_sync(location, where, options=placed.remote.options)
        assert [v.file for v in remote] == [placed.url(Path(v.file)) for v in local]
        assert comparable(remote, urls.__getitem__) == comparable(local, str), str(where)
        pruned += sum(not v.kept for v in local)
    assert pruned > 0


# --------------------------------------------------------------------------- request counts


def needed_filters(path: Path, column: str, value: Any) -> list[tuple[int, int | None]]:
    """(offset, length) of the column's filters in row groups whose min/max admit ``value``."""
    metadata = pq.ParquetFile(path).metadata
    index = metadata.schema.names.index(column)
    found = []
    for loc in filter_locations(path):
        if loc.column != column or loc.offset is None:
            continue
        stats = metadata.row_group(loc.row_group).column(index).statistics
        if stats is not None and stats.has_min_max and not stats.min <= value <= stats.max:
            continue  # the pruner decides this row group without its filter
        found.append((loc.offset, loc.length))
    return found


def expected_requests(path: Path, column: str, value: Any) -> int:
    """The fewest data requests that answer ``column = value`` for this file's layout."""
    size = path.stat().st_size
    metadata = pq.ParquetFile(path).metadata
    footer_start = size - 8 - metadata.serialized_size
    tail = size - SUFFIX
    assert footer_start >= tail, f"{path.name}: footer larger than the suffix read"
    wanted = needed_filters(path, column, value)
    outside = []  # byte ranges before the suffix read, per round
    second: list[tuple[int, int]] = []
    for offset, length in wanted:
        if length is not None:
            outside.append((offset, offset + length))
            continue
        # Without a length: a guess read, clipped to the footer; the bitset's true end
        # comes from its header.
        end = min(offset + GUESS, footer_start)
        outside.append((offset, end))
        header_len, num_bytes = filter_header(path, offset)
        true_end = offset + header_len + num_bytes
        if true_end > end:
            second.append((end, true_end))
    requests = 1  # the suffix: footer (and the filters it happens to hold)
    for ranges in (outside, second):
        ranges = [(s, min(e, tail)) for s, e in ranges if s < tail]
        if ranges:
            # Filters of these files lie together before the footer: one merged read.
            starts, ends = zip(*sorted(ranges), strict=True)
            assert all(b - a <= MAX_HOLE for a, b in zip(ends, starts[1:], strict=False))
            requests += 1
    return requests


def key_value(written: WrittenFiles, path: Path) -> Any:
    column = written.key_columns[0]
    return pq.read_table(path, columns=[column]).column(0)[7].as_py()


@pytest.mark.parametrize("named", [False, True], ids=["listed", "named"])
@pytest.mark.parametrize(
    "dataset",
    [pytest.param("spark", marks=pytest.mark.spark), "pyarrow", "pyarrow-no-length",
     "big-no-length"],
)  # fmt: skip
def test_request_counts(
    request: pytest.FixtureRequest, remote: Remote, dataset: str, named: bool
) -> None:
    """Data requests per file with a fixed suffix: 1 + one merged filter read (+1 per filter
    beyond its guess). With the default (adaptive) suffix, files after the first need no
    filter read when their known-length filters lie within the learned suffix.

    Metadata requests: one LIST for a prefix; for files named by URL none, except on Azure,
    which has no suffix ranges, so one HEAD per file learns the size first. And where the
    store lists, one LIST per folder above the files (the bucket's root included; a prefix's
    own folder is seen by its listing), once per run: no Delta or Iceberg table holds them.
    """
    if remote.kind == "http" and not named:
        pytest.skip("nginx cannot list; the named variant covers HTTP")
    placed = place(request, remote, dataset)
    written = placed.written
    column = written.key_columns[0]
    files = list(written.prune_files)
    value = key_value(written, files[0])
    where = col(column) == value
    location = [placed.url(p) for p in files] if named else placed.location(files)
    stats = SourceStats()
    verdicts = prune_sync(location, where, options=remote.options, stats=stats, config=FIXED_SUFFIX)
    assert verdicts[0].kept  # the value comes from the first file
    expected = [expected_requests(p, column, value) for p in files]
    per_file = {"spark": 2, "pyarrow": 2, "pyarrow-no-length": 2, "big-no-length": 3}[dataset]
    assert expected == [per_file] * len(files), expected
    assert stats.requests == sum(expected), (expected, stats)
    # The size learned by the suffix read serves the filter reads: no HEAD for them.
    heads = len(files) if remote.kind == "azure" else 0
    # A prefix: its LIST, and its lake index folder's LIST (use_index="auto"), sent at once.
    metadata = 2 if isinstance(location, str) else heads
    key = placed.url(files[0]).split("://", 1)[1].split("/", 1)[1]  # past the bucket
    depth = key.count("/")  # the folders the file lies in, below the root
    guard = 0 if remote.kind == "http" else depth + (1 if named else 0)
    assert stats.metadata_requests == metadata + guard, (location, stats)
    if dataset in ("spark", "pyarrow"):
        # The default (adaptive) first read covers filters within adaptive_start of the end.
        stats.reset()
        assert prune_sync(location, where, options=remote.options, stats=stats) == verdicts
        start = DEFAULT_READER_CONFIG.adaptive_start
        one_read = [p.stat().st_size - first_filter_offset(p) <= start for p in files]
        # Files read at once start from that size; a file whose read starts after another's
        # footer came back starts from the size learned from it, which may hold its filters
        # too (the order depends on the machine's load): never more requests, one at least.
        most = sum(1 if one else 2 for one in one_read)
        assert len(files) <= stats.requests <= most, (one_read, stats)


def first_filter_offset(path: Path) -> int:
    metadata = pq.ParquetFile(path).metadata
    return min(
        int(offset)
        for g in range(metadata.num_row_groups)
        for c in range(metadata.num_columns)
        if (offset := metadata.row_group(g).column(c).to_dict().get("bloom_filter_offset"))
        is not None
    )


@pytest.mark.spark
def test_filters_inside_the_suffix_need_one_request(
    request: pytest.FixtureRequest, remote: Remote
) -> None:
    """Spark's small INT96 file: footer and filters come with the one suffix read."""
    placed = place(request, remote, "spark")
    (path,) = [p for p in placed.written.files if p.parent.name == "int96"]
    value = pq.read_table(path, columns=["c_ts96_plain"]).column(0)[3].as_py()
    assert expected_requests(path, "c_ts96_plain", value) == 1
    stats = SourceStats()
    local = prune_sync(str(path), col("c_ts96_plain") == value)
    remote_verdicts = prune_sync(
        placed.url(path), col("c_ts96_plain") == value, options=remote.options, stats=stats
    )
    assert stats.requests == 1, stats
    assert comparable(remote_verdicts, lambda _: "f") == comparable(local, lambda _: "f")


# --------------------------------------------------------------------------- CLI


def test_cli_prune_s3_exits_cleanly(request: pytest.FixtureRequest) -> None:
    """100 CLI processes pruning an S3 prefix, 3 at a time: clean exits, identical output."""
    placed = place(request, get_remote(request, "s3"), "pyarrow")
    options = placed.remote.options
    written = placed.written
    column = written.key_columns[0]
    value = key_value(written, written.prune_files[0])
    where = f"{column} = {value}"
    location = placed.location(list(written.prune_files))
    assert isinstance(location, str)
    # Credentials from the environment, as the CLI documents; the endpoint as an option.
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": options["access_key_id"],
        "AWS_SECRET_ACCESS_KEY": options["secret_access_key"],
        "AWS_REGION": options["region"],
    }
    # The installed console script when there is one (as users run it), else the module.
    script = Path(sys.executable).with_name("pybloom-async")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "pybloom_async.apps.cli"]
    argv = [
        *command, "prune", location, "--where", where, "--json",
        "--endpoint", options["endpoint"], "--allow-http",
    ]  # fmt: skip
    expected = [
        {"file": v.file, "row_group": v.row_group, "kept": v.kept, "reason": v.reason}
        for v in prune_sync(location, where, options=options)
    ]
    assert any(not row["kept"] for row in expected)

    def run(_: int) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)

    with concurrent.futures.ThreadPoolExecutor(CLI_WORKERS) as pool:
        results = list(pool.map(run, range(CLI_RUNS)))
    for proc in results:
        assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
        assert "Fatal Python error" not in proc.stderr, proc.stderr[-2000:]
        rows = json.loads(proc.stdout)
        assert [{k: r[k] for k in expected[0]} for r in rows] == expected
