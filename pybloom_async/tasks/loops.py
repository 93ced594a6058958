"""Event loops, worker threads and the inline mode: how async code runs, from sync code too.

Everything async in the package runs on anyio (asyncio or trio, one code path). Two
things complete it:

* **Inline mode.** A coroutine whose every wait is blocking I/O never suspends, so it can
  be run to its end in the calling thread without an event loop (:func:`run_inline`). The
  per-file work on a local file runs this way inside one worker thread (one hand-off per
  file, not one per read), and a ``*_sync`` call on local paths runs it in the caller's
  thread with no loop at all. Code that may run inline hands blocking work to
  :func:`to_worker`, which calls it directly when inline (the thread is already a worker)
  and in a worker thread otherwise; :mod:`.workers` runs its items one after another
  (spread over a few threads, each inline, once they prove slow).
* **Sync twins.** ``X_sync`` is ``X`` run by :func:`sync_twin`: inline when the arguments
  allow (the twin's ``inline_when``), else on a new event loop; never inside a running one.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import inspect
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextvars import ContextVar
from typing import Any, ParamSpec, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread

from ..errors import EventLoopError

# anyio loads its asyncio backend on a process's first anyio.run (20-50 ms of imports,
# about a third of a fresh process's first point lookup): loaded with the package
# instead, as an engine loads its runtime on import. Only a speed-up: anyio loads it
# itself where this name has moved.
with contextlib.suppress(ImportError):
    importlib.import_module("anyio._backends._asyncio")

T = TypeVar("T")
_P = ParamSpec("_P")

#: Whether the current context runs inline: in a worker thread that does one file's work,
#: or in the thread of a ``*_sync`` call that runs without a loop.
_INLINE: ContextVar[bool] = ContextVar("pybloom_async_inline", default=False)


def inline() -> bool:
    """Whether work runs inline here (blocking, in this thread, no event loop to yield to)."""
    return _INLINE.get()


#: Set when the caller of :func:`inline_in_worker` is cancelled: the inline run stops
#: before its next item (:func:`stop_point`).
_STOP: ContextVar[threading.Event | None] = ContextVar("pybloom_async_stop", default=None)


class Stopped(BaseException):
    """An inline run stopped for its cancelled caller (see :func:`inline_in_worker`). A
    BaseException, as cancellations are: no handler of failures takes it for one."""


def stop_point() -> None:
    """Where an inline run may stop: between its items.

    Raises
    ------
    Stopped
        The caller that handed the run to a worker thread was cancelled.
    """
    stop = _STOP.get()
    if stop is not None and stop.is_set():
        raise Stopped


@contextlib.contextmanager
def _inline_mode() -> Iterator[None]:
    token = _INLINE.set(True)
    try:
        yield
    finally:
        _INLINE.reset(token)


def run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends (all its I/O blocks) to the end, without a loop.

    Raises
    ------
    RuntimeError
        The coroutine suspended: it awaited something other than blocking I/O.
        It is closed first.
    """
    try:
        coro.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    coro.close()
    raise RuntimeError("a coroutine run without an event loop tried to suspend")


def run_inline(
    function: Callable[_P, Coroutine[Any, Any, T]], *args: _P.args, **kwargs: _P.kwargs
) -> T:
    """``function(*args, **kwargs)`` run to its end in this thread, in inline mode (see the
    module)."""
    with _inline_mode():
        return run_blocking(function(*args, **kwargs))


async def to_worker(
    function: Callable[..., T], *args: Any, limiter: anyio.CapacityLimiter | None = None
) -> T:
    """``function(*args)`` in a worker thread; called directly when running inline.

    Inline, the calling thread is already off the event loop (or there is none), so a
    second hand-off would only cost time.
    """
    if _INLINE.get():
        return function(*args)
    return await anyio.to_thread.run_sync(function, *args, limiter=limiter)


async def inline_in_worker(
    function: Callable[_P, Coroutine[Any, Any, T]],
    limiter: anyio.CapacityLimiter | None,
    *args: _P.args,
    **kwargs: _P.kwargs,
) -> T:
    """``function(*args, **kwargs)`` run inline in a worker thread (``limiter``'s), as its
    ``*_sync`` twin runs it: one hand-off for the whole call, where the event loop's own
    path hands each item to a thread and back. A cancelled caller stops the run at its
    next :func:`stop_point` and waits for that, so no thread works on for it; callbacks
    the run makes are the caller's to put on its loop (:func:`on_loop`)."""
    stop = threading.Event()

    def run() -> T:
        token = _STOP.set(stop)
        try:
            return run_inline(function, *args, **kwargs)
        finally:
            _STOP.reset(token)

    async def watch() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            stop.set()

    done: list[T] = []
    failed: list[Exception] = []
    async with anyio.create_task_group() as group:
        group.start_soon(watch)
        try:
            # Not abandoned on a cancellation: waited for, the run stopping at its next item.
            done.append(await anyio.to_thread.run_sync(run, limiter=limiter))
        except Stopped:
            pass  # the caller's cancellation is raised as the group ends
        except Exception as exc:  # raised as itself below, not in an exception group
            failed.append(exc)
        finally:
            group.cancel_scope.cancel()
    if failed:
        raise failed[0]
    if not done:
        await anyio.lowlevel.checkpoint()
        raise RuntimeError("an inline run stopped with its caller not cancelled")
    return done[0]


def on_loop(callback: Callable[..., object] | None) -> Callable[..., None] | None:
    """``callback`` as a run in a worker thread may call it: put on the event loop running
    here, in the order of the calls (None stays None)."""
    if callback is None:
        return None
    soon = call_soon_in_loop()

    def told(*args: Any) -> None:
        soon(functools.partial(callback, *args))

    return told


async def checkpoint() -> None:
    """Let other tasks run (nothing to do inline: there are none)."""
    if not _INLINE.get():
        await anyio.lowlevel.checkpoint()


def running_event_loop() -> str | None:
    """The event loop library running in the calling thread ("asyncio", "trio"), or None."""
    try:
        asyncio.get_running_loop()
        return "asyncio"
    except RuntimeError:
        pass
    trio = sys.modules.get("trio")  # not imported: no trio loop can be running
    if trio is not None:
        try:
            trio.lowlevel.current_trio_token()
            return "trio"
        except RuntimeError:
            pass
    return None


def call_soon_in_loop() -> Callable[[Callable[[], object]], object]:
    """A function that schedules a callback on the running event loop, from any thread,
    without waiting for it (asyncio's ``call_soon_threadsafe``, trio's ``run_sync_soon``).

    Raises
    ------
    RuntimeError
        No asyncio or trio event loop runs in this thread.
    """
    if running_event_loop() == "trio":
        import trio

        return trio.lowlevel.current_trio_token().run_sync_soon
    return asyncio.get_running_loop().call_soon_threadsafe


def refuse_running_loop(caller: str, instead: str) -> None:
    """Refuse a blocking entry point called from a thread that runs an event loop.

    Called first by every ``*_sync`` function (and by any blocking function that
    would start an event loop), so the answer does not depend on the arguments:
    inside a loop (a Jupyter cell, an async service) the function would block
    every other task, or fail in anyio when it starts its own loop.

    Raises
    ------
    EventLoopError
        An asyncio or trio event loop runs in this thread; the message names the
        coroutine function ``instead`` to await.
    """
    library = running_event_loop()
    if library is not None:
        raise EventLoopError(
            f"{caller}() cannot run inside a running event loop ({library}; Jupyter runs "
            f"one): use `await {instead}(...)` instead"
        )


def sync_twin(
    function: Callable[_P, Coroutine[Any, Any, T]],
    *,
    inline_when: Callable[[inspect.BoundArguments], bool] | None = None,
) -> Callable[_P, T]:
    """The ``<name>_sync`` twin of an async entry point: the same arguments, the one rule.

    The twin refuses a thread that runs an event loop. It runs ``function`` inline (no
    loop, no worker thread: see the module) when ``inline_when`` says its arguments allow
    it, else on a new event loop. Its signature is ``function``'s (for type checkers and
    ``help()``), so the argument list is written once.
    """
    name = function.__name__
    signature = inspect.signature(function)

    def twin(*args: _P.args, **kwargs: _P.kwargs) -> T:
        refuse_running_loop(f"{name}_sync", name)
        if inline_when is not None:
            try:
                bound = signature.bind(*args, **kwargs)
            except TypeError:
                bound = None  # the call itself raises the usual TypeError below
            if bound is not None and inline_when(bound):
                return run_inline(function, *args, **kwargs)
        return anyio.run(lambda: function(*args, **kwargs))

    twin.__name__ = twin.__qualname__ = f"{name}_sync"
    twin.__module__ = function.__module__
    twin.__doc__ = (
        f":func:`{name}` for scripts (not from inside an event loop); the same arguments.\n\n"
        "    Raises\n    ------\n    EventLoopError\n"
        f"        Called from a thread that runs an event loop: ``await {name}(...)`` there.\n"
    )
    # An async function's return annotation is already the awaited type.
    twin.__signature__ = signature  # type: ignore[attr-defined]
    return twin
