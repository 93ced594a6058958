"""The client CPU of one object-store request, by the way obstore is called.

A moto_server on 127.0.0.1 holds ``--objects`` objects of 64 KiB (and, for ``prune``, a
lake of ``--lake-files`` small Parquet files with bloom filters on ``id``). Each case
makes its requests ``--concurrency`` at once and reports the process CPU
(``time.process_time``: every thread, the store client's runtime threads included) per
request, and the wall time, as medians of ``--runs`` runs after one warm-up run. moto's
own CPU is another process's and is not counted. Cases (``--cases``):

* ``threads``: obstore's sync ``get`` (a range, with If-Match) in anyio worker threads
  under a ``CapacityLimiter``: the path ``io/store.ObjectStoreSource`` takes.
* ``inline``: the same ``get`` one after another in the calling thread: obstore's own
  cost, without the hand-over to a worker thread (and without concurrency).
* ``async``: obstore's ``get_async`` (the same request) awaited on asyncio.
* ``threads-batch`` / ``async-batch``: ``--ranges`` ranges of one object per call, with
  ``get_ranges`` in a worker thread / ``get_ranges_async``; obstore merges ranges closer
  than ``coalesce`` into one request. The figure is per range. These calls take no
  If-Match (obstore 0.12), so they cannot pin a read to one version of the object.
* ``source``: ``ObjectStoreSource`` as a lookup uses it: ``read_suffix`` then
  ``read_ranges`` of ``--ranges`` ranges; per request counted by its ``SourceStats``.
* ``prune``: ``pybloom_async.prune`` of the lake (``id = k``); per file.

``source`` and ``prune`` run on each of ``--backends``: ``asyncio`` and ``trio`` (the
product's path), and ``asyncio-api``: the same source with obstore's async API
(``get_async``, ``head_async``) on asyncio, patched in for the run.

``--exit-check N`` instead runs N short processes that make 16 requests and exit, with
the sync API in threads and with the async API on asyncio, and counts those that did not
exit with status 0 (an abort at interpreter exit); it also tries the async API under trio.

Run::

    .venv/bin/python bench/bench_store_calls.py [--runs 5] [--cases threads,async,...]
    .venv/bin/python bench/bench_store_calls.py --exit-check 200
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

import anyio  # noqa: E402
import anyio.to_thread  # noqa: E402
import obstore  # noqa: E402
from bench_reader import ACCESS_KEY, BUCKET, REGION, SECRET_KEY, moto_server, s3_store  # noqa: E402
from record import load_average  # noqa: E402

OBJECT_BYTES = 64 * 1024
RANGE_BYTES = 4096
PREFIX = "calls/"
LAKE_PREFIX = "lake60/"
ALL_CASES = ("inline", "threads", "async", "threads-batch", "async-batch", "source", "prune")


def key_of(i: int) -> str:
    return f"{PREFIX}obj-{i:04d}"


def setup_objects(store: Any, n: int) -> list[str]:
    """Put ``n`` objects; returns their ETags (for If-Match)."""
    data = os.urandom(OBJECT_BYTES)
    return [obstore.put(store, key_of(i), data)["e_tag"] or "" for i in range(n)]


def setup_lake(store: Any, n: int) -> list[str]:
    """Put ``n`` small Parquet files (4 row groups x 2,000 rows, bloom on ``id``)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    keys = []
    for f in range(n):
        ids = pa.array([2 * (r * n + f) for r in range(8000)], pa.int64())
        table = pa.table({"id": ids, "v": pa.array(range(8000), pa.int32())})
        buf = io.BytesIO()
        pq.write_table(
            table,
            buf,
            row_group_size=2000,
            bloom_filter_options={"id": {"ndv": 2000, "fpp": 0.01}},
        )
        key = f"{LAKE_PREFIX}part-{f:03d}.parquet"
        obstore.put(store, key, buf.getvalue())
        keys.append(key)
    return keys


def measure(runners: dict[str, Callable[[], int]], runs: int) -> dict[str, dict[str, Any]]:
    """Median CPU (ms) per unit and wall (ms) of ``runs`` runs of each case after one
    warm-up; the cases take turns, so a change of the machine's load spreads over all."""
    cpus: dict[str, list[float]] = {name: [] for name in runners}
    walls: dict[str, list[float]] = {name: [] for name in runners}
    loads: dict[str, list[float]] = {name: [] for name in runners}
    units: dict[str, int] = {}
    for run in runners.values():
        run()
    for _ in range(runs):
        for name, run in runners.items():
            c0, w0 = time.process_time(), time.perf_counter()
            n = run()
            cpus[name].append((time.process_time() - c0) * 1000 / n)
            walls[name].append((time.perf_counter() - w0) * 1000)
            loads[name].append(os.getloadavg()[0])
            units[name] = n
    return {
        name: {
            "cpu_ms_per_unit": statistics.median(cpus[name]),
            "cpu_min": min(cpus[name]),
            "cpu_max": max(cpus[name]),
            "wall_ms": statistics.median(walls[name]),
            "units": units[name],
            "load": statistics.median(loads[name]),
        }
        for name in runners
    }


async def bounded(calls: list[Callable[[], Awaitable[Any]]], limit: int) -> None:
    sem = anyio.Semaphore(limit)

    async def one(call: Callable[[], Awaitable[Any]]) -> None:
        async with sem:
            await call()

    async with anyio.create_task_group() as tg:
        for call in calls:
            tg.start_soon(one, call)


def case_threads(store: Any, etags: list[str], conc: int) -> Callable[[], int]:
    limiter = anyio.CapacityLimiter(conc)

    def get(i: int) -> bytes:
        opts: Any = {"range": (0, RANGE_BYTES), "if_match": etags[i]}
        return bytes(obstore.get(store, key_of(i), options=opts).bytes())

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for i in range(len(etags)):
                tg.start_soon(functools.partial(anyio.to_thread.run_sync, get, i, limiter=limiter))

    def run() -> int:
        anyio.run(main)
        return len(etags)

    return run


def case_inline(store: Any, etags: list[str]) -> Callable[[], int]:
    def run() -> int:
        for i in range(len(etags)):
            opts: Any = {"range": (0, RANGE_BYTES), "if_match": etags[i]}
            bytes(obstore.get(store, key_of(i), options=opts).bytes())
        return len(etags)

    return run


def case_async(store: Any, etags: list[str], conc: int) -> Callable[[], int]:
    async def get(i: int) -> bytes:
        opts: Any = {"range": (0, RANGE_BYTES), "if_match": etags[i]}
        result = await obstore.get_async(store, key_of(i), options=opts)
        return bytes(await result.bytes_async())

    def run() -> int:
        anyio.run(bounded, [functools.partial(get, i) for i in range(len(etags))], conc)
        return len(etags)

    return run


def batch_ranges(n_ranges: int) -> tuple[list[int], list[int]]:
    step = OBJECT_BYTES // n_ranges
    starts = [k * step for k in range(n_ranges)]
    return starts, [s + min(RANGE_BYTES, step) for s in starts]


def case_threads_batch(store: Any, n: int, conc: int, n_ranges: int) -> Callable[[], int]:
    limiter = anyio.CapacityLimiter(conc)
    starts, ends = batch_ranges(n_ranges)

    def get(i: int) -> list[bytes]:
        return [bytes(b) for b in obstore.get_ranges(store, key_of(i), starts=starts, ends=ends)]

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(functools.partial(anyio.to_thread.run_sync, get, i, limiter=limiter))

    def run() -> int:
        anyio.run(main)
        return n * n_ranges

    return run


def case_async_batch(store: Any, n: int, conc: int, n_ranges: int) -> Callable[[], int]:
    starts, ends = batch_ranges(n_ranges)

    async def get(i: int) -> list[bytes]:
        got = await obstore.get_ranges_async(store, key_of(i), starts=starts, ends=ends)
        return [bytes(b) for b in got]

    def run() -> int:
        anyio.run(bounded, [functools.partial(get, i) for i in range(n)], conc)
        return n * n_ranges

    return run


def store_options(endpoint: str) -> dict[str, Any]:
    return {
        "endpoint": endpoint,
        "region": REGION,
        "access_key_id": ACCESS_KEY,
        "secret_access_key": SECRET_KEY,
        "allow_http": True,
    }


def async_source_class() -> type:
    """``ObjectStoreSource`` reading with obstore's async API (asyncio only): what the
    product would be with it, for the ``source`` and ``prune`` cases' ``asyncio-api`` runs."""
    from pybloom_async.io.identity import meta_identity
    from pybloom_async.io.objects import ObjectStoreSource

    class AsyncApiSource(ObjectStoreSource):
        async def _stat(self) -> Any:
            meta = await obstore.head_async(self.store, self.key)
            return meta_identity(self._path, meta)

        async def _get(self, start: int, end: int, etag: str | None) -> bytes:
            opts: Any = {"range": (start, end)}
            if etag is not None:
                opts["if_match"] = etag
            result = await obstore.get_async(self.store, self.key, options=opts)
            return bytes(await result.bytes_async())

        async def _read(self, ranges: list[tuple[int, int]]) -> list[bytes]:
            etag = self._etag if self._etag and not self._etag.startswith("W/") else None
            out: list[bytes] = [b""] * len(ranges)

            async def one(k: int) -> None:
                out[k] = await self._get(*ranges[k], etag)

            async with anyio.create_task_group() as tg:
                for k in range(len(ranges)):
                    tg.start_soon(one, k)
            return out

        async def _read_suffix(self, n: int) -> Any:
            opts: Any = {"range": {"suffix": n}}
            result = await obstore.get_async(self.store, self.key, options=opts)
            data = bytes(await result.bytes_async())
            return data, meta_identity(self._path, result.meta)

    return AsyncApiSource


@contextlib.contextmanager
def source_class(backend: str) -> Iterator[None]:
    """Within: ``open_source`` makes the async-API source for backend ``asyncio-api``."""
    import pybloom_async.io.objects as store_module

    if backend != "asyncio-api":
        yield
        return
    saved = store_module.ObjectStoreSource
    store_module.ObjectStoreSource = async_source_class()  # type: ignore[misc]
    try:
        yield
    finally:
        store_module.ObjectStoreSource = saved  # type: ignore[misc]


def case_source(endpoint: str, n: int, conc: int, n_ranges: int, backend: str) -> Callable[[], int]:
    from pybloom_async.io.base import SourceStats
    from pybloom_async.io.objects import open_source

    options = store_options(endpoint)
    starts, ends = batch_ranges(n_ranges)
    ranges = list(zip(starts, ends, strict=True))

    async def one(stats: SourceStats, limiter: anyio.CapacityLimiter, i: int) -> None:
        source = open_source(f"s3://{BUCKET}/{key_of(i)}", stats=stats, limiter=limiter, **options)
        async with source:
            await source.read_suffix(RANGE_BYTES)
            await source.read_ranges(ranges)

    async def main(stats: SourceStats) -> None:
        limiter = anyio.CapacityLimiter(conc)
        await bounded([functools.partial(one, stats, limiter, i) for i in range(n)], conc)

    def run() -> int:
        stats = SourceStats()
        with source_class(backend):
            anyio.run(main, stats, backend=backend.removesuffix("-api"))
        return stats.requests + stats.metadata_requests

    return run


def case_prune(
    endpoint: str, n_files: int, backend: str, requests: list[float]
) -> Callable[[], int]:
    """``requests`` gets each run's requests per file (data reads, HEADs and listings)."""
    from pybloom_async import col, prune
    from pybloom_async.io.base import SourceStats

    options = store_options(endpoint)

    async def main() -> None:
        key = 2 * (5 * n_files + 3)  # row 5 of file 3
        url = f"s3://{BUCKET}/{LAKE_PREFIX}"
        stats = SourceStats()
        verdicts = await prune(url, col("id") == key, options=options, stats=stats)
        requests.append((stats.requests + stats.metadata_requests) / n_files)
        kept = {v.file for v in verdicts if v.kept}
        files = {v.file for v in verdicts}
        if len(files) != n_files or not any(f.endswith("part-003.parquet") for f in kept):
            raise SystemExit(f"prune kept {sorted(kept)} of {len(files)} files")

    def run() -> int:
        with source_class(backend):
            anyio.run(main, backend=backend.removesuffix("-api"))
        return n_files

    return run


# --------------------------------------------------------------------------- exit check

EXIT_SCRIPT = """
import sys, anyio, anyio.to_thread, obstore
from obstore.store import S3Store
mode, endpoint = sys.argv[1], sys.argv[2]
store = S3Store({bucket!r}, endpoint=endpoint, region="us-east-1", access_key_id="testing",
                secret_access_key="testing", client_options={{"allow_http": True}})
keys = [{prefix!r} + f"obj-{{i:04d}}" for i in range(16)]
async def main():
    async with anyio.create_task_group() as tg:
        for k in keys:
            if mode == "threads":
                get = lambda k=k: bytes(obstore.get(store, k).bytes())  # noqa: E731
                tg.start_soon(anyio.to_thread.run_sync, get)
            else:
                async def one(k=k):
                    r = await obstore.get_async(store, k)
                    await r.bytes_async()
                tg.start_soon(one)
anyio.run(main, backend="trio" if mode == "trio" else "asyncio")
"""


def exit_check(endpoint: str, n: int) -> None:
    script = EXIT_SCRIPT.format(bucket=BUCKET, prefix=PREFIX)
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(script)
    try:
        for mode in ("threads", "async", "trio"):
            runs = 3 if mode == "trio" else n
            bad: dict[int, int] = {}
            last = ""
            for _ in range(runs):
                p = subprocess.run(
                    [sys.executable, f.name, mode, endpoint], capture_output=True, text=True
                )
                if p.returncode != 0:
                    bad[p.returncode] = bad.get(p.returncode, 0) + 1
                    last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
            print(f"exit {mode:8s}: {sum(bad.values())}/{runs} failed {bad} {last[:160]}")
            print(f"  load {load_average()}", flush=True)
    finally:
        os.unlink(f.name)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--objects", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--ranges", type=int, default=4)
    ap.add_argument("--lake-files", type=int, default=60)
    ap.add_argument("--cases", default=",".join(ALL_CASES))
    ap.add_argument(
        "--backends",
        default="asyncio,trio,asyncio-api",
        help="for source and prune; asyncio-api: the source with obstore's async API",
    )
    ap.add_argument("--exit-check", type=int, default=0)
    args = ap.parse_args()
    cases = args.cases.split(",")
    print(f"obstore {obstore.__version__}, python {sys.version.split()[0]}, load {load_average()}")
    with moto_server() as (endpoint, _pid):
        store = s3_store(endpoint)
        etags = setup_objects(store, args.objects)
        if args.exit_check:
            exit_check(endpoint, args.exit_check)
            return
        runners: dict[str, Callable[[], int]] = {}
        prune_requests: list[float] = []
        n, conc, nr = args.objects, args.concurrency, args.ranges
        for case in cases:
            if case == "threads":
                runners[case] = case_threads(store, etags, conc)
            elif case == "inline":
                runners[case] = case_inline(store, etags)
            elif case == "async":
                runners[case] = case_async(store, etags, conc)
            elif case == "threads-batch":
                runners[case] = case_threads_batch(store, n, conc, nr)
            elif case == "async-batch":
                runners[case] = case_async_batch(store, n, conc, nr)
            elif case == "source":
                for b in args.backends.split(","):
                    runners[f"source-{b}"] = case_source(endpoint, n, conc, nr, b)
            elif case == "prune":
                setup_lake(store, args.lake_files)
                for b in args.backends.split(","):
                    runners[f"prune-{b}"] = case_prune(endpoint, args.lake_files, b, prune_requests)
            else:
                raise SystemExit(f"unknown case {case}")
        unit = {"threads-batch": "range", "async-batch": "range"}
        results = measure(runners, args.runs)
        for name, r in results.items():
            what = "file" if name.startswith("prune") else unit.get(name, "request")
            print(
                f"{name:16s} {r['cpu_ms_per_unit']:.3f} ms CPU/{what} "
                f"(min {r['cpu_min']:.3f}, max {r['cpu_max']:.3f}; {r['units']} {what}s), "
                f"wall {r['wall_ms']:.1f} ms, load {r['load']:.2f}",
                flush=True,
            )
        if prune_requests:
            print(f"prune: {statistics.median(prune_requests):.2f} requests per file")


if __name__ == "__main__":
    main()
