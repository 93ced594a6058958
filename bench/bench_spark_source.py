"""The ``pybloom`` data source against Spark's own Parquet reader (run by ``bench_spark.py
--source``).

Data: 2,000 files written by Spark (parquet-java), 4 row groups of 2,500 rows each, a
Split Block Bloom Filter on ``id`` (``xxhash64(seq, 42)``: keys spread over the whole long
range, so min/max statistics cannot prune) sized for a row group; ``bench/data/spark2000/``,
written once (gitignored).

Queries, each on a DataFrame loaded anew (as a user's query would):

* **point**: ``.where("id = k")``, k present in one file;
* **in100**: ``.where("id IN (100 keys)")``, keys present in 100 files: beyond Spark's
  ``spark.sql.parquet.pushdown.inFilterThreshold`` (10), so parquet-java gets a min/max
  range, not the keys;

read by ``spark.read.format("pybloom").load(lake)`` (registered with filter pushdown) and by
``spark.read.parquet(lake)`` with ``spark.sql.parquet.filterPushdown`` and parquet-java's
Bloom row-group filter on (``parquet.filter.bloom.enabled``). Runs alternate (pybloom, then
Spark) so that both see the same load; figures are medians of ``--runs``; the rows must be
identical. Then the lake index (fpp 0.001): built by ``build_lake_index_on_spark`` and by the local
``build_lake_index`` (the segment bytes must be equal, both timed), the driver's ranged
reads to plan a point lookup counted (the planning function the data source runs, with a
request counter), and the point lookup timed again, also with the schema given
(``.schema(...)``: no footer read for it).

Spark runs in ``local[2]`` in a child process (a fresh JVM). Results:
``bench/results/spark_source.json`` (with the load average, ``bench/record.py``).
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
from pathlib import Path
from typing import Any

import anyio
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


def compare(spark: Any, where: str, runs: int, schema: Any = None) -> dict[str, Any]:
    """pybloom and Spark's reader, alternating; medians; the rows checked equal. With
    ``schema``, the data source is given it (no footer read for the schema)."""
    ours: list[float] = []
    theirs: list[float] = []

    def pybloom() -> Any:
        reader = spark.read.format("pybloom")
        if schema is not None:
            reader = reader.schema(schema)
        return _rows(reader.load(str(LAKE)).where(where))

    for _ in range(runs):
        t, a = timed(pybloom)
        ours.append(t)
        t, b = timed(lambda: _rows(spark.read.parquet(str(LAKE)).where(where)))
        theirs.append(t)
        if a != b:
            raise AssertionError(f"rows differ for {where[:60]}: {len(a)} against {len(b)}")
    return {
        "rows": len(a),
        "pybloom_s": ours,
        "spark_parquet_s": theirs,
        "pybloom_median_s": statistics.median(ours),
        "spark_parquet_median_s": statistics.median(theirs),
        "speedup": statistics.median(theirs) / statistics.median(ours),
    }


def planning_reads(where: str) -> dict[str, int]:
    """The driver's requests to plan a read: the function the data source's planning runs."""
    from pybloom_async.apps.spark.scan import ReadSettings, file_schema, plan_read
    from pybloom_async.apps.spark.spark_types import spark_arrow_schema
    from pybloom_async.io.base import SourceStats
    from pybloom_async.predicate import parse_predicate

    settings = ReadSettings()
    schema, int96 = anyio.run(file_schema, str(LAKE), settings)
    stats = SourceStats()
    reads, _ = anyio.run(
        plan_read, str(LAKE), parse_predicate(where), spark_arrow_schema(schema, int96),
        settings, stats,
    )  # fmt: skip
    return {
        "ranged_reads": stats.requests,
        "bytes_read": stats.bytes_read,
        "metadata_requests": stats.metadata_requests,
        "files_to_read": len(reads),
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
    print(name, json.dumps(brief), flush=True)


def main(runs: int) -> None:
    spark = _session()
    import pybloom_async.spark

    pybloom_async.spark.register(spark)
    files = ensure_lake(spark)
    shutil.rmtree(LAKE / "_bloom_index", ignore_errors=True)
    recorder = Recorder("spark_source", runs=runs, files=NUM_FILES, row_groups=ROW_GROUPS)
    point = keys(files, 1, seed=1)[0]
    many = keys(files, 100, seed=2)
    queries = {"point": f"id = {point}", "in100": f"id IN ({', '.join(map(str, many))})"}
    results: dict[str, Any] = {"load_before": load_average()}
    for where in queries.values():  # warm-up: Spark's Python workers, the page cache
        compare(spark, where, 1)
    for name, where in queries.items():
        results[name] = compare(spark, where, runs)
        show(name, results[name])
    results["lake_index"] = lake_index(spark)
    print("lake_index", json.dumps(results["lake_index"]), flush=True)
    results["planning_with_index"] = planning_reads(queries["point"])
    print("planning", json.dumps(results["planning_with_index"]), flush=True)
    results["point_with_index"] = compare(spark, queries["point"], runs)
    show("point_with_index", results["point_with_index"])
    schema = spark.read.parquet(str(LAKE)).schema
    results["point_with_index_schema_given"] = compare(spark, queries["point"], runs, schema)
    show("point_with_index_schema_given", results["point_with_index_schema_given"])
    shutil.rmtree(LAKE / "_bloom_index", ignore_errors=True)
    results["load_after"] = load_average()
    path = recorder.write(RESULTS / "spark_source.json", results)
    print(f"wrote {path}")
    spark.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
