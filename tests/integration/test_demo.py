"""The demo (``make demo``, ``python -m pybloom_async.apps.demo``): its output, files and setup."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pybloom_async.apps.demo import (
    FILES,
    INDEX_FOLDER,
    MARKER,
    ROW_GROUPS,
    ROWS_PER_GROUP,
    check_dir,
    file_names,
    prepare,
    same_rows,
)

REPO = Path(__file__).resolve().parents[2]


def run_demo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pybloom_async.apps.demo", *args],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip


def test_demo_writes_its_figures_as_json_and_says_how_to_keep_the_lake(tmp_path: Path) -> None:
    out = tmp_path / "demo.json"
    proc = run_demo("--json-out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "--dir DIR" in proc.stdout  # the lake was temporary: how to keep it
    assert "Why: the ids are random" in proc.stdout
    figures = json.loads(out.read_text())
    assert figures["kind"] == "demo"
    assert {"date", "machine", "load_average"} <= figures.keys()
    lake = figures["lake"]
    assert lake["rows"] == FILES * ROW_GROUPS * ROWS_PER_GROUP
    assert lake["filter_bytes"] > 0 and lake["index_bytes"] > 0
    titles = [q["title"] for q in figures["queries"]]
    assert titles == ["one key", "an IN list of 20 keys", "a key in a time range"]
    for query, expected_rows in zip(figures["queries"], [1, 20, 1], strict=True):
        hows = [r["how"] for r in query["runs"]]
        assert hows == ["pyarrow scan", "lookup (in-file filters)", "lookup (lake index)"]
        # The demo checks every answer against pyarrow's row for row (or exits 1).
        assert {r["rows"] for r in query["runs"]} == {expected_rows}
        plain, filters, index = query["runs"]
        assert all(r["requests"] > 0 and r["ms"] > 0 for r in query["runs"])
        # The filters and the index read less than a statistics-only scan.
        assert filters["bytes_read"] < plain["bytes_read"]
        assert index["bytes_read"] < plain["bytes_read"]
    one_key = figures["queries"][0]["runs"]
    # The files the index rules out: their footers only (their types count for the answer),
    # beside the index's own reads (its segment and one stripe).
    assert one_key[2]["requests"] <= one_key[1]["requests"] + 3


def test_demo_keeps_the_lake_in_dir_and_reuses_it(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    for _ in range(2):  # the second run finds its own earlier lake there
        proc = run_demo("--dir", str(lake))
        assert proc.returncode == 0, proc.stderr
        assert f"The lake stays in {lake}" in proc.stdout
    assert sorted(p.name for p in lake.glob("*.parquet")) == file_names()
    assert sorted(p.name for p in lake.iterdir()) == sorted([*file_names(), INDEX_FOLDER, MARKER])


def test_demo_refuses_a_dir_holding_other_files(tmp_path: Path) -> None:
    # A file named like one of the demo's is still the user's: no marker, no touching.
    mine = tmp_path / "part-000.parquet"
    mine.write_bytes(b"PAR1 not the demo's PAR1")
    proc = run_demo("--dir", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.startswith("demo: error: --dir ")
    assert "part-000.parquet" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert proc.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["part-000.parquet"]
    assert mine.read_bytes() == b"PAR1 not the demo's PAR1"


def test_demo_refuses_its_own_folder_once_the_user_added_a_file(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    prepare(lake)  # an earlier (here: interrupted) run's folder: the marker only
    assert check_dir(lake) is None
    notes = lake / "notes.txt"
    notes.write_text("mine")
    proc = run_demo("--dir", str(lake))
    assert proc.returncode == 2 and "notes.txt" in proc.stderr
    assert notes.read_text() == "mine"


def test_demo_refuses_a_dir_it_cannot_make(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"")
    proc = run_demo("--dir", str(tmp_path / "file" / "lake"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("demo: error: --dir ") and "cannot make the folder" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "target, message",
    [("missing/demo.json", "no folder"), (".", "a folder, not a file")],
)
def test_demo_refuses_an_unwritable_json_out_before_work(
    tmp_path: Path, target: str, message: str
) -> None:
    proc = run_demo("--json-out", str(tmp_path / target), "--dir", str(tmp_path / "lake"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("demo: error: --json-out ") and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "lake").exists()


def test_check_dir(tmp_path: Path) -> None:
    assert check_dir(tmp_path / "new") is None
    assert check_dir(tmp_path) is None  # empty
    (tmp_path / "part-000.parquet").write_bytes(b"")
    (tmp_path / INDEX_FOLDER).mkdir()
    problem = check_dir(tmp_path)  # the demo's names, but no marker: not the demo's
    assert problem is not None and "(_bloom_index and 1 more)" in problem
    (tmp_path / MARKER).write_text(json.dumps({"written": [*file_names(), INDEX_FOLDER]}))
    assert check_dir(tmp_path) is None  # an earlier run's lake
    (tmp_path / "notes.txt").write_bytes(b"")
    problem = check_dir(tmp_path)
    assert problem is not None and "notes.txt" in problem
    (tmp_path / MARKER).write_text("{damaged")
    assert check_dir(tmp_path) is not None  # a damaged marker names nothing
    assert "not a folder" in (check_dir(tmp_path / "notes.txt") or "")


def test_prepare_removes_only_what_the_marker_names(tmp_path: Path) -> None:
    (tmp_path / MARKER).write_text(json.dumps({"written": ["part-000.parquet", INDEX_FOLDER]}))
    (tmp_path / "part-000.parquet").write_bytes(b"old")
    (tmp_path / INDEX_FOLDER / "x").mkdir(parents=True)
    prepare(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [MARKER]
    assert json.loads((tmp_path / MARKER).read_text())["written"] == [*file_names(), INDEX_FOLDER]


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_make_demo_installs_the_runtime_only(tmp_path: Path) -> None:
    """`make demo` sets up the package with its runtime extras, not the test toolchain."""

    def plan(target: str) -> str:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
        proc = subprocess.run(
            ["make", "-n", "-B", "--no-print-directory", target, f"VENV={tmp_path / 'venv'}"],
            cwd=REPO, capture_output=True, text=True, timeout=60, env=env,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    demo = plan("demo")
    assert "'.[arrow]'" in demo and "pybloom_async.apps.demo" in demo
    assert "install-system-deps" not in demo and "test]" not in demo
    assert "--quiet" in demo and "--disable-pip-version-check" in demo
    full = plan("test")  # a superset: the runtime install, then the test tools
    assert "'.[arrow]'" in full and "'.[arrow,test,docs]'" in full
    assert "install-system-deps" in full


def test_same_rows_compares_values_in_any_order() -> None:
    pa = pytest.importorskip("pyarrow")
    a = pa.table({"k": [1, 2], "v": ["x", "y"]})
    assert same_rows(a, pa.table({"v": ["y", "x"], "k": [2, 1]}))
    assert not same_rows(a, pa.table({"k": [1, 2], "v": ["x", "z"]}))
    assert not same_rows(a, pa.table({"k": [1], "v": ["x"]}))
