"""The main job on an embedded default: `make demo` (``python -m pybloom_async.demo``).

Generates a small data lake of Parquet files with pyarrow (Bloom filters on
``user_id`` and ``email``), then asks the library's main question, *which row
groups may hold these keys?*, for a point lookup and an IN list, and prints
what could be skipped, the requests made and the bytes read. Local files, no
credentials, no network.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from . import col, prune_sync, simd_backend
from .sources import SourceStats

FILES = 24
ROW_GROUPS = 8
ROWS_PER_GROUP = 5_000


def generate(folder: Path) -> list[int]:
    """Write the lake; returns every user id, in file order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(2026)
    total = FILES * ROW_GROUPS * ROWS_PER_GROUP
    # Random 63-bit ids: min/max statistics of every row group span nearly the
    # whole range, so only the Bloom filters can rule a row group out.
    ids = rng.integers(0, 2**63 - 1, size=total, dtype=np.int64)
    per_file = ROW_GROUPS * ROWS_PER_GROUP
    for f in range(FILES):
        chunk = ids[f * per_file : (f + 1) * per_file]
        table = pa.table(
            {
                "user_id": pa.array(chunk),
                "email": pa.array([f"user{u % 10**9}@example.com" for u in chunk.tolist()]),
                "amount": pa.array(rng.random(per_file) * 100),
            }
        )
        pq.write_table(
            table,
            folder / f"part-{f:03d}.parquet",
            row_group_size=ROWS_PER_GROUP,
            bloom_filter_options={
                "user_id": {"ndv": ROWS_PER_GROUP, "fpp": 0.01},
                "email": {"ndv": ROWS_PER_GROUP, "fpp": 0.01},
            },
        )
    return [int(i) for i in ids]


def report(title: str, folder: Path, where: object, expect_hits: int) -> None:
    stats = SourceStats()
    t0 = time.perf_counter()
    verdicts = prune_sync(folder, where, stats=stats)  # type: ignore[arg-type]
    elapsed = time.perf_counter() - t0
    kept = [v for v in verdicts if v.kept]
    files_kept = {v.file for v in kept}
    by_rule: dict[str, int] = {}
    for v in verdicts:
        if not v.kept:
            by_rule[v.rule.value] = by_rule.get(v.rule.value, 0) + 1
    total_bytes = sum(p.stat().st_size for p in folder.glob("*.parquet"))
    print(f"\n{title}: {where}")
    print(
        f"  kept {len(kept)}/{len(verdicts)} row groups in {len(files_kept)}/{FILES} files "
        f"(the data holds matches in {expect_hits}); skipped by {by_rule}"
    )
    print(
        f"  {stats.requests} requests, {stats.bytes_read:,} of {total_bytes:,} bytes read, "
        f"{elapsed * 1000:.1f} ms"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the demo; returns the process exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, help="write the lake here (default: a temp dir)")
    args = parser.parse_args(argv)
    print(f"pybloom-async demo (SBBF kernels: {simd_backend()})")
    with tempfile.TemporaryDirectory(prefix="pybloom-demo-") as tmp:
        folder = args.dir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        ids = generate(folder)
        print(
            f"wrote {FILES} files x {ROW_GROUPS} row groups x {ROWS_PER_GROUP:,} rows "
            f"to {folder} in {time.perf_counter() - t0:.1f} s"
        )
        per_group = ROWS_PER_GROUP
        target = ids[123_456]
        report("point lookup", folder, col("user_id") == target, 1)
        rng = np.random.default_rng(7)
        picks = [ids[i] for i in rng.choice(len(ids), size=20, replace=False).tolist()]
        groups = {ids.index(p) // per_group for p in picks}
        report("IN list of 20 ids", folder, col("user_id").isin(picks), len(groups))
        email = f"user{target % 10**9}@example.com"
        report("two columns", folder, (col("user_id") == target) & (col("email") == email), 1)
        report("absent key", folder, col("email") == "nobody@example.com", 0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
