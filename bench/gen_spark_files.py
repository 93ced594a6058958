"""Write the reader benchmark's data set with PySpark (parquet-java Bloom filters).

200 files, each of 10 row groups, with Split Block Bloom Filters on two columns:

* ``id``    BIGINT: ``xxhash64(seq, 42)``, so keys are spread over the whole long range and
  min/max statistics cannot prune them (the case Bloom filters exist for);
* ``email`` STRING: ``user-<hex of xxhash64(seq, 7)>@example.com``, random for the same
  reason (``user<seq>`` would give each row group a narrow min/max range, and statistics
  alone would then prune most probes without the filters);
* ``seq``   BIGINT: the row number, no filter (lets a reader find where a key lives).

parquet-java options (passed through Spark's writer options into the Hadoop conf):

* ``parquet.bloom.filter.enabled#<col>=true`` and ``parquet.bloom.filter.expected.ndv#<col>``:
  without an expected NDV parquet-java sizes every filter at ``parquet.bloom.filter.max.bytes``
  (1 MiB), which would make the filters larger than the data;
* ``parquet.block.row.count.limit``: exactly ``rows_per_file / 10`` rows per row group.
  ``parquet.block.size`` (bytes) gives only approximate counts, because parquet-java checks
  the buffered size at intervals of 100..10000 records; the row-count limit is checked per
  record, so each file gets exactly 10 row groups.

``spark.range(..., numPartitions=200)`` splits the rows into 200 equal partitions and each
partition writes one file (no shuffle); ``maxRecordsPerFile`` is a guard against more.

The output goes to ``bench/data/spark200/`` (gitignored), written to a temporary directory
and renamed into place once verified; when the directory is already there and verifies,
nothing is regenerated. Verification uses pyarrow: every file has 10 row groups and both
filtered columns carry ``bloom_filter_offset`` and ``bloom_filter_length`` in every row group.

Run: ``.venv/bin/python bench/gen_spark_files.py [--force] [--rows-per-file N]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

BENCH = Path(__file__).resolve().parent
DEFAULT_OUT = BENCH / "data" / "spark200"
NUM_FILES = 200
ROW_GROUPS_PER_FILE = 10
DEFAULT_ROWS_PER_FILE = 20_000
FILTERED_COLUMNS = ("id", "email")
# Salts hashed together with the row number (Spark's ``xxhash64(a, b)`` hashes all its
# arguments), so that id and email are unrelated. The benchmark reads keys back from the files.
ID_SALT = 42
EMAIL_SALT = 7


def parquet_files(directory: Path) -> list[Path]:
    """The data files of a Spark output directory, sorted (``_SUCCESS`` and ``.crc`` skipped)."""
    return sorted(p for p in directory.glob("*.parquet") if not p.name.startswith(("_", ".")))


def verify(directory: Path, num_files: int = NUM_FILES) -> list[Path]:
    """Check the data set with pyarrow; returns its files.

    Raises
    ------
    RuntimeError
        Wrong number of files or row groups, or a filtered column chunk without a filter.
    """
    files = parquet_files(directory)
    if len(files) != num_files:
        raise RuntimeError(f"{directory}: {len(files)} parquet files, expected {num_files}")
    for path in files:
        meta = pq.read_metadata(path)
        if meta.num_row_groups != ROW_GROUPS_PER_FILE:
            raise RuntimeError(
                f"{path.name}: {meta.num_row_groups} row groups, expected {ROW_GROUPS_PER_FILE}"
            )
        names = [meta.schema.column(i).path for i in range(meta.num_columns)]
        for rg in range(meta.num_row_groups):
            group = meta.row_group(rg)
            for name in FILTERED_COLUMNS:
                chunk = group.column(names.index(name))
                if chunk.bloom_filter_offset is None or chunk.bloom_filter_offset <= 0:
                    raise RuntimeError(f"{path.name} rg {rg} {name}: no bloom_filter_offset")
                if not chunk.bloom_filter_length:
                    raise RuntimeError(f"{path.name} rg {rg} {name}: no bloom_filter_length")
    return files


def _is_complete(directory: Path) -> bool:
    if not (directory / "_SUCCESS").exists():
        return False
    try:
        verify(directory)
    except (RuntimeError, OSError) as exc:
        print(f"existing data set is not usable ({exc}); regenerating", file=sys.stderr)
        return False
    return True


def generate(out: Path, rows_per_file: int) -> None:
    """Write the data set to ``out`` with a local Spark session (replaces ``out``)."""
    if rows_per_file % ROW_GROUPS_PER_FILE:
        raise ValueError(f"rows per file must be a multiple of {ROW_GROUPS_PER_FILE}")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    rows_per_group = rows_per_file // ROW_GROUPS_PER_FILE
    total = rows_per_file * NUM_FILES
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    # Loopback only: without this Spark binds its block manager to the first interface.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("pybloom-async-bench-data")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    try:
        spark.sparkContext.setLogLevel("WARN")
        frame = spark.range(0, total, 1, numPartitions=NUM_FILES).select(
            F.xxhash64(F.col("id"), F.lit(ID_SALT)).alias("id"),
            F.concat(
                F.lit("user-"),
                F.lower(F.hex(F.xxhash64(F.col("id"), F.lit(EMAIL_SALT)))),
                F.lit("@example.com"),
            ).alias("email"),
            F.col("id").alias("seq"),
        )
        writer = (
            frame.write.mode("overwrite")
            .option("compression", "snappy")
            .option("maxRecordsPerFile", str(rows_per_file))
            .option("parquet.block.row.count.limit", str(rows_per_group))
        )
        for name in FILTERED_COLUMNS:
            writer = writer.option(f"parquet.bloom.filter.enabled#{name}", "true").option(
                f"parquet.bloom.filter.expected.ndv#{name}", str(rows_per_group)
            )
        started = time.monotonic()
        writer.parquet(str(tmp))
        print(f"spark wrote {NUM_FILES} files in {time.monotonic() - started:.1f} s")
    finally:
        spark.stop()
    for crc in tmp.glob(".*.crc"):
        crc.unlink()
    verify(tmp)
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)


def ensure_data(
    out: Path = DEFAULT_OUT, *, rows_per_file: int = DEFAULT_ROWS_PER_FILE, force: bool = False
) -> list[Path]:
    """The data set's files, generating them first when missing, broken or ``force``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    if force or not _is_complete(out):
        generate(out, rows_per_file)
    return verify(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--rows-per-file", type=int, default=DEFAULT_ROWS_PER_FILE)
    parser.add_argument("--force", action="store_true", help="regenerate even if present")
    args = parser.parse_args()
    files = ensure_data(args.out, rows_per_file=args.rows_per_file, force=args.force)
    total = sum(p.stat().st_size for p in files)
    print(
        f"{len(files)} files, {ROW_GROUPS_PER_FILE} row groups each, filters on "
        f"{', '.join(FILTERED_COLUMNS)}; {total / 1e6:.1f} MB in {args.out}"
    )


if __name__ == "__main__":
    main()
