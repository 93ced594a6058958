"""Point lookups in a Delta Lake table: pybloom-async vs deltalake's own readers.

Data (``bench/data/delta_tables/``, written once by deltalake itself, regenerated when the
shape changes): ``--files`` appends of ``--rows`` rows each, unpartitioned; ``id`` is a
random INT64 and ``email`` a random string, both with Split Block Bloom Filters written by
deltalake (``WriterProperties`` / ``BloomFilterProperties``, FPP 0.01); ``payload`` is
64 bytes of text per row. Every file spans the whole id range, so the log's min/max
statistics cannot prune, and the filters can.

Query: ``id IN (K keys)``, half read from random files, half absent. Methods, each
returning the same rows (checked):

* **pybloom-async**: ``lookup_sync(DeltaTable, where)``: the log's live files, their
  footers and filters, then the kept row groups read through deltalake's storage;
* **deltalake SQL**: ``QueryBuilder().register("t", dt).execute("SELECT ... WHERE id IN
  (...)")`` (DataFusion, with its own Parquet pruning);
* **pyarrow dataset**: ``dt.to_pyarrow_dataset().to_table(filter=id.isin(keys))``
  (statistics only).

Each figure is the median wall time of ``--runs`` runs (fresh objects each run, the OS page
cache warm), with the load average recorded at the start and the end.

Run::

    .venv/bin/python bench/bench_tables.py [--files 32] [--rows 20000] [--keys 8]
        [--runs 5] [--json-out bench/results/tables.json]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import (
    BloomFilterProperties,
    ColumnProperties,
    DeltaTable,
    QueryBuilder,
    WriterProperties,
    write_deltalake,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import Recorder

from pybloom_async import lookup_sync

DATA = Path(__file__).resolve().parent / "data" / "delta_tables"


def build(files: int, rows: int) -> tuple[Path, list[int]]:
    """The table (written once per shape) and a sample of its ids."""
    root = DATA / f"f{files}_r{rows}"
    sample_path = root.with_suffix(".sample.json")
    if root.exists() and sample_path.exists():
        return root, json.loads(sample_path.read_text())
    shutil.rmtree(root, ignore_errors=True)
    rng = random.Random(7)
    bloom = BloomFilterProperties(set_bloom_filter_enabled=True, fpp=0.01, ndv=rows)
    column = ColumnProperties(bloom_filter_properties=bloom)
    props = WriterProperties(column_properties={"id": column, "email": column})
    sample = []
    for _ in range(files):
        ids = [rng.getrandbits(62) for _ in range(rows)]
        sample.append(rng.choice(ids))
        table = pa.table({
            "id": pa.array(ids, pa.int64()),
            "email": [f"u{i:x}@example.com" for i in ids],
            "payload": ["x" * 64] * rows,
        })  # fmt: skip
        write_deltalake(root, table, mode="append", writer_properties=props)
    sample_path.write_text(json.dumps(sample))
    return root, sample


def timed(fn: Any, runs: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(runs):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=32)
    parser.add_argument("--rows", type=int, default=20000)
    parser.add_argument("--keys", type=int, default=8)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    recorder = Recorder("tables", files=args.files, rows=args.rows, keys=args.keys,
                        runs=args.runs)  # fmt: skip
    root, sample = build(args.files, args.rows)
    rng = random.Random(11)
    present = rng.sample(sample, args.keys // 2)
    keys = present + [rng.getrandbits(62) for _ in range(args.keys - len(present))]
    where = f"id IN ({', '.join(map(str, keys))})"

    def ours() -> Any:
        return lookup_sync(DeltaTable(root), where)

    def sql() -> Any:
        query = QueryBuilder().register("t", DeltaTable(root))
        return pa.table(query.execute(f"SELECT id, email, payload FROM t WHERE {where}"))

    def dataset() -> Any:
        ds = DeltaTable(root).to_pyarrow_dataset()
        return ds.to_table(filter=pc.field("id").isin(keys))

    results = {}
    expected = None
    for name, fn in (("pybloom-async", ours), ("deltalake SQL", sql), ("pyarrow dataset", dataset)):
        seconds, table = timed(fn, args.runs)
        got = sorted(table.column("id").to_pylist())
        assert expected is None or got == expected, (name, got, expected)
        expected = got
        results[name] = {"seconds": seconds, "rows": table.num_rows}
        print(f"bench=tables method={name!r} median_s={seconds:.4f} rows={table.num_rows}")
    base = results["pybloom-async"]["seconds"]
    for r in results.values():
        r["vs_pybloom_async"] = r["seconds"] / base
    print(json.dumps(results, indent=1))
    if args.json_out is not None:
        recorder.write(args.json_out, results)


if __name__ == "__main__":
    main()
