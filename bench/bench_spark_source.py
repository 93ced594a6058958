"""The ``pybloom`` data source against Spark's own Parquet reader (run by ``bench_spark.py
--source``).

Three lakes (``--source-sets``, each in the same JVM):

* ``spark2000``: 2,000 files written by Spark (parquet-java), 4 row groups of 2,500 rows
  each, a Split Block Bloom Filter on ``id`` (``xxhash64(seq, 42)``: keys spread over the
  whole long range, so min/max statistics cannot prune) sized for a row group;
  ``bench/data/spark2000/``, written once (gitignored);
* ``lake200``: the 200 pyarrow-written files of ``bench/lookup_lake.py``
  (``bench/data/lookup/lake-200``, 4 row groups of 25,000 rows, filters on ``id`` and
  ``email`` at fpp 0.01), and its copy with a lake index on ``id`` at the default fpp
  (``lake-200-indexed``, made by ``bench_lookup.py``);
* ``hive``: ``bench/bench_rows.py``'s lake (``bench/data/rows/hive-60-v1``: 30 ``dt=``
  folders of 2 files, a filter on ``user_id``, ``ts`` the file's day), a key AND a date
  range: on the ``dt`` folders, and on the ``ts`` column;
* ``floor``: one file of 10 rows, one key: the fixed cost of a query.

Queries, each on a DataFrame loaded anew (as a user's query would):

* **point**: ``id = k``, k present in one file;
* **in100**: ``id IN (100 keys)``, keys present in 100 files: beyond Spark's
  ``spark.sql.parquet.pushdown.inFilterThreshold`` (10), so parquet-java gets a min/max
  range, not the keys;
* **key_dt** / **key_ts**: ``user_id = k AND dt BETWEEN`` the key's day and the next, or
  ``AND ts BETWEEN`` them;

read by ``spark.read.format("pybloom").option("where", ...).load(lake)`` (the documented
form: Spark 4.1-4.3 push no filter to a Python data source, see ``spark/plan_guard``)
and by ``spark.read.parquet(lake).where(...)`` with ``spark.sql.parquet.filterPushdown``
and parquet-java's Bloom row-group filter on (``parquet.filter.bloom.enabled``), once with
Spark's defaults and once with ``spark.sql.parquet.pushdown.inFilterThreshold=1000`` (the
keys of an IN list reach parquet-java's Bloom filter). Runs alternate (pybloom, Spark,
Spark with the threshold) so that all see the same load; figures are medians of
``--runs``, each round's load average kept; the rows of the three must be identical every
round; a Spark variant 3x slower than the other in a query's first timed round is not timed
again (it cannot be the better one; its figure is kept). The ratio is against the better
Spark median.

On ``spark2000`` the lake index (fpp 0.001) is then built by ``build_lake_index_on_spark``
and by the local ``build_lake_index`` (the segment bytes must be equal, both timed), and the
queries timed again, the point lookup also with the schema given (``.schema(...)``). The
driver's data requests to plan (``schema()`` and ``partitions()`` of the data source, as
Spark calls them: the data source pickled between) are counted without and with the index.

Spark runs in ``local[2]`` in this process's JVM (one per run). Results:
``bench/results/spark_source.json`` (or ``--json-out``; with the load average,
``bench/record.py``).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from record import RESULTS, Recorder, load_average

BENCH = Path(__file__).resolve().parent
LAKE = BENCH / "data" / "spark2000"
NUM_FILES = 2_000
ROW_GROUPS = 4
ROWS_PER_GROUP = 2_500
ID_SALT = 42
#: The lake index's false-positive rate per file: at 1% a key's probe keeps about 20 of the
#: 2,000 files (each then a footer read); at 0.1%, two.
INDEX_FPP = 0.001


def _session() -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("pybloom-async-bench-source")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.parquet.filterPushdown", "true")
        .config("spark.hadoop.parquet.filter.bloom.enabled", "true")
        .config("spark.hadoop.parquet.filter.columnindex.enabled", "true")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def ensure_lake(spark: Any) -> list[Path]:
    """The 2,000 files, written once (into a temporary folder, renamed when complete)."""
    files = sorted(LAKE.glob("*.parquet"))
    if len(files) == NUM_FILES and (LAKE / "_SUCCESS").exists():
        return files
    tmp = LAKE.with_name(LAKE.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    rows = NUM_FILES * ROW_GROUPS * ROWS_PER_GROUP
    frame = spark.range(0, rows, numPartitions=NUM_FILES).selectExpr(
        "id as seq",
        f"xxhash64(id, {ID_SALT}) as id",
        "concat('user-', hex(xxhash64(id, 7)), '@example.com') as email",
        "cast(id % 1000 as int) as bucket",
    )
    (
        frame.write.mode("overwrite")
        .option("parquet.bloom.filter.enabled#id", "true")
        .option("parquet.bloom.filter.expected.ndv#id", str(ROWS_PER_GROUP))
        .option("parquet.block.row.count.limit", str(ROWS_PER_GROUP))
        .option("maxRecordsPerFile", str(ROW_GROUPS * ROWS_PER_GROUP))
        .parquet(str(tmp))
    )
    shutil.rmtree(LAKE, ignore_errors=True)
    tmp.rename(LAKE)
    files = sorted(LAKE.glob("*.parquet"))
    assert len(files) == NUM_FILES, len(files)
    assert pq.read_metadata(files[0]).num_row_groups == ROW_GROUPS
    return files


def keys(files: list[Path], count: int, seed: int) -> list[int]:
    """``count`` ids present in distinct files (one row each)."""
    rng = random.Random(seed)
    out = []
    for path in rng.sample(files, count):
        table = pq.read_table(path, columns=["id"])
        out.append(int(table.column("id")[rng.randrange(table.num_rows)].as_py()))
    return out


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def _rows(frame: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in frame.collect())


#: Spark's reader with its defaults, then with every IN list's keys given to parquet-java.
THRESHOLD = "spark.sql.parquet.pushdown.inFilterThreshold"
SPARK_VARIANTS = {"spark_parquet": None, "spark_parquet_in1000": "1000"}
#: A Spark variant this many times slower than the other in a comparison's first round is
#: not timed again (its one figure is kept): it cannot be the better one.
SLOWER = 3.0


@dataclass(frozen=True)
class Query:
    """One query: its lake, our predicate (the ``where`` option) and Spark's SQL filter."""

    lake: Path
    ours: str
    sql: str


def compare(spark: Any, query: Query, runs: int, schema: Any = None) -> dict[str, Any]:
    """pybloom and Spark's reader (both variants), alternating; medians; the rows checked
    equal every round; each round's load average. With ``schema``, the data source is given
    it (no footer read for the schema)."""
    times: dict[str, list[float]] = {"pybloom": [], **{k: [] for k in SPARK_VARIANTS}}
    loads: list[str] = []
    lake = str(query.lake)
    default_threshold = spark.conf.get(THRESHOLD)

    def pybloom() -> Any:
        reader = spark.read.format("pybloom").option("where", query.ours)
        if schema is not None:
            reader = reader.schema(schema)
        return _rows(reader.load(lake))

    active = list(SPARK_VARIANTS)
    for round_no in range(runs):
        loads.append(load_average())
        t, ours = timed(pybloom)
        times["pybloom"].append(t)
        for name in active:
            spark.conf.set(THRESHOLD, SPARK_VARIANTS[name] or default_threshold)
            t, theirs = timed(lambda: _rows(spark.read.parquet(lake).where(query.sql)))
            times[name].append(t)
            if ours != theirs:
                raise AssertionError(
                    f"rows differ for {query.ours[:60]} ({name}): {len(ours)} against {len(theirs)}"
                )
        spark.conf.set(THRESHOLD, default_threshold)
        if round_no == 0:  # a variant 3x slower than the other cannot be the better one
            fastest = min(times[k][0] for k in active)
            active = [k for k in active if times[k][0] <= SLOWER * fastest]
    medians = {k: statistics.median(v) for k, v in times.items()}
    best = min(medians[k] for k in active)
    out: dict[str, Any] = {"rows": len(ours), "where": query.ours, "sql": query.sql}
    out.update({f"{k}_s": v for k, v in times.items()})
    out.update({f"{k}_median_s": v for k, v in medians.items()})
    out["load"] = loads
    out["timed_after_first_round"] = active
    out["speedup"] = best / medians["pybloom"]
    return out


def planning_reads(lake: Path, where: str) -> dict[str, int]:
    """The driver's requests to plan a read as Spark plans it: the data source's
    ``schema()``, the data source pickled (as to Spark's planning worker), ``reader()`` and
    ``partitions()``; every request of the driver's planning counted."""
    import pickle

    from pybloom_async.io.base import SourceStats
    from pybloom_async.spark import source as module
    from pybloom_async.spark.scan import ReadSettings

    stats = SourceStats()
    run = ReadSettings.run
    setattr(ReadSettings, "run", lambda self, _=None: run(self, stats))  # noqa: B010
    try:
        data_source = module.PybloomDataSourceWithoutPushdown({"path": str(lake), "where": where})
        schema = data_source.schema()
        after_schema = stats.requests
        reader = pickle.loads(pickle.dumps(data_source)).reader(schema)
        tasks = reader.partitions()
    finally:
        setattr(ReadSettings, "run", run)  # noqa: B010
    return {
        "requests": stats.requests,
        "requests_schema": after_schema,
        "bytes_read": stats.bytes_read,
        "metadata_requests": stats.metadata_requests,
        "tasks": len(tasks),
    }


def lake_index(spark: Any) -> dict[str, Any]:
    """The lake index built on Spark and locally: equal segment bytes, both timed."""
    from pybloom_async import build_lake_index_sync
    from pybloom_async.spark import build_lake_index_on_spark

    folder = LAKE / "_bloom_index"
    shutil.rmtree(folder, ignore_errors=True)
    local_s, local = timed(lambda: build_lake_index_sync(str(LAKE), ["id"], fpp=INDEX_FPP))
    local_bytes = sorted(Path(p).read_bytes() for p in local.segments)
    shutil.rmtree(folder, ignore_errors=True)
    spark_s, built = timed(
        lambda: build_lake_index_on_spark(spark, str(LAKE), ["id"], fpp=INDEX_FPP)
    )
    spark_bytes = sorted(Path(p).read_bytes() for p in built.segments)
    if local_bytes != spark_bytes:
        raise AssertionError("the segments built on Spark differ from the local ones")
    return {
        "segments": len(built.segments),
        "segment_bytes": sum(map(len, spark_bytes)),
        "same_bytes": True,
        "local_s": local_s,
        "spark_s": spark_s,
        "folded": len(built.folded),
    }


def show(name: str, figures: dict[str, Any]) -> None:
    brief = {k: v for k, v in figures.items() if "median" in k or k in ("rows", "speedup")}
    brief["load"] = figures["load"][-1] if figures.get("load") else load_average()
    print(name, json.dumps(brief), flush=True)


def spark2000(spark: Any, runs: int, results: dict[str, Any]) -> None:
    """The 2,000 Spark-written files: without a lake index, then with one."""
    files = ensure_lake(spark)
    shutil.rmtree(LAKE / "_bloom_index", ignore_errors=True)
    point = keys(files, 1, seed=1)[0]
    many = keys(files, 100, seed=2)
    in100 = f"id IN ({', '.join(map(str, many))})"
    queries = {
        "point": Query(LAKE, f"id = {point}", f"id = {point}"),
        "in100": Query(LAKE, in100, in100),
    }
    for query in queries.values():  # warm-up: Spark's Python workers, the page cache
        compare(spark, query, 1)
    for name, query in queries.items():
        results[name] = compare(spark, query, runs)
        show(name, results[name])
    results["planning_without_index"] = planning_reads(LAKE, queries["point"].ours)
    print("planning_without_index", json.dumps(results["planning_without_index"]), flush=True)
    results["lake_index"] = lake_index(spark)
    print("lake_index", json.dumps(results["lake_index"]), flush=True)
    try:
        results["planning_with_index"] = planning_reads(LAKE, queries["point"].ours)
        print("planning_with_index", json.dumps(results["planning_with_index"]), flush=True)
        for name, query in queries.items():
            results[f"{name}_with_index"] = compare(spark, query, runs)
            show(f"{name}_with_index", results[f"{name}_with_index"])
        schema = spark.read.parquet(str(LAKE)).schema
        given = compare(spark, queries["point"], runs, schema)
        results["point_with_index_schema_given"] = given
        show("point_with_index_schema_given", given)
    finally:
        shutil.rmtree(LAKE / "_bloom_index", ignore_errors=True)


def lake200(spark: Any, runs: int, results: dict[str, Any]) -> None:
    """The 200-file lake of ``bench_lookup.py`` (pyarrow-written, ``id``), and its copy
    with a lake index (made by ``bench_lookup.py``, default fpp)."""
    from lookup_lake import ROWS_PER_FILE, ensure_lake, id_of

    plain = ensure_lake(200)
    indexed = plain.with_name(plain.name + "-indexed")
    rng = random.Random(3)
    point = id_of(rng.randrange(200), rng.randrange(ROWS_PER_FILE))
    many = sorted({id_of(rng.randrange(200), rng.randrange(ROWS_PER_FILE)) for _ in range(100)})
    in100 = f"id IN ({', '.join(map(str, many))})"
    queries = {"point": f"id = {point}", "in100": in100}
    sets = {"lake200": plain}
    if (indexed / "_bloom_index").is_dir():
        sets["lake200_with_index"] = indexed
    for lake in sets.values():
        for where in queries.values():
            compare(spark, Query(lake, where, where), 1)
    for set_name, lake in sets.items():
        for name, where in queries.items():
            key = f"{set_name}_{name}"
            results[key] = compare(spark, Query(lake, where, where), runs)
            show(key, results[key])


def hive(spark: Any, runs: int, results: dict[str, Any]) -> None:
    """``bench_rows.py``'s hive lake: a key AND a date range, on the folders and on ``ts``."""
    import datetime

    from bench_rows import SEED, ensure_lake, make_queries

    lake = ensure_lake()
    query = make_queries(SEED)["key_range"]
    key = query["ids"][0]
    low, high = (datetime.datetime.fromisoformat(t) for t in query["ts"])
    first, last = low.date(), high.date()
    queries = {
        "hive_key_dt": Query(
            lake,
            f"user_id = {key} AND dt BETWEEN '{first}' AND '{last}'",
            f"user_id = {key} AND dt BETWEEN DATE'{first}' AND DATE'{last}'",
        ),
        "hive_key_ts": Query(
            lake,
            f"user_id = {key} AND ts BETWEEN '{low.isoformat()}' AND '{high.isoformat()}'",
            f"user_id = {key} AND ts BETWEEN TIMESTAMP_NTZ'{low}' AND TIMESTAMP_NTZ'{high}'",
        ),
    }
    for q in queries.values():
        compare(spark, q, 1)
    for name, q in queries.items():
        results[name] = compare(spark, q, runs)
        show(name, results[name])


def floor(spark: Any, runs: int, results: dict[str, Any]) -> None:
    """The fixed cost of a query: one file of 10 rows, one key."""
    import tempfile

    import pyarrow as pa

    with tempfile.TemporaryDirectory() as folder:
        table = pa.table({"id": pa.array(range(10), pa.int64())})
        pq.write_table(table, f"{folder}/one.parquet", bloom_filter_options={"id": {"ndv": 10}})
        query = Query(Path(folder), "id = 3", "id = 3")
        compare(spark, query, 1)
        results["floor"] = compare(spark, query, runs)
        show("floor", results["floor"])


SETS: dict[str, Callable[[Any, int, dict[str, Any]], None]] = {
    "spark2000": spark2000,
    "lake200": lake200,
    "hive": hive,
    "floor": floor,
}


def main(runs: int, sets: str = "spark2000", out: Path | None = None) -> None:
    spark = _session()
    import pybloom_async.spark

    pybloom_async.spark.register(spark)
    recorder = Recorder("spark_source", runs=runs, files=NUM_FILES, row_groups=ROW_GROUPS)
    results: dict[str, Any] = {"load_before": load_average(), "sets": sets.split(",")}
    # The package measured, on the driver and in Spark's Python workers (a snapshot's, when
    # run from one with PYTHONPATH set to it).
    import pybloom_async

    one = spark.sparkContext.parallelize([0], 1)
    workers = one.map(lambda _: __import__("pybloom_async").__file__).collect()
    results["package"] = {"driver": pybloom_async.__file__, "workers": workers[0]}
    print("package", json.dumps(results["package"]), flush=True)
    for name in sets.split(","):
        SETS[name](spark, runs, results)
        results["load_after"] = load_average()
        path = recorder.write(out or RESULTS / "spark_source.json", results)  # each set's
    print(f"wrote {path}")
    spark.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
