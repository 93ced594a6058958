"""The ``pybloom`` data source and the pipeline's jobs on a local Spark (``-m spark``).

* Rows of ``spark.read.format("pybloom")`` equal ``spark.read.parquet``'s on Spark's files of
  every type, for pushed =, IN (beyond Spark's 10), AND, <=>, IS NULL, for filters Spark
  keeps (LIKE, OR across columns, NaN literals), and for the ``where`` option; each on a
  DataFrame loaded anew. (Spark 4.1 to 4.3 push none: Spark keeps them all, see
  ``spark/plan_guard.py``; one DataFrame used again and again is
  ``test_spark_source_reuse.py``.)
* Ranges, NOT and IS NOT NULL are pushed (Spark keeps no filter of its own) on integers,
  strings (unsigned bytes: an emoji above CJK), binaries, booleans, dates, timestamps
  (INT64, INT96, without a time zone) and decimals, alone and beside a key; on floats
  with NaN, NULL, -0.0 and infinities too, where Spark's NaN lies above every number.
* Mistakes fail the query with our one-line error: a wrong literal, an unknown column.
* An unreadable file is kept: the task that reads it fails naming it (or skips it), and
  ``strict`` fails the plan on the driver.
* ``lookup_on_spark`` equals the local lookup, row for row and in order;
  ``build_lake_index_on_spark`` writes the local build's segment bytes, and the data source
  plans a point lookup over the lake index in at most 3 ranged reads;
  ``add_bloom_filters_on_spark`` rewrites each file as the local call does, and refuses a
  table's folder.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.writers import WrittenFiles

from pybloom_async import LookupOptions, add_bloom_filters_sync, build_lake_index_sync, lookup_sync
from pybloom_async.spark.common import pyspark_version
from pybloom_async.spark.plan_guard import plans_shared

pq = pytest.importorskip("pyarrow.parquet")
pytestmark = pytest.mark.spark

#: Whether the data source takes Spark's pushed filters on this PySpark (>= 5.0).
PUSHING = not plans_shared(pyspark_version())


@pytest.fixture(scope="module")
def session(spark_session: Any) -> Any:
    import pybloom_async.spark

    pybloom_async.spark.register(spark_session)
    return spark_session


def rows(frame: Any) -> list[str]:
    """The rows, each as its repr (NaN equals NaN there), sorted."""
    return sorted(repr(tuple(r)) for r in frame.collect())


def naive_utc(v: Any) -> Any:
    """A timestamp as Spark hands it back in a UTC session: naive, in UTC."""
    if isinstance(v, dt.datetime) and v.tzinfo is not None:
        return v.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return v


def value(path: Path, row_group: int, row: int, column: str) -> Any:
    return pq.ParquetFile(path).read_row_group(row_group).column(column)[row].as_py()


def test_rows_equal_sparks_reader(session: Any, spark_files: WrittenFiles) -> None:
    """Every kind of filter, pushed or kept by Spark: the rows of spark.read.parquet."""
    from pybloom_async.spark.register import PUSHDOWN_SETTING

    if PUSHING:  # Spark 4.1-4.3: register leaves the setting alone
        assert session.conf.get(PUSHDOWN_SETTING) == "true"
    a, b = spark_files.prune_files
    root = str(a.parent)
    ids = [value(a, 3, 5, "id"), value(b, 7, 1, "id")]
    many = ", ".join(str(value(p, g, 2, "id")) for p in (a, b) for g in range(0, 12, 2))
    s = value(b, 2, 4, "c_string")
    wheres = [
        f"id = {ids[0]}",
        f"c_long IN ({value(a, 1, 1, 'c_long')}, {value(b, 5, 9, 'c_long')}, -1)",
        f"id IN ({many})",  # 12 keys: beyond Spark's own pushdown of 10
        f"c_string = '{s}' AND id = {ids[1]}",
        f"c_string <=> '{s}'",
        "c_nullable_int IS NULL AND id < 40",
        f"c_date = DATE'{value(a, 4, 0, 'c_date')}'",
        f"c_ts = TIMESTAMP'{value(b, 1, 3, 'c_ts').isoformat()}'",
        f"c_dec38 = {value(a, 6, 6, 'c_dec38')}",
        "c_float = 0.0 OR c_double = -0.0",  # OR across columns: Spark keeps it
        f"id = {ids[0]} AND c_string LIKE 'k%'",  # LIKE: Spark's
        f"id > {ids[1]} AND id < {ids[1] + 3}",
        "c_float = CAST('NaN' AS FLOAT)",  # NaN = NaN is TRUE in Spark: not pushed
    ]
    for where in wheres:
        ours = session.read.format("pybloom").load(root).where(where)
        assert ours.schema == session.read.parquet(root).schema, where
        assert rows(ours) == truth(session, root, where), where
    # The where option: an OR across columns that Spark cannot push, pruned here.
    where = f"id = {ids[0]} OR c_string = '{s}'"
    ours = session.read.format("pybloom").option("where", where).load(root)
    assert rows(ours) == truth(session, root, where)
    assert rows(ours) and len(rows(ours)) < 10
    # Spark's own reader with its pushdown misses the row group holding only -0.0
    # (parquet-java probes its Bloom filter for 0.0 alone); the SQL answer, and ours,
    # keep it.
    where = "c_float = 0.0"
    pushed = rows(session.read.parquet(root).where(where))
    assert len(rows(session.read.format("pybloom").load(root).where(where))) == 2
    assert len(truth(session, root, where)) == 2 and len(pushed) == 1


def truth(session: Any, root: str, where: str) -> list[str]:
    """Spark's answer with its Parquet filter pushdown off: Spark evaluates every row."""
    session.conf.set("spark.sql.parquet.filterPushdown", "false")
    try:
        return rows(session.read.parquet(root).where(where))
    finally:
        session.conf.unset("spark.sql.parquet.filterPushdown")


def kept_by_spark(frame: Any) -> list[str]:
    """The filters Spark evaluates itself above the scan: those the data source returned."""
    plan = frame._jdf.queryExecution().executedPlan().toString()
    return [line.strip() for line in plan.splitlines() if re.search(r"\bFilter ", line)]


def pushed_as_expected(frame: Any, pushable: bool) -> bool:
    """Whether Spark keeps the frame's filters as it should: none of a pushable one where
    the data source takes Spark's filters (Spark >= 5.0), all of them where it does not."""
    return bool(kept_by_spark(frame)) == (not PUSHING or not pushable)


def test_ranges_pushed_and_exact(session: Any, spark_files: WrittenFiles, tmp_path: Path) -> None:
    """Ranges, NOT and IS NOT NULL are taken (Spark keeps no filter) where they mean what
    Spark means, rows equal to Spark's; on floats too, where NaN is above every number."""
    a, b = spark_files.prune_files
    root = str(a.parent)
    k = value(b, 4, 2, "id")
    key = value(a, 5, 3, "c_long")
    ts = [value(a, 2, 0, "c_ts").isoformat(), value(a, 2, 7, "c_ts").isoformat()]
    beside = f"c_long = {key} AND id > {value(a, 5, 3, 'id')}"  # the key's row is out
    pushed = [
        f"id > {k} AND id <= {k + 25}",
        "c_int < -2140000000",
        "c_short BETWEEN -100 AND 100",
        "c_byte >= 120",
        "c_string > 'k1999' AND c_string < 'k2'",
        "c_string >= '日本語'",  # unsigned UTF-8 bytes: the emoji too, not 'ünïcødé'
        "c_string <= ''",
        "c_binary > X'FE'",
        "c_binary < X'01'",  # the empty ones and those of a first byte 0
        "c_bool < true AND id < 10020",
        "c_date >= DATE'1990-01-01' AND c_date < DATE'1990-03-01'",
        f"c_ts > TIMESTAMP'{ts[0]}' AND c_ts <= TIMESTAMP'{ts[1]}'",
        f"c_dec18 >= {value(b, 3, 3, 'c_dec18')} AND id < 3000",
        "c_dec9 BETWEEN -100 AND 100",
        f"c_long = {key} AND id >= {value(a, 5, 3, 'id')}",  # a range beside a key
        beside,
        f"id IN ({k}, {k + 1}, 5) AND c_date < DATE'1951-01-01'",
        "NOT (id > 30) AND c_nullable_int IS NOT NULL",
        "id != 5 AND id < 12",
        "c_nullable_int NOT IN (13, 26) AND id < 12",
        # Floats: NaN (ids 20, 21) lies above every number in Spark, NULL (c_float) in none.
        "c_double > 6600",
        "c_double >= CAST('Infinity' AS DOUBLE)",
        "c_double > -0.0 AND id < 50",
        "c_float < 1.0",
        "c_float <= 0.0",
        "c_float >= CAST('-Infinity' AS FLOAT) AND id < 50",
        "NOT (c_double < 3) AND id < 60",
        "NOT (c_float > 2) AND id < 60",
        "c_float != 5.0 AND id < 60",
    ]
    kept = [
        "c_double >= CAST('NaN' AS DOUBLE)",  # the NaN row: no predicate says so
        "c_float < CAST('NaN' AS FLOAT) AND id < 50",
        "c_float < CAST(0.1 AS FLOAT) AND id < 50",  # no half: FLOAT16 would round it
        "c_dec38 > 0 AND id < 50",  # PySpark rounds its literals to 28 digits
        "c_string LIKE 'k1%' AND id < 200",
    ]
    for where in pushed + kept:
        ours = session.read.format("pybloom").load(root).where(where)
        expected = truth(session, root, where)
        assert rows(ours) == expected and bool(expected) == (where != beside), where
        assert pushed_as_expected(ours, where not in kept), (where, kept_by_spark(ours))
    nan_rows = session.read.format("pybloom").load(root).where("c_double > 6600")
    assert {21, 31} <= {r["id"] for r in nan_rows.collect()}  # NaN and infinity
    # INT96 instants, and timestamps without a time zone.
    int96 = str(spark_files.files[2].parent)
    low, high = (value(spark_files.files[2], 0, i, "c_ts96").isoformat() for i in (10, 40))
    where = (
        f"c_ts96 >= TIMESTAMP'{low}' AND c_ts96 < TIMESTAMP'{high}'"
        " AND c_ts96_plain < TIMESTAMP'2024-01-01'"
    )
    ours = session.read.format("pybloom").load(int96).where(where)
    assert rows(ours) == truth(session, int96, where) and rows(ours)
    assert pushed_as_expected(ours, True)
    # Timestamps without a time zone; text beyond the BMP, which orders above U+FF21 as
    # UTF-8 bytes (Spark) and below it as Java's UTF-16 units would; unsigned bytes.
    more = str(tmp_path / "more")
    session.range(500).selectExpr(
        "id",
        "cast(timestamp_micros(1700000000000000 + id * 999999) as timestamp_ntz) as t",
        "case id % 4 when 0 then '\uff21' when 1 then '\U0001f986' when 2 then 'z' end as s",
        "unhex(case id % 3 when 0 then '7f' when 1 then '80' else 'ff00' end) as b",
    ).write.parquet(more)
    for where in [
        "t >= TIMESTAMP_NTZ'2023-11-14 22:15:00' AND t < TIMESTAMP_NTZ'2023-11-14 22:16:00'",
        "s > '\uff21'",
        "s < '\U0001f986' AND id < 40",
        "b > X'7f' AND id < 40",
    ]:
        ours = session.read.format("pybloom").load(more).where(where)
        assert rows(ours) == truth(session, more, where) and rows(ours), where
        assert pushed_as_expected(ours, True), where
    above = session.read.format("pybloom").load(more).where("s > '\uff21'")
    assert {r["s"] for r in above.collect()} == {"\U0001f986"}


def test_mistakes_fail_in_one_line(session: Any, spark_files: WrittenFiles) -> None:
    root = str(spark_files.prune_files[0].parent)

    def load() -> Any:  # a DataFrameReader keeps its options: a new one each time
        return session.read.format("pybloom")

    with pytest.raises(Exception, match=r"PredicateError: .*'abc'.*c_date") as info:
        load().option("where", "c_date = 'abc'").load(root).collect()
    assert "pybloom_async.PredicateError" in str(info.value)  # its public path
    with pytest.raises(Exception, match="no file read has this column"):
        load().option("where", "nope = 1").load(root).collect()
    with pytest.raises(Exception, match="unknown option 'wher'"):
        load().option("wher", "id = 1").load(root).collect()


def test_unreadable_files(session: Any, spark_files: WrittenFiles, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    lake.mkdir()
    good = spark_files.prune_files[0]
    shutil.copy(good, lake / "good.parquet")
    (lake / "garbage.parquet").write_bytes(b"not a parquet file" * 20)
    key = value(good, 2, 3, "id")
    where = f"id = {key}"
    with pytest.raises(Exception, match=r"garbage\.parquet"):
        # The driver fails the read naming it (on_error: one policy, driver and executors).
        session.read.format("pybloom").load(str(lake)).where(where).collect()
    skipping = session.read.format("pybloom").option("on_error", "skip").load(str(lake))
    assert [r["id"] for r in skipping.where(where).collect()] == [key]
    with pytest.raises(Exception, match=r"garbage\.parquet") as info:
        strict = session.read.format("pybloom").option("strict", "true").load(str(lake))
        strict.where(where).collect()
    assert "PYTHON_DATA_SOURCE_ERROR" in str(info.value)  # on the driver, before any task


def test_lookup_on_spark_equals_local(session: Any, spark_files: WrittenFiles) -> None:
    from pybloom_async.spark import lookup_on_spark
    from pybloom_async.spark.spark_types import spark_arrow_schema

    a, b = spark_files.prune_files
    root = str(a.parent)
    where = (
        f"id IN ({value(a, 0, 3, 'id')}, {value(b, 9, 0, 'id')}) "
        f"OR c_string = '{value(b, 4, 4, 'c_string')}'"
    )
    frame = lookup_on_spark(session, root, where, ["id", "c_string", "c_ts", "c_dec38"])
    local = lookup_sync(root, where, ["id", "c_string", "c_ts", "c_dec38"])
    expected = [
        {k: naive_utc(v) for k, v in row.items()}
        for row in local.cast(spark_arrow_schema(local.schema)).to_pylist()
    ]
    assert [r.asDict() for r in frame.collect()] == expected and len(expected) == 3
    assert lookup_on_spark(session, root, "id = -1").collect() == []


def test_lake_index_on_spark(
    session: Any, spark_files: WrittenFiles, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pybloom_async.io.base import SourceStats
    from pybloom_async.predicate import parse_predicate
    from pybloom_async.spark import build_lake_index_on_spark
    from pybloom_async.spark.scan import ReadSettings, file_schema, plan_read
    from pybloom_async.spark.spark_types import spark_arrow_schema

    lake = tmp_path / "lake"
    lake.mkdir()
    for i, path in enumerate(spark_files.prune_files * 3):
        shutil.copy(path, lake / f"part-{i}.parquet")
    built = {}
    for mode in ("values", "filters"):
        shutil.rmtree(lake / "_bloom_index", ignore_errors=True)
        local = build_lake_index_sync(str(lake), ["id", "c_string"], mode=mode)
        local_bytes = [Path(p).read_bytes() for p in local.segments]
        shutil.rmtree(lake / "_bloom_index")
        spark = build_lake_index_on_spark(session, str(lake), ["id", "c_string"], mode=mode)
        assert [Path(p).read_bytes() for p in spark.segments] == local_bytes, mode
        assert spark.files == local.files == 6 and spark.folded == local.folded
        assert spark.from_values == local.from_values and spark.errors == local.errors
        built[mode] = spark
    key = value(spark_files.prune_files[1], 5, 5, "id")
    where = f"id = {key}"
    settings = ReadSettings()
    schema, int96 = anyio.run(file_schema, str(lake), settings)
    stats = SourceStats()
    reads, _ = anyio.run(
        plan_read, str(lake), parse_predicate(where), spark_arrow_schema(schema, int96),
        settings, stats,
    )  # fmt: skip
    # The key is in one file, copied three times: the index rules the other three out
    # unread. Reads: the segment, one stripe, then each kept file's footer and filters
    # (these files' filters lie beyond the footer's read), against every file's without.
    assert len(reads) == 3 and stats.requests <= 2 + 3 * len(reads)
    segments = lake / "_bloom_index"
    shutil.move(segments, tmp_path / "away")
    without = SourceStats()
    anyio.run(
        plan_read, str(lake), parse_predicate(where), spark_arrow_schema(schema, int96),
        settings, without,
    )  # fmt: skip
    shutil.move(tmp_path / "away", segments)
    assert without.requests >= 2 * 6 > stats.requests - 2
    # The index option "none" (index_policy): the index is there, and not read.
    unindexed = SourceStats()
    anyio.run(
        plan_read, str(lake), parse_predicate(where), spark_arrow_schema(schema, int96),
        ReadSettings(lookup=LookupOptions(use_index="none")), unindexed,
    )  # fmt: skip
    assert unindexed.requests == without.requests
    none = session.read.format("pybloom").option("index", "none").load(str(lake)).where(where)
    assert rows(none) == rows(session.read.parquet(str(lake)).where(where))
    ours = session.read.format("pybloom").load(str(lake)).where(where)
    assert rows(ours) == rows(session.read.parquet(str(lake)).where(where)) and rows(ours)
    # A lookup over parquet-java's files (several row groups, page indexes): their footers
    # come from the index's digest, none is read.
    from pybloom_async.read.reader import BloomReader

    footer_reads: list[str] = []
    original = BloomReader._read_footer

    async def counted(self: BloomReader, source: Any) -> Any:
        footer_reads.append(source.path)
        return await original(self, source)

    monkeypatch.setattr(BloomReader, "_read_footer", counted)
    got = lookup_sync(str(lake), where, columns=["id", "c_string"])
    spark_rows = session.read.parquet(str(lake)).where(where).select("id", "c_string")
    mine = sorted((r["id"], r["c_string"]) for r in got.to_pylist())
    assert mine == sorted((r["id"], r["c_string"]) for r in spark_rows.collect())
    assert got.num_rows >= 3 and footer_reads == []


def test_add_filters_on_spark(session: Any, tmp_path: Path) -> None:
    import pyarrow as pa

    from pybloom_async.spark import add_bloom_filters_on_spark

    one, two = tmp_path / "one", tmp_path / "two"
    for root in (one, two):
        root.mkdir()
        for i in range(3):
            table = pa.table({"id": pa.array(range(i * 500, (i + 1) * 500), pa.int64())})
            pq.write_table(table, root / f"f{i}.parquet", row_group_size=100)
        (root / "bad.parquet").write_bytes(b"nope" * 10)
    got = {
        Path(r["file"]).name: r
        for r in add_bloom_filters_on_spark(session, str(two), ["id"]).collect()
    }
    assert got["bad.parquet"]["error"] and got["bad.parquet"]["written"] is None
    for i in range(3):
        name = f"f{i}.parquet"
        local = add_bloom_filters_sync(str(one / name), ["id"])
        assert (two / name).read_bytes() == (one / name).read_bytes()
        assert got[name]["written"] and got[name]["filters"] == len(local.filters) == 5
    table = tmp_path / "delta"
    (table / "_delta_log").mkdir(parents=True)
    shutil.copy(one / "f0.parquet", table / "f0.parquet")
    with pytest.raises(Exception, match="Delta table"):
        add_bloom_filters_on_spark(session, str(table), ["id"])
    assert (table / "f0.parquet").read_bytes() == (one / "f0.parquet").read_bytes()


def _write_delta(uri: Path, rows: int, per_commit: int, part: Callable[[int], str]) -> None:
    """A Delta table with deletion vectors enabled, written by deltalake in appends of
    ``per_commit`` rows: ``id`` (with a Bloom filter), ``s``, and ``p`` (``part(id)``), the
    partition column."""
    import pyarrow as pa

    deltalake = pytest.importorskip("deltalake")
    bloom = deltalake.BloomFilterProperties(set_bloom_filter_enabled=True, fpp=0.01, ndv=500)
    props = deltalake.WriterProperties(
        column_properties={"id": deltalake.ColumnProperties(bloom_filter_properties=bloom)}
    )
    for start in range(0, rows, per_commit):
        ids = list(range(start, start + per_commit))
        chunk = pa.table({"id": ids, "s": [f"s{i}" for i in ids], "p": [part(i) for i in ids]})
        deltalake.write_deltalake(
            uri, chunk, partition_by=["p"], mode="append", writer_properties=props,
            configuration={"delta.enableDeletionVectors": "true"},
        )  # fmt: skip


def test_delta_table_through_its_library(session: Any, tmp_path: Path) -> None:
    """Deletion vectors applied, partition columns filled; the table's folder as plain
    files is refused (its removed rows would come back)."""
    import pyarrow as pa

    deltalake = pytest.importorskip("deltalake")
    from support.delta_logs import commit_deletion_vector

    uri = tmp_path / "t"
    _write_delta(uri, 2000, 500, lambda i: "a" if i < 1000 else "b")
    dt = deltalake.DeltaTable(uri)
    first = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
    holder = next(a["path"] for a in first if a["min.id"] == 0)
    commit_deletion_vector(uri, holder, [2, 5])
    dt = deltalake.DeltaTable(uri)
    where = "id IN (1, 2, 5, 6, 1500)"
    frame = session.read.format("pybloom").option("table", "delta").load(str(uri))
    got = sorted((r["id"], r["s"], r["p"]) for r in frame.where(where).collect())
    local = lookup_sync(dt, where).to_pylist()
    assert got == sorted((r["id"], r["s"], r["p"]) for r in local)
    assert [g[0] for g in got] == [1, 6, 1500]
    older = session.read.format("pybloom").option("table", "delta").option("version", "0")
    assert sorted(r["id"] for r in older.load(str(uri)).where("id IN (2, 5, 600)").collect()) == [
        2,
        5,
    ]
    with pytest.raises(Exception, match="option\\('table', 'delta'\\)"):
        session.read.format("pybloom").load(str(uri)).collect()


def test_delta_table_with_deleted_rows(session: Any, tmp_path: Path) -> None:
    """Rows deleted by ``DeltaTable.delete`` (files rewritten) and by a deletion vector
    (applied by the tasks) never come back through the data source: its rows equal
    deltalake's own scan, with no filter, with pushed filters, with the where option
    (ranges and NOT), and the version before the delete still has them."""
    import pyarrow as pa

    deltalake = pytest.importorskip("deltalake")
    from support.delta_logs import commit_deletion_vector

    uri = tmp_path / "t"
    _write_delta(uri, 1200, 300, lambda i: "a" if i % 2 else "b")
    deltalake.DeltaTable(uri).delete("id % 7 = 3 OR (id >= 600 AND id < 650)")
    actions = pa.table(deltalake.DeltaTable(uri).get_add_actions(flatten=True)).to_pylist()
    holder = next(a["path"] for a in actions if a["partition.p"] == "a")
    ids = pq.read_table(uri / holder, columns=["id"]).column("id").to_pylist()
    gone = {ids[0], ids[4], ids[5]}
    commit_deletion_vector(uri, holder, [0, 4, 5])
    dt = deltalake.DeltaTable(uri)
    query = deltalake.QueryBuilder().register("t", dt)

    def scan(where: str | None) -> list[tuple[Any, ...]]:
        sql = "SELECT id, s, p FROM t" + ("" if where is None else f" WHERE {where}")
        got = pa.table(query.execute(sql))
        return sorted(zip(*(got.column(c).to_pylist() for c in ("id", "s", "p")), strict=True))

    def read(frame: Any) -> list[tuple[Any, ...]]:
        return sorted((r["id"], r["s"], r["p"]) for r in frame.collect())

    def load(**options: str) -> Any:  # a DataFrame loaded anew for each query
        reader = session.read.format("pybloom").option("table", "delta")
        for key, text in options.items():
            reader = reader.option(key, text)
        return reader.load(str(uri))

    live = scan(None)
    assert not ({3, 601} | gone) & {r[0] for r in live}
    assert len(live) == 1200 - len({i for i in range(1200) if i % 7 == 3 or 600 <= i < 650}) - 3
    assert read(load()) == live  # a scan: every live row, none deleted
    keys = ", ".join(map(str, sorted(gone | {3, 4, 10, 17, 601, 700, 1199})))
    for where in (f"id IN ({keys})", f"p = 'a' AND id IN ({keys})"):
        assert read(load().where(where)) == scan(where), where
    low, high = min(gone), max(gone)
    for where in (
        "id BETWEEN 590 AND 660", f"NOT (id >= {high + 1}) AND p != 'b'", "id > 1190",
        f"id BETWEEN {low} AND {high} AND NOT (id = {low + 2})",
    ):  # fmt: skip
        assert read(load(where=where)) == scan(where), where
    before = load(version="3").where(f"id IN (3, 601, {low})")
    assert sorted(r["id"] for r in before.collect()) == sorted({3, 601, low})
