"""The answer's rows and schema against DuckDB's ``read_parquet(union_by_name=true,
hive_partitioning=true)``, where the lake's layout or its writers make them hard: a key met
twice on one path, a column later partitions gained, a lake index, mixed writers, and every
file ruled out by its folders.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import pytest

from pybloom_async import (
    PredicateError,
    SchemaMismatchError,
    build_lake_index_sync,
    col,
    lookup_sync,
    prune_sync,
    pruned_dataset_sync,
)

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
duckdb = pytest.importorskip("duckdb")

UTC = dt.timezone.utc


def _duckdb(
    root: Path, where: str, hive_types: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    """DuckDB's rows over the lake (every column, in its order), sorted by id."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    types = f", hive_types={hive_types!r}" if hive_types else ""
    sql = (
        f"SELECT * FROM read_parquet('{root}/**/*.parquet', union_by_name=true, "
        f"hive_partitioning=true{types}) WHERE {where} ORDER BY id"
    )
    got = con.sql(sql).to_arrow_table()
    return _utc(got.to_pylist())


def _duckdb_names(root: Path) -> list[str]:
    con = duckdb.connect()
    sql = (
        f"SELECT * FROM read_parquet('{root}/**/*.parquet', union_by_name=true, "
        "hive_partitioning=true) LIMIT 0"
    )
    return [d[0] for d in con.execute(sql).description]


def _utc(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Instants compared as instants (DuckDB gives them in its session's zone)."""
    return [
        {
            k: v.astimezone(UTC) if isinstance(v, dt.datetime) and v.tzinfo else v
            for k, v in r.items()
        }
        for r in rows
    ]


def _ours(table: Any) -> list[dict[str, Any]]:
    return _utc(table.sort_by("id").to_pylist())


# ---- a key met twice on one path -------------------------------------------------------------


@pytest.fixture
def repeated(tmp_path: Path) -> Path:
    """``a=1/a=2/f.parquet`` (the key met twice on one path) beside ``a=3/g.parquet``."""
    root = tmp_path / "lake"
    (root / "a=1" / "a=2").mkdir(parents=True)
    (root / "a=3").mkdir()
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}), root / "a=1/a=2/f.parquet")
    pq.write_table(pa.table({"id": pa.array([3], pa.int64())}), root / "a=3/g.parquet")
    return root


@pytest.mark.parametrize("partitioning", ["hive", {"a": "int64"}])
@pytest.mark.parametrize("where", ["a = 1", "a = 2", "a = 3", "a >= 2", "id >= 0"])
def test_a_key_met_twice_on_one_path_reads_as_duckdb(
    repeated: Path, partitioning: Any, where: str
) -> None:
    """The outermost folder gives the value (as DuckDB and pyarrow read it), so a folder the
    predicate rules out holds no file that matches, whatever lies below it."""
    got = lookup_sync(str(repeated), where, partitioning=partitioning)
    assert _ours(got) == _duckdb(repeated, where)
    assert got.column_names == ["id", "a"]
    dataset = pruned_dataset_sync(str(repeated), where, partitioning=partitioning)
    scanned = duckdb.connect().from_arrow(dataset).filter(where).to_arrow_table()
    assert _ours(pa.table(scanned)) == _duckdb(repeated, where)


# ---- a column later partitions have ----------------------------------------------------------


@pytest.fixture
def evolved(tmp_path: Path) -> Path:
    """``device`` only in the later partition's file."""
    root = tmp_path / "lake"
    (root / "dt=2024-01-01").mkdir(parents=True)
    (root / "dt=2024-02-01").mkdir()
    early = pa.table({"id": pa.array([1, 2], pa.int64())})
    late = pa.table({"id": pa.array([3, 4], pa.int64()), "device": ["ios", None]})
    pq.write_table(early, root / "dt=2024-01-01/f.parquet")
    pq.write_table(late, root / "dt=2024-02-01/g.parquet")
    return root


@pytest.mark.parametrize("partitioning", ["hive", {"dt": "date"}])
@pytest.mark.parametrize(
    "where",
    [
        "device IS NULL AND dt = '2024-01-01'",
        "device = 'ios' AND dt = '2024-01-01'",
        "device IS NULL AND dt = '2024-02-01'",
    ],
)
def test_a_column_later_partitions_have_reads_as_null(
    evolved: Path, partitioning: Any, where: str
) -> None:
    got = lookup_sync(str(evolved), where, partitioning=partitioning)
    assert _ours(got) == _duckdb(evolved, where)
    assert got.column_names == _duckdb_names(evolved)
    dataset = pruned_dataset_sync(str(evolved), where, partitioning=partitioning)
    scanned = duckdb.connect().from_arrow(dataset).filter(where).to_arrow_table()
    assert _ours(pa.table(scanned)) == _duckdb(evolved, where)


@pytest.mark.parametrize("partitioning", ["hive", {"dt": "date"}])
def test_prune_keeps_the_files_of_a_column_later_partitions_have(
    evolved: Path, partitioning: Any
) -> None:
    """prune as lookup: the column is in the lake, so the files read hold NULL there."""
    got = prune_sync(
        str(evolved), "device IS NULL AND dt = '2024-01-01'", partitioning=partitioning
    )
    assert [(Path(v.file).name, v.kept) for v in got] == [("f.parquet", True)]
    got = prune_sync(
        str(evolved), "device = 'ios' AND dt = '2024-01-01'", partitioning=partitioning
    )
    assert [Path(v.file).name for v in got] == ["f.parquet"]  # kept or not: no error
    with pytest.raises(PredicateError, match="no file read has this column"):
        prune_sync(str(evolved), "devise IS NULL AND dt = '2024-01-01'", partitioning=partitioning)


@pytest.mark.parametrize("partitioning", ["hive", {"dt": "date"}])
def test_a_column_no_file_of_the_lake_has_is_still_a_mistake(
    evolved: Path, partitioning: Any
) -> None:
    with pytest.raises(PredicateError, match="no file read has this column"):
        lookup_sync(str(evolved), "devise IS NULL AND dt = '2024-01-01'", partitioning=partitioning)
    with pytest.raises(PredicateError, match="no file read has this column"):
        pruned_dataset_sync(
            str(evolved), "devise IS NULL AND dt = '2024-01-01'", partitioning=partitioning
        )


# ---- the lake index --------------------------------------------------------------------------


def _index_cases(root: Path, x_late: Any) -> list[Any]:
    """Each lookup's answer (its schema and rows) or its error, as text."""
    out: list[Any] = []
    for where, columns in [("id = 1", ["id", "x"]), ("id = 1", ["x"]), ("id = 1", None)]:
        try:
            got = lookup_sync(str(root), where, columns=columns)
            out.append((str(got.schema), got.to_pylist()))
        except SchemaMismatchError as exc:
            out.append(type(exc).__name__)
    return out


@pytest.mark.parametrize("x_late", [pa.int64(), pa.string()], ids=["promoted", "conflict"])
def test_the_lake_index_never_changes_the_answer(tmp_path: Path, x_late: Any) -> None:
    """With ``columns`` given, the files the index rules out count for the types too."""
    early = pa.table({"id": pa.array([1], pa.int64()), "x": pa.array([10], pa.int32())})
    late = pa.table({"id": pa.array([2], pa.int64()), "x": pa.array([20], pa.int64())})
    pq.write_table(early, tmp_path / "a.parquet")
    pq.write_table(late.set_column(1, "x", late["x"].cast(x_late)), tmp_path / "b.parquet")
    before = _index_cases(tmp_path, x_late)
    build_lake_index_sync(str(tmp_path), ["id"])
    assert _index_cases(tmp_path, x_late) == before
    if x_late == pa.int64():
        got = lookup_sync(str(tmp_path), "id = 1", columns=["id", "x"])
        assert got.schema.field("x").type == pa.int64()  # DuckDB: BIGINT
        assert _ours(got) == _duckdb(tmp_path, "id = 1")
    else:
        assert before == ["SchemaMismatchError"] * 3


# ---- mixed writers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second", "result"),
    [
        (pa.binary(16), pa.binary(), pa.binary()),
        (pa.binary(16), pa.large_binary(), pa.large_binary()),
        (pa.binary(16), pa.binary(4), pa.binary()),
        (pa.timestamp("us", "Europe/Berlin"), pa.timestamp("us", "UTC"), pa.timestamp("us", "UTC")),
        (
            pa.timestamp("ms", "Europe/Berlin"),
            pa.timestamp("us", "Asia/Tokyo"),
            pa.timestamp("us", "UTC"),
        ),
    ],
    ids=["fixed+binary", "fixed+large", "fixed+fixed", "berlin+utc", "ms-berlin+us-tokyo"],
)
def test_mixed_writers_promote_within_one_parquet_kind(
    tmp_path: Path, first: Any, second: Any, result: Any
) -> None:
    if pa.types.is_timestamp(first):
        instants = [
            dt.datetime(2024, 5, 1, 12, 30, tzinfo=UTC),
            dt.datetime(2024, 5, 2, tzinfo=UTC),
        ]
        values = [pa.array([v], pa.timestamp("us", "UTC")) for v in instants]
    else:
        values = [pa.array([b"\x01" * 16]), pa.array([b"\x02\x03"])]
    for name, kind, value, i in [("a", first, values[0], 1), ("b", second, values[1], 2)]:
        if pa.types.is_fixed_size_binary(kind) and kind.byte_width != len(value[0].as_py()):
            value = pa.array([value[0].as_py()[:1] * kind.byte_width])
        table = pa.table({"id": pa.array([i], pa.int64()), "v": value.cast(kind)})
        pq.write_table(table, tmp_path / f"{name}.parquet")
    got = lookup_sync(str(tmp_path), "id >= 1")
    assert got.schema.field("v").type == result
    assert _ours(got) == _duckdb(tmp_path, "id >= 1")
    # The second file's value, matched in each file by its own type.
    second = got.sort_by("id")["v"][1].as_py()
    assert lookup_sync(str(tmp_path), col("v") == second)["id"].to_pylist() == [2]
    assert _ours(lookup_sync(str(tmp_path), "id = 2")) == _duckdb(tmp_path, "id = 2")
    dataset = pruned_dataset_sync(str(tmp_path), "id >= 1")
    assert dataset.schema.field("v").type == result
    assert _ours(dataset.to_table()) == _duckdb(tmp_path, "id >= 1")


def test_an_instant_and_a_local_time_do_not_unify(tmp_path: Path) -> None:
    """Two Parquet kinds (isAdjustedToUTC true and false): a mismatch, not a guess."""
    aware = pa.array([dt.datetime(2024, 5, 1, tzinfo=UTC)], pa.timestamp("us", "UTC"))
    local = pa.array([dt.datetime(2024, 5, 1)], pa.timestamp("us"))
    pq.write_table(pa.table({"id": [1], "v": aware}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"id": [2], "v": local}), tmp_path / "b.parquet")
    with pytest.raises(SchemaMismatchError, match="'v'"):
        lookup_sync(str(tmp_path), "id >= 1")


# ---- every file ruled out by its folders -----------------------------------------------------


@pytest.mark.parametrize("partitioning", ["hive", {"dt": "date"}])
def test_an_empty_answer_keeps_the_files_columns(evolved: Path, partitioning: Any) -> None:
    """Folders rule out every file: the answer still has every file's columns (DuckDB's)."""
    where = "dt = '2099-01-01'"
    expected = _duckdb_names(evolved)
    got = lookup_sync(str(evolved), where, partitioning=partitioning)
    assert got.num_rows == 0 and got.column_names == expected
    assert got.schema == lookup_sync(str(evolved), "dt >= '2024-01-01'").schema
    dataset = pruned_dataset_sync(str(evolved), where, partitioning=partitioning)
    assert dataset.schema.names == expected
    # An engine given the dataset finds the files' columns, and no row.
    assert duckdb.connect().from_arrow(dataset).filter("id = 1").select("id").fetchall() == []


@pytest.mark.servers
@pytest.mark.parametrize("page", [1, 1000], ids=["folders-listed-apart", "one-listing"])
def test_a_key_met_twice_on_one_path_on_s3(
    repeated: Path, s3_server: Any, monkeypatch: pytest.MonkeyPatch, page: int
) -> None:
    """On S3 the folders are skipped as they are listed (top-level ones not listed at all,
    deeper ones' files dropped): the same answer as DuckDB's over the local copy."""
    from pybloom_async.io import listing

    prefix = f"repeated-{os.getpid()}-{page}/"
    for path in sorted(repeated.rglob("*.parquet")):
        s3_server.put(prefix + path.relative_to(repeated).as_posix(), path.read_bytes())
    monkeypatch.setattr(listing, "PAGE_SIZE", page)
    url, options = s3_server.url(prefix), s3_server.options
    for where in ["a = 1", "a = 2", "a = 3"]:
        got = lookup_sync(url, where, options=options, partitioning={"a": "int64"})
        assert _ours(got) == _duckdb(repeated, where), where


@pytest.mark.parametrize("hive", [False, True])
def test_files_the_index_rules_out_give_each_column_in_the_listing_order(
    tmp_path: Path, hive: bool
) -> None:
    """Many files of a few schemas, ruled out by the lake index: the answer has every
    column of every file, in the order the files are listed, as without the index (each
    schema is taken once however many files share it)."""
    shapes = [
        {"id": pa.array([0], pa.int64()), "x": pa.array([1], pa.int32())},
        {"id": pa.array([0], pa.int64()), "y": pa.array(["a"]), "x": pa.array([1], pa.int64())},
        {"id": pa.array([0], pa.int64()), "z": pa.array([1.5])},
    ]
    for i in range(9):
        table = pa.table(
            {k: v if k != "id" else pa.array([i], pa.int64()) for k, v in shapes[i % 3].items()}
        )
        folder = tmp_path / f"k={i % 2}" if hive else tmp_path
        folder.mkdir(exist_ok=True)
        pq.write_table(table, folder / f"f{i}.parquet")
    answers = {}
    for key in (0, 4, 8):
        answers[key] = lookup_sync(str(tmp_path), f"id = {key}", use_index="none")
    build_lake_index_sync(str(tmp_path), ["id"])
    seen: list[tuple[int, int]] = []
    for key, expected in answers.items():
        seen.clear()
        got = lookup_sync(str(tmp_path), f"id = {key}", progress=lambda *a: seen.append(a))
        assert seen[-1] == (9, 9)  # every file listed counts, those taken once by kind too
        assert got.schema == expected.schema
        assert got.equals(expected)
        # Listed f0 (id, x), f1 (id, y, x), f2 (id, z), ...; hive lists k=0/ first.
        names = ["id", "x", "z", "y", "k"] if hive else ["id", "x", "y", "z"]
        assert got.column_names == names
        assert got.schema.field("x").type == pa.int64()
