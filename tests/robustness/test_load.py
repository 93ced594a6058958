"""Pruning thousands of small files with bounded concurrency, and cancelling it halfway.

2,000 generated files (two row groups, a filter on ``id``) are pruned from a local
directory and from moto's S3 endpoint, 32 files at a time with 16 I/O threads, while a
sampler thread records the process's open descriptors, threads and RSS every few
milliseconds. The run must give every row group that holds a probed key a kept verdict,
prune the others' absent keys, and stay within bounds that do not grow with the number of
files: descriptors within the concurrency, threads within the I/O threads, RSS within a
fixed budget. A second run is cancelled from an anyio cancel scope once half the files are
done: then no task of the run is left, every descriptor it opened is closed, and its
worker threads are gone once the event loop has ended.

``bench/bench_load.py`` runs the same code over 10,000 files for the figures in
``bench/RESULTS.md``; the bounds asserted here are generous on purpose (a loaded CI
machine), the measured figures are there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.descriptors import fds_under, open_fds
from support.servers import table_guard_lists

from pybloom_async import ReaderConfig, Rule, Verdict, col, lookup, prune
from pybloom_async.io.base import SourceStats

pytestmark = pytest.mark.slow

FILES = 2000
ROWS = 100  # per file: two row groups of 50
CONCURRENCY = 32
IO_THREADS = 16
#: RSS growth allowed during a run (measured: see bench/RESULTS.md); it must not depend
#: on the number of files beyond the verdicts themselves.
RSS_BUDGET = 200 * 1024 * 1024
#: How long worker threads may take to exit after the event loop ends (anyio and trio
#: keep idle workers for 10 s).
THREAD_EXIT_DEADLINE = 30.0


# --------------------------------------------------------------------------- the lake


def keys_for(n: int) -> tuple[list[int], set[tuple[int, int]]]:
    """Probed ids and the (file, row group) pairs holding one of them."""
    present = [i * 1000 + (i * 7) % ROWS for i in range(0, n, 97)]
    absent = [i * 1000 + ROWS + 5 for i in range(0, n, 89)] + [-1, 10**12]
    holders = {(k // 1000, (k % 1000) // (ROWS // 2)) for k in present}
    return present + absent, holders


def write_file(path: Path, index: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    ids = pa.array(range(index * 1000, index * 1000 + ROWS), pa.int64())
    pq.write_table(
        pa.table({"id": ids, "v": pa.array([index] * ROWS, pa.int32())}),
        path,
        row_group_size=ROWS // 2,
        bloom_filter_options={"id": {"ndv": ROWS // 2, "fpp": 0.01}},
    )


def write_lake(root: Path, n: int) -> list[Path]:
    """``n`` files ``part-00000.parquet``...; file i holds ids i*1000 .. i*1000+99."""
    root.mkdir(parents=True, exist_ok=True)
    paths = [root / f"part-{i:05d}.parquet" for i in range(n)]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(write_file, paths, range(n)))
    return paths


def upload_lake(s3: Any, paths: Sequence[Path], prefix: str) -> str:
    """Put the files under ``prefix`` on the S3 server; returns the prefix URL."""
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda p: s3.put(prefix + p.name, p.read_bytes()), paths))
    return str(s3.url(prefix))


def file_index(verdict: Verdict) -> int:
    return int(verdict.file.rsplit("part-", 1)[1].split(".")[0])


def check_verdicts(verdicts: Sequence[Verdict], n: int, holders: set[tuple[int, int]]) -> int:
    """No false negative, two verdicts per file, no unreadable file; returns pruned count."""
    assert len(verdicts) == 2 * n
    seen = set()
    pruned = 0
    for v in verdicts:
        assert v.row_group is not None and v.rule is not Rule.UNREADABLE, v
        key = (file_index(v), v.row_group)
        seen.add(key)
        if key in holders:
            assert v.kept, f"row group {v.row_group} of {v.file} holds a probed key: pruned"
        pruned += not v.kept
    assert len(seen) == 2 * n
    return pruned


# --------------------------------------------------------------------------- measuring


#: Descriptors other parts of the process may open while a run goes on (in the full suite,
#: threads left by earlier tests); the exact check is ``fds_under`` on the run's files.
FD_SLACK = 2


def _status(field_name: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field_name} in /proc/self/status")


def os_threads() -> int:
    """Every thread of the process, Python's and native ones (obstore's runtime)."""
    return _status("Threads")


def rss() -> int:
    return _status("VmRSS") * 1024


@dataclass
class Peaks:
    """Baselines (before a run) and peaks (during it) of what the sampler watched."""

    fds_before: int = 0
    threads_before: int = 0
    rss_before: int = 0
    fds: int = 0
    threads: int = 0
    rss: int = 0
    samples: int = 0

    @property
    def fds_growth(self) -> int:
        return self.fds - self.fds_before

    @property
    def threads_growth(self) -> int:
        return self.threads - self.threads_before

    @property
    def rss_growth(self) -> int:
        return self.rss - self.rss_before


@contextmanager
def sampled(interval: float = 0.002) -> Iterator[Peaks]:
    """Sample descriptors, threads and RSS in a thread while the block runs."""
    peaks = Peaks(open_fds(), os_threads(), rss())
    peaks.fds, peaks.threads, peaks.rss = peaks.fds_before, peaks.threads_before, peaks.rss_before
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            peaks.fds = max(peaks.fds, open_fds())
            peaks.threads = max(peaks.threads, os_threads())
            peaks.rss = max(peaks.rss, rss())
            peaks.samples += 1
            stop.wait(interval)

    sampler = threading.Thread(target=sample, name="load-sampler", daemon=True)
    sampler.start()
    try:
        yield peaks
    finally:
        stop.set()
        sampler.join()
    # The sampler thread itself counts once in every sample and not in the baseline.
    peaks.threads -= 1


def wait_for_threads(limit: int, deadline: float = THREAD_EXIT_DEADLINE) -> int:
    """Wait (bounded) until the process has at most ``limit`` threads; the count seen."""
    end = time.monotonic() + deadline
    while (count := os_threads()) > limit and time.monotonic() < end:
        time.sleep(0.05)
    return count


@dataclass
class Run:
    """One pruning run: its verdicts (None if cancelled), counters and measurements."""

    verdicts: list[Verdict] | None
    stats: SourceStats
    peaks: Peaks
    seconds: float
    files_done: int = 0
    leftover_tasks: list[str] = field(default_factory=list)
    #: Descriptors open when the event loop started, when the run ended (in the loop), and
    #: after the loop closed.
    fds_loop_start: int = 0
    fds_after: int = 0
    fds_after_loop: int = 0
    #: Descriptors still open on the run's own files once it ended (local runs).
    data_fds: list[str] = field(default_factory=list)


def config() -> ReaderConfig:
    return ReaderConfig(concurrency=CONCURRENCY, io_threads=IO_THREADS)


def run_prune(
    location: str,
    where: Any,
    *,
    backend: str = "asyncio",
    options: dict[str, Any] | None = None,
    cancel_after: int | None = None,
    entry: Any = prune,
) -> Run:
    """Prune ``location`` on ``backend`` (or run ``entry``, ``lookup``, with the same
    arguments); with ``cancel_after``, cancel once that many files are done and record
    what is left in the event loop afterwards."""
    stats = SourceStats()
    done = [0]
    result: dict[str, Any] = {}

    async def main() -> None:
        # The event loop holds descriptors of its own (epoll, a wake-up pipe).
        result["fds_loop"] = open_fds()
        # The backend's own tasks (trio's system tasks) were there before the run.
        before = {t.id for t in anyio.get_running_tasks()}
        with anyio.CancelScope() as scope:

            def progress(finished: int, total: int) -> None:
                done[0] = finished
                if cancel_after is not None and finished >= cancel_after:
                    scope.cancel()

            result["verdicts"] = await entry(
                location, where, options=options, stats=stats, config=config(), progress=progress
            )
        if cancel_after is not None:
            assert scope.cancelled_caught, "the run finished before it could be cancelled"
        result["tasks"] = [t.name for t in anyio.get_running_tasks() if t.id not in before]
        result["fds"] = open_fds()
        result["data_fds"] = [] if "://" in location else fds_under(os.path.abspath(location))

    started = time.monotonic()
    with sampled() as peaks:
        anyio.run(main, backend=backend)
    return Run(
        result.get("verdicts"),
        stats,
        peaks,
        time.monotonic() - started,
        done[0],
        result["tasks"],
        result["fds_loop"],
        result["fds"],
        open_fds(),
        result["data_fds"],
    )


def warm_up(location: str, where: Any, options: dict[str, Any] | None, backend: str) -> None:
    """One small run first: imports, obstore's runtime threads and first-use caches."""
    run_prune(location, where, options=options, backend=backend)


# --------------------------------------------------------------------------- tests


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    pytest.importorskip("pyarrow")
    return write_lake(tmp_path_factory.mktemp("load") / "lake", FILES)


@pytest.fixture(scope="module")
def small_lake(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    pytest.importorskip("pyarrow")
    return write_lake(tmp_path_factory.mktemp("load") / "small", 20)


@pytest.fixture(scope="module")
def s3_lake(s3_server: Any, lake: list[Path], small_lake: list[Path]) -> tuple[str, str]:
    return upload_lake(s3_server, lake, "load/"), upload_lake(s3_server, small_lake, "warm/")


def check_bounded(run: Run) -> None:
    peaks = run.peaks
    assert peaks.samples > 10, "the sampler barely ran; nothing was measured"
    # A local file holds one descriptor while it is read; an S3 read holds a socket.
    assert peaks.fds_growth <= CONCURRENCY + IO_THREADS + 8, peaks
    assert peaks.threads_growth <= IO_THREADS + 4, peaks
    assert peaks.rss_growth <= RSS_BUDGET, peaks


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_prune_many_local_files(lake: list[Path], small_lake: list[Path], backend: str) -> None:
    keys, holders = keys_for(FILES)
    where = col("id").isin(keys)
    warm_up(str(small_lake[0].parent), where, None, backend)
    run = run_prune(str(lake[0].parent), where, backend=backend)
    assert run.verdicts is not None
    pruned = check_verdicts(run.verdicts, FILES, holders)
    assert pruned >= 2 * FILES - 2 * len(holders) - 10  # absent keys: nearly all pruned
    check_bounded(run)
    # No descriptor outlives the run: none on its files, and the count back where it was
    # (give or take what the rest of the process did meanwhile).
    assert run.data_fds == [], run.data_fds
    assert run.fds_after <= run.fds_loop_start + FD_SLACK
    assert run.fds_after_loop <= run.peaks.fds_before + FD_SLACK
    assert run.stats.requests == FILES  # one suffix read each: filters lie in it


@pytest.mark.servers
def test_prune_many_s3_files(s3_server: Any, s3_lake: tuple[str, str]) -> None:
    keys, holders = keys_for(FILES)
    where = col("id").isin(keys)
    options = dict(s3_server.options)
    warm_up(s3_lake[1], where, options, "asyncio")
    run = run_prune(s3_lake[0], where, options=options)
    assert run.verdicts is not None
    check_verdicts(run.verdicts, FILES, holders)
    check_bounded(run)
    assert run.stats.requests == FILES
    # One listing (two LIST pages count once), the LISTs for a table above it, and the lake
    # index folder's (use_index="auto": this prefix has none), sent with the listing.
    assert run.stats.metadata_requests == 2 + table_guard_lists(s3_lake[0])


def check_cancelled(run: Run, threads_before: int) -> None:
    assert run.verdicts is None
    assert FILES // 2 <= run.files_done < FILES
    assert run.leftover_tasks == [], f"tasks still running after the cancel: {run.leftover_tasks}"
    assert run.data_fds == [], f"files left open after the cancel: {run.data_fds}"
    assert run.fds_after <= run.fds_loop_start + FD_SLACK, "descriptors left after the cancel"
    assert run.fds_after_loop <= run.peaks.fds_before + FD_SLACK
    count = wait_for_threads(threads_before)
    assert count <= threads_before, f"{count - threads_before} threads left after the run"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_cancel_halfway_local(lake: list[Path], small_lake: list[Path], backend: str) -> None:
    keys, _ = keys_for(FILES)
    where = col("id").isin(keys)
    # Counted before the warm-up: local reads start no thread that outlives its loop.
    threads_before = os_threads()
    warm_up(str(small_lake[0].parent), where, None, backend)
    run = run_prune(str(lake[0].parent), where, backend=backend, cancel_after=FILES // 2)
    check_cancelled(run, threads_before)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_cancel_a_lookup_halfway_local(
    lake: list[Path], small_lake: list[Path], backend: str
) -> None:
    """An async lookup of local paths runs in one worker thread (rows/api.lookup): its
    cancellation stops it between files, and is waited for, as the event loop's path."""
    keys, _ = keys_for(FILES)
    where = col("id").isin(keys)
    threads_before = os_threads()
    warm_up(str(small_lake[0].parent), where, None, backend)
    run = run_prune(
        str(lake[0].parent), where, backend=backend, cancel_after=FILES // 2, entry=lookup
    )
    check_cancelled(run, threads_before)


@pytest.mark.servers
def test_cancel_halfway_s3(s3_server: Any, s3_lake: tuple[str, str]) -> None:
    keys, _ = keys_for(FILES)
    where = col("id").isin(keys)
    options = dict(s3_server.options)
    # Counted after the warm-up, which starts obstore's runtime threads (they stay for
    # the life of the process); anyio's asyncio workers end with their event loop.
    warm_up(s3_lake[1], where, options, "asyncio")
    threads_before = os_threads()
    run = run_prune(s3_lake[0], where, options=options, cancel_after=FILES // 2)
    check_cancelled(run, threads_before)


def growth_in_fresh_process(root: Path, n: int) -> int:
    """RSS growth of pruning ``n`` files in a new interpreter (after a warm-up there)."""
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "import test_load as t\n"
        "from pybloom_async import col\n"
        "root, n = Path(sys.argv[1]), int(sys.argv[2])\n"
        "where = col('id').isin(t.keys_for(n)[0])\n"
        "t.run_prune(str(root / 'warm'), where)\n"
        "run = t.run_prune(str(root / f'lake{n}'), where)\n"
        "print(json.dumps(run.peaks.rss_growth))\n"
    )
    env = dict(os.environ)
    here = Path(__file__).resolve().parent
    paths = (str(here), str(here.parent), env.get("PYTHONPATH"))
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    proc = subprocess.run(
        [sys.executable, "-c", script, str(root), str(n)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    growth: int = json.loads(proc.stdout.strip().splitlines()[-1])
    return growth


def test_memory_does_not_grow_with_the_number_of_files(
    tmp_path: Path, small_lake: list[Path]
) -> None:
    if os.environ.get("PYBLOOM_ASYNC_EXPECT_NATIVE"):
        # `make asan`: ASan's allocator quarantines freed memory, so RSS grows with any work.
        pytest.skip("RSS is not a measure of live memory under ASan's quarantine")
    write_lake(tmp_path / "warm", 20)
    for n in (200, FILES):
        write_lake(tmp_path / f"lake{n}", n)
    few = growth_in_fresh_process(tmp_path, 200)
    many = growth_in_fresh_process(tmp_path, FILES)
    # Ten times the files: the verdicts grow (2 per file, ~100 bytes each), nothing else.
    assert many - few < 8 * 1024 * 1024, (few, many)
