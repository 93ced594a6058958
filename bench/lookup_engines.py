"""One lookup by one engine, in a process of its own: the worker of ``bench/bench_lookup.py``.

Run as ``python bench/lookup_engines.py SPEC_JSON``; prints one JSON line:
``{"wall_s": ..., "cpu_s": ..., "rows": [[id, email, score], ...] (sorted), "config": ...}``
(``cpu_s``: the process's CPU time during the query, all threads), or
``{"unavailable": "why"}`` when the engine cannot run the query here (for instance ours on a
Delta table before ``lookup`` accepts one). The spec names the engine, the query, where the
lake is (``s3``: an endpoint, bucket and prefix; ``local``: a folder), the Delta table's
URI, the Iceberg catalog, and ``warm``: time a second query on the same session/reader after a
first one on other keys (``warm_ids``), instead of the process's first query.

Each engine imports its library inside its function, so that the DuckDB worker runs in
``bench/.venv-duckdb`` (DuckDB 1.4.4 with the ``duckdb-ext-httpfs`` package), which has
neither pyarrow nor this package. The clock covers everything that does I/O: listing,
schema inference, footers, filters, data; sessions and clients are made before it starts
(they make no request).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ACCESS_KEY = "testing"  # moto's documented dummy credentials; moto does not check them
SECRET_KEY = "testing"
REGION = "us-east-1"
COLUMNS = ("id", "email", "score")
# The engines with threads get as many as DuckDB's default S3 advice: I/O bound, so more
# than the 2 cores (DuckDB: "SET threads" above the core count for remote files).
THREADS = 16

# A query's arguments: its keys, an email (``and2``) and a score range (``and_range``).
Query = Callable[[list[int], str | None, list[int] | None], list[list[Any]]]
# An engine that counts its own requests registers a function giving (requests, bytes).
OWN_COUNTERS: list[Callable[[], tuple[int, int]]] = []


def sql_where(ids: list[int], email: str | None, score: list[int] | None = None) -> str:
    """The predicate as SQL (every engine with SQL gets the same text)."""
    text = f"id = {ids[0]}" if len(ids) == 1 else f"id IN ({', '.join(map(str, ids))})"
    if email is not None:
        text += " AND email = '" + email.replace("'", "''") + "'"
    if score is not None:
        text += f" AND score BETWEEN {score[0]} AND {score[1]}"
    return text


def rows_of(table: Any) -> list[list[Any]]:
    """A pyarrow table's rows as sorted lists."""
    cols = [table.column(c).to_pylist() for c in COLUMNS]
    return sorted([list(r) for r in zip(*cols, strict=True)])


def pa_filter(ids: list[int], email: str | None, score: list[int] | None) -> Any:
    import pyarrow.dataset as ds

    expr = ds.field("id") == ids[0] if len(ids) == 1 else ds.field("id").isin(ids)
    if email is not None:
        expr = expr & (ds.field("email") == email)
    if score is not None:
        expr = expr & (ds.field("score") >= score[0]) & (ds.field("score") <= score[1])
    return expr


def s3_uri(spec: dict[str, Any], what: str = "prefix") -> str:
    return f"s3://{spec['bucket']}/{spec[what]}"


def object_store_options(spec: dict[str, Any]) -> dict[str, str]:
    """object_store (Rust) options: Polars, deltalake."""
    return {
        "aws_endpoint_url": spec["endpoint"],
        "aws_region": REGION,
        "aws_access_key_id": ACCESS_KEY,
        "aws_secret_access_key": SECRET_KEY,
        "aws_allow_http": "true",
    }


# ---- engines: each returns (config text, query function) -------------------------------


#: What a first lookup imports (measured with sys.modules before and after one).
LOOKUP_LAZY_MODULES = (
    "anyio._backends._asyncio",
    "pybloom_async.parquet.page_index",
    "pybloom_async.rows.fetch",
    "pybloom_async.rows.match",
    "pybloom_async.rows.pages",
    "pybloom_async.rows.plan",
    "pybloom_async.rows.ranges",
    "pybloom_async.rows.schema",
)


def ours(spec: dict[str, Any]) -> tuple[str, Query]:
    """``pybloom_async.lookup_sync`` with default settings; warm: one long-lived BloomReader."""
    # imported lazily by lookup: outside the clock, as for every engine
    import pyarrow.parquet

    import pybloom_async.rows.fetch
    from pybloom_async import BloomReader, ReaderConfig, col, lookup_sync
    from pybloom_async.io.base import SourceStats

    if not spec.get("first"):
        # Outside the clock, as every engine's own import is: the modules lookup imports
        # on first use, and pandas, which pyarrow imports on its first conversion of a
        # Python value when pandas is installed (apache/arrow#34994; about 0.17 s here).
        # "ours-first" leaves both inside the clock: a script's first lookup.
        import importlib

        import pyarrow as pa

        for name in LOOKUP_LAZY_MODULES:
            importlib.import_module(name)
        pa.scalar(0)

    options: dict[str, Any] = {}
    if spec["kind"] == "s3":
        options = {
            "endpoint": spec["endpoint"],
            "region": REGION,
            "access_key_id": ACCESS_KEY,
            "secret_access_key": SECRET_KEY,
            "allow_http": True,
        }
        source: Any = s3_uri(spec)
    else:
        source = spec["local_dir"]
    # "tuned" is not the default: one suffix read large enough for the footer and these
    # files' filters (about 260 KiB), and every file at once (the round-trip floor).
    config = (
        ReaderConfig(footer_read_bytes=512 * 1024, concurrency=1024) if spec.get("tuned") else None
    )
    if spec.get("two_phase") or spec.get("lean"):
        # Not the default: every file's rows in two phases (predicate columns first), however
        # small its other columns (the default threshold is 1 MiB of them per file).
        pybloom_async.rows.fetch.TWO_PHASE_MIN_BYTES = 0
    if spec.get("lean"):
        # ... and ranges merged across holes of at most 64 KiB (the default is 1 MiB, which
        # bridges the other columns between two row groups' predicate chunks).
        from pybloom_async.read.plan import PlanConfig

        config = ReaderConfig(plan=PlanConfig(max_hole_bytes=64 * 1024))
    reader = BloomReader(options=options or None) if spec["warm"] else None
    # Our own request counters, reset per query: the warm figure's requests are those of
    # the timed lookup only (the proxy counts the warm-up's too).
    counted: list[SourceStats] = []
    table_kind = spec.get("table")
    if table_kind is not None:
        source = open_table(spec, table_kind)
        # Imported lazily by a table lookup: outside the clock, as the other modules are.
        import pybloom_async.lake.tables
        import pybloom_async.rows.tables
        import pybloom_async.tables.delta
        import pybloom_async.tables.iceberg

    def run(ids: list[int], email: str | None, score: list[int] | None) -> list[list[Any]]:
        where = col("id") == ids[0] if len(ids) == 1 else col("id").isin(ids)
        if email is not None:
            where = where & (col("email") == email)
        if score is not None:
            where = where & col("score").between(score[0], score[1])
        kwargs: dict[str, Any] = {"reader": reader} if reader is not None else {}
        if reader is None:
            kwargs["stats"] = SourceStats()
            counted[:] = [kwargs["stats"]]
            if config is not None:
                kwargs["config"] = config
            if options:
                kwargs["options"] = options
        else:
            reader.stats = SourceStats()
            counted[:] = [reader.stats]

        # As a script calls it: lookup_sync (local paths run in this thread, with no event
        # loop; anything else on a new loop, as anyio.run would).
        return rows_of(lookup_sync(source, where, list(COLUMNS), **kwargs))

    text = "defaults; " + ("long-lived BloomReader (warm)" if reader else "fresh reader")
    if spec.get("first"):
        text += "; first call in the process (lazy imports and pandas inside the clock)"
    if config is not None:
        text = "footer_read_bytes=512 KiB, concurrency=1024; fresh reader"
    if spec.get("two_phase"):
        text = "TWO_PHASE_MIN_BYTES=0 (every file in two phases); fresh reader"
    if spec.get("lean"):
        text = "TWO_PHASE_MIN_BYTES=0, PlanConfig(max_hole_bytes=64 KiB); fresh reader"
    OWN_COUNTERS.append(
        lambda: (counted[0].requests + counted[0].metadata_requests, counted[0].bytes_read)
    )
    return text, run


def duckdb_engine(spec: dict[str, Any]) -> tuple[str, Query]:
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads = {THREADS}")
    cache = "true" if spec["warm"] else "false"
    if spec["kind"] == "s3":
        # duckdb-ext-httpfs ships the extension file in a package folder (no download).
        import duckdb_ext  # type: ignore[import-not-found]

        folder = str(Path(duckdb_ext.__path__[0]) / "extensions")
        con.execute(f"SET extension_directory = '{folder}'")
        con.execute("LOAD httpfs")
        host = spec["endpoint"].removeprefix("http://")
        for stmt in (
            f"SET s3_endpoint = '{host}'",
            "SET s3_use_ssl = false",
            "SET s3_url_style = 'path'",
            f"SET s3_region = '{REGION}'",
            f"SET s3_access_key_id = '{ACCESS_KEY}'",
            f"SET s3_secret_access_key = '{SECRET_KEY}'",
            f"SET enable_http_metadata_cache = {cache}",
        ):
            con.execute(stmt)
        glob = s3_uri(spec) + "*.parquet"
    else:
        glob = spec["local_dir"].rstrip("/") + "/*.parquet"
    con.execute(f"SET parquet_metadata_cache = {cache}")

    def run(ids: list[int], email: str | None, score: list[int] | None) -> list[list[Any]]:
        cols = ", ".join(COLUMNS)
        where = sql_where(ids, email, score)
        sql = f"SELECT {cols} FROM read_parquet('{glob}') WHERE {where}"
        return sorted([list(r) for r in con.execute(sql).fetchall()])

    version = duckdb.__version__
    return f"duckdb {version}, threads={THREADS}, metadata caches {cache}", run


def datafusion_engine(spec: dict[str, Any]) -> tuple[str, Query]:
    import datafusion
    from datafusion import SessionConfig, SessionContext

    config = (
        SessionConfig()
        .with_target_partitions(THREADS)
        .set("datafusion.execution.parquet.bloom_filter_on_read", "true")
        .set("datafusion.execution.parquet.pushdown_filters", "true")
    )
    ctx = SessionContext(config)
    if spec["kind"] == "s3":
        from datafusion.object_store import AmazonS3

        store = AmazonS3(
            bucket_name=spec["bucket"],
            region=REGION,
            access_key_id=ACCESS_KEY,
            secret_access_key=SECRET_KEY,
            endpoint=spec["endpoint"],
            allow_http=True,
        )
        ctx.register_object_store("s3://", store, spec["bucket"])
        location = s3_uri(spec)
    else:
        location = spec["local_dir"].rstrip("/") + "/"
    registered = []

    def run(ids: list[int], email: str | None, score: list[int] | None) -> list[list[Any]]:
        if not registered:  # lists the files and infers the schema: I/O, timed
            ctx.register_parquet("lake", location, file_extension=".parquet")
            registered.append(True)
        cols = ", ".join(COLUMNS)
        df = ctx.sql(f"SELECT {cols} FROM lake WHERE {sql_where(ids, email, score)}")
        return rows_of(df.to_arrow_table())

    text = (
        f"datafusion {datafusion.__version__}, target_partitions={THREADS}, "
        "bloom_filter_on_read, pushdown_filters"
    )
    return text, run


def polars_engine(spec: dict[str, Any]) -> tuple[str, Query]:
    import polars as pl

    if spec["kind"] == "s3":
        source = s3_uri(spec) + "*.parquet"
        options: dict[str, str] | None = object_store_options(spec)
    else:
        source = spec["local_dir"].rstrip("/") + "/*.parquet"
        options = None

    def run(ids: list[int], email: str | None, score: list[int] | None) -> list[list[Any]]:
        expr = pl.col("id") == ids[0] if len(ids) == 1 else pl.col("id").is_in(ids)
        if email is not None:
            expr = expr & (pl.col("email") == email)
        if score is not None:
            expr = expr & pl.col("score").is_between(score[0], score[1], closed="both")
        frame = pl.scan_parquet(source, storage_options=options).filter(expr)
        return rows_of(frame.select(COLUMNS).collect().to_arrow())

    return f"polars {pl.__version__}, scan_parquet defaults (own thread pool)", run


def pyarrow_engine(spec: dict[str, Any]) -> tuple[str, Query]:
    import pyarrow as pa
    import pyarrow.dataset as ds
    import pyarrow.fs as pafs

    if spec["kind"] == "s3":
        fs: Any = pafs.S3FileSystem(
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
            region=REGION,
            scheme="http",
            endpoint_override=spec["endpoint"].removeprefix("http://"),
        )
        path = f"{spec['bucket']}/{spec['prefix']}"
    else:
        fs, path = None, spec["local_dir"]
    pa.set_io_thread_count(THREADS)

    def run(ids: list[int], email: str | None, score: list[int] | None) -> list[list[Any]]:
        dataset = ds.dataset(path, format="parquet", filesystem=fs)
        where = pa_filter(ids, email, score)
        return rows_of(dataset.to_table(columns=list(COLUMNS), filter=where))

    return f"pyarrow {pa.__version__}, io threads={THREADS}, default pre_buffer", run


def open_table(spec: dict[str, Any], kind: str) -> Any:
    """The Delta table (deltalake) or the Iceberg table (pyiceberg, sqlite catalog)."""
    if kind == "delta":
        from deltalake import DeltaTable

        options = None
        if spec["kind"] == "s3":
            options = {k.upper(): v for k, v in object_store_options(spec).items()}
        return DeltaTable(spec["delta_uri"], storage_options=options)
    from pyiceberg.catalog.sql import SqlCatalog

    props = {"uri": f"sqlite:///{spec['iceberg_db']}", "warehouse": spec["iceberg_warehouse"]}
    if spec["kind"] == "s3":
        props |= {
            "s3.endpoint": spec["endpoint"],
            "s3.access-key-id": ACCESS_KEY,
            "s3.secret-access-key": SECRET_KEY,
            "s3.region": REGION,
        }
    return SqlCatalog("bench", **props).load_table(spec["iceberg_table"])


def delta_engine(spec: dict[str, Any]) -> tuple[str, Query]:
    import deltalake
    from deltalake import QueryBuilder

    def run(ids: list[int], email: str | None, score: list[int] | None) -> list[list[Any]]:
        table = open_table(spec, "delta")  # reads the log: timed
        cols = ", ".join(COLUMNS)
        sql = f"SELECT {cols} FROM lake WHERE {sql_where(ids, email, score)}"
        batches = QueryBuilder().register("lake", table).execute(sql).read_all()
        return rows_of(batches)

    return f"deltalake {deltalake.__version__}, QueryBuilder (its DataFusion scan)", run


def iceberg_engine(spec: dict[str, Any]) -> tuple[str, Query]:
    import pyiceberg
    from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, In, LessThanOrEqual

    def run(ids: list[int], email: str | None, score: list[int] | None) -> list[list[Any]]:
        table = open_table(spec, "iceberg")  # reads the metadata: timed
        expr: Any = EqualTo("id", ids[0]) if len(ids) == 1 else In("id", ids)
        if email is not None:
            expr = And(expr, EqualTo("email", email))
        if score is not None:
            low, high = GreaterThanOrEqual("score", score[0]), LessThanOrEqual("score", score[1])
            expr = And(expr, And(low, high))
        return rows_of(table.scan(row_filter=expr, selected_fields=COLUMNS).to_arrow())

    return f"pyiceberg {pyiceberg.__version__}, scan(row_filter).to_arrow()", run


ENGINES: dict[str, Callable[[dict[str, Any]], tuple[str, Query]]] = {
    "ours": ours,
    "duckdb": duckdb_engine,
    "datafusion": datafusion_engine,
    "polars": polars_engine,
    "pyarrow": pyarrow_engine,
    "delta": delta_engine,
    "iceberg": iceberg_engine,
}


def main() -> None:
    spec = json.loads(sys.argv[1])
    try:
        config, run = ENGINES[spec["engine"]](spec)
        if spec["warm"]:
            run(spec["warm_ids"], None, None)
        t0, cpu0 = time.perf_counter(), time.process_time()
        rows = run(spec["ids"], spec["email"], spec.get("score"))
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    except Exception as exc:
        if spec.get("table") and spec["engine"] == "ours":
            # lookup() on a table object: reported, not fatal, until tables are supported.
            print(json.dumps({"unavailable": f"{type(exc).__name__}: {exc}"[:300]}))
            return
        raise
    doc: dict[str, Any] = {"wall_s": wall, "cpu_s": cpu, "rows": rows, "config": config}
    if OWN_COUNTERS:
        doc["own_requests"], doc["own_bytes"] = OWN_COUNTERS[0]()
    print(json.dumps(doc, default=str))


if __name__ == "__main__":
    main()
