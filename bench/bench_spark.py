"""``prune_on_spark`` against the local reader on the same files (issue 4).

Data: the 200 Spark files of ``gen_spark_files.py`` (10 row groups each, filters on ``id``
and ``email``), and a 1,000-file set made of five hard links to each of them
(``bench/data/spark1000/``, made once; footers and filters are read from each name as
from a distinct file, the page cache serving all). Predicate: ``id IN (8 keys) OR
email IN (8 keys)``, half present, half absent, keys random so statistics cannot prune.

Readers, each given the directory:

* **local**: ``prune_sync(dir, where)`` in one Python process (64 files at once);
* **spark collect**: ``prune_on_spark(spark, dir, where).collect()``: every verdict back
  on the driver, as the local reader returns them;
* **spark survivors**: ``surviving_files(prune_on_spark(spark, dir, where))``: the usual
  end of the job (a group-by, then only the surviving names reach the driver).

Spark runs at ``local[1]`` and ``local[2]`` (one or two executor cores), each in its own
child process (a fresh JVM), with the default partitioning (one task per core). Each
child first runs one untimed job (Spark starts its Python workers; its time is
reported as "first job") and one untimed ``surviving_files``. Then, per set, ``--runs``
rounds of local, collect, survivors, interleaved so that all three see the same load
(the machine may be shared); figures are medians. Spark's verdicts and survivors are
checked against the local reader's.

With ``--source``: the ``pybloom`` data source against ``spark.read.parquet`` on 2,000
Spark-written files, the 200-file lake of ``bench_lookup.py`` and the hive lake of
``bench_rows.py`` (``--source-sets spark2000,lake200,hive``; ``bench_spark_source.py``).

Run::

    .venv/bin/python bench/gen_spark_files.py     # once; cached in bench/data/spark200/
    .venv/bin/python bench/bench_spark.py [--runs 5] [--masters local[1],local[2]]
        [--sets 200,1000]

Output: a table, then one machine-readable line per figure (``bench=spark ...``).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from gen_spark_files import DEFAULT_OUT, ensure_data, parquet_files
from record import cpu_model, load_average

from pybloom_async import prune_sync, simd_backend

BENCH = Path(__file__).resolve().parent
SET_1000 = BENCH / "data" / "spark1000"
COPIES = 5
CHILD_TIMEOUT = 1800.0


def java_version() -> str:
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    first = (out.stderr or out.stdout).splitlines()
    return first[0].strip() if first else "unknown"


def emit(section: str, **fields: object) -> None:
    parts = [f"bench=spark section={section}"]
    for key, value in fields.items():
        parts.append(f"{key}={value:.4g}" if isinstance(value, float) else f"{key}={value}")
    print(" ".join(parts), flush=True)


def machine_line() -> None:
    versions = {n: importlib.metadata.version(n) for n in ("pyspark", "pyarrow", "anyio")}
    print(
        f"# {cpu_model()}, {os.cpu_count()} cores, load average {load_average()}; "
        f"Python {platform.python_version()}; {java_version()}; SBBF backend "
        f"{simd_backend()}; " + ", ".join(f"{k} {v}" for k, v in versions.items()),
        flush=True,
    )
    emit("machine", cores=os.cpu_count(), loadavg=repr(load_average()), **versions)


# --------------------------------------------------------------------------- data


def ensure_1000(files: Sequence[Path]) -> Path:
    """``bench/data/spark1000/``: five hard links (copies if links fail) to each file."""
    if SET_1000.exists() and len(parquet_files(SET_1000)) == COPIES * len(files):
        return SET_1000
    tmp = SET_1000.with_name(SET_1000.name + ".tmp")
    if tmp.exists():
        for p in tmp.iterdir():
            p.unlink()
    tmp.mkdir(parents=True, exist_ok=True)
    for copy in range(COPIES):
        for path in files:
            target = tmp / f"c{copy}-{path.name}"
            try:
                os.link(path, target)
            except OSError:
                target.write_bytes(path.read_bytes())
    if SET_1000.exists():
        for p in SET_1000.iterdir():
            p.unlink()
        SET_1000.rmdir()
    os.replace(tmp, SET_1000)
    return SET_1000


def keys_where(files: Sequence[Path], seed: int = 4) -> str:
    """``id IN (4 present, 4 absent) OR email IN (4 present, 4 absent)``, as text."""
    rng = random.Random(seed)
    ids: list[int] = []
    emails: list[str] = []
    for column, sink in (("id", ids), ("email", emails)):
        for _ in range(4):
            parquet = pq.ParquetFile(files[rng.randrange(len(files))])
            table = parquet.read_row_group(rng.randrange(parquet.num_row_groups), [column])
            sink.append(table.column(0)[rng.randrange(table.num_rows)].as_py())
    ids += [rng.randrange(-(2**63), 2**63) for _ in range(4)]
    emails += [f"absent-{rng.getrandbits(64):016x}@example.com" for _ in range(4)]
    quoted = ", ".join(f"'{e}'" for e in emails)
    return f"id IN ({', '.join(map(str, ids))}) OR email IN ({quoted})"


def timed(fn: Callable[[], Any], runs: int) -> tuple[list[float], Any]:
    samples = []
    result = None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - t0)
    return samples, result


def rows_of(verdicts: Sequence[Any]) -> list[tuple[Any, ...]]:
    return [(v.file, v.row_group, v.num_rows, v.kept, v.reason, v.rule.value) for v in verdicts]


# --------------------------------------------------------------------------- child: one master


def child(master: str, sets: dict[str, str], where_text: str, runs: int) -> None:
    """Time prune_on_spark on each set under one master; one JSON line per set."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from pybloom_async import prune_sync
    from pybloom_async.spark.jobs import prune_on_spark, surviving_files

    spark = (
        SparkSession.builder.master(master)
        .appName("pybloom-async-bench-spark")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        first_dir = next(iter(sets.values()))
        t0 = time.perf_counter()
        prune_on_spark(spark, first_dir, where_text).collect()
        first = time.perf_counter() - t0
        surviving_files(prune_on_spark(spark, first_dir, where_text))  # warm the group-by
        for name, directory in sets.items():
            # Interleaved, so that the local reader and Spark see the same machine load.
            local_s: list[float] = []
            collect_s: list[float] = []
            survivors_s: list[float] = []
            rows: list[Any] = []
            survivors: list[str] = []
            for _ in range(runs):
                local_s += timed(lambda d=directory: prune_sync(d, where_text), 1)[0]
                seconds, rows = timed(
                    lambda d=directory: prune_on_spark(spark, d, where_text).collect(), 1
                )
                collect_s += seconds
                seconds, survivors = timed(
                    lambda d=directory: surviving_files(prune_on_spark(spark, d, where_text)), 1
                )
                survivors_s += seconds
            result = {
                "set": name,
                "master": master,
                "first_job_s": first,
                "local_s": local_s,
                "collect_s": collect_s,
                "survivors_s": survivors_s,
                "rows": [list(r) for r in rows],
                "survivors": survivors,
                "partitions": spark.sparkContext.defaultParallelism,
            }
            print("RESULT " + json.dumps(result), flush=True)
    finally:
        spark.stop()


def run_child(
    master: str, sets: dict[str, str], where_text: str, runs: int
) -> list[dict[str, Any]]:
    argv = [sys.executable, __file__, "--child", master, "--runs", str(runs),
            "--where", where_text, "--child-sets", json.dumps(sets)]  # fmt: skip
    out = subprocess.run(argv, capture_output=True, text=True, timeout=CHILD_TIMEOUT)
    if out.returncode != 0:
        raise RuntimeError(f"child {master} failed ({out.returncode}):\n{out.stderr[-4000:]}")
    return [json.loads(line[7:]) for line in out.stdout.splitlines() if line.startswith("RESULT ")]


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--masters", default="local[1],local[2]")
    parser.add_argument("--sets", default="200,1000")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--child-sets", help=argparse.SUPPRESS)
    parser.add_argument("--where", help=argparse.SUPPRESS)
    parser.add_argument(
        "--source",
        action="store_true",
        help="the pybloom data source against spark.read.parquet (bench_spark_source.py)",
    )
    parser.add_argument(
        "--source-sets",
        default="spark2000",
        help="with --source: the lakes, of spark2000,lake200,hive,floor (bench_spark_source.py)",
    )
    parser.add_argument("--json-out", type=Path, help="with --source: the results file")
    args = parser.parse_args()
    if args.source:
        import bench_spark_source

        bench_spark_source.main(args.runs, args.source_sets, args.json_out)
        return
    if args.child:
        child(args.child, json.loads(args.child_sets), args.where, args.runs)
        return

    machine_line()
    files = ensure_data(DEFAULT_OUT)
    where_text = keys_where(files)
    available = {"200": DEFAULT_OUT, "1000": ensure_1000(files)}
    sets = {n: str(available[n]) for n in args.sets.split(",")}
    print(f"# predicate: {where_text}", flush=True)

    expected: dict[str, list[list[Any]]] = {}
    for name, directory in sets.items():
        verdicts = prune_sync(directory, where_text)  # also warms the page cache
        expected[name] = [list(r) for r in rows_of(verdicts)]
        files_in = len(parquet_files(Path(directory)))
        kept = sum(v.kept for v in verdicts)
        print(f"# set {name}: {files_in} files, {len(verdicts)} row groups, {kept} kept")

    table: list[tuple[str, str, float, float, float, float, int]] = []
    for master in args.masters.split(","):
        for r in run_child(master, sets, where_text, args.runs):
            if r["rows"] != expected[r["set"]]:
                raise RuntimeError(f"{master} set {r['set']}: verdicts differ from local")
            kept_files = sorted({row[0] for row in r["rows"] if row[3]})
            if r["survivors"] != kept_files:
                raise RuntimeError(f"{master} set {r['set']}: survivors differ")
            local = statistics.median(r["local_s"])
            collect = statistics.median(r["collect_s"])
            survivors = statistics.median(r["survivors_s"])
            table.append((r["set"], master, local, collect, survivors,
                          r["first_job_s"], r["partitions"]))  # fmt: skip
            emit("spark", set=r["set"], master=master, partitions=r["partitions"],
                 local_ms=local * 1e3, collect_ms=collect * 1e3,
                 survivors_ms=survivors * 1e3, first_job_ms=r["first_job_s"] * 1e3)  # fmt: skip

    print()
    print("| files | master | local ms | spark collect ms | spark survivors ms | "
          "local / collect | first job ms |")  # fmt: skip
    print("|---:|---|---:|---:|---:|---:|---:|")
    for name, master, loc, coll, surv, first, _ in table:
        print(f"| {name} | {master} | {loc * 1e3:,.0f} | {coll * 1e3:,.0f} | {surv * 1e3:,.0f} "
              f"| {loc / coll:.2f}x | {first * 1e3:,.0f} |")  # fmt: skip
    print(f"# load average after: {load_average()}")


if __name__ == "__main__":
    main()
