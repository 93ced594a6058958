"""The process's worker threads (tasks.loops.in_thread): results, errors, context,
cancellation, bounds, and threads kept from one event loop to the next."""

from __future__ import annotations

import contextvars
import multiprocessing
import threading
import time
from typing import Any

import anyio
import pytest

from pybloom_async.tasks import loops
from pybloom_async.tasks.loops import in_thread, to_worker

_VALUE: contextvars.ContextVar[str] = contextvars.ContextVar("value", default="unset")


@pytest.mark.anyio
async def test_results_errors_and_the_callers_context() -> None:
    def work(i: int) -> tuple[int, str, bool]:
        if i == 3:
            raise ValueError("item 3")
        return i * i, _VALUE.get(), threading.current_thread() is threading.main_thread()

    _VALUE.set("the caller's")
    assert await in_thread(work, 5) == (25, "the caller's", False)
    with pytest.raises(ValueError, match="item 3"):
        await in_thread(work, 3)
    # A KeyboardInterrupt or SystemExit raised by the call is the caller's too.
    with pytest.raises(SystemExit):
        await in_thread(lambda: (_ for _ in ()).throw(SystemExit(2)))


@pytest.mark.anyio
async def test_a_cancelled_caller_waits_for_the_call() -> None:
    started = threading.Event()
    finished: list[float] = []

    def slow() -> None:
        started.set()
        time.sleep(0.2)
        finished.append(time.monotonic())

    with anyio.move_on_after(0.05) as scope:
        await in_thread(slow)
    assert scope.cancelled_caught
    # The cancellation came out only once the call had ended: no thread works on for it.
    assert started.is_set() and len(finished) == 1


@pytest.mark.anyio
async def test_the_limiter_bounds_calls_at_once() -> None:
    limiter = anyio.CapacityLimiter(3)
    lock = threading.Lock()
    running = [0, 0]  # now, most

    def work() -> None:
        with lock:
            running[0] += 1
            running[1] = max(running[1], running[0])
        time.sleep(0.01)
        with lock:
            running[0] -= 1

    async with anyio.create_task_group() as group:
        for _ in range(20):
            group.start_soon(lambda: in_thread(work, limiter=limiter))
    assert running[1] == 3


def _threads_named() -> set[int]:
    return {t.ident for t in threading.enumerate() if t.name == "pybloom-worker" and t.ident}


def test_threads_outlive_the_event_loop(anyio_backend: str) -> None:
    """A second event loop's calls run in the threads the first one left idle, and calls
    one after another take the thread the last one left."""

    async def calls() -> set[int]:
        return {await to_worker(threading.get_ident) for _ in range(5)}

    first = anyio.run(calls, backend=anyio_backend)
    idle = _threads_named()
    assert first <= idle
    second = anyio.run(calls, backend=anyio_backend)
    assert second <= idle  # none started afresh


def test_an_idle_thread_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loops, "IDLE_SECONDS", 0.05)
    pool = loops._Threads()
    monkeypatch.setattr(loops, "_threads", pool)

    async def call() -> int:
        return await in_thread(threading.get_ident)

    ident = anyio.run(call)
    deadline = time.monotonic() + 5
    while ident in _threads_named() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ident not in _threads_named()
    assert pool.idle == 0
    # A call after that starts a thread again.
    assert anyio.run(call) != 0


def _in_child(queue: multiprocessing.Queue[object]) -> None:
    async def call() -> int:
        return await in_thread(lambda: 42)

    queue.put(anyio.run(call))


def test_a_forked_child_starts_its_own_threads() -> None:
    """The parent's idle threads are not in the child: a call there must not wait for them."""

    async def warm() -> None:
        await in_thread(lambda: None)

    anyio.run(warm)  # an idle thread in the parent
    context = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue[object] = context.Queue()
    child = context.Process(target=_in_child, args=(queue,))
    child.start()
    try:
        assert queue.get(timeout=20) == 42
    finally:
        child.join(20)
    assert child.exitcode == 0


def test_a_call_whose_loop_ended_leaves_its_thread_serving(monkeypatch: pytest.MonkeyPatch) -> None:
    """A result that cannot reach its loop (ended meanwhile) is dropped; the thread stays."""
    pool = loops._Threads()
    monkeypatch.setattr(loops, "_threads", pool)
    made: list[Any] = []

    async def lost() -> None:
        call = loops._Call(threading.get_ident, ())

        def ended(callback: object) -> None:
            raise RuntimeError("Event loop is closed")

        call.notify = ended
        made.append(call)
        pool.submit(call)

    anyio.run(lost)
    deadline = time.monotonic() + 5
    while (made[0].result is None or pool.idle != 1) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)  # a thread that died of the error would be gone by now
    ident = made[0].result
    assert ident is not None and pool.idle == 1
    assert any(t.ident == ident and t.is_alive() for t in threading.enumerate())

    async def call() -> int:
        return await in_thread(threading.get_ident)

    assert anyio.run(call) == ident  # the same thread takes the next call
