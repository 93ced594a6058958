"""A point lookup run by Polars, DuckDB and DataFusion: their own scan vs the pruned dataset.

Data (``bench/data/dataset/``, written once with pyarrow, rewritten when the shape
changes): ``--files`` files of 8 row groups x ``--rows`` rows: ``key`` (random INT64, a
Split Block Bloom Filter, NDV = rows per group, FPP 0.01), ``name`` (a 24-byte string
derived from the key) and ``v`` (DOUBLE). Every row group spans the whole key range, so
min/max statistics prune nothing.

Query: ``SELECT key, name, v WHERE key IN (4 keys)``, two keys present (random files),
two absent. Per engine:

* **native**: the engine's own scan of the files with the WHERE (Polars ``scan_parquet``,
  DuckDB ``read_parquet``, DataFusion ``register_parquet``);
* **pruned**: ``pruned_dataset_sync`` on the folder, then the engine's scan of that dataset
  with the same WHERE (Polars ``scan_pyarrow_dataset``, DuckDB ``register``, DataFusion
  ``register_dataset``); the time includes the pruning, which is also timed alone.

DuckDB and DataFusion read Parquet Bloom filters themselves (for ``=`` and ``IN``); Polars
does not.

Both answers are checked equal in every run. Each figure is the median wall time of
``--runs`` runs (the OS page cache warm: one unmeasured run first). Also reported: the
row groups the dataset keeps and the compressed bytes of the key/name/v chunks the engine
then has to read, against all of them.

``--s3``: the same files on moto_server behind ``bench/latency_proxy.py`` (``--delay-ms``
each way, keep-alive, handshake charged; a new proxy per run). Engines there scan the
pruned dataset (the time includes the pruning) against an unpruned pyarrow dataset of the
same objects through the same pyarrow S3 filesystem: the same reader, only the row groups
differ.

Run::

    .venv/bin/python bench/bench_dataset.py [--files 24] [--rows 16384] [--runs 5]
        [--s3] [--delay-ms 20] [--json-out bench/results/dataset.json]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import datafusion
import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from bench_reader import ACCESS_KEY, BUCKET, REGION, SECRET_KEY, moto_options, moto_server, upload
from latency_proxy import start_subprocess
from record import Recorder

from pybloom_async import pruned_dataset_sync
from pybloom_async.io.store import clear_store_cache

GROUPS = 8
DATA = Path(__file__).resolve().parent / "data" / "dataset"


def write_data(files: int, rows: int) -> tuple[list[Path], list[list[int]]]:
    """The files (reused when their shape matches) and each file's keys."""
    shape = DATA / "shape.json"
    want = {"files": files, "rows": rows, "groups": GROUPS, "seed": 7}
    rng = random.Random(7)
    n = files * GROUPS * rows
    keys = rng.sample(range(1 << 40), n)
    per_file = GROUPS * rows
    chunks = [keys[i * per_file : (i + 1) * per_file] for i in range(files)]
    paths = [DATA / f"part-{i:04d}.parquet" for i in range(files)]
    if shape.exists() and json.loads(shape.read_text()) == want:
        return paths, chunks
    shutil.rmtree(DATA, ignore_errors=True)
    DATA.mkdir(parents=True)
    for path, chunk in zip(paths, chunks, strict=True):
        table = pa.table(
            {
                "key": pa.array(chunk, pa.int64()),
                "name": pa.array([f"name-{k:019d}" for k in chunk]),
                "v": pa.array([k / 7 for k in chunk], pa.float64()),
            }
        )
        pq.write_table(
            table,
            path,
            row_group_size=rows,
            bloom_filter_options={"key": {"ndv": rows, "fpp": 0.01}},
        )
    shape.write_text(json.dumps(want))
    return paths, chunks


def _rows(table: Any) -> list[tuple[Any, ...]]:
    return sorted(zip(*table.to_pydict().values(), strict=True))


def _in(keys: list[int]) -> str:
    return ", ".join(map(str, keys))


def polars_native(keys: list[int]) -> Any:
    frame = pl.scan_parquet(str(DATA / "*.parquet")).filter(pl.col("key").is_in(keys))
    return frame.select("key", "name", "v").collect().to_arrow()


def polars_pruned(keys: list[int]) -> Any:
    ds = pruned_dataset_sync(str(DATA), f"key IN ({_in(keys)})")
    frame = pl.scan_pyarrow_dataset(ds).filter(pl.col("key").is_in(keys))
    return frame.select("key", "name", "v").collect().to_arrow()


def duckdb_native(keys: list[int]) -> Any:
    with duckdb.connect() as con:
        glob = str(DATA / "*.parquet")
        query = f"SELECT key, name, v FROM read_parquet('{glob}') WHERE key IN ({_in(keys)})"
        return con.sql(query).to_arrow_table()


def duckdb_pruned(keys: list[int]) -> Any:
    ds = pruned_dataset_sync(str(DATA), f"key IN ({_in(keys)})")
    with duckdb.connect() as con:
        con.register("t", ds)
        query = f"SELECT key, name, v FROM t WHERE key IN ({_in(keys)})"
        return con.sql(query).to_arrow_table()


def datafusion_native(keys: list[int]) -> Any:
    ctx = datafusion.SessionContext()
    ctx.register_parquet("t", str(DATA), file_extension=".parquet")
    return ctx.sql(f"SELECT key, name, v FROM t WHERE key IN ({_in(keys)})").to_arrow_table()


def datafusion_pruned(keys: list[int]) -> Any:
    ds = pruned_dataset_sync(str(DATA), f"key IN ({_in(keys)})")
    ctx = datafusion.SessionContext()
    ctx.register_dataset("t", ds)
    return ctx.sql(f"SELECT key, name, v FROM t WHERE key IN ({_in(keys)})").to_arrow_table()


def polars_scan(ds: Any, keys: list[int]) -> Any:
    frame = pl.scan_pyarrow_dataset(ds).filter(pl.col("key").is_in(keys))
    return frame.select("key", "name", "v").collect().to_arrow()


def duckdb_scan(ds: Any, keys: list[int]) -> Any:
    with duckdb.connect() as con:
        con.register("t", ds)
        return con.sql(f"SELECT key, name, v FROM t WHERE key IN ({_in(keys)})").to_arrow_table()


def datafusion_scan(ds: Any, keys: list[int]) -> Any:
    ctx = datafusion.SessionContext()
    ctx.register_dataset("t", ds)
    return ctx.sql(f"SELECT key, name, v FROM t WHERE key IN ({_in(keys)})").to_arrow_table()


SCANS: dict[str, Callable[[Any, list[int]], Any]] = {
    "polars": polars_scan,
    "duckdb": duckdb_scan,
    "datafusion": datafusion_scan,
}

PREFIX = "dataset/"


def section_s3(paths: list[Path], keys: list[int], runs: int, delay_ms: float) -> dict[str, Any]:
    """Per engine: the pruned dataset against the unpruned one, on S3 through the proxy."""
    out: dict[str, Any] = {"delay_ms": delay_ms}
    with moto_server() as (endpoint, _):
        objects = upload(endpoint, paths, PREFIX)
        target = endpoint.removeprefix("http://")

        def one(engine: str, pruned: bool) -> tuple[float, Any]:
            proxy = start_subprocess(target, delay=delay_ms / 1000, http_keepalive=True)
            try:
                options = moto_options(proxy.endpoint)
                start = time.perf_counter()
                if pruned:
                    where = f"key IN ({_in(keys)})"
                    ds = pruned_dataset_sync(f"s3://{BUCKET}/{PREFIX}", where, options=options)
                else:
                    fs = pafs.S3FileSystem(
                        access_key=ACCESS_KEY,
                        secret_key=SECRET_KEY,
                        region=REGION,
                        endpoint_override=proxy.endpoint.removeprefix("http://"),
                        scheme="http",
                    )
                    ds = pads.dataset([f"{BUCKET}/{k}" for k in objects], filesystem=fs)
                answer = SCANS[engine](ds, keys)
                return time.perf_counter() - start, answer
            finally:
                proxy.stop()
                clear_store_cache()  # no connection survives a run

        print(f"\nS3 through the latency proxy, {delay_ms:.0f} ms each way")
        print(f"{'engine':<11} {'all ms':>10} {'pruned ms':>10} {'ratio':>7}")
        for engine in SCANS:
            times: dict[bool, list[float]] = {False: [], True: []}
            answers = {}
            for _ in range(runs):
                for pruned in (False, True):  # interleaved: the load hits both alike
                    seconds, answers[pruned] = one(engine, pruned)
                    times[pruned].append(seconds)
            if _rows(answers[True]) != _rows(answers[False]):
                raise SystemExit(f"{engine}: the pruned dataset's rows differ on S3")
            full, pruned_s = statistics.median(times[False]), statistics.median(times[True])
            out[engine] = {"all_ms": full * 1e3, "pruned_ms": pruned_s * 1e3}
            print(
                f"{engine:<11} {full * 1e3:>10.0f} {pruned_s * 1e3:>10.0f} {full / pruned_s:>6.1f}x"
            )
    return out


ENGINES: dict[str, tuple[Callable[[list[int]], Any], Callable[[list[int]], Any]]] = {
    "polars": (polars_native, polars_pruned),
    "duckdb": (duckdb_native, duckdb_pruned),
    "datafusion": (datafusion_native, datafusion_pruned),
}


def timed(run: Callable[[list[int]], Any], keys: list[int], runs: int) -> tuple[float, Any]:
    """Median seconds over ``runs`` (after one unmeasured run) and the last answer."""
    answer = run(keys)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        answer = run(keys)
        times.append(time.perf_counter() - start)
    return statistics.median(times), answer


def chunk_bytes(paths: list[Path], keep: dict[str, list[int]] | None) -> int:
    """Compressed bytes of the row groups' column chunks: all, or those in ``keep``."""
    total = 0
    for path in paths:
        meta = pq.read_metadata(path)
        groups = range(meta.num_row_groups) if keep is None else keep.get(str(path), [])
        for g in groups:
            rg = meta.row_group(g)
            total += sum(rg.column(c).total_compressed_size for c in range(rg.num_columns))
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--files", type=int, default=24)
    parser.add_argument("--rows", type=int, default=16384)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--s3", action="store_true")
    parser.add_argument("--delay-ms", type=float, default=20.0)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    recorder = Recorder("dataset", files=args.files, rows=args.rows, runs=args.runs)
    paths, chunks = write_data(args.files, args.rows)
    rng = random.Random(11)
    present = [rng.choice(chunks[rng.randrange(len(chunks))]) for _ in range(2)]
    everything = {k for c in chunks for k in c}
    absent = [k for k in (3, 5, 1 << 41) if k not in everything][:2]
    keys = present + absent

    ds = pruned_dataset_sync(str(DATA), f"key IN ({_in(keys)})")
    keep = {f.path: [rg.id for rg in f.row_groups] for f in ds.get_fragments()}
    kept_groups = sum(len(v) for v in keep.values())
    results: dict[str, Any] = {
        "row_groups": {"kept": kept_groups, "total": len(paths) * GROUPS},
        "chunk_bytes": {"kept": chunk_bytes(paths, keep), "total": chunk_bytes(paths, None)},
        "engines": {},
    }
    print(
        f"row groups kept {kept_groups} of {len(paths) * GROUPS}; chunk bytes "
        f"{results['chunk_bytes']['kept']:,} of {results['chunk_bytes']['total']:,}"
    )
    build_s, _ = timed(
        lambda k: pruned_dataset_sync(str(DATA), f"key IN ({_in(k)})"), keys, args.runs
    )
    results["build_dataset_ms"] = build_s * 1e3
    print(f"pruned_dataset_sync alone: {build_s * 1e3:.1f} ms")
    print(f"{'engine':<11} {'native ms':>10} {'pruned ms':>10} {'ratio':>7}")
    for name, (native, pruned) in ENGINES.items():
        native_s, expected = timed(native, keys, args.runs)
        pruned_s, got = timed(pruned, keys, args.runs)
        if _rows(got) != _rows(expected) or len(_rows(got)) != len(present):
            raise SystemExit(f"{name}: the pruned dataset's rows differ from the native scan's")
        results["engines"][name] = {
            "native_ms": native_s * 1e3,
            "pruned_ms": pruned_s * 1e3,
            "speedup": native_s / pruned_s,
        }
        print(
            f"{name:<11} {native_s * 1e3:>10.1f} {pruned_s * 1e3:>10.1f} "
            f"{native_s / pruned_s:>6.1f}x"
        )
    if args.s3:
        results["s3"] = section_s3(paths, keys, args.runs, args.delay_ms)
    if args.json_out:
        recorder.write(args.json_out, results)


if __name__ == "__main__":
    main()
