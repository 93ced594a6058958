"""Listing at scale: 100,000 objects in 100 hive partitions on moto, behind a 20 ms link.

The bucket gets ``--partitions`` folders ``listing/part=NNN/`` of ``--per-partition`` objects
each (100 x 1,000 by default), all the same tiny Parquet file (100 rows, a Bloom filter on
``id``), put concurrently. Then, each measurement in a fresh Python process (its RSS growth
is its own), through ``latency_proxy.py`` (20 ms each way, so one round trip is 40 ms; a
new proxy per run, so no connection survives a run):

``first``
    ``prune("s3://.../listing/", "id = 5", on_file=...)`` stopped at its first verdict:
    the time to it at 20 ms, 0 ms and ``--long-delay-ms`` (200 ms) each way, and in round
    trips: (time at D - time at 0 ms) / 2D, the latency on its critical path without
    moto's and our CPU time (moto filters its whole bucket for every LIST, about a second
    for 100,000 keys on a loaded machine, so at 20 ms the CPU hides the latency).
``first-collected``
    The same, but the prefix listed to the end first (``list_parquet_files``, then
    ``prune`` of the list): how the run started before files were read as listed.
``list``
    ``iter_parquet_files`` to the end: total wall, pages of the partitions listed
    ``PARTITIONS_AHEAD`` at a time; peak RSS growth.
``prune``
    ``prune`` over all the files: total wall, peak RSS growth of the client (VmHWM minus
    VmRSS before the run), files decided.

``first`` is the median of ``--runs`` (5) runs per delay; the other three cost minutes
each on moto (a LIST costs moto time in proportion to the whole bucket, a GET about
2 ms of CPU), so they run ``--slow-runs`` times (1) at 20 ms. The load average is
recorded. Results: a table on stdout and ``bench/results/listing.json``.

    PYTHONPATH=. .venv/bin/python bench/bench_listing.py [--partitions 100]
        [--per-partition 1000] [--runs 5] [--slow-runs 1] [--delay-ms 20]
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import obstore
import pyarrow as pa
import pyarrow.parquet as pq
from bench_reader import BUCKET, moto_options, moto_server, s3_store
from latency_proxy import start_subprocess
from record import RESULTS, Recorder, load_average

BENCH = Path(__file__).resolve().parent
PREFIX = "listing/"
WHERE = "id = 5"


def tiny_parquet() -> bytes:
    buf = io.BytesIO()
    pq.write_table(
        pa.table({"id": pa.array(range(100), pa.int64())}),
        buf,
        bloom_filter_options={"id": {"ndv": 100, "fpp": 0.01}},
    )
    return buf.getvalue()


def fill(endpoint: str, partitions: int, per_partition: int) -> float:
    """Put the objects (the same bytes under every key); the seconds it took."""
    store = s3_store(endpoint)
    data = tiny_parquet()
    keys = [
        f"{PREFIX}part={p:03d}/f-{i:05d}.parquet"
        for p in range(partitions)
        for i in range(per_partition)
    ]
    t0 = time.monotonic()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda k: obstore.put(store, k, data), keys, chunksize=256))
    return time.monotonic() - t0


# ---- one measurement, in a child process ------------------------------------------------

CHILD = r"""
import json, sys, time
import anyio
from pybloom_async import prune
from pybloom_async.io.base import SourceStats
from pybloom_async.io.listing import iter_parquet_files, list_parquet_files

mode, location, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])

def status(field):
    with open("/proc/self/status") as f:
        return int(next(l for l in f if l.startswith(field)).split()[1]) * 1024

class Stop(Exception):
    pass

async def main():
    stats = SourceStats()
    out = {"files": 0}
    t0 = time.perf_counter()

    def on_file(verdicts):
        if not out["files"]:
            out["first_s"] = time.perf_counter() - t0
            out["first_requests"] = stats.requests
        out["files"] += 1
        if mode.startswith("first"):
            raise Stop

    try:
        if mode == "list":
            async for _ in iter_parquet_files(location, stats=stats, **options):
                out["files"] += 1
        elif mode == "first-collected":
            files = await list_parquet_files(location, stats=stats, **options)
            await prune(files, "id = 5", options=options, stats=stats, on_file=on_file)
        else:
            await prune(location, "id = 5", options=options, stats=stats, on_file=on_file)
    except Stop:
        pass
    out["wall_s"] = time.perf_counter() - t0
    out["requests"] = stats.requests
    return out

rss0 = status("VmRSS:")
out = anyio.run(main)
out["rss_growth_mib"] = (status("VmHWM:") - rss0) / 2**20
print(json.dumps(out))
"""


def measure(mode: str, target: str, delay_ms: float) -> dict[str, Any]:
    proxy = start_subprocess(target, delay=delay_ms / 1000, http_keepalive=True)
    try:
        options = moto_options(proxy.endpoint)
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, mode, f"s3://{BUCKET}/{PREFIX}", json.dumps(options)],
            capture_output=True,
            text=True,
            check=False,
            cwd=BENCH.parent,
            env={"PYTHONPATH": str(BENCH.parent), "PATH": "/usr/bin:/bin"},
        )
    finally:
        proxy.stop()
    if proc.returncode != 0:
        raise RuntimeError(f"{mode} run failed: {proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def median_of(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--per-partition", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--slow-runs", type=int, default=1)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--long-delay-ms", type=float, default=200.0)
    parser.add_argument("--out", type=Path, default=RESULTS / "listing.json")
    args = parser.parse_args()
    recorder = Recorder(
        "listing",
        partitions=args.partitions,
        per_partition=args.per_partition,
        delay_ms=args.delay_ms,
        where=WHERE,
    )
    results: dict[str, Any] = {}
    with moto_server() as (endpoint, _pid):
        fill_s = fill(endpoint, args.partitions, args.per_partition)
        total = args.partitions * args.per_partition
        print(f"# put {total:,} objects in {fill_s:.0f} s; load average {load_average()}")
        target = endpoint.removeprefix("http://")
        for delay in (args.delay_ms, 0.0, args.long_delay_ms):
            # The time to the first verdict; at 0 ms it is CPU (mostly moto's), and what a
            # longer link adds over it counts the round trips on the critical path.
            got = [measure("first", target, delay) for _ in range(args.runs)]
            results[f"first@{delay:g}ms"] = got
            first = median_of(got, "first_s")
            line = f"first verdict at {delay:g} ms each way: {first:.2f} s (median of"
            line += f" {len(got)}; {median_of(got, 'first_requests'):.0f} requests before it),"
            line += f" RSS growth {median_of(got, 'rss_growth_mib'):.1f} MiB"
            print(line, flush=True)
        cpu = median_of(results["first@0ms"], "first_s")
        for delay in (args.delay_ms, args.long_delay_ms):
            extra = median_of(results[f"first@{delay:g}ms"], "first_s") - cpu
            trips = extra / (2 * delay / 1000)
            results[f"first_round_trips@{delay:g}ms"] = trips
            print(f"  latency at {delay:g} ms: {extra:.2f} s = {trips:.1f} round trips")
        for mode, runs in (("first-collected", args.slow_runs), ("list", args.slow_runs),
                           ("prune", args.slow_runs)):  # fmt: skip
            got = [measure(mode, target, args.delay_ms) for _ in range(runs)]
            results[mode] = got
            line = f"{mode} at {args.delay_ms:g} ms: {len(got)} run(s)"
            if "first_s" in got[0]:
                line += f", first verdict {median_of(got, 'first_s'):.2f} s"
            line += f", wall {median_of(got, 'wall_s'):.2f} s"
            line += f", RSS growth {median_of(got, 'rss_growth_mib'):.1f} MiB"
            line += f", files {got[0]['files']:,}, requests {got[0]['requests']:,}"
            print(line, flush=True)
    results["fill_s"] = fill_s
    print(f"# load average {load_average()}")
    print(f"wrote {recorder.write(args.out, results)}")


if __name__ == "__main__":
    main()
