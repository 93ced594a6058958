"""Ranges, negations and null tests pruned by statistics, at the boundaries of every type.

Each file holds row groups of two values and a NULL (plus one all-NULL row group), so the
min/max statistics describe each row group exactly: a single comparison (``<``, ``<=``,
``>``, ``>=``, ``!=``), its NOT, ``NOT BETWEEN`` and the null tests must keep exactly the row
groups where some row makes them TRUE (SQL's three-valued truth, tests/support/predicates),
with literals at each min and max, just below and above them, finer than the column's
unit and beyond its type. Floats keep what NaN could make true. Then the statistics that
cannot be compared: truncated strings (DuckDB), NaN bounds, INT96, booleans.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
from pathlib import Path
from typing import Any

import pytest
from support.predicates import truth
from support.ranges import CASES, FLOATS, groups_column, literals_of, negation, predicates, value_of

from pybloom_async import Rule, lookup_sync, prune_sync
from pybloom_async.errors import PredicateError
from pybloom_async.parquet import LogicalType, Statistics, TimeUnit
from pybloom_async.parquet.schema import ColumnDescriptor
from pybloom_async.predicate import Compare, Not, Predicate
from pybloom_async.pruning.api import CompiledPredicate
from pybloom_async.pruning.bounds import chunk_view, decide
from pybloom_async.types import PhysicalType

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
UTC = dt.timezone.utc


def _file(tmp_path: Path, name: str) -> tuple[Path, list[list[Any]]]:
    column, groups = groups_column(name)
    path = tmp_path / f"{name}.parquet"
    pq.write_table(pa.table({"x": column}), path, row_group_size=3)
    return path, groups


@pytest.mark.parametrize("name", sorted(CASES))
def test_statistics_decide_exactly_at_every_boundary(tmp_path: Path, name: str) -> None:
    path, groups = _file(tmp_path, name)
    rows = pq.read_table(path).column("x").to_pylist()
    check = value_of(name)
    pruned = 0
    for where, exact in predicates(literals_of(name)):
        verdicts = prune_sync(path, where)
        assert [v.row_group for v in verdicts] == list(range(len(groups)))
        for v in verdicts:
            group = rows[3 * v.row_group : 3 * v.row_group + 3]
            holds = any(truth(where, {"x": x}, check) is True for x in group)
            if exact and not (name in FLOATS and negation(where)):
                assert v.kept == holds, (where, v.row_group, v.reason)
            else:
                assert v.kept or not holds, (where, v.row_group, v.reason)  # never a false negative
            pruned += not v.kept
        got = lookup_sync(str(path), where).column("x").to_pylist()
        assert got == [x for x in rows if truth(where, {"x": x}, check) is True], where
    assert pruned > 0


def test_a_type_decides_beyond_its_values_without_statistics(tmp_path: Path) -> None:
    path = tmp_path / "nostats.parquet"
    pq.write_table(pa.table({"x": pa.array([1, 2], pa.int8())}), path, write_statistics=False)
    for where, kept, rule in [
        ("x < 300", True, Rule.MAY_MATCH),
        ("x > 300", False, Rule.TYPE),
        ("x <= -129", False, Rule.TYPE),
        ("NOT x < 300", False, Rule.TYPE),  # every INT(8) is below 300
        ("x BETWEEN 200 AND 300", False, Rule.TYPE),
        ("x BETWEEN 5 AND 1", False, Rule.TYPE),  # an empty range
        ("x > 1", True, Rule.MAY_MATCH),
        ("x != 300", True, Rule.MAY_MATCH),
    ]:
        (v,) = prune_sync(path, where)
        assert (v.kept, v.rule) == (kept, rule), (where, v)


def test_truncated_string_statistics_bound_without_false_negatives(tmp_path: Path) -> None:
    """DuckDB truncates long string statistics (``is_max_value_exact`` false, the max
    incremented): the maximum bounds the values only through its prefix's successor."""
    duckdb = pytest.importorskip("duckdb")
    long_a, long_c = "a" * 300 + "b", "c" * 5000
    path = tmp_path / "long.parquet"
    source = pa.table({"s": [long_a, long_c]})  # noqa: F841 (DuckDB reads it by name)
    duckdb.sql("SELECT * FROM source").write_parquet(str(path))
    stats = pq.ParquetFile(path).metadata.row_group(0).column(0).statistics
    assert stats is not None and stats.has_min_max
    assert len(stats.max) == 256 and stats.max.endswith("d")  # truncated, then incremented
    for where, kept in [
        ("s > 'c'", True),
        (f"s >= '{long_c}'", True),
        (f"s > '{long_c}'", True),  # only the max's prefix is known: 'ccc...cd' may be above
        ("s > '" + "c" * 255 + "d'", True),  # a writer that does not increment hides 'c...dz'
        ("s >= '" + "c" * 255 + "e'", False),  # above the successor of the max's prefix
        (f"s <= '{long_c}'", True),
        ("s < 'a'", False),
        ("s < '" + "a" * 256 + "'", False),  # the min's prefix is below every value
        (f"s < '{long_a}'", True),  # 'a' * 256 (the min's prefix) may be a value
        (f"s <= '{long_a}'", True),
        ("s > 'd'", False),
        (f"NOT s <= '{long_c}'", True),  # no row is above it, but the bounds cannot say
        ("NOT s < '" + "c" * 255 + "e'", False),
        (f"s != '{long_c}'", True),
    ]:
        (v,) = prune_sync(path, where)
        rows = lookup_sync(str(path), where).num_rows
        assert v.kept == kept, (where[:40], v.reason)
        assert v.kept or rows == 0


def _descriptor(physical: PhysicalType, logical: LogicalType | None = None) -> ColumnDescriptor:
    return ColumnDescriptor.of(physical, logical, path="x")


def _view(desc: ColumnDescriptor, where: Predicate, **stats: Any) -> Any:
    leaf = CompiledPredicate(where).leaf(where, desc)
    return decide(leaf, chunk_view(leaf, Statistics(**stats), 10))


def test_nan_bounds_and_unordered_types_keep_their_row_groups() -> None:
    double = _descriptor(PhysicalType.DOUBLE)
    nan = struct.pack("<d", math.nan)
    one, two = struct.pack("<d", 1.0), struct.pack("<d", 2.0)
    # NaN bounds are not used (an old writer's NaN max hides larger values).
    assert not _view(double, Compare("x", ">", 5.0), min_value=one, max_value=nan).excluded
    assert not _view(double, Compare("x", "<", 0.5), min_value=nan, max_value=two).excluded
    assert _view(double, Compare("x", ">", 5.0), min_value=one, max_value=two).excluded
    # A NOT on floats: NaN makes it true, unless the statistics count no NaN.
    inside = Not(Compare("x", "<", 5.0))
    assert not _view(double, inside, min_value=one, max_value=two, null_count=0).excluded
    assert _view(double, inside, min_value=one, max_value=two, nan_count=0).excluded
    assert not _view(double, Compare("x", "!=", 1.0), min_value=one, max_value=one).excluded
    assert _view(double, Compare("x", "!=", 1.0), min_value=one, max_value=one, nan_count=0)[0]
    # Out-of-order bounds and bounds of the wrong width are not trusted either.
    assert not _view(double, Compare("x", ">", 1.5), min_value=two, max_value=one).excluded
    assert not _view(double, Compare("x", ">", 5.0), min_value=b"\x01", max_value=two).excluded
    # INT96 and BOOLEAN statistics are never compared; a boolean's type still decides.
    int96 = _descriptor(PhysicalType.INT96)
    stamp = dt.datetime(2030, 1, 1)
    low = struct.pack("<qi", 0, 2_440_588)
    assert not _view(int96, Compare("x", ">", stamp), min_value=low, max_value=low).excluded
    boolean = _descriptor(PhysicalType.BOOLEAN)
    assert not _view(boolean, Compare("x", ">", False), min_value=b"\x00", max_value=b"\x00")[0]
    assert _view(boolean, Compare("x", ">", True), min_value=b"\x00", max_value=b"\x01")[0]
    # Unsigned integers compare unsigned: 2**32 - 1 is the largest, not -1.
    uint = _descriptor(PhysicalType.INT32, LogicalType.integer(32, False))
    top = struct.pack("<i", -1)
    assert not _view(uint, Compare("x", ">", 2**31), min_value=b"\0" * 4, max_value=top)[0]
    assert _view(uint, Compare("x", ">", 2**32 - 1), min_value=b"\0" * 4, max_value=top)[0]


def test_an_aware_literal_cannot_order_a_local_time_column(tmp_path: Path) -> None:
    path = tmp_path / "local.parquet"
    pq.write_table(pa.table({"t": pa.array([dt.datetime(2024, 1, 1)], pa.timestamp("us"))}), path)
    aware = dt.datetime(2024, 1, 1, tzinfo=UTC)
    with pytest.raises(PredicateError, match="has no one place among the values of a column"):
        prune_sync(path, Compare("t", "<", aware))
    assert prune_sync(path, Compare("t", "<", aware.replace(tzinfo=None)))[0].kept is False
    # = and != still take it: equal to either reading, as they always did.
    plus2 = dt.datetime(2024, 1, 1, 2, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    for where in (Compare("t", "!=", plus2), Not(Compare("t", "!=", aware))):
        (v,) = prune_sync(path, where)
        assert lookup_sync(str(path), where).num_rows == (1 if isinstance(where, Not) else 0)
        assert v.kept == isinstance(where, Not)
    zone = _descriptor(PhysicalType.INT64, LogicalType.timestamp(TimeUnit.MICROS, True))
    assert not _view(zone, Compare("x", "<", aware), min_value=struct.pack("<q", 0),
                     max_value=struct.pack("<q", 5)).excluded  # fmt: skip
