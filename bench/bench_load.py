"""Load: prune 10,000 small files (local directory and moto's S3), then cancel a run halfway.

Uses the machinery of ``tests/robustness/test_load.py`` (the same files, probe, sampler and checks)
at a larger scale, and prints a Markdown table for ``bench/RESULTS.md``::

    .venv/bin/python bench/bench_load.py                    # 10,000 files, local and S3
    .venv/bin/python bench/bench_load.py --files 2000 --no-s3

For each run: wall time, requests, and the growth over the process's state before the
run of open descriptors, OS threads and RSS (peaks sampled every 2 ms by a thread). Every
run's verdicts are checked (no row group holding a probed key is pruned). Cancelled runs
report what was left when the cancel scope exited: tasks, descriptors, and threads once
the event loop has ended (trio keeps idle workers 10 s; the wait is bounded).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path[:0] = [str(TESTS / "robustness"), str(TESTS)]

import test_load as load  # noqa: E402
from support.servers import S3Server, find_program, free_port, start  # noqa: E402

from pybloom_async import col  # noqa: E402

MiB = 1024 * 1024


def row(name: str, n: int, run: load.Run, extra: str = "") -> str:
    p = run.peaks
    return (
        f"| {name} | {n:,} | {run.seconds:.1f} | {run.stats.requests:,} | "
        f"{p.fds_growth} | {p.threads_growth} | {p.rss_growth / MiB:.0f} | {extra} |"
    )


def cancelled_row(name: str, n: int, run: load.Run, threads_before: int) -> str:
    threads_left = load.wait_for_threads(threads_before) - threads_before
    return (
        f"| {name} | {run.files_done:,} of {n:,} | {len(run.leftover_tasks)} | "
        f"{run.fds_after - run.fds_loop_start} | {max(threads_left, 0)} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--no-s3", action="store_true", help="skip the S3 runs")
    parser.add_argument("--backends", default="asyncio,trio")
    parser.add_argument(
        "--scaling",
        default="2000,10000,20000",
        help="file counts for the RSS-versus-files table (a fresh process each); '' skips it",
    )
    args = parser.parse_args()
    if args.scaling:
        scaling([int(n) for n in args.scaling.split(",")])
    n = args.files
    keys, holders = load.keys_for(n)
    where = col("id").isin(keys)
    results: list[str] = []
    cancels: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.monotonic()
        paths = load.write_lake(root / "lake", n)
        warm = load.write_lake(root / "warm", 20)
        print(f"wrote {n:,} files in {time.monotonic() - started:.0f} s", file=sys.stderr)
        for backend in args.backends.split(","):
            threads_before = load.os_threads()
            load.warm_up(str(warm[0].parent), where, None, backend)
            run = load.run_prune(str(paths[0].parent), where, backend=backend)
            assert run.verdicts is not None
            pruned = load.check_verdicts(run.verdicts, n, holders)
            results.append(row(f"local, {backend}", n, run, f"{pruned:,} of {2 * n:,} pruned"))
            run = load.run_prune(str(paths[0].parent), where, backend=backend, cancel_after=n // 2)
            cancels.append(cancelled_row(f"local, {backend}", n, run, threads_before))
            print(results[-1], file=sys.stderr)
        if not args.no_s3:
            results += s3_runs(paths, warm, where, n, holders, cancels)
    print(
        f"\n{n:,} files x 2 row groups, `id IN ({len(keys)} keys)`, concurrency "
        f"{load.CONCURRENCY}, io_threads {load.IO_THREADS}; growth over the state before "
        "each run\n"
    )
    print("| run | files | wall s | requests | peak fds | peak threads | peak RSS MiB | verdicts |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    print("\n".join(results))
    print("\nCancelled once half the files were done:\n")
    print("| run | files done | tasks left | descriptors left | threads left |")
    print("|---|---:|---:|---:|---:|")
    print("\n".join(cancels))


def scaling(counts: list[int]) -> None:
    """Peak RSS growth of one local run per file count, each in a fresh interpreter."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        load.write_lake(root / "warm", 20)
        for n in counts:
            load.write_lake(root / f"lake{n}", n)
            growth = load.growth_in_fresh_process(root, n)
            rows.append(f"| {n:,} | {growth / MiB:.1f} | {growth / n / 1024:.1f} |")
            print(rows[-1], file=sys.stderr)
    print("\nPeak RSS growth against the number of files (local, asyncio, fresh process):\n")
    print("| files | peak RSS growth MiB | KiB per file |")
    print("|---:|---:|---:|")
    print("\n".join(rows))


def s3_runs(
    paths: list[Path], warm: list[Path], where: Any, n: int, holders: Any, cancels: list[str]
) -> list[str]:
    program = find_program(
        "moto_server", "PYBLOOM_ASYNC_MOTO_SERVER", Path(sys.executable).parent / "moto_server"
    )
    if program is None:
        raise SystemExit("moto_server not found (pip install 'moto[server]'); try --no-s3")
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        process = start(
            "moto_server", [program, "-H", "127.0.0.1", "-p", str(port)], Path(tmp), port
        )
        try:
            s3 = S3Server(endpoint=f"http://127.0.0.1:{port}")
            s3.create_bucket()
            started = time.monotonic()
            prefix = load.upload_lake(s3, paths, "load/")
            warm_prefix = load.upload_lake(s3, warm, "warm/")
            print(f"uploaded in {time.monotonic() - started:.0f} s", file=sys.stderr)
            options = dict(s3.options)
            load.warm_up(warm_prefix, where, options, "asyncio")
            threads_before = load.os_threads()
            run = load.run_prune(prefix, where, options=options)
            assert run.verdicts is not None
            pruned = load.check_verdicts(run.verdicts, n, holders)
            out.append(row("S3 (moto), asyncio", n, run, f"{pruned:,} of {2 * n:,} pruned"))
            print(out[-1], file=sys.stderr)
            run = load.run_prune(prefix, where, options=options, cancel_after=n // 2)
            cancels.append(cancelled_row("S3 (moto), asyncio", n, run, threads_before))
        finally:
            process.stop()
    return out


if __name__ == "__main__":
    main()
