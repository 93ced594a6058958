"""for_each: what a run's results leave behind."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from pybloom_async.tasks.workers import for_each


class Result:
    """A result whose release is seen."""


def _collected_garbage() -> Iterator[list[object]]:
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    found: list[object] = []
    try:
        yield found
        gc.collect()
        found.extend(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_results_are_freed_by_reference_counting(stream: bool) -> None:
    """No reference cycle holds what the workers return: a lookup's footers, plans and rows
    are freed as soon as the caller lets go, not left to the cyclic collector (whose full
    passes over them cost a lookup up to a fifth of its time)."""

    async def work(i: int) -> Result:
        return Result()

    async def items() -> object:
        for i in range(20):
            yield i

    garbage = _collected_garbage()
    found = next(garbage)
    results = await for_each(items() if stream else list(range(20)), work, limit=4)
    assert len(results) == 20 and all(isinstance(r, Result) for r in results)
    del results
    next(garbage, None)
    assert not [o for o in found if isinstance(o, Result)]


# ---- inline: one thread while items are quick, spread over threads once they are slow ----


def _inline_each(
    items: object, work: object, threads: int, limit: int = 8, **kwargs: object
) -> list[object]:
    from pybloom_async.tasks.loops import run_inline
    from pybloom_async.tasks.workers import spread_over

    with spread_over(threads):
        return run_inline(for_each, items, work, limit, **kwargs)  # type: ignore[arg-type]


def test_quick_inline_items_stay_in_the_calling_thread() -> None:
    import threading

    names: list[str] = []

    async def work(i: int) -> int:
        names.append(threading.current_thread().name)
        return i * 2

    assert _inline_each(list(range(50)), work, threads=2) == [i * 2 for i in range(50)]
    assert set(names) == {threading.current_thread().name}


@pytest.mark.parametrize("stream", [False, True])
def test_slow_inline_items_are_spread_over_threads_in_order(stream: bool) -> None:
    import threading
    import time

    from pybloom_async.tasks import pace

    names: dict[int, str] = {}
    progress: list[tuple[int, int]] = []
    delivered: list[int] = []

    async def work(i: int) -> int:
        from pybloom_async.tasks.loops import inline

        assert inline()  # each item runs inline in its thread too
        names[i] = threading.current_thread().name
        time.sleep(pace.SLOW_SECONDS * (3 if i % 3 else 1.5))
        return i

    async def items() -> object:
        for i in range(12):
            yield i

    got = _inline_each(
        items() if stream else list(range(12)),
        work,
        threads=2,
        progress=lambda d, t: progress.append((d, t)),
        on_result=delivered.append,
    )
    assert got == [] and delivered == list(range(12))
    here = threading.current_thread().name
    first = pace.SLOW_FILES
    assert [names[i] for i in range(first)] == [here] * first
    assert {names[i] for i in range(first, 12)} - {here}  # spread after the slow ones
    assert [d for d, _ in progress] == list(range(1, 13))
    if not stream:
        assert {t for _, t in progress} == {12}


@pytest.mark.parametrize("expected", [0, 2, 3])
def test_a_pace_told_of_slow_items_ahead_spreads_them_from_the_first(expected: int) -> None:
    """Quick items run in the calling thread, unless the run's pace was told that at
    least SLOW_FILES slow ones are ahead: then every item goes to the threads."""
    import threading

    from pybloom_async.tasks.pace import SLOW_FILES, Pace

    names: list[str] = []

    async def work(i: int) -> int:
        names.append(threading.current_thread().name)
        return i

    pace = Pace()
    pace.expect(expected)
    assert _inline_each(list(range(8)), work, threads=2, pace=pace) == list(range(8))
    here = threading.current_thread().name
    if expected >= SLOW_FILES:
        assert here not in names
    else:
        assert set(names) == {here}


def test_a_spread_inline_run_raises_the_first_failure_and_starts_no_more() -> None:
    import time

    from pybloom_async.errors import PyBloomError
    from pybloom_async.tasks import pace, workers

    started: list[int] = []
    closed: list[bool] = []

    async def work(i: int) -> int:
        started.append(i)
        time.sleep(pace.SLOW_SECONDS * 2)
        if i == 5:
            raise PyBloomError("file 5 is damaged")
        return i

    async def items() -> object:
        try:
            for i in range(200):
                yield i
        finally:
            closed.append(True)

    with pytest.raises(PyBloomError, match="file 5 is damaged"):
        _inline_each(items(), work, threads=2)
    assert closed == [True]
    # The window ahead of the failure is bounded: nothing near the end was started.
    assert max(started) < 5 + 2 * workers.AHEAD_PER_WORKER + 2


def test_a_few_slow_inline_items_among_quick_ones_stay_in_one_thread() -> None:
    """A point lookup's one file with rows, or a filter's false positive, is not worth
    starting threads for."""
    import threading
    import time

    from pybloom_async.tasks import pace

    names: set[str] = set()

    async def work(i: int) -> int:
        names.add(threading.current_thread().name)
        if i % 10 == 0 and i < 10 * (pace.SLOW_FILES - 1):  # fewer slow ones than SLOW_FILES
            time.sleep(pace.SLOW_SECONDS * 2)
        return i

    assert _inline_each(list(range(30)), work, threads=2) == list(range(30))
    assert names == {threading.current_thread().name}


def test_without_spread_over_inline_items_stay_in_one_thread() -> None:
    import threading
    import time

    from pybloom_async.tasks import pace
    from pybloom_async.tasks.loops import run_inline

    names: set[str] = set()

    async def work(i: int) -> int:
        names.add(threading.current_thread().name)
        time.sleep(pace.SLOW_SECONDS * 2)
        return i

    assert run_inline(for_each, list(range(6)), work, 8) == list(range(6))
    assert names == {threading.current_thread().name}


# ---- batches: local files handed off several at a time ----------------------------------


def _lane_batches(lane: object, pace: object, size: int = 4, joins: object = None) -> object:
    import functools

    from pybloom_async.tasks.loops import run_inline
    from pybloom_async.tasks.workers import Batches

    return Batches(
        size,
        joins if joins is not None else (lambda item: item % 10 != 9),  # type: ignore[arg-type]
        functools.partial(lane.run, run_inline),  # type: ignore[attr-defined]
        pace,  # type: ignore[arg-type]
    )


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [None, "free", "fed"])
@pytest.mark.parametrize("delivered", [False, True])
async def test_batched_items_give_the_same_results_order_and_progress(
    stream: str | None, delivered: bool
) -> None:
    import anyio

    from pybloom_async.tasks.lanes import open_lane
    from pybloom_async.tasks.loops import inline
    from pybloom_async.tasks.pace import Pace

    ran_inline: dict[int, bool] = {}
    progress: list[tuple[int, int]] = []
    out: list[int] = []

    async def work(i: int) -> int:
        ran_inline[i] = inline()
        return i * 3

    async def items() -> object:
        for i in range(57):
            yield i

    from pybloom_async.io.files import FileStream

    source: object = list(range(57))
    if stream is not None:
        source = FileStream(items(), free=stream == "free")  # type: ignore[arg-type]
    pace = Pace()
    async with open_lane(2, anyio.CapacityLimiter(2), pace=pace) as lane:
        got = await for_each(
            source,  # type: ignore[arg-type]
            work,
            5,
            lambda d, t: progress.append((d, t)),
            out.append if delivered else None,
            batches=_lane_batches(lane, pace),  # type: ignore[arg-type]
        )
    expected = [i * 3 for i in range(57)]
    assert (out if delivered else got) == expected
    assert [d for d, _ in progress] == list(range(1, 58))
    # A sequence's or a free stream's items that join a batch ran inline in the lane's
    # thread, the others here on the loop; a stream fed by the work goes one by one.
    assert ran_inline == {i: stream != "fed" and i % 10 != 9 for i in range(57)}


@pytest.mark.anyio
async def test_a_stream_whose_next_item_waits_on_earlier_work_does_not_deadlock() -> None:
    """The index pass admits a file only when the row-group pass has finished another: a
    worker that held a file while waiting for more to fill a batch would wait forever."""
    import anyio

    from pybloom_async.tasks.lanes import open_lane
    from pybloom_async.tasks.pace import Pace

    slots = anyio.Semaphore(2)

    async def admitted() -> object:
        for i in range(20):
            await slots.acquire()
            yield i

    async def work(i: int) -> int:
        slots.release()
        return i

    pace = Pace()
    with anyio.fail_after(10):
        async with open_lane(2, anyio.CapacityLimiter(2), pace=pace) as lane:
            batches = _lane_batches(lane, pace, size=8, joins=lambda i: True)
            got = await for_each(admitted(), work, 4, batches=batches)  # type: ignore[arg-type]
    assert got == list(range(20))


@pytest.mark.anyio
async def test_a_failure_within_a_batch_is_raised_and_ends_the_run() -> None:
    import anyio

    from pybloom_async.errors import PyBloomError
    from pybloom_async.tasks.lanes import open_lane
    from pybloom_async.tasks.pace import Pace

    started: list[int] = []

    async def work(i: int) -> int:
        started.append(i)
        if i == 6:
            raise PyBloomError("file 6 is damaged")
        return i

    pace = Pace()
    async with open_lane(2, anyio.CapacityLimiter(2), pace=pace) as lane:
        with pytest.raises(PyBloomError, match="file 6 is damaged"):
            await for_each(
                list(range(400)),
                work,
                2,
                batches=_lane_batches(lane, pace, joins=lambda i: True),  # type: ignore[arg-type]
            )
    assert 7 not in started[started.index(6) :]  # the batch stops at its failure
    assert len(started) < 40


@pytest.mark.anyio
async def test_a_batch_of_slow_items_breaks_up_once_they_prove_slow() -> None:
    """The rest of the batch is worked one by one (each through the lane again in a run,
    where the lane's other threads take them), not all in the thread that began it."""
    import time

    import anyio

    from pybloom_async.tasks.lanes import open_lane
    from pybloom_async.tasks.loops import inline
    from pybloom_async.tasks.pace import SLOW_FILES, SLOW_SECONDS, Pace

    in_batch: list[int] = []

    async def work(i: int) -> int:
        if inline():
            in_batch.append(i)
        time.sleep(SLOW_SECONDS * 2)
        return i

    pace = Pace()
    async with open_lane(2, anyio.CapacityLimiter(2), pace=pace) as lane:
        batches = _lane_batches(lane, pace, size=24, joins=lambda i: True)
        got = await for_each(list(range(24)), work, 1, batches=batches)  # type: ignore[arg-type]
    assert got == list(range(24)) and pace.slow
    assert in_batch == list(range(SLOW_FILES))
