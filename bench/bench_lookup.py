"""Lookups against the engines: rows for keys over a lake of random keys, on S3 and local disk.

The lake (``bench/lookup_lake.py``): N pyarrow-written files (``--files``, 200 and 1,000)
of 4 row groups x 25,000 rows, columns ``id`` int64, ``email`` string, ``score`` int32,
bloom filters on ``id`` and ``email``; keys are random in every row group, so min/max
statistics prune nothing. The same files are also a Delta table (``convert_to_deltalake``
over hard links in a folder of its own, on S3 a copy under a prefix of its own: a folder
with a ``_delta_log`` is a table, refused to plain-file readers) and an Iceberg table
(pyiceberg ``add_files``, sqlite catalog), so every engine reads the same bytes.

Queries (``--queries``): ``present`` (``id = k``, k in one row), ``absent`` (``id = k``, an
odd id inside the key range: no row), ``in100`` (``id IN`` 100 present keys of random
files), ``and2`` (``id = k AND email = e`` of one row), ``and_range`` (``id = k AND score
BETWEEN a AND b``: a key and a range of ``SCORE_SPAN`` scores, 10% of their domain, that
holds for the key's row; ``score`` is an int32 spread over every row group, so min/max
statistics admit the range everywhere and only the key's filter prunes. The lake has no
timestamp column: a time range on a lake sorted by time would prune by statistics, this
one shows the AND of a key with a range that cannot. Every engine gets the range in its
own form: SQL ``BETWEEN`` (DuckDB, DataFusion, Delta), ``col("score").between`` (ours),
``is_between(closed="both")`` (Polars), ``>=`` and ``<=`` (pyarrow.dataset, pyiceberg)),
``in1000`` (``id IN`` 1,000 present keys: with fpp 0.01 nearly every row group is kept by
some key, so the decode of the key column is most of the work).

Engines (``--engines``; each run is a fresh process, ``bench/lookup_engines.py``):
``ours`` (``pybloom_async.lookup_sync``, as a script calls it, defaults; like every
engine's, its imports are made before the clock starts: the modules a lookup imports on
first use and pandas, which pyarrow imports on its first conversion of a Python value),
``ours-first`` (the same with
those imports inside the clock: a script's first lookup), ``ours-warm`` (a long-lived
``BloomReader`` after one lookup of other keys), ``ours-tuned`` (not in the default list:
``ReaderConfig(footer_read_bytes=512 KiB, concurrency=1024)``, one suffix read per file
that holds the footer and the filters, every file at once: the round-trip floor),
``ours-2phase`` (not in the default list: every file's rows read in two phases, the
predicate's columns first, however small its other columns; the default,
``rows.fetch.TWO_PHASE_MIN_BYTES``, is 1 MiB of them per file), ``ours-lean`` (not in
the default list: the same, with byte ranges merged across holes of at most 64 KiB
instead of 1 MiB, so that phase one does not read the other columns lying between two
row groups' predicate chunks),
``ours-lake`` and ``ours-lake-warm`` (not in the default list: a copy of the lake, a
prefix or a folder of links, with a lake index on ``id`` built once, read cold and by a
warm ``BloomReader``),
``duckdb`` (1.4.4 with ``duckdb-ext-httpfs`` in
``bench/.venv-duckdb``, made by ``make bench-lookup-env``: DuckDB 2.x cannot load httpfs
here), ``datafusion`` (``bloom_filter_on_read``), ``polars`` (``scan_parquet``),
``pyarrow`` (``pyarrow.dataset``), ``delta`` (deltalake's ``QueryBuilder``), ``iceberg``
(pyiceberg ``scan(row_filter)``), and ``ours-delta`` / ``ours-iceberg`` (``lookup`` given
the table object: reported as unavailable until ``lookup`` accepts tables).

Targets (``--targets``): ``s3``, a moto_server bucket reached through
``bench/latency_proxy.py`` (``--delay-ms`` each way, 20 by default, HTTP keep-alive mode,
TCP handshake modelled, a fresh proxy process per run, whose counters give the requests and
bytes of every engine); ``local``, the same files on local disk (page cache warm).

Every answer is checked against the expected rows (a row is a function of its id): a
wrong answer stops the benchmark. Times are medians of ``--runs`` runs (fewer only when
an engine's runs exceed ``--budget-s`` for one query; the count is reported).

Run::

    make bench-lookup-env                               # once: the DuckDB worker's venv
    .venv/bin/python bench/bench_lookup.py --files 200 [--runs 5] [--targets s3,local]
        [--engines ours,duckdb,...] [--queries present,absent,in100,and2,and_range,in1000]
        [--json-out bench/results/lookup-200.json]
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from bench_reader import BUCKET, moto_server, upload  # noqa: E402
from latency_proxy import start_subprocess  # noqa: E402
from lookup_engines import ACCESS_KEY, REGION, SECRET_KEY  # noqa: E402
from lookup_lake import (  # noqa: E402
    MAX_FILES,
    ROWS_PER_FILE,
    ensure_lake,
    id_of,
    row_of,
    score_of,
)
from record import Recorder, cpu_model, load_average  # noqa: E402

ENGINES = (
    "ours",
    "ours-first",
    "ours-warm",
    "duckdb",
    "datafusion",
    "polars",
    "pyarrow",
    "delta",
    "iceberg",
    "ours-delta",
    "ours-iceberg",
)
# Not in the default list: ours with settings that are not the defaults (see the worker).
EXTRA_ENGINES = ("ours-tuned", "ours-2phase", "ours-lean")
# Ours over a copy of the lake with a lake index on ``id`` (built once per target): the
# index's own prefix or folder, so that the other engines read the lake without it.
LAKE_ENGINES = ("ours-lake", "ours-lake-warm")
QUERIES = ("present", "absent", "in100", "and2", "and_range", "in1000")
SCORE_SPAN = 10_000  # the width of and_range's score range (scores are 0 .. 100,002)
DUCKDB_PYTHON = BENCH / ".venv-duckdb" / "bin" / "python"
ICEBERG_TABLE = "bench.lake"
# The engines that need the Delta or the Iceberg table made (slow for 1,000 files).
DELTA = {"delta", "ours-delta"}
ICEBERG = {"iceberg", "ours-iceberg"}


def make_queries(n_files: int, seed: int) -> dict[str, dict[str, Any]]:
    """The queries: keys chosen at random among the first ``n_files`` files."""
    rng = random.Random(seed)

    def present() -> int:
        return id_of(rng.randrange(n_files), rng.randrange(ROWS_PER_FILE))

    key = present()
    both = present()
    # Odd ids are never written; this one lies inside every row group's min/max.
    absent = present() + 1
    many = sorted({present() for _ in range(100)})
    ranged = present()
    # A range holding for the key's row, placed at random around its score.
    low = score_of(ranged) - rng.randrange(SCORE_SPAN)
    queries: dict[str, dict[str, Any]] = {
        "present": {"ids": [key], "email": None},
        "absent": {"ids": [absent], "email": None},
        "in100": {"ids": many, "email": None},
        "and2": {"ids": [both], "email": row_of(both)[1]},
        "and_range": {"ids": [ranged], "email": None, "score": [low, low + SCORE_SPAN - 1]},
        # Drawn last: the other queries keep the keys they had before it was added.
        "in1000": {"ids": sorted({present() for _ in range(1000)}), "email": None},
    }
    for q in queries.values():
        ids = q["ids"]
        q["expected"] = sorted(
            row_of(k) for k in ids if k % 2 == 0 and (k // 2) % MAX_FILES < n_files
        )
        if q["email"] is not None:
            q["expected"] = [r for r in q["expected"] if r[1] == q["email"]]
        if q.get("score") is not None:
            q["expected"] = [r for r in q["expected"] if low <= r[2] <= low + SCORE_SPAN - 1]
    queries["warm_ids"] = {"ids": [present()]}  # the warm-up lookup's key
    return queries


# ---- tables over the same files ---------------------------------------------------------


def make_delta(uri: str, storage: dict[str, str] | None) -> None:
    from deltalake import convert_to_deltalake

    convert_to_deltalake(uri, mode="ignore", storage_options=storage)


def make_iceberg(folder: Path, files: Sequence[str], props: dict[str, str]) -> dict[str, str]:
    """An Iceberg table (sqlite catalog in ``folder``) whose data files are ``files``."""
    import pyarrow.parquet as pq
    from lookup_lake import file_path
    from pyiceberg.catalog.sql import SqlCatalog

    folder.mkdir(parents=True, exist_ok=True)
    db = folder / "catalog.db"
    catalog = SqlCatalog(
        "bench", uri=f"sqlite:///{db}", warehouse=f"file://{folder}/warehouse", **props
    )
    catalog.create_namespace_if_not_exists("bench")
    schema = pq.read_schema(file_path(0))
    table = catalog.create_table(ICEBERG_TABLE, schema=schema)
    table.add_files(list(files))
    return {"iceberg_db": str(db), "iceberg_warehouse": f"file://{folder}/warehouse"}


# ---- the indexed copy -------------------------------------------------------------------


def build_index(root: str, options: dict[str, Any] | None = None) -> None:
    """The lake index on ``id`` under ``root`` (its ``_bloom_index/``), from the values."""
    from pybloom_async import build_lake_index_sync

    build_lake_index_sync(root, ["id"], options=options)


def indexed_local(lake: Path, files: Sequence[Path]) -> Path:
    """A folder of links to the lake's files, with a lake index on ``id``, made once."""
    folder = lake.with_name(lake.name + "-indexed")
    if not (folder / "_bloom_index").exists():
        folder.mkdir(exist_ok=True)
        for path in files:
            link = folder / path.name
            if not link.exists():
                link.symlink_to(path.resolve())
        build_index(str(folder))
    return folder


def s3_options(endpoint: str) -> dict[str, Any]:
    return {
        "endpoint": endpoint,
        "region": REGION,
        "access_key_id": ACCESS_KEY,
        "secret_access_key": SECRET_KEY,
        "allow_http": True,
    }


# ---- one run --------------------------------------------------------------------------


def proxy_counter(output: str, name: str) -> int | None:
    for part in output.split():
        if part.startswith(name + "="):
            return int(part.split("=", 1)[1])
    return None


def run_once(engine: str, spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One fresh worker process; returns its JSON (plus the proxy's counters on S3)."""
    spec = dict(spec)
    spec["engine"] = engine.split("-")[0]
    spec["warm"] = engine.endswith("-warm")
    spec["first"] = engine.endswith("-first")
    spec["tuned"] = engine.endswith("-tuned")
    spec["two_phase"] = engine.endswith("-2phase")
    spec["lean"] = engine.endswith("-lean")
    if engine in LAKE_ENGINES:  # the indexed copy
        key = "prefix" if spec["kind"] == "s3" else "local_dir"
        spec[key] = spec["indexed"]
    if engine in ("ours-delta", "ours-iceberg"):
        spec["table"] = engine.split("-")[1]
    python = str(DUCKDB_PYTHON) if engine == "duckdb" else sys.executable
    proxy = None
    if spec["kind"] == "s3":
        proxy = start_subprocess(spec["moto"], delay=spec["delay"], http_keepalive=True)
        spec["endpoint"] = proxy.endpoint
    try:
        done = subprocess.run(
            [python, str(BENCH / "lookup_engines.py"), json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=os.environ | {"PYTHONPATH": str(BENCH.parent)},
        )
    finally:
        output = proxy.stop() if proxy is not None else ""
    if done.returncode != 0:
        raise RuntimeError(f"{engine}: worker failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["requests"] = proxy_counter(output, "requests")
    result["bytes_down"] = proxy_counter(output, "bytes_down")
    if spec["warm"] and proxy is not None:
        # The proxy also saw the warm-up lookup: the timed one's are the worker's own counts
        # (bytes of payload, without HTTP headers).
        result["requests"], result["bytes_down"] = result["own_requests"], result["own_bytes"]
    return result


def measure(
    engine: str, spec: dict[str, Any], query: dict[str, Any], args: argparse.Namespace
) -> dict[str, Any]:
    spec = spec | {"ids": query["ids"], "email": query["email"], "score": query.get("score")}
    runs: list[dict[str, Any]] = []
    started = time.monotonic()
    while len(runs) < args.runs:
        result = run_once(engine, spec, args.run_timeout)
        if "unavailable" in result:
            return {"unavailable": result["unavailable"]}
        if result["rows"] != query["expected"]:
            raise SystemExit(
                f"{engine} gave wrong rows for {query['name']}: {len(result['rows'])} rows, "
                f"expected {len(query['expected'])}"
            )
        runs.append(result)
        if len(runs) >= args.min_runs and time.monotonic() - started > args.budget_s:
            break
    walls = [r["wall_s"] for r in runs]
    reqs = [r["requests"] for r in runs if r["requests"] is not None]
    down = [r["bytes_down"] for r in runs if r["bytes_down"] is not None]
    return {
        "config": runs[0]["config"],
        "runs": len(runs),
        "wall_s": walls,
        "median_s": statistics.median(walls),
        "cpu_s": statistics.median(r["cpu_s"] for r in runs) if "cpu_s" in runs[0] else None,
        "requests": statistics.median(reqs) if reqs else None,
        "bytes_down": statistics.median(down) if down else None,
        "rows": len(query["expected"]),
    }


# ---- a target ---------------------------------------------------------------------------


def bench_target(
    target: str, spec: dict[str, Any], queries: dict[str, dict[str, Any]], args: argparse.Namespace
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for qname in args.queries:
        query = queries[qname] | {"name": qname}
        out[qname] = {}
        for engine in args.engines:
            if engine == "duckdb" and not DUCKDB_PYTHON.exists():
                raise SystemExit(f"{DUCKDB_PYTHON} not found: run `make bench-lookup-env`")
            figures = measure(engine, spec, query, args)
            out[qname][engine] = figures
            print_line(target, qname, engine, figures)
    return out


def print_line(target: str, query: str, engine: str, f: dict[str, Any]) -> None:
    if "unavailable" in f:
        print(f"{target:5} {query:7} {engine:12} unavailable: {f['unavailable']}", flush=True)
        return
    reqs = "-" if f["requests"] is None else f"{f['requests']:.0f}"
    mb = "-" if f["bytes_down"] is None else f"{f['bytes_down'] / 1e6:.1f}"
    print(
        f"{target:5} {query:7} {engine:12} median {f['median_s']:7.3f} s "
        f"(min {min(f['wall_s']):.3f}, max {max(f['wall_s']):.3f}, n={f['runs']}) "
        f"requests {reqs:>6} MB {mb:>7} rows {f['rows']}",
        flush=True,
    )


def print_table(target: str, results: dict[str, Any]) -> None:
    """Median wall per engine and query, and each engine's ratio to ours."""
    print(f"\n## {target}: median wall s (x ours)")
    engines = [e for e in next(iter(results.values()))]
    print("| query | " + " | ".join(engines) + " |")
    print("|---" * (len(engines) + 1) + "|")
    for query, row in results.items():
        base = row.get("ours", {}).get("median_s")
        cells = []
        for e in engines:
            f = row[e]
            if "unavailable" in f:
                cells.append("n/a")
                continue
            ratio = f" ({f['median_s'] / base:.1f}x)" if base and e != "ours" else ""
            reqs = "" if f["requests"] is None else f", {f['requests']:.0f} req"
            cells.append(f"{f['median_s']:.2f}{ratio}{reqs}")
        print(f"| {query} | " + " | ".join(cells) + " |")


LABELS = {
    "ours": "**pybloom-async `lookup`** (cold process)",
    "ours-first": "pybloom-async, first call (lazy imports, pyarrow's pandas import)",
    "ours-warm": "pybloom-async, warm `BloomReader`",
    "duckdb": "DuckDB 1.4.4 + httpfs",
    "datafusion": "DataFusion (`bloom_filter_on_read`)",
    "polars": "Polars `scan_parquet`",
    "pyarrow": "`pyarrow.dataset`",
    "delta": "deltalake `QueryBuilder` (Delta)",
    "iceberg": "pyiceberg `scan` (Iceberg)",
    "ours-delta": "pybloom-async on the Delta table",
    "ours-iceberg": "pybloom-async on the Iceberg table",
    "ours-tuned": "pybloom-async, not the defaults: 512 KiB suffix, 1,024 files at once",
    "ours-2phase": "pybloom-async, not the defaults: every file in two phases",
    "ours-lean": "pybloom-async, not the defaults: two phases, 64 KiB merge holes",
    "ours-lake": "pybloom-async `lookup`, a lake index on `id` (cold process)",
    "ours-lake-warm": "pybloom-async, a lake index, warm `BloomReader`",
}
ENGINES_ONLY = ("duckdb", "datafusion", "polars", "pyarrow", "delta", "iceberg")


def markdown(doc: dict[str, Any]) -> str:
    """The Markdown tables of a results file (``--markdown FILE``): one per target."""
    out = []
    for target, by_query in doc["results"]["targets"].items():
        queries = list(by_query)
        out.append(f"\n{target}: median wall s (runs), requests, MB received\n")
        out.append("| engine | " + " | ".join(queries) + " |")
        out.append("|---" + "|---:" * len(queries) + "|")
        for engine in by_query[queries[0]]:
            cells = []
            for q in queries:
                f = by_query[q][engine]
                if "unavailable" in f:
                    cells.append("not yet")
                    continue
                cell = f"{f['median_s']:.2f} s ({f['runs']})"
                if f["requests"] is not None:
                    cell += f", {f['requests']:,.0f} req, {f['bytes_down'] / 1e6:.1f} MB"
                cells.append(cell)
            out.append(f"| {LABELS.get(engine, engine)} | " + " | ".join(cells) + " |")
        ratios = []
        for q in queries:
            row = by_query[q]
            times = [row[e]["median_s"] for e in ENGINES_ONLY if "median_s" in row.get(e, {})]
            ours = row.get("ours", {}).get("median_s")
            ratios.append(f"{min(times) / ours:.1f}x" if times and ours else "-")
        out.append("| fastest engine's time / ours (cold) | " + " | ".join(ratios) + " |")
    return "\n".join(out)


def versions() -> dict[str, str]:
    import importlib.metadata as md

    names = ("pyarrow", "datafusion", "polars", "deltalake", "pyiceberg", "obstore", "moto")
    found = {n: md.version(n) for n in names}
    if DUCKDB_PYTHON.exists():
        found["duckdb (worker venv)"] = subprocess.run(
            [str(DUCKDB_PYTHON), "-c", "import duckdb; print(duckdb.__version__)"],
            capture_output=True,
            text=True,
        ).stdout.strip()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--min-runs", type=int, default=3)
    parser.add_argument("--budget-s", type=float, default=240.0, help="per engine and query")
    parser.add_argument("--run-timeout", type=float, default=600.0)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--targets", default="s3,local")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--queries", default=",".join(QUERIES))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--markdown", type=Path, help="print a results file's tables and exit")
    args = parser.parse_args()
    if args.markdown:
        print(markdown(json.loads(args.markdown.read_text())))
        return
    args.engines = args.engines.split(",")
    args.queries = args.queries.split(",")
    for name in args.engines:
        if name not in ENGINES + EXTRA_ENGINES + LAKE_ENGINES:
            known = ", ".join(ENGINES + EXTRA_ENGINES + LAKE_ENGINES)
            parser.error(f"unknown engine {name!r}; choose from {known}")
    for name in args.queries:
        if name not in QUERIES:
            parser.error(f"unknown query {name!r}; choose from {', '.join(QUERIES)}")
    recorder = Recorder("lookup", files=args.files, runs=args.runs, delay_ms=args.delay_ms)
    lake = ensure_lake(args.files)
    files = sorted(lake.glob("*.parquet"))
    sizes = sorted(p.stat().st_size for p in files)
    queries = make_queries(args.files, args.seed)
    print(
        f"# {cpu_model()}, {os.cpu_count()} cores, load {load_average()}; lake {len(files)} files, "
        f"{sum(sizes) / 1e6:.0f} MB (median file {sizes[len(sizes) // 2]} B); "
        + ", ".join(f"{k} {v}" for k, v in versions().items()),
        flush=True,
    )
    results: dict[str, Any] = {}
    work = Path(tempfile.mkdtemp(prefix="bench-lookup-"))  # the Iceberg catalogs
    atexit.register(shutil.rmtree, work, ignore_errors=True)
    if "local" in args.targets.split(","):
        # The Delta table is the same files hard-linked into a folder of its own: a folder
        # with a _delta_log is a table, which plain-file readers are refused.
        delta_dir = work / "delta-local"
        if DELTA & set(args.engines):
            delta_dir.mkdir()
            for path in files:
                os.link(path, delta_dir / path.name)
            make_delta(str(delta_dir), None)
        ice = {}
        if ICEBERG & set(args.engines):
            ice = make_iceberg(work / "local", [str(p) for p in files], {})
        spec = {"kind": "local", "local_dir": str(lake), "delta_uri": str(delta_dir)} | ice
        if set(LAKE_ENGINES) & set(args.engines):
            spec["indexed"] = str(indexed_local(lake, files))
        spec |= {"iceberg_table": ICEBERG_TABLE, "warm_ids": queries["warm_ids"]["ids"]}
        results["local"] = bench_target("local", spec, queries, args)
        print_table("local", results["local"])
    if "s3" in args.targets.split(","):
        with moto_server() as (endpoint, _pid):
            prefix = f"lake{args.files}/"
            upload(endpoint, files, prefix)
            storage = {
                "AWS_ENDPOINT_URL": endpoint,
                "AWS_REGION": REGION,
                "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
                "AWS_ALLOW_HTTP": "true",
                "AWS_S3_ALLOW_UNSAFE_RENAME": "true",
            }
            # The Delta table under a prefix of its own (see the local one).
            delta_prefix = f"lake{args.files}-delta/"
            delta_uri = f"s3://{BUCKET}/{delta_prefix}"
            if DELTA & set(args.engines):
                upload(endpoint, files, delta_prefix)
                make_delta(delta_uri, storage)
            s3_props = {
                "s3.endpoint": endpoint,
                "s3.access-key-id": ACCESS_KEY,
                "s3.secret-access-key": SECRET_KEY,
                "s3.region": REGION,
            }
            uris = [f"s3://{BUCKET}/{prefix}{p.name}" for p in files]
            indexed = f"lake{args.files}-indexed/"
            if set(LAKE_ENGINES) & set(args.engines):
                upload(endpoint, files, indexed)
                build_index(f"s3://{BUCKET}/{indexed}", s3_options(endpoint))
            ice = {}
            if ICEBERG & set(args.engines):
                ice = make_iceberg(work / "s3", uris, s3_props)
            spec = {
                "kind": "s3",
                "moto": endpoint.removeprefix("http://"),
                "delay": args.delay_ms / 1000,
                "bucket": BUCKET,
                "prefix": prefix,
                "delta_uri": delta_uri,
                "iceberg_table": ICEBERG_TABLE,
                "warm_ids": queries["warm_ids"]["ids"],
                "indexed": indexed,
            } | ice
            results["s3"] = bench_target("s3", spec, queries, args)
            print_table("s3", results["s3"])
    doc = {
        "lake": {
            "files": len(files),
            "bytes": sum(sizes),
            "median_file_bytes": sizes[len(sizes) // 2],
        },
        "versions": versions(),
        "queries": {
            k: {"keys": len(v["ids"]), "rows": len(v["expected"])}
            for k, v in queries.items()
            if k != "warm_ids"
        },
        "targets": results,
    }
    if args.json_out:
        print(f"wrote {recorder.write(args.json_out, doc)}")


if __name__ == "__main__":
    main()
