"""Sidecar indexes vs in-file filters vs no pruning, over 1,000 files (issue 4).

Data (``bench/data/index1000/``, written once with pyarrow, regenerated when the file count
or shape changes): ``--files`` files of 10 row groups x 200 rows and 12 columns of mixed
types. ``id`` (random INT64) and ``email`` (random strings) carry in-file Split Block Bloom
Filters (pyarrow ``bloom_filter_options``, NDV 200 per row group, FPP 0.01), so statistics
cannot prune them; every file gets a sidecar index on both columns
(``pybloom_async.index.build.build_index``, FPP 0.01, sized by each file's distinct count).

Query: ``id IN (4 keys) OR email IN (4 keys)``: half the keys read from random files, half
absent. Methods, each checked (every file and row group holding a present key is kept):

* **none**: no pruning: list the files, keep them all (the downstream query reads
  everything);
* **in-file**: ``pybloom_async.pruning.api(root)``: each file's footer and filters;
* **index**: ``prune_with_index(root, row_groups=False)``: one index per file, file level;
* **index+rg**: ``prune_with_index(root)``: the index, then the row groups of the files kept.

Before the local runs, the CPU cost of parsing one index held in memory (``parse_index``,
the floor of the file-level pass), with its footer decode and one page header apart.

Where: locally (fresh readers each run, OS page cache warm), and on moto_server behind
``bench/latency_proxy.py`` (20 ms each way by default, keep-alive mode, handshake charged,
a new proxy per run as in ``bench_reader.py``). The indexes on S3 are built on S3
(``build_index`` on the bucket prefix: each object read whole, index PUT next to it), so they
record the objects' ETags. Each run reports the wall time (median over ``--runs``), the
requests counted by ``SourceStats`` (data + metadata), the bytes read for pruning, files and
row groups kept, and the data bytes the query still has to read (compressed sizes of the
kept row groups; of every row group of a file kept at file level).

Run::

    .venv/bin/python bench/bench_index.py [--files 1000] [--runs 3] [--delay-ms 20]
        [--sections local,s3] [--concurrency 64] [--quick]

Output: tables, then one machine-readable line per figure: ``bench=index section=...``.
"""

from __future__ import annotations

import argparse
import decimal
import gc
import importlib.metadata
import json
import os
import platform
import random
import re
import shutil
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import obstore
import pyarrow as pa
import pyarrow.parquet as pq
from bench_reader import (
    ACCESS_KEY,
    BUCKET,
    REGION,
    SECRET_KEY,
    cpu_model,
    load_average,
    moto_server,
    process_cpu_s,
    s3_store,
)
from latency_proxy import start_subprocess

from pybloom_async import col, prune, simd_backend
from pybloom_async.index.build import build_index
from pybloom_async.index.format import index_location
from pybloom_async.index.parse import parse_index
from pybloom_async.index.prune import prune_with_index
from pybloom_async.io.base import SourceStats
from pybloom_async.io.store import clear_store_cache
from pybloom_async.parquet import (
    PageHeaderReader,
    decode_file_metadata,
    parse_footer_tail,
)
from pybloom_async.predicate import Predicate

BENCH = Path(__file__).resolve().parent
DEFAULT_OUT = BENCH / "data" / "index1000"
ROW_GROUPS = 10
ROWS_PER_GROUP = 200
PREFIX = "index1000/"
METHODS = ("none", "in-file", "index", "index+rg")


def emit(section: str, **fields: object) -> None:
    parts = [f"bench=index section={section}"]
    for k, v in fields.items():
        parts.append(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}")
    print(" ".join(parts), flush=True)


def machine_line() -> None:
    versions = {
        name: importlib.metadata.version(name)
        for name in ("pyarrow", "obstore", "moto", "anyio", "thrift")
    }
    print(
        f"# {cpu_model()}, {os.cpu_count()} cores, load average {load_average()}; "
        f"Python {platform.python_version()}; SBBF backend {simd_backend()}; "
        + ", ".join(f"{k} {v}" for k, v in versions.items()),
        flush=True,
    )
    emit("machine", cpu=repr(cpu_model()), cores=os.cpu_count(),
         python=platform.python_version(), backend=simd_backend(), **versions)  # fmt: skip


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+]+", "_", text).strip("_")


# --------------------------------------------------------------------------- data


def _mix(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """splitmix64: spread keys over the whole range, fixed for every run."""
    z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def table_for(file_no: int) -> pa.Table:
    rows = ROW_GROUPS * ROWS_PER_GROUP
    seq = np.arange(file_no * rows, (file_no + 1) * rows, dtype=np.int64)
    ids = _mix(seq).view(np.int64)
    mails = _mix(seq + np.int64(1 << 40))
    return pa.table(
        {
            "id": pa.array(ids),
            "email": pa.array([f"user-{m:016x}@example.com" for m in mails.tolist()]),
            "seq": pa.array(seq),
            "c_int": pa.array((seq % 100_000).astype(np.int32)),
            "c_double": pa.array(seq / 7.0),
            "c_str": pa.array([f"s{s % 1000}" for s in seq.tolist()]),
            "c_date": pa.array((seq % 20_000).astype(np.int32), pa.date32()),
            "c_ts": pa.array(1_600_000_000_000_000 + seq * 1_000_003, pa.timestamp("us", "UTC")),
            "c_dec": pa.array(
                [decimal.Decimal(int(s) % 10**9).scaleb(-2) for s in seq.tolist()],
                pa.decimal128(12, 2),
            ),
            "c_bool": pa.array(seq % 3 == 0),
            "c_cat": pa.array([f"cat{s % 7}" for s in seq.tolist()]).dictionary_encode(),
            "c_f32": pa.array((seq % 1000).astype(np.float32)),
        }
    )


def ensure_data(root: Path, files: int) -> list[Path]:
    """``files`` data files, each with its sidecar index; reused when already there."""
    marker = root / "_layout.json"
    layout = {"files": files, "row_groups": ROW_GROUPS, "rows": ROWS_PER_GROUP, "v": 1}
    paths = [root / f"part-{i:05d}.parquet" for i in range(files)]
    if (
        marker.exists()
        and json.loads(marker.read_text()) == layout
        and all(p.exists() and Path(index_location(str(p))).exists() for p in paths)
    ):
        return paths
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    t0 = time.perf_counter()
    options = {"ndv": ROWS_PER_GROUP, "fpp": 0.01}
    for i, path in enumerate(paths):
        pq.write_table(
            table_for(i),
            path,
            row_group_size=ROWS_PER_GROUP,
            bloom_filter_options={"id": options, "email": options},
        )
    written = time.perf_counter() - t0
    t0 = time.perf_counter()
    builds = anyio.run(lambda: build_index(str(root), ["id", "email"]))
    build_s = time.perf_counter() - t0
    bad = [b for b in builds if b.error]
    if bad:
        raise RuntimeError(f"index build failed: {bad[:3]}")
    data = sum(p.stat().st_size for p in paths)
    index = sum(b.index_bytes or 0 for b in builds)
    print(f"# wrote {files} files ({data / 1e6:.1f} MB) in {written:.1f} s")
    print(
        f"# built {len(builds)} sidecar indexes ({index / 1e6:.2f} MB, "
        f"{index / len(builds) / 1e3:.1f} kB each) in {build_s:.1f} s"
    )
    emit("build", where="local", files=files, seconds=build_s, index_bytes=index, data_bytes=data)
    marker.write_text(json.dumps(layout))
    return paths


# --------------------------------------------------------------------------- keys and truth


@dataclass(frozen=True)
class Query:
    where: Predicate
    holders: frozenset[tuple[str, int]]  # (file name, row group) holding a present key
    files_holding: frozenset[str]


def make_query(paths: Sequence[Path], seed: int, n_present: int = 2, n_absent: int = 2) -> Query:
    rng = random.Random(seed)
    ids: list[int] = []
    emails: list[str] = []
    holders: set[tuple[str, int]] = set()
    for column, sink in (("id", ids), ("email", emails)):
        for _ in range(n_present):
            path = rng.choice(paths)
            rg = rng.randrange(ROW_GROUPS)
            values = pq.ParquetFile(path).read_row_group(rg, columns=[column]).column(0)
            sink.append(values[rng.randrange(len(values))].as_py())
            holders.add((path.name, rg))
    ids += [rng.randrange(-(2**63), 2**63) for _ in range(n_absent)]
    emails += [f"absent-{rng.getrandbits(64):016x}@example.com" for _ in range(n_absent)]
    where = col("id").isin(ids) | col("email").isin(emails)
    return Query(where, frozenset(holders), frozenset(name for name, _ in holders))


def row_group_sizes(paths: Sequence[Path]) -> dict[str, list[int]]:
    sizes = {}
    for p in paths:
        meta = pq.ParquetFile(p).metadata
        sizes[p.name] = [
            sum(meta.row_group(g).column(c).total_compressed_size for c in range(meta.num_columns))
            for g in range(meta.num_row_groups)
        ]
    return sizes


@dataclass
class Run:
    wall_s: float
    requests: int
    metadata_requests: int
    bytes_read: int
    files_kept: int
    groups_kept: int
    data_left: int
    client_cpu_s: float = 0.0
    server_cpu_s: float | None = None


def summarise(
    method: str, verdicts: Sequence[Any], sizes: dict[str, list[int]], query: Query
) -> tuple[int, int, int]:
    """(files kept, row groups kept, data bytes left); raises on a false negative."""
    kept_files: set[str] = set()
    kept_groups: set[tuple[str, int]] = set()
    for v in verdicts:
        name = v.file.rsplit("/", 1)[-1]
        if not v.kept:
            continue
        kept_files.add(name)
        if v.row_group is None:
            kept_groups.update((name, g) for g in range(len(sizes[name])))
        else:
            kept_groups.add((name, v.row_group))
    if len({v.file.rsplit("/", 1)[-1] for v in verdicts}) != len(sizes):
        raise RuntimeError(f"{method}: verdicts for {len(verdicts)} entries, not every file")
    missing = query.holders - kept_groups
    if missing:
        raise RuntimeError(f"{method}: FALSE NEGATIVE, pruned {sorted(missing)[:3]}")
    left = sum(sizes[name][g] for name, g in kept_groups)
    return len(kept_files), len(kept_groups), left


async def run_method(
    method: str, location: str, query: Query, options: dict[str, Any] | None, concurrency: int
) -> tuple[float, list[Any], SourceStats]:
    stats = SourceStats()
    t0 = time.perf_counter()
    verdicts: list[Any]
    if method == "none":
        from pybloom_async.io.listing import list_parquet_files

        opts = None
        if options:
            from pybloom_async.io.store import StoreOptions

            opts = StoreOptions(**options)
        found = await list_parquet_files(location, options=opts, stats=stats)
        verdicts = [_Kept(f.path) for f in found]
    elif method == "in-file":
        verdicts = await prune(
            location, query.where, options=options, stats=stats, concurrency=concurrency
        )
    elif method == "index":
        verdicts = await prune_with_index(
            location, query.where, options=options, stats=stats, concurrency=concurrency,
            row_groups=False,
        )  # fmt: skip
    else:
        verdicts = await prune_with_index(
            location, query.where, options=options, stats=stats, concurrency=concurrency
        )
    return time.perf_counter() - t0, verdicts, stats


@dataclass(frozen=True)
class _Kept:
    file: str
    row_group: int | None = None
    kept: bool = True


def one_run(
    method: str,
    location: str,
    query: Query,
    sizes: dict[str, list[int]],
    options: dict[str, Any] | None,
    concurrency: int,
) -> Run:
    cpu = time.process_time()
    wall, verdicts, stats = anyio.run(
        lambda: run_method(method, location, query, options, concurrency)
    )
    files, groups, left = summarise(method, verdicts, sizes, query)
    return Run(
        wall, stats.requests, stats.metadata_requests, stats.bytes_read, files, groups, left,
        client_cpu_s=time.process_time() - cpu,
    )  # fmt: skip


def report(where: str, delay_ms: float, concurrency: int, method: str, runs: list[Run]) -> None:
    emit(
        where,
        method=slug(method),
        delay_ms=delay_ms,
        concurrency=concurrency,
        runs=len(runs),
        wall_ms=statistics.median(r.wall_s for r in runs) * 1e3,
        wall_ms_min=min(r.wall_s for r in runs) * 1e3,
        requests=statistics.median(r.requests for r in runs),
        metadata_requests=statistics.median(r.metadata_requests for r in runs),
        bytes_read=statistics.median(r.bytes_read for r in runs),
        files_kept=runs[0].files_kept,
        groups_kept=runs[0].groups_kept,
        data_left_bytes=runs[0].data_left,
        client_cpu_s=statistics.median(r.client_cpu_s for r in runs),
        server_cpu_s=(
            statistics.median(r.server_cpu_s for r in runs if r.server_cpu_s is not None)
            if any(r.server_cpu_s is not None for r in runs)
            else "n/a"
        ),
    )


def print_table(title: str, rows: list[tuple[str, list[Run]]], total_bytes: int) -> None:
    print(f"\n{title}")
    print(
        f"{'method':<10} {'wall ms':>8} {'requests':>9} {'meta':>5} {'MB read':>8} "
        f"{'files':>6} {'rgs':>6} {'MB left':>8} {'left %':>7} {'CPU s':>6}"
    )
    for method, runs in rows:
        print(
            f"{method:<10} {statistics.median(r.wall_s for r in runs) * 1e3:>8.0f} "
            f"{statistics.median(r.requests for r in runs):>9.0f} "
            f"{statistics.median(r.metadata_requests for r in runs):>5.0f} "
            f"{statistics.median(r.bytes_read for r in runs) / 1e6:>8.2f} "
            f"{runs[0].files_kept:>6} {runs[0].groups_kept:>6} "
            f"{runs[0].data_left / 1e6:>8.2f} {100 * runs[0].data_left / total_bytes:>6.2f}% "
            f"{statistics.median(r.client_cpu_s for r in runs):>6.2f}"
        )


def interleaved(
    methods: Sequence[str], runs: int, budget_s: float, call: Callable[[str], Run]
) -> dict[str, list[Run]]:
    out: dict[str, list[Run]] = {m: [] for m in methods}
    for m in methods:  # warm-up, discarded: imports, thread pools, first requests
        call(m)
    deadline = time.monotonic() + budget_s
    for i in range(runs):
        if i >= 1 and time.monotonic() > deadline:
            break
        for m in methods:  # interleaved, so drift hits all alike
            gc.collect()
            out[m].append(call(m))
    return out


# --------------------------------------------------------------------------- sections


def parse_cost(paths: Sequence[Path], rounds: int) -> None:
    """CPU cost of decoding one index held in memory: ``parse_index``, and its parts.

    The floor of the file-level pass: every index is read whole, then parsed. Timed over
    all the files' indexes (bytes read first), ``rounds`` times; medians per index. The
    parts: the footer alone as ``parse_index`` reads it (the decoder's first pass, then
    every leaf's chunk by the C scanner) and with every part decoded (``lazy=False``),
    and one page header.
    """
    blobs = [Path(index_location(str(p))).read_bytes() for p in paths]
    footers = [bytes(parse_footer_tail(b, len(b)).metadata_bytes(b)) for b in blobs]
    first_page = [
        decode_file_metadata(f).row_groups[0].columns[0].data_page_offset for f in footers
    ]
    readers = [PageHeaderReader(b) for b in blobs]

    def as_parsed(i: int) -> object:
        meta = decode_file_metadata(footers[i])
        return meta.chunks_of(range(len(meta.schema.columns)))

    cases: dict[str, Callable[[int], object]] = {
        "parse_index": lambda i: parse_index(blobs[i]),
        "footer: as parse_index reads it": as_parsed,
        "footer: every part (lazy=False)": lambda i: decode_file_metadata(footers[i], lazy=False),
        "one page header": lambda i: readers[i].read(first_page[i]),
    }
    n = len(blobs)
    print(
        f"\n## parsing one index in memory ({n} indexes, median of {rounds} rounds; "
        f"{statistics.median(len(b) for b in blobs):.0f} B, "
        f"{len(decode_file_metadata(footers[0]).schema.columns)} leaves each); "
        f"load average {load_average()}"
    )
    print(f"{'what':<36} {'us per index':>13}")
    for name, fn in cases.items():
        per_round = []
        for _ in range(rounds):
            started = time.perf_counter()
            for i in range(n):
                fn(i)
            per_round.append((time.perf_counter() - started) / n)
        us = statistics.median(per_round) * 1e6
        print(f"{name:<36} {us:>13.1f}")
        emit("parse", what=slug(name), indexes=n, rounds=rounds, us_per_index=us)


def section_local(args: argparse.Namespace, paths: Sequence[Path], query: Query) -> None:
    parse_cost(paths, args.parse_rounds)
    sizes = row_group_sizes(paths)
    total = sum(sum(v) for v in sizes.values())
    root = str(paths[0].parent)
    results = interleaved(
        METHODS,
        args.runs,
        args.budget_s,
        lambda m: one_run(m, root, query, sizes, None, args.concurrency),
    )
    for m, runs in results.items():
        report("local", 0.0, args.concurrency, m, runs)
    print_table(
        f"## local: {len(paths)} files, concurrency {args.concurrency}, median of "
        f"{len(results['none'])} runs; load average {load_average()}",
        list(results.items()),
        total,
    )


def upload(endpoint: str, paths: Sequence[Path]) -> None:
    store = s3_store(endpoint)

    def put(path: Path) -> None:
        obstore.put(store, PREFIX + path.name, path.read_bytes())

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, paths))


def section_s3(args: argparse.Namespace, paths: Sequence[Path], query: Query) -> None:
    sizes = row_group_sizes(paths)
    total = sum(sum(v) for v in sizes.values())
    location = f"s3://{BUCKET}/{PREFIX}"
    with moto_server() as (endpoint, server_pid):
        t0 = time.monotonic()
        upload(endpoint, paths)
        print(f"\n# uploaded {len(paths)} files in {time.monotonic() - t0:.1f} s")
        direct = {
            "endpoint": endpoint,
            "region": REGION,
            "access_key_id": ACCESS_KEY,
            "secret_access_key": SECRET_KEY,
            "allow_http": True,
        }
        t0 = time.perf_counter()
        builds = anyio.run(lambda: build_index(location, ["id", "email"], options=direct))
        build_s = time.perf_counter() - t0
        if any(b.error for b in builds):
            raise RuntimeError(f"S3 index build failed: {[b for b in builds if b.error][:3]}")
        print(f"# built {len(builds)} sidecar indexes on S3 (no proxy) in {build_s:.1f} s")
        emit("build", where="s3", files=len(builds), seconds=build_s)
        clear_store_cache()
        target = endpoint.removeprefix("http://")

        def call(method: str, delay_ms: float) -> Run:
            proxy = start_subprocess(target, delay=delay_ms / 1000, http_keepalive=True)
            server_cpu = process_cpu_s(server_pid)
            try:
                options = {**direct, "endpoint": proxy.endpoint}
                clear_store_cache()  # a fresh client: no connection survives a run
                run = one_run(method, location, query, sizes, options, args.concurrency)
            finally:
                proxy.stop()
                clear_store_cache()
            after = process_cpu_s(server_pid)
            if server_cpu is not None and after is not None:
                run.server_cpu_s = after - server_cpu
            return run

        for delay_ms in [args.delay_ms] + ([0.0] if args.baseline and args.delay_ms else []):
            results = interleaved(
                METHODS, args.runs, args.budget_s, lambda m, d=delay_ms: call(m, d)
            )
            for m, runs in results.items():
                report("s3", delay_ms, args.concurrency, m, runs)
            print_table(
                f"## S3 (moto_server) through the latency proxy, {delay_ms:.0f} ms each way, "
                f"concurrency {args.concurrency}, median of {len(results['none'])} runs; "
                f"load average {load_average()}",
                list(results.items()),
                total,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", default="local,s3")
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--data", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument(
        "--no-baseline", dest="baseline", action="store_false", help="skip the 0 ms S3 runs"
    )
    parser.add_argument("--budget-s", type=float, default=600.0, help="seconds per section")
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument(
        "--parse-rounds", type=int, default=7, help="rounds of the index parse timing"
    )
    parser.add_argument("--quick", action="store_true", help="1 run per method")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.parse_rounds = 1, 2
    sections = [s for s in args.sections.split(",") if s]
    if set(sections) - {"local", "s3"}:
        parser.error(f"unknown sections in {args.sections!r}")
    machine_line()
    paths = ensure_data(args.data, args.files)
    query = make_query(paths, args.seed)
    print(f"# query: {query.where}; present keys in {len(query.files_holding)} files")
    if "local" in sections:
        section_local(args, paths, query)
    if "s3" in sections:
        section_s3(args, paths, query)
    print(f"\n# done; load average {load_average()}")


if __name__ == "__main__":
    sys.exit(main())
