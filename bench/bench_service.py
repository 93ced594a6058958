"""A service's view: one process, one warm BloomReader, point lookups at several concurrencies.

The lake is ``bench/lookup_lake.py``'s (200 files of 4 row groups x 25,000 rows, filters on
``id`` and ``email``), seen through a folder of its own (``service-N/``, hard links to the
same files) so that the lake index built for the second half stays out of the other
benchmarks' lake.

For each mode (``files``: in-file filters; ``lake``: the lake index at the folder's root) and
each concurrency (``--concurrency``, 1, 8 and 32 by default), a fresh worker process:

1. makes one ``BloomReader`` and warms it with one lookup of other keys (the footers and
   filters it keeps are then the service's steady state);
2. runs ``--lookups`` point lookups of present keys (64 by default, each key in one row of a
   random file), ``c`` at a time on one asyncio loop, with that reader;
3. reports the lookups per second, the peak RSS during the burst (sampled every 5 ms), the
   RSS before and after it (after a ``gc.collect()``), the bytes of filters the reader caches
   (its budget: ``max_filter_bytes``), and checks every answer (a row is a function of its id).

Run::

    .venv/bin/python bench/bench_service.py [--files 200] [--lookups 64] [--repeat 3]
        [--json-out bench/results/service.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from lookup_lake import MAX_FILES, ROOT, ROWS_PER_FILE, ensure_lake, id_of, row_of  # noqa: E402
from record import Recorder, cpu_model, load_average  # noqa: E402

MODES = ("files", "lake")


def service_lake(n_files: int, lake_index: bool) -> Path:
    """``service-N/`` (and ``service-N-lake/`` with a lake index, built now): hard links to
    the lake's files (a lake of plain files, as a service reads; no copy)."""
    source = ensure_lake(n_files)
    folder = ROOT / (f"service-{n_files}" + ("-lake" if lake_index else ""))
    folder.mkdir(exist_ok=True)
    for link in source.glob("*.parquet"):
        target = folder / link.name
        if not target.exists():
            os.link(link.resolve(), target)
    if lake_index:
        # Built anew for each run: a hard link made to these files since (another folder of
        # links) changes their inodes' change time, and the index then finds them stale.
        import shutil

        from pybloom_async import build_lake_index_sync

        shutil.rmtree(folder / "_bloom_index", ignore_errors=True)
        build_lake_index_sync(str(folder), ["id"])
    return folder


def keys(n_files: int, count: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return [id_of(rng.randrange(n_files), rng.randrange(ROWS_PER_FILE)) for _ in range(count)]


# ---- the worker ---------------------------------------------------------------------------


class Rss:
    """This process's resident set (KiB), read from ``/proc/self/statm`` through one open
    descriptor: the sampler reads it every 5 ms beside the lookups, and opening and parsing
    ``/proc/self/status`` each time took a tenth of the process's samples."""

    def __init__(self) -> None:
        self._fd = os.open("/proc/self/statm", os.O_RDONLY)
        self._page_kib = os.sysconf("SC_PAGE_SIZE") // 1024

    def kib(self) -> int:
        return int(os.pread(self._fd, 128, 0).split()[1]) * self._page_kib


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    import gc
    import threading

    import anyio
    import pyarrow.parquet  # noqa: F401  (imported lazily by lookup: outside the clock)

    import pybloom_async.rows.fetch  # noqa: F401
    from pybloom_async import BloomReader, col, lookup

    folder, concurrency = spec["folder"], spec["concurrency"]
    reader = BloomReader()
    rss = Rss()
    peak = 0
    sampling = True

    def sample() -> None:
        nonlocal peak
        while sampling:
            peak = max(peak, rss.kib())
            time.sleep(0.005)

    async def main() -> dict[str, Any]:
        nonlocal sampling
        columns = spec.get("columns")
        warm = await lookup(folder, col("id") == spec["warm_key"], columns, reader=reader)
        assert warm.num_rows == 1
        gc.collect()
        before = rss.kib()
        limiter = anyio.CapacityLimiter(concurrency)
        wrong: list[int] = []

        async def one(key: int) -> None:
            async with limiter:
                rows = await lookup(folder, col("id") == key, columns, reader=reader)
            got = [list(r.values()) for r in rows.to_pylist()]
            if got != [row_of(key)]:
                wrong.append(key)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for key in spec["keys"]:
                group.start_soon(one, key)
        wall = time.perf_counter() - started
        sampling = False
        sampler.join()
        gc.collect()
        await anyio.sleep(0.2)  # threads finishing their last hand-back
        after = rss.kib()
        if wrong:
            raise SystemExit(f"wrong rows for {len(wrong)} keys, e.g. {wrong[0]}")
        return {
            "lookups_per_s": len(spec["keys"]) / wall,
            "wall_s": wall,
            "rss_before_mib": before / 1024,
            "rss_peak_mib": peak / 1024,
            "rss_after_mib": after / 1024,
            "cached_filter_mib": reader.cached_filter_bytes / 2**20,
            "cache_budget_mib": reader.max_filter_bytes / 2**20,
        }

    return anyio.run(main)


# ---- the driver ---------------------------------------------------------------------------


def run_worker(spec: dict[str, Any], tree: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--worker", json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=900,
        env=os.environ | {"PYTHONPATH": str(tree)},
    )
    if done.returncode != 0:
        raise RuntimeError(f"worker failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--lookups", type=int, default=64)
    parser.add_argument("--concurrency", default="1,8,32")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell (median)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--columns",
        help="comma-separated result columns (default: lookup's, every file's columns: with "
        "a lake index, every file's footer is then read for the schema)",
    )
    parser.add_argument("--json-out", type=Path)
    parser.add_argument(
        "--tree",
        type=Path,
        default=BENCH.parent,
        help="the checkout whose package the workers import (default: this one): another "
        "commit's worktree measures it with this benchmark, for a before/after",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return
    if not 1 <= args.files <= MAX_FILES:
        raise SystemExit(f"--files must be 1..{MAX_FILES}")
    recorder = Recorder(
        "service",
        files=args.files,
        lookups=args.lookups,
        repeat=args.repeat,
        columns=args.columns,
        tree=str(args.tree),
    )
    print(f"# {cpu_model()}, {os.cpu_count()} cores, load {load_average()}", flush=True)
    results: dict[str, Any] = {}
    for mode in args.modes.split(","):
        folder = service_lake(args.files, lake_index=mode == "lake")
        for c in (int(x) for x in args.concurrency.split(",")):
            runs = []
            for r in range(args.repeat):
                spec = {
                    "folder": str(folder),
                    "concurrency": c,
                    "keys": keys(args.files, args.lookups, args.seed + r),
                    "warm_key": id_of(0, 1),
                    "columns": args.columns.split(",") if args.columns else None,
                }
                runs.append(run_worker(spec, args.tree))
            cell = {k: statistics.median(run[k] for run in runs) for k in runs[0]}
            cell["runs"] = len(runs)
            results[f"{mode}/{c}"] = cell
            print(
                f"{mode:5s} c={c:<3d} {cell['lookups_per_s']:7.1f} lookups/s  RSS before "
                f"{cell['rss_before_mib']:6.0f} MiB, peak {cell['rss_peak_mib']:6.0f}, after "
                f"{cell['rss_after_mib']:6.0f}; filters cached {cell['cached_filter_mib']:.0f} MiB"
                f"  (load {load_average()})",
                flush=True,
            )
    if args.json_out:
        recorder.write(args.json_out, results)


if __name__ == "__main__":
    main()
