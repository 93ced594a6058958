"""A Delta or Iceberg table's folder given as plain paths is refused, by every entry point.

Read as plain files, a table's folder brings back the rows the table deleted: the
files a delete replaced stay on disk until a vacuum, and only the log (Delta) or the
manifests (Iceberg) say which are live. So ``lookup``, ``lookup_batches``, ``prune``,
``pruned_dataset``, the index builds and the command line's ``lookup``, ``prune``,
``probe``, ``index build`` and ``lake-index build`` refuse, with one line naming the
table and the form that reads it (``--delta``/``--iceberg``, or the table object):
the table's root, a folder or file inside it, a folder holding a table deeper down.
Locally and on S3 (moto), where files of a table sort before its ``_delta_log/``.
``inspect`` describes the files as they are and still reads them; a plain folder
beside a table is not refused.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest

import pybloom_async as pba
from pybloom_async.errors import InvalidArgumentError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pyiceberg")
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.types import LongType, NestedField, StringType  # noqa: E402
from support.iceberg_catalog import sql_catalog  # noqa: E402

WHERE = "user_id = 5"


def _chunk(start: int, stop: int) -> Any:
    ids = list(range(start, stop))
    return pa.table({
        "user_id": pa.array(ids, pa.int64()),
        "name": pa.array([f"u{i}" for i in ids], pa.string()),
    })  # fmt: skip


def _delta(path: Path | str, storage: dict[str, str] | None = None, **write: Any) -> None:
    """Two appends, then the delete a new user makes: the old file stays on disk."""
    for start in (0, 100):
        deltalake.write_deltalake(
            path, _chunk(start, start + 100), mode="append", storage_options=storage, **write
        )
    deltalake.DeltaTable(path, storage_options=storage).delete(WHERE)


@pytest.fixture
def delta_root(tmp_path: Path) -> Path:
    root = tmp_path / "lake" / "t"
    _delta(root)
    assert deltalake.DeltaTable(root).to_pyarrow_table().filter(pa.compute.field("user_id") == 5)\
        .num_rows == 0  # fmt: skip
    return root


@pytest.fixture
def iceberg_root(tmp_path: Path) -> Path:
    catalog = sql_catalog(tmp_path)
    schema = Schema(
        NestedField(1, "user_id", LongType(), required=False),
        NestedField(2, "name", StringType(), required=False),
    )
    table = catalog.create_table("ns.t", schema=schema)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # merge-on-read falls back to copy-on-write
        table.append(_chunk(0, 100))
        table.append(_chunk(100, 200))
        table.delete(WHERE)
    assert catalog.load_table("ns.t").scan(row_filter=WHERE).to_arrow().num_rows == 0
    return Path(table.location().removeprefix("file://"))


def _a_file(root: Path) -> Path:
    return next(p for p in sorted(root.rglob("*.parquet")) if "metadata" not in p.parts)


def _cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pybloom_async.apps.cli", *argv], capture_output=True,
        text=True, timeout=180, env={**os.environ, **(env or {})}, check=False,
    )  # fmt: skip


def _refused(proc: subprocess.CompletedProcess[str], *names: str) -> None:
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    for name in names:
        assert name in proc.stderr, proc.stderr


def _python_refuses(target: Path | str, match: str, **options: Any) -> None:
    """Each Python entry point that reads plain paths refuses ``target``."""
    given = str(target)
    with pytest.raises(InvalidArgumentError, match=match):
        pba.lookup_sync(given, WHERE, **options)
    with pytest.raises(InvalidArgumentError, match=match):
        pba.lookup_sync(given, WHERE, on_error="skip", **options)  # no file to skip: refused
    with pytest.raises(InvalidArgumentError, match=match):
        pba.prune_sync(given, WHERE, **options)
    with pytest.raises(InvalidArgumentError, match=match):
        pba.pruned_dataset_sync(given, WHERE, **options)

    async def batches() -> None:
        async for _ in pba.lookup_batches(given, WHERE, **options):
            pass

    with pytest.raises(InvalidArgumentError, match=match):
        anyio.run(batches)
    with pytest.raises(InvalidArgumentError, match=match):
        anyio.run(lambda: pba.lookup(given, WHERE, **options))
    with pytest.raises(InvalidArgumentError, match=match):
        anyio.run(lambda: pba.prune(given, WHERE, **options))


# ---- Delta ------------------------------------------------------------------------------


@pytest.mark.parametrize("given", ["root", "file", "parent"])
def test_python_refuses_a_delta_tables_folder(delta_root: Path, given: str) -> None:
    target = {"root": delta_root, "file": _a_file(delta_root), "parent": delta_root.parent}
    _python_refuses(target[given], rf"Delta table {delta_root} .*deltalake\.DeltaTable")
    # The table form reads the table: the deleted row is not there.
    assert pba.lookup_sync(deltalake.DeltaTable(delta_root), WHERE).num_rows == 0


def test_index_builds_refuse_a_delta_tables_folder(delta_root: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="Delta table"):
        pba.build_index_sync(str(delta_root), ["user_id"])
    with pytest.raises(InvalidArgumentError, match="Delta table"):
        pba.build_lake_index_sync(str(delta_root), ["user_id"])
    with pytest.raises(InvalidArgumentError, match="Delta table"):
        pba.build_lake_index_sync(str(delta_root.parent), ["user_id"])
    assert not list(delta_root.rglob("_bloom_index"))


@pytest.mark.parametrize("given", ["root", "file", "parent"])
def test_cli_refuses_a_delta_tables_folder(delta_root: Path, given: str) -> None:
    target = {"root": delta_root, "file": _a_file(delta_root), "parent": delta_root.parent}
    path = str(target[given])
    _refused(_cli("lookup", path, "--where", WHERE), f"Delta table {delta_root} ",
             f"--delta {delta_root} ")  # fmt: skip
    _refused(_cli("prune", path, "--where", WHERE), f"--delta {delta_root} ")
    _refused(_cli("probe", path, "-c", "user_id", "--value", "5"), f"--delta {delta_root} ")
    _refused(_cli("index", "build", path, "--columns", "user_id"), f"--delta {delta_root} ")
    # The table form gives the table's rows: none.
    done = _cli("lookup", "--delta", str(delta_root), "--where", WHERE, "-f", "json", "-q")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_inspect_and_a_plain_folder_beside_a_table_are_not_refused(delta_root: Path) -> None:
    done = _cli("inspect", str(delta_root))
    assert done.returncode == 0, done.stderr
    plain = delta_root.parent / "plain"
    plain.mkdir()
    pq.write_table(_chunk(0, 10), plain / "x.parquet")
    assert pba.lookup_sync(str(plain), WHERE).num_rows == 1
    done = _cli("lookup", str(plain), "--where", WHERE, "-f", "json", "-q")
    assert done.returncode == 0 and '"user_id": 5' in done.stdout, done.stderr


def test_a_table_below_a_hidden_folder_is_not_listed(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    _delta(lake / "_old" / "t")
    pq.write_table(_chunk(0, 10), lake / "x.parquet")
    assert pba.lookup_sync(str(lake), WHERE).num_rows == 1


# ---- Iceberg ----------------------------------------------------------------------------


@pytest.mark.parametrize("given", ["root", "data", "file", "parent"])
def test_python_refuses_an_iceberg_tables_folder(iceberg_root: Path, given: str) -> None:
    target = {"root": iceberg_root, "data": iceberg_root / "data",
              "file": _a_file(iceberg_root / "data"), "parent": iceberg_root.parent}  # fmt: skip
    _python_refuses(target[given], rf"Iceberg table at {iceberg_root} .*pyiceberg")


@pytest.mark.parametrize("given", ["root", "parent"])
def test_an_iceberg_table_whose_files_lie_elsewhere_is_refused(tmp_path: Path, given: str) -> None:
    """A table of files added from another folder has no data/ of its own: its metadata/
    says what it is (read as plain files, its folder gave an empty answer, exit 0)."""
    elsewhere = tmp_path / "files"
    elsewhere.mkdir()
    pq.write_table(_chunk(0, 10), elsewhere / "f.parquet")
    catalog = sql_catalog(tmp_path)
    table = catalog.create_table("ns.t", schema=_chunk(0, 1).schema)
    table.add_files([str(elsewhere / "f.parquet")])
    root = Path(table.location().removeprefix("file://"))
    assert not (root / "data").exists()
    target = {"root": root, "parent": root.parent}[given]
    _python_refuses(target, rf"Iceberg table at {root} .*pyiceberg")


@pytest.mark.parametrize("given", ["root", "file", "parent"])
def test_cli_refuses_an_iceberg_tables_folder(iceberg_root: Path, given: str) -> None:
    target = {"root": iceberg_root, "file": _a_file(iceberg_root / "data"),
              "parent": iceberg_root.parent}  # fmt: skip
    path = str(target[given])
    names = (f"Iceberg table at {iceberg_root} ", "--iceberg CATALOG")
    _refused(_cli("lookup", path, "--where", WHERE), *names)
    _refused(_cli("prune", path, "--where", WHERE), *names)
    _refused(_cli("lake-index", "build", path, "--columns", "user_id"), *names)


# ---- S3 ---------------------------------------------------------------------------------


def test_delta_tables_on_s3_are_refused(s3_server: Any, tmp_path: Path) -> None:
    """Files that sort before ``_delta_log/`` (``P=...`` folders) are refused too."""
    lake = s3_server.url(f"tables-{tmp_path.name}/lake")
    storage = {
        "aws_endpoint_url": s3_server.endpoint, "aws_region": s3_server.region,
        "aws_access_key_id": "testing", "aws_secret_access_key": "testing",
        "allow_http": "true", "aws_s3_allow_unsafe_rename": "true",
    }  # fmt: skip
    chunk = _chunk(0, 100).append_column("P", pa.array(["a"] * 100))
    deltalake.write_deltalake(lake + "/t", chunk, partition_by=["P"], storage_options=storage)
    deltalake.DeltaTable(lake + "/t", storage_options=storage).delete(WHERE)
    # A plain file beside the table, listed before it.
    sink = pa.BufferOutputStream()
    pq.write_table(_chunk(0, 10), sink)
    s3_server.put(f"tables-{tmp_path.name}/lake/a/plain.parquet", sink.getvalue().to_pybytes())
    actions = pa.table(deltalake.DeltaTable(lake + "/t", storage_options=storage).get_add_actions())
    one = lake + "/t/" + str(actions.column("path")[0])
    for target in (lake, lake + "/", lake + "/t", lake + "/t/P=a/", one):
        with pytest.raises(InvalidArgumentError, match=f"Delta table {lake}/t "):
            pba.lookup_sync(target, WHERE, options=s3_server.options)
        with pytest.raises(InvalidArgumentError, match=f"Delta table {lake}/t "):
            pba.prune_sync(target, WHERE, options=s3_server.options)
    assert pba.lookup_sync(lake + "/a/", WHERE, options=s3_server.options).num_rows == 1


def test_an_iceberg_layout_on_s3_is_refused(s3_server: Any, tmp_path: Path) -> None:
    """A table's data/ sorts before its metadata/: its files are refused all the same."""
    base = f"iceberg-{tmp_path.name}/lake"
    sink = pa.BufferOutputStream()
    pq.write_table(_chunk(0, 10), sink)
    data = sink.getvalue().to_pybytes()
    s3_server.put(f"{base}/a/plain.parquet", data)
    s3_server.put(f"{base}/ice/data/00000-0-x.parquet", data)
    s3_server.put(f"{base}/ice/metadata/00001-x.metadata.json", b"{}")
    table = s3_server.url(f"{base}/ice")
    for target in (s3_server.url(base), table, table + "/data/", table + "/data/00000-0-x.parquet"):
        with pytest.raises(InvalidArgumentError, match=f"Iceberg table at {table} "):
            pba.lookup_sync(target, WHERE, options=s3_server.options)
    assert pba.lookup_sync(s3_server.url(base + "/a/"), WHERE, options=s3_server.options)\
        .num_rows == 1  # fmt: skip
