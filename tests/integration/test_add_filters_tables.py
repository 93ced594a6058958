"""Adding filters to the files of Delta and Iceberg tables (written by deltalake and pyiceberg).

What the tests show:

* Given the table (a ``deltalake.DeltaTable``, a pyiceberg ``Table``, ``--delta URI`` or
  ``--iceberg CATALOG.TABLE``), each live file lacking a filter gets a filtered copy in
  its folder and one commit replaces the old files: deltalake (``to_pyarrow_table`` and
  its SQL), pyiceberg's scan and DuckDB (``read_parquet`` over the live files the
  library lists) read the same rows as before; the log's sizes, partition values and
  statistics (Delta) or the manifests' sizes, counts and bounds (Iceberg) match the new
  files; DuckDB's ``parquet_bloom_probe`` and our prune use the new filters; the old
  version or snapshot still reads the old rows from the untouched old files; removed
  (tombstoned) files stay byte-identical; a second run commits nothing. Partitioned
  and not, partition values of every kind (text with ``/``, ``%``, spaces), on S3.
* Files the library cannot replace exactly are left and reported: a Delta file with
  a deletion vector, a Delta path the log spells differently from deltalake.
* A conflicting commit made while the files are written fails ours with
  ``CommitConflictError``, no new file is left and the table holds the other commit
  only; a concurrent Delta append does not conflict and ours lands after it. A commit
  that lands although the call fails is found by its marker and reported (its copies
  kept); one that fails before landing leaves no copy.
* A plain path inside a table (its root, a partition folder, a folder holding a table,
  one of its files, ``out=`` into it) is refused before anything is read or written, by
  the command line (exit 2, one line naming ``--delta``/``--iceberg``) and by
  ``add_bloom_filters``; the table's files stay byte-identical and the table reads as
  before. Locally and on S3 (moto); a plain folder beside a table is not refused.
"""

from __future__ import annotations

import datetime
import decimal
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.delta_logs import commit_deletion_vector

import pybloom_async as pba
from pybloom_async.errors import CommitConflictError, InvalidArgumentError
from pybloom_async.rewrite import delta as delta_commit
from pybloom_async.rewrite import iceberg as iceberg_commit

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
deltalake = pytest.importorskip("deltalake")
duckdb = pytest.importorskip("duckdb")
pytest.importorskip("pyiceberg")
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.transforms import IdentityTransform  # noqa: E402
from pyiceberg.types import LongType, NestedField, StringType  # noqa: E402
from support.iceberg_catalog import sql_catalog  # noqa: E402

ROWS = 400  # ids 0..399; p = 'a' below 200, 'b' above; appends of 100: one file each


def _chunk(start: int, stop: int) -> Any:
    ids = list(range(start, stop))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "s": pa.array([f"s{i}" for i in ids], pa.string()),
        "p": pa.array(["a" if i < ROWS // 2 else "b" for i in ids], pa.string()),
    })  # fmt: skip


def _rows(table: Any) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (the log included), by relative path."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pybloom_async.apps.cli", *argv], capture_output=True,
        text=True, timeout=180, env={**os.environ, **(env or {})}, check=False,
    )  # fmt: skip


def _one_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr


# ---- tables ----------------------------------------------------------------------------


def _delta(
    path: Path | str, storage: dict[str, str] | None = None, partitioned: bool = True, **config: str
) -> Any:
    """Four appends (two files per partition p), then a delete: one file tombstoned."""
    for start in range(0, ROWS, ROWS // 4):
        deltalake.write_deltalake(
            path, _chunk(start, start + ROWS // 4), partition_by=["p"] if partitioned else None,
            mode="append", storage_options=storage, configuration=config or None,
        )  # fmt: skip
    dt = deltalake.DeltaTable(path, storage_options=storage)
    dt.delete("id = 5")
    return deltalake.DeltaTable(path, storage_options=storage)


@pytest.fixture
def delta_path(tmp_path: Path) -> Path:
    path = tmp_path / "lake" / "t"
    _delta(path)
    return path


ICEBERG_SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "s", StringType(), required=False),
    NestedField(3, "p", StringType(), required=False),
)


@pytest.fixture
def iceberg_table(tmp_path: Path) -> Any:
    """Written by pyiceberg (two appends, partitioned by p), then a delete: files replaced."""
    catalog = sql_catalog(tmp_path)
    spec = PartitionSpec(PartitionField(3, 1000, IdentityTransform(), "p"))
    table = catalog.create_table("ns.t", schema=ICEBERG_SCHEMA, partition_spec=spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # merge-on-read falls back to copy-on-write
        table.append(_chunk(0, ROWS // 2 + 50))
        table.append(_chunk(ROWS // 2 + 50, ROWS))
        table.delete("id = 5")
    return catalog.load_table("ns.t")


def _local(uri: str) -> Path:
    return Path(uri.removeprefix("file://"))


# ---- plain paths inside a table are refused ---------------------------------------------


@pytest.mark.parametrize("given", ["root", "partition", "parent"])
def test_cli_refuses_a_delta_tables_folders(delta_path: Path, given: str) -> None:
    target = {"root": delta_path, "partition": delta_path / "p=a", "parent": delta_path.parent}
    before = _snapshot(delta_path)
    rows = _rows(deltalake.DeltaTable(delta_path).to_pyarrow_table())
    proc = _cli("add-filters", str(target[given]), "--columns", "id")
    assert proc.returncode == 2
    message = _one_line(proc)
    assert f"Delta table {delta_path} " in message and f"--delta {delta_path} " in message
    assert _snapshot(delta_path) == before
    assert _rows(deltalake.DeltaTable(delta_path).to_pyarrow_table()) == rows


def test_python_refuses_a_file_of_a_delta_table(delta_path: Path, tmp_path: Path) -> None:
    before = _snapshot(delta_path)
    one = next((delta_path / "p=b").glob("*.parquet"))
    with pytest.raises(InvalidArgumentError, match=r"lies in the Delta table .* use --delta"):
        pba.add_bloom_filters_sync(one, ["id"])
    with pytest.raises(InvalidArgumentError, match="lies in the Delta table"):
        anyio.run(lambda: pba.add_bloom_filters(str(one), "id"))
    # Writing into the table from elsewhere is refused too.
    plain = tmp_path / "plain.parquet"
    pq.write_table(_chunk(0, 10), plain)
    with pytest.raises(InvalidArgumentError, match="lies in the Delta table"):
        pba.add_bloom_filters_sync(plain, ["id"], out=delta_path / "p=a" / "x.parquet")
    assert _snapshot(delta_path) == before


def test_a_plain_folder_beside_a_table_is_not_refused(delta_path: Path) -> None:
    plain = delta_path.parent / "plain"
    plain.mkdir()
    pq.write_table(_chunk(0, 10), plain / "x.parquet")
    proc = _cli("add-filters", str(plain), "--columns", "id")
    assert proc.returncode == 0, proc.stderr
    assert "1 filter added" in proc.stdout


@pytest.mark.parametrize("given", ["root", "data", "file"])
def test_iceberg_table_folders_are_refused(iceberg_table: Any, given: str) -> None:
    root = _local(iceberg_table.location())
    before = _snapshot(root)
    rows = _rows(iceberg_table.scan().to_arrow())
    a_file = next(_local(t.file.file_path) for t in iceberg_table.scan().plan_files())
    target = {"root": root, "data": root / "data", "file": a_file}[given]
    proc = _cli("add-filters", str(target), "--columns", "id")
    assert proc.returncode == 2
    message = _one_line(proc)
    assert f"Iceberg table at {root} " in message and "--iceberg CATALOG" in message
    with pytest.raises(InvalidArgumentError, match="lies in the Iceberg table"):
        pba.add_bloom_filters_sync(a_file, ["id"])
    assert _snapshot(root) == before
    assert _rows(iceberg_table.refresh().scan().to_arrow()) == rows


def test_a_delta_prefix_on_s3_is_refused(s3_server: Any, tmp_path: Path) -> None:
    uri = s3_server.url(f"refuse-{tmp_path.name}/t")
    storage = {
        "aws_endpoint_url": s3_server.endpoint, "aws_region": s3_server.region,
        "aws_access_key_id": "testing", "aws_secret_access_key": "testing",
        "allow_http": "true", "aws_s3_allow_unsafe_rename": "true",
    }  # fmt: skip
    dt = _delta(uri, storage)
    rows = _rows(pa.table(deltalake.QueryBuilder().register("t", dt).execute("SELECT * FROM t")))
    sizes = pa.table(dt.get_add_actions()).select(["path", "size_bytes"]).to_pylist()
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_REGION": s3_server.region}  # fmt: skip
    common = ["--columns", "id", "--endpoint", s3_server.endpoint, "--allow-http"]
    for target in (uri + "/", uri + "/p=a/"):
        proc = _cli("add-filters", target, *common, env=env)
        assert proc.returncode == 2, proc.stderr
        assert f"--delta {uri} " in _one_line(proc)
    one = uri + "/" + str(sizes[0]["path"])
    with pytest.raises(InvalidArgumentError, match=f"Delta table {uri} "):
        pba.add_bloom_filters_sync(one, ["id"], options=s3_server.options)
    dt = deltalake.DeltaTable(uri, storage_options=storage)
    assert pa.table(dt.get_add_actions()).select(["path", "size_bytes"]).to_pylist() == sizes
    got = pa.table(deltalake.QueryBuilder().register("t", dt).execute("SELECT * FROM t"))
    assert _rows(got) == rows


# ---- helpers for the commits ------------------------------------------------------------


def _sql(dt: Any, query: str = "SELECT * FROM t") -> list[dict[str, Any]]:
    return _rows(pa.table(deltalake.QueryBuilder().register("t", dt).execute(query)))


def _duckdb_rows(paths: list[str], columns: str = "id, s") -> list[dict[str, Any]]:
    """The rows of files as DuckDB reads them (no table extension: the files the library lists)."""
    listed = ", ".join(f"'{p}'" for p in paths)
    got = duckdb.sql(f"SELECT {columns} FROM read_parquet([{listed}])").arrow()
    return _rows(pa.table(got))


def _duckdb_probe(path: str, column: str, value: Any) -> list[bool]:
    """DuckDB's parquet_bloom_probe: per row group, whether the filter excludes ``value``."""
    rows = duckdb.execute(
        "SELECT bloom_filter_excludes FROM parquet_bloom_probe(?, ?, ?) ORDER BY row_group_id",
        [path, column, value],
    ).fetchall()
    return [bool(r[0]) for r in rows]


def _live(dt: Any) -> dict[str, dict[str, Any]]:
    """Delta's live files (local paths) with what the log says of them."""
    root = Path(str(dt.table_uri).removeprefix("file://"))
    out = {}
    for row in pa.table(dt.get_add_actions(flatten=False)).to_pylist():
        from urllib.parse import unquote

        out[str(root / unquote(row["path"]))] = row
    return out


def _stem(path: str) -> str:
    name = path.rsplit("/", 1)[1]
    return name.split(".bf-")[0].removesuffix(".parquet")


def _new_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.bf-*.parquet"))


# ---- Delta ------------------------------------------------------------------------------


@pytest.mark.parametrize("partitioned", [True, False])
def test_delta_filters_are_committed(tmp_path: Path, partitioned: bool) -> None:
    path = tmp_path / "t"
    dt = _delta(path, partitioned=partitioned)
    read = dt.version()
    rows = _rows(dt.to_pyarrow_table())
    live = _live(dt)
    on_disk = {str(p) for p in path.rglob("*.parquet")}
    tombstoned = {p: Path(p).read_bytes() for p in on_disk - set(live)}
    assert len(tombstoned) == 1  # the delete's removed file, still on storage
    old_bytes = {p: Path(p).read_bytes() for p in live}

    result = pba.add_bloom_filters_sync(dt, ["id", "s"])
    assert isinstance(result, pba.TableFiltersResult)
    assert (result.kind, result.read_version, result.version) == ("delta", read, read + 1)
    assert sorted(f.path for f in result.files) == sorted(live) and result.skipped == ()
    assert all(len(f.filters) == 2 and f.bytes_after > f.bytes_before for f in result.files)

    after = deltalake.DeltaTable(path)
    assert after.version() == read + 1
    assert _rows(after.to_pyarrow_table()) == rows
    assert _sql(after) == rows
    assert _sql(after, "SELECT * FROM t WHERE s IN ('s3', 's301', 's5')") == [
        r for r in rows if r["s"] in ("s3", "s301")
    ]
    new_live = _live(after)
    assert set(new_live) == {f.out for f in result.files}
    for new, row in new_live.items():
        assert row["size_bytes"] == os.path.getsize(new)  # the log's size is the file's
        (old,) = [p for p in live if _stem(p) == _stem(new)]
        for key in ("num_records", "null_count", "min", "max", "partition"):
            assert row.get(key) == live[old].get(key), key
        assert Path(new).parent == Path(old).parent
        # The old bytes up to the footer are kept; DuckDB finds the filters.
        data = Path(new).read_bytes()
        footer = int.from_bytes(old_bytes[old][-8:-4], "little")
        assert data.startswith(old_bytes[old][: len(old_bytes[old]) - footer - 8])
        assert _duckdb_probe(new, "s", "s5x") == [True]
        assert _duckdb_probe(new, "id", int(row["min"]["id"])) == [False]
    p_rows = [{k: v for k, v in r.items() if k != "p"} for r in rows]
    assert _duckdb_rows(list(new_live)) == p_rows
    # Our pruning uses the new filters.
    verdicts = pba.prune_sync(after, "s = 's5x'")
    assert verdicts and not any(v.kept for v in verdicts)
    assert pba.Rule.BLOOM_FILTER in {v.rule for v in verdicts}
    assert pba.lookup_sync(after, "s = 's301'").to_pylist() == [r for r in rows if r["id"] == 301]
    # The old version reads the old files, which are untouched; so are the tombstoned ones.
    old = deltalake.DeltaTable(path, version=read)
    assert set(_live(old)) == set(live)
    assert _rows(old.to_pyarrow_table()) == rows
    assert {p: Path(p).read_bytes() for p in live} == old_bytes
    assert {p: Path(p).read_bytes() for p in tombstoned} == tombstoned
    # Nothing left to do: no commit.
    again = pba.add_bloom_filters_sync(after, "id,s")
    assert again.version is None and again.files == ()
    assert {s.reason for s in again.skipped} == {
        "nothing to add: already has a Bloom filter; replace=True (--replace) rebuilds it"
    }
    assert deltalake.DeltaTable(path).version() == read + 1


def test_delta_partition_values_of_every_kind(tmp_path: Path) -> None:
    path = tmp_path / "t"
    moment = datetime.datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=datetime.timezone.utc)
    n = 6
    data = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "s": pa.array([f"s{i}" for i in range(n)]),
        "ps": pa.array(["a b/c", "é=%20", None, "x", "a b/c", "50%"]),
        "pi": pa.array([1, -2, None, 3, 1, 3], pa.int32()),
        "pd": pa.array([datetime.date(2024, 2, 29)] * n),
        "pt": pa.array([moment, moment, None, moment, moment, moment], pa.timestamp("us", "UTC")),
        "pb": pa.array([True, False, None, True, True, False]),
        "pdec": pa.array([decimal.Decimal("1.50")] * n, pa.decimal128(5, 2)),
    })  # fmt: skip
    partitions = ["ps", "pi", "pd", "pt", "pb", "pdec"]
    deltalake.write_deltalake(path, data, partition_by=partitions)
    dt = deltalake.DeltaTable(path)
    rows = _sql(dt)
    result = pba.add_bloom_filters_sync(dt, ["id"])
    assert len(result.files) == 5 and result.skipped == ()
    after = deltalake.DeltaTable(path)
    assert _sql(after) == rows  # no row twice: every old file was removed
    assert sorted(r["partition"]["ps"] or "" for r in _live(after).values()) == sorted(
        r["partition"]["ps"] or "" for r in _live(dt).values()
    )
    assert _sql(after, "SELECT id FROM t WHERE ps = 'a b/c' AND pt IS NOT NULL") == [
        {"id": 0}, {"id": 4},
    ]  # fmt: skip


def test_delta_file_with_a_deletion_vector_is_left(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dt = _delta(path, partitioned=False, **{"delta.enableDeletionVectors": "true"})
    first = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
    holder = next(a["path"] for a in first if a["min.id"] == 0)
    commit_deletion_vector(path, holder, [2, 7])  # rows 2 and 7: ids 2 and 8 (5 is gone)
    dt = deltalake.DeltaTable(path)
    rows = _sql(dt)
    assert [r["id"] for r in rows][:8] == [0, 1, 3, 4, 6, 7, 9, 10]
    result = pba.add_bloom_filters_sync(dt, ["id"])
    (left,) = result.skipped
    assert left.path == str(path / holder) and "deletion vector" in left.reason
    assert len(result.files) == len(first) - 1
    after = deltalake.DeltaTable(path)
    assert _sql(after) == rows
    assert str(path / holder) in _live(after)


def test_delta_path_spelled_by_another_writer_is_left(tmp_path: Path) -> None:
    # Another engine's log may escape characters deltalake leaves alone ('=' here): a
    # remove spelled deltalake's way would not name the file, leaving it live twice.
    path = tmp_path / "t"
    dt = _delta(path, partitioned=False)
    name = "b=c.parquet"
    pq.write_table(_chunk(ROWS, ROWS + 10), path / name)
    stats = json.dumps({"numRecords": 10})
    add = {"add": {"path": "b%3Dc.parquet", "partitionValues": {}, "size":
                   (path / name).stat().st_size, "modificationTime": 1, "dataChange": True,
                   "stats": stats}}  # fmt: skip
    log = path / "_delta_log" / f"{dt.version() + 1:020d}.json"
    log.write_text(json.dumps(add) + "\n")
    dt = deltalake.DeltaTable(path)
    rows = _sql(dt)
    result = pba.add_bloom_filters_sync(dt, ["id"])
    (left,) = result.skipped
    assert left.path == str(path / name) and "spells its path differently" in left.reason
    assert _sql(deltalake.DeltaTable(path)) == rows


@pytest.mark.parametrize("other", ["delete", "overwrite"])
def test_delta_conflicting_commit_fails_ours_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, other: str
) -> None:
    path = tmp_path / "t"
    dt = _delta(path)
    before = sorted(p.name for p in path.rglob("*"))
    original = delta_commit.commit

    def concurrent_then_ours(*args: Any) -> None:
        if other == "delete":
            deltalake.DeltaTable(path).delete("id = 7")
        else:
            deltalake.write_deltalake(path, _chunk(0, 10), mode="overwrite", partition_by=["p"])
        original(*args)

    monkeypatch.setattr(delta_commit, "commit", concurrent_then_ours)
    with pytest.raises(CommitConflictError, match="changed since version 4") as caught:
        pba.add_bloom_filters_sync(dt, ["id"])
    assert "\n" not in str(caught.value)
    assert _new_files(path) == []
    after = deltalake.DeltaTable(path)
    assert after.version() == 5  # the other commit only
    assert after.history(1)[0]["operation"] in ("DELETE", "WRITE")
    assert [p for p in sorted(p.name for p in path.rglob("*")) if p not in before]  # theirs
    expected = [r for r in _rows(_chunk(0, ROWS)) if r["id"] not in (5, 7)]
    assert _sql(after) == (expected if other == "delete" else _rows(_chunk(0, 10)))


def test_delta_concurrent_append_does_not_conflict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t"
    dt = _delta(path)
    original = delta_commit.commit

    def append_then_ours(*args: Any) -> None:
        deltalake.write_deltalake(path, _chunk(1000, 1010), mode="append", partition_by=["p"])
        original(*args)

    monkeypatch.setattr(delta_commit, "commit", append_then_ours)
    result = pba.add_bloom_filters_sync(dt, ["id"])
    assert (result.read_version, result.version) == (4, 6)  # the append is version 5
    after = deltalake.DeltaTable(path)
    expected = [r for r in _rows(_chunk(0, ROWS)) if r["id"] != 5] + _rows(_chunk(1000, 1010))
    assert _sql(after) == expected
    appended = [p for p in _live(after) if ".bf-" not in p]
    assert len(appended) == 1  # the appended file, live and not rewritten


def test_cli_delta(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dt = _delta(path)
    rows = _sql(dt)
    proc = _cli("add-filters", "--delta", str(path), "--columns", "id,s", "--version", "4")
    assert proc.returncode == 0, proc.stderr
    assert "4 files replaced, 8 filters added" in proc.stdout
    assert "read at version 4, committed as version 5" in proc.stdout
    after = deltalake.DeltaTable(path)
    assert _sql(after) == rows
    proc = _cli("prune", "--delta", str(path), "--where", "s = 's5x'", "--summary")
    assert proc.returncode == 0 and "0/4 row groups kept" in proc.stdout, proc.stdout
    for argv, message in (
        (["--version", "4"], "--version 4: the table's latest version is 5"),
        (["--version", "-1"], "--version must be >= 0"),
        (["--columns", "nope"], "has no such column; it has: id, s, p"),
        (["--columns", "p"], "a partition column"),
        (["--out", str(tmp_path / "x.parquet")], "--out takes a single PATH"),
    ):
        argv = ["--columns", "id", *argv] if argv[0] != "--columns" else argv
        proc = _cli("add-filters", "--delta", str(path), *argv)
        assert proc.returncode == 2 and message in _one_line(proc), (argv, proc.stderr)
    proc = _cli("add-filters", "--delta", str(tmp_path / "none"), "--columns", "id")
    assert proc.returncode == 2 and "cannot open the Delta table" in _one_line(proc)
    proc = _cli("add-filters", "--columns", "id")
    assert proc.returncode == 2 and "--delta URI or --iceberg" in _one_line(proc)
    assert deltalake.DeltaTable(path).version() == 5


def test_delta_on_s3(s3_server: Any, tmp_path: Path) -> None:
    uri = s3_server.url(f"commit-{tmp_path.name}/t")
    storage = {
        "aws_endpoint_url": s3_server.endpoint, "aws_region": s3_server.region,
        "aws_access_key_id": "testing", "aws_secret_access_key": "testing",
        "allow_http": "true", "aws_s3_allow_unsafe_rename": "true",
    }  # fmt: skip
    dt = _delta(uri, storage)
    rows = _sql(dt)
    result = pba.add_bloom_filters_sync(dt, ["id", "s"], options=s3_server.options)
    assert (result.read_version, result.version) == (4, 5) and len(result.files) == 4
    assert all(f.out.startswith(uri + "/p=") for f in result.files)
    after = deltalake.DeltaTable(uri, storage_options=storage)
    assert _sql(after) == rows
    sizes = {
        row["path"]: row["size_bytes"] for row in pa.table(after.get_add_actions()).to_pylist()
    }
    assert sorted(sizes.values()) == sorted(f.bytes_after for f in result.files)
    verdicts = pba.prune_sync(after, "s = 's5x'", options=s3_server.options)
    assert verdicts and not any(v.kept for v in verdicts)
    old = deltalake.DeltaTable(uri, version=4, storage_options=storage)
    assert _sql(old) == rows


def test_table_arguments_are_checked_first(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dt = _delta(path)
    with pytest.raises(InvalidArgumentError, match="out= applies to a file"):
        pba.add_bloom_filters_sync(dt, ["id"], out=tmp_path / "x.parquet")
    with pytest.raises(InvalidArgumentError, match="no such column"):
        pba.add_bloom_filters_sync(dt, ["idd"])
    assert _new_files(path) == [] and deltalake.DeltaTable(path).version() == 4


# ---- Iceberg ----------------------------------------------------------------------------


def _iceberg_files(table: Any) -> dict[str, Any]:
    return {t.file.file_path: t.file for t in table.scan().plan_files()}


@pytest.mark.parametrize("partitioned", [True, False])
def test_iceberg_filters_are_committed(tmp_path: Path, partitioned: bool) -> None:
    catalog = sql_catalog(tmp_path)
    spec = PartitionSpec(PartitionField(3, 1000, IdentityTransform(), "p"))
    table = catalog.create_table(
        "ns.t", schema=ICEBERG_SCHEMA, **({"partition_spec": spec} if partitioned else {})
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table.append(_chunk(0, ROWS // 2 + 50))
        table.append(_chunk(ROWS // 2 + 50, ROWS))
        table.delete("id = 5")  # copy-on-write: a file replaced
    table = catalog.load_table("ns.t")
    read = table.current_snapshot().snapshot_id
    rows = _rows(table.scan().to_arrow())
    live = _iceberg_files(table)
    removed = {
        e.data_file.file_path
        for s in table.snapshots() for m in s.manifests(table.io)
        for e in m.fetch_manifest_entry(table.io, discard_deleted=False)
    } - set(live)  # fmt: skip
    assert removed
    removed_bytes = {p: _local(p).read_bytes() for p in removed}
    result = pba.add_bloom_filters_sync(table, "id,s")
    assert (result.kind, result.read_version) == ("iceberg", read)
    assert sorted(f.path for f in result.files) == sorted(live) and result.skipped == ()
    after = catalog.load_table("ns.t")
    assert after.current_snapshot().snapshot_id == result.version
    assert _rows(after.scan().to_arrow()) == rows
    new_live = _iceberg_files(after)
    assert set(new_live) == {f.out for f in result.files}
    for new, data in new_live.items():
        (old,) = [p for p in live if _stem(p) == _stem(new)]
        assert data.file_size_in_bytes == _local(new).stat().st_size
        for key in ("record_count", "partition", "lower_bounds", "upper_bounds",
                    "null_value_counts", "value_counts", "split_offsets"):  # fmt: skip
            assert getattr(data, key) == getattr(live[old], key), key
        assert _duckdb_probe(str(_local(new)), "s", "s5x") == [True]
    assert _duckdb_rows([str(_local(p)) for p in new_live], "id, s, p") == rows
    verdicts = pba.prune_sync(after, "s = 's5x'")
    assert verdicts and {v.rule for v in verdicts} == {pba.Rule.BLOOM_FILTER}
    assert _rows(after.scan(snapshot_id=read).to_arrow()) == rows  # the old snapshot
    assert {p: _local(p).read_bytes() for p in removed} == removed_bytes
    again = pba.add_bloom_filters_sync(after, ["id"])
    assert again.version is None and len(again.skipped) == len(new_live)


def test_iceberg_conflicting_commit_fails_ours_cleanly(
    iceberg_table: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _local(iceberg_table.location())
    read = iceberg_table.current_snapshot().snapshot_id
    original = iceberg_commit.commit

    def concurrent_then_ours(*args: Any) -> None:
        other = sql_catalog(tmp_path).load_table("ns.t")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            other.delete("id = 7")
        original(*args)

    monkeypatch.setattr(iceberg_commit, "commit", concurrent_then_ours)
    with pytest.raises(CommitConflictError, match=f"changed since snapshot {read}") as caught:
        pba.add_bloom_filters_sync(iceberg_table, ["id"])
    assert "\n" not in str(caught.value)
    assert _new_files(root) == []
    after = sql_catalog(tmp_path).load_table("ns.t")
    assert after.current_snapshot().parent_snapshot_id == read  # theirs only
    assert _rows(after.scan().to_arrow()) == [
        r for r in _rows(_chunk(0, ROWS)) if r["id"] not in (5, 7)
    ]


def test_cli_iceberg(iceberg_table: Any, tmp_path: Path) -> None:
    env = {
        "HOME": str(tmp_path), "PYICEBERG_CATALOG__TEST__TYPE": "sql",
        "PYICEBERG_CATALOG__TEST__URI": f"sqlite:///{tmp_path / 'catalog.db'}",
        "PYICEBERG_CATALOG__TEST__WAREHOUSE": (tmp_path / "wh").as_uri(),
    }  # fmt: skip
    rows = _rows(iceberg_table.scan().to_arrow())
    proc = _cli("add-filters", "--iceberg", "test.ns.t", "--columns", "s", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["kind"] == "iceberg" and got["version"] is not None and got["files"]
    after = sql_catalog(tmp_path).load_table("ns.t")
    assert after.current_snapshot().snapshot_id == got["version"]
    assert _rows(after.scan().to_arrow()) == rows
    for argv in (["--iceberg", "test.ns.nope"], ["--iceberg", "nocatalog.ns.t"],
                 ["--iceberg", "test.ns.t", "--version", "1"]):  # fmt: skip
        proc = _cli("add-filters", *argv, "--columns", "s", env=env)
        assert proc.returncode == 2, (argv, proc.stderr)
        _one_line(proc)


@pytest.mark.anyio
async def test_async_on_both_backends(tmp_path: Path) -> None:
    path = tmp_path / "t"
    dt = _delta(path)
    rows = _sql(dt)
    result = await pba.add_bloom_filters(dt, ["s"])
    assert (result.version, len(result.files)) == (5, 4)
    assert _sql(deltalake.DeltaTable(path)) == rows


def test_delta_statistics_of_every_kind_are_carried(tmp_path: Path) -> None:
    path = tmp_path / "t"
    moments = [datetime.datetime(2020, 1, 1, 1, 2, 3, 456789), datetime.datetime(1960, 1, 1)]
    data = pa.table({
        "id": pa.array([1, 2], pa.int64()),
        "i8": pa.array([1, -2], pa.int8()),
        "f": pa.array([1.5, float("nan")], pa.float32()),
        "d": pa.array([0.1, 1e300]),
        "s": ["x" * 40, "é\"\\"],
        "b": [True, False],
        "bin": [b"a", b"b"],
        "day": pa.array([datetime.date(2020, 1, 1), datetime.date(1, 1, 1)]),
        "ts": pa.array(moments, pa.timestamp("us", "UTC")),
        "ntz": pa.array(moments, pa.timestamp("us")),
        "dec": pa.array([decimal.Decimal("1.50"), decimal.Decimal("-12.25")], pa.decimal128(6, 2)),
        "st": [{"a": 1, "b": "q"}, {"a": None, "b": "r"}],
        "l": [[1], [2, 3]],
    })  # fmt: skip
    deltalake.write_deltalake(path, data)
    deltalake.write_deltalake(path, data.slice(0, 1), mode="append")
    dt = deltalake.DeltaTable(path)
    before = sorted(_live(dt).values(), key=lambda r: r["num_records"])
    result = pba.add_bloom_filters_sync(dt, ["id", "st.b"])
    assert len(result.files) == 2 and result.skipped == ()
    after = sorted(_live(deltalake.DeltaTable(path)).values(), key=lambda r: r["num_records"])
    for old, new in zip(before, after, strict=True):
        for key in ("num_records", "null_count", "min", "max"):
            assert new[key] == old[key], key
    assert after[1]["min"]["ts"] == datetime.datetime(1960, 1, 1, tzinfo=datetime.timezone.utc)
    assert after[1]["max"]["dec"] == decimal.Decimal("1.50")


def test_delta_files_without_a_column_are_left(tmp_path: Path) -> None:
    path = tmp_path / "t"
    deltalake.write_deltalake(path, _chunk(0, 10))
    extra = _chunk(10, 20).append_column("e", pa.array([f"e{i}" for i in range(10)]))
    deltalake.write_deltalake(path, extra, mode="append", schema_mode="merge")
    dt = deltalake.DeltaTable(path)
    result = pba.add_bloom_filters_sync(dt, ["e"])
    assert len(result.files) == 1 and result.files[0].filters[0].column == "e"
    (left,) = result.skipped
    assert left.reason == "nothing to add: not in this file (written without it)"
    assert _sql(deltalake.DeltaTable(path)) == _sql(dt)


def test_iceberg_files_of_an_earlier_partition_spec_are_left(iceberg_table: Any) -> None:
    with iceberg_table.update_spec() as update:
        update.remove_field("p")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        iceberg_table.append(_chunk(ROWS, ROWS + 10))
    rows = _rows(iceberg_table.scan().to_arrow())
    result = pba.add_bloom_filters_sync(iceberg_table, ["id"])
    assert len(result.files) == 1 and result.files[0].path.endswith(".parquet")
    assert result.skipped and all("partition spec 0" in s.reason for s in result.skipped)
    assert _rows(iceberg_table.scan().to_arrow()) == rows


def test_delta_commit_that_lands_despite_an_error_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The commit lands and the call then fails (a lost response): the history shows this
    # run's marker, so the copies, which the new version reads, are kept and reported.
    path = tmp_path / "t"
    dt = _delta(path)
    rows = _sql(dt)
    original = delta_commit.commit

    def ours_then_lost(*args: Any) -> None:
        original(*args)
        raise OSError("connection reset by peer")

    monkeypatch.setattr(delta_commit, "commit", ours_then_lost)
    result = pba.add_bloom_filters_sync(dt, ["id"])
    assert result.version == 5 and len(result.files) == 4
    after = deltalake.DeltaTable(path)
    assert set(_live(after)) == {f.out for f in result.files}
    assert _sql(after) == rows


def test_delta_commit_that_fails_before_landing_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t"
    dt = _delta(path)

    def refused(*args: Any) -> None:
        raise OSError("the store refused the write")

    monkeypatch.setattr(delta_commit, "commit", refused)
    with pytest.raises(OSError, match="refused the write"):
        pba.add_bloom_filters_sync(dt, ["id"])
    assert _new_files(path) == [] and deltalake.DeltaTable(path).version() == 4
