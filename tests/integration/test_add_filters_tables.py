"""Adding filters to the files of Delta and Iceberg tables (written by deltalake and pyiceberg).

What the tests show:

* A plain path inside a table (its root, a partition folder, a folder holding a table,
  one of its files, ``out=`` into it) is refused before anything is read or written, by
  the command line (exit 2, one line naming ``--delta``/``--iceberg``) and by
  ``add_bloom_filters``; the table's files stay byte-identical and the table reads as
  before. Locally and on S3 (moto); a plain folder beside a table is not refused.
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
from pyiceberg.catalog.sql import SqlCatalog  # noqa: E402
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.transforms import IdentityTransform  # noqa: E402
from pyiceberg.types import LongType, NestedField, StringType  # noqa: E402

ROWS = 400  # ids 0..399; p = 'a' below 200, 'b' above


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


def _delta(path: Path | str, storage: dict[str, str] | None = None) -> Any:
    """Four appends (two files per partition p), then a delete: one file tombstoned."""
    for start in range(0, ROWS, ROWS // 4):
        deltalake.write_deltalake(
            path, _chunk(start, start + ROWS // 4), partition_by=["p"], mode="append",
            storage_options=storage,
        )  # fmt: skip
    dt = deltalake.DeltaTable(path, storage_options=storage)
    dt.delete("id = 5")
    return deltalake.DeltaTable(path, storage_options=storage)


@pytest.fixture
def delta_path(tmp_path: Path) -> Path:
    path = tmp_path / "lake" / "t"
    _delta(path)
    return path


def _catalog(tmp_path: Path) -> Any:
    return SqlCatalog(
        "test", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=(tmp_path / "wh").as_uri()
    )


ICEBERG_SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "s", StringType(), required=False),
    NestedField(3, "p", StringType(), required=False),
)


@pytest.fixture
def iceberg_table(tmp_path: Path) -> Any:
    """Written by pyiceberg (two appends, partitioned by p), then a delete: files replaced."""
    catalog = _catalog(tmp_path)
    catalog.create_namespace("ns")
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
        pba.add_bloom_filters(one, ["id"])
    with pytest.raises(InvalidArgumentError, match="lies in the Delta table"):
        anyio.run(lambda: pba.add_bloom_filters_async(str(one), "id"))
    # Writing into the table from elsewhere is refused too.
    plain = tmp_path / "plain.parquet"
    pq.write_table(_chunk(0, 10), plain)
    with pytest.raises(InvalidArgumentError, match="lies in the Delta table"):
        pba.add_bloom_filters(plain, ["id"], out=delta_path / "p=a" / "x.parquet")
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
        pba.add_bloom_filters(a_file, ["id"])
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
        pba.add_bloom_filters(one, ["id"], options=s3_server.options)
    dt = deltalake.DeltaTable(uri, storage_options=storage)
    assert pa.table(dt.get_add_actions()).select(["path", "size_bytes"]).to_pylist() == sizes
    got = pa.table(deltalake.QueryBuilder().register("t", dt).execute("SELECT * FROM t"))
    assert _rows(got) == rows
