"""The main job on an embedded default: `make demo` (``python -m pybloom_async.apps.demo``).

The whole story on local files, no credentials, no network:

1. generate a small data lake with pyarrow, *without* Bloom filters (as most
   existing lakes are);
2. add filters on ``user_id`` and ``email`` to every file in place
   (:func:`pybloom_async.add_bloom_filters_sync`: data bytes unchanged, atomic);
3. build a file-level sidecar index per file (``_bloom_index/``);
4. ask the library's question, *which files and row groups may hold these
   keys?*, for a point lookup, an IN list, two columns and an absent key: once
   with the in-file filters, once with the sidecar indexes first;

and print what was skipped: files, row groups, bytes not read, requests made, and
when the sidecar index pays. ``--dir DIR`` keeps the lake in ``DIR`` (a new or empty
folder, or an earlier run's lake) instead of a temporary folder; ``--json-out FILE``
also writes the figures as JSON (``bench/charts.py`` draws from them).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import re
import shlex
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .. import col, prune_sync, simd_backend
from ..index.build import build_index_sync
from ..index.prune import prune_with_index_sync
from ..io.base import SourceStats
from ..predicate import Predicate
from ..pruning.verdicts import Verdict
from ..rewrite.add_filters import add_bloom_filters_sync

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


HOWS = ("in-file filters", "sidecar index + in-file filters")


def report(
    title: str, folder: Path, where: Predicate, files_with_hits: int, lake_bytes: int
) -> dict[str, Any]:
    """Prune ``where`` with the in-file filters, then with the sidecar indexes first.

    Prints one line per way and returns the figures (``--json-out``).
    """
    print(f"\n{title}: {where}  (matches in {files_with_hits} file(s))")
    total_groups = FILES * ROW_GROUPS
    runs: list[dict[str, Any]] = []
    for how in HOWS:
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
        runs.append(
            {
                "how": how,
                "kept_files": len(kept_files),
                "kept_row_groups": kept_groups,
                "rows_skipped": skipped_rows,
                "requests": stats.requests,
                "bytes_read": stats.bytes_read,
                "ms": round(elapsed * 1000, 1),
            }
        )
    return {
        "title": title,
        "where": str(where),
        "files_with_matches": files_with_hits,
        "runs": runs,
    }


# What a folder given with --dir may already hold: an earlier run's lake, nothing else
# (step 2 rewrites every *.parquet file in it in place).
_DEMO_ENTRY = re.compile(r"part-\d{3}\.parquet|_bloom_index")


def check_dir(folder: Path) -> str | None:
    """Why ``folder`` cannot hold the demo's lake, or None if it can (absent, empty, a lake)."""
    if not folder.exists():
        return None
    if not folder.is_dir():
        return f"--dir {folder}: not a folder"
    others = sorted(p.name for p in folder.iterdir() if not _DEMO_ENTRY.fullmatch(p.name))
    if others:
        return (
            f"--dir {folder} holds files the demo did not write ({others[0]}"
            f"{f' and {len(others) - 1} more' if len(others) > 1 else ''}); "
            "give a new or empty folder"
        )
    return None


def run(folder: Path) -> tuple[int, dict[str, Any]]:
    """The four steps on ``folder``; returns the exit code and the figures."""
    figures: dict[str, Any] = {"lake": {}, "queries": []}
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
        lambda: [add_bloom_filters_sync(p, COLUMNS, fpp=0.01) for p in files],
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
        print(f"   index build failed: {failed[0].file}: {failed[0].error}", file=sys.stderr)
        return 1, figures
    index_bytes = sum(b.index_bytes or 0 for b in builds)
    print(f"   {index_bytes:,} B of indexes")
    figures["lake"] = {
        "files": FILES,
        "row_groups": FILES * ROW_GROUPS,
        "rows": len(ids),
        "bytes": after,
        "filter_bytes": added,
        "index_bytes": index_bytes,
    }
    print("4. pruning:")
    per_file = ROW_GROUPS * ROWS_PER_GROUP
    target = ids[123_456]
    queries = figures["queries"]
    queries.append(report("point lookup", folder, col("user_id") == target, 1, after))
    rng = np.random.default_rng(7)
    picks = [ids[i] for i in rng.choice(len(ids), size=20, replace=False).tolist()]
    files_hit = len({ids.index(p) // per_file for p in picks})
    in_list = report("IN list of 20 ids", folder, col("user_id").isin(picks), files_hit, after)
    queries.append(in_list)
    email = f"user{target % 10**9}@example.com"
    both = (col("user_id") == target) & (col("email") == email)
    queries.append(report("two columns", folder, both, 1, after))
    queries.append(report("absent key", folder, col("email") == "nobody@example.com", 0, after))
    point = {r["how"]: r for r in queries[0]["runs"]}
    kept_by_index = in_list["runs"][1]["kept_files"]
    print(
        "\nWhen the sidecar index pays: when most files hold no key and a request costs more "
        "than bytes (object stores). It answers for a whole file in one read "
        f"({point[HOWS[1]]['requests']} requests instead of {point[HOWS[0]]['requests']} "
        "for the point lookup), but it holds every indexed column's filter over all the "
        f"file's rows, so it reads more bytes, and each file it keeps ({kept_by_index} for the "
        "IN list) is then read as without it."
    )
    return 0, figures


def main(argv: list[str] | None = None) -> int:
    """Run the demo; returns the process exit code (2: bad arguments)."""
    parser = argparse.ArgumentParser(
        prog="python -m pybloom_async.apps.demo", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument(
        "--dir", type=Path, help="write the lake here and keep it (default: a temp dir)"
    )
    parser.add_argument(
        "--json-out", type=Path, metavar="FILE", help="also write the figures here as JSON"
    )
    args = parser.parse_args(argv)
    problem = check_dir(args.dir) if args.dir is not None else None
    if args.json_out is not None and not args.json_out.parent.is_dir():
        problem = f"--json-out {args.json_out}: no folder {args.json_out.parent}"
    elif args.json_out is not None and args.json_out.is_dir():
        problem = f"--json-out {args.json_out}: a folder, not a file"
    if problem is None and args.dir is not None:
        try:
            args.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            problem = f"--dir {args.dir}: cannot make the folder: {exc.strerror}"
    if problem:
        print(f"demo: error: {problem}", file=sys.stderr)
        return 2
    print(f"pybloom-async demo (SBBF kernels: {simd_backend()})")
    with contextlib.ExitStack() as stack:
        if args.dir is None:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pybloom-demo-")))
        else:
            folder = args.dir
        code, figures = run(folder)
    if args.dir is None:
        print(
            "\nThe lake was in a temporary folder, now deleted; to keep it, run "
            '`make demo DEMO_ARGS="--dir DIR"` (or `python -m pybloom_async.apps.demo --dir DIR`).'
        )
    else:
        print(
            f"\nThe lake stays in {folder}; e.g. `pybloom-async prune {shlex.quote(str(folder))} "
            "--use-index "
            "--where \"email = 'nobody@example.com'\" --summary`."
        )
    if args.json_out is not None and code == 0:
        figures = {
            "kind": "demo",
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "machine": {
                "cores": os.cpu_count(),
                "python": platform.python_version(),
                "simd_backend": simd_backend(),
            },
            "load_average": " ".join(f"{x:.2f}" for x in os.getloadavg()),
            **figures,
        }
        try:
            args.json_out.write_text(json.dumps(figures, indent=1) + "\n")
        except OSError as exc:
            print(f"demo: error: cannot write --json-out {args.json_out}: {exc.strerror}",
                  file=sys.stderr)  # fmt: skip
            return 1
    return code


if __name__ == "__main__":
    raise SystemExit(main())
