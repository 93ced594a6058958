"""Deletes applied by the lookup's own path: Delta deletion vectors, Iceberg position and
equality deletes, on tables written by deltalake and pyiceberg.

Each answer is compared with the table library's own scan (deltalake's QueryBuilder,
pyiceberg's ``scan().to_arrow()``); pyiceberg 0.12 refuses equality deletes, so their
expected rows are the data's rows less the deleted keys, computed here.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

import pybloom_async as pba
from pybloom_async.errors import ParquetFormatError, SourceError, UnsupportedTypeError
from pybloom_async.io.base import SourceStats

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pyiceberg")
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat  # noqa: E402
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.transforms import IdentityTransform  # noqa: E402
from pyiceberg.typedef import Record  # noqa: E402
from pyiceberg.types import LongType, NestedField, StringType  # noqa: E402
from support.delta_logs import commit_deletion_vector  # noqa: E402
from support.iceberg_catalog import sql_catalog  # noqa: E402
from support.iceberg_deletes import (  # noqa: E402
    commit_delete_files,
    equality_delete_file,
    position_delete_file,
)

ROWS = 1000  # one file: ids 0..999, 10 row groups of 100 rows, pages of 20 rows


def _data(start: int = 0, stop: int = ROWS) -> Any:
    ids = list(range(start, stop))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "s": pa.array([f"s{i}" for i in ids], pa.string()),
        "k": pa.array([i % 7 for i in ids], pa.int64()),
    })  # fmt: skip


def _rows(table: Any) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: (r["id"], r.get("s") or ""))


# ---- Delta: deletion vectors -------------------------------------------------------------


def _delta(tmp_path: Path, **kwargs: Any) -> Any:
    props = deltalake.WriterProperties(
        max_row_group_size=100, data_page_row_count_limit=20, write_batch_size=20
    )
    deltalake.write_deltalake(
        tmp_path / "t", kwargs.pop("data", _data()), writer_properties=props,
        configuration={"delta.enableDeletionVectors": "true"}, **kwargs,
    )  # fmt: skip
    return deltalake.DeltaTable(tmp_path / "t")


def _delta_scan(dt: Any, where: str) -> list[dict[str, Any]]:
    query = deltalake.QueryBuilder().register("t", dt)
    return _rows(pa.table(query.execute(f"SELECT id, s, k FROM t WHERE {where}")))


DELETED = [0, 5, 99, 100, 150, 151, 555, 999]  # first row, row-group edges, last row
WANTED = "id IN (0, 1, 5, 99, 100, 101, 150, 151, 152, 555, 556, 998, 999)"


@pytest.mark.parametrize("two_phases", [False, True])
@pytest.mark.parametrize("page_index", [True, False])
def test_deletion_vector_positions_across_row_groups_and_pages(
    tmp_path: Path, page_index: bool, two_phases: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deleted positions fall right whether a row group is read whole or by its pages, in
    one pass or its predicate's columns first (two phases)."""
    from pybloom_async.rows import fetch

    monkeypatch.setattr(fetch, "TWO_PHASE_MIN_BYTES", 0 if two_phases else 1 << 62)
    dt = _delta(tmp_path)
    (path,) = [a["path"] for a in pa.table(dt.get_add_actions(flatten=True)).to_pylist()]
    assert pq.read_metadata(tmp_path / "t" / path).num_row_groups == 10
    commit_deletion_vector(tmp_path / "t", path, DELETED)
    dt = deltalake.DeltaTable(tmp_path / "t")
    got = pba.lookup_sync(dt, WANTED, page_index=page_index)
    assert _rows(got) == _delta_scan(dt, WANTED)
    assert not {r["id"] for r in got.to_pylist()} & set(DELETED)
    assert len(got) == 13 - 8
    # Every row of the file: the scan's own rows, less the deleted ones.
    every = pba.lookup_sync(dt, "k IN (0, 1, 2, 3, 4, 5, 6)", page_index=page_index)
    assert len(every) == ROWS - len(DELETED)
    assert _rows(every) == _delta_scan(dt, "k IN (0, 1, 2, 3, 4, 5, 6)")


def test_deletion_vectors_cost_no_request(tmp_path: Path) -> None:
    """The table's rows come through the plain files' path: the same requests and bytes."""
    dt = _delta(tmp_path)
    (path,) = [a["path"] for a in pa.table(dt.get_add_actions(flatten=True)).to_pylist()]
    commit_deletion_vector(tmp_path / "t", path, DELETED)
    dt = deltalake.DeltaTable(tmp_path / "t")
    on_table, on_files = SourceStats(), SourceStats()
    got = pba.lookup_sync(dt, "id IN (150, 152)", stats=on_table)
    # The same file as a plain file (a copy: a table's folder is read as its table only).
    copy = tmp_path / "plain.parquet"
    copy.write_bytes((tmp_path / "t" / path).read_bytes())
    plain = pba.lookup_sync([str(copy)], "id IN (150, 152)", stats=on_files)
    assert got.column("id").to_pylist() == [152]
    assert sorted(plain.column("id").to_pylist()) == [150, 152]
    assert (on_table.requests, on_table.bytes_read) == (on_files.requests, on_files.bytes_read)


def test_deletion_vectors_streamed(tmp_path: Path) -> None:
    import anyio

    dt = _delta(tmp_path)
    (path,) = [a["path"] for a in pa.table(dt.get_add_actions(flatten=True)).to_pylist()]
    commit_deletion_vector(tmp_path / "t", path, DELETED)
    dt = deltalake.DeltaTable(tmp_path / "t")

    async def collect() -> list[int]:
        out = []
        async for batch in pba.lookup_batches(dt, WANTED, max_fetch_bytes=1):
            out += batch.column("id").to_pylist()
        return sorted(out)

    assert anyio.run(collect) == [r["id"] for r in _delta_scan(dt, WANTED)]


def test_a_vector_deltalake_cannot_read_is_an_error(tmp_path: Path) -> None:
    dt = _delta(tmp_path)
    (path,) = [a["path"] for a in pa.table(dt.get_add_actions(flatten=True)).to_pylist()]
    commit_deletion_vector(tmp_path / "t", path, [5])
    log = sorted((tmp_path / "t" / "_delta_log").glob("*.json"))[-1]
    log.write_text(log.read_text().replace('"storageType": "i"', '"storageType": "q"'))
    dt = deltalake.DeltaTable(tmp_path / "t")
    with pytest.raises(SourceError, match="deletion vectors"):
        pba.lookup_sync(dt, "id IN (4, 5)")
    # The vectors are needed only where a row matches: a row group read for no match
    # (its statistics admit the value) answers without them.
    assert pba.lookup_sync(dt, "s = 's5x'", page_index=False).num_rows == 0


def test_empty_string_partition_value_is_read_as_deltalake_reads_it(tmp_path: Path) -> None:
    data = pa.table({
        "id": pa.array(range(4), pa.int64()), "p": ["", "a", None, "b"],
        "q": pa.array([1, 2, None, 4], pa.int32()),
    })  # fmt: skip
    deltalake.write_deltalake(tmp_path / "t", data, partition_by=["p", "q"])
    dt = deltalake.DeltaTable(tmp_path / "t")
    query = deltalake.QueryBuilder().register("t", dt)
    for where, sql in [
        ("p = ''", "p = ''"),
        ("p <=> NULL", "p IS NULL"),
        ("p IN ('', 'a')", "p IN ('', 'a')"),
        ("id IN (0, 1, 2, 3)", "id IN (0, 1, 2, 3)"),
    ]:
        expected = pa.table(query.execute(f"SELECT id, p, q FROM t WHERE {sql}"))
        got = pba.lookup_sync(dt, where)
        assert sorted(got.to_pylist(), key=lambda r: r["id"]) == sorted(
            expected.to_pylist(), key=lambda r: r["id"]
        ), where
    assert pba.lookup_sync(dt, "p = ''").to_pylist() == [{"id": 0, "p": "", "q": 1}]


def _sweeps(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many files each sweep of a run was given (:class:`Sweep.over`)."""
    from pybloom_async.rows.sweep import Sweep

    given: list[int] = []
    real = Sweep.over

    def over(sweep: Sweep, files: Any, *args: Any, **kwargs: Any) -> Any:
        given.append(len(files))
        return real(sweep, files, *args, **kwargs)

    monkeypatch.setattr(Sweep, "over", over)
    return given


SPREAD = "id IN (0, 5, 99, 100, 1001, 1500, 3998, 3999)"  # in files 0, 2 and 3 of 4
SPREAD_DELETED = [0, 5, 99]  # of file 0: positions = ids


def test_a_local_delta_tables_files_are_swept_and_the_deletes_of_those_read_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four files of 1,000 ids each: the file the predicate rules out is pruned in the
    sweep (as a folder's files are), the others read with its footers, and the deletion
    vector of the first applied."""
    for i in range(4):
        _delta(tmp_path, data=_data(i * ROWS, (i + 1) * ROWS), mode="append")
    dt = deltalake.DeltaTable(tmp_path / "t")
    actions = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
    first = next(a["path"] for a in actions if a["min.id"] == 0)
    commit_deletion_vector(tmp_path / "t", first, SPREAD_DELETED)
    dt = deltalake.DeltaTable(tmp_path / "t")
    given = _sweeps(monkeypatch)
    got = pba.lookup_sync(dt, SPREAD)
    assert given, "the table's files were not swept"
    assert _rows(got) == _delta_scan(dt, SPREAD)
    assert sorted(r["id"] for r in got.to_pylist()) == [100, 1001, 1500, 3998, 3999]


# ---- Iceberg: position and equality deletes ----------------------------------------------

SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "s", StringType(), required=False),
    NestedField(3, "k", LongType(), required=False),
)


def _iceberg(tmp_path: Path, **kwargs: Any) -> Any:
    """A table whose one data file pyarrow wrote with 10 row groups and a page index."""
    tbl = sql_catalog(tmp_path).create_table("ns.t", schema=SCHEMA, **kwargs)
    path = tmp_path / "part-0.parquet"
    pq.write_table(_data(), path, row_group_size=100, data_page_size=200,
                   write_page_index=True, bloom_filter_options={"id": True, "s": True})  # fmt: skip
    tbl.add_files([path.as_uri()])
    return tbl.refresh()


def _ice_scan(tbl: Any, where: str) -> list[dict[str, Any]]:
    return _rows(tbl.scan(row_filter=where).to_arrow())


def _data_path(tbl: Any) -> str:
    (task,) = list(tbl.scan().plan_files())
    return str(task.file.file_path)


@pytest.mark.parametrize("page_index", [True, False])
def test_position_deletes_equal_pyicebergs_scan(tmp_path: Path, page_index: bool) -> None:
    tbl = _iceberg(tmp_path)
    target = _data_path(tbl)
    tbl = commit_delete_files(tbl, [
        position_delete_file(tmp_path / "d1.parquet", [(target, p) for p in DELETED[:4]]),
        position_delete_file(tmp_path / "d2.parquet", [(target, p) for p in DELETED[4:]]
                             + [("file:///elsewhere.parquet", 1)]),
    ])  # fmt: skip
    where = WANTED.replace("IN", "in")
    got = pba.lookup_sync(tbl, WANTED, page_index=page_index)
    assert _rows(got) == _ice_scan(tbl, where)
    assert len(got) == 13 - 8
    every = pba.lookup_sync(tbl, "k IN (0, 1, 2, 3, 4, 5, 6)", page_index=page_index)
    assert _rows(every) == _rows(tbl.scan().to_arrow())


def test_delete_files_are_read_for_kept_files_only(tmp_path: Path) -> None:
    tbl = _iceberg(tmp_path)
    target = _data_path(tbl)
    tbl = commit_delete_files(tbl, [position_delete_file(tmp_path / "d.parquet", [(target, 5)])])
    plain, on_table = SourceStats(), SourceStats()
    # Inside every statistic's range, in no filter: every row group pruned.
    pba.lookup_sync([target], "s = 's5x'", stats=plain)
    assert pba.lookup_sync(tbl, "s = 's5x'", stats=on_table).num_rows == 0
    assert plain.requests == 1
    assert on_table.requests == plain.requests  # the delete file is not read
    plain, on_table = SourceStats(), SourceStats()
    pba.lookup_sync([target], "id IN (5, 6)", stats=plain)
    assert pba.lookup_sync(tbl, "id IN (5, 6)", stats=on_table).column("id").to_pylist() == [6]
    assert on_table.requests == plain.requests + 1  # and read once, whole


def test_equality_deletes_by_the_sequence_number_rule(tmp_path: Path) -> None:
    tbl = _iceberg(tmp_path)
    tbl = commit_delete_files(tbl, [
        equality_delete_file(tmp_path / "e1.parquet", tbl, {"id": [3, 150, 999, 5000]}),
    ])  # fmt: skip
    # Appended after the delete: its id 150 is a new row, which the older delete spares.
    tbl.append(_data(150, 151))
    tbl = tbl.refresh()
    got = pba.lookup_sync(tbl, "id IN (2, 3, 150, 999)")
    assert _rows(got) == [{"id": 2, "s": "s2", "k": 2}, {"id": 150, "s": "s150", "k": 3}]
    # A later delete of the same key removes both: its sequence number is above both files'.
    tbl = commit_delete_files(tbl, [
        equality_delete_file(tmp_path / "e2.parquet", tbl, {"id": [150]}),
    ])  # fmt: skip
    assert pba.lookup_sync(tbl, "id IN (2, 3, 150, 999)").column("id").to_pylist() == [2]


@pytest.mark.parametrize("two_phases", [False, True])
def test_equality_deletes_on_several_columns_and_nulls(
    tmp_path: Path, two_phases: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The delete's columns (not the predicate's, nor asked for) are read with the
    predicate's, in one pass or two."""
    from pybloom_async.rows import fetch

    monkeypatch.setattr(fetch, "TWO_PHASE_MIN_BYTES", 0 if two_phases else 1 << 62)
    tbl = _iceberg(tmp_path)
    tbl.append(pa.table({
        "id": pa.array([5000, 5001], pa.int64()), "s": pa.array([None, "x"], pa.string()),
        "k": pa.array([1, None], pa.int64()),
    }))  # fmt: skip
    tbl = commit_delete_files(tbl, [
        # (s, k) pairs: s10/k3 exists; s11/k0 does not (s11 has k 4); a null matches a null.
        equality_delete_file(tmp_path / "e.parquet", tbl.refresh(), {
            "s": pa.array(["s10", "s11", None], pa.string()),
            "k": pa.array([3, 0, 1], pa.int64()),
        }),
    ])  # fmt: skip
    got = pba.lookup_sync(tbl, "id IN (10, 11, 12, 5000, 5001)")
    assert sorted(got.column("id").to_pylist()) == [11, 12, 5001]
    only = pba.lookup_sync(tbl, "id IN (10, 11, 12, 5000, 5001)", columns=["id"])
    assert sorted(only.column("id").to_pylist()) == [11, 12, 5001]


def test_equality_deletes_of_another_partition_do_not_apply(tmp_path: Path) -> None:
    spec = PartitionSpec(PartitionField(3, 1000, IdentityTransform(), "k"))
    tbl = sql_catalog(tmp_path).create_table("ns.t", schema=SCHEMA, partition_spec=spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tbl.append(_data(0, 14))  # one file per k: k = id % 7
    tbl = tbl.refresh()
    tbl = commit_delete_files(tbl, [
        equality_delete_file(tmp_path / "e.parquet", tbl, {"id": [0, 1, 8]}, Record(1)),
    ])  # fmt: skip
    # In partition k=1 (ids 1, 8) the deletes apply; id 0 lies in k=0, where they do not.
    got = pba.lookup_sync(tbl, "id IN (0, 1, 7, 8, 9)")
    assert sorted(got.column("id").to_pylist()) == [0, 7, 9]


def test_a_delete_file_that_cannot_be_read_fails_the_lookup(tmp_path: Path) -> None:
    tbl = _iceberg(tmp_path)
    target = _data_path(tbl)
    tbl = commit_delete_files(tbl, [position_delete_file(tmp_path / "d.parquet", [(target, 5)])])
    (tmp_path / "d.parquet").write_bytes(b"x" * (tmp_path / "d.parquet").stat().st_size)
    with pytest.raises(ParquetFormatError, match="delete file") as info:
        pba.lookup_sync(tbl, "id IN (5, 6)")
    assert "d.parquet" in str(info.value)
    (tmp_path / "d.parquet").unlink()
    with pytest.raises(SourceError):
        pba.lookup_sync(tbl, "id IN (5, 6)")
    with pytest.raises(SourceError, match=r"d\.parquet"):
        pba.lookup_sync(tbl, "id = 500")  # the deletes cover the whole file
    assert pba.lookup_sync(tbl, "s = 's5x'").num_rows == 0  # no row group kept: not read


def test_a_delete_format_not_read_here_is_refused(tmp_path: Path) -> None:
    tbl = _iceberg(tmp_path)
    avro = tmp_path / "d.avro"
    avro.write_bytes(b"Obj\x01")
    delete = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES, file_path=avro.as_uri(),
        file_format=FileFormat.AVRO, partition=Record(), record_count=1,
        file_size_in_bytes=avro.stat().st_size,
    )  # fmt: skip
    tbl = commit_delete_files(tbl, [delete])
    with pytest.raises(UnsupportedTypeError, match="AVRO"):
        pba.lookup_sync(tbl, "id IN (5, 6)")


def test_columns_are_read_by_name_a_renamed_one_is_refused(tmp_path: Path) -> None:
    tbl = sql_catalog(tmp_path).create_table("ns.t", schema=SCHEMA)
    tbl.append(_data(0, 10))  # written by pyiceberg: field ids in the file
    with tbl.update_schema() as update:
        update.rename_column("s", "text")
    tbl = tbl.refresh()
    with pytest.raises(UnsupportedTypeError, match="reads columns by name"):
        pba.lookup_sync(tbl, "id = 3")
    with tbl.update_schema() as update:
        update.rename_column("text", "s")
        update.add_column("extra", StringType())
    tbl = tbl.refresh()
    got = pba.lookup_sync(tbl, "id = 3")
    assert got.to_pylist() == [{"id": 3, "s": "s3", "k": 3, "extra": None}]
    assert got.to_pylist() == tbl.scan(row_filter="id = 3").to_arrow().to_pylist()


def test_a_delete_file_covering_many_files_is_read_once(tmp_path: Path) -> None:
    tbl = sql_catalog(tmp_path).create_table("ns.t", schema=SCHEMA)
    paths = []
    for i in range(4):
        path = tmp_path / f"part-{i}.parquet"
        pq.write_table(_data(i * 100, i * 100 + 100), path, bloom_filter_options={"id": True})
        paths.append(path.as_uri())
    tbl.add_files(paths)
    tbl = commit_delete_files(tbl.refresh(), [
        position_delete_file(tmp_path / "d.parquet", [(p, 1) for p in paths]),
    ])  # fmt: skip
    where = "id IN (0, 1, 101, 201, 301, 302)"
    plain, on_table = SourceStats(), SourceStats()
    pba.lookup_sync([tmp_path / f"part-{i}.parquet" for i in range(4)], where, stats=plain)
    got = pba.lookup_sync(tbl, where, stats=on_table, concurrency=4)
    assert (
        sorted(got.column("id").to_pylist()) == [0, 302] == [r["id"] for r in _ice_scan(tbl, where)]
    )
    assert on_table.requests == plain.requests + 1


def test_a_script_exits_cleanly_while_deltalake_reads_the_vectors(tmp_path: Path) -> None:
    """The vectors are read in a thread of their own from the lookup's start; a lookup that
    needs none returns first, and the interpreter waits for that thread at exit (a daemon
    thread still inside deltalake as the interpreter finalized crashed the process with a
    segmentation fault, in about one run in six). Here deltalake's read is slowed down: the
    script's exit must come after it."""
    import os
    import subprocess
    import sys

    dt = _delta(tmp_path)
    (path,) = [a["path"] for a in pa.table(dt.get_add_actions(flatten=True)).to_pylist()]
    commit_deletion_vector(tmp_path / "t", path, DELETED)
    mark = tmp_path / "read"
    script = (
        "import pathlib, time, deltalake, pybloom_async as pba\n"
        "import pybloom_async.tables.delta as delta\n"
        "real = delta.deletion_masks\n"
        "def slow(*args):\n"
        "    time.sleep(1.0)\n"
        "    found = real(*args)\n"
        f"    pathlib.Path({str(mark)!r}).write_text('read')\n"
        "    return found\n"
        "delta.deletion_masks = slow\n"
        f"dt = deltalake.DeltaTable({str(tmp_path / 't')!r})\n"
        "print(pba.lookup_sync(dt, \"s = 's5x'\", page_index=False).num_rows)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
        env=os.environ,
    )  # fmt: skip
    assert (done.returncode, done.stdout.strip()) == (0, "0"), done.stderr[-500:]
    assert mark.read_text() == "read"  # the interpreter waited for the thread


def test_a_local_iceberg_tables_files_are_swept_and_the_deletes_of_those_read_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As for Delta, with the data files named by ``file://`` URLs (as pyiceberg names a
    local warehouse's) and a position delete file on the first."""
    tbl = sql_catalog(tmp_path).create_table("ns.t", schema=SCHEMA)
    uris = []
    for i in range(4):
        path = tmp_path / f"part-{i}.parquet"
        pq.write_table(_data(i * ROWS, (i + 1) * ROWS), path, row_group_size=100)
        uris.append(path.as_uri())
    tbl.add_files(uris)
    tbl = commit_delete_files(tbl.refresh(), [
        position_delete_file(tmp_path / "d.parquet", [(uris[0], p) for p in SPREAD_DELETED]),
    ])  # fmt: skip
    given = _sweeps(monkeypatch)
    got = pba.lookup_sync(tbl, SPREAD)
    assert given, "the table's files were not swept"
    assert _rows(got) == _ice_scan(tbl, SPREAD.replace("IN", "in"))
    assert sorted(r["id"] for r in got.to_pylist()) == [100, 1001, 1500, 3998, 3999]
