"""The main job on an embedded default: `make demo` (``python -m pybloom_async.demo``).

The whole story on local files, no credentials, no network:

1. generate a small data lake with pyarrow, *without* Bloom filters (as most
   existing lakes are);
2. add filters on ``user_id`` and ``email`` to every file in place
   (:func:`pybloom_async.add_bloom_filters`: data bytes unchanged, atomic);
3. build a file-level sidecar index per file (``_bloom_index/``);
4. ask the library's question, *which files and row groups may hold these
   keys?*, for a point lookup, an IN list, two columns and an absent key: once
   with the in-file filters, once with the sidecar indexes first;

and print what was skipped: files, row groups, bytes not read, requests made.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from . import col, prune_sync, simd_backend
from .index import build_index_sync, prune_with_index_sync
from .predicate import Predicate
from .prune import Verdict
from .rewrite import add_bloom_filters
from .sources import SourceStats

FILES = 24
ROW_GROUPS = 8
ROWS_PER_GROUP = 5_000
COLUMNS = ["user_id", "email"]


def generate(folder: Path, files: int = FILES) -> list[int]:
    """Write the lake (no Bloom filters); returns every user id, in file order.

    Each file holds its own users (a lake partitioned by user, as key lookups
    want it), but ids are random 63-bit numbers, so the min/max statistics of every
    row group span nearly the whole range and cannot rule anything out.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(2026)
    per_file = ROW_GROUPS * ROWS_PER_GROUP
    ids = rng.integers(0, 2**63 - 1, size=files * per_file, dtype=np.int64)
    for f in range(files):
        chunk = ids[f * per_file : (f + 1) * per_file]
        table = pa.table(
            {
                "user_id": pa.array(chunk),
                "email": pa.array([f"user{u % 10**9}@example.com" for u in chunk.tolist()]),
                "amount": pa.array(rng.random(per_file) * 100),
            }
        )
        pq.write_table(table, folder / f"part-{f:03d}.parquet", row_group_size=ROWS_PER_GROUP)
    return [int(i) for i in ids]


def _timed(what: str, func: Callable[[], object]) -> object:
    t0 = time.perf_counter()
    result = func()
    print(f"{what} in {time.perf_counter() - t0:.2f} s")
    return result


def report(
    title: str, folder: Path, where: Predicate, files_with_hits: int, lake_bytes: int
) -> None:
    """Prune ``where`` with the in-file filters, then with the sidecar indexes first."""
    print(f"\n{title}: {where}  (matches in {files_with_hits} file(s))")
    total_groups = FILES * ROW_GROUPS
    for how in ("in-file filters", "sidecar index + in-file filters"):
        stats = SourceStats()
        t0 = time.perf_counter()
        verdicts: list[Verdict]
        if how == "in-file filters":
            verdicts = prune_sync(folder, where, stats=stats)
        else:
            verdicts = prune_with_index_sync(folder, where, stats=stats)
        elapsed = time.perf_counter() - t0
        kept_groups = sum(1 for v in verdicts if v.kept and v.row_group is not None)
        kept_files = {v.file for v in verdicts if v.kept}
        skipped_rows = sum(v.num_rows or 0 for v in verdicts if not v.kept)
        print(
            f"  {how:32} kept {len(kept_files):2}/{FILES} files, {kept_groups:3}/{total_groups} "
            f"row groups ({skipped_rows:,} rows skipped); {stats.requests} requests, "
            f"{stats.bytes_read:,} B read of {lake_bytes:,} B ({elapsed * 1000:.0f} ms)"
        )


def main(argv: list[str] | None = None) -> int:
    """Run the demo; returns the process exit code."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--dir", type=Path, help="write the lake here (default: a temp dir)")
    args = parser.parse_args(argv)
    print(f"pybloom-async demo (SBBF kernels: {simd_backend()})")
    with tempfile.TemporaryDirectory(prefix="pybloom-demo-") as tmp:
        folder = args.dir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        ids = _timed(
            f"1. wrote {FILES} files x {ROW_GROUPS} row groups x {ROWS_PER_GROUP:,} rows "
            f"with pyarrow, no Bloom filters, to {folder},",
            lambda: generate(folder),
        )
        assert isinstance(ids, list)
        files = sorted(folder.glob("*.parquet"))
        before = sum(p.stat().st_size for p in files)
        results = _timed(
            f"2. added filters on {', '.join(COLUMNS)} to every row group of every file",
            lambda: [add_bloom_filters(p, COLUMNS, fpp=0.01) for p in files],
        )
        assert isinstance(results, list)
        added = sum(r.filter_bytes for r in results)
        after = sum(p.stat().st_size for p in files)
        print(f"   {added:,} B of filters; the lake grew from {before:,} B to {after:,} B")
        builds = _timed(
            "3. built one sidecar index per file (_bloom_index/)",
            lambda: build_index_sync(folder, COLUMNS, fpp=0.01),
        )
        assert isinstance(builds, list)
        failed = [b for b in builds if b.error is not None]
        if failed:
            print(f"   index build failed: {failed[0].file}: {failed[0].error}")
            return 1
        print(f"   {sum(b.index_bytes or 0 for b in builds):,} B of indexes")
        print("4. pruning:")
        per_file = ROW_GROUPS * ROWS_PER_GROUP
        target = ids[123_456]
        report("point lookup", folder, col("user_id") == target, 1, after)
        rng = np.random.default_rng(7)
        picks = [ids[i] for i in rng.choice(len(ids), size=20, replace=False).tolist()]
        files_hit = len({ids.index(p) // per_file for p in picks})
        report("IN list of 20 ids", folder, col("user_id").isin(picks), files_hit, after)
        email = f"user{target % 10**9}@example.com"
        both = (col("user_id") == target) & (col("email") == email)
        report("two columns", folder, both, 1, after)
        report("absent key", folder, col("email") == "nobody@example.com", 0, after)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
