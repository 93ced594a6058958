"""Hive folders and one-line errors in the ``pybloom`` data source and ``lookup_on_spark``
(``-m spark``).

* A ``dt=...`` lake written by pyarrow (``write_to_dataset``) and one written by Spark
  (``partitionBy("dt", "hr")``, NULLs as ``__HIVE_DEFAULT_PARTITION__``): the partition
  columns are in the schema, typed as the local lookup types them (``spark.read.parquet``
  gives an integer folder INT where the local rule gives BIGINT: the ``partitioning``
  option types it as Spark does); the rows equal ``spark.read.parquet``'s for an unfiltered
  read, a key, a key AND a date, and a date range, by the ``where`` option and by Spark's
  ``.where``; ``lookup_on_spark`` gives the local lookup's rows. A bad ``partitioning``
  option fails in one line.
* Without Spark: folders pruned on the driver (a file of another date is never planned,
  nor opened), partition values filled on the executor, a file the driver could not read
  too.
* Our errors, on the driver or in a task, reach the user as their one line inside
  Spark's exception, with no Python traceback unless the ``traceback`` option asks for it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from pybloom_async import LookupOptions, lookup_sync

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("pyspark")

from pybloom_async.errors import (  # noqa: E402
    InvalidArgumentError,
    ParquetFormatError,
    SchemaMismatchError,
)
from pybloom_async.predicate import parse_predicate  # noqa: E402
from pybloom_async.spark.one_line import HIDE_VARIABLE, one_line  # noqa: E402
from pybloom_async.spark.reading import read_task  # noqa: E402
from pybloom_async.spark.scan import (  # noqa: E402
    ReadSettings,
    ReadTask,
    file_schema,
    plan_read,
)
from pybloom_async.spark.source_options import SourceOptions  # noqa: E402
from pybloom_async.spark.spark_types import spark_arrow_schema  # noqa: E402

TRACEBACK = "Traceback (most recent call last)"
DAYS = [dt.date(2024, 1, 1) + dt.timedelta(days=d) for d in range(4)]
ROWS = 2_000


def _table() -> Any:
    ids = list(range(ROWS))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "v": pa.array([f"v{i % 97}" for i in ids]),
            "dt": pa.array([DAYS[i % len(DAYS)] for i in ids], pa.date32()),
        }
    )


@pytest.fixture(scope="module")
def pyarrow_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``dt=YYYY-MM-DD/`` folders, two files each, written by pyarrow."""
    root = tmp_path_factory.mktemp("hive-pyarrow") / "lake"
    table = _table()
    for half in (0, 1):
        part = table.slice(half * ROWS // 2, ROWS // 2)
        pq.write_to_dataset(
            part,
            str(root),
            partition_cols=["dt"],
            basename_template=f"part-{half}-{{i}}.parquet",
            row_group_size=200,
        )
    return root


@pytest.fixture(scope="module")
def session(spark_session: Any) -> Any:
    import pybloom_async.spark

    pybloom_async.spark.register(spark_session)
    return spark_session


@pytest.fixture(scope="module")
def spark_lake(session: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``dt=.../hr=.../`` folders written by Spark's ``partitionBy``, NULL dates among them."""
    root = tmp_path_factory.mktemp("hive-spark") / "lake"
    frame = session.range(ROWS).selectExpr(
        "id",
        "concat('v', CAST(id % 97 AS STRING)) AS v",
        "CASE WHEN id % 10 = 9 THEN NULL ELSE date_add(DATE'2024-01-01', CAST(id % 4 AS INT)) "
        "END AS dt",
        "CAST(id % 3 AS INT) AS hr",
    )
    frame.repartition(2).write.partitionBy("dt", "hr").parquet(str(root))
    return root


def rows(frame: Any) -> list[str]:
    return sorted(repr(tuple(r)) for r in frame.collect())


def truth(session: Any, root: Path, where: str | None) -> list[str]:
    frame = session.read.parquet(str(root))
    return rows(frame if where is None else frame.where(where))


WHERES = [
    None,
    "id = 1234",
    "id = 1234 AND dt = DATE'2024-01-03'",
    "id = 1234 AND dt = DATE'2024-01-02'",  # no row: the date rules the key's file out
    "dt >= DATE'2024-01-02' AND dt < DATE'2024-01-04'",
    "id IN (5, 6, 7, 1999) AND dt > DATE'2024-01-01'",
]


def ours(where: str) -> str:
    """A Spark filter in the where option's text form (a date is a quoted text there)."""
    return where.replace("DATE'", "'")


@pytest.mark.spark
@pytest.mark.parametrize("writer", ["pyarrow", "spark"])
def test_hive_lake_rows_equal_sparks_reader(
    session: Any, writer: str, pyarrow_lake: Path, spark_lake: Path
) -> None:
    root = pyarrow_lake if writer == "pyarrow" else spark_lake
    theirs = session.read.parquet(str(root)).schema
    loaded = session.read.format("pybloom").load(str(root))
    if writer == "pyarrow":
        assert loaded.schema == theirs
    else:
        # An integer folder: BIGINT by the local rule, INT by Spark's; the option types it.
        assert (
            [f.name for f in loaded.schema] == [f.name for f in theirs] == ["id", "v", "dt", "hr"]
        )
        assert loaded.schema["hr"].dataType.typeName() == "long"
        assert theirs["hr"].dataType.typeName() == "integer"
        typed = json.dumps({"dt": "date", "hr": "int32"})
        given = session.read.format("pybloom").option("partitioning", typed).load(str(root))
        assert given.schema == theirs
        assert rows(given.where("hr = 2 AND id < 40")) == truth(session, root, "hr = 2 AND id < 40")
    for where in WHERES:
        expected = truth(session, root, where)
        assert expected or "2024-01-02'" in str(where), where
        loaded = session.read.format("pybloom").load(str(root))
        if where is None:
            assert rows(loaded) == expected
            continue
        assert rows(loaded.where(where)) == expected, where
        option = session.read.format("pybloom").option("where", ours(where))
        assert rows(option.load(str(root))) == expected, where


@pytest.mark.spark
@pytest.mark.parametrize("writer", ["pyarrow", "spark"])
def test_hive_lake_through_lookup_on_spark(
    session: Any, writer: str, pyarrow_lake: Path, spark_lake: Path
) -> None:
    from pybloom_async.spark import lookup_on_spark

    root = pyarrow_lake if writer == "pyarrow" else spark_lake
    for where in WHERES[1:]:
        text = ours(where)
        frame = lookup_on_spark(session, str(root), text)
        assert "dt" in frame.columns, where
        assert rows(frame) == truth(session, root, where), where
        local = lookup_sync(str(root), text)
        assert frame.count() == local.num_rows and set(frame.columns) == set(local.column_names)
    plain = lookup_on_spark(session, str(root), "id = 1234", partitioning=None)
    assert "dt" not in plain.columns and plain.count() == 1
    options = LookupOptions(partitioning=None, page_index=False)
    same = lookup_on_spark(session, str(root), "id = 1234", lookup=options)
    assert same.columns == plain.columns and same.count() == 1
    with pytest.raises(InvalidArgumentError, match=r"lookup_on_spark\(\) got page_index twice"):
        lookup_on_spark(session, str(root), "id = 1234", lookup=options, page_index=True)


@pytest.mark.spark
def test_bad_partitioning_option_in_one_line(session: Any, pyarrow_lake: Path) -> None:
    for text, message in [
        ("maybe", "option partitioning must be"),
        ('{"dt": "datetime"}', "'datetime' is not a partition column type"),
    ]:
        with pytest.raises(Exception, match=message) as info:
            session.read.format("pybloom").option("partitioning", text).load(str(pyarrow_lake))
        assert TRACEBACK not in str(info.value)
    plain = session.read.format("pybloom").option("partitioning", "none").load(str(pyarrow_lake))
    assert "dt" not in plain.columns


def _mistakes(session: Any, root: Path, bad: Path) -> list[tuple[Any, str]]:
    def load(**options: str) -> Any:
        return session.read.format("pybloom").options(**options)

    return [
        (lambda o: load(**o).option("where", "id = 'abc'").load(str(root)).collect(),
         r"PredicateError: 'abc' is not a value of this column"),
        (lambda o: load(**o).option("where", "nope = 1").load(str(root)).collect(),
         "PredicateError: no file read has this column"),
        (lambda o: load(**o).option("strict", "true").load(str(bad)).where("id = 1").collect(),
         r"ParquetFormatError: not a Parquet file.*garbage\.parquet"),
        # The default policy: the driver fails the read naming it.
        (lambda o: load(**o).load(str(bad)).where("id = 1").collect(),
         r"ParquetFormatError: not a Parquet file.*garbage\.parquet"),
    ]  # fmt: skip


@pytest.mark.spark
def test_errors_reach_the_user_in_one_line(
    session: Any, pyarrow_lake: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    pq.write_table(pa.table({"id": [1, 2]}), bad / "good.parquet")
    (bad / "garbage.parquet").write_bytes(b"not a parquet file" * 20)
    for run, message in _mistakes(session, pyarrow_lake, bad):
        with pytest.raises(Exception, match=message) as info:
            run({})
        assert TRACEBACK not in str(info.value), message
        with pytest.raises(Exception, match=message) as info:
            run({"traceback": "true"})
        assert TRACEBACK in str(info.value), message
    with pytest.raises(Exception, match="option traceback must be true or false") as info:
        session.read.format("pybloom").option("traceback", "yes").load(str(bad)).collect()
    assert TRACEBACK not in str(info.value)


@pytest.mark.spark
def test_lookup_on_spark_task_errors_in_one_line(session: Any, tmp_path: Path) -> None:
    from pybloom_async.spark import lookup_on_spark

    root = tmp_path / "lake"
    root.mkdir()
    pq.write_table(pa.table({"id": [1, 2]}), root / "a.parquet")
    for traceback in (False, True):
        frame = lookup_on_spark(session, str(root), "id = 1", traceback=traceback)
        # Replaced after planning: the task refuses to mix versions.
        pq.write_table(pa.table({"id": [1, 2, 3]}), root / "a.parquet")
        with pytest.raises(Exception, match=r"SourceError: .*a\.parquet") as info:
            frame.collect()
        assert (TRACEBACK in str(info.value)) is traceback
        pq.write_table(pa.table({"id": [1, 2]}), root / "a.parquet")


# ---- without Spark ------------------------------------------------------------------------


def _plan(root: Path, where: str | None, settings: ReadSettings | None = None) -> Any:
    settings = settings or ReadSettings()
    schema, int96 = anyio.run(file_schema, str(root), settings)
    rows = spark_arrow_schema(schema, int96)
    predicate = None if where is None else parse_predicate(where)
    reads, job = anyio.run(plan_read, str(root), predicate, rows, settings)
    return reads, job, rows, settings


def test_folders_pruned_on_the_driver_values_filled_by_the_task(
    pyarrow_lake: Path, tmp_path: Path
) -> None:
    root = tmp_path / "lake"
    shutil.copytree(pyarrow_lake, root)
    for other in (root / "dt=2024-01-01").glob("*.parquet"):
        other.write_bytes(b"not parquet" * 10)  # never opened: its folder rules it out
    reads, job, rows, settings = _plan(root, "dt = '2024-01-03' AND id > 10")
    assert rows.names == ["id", "v", "dt"] and rows.field("dt").type == pa.date32()
    assert {Path(r.path).parent.name for r in reads} == {"dt=2024-01-03"}
    assert all(r.plan is not None for r in reads) and len(reads) == 2
    got = [r for b in read_task(ReadTask(tuple(reads), job, settings)) for r in b.to_pylist()]
    expected = lookup_sync(str(pyarrow_lake), "dt = '2024-01-03' AND id > 10").to_pylist()
    assert sorted(got, key=lambda r: r["id"]) == sorted(expected, key=lambda r: r["id"])
    assert got and {r["dt"] for r in got} == {dt.date(2024, 1, 3)}
    reads, job, rows, settings = _plan(pyarrow_lake, None)
    got = [r for b in read_task(ReadTask(tuple(reads), job, settings)) for r in b.to_pylist()]
    assert sorted(got, key=lambda r: r["id"]) == _table().to_pylist()


def test_a_file_the_driver_cannot_read_keeps_its_folder(pyarrow_lake: Path, tmp_path: Path) -> None:
    root = tmp_path / "lake"
    shutil.copytree(pyarrow_lake, root)
    day = root / "dt=2024-01-02"
    target = sorted(day.glob("*.parquet"))[0]
    good = target.read_bytes()
    target.write_bytes(b"not parquet" * 10)  # unreadable while the driver plans
    for where in ("id = 1", "v = 'v5' AND dt = '2024-01-02'", None):
        with pytest.raises(ParquetFormatError, match="not a Parquet file"):
            _plan(root, where)  # the default policy: the driver fails the read at once
        # "skip": the driver hands it to the task, which reads it whole (or skips it).
        reads, job, _, settings = _plan(root, where, ReadSettings(on_error="skip"))
        unread = [r for r in reads if r.plan is None]
        assert [Path(r.path) for r in unread] == [target], where
        target.write_bytes(good)  # readable again when the task runs
        try:
            got = [
                r for b in read_task(ReadTask(tuple(reads), job, settings)) for r in b.to_pylist()
            ]
        finally:
            target.write_bytes(b"not parquet" * 10)
        theirs = pq.read_table(pa.BufferReader(good)).to_pylist()
        mine = [r for r in got if r["id"] in {t["id"] for t in theirs}]
        assert mine and {r["dt"] for r in mine} == {dt.date(2024, 1, 2)}, where


def test_partitioning_and_traceback_options_checked(pyarrow_lake: Path) -> None:
    def parse(**options: str) -> SourceOptions:
        return SourceOptions.parse({"path": str(pyarrow_lake), **options})

    assert parse().settings.lookup.partitioning == "hive" and parse().traceback is False
    assert parse(partitioning="None").settings.lookup.partitioning is None
    assert parse(partitioning='{"dt": "date"}').settings.lookup.partitioning == {"dt": "date"}
    assert parse(traceback="TRUE").traceback is True
    for bad in ("maybe", "{}", "[1]", '{"dt": 5}', '{"dt": "datetime"}'):
        with pytest.raises(InvalidArgumentError):
            parse(partitioning=bad)
    with pytest.raises(InvalidArgumentError, match="partition columns are its own"):
        parse(table="delta", partitioning="none")
    with pytest.raises(InvalidArgumentError, match="option traceback must be true or false"):
        parse(traceback="1")
    # A folder value that is not of the type given fails the schema, naming the file.
    settings = ReadSettings(lookup=LookupOptions(partitioning={"dt": "int32"}))
    with pytest.raises(SchemaMismatchError, match="'2024-01-01' of 'dt' is not a int32"):
        anyio.run(file_schema, str(pyarrow_lake), settings)


def test_one_line_only_for_our_errors_in_a_spark_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """The variable is set only in a Spark worker, for our errors, unless the traceback is
    asked for; the caller's own process (lookup_on_spark's planning) is left alone."""
    monkeypatch.delenv(HIDE_VARIABLE, raising=False)
    monkeypatch.delenv("SPARK_PYTHON_RUNTIME", raising=False)
    for factory in ("SECRET", "PORT", "SOCK_PATH"):
        monkeypatch.delenv(f"PYTHON_WORKER_FACTORY_{factory}", raising=False)

    def fail(error: Exception, traceback: bool = False) -> bool:
        with pytest.raises(type(error)), one_line(traceback):
            raise error
        return os.environ.pop(HIDE_VARIABLE, None) == "1"

    assert not fail(InvalidArgumentError("bad"))  # not in a worker
    monkeypatch.setenv("SPARK_PYTHON_RUNTIME", "PYTHON_WORKER")
    assert not fail(KeyError("a bug keeps its traceback"))
    assert not fail(InvalidArgumentError("bad"), traceback=True)
    assert fail(InvalidArgumentError("bad"))
    # Spark 4.1 sets no SPARK_PYTHON_RUNTIME: its workers have their factory's secret.
    monkeypatch.delenv("SPARK_PYTHON_RUNTIME")
    assert not fail(InvalidArgumentError("bad"))
    monkeypatch.setenv("PYTHON_WORKER_FACTORY_SECRET", "s")
    assert fail(InvalidArgumentError("bad"))
    assert not fail(InvalidArgumentError("bad"), traceback=True)


def test_schema_reads_only_the_folders_the_where_option_keeps(
    pyarrow_lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the where option the schema is the local lookup's: the files of folders it
    rules out are not opened (one read per file of the folder kept, the plan made from the
    same reads), unless no file kept has a column of the predicate (then theirs are read,
    as the lookup reads them)."""
    import pickle

    from pybloom_async.io.base import SourceStats
    from pybloom_async.spark import source as module

    root = tmp_path / "lake"
    shutil.copytree(pyarrow_lake, root)
    for other in (root / "dt=2024-01-01").glob("*.parquet"):
        other.write_bytes(b"not parquet" * 10)  # never opened: its folder rules it out
    stats = SourceStats()
    run = ReadSettings.run
    monkeypatch.setattr(ReadSettings, "run", lambda self, _=None: run(self, stats))
    where = "dt = '2024-01-03' AND id > 10"
    data_source = module.PybloomDataSourceWithoutPushdown({"path": str(root), "where": where})
    schema = data_source.schema()
    reader = pickle.loads(pickle.dumps(data_source)).reader(schema)
    parts = reader.partitions()
    assert stats.requests == 2, stats  # the two files of dt=2024-01-03, each read once
    got = [r for p in parts for b in reader.read(p) for r in b.to_pylist()]
    expected = lookup_sync(str(root), where)
    assert schema.names == expected.column_names == ["id", "v", "dt"]
    assert sorted(r["id"] for r in got) == sorted(expected.column("id").to_pylist())
    # A column only the files of another folder have: their footers are read for the
    # schema, as the lookup reads them (and the answer is empty, as the lookup's).
    extra = root / "dt=2024-01-02" / "extra.parquet"
    pq.write_table(pa.table({"id": pa.array([1], pa.int64()), "x": pa.array([5])}), extra)
    where = "dt = '2024-01-03' AND x = 5"
    wide = module.PybloomDataSourceWithoutPushdown({"path": str(root), "where": where})
    assert wide.schema().names == lookup_sync(str(root), where).column_names
    assert "x" in wide.schema().names
