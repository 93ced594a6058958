"""A lookup's local files swept after its first (rows/sweep.py).

The files the bound file pass prunes whole are planned in the sweep; those with rows go on
to the per-file step with the footer the sweep read, and are not passed again. The rows,
the answer's schema, the reads counted and the progress are those of the per-file step
alone (the sweep turned off).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pybloom_async as pba
from pybloom_async.pruning.file_pass import FilePass
from pybloom_async.rows.sweep import Sweep

FILES = 10


def _write(path: Path, first: int, metadata: dict[str, str] | None = None) -> str:
    ids = list(range(first, first + 100))
    table = pa.table({"id": pa.array(ids, pa.int64()), "name": [f"v{i}" for i in ids]})
    if metadata is not None:
        table = table.replace_schema_metadata(metadata)
    pq.write_table(
        table, path, row_group_size=50, bloom_filter_options={"id": {"ndv": 100, "fpp": 0.01}}
    )
    return str(path)


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    for i in range(FILES):
        # One file whose key/value metadata is not the first file's: its Arrow schema is
        # its own, so the sweep hands it on.
        extra = {"note": "its own"} if i == 7 else None
        _write(tmp_path / f"part-{i:02d}.parquet", i * 100, extra)
    return tmp_path


class Calls:
    def __init__(self) -> None:
        self.passed = 0
        self.swept: list[int] = []


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    found = Calls()
    real_decide, real_sweep, real_over = FilePass.decide, FilePass.sweep, Sweep.over

    def decide(passes: FilePass, *args: Any, **kwargs: Any) -> Any:
        found.passed += passes.asking  # (the first file's finds it unbound: no C call)
        return real_decide(passes, *args, **kwargs)

    def sweep(passes: FilePass, *args: Any) -> Any:
        got, n = real_sweep(passes, *args)
        found.passed += n  # files passed, many in one C call
        return got, n

    def over(sweep: Sweep, files: Any, progress: Any = None, start: int = 0) -> Sweep:
        done = real_over(sweep, files, progress, start)
        found.swept.append(len(done.plans))
        return done

    monkeypatch.setattr(FilePass, "decide", decide)
    monkeypatch.setattr(FilePass, "sweep", sweep)
    monkeypatch.setattr(Sweep, "over", over)
    return found


def _lookup(lake: Path, where: pba.Predicate) -> tuple[pa.Table, tuple[int, int, int], list[Any]]:
    stats = pba.SourceStats()
    progress: list[tuple[int, int]] = []
    got = pba.lookup_sync(
        str(lake), where, stats=stats, progress=lambda d, t: progress.append((d, t))
    )
    return got, (stats.requests, stats.bytes_read, stats.metadata_requests), progress


def _unswept(monkeypatch: pytest.MonkeyPatch, lake: Path, where: pba.Predicate) -> Any:
    with monkeypatch.context() as m:
        m.setattr(Sweep, "over", lambda sweep, files, progress=None, start=0: sweep)
        return _lookup(lake, where)


@pytest.mark.parametrize(
    "where",
    [
        pba.col("id") == 250,  # in one file
        pba.col("id") == 750,  # in the file with its own metadata
        pba.col("id") == -1,  # in none
        pba.col("id").isin([5, 450, 999]),
    ],
    ids=["one", "own-metadata", "none", "in"],
)
def test_the_sweep_answers_as_the_per_file_step(
    lake: Path, calls: Calls, monkeypatch: pytest.MonkeyPatch, where: pba.Predicate
) -> None:
    got, counted, progress = _lookup(lake, where)
    # Every file after the first passed once: the files with rows are not passed again.
    assert calls.passed == FILES - 1
    expected, expected_counted, expected_progress = _unswept(monkeypatch, lake, where)
    assert got.equals(expected) and got.schema == expected.schema
    assert counted == expected_counted
    # At most 3 files with rows (or kept by a false positive), and one of its own.
    assert calls.swept[0] >= FILES - 1 - 3 - 1
    # Told after each file, as the per-file step tells it.
    assert progress == expected_progress == [(d, FILES) for d in range(1, FILES + 1)]


@pytest.mark.anyio
async def test_a_run_on_the_event_loop_sweeps_in_parts(
    lake: Path, calls: Calls, monkeypatch: pytest.MonkeyPatch
) -> None:
    """lookup_batches on the caller's loop (as for a store's files; local paths alone are
    handed whole to a worker thread, kept on the loop here): the sweep goes to a worker
    thread a part at a time (the caller's cancellation is seen between them), and the
    progress is told after each file all the same."""
    from pybloom_async.rows import api, sweep

    monkeypatch.setattr(sweep, "LOOP_PART", 3)
    monkeypatch.setattr(api, "streamed_whole", lambda opts, work, ahead: work(opts))
    progress: list[tuple[int, int]] = []
    batches = [
        b
        async for b in pba.lookup_batches(
            str(lake),
            pba.col("id").isin([250, 999]),
            progress=lambda d, t: progress.append((d, t)),
        )
    ]
    assert sorted(pa.Table.from_batches(batches).column("id").to_pylist()) == [250, 999]
    assert len(calls.swept) == 3  # 9 files after the first, 3 a part
    assert progress == [(d, FILES) for d in range(1, FILES + 1)]


def test_the_first_files_rows_are_read_with_the_others_after_the_sweep(
    lake: Path, calls: Calls, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first file is pruned ahead of the sweep (it binds the pass), and its rows are read
    after it, beside the other files' (not alone before it): the same rows and reads."""
    events = _events_of_a_lookup(lake, pba.col("id").isin([5, 250, 999]), monkeypatch)
    assert events[0] == "sweep" and "part-00.parquet" in events


def _events_of_a_lookup(
    lake: Path, where: pba.Predicate, monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """A lookup's parts swept (``"sweep"``) and files whose rows are read (their names), in
    order; its rows, reads and progress are checked against the per-file step alone."""
    from pybloom_async.rows import fetch

    expected = _unswept(monkeypatch, lake, where)
    events: list[str] = []
    real_tables, real_over = fetch.file_tables, Sweep.over

    def tables(source: Any, plan: Any, job: Any) -> Any:
        events.append(Path(plan.path).name)
        return real_tables(source, plan, job)

    def over(sweep: Sweep, *args: Any, **kwargs: Any) -> Sweep:
        events.append("sweep")
        return real_over(sweep, *args, **kwargs)

    monkeypatch.setattr(fetch, "file_tables", tables)
    monkeypatch.setattr(Sweep, "over", over)
    got, counted, progress = _lookup(lake, where)
    assert got.equals(expected[0]) and counted == expected[1] and progress == expected[2]
    return events


def test_files_of_other_schemas_go_the_per_file_way(tmp_path: Path, calls: Calls) -> None:
    """A file whose schema is not bound is handed on whole, and read as the others."""
    for i in range(4):
        _write(tmp_path / f"a-{i}.parquet", i * 100)
    other = pa.table({"id": pa.array([420, 421], pa.int64()), "score": [1.5, 2.5]})
    pq.write_table(other, tmp_path / "a-9.parquet", bloom_filter_options={"id": {"ndv": 2}})
    got = pba.lookup_sync(str(tmp_path), pba.col("id").isin([421, 150]))
    assert sorted(got.column("id").to_pylist()) == [150, 421]
    assert sorted(got.schema.names) == ["id", "name", "score"]
    assert calls.swept == [2]  # a-2 and a-3; a-1 holds 150, a-9 is of its own schema


@pytest.mark.parametrize("slow_bytes", [None, 1])
def test_files_passed_with_large_kept_row_groups_are_expected_slow(
    lake: Path, monkeypatch: pytest.MonkeyPatch, slow_bytes: int | None
) -> None:
    """The run's pace is told how many swept files have kept row groups of at least
    SLOW_KEPT_BYTES (these files' are a few KiB: none at the default, each at 1 byte)."""
    from pybloom_async.rows import sweep
    from pybloom_async.tasks.pace import Pace

    if slow_bytes is not None:
        monkeypatch.setattr(sweep, "SLOW_KEPT_BYTES", slow_bytes)
    told: list[int] = []
    real = Pace.expect

    def expect(pace: Pace, files: int) -> None:
        told.append(files)
        real(pace, files)

    monkeypatch.setattr(Pace, "expect", expect)
    keys = [150, 250, 450, 650, 850]  # one in each of five files after the first
    got = pba.lookup_sync(str(lake), pba.col("id").isin(keys))
    assert sorted(got.column("id").to_pylist()) == keys
    # Told after each part of the sweep (INLINE_PART files), the files found so far.
    assert told and told == sorted(told)
    if slow_bytes is None:
        assert set(told) == {0}
    else:
        assert told[-1] >= len(keys)  # and any kept by a false positive


def test_rows_are_read_while_the_sweep_goes_on(lake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Inline, the files are swept a part at a time, and the files a part leaves are read
    before the next part is swept: a sweep that leaves every file does not run alone ahead
    of their reads. The rows and reads are those of the per-file step alone."""
    from pybloom_async.rows import sweep

    assert FILES > sweep.INLINE_PART + 1  # the first file, a whole first part, and more
    # In the first part's file 1 and the last file.
    events = _events_of_a_lookup(lake, pba.col("id").isin([150, 950]), monkeypatch)
    assert events.count("sweep") == 2
    second = events.index("sweep", 1)
    assert events.index("part-01.parquet") < second < events.index("part-09.parquet")


def test_a_lone_file_is_not_swept(tmp_path: Path, calls: Calls) -> None:
    _write(tmp_path / "a.parquet", 0)
    assert pba.lookup_sync(str(tmp_path), pba.col("id") == 5).num_rows == 1
    assert calls.swept == []


def test_a_folder_the_sweep_cannot_plan_fails_in_its_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a lake of partition folders, what the sweep makes of a folder's values is made
    once for its files; an error met there is left to the per-file step, which raises it
    naming the folder's first file."""
    from pybloom_async.errors import PredicateError
    from pybloom_async.io.partitions import partition_of
    from pybloom_async.rows import plan

    for p in range(4):
        (tmp_path / f"p={p}").mkdir()
        for i in range(3):
            _write(tmp_path / f"p={p}" / f"part-{i}.parquet", (p * 3 + i) * 100)
    real = plan.rows_of
    asked: list[Any] = []
    failing: list[Any] = []

    def rows_of(parts: Any, location: Any) -> Any:
        asked.append(partition_of(location))
        if partition_of(location) in failing:
            raise PredicateError("a value its partition cannot hold")
        return real(parts, location)

    monkeypatch.setattr(plan, "rows_of", rows_of)
    got = pba.lookup_sync(str(tmp_path), pba.col("id") == 150)
    assert got.column("id").to_pylist() == [150]
    # Made once per folder in the sweep (the first file's by the per-file step).
    assert asked.count((("p", "1"),)) == 1 and asked.count((("p", "3"),)) == 1
    failing.append((("p", "2"),))
    with pytest.raises(PredicateError, match="a value its partition cannot hold") as caught:
        pba.lookup_sync(str(tmp_path), pba.col("id") == 150)
    assert caught.value.path == str(tmp_path / "p=2" / "part-0.parquet")
