"""A lane: worker threads fed by a queue, for work that runs inline (one local file's work).

Handing each piece of work to a worker thread (:func:`.loops.in_thread`) is a round trip:
the event loop starts the call, the thread runs it, the loop wakes to take the result and
only then starts the next. For a local file whose whole work takes a few hundred
microseconds, that round trip (two thread wake-ups, the interpreter lock changing hands at
each) cost as much as the work itself (measured in ``bench/RESULTS.md``). A lane keeps its
threads busy instead: work is queued, a thread takes the next item as soon as it finishes
one, and each result reaches the waiting task by a non-blocking call into its loop. Threads
are started only while there is work (each is one worker-thread call that drains the
queue), one until the lane's ``pace`` says its work has proved slow (:mod:`.pace`), then
up to ``threads``, within a limiter shared by the lanes of one reader.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Generic, TypeVar

import anyio
import anyio.abc

from . import loops
from .loops import call_soon_in_loop
from .pace import Pace

T = TypeVar("T")


class _Item(Generic[T]):
    __slots__ = ("args", "cancelled", "done", "error", "function", "notify", "result")

    def __init__(
        self, function: Callable[..., T], args: tuple[Any, ...], notify: Callable[..., object]
    ) -> None:
        self.function = function
        self.args = args
        self.notify = notify
        self.done = anyio.Event()
        self.result: T | None = None
        self.error: BaseException | None = None
        self.cancelled = False


@asynccontextmanager
async def open_lane(
    threads: int,
    limiter: anyio.CapacityLimiter,
    on_idle: Callable[[], None] | None = None,
    pace: Pace | None = None,
) -> AsyncIterator[Lane]:
    """A lane for the body of the ``async with`` (closed at its end).

    ``on_idle`` runs in a thread of the lane each time it finds the queue empty (and
    stops): for releasing what that thread's allocators keep.

    An exception of the body comes out as itself, not in an exception group (the lane's
    threads never raise: each item's error goes to the task waiting for it).
    """
    try:
        async with anyio.create_task_group() as group:
            lane = Lane(group, threads, limiter, on_idle, pace)
            try:
                yield lane
            finally:
                lane.close()
    except BaseException as failed:
        # An exception group (the builtin, or the backport anyio raises on Python 3.10).
        inner = getattr(failed, "exceptions", None)
        if not (type(failed).__name__.endswith("ExceptionGroup") and isinstance(inner, tuple)):
            raise
        if len(inner) != 1:
            raise
        (error,) = inner
        raise error from error.__cause__


class Lane:
    """Worker threads for one run, fed by a queue (see the module).

    ``group`` holds the threads' calls (the run's task group: it ends when the queue is
    empty); ``threads`` bounds this lane's threads, ``limiter`` those of every lane sharing
    it (one reader's runs); with a ``pace``, one thread runs until it says slow.
    """

    def __init__(
        self,
        group: anyio.abc.TaskGroup,
        threads: int,
        limiter: anyio.CapacityLimiter,
        on_idle: Callable[[], None] | None = None,
        pace: Pace | None = None,
    ) -> None:
        self._group = group
        self._pace = pace
        self._on_idle = on_idle
        self._threads = threads
        self._limiter = limiter
        self._queue: collections.deque[_Item[Any]] = collections.deque()
        self._lock = threading.Lock()
        self._active = 0
        self._closed = False
        self._widened = False

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` in one of the lane's threads; its result or its exception.

        Cancelled while queued, the item is dropped; cancelled while running, it runs to
        its end in its thread and its result is dropped.
        """
        item: _Item[T] = _Item(function, args, call_soon_in_loop())
        self._queue.append(item)
        self._add_thread()
        try:
            await item.done.wait()
        except BaseException:
            item.cancelled = True
            raise
        if not self._widened and self._pace is not None and self._pace.slow:
            # The work proved slow: the items queued get the other threads now.
            self._widened = True
            self._widen()
        if item.error is not None:
            raise item.error
        return item.result  # type: ignore[return-value]  # set when no error was

    def close(self) -> None:
        """Take no more items: threads finish the one they run and stop."""
        self._closed = True

    async def _drain(self) -> None:
        try:
            await loops.in_thread(self._take_all, limiter=self._limiter)
        finally:
            with self._lock:
                self._active -= 1
            # An item queued while the last thread was stopping is taken by a new one.
            if self._queue and not self._closed:
                self._add_thread()

    def _add_thread(self) -> None:
        """One more thread takes the queue's items, unless the lane's threads all run."""
        pace = self._pace
        threads = self._threads if pace is None or pace.slow else 1
        with self._lock:
            start = self._active < threads
            if start:
                self._active += 1
        if start:
            self._group.start_soon(self._drain)

    def _widen(self) -> None:
        """Threads up to the lane's bound for the items queued."""
        for _ in range(self._threads):
            if not self._queue or self._closed:
                return
            self._add_thread()

    def _take_all(self) -> None:
        """Run items until the queue is empty (in a worker thread).

        Finished items are handed back in batches: each hand-back wakes the event loop,
        which then takes the interpreter lock from this thread, so waking it once per
        ``HAND_BACK`` items (or when the queue runs dry) keeps the thread working.
        """
        done: list[_Item[Any]] = []
        since = time.perf_counter()
        try:
            while not self._closed:
                try:
                    item = self._queue.popleft()
                except IndexError:
                    return
                if item.cancelled:
                    continue
                try:
                    item.result = item.function(*item.args)
                except BaseException as exc:  # handed to the waiting task, raised there
                    item.error = exc
                done.append(item)
                now = time.perf_counter()
                if len(done) >= HAND_BACK or not self._queue or now - since > HAND_BACK_SECONDS:
                    _hand_back(done)
                    done = []
                    since = now
        finally:
            _hand_back(done)
            if self._on_idle is not None:
                self._on_idle()


#: Finished items handed back to their event loop at once, at most (fewer when the queue
#: runs dry: a lone item is handed back at once)...
HAND_BACK = 16
#: ...and at least this often (seconds): items of several files each, or slow ones, reach
#: their tasks (and a slow lane its other threads) while the queue is still long.
HAND_BACK_SECONDS = 0.002


def _hand_back(items: list[_Item[Any]]) -> None:
    """Wake each items' loop once, to set all their events."""
    by_loop: dict[Any, list[anyio.Event]] = {}
    for item in items:
        by_loop.setdefault(item.notify, []).append(item.done)
    for notify, events in by_loop.items():
        notify(_setter(events))


def _setter(events: list[anyio.Event]) -> Callable[[], None]:
    def set_all() -> None:
        for event in events:
            event.set()

    return set_all
