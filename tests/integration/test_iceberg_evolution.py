"""Iceberg schema evolution and escaped partition values, against pyiceberg's own scan.

Tables are committed by pyiceberg (a SQL catalog on SQLite); each answer is compared with
pyiceberg's ``scan`` of the same table, or refused in one line where the files written
under an earlier schema would answer otherwise.
"""

from __future__ import annotations

import decimal
import warnings
from pathlib import Path
from typing import Any

import pytest

import pybloom_async as pba
from pybloom_async.errors import UnsupportedTypeError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("pyiceberg")
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.transforms import IdentityTransform  # noqa: E402
from pyiceberg.typedef import Record  # noqa: E402
from pyiceberg.types import (  # noqa: E402
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    NestedField,
    StringType,
)
from support.iceberg_catalog import sql_catalog  # noqa: E402
from support.iceberg_deletes import (  # noqa: E402
    commit_delete_files,
    equality_delete_file,
    position_delete_file,
)


@pytest.fixture
def catalog(tmp_path: Path) -> Any:
    return sql_catalog(tmp_path)


def _append(table: Any, data: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyiceberg 0.12 warns that it writes no filters
        table.append(pa.table(data))


def _ids(rows: Any) -> list[int]:
    return sorted(r["id"] for r in rows.to_pylist())


def _rows(rows: Any) -> list[dict[str, Any]]:
    return sorted(rows.to_pylist(), key=lambda r: r["id"])


def _ids64(*ids: int) -> Any:
    return pa.array(list(ids), pa.int64())


# ---- a column renamed, or dropped and its name reused ---------------------------------


@pytest.fixture
def renamed(catalog: Any) -> Any:
    """``a`` and ``b`` swap names after the first file: its statistics, null counts and
    filters under each name are the other column's now."""
    schema = Schema(
        NestedField(1, "id", LongType()),
        NestedField(2, "a", StringType()),
        NestedField(3, "b", StringType()),
        NestedField(4, "s", StringType()),
    )
    table = catalog.create_table("ns.renamed", schema=schema)
    _append(table, {"id": _ids64(1, 2), "a": ["a1", "a2"], "b": ["b1", "b2"],
                    "s": ["s1", "s2"]})  # fmt: skip
    with table.update_schema() as update:
        update.rename_column("a", "tmp")
    with table.update_schema() as update:
        update.rename_column("b", "a")
    with table.update_schema() as update:
        update.rename_column("tmp", "b")
        update.rename_column("s", "t")
    table = catalog.load_table("ns.renamed")
    _append(table, {"id": _ids64(3), "b": ["a3"], "a": ["b3"], "t": ["s3"]})
    return table


@pytest.mark.parametrize("where", ["a = 'b1'", "b IN ('a2', 'a3')", "t IS NOT NULL"])
def test_a_renamed_predicate_column_is_refused_never_pruned_by_name(
    renamed: Any, where: str
) -> None:
    """pyiceberg finds these rows by field id; matched by name, the first file's
    statistics of the other column (or of none) ruled out its row group."""
    assert _ids(renamed.scan(row_filter=where).to_arrow())  # the rows exist
    with pytest.raises(UnsupportedTypeError, match=r"\(a rename\)"):
        pba.lookup_sync(renamed, where, columns=["id"])
    with pytest.raises(UnsupportedTypeError, match=r"\(a rename\)"):
        pba.prune_sync(renamed, where)


def _rewritten(catalog: Any, name: str) -> Any:
    """The table with every data file written again, under its current schema."""
    table = catalog.load_table(name)
    rows = table.scan().to_arrow()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table.overwrite(rows)
    return catalog.load_table(name)


def test_a_renamed_column_is_answered_where_no_kept_file_predates_it(
    renamed: Any, catalog: Any
) -> None:
    """Only the files the manifests keep are looked at: here the second, written after
    the renames; once every file is rewritten, any predicate is answered."""
    where = "id = 3 AND a = 'b3'"
    expected = _rows(renamed.scan(row_filter=where, selected_fields=("id", "a")).to_arrow())
    assert _rows(pba.lookup_sync(renamed, where, columns=["id", "a"])) == expected
    assert expected == [{"id": 3, "a": "b3"}]
    table = _rewritten(catalog, "ns.renamed")
    for where in ["a = 'b1'", "b IN ('a2', 'a3')", "t IS NOT NULL"]:
        assert _rows(pba.lookup_sync(table, where)) == _rows(table.scan(row_filter=where)
                                                              .to_arrow())  # fmt: skip
        assert any(v.kept for v in pba.prune_sync(table, where))


def test_a_renamed_column_not_read_leaves_the_lookup_alone(renamed: Any) -> None:
    got = pba.lookup_sync(renamed, "id IN (1, 3)", columns=["id"])
    assert _rows(got) == _rows(renamed.scan(row_filter="id IN (1, 3)", selected_fields=("id",))
                               .to_arrow())  # fmt: skip
    with pytest.raises(UnsupportedTypeError, match="reads columns by name"):
        pba.lookup_sync(renamed, "id IN (1, 3)")  # t is read: the first file names it s


@pytest.fixture
def reused(catalog: Any) -> Any:
    """``s`` dropped and added again: the first file's ``s`` is another field."""
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "s", StringType()))
    table = catalog.create_table("ns.reused", schema=schema)
    _append(table, {"id": _ids64(1, 2), "s": ["x", "y"]})
    with table.update_schema() as update:
        update.delete_column("s")
    with table.update_schema() as update:
        update.add_column("s", StringType())
    table = catalog.load_table("ns.reused")
    _append(table, {"id": _ids64(3), "s": ["x"]})
    return table


@pytest.mark.parametrize("where", ["s IS NULL", "s = 'x'", "s != 'y'"])
def test_a_reused_name_is_refused(reused: Any, where: str) -> None:
    """``s IS NULL`` holds for the first file's rows (pyiceberg reads them as NULL); the
    old column's null count ruled its row group out."""
    assert _ids(reused.scan(row_filter=where).to_arrow())
    with pytest.raises(UnsupportedTypeError, match="dropped and its name reused"):
        pba.lookup_sync(reused, where)
    with pytest.raises(UnsupportedTypeError, match="dropped and its name reused"):
        pba.prune_sync(reused, where)


def test_a_reused_name_not_read_leaves_the_lookup_alone(reused: Any) -> None:
    got = pba.lookup_sync(reused, "id IN (1, 3)", columns=["id"])
    assert _ids(got) == [1, 3]


def test_a_file_without_field_ids_after_a_rename_is_refused(catalog: Any, tmp_path: Path) -> None:
    """pyiceberg reads a file added without field ids by the table's name mapping, which
    a rename extends: the old name's values under the new name. Read by name, they would
    be nulls."""
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "s", StringType()))
    table = catalog.create_table("ns.added", schema=schema)
    path = tmp_path / "added.parquet"
    pq.write_table(pa.table({"id": _ids64(1, 2), "s": ["x", "y"]}), path)
    table.add_files([path.as_uri()])
    with table.update_schema() as update:
        update.rename_column("s", "t")
    table = catalog.load_table("ns.added")
    assert _rows(table.scan(row_filter="id = 1").to_arrow()) == [{"id": 1, "t": "x"}]
    with pytest.raises(UnsupportedTypeError, match="no field ids"):
        pba.lookup_sync(table, "id = 1")
    assert _ids(pba.lookup_sync(table, "id = 1", columns=["id"])) == [1]


def test_an_equality_delete_on_a_renamed_column_never_brings_rows_back(
    catalog: Any, tmp_path: Path
) -> None:
    """The delete's column is read with the predicate's, by its name now: a file that names
    it otherwise is refused, even when the result does not ask for it."""
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "s", StringType()))
    table = catalog.create_table("ns.deleted", schema=schema)
    _append(table, {"id": _ids64(1, 2, 3), "s": ["a", "b", "c"]})
    table = commit_delete_files(table, [
        equality_delete_file(tmp_path / "e.parquet", table, {"s": ["b"]}),
    ])  # fmt: skip
    assert _ids(pba.lookup_sync(table, "id IN (1, 2, 3)", columns=["id"])) == [1, 3]
    with table.update_schema() as update:
        update.rename_column("s", "t")
    table = catalog.load_table("ns.deleted")
    with pytest.raises(UnsupportedTypeError, match="reads columns by name"):
        pba.lookup_sync(table, "id IN (1, 2, 3)", columns=["id"])


# ---- promoted types ---------------------------------------------------------------------


@pytest.fixture
def promoted(catalog: Any) -> Any:
    """``f`` float -> double, ``i`` int -> long, ``m`` decimal(5, 2) -> decimal(10, 2)."""
    schema = Schema(
        NestedField(1, "id", LongType()),
        NestedField(2, "f", FloatType()),
        NestedField(3, "i", IntegerType()),
        NestedField(4, "m", DecimalType(5, 2)),
    )
    table = catalog.create_table("ns.promoted", schema=schema)
    d = decimal.Decimal
    _append(table, {
        "id": _ids64(1, 2, 3),
        "f": pa.array([0.0, 0.1, 0.5], pa.float32()),
        "i": pa.array([1, -(2**31), 2**31 - 1], pa.int32()),
        "m": pa.array([d("123.45"), d("-1.00"), d("0.50")], pa.decimal128(5, 2)),
    })  # fmt: skip
    with table.update_schema() as update:
        update.update_column("f", DoubleType())
        update.update_column("i", LongType())
        update.update_column("m", DecimalType(10, 2))
    table = catalog.load_table("ns.promoted")
    _append(table, {
        "id": _ids64(4, 5),
        "f": pa.array([0.1, 0.25], pa.float64()),
        "i": pa.array([2**40, 7], pa.int64()),
        "m": pa.array([d("12345678.90"), d("123.45")], pa.decimal128(10, 2)),
    })  # fmt: skip
    return table


def _filtered(table: Any, where: str) -> list[int]:
    """The table's rows as pyiceberg reads them (promoted), filtered in the table's types."""
    duckdb = pytest.importorskip("duckdb")
    rows = table.scan().to_arrow()
    con = duckdb.connect()
    con.register("t", rows)
    return sorted(r[0] for r in con.sql(f"SELECT id FROM t WHERE {where}").fetchall())


@pytest.mark.parametrize("where", ["f = 0.1", "f > 0.1", "f != 0.1", "f IN (0.5, 0.1)"])
def test_float_promoted_to_double_refuses_a_literal_that_is_no_float32(
    promoted: Any, where: str
) -> None:
    """The first file stores FLOAT: 0.1 would be compared there as 0.1f, which the
    table reads as the double 0.10000000149011612 (equal to 0.1 there, not greater)."""
    with pytest.raises(UnsupportedTypeError, match=r"0\.1 is not a float32"):
        pba.lookup_sync(promoted, where)
    with pytest.raises(UnsupportedTypeError, match=r"0\.1 is not a float32"):
        pba.prune_sync(promoted, where)


FLOAT32_LITERALS = ["f = 0.5", "f > 0.25", "f != 0.5", "f <= 0.25", "f IN (0.5, 0.0)",
                    "f BETWEEN 0.0 AND 0.25", "f IS NULL"]  # fmt: skip


@pytest.mark.parametrize("where", FLOAT32_LITERALS)
def test_float_promoted_to_double_answers_float32_literals(promoted: Any, where: str) -> None:
    expected = _filtered(promoted, where)
    assert _ids(pba.lookup_sync(promoted, where)) == expected
    assert _ids(promoted.scan(row_filter=where).to_arrow()) == expected


def test_a_double_never_a_float_takes_any_literal(catalog: Any) -> None:
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "f", DoubleType()))
    table = catalog.create_table("ns.double", schema=schema)
    _append(table, {"id": _ids64(1, 2), "f": pa.array([0.1, 0.2], pa.float64())})
    assert _ids(pba.lookup_sync(table, "f = 0.1")) == [1]
    assert _ids(pba.lookup_sync(table, "f > 0.1")) == [2]


@pytest.mark.parametrize(
    "where",
    ["i = 1099511627776", "i < 1099511627776", "i > 5", "i != 1099511627776",
     "i IN (1, 1099511627776)", "i = -2147483648", "i <= -2147483649", "i >= 2147483647"],
)  # fmt: skip
def test_int_promoted_to_long_equals_the_tables_rows(promoted: Any, where: str) -> None:
    """Compared in the table's type. pyiceberg 0.12's own row filter casts a literal into
    the old file's int32 (``i IN (1, 1099511627776)`` gives it the 2147483647 row too),
    so its unfiltered scan, filtered in the table's type, is the oracle."""
    assert _ids(pba.lookup_sync(promoted, where)) == _filtered(promoted, where)


@pytest.mark.parametrize(
    "where",
    ["m = 123.45", "m < 12345678.90", "m = 12345678.90", "m != 12345678.90", "m > 100",
     "m IN (123.45, 12345678.90)", "m = 123.456", "m BETWEEN 0.5 AND 200"],
)  # fmt: skip
def test_decimal_widened_equals_the_tables_rows(promoted: Any, where: str) -> None:
    """pyiceberg 0.12's own row filter fails on the widened column (it builds the literal
    with the file's precision), so its unfiltered scan, filtered in the table's type, is
    the oracle."""
    assert _ids(pba.lookup_sync(promoted, where)) == _filtered(promoted, where)


# ---- partition values that need escaping ------------------------------------------------


def test_float_promoted_to_double_once_no_file_stores_float(promoted: Any, catalog: Any) -> None:
    table = _rewritten(catalog, "ns.promoted")
    for where in ["f = 0.1", "f > 0.1", "f != 0.1"]:
        assert _ids(pba.lookup_sync(table, where)) == _filtered(table, where)


@pytest.fixture
def escaped(catalog: Any) -> Any:
    """pyiceberg writes the partition value ``x%y`` in the folder ``p=x%25y`` (so named on
    disk) and records ``file://.../p=x%25y/...``; ``ü`` in ``p=%C3%BC``."""
    schema = Schema(NestedField(1, "id", LongType()), NestedField(2, "p", StringType()))
    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "p"))
    table = catalog.create_table("ns.escaped", schema=schema, partition_spec=spec)
    _append(table, {"id": _ids64(1, 2, 3, 4), "p": ["x%y", "ü", "a b", "x%y"]})
    paths = [t.file.file_path for t in table.scan().plan_files()]
    assert any("p=x%25y" in p for p in paths) and any("p=%C3%BC" in p for p in paths)
    return table


@pytest.mark.parametrize("where", ["id IN (1, 2, 3, 4)", "p = 'x%y'", "p = 'ü' OR id = 4"])
def test_escaped_partition_values_lookup_and_prune(escaped: Any, where: str) -> None:
    expected = _rows(escaped.scan(row_filter=where).to_arrow())
    assert _rows(pba.lookup_sync(escaped, where)) == expected
    verdicts = pba.prune_sync(escaped, where)
    assert verdicts and all(v.rule != pba.Rule.UNREADABLE for v in verdicts)
    assert sum(v.num_rows or 0 for v in verdicts if v.kept) >= len(expected)


def test_escaped_partition_values_get_filters(escaped: Any, catalog: Any) -> None:
    before = _rows(escaped.scan().to_arrow())
    result = pba.add_bloom_filters_sync(escaped, ["id"])
    assert len(result.files) == 3 and all(f.written for f in result.files)
    table = catalog.load_table("ns.escaped")
    assert _rows(table.scan().to_arrow()) == before  # pyiceberg reads the copies
    paths = [t.file.file_path for t in table.scan().plan_files()]
    assert all(".bf-" in p for p in paths) and any("p=x%25y" in p for p in paths)
    verdicts = pba.prune_sync(table, "id = 2")
    assert pba.Rule.BLOOM_FILTER in {v.rule for v in verdicts}
    assert all(v.rule != pba.Rule.UNREADABLE for v in verdicts)
    assert _rows(pba.lookup_sync(table, "id IN (1, 2)")) == [
        {"id": 1, "p": "x%y"}, {"id": 2, "p": "ü"}
    ]  # fmt: skip


def test_escaped_partition_folders_hold_delete_files_too(escaped: Any) -> None:
    """A position delete file in the folder ``p=x%25y`` names its data file as the
    manifests spell it, and is found where pyiceberg finds it."""
    (task,) = [t for t in escaped.scan().plan_files() if "p=x%25y" in t.file.file_path]
    spelled = task.file.file_path
    folder = spelled.removeprefix("file://").rpartition("/")[0]
    path = Path(folder) / "deletes.parquet"
    delete = position_delete_file(path, [(spelled, 0)], partition=Record("x%y"),
                                  uri=f"file://{path}")  # fmt: skip
    table = commit_delete_files(escaped, [delete])
    expected = _rows(table.scan().to_arrow())
    assert [r["id"] for r in expected] == [2, 3, 4]  # pyiceberg applies it
    assert _rows(pba.lookup_sync(table, "id IN (1, 2, 3, 4)")) == expected
