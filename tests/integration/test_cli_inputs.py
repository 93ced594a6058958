"""Input errors are exit 2, one line on stderr, before any work: for every command.

A table that is not there (``--delta`` on a folder that is no table, ``--iceberg``
naming no table), a version the table does not have, an ``--out`` in a folder that
does not exist, a lake root that does not exist.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

SCRIPT = [sys.executable, "-m", "pybloom_async.apps.cli"]


def cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SCRIPT, *argv], capture_output=True, text=True, timeout=120,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def input_error(proc: subprocess.CompletedProcess[str], *words: str) -> None:
    assert proc.returncode == 2, (proc.args, proc.returncode, proc.stderr)
    assert proc.stdout == "", proc.stdout
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("pybloom-async: error: "), proc.stderr
    for word in words:
        assert word in proc.stderr, (word, proc.stderr)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A folder with one Parquet file (id), which is no table."""
    folder = tmp_path / "plain"
    folder.mkdir()
    pq.write_table(pa.table({"id": pa.array(range(10), pa.int64())}), folder / "a.parquet")
    return folder


COMMANDS = {
    "prune": ["prune", "--where", "id = 1"],
    "lookup": ["lookup", "--where", "id = 1"],
    "add-filters": ["add-filters", "--columns", "id"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_delta_table_that_is_not_there(command: str, data: Path, tmp_path: Path) -> None:
    pytest.importorskip("deltalake")
    input_error(cli(*COMMANDS[command], "--delta", str(data)), "cannot open the Delta table")
    gone = tmp_path / "gone"
    input_error(cli(*COMMANDS[command], "--delta", str(gone)), "cannot open the Delta table")


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_delta_version_the_table_does_not_have(command: str, tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    path = tmp_path / "t"
    deltalake.write_deltalake(path, pa.table({"id": pa.array(range(10), pa.int64())}))
    deltalake.write_deltalake(path, pa.table({"id": pa.array([11], pa.int64())}), mode="append")
    before = sorted(p.name for p in path.iterdir())
    proc = cli(*COMMANDS[command], "--delta", str(path), "--version", "99")
    input_error(proc, "--version 99", "latest version is 1")
    assert sorted(p.name for p in path.iterdir()) == before


@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_iceberg_table_that_is_not_there(command: str, tmp_path: Path) -> None:
    pytest.importorskip("pyiceberg")
    env = {
        "HOME": str(tmp_path), "PYICEBERG_CATALOG__TEST__TYPE": "sql",
        "PYICEBERG_CATALOG__TEST__URI": f"sqlite:///{tmp_path / 'catalog.db'}",
        "PYICEBERG_CATALOG__TEST__WAREHOUSE": (tmp_path / "wh").as_uri(),
    }  # fmt: skip
    proc = cli(*COMMANDS[command], "--iceberg", "test.ns.nope", env=env)
    input_error(proc, "cannot load the Iceberg table", "test.ns.nope")
    proc = cli(*COMMANDS[command], "--iceberg", "nocatalog.ns.t", env=env)
    input_error(proc, "cannot load the Iceberg table")


def test_out_in_a_folder_that_does_not_exist(data: Path, tmp_path: Path) -> None:
    file = data / "a.parquet"
    before = file.read_bytes()
    nowhere = str(tmp_path / "no" / "such" / "x.parquet")
    for argv in (
        ["lookup", str(file), "--where", "id = 1", "--out", nowhere],
        ["lookup", str(file), "--where", "id = 1", "-f", "parquet", "--out", nowhere],
        ["add-filters", str(file), "--columns", "id", "--out", nowhere],
    ):
        input_error(cli(*argv), "--out: the directory", "does not exist")
    input_error(cli("add-filters", str(file), "-c", "id", "--out", str(tmp_path)), "directory")
    assert file.read_bytes() == before  # nothing was rewritten


def test_a_lake_root_that_does_not_exist(data: Path, tmp_path: Path) -> None:
    gone = str(tmp_path / "gone")
    input_error(cli("lake-index", "build", gone, "--columns", "id"), "no such file")
    input_error(cli("lake-index", "compact", gone), "no lake index")
    input_error(cli("lake-index", "compact", str(data)), "no lake index under this root")
    input_error(cli("prune", gone, "--where", "id = 1", "--lake-index"), "no lake index")
