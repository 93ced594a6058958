"""The command line: output shapes, exit codes, one-line errors."""

from __future__ import annotations

import fcntl
import io
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pybloom_async.apps.cli import main


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
        ("column", "file", "kept", "reason", "row_group", "rule", "value")
    }
    by = {(r["row_group"], r["value"]): r["kept"] for r in rows}
    assert by[(0, 4)] is True  # an int column's values are JSON numbers, as prune shows them
    assert not any(by[(g, 5)] for g in range(4))  # odd ids are in no row group


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
        (["inspect", "{bad}"], 3, "magic"),  # an unreadable input: reported, exit 3
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
        [sys.executable, "-m", "pybloom_async.apps.cli", "prune", str(data_file),
         "--where", "id = 2", "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["kept"] is True


# --------------------------------------------------------------------------- the console script

SCRIPT = [sys.executable, "-m", "pybloom_async.apps.cli"]


def cli(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the console script as users do; the exit code is for the test to assert."""
    return subprocess.run(
        [*SCRIPT, *argv], input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


def one_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    """a.parquet (id, name: 4 row groups), b.parquet (id only), c.parquet (no filters)."""
    root = tmp_path / "lake"
    root.mkdir()
    table = pa.table({"id": pa.array(range(0, 2000, 2), pa.int64()),
                      "name": pa.array([f"n{i}" for i in range(1000)])})  # fmt: skip
    pq.write_table(table, root / "a.parquet", row_group_size=250,
                   bloom_filter_options={"id": True, "name": True})  # fmt: skip
    pq.write_table(pa.table({"id": pa.array(range(2000, 2100), pa.int64())}), root / "b.parquet",
                   bloom_filter_options={"id": True})  # fmt: skip
    pq.write_table(pa.table({"id": pa.array(range(10), pa.int64())}), root / "c.parquet")
    return root


def test_unreadable_inputs_are_reported_with_exit_3_after_every_verdict(
    lake: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet at all, not at all")
    empty = tmp_path / "empty"
    empty.mkdir()
    missing_dir, missing_file = tmp_path / "nodir", tmp_path / "no.parquet"
    argv = [str(lake / "a.parquet"), str(missing_dir), str(bad), str(missing_file), str(empty)]
    proc = cli("prune", *argv, "--where", "id = 4", "--json")
    assert proc.returncode == 3, proc.stderr
    rows = json.loads(proc.stdout)
    assert [r["kept"] for r in rows if r["file"] == str(lake / "a.parquet")] == [True] + [False] * 3
    unreadable = {r["file"]: r["reason"] for r in rows if r["rule"] == "unreadable"}
    assert set(unreadable) == {str(missing_dir), str(bad), str(missing_file), str(empty)}
    assert "no Parquet files" in unreadable[str(empty)] and "magic" in unreadable[str(bad)]
    assert "4/5 inputs could not be read" in one_line(proc)
    # The summary counts them and names the first three, in text and as JSON.
    proc = cli("prune", *argv, "--where", "id = 4", "--summary")
    assert proc.returncode == 3
    assert proc.stdout.count("\n") == 1
    assert "1/4 row groups kept in 5/5 files (250/1,000 rows); 4 unreadable: " in proc.stdout
    named = re.search(r"4 unreadable: (.*), \.\.\.; \d+ requests, ", proc.stdout)
    assert named is not None and len(set(named[1].split(", ")) & set(unreadable)) == 3
    proc = cli("prune", *argv, "--where", "id = 4", "--summary", "--json")
    assert proc.returncode == 3
    summary = json.loads(proc.stdout)
    assert summary["unreadable"] == 4 and len(summary["unreadable_files"]) == 3
    assert (summary["row_groups"], summary["row_groups_kept"], summary["files"]) == (4, 1, 5)
    # Every command alike: probe, inspect, index build.
    for command in (["probe", *argv, "-c", "id", "--value", "4"], ["inspect", *argv],
                    ["index", "build", *argv, "--columns", "id"]):  # fmt: skip
        proc = cli(*command)
        assert proc.returncode == 3, (command, proc.stderr)
        assert str(missing_dir) in one_line(proc) and str(lake / "a.parquet") in proc.stdout
    # All read: exit 0. --strict stops at the first unreadable input: exit 1.
    assert cli("prune", str(lake), "--where", "id = 4").returncode == 0
    proc = cli("prune", str(lake), str(missing_dir), "--where", "id = 4", "--strict")
    assert proc.returncode == 1 and "no such file" in one_line(proc)


def test_summary_counts_row_groups_kept_for_a_missing_column(lake: Path) -> None:
    proc = cli("prune", str(lake), "--where", "name = 'n1'", "--summary")
    assert proc.returncode == 0, proc.stderr
    # b.parquet and c.parquet have no column name: kept, and counted.
    assert "2 row groups in 2 files kept for a missing column" in proc.stdout
    assert "1/6 row groups kept" not in proc.stdout and "3/6 row groups kept" in proc.stdout
    proc = cli("prune", str(lake), "--where", "name = 'n1'", "--summary", "--json")
    summary = json.loads(proc.stdout)
    assert (summary["missing_column_row_groups"], summary["missing_column_files"]) == (2, 2)
    assert summary["rows"] == 1110 and summary["rows_kept"] == 250 + 110
    # One request for one file: singular nouns.
    proc = cli("prune", str(lake / "b.parquet"), "--where", "id = 2001", "--summary")
    assert "1/1 row group kept in 1/1 file (100/100 rows); 0 unreadable; 1 request, " in proc.stdout


def test_a_file_named_twice_gets_one_set_of_verdicts(lake: Path, tmp_path: Path) -> None:
    link = tmp_path / "link.parquet"
    link.symlink_to(lake / "a.parquet")
    spelled = str(lake / ".." / "lake" / "a.parquet")
    proc = cli("prune", str(lake / "a.parquet"), str(lake), spelled, str(link),
               "--where", "id = 4", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    # a.parquet keeps the spelling it was first given; b and c come from the directory.
    assert [(Path(r["file"]).name, r["row_group"]) for r in rows] == [
        ("a.parquet", 0), ("a.parquet", 1), ("a.parquet", 2), ("a.parquet", 3),
        ("b.parquet", 0), ("c.parquet", 0),
    ]  # fmt: skip
    assert rows[0]["file"] == str(lake / "a.parquet")
    proc = cli("probe", str(lake), str(lake / "b.parquet"), "-c", "id", "--value", "2001", "--json")
    assert [Path(r["file"]).name for r in json.loads(proc.stdout)] == ["a.parquet"] * 4 + [
        "b.parquet", "c.parquet"
    ]  # fmt: skip


def test_add_filters_goes_on_after_a_failure_like_index_build(lake: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet at all, not at all")
    c = lake / "c.parquet"
    proc = cli("add-filters", str(bad), str(c), str(tmp_path / "gone.parquet"), "--columns", "id")
    assert proc.returncode == 3, proc.stderr
    assert pq.ParquetFile(c).metadata.row_group(0).column(0).bloom_filter_offset is not None
    # Inputs that name no file come first, then the files in order.
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"{tmp_path / 'gone.parquet'}: failed: ")
    assert lines[1].startswith(f"{bad}: failed: ") and "magic" in lines[1]
    assert lines[2].startswith(f"{c}: 1 filter added, ")
    assert re.fullmatch(r"1/3 files rewritten, 1 filter added \([\d,]+ bytes\); 2 failed", lines[3])
    assert "2/3 inputs failed" in one_line(proc)
    proc = cli("add-filters", str(bad), str(c), "--columns", "id", "--replace", "--json")
    assert proc.returncode == 3
    assert [r["error"] is None for r in json.loads(proc.stdout)] == [False, True]
    # --strict stops at the first failure, as for index build.
    proc = cli("add-filters", str(bad), str(c), "--columns", "id", "--strict")
    assert proc.returncode == 1 and "magic" in one_line(proc) and proc.stdout == ""
    # A column that no file has is a typing error (exit 2), not a list of failures.
    proc = cli("add-filters", str(lake), "--columns", "nope")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "no leaf column with this path; the file has: id, name" in one_line(proc)
    proc = cli("index", "build", str(lake), "--columns", "nope")
    assert proc.returncode == 2 and "no leaf column" in one_line(proc)
    # A group's path names its leaves: a file that fails for another reason is a failure.
    nested = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"st": pa.array([{"a": i, "b": "x" * 50} for i in range(100)])}),
                   nested)  # fmt: skip
    damaged = bytearray(nested.read_bytes())
    damaged[20:400] = bytes(b ^ 0x5A for b in damaged[20:400])  # pages, not the footer
    nested.write_bytes(damaged)
    proc = cli("add-filters", str(nested), "--columns", "st")
    assert proc.returncode == 3 and "pyarrow cannot read the chunk" in one_line(proc)
    assert proc.stdout.count("\n") == 1  # the reason on one line there too


def test_inspect_and_probe_expand_directories(lake: Path) -> None:
    proc = cli("inspect", str(lake), "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert {Path(r["file"]).name for r in rows} == {"a.parquet", "b.parquet", "c.parquet"}
    proc = cli("inspect", str(lake))
    assert proc.returncode == 0 and proc.stdout.startswith("file ")
    assert proc.stdout.splitlines()[-1].startswith("10 filters in 3 files: 1 absent, 9 ok; ")
    proc = cli("probe", str(lake), "-c", "id", "--value", "2050", "--summary", "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["files"] == 3 and summary["kept_values"] == [2050]
    # b.parquet holds it; the statistics of a.parquet and c.parquet exclude it.
    assert (summary["row_groups"], summary["row_groups_kept"]) == (6, 1)
    proc = cli("probe", str(lake), "-c", "name", "--value", "n1", "--json")
    assert proc.returncode == 0
    missing = [r for r in json.loads(proc.stdout) if r["rule"] == "missing_column"]
    assert {Path(r["file"]).name for r in missing} == {"b.parquet", "c.parquet"}
    assert all(r["kept"] for r in missing)
    proc = cli("probe", str(lake), "-c", "nope", "--value", "1")
    assert proc.returncode == 2 and "no leaf column" in one_line(proc)


def test_long_in_lists_from_a_file_or_standard_input(data_file: Path, tmp_path: Path) -> None:
    odd = list(range(1, 20_001, 2))  # in no row group
    where = f"id IN ({', '.join(map(str, odd))}) OR id = 600"
    query = tmp_path / "where.sql"
    query.write_text(where)
    from_file = cli("prune", str(data_file), "--where", f"@{query}", "--json")
    from_stdin = cli("prune", str(data_file), "--where", "-", "--json", stdin=where)
    assert from_file.returncode == from_stdin.returncode == 0, from_file.stderr
    rows = json.loads(from_file.stdout)
    assert rows == json.loads(from_stdin.stdout)
    kept = [r["row_group"] for r in rows if r["kept"]]
    assert 1 in kept  # 600 is in row group 1 (odd ids in none: others kept only as false positives)
    assert "10000 values" in rows[0]["reason"]
    proc = cli("prune", str(data_file), "--where", f"@{tmp_path / 'none.sql'}")
    assert proc.returncode == 2 and "--where: cannot read" in one_line(proc)
    # probe: one value per line, blank lines skipped, totals only.
    values = tmp_path / "values.txt"
    values.write_text("\n".join(map(str, odd)) + "\n\n600\n   \n")
    proc = cli("probe", str(data_file), "-c", "id", "--values-from", str(values), "--summary")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("\n") == 1
    assert re.match(r"\d+/10,001 values kept \(", proc.stdout), proc.stdout
    proc = cli("probe", str(data_file), "-c", "id", "--values-from", str(values), "--summary",
               "--json")  # fmt: skip
    summary = json.loads(proc.stdout)
    proc = cli("probe", str(data_file), "-c", "id", "--values-from", str(values), "--json")
    rows = json.loads(proc.stdout)
    assert len(rows) == 4 * 10_001
    kept_values = list(dict.fromkeys(r["value"] for r in rows if r["kept"]))
    assert 600 in kept_values
    assert summary["values"] == 10_001 and summary["values_kept"] == len(kept_values)
    assert summary["kept_values"] == kept_values[:5]
    proc = cli("probe", str(data_file), "-c", "id", "--values-from", "-", "--json",
               stdin="600\n601\n")  # fmt: skip
    by = {(r["row_group"], r["value"]): r["kept"] for r in json.loads(proc.stdout)}
    assert by[(1, 600)] is True and not any(by[(g, 601)] for g in range(4))


def test_probe_and_prune_speak_alike(data_file: Path) -> None:
    probed = cli("probe", str(data_file), "-c", "id", "--value", "600", "--json")
    pruned = cli("prune", str(data_file), "--where", "id = 600", "--json")
    assert probed.returncode == pruned.returncode == 0
    probe_rows, prune_rows = json.loads(probed.stdout), json.loads(pruned.stdout)
    assert [r["kept"] for r in probe_rows] == [r["kept"] for r in prune_rows]
    assert [r["reason"] for r in probe_rows] == [r["reason"] for r in prune_rows]
    assert probe_rows[1]["reason"] == "id = 600: the Bloom filter may contain it"
    assert probe_rows[1]["value"] == 600
    text = cli("probe", str(data_file), "-c", "name", "--value", "n1").stdout
    assert "name = 'n1'" in text and " kept " in text.splitlines()[0]


def test_inspect_lists_columns_in_schema_order_with_a_total(tmp_path: Path) -> None:
    path = tmp_path / "z.parquet"
    table = pa.table({"zeta": pa.array([1, 2, 3], pa.int64()), "alpha": ["a", "b", "c"]})
    pq.write_table(table, path, bloom_filter_options={"zeta": True, "alpha": True})
    proc = cli("inspect", str(path))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split()[1] for line in lines[1:3]] == ["zeta", "alpha"]
    assert lines[3].startswith("2 filters in 1 file: 2 ok; ")
    assert lines[3].endswith("; 0 unreadable; 1 request, " + lines[3].split("request, ")[1])
    for spelling in (["--columns", "alpha,zeta"], ["-c", "alpha", "--column", "zeta"]):
        rows = json.loads(cli("inspect", str(path), *spelling, "--json").stdout)
        assert [r["column"] for r in rows] == ["zeta", "alpha"]


@pytest.mark.parametrize("command", ["probe", "prune", "inspect", "index build", "add-filters"])
def test_help_shows_an_example_and_the_exit_codes(command: str) -> None:
    proc = cli(*command.split(), "--help")
    assert proc.returncode == 0
    example = proc.stdout.split("example:\n", 1)[1]
    assert example.startswith(f"  pybloom-async {command} ")
    assert "exit codes:" in example and "3  some inputs could not be read" in example


def test_usage_errors_are_one_line(data_file: Path) -> None:
    for argv in (["prune", str(data_file)], ["probe", str(data_file), "-c", "id"],
                 ["index", "build", str(data_file)], ["inspect"]):  # fmt: skip
        proc = cli(*argv)
        assert proc.returncode == 2, argv
        assert one_line(proc).startswith("pybloom-async"), proc.stderr


def test_add_filters_shows_a_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    for i in range(3):
        table = pa.table({"id": pa.array(range(100), pa.int64())})
        pq.write_table(table, tmp_path / f"{i}.parquet")
    # stderr on a terminal of 100 columns, as a person runs it; stdout piped.
    terminal, stderr = pty.openpty()
    fcntl.ioctl(stderr, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    with subprocess.Popen(
        [*SCRIPT, "add-filters", str(tmp_path), "--columns", "id"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
    ) as proc:  # fmt: skip
        os.close(stderr)
        shown = b""
        while True:
            try:
                chunk = os.read(terminal, 4096)
            except OSError:  # EIO: the program closed its end
                break
            if not chunk:
                break
            shown += chunk
        assert proc.wait(timeout=120) == 0
    os.close(terminal)
    assert b"3/3 [" in shown and b"file/s]" in shown, shown


def test_column_takes_a_comma_list_as_columns_does(data_file: Path) -> None:
    for spelling in (["-c", "name,id"], ["--column", "name,id"], ["-c", "name", "-c", "id"],
                     ["--columns", "name,id"]):  # fmt: skip
        proc = cli("lookup", str(data_file), "--where", "id = 4", "-f", "json", "-q", *spelling)
        assert proc.returncode == 0, (spelling, proc.stderr)
        assert json.loads(proc.stdout) == [{"name": "n2", "id": 4}], spelling
    rows = json.loads(cli("inspect", str(data_file), "-c", "name,id", "--json").stdout)
    assert {r["column"] for r in rows} == {"id", "name"}
    proc = cli("probe", str(data_file), "-c", "id,name", "--value", "4")
    assert proc.returncode == 2 and "probe takes one column, not id, name" in one_line(proc)


@pytest.mark.parametrize(
    ("command", "options"),
    [(["probe"], ["-c", "id", "--value", "4"]), (["prune"], ["--where", "id = 4"]),
     (["inspect"], []), (["lookup"], ["--where", "id = 4"]),
     (["index", "build"], ["-c", "id"]), (["add-filters"], ["-c", "id"])],
)  # fmt: skip
def test_verbose_logs_the_run_and_every_failure_in_full(
    lake: Path, tmp_path: Path, command: list[str], options: list[str]
) -> None:
    missing = [str(tmp_path / f"gone{i}.parquet") for i in range(4)]
    quiet = cli(*command, str(lake), *missing, *options)
    assert "pybloom_async" not in quiet.stderr
    proc = cli(*command, str(lake), *missing, *options, "-v")
    assert proc.returncode == 3, proc.stderr
    # The run: the command, its inputs, how long a request may take.
    assert re.search(rf"pybloom-async [\w.+-]+ {command[0]}; inputs: {lake}, ", proc.stderr)
    assert "a request that gets no answer fails within 91.6 s" in proc.stderr
    logged = [line for line in proc.stderr.splitlines() if "pybloom_async.apps.cli_output" in line]
    # The one summary line names three; the log names all four, each with its reason.
    assert all(any(m in line and "no such file" in line for line in logged) for m in missing)
    assert "exit 3 after " in proc.stderr
    assert " read [" not in proc.stderr  # requests only with -vv
    debug = cli(*command, str(lake), *options, "-vv")
    assert debug.returncode == 0, debug.stderr
    if command != ["add-filters"]:
        assert "pybloom_async.io.base: " in debug.stderr and " read [" in debug.stderr
    else:  # a local file is rewritten whole, without requests: each file's outcome
        assert f"{lake / 'c.parquet'}: left as it is" in debug.stderr, debug.stderr


def test_add_filters_adds_what_a_file_can_take_and_names_the_missing_column(lake: Path) -> None:
    """b.parquet and c.parquet have no column name: they get their id filters, and the
    output says that name is not in them; a column no file has is exit 2, nothing written."""
    before = {p.name: p.read_bytes() for p in lake.iterdir()}
    for argv in (["--columns", "nope"], ["--columns", "id,nope"]):
        proc = cli("add-filters", str(lake), *argv)
        assert proc.returncode == 2 and proc.stdout == "", proc.stderr
        assert "nope" in one_line(proc) and "the file has: id, name" in proc.stderr
    assert {p.name: p.read_bytes() for p in lake.iterdir()} == before
    # --strict: every file must take every filter; one that cannot stops the run.
    proc = cli("add-filters", str(lake), "--columns", "id,name", "--strict")
    assert proc.returncode == 2 and "b.parquet, column 'name'" in one_line(proc)
    proc = cli("add-filters", str(lake), "--columns", "id,name", "--replace")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for name in ("b.parquet", "c.parquet"):
        at = next(i for i, line in enumerate(lines) if line.startswith(f"{lake / name}: "))
        assert lines[at].startswith(f"{lake / name}: 1 filter added, "), lines[at]
        assert lines[at + 1] == "  skipped name: not in this file (written without it)"
        offsets = pq.ParquetFile(lake / name).metadata.row_group(0).column(0)
        assert offsets.bloom_filter_offset is not None
    assert lines[-1].endswith("; 0 failed; 2 files lack a column (name)"), lines[-1]
    proc = cli("add-filters", str(lake), "--columns", "id,name", "--json", "--replace")
    assert proc.returncode == 0
    row = next(r for r in json.loads(proc.stdout) if r["path"] == str(lake / "b.parquet"))
    assert row["error"] is None and row["skipped"][0]["column"] == "name"
    # One file named alone: no file has the column, a typing error.
    proc = cli("add-filters", str(lake / "b.parquet"), "--columns", "id,name")
    assert proc.returncode == 2 and "column 'name'" in one_line(proc)
