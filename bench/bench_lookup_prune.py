"""What pruning keeps on the lookup lake: a score range, and a hive view's partition equality.

Two measurements on the 200-file lake of ``bench/bench_lookup.py`` (``bench/lookup_lake.py``):

1. **Ranges** (``--range LOW HIGH``, by default the ``and_range`` query's range of
   ``bench_lookup.py``): the row groups that ``pybloom_async.prune_sync`` keeps for
   ``score BETWEEN low AND high`` alone, and for ``id = k AND score BETWEEN ...``, counted by
   the rule of each verdict. ``score`` is spread over every row group (it is a hash of the
   random ids), so min/max statistics admit any range wider than a few values everywhere:
   the lake has no column sorted by time, and rewriting it is out of scope here.
2. **Hive partitions**: ``bench/data/lookup/hive-N/dt=2026-11-DD/`` (10 folders, DD 01..10,
   N/10 files each: file ``f`` in folder ``f // (N/10) + 1``) of hard links to the lake's
   files (no copy, no rewrite). ``lookup(hive, "id = k AND dt = '2026-11-03'")`` for a key
   of a file in that folder, against ``"id = k"`` alone and against the partition equality
   with a key of another folder (no row): files decided by pruning (``prune_sync``
   verdicts), files taken in (the run's last ``progress(done, total)``), requests
   (``SourceStats``: data reads, and metadata requests = opens/stats locally, HEAD/LIST on
   S3) and the median wall time of ``--runs`` lookups, each a fresh run (no shared reader)
   in this process. ``--s3`` also uploads the view to a moto_server (a second copy of the
   374 MB) and runs the same lookups through ``bench/latency_proxy.py`` (``--delay-ms``
   each way, keep-alive, a fresh proxy per lookup, whose counters give the requests).

Every lookup's rows are checked against the expected row (a row is a function of its id;
``dt`` is the folder's date).

Run::

    .venv/bin/python bench/bench_lookup_prune.py [--files 200] [--runs 3] [--s3]
        [--json-out bench/results/lookup-prune-200.json]
"""

from __future__ import annotations

import argparse
import collections
import datetime
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from bench_lookup import make_queries, proxy_counter  # noqa: E402
from bench_reader import moto_options  # noqa: E402
from lookup_lake import ROOT, ROWS_PER_FILE, ensure_lake, file_path, id_of, row_of  # noqa: E402
from record import Recorder, cpu_model, load_average  # noqa: E402

FOLDERS = 10
DAY = 3  # the folder of the partition equality: dt = '2026-11-03'


def folder_name(day: int) -> str:
    return f"dt=2026-11-{day:02d}"


def make_hive(n_files: int) -> Path:
    """``hive-N/dt=.../part-*.parquet``: hard links to the lake's files (made once)."""
    ensure_lake(n_files)
    per = n_files // FOLDERS
    if per * FOLDERS != n_files:
        raise SystemExit(f"--files must be a multiple of {FOLDERS}, got {n_files}")
    hive = ROOT / f"hive-{n_files}"
    for f in range(n_files):
        folder = hive / folder_name(f // per + 1)
        folder.mkdir(parents=True, exist_ok=True)
        link = folder / file_path(f).name
        if not link.exists():
            os.link(file_path(f), link)
    return hive


def rule_counts(verdicts: list[Any]) -> dict[str, Any]:
    kept = collections.Counter(str(v.rule) for v in verdicts if v.kept)
    pruned = collections.Counter(str(v.rule) for v in verdicts if not v.kept)
    return {
        "row_groups": len(verdicts),
        "files": len({v.file for v in verdicts}),
        "kept": sum(kept.values()),
        "kept_by_rule": dict(kept),
        "pruned_by_rule": dict(pruned),
    }


def prune_ranges(lake: Path, key: int, low: int, high: int) -> dict[str, Any]:
    from pybloom_async import prune_sync

    out = {}
    for name, where in (
        ("range alone", f"score BETWEEN {low} AND {high}"),
        ("key and range", f"id = {key} AND score BETWEEN {low} AND {high}"),
        ("narrow range alone (for contrast)", f"score BETWEEN {low} AND {low + 1}"),
    ):
        out[name] = {"where": where} | rule_counts(prune_sync(str(lake), where))
        print(f"prune {name:34} {out[name]}", flush=True)
    return out


def one_lookup(source: str, where: str, options: dict[str, Any] | None) -> dict[str, Any]:
    """One fresh lookup: rows, wall time, its SourceStats and its last progress call."""
    from pybloom_async import lookup_sync
    from pybloom_async.io.base import SourceStats

    stats = SourceStats()
    calls: list[tuple[int, int]] = []
    extra: dict[str, Any] = {"options": options} if options else {}
    t0 = time.perf_counter()
    table = lookup_sync(
        source,
        where,
        ["id", "email", "score", "dt"],
        stats=stats,
        progress=lambda done, total: calls.append((done, total)),
        **extra,
    )
    wall = time.perf_counter() - t0
    cols = [table.column(c).to_pylist() for c in ("id", "email", "score", "dt")]
    return {
        "wall_s": wall,
        "rows": sorted([list(r) for r in zip(*cols, strict=True)]),
        "data_requests": stats.requests,
        "metadata_requests": stats.metadata_requests,
        "bytes_read": stats.bytes_read,
        "progress_last": list(calls[-1]) if calls else None,
    }


def hive_cases(n_files: int, seed: int) -> list[dict[str, Any]]:
    """A key of a file in ``dt=2026-11-03`` and one of ``dt=2026-11-06``, with and without
    the partition equality ``dt = '2026-11-03'``."""
    import random

    per = n_files // FOLDERS
    rng = random.Random(seed)
    inside = id_of((DAY - 1) * per + rng.randrange(per), rng.randrange(ROWS_PER_FILE))
    outside = id_of((DAY + 2) * per + rng.randrange(per), rng.randrange(ROWS_PER_FILE))
    date = f"2026-11-{DAY:02d}"
    row_in = [*row_of(inside), datetime.date(2026, 11, DAY)]
    row_out = [*row_of(outside), datetime.date(2026, 11, DAY + 3)]
    return [
        {"name": "key + dt", "where": f"id = {inside} AND dt = '{date}'", "expected": [row_in]},
        {"name": "key alone", "where": f"id = {inside}", "expected": [row_in]},
        {"name": "other folder's key + dt", "where": f"id = {outside} AND dt = '{date}'"}
        | {"expected": []},
        {"name": "other folder's key alone", "where": f"id = {outside}", "expected": [row_out]},
    ]


def measure_hive(
    source: str, cases: list[dict[str, Any]], args: argparse.Namespace, s3: Any = None
) -> dict[str, Any]:
    from pybloom_async import prune_sync

    out: dict[str, Any] = {}
    for case in cases:
        runs = []
        for _ in range(args.runs):
            proxy = None
            options = None
            if s3 is not None:
                from latency_proxy import start_subprocess

                proxy = start_subprocess(s3, delay=args.delay_ms / 1000, http_keepalive=True)
                options = moto_options(proxy.endpoint)
            try:
                result = one_lookup(source, case["where"], options)
            finally:
                counters = proxy.stop() if proxy is not None else ""
            if result["rows"] != case["expected"]:
                raise SystemExit(f"{case['name']}: wrong rows {result['rows']}")
            for name in ("requests", "bytes_down") if proxy is not None else ():
                result["proxy_" + name] = proxy_counter(counters, name)
            runs.append(result)
        verdict_options = {"options": moto_options("http://" + s3)} if s3 is not None else {}
        verdicts = prune_sync(source, case["where"], **verdict_options)
        folders = sorted({Path(v.file).parent.name for v in verdicts})
        first = runs[0]
        figures = {
            "where": case["where"],
            "runs": len(runs),
            "wall_s": [r["wall_s"] for r in runs],
            "median_s": statistics.median(r["wall_s"] for r in runs),
            "files_with_verdicts": len({v.file for v in verdicts}),
            "folders_with_verdicts": folders,
            "row_groups_kept": sum(v.kept for v in verdicts),
            "progress_last": first["progress_last"],
            "data_requests": first["data_requests"],
            "metadata_requests": first["metadata_requests"],
            "bytes_read": first["bytes_read"],
            "proxy_requests": first.get("proxy_requests"),
            "rows": len(case["expected"]),
        }
        out[case["name"]] = figures
        target = "s3" if s3 else "local"
        print(
            f"hive {target:5} {case['name']:26} median {figures['median_s']:.3f} s "
            f"files {figures['files_with_verdicts']} ({','.join(folders)}) "
            f"progress {figures['progress_last']} reads {figures['data_requests']} "
            f"meta {figures['metadata_requests']} proxy {figures['proxy_requests']} "
            f"kept rg {figures['row_groups_kept']} rows {figures['rows']}",
            flush=True,
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7, help="bench_lookup.py's seed")
    parser.add_argument("--s3", action="store_true", help="also upload the view and run on S3")
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    recorder = Recorder("lookup_prune", files=args.files, runs=args.runs, s3=args.s3)
    print(f"# {cpu_model()}, {os.cpu_count()} cores, load {load_average()}", flush=True)
    lake = ensure_lake(args.files)
    ranged = make_queries(args.files, args.seed)["and_range"]
    low, high = ranged["score"]
    doc: dict[str, Any] = {"ranges": prune_ranges(lake, ranged["ids"][0], low, high)}
    hive = make_hive(args.files)
    cases = hive_cases(args.files, args.seed)
    doc["hive_local"] = measure_hive(str(hive), cases, args)
    if args.s3:
        from bench_reader import BUCKET, moto_server, upload

        with moto_server() as (endpoint, _pid):
            for folder in sorted(hive.iterdir()):
                upload(endpoint, sorted(folder.glob("*.parquet")), f"hive/{folder.name}/")
            source = f"s3://{BUCKET}/hive/"
            doc["hive_s3"] = measure_hive(source, cases, args, endpoint.removeprefix("http://"))
    if args.json_out:
        print(f"wrote {recorder.write(args.json_out, doc)}")


if __name__ == "__main__":
    main()
