"""The lookup command through the console script: every format against pyarrow's own filtering."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pybloom_async import lookup_batches

pa = pytest.importorskip("pyarrow")
pc = pytest.importorskip("pyarrow.compute")
pcsv = pytest.importorskip("pyarrow.csv")
pq = pytest.importorskip("pyarrow.parquet")

SCRIPT = [sys.executable, "-m", "pybloom_async.apps.cli"]
UTC = dt.timezone.utc
IDS = [4, 6, 7, 250, 1998, 2004, 2050]  # 7 is in no file; two in the second file
WHERE = "id IN (" + ", ".join(map(str, IDS)) + ")"


def cli(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SCRIPT, *argv], input=stdin, capture_output=True, text=True, timeout=120, check=False
    )


def _table(ids: range) -> Any:
    n = len(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array([None if i % 10 == 0 else f"n{i}" for i in ids]),
            "raw": pa.array([bytes([i % 256, 0, 255]) for i in ids], pa.binary()),
            "price": pa.array([decimal.Decimal(i) / 100 for i in ids], pa.decimal128(12, 2)),
            "ts": pa.array(
                [dt.datetime(2024, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=i) for i in ids],
                pa.timestamp("us", tz="UTC"),
            ),
            "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i % 300) for i in ids]),
            "score": pa.array([i / 4 for i in range(n)], pa.float64()),
        }
    )


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    """a.parquet: even ids 0..1998 in 4 row groups; b.parquet: ids 2000..2099."""
    root = tmp_path / "lake"
    root.mkdir()
    blooms = {"id": True, "name": True}
    pq.write_table(_table(range(0, 2000, 2)), root / "a.parquet", row_group_size=250,
                   bloom_filter_options=blooms)  # fmt: skip
    pq.write_table(_table(range(2000, 2100)), root / "b.parquet", bloom_filter_options=blooms)
    return root


def expected(lake: Path) -> Any:
    """pyarrow's answer: the matching rows of a.parquet then b.parquet, in row order."""
    tables = [pq.read_table(lake / name) for name in ("a.parquet", "b.parquet")]
    matches = [t.filter(pc.is_in(t["id"], pa.array(IDS, pa.int64()))) for t in tables]
    return pa.concat_tables(matches)


def as_json(row: dict[str, Any]) -> dict[str, Any]:
    """The JSON the command is documented to write for one row."""
    return {
        "id": row["id"],
        "name": row["name"],
        "raw": row["raw"].hex(),
        "price": str(row["price"]),
        "ts": row["ts"].isoformat(),
        "day": row["day"].isoformat(),
        "score": row["score"],
    }


def test_json_is_exactly_pyarrows_rows(lake: Path) -> None:
    proc = cli("lookup", str(lake), "--where", WHERE, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    want = expected(lake)
    assert want.num_rows == 6
    assert json.loads(proc.stdout) == [as_json(r) for r in want.to_pylist()]
    summary = proc.stderr.strip().splitlines()
    assert len(summary) == 1 and summary[0].startswith(
        "6 rows returned from 2 files; 0 unreadable; "
    )
    assert " requests, " in summary[0] and summary[0].endswith(" bytes read")
    # --quiet: no summary; --columns picks and orders the columns.
    proc = cli("lookup", str(lake), "-w", WHERE, "-f", "json", "--columns", "ts,id", "--quiet")
    assert proc.returncode == 0 and proc.stderr == ""
    assert json.loads(proc.stdout) == [
        {"ts": r["ts"].isoformat(), "id": r["id"]} for r in want.to_pylist()
    ]


def test_a_file_named_twice_gives_its_rows_once(lake: Path) -> None:
    twice = [str(lake) + "/a.parquet", str(lake) + "//a.parquet", "file://" + str(lake)]
    proc = cli("lookup", *twice, "--where", WHERE, "--format", "json", "-q")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [as_json(r) for r in expected(lake).to_pylist()]


def test_csv_reads_back_as_pyarrows_rows(lake: Path) -> None:
    proc = cli("lookup", str(lake), "--where", WHERE, "--format", "csv", "-q")
    assert proc.returncode == 0, proc.stderr
    want = expected(lake)
    types = {f.name: (pa.string() if f.name == "raw" else f.type) for f in want.schema}
    got = pcsv.read_csv(
        pa.py_buffer(proc.stdout.encode()),
        convert_options=pcsv.ConvertOptions(column_types=types, strings_can_be_null=True),
    )
    hexed = want.set_column(2, "raw", pa.array([v.hex() for v in want["raw"].to_pylist()]))
    assert got.to_pylist() == hexed.to_pylist()
    # No row: the header alone.
    proc = cli("lookup", str(lake), "--where", "id = 7", "--format", "csv", "-q")
    assert proc.returncode == 0
    assert proc.stdout == '"id","name","raw","price","ts","day","score"\n'


def test_table_shows_the_rows_readably(lake: Path) -> None:
    proc = cli("lookup", str(lake), "--where", WHERE, "-q", "--column", "id", "-c", "name",
               "-c", "raw", "-c", "ts")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["id", "name", "raw", "ts"]
    cells = [line.split() for line in lines[1:]]
    # A null name is an empty cell: the row has one value fewer.
    want = [
        [str(r["id"]), *([r["name"]] if r["name"] else []), r["raw"].hex(), r["ts"].isoformat()]
        for r in expected(lake).to_pylist()
    ]
    assert cells == want
    assert ["1998", "n1998", "ce00ff", "2024-01-01T00:33:18+00:00"] in cells


def test_nanoseconds_are_printed_exactly(tmp_path: Path) -> None:
    """timestamp[ns] and time64[ns] beyond Python's microseconds: ISO 8601, 9 digits."""
    ns = 1_700_000_000_123_456_789
    table = pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "ts": pa.array([ns, None, ns - ns % 1000], pa.timestamp("ns")),
            "tz": pa.array([ns, -1, 0], pa.timestamp("ns", tz="UTC")),
            "t": pa.array([3_600_123_456_789, 1, None], pa.time64("ns")),
            "st": pa.array(
                [{"at": ns}, None, {"at": None}], pa.struct([("at", pa.timestamp("ns"))])
            ),
            "li": pa.array([[ns, None], [], None], pa.list_(pa.timestamp("ns"))),
        }
    )
    path = tmp_path / "ns.parquet"
    pq.write_table(table, path)
    want = [
        {
            "id": 1,
            "ts": "2023-11-14T22:13:20.123456789",
            "tz": "2023-11-14T22:13:20.123456789+00:00",
            "t": "01:00:00.123456789",
            "st": {"at": "2023-11-14T22:13:20.123456789"},
            "li": ["2023-11-14T22:13:20.123456789", None],
        },
        {
            "id": 2,
            "ts": None,
            "tz": "1969-12-31T23:59:59.999999999+00:00",
            "t": "00:00:00.000000001",
            "st": None,
            "li": [],
        },
        {
            "id": 3,
            "ts": "2023-11-14T22:13:20.123456000",
            "tz": "1970-01-01T00:00:00.000000000+00:00",
            "t": None,
            "st": {"at": None},
            "li": None,
        },
    ]
    proc = cli("lookup", str(path), "--where", "id IN (1, 2, 3)", "--format", "json", "-q")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == want
    proc = cli("lookup", str(path), "-w", "id IN (1, 2, 3)", "--columns", "id,ts,tz,t", "-q")
    assert proc.returncode == 0, proc.stderr
    cells = [line.split() for line in proc.stdout.splitlines()[1:]]
    assert cells == [
        ["1", "2023-11-14T22:13:20.123456789", "2023-11-14T22:13:20.123456789+00:00",
         "01:00:00.123456789"],
        ["2", "1969-12-31T23:59:59.999999999+00:00", "00:00:00.000000001"],
        ["3", "2023-11-14T22:13:20.123456000", "1970-01-01T00:00:00.000000000+00:00"],
    ]  # fmt: skip
    proc = cli("lookup", str(path), "-w", "id = 1", "-f", "csv", "--columns", "ts,t", "-q")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1] == "2023-11-14 22:13:20.123456789,01:00:00.123456789"


def test_parquet_out_is_written_whole(lake: Path, tmp_path: Path) -> None:
    target = tmp_path / "out" / "rows.parquet"
    target.parent.mkdir()
    proc = cli("lookup", str(lake), "--where", WHERE, "--format", "parquet", "--out", str(target))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    assert pq.read_table(target).equals(expected(lake))
    assert [p.name for p in target.parent.iterdir()] == ["rows.parquet"]  # no temporary left
    # Parquet needs a file; text formats go there too when asked.
    proc = cli("lookup", str(lake), "--where", WHERE, "--format", "parquet")
    assert proc.returncode == 2 and "--out" in proc.stderr and proc.stdout == ""
    text = tmp_path / "rows.json"
    proc = cli("lookup", str(lake), "-w", WHERE, "-f", "json", "-o", str(text), "-q")
    assert proc.returncode == 0 and proc.stdout == ""
    assert json.loads(text.read_text()) == [as_json(r) for r in expected(lake).to_pylist()]
    # An empty result is still a Parquet file, with the result's schema.
    proc = cli("lookup", str(lake), "-w", "id = 7", "-f", "parquet", "-o", str(target))
    assert proc.returncode == 0
    assert pq.read_table(target).equals(expected(lake).schema.empty_table())


def test_limit_gives_the_first_rows_and_reads_no_further(lake: Path) -> None:
    want = [as_json(r) for r in expected(lake).to_pylist()]
    everything = cli("lookup", str(lake), "--where", WHERE, "--format", "json")
    proc = cli("lookup", str(lake), "--where", WHERE, "--format", "json", "--limit", "2")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == want[:2]
    assert proc.stderr.startswith("2 rows returned (--limit 2) from 2 files; ")

    def requests(stderr: str) -> int:
        return int(stderr.split("; ")[-1].split(" request")[0].replace(",", ""))

    # b.parquet's rows are never fetched: one data request fewer.
    assert requests(proc.stderr) == requests(everything.stderr) - 1
    proc = cli("lookup", str(lake), "--where", WHERE, "--format", "json", "--limit", "5")
    assert json.loads(proc.stdout) == want[:5]
    proc = cli("lookup", str(lake), "--where", WHERE, "--limit", "0")
    assert proc.returncode == 2 and "--limit" in proc.stderr


def test_no_answer_is_printed_when_a_file_cannot_be_read(lake: Path, tmp_path: Path) -> None:
    """An answer that lacks a file's rows does not look like one: nothing on stdout, exit 3."""
    missing = tmp_path / "no.parquet"
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet at all, not at all")
    argv = [str(lake / "a.parquet"), str(missing), str(bad), str(lake / "b.parquet")]
    for fmt in ("json", "csv", "table"):
        proc = cli("lookup", *argv, "--where", WHERE, "--format", fmt)
        assert proc.returncode == 3, proc.stderr
        assert proc.stdout == "", fmt
        summary, failed = proc.stderr.splitlines()
        assert summary.startswith("6 rows found in 4 files, none printed; 2 unreadable: ")
        assert str(missing) in summary and str(bad) in summary
        assert failed.startswith(
            "pybloom-async: 2/4 inputs could not be read (no rows printed; --partial prints "
            "those of the files read): "
        )
        assert str(missing) in failed and "magic" in failed and "Traceback" not in proc.stderr
    # Nothing readable at all: no "[]", no header either.
    proc = cli("lookup", str(missing), "--where", WHERE, "--format", "json")
    assert (proc.returncode, proc.stdout) == (3, "")
    # --out is not written either.
    out = tmp_path / "rows.json"
    proc = cli("lookup", *argv, "--where", WHERE, "-f", "json", "--out", str(out))
    assert proc.returncode == 3 and not out.exists()


def test_partial_prints_the_rows_of_the_files_read(lake: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no.parquet"
    argv = [str(lake / "a.parquet"), str(missing), str(lake / "b.parquet")]
    proc = cli("lookup", *argv, "--where", WHERE, "--format", "json", "--partial")
    assert proc.returncode == 3, proc.stderr
    assert json.loads(proc.stdout) == [as_json(r) for r in expected(lake).to_pylist()]
    summary, failed = proc.stderr.splitlines()
    assert summary.startswith("6 rows returned from 3 files; 1 unreadable: ")
    assert "(--partial: the rows of the others were printed): " in failed
    out = tmp_path / "rows.json"
    proc = cli("lookup", *argv, "-w", WHERE, "-f", "json", "--out", str(out), "--partial")
    assert proc.returncode == 3 and len(json.loads(out.read_text())) == 6


def test_strict_stops_at_the_first_unreadable_file(lake: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no.parquet"
    proc = cli("lookup", str(lake), str(missing), "--where", WHERE, "-f", "json", "--strict")
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "no such file" in proc.stderr
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet at all, not at all")
    proc = cli("lookup", str(lake), str(bad), "--where", WHERE, "-f", "json", "--strict")
    assert proc.returncode == 1 and proc.stdout == "" and "magic" in proc.stderr
    proc = cli("lookup", str(lake), "--where", WHERE, "--strict", "--partial")
    assert proc.returncode == 2 and "--strict or --partial" in proc.stderr
    # Every file read: the answer, exit 0; an empty one is a valid answer.
    proc = cli("lookup", str(lake), "--where", WHERE, "-f", "json", "--strict", "-q")
    assert proc.returncode == 0 and len(json.loads(proc.stdout)) == 6
    proc = cli("lookup", str(lake), "--where", "id = 7", "-f", "json", "--strict", "-q")
    assert (proc.returncode, proc.stdout) == (0, "[]\n")


@pytest.mark.parametrize(
    ("where", "extra", "message"),
    [
        ("id = 'abc'", [], "not a value of this column"),
        ("id IN (4, 0x10", [], ""),
        ("nope = 4", [], "nope"),
        (WHERE, ["--columns", "id,nope"], "nope"),
    ],
)
def test_input_errors_are_one_line_exit_2(
    lake: Path, where: str, extra: list[str], message: str
) -> None:
    proc = cli("lookup", str(lake), "--where", where, *extra)
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == "" and proc.stderr.count("\n") == 1 and message in proc.stderr
    assert proc.stderr.startswith("pybloom-async")


def test_where_from_a_file_or_standard_input(lake: Path, tmp_path: Path) -> None:
    want = [as_json(r) for r in expected(lake).to_pylist()]
    query = tmp_path / "q.sql"
    query.write_text(WHERE)
    for argv, stdin in ((["--where", f"@{query}"], None), (["--where", "-"], WHERE)):
        proc = cli("lookup", str(lake), *argv, "-f", "json", "-q", stdin=stdin)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == want


def test_help_shows_an_example_and_the_exit_codes() -> None:
    proc = cli("lookup", "--help")
    assert proc.returncode == 0
    example = proc.stdout.split("example:\n", 1)[1]
    assert example.startswith("  pybloom-async lookup ")
    assert "exit codes:" in example and "3  some inputs could not be read" in example
    assert "--limit" in proc.stdout and "table,json,csv,parquet" in proc.stdout.replace(" ", "")


@pytest.mark.anyio
async def test_lookup_batches_reports_progress_per_file(lake: Path) -> None:
    calls: list[tuple[int, int]] = []
    batches = [
        b
        async for b in lookup_batches(str(lake), WHERE, progress=lambda d, t: calls.append((d, t)))
    ]
    assert sum(b.num_rows for b in batches) == 6
    assert calls == [(1, 2), (2, 2)]


@pytest.mark.parametrize("where", ["id = 7", WHERE], ids=["empty", "rows"])
def test_the_inputs_are_listed_once_and_each_file_planned_once(
    lake: Path, tmp_path: Path, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command listed its inputs, then lookup_batches walked them again; with no row
    it ran a whole lookup once more, only for the answer's schema. A file is planned by
    the per-file step, or by the sweep that prunes it whole (rows/sweep.py)."""
    import io as text_io

    import pybloom_async.io.files
    import pybloom_async.rows.api
    from pybloom_async.apps.cli import main
    from pybloom_async.rows.sweep import Sweep

    walks: list[object] = []
    planned: list[object] = []
    stream_paths = pybloom_async.io.files.stream_paths
    read_one_file = pybloom_async.rows.api.read_one_file

    def walked(*args: Any, **kwargs: Any) -> Any:
        walks.append(args[0])
        return stream_paths(*args, **kwargs)

    async def planned_file(*args: Any, **kwargs: Any) -> Any:
        planned.append(args[1])
        return await read_one_file(*args, **kwargs)

    sweep_over = Sweep.over

    def swept(sweep: Sweep, files: Any, progress: Any = None, start: int = 0) -> Sweep:
        done = sweep_over(sweep, files, progress, start)
        planned.extend(plan.location for at, plan in done.plans.items() if at >= start)
        return done

    monkeypatch.setattr(pybloom_async.io.files, "stream_paths", walked)
    monkeypatch.setattr(pybloom_async.rows.api, "read_one_file", planned_file)
    monkeypatch.setattr(Sweep, "over", swept)
    out = tmp_path / "rows.parquet"
    code = main(["lookup", str(lake), "-w", where, "-f", "parquet", "--out", str(out), "-q"])
    assert code == 0
    assert len(walks) == 1 and len(planned) == 2  # two files, each planned once
    got = pq.read_table(out)
    want = pa.concat_tables([pq.read_table(lake / n) for n in ("a.parquet", "b.parquet")])
    assert got.schema == want.schema  # an empty answer has the files' columns too
    assert got.num_rows == (0 if where == "id = 7" else 6)
    # The same through the table writer (the schema's names head an empty table).
    buffer = text_io.StringIO()
    assert main(["lookup", str(lake), "-w", "id = 7", "-q"], out=buffer) == 0
    assert buffer.getvalue().splitlines()[0].split() == want.schema.names


def test_one_path_uses_its_lake_index(tmp_path: Path) -> None:
    """The command's lookup of one PATH is the library's: the lake index under it rules out
    the files it can, whose footers are then never read (only their schemas, from the
    index's digest)."""
    from pybloom_async import build_lake_index_sync

    for i in range(6):
        table = pa.table({"id": pa.array(range(1000 * i, 1000 * i + 500), pa.int64())})
        pq.write_table(table, tmp_path / f"f{i}.parquet")

    def requests(stderr: str) -> int:
        return int(stderr.split("; ")[-1].split(" request")[0].replace(",", ""))

    args = ("lookup", "--where", "id = 2017", "--format", "json")
    before = cli(*args[:1], str(tmp_path), *args[1:])
    assert before.returncode == 0, before.stderr
    build_lake_index_sync(str(tmp_path), ["id"])
    after = cli(*args[:1], str(tmp_path), *args[1:])
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout) == json.loads(before.stdout) == [{"id": 2017}]
    assert requests(after.stderr) < requests(before.stderr) - 3, (before.stderr, after.stderr)
