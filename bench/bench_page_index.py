"""lookup with and without the page index: bytes, requests and wall time.

Files (written once to ``bench/data/page_index/``, gitignored):

* ``pyarrow_sorted``: pyarrow, 2,000,000 rows in 2 row groups, ``id`` sorted (``7 * row``),
  ``name`` (string), ``amount`` (double); ``write_page_index=True``, pyarrow's default page
  size (1 MiB) and dictionary settings, a Bloom filter on ``id``;
* ``pyarrow_random``: the same with ``id`` random 63-bit integers;
* ``spark``: PySpark (parquet-java, column indexes on by default), 2,000,000 rows in one
  file, ``seq`` sorted, ``id`` random (``xxhash64``), ``name``; Bloom filter on ``id``.

Queries per file: a present key (``=``), an absent key inside the column's range, and
``IN`` of 100 present keys, on the sorted column (``id`` for pyarrow_sorted, ``seq`` for
spark) and on the random one (``id``). Each is run ``--runs`` times (median wall time)
locally and on S3 (moto_server behind ``latency_proxy.py``, 20 ms each way), with
``page_index=True`` and ``False``; bytes and requests are those of the lookup beyond the
pruning reads (SourceStats counts every range request).

Run: ``.venv/bin/python bench/bench_page_index.py [--runs 5] [--no-s3] [--no-spark]
[--json-out bench/results/page_index.json]``
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pyarrow.parquet as pq
from record import Recorder, load_average

from pybloom_async import lookup, lookup_sync, prune_sync
from pybloom_async.io.base import SourceStats
from pybloom_async.io.store import clear_store_cache
from pybloom_async.predicate import Predicate, col

DATA = Path(__file__).resolve().parent / "data" / "page_index"
ROWS = 2_000_000


def _names(rng: random.Random, n: int) -> pa.Array:
    return pa.array([f"user-{rng.getrandbits(40):010x}@example.com" for _ in range(n)])


def write_pyarrow(path: Path, sorted_ids: bool) -> None:
    rng = random.Random(1 if sorted_ids else 2)
    ids = [7 * i for i in range(ROWS)] if sorted_ids else [rng.getrandbits(63) for _ in range(ROWS)]
    table = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": _names(rng, ROWS),
            "amount": pa.array([rng.random() * 1000 for _ in range(ROWS)]),
        }
    )
    tmp = path.with_suffix(".tmp")
    pq.write_table(
        table,
        tmp,
        row_group_size=ROWS // 2,
        write_page_index=True,
        bloom_filter_options={"id": True},
    )
    tmp.rename(path)


def write_spark(path: Path) -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = (
        SparkSession.builder.master("local[1]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    try:
        frame = spark.range(ROWS, numPartitions=1).select(
            F.col("id").alias("seq"),
            F.xxhash64(F.col("id"), F.lit(42)).alias("id"),
            F.concat(
                F.lit("user-"), F.hex(F.xxhash64(F.col("id"), F.lit(7))), F.lit("@x.com")
            ).alias("name"),
        )
        out = path.with_suffix(".dir")
        (
            frame.write.mode("overwrite")
            .option("parquet.bloom.filter.enabled#id", "true")
            .option("parquet.bloom.filter.expected.ndv#id", str(ROWS))
            .parquet(str(out))
        )
        (written,) = sorted(out.glob("*.parquet"))
        written.rename(path)
    finally:
        spark.stop()


def files(spark: bool) -> dict[str, tuple[Path, str | None, str | None]]:
    """name -> (path, sorted column, random column)."""
    DATA.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, sorted_ids in (("pyarrow_sorted", True), ("pyarrow_random", False)):
        path = DATA / f"{name}.parquet"
        if not path.exists():
            write_pyarrow(path, sorted_ids)
        out[name] = (path, "id", None) if sorted_ids else (path, None, "id")
    if spark:
        path = DATA / "spark.parquet"
        if not path.exists():
            write_spark(path)
        out["spark"] = (path, "seq", "id")
    return out


def queries(path: Path, sorted_col: str | None, random_col: str | None) -> dict[str, Predicate]:
    rng = random.Random(5)
    out: dict[str, Predicate] = {}
    for label, column in (("sorted", sorted_col), ("random", random_col)):
        if column is None:
            continue
        values = pq.read_table(path, columns=[column]).column(column).to_pylist()
        present = rng.sample(values, 100)
        held = set(values)
        absent = sorted(values)[len(values) // 2] + 1
        while absent in held:
            absent += 1
        out[f"{label} {column} = present"] = col(column) == present[0]
        out[f"{label} {column} = absent"] = col(column) == absent
        out[f"{label} {column} IN 100"] = col(column).isin(present)
    return out


def measure_local(path: Path, where: Predicate, page_index: bool, runs: int) -> dict[str, Any]:
    pruning = SourceStats()
    prune_sync(str(path), where, stats=pruning)
    walls, stats, rows = [], SourceStats(), 0
    for i in range(runs):
        s = SourceStats()
        t0 = time.perf_counter()
        rows = lookup_sync(str(path), where, stats=s, page_index=page_index).num_rows
        walls.append(time.perf_counter() - t0)
        if i == 0:
            stats = s
    return {
        "rows": rows,
        "requests": stats.requests - pruning.requests,
        "bytes": stats.bytes_read - pruning.bytes_read,
        "wall_ms_median": round(1000 * statistics.median(walls), 2),
        "wall_ms_runs": [round(1000 * w, 2) for w in walls],
    }


def measure_s3(
    url: str, options: dict[str, Any], where: Predicate, page_index: bool, runs: int
) -> dict[str, Any]:
    walls, first = [], None
    for _ in range(runs):
        clear_store_cache()
        s = SourceStats()

        async def go(stats: SourceStats = s) -> int:
            table = await lookup(url, where, options=options, stats=stats, page_index=page_index)
            return int(table.num_rows)

        t0 = time.perf_counter()
        rows = anyio.run(go)
        walls.append(time.perf_counter() - t0)
        if first is None:
            first = (rows, s)
    assert first is not None
    return {
        "rows": first[0],
        "requests_total": first[1].requests,
        "bytes_total": first[1].bytes_read,
        "wall_ms_median": round(1000 * statistics.median(walls), 2),
        "wall_ms_runs": [round(1000 * w, 2) for w in walls],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-s3", action="store_true")
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    recorder = Recorder("page_index", runs=args.runs, delay_ms=args.delay_ms, rows=ROWS)
    print(f"# load at start: {load_average()}", flush=True)
    data = files(not args.no_spark)
    results: list[dict[str, Any]] = []
    plan = [
        (name, label, where, path)
        for name, (path, s, r) in data.items()
        for label, where in queries(path, s, r).items()
    ]
    for name, label, where, path in plan:
        for page_index in (True, False):
            m = measure_local(path, where, page_index, args.runs)
            row = {"file": name, "query": label, "where": "local", "page_index": page_index, **m}
            results.append(row)
            print(row, flush=True)
    if not args.no_s3:
        from bench_reader import BUCKET, moto_options, moto_server, upload
        from latency_proxy import start_subprocess

        with moto_server() as (endpoint, _pid):
            upload(endpoint, [p for p, _, _ in data.values()], "page_index/")
            proxy = start_subprocess(
                endpoint.removeprefix("http://"), delay=args.delay_ms / 1000, http_keepalive=True
            )
            try:
                options = moto_options(proxy.endpoint)
                for name, label, where, path in plan:
                    url = f"s3://{BUCKET}/page_index/{path.name}"
                    for page_index in (True, False):
                        m = measure_s3(url, options, where, page_index, args.runs)
                        row = {
                            "file": name,
                            "query": label,
                            "where": f"s3 +{args.delay_ms:g} ms",
                            "page_index": page_index,
                            **m,
                        }
                        results.append(row)
                        print(row, flush=True)
            finally:
                proxy.stop()
    print(f"# load at end: {load_average()}", flush=True)
    if args.json_out:
        recorder.write(args.json_out, results)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
