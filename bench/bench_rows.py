"""Rows from a hive lake built as a new user would: ``lookup`` against DuckDB, DataFusion
and Polars on local disk.

The lake (written once into the git-ignored ``bench/data/rows/``): 30 ``dt=YYYY-MM-DD``
folders of 2 files each (60 files), each file 4 row groups of 25,000 rows written by
pyarrow with its defaults (snappy, no page index) and a Bloom filter on ``user_id``
(fpp 0.01, ndv 25,000). Columns: ``user_id`` (int64, random and unique: statistics prune
nothing), ``ts`` (timestamp[us], the file's day, ascending as events are appended),
``country`` (one of 20), ``amount`` (float64), ``email`` (string). ``dt`` is the folder's
partition column.

Queries: ``point`` (``user_id = k``, one row), ``in200`` and ``in1000`` (``user_id IN`` that
many present keys of random files), ``key_range`` (``user_id = k AND ts BETWEEN`` two days:
the key's day and the next). Every engine runs each query in a fresh process whose imports
(the engine's and ours, lazily imported modules included) come before the clock, page cache
warm; runs are interleaved across engines. Each answer (``user_id, ts, country, amount,
email``, sorted) is compared with DuckDB's: a difference stops the benchmark.

With ``--page-index`` the same lake is written again with a page index in every file
(``bench/data/rows/hive-60-paged-v1/``), as parquet-java (Spark) and arrow-rs (delta-rs)
write by default: a row group with a match then reads its other columns by page.

``--engines`` may name ``ours_batches`` too: ``lookup_batches``, the streamed door, its
batches made one table (not among the peers of the ratio).

Run: ``python bench/bench_rows.py [--runs 5] [--page-index] [--json-out
bench/results/rows-hive.json]``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from record import installed_bytecode  # noqa: E402

ROOT = BENCH / "data" / "rows"
LAKE = ROOT / "hive-60-v1"
#: The same lake with a page index in every file (``--page-index``), as parquet-java
#: (Spark) and arrow-rs (delta-rs) write by default.
PAGED_LAKE = ROOT / "hive-60-paged-v1"
DAYS = 30
FILES_PER_DAY = 2
ROW_GROUPS = 4
ROWS_PER_GROUP = 25_000
ROWS_PER_FILE = ROW_GROUPS * ROWS_PER_GROUP
FIRST_DAY = datetime.date(2026, 1, 1)
SEED = 20261128
COLUMNS = ("user_id", "ts", "country", "amount", "email")
ENGINES = ("ours", "duckdb", "datafusion", "polars")
QUERIES = ("point", "in200", "in1000", "key_range")
THREADS = 16


def user_id(file: int, position: int) -> int:
    """The id at ``position`` of file ``file``: unique, random-looking, never odd."""
    return 2 * ((position * 7_919 + file * 104_729) * DAYS * FILES_PER_DAY + file) + 10**12


def _file_table(day: int, part: int) -> Any:
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    file = day * FILES_PER_DAY + part
    rng = np.random.default_rng(SEED + file)
    positions = rng.permutation(ROWS_PER_FILE).astype(np.int64)
    ids = 2 * ((positions * 7_919 + file * 104_729) * DAYS * FILES_PER_DAY + file) + 10**12
    start = datetime.datetime.combine(FIRST_DAY + datetime.timedelta(days=day), datetime.time())
    start_us = int(start.replace(tzinfo=datetime.timezone.utc).timestamp() * 1_000_000)
    offsets = np.sort(rng.integers(0, 86_400_000_000, ROWS_PER_FILE))
    countries = np.array([f"C{i:02d}" for i in range(20)])
    id_array = pa.array(ids)
    return pa.table(
        {
            "user_id": id_array,
            "ts": pa.array(start_us + offsets, pa.timestamp("us")),
            "country": pa.array(countries[rng.integers(0, 20, ROWS_PER_FILE)]),
            "amount": pa.array(np.round(rng.random(ROWS_PER_FILE) * 1000, 2)),
            "email": pc.binary_join_element_wise(
                "u", pc.cast(id_array, pa.string()), "@example.com", ""
            ),
        }
    )


def ensure_lake(page_index: bool = False) -> Path:
    """The lake (``page_index``: its twin with page indexes), written once (a file at a
    time, each replaced into place whole)."""
    import pyarrow.parquet as pq

    lake = PAGED_LAKE if page_index else LAKE
    for day in range(DAYS):
        folder = lake / f"dt={FIRST_DAY + datetime.timedelta(days=day)}"
        folder.mkdir(parents=True, exist_ok=True)
        for part in range(FILES_PER_DAY):
            path = folder / f"part-{part}.parquet"
            if path.exists():
                continue
            tmp = path.with_suffix(".tmp")
            pq.write_table(
                _file_table(day, part),
                tmp,
                row_group_size=ROWS_PER_GROUP,
                bloom_filter_options={"user_id": {"ndv": ROWS_PER_GROUP, "fpp": 0.01}},
                write_page_index=page_index,
            )
            os.replace(tmp, path)
    return lake


def make_queries(seed: int) -> dict[str, dict[str, Any]]:
    """Keys of random files; the key range's days: the key's file's day and the next."""
    rng = random.Random(seed)

    def present() -> tuple[int, int]:
        file = rng.randrange(DAYS * FILES_PER_DAY)
        return file, user_id(file, rng.randrange(ROWS_PER_FILE))

    _file, key = present()
    ranged_file, ranged = present()
    day = FIRST_DAY + datetime.timedelta(days=min(ranged_file // FILES_PER_DAY, DAYS - 2))
    low = datetime.datetime.combine(day, datetime.time())
    high = low + datetime.timedelta(days=2) - datetime.timedelta(microseconds=1)
    return {
        "point": {"ids": [key]},
        "in200": {"ids": sorted({present()[1] for _ in range(200)})},
        "in1000": {"ids": sorted({present()[1] for _ in range(1000)})},
        "key_range": {"ids": [ranged], "ts": [low.isoformat(), high.isoformat()]},
    }


def _sql_where(query: dict[str, Any]) -> str:
    ids = query["ids"]
    where = f"user_id = {ids[0]}" if len(ids) == 1 else f"user_id IN ({', '.join(map(str, ids))})"
    if "ts" in query:
        low, high = (t.replace("T", " ") for t in query["ts"])
        where += f" AND ts BETWEEN TIMESTAMP '{low}' AND TIMESTAMP '{high}'"
    return where


# ---- the worker (one engine, one query, a fresh process) -------------------------------


def _worker(engine: str, lake: str, query: dict[str, Any]) -> dict[str, Any]:
    import pyarrow as pa  # every engine's answer is compared as Arrow

    columns = list(query.get("columns", COLUMNS))
    if engine in ("ours", "ours_batches"):
        import pybloom_async
        import pybloom_async.rows.api
        import pybloom_async.rows.dataset
        import pybloom_async.rows.fetch

        ids = query["ids"]
        where = (
            f"user_id = {ids[0]}" if len(ids) == 1 else f"user_id IN ({', '.join(map(str, ids))})"
        )
        if "ts" in query:
            where += f" AND ts BETWEEN '{query['ts'][0]}' AND '{query['ts'][1]}'"

        def run() -> Any:
            if engine == "ours":
                return pybloom_async.lookup_sync(lake, where, columns)
            import anyio  # lookup_batches, the streamed door: its batches made one table

            async def batches() -> Any:
                got = [b async for b in pybloom_async.lookup_batches(lake, where, columns)]
                return pa.Table.from_batches(got) if got else pa.table({c: [] for c in columns})

            return anyio.run(batches)

    elif engine == "duckdb":
        import duckdb

        con = duckdb.connect()
        con.execute(f"SET threads = {THREADS}")
        sql = (
            f"SELECT {', '.join(columns)} FROM read_parquet('{lake}/**/*.parquet', "
            f"hive_partitioning = true) WHERE {_sql_where(query)}"
        )

        def run() -> Any:
            return con.execute(sql).to_arrow_table()

    elif engine == "datafusion":
        from datafusion import SessionConfig, SessionContext

        config = (
            SessionConfig()
            .with_target_partitions(THREADS)
            .set("datafusion.execution.parquet.bloom_filter_on_read", "true")
            .set("datafusion.execution.parquet.pushdown_filters", "true")
        )
        ctx = SessionContext(config)
        sql = f"SELECT {', '.join(columns)} FROM lake WHERE {_sql_where(query)}"

        def run() -> Any:  # registering lists the files and infers the schema: timed
            ctx.register_parquet(
                "lake", lake + "/", table_partition_cols=[("dt", pa.string())],
                file_extension=".parquet",
            )  # fmt: skip
            return ctx.sql(sql).to_arrow_table()

    elif engine == "polars":
        import polars as pl

        ids = query["ids"]
        expr = pl.col("user_id") == ids[0] if len(ids) == 1 else pl.col("user_id").is_in(ids)
        if "ts" in query:
            low, high = (datetime.datetime.fromisoformat(t) for t in query["ts"])
            expr = expr & pl.col("ts").is_between(low, high, closed="both")

        def run() -> Any:
            frame = pl.scan_parquet(lake + "/**/*.parquet", hive_partitioning=True)
            return frame.filter(expr).select(columns).collect().to_arrow()

    else:
        raise SystemExit(f"unknown engine {engine!r}")
    start = time.perf_counter()
    cpu = time.process_time()
    table = run()
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    types = {
        "user_id": pa.int64(),
        "ts": pa.timestamp("us"),
        "country": pa.string(),
        "amount": pa.float64(),
        "email": pa.string(),
    }
    table = pa.table({c: table.column(c) for c in columns})
    table = table.cast(pa.schema([(c, types[c]) for c in columns]))
    rows = sorted(zip(*(table.column(c).to_pylist() for c in columns), strict=True))
    return {"s": seconds, "cpu_s": cpu, "rows": len(rows), "answer": repr(rows)}


def _run_one(engine: str, query: dict[str, Any], lake: Path) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", engine, json.dumps(query), str(lake)],
        check=True, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--queries", default=",".join(QUERIES))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--page-index", action="store_true", help="the lake's twin with page indexes"
    )
    parser.add_argument(
        "--columns", default=",".join(COLUMNS), help="the columns asked (all five by default)"
    )
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        engine, query, lake_path = args.worker
        print(json.dumps(_worker(engine, lake_path, json.loads(query))))
        return
    lake = ensure_lake(args.page_index)
    installed_bytecode()
    queries = make_queries(args.seed)
    for query in queries.values():
        query["columns"] = args.columns.split(",")
    engines = args.engines.split(",")
    names = args.queries.split(",")
    load_before = os.getloadavg()
    times: dict[str, dict[str, list[float]]] = {q: {e: [] for e in engines} for q in names}
    cpus: dict[str, dict[str, list[float]]] = {q: {e: [] for e in engines} for q in names}
    for name in names:
        query = queries[name]
        expected: str | None = None
        for _ in range(args.runs):
            for engine in engines:  # interleaved: load changes reach every engine alike
                got = _run_one(engine, query, lake)
                if expected is None:
                    expected = got["answer"]
                elif got["answer"] != expected:
                    raise SystemExit(f"{engine} answers {name} with other rows ({got['rows']})")
                times[name][engine].append(got["s"])
                cpus[name][engine].append(got["cpu_s"])
        rows = len(eval(expected)) if expected else 0
        line = ", ".join(f"{e} {statistics.median(times[name][e]):.3f} s" for e in engines)
        print(f"{name} ({rows} rows): {line}", flush=True)
    load_after = os.getloadavg()
    print(f"\nload {load_before[0]:.2f} -> {load_after[0]:.2f}; medians of {args.runs}\n")
    print("| query | " + " | ".join(engines) + " | fastest engine / ours |")
    print("|---|" + "---:|" * (len(engines) + 1))
    for name in names:
        med = {e: statistics.median(times[name][e]) for e in engines}
        peers = [med[e] for e in engines if not e.startswith("ours")]
        ratio = f"{min(peers) / med['ours']:.2f}x" if peers and "ours" in med else ""
        cells = " | ".join(f"{med[e] * 1000:,.0f} ms" for e in engines)
        print(f"| {name} | {cells} | {ratio} |")
    if args.json_out:
        args.json_out.write_text(
            json.dumps(
                {
                    "machine": f"{platform.machine()}, {os.cpu_count()} cores",
                    "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
                        timespec="minutes"
                    ),
                    "load": [load_before[0], load_after[0]],
                    "lake": lake.name,
                    "columns": args.columns.split(","),
                    "runs": args.runs,
                    "times_s": times,
                    "cpu_s": cpus,
                },
                indent=1,
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
