"""The demo (``make demo``, ``python -m pybloom_async.apps.demo``): its output, files and setup."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pybloom_async.apps.demo import FILES, ROW_GROUPS, ROWS_PER_GROUP, check_dir

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
    assert "When the sidecar index pays" in proc.stdout
    figures = json.loads(out.read_text())
    assert figures["kind"] == "demo"
    assert {"date", "machine", "load_average"} <= figures.keys()
    total_rows = FILES * ROW_GROUPS * ROWS_PER_GROUP
    assert figures["lake"]["rows"] == total_rows
    titles = [q["title"] for q in figures["queries"]]
    assert titles == ["point lookup", "IN list of 20 ids", "two columns", "absent key"]
    for query in figures["queries"]:
        assert [r["how"] for r in query["runs"]] == [
            "in-file filters",
            "sidecar index + in-file filters",
        ]
        for r in query["runs"]:
            # Never a false negative: every file holding a match is kept.
            assert r["kept_files"] >= query["files_with_matches"]
            assert r["kept_row_groups"] >= query["files_with_matches"]
            assert 0 <= r["rows_skipped"] <= total_rows - ROWS_PER_GROUP * r["kept_row_groups"]
            assert r["requests"] > 0 and r["bytes_read"] > 0
    absent = figures["queries"][-1]["runs"]
    assert all(r["rows_skipped"] == total_rows for r in absent)


def test_demo_keeps_the_lake_in_dir_and_reuses_it(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    for _ in range(2):  # the second run finds its own earlier lake there
        proc = run_demo("--dir", str(lake))
        assert proc.returncode == 0, proc.stderr
        assert f"The lake stays in {lake}" in proc.stdout
    assert len(list(lake.glob("part-*.parquet"))) == FILES
    assert len(list((lake / "_bloom_index").iterdir())) == FILES


def test_demo_refuses_a_dir_holding_other_files(tmp_path: Path) -> None:
    mine = tmp_path / "mine.parquet"
    mine.write_bytes(b"PAR1 not the demo's PAR1")
    proc = run_demo("--dir", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.startswith("demo: error: --dir ")
    assert "mine.parquet" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert proc.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.parquet"]
    assert mine.read_bytes() == b"PAR1 not the demo's PAR1"


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
    (tmp_path / "_bloom_index").mkdir()
    assert check_dir(tmp_path) is None  # an earlier run's lake
    (tmp_path / "part-0.parquet").write_bytes(b"")
    (tmp_path / "notes.txt").write_bytes(b"")
    problem = check_dir(tmp_path)
    assert problem is not None and "notes.txt and 1 more" in problem
    assert "not a folder" in (check_dir(tmp_path / "notes.txt") or "")


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
