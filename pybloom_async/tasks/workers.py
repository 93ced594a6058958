"""Work over many items: bounded concurrency, results in order, the first failure raised.

Running inline (see :mod:`.loops`), the items are done one after another in the calling
thread while they are quick; once they prove slow (:mod:`.pace`: their work waits on a disk
or decodes rows, work that lets go of the interpreter lock), the rest are spread over a few
threads, each running its items inline. The results, their order and the errors are the
same.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import functools
from collections.abc import AsyncIterable, Awaitable, Callable, Coroutine, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import anyio.abc

from ..errors import PyBloomError
from .loops import inline, run_inline, stop_point
from .pace import Pace

T = TypeVar("T")

#: With ``on_result``, how many items past the oldest undelivered one may be started, per
#: worker: a slow item holds back at most this many finished results, not the rest of the run.
AHEAD_PER_WORKER = 4

#: The threads inline items may be spread over here (:func:`spread_over`; 1: none).
_SPREAD: ContextVar[int] = ContextVar("pybloom_async_spread", default=1)


@contextlib.contextmanager
def spread_over(threads: int) -> Iterator[None]:
    """Within this block, inline :func:`for_each` items may be spread over ``threads``
    threads (a run's lane size: ``ReaderConfig.local_threads``)."""
    token = _SPREAD.set(max(1, threads))
    try:
        yield
    finally:
        _SPREAD.reset(token)


@dataclass(frozen=True)
class Batches:
    """Items handed off several at a time (:func:`for_each`'s ``batches``): up to ``size``
    consecutive items that ``joins`` accepts (local files) are worked one after another in
    one call of ``hand``, which runs a coroutine function to its end elsewhere, inline (a
    run's lane), each item's time told to ``pace``. Each hand-off costs the event loop a
    wake-up and the interpreter lock a change of hands: for a warm local file, as much as
    its work."""

    size: int
    joins: Callable[[Any], bool]
    hand: Callable[[Callable[[], Coroutine[Any, Any, list[Any]]]], Awaitable[list[Any]]]
    pace: Pace


# Long because: the docstring is 28 lines; the code (taking, delivering in order, the
# workers) shares its state through closures, which one function keeps in one place.
async def for_each(
    items: Sequence[Any] | AsyncIterable[Any],
    work: Callable[[Any], Any],
    limit: int,
    progress: Callable[[int, int], None] | None = None,
    on_result: Callable[[Any], None] | None = None,
    batches: Batches | None = None,
    pace: Pace | None = None,
) -> list[Any]:
    """Run ``await work(item)`` for every item, ``limit`` at a time; results in item order.

    ``limit`` workers take the items in turn from one iterator, so the tasks alive at
    once do not grow with the number of items (a task per item, waiting on a limiter,
    cost about 6 KiB each: 60 MiB for 10,000 files). The first exception (a
    PyBloomError in strict mode, or one nobody expected) cancels the rest and is
    raised as it is, never wrapped in an exception group.

    ``items`` may be an async iterable (a :class:`~pybloom_async.io.files.FileStream`):
    it is read as the workers need items, so work starts while it still lists, and
    ``progress`` is told
    the items taken so far as the total. An error it raises ends the run like one from
    ``work``; it is closed at the end.

    With ``on_result``, each result is handed to it in item order as soon as it and
    every earlier one are done, and the returned list is empty: a result is held only
    until it is delivered, and no item starts more than ``AHEAD_PER_WORKER * limit``
    items past the oldest one not yet delivered. An exception from ``on_result``
    cancels the rest and is raised as it is.

    With ``batches``, a worker takes up to ``batches.size`` items in a row that it accepts
    and hands them off together (see :class:`Batches`); the results, their order, the
    progress and the errors are the same. A stream's items are batched only when it says
    it is ``free`` (a listing): a worker holding items waits for the stream's next ones, and
    another stream's next item may wait on the items already taken (the index pass admits
    files as the row-group pass finishes them).

    Inline (no event loop), the items run in this thread until ``pace`` (the run's; a
    fresh one when None) says they are slow, then spread over threads (see
    :func:`spread_over`).
    """
    if inline():
        return await _one_by_one(items, work, limit, progress, on_result, pace or Pace())
    keep = on_result is None
    results: list[Any] = []
    failure: list[Exception] = []
    done = 0
    taken = 0
    sized = isinstance(items, Sequence)
    free = getattr(items, "free", False) is True
    feed = iter(items) if isinstance(items, Sequence) else None
    stream = None if isinstance(items, Sequence) else aiter(items)
    taking = anyio.Lock()
    pending: dict[int, Any] = {}
    delivered = 0
    window = AHEAD_PER_WORKER * limit
    moved = anyio.Event()

    async def take() -> tuple[int, Any] | None:
        # Sequences are taken between awaits; an async iterator one worker at a time.
        nonlocal taken, feed, stream
        if feed is not None:
            item = next(feed, _END)
        elif stream is not None:
            async with taking:
                item = _END if stream is None else await anext(stream, _END)
        else:
            item = _END
        if item is _END:
            feed = stream = None
            return None
        taken += 1
        if keep:
            results.append(None)
        if not sized and started < limit:
            # A stream's workers start as its items come: one file costs one task.
            start_worker()
        return taken - 1, item

    def deliver(i: int, result: Any) -> None:
        nonlocal delivered, moved
        assert on_result is not None
        pending[i] = result
        while delivered in pending:
            on_result(pending.pop(delivered))
            delivered += 1
        moved.set()
        moved = anyio.Event()

    def put(i: int, result: Any) -> None:
        if keep:
            results[i] = result
        else:
            deliver(i, result)

    def tick() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, len(items) if isinstance(items, Sequence) else taken)

    async def worker(scope: anyio.CancelScope) -> None:
        extra: tuple[int, Any] | None = None  # an item taken that did not join a batch
        while True:
            try:
                got = extra if extra is not None else await take()
                extra = None
                if got is None:
                    return
                i, item = got
                while not keep and i >= delivered + window:
                    await moved.wait()
                if batches is not None and (sized or free) and batches.joins(item):
                    group = [got]
                    while len(group) < batches.size and (extra := await take()) is not None:
                        if not batches.joins(extra[1]):
                            break
                        group.append(extra)
                        extra = None
                    outs = await batches.hand(
                        functools.partial(
                            _in_turn, work, [member for _, member in group], batches.pace
                        )
                    )
                    # A batch whose items proved slow stops early: the rest go one by one,
                    # so that the lane's other threads can take them.
                    outs += [(None, member) for _, member in group[len(outs) :]]
                    for (at, _), (ok, value) in zip(group, outs, strict=True):
                        if ok is False:
                            raise value
                        put(at, value if ok else await work(value))
                        if at != i:  # the group's first item is counted below
                            tick()
                else:
                    put(i, await work(item))
            except PyBloomError as exc:
                failure.append(exc)
                scope.cancel()
                return
            except Exception as exc:  # unexpected, or from on_result: raised as it is
                failure.append(exc)
                scope.cancel()
                return
            tick()

    # A sequence gets its workers at once; a stream one, then one more per item taken
    # (up to ``limit``), so that a short stream does not start ``limit`` idle tasks.
    workers = min(limit, len(items)) if isinstance(items, Sequence) else 1
    started = 0
    group: anyio.abc.TaskGroup | None = None

    def start_worker() -> None:
        nonlocal started
        assert group is not None
        started += 1
        group.start_soon(worker, group.cancel_scope)

    try:
        async with anyio.create_task_group() as tg:
            group = tg
            for _ in range(workers):
                start_worker()
    finally:
        if not sized:
            closing = getattr(items, "aclose", None)
            if closing is not None:
                with anyio.CancelScope(shield=True):
                    await closing()
    if failure:
        raise failure[0]
    # worker -> take -> start_worker -> worker: the closures refer to one another, a cycle
    # only the cyclic collector frees. The results leave it in a list of their own, so
    # that they (a lookup's footers, plans and rows) are freed as soon as the caller lets
    # go: left to the collector, its full passes over them cost a lookup up to a fifth of
    # its time.
    out = results.copy()
    results.clear()
    return out


_END = object()


async def _one_by_one(
    items: Sequence[Any] | AsyncIterable[Any],
    work: Callable[[Any], Any],
    limit: int,
    progress: Callable[[int, int], None] | None,
    on_result: Callable[[Any], None] | None,
    pace: Pace,
) -> list[Any]:
    """:func:`for_each` inline: the items in this thread while they are quick, then spread
    over the threads :func:`~pybloom_async.tasks.workers.spread_over` allows (at most
    ``limit``) once they prove slow (``pace``: :mod:`pybloom_async.tasks.pace`), each item
    inline;
    results delivered in order from this thread, the first failure in item order raised
    after the items already started have ended."""
    results: list[Any] = []
    done = 0
    sized = isinstance(items, Sequence)
    stream = None if isinstance(items, Sequence) else aiter(items)
    feed = iter(items) if isinstance(items, Sequence) else None
    threads = min(limit, _SPREAD.get())
    pool: ThreadPoolExecutor | None = None
    running: collections.deque[Future[Any]] = collections.deque()

    def deliver(result: Any) -> None:
        nonlocal done
        done += 1
        results.append(result) if on_result is None else on_result(result)
        if progress is not None:
            progress(done, len(items) if isinstance(items, Sequence) else done + len(running))

    try:
        while True:
            stop_point()
            item = next(feed, _END) if feed is not None else await anext(stream, _END)  # type: ignore[arg-type]
            if item is _END:
                break
            if pool is None and threads > 1 and pace.slow:
                pool = ThreadPoolExecutor(threads, thread_name_prefix="pybloom-inline")
            if pool is None:
                with pace.timing():
                    result = await work(item)
                deliver(result)
                continue
            context = contextvars.copy_context()
            running.append(pool.submit(context.run, _inline_item, work, item))
            while len(running) >= threads * AHEAD_PER_WORKER or (running and running[0].done()):
                deliver(running.popleft().result())
        while running:
            deliver(running.popleft().result())
    finally:
        if pool is not None:
            for future in running:
                future.cancel()  # not started: never run
            pool.shutdown(wait=True)
        closing = None if sized else getattr(items, "aclose", None)
        if closing is not None:
            await closing()
    return results


async def _in_turn(
    work: Callable[[Any], Any], items: list[Any], pace: Pace
) -> list[tuple[bool | None, Any]]:
    """A batch's items worked one after another, each timed: ``(True, result)`` each, up
    to the first failure, ``(False, exception)``, or while ``pace`` says quick (once it
    says slow, the caller works the rest one by one)."""
    out: list[tuple[bool | None, Any]] = []
    for item in items:
        if out and pace.slow:
            break
        with pace.timing():
            try:
                out.append((True, await work(item)))
            except Exception as exc:  # raised by the worker, in its place among the results
                out.append((False, exc))
                break
    return out


def _inline_item(work: Callable[[Any], Any], item: Any) -> Any:
    """One item's work run inline in a thread of the spread (see :func:`_one_by_one`)."""
    return run_inline(work, item)


async def gather(call: Callable[..., Awaitable[T]], arglist: Sequence[tuple[Any, ...]]) -> list[T]:
    """Await ``call(*args)`` for each args concurrently; results in order.

    The first failure cancels the others and is raised as itself, not wrapped in an
    ExceptionGroup, so that the error mapping at the boundary sees the original exception.
    Inline, the calls run one after another.
    """
    if inline():
        return [await call(*args) for args in arglist]
    results: list[Any] = [None] * len(arglist)
    failures: list[Exception] = []

    async def one(index: int, args: tuple[Any, ...]) -> None:
        try:
            results[index] = await call(*args)
        except Exception as exc:  # cancellation is a BaseException and passes through
            failures.append(exc)
            tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        for index, args in enumerate(arglist):
            tg.start_soon(one, index, args)
    if failures:
        raise failures[0]
    return results
