"""Hive partition folders as columns, at every door, on lakes pyarrow and DuckDB wrote.

``key=value`` folders below the listed directory or prefix are columns of the files under
them: in the result, usable in ``where``, typed by the documented rule or as given; files
their folders rule out are never opened (requests counted), and with the types given the
folders are not even listed.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from pybloom_async import (
    InvalidArgumentError,
    PredicateError,
    Rule,
    SchemaMismatchError,
    SourceStats,
    col,
    lookup_batches,
    lookup_sync,
    prune_sync,
    pruned_dataset_sync,
)
from pybloom_async.io import listing

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pads = pytest.importorskip("pyarrow.dataset")

#: Awkward values, as pyarrow and DuckDB escape them in folder names (a NULL is
#: __HIVE_DEFAULT_PARTITION__).
AWKWARD = ["a b", "x=y", "a/b", "ü", "", None, "100%", "DE"]


def _awkward_table() -> Any:
    n = len(AWKWARD)
    return pa.table({"id": pa.array(range(n), pa.int64()), "c": pa.array(AWKWARD, pa.string())})


@pytest.fixture(params=["pyarrow", "duckdb"])
def awkward(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """One file per awkward value, partitioned by ``c``, written by pyarrow or DuckDB."""
    root = tmp_path / request.param
    table = _awkward_table()
    if request.param == "pyarrow":
        pq.write_to_dataset(table, root, partition_cols=["c"])
    else:
        duckdb = pytest.importorskip("duckdb")
        con = duckdb.connect()
        con.register("t", table)
        con.execute(f"COPY t TO '{root}' (FORMAT parquet, PARTITION_BY (c))")
        con.close()
    return root


def test_awkward_values_come_back_as_written(awkward: Path) -> None:
    got = lookup_sync(str(awkward), col("id").isin(list(range(len(AWKWARD)))))
    assert got.schema == pa.schema([("id", pa.int64()), ("c", pa.string())])
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == _awkward_table().to_pylist()
    # pyarrow's own reading of the same folders agrees
    theirs = pads.dataset(awkward, partitioning="hive").to_table().to_pylist()
    assert sorted(theirs, key=lambda r: r["id"]) == _awkward_table().to_pylist()


@pytest.mark.parametrize("value", [v for v in AWKWARD if v is not None])
def test_awkward_values_in_where(awkward: Path, value: str) -> None:
    where = col("c") == value
    expected = [{"id": AWKWARD.index(value), "c": value}]
    assert lookup_sync(str(awkward), where).to_pylist() == expected
    assert lookup_sync(str(awkward), where.to_text()).to_pylist() == expected
    kept = {
        os.path.relpath(v.file, awkward).split(os.sep)[0] for v in prune_sync(str(awkward), where)
    }
    assert len(kept) == 1  # every other folder is ruled out: no verdict, no read


def test_null_partition_and_null_safe_equality(awkward: Path) -> None:
    assert lookup_sync(str(awkward), col("c").eq_null_safe(None)).to_pylist() == [
        {"id": AWKWARD.index(None), "c": None}
    ]
    assert lookup_sync(str(awkward), col("c") == None).num_rows == 0  # noqa: E711
    assert lookup_sync(str(awkward), "c IN ('DE', NULL)").to_pylist() == [{"id": 7, "c": "DE"}]


def _day_lake(root: Path, days: int = 4, files: int = 3) -> list[Path]:
    """``dt=2026-11-0D/country=XX/part-F.parquet``; ids unique, 2 row groups each."""
    paths = []
    for d in range(days):
        for c, country in enumerate(("DE", "FR")):
            folder = root / f"dt=2026-11-{d + 1:02d}" / f"country={country}"
            folder.mkdir(parents=True)
            for f in range(files):
                base = ((d * 2 + c) * files + f) * 100
                table = pa.table({"id": pa.array(range(base, base + 100), pa.int64())})
                path = folder / f"part-{f}.parquet"
                pq.write_table(table, path, row_group_size=50, bloom_filter_options={"id": True})
                paths.append(path)
    return paths


def test_types_are_inferred_and_the_columns_come_after_the_files(tmp_path: Path) -> None:
    _day_lake(tmp_path)
    got = lookup_sync(str(tmp_path), "id = 1234")
    assert got.schema == pa.schema(
        [("id", pa.int64()), ("dt", pa.date32()), ("country", pa.string())]
    )
    assert got.to_pylist() == [{"id": 1234, "dt": dt.date(2026, 11, 3), "country": "DE"}]


@pytest.mark.parametrize(
    ("values", "want"),
    [
        (["2026", "-3", "0"], pa.int64()),
        (["2026", "007"], pa.string()),  # not written as an integer is written
        (["2026-11-01", "2026-11-02"], pa.date32()),
        (["2026-11-01 10:00:00", "2026-11-02T11:30:00.5"], pa.timestamp("us")),
        (["2026-11-01", "2026-11-01 10:00:00"], pa.string()),
        (["12", "DE"], pa.string()),
        (["99999999999999999999"], pa.string()),  # beyond int64
        ([None], pa.string()),
    ],
)
def test_the_inference_rule(tmp_path: Path, values: list[str | None], want: Any) -> None:
    for i, value in enumerate(values):
        name = "__HIVE_DEFAULT_PARTITION__" if value is None else value.replace(":", "%3A")
        folder = tmp_path / f"k={name}"
        folder.mkdir()
        pq.write_table(pa.table({"id": [i]}), folder / "p.parquet")
    got = lookup_sync(str(tmp_path), col("id").isin(list(range(len(values)))))
    assert got.schema.field("k").type == want


def test_types_given_as_a_dict_or_a_schema(tmp_path: Path) -> None:
    _day_lake(tmp_path)
    given = lookup_sync(str(tmp_path), "id = 1234", partitioning={"dt": "string"})
    # only the columns named are partition columns
    assert given.schema == pa.schema([("id", pa.int64()), ("dt", pa.string())])
    assert given.to_pylist() == [{"id": 1234, "dt": "2026-11-03"}]
    schema = pa.schema([("dt", pa.date32()), ("country", pa.dictionary(pa.int8(), pa.string()))])
    with pytest.raises(InvalidArgumentError, match="not a partition column type"):
        lookup_sync(str(tmp_path), "id = 1234", partitioning=schema)
    schema = pa.schema([("country", pa.large_string()), ("dt", pa.timestamp("ms"))])
    got = lookup_sync(str(tmp_path), "id = 1234", partitioning=schema)
    assert got.schema == pa.schema(  # in the order given
        [("id", pa.int64()), ("country", pa.large_string()), ("dt", pa.timestamp("ms"))]
    )
    assert got.to_pylist() == [{"id": 1234, "country": "DE", "dt": dt.datetime(2026, 11, 3)}]


def test_a_value_not_of_its_given_type_names_the_file(tmp_path: Path) -> None:
    _day_lake(tmp_path, days=1, files=1)
    with pytest.raises(SchemaMismatchError, match="'DE' of 'country' is not a int64"):
        lookup_sync(str(tmp_path), "id = 5", partitioning={"country": "int64"})


def test_a_literal_not_of_the_columns_type_is_the_prune_error(tmp_path: Path) -> None:
    _day_lake(tmp_path, days=2, files=1)
    for call in (lookup_sync, prune_sync, pruned_dataset_sync):
        with pytest.raises(PredicateError, match="yesterday"):
            call(str(tmp_path), "dt = 'yesterday' AND id = 5")


def _raises_at_every_door(root: Path, where: str, message: str) -> None:
    """``where`` over the lake at ``root`` raises PredicateError (``message``) at lookup,
    prune, pruned_dataset and lookup_batches."""
    for call in (lookup_sync, prune_sync, pruned_dataset_sync):
        with pytest.raises(PredicateError, match=message):
            call(str(root), where)

    async def batches() -> None:
        async for _ in lookup_batches(str(root), where):
            pass

    with pytest.raises(PredicateError, match=message):
        anyio.run(batches)


@pytest.mark.parametrize(
    "where",
    [
        # the folders make it TRUE for every file read: no residual is left
        "(country = 'DE' OR id = 'abc') AND country = 'DE'",
        # a residual is left, without the leaf typed wrong
        "(country = 'DE' OR id = 'abc') AND country = 'DE' AND id > 5",
    ],
)
def test_a_literal_typed_wrong_is_an_error_where_the_folders_decide_without_it(
    tmp_path: Path, where: str
) -> None:
    # 'abc' for the INT64 id is a mistake in every file read, whatever the folders decide
    # of the rest (the FR files are ruled out, the DE files are read).
    _day_lake(tmp_path, days=1, files=1)
    _raises_at_every_door(tmp_path, where, "'abc' is not a value of this column")
    # typed right, the same predicates answer
    assert lookup_sync(str(tmp_path), where.replace("'abc'", "7")).num_rows > 0


def test_a_literal_typed_wrong_is_an_error_where_the_folders_rule_out_every_file(
    tmp_path: Path,
) -> None:
    # No folder country=XX: no file is read, and the footers of those ruled out are read
    # for the answer's columns: the first that has id types its literal, as a file read.
    _day_lake(tmp_path, days=1, files=1)
    where = "country = 'XX' AND id = 'abc'"
    _raises_at_every_door(tmp_path, where, "'abc' is not a value of this column")
    # typed right, the answer is empty, with the files' columns
    got = lookup_sync(str(tmp_path), "country = 'XX' AND id = 7")
    assert got.num_rows == 0 and "id" in got.column_names
    assert prune_sync(str(tmp_path), "country = 'XX' AND id = 7") == []


def test_turned_off_folders_are_plain_folders(tmp_path: Path) -> None:
    _day_lake(tmp_path, days=1, files=1)
    got = lookup_sync(str(tmp_path), "id = 5", partitioning=None)
    assert got.column_names == ["id"]
    with pytest.raises(PredicateError, match="no file read has this column"):
        lookup_sync(str(tmp_path), "dt = '2026-11-01' AND id = 5", partitioning=False)


# ---- what is read --------------------------------------------------------------------------


def test_a_key_and_a_partition_equality_read_only_that_folders_files(tmp_path: Path) -> None:
    paths = _day_lake(tmp_path)
    folder = [p for p in paths if "dt=2026-11-02" in str(p) and "country=DE" in str(p)]
    where = "dt = '2026-11-02' AND country = 'DE' AND id = 650"
    alone = SourceStats()
    assert lookup_sync([str(p) for p in folder], "id = 650", stats=alone).num_rows == 1
    stats = SourceStats()
    got = lookup_sync(str(tmp_path), where, stats=stats)
    assert got.to_pylist() == [{"id": 650, "dt": dt.date(2026, 11, 2), "country": "DE"}]
    assert stats.requests == alone.requests  # the 3 files of that folder, nothing else
    verdicts = prune_sync(str(tmp_path), where)
    assert {v.file for v in verdicts} == {str(p) for p in folder}


def test_a_predicate_on_partition_columns_only_keeps_every_row_group(tmp_path: Path) -> None:
    _day_lake(tmp_path, days=2, files=2)
    verdicts = prune_sync(str(tmp_path), "country = 'FR' AND dt = '2026-11-01'")
    assert len(verdicts) == 4 and all(v.kept and v.rule is Rule.PARTITION for v in verdicts)
    got = lookup_sync(str(tmp_path), "country = 'FR' AND dt = '2026-11-01'")
    assert got.num_rows == 200


def test_an_or_across_partition_and_file_columns(tmp_path: Path) -> None:
    _day_lake(tmp_path, days=2, files=1)
    where = "dt = '2026-11-02' OR id = 5"
    got = lookup_sync(str(tmp_path), where)
    expected = {5} | set(range(200, 400))
    assert set(got.column("id").to_pylist()) == expected and got.num_rows == len(expected)
    verdicts = prune_sync(str(tmp_path), where)
    kept = {(os.path.relpath(v.file, tmp_path), v.row_group) for v in verdicts if v.kept}
    # day 1: only the row group holding id 5 (its filter and statistics); day 2: every one
    assert ("dt=2026-11-01/country=DE/part-0.parquet", 0) in kept
    assert ("dt=2026-11-01/country=FR/part-0.parquet", 0) not in kept
    assert all(("dt=2026-11-02/country=" + c + "/part-0.parquet", g) in kept
               for c in ("DE", "FR") for g in (0, 1))  # fmt: skip


def test_a_file_its_folders_keep_whole_still_counts_for_the_columns_it_has(
    tmp_path: Path,
) -> None:
    """A column only a file kept whole by its folders has is still a column a file read
    has: not the "no file read has this column" error."""
    for value, columns in (("1", {"id": [1], "email": ["a@x"]}), ("2", {"id": [2]})):
        (tmp_path / f"k={value}").mkdir()
        pq.write_table(pa.table(columns), tmp_path / f"k={value}" / "p.parquet")
    where = "k = 1 OR email = 'b@x'"
    verdicts = prune_sync(str(tmp_path), where)
    rules = {os.path.relpath(v.file, tmp_path): v.rule for v in verdicts}
    assert rules == {"k=1/p.parquet": Rule.PARTITION, "k=2/p.parquet": Rule.MISSING_COLUMN}
    assert lookup_sync(str(tmp_path), where).to_pylist() == [{"id": 1, "email": "a@x", "k": 1}]
    with pytest.raises(PredicateError, match="no file read has this column"):
        prune_sync(str(tmp_path), "k = 1 OR mail = 'b@x'")


def test_given_types_skip_folders_before_they_are_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _day_lake(tmp_path)
    entered: list[str] = []
    real = os.scandir

    def spy(path: Any) -> Any:
        entered.append(os.path.relpath(path, tmp_path))
        return real(path)

    monkeypatch.setattr(listing.os, "scandir", spy)
    where = "dt = '2026-11-02' AND id = 650"
    inferred = lookup_sync(str(tmp_path), where)
    walked = sorted(entered)
    entered.clear()
    given = lookup_sync(str(tmp_path), where, partitioning={"dt": "date", "country": "string"})
    assert given.equals(inferred)
    assert sorted(entered) == [".", "dt=2026-11-02", "dt=2026-11-02/country=DE",
                               "dt=2026-11-02/country=FR"]  # fmt: skip
    assert len(walked) == 1 + 4 + 8  # inferred types need every folder's value


def test_the_path_wins_over_a_column_of_the_same_name(tmp_path: Path) -> None:
    folder = tmp_path / "c=12"
    folder.mkdir()
    pq.write_table(pa.table({"id": [1, 2], "c": ["x", "y"]}), folder / "p.parquet")
    (tmp_path / "c=13").mkdir()
    pq.write_table(pa.table({"id": [3], "c": ["z"]}), tmp_path / "c=13" / "p.parquet")
    got = lookup_sync(str(tmp_path), "id IN (1, 2, 3)")
    assert got.to_pylist() == [{"id": 1, "c": 12}, {"id": 2, "c": 12}, {"id": 3, "c": 13}]
    assert lookup_sync(str(tmp_path), "c = 12").num_rows == 2
    dataset = pruned_dataset_sync(str(tmp_path), "id = 1")
    assert dataset.schema == got.schema
    assert dataset.to_table().to_pylist() == [{"id": 1, "c": 12}, {"id": 2, "c": 12}]


def test_a_file_above_the_folders_holds_null_there(tmp_path: Path) -> None:
    _day_lake(tmp_path, days=1, files=1)
    pq.write_table(pa.table({"id": pa.array([7000], pa.int64())}), tmp_path / "top.parquet")
    got = lookup_sync(str(tmp_path), "id IN (5, 7000)")
    assert got.to_pylist() == [
        {"id": 7000, "dt": None, "country": None},
        {"id": 5, "dt": dt.date(2026, 11, 1), "country": "DE"},
    ]
    assert lookup_sync(str(tmp_path), col("dt").eq_null_safe(None)).column("id").to_pylist() == [
        7000
    ]


def test_a_literal_not_of_a_given_type_raises_where_no_folder_is_left(tmp_path: Path) -> None:
    """The folders skipped at listing (dt rules out every one) leave no file to decide
    country's literal with: it is still checked, at every door, as prune checked it."""
    _day_lake(tmp_path, days=2, files=1)
    where = "dt = '2030-01-01' AND country = 'DE'"
    for call in (lookup_sync, prune_sync, pruned_dataset_sync):
        with pytest.raises(PredicateError, match="country"):
            call(str(tmp_path), where, partitioning={"dt": "date", "country": "int64"})


def test_a_given_partition_column_no_folder_names_is_known(tmp_path: Path) -> None:
    """A column the partitioning names is every file's (NULL where no folder gives it):
    prune does not call it a column no file has, as the lookup does not."""
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}), tmp_path / "top.parquet")
    where = "dt IS NULL AND id = 1"
    given = {"dt": "date"}
    assert [v.kept for v in prune_sync(str(tmp_path), where, partitioning=given)] == [True]
    got = lookup_sync(str(tmp_path), where, partitioning=given)
    assert got.to_pylist() == [{"id": 1, "dt": None}]
    with pytest.raises(PredicateError, match="no file read has"):
        prune_sync(str(tmp_path), "nosuch IS NULL", partitioning=given)


def test_partition_columns_in_the_predicate_read_no_ruled_out_footer(tmp_path: Path) -> None:
    """The file above the folders is the one read; the predicate's partition column is
    known (NULL there), so the answer has that file's columns, not the ruled-out files'."""
    for day, extra in ((1, "x"), (2, "y")):
        folder = tmp_path / f"dt=2026-11-0{day}"
        folder.mkdir()
        table = pa.table({"id": pa.array([day], pa.int64()), extra: [day]})
        pq.write_table(table, folder / "p.parquet")
    pq.write_table(pa.table({"id": pa.array([9], pa.int64())}), tmp_path / "top.parquet")
    where = "dt IS NULL AND id = 9"
    got = lookup_sync(str(tmp_path), where)
    assert got.to_pylist() == [{"id": 9, "dt": None}]
    assert pruned_dataset_sync(str(tmp_path), where).schema.names == ["id", "dt"]
    asked = lookup_sync(str(tmp_path), where, columns=["id", "x"])  # x: a ruled-out file's
    assert asked.to_pylist() == [{"id": 9, "x": None}]


# ---- every door ------------------------------------------------------------------------------


def test_every_door_agrees(tmp_path: Path) -> None:
    _day_lake(tmp_path)
    where = "dt IN ('2026-11-02', '2026-11-04') AND id IN (650, 700, 2100, 1234)"
    table = lookup_sync(str(tmp_path), where)
    assert table.column("id").to_pylist() == [650, 700, 2100]

    async def collect() -> list[Any]:
        return [b async for b in lookup_batches(str(tmp_path), where, max_fetch_bytes=1)]

    batches = pa.Table.from_batches(anyio.run(collect))
    assert batches.schema == table.schema and batches.to_pylist() == table.to_pylist()
    dataset = pruned_dataset_sync(str(tmp_path), where)
    assert dataset.schema == table.schema
    assert len(dataset.files) == 3  # the kept files of the two days
    scanned = dataset.to_table(filter=pads.field("id").isin([650, 700, 2100, 1234]))
    assert sorted(scanned.to_pylist(), key=lambda r: r["id"]) == table.to_pylist()
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    con.register("t", dataset)
    sql = "SELECT id FROM t WHERE dt = DATE '2026-11-04' AND id IN (2100, 650) ORDER BY id"
    assert con.sql(sql).fetchall() == [(2100,)]
    out = subprocess.run(
        [sys.executable, "-m", "pybloom_async.apps.cli", "lookup", str(tmp_path), "-w", where,
         "--format", "json", "--quiet"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert json.loads(out.stdout) == [{**r, "dt": r["dt"].isoformat()} for r in table.to_pylist()]
    for flags, columns in (
        (["--no-partitions"], ["id"]),
        (["--partition-types", "dt=string"], ["id", "dt"]),
    ):
        out = subprocess.run(
            [sys.executable, "-m", "pybloom_async.apps.cli", "lookup", str(tmp_path), "-w",
             "id = 650", "--format", "json", "--quiet", *flags],
            capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
        assert list(json.loads(out.stdout)[0]) == columns
    out = subprocess.run(
        [sys.executable, "-m", "pybloom_async.apps.cli", "prune", str(tmp_path), "-w", where,
         "--json"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    files = {r["file"] for r in json.loads(out.stdout)}
    assert files == {v.file for v in prune_sync(str(tmp_path), where)} and len(files) == 12


# ---- object stores ---------------------------------------------------------------------------


@pytest.mark.servers
def test_s3_reads_and_lists_only_what_can_match(
    tmp_path: Path, s3_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On S3: the files of other folders are never read; with the types given (and a
    prefix whose first LIST page is full, here of 4 keys) other folders are never listed."""
    paths = _day_lake(tmp_path / "lake")
    prefix = f"hive-{os.getpid()}/"
    for path in paths:
        s3_server.put(prefix + path.relative_to(tmp_path / "lake").as_posix(), path.read_bytes())
    url = s3_server.url(prefix)
    options = s3_server.options
    where = "dt = '2026-11-02' AND country = 'DE' AND id = 650"
    folder = [s3_server.url(prefix + p.relative_to(tmp_path / "lake").as_posix()) for p in paths
              if "dt=2026-11-02/country=DE" in str(p)]  # fmt: skip
    alone = SourceStats()
    lookup_sync(folder, "id = 650", options=options, stats=alone)
    listed: list[str | None] = []
    real = listing.obstore.list

    def spy(store: Any, prefix: str | None = None, **kwargs: Any) -> Any:
        listed.append(prefix)
        return real(store, prefix, **kwargs)

    monkeypatch.setattr(listing.obstore, "list", spy)
    monkeypatch.setattr(listing, "PAGE_SIZE", 4)
    stats = SourceStats()
    got = lookup_sync(url, where, options=options, stats=stats)
    assert got.to_pylist() == [{"id": 650, "dt": dt.date(2026, 11, 2), "country": "DE"}]
    assert stats.requests == alone.requests
    assert len([p for p in listed if p and "dt=" in p]) == 4  # every day listed: inferred
    listed.clear()
    stats = SourceStats()
    given = {"dt": "date", "country": "string"}
    got = lookup_sync(url, where, options=options, stats=stats, partitioning=given)
    assert got.to_pylist() == [{"id": 650, "dt": dt.date(2026, 11, 2), "country": "DE"}]
    assert stats.requests == alone.requests
    days = [p for p in listed if p and "dt=" in p]
    assert days == [f"{prefix}dt=2026-11-02"], listed
    assert {v.file for v in prune_sync(url, where, options=options, partitioning=given)} == set(
        folder
    )


def test_the_lake_index_door(tmp_path: Path) -> None:
    """A lake index over a partitioned lake: files the folders rule out are not asked about;
    the answer is the one without the index."""
    from pybloom_async import build_lake_index_sync

    _day_lake(tmp_path)
    where = "dt = '2026-11-02' AND id = 650"
    without = lookup_sync(str(tmp_path), where)
    build_lake_index_sync(str(tmp_path), ["id"])
    stats = SourceStats()
    got = lookup_sync(str(tmp_path), where, ["id", "dt"], stats=stats)
    assert got.to_pylist() == without.select(["id", "dt"]).to_pylist()
    assert lookup_sync(str(tmp_path), where).equals(without)
    # The segment's reads and the one kept file's, and the footers of the partition's five
    # files the index rules out (their types count for the answer's, as without the index).
    assert stats.requests <= 6 + 5
