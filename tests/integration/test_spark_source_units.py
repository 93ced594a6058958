"""The Spark data source's parts that run without a Spark session.

* Pushdown: which of Spark's filters become predicates (=, IN, <=>, IS [NOT] NULL, ranges
  and NOT on exactly compared types; on floats, x > v as NOT (x <= v), NaN being above
  every number in Spark), and which go back to Spark (NaN literals, collated strings,
  dotted names, nested types, LIKE); every float filter taken keeps the rows Spark's
  order keeps, NaN, NULL, -0.0 and infinities included.
* Types: Arrow result columns as Spark's Parquet reader types them (unsigned widened,
  views and large types narrowed, INT96 as instants), and a clear error for the rest.
* Tasks: cut in file order, at most the split size, a large file split at row groups.
* Options: parsed and checked; an old PySpark refused in one line; on Spark 4.1-4.3 no
  pushed filter taken, the where option prunes.
* Planning and reading without Spark: the rows equal the local lookup's.
* The old import path warns and still works.
"""

from __future__ import annotations

import datetime as dt
import decimal
import math
import os
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest

np = pytest.importorskip("numpy")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("pyspark")

from pyspark.sql import types as T  # noqa: E402

from pybloom_async import (  # noqa: E402
    Compare,
    Eq,
    In,
    IsNotNull,
    IsNull,
    LookupOptions,
    MissingDependencyError,
    Not,
    NotIn,
    lookup_sync,
)
from pybloom_async.errors import (  # noqa: E402
    InvalidArgumentError,
    PredicateError,
    SourceNotFoundError,
    UnsupportedTypeError,
)
from pybloom_async.predicate import parse_predicate  # noqa: E402
from pybloom_async.spark.common import require_data_source_api  # noqa: E402
from pybloom_async.spark.plan_guard import plans_shared  # noqa: E402
from pybloom_async.spark.pushdown import pushable, split_filters  # noqa: E402
from pybloom_async.spark.reading import read_task  # noqa: E402
from pybloom_async.spark.scan import (  # noqa: E402
    OPEN_COST_BYTES,
    FileRead,
    ReadSettings,
    ReadTask,
    file_schema,
    plan_read,
    split_tasks,
)
from pybloom_async.spark.source_options import SourceOptions  # noqa: E402
from pybloom_async.spark.spark_types import spark_arrow_schema, spark_schema  # noqa: E402

datasource = pytest.importorskip("pyspark.sql.datasource")

SCHEMA = T.StructType(
    [
        T.StructField("id", T.LongType()),
        T.StructField("f", T.DoubleType()),
        T.StructField("s", T.StringType()),
        T.StructField("lc", T.StringType("UTF8_LCASE")),
        T.StructField("a.b", T.LongType()),
        T.StructField("st", T.StructType([T.StructField("x", T.IntegerType())])),
        T.StructField("arr", T.ArrayType(T.LongType())),
        T.StructField("ts", T.TimestampType()),
        T.StructField("d18", T.DecimalType(18, 4)),
        T.StructField("d38", T.DecimalType(38, 10)),
    ]
)


def test_pushdown_takes_exact_filters_only() -> None:
    ds = datasource
    utc = dt.timezone.utc
    taken = {
        ds.EqualTo(("id",), 5): Eq("id", 5),
        ds.EqualNullSafe(("s",), "x"): Eq("s", "x", null_safe=True),
        ds.EqualNullSafe(("s",), None): Eq("s", None, null_safe=True),
        ds.IsNull(("f",)): Eq("f", None, null_safe=True),
        ds.In(("id",), (1, None, 2)): In("id", (1, 2)),
        ds.EqualTo(("st", "x"), 3): Eq("st.x", 3),
        ds.EqualTo(("f",), -0.0): Eq("f", -0.0),
        ds.EqualTo(("d18",), decimal.Decimal("1.5")): Eq("d18", decimal.Decimal("1.5")),
        # Instants arrive in UTC: taken as UTC times without a zone (INT96 has no flag).
        ds.EqualTo(("ts",), dt.datetime(2024, 1, 1, tzinfo=utc)): Eq("ts", dt.datetime(2024, 1, 1)),
        ds.IsNotNull(("id",)): IsNotNull("id"),
        ds.GreaterThan(("id",), 1): Compare("id", ">", 1),
        ds.Not(ds.EqualTo(("id",), 1)): Compare("id", "!=", 1),
    }
    for f, predicate in taken.items():
        assert pushable(f, SCHEMA) == predicate, f
    returned = [
        ds.EqualTo(("f",), float("nan")),  # Spark's NaN = NaN is TRUE
        ds.In(("f",), (1.0, float("nan"))),
        ds.In(("id",), (None,)),
        ds.EqualTo(("lc",), "x"),  # a collation compares otherwise
        ds.EqualTo(("d38",), decimal.Decimal("1.5")),  # PySpark rounds to 28 digits
        ds.EqualTo(("a.b",), 1),  # a dotted name would read as a struct's child
        ds.EqualTo(("arr",), (1, 2)),
        ds.EqualTo(("nope",), 1),
        ds.StringStartsWith(("s",), "a"),
    ]
    filters = list(taken) + returned
    preds, kept = split_filters(filters, SCHEMA)
    assert preds == list(taken.values())
    assert all(a is b for a, b in zip(kept, returned, strict=True))  # the objects given


def test_pushdown_takes_ranges_and_negations_where_exact() -> None:
    ds = datasource
    utc = dt.timezone.utc
    noon = dt.datetime(2024, 1, 1, 12, tzinfo=utc)
    taken = {
        ds.GreaterThan(("id",), 1): Compare("id", ">", 1),
        ds.GreaterThanOrEqual(("st", "x"), 1): Compare("st.x", ">=", 1),
        ds.LessThan(("s",), "k"): Compare("s", "<", "k"),
        ds.LessThanOrEqual(("d18",), decimal.Decimal("2.5")): Compare(
            "d18", "<=", decimal.Decimal("2.5")
        ),
        ds.LessThan(("ts",), noon): Compare("ts", "<", dt.datetime(2024, 1, 1, 12)),
        ds.In(("ts",), (noon,)): In("ts", (dt.datetime(2024, 1, 1, 12),)),
        # Floats: x < v, x <= v as they are (NaN in neither, in Spark or here); x > v,
        # x >= v hold for a NaN in Spark, and so do NOT (x <= v), NOT (x < v).
        ds.LessThan(("f",), 1.5): Compare("f", "<", 1.5),
        ds.LessThanOrEqual(("f",), -0.0): Compare("f", "<=", -0.0),
        ds.GreaterThan(("f",), 1.5): Not(Compare("f", "<=", 1.5)),
        ds.GreaterThanOrEqual(("f",), float("-inf")): Not(Compare("f", "<", float("-inf"))),
        ds.Not(ds.GreaterThan(("f",), 1.5)): Compare("f", "<=", 1.5),
        ds.Not(ds.LessThan(("f",), 1.5)): Not(Compare("f", "<", 1.5)),
        ds.Not(ds.EqualTo(("f",), 1.5)): Compare("f", "!=", 1.5),
        # NOT as SQL's: IS NOT NULL, NOT IN (a NULL in the list kept: never TRUE), NOT <=>.
        ds.Not(ds.IsNull(("s",))): IsNotNull("s"),
        ds.Not(ds.IsNotNull(("s",))): IsNull("s"),
        ds.Not(ds.In(("id",), (1, None))): NotIn("id", (1, None)),
        ds.Not(ds.In(("id",), (1, 2))): NotIn("id", (1, 2)),
        ds.Not(ds.EqualNullSafe(("s",), "x")): Not(Eq("s", "x", null_safe=True)),
        ds.Not(ds.EqualNullSafe(("s",), None)): IsNotNull("s"),
        ds.Not(ds.GreaterThan(("id",), 1)): Not(Compare("id", ">", 1)),
    }
    for f, predicate in taken.items():
        assert pushable(f, SCHEMA) == predicate, f
    returned = [
        ds.GreaterThan(("f",), float("nan")),  # NaN > NaN is FALSE, NaN >= NaN TRUE in Spark
        ds.LessThan(("f",), float("nan")),  # every number but NaN in Spark
        ds.Not(ds.EqualTo(("f",), float("nan"))),
        ds.Not(ds.In(("f",), (float("nan"),))),
        ds.LessThan(("lc",), "x"),
        ds.GreaterThan(("d38",), decimal.Decimal("1.5")),
        ds.GreaterThan(("a.b",), 1),
        ds.LessThan(("arr",), (1, 2)),
        ds.LessThan(("id",), None),
        ds.Not(ds.EqualTo(("id",), None)),
        ds.Not(ds.StringStartsWith(("s",), "a")),
        ds.StringContains(("s",), "a"),
    ]
    preds, kept = split_filters(list(taken) + returned, SCHEMA)
    assert preds == list(taken.values())
    assert all(a is b for a, b in zip(kept, returned, strict=True))


def _spark_order(a: float, b: float) -> int:
    """Spark's order of floats: NaN above every number, NaN = NaN, -0.0 = 0.0."""
    if math.isnan(a) or math.isnan(b):
        return int(math.isnan(a)) - int(math.isnan(b))
    return (a > b) - (a < b)


def _spark_truth(f: Any, x: float | None) -> bool | None:
    """Spark's three-valued truth of the filter ``f`` for the value ``x``."""
    kind = type(f).__name__
    if kind == "Not":
        inner = _spark_truth(f.child, x)
        return None if inner is None else not inner
    if kind == "EqualNullSafe":
        return x is None if f.value is None else x is not None and _spark_order(x, f.value) == 0
    if x is None:
        return None
    if kind == "In":
        if any(v is not None and _spark_order(x, v) == 0 for v in f.value):
            return True
        return None if None in f.value else False
    order = _spark_order(x, f.value)
    return {
        "EqualTo": order == 0,
        "LessThan": order < 0,
        "LessThanOrEqual": order <= 0,
        "GreaterThan": order > 0,
        "GreaterThanOrEqual": order >= 0,
    }[kind]


def test_pushed_float_filters_keep_sparks_nan_order(tmp_path: Path) -> None:
    """Every filter taken on a float column keeps exactly the rows Spark's order keeps
    (NaN above every number, NaN = NaN, -0.0 = 0.0), NULLs and infinities included, in
    FLOAT16 columns (typed FLOAT) too; the filters with a NaN literal are returned, and
    on FLOAT those with a literal no half holds (a FLOAT16 column's would be rounded)."""
    ds = datasource
    inf, nan = math.inf, math.nan
    f32 = float(np.float32(0.1))  # no half: FLOAT16's nearest, 0.0999755859375, is a row
    values = [nan, None, -0.0, 0.0, 1.5, 2.0, inf, -inf, -1.0, f32]
    halves = [None if x is None else float(np.float16(x)) for x in values]
    path = tmp_path / "floats.parquet"
    table = pa.table(
        {
            "i": list(range(len(values))),
            "f": pa.array(values, pa.float32()),
            "d": pa.array(values, pa.float64()),
            "h": pa.array([None if x is None else np.float16(x) for x in values], pa.float16()),
        }
    )
    pq.write_table(table, path, row_group_size=3)
    schema = T.StructType(
        [T.StructField(c, t) for c, t in (("f", T.FloatType()), ("d", T.DoubleType()),
                                         ("h", T.FloatType()))]
    )  # fmt: skip
    kinds = ("EqualTo", "EqualNullSafe", "LessThan", "LessThanOrEqual", "GreaterThan",
             "GreaterThanOrEqual")  # fmt: skip
    checked = 0
    for column, stored in (("f", values), ("d", values), ("h", halves)):
        for v in (-inf, -1.0, -0.0, 0.0, f32, 1.5, 1.75, inf, nan):
            plain = [getattr(ds, k)((column,), v) for k in kinds]
            plain += [ds.In((column,), (v, 2.0)), ds.In((column,), (v, None))]
            for f in plain + [ds.Not(p) for p in plain]:
                predicate = pushable(f, schema)
                # FloatType's non-half literals: a FLOAT16 column would take the nearest half.
                if math.isnan(v) or (column != "d" and v == f32):
                    assert predicate is None, f
                    continue
                assert predicate is not None, f
                spark = [i for i, x in enumerate(stored) if _spark_truth(f, x) is True]
                ours = lookup_sync(str(path), predicate, columns=["i"]).column("i").to_pylist()
                assert sorted(ours) == spark, (column, f, predicate)
                checked += 1
    assert checked == 3 * 8 * 16 - 2 * 16


def test_spark_types_follow_sparks_parquet_reader() -> None:
    arrow = pa.schema(
        [
            ("u8", pa.uint8()),
            ("u64", pa.uint64()),
            ("h", pa.float16()),
            ("sv", pa.string_view()),
            ("lb", pa.large_binary()),
            ("fx", pa.binary(4)),
            ("d32", pa.decimal32(5, 2)),
            ("ts_ns", pa.timestamp("ns")),
            ("ts_tz", pa.timestamp("ms", "Europe/Paris")),
            ("i96", pa.timestamp("ns")),
            ("lst", pa.large_list(pa.field("v", pa.int32(), nullable=False))),
            ("st", pa.struct([pa.field("a", pa.dictionary(pa.int32(), pa.string()))])),
        ]
    )
    got = spark_arrow_schema(arrow, {"i96"})
    assert got == pa.schema(
        [
            ("u8", pa.int16()),
            ("u64", pa.decimal128(20, 0)),
            ("h", pa.float32()),
            ("sv", pa.string()),
            ("lb", pa.binary()),
            ("fx", pa.binary()),
            ("d32", pa.decimal128(5, 2)),
            ("ts_ns", pa.timestamp("us")),
            ("ts_tz", pa.timestamp("us", "UTC")),
            ("i96", pa.timestamp("us", "UTC")),
            ("lst", pa.list_(pa.field("element", pa.int32()))),
            ("st", pa.struct([("a", pa.string())])),
        ]
    )
    struct = spark_schema(arrow, {"i96"})
    assert struct["u64"].dataType == T.DecimalType(20, 0)
    assert struct["i96"].dataType == T.TimestampType()
    assert struct["ts_ns"].dataType == T.TimestampNTZType()
    with pytest.raises(UnsupportedTypeError, match=r"38 digits.*'wide'"):
        spark_arrow_schema(pa.schema([("wide", pa.decimal256(40, 2))]))
    with pytest.raises(UnsupportedTypeError, match="'iv'"):
        spark_arrow_schema(pa.schema([("iv", pa.month_day_nano_interval())]))


def _file(path: Path, groups: int, rows: int = 100) -> FileRead:
    table = pa.table({"id": pa.array(range(groups * rows), pa.int64())})
    pq.write_table(table, path, row_group_size=rows)
    return _plan_all(path)


def _plan_all(path: Path) -> FileRead:
    from pybloom_async import read_footer_sync
    from pybloom_async.rows.plan import describe

    footer = read_footer_sync(str(path))
    kept = list(range(len(footer.metadata.row_groups)))
    return FileRead(str(path), describe(str(path), footer, kept))


def test_tasks_keep_file_order_and_split_large_files(tmp_path: Path) -> None:
    reads = [_file(tmp_path / f"f{i}.parquet", groups) for i, groups in enumerate([1, 6, 2])]
    whole = sum(r.cost() for r in reads)
    assert split_tasks(reads, 10**12, 1) == [reads]  # one task holds all
    plan = reads[1].plan
    assert plan is not None
    group = max(g.total_compressed_size for g in plan.metadata.row_groups)
    limit = OPEN_COST_BYTES + 2 * group
    tasks = split_tasks(reads, limit, 1)
    pieces = [(Path(r.path).name, r.plan.kept) for t in tasks for r in t]  # type: ignore[union-attr]
    assert pieces[0] == ("f0.parquet", [0]) and pieces[-1][0] == "f2.parquet"
    middle = [kept for name, kept in pieces if name == "f1.parquet"]
    assert len(middle) >= 3 and [g for kept in middle for g in kept] == list(range(6))
    assert all(sum(r.cost() for r in t) <= limit for t in tasks)
    # min_partitions spreads a small read: Spark's maxSplitBytes rule.
    assert len(split_tasks(reads, 10**12, 3)) >= 2
    assert whole > 3 * OPEN_COST_BYTES


def test_tasks_balanced_by_the_bytes_each_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task's size is its kept row groups' chunk bytes of the columns read: one row group
    large in the column read (``id``) takes a task alone, the small ones (large only in a
    column not read, ``blob``) share the others."""
    from pybloom_async.rows.api import plan_lookup
    from pybloom_async.spark import scan

    monkeypatch.setattr(scan, "OPEN_COST_BYTES", 64 * 1024)  # the data scaled down 64x
    rng = np.random.default_rng(7)
    path = tmp_path / "f.parquet"
    sizes = [32_000] + [4_000] * 8
    with pq.ParquetWriter(
        path, pa.schema({"id": pa.int64(), "blob": pa.binary()}), compression="none"
    ) as w:
        for rows in sizes:
            blob = [b""] * rows if rows > 4_000 else [rng.bytes(64) for _ in range(rows)]
            ids = pa.array(rng.integers(0, 2**62, rows), pa.int64())
            w.write_table(pa.table({"id": ids, "blob": pa.array(blob, pa.binary())}))
    planned = anyio.run(lambda: plan_lookup(str(path), "id >= 0", ["id"]))
    reads = [FileRead(p.location, p) for p in planned.files]
    tasks = split_tasks(reads, 10**12, 2, planned.job)
    groups = [[g for r in t for g in r.plan.kept] for t in tasks]  # type: ignore[union-attr]
    assert groups[0] == [0] and len(groups) >= 3, groups  # the large one alone
    assert sorted(g for t in groups for g in t) == list(range(len(sizes)))
    read = [sum(scan.group_bytes(r.plan, planned.job).values()) for t in tasks for r in t]  # type: ignore[arg-type]
    assert max(read[1:]) <= read[0], read


def test_options_are_parsed_and_checked() -> None:
    got = SourceOptions.parse(
        {
            "path": "s3://b/lake/",
            "where": "id = 1 OR s = 'x'",
            "on_error": "Skip",
            "min_partitions": "3",
            "store.endpoint": "http://127.0.0.1:9000",
            "store.allow_http": "true",
            "store.max_retries": "2",
            "store.extra.virtual_hosted_style_request": "false",
        }
    )
    assert got.sources == "s3://b/lake/" and got.where == parse_predicate("id = 1 OR s = 'x'")
    assert got.settings.on_error == "skip" and got.min_partitions == 3
    store = got.settings.options
    assert store is not None and store.endpoint == "http://127.0.0.1:9000"
    assert store.allow_http is True and store.max_retries == 2
    assert store.extra_config == {"virtual_hosted_style_request": "false"}
    assert SourceOptions.parse({"paths": '["/a", "/b"]'}).sources == ["/a", "/b"]
    # One policy: the deprecated strict option is on_error raise; false changes nothing.
    assert SourceOptions.parse({"path": "/a"}).settings.on_error is None
    assert SourceOptions.parse({"path": "/a", "strict": "true"}).settings.on_error == "raise"
    assert SourceOptions.parse({"path": "/a", "strict": "false"}).settings.on_error is None
    both = {"path": "/a", "strict": "true", "on_error": "raise"}
    assert SourceOptions.parse(both).settings.on_error == "raise"
    with pytest.raises(InvalidArgumentError, match="give option on_error only"):
        SourceOptions.parse({"path": "/a", "strict": "true", "on_error": "skip"})
    with pytest.raises(InvalidArgumentError, match="on_error must be 'raise' or 'skip'"):
        ReadSettings(on_error="ignore")  # type: ignore[arg-type]
    assert got.settings.lookup.use_index == "auto"
    assert SourceOptions.parse({"path": "/a", "index": "None"}).settings.lookup.use_index == "none"
    assert SourceOptions.parse({"path": "/a", "index": "lake"}).settings.lookup.use_index == "lake"
    bad = [
        ({"path": "/a", "index": "yes"}, "option index must be one of"),
        ({"path": "/a", "index": "sidecar"}, "applies to prune only"),
        ({}, "needs a path"),
        ({"path": "/a", "wher": "x"}, "unknown option 'wher'"),
        ({"path": "/a", "strict": "yes"}, "true or false"),
        ({"path": "/a", "on_error": "ignore"}, "raise or skip"),
        ({"path": "/a", "min_partitions": "0"}, "min_partitions"),
        ({"path": "/a", "store.endpont": "x"}, "store options"),
        ({"path": "/a", "table": "hudi"}, "delta or iceberg"),
        ({"path": "/a", "version": "3"}, "table delta only"),
    ]
    for options, message in bad:
        with pytest.raises(InvalidArgumentError, match=message):
            SourceOptions.parse(options)
    with pytest.raises(PredicateError):
        SourceOptions.parse({"path": "/a", "where": "id = = 1"})


def test_old_pyspark_is_refused_in_one_line() -> None:
    with pytest.raises(MissingDependencyError) as info:
        require_data_source_api((3, 5))
    text = str(info.value)
    assert "PySpark >= 4.1" in text and "3.5" in text and "\n" not in text
    require_data_source_api((4, 1))


def test_pushed_filters_prune_only_where_spark_keeps_plans_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spark 4.1-4.3 hand one plan to every use of a DataFrame: Spark's filters all go
    back to Spark there, and the where option (the DataFrame's own) prunes."""
    from pyspark.sql.datasource import EqualTo

    from pybloom_async.spark import plan_guard
    from pybloom_async.spark import source as module

    assert plans_shared((4, 1)) and plans_shared((4, 3)) and plans_shared((5, 0))
    root = str(_lake(tmp_path / "lake"))
    plain = module.PybloomDataSource({"path": root})
    schema = plain.schema()

    def groups(data_source: Any, filters: list[Any]) -> tuple[list[Any], int]:
        reader = data_source.reader(schema)
        kept = list(reader.pushFilters(filters))
        parts = reader.partitions()
        return kept, sum(len(r.plan.kept) for p in parts for r in p.value.reads)

    key = [EqualTo(("id",), 1500)]
    for version in [(4, 1), (4, 3)]:
        monkeypatch.setattr(module, "pyspark_version", lambda v=version: v)
        assert groups(plain, key) == (key, 12)  # every row group of the 3 files
        by_option = module.PybloomDataSource({"path": root, "where": "id = 1500"})
        assert groups(by_option, key) == (key, 1)
    # A version shown to keep plans apart takes the filter and prunes by it.
    monkeypatch.setattr(plan_guard, "PER_SCAN_PLANS", frozenset({(5, 0)}))
    monkeypatch.setattr(module, "pyspark_version", lambda: (5, 0))
    assert groups(plain, key) == ([], 1)


def _counted(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Every run of the driver's planning counts its requests in one SourceStats."""
    from pybloom_async.io.base import SourceStats

    stats = SourceStats()
    run = ReadSettings.run
    monkeypatch.setattr(ReadSettings, "run", lambda self, _=None: run(self, stats))
    return stats


def _shipped_plan(options: dict[str, str], stats: Any) -> tuple[Any, Any, list[Any], int]:
    """What Spark does on the driver: schema(), the data source pickled to the planning
    worker, reader(schema), the read function (the reader) pickled, partitions(); the
    driver's reads counted; then the tasks' rows."""
    import pickle

    from pybloom_async.spark import source as module

    data_source = module.PybloomDataSourceWithoutPushdown(options)
    schema = data_source.schema()
    shipped = pickle.dumps(data_source)
    planning = pickle.loads(shipped)
    reader = planning.reader(schema)
    assert pickle.loads(pickle.dumps(reader)).planned is None  # the footers stay behind
    assert "_planned" not in pickle.loads(pickle.dumps(planning)).__dict__
    parts = reader.partitions()
    planning = stats.requests
    rows = [r for p in parts for b in reader.read(p) for r in b.to_pylist()]
    return pickle.loads(shipped), schema, rows, planning


@pytest.mark.parametrize("where", [None, "id IN (5, 1500, 2999)"])
def test_the_driver_reads_each_footer_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str | None
) -> None:
    """schema() plans the read from the footers it reads; partitions() takes that plan
    while the files are the ones it was made of (one read per file in all), and plans
    again when one was replaced."""
    root = _lake(tmp_path / "lake")
    stats = _counted(monkeypatch)
    options = {"path": str(root)} | ({"where": where} if where else {})
    shipped, schema, got, reads = _shipped_plan(options, stats)
    assert reads == 3, stats  # one read per file: footer (and filters) at once
    predicate = parse_predicate(where) if where else None
    expected = pq.read_table(root) if predicate is None else lookup_sync(str(root), predicate)
    assert [r["id"] for r in got] == expected.column("id").to_pylist()
    # A file replaced since schema(): noticed, planned again from its new footer.
    table = pq.read_table(root / "p1.parquet")
    pq.write_table(table.slice(0, 600), root / "p1.parquet", row_group_size=250)
    reader = shipped.reader(schema)  # a later query: the same pickled data source
    stats.reset()
    parts = reader.partitions()
    assert stats.requests >= 1  # its footer read again
    again = [r["id"] for p in parts for b in reader.read(p) for r in b.to_pylist()]
    expected = pq.read_table(root) if predicate is None else lookup_sync(str(root), predicate)
    assert again == expected.column("id").to_pylist()


def test_with_a_lake_index_the_driver_plans_once_in_three_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a lake index (its footer digest), schema() plans the read in three requests (the
    segment, one stripe, the kept file's filters: its footer is the digest's); partitions()
    takes that plan though the index ruled the other files out (not planned again), and a
    later query plans again when a ruled-out file was replaced."""
    from pybloom_async import build_lake_index_sync
    from pybloom_async.spark import source as module

    root = _lake(tmp_path / "lake")
    build_lake_index_sync(str(root), ["id"], fpp=0.001)
    plans = []
    plan_read = module.plan_read

    async def counted_plan(*args: Any, **kwargs: Any) -> Any:
        plans.append(args)
        return await plan_read(*args, **kwargs)

    monkeypatch.setattr(module, "plan_read", counted_plan)
    stats = _counted(monkeypatch)
    where = "id = 7"
    shipped, schema, got, reads = _shipped_plan({"path": str(root), "where": where}, stats)
    assert (reads, plans) == (3, []), stats
    assert [r["id"] for r in got] == [7]
    # A file the index ruled out, replaced by one holding a key: noticed, planned again.
    table = pq.read_table(root / "p1.parquet")
    ids = pa.array([7 if x == 1500 else x for x in table.column("id").to_pylist()], pa.int64())
    pq.write_table(table.set_column(0, "id", ids), root / "p1.parquet", row_group_size=250)
    reader = shipped.reader(schema)
    again = [r["id"] for p in reader.partitions() for b in reader.read(p) for r in b.to_pylist()]
    assert len(plans) == 1 and again == [7, 7]


def _lake(root: Path) -> Path:
    root.mkdir()
    for i in range(3):
        ids = pa.array(range(i * 1000, (i + 1) * 1000), pa.int64())
        table = pa.table(
            {
                "id": ids,
                "u": pa.array([x % 300 for x in ids.to_pylist()], pa.uint64()),
                "s": pa.array([None if x % 9 == 0 else f"v{x}" for x in ids.to_pylist()]),
                "ts": pa.array([x * 1000 for x in ids.to_pylist()], pa.timestamp("ns", "UTC")),
            }
        )
        pq.write_table(
            table, root / f"p{i}.parquet", row_group_size=250,
            bloom_filter_options={"id": {"ndv": 1000}, "s": {"ndv": 1000}},
        )  # fmt: skip
    return root


def _read(root: Path, where: Any) -> tuple[list[dict[str, Any]], Any]:
    settings = ReadSettings()
    schema, int96 = anyio.run(file_schema, str(root), settings)
    rows = spark_arrow_schema(schema, int96)
    reads, job = anyio.run(plan_read, str(root), where, rows, settings)
    out = []
    for task in split_tasks(reads, 10**9, 2):
        for batch in read_task(ReadTask(tuple(task), job, settings)):
            assert batch.schema == rows
            out.extend(batch.to_pylist())
    return out, rows


@pytest.mark.parametrize(
    "where",
    ["id IN (5, 1500, 2999, 77777)", "s <=> NULL AND id IN (9, 18, 1000)", "u = 7", None],
)
def test_plan_and_read_equal_the_local_lookup(tmp_path: Path, where: str | None) -> None:
    root = _lake(tmp_path / "lake")
    predicate = None if where is None else parse_predicate(where)
    got, rows = _read(root, predicate)
    if predicate is None:
        expected = pq.read_table(root).cast(rows).to_pylist()
    else:
        expected = lookup_sync(str(root), predicate).cast(rows).to_pylist()
    assert got == expected and got
    assert isinstance(got[0]["u"], decimal.Decimal)


def test_a_file_the_driver_cannot_read_is_read_by_the_task(tmp_path: Path) -> None:
    root = _lake(tmp_path / "lake")
    (root / "zz-garbage.parquet").write_bytes(b"not parquet" * 10)
    where = parse_predicate("id = 5")
    settings = ReadSettings()
    schema, int96 = anyio.run(file_schema, str(root), settings)  # left out of the schema
    rows = spark_arrow_schema(schema, int96)
    with pytest.raises(Exception, match=r"zz-garbage\.parquet"):  # one policy: the driver's
        anyio.run(plan_read, str(root), where, rows, settings)
    with pytest.raises(Exception, match=r"zz-garbage\.parquet"):
        anyio.run(file_schema, str(root), ReadSettings(on_error="raise"))
    skipping = ReadSettings(on_error="skip")
    reads, job = anyio.run(plan_read, str(root), where, rows, skipping)
    assert [Path(r.path).name for r in reads] == ["p0.parquet", "zz-garbage.parquet"]
    assert reads[-1].plan is None  # kept, for the task to read (or skip)
    with pytest.raises(Exception, match=r"zz-garbage\.parquet"):
        list(read_task(ReadTask(tuple(reads), job, settings)))
    with warnings.catch_warnings():
        got = [b.to_pylist() for b in read_task(ReadTask(tuple(reads), job, skipping))]
    assert [r["id"] for batch in got for r in batch] == [5]


def test_a_task_reads_through_the_lookups_per_file_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task's file, planned by the driver or not, goes through the per-file step of a
    lookup (rows.api.file_rows): no copy of it in the Spark package."""
    import dataclasses

    import pybloom_async.rows.api as rows_api
    import pybloom_async.spark.reading as reading

    root = _lake(tmp_path / "lake")
    where = parse_predicate("id IN (5, 1500, 2999)")
    settings = ReadSettings()
    schema, int96 = anyio.run(file_schema, str(root), settings)
    reads, job = anyio.run(plan_read, str(root), where, spark_arrow_schema(schema, int96), settings)
    unplanned = [dataclasses.replace(r, plan=None) for r in reads]
    assert reading.file_rows is rows_api.file_rows
    step = rows_api.file_rows
    seen: list[bool] = []

    async def spy(*args: Any, **kwargs: Any) -> Any:
        seen.append(args[4] is not None)  # the driver's plan, or none
        return await step(*args, **kwargs)

    monkeypatch.setattr(rows_api, "file_rows", spy)
    monkeypatch.setattr(reading, "file_rows", spy)
    got = [
        [r["id"] for b in read_task(ReadTask(tuple(task), job, settings)) for r in b.to_pylist()]
        for task in (reads, unplanned)
    ]
    assert got == [[5, 1500, 2999]] * 2
    assert seen == [True] * len(reads) + [False] * len(reads)


def test_old_import_path_warns_and_works() -> None:
    import pybloom_async.apps.spark as old
    import pybloom_async.spark as new

    with pytest.warns(DeprecationWarning, match="import it from pybloom_async.spark"):
        function = old.prune_on_spark
    assert function is new.prune_on_spark
    with pytest.raises(AttributeError):
        old.no_such_name  # noqa: B018


def test_iceberg_table_planned_and_read_by_tasks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table's tasks read through pyiceberg: its deletes applied, its partition values;
    a snapshot that moved since planning fails the read."""
    pytest.importorskip("pyiceberg")
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.schema import Schema
    from pyiceberg.types import LongType, NestedField, StringType

    from pybloom_async.spark.table_scan import (
        TableRef,
        plan_table,
        read_table_task,
        table_schema,
    )

    for key, value in {
        "TYPE": "sql",
        "URI": f"sqlite:///{tmp_path / 'catalog.db'}",
        "WAREHOUSE": (tmp_path / "wh").as_uri(),
    }.items():
        monkeypatch.setenv(f"PYICEBERG_CATALOG__TEST__{key}", value)
    import pyiceberg.catalog
    from pyiceberg.utils.config import Config

    # pyiceberg reads its environment once, when first imported: read it again.
    monkeypatch.setattr(pyiceberg.catalog, "_ENV_CONFIG", Config())
    catalog = SqlCatalog(
        "test", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=(tmp_path / "wh").as_uri()
    )
    catalog.create_namespace("ns")
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "s", StringType(), required=False),
    )
    table = catalog.create_table("ns.t", schema=schema)
    (tmp_path / "data").mkdir()
    paths = []
    for start in range(0, 800, 200):
        ids = list(range(start, start + 200))
        path = tmp_path / "data" / f"part-{start}.parquet"
        chunk = pa.table({"id": pa.array(ids, pa.int64()), "s": [f"s{i}" for i in ids]})
        pq.write_table(chunk, path, bloom_filter_options={"id": True})
        paths.append(path.as_uri())
    table.add_files(paths)
    table = catalog.load_table("ns.t")
    table.delete("id = 5")  # a delete the library applies
    ref = TableRef("iceberg", "test.ns.t", None, None)
    arrow = table_schema(ref)
    rows = spark_arrow_schema(arrow)
    where = parse_predicate("id IN (4, 5, 6, 650)")
    tasks = anyio.run(plan_table, ref, where, rows, ReadSettings(), 10**9, 2)
    got = sorted(r["id"] for t in tasks for b in read_table_task(t) for r in b.to_pylist())
    assert got == [4, 6, 650]
    assert (
        sorted(r["id"] for r in lookup_sync(catalog.load_table("ns.t"), where).to_pylist()) == got
    )
    assert sum(len(t.files) for t in tasks) < 4  # files pruned before any is read
    catalog.load_table("ns.t").delete("id = 6")
    with pytest.raises(Exception, match="moved from snapshot"):
        list(read_table_task(tasks[0]))


def test_strict_reaches_the_plans_run_as_it_does_a_local_lookup(tmp_path: Path) -> None:
    """``strict`` with the lake index required: a stale entry fails the plan on the driver,
    as it fails ``lookup``; without ``strict`` the stale file is read by its own filters."""
    from pybloom_async import IndexStaleError, build_lake_index_sync, pruned_dataset_sync

    root = _lake(tmp_path / "lake")
    build_lake_index_sync(str(root), ["id"], fpp=0.001)
    stale = root / "p0.parquet"
    stale.write_bytes(stale.read_bytes())  # the same bytes, a new version (mtime)
    os.utime(stale, ns=(1, 1))
    where = parse_predicate("id = 5")
    with pytest.raises(IndexStaleError):
        lookup_sync(str(root), where, use_index="lake", on_error="raise")
    with pytest.raises(IndexStaleError):
        pruned_dataset_sync(str(root), where, use_index="lake", on_error="raise")
    schema, int96 = anyio.run(file_schema, str(root), ReadSettings())
    rows = spark_arrow_schema(schema, int96)
    strict = ReadSettings(lookup=LookupOptions(use_index="lake"), on_error="raise")
    with pytest.raises(IndexStaleError):
        anyio.run(plan_read, str(root), where, rows, strict)
    reads, job = anyio.run(
        plan_read, str(root), where, rows, ReadSettings(lookup=LookupOptions(use_index="lake"))
    )
    settings = ReadSettings(lookup=LookupOptions(use_index="lake"))
    got = []
    for task in split_tasks(reads, 10**9, 2):
        for batch in read_task(ReadTask(tuple(task), job, settings)):
            got.extend(row["id"] for row in batch.to_pylist())
    assert got == [5]


def test_the_spark_jobs_take_on_error_and_strict_is_deprecated() -> None:
    """build_index_on_spark, build_lake_index_on_spark and add_bloom_filters_on_spark take
    the one policy, on_error; strict, its older form, warns; both at once fail in one line,
    before the session is used."""
    from pybloom_async.spark import (
        add_bloom_filters_on_spark,
        build_index_on_spark,
        build_lake_index_on_spark,
    )

    session: Any = object()  # never reached: the arguments fail first
    for job in (build_index_on_spark, build_lake_index_on_spark, add_bloom_filters_on_spark):
        with pytest.raises(InvalidArgumentError, match="give on_error only") as info:
            job(session, "/nowhere", ["id"], on_error="skip", strict=True)
        assert "\n" not in str(info.value)
        with pytest.raises(InvalidArgumentError, match="on_error must be 'raise' or 'skip'"):
            job(session, "/nowhere", ["id"], on_error="fail")  # type: ignore[arg-type]
        # Accepted: the job goes on, to the listing of a path that is not there.
        with pytest.warns(DeprecationWarning, match="on_error"), pytest.raises(SourceNotFoundError):
            job(session, "/nowhere", ["id"], strict=True)
