"""inline_in_worker: a run handed whole to a worker thread, inline; its cancellation and
its callbacks (on the caller's event loop, in order)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.cancelling import cancelled_once_started

from pybloom_async.tasks.loops import (
    Stopped,
    callbacks_run,
    inline,
    inline_in_worker,
    on_loop,
    stop_point,
)
from pybloom_async.tasks.workers import for_each

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


@pytest.mark.anyio
async def test_the_run_is_inline_in_another_thread() -> None:
    caller = threading.get_ident()

    async def run(x: int) -> tuple[int, bool, int]:
        return threading.get_ident(), inline(), x * 2

    thread, was_inline, doubled = await inline_in_worker(run, None, 21)
    assert thread != caller and was_inline and doubled == 42
    assert not inline()


@pytest.mark.anyio
async def test_a_failure_is_raised_as_itself() -> None:
    async def run() -> None:
        raise KeyError("k")

    with pytest.raises(KeyError, match="k"):
        await inline_in_worker(run, None)


@pytest.mark.anyio
async def test_a_cancelled_caller_stops_the_run_between_items_and_waits_for_it() -> None:
    started = threading.Event()
    release = threading.Event()
    done: list[int] = []

    async def item(i: int) -> int:
        started.set()
        release.wait(5)  # the first item blocks until the caller is cancelled
        for _ in range(1000):  # and ends once the cancellation has reached the run
            try:
                stop_point()
            except Stopped:
                break
            time.sleep(0.005)
        done.append(i)
        return i

    async def run() -> list[int]:
        return await for_each(list(range(100)), item, 4)

    async with cancelled_once_started(started, release) as scope:
        await inline_in_worker(run, None)
    assert scope.cancelled_caught
    # The item running when the cancellation came ended; no later one started, and the
    # thread was waited for (nothing appended after the cancel scope ended).
    assert done == [0]
    await anyio.sleep(0.05)
    assert done == [0]


@pytest.mark.anyio
async def test_callbacks_run_on_the_callers_loop_in_order() -> None:
    loop_thread = threading.get_ident()
    seen: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        assert threading.get_ident() == loop_thread
        seen.append((done, total))

    told = on_loop(progress)
    assert told is not None and on_loop(None) is None

    async def run() -> None:
        for i in range(50):
            told(i, 50)

    await inline_in_worker(run, None)
    await callbacks_run()  # every call queued before it has run
    assert seen == [(i, 50) for i in range(50)]


@pytest.mark.anyio
async def test_an_async_lookup_of_local_paths_tells_progress_on_the_loop(tmp_path: Path) -> None:
    from pybloom_async import col, lookup

    for i in range(3):
        table = pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64())})
        pq.write_table(table, tmp_path / f"{i}.parquet")
    loop_thread = threading.get_ident()
    calls: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        assert threading.get_ident() == loop_thread
        calls.append((done, total))

    rows = await lookup(str(tmp_path), col("id").isin([3, 25]), progress=progress)
    assert sorted(rows.column("id").to_pylist()) == [3, 25]
    assert calls and calls[-1] == (3, 3)  # every call has run when lookup returns


@pytest.mark.anyio
async def test_an_async_dataset_of_local_paths_is_pruned_in_one_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pruned_dataset of local paths runs whole in one worker thread, as lookup does: one
    hand-off, none per file; its progress is told on the caller's loop."""
    import pybloom_async.rows.dataset as dataset
    from pybloom_async import col, pruned_dataset

    for i in range(3):
        table = pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64())})
        pq.write_table(table, tmp_path / f"{i}.parquet")
    loop_thread = threading.get_ident()
    runs: list[bool] = []
    pruned = dataset._pruned

    async def spy(*args: Any) -> Any:
        runs.append(threading.get_ident() != loop_thread and inline())
        return await pruned(*args)

    monkeypatch.setattr(dataset, "_pruned", spy)
    calls: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        assert threading.get_ident() == loop_thread
        calls.append((done, total))

    ds = await pruned_dataset(str(tmp_path), col("id").isin([3, 25]), progress=progress)
    assert sorted(ds.to_table().column("id").to_pylist()) == [*range(10), *range(20, 30)]
    assert runs == [True] and calls and calls[-1] == (3, 3)


@pytest.mark.anyio
async def test_an_async_prune_of_local_paths_runs_in_one_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """prune of local paths runs whole in one worker thread, as prune_sync does: one
    hand-off, none per file. on_file and progress are called on the caller's loop, in file
    order, and every call has run when prune returns (the command line's tally reads them
    then)."""
    import pybloom_async.index_policy.api as policy
    from pybloom_async import col, prune, prune_sync

    for i in range(4):
        table = pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64())})
        pq.write_table(table, tmp_path / f"{i}.parquet", bloom_filter_options={"id": {}})
    loop_thread = threading.get_ident()
    runs: list[bool] = []
    in_files = policy.prune_in_files

    async def spy(*args: Any, **kwargs: Any) -> Any:
        runs.append(threading.get_ident() != loop_thread and inline())
        return await in_files(*args, **kwargs)

    monkeypatch.setattr(policy, "prune_in_files", spy)
    files: list[str] = []
    calls: list[tuple[int, int]] = []

    def on_file(verdicts: list[Any]) -> None:
        assert threading.get_ident() == loop_thread
        files.append(verdicts[0].file)

    def progress(done: int, total: int) -> None:
        assert threading.get_ident() == loop_thread
        calls.append((done, total))

    where = col("id").isin([3, 25])
    got = await prune(str(tmp_path), where, on_file=on_file, progress=progress)
    assert got == [] and runs == [True]
    assert [Path(f).name for f in files] == [f"{i}.parquet" for i in range(4)]
    assert calls and calls[-1] == (4, 4)
    verdicts = await prune(str(tmp_path), where)
    assert verdicts == await anyio.to_thread.run_sync(lambda: prune_sync(str(tmp_path), where))
    assert [v.kept for v in verdicts] == [True, False, True, False]


@pytest.mark.anyio
async def test_what_a_callback_raises_on_the_loop_is_raised_by_the_call(tmp_path: Path) -> None:
    """A run handed whole to a worker thread calls on_file and progress on the caller's
    loop; what they raise there comes out of the call (as it did when they ran in place),
    not to the loop's machinery (asyncio would log it, trio would end with it), and the run
    stops at its next call of the callback."""
    from pybloom_async import col, lookup, prune

    for i in range(6):
        table = pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64())})
        pq.write_table(table, tmp_path / f"{i}.parquet")
    where = col("id") == 3
    seen: list[int] = []

    def on_file(verdicts: list[Any]) -> None:
        seen.append(len(verdicts))
        if len(seen) == 2:
            raise BrokenPipeError("the reader of the output went away")

    with pytest.raises(BrokenPipeError, match="went away"):
        await prune(str(tmp_path), where, on_file=on_file)
    assert len(seen) == 2  # no call after the one that raised

    def last(done: int, total: int) -> None:
        if done == total:
            raise KeyError("the last progress call")

    with pytest.raises(KeyError, match="the last progress call"):
        await lookup(str(tmp_path), where, progress=last)
    with pytest.raises(KeyError, match="the last progress call"):
        await prune(str(tmp_path), where, progress=last)


def test_no_call_runs_after_a_failure_once_the_run_has_raised_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Calls queued on the loop before the run saw a failure never run, also once the run
    has raised it; and it is raised once."""
    import pybloom_async.tasks.loops as loops

    queued: list[Any] = []
    monkeypatch.setattr(loops, "call_soon_in_loop", lambda: queued.append)
    seen: list[int] = []

    def callback(n: int) -> None:
        seen.append(n)
        if n == 1:
            raise KeyError("the first call")

    told = loops.LoopCallback(callback)
    told(1)
    told(2)
    queued.pop(0)()  # the first call fails on the loop
    with pytest.raises(KeyError, match="the first call"):
        told(3)  # the run's next call raises it
    queued.pop(0)()  # the second call, queued before: it does not run
    told.raise_failure()  # raised once: nothing now
    assert seen == [1] and not queued


@pytest.mark.anyio
async def test_a_readers_async_local_lookups_run_two_at_a_time(tmp_path: Path) -> None:
    """Through one reader, async lookups of local paths run whole, at most two at once on
    two cores or more (one's C calls beside the other's Python; more only contend for the
    interpreter), one at a time on one core: each one's progress spans no more."""
    import os

    from pybloom_async import BloomReader, col, lookup

    for i in range(20):
        table = pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64())})
        pq.write_table(table, tmp_path / f"{i:02}.parquet")
    reader = BloomReader()
    calls: list[int] = []

    async def one(n: int) -> None:
        rows = await lookup(
            str(tmp_path),
            col("id") == n * 10 + 3,
            reader=reader,
            progress=lambda d, t: calls.append(n),
        )
        assert rows.column("id").to_pylist() == [n * 10 + 3]

    async with anyio.create_task_group() as group:
        for n in range(6):
            group.start_soon(one, n)
    assert len(calls) == 6 * 20
    spans = {n: (calls.index(n), len(calls) - 1 - calls[::-1].index(n)) for n in range(6)}
    at_once = max(sum(lo <= i <= hi for lo, hi in spans.values()) for i in range(len(calls)))
    assert at_once <= min(2, os.cpu_count() or 1), f"lookups ran at once: {calls}"
