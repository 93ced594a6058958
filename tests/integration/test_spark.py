"""PySpark integration: writer options, pruning and index building on executors.

* Writer options (no Spark): the exact keys, every rejected input, parquet-java's sizing.
* The traps the options document, checked on files our Spark writes with them: a column
  without NDV gets a max-size filter (``max_bytes``, 1 MiB by default) in a 1,000-row
  file that then weighs over 1 MiB; sized filters are exactly ``writer_filter_bytes``,
  per-column fpp included; INT96 timestamps get no filter while their chunk stays
  dictionary-encoded and one once the dictionary overflows; TIMESTAMP_MICROS gets one;
  one filter per row group per column whatever the row group holds.
* ``prune_on_spark`` over Spark's files of every type (one Spark job for ~20 predicates):
  every row group holding a probed value is kept (truth read with pyarrow), verdicts
  equal the local ``prune`` row for row, text predicates ship too, and pruning happens.
* Object store (moto): executors list nothing, read ``s3://`` with the options shipped
  to them; same verdicts as the local reader on the same URLs.
* No survivor: ``surviving_files`` is empty and ``read_surviving`` an empty DataFrame
  with the data's schema; no input at all: the verdict schema; unreadable files are
  kept with a reason, ``strict`` fails the job naming the file.
* Sidecar indexes built on executors are byte-equal to the local ones.

Spark jobs are slow on two cores: each test runs as few as it can. Spark's Python
workers must import this package, hence ``PYSPARK_PYTHON`` (set before the session
starts, unless the environment sets it).
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import os
import pickle
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.predicates import truth
from support.writers import SPARK_NDV, WrittenFiles

from pybloom_async import (
    And,
    Eq,
    FilterState,
    In,
    Or,
    PhysicalType,
    Predicate,
    PredicateError,
    Rule,
    col,
    parse_predicate,
    prune_sync,
    read_bloom_filters,
)
from pybloom_async.errors import InvalidArgumentError
from pybloom_async.io.base import FileInfo
from pybloom_async.io.store import StoreOptions
from pybloom_async.predicate import TextLiteral, literal_text
from pybloom_async.spark import (
    DEFAULT_WRITER_MAX_BYTES,
    bloom_writer_options,
    prune_on_spark,
    read_surviving,
    surviving_files,
    verdict_schema,
    writer_filter_bytes,
)
from pybloom_async.spark.jobs import _PruneTask

pq = pytest.importorskip("pyarrow.parquet")

MIB = 1024 * 1024


# --------------------------------------------------------------------------- helpers


def verdict_rows(verdicts: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Local verdicts as the DataFrame's rows."""
    return [(v.file, v.row_group, v.num_rows, v.kept, v.reason, v.rule.value) for v in verdicts]


def filters_of(path: Path | str) -> dict[tuple[int, str], Any]:
    return anyio.run(lambda: read_bloom_filters(path))


def same(a: Any, b: Any) -> bool:
    """SQL equality of a stored value and a probed one (0.0 = -0.0; NaN matches nothing)."""
    if a is None or b is None:
        return False
    if isinstance(a, float) and isinstance(b, float):
        return a == b
    return type(a) is type(b) and bool(a == b)


def matches(p: Predicate, row: dict[str, Any]) -> bool:
    """Whether one row satisfies the predicate (a column the file lacks matches nothing)."""
    if not isinstance(p, (Eq, In, And, Or)):  # ranges, NOT: SQL's three-valued truth
        return truth(p, row, lambda c, v: v.text if isinstance(v, TextLiteral) else v) is True
    if isinstance(p, Eq):
        if p.column not in row:
            return False
        if p.value is None:
            return p.null_safe and row[p.column] is None
        return same(row[p.column], p.value)
    if isinstance(p, In):
        return p.column in row and any(same(row[p.column], v) for v in p.values)
    if isinstance(p, And):
        return all(matches(c, row) for c in p.children)
    if isinstance(p, Or):
        return any(matches(c, row) for c in p.children)
    raise TypeError(p)


@functools.cache
def row_group_rows(path: Path) -> tuple[list[dict[str, Any]], ...]:
    """Every row of every row group, as pyarrow reads them back."""
    parquet = pq.ParquetFile(path)
    return tuple(parquet.read_row_group(rg).to_pylist() for rg in range(parquet.num_row_groups))


def holds_match(path: Path, row_group: int, where: Predicate) -> bool:
    return any(matches(where, row) for row in row_group_rows(path)[row_group])


def first_value(path: Path, row_group: int, column: str, start: int = 0) -> Any:
    """The first value from row ``start`` on that a probe can find (not null, not NaN)."""
    for row in row_group_rows(path)[row_group][start:]:
        v = row.get(column)
        if v is not None and not (isinstance(v, float) and math.isnan(v)):
            return v
    raise AssertionError(f"{path.name} rg {row_group}: no usable value of {column}")


def write_pyarrow_file(path: Path, rows: int = 2_000) -> Path:
    """A small file with a filter on ``id`` (pyarrow), for tests that need no Spark."""
    import pyarrow as pa

    table = pa.table({"id": pa.array(range(rows), pa.int64())})
    pq.write_table(
        table, path, row_group_size=rows // 4, bloom_filter_options={"id": {"ndv": rows}}
    )
    return path


# --------------------------------------------------------------------------- options, no Spark


def test_writer_options_keys() -> None:
    """List, list with ndv, mapping, fpp and max_bytes give parquet-java's keys exactly."""
    assert bloom_writer_options(["id"]) == {
        "parquet.bloom.filter.enabled#id": "true",
        "parquet.bloom.filter.fpp#id": "0.01",
    }
    assert bloom_writer_options(["id", "a.b"], ndv=5_000, fpp=0.001, max_bytes=65536) == {
        "parquet.bloom.filter.enabled#id": "true",
        "parquet.bloom.filter.fpp#id": "0.001",
        "parquet.bloom.filter.expected.ndv#id": "5000",
        "parquet.bloom.filter.enabled#a.b": "true",
        "parquet.bloom.filter.fpp#a.b": "0.001",
        "parquet.bloom.filter.expected.ndv#a.b": "5000",
        "parquet.bloom.filter.max.bytes": "65536",
    }
    assert bloom_writer_options({"id": 10, "email": None}, fpp=1e-5) == {
        "parquet.bloom.filter.enabled#id": "true",
        "parquet.bloom.filter.fpp#id": "1e-05",
        "parquet.bloom.filter.expected.ndv#id": "10",
        "parquet.bloom.filter.enabled#email": "true",
        "parquet.bloom.filter.fpp#email": "1e-05",
    }


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (("id",), {}, "not one str"),
        (([],), {}, "no column"),
        (({},), {}, "no column"),
        ((["id", "id"],), {}, "column given twice"),
        (([""],), {}, "non-empty str"),
        (([3],), {}, "non-empty str"),
        ((42,), {}, "list of names or a mapping"),
        (({"id": 10},), {"ndv": 10}, "both per column"),
        ((["id"],), {"ndv": 0}, "between 1 and"),
        ((["id"],), {"ndv": 2**31}, "between 1 and"),
        ((["id"],), {"ndv": True}, "positive int"),
        ((["id"],), {"ndv": 10.0}, "positive int"),
        (({"id": -1},), {}, "between 1 and"),
        ((["id"],), {"fpp": 0}, "between 0 and 1"),
        ((["id"],), {"fpp": 1.0}, "between 0 and 1"),
        ((["id"],), {"fpp": float("nan")}, "between 0 and 1"),
        ((["id"],), {"fpp": "0.01"}, "must be a float"),
        ((["id"],), {"max_bytes": 32}, "power of two from 64"),
        ((["id"],), {"max_bytes": 1000}, "power of two from 64"),
        ((["id"],), {"max_bytes": 128 * MIB}, "power of two from 64"),
        ((["id"],), {"max_bytes": 1.5}, "must be an int"),
    ],
)
def test_writer_options_reject(args: tuple[Any, ...], kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        bloom_writer_options(*args, **kwargs)


def test_writer_options_errors_name_the_column() -> None:
    with pytest.raises(InvalidArgumentError) as info:
        bloom_writer_options({"email": 0})
    assert "column 'email'" in str(info.value) and "value 0" in str(info.value)


def test_writer_filter_bytes() -> None:
    """parquet-java's sizing, worked by hand from BlockSplitBloomFilter.optimalNumOfBits."""
    # 1000 values at 1%: 9,683 bits -> 1,242 bytes -> 2,048 (the test files' filters).
    assert writer_filter_bytes(1_000) == 2_048
    assert writer_filter_bytes(600) == 1_024
    assert writer_filter_bytes(600, fpp=0.001) == 2_048
    assert writer_filter_bytes(1) == 32
    assert writer_filter_bytes(None) == DEFAULT_WRITER_MAX_BYTES == MIB
    assert writer_filter_bytes(None, max_bytes=65_536) == 65_536
    assert writer_filter_bytes(200_000) == 262_144
    assert writer_filter_bytes(200_000, max_bytes=65_536) == 65_536
    assert writer_filter_bytes(2**31 - 1) == MIB  # capped by the default max.bytes
    with pytest.raises(InvalidArgumentError):
        writer_filter_bytes(0)


# --------------------------------------------------------------------------- shipping, no Spark


def test_work_for_executors_pickles() -> None:
    """Predicates (objects and parsed text), options, listings and the task survive pickle."""
    where = (col("t") == dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)) | col("x").isin(
        [b"\x00", -0.0, float("inf")]
    )
    parsed = parse_predicate(
        "id = 42 AND (email IN ('a', 'it''s') OR d <=> NULL) AND NOT (x BETWEEN 1 AND 2 OR "
        "y NOT IN (3) OR z IS NOT NULL) AND t >= '2024-01-01' AND u != 0"
    )
    options = StoreOptions(endpoint="http://127.0.0.1:1", extra_config={"b": "1", "a": "2"})
    info = FileInfo("s3://b/k.parquet", 10, '"etag"', dt.datetime(2024, 1, 1))
    task = _PruneTask(parsed, options, False, 8, None, "none")
    for obj in (where, parsed, options, info, task):
        back = pickle.loads(pickle.dumps(obj))
        assert back == obj and str(back) == str(obj)
    assert pickle.loads(pickle.dumps(options))._cache_key() == options._cache_key()


def test_import_needs_no_pyspark() -> None:
    code = "import sys, pybloom_async, pybloom_async.spark; assert 'pyspark' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize("use_index", ["none", "sidecar"])
def test_partition_keeps_a_file_gone_since_listing(tmp_path: Path, use_index: str) -> None:
    """The task prunes the files the driver found, as found: one gone since (even a name a
    listing would take for a folder) is kept, unreadable, and costs only its own row."""
    good = write_pyarrow_file(tmp_path / "good.parquet")
    gone = str(tmp_path / "gone-since-listing")  # not *.parquet: a listing would fail
    task = _PruneTask(col("id") == 5, None, False, None, None, use_index)
    rows = list(task([str(good), gone]))
    expected = prune_sync([str(good)], col("id") == 5, use_index=use_index)
    assert rows[:-1] == verdict_rows(expected)
    assert rows[-1][:4] == (gone, None, None, True) and rows[-1][5] == "unreadable"
    assert "gone-since-listing" in rows[-1][4]
    if use_index == "none":  # (strict, the sidecar pass fails first on good's missing index)
        strict = _PruneTask(col("id") == 5, None, True, None, None, use_index)
        with pytest.raises(Exception, match="gone-since-listing"):
            list(strict([str(good), gone]))


def test_partition_fails_on_a_predicate_error(tmp_path: Path) -> None:
    """A literal that is not of its column's type is the user's error: the task fails
    with it, rather than keeping every file with it as a reason."""
    good = write_pyarrow_file(tmp_path / "good.parquet")
    task = _PruneTask(col("id") == "not a number", None, False, None, None, "none")
    with pytest.raises(PredicateError, match=r"good\.parquet"):
        list(task([str(good)]))


# --------------------------------------------------------------------------- Spark

spark = pytest.mark.spark


def _write(session: Any, out: Path, rows: int, exprs: dict[str, str], opts: dict[str, str]) -> Path:
    frame = session.range(rows).selectExpr(*(f"{e} as {n}" for n, e in exprs.items()))
    frame.coalesce(1).write.mode("overwrite").options(**opts).parquet(str(out))
    (path,) = sorted(out.glob("part-*.parquet"))
    return path


@spark
def test_writer_options_on_spark(spark_session: Any, tmp_path: Path) -> None:
    """The options give the filters they promise, and the documented traps are real."""
    ts = "timestamp_micros(1600000000000000 + {} * 1234567)"
    micros_opts = {
        **bloom_writer_options(["ts"], ndv=1_000),
        **bloom_writer_options({"s": None}),
        **bloom_writer_options(["k"], ndv=600, fpp=0.001),
    }
    int96_opts = {
        **bloom_writer_options(["ts_few", "ts_many"], ndv=200_000),
        **bloom_writer_options({"u": None}, max_bytes=65_536),
    }
    spark_session.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    try:
        micros = _write(
            spark_session,
            tmp_path / "micros",
            1_000,
            {"id": "id", "ts": ts.format("id"), "s": "concat('k', id)", "k": "id * 7"},
            micros_opts,
        )
        spark_session.conf.set("spark.sql.parquet.outputTimestampType", "INT96")
        int96 = _write(
            spark_session,
            tmp_path / "int96",
            200_000,
            {
                "id": "id",
                "ts_few": ts.format("(id % 1000)"),
                "ts_many": ts.format("id"),
                "u": "id * 3",
            },
            int96_opts,
        )
    finally:
        spark_session.conf.unset("spark.sql.parquet.outputTimestampType")

    # TIMESTAMP_MICROS, one row group of 1,000 rows.
    found = filters_of(micros)
    assert found[(0, "id")].state is FilterState.ABSENT  # not asked for
    sizes = {c: found[(0, c)].filter.num_bytes for c in ("ts", "s", "k")}
    assert writer_filter_bytes(600) != writer_filter_bytes(600, fpp=0.001)  # fpp shows
    assert writer_filter_bytes(None) == MIB
    assert sizes == {
        "ts": writer_filter_bytes(1_000),
        "s": MIB,  # no ndv: the maximum, 1 MiB
        "k": writer_filter_bytes(600, fpp=0.001),
    }
    table = pq.read_table(micros)
    ids = table.column("id").to_numpy()
    micros_values = table.column("ts").cast("int64").to_numpy()
    assert found[(0, "ts")].filter.check_many(micros_values, PhysicalType.INT64).all()
    assert found[(0, "k")].filter.check_many(ids * 7, PhysicalType.INT64).all()
    strings = table.column("s").to_pylist()
    assert found[(0, "s")].filter.check_many(strings, PhysicalType.BYTE_ARRAY).all()
    # Tiny file bloat: the unsized filter is most of the file.
    meta = pq.ParquetFile(micros).metadata
    data_bytes = sum(meta.row_group(0).column(i).total_compressed_size for i in range(4))
    assert micros.stat().st_size > MIB > 50 * data_bytes

    # INT96, one row group of 200,000 rows.
    assert pq.ParquetFile(int96).metadata.num_row_groups == 1
    found = filters_of(int96)
    encodings = {
        c.path_in_schema: set(c.encodings)
        for c in (pq.ParquetFile(int96).metadata.row_group(0).column(i) for i in range(4))
    }
    # 1,000 distinct timestamps: the chunk stays dictionary-encoded, no filter.
    assert "PLAIN" not in encodings["ts_few"]
    assert found[(0, "ts_few")].state is FilterState.ABSENT
    # 200,000 distinct: the dictionary overflows, pages fall back to PLAIN, a filter.
    assert "PLAIN" in encodings["ts_many"]
    assert found[(0, "ts_many")].state is FilterState.OK
    # max_bytes caps sized filters and sizes unsized ones.
    assert writer_filter_bytes(200_000) > 65_536
    assert found[(0, "ts_many")].filter.num_bytes == 65_536
    assert found[(0, "u")].filter.num_bytes == 65_536


@spark
def test_one_filter_per_row_group_and_column(spark_files: WrittenFiles) -> None:
    """Every row group carries its own filter per column, sized by ndv, not by its rows."""
    for path in spark_files.prune_files:
        meta = pq.ParquetFile(path).metadata
        rows = {meta.row_group(rg).num_rows for rg in range(meta.num_row_groups)}
        assert meta.num_row_groups > 10 and len(rows) > 1  # row groups of different sizes
        found = filters_of(path)
        for column in pq.ParquetFile(path).schema_arrow.names:
            reads = [found[(rg, column)] for rg in range(meta.num_row_groups)]
            if column in spark_files.unfiltered:
                assert all(r.state is FilterState.ABSENT for r in reads), column
                continue
            sizes = {r.filter.num_bytes for r in reads if r.filter is not None}
            assert sizes == {writer_filter_bytes(SPARK_NDV)}, (path.name, column, sizes)
            assert all(r.state is FilterState.OK for r in reads), column


def _predicates(written: WrittenFiles) -> list[tuple[Predicate | str, bool]]:
    """(predicate, whether it must prune something): one IN per column, specials, AND/OR, text.

    Each IN holds values of three row groups of each main file; the INT96 file lacks
    those columns (kept: missing column). Text forms are parsed on the driver.
    """
    main = written.prune_files
    out: list[tuple[Predicate | str, bool]] = []
    for column in pq.ParquetFile(main[0]).schema_arrow.names:
        values: dict[Any, Any] = {}
        for path in main:
            last = pq.ParquetFile(path).num_row_groups - 1
            for rg in (0, last // 2, last):
                # From the middle: the first rows hold the special values (id 0..40).
                v = first_value(path, rg, column, start=len(row_group_rows(path)[rg]) // 2)
                values.setdefault((type(v), v), v)
        # c_bool: row groups hold one value each, and the list holds both.
        out.append((col(column).isin(list(values.values())), column != "c_bool"))
    (int96,) = (p for p in written.files if p not in main)
    # INT96 has no filter when dictionary-encoded, and no sort order for statistics.
    out.append((col("c_ts96") == first_value(int96, 0, "c_ts96"), False))
    # With the dictionary off it has one: the file (one row group) lacks the neighbour.
    plain = first_value(int96, 0, "c_ts96_plain")
    out.append((col("c_ts96_plain") == plain, False))
    out.append((col("c_ts96_plain") == plain + dt.timedelta(milliseconds=1), True))
    a, b = written.key_columns
    row = row_group_rows(main[1])[3][7]
    other = row_group_rows(main[0])[5][2]
    stored = [r for path in main for g in row_group_rows(path) for r in g]
    top = max(r[a] for r in stored if r[a] is not None)
    least = min(r[b] for r in stored if r[b] is not None)
    out += [
        # Ranges and NOT, by parquet-java's statistics.
        (col(a) > top, True),
        (~(col(a) <= top), True),
        (col(a) >= top, True),  # only the row group holding it
        (f"{b} < {literal_text(least)} OR {a} BETWEEN {top} AND {top}", True),
        (col(a) != top, False),
    ]
    out += [
        (col("c_float") == 0.0, True),  # keeps the row group holding only -0.0 too
        (col("c_double") == -0.0, True),
        (col("c_double") == float("nan"), False),  # NaN never prunes
        (col("c_string").isin(["", "ünïcødé", "it's", "🦆🚀"]), True),
        (Eq("c_nullable_int", None, null_safe=True), False),  # every row group has nulls
        (((col(a) == row[a]) & (col(b) == row[b])) | (col("c_int") == other["c_int"]), True),
        ((col(a) == row[a]) & (col(b) == other[b]), True),  # two rows' values
        # Text: a decimal as written, a quoted ISO timestamp and date, X'..' binary.
        (f"c_dec38 = {row['c_dec38']} OR c_ts = '{other['c_ts'].isoformat()}'", True),
        (
            f"c_date IN ('{row['c_date']}', '{other['c_date']}')"
            f" AND c_binary = X'{row['c_binary'].hex()}'",
            True,
        ),
    ]
    return out


@spark
def test_prune_on_spark_equals_local_and_keeps_every_match(
    spark_session: Any, spark_files: WrittenFiles
) -> None:
    """All types: zero false negatives, equal to the local prune row for row; one job."""
    from pyspark.sql import functions as F

    files = [str(p) for p in spark_files.files]
    cases = _predicates(spark_files)
    frames = [
        prune_on_spark(spark_session, files, where, num_partitions=2).withColumn("q", F.lit(i))
        for i, (where, _) in enumerate(cases)
    ]
    assert frames[0].drop("q").schema == verdict_schema()
    union = functools.reduce(lambda x, y: x.unionByName(y), frames)
    got: dict[int, list[tuple[Any, ...]]] = {i: [] for i in range(len(cases))}
    for r in union.collect():
        got[r["q"]].append(tuple(r)[:-1])

    for i, (where, must_prune) in enumerate(cases):
        local = prune_sync(files, where)
        assert got[i] == verdict_rows(local), where
        predicate = parse_predicate(where) if isinstance(where, str) else where
        for v in local:
            assert v.row_group is not None, v  # every file is readable
            if holds_match(Path(v.file), v.row_group, predicate):
                assert v.kept, f"{where}: {Path(v.file).name} rg {v.row_group} holds a match"
        excluded = sum(not v.kept for v in local)
        assert (excluded > 0) == must_prune, (str(where), excluded)


@spark
@pytest.mark.servers
def test_prune_on_spark_object_store(
    spark_session: Any, spark_files: WrittenFiles, s3_server: Any
) -> None:
    """Executors read s3:// with the options shipped to them; the driver lists the prefix."""
    for path in spark_files.prune_files:
        s3_server.put(f"spark-prune/{path.name}", path.read_bytes())
    s3_server.put("spark-prune/_SUCCESS", b"")
    prefix = s3_server.url("spark-prune/")
    row = row_group_rows(spark_files.prune_files[1])[4][3]
    where = (col("c_long") == row["c_long"]) | col("c_string").isin([row["c_string"], "absent"])
    got = [
        tuple(r)
        for r in prune_on_spark(spark_session, prefix, where, options=s3_server.options).collect()
    ]
    assert got == verdict_rows(prune_sync(prefix, where, options=s3_server.options))
    local = verdict_rows(prune_sync([str(p) for p in spark_files.prune_files], where))
    assert [(Path(r[0]).name, *r[1:]) for r in got] == [(Path(r[0]).name, *r[1:]) for r in local]
    assert any(r[3] for r in got) and not all(r[3] for r in got)
    assert surviving_files(
        prune_on_spark(spark_session, prefix, where, options=s3_server.options)
    ) == [s3_server.url(f"spark-prune/{spark_files.prune_files[1].name}")]


@spark
def test_surviving_files_and_empty_results(spark_session: Any, spark_files: WrittenFiles) -> None:
    """Only matching files are read; no survivor gives an empty frame with the data's schema."""
    files = [str(p) for p in spark_files.prune_files]
    value = row_group_rows(spark_files.prune_files[1])[3][0]["id"]
    verdicts = prune_on_spark(spark_session, files, col("id") == value).cache()
    assert surviving_files(verdicts) == [files[1]]  # ids are sorted: statistics decide
    assert read_surviving(spark_session, verdicts).where(f"id = {value}").count() == 1

    nothing = prune_on_spark(spark_session, files, col("id") == -1)
    assert surviving_files(nothing) == []
    empty = read_surviving(spark_session, nothing)
    assert empty.schema == spark_session.read.parquet(*files).schema
    assert empty.collect() == []

    # No input file at all: the verdict schema, and the data's schema only when given.
    none = prune_on_spark(spark_session, [], col("id") == 1)
    assert none.schema == verdict_schema() and none.collect() == []
    assert surviving_files(none) == []
    with pytest.raises(InvalidArgumentError, match="pass schema="):
        read_surviving(spark_session, none)
    given = read_surviving(spark_session, none, schema="id BIGINT, name STRING")
    assert given.columns == ["id", "name"] and given.collect() == []


@spark
def test_unreadable_files_are_kept(
    spark_session: Any, spark_files: WrittenFiles, tmp_path: Path
) -> None:
    """Damaged, foreign and missing files get a kept row with the reason; strict fails."""
    lake = tmp_path / "lake"
    lake.mkdir()
    shutil.copy(spark_files.prune_files[0], lake / "good.parquet")
    (lake / "garbage.parquet").write_bytes(b"not a parquet file, only text" * 10)
    data = spark_files.prune_files[1].read_bytes()
    (lake / "truncated.parquet").write_bytes(data[: len(data) // 2])
    missing = str(tmp_path / "missing.parquet")
    where = col("id") == 5
    paths = [str(lake), missing]
    rows = [
        tuple(r) for r in prune_on_spark(spark_session, paths, where, num_partitions=2).collect()
    ]
    assert rows == verdict_rows(prune_sync(paths, where))
    bad = {Path(r[0]).name: r for r in rows if r[1] is None}
    assert sorted(bad) == ["garbage.parquet", "missing.parquet", "truncated.parquet"]
    for r in bad.values():
        assert r[3] is True and r[5] == Rule.UNREADABLE.value and "file not pruned" in r[4]
    assert {Path(r[0]).name for r in rows if r[1] is not None} == {"good.parquet"}

    with pytest.raises(Exception) as info:
        prune_on_spark(spark_session, paths, where, on_error="raise", num_partitions=1).collect()
    text = str(info.value)
    assert re.search(r"pybloom_async\.\w+Error", text), text[-2000:]  # our error, by its path
    assert any(name in text for name in bad), text[-2000:]

    # Mistakes found on the driver, before any job.
    with pytest.raises(PredicateError):
        prune_on_spark(spark_session, paths, "id = = 3")
    with pytest.raises(Exception, match="no-such-dir"):
        prune_on_spark(spark_session, str(tmp_path / "no-such-dir"), where)
    with pytest.raises(InvalidArgumentError, match="num_partitions"):
        prune_on_spark(spark_session, paths, where, num_partitions=0)


# --------------------------------------------------------------------------- sidecar indexes


@spark
def test_sidecar_index_on_spark(
    spark_session: Any, spark_files: WrittenFiles, tmp_path: Path
) -> None:
    """Indexes built on executors are the local ones, byte for byte; pruning with them
    on Spark equals the local prune_with_index and keeps every match."""
    from pyspark.sql import functions as F

    from pybloom_async.index.build import build_index_sync
    from pybloom_async.index.format import index_location
    from pybloom_async.index.prune import prune_with_index_sync
    from pybloom_async.spark import build_index_on_spark, index_build_schema

    main = spark_files.prune_files
    lake = tmp_path / "lake"
    lake.mkdir()
    shutil.copy(main[0], lake / "a.parquet")
    shutil.copy(main[1], lake / "b.parquet")
    shutil.copy(main[0], lake / "c.parquet")  # made stale below
    (lake / "garbage.parquet").write_bytes(b"not parquet" * 20)
    names = pq.ParquetFile(main[0]).schema_arrow.names
    columns = [c for c in names if c != "c_bool"]  # BOOLEAN cannot be indexed

    built = build_index_on_spark(spark_session, str(lake), columns, num_partitions=2)
    assert built.schema == index_build_schema()
    rows = {Path(r["file"]).name: r for r in built.collect()}
    assert sorted(rows) == ["a.parquet", "b.parquet", "c.parquet", "garbage.parquet"]
    assert rows["garbage.parquet"]["error"] and rows["garbage.parquet"]["index_bytes"] is None
    on_spark: dict[str, bytes] = {}
    for name in ("a.parquet", "b.parquet", "c.parquet"):
        r = rows[name]
        assert r["error"] is None and r["columns"] == columns, r
        assert r["num_rows"] == pq.ParquetFile(lake / name).metadata.num_rows
        on_spark[name] = Path(index_location(str(lake / name))).read_bytes()
        assert r["index"] == index_location(str(lake / name))
        assert r["index_bytes"] == len(on_spark[name])

    local = build_index_sync(str(lake), columns)  # rewrites the same indexes
    assert [tuple(rows[Path(b.file).name]) for b in local] == [
        (b.file, b.index, list(b.columns), b.num_rows, b.index_bytes, b.error) for b in local
    ]
    for name, data in on_spark.items():
        assert Path(index_location(str(lake / name))).read_bytes() == data, name

    # c.parquet changes after indexing (same bytes, new mtime): its index is stale.
    stat = (lake / "c.parquet").stat()
    os.utime(lake / "c.parquet", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    b_row = row_group_rows(lake / "b.parquet")[6][11]
    a_row = row_group_rows(lake / "a.parquet")[2][5]
    wheres: list[Predicate | str] = [
        col("c_long") == b_row["c_long"],
        col("c_string").isin([b_row["c_string"], a_row["c_string"], "absent"]),
        (col("c_dec38") == b_row["c_dec38"]) | (col("c_ts") == a_row["c_ts"]),
        (col("c_date") == b_row["c_date"]) & (col("c_binary") == b_row["c_binary"]),
        col("c_float") == 0.0,
        Eq("c_nullable_int", None, null_safe=True),
        Eq("id", None, null_safe=True),  # no nulls: every index prunes its file
        f"c_int = {a_row['c_int']} OR c_dict = 'no such category'",
        col("c_bool") == True,  # noqa: E712  (not indexed: every file kept, no_index)
    ]
    frames = [
        prune_on_spark(spark_session, str(lake), w, use_index=True).withColumn("q", F.lit(i))
        for i, w in enumerate(wheres)
    ]
    got: dict[int, list[tuple[Any, ...]]] = {i: [] for i in range(len(wheres))}
    for r in functools.reduce(lambda x, y: x.unionByName(y), frames).collect():
        got[r["q"]].append(tuple(r)[:-1])
    rules: set[str] = set()
    for i, where in enumerate(wheres):
        expected = prune_with_index_sync(str(lake), where)
        assert got[i] == verdict_rows(expected), where
        predicate = parse_predicate(where) if isinstance(where, str) else where
        for v in expected:
            rules.add(v.rule.value)
            path = Path(v.file)
            if path.name == "garbage.parquet":
                assert v.kept
            elif v.row_group is None:
                groups = range(len(row_group_rows(path)))
                assert v.kept or not any(holds_match(path, g, predicate) for g in groups), v
            else:
                assert v.kept or not holds_match(path, v.row_group, predicate), v
    assert "sidecar_index" in rules, rules
    # id <=> NULL: a and b have no null id, their indexes drop them; c's index is
    # stale, so c's row groups are decided in the file (no nulls there either).
    by_name: dict[str, list[tuple[Any, ...]]] = {}
    for r in got[wheres.index(Eq("id", None, null_safe=True))]:
        by_name.setdefault(Path(r[0]).name, []).append(r)
    for name in ("a.parquet", "b.parquet"):
        ((_, rg, _, kept, _, rule),) = by_name[name]
        assert (rg, kept, rule) == (None, False, "sidecar_index")
    assert len(by_name["c.parquet"]) == pq.ParquetFile(lake / "c.parquet").num_row_groups
    assert all(r[1] is not None and not r[3] for r in by_name["c.parquet"])
    ((*_, kept, _, rule),) = by_name["garbage.parquet"]
    assert kept and rule == "unreadable"

    # A key of b only: the indexes drop a, c is stale (kept, then pruned by row group
    # statistics), garbage cannot be read (kept).
    verdicts = prune_on_spark(spark_session, str(lake), col("id") == b_row["id"], use_index=True)
    assert surviving_files(verdicts) == [str(lake / "b.parquet"), str(lake / "garbage.parquet")]


# --------------------------------------------------------------------------- one-line errors

TRACEBACK = "Traceback (most recent call last)"


@spark
def test_job_errors_reach_the_user_in_one_line(spark_session: Any, tmp_path: Path) -> None:
    """An error of ours in a task of prune_on_spark, the index builds or add_filters
    reaches the user as its one line inside Spark's exception; ``traceback=True`` keeps
    the Python traceback."""
    from pybloom_async.spark import (
        add_bloom_filters_on_spark,
        build_index_on_spark,
        build_lake_index_on_spark,
    )

    lake = tmp_path / "lake"
    lake.mkdir()
    pa = pytest.importorskip("pyarrow")
    pq.write_table(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), lake / "a.parquet")
    (lake / "garbage.parquet").write_bytes(b"not a parquet file, only text" * 10)
    jobs = {
        "prune_on_spark": lambda tb: prune_on_spark(
            spark_session, str(lake), "id = 2", on_error="raise", num_partitions=1, traceback=tb
        ).collect(),
        "build_index_on_spark": lambda tb: build_index_on_spark(
            spark_session, str(lake), ["id"], on_error="raise", num_partitions=1, traceback=tb
        ).collect(),
        "build_lake_index_on_spark": lambda tb: build_lake_index_on_spark(
            spark_session, str(lake), ["id"], on_error="raise", num_partitions=1, traceback=tb
        ),
        "add_bloom_filters_on_spark": lambda tb: add_bloom_filters_on_spark(
            spark_session, str(lake), ["id"], on_error="raise", num_partitions=1, traceback=tb
        ).collect(),
    }
    for name, job in jobs.items():
        for traceback in (False, True):
            with pytest.raises(Exception, match=r"garbage\.parquet") as info:
                job(traceback)
            text = str(info.value)
            assert re.search(r"pybloom_async\.\w+Error", text), (name, text[-2000:])
            assert (TRACEBACK in text) is traceback, (name, traceback, text[-2000:])
        with pytest.raises(InvalidArgumentError, match="traceback must be True or False"):
            job("yes")


@spark
def test_prune_on_spark_uses_the_lake_index_as_prune_does(
    spark_session: Any, tmp_path: Path
) -> None:
    """One index policy: by default the lake index under the directory rules files out on
    the driver, and the rows are the local prune's, in file order; ``"none"`` and the older
    ``False`` read the files' own filters only."""
    import pyarrow as pa

    from pybloom_async import build_lake_index_sync

    lake = tmp_path / "lake"
    lake.mkdir()
    for i in range(4):
        ids = pa.array(range(1000 * i, 1000 * i + 100), pa.int64())
        options = {"id": {"ndv": 100, "fpp": 0.01}}
        pq.write_table(pa.table({"id": ids}), lake / f"f{i}.parquet", bloom_filter_options=options)
    build_lake_index_sync(str(lake), ["id"])
    where = col("id") == 2050
    got = [tuple(r) for r in prune_on_spark(spark_session, str(lake), where).collect()]
    assert got == verdict_rows(prune_sync(str(lake), where))
    assert [r[5] for r in got].count("lake_index") == 3
    files_only = prune_on_spark(spark_session, str(lake), where, use_index="none")
    none = [tuple(r) for r in files_only.collect()]
    assert none == verdict_rows(prune_sync(str(lake), where, use_index="none"))
    old = prune_on_spark(spark_session, str(lake), where, use_index=False).collect()
    assert [tuple(r) for r in old] == none


def test_index_task_reports_a_file_gone_since_listing(tmp_path: Path) -> None:
    """The index task builds the files the driver found, as found: one gone since (a name a
    listing would take for a folder) is its own row's error; strict fails the task."""
    from pybloom_async.spark.indexes import _IndexTask

    good = write_pyarrow_file(tmp_path / "good.parquet")
    gone = str(tmp_path / "gone-since-listing")  # not *.parquet: a listing would fail
    task = _IndexTask(("id",), 0.01, None, None, False, None)
    rows = {r[0]: r for r in task([str(good), gone])}
    assert rows[str(good)][5] is None and rows[str(good)][4]
    assert rows[gone][4] is None and "no such file" in rows[gone][5]
    strict = _IndexTask(("id",), 0.01, None, None, True, None)
    with pytest.raises(Exception, match="gone-since-listing"):
        list(strict([str(good), gone]))
