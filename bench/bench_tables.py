"""Lookups on the Delta and Iceberg copies of the lookup lake, with deletes, and on its files.

The lake is ``bench/lookup_lake.py``'s (``--files`` files of 4 row groups x 25,000 rows,
``id``/``email``/``score``, pyarrow's filters on ``id`` and ``email``). Its files are also:

* a **Delta table** (``bench/data/tables/delta-N/``: symlinks to the files,
  ``convert_to_deltalake``, the ``deletionVectors`` feature added by deltalake), whose
  deletion vectors delete 1% of the rows of 10% of the files (inline vectors, committed
  by hand as ``tests/support/delta_logs.py`` does: deltalake 1.6 writes none);
* an **Iceberg table** (pyiceberg ``add_files``, SQLite catalog; its metadata and
  manifests on local disk as in ``bench/bench_lookup.py``, or with ``--iceberg-metadata s3``
  in the bucket too), with position delete files (written by pyarrow, committed through
  pyiceberg by ``tests/support/iceberg_deletes.py``; in the bucket on S3) deleting the same
  rows.

The files with deletes are those of the ``present`` and ``and2`` keys and others at a
stride (10% in all); no deleted row holds a query's key, so every method's answer is the
plain files' (checked against the expected rows, each a function of its id), and a
spot check before the runs asks for a deleted row (none may come back).

Queries and engines are ``bench/bench_lookup.py``'s: ``present``, ``absent``, ``in100``,
``and2``; ``ours`` (``lookup`` over the plain files), ``ours-delta`` and ``ours-iceberg``
(``lookup`` given the table object, opened before the clock), each run a fresh process
(``bench/lookup_engines.py``) and, on S3, a fresh ``bench/latency_proxy.py`` (20 ms each
way) in front of a moto_server. The three engines run **side by side**: run i of every
engine before run i + 1 of any, so a change of the machine's load touches them alike.
Requests are our own counters (``SourceStats``: the table's metadata and log reads are
the table library's, before the clock).

``--index``: then the lake index is built on the tables (Iceberg: a Puffin statistics
file registered with the snapshot; Delta: under the table's root) and the point lookups
run again on the tables, with their request counts.

Run::

    .venv/bin/python bench/bench_tables.py [--files 200] [--runs 5] [--targets local,s3]
        [--queries present,absent,in100,and2] [--index] [--iceberg-metadata local|s3]
        [--json-out bench/results/tables.json]
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent / "tests"))  # the hand-made delete commits

from bench_lookup import QUERIES, make_queries  # noqa: E402
from bench_lookup import run_once as lookup_run_once  # noqa: E402
from bench_reader import BUCKET, moto_options, moto_server, s3_store, upload  # noqa: E402
from lookup_engines import ACCESS_KEY, REGION, SECRET_KEY  # noqa: E402
from lookup_lake import MAX_FILES, ROWS_PER_FILE, ensure_lake, file_path, file_table  # noqa: E402
from record import Recorder, load_average  # noqa: E402

DATA = BENCH / "data" / "tables"
ENGINES = ("ours", "ours-delta", "ours-iceberg")
ICEBERG_TABLE = "bench.lake"
DELETED_SHARE = 0.01  # of a file's rows, in the files with deletes
FILES_SHARE = 0.10  # files with deletes


# ---- which rows are deleted -------------------------------------------------------------


def _file_of(key: int) -> int:
    return (key // 2) % MAX_FILES


def deleted_rows(n_files: int, queries: dict[str, Any], seed: int) -> dict[int, list[int]]:
    """File -> the row positions deleted there: 1% of the rows of 10% of the files, the
    point queries' files among them, never a row holding a query's key."""
    import numpy as np

    rng = random.Random(seed)
    wanted = max(1, round(n_files * FILES_SHARE))
    chosen = [_file_of(queries[q]["ids"][0]) for q in ("present", "and2")]
    stride = max(1, n_files // wanted)
    for f in range(0, n_files, stride):
        if len(set(chosen)) >= wanted:
            break
        chosen.append(f)
    keys = {k for q in queries.values() for k in q["ids"]}
    out = {}
    for f in sorted(set(chosen))[:wanted]:
        ids = file_table(f).column("id").to_numpy()
        spared = set(np.flatnonzero(np.isin(ids, list(keys))).tolist())
        rows = rng.sample(range(ROWS_PER_FILE), int(ROWS_PER_FILE * DELETED_SHARE) + len(spared))
        out[f] = sorted(set(rows) - spared)[: int(ROWS_PER_FILE * DELETED_SHARE)]
    return out


def a_deleted_key(deleted: dict[int, list[int]]) -> int:
    f, rows = next(iter(deleted.items()))
    return int(file_table(f).column("id")[rows[0]].as_py())


# ---- the tables ---------------------------------------------------------------------------


def make_delta(root: Path, n_files: int, deleted: dict[int, list[int]]) -> Path:
    """The Delta table over symlinks to the lake's files, with its deletion vectors."""
    from deltalake import DeltaTable, TableFeatures, convert_to_deltalake
    from support.delta_logs import commit_deletion_vectors

    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for f in range(n_files):
        (root / file_path(f).name).symlink_to(file_path(f))
    convert_to_deltalake(str(root))
    DeltaTable(str(root)).alter.add_feature(
        TableFeatures.DeletionVectors, allow_protocol_versions_increase=True
    )
    commit_deletion_vectors(root, {file_path(f).name: rows for f, rows in deleted.items()})
    return root


def make_iceberg(
    folder: Path, uris: list[str], deleted: dict[int, list[int]], props: dict[str, str],
    put: Any = None, remote_metadata: bool = False,
) -> dict[str, str]:  # fmt: skip
    """The Iceberg table (SQLite catalog in ``folder``) over ``uris``, with position deletes.

    ``put(name, path)`` uploads a delete file to ``s3://BUCKET/deletes/NAME`` (S3); None:
    the delete files stay local. ``remote_metadata``: the table's metadata, manifests (and
    a lake index's statistics file) in the bucket too, else in ``folder``.
    """
    import pyarrow.parquet as pq
    from pyiceberg.catalog.sql import SqlCatalog
    from support.iceberg_deletes import commit_delete_files, position_delete_file

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    db = folder / "catalog.db"
    warehouse = f"s3://{BUCKET}/warehouse" if remote_metadata else f"file://{folder}/warehouse"
    catalog = SqlCatalog("bench", uri=f"sqlite:///{db}", warehouse=warehouse, **props)
    catalog.create_namespace_if_not_exists("bench")
    table = catalog.create_table(ICEBERG_TABLE, schema=pq.read_schema(file_path(0)))
    table.add_files(uris)
    deletes = []
    for f, rows in deleted.items():
        local = folder / f"deletes-{f:05d}.parquet"
        uri = None if put is None else f"s3://{BUCKET}/deletes/{local.name}"
        deletes.append(position_delete_file(local, [(uris[f], r) for r in rows], uri=uri))
        if put is not None:
            put(local.name, local)
    commit_delete_files(table.refresh(), deletes)
    return {"iceberg_db": str(db), "iceberg_warehouse": warehouse, "iceberg_table": ICEBERG_TABLE}


# ---- runs ---------------------------------------------------------------------------------


def run_once(engine: str, spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    """One fresh worker process (and on S3 a fresh proxy), as ``bench_lookup`` runs it:
    its JSON, the proxy's request count as ``proxy_requests``; an unavailable answer fails."""
    result = lookup_run_once(engine, spec, timeout)
    if "unavailable" in result:
        raise RuntimeError(f"{engine}: {result['unavailable']}")
    result["proxy_requests"] = result["requests"]
    return result


def side_by_side(
    target: str, spec: dict[str, Any], query: dict[str, Any], engines: list[str], args: Any,
    base: float | None = None,
) -> dict[str, Any]:  # fmt: skip
    """Every engine's runs of one query, run i of each before run i + 1 of any; ratios to
    the first engine's median (or to ``base``)."""
    runs: dict[str, list[dict[str, Any]]] = {e: [] for e in engines}
    load = [load_average()]
    for _ in range(args.runs):
        for engine in engines:
            got = run_once(engine, spec | {"ids": query["ids"], "email": query["email"]},
                           args.run_timeout)  # fmt: skip
            if got["rows"] != query["expected"]:
                raise SystemExit(
                    f"{engine} gave wrong rows for {query['name']} on {target}: "
                    f"{len(got['rows'])} rows, expected {len(query['expected'])}"
                )
            runs[engine].append(got)
    load.append(load_average())
    out: dict[str, Any] = {"load_average": load}
    for engine, results in runs.items():
        walls = [r["wall_s"] for r in results]
        out[engine] = {
            "runs": len(walls),
            "wall_s": walls,
            "median_s": statistics.median(walls),
            "cpu_s": statistics.median(r["cpu_s"] for r in results),
            "requests": statistics.median(r["own_requests"] for r in results),
            "bytes": statistics.median(r["own_bytes"] for r in results),
        }
    base = out[engines[0]]["median_s"] if base is None else base
    for engine in engines:
        out[engine]["vs_plain"] = out[engine]["median_s"] / base
        f = out[engine]
        print(
            f"{target:5} {query['name']:7} {engine:12} median {f['median_s']:7.3f} s "
            f"(min {min(f['wall_s']):.3f}, max {max(f['wall_s']):.3f}, n={f['runs']}) "
            f"x{f['vs_plain']:.2f} requests {f['requests']:.0f} MB {f['bytes'] / 1e6:.1f}",
            flush=True,
        )
    return out


def spot_check(spec: dict[str, Any], key: int, args: Any) -> None:
    """A deleted row: the plain files hold it, neither table returns it."""
    for engine in ENGINES:
        got = run_once(engine, spec | {"ids": [key], "email": None}, args.run_timeout)
        want = 1 if engine == "ours" else 0
        if len(got["rows"]) != want:
            raise SystemExit(f"{engine}: the deleted row {key} gave {len(got['rows'])} rows")


def build_indexes(spec: dict[str, Any]) -> dict[str, Any]:
    """The lake index on both tables (opened as the worker opens them); what was built."""
    from lookup_engines import open_table

    from pybloom_async import build_lake_index_sync

    options: dict[str, Any] = {}
    if spec["kind"] == "s3":
        options = moto_options(spec["endpoint"])
    out = {}
    for kind in ("delta", "iceberg"):
        started = time.perf_counter()
        built = build_lake_index_sync(open_table(spec, kind), ["id", "email"], mode="filters",
                                      options=options or None)  # fmt: skip
        out[kind] = {"seconds": time.perf_counter() - started, "files": built.files}
    return out


def bench_target(
    target: str, spec: dict[str, Any], queries: dict[str, Any], deleted: Any, args: Any
) -> dict[str, Any]:
    spot_check(spec, a_deleted_key(deleted), args)
    out: dict[str, Any] = {}
    for name in args.queries:
        out[name] = side_by_side(target, spec, queries[name] | {"name": name}, list(ENGINES), args)
    if args.index:
        direct = dict(spec)
        if spec["kind"] == "s3":
            direct["endpoint"] = "http://" + spec["moto"]  # built beside the store, not timed
        out["index_build"] = build_indexes(direct)
        # The plain files' lookups keep their figures from above (the Delta table's index on
        # S3 lies under the plain files' prefix too, where a lake lookup would read it).
        for name in ("present", "absent", "and2"):
            if name not in out:
                continue
            query = queries[name] | {"name": f"{name}+index"}
            out[f"{name}_indexed"] = side_by_side(
                target, spec, query, list(ENGINES[1:]), args, out[name]["ours"]["median_s"]
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--run-timeout", type=float, default=600.0)
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--targets", default="local,s3")
    parser.add_argument("--queries", default=",".join(QUERIES))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--index", action="store_true")
    parser.add_argument("--iceberg-metadata", choices=("local", "s3"), default="local")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    args.queries = args.queries.split(",")
    recorder = Recorder("tables", files=args.files, runs=args.runs, delay_ms=args.delay_ms,
                        deleted_share=DELETED_SHARE, files_share=FILES_SHARE,
                        iceberg_metadata=args.iceberg_metadata, index=args.index)  # fmt: skip
    lake = ensure_lake(args.files)
    queries = make_queries(args.files, args.seed)
    for q in queries.values():
        q.setdefault("email", None)
    deleted = deleted_rows(args.files, queries, args.seed)
    print(f"# load {load_average()}; {len(deleted)} of {args.files} files with "
          f"{sum(map(len, deleted.values()))} rows deleted", flush=True)  # fmt: skip
    results: dict[str, Any] = {}
    work = Path(tempfile.mkdtemp(prefix="bench-tables-"))
    try:
        if "local" in args.targets.split(","):
            delta = make_delta(DATA / f"delta-{args.files}", args.files, deleted)
            uris = [str(file_path(f)) for f in range(args.files)]
            ice = make_iceberg(work / "local", uris, deleted, {})
            spec = {"kind": "local", "local_dir": str(lake), "delta_uri": str(delta)} | ice
            results["local"] = bench_target("local", spec, queries, deleted, args)
        if "s3" in args.targets.split(","):
            results["s3"] = s3_target(args, queries, deleted, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    doc = {"deleted_files": sorted(deleted), "targets": results}
    if args.json_out:
        print(f"wrote {recorder.write(args.json_out, doc)}")


def s3_target(args: Any, queries: dict[str, Any], deleted: Any, work: Path) -> dict[str, Any]:
    """The same lake, Delta table and Iceberg table on a moto_server."""
    import obstore

    delta = make_delta(DATA / f"delta-{args.files}", args.files, deleted)
    with moto_server() as (endpoint, _pid):
        prefix = f"lake{args.files}/"
        files = [file_path(f) for f in range(args.files)]
        upload(endpoint, files, prefix)
        store = s3_store(endpoint)
        for log in sorted((delta / "_delta_log").glob("*.json")):
            obstore.put(store, f"{prefix}_delta_log/{log.name}", log.read_bytes())
        uris = [f"s3://{BUCKET}/{prefix}{p.name}" for p in files]

        def put(name: str, local: Path) -> None:
            obstore.put(store, f"deletes/{name}", local.read_bytes())

        props = {
            "s3.endpoint": endpoint, "s3.access-key-id": ACCESS_KEY,
            "s3.secret-access-key": SECRET_KEY, "s3.region": REGION,
        }  # fmt: skip
        ice = make_iceberg(work / "s3", uris, deleted, props, put, args.iceberg_metadata == "s3")
        spec = {
            "kind": "s3", "moto": endpoint.removeprefix("http://"),
            "delay": args.delay_ms / 1000, "bucket": BUCKET, "prefix": prefix,
            "delta_uri": f"s3://{BUCKET}/{prefix}",
        } | ice  # fmt: skip
        return bench_target("s3", spec, queries, deleted, args)


if __name__ == "__main__":
    main()
