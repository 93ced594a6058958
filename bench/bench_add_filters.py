"""Benchmark of ``add_bloom_filters``: adding filters to a file vs writing them with pyarrow.

One table (random INT64 keys, random strings, INT32, DOUBLE; no column statistics can
prune them) is written by pyarrow without filters; then, medians of ``--reps`` runs:

* ``add-filters``: ``add_bloom_filters_sync(plain, all columns, out=...)``: read and decode
  every chunk, hash, build, copy the file, write the filters and the new footer;
* the same, in place (temporary file + fsync + rename);
* its parts: ``pq.read_table`` of the columns (decode only) and ``ColumnReader.hashes``
  over every chunk (decode + convert + hash);
* pyarrow ``write_table`` of the same table with and without ``bloom_filter_options``
  (same NDV and FPP): what it costs to get the filters at write time instead.

Figures: MB/s of Parquet processed (the input file's size over the wall time) and the
filter build rate in values/s (non-null values hashed and inserted per second).

Run: ``.venv/bin/python bench/bench_add_filters.py [--rows N] [--reps R]``
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pybloom_async import simd_backend
from pybloom_async.parquet import decode_file_metadata, parse_footer_tail
from pybloom_async.read.columns import ColumnReader
from pybloom_async.rewrite.add_filters import add_bloom_filters_sync


def make_table(rows: int, seed: int = 1) -> pa.Table:
    rng = np.random.default_rng(seed)
    keys = rng.integers(-(2**62), 2**62, rows)
    words = rng.integers(0, 2**40, rows)
    return pa.table(
        {
            "id": pa.array(keys),
            "email": pa.array([f"user{w:x}@example.org" for w in words.tolist()]),
            "n": pa.array(rng.integers(-(2**31), 2**31 - 1, rows, dtype=np.int32)),
            "x": pa.array(rng.normal(size=rows)),
        }
    )


def median_seconds(
    fn: Callable[[], object], reps: int, setup: Callable[[], object] | None = None
) -> tuple[float, float]:
    """Median wall and CPU seconds (all threads of this process) of ``fn``."""
    wall, cpu = [], []
    for _ in range(reps):
        if setup is not None:
            setup()
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall), statistics.median(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--row-group", type=int, default=250_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--fpp", type=float, default=0.01)
    args = parser.parse_args()

    table = make_table(args.rows)
    columns = table.column_names
    work = Path(tempfile.mkdtemp(prefix="bench-add-filters-"))
    try:
        plain = work / "plain.parquet"
        pq.write_table(table, plain, row_group_size=args.row_group)
        size = plain.stat().st_size
        data = plain.read_bytes()
        location = parse_footer_tail(data, len(data))
        meta = decode_file_metadata(location.metadata_bytes(data))
        groups = len(meta.row_groups)
        values = args.rows * len(columns)  # no nulls in this table
        print(
            f"# {platform.machine()} {os.cpu_count()} cpus, {simd_backend()}, pyarrow "
            f"{pa.__version__}; {args.rows:,} rows x {len(columns)} columns, {groups} row "
            f"groups, {size / 1e6:.1f} MB; fpp {args.fpp}; medians of {args.reps} runs"
        )

        out = work / "out.parquet"
        add = median_seconds(
            lambda: add_bloom_filters_sync(plain, columns, fpp=args.fpp, out=out), args.reps
        )
        result = add_bloom_filters_sync(plain, columns, fpp=args.fpp, out=out)
        copy = work / "inplace.parquet"
        inplace = median_seconds(
            lambda: add_bloom_filters_sync(copy, columns, fpp=args.fpp),
            args.reps,
            setup=lambda: shutil.copyfile(plain, copy),
        )
        decode = median_seconds(lambda: pq.read_table(plain, use_threads=False), args.reps)

        def hash_all() -> None:
            reader = ColumnReader(plain)
            for g in range(groups):
                for desc in meta.schema.columns:
                    reader.hashes(g, desc)

        hashing = median_seconds(hash_all, args.reps)
        options = {c: {"ndv": args.row_group, "fpp": args.fpp} for c in columns}
        with_filters = work / "pyarrow-filters.parquet"
        without = work / "pyarrow-plain.parquet"
        write_bloom = median_seconds(
            lambda: pq.write_table(
                table, with_filters, row_group_size=args.row_group, bloom_filter_options=options
            ),
            args.reps,
        )
        write_plain = median_seconds(
            lambda: pq.write_table(table, without, row_group_size=args.row_group), args.reps
        )
        same = sum(a == b for a, b in zip(_blobs(out), _blobs(with_filters), strict=True))

        def line(name: str, timing: tuple[float, float]) -> None:
            seconds, cpu = timing
            print(
                f"op={name} seconds={seconds:.3f} cpu_s={cpu:.3f} "
                f"mb_per_s={size / seconds / 1e6:.1f} mvalues_per_s={values / seconds / 1e6:.2f}"
            )

        line("add_filters_out", add)
        line("add_filters_in_place", inplace)
        line("pyarrow_read_table", decode)
        line("column_reader_hashes", hashing)
        line("pyarrow_write_with_filters", write_bloom)
        line("pyarrow_write_without_filters", write_plain)
        print(
            f"filters={len(result.filters)} filter_bytes={result.filter_bytes} "
            f"bytes_before={result.bytes_before} bytes_after={result.bytes_after} "
            f"identical_to_pyarrow={same}/{len(result.filters)}"
        )
        print(
            f"pyarrow_filter_overhead_cpu_s={write_bloom[1] - write_plain[1]:.3f} "
            f"add_filters_vs_pyarrow_write_with_filters: wall {add[0] / write_bloom[0]:.2f}x, "
            f"cpu {add[1] / write_bloom[1]:.2f}x"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _blobs(path: Path) -> list[bytes]:
    """Every chunk's filter (header + bitset), in (row group, column) order."""
    data = path.read_bytes()
    metadata = pq.ParquetFile(path).metadata
    found = []
    for g in range(metadata.num_row_groups):
        for c in range(metadata.num_columns):
            chunk = metadata.row_group(g).column(c).to_dict()
            offset, length = chunk["bloom_filter_offset"], chunk["bloom_filter_length"]
            found.append(data[offset : offset + length])
    return found


if __name__ == "__main__":
    main()
