"""Bytes a lookup reads against what it needs (issue 31: every byte at most once).

Files of three shapes, each looked up locally and on S3 (moto on 127.0.0.1): an ``IN`` list
whose keys sit in every row group (every row group kept: the case that read the data area
twice), a point lookup, and an ``IN`` list keeping half the row groups. For each: the bytes
read beyond pruning's own (footer and filters), against the file's size and against the
bytes of the column chunks a lookup needs (the kept row groups' chunks of the columns read).
The rows are checked against pyarrow's.

    .venv/bin/python bench/bench_bytes.py --json-out bench/results/lookup-bytes.json

Bytes are counted, not timed: the figures do not move with the machine's load.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_reader import BUCKET, moto_options, moto_server, upload
from record import Recorder

from pybloom_async import SourceStats, col, lookup_sync, prune_sync

ROWS = 200_000
GROUP = 20_000


def write(path: Path) -> Any:
    rng = np.random.default_rng(1)
    table = pa.table({
        "user_id": pa.array(rng.integers(0, 50, ROWS)),
        "country": pa.array(rng.choice(["DE", "FR", "US", "GB"], ROWS)),
        "v": pa.array(rng.random(ROWS)),
        "s": pa.array([f"payload-{i}" for i in range(ROWS)]),
        "id": pa.array(np.arange(ROWS)),
    })  # fmt: skip
    pq.write_table(table, path, row_group_size=GROUP,
                   bloom_filter_options={"id": {"ndv": GROUP, "fpp": 0.01}})  # fmt: skip
    return table


CASES = {
    "IN 44 keys in every row group, AND country != 'DE'": (
        col("user_id").isin(list(range(44))) & (col("country") != "DE"),
        lambda t: pc.and_(
            pc.is_in(t["user_id"], pa.array(range(44))), pc.not_equal(t["country"], "DE")
        ),
    ),
    "id = k (point)": (col("id") == 123_457, lambda t: pc.equal(t["id"], 123_457)),
    "id IN 5 keys (half the row groups)": (
        col("id").isin([5, 40_005, 80_005, 120_005, 160_005]),
        lambda t: pc.is_in(t["id"], pa.array([5, 40_005, 80_005, 120_005, 160_005])),
    ),
}


def needed(path: Path, kept: set[int], columns: list[str]) -> int:
    md = pq.ParquetFile(path).metadata
    names = [md.schema.column(i).name for i in range(md.num_columns)]
    total = 0
    for g in kept:
        for i, name in enumerate(names):
            if name in columns:
                total += md.row_group(g).column(i).total_compressed_size
    return total


def measure(
    url: str, options: dict[str, Any] | None, path: Path, table: Any
) -> list[dict[str, Any]]:
    extra = {"options": options} if options else {}
    out = []
    for name, (where, mask) in CASES.items():
        pruning = SourceStats()
        verdicts = prune_sync(url, where, stats=pruning, **extra)
        kept = {v.row_group for v in verdicts if v.kept}
        stats = SourceStats()
        got = lookup_sync(url, where, stats=stats, **extra)
        assert got.to_pylist() == table.filter(mask(table)).to_pylist(), name
        data = stats.bytes_read - pruning.bytes_read
        need = needed(path, kept, table.column_names)
        row = {
            "case": name, "rows": got.num_rows, "kept_row_groups": len(kept),
            "file_bytes": path.stat().st_size, "pruning_bytes": pruning.bytes_read,
            "lookup_bytes": stats.bytes_read, "data_bytes": data,
            "kept_chunk_bytes": need, "requests": stats.requests,
        }  # fmt: skip
        out.append(row)
        print(f"  {name}: {got.num_rows} rows, {len(kept)} row groups kept; lookup read "
              f"{stats.bytes_read:,} B = {stats.bytes_read / path.stat().st_size:.3f}x the "
              f"file; data beyond pruning {data:,} B against {need:,} B of kept chunks "
              f"({data / need if need else 0:.3f}x); {stats.requests} requests")  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--no-s3", action="store_true", help="local files only")
    args = parser.parse_args()
    recorder = Recorder("lookup-bytes", rows=ROWS, row_group=GROUP)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.parquet"
        table = write(path)
        print(f"local ({path.stat().st_size:,} B file):")
        results["local"] = measure(str(path), None, path, table)
        if not args.no_s3:
            with moto_server() as (endpoint, _):
                (key,) = upload(endpoint, [path])
                print("S3 (moto):")
                results["s3"] = measure(f"s3://{BUCKET}/{key}", moto_options(endpoint),
                                        path, table)  # fmt: skip
    if args.json_out:
        recorder.write(args.json_out, results)


if __name__ == "__main__":
    main()
