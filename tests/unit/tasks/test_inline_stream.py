"""inline_stream_in_worker: an async generator run inline in a worker thread, its items
handed to the caller's loop in order, at most a few waiting; its failures, an early stop
and a cancellation; and lookup_batches of local paths, which runs so."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.cancelling import cancelled_once_started

from pybloom_async.tasks.loops import inline, inline_stream_in_worker, stop_point

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


@pytest.mark.anyio
async def test_the_items_come_in_order_from_an_inline_run_in_another_thread() -> None:
    caller = threading.get_ident()

    async def items(n: int) -> AsyncGenerator[tuple[int, int, bool], None]:
        for i in range(n):
            yield i, threading.get_ident(), inline()

    got = [item async for item in inline_stream_in_worker(items, 2, 50)]
    assert [i for i, _, _ in got] == list(range(50))
    assert all(thread != caller and was_inline for _, thread, was_inline in got)
    assert not inline()


@pytest.mark.anyio
async def test_at_most_ahead_items_wait_for_the_consumer() -> None:
    made: list[int] = []

    async def items() -> AsyncGenerator[int, None]:
        for i in range(20):
            made.append(i)
            yield i

    async with aclosing(inline_stream_in_worker(items, 3)) as stream:
        async for first in stream:
            assert first == 0
            await anyio.sleep(0.2)  # the worker runs ahead meanwhile, as far as it may
            # the item taken, 3 waiting, and one more made that waits for room
            assert len(made) <= 5
            break


@pytest.mark.anyio
async def test_a_failure_comes_after_the_items_made_before_it() -> None:
    async def items() -> AsyncGenerator[int, None]:
        yield 1
        yield 2
        raise KeyError("k")

    got: list[int] = []
    with pytest.raises(KeyError, match="k"):
        async for item in inline_stream_in_worker(items, 4):
            got.append(item)
    assert got == [1, 2]


@pytest.mark.anyio
async def test_a_consumer_that_stops_stops_the_run_and_waits_for_its_thread() -> None:
    closed = threading.Event()
    made: list[int] = []

    async def items() -> AsyncGenerator[int, None]:
        try:
            for i in range(10_000):
                made.append(i)
                yield i
        finally:
            closed.set()

    async with aclosing(inline_stream_in_worker(items, 2)) as stream:
        async for item in stream:
            if item == 3:
                break
    # the generator was closed in its thread before the stream's close returned
    assert closed.is_set()
    count = len(made)
    assert count < 10
    time.sleep(0.05)
    assert len(made) == count


@pytest.mark.anyio
async def test_a_cancelled_consumer_stops_the_run_at_its_next_stop_point() -> None:
    started = threading.Event()
    release = threading.Event()
    done: list[str] = []

    async def items() -> AsyncGenerator[int, None]:
        started.set()
        release.wait(5)  # the first item blocks until the consumer is cancelled
        for _ in range(1000):
            stop_point()  # raises once the cancellation has reached the run
            time.sleep(0.005)
        done.append("ran to its end")
        yield 1

    stream = inline_stream_in_worker(items, 2)
    async with cancelled_once_started(started, release) as scope, aclosing(stream) as items_:
        async for _ in items_:
            pass
    assert scope.cancelled_caught and done == []


def _lake(root: Path, files: int = 4) -> None:
    for i in range(files):
        table = pa.table({"id": pa.array(range(i * 100, i * 100 + 100), pa.int64())})
        pq.write_table(table, root / f"{i}.parquet", row_group_size=25)


@pytest.mark.anyio
async def test_lookup_batches_of_local_paths_runs_in_one_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """lookup_batches of local paths runs whole in one worker thread, as lookup does; its
    batches and progress reach the caller's loop, in order."""
    import pybloom_async.rows.api as api
    from pybloom_async import col, lookup_batches

    _lake(tmp_path)
    loop_thread = threading.get_ident()
    runs: list[bool] = []
    batches = api._batches

    def spy(*args: Any) -> Any:
        runs.append(threading.get_ident() != loop_thread and inline())
        return batches(*args)

    monkeypatch.setattr(api, "_batches", spy)
    calls: list[tuple[int, int]] = []

    def progress(done: int, total: int) -> None:
        assert threading.get_ident() == loop_thread
        calls.append((done, total))

    where = col("id").isin([3, 30, 250, 399])
    got = [b async for b in lookup_batches(str(tmp_path), where, progress=progress)]
    assert [v for b in got for v in b.column("id").to_pylist()] == [3, 30, 250, 399]
    assert runs == [True] and calls and calls[-1] == (4, 4)


@pytest.mark.anyio
async def test_lookup_batches_stopped_early_reads_no_further(tmp_path: Path) -> None:
    from pybloom_async import SourceStats, col, lookup_batches

    _lake(tmp_path, files=40)  # read 16 at once: the first part's batches fill the channel
    where = col("id") >= 0
    stats = SourceStats()
    async with aclosing(lookup_batches(str(tmp_path), where, stats=stats)) as stream:
        async for batch in stream:
            assert batch.column("id").to_pylist()[0] == 0
            break
    read = stats.bytes_read
    await anyio.sleep(0.05)
    assert stats.bytes_read == read  # nothing read once the stream was closed
    whole = SourceStats()
    async for _ in lookup_batches(str(tmp_path), where, stats=whole):
        pass
    assert read < whole.bytes_read


@pytest.mark.anyio
async def test_open_streams_hold_no_token_a_lookup_on_their_reader_waits_for(
    tmp_path: Path,
) -> None:
    """A caller's reader runs two lookups of local paths at a time; a stream held open by
    its consumer counts in none: a lookup on the same reader while two are open answers."""
    from pybloom_async import BloomReader, col, lookup, lookup_batches

    _lake(tmp_path)
    reader = BloomReader()
    where = col("id") >= 0
    first = lookup_batches(str(tmp_path), where, reader=reader)
    second = lookup_batches(str(tmp_path), where, reader=reader)
    async with aclosing(first), aclosing(second):
        assert (await anext(first)).num_rows and (await anext(second)).num_rows
        with anyio.fail_after(30):
            got = await lookup(str(tmp_path), col("id") == 250, reader=reader)
        assert got.column("id").to_pylist() == [250]
