"""The command line: output shapes, exit codes, one-line errors."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pybloom_async.cli import main


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "d.parquet"
    table = pa.table({"id": pa.array(range(0, 2000, 2), pa.int64()),
                      "name": pa.array([f"n{i}" for i in range(1000)])})  # fmt: skip
    pq.write_table(table, path, row_group_size=250, bloom_filter_options={"id": True, "name": True})
    return path


def test_probe_json(data_file: Path) -> None:
    code, out = run("probe", str(data_file), "--column", "id", "--value", "4", "--value", "5",
                    "--json")  # fmt: skip
    assert code == 0
    rows = json.loads(out)
    assert len(rows) == 4 * 2
    assert {tuple(sorted(r)) for r in rows} == {
        ("column", "excluded", "file", "reason", "row_group", "rule", "value")
    }
    by = {(r["row_group"], r["value"]): r["excluded"] for r in rows}
    assert by[(0, "4")] is False
    assert all(by[(g, "5")] for g in range(4))  # odd ids are in no row group


def test_prune_json_and_text(data_file: Path) -> None:
    code, out = run("prune", str(data_file), "--where", "id = 600 OR name = 'n1'", "--json")
    assert code == 0
    rows = json.loads(out)
    assert [r["kept"] for r in rows] == [True, True, False, False]  # n1 in 0, 600 in 1
    code, out = run("prune", str(data_file.parent), "--where", "id IN (1, 3)")
    assert code == 0
    assert "0/4 row groups kept" in out


def test_inspect(data_file: Path) -> None:
    code, out = run("inspect", str(data_file), "--column", "id", "--json")
    assert code == 0
    rows = json.loads(out)
    assert len(rows) == 4 and all(r["state"] == "ok" and r["num_bytes"] >= 32 for r in rows)
    assert all(200 <= r["estimated_ndv"] <= 300 for r in rows)


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["prune", "{file}", "--where", "id ="], 2, "expected a value"),
        (["probe", "{file}", "--column", "nope", "--value", "1"], 2, "no leaf column"),
        (["probe", "{file}", "--column", "id", "--value", "abc"], 2, "is not a value of this"),
        (["prune", "/no/such/file.parquet", "--where", "id = 1", "--strict"], 1, "no such file"),
        (["inspect", "{bad}"], 1, "magic"),
    ],
)
def test_errors_are_one_line(
    data_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    argv: list[str], code: int, message: str | None,
) -> None:  # fmt: skip
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet at all, not at all")
    argv = [a.format(file=data_file, bad=bad) for a in argv]
    got, _ = run(*argv)
    err = capsys.readouterr().err
    assert got == code, err
    if message:
        assert message in err
        assert err.count("\n") == 1 and "Traceback" not in err


def test_console_script_runs_in_a_subprocess(data_file: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pybloom_async.cli", "prune", str(data_file), "--where", "id = 2",
         "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["kept"] is True
