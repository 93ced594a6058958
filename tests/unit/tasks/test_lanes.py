"""Lanes: worker threads fed by a queue; results, errors, cancellation, bounds."""

from __future__ import annotations

import threading
import time

import anyio
import pytest

from pybloom_async.tasks.lanes import open_lane


@pytest.mark.anyio
async def test_results_and_errors_come_back_to_their_callers() -> None:
    limiter = anyio.CapacityLimiter(2)

    def work(i: int) -> int:
        if i % 7 == 3:
            raise ValueError(f"item {i}")
        return i * i

    got: dict[int, object] = {}
    async with open_lane(2, limiter) as lane:

        async def one(i: int) -> None:
            try:
                got[i] = await lane.run(work, i)
            except ValueError as exc:
                got[i] = str(exc)

        async with anyio.create_task_group() as group:
            for i in range(100):
                group.start_soon(one, i)
    assert got == {i: (f"item {i}" if i % 7 == 3 else i * i) for i in range(100)}


class _AtOnce:
    """Calls that sleep, and the most of them seen running at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = self.peak = 0

    def sleep(self, seconds: float) -> None:
        with self.lock:
            self.running += 1
            self.peak = max(self.peak, self.running)
        time.sleep(seconds)
        with self.lock:
            self.running -= 1


@pytest.mark.anyio
async def test_threads_stay_within_the_lane_and_the_limiter() -> None:
    """At most ``threads`` of one lane, and at most the limiter's for all lanes sharing it."""
    limiter = anyio.CapacityLimiter(3)
    calls = _AtOnce()

    def work(_: int) -> None:
        calls.sleep(0.002)

    async def lane_of(threads: int) -> None:
        async with open_lane(threads, limiter) as lane, anyio.create_task_group() as group:
            for i in range(40):
                group.start_soon(lane.run, work, i)

    await lane_of(2)
    assert calls.peak <= 2
    calls.peak = 0
    async with anyio.create_task_group() as group:  # three lanes of 2 share 3 threads
        for _ in range(3):
            group.start_soon(lane_of, 2)
    assert 2 <= calls.peak <= 3


@pytest.mark.anyio
async def test_an_error_in_the_body_comes_out_as_itself() -> None:
    with pytest.raises(KeyError, match="plain"):
        async with open_lane(2, anyio.CapacityLimiter(2)) as lane:
            await lane.run(lambda: None)
            raise KeyError("plain")


@pytest.mark.anyio
async def test_cancelled_callers_leave_nothing_running() -> None:
    """Items queued by cancelled callers are dropped; the one running finishes; the lane's
    exit waits for its threads."""
    started: list[int] = []

    def slow(i: int) -> int:
        started.append(i)
        time.sleep(0.01)
        return i

    async with open_lane(1, anyio.CapacityLimiter(1)) as lane:
        with anyio.move_on_after(0.015):
            async with anyio.create_task_group() as group:
                for i in range(50):
                    group.start_soon(lane.run, slow, i)
        assert await lane.run(lambda: "after") == "after"
    assert len(started) < 50  # the rest were dropped, not run


@pytest.mark.anyio
async def test_a_thread_that_runs_dry_calls_on_idle_in_itself() -> None:
    """``on_idle`` runs in the lane's own thread once its queue is empty (what pyarrow's
    allocator keeps per thread can only be handed back from that thread)."""
    idle: list[int] = []
    workers: set[int] = set()

    def work() -> None:
        workers.add(threading.get_ident())

    async with open_lane(
        1, anyio.CapacityLimiter(1), lambda: idle.append(threading.get_ident())
    ) as lane:
        for _ in range(5):
            await lane.run(work)
    assert idle and set(idle) <= workers and threading.get_ident() not in idle


@pytest.mark.anyio
@pytest.mark.parametrize("slow", [False, True])
async def test_a_paced_lane_runs_one_thread_until_its_work_proves_slow(slow: bool) -> None:
    """Quick work (a warm local file) is done fastest on one thread; slow work (a disk, rows
    decoded) gets the lane's other threads once it proves slow."""
    from pybloom_async.tasks.pace import SLOW_SECONDS, Pace

    pace = Pace()
    calls = _AtOnce()

    def work(_: int) -> None:
        calls.sleep(SLOW_SECONDS * 3 if slow else SLOW_SECONDS / 20)

    lanes = open_lane(2, anyio.CapacityLimiter(2), pace=pace)
    async with lanes as lane, anyio.create_task_group() as group:
        for i in range(30):
            group.start_soon(lane.run, pace.timed, work, i)
    assert pace.slow is slow
    assert calls.peak == (2 if slow else 1)


def test_pace_turns_slow_at_three_slow_files_among_the_last_eight() -> None:
    from pybloom_async.tasks.pace import RECENT_FILES, SLOW_FILES, SLOW_SECONDS, Pace

    pace = Pace()
    for i in range(50):  # a rare pause over a long run of quick files
        for _ in range(RECENT_FILES):
            pace.note(SLOW_SECONDS / 2)
        pace.note(SLOW_SECONDS * 2)
        assert not pace.slow, i
    for _ in range(SLOW_FILES - 1):
        pace.note(SLOW_SECONDS / 2)
        pace.note(SLOW_SECONDS * 2)  # not in a row, but among the last eight
    assert pace.slow
    with pytest.raises(ValueError, match="boom"):
        pace.timed(_boom)  # timed whether it returns or raises


def _boom() -> None:
    raise ValueError("boom")
