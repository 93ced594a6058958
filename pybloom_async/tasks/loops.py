"""Event loops, worker threads and the inline mode: how async code runs, from sync code too.

Everything async in the package runs on anyio (asyncio or trio, one code path). Three
things complete it:

* **Inline mode.** A coroutine whose every wait is blocking I/O never suspends, so it can
  be run to its end in the calling thread without an event loop (:func:`run_inline`). The
  per-file work on a local file runs this way inside one worker thread (one hand-off per
  file, not one per read), and a ``*_sync`` call on local paths runs it in the caller's
  thread with no loop at all. Code that may run inline hands blocking work to
  :func:`to_worker`, which calls it directly when inline (the thread is already a worker)
  and in a worker thread otherwise; :mod:`.workers` runs its items one after another
  (spread over a few threads, each inline, once they prove slow).
* **The process's worker threads** (:func:`in_thread`): where every blocking call a task
  hands off runs, instead of anyio's threads, which each event loop starts afresh.
* **Sync twins.** ``X_sync`` is ``X`` run by :func:`sync_twin`: inline when the arguments
  allow (the twin's ``inline_when``), else on a new event loop; never inside a running one.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import functools
import importlib
import inspect
import os
import queue
import sys
import threading
from collections.abc import AsyncGenerator, Callable, Coroutine, Iterator
from contextvars import ContextVar
from typing import Any, Generic, ParamSpec, TypeVar, cast

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
    return await in_thread(function, *args, limiter=limiter)


def _inline_stopped_by(
    stop: threading.Event,
    function: Callable[_P, Coroutine[Any, Any, T]],
    *args: _P.args,
    **kwargs: _P.kwargs,
) -> T:
    """:func:`run_inline`, its :func:`stop_point` s raising once ``stop`` is set."""
    token = _STOP.set(stop)
    try:
        return run_inline(function, *args, **kwargs)
    finally:
        _STOP.reset(token)


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
        return _inline_stopped_by(stop, function, *args, **kwargs)

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
            done.append(await in_thread(run, limiter=limiter))
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


class _Failed:
    """What a stream run in a worker thread raised, handed to its consumer."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


_STREAM_END = object()


# Long because: the consumer's loop and its closing (stop the worker, wake it, wait for
# it) share the channel's state with the worker; apart they would pass it back and forth.
async def inline_stream_in_worker(
    function: Callable[_P, AsyncGenerator[T, None]],
    ahead: int,
    *args: _P.args,
    **kwargs: _P.kwargs,
) -> AsyncGenerator[T, None]:
    """The items of the async generator ``function(*args, **kwargs)`` run inline in a worker
    thread (as :func:`inline_in_worker` runs a coroutine), handed to the event loop here
    in order: one hand-off for the whole stream, not one per step of each item.

    At most ``ahead`` items wait, made and not yet taken: the worker waits for the
    consumer beyond that. What the generator raises is raised here, after the items it
    made before. A consumer that stops early (a ``break``, a cancellation, an error of
    its own) stops the generator at its next item or :func:`stop_point` and waits for
    its thread, so no thread works on for it. The thread takes no token of a limiter:
    its life is the consumer's, and a token held while a consumer waits on another call
    that needs one would stop both."""
    stop = threading.Event()
    slots = threading.Semaphore(ahead)
    soon = call_soon_in_loop()
    waiting: collections.deque[object] = collections.deque()
    arrived = anyio.Event()

    def arrive(item: object) -> None:
        waiting.append(item)
        arrived.set()

    def hand(item: object) -> None:
        with contextlib.suppress(RuntimeError):  # its loop has ended: no one takes it
            soon(functools.partial(arrive, item))

    async def drain() -> None:
        async with contextlib.aclosing(function(*args, **kwargs)) as items:
            async for item in items:
                slots.acquire()
                stop_point()
                hand(item)

    def run() -> None:
        try:
            _inline_stopped_by(stop, drain)
            hand(_STREAM_END)
        except Stopped:
            pass  # the consumer stopped: it takes nothing more
        except BaseException as exc:  # the consumer's to raise
            hand(_Failed(exc))

    call: _Call[None] = _Call(run, ())
    _threads.submit(call)
    try:
        while True:
            while not waiting:
                await arrived.wait()
                arrived = anyio.Event()
            item = waiting.popleft()
            if item is _STREAM_END:
                return
            if isinstance(item, _Failed):
                raise item.error
            slots.release()
            yield cast(T, item)
    finally:
        stop.set()
        for _ in range(ahead + 1):
            slots.release()  # a worker waiting for room wakes, and stops
        with anyio.CancelScope(shield=True):
            await call.done.wait()


class LoopCallback:
    """A callback as a run in a worker thread calls it (:func:`on_loop`): each call put on
    the event loop running where this was made, in the order of the calls.

    What the callback raises on the loop is not lost there (asyncio would log it, trio
    would end the loop with it): it is kept, and raised in the run at its next call, so
    the run stops as it would have had the callback raised in place; a failure of the
    last call is raised by :meth:`raise_failure`, once every call has run
    (:func:`callbacks_run`).
    """

    __slots__ = ("_callback", "_failed", "_raised", "_soon")

    def __init__(self, callback: Callable[..., object]) -> None:
        self._callback = callback
        self._soon = call_soon_in_loop()
        #: What a call raised on the loop; no later call runs once it is set.
        self._failed: BaseException | None = None
        self._raised = False

    def __call__(self, *args: Any) -> None:
        self.raise_failure()
        self._soon(functools.partial(self._run, args))

    def _run(self, args: tuple[Any, ...]) -> None:
        if self._failed is not None:
            return  # calls queued before the run saw the failure: none runs after it
        try:
            self._callback(*args)
        except BaseException as exc:  # raised in the run, not in the loop's machinery
            self._failed = exc

    def raise_failure(self) -> None:
        """Raise what a call raised on the loop, once (nothing when none did)."""
        if self._failed is not None and not self._raised:
            self._raised = True
            raise self._failed


def on_loop(callback: Callable[..., object] | None) -> LoopCallback | None:
    """``callback`` as a run in a worker thread may call it (:class:`LoopCallback`): put on
    the event loop running here, in the order of the calls (None stays None)."""
    return None if callback is None else LoopCallback(callback)


async def callbacks_run() -> None:
    """Wait until every callback put on the running event loop from another thread before
    this call (:func:`on_loop`, :func:`call_soon_in_loop`) has run: the loops run them in
    the order they were put."""
    import anyio

    done = anyio.Event()
    call_soon_in_loop()(done.set)
    await done.wait()


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


# ---- the process's worker threads ------------------------------------------------------
#
# anyio's own worker threads belong to one event loop: each ``anyio.run`` (each ``*_sync``
# call that needs a loop) starts its threads afresh, and they end with it. A thread's start
# can cost the loop more than the call it makes: a prune of 60 files on an object store,
# one request each, on a loaded machine, spent about a third of its loop's time starting
# threads (bench/RESULTS.md).
# These threads are the process's instead: a call takes an idle one, or starts one when
# none is idle, and a thread left idle for IDLE_SECONDS ends. They are daemon threads, so
# an idle one never holds the interpreter's exit; every call is waited for by its task.
# A fork's child starts with none.

#: Seconds a worker thread waits for a call before it ends.
IDLE_SECONDS = 10.0


class _Call(Generic[T]):
    __slots__ = ("args", "context", "done", "error", "function", "notify", "result")

    def __init__(self, function: Callable[..., T], args: tuple[Any, ...]) -> None:
        self.function = function
        self.args = args
        self.context = contextvars.copy_context()
        self.notify = call_soon_in_loop()
        self.done = anyio.Event()
        self.result: T | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self.context.run(self.function, *self.args)
        except BaseException as exc:  # raised in the waiting task
            self.error = exc


class _Threads:
    """Threads taking calls from one queue; ``idle`` counts those waiting for a call that
    no call queued has been promised to yet."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: queue.SimpleQueue[_Call[Any]] = queue.SimpleQueue()
        self.idle = 0

    def submit(self, call: _Call[Any]) -> None:
        with self.lock:
            start = self.idle == 0
            if not start:
                self.idle -= 1  # an idle thread takes it
        self.calls.put(call)
        if start:
            threading.Thread(target=self._serve, name="pybloom-worker", daemon=True).start()

    def _serve(self) -> None:
        calls = self.calls
        while True:
            try:
                call = calls.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self.lock:
                    # Ends only while more threads wait than calls were promised to: a
                    # call queued meanwhile otherwise counts on this thread.
                    if self.idle > 0:
                        self.idle -= 1
                        return
                continue
            call.run()
            with self.lock:
                self.idle += 1  # before the task hears: its next call finds this thread
            with contextlib.suppress(RuntimeError):  # its loop has ended: no one waits
                call.notify(call.done.set)
            del call  # its result is the task's now


_threads = _Threads()


def _forget_threads() -> None:
    """In a fork's child: the parent's threads (and their calls) are not there."""
    global _threads
    _threads = _Threads()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_threads)


async def in_thread(
    function: Callable[..., T], *args: Any, limiter: anyio.CapacityLimiter | None = None
) -> T:
    """``function(*args)`` in one of the process's worker threads: its result or its
    exception, as ``anyio.to_thread.run_sync`` gives them. The call runs in a copy of the
    caller's context, once a token of ``limiter`` (default: the loop's default thread
    limiter) is held; a caller cancelled meanwhile waits for it to end, then the
    cancellation is raised."""
    async with limiter or anyio.to_thread.current_default_thread_limiter():
        call: _Call[T] = _Call(function, args)
        _threads.submit(call)
        with anyio.CancelScope(shield=True):
            await call.done.wait()
    await anyio.lowlevel.checkpoint_if_cancelled()  # a cancellation that came meanwhile
    if call.error is not None:
        raise call.error
    return call.result  # type: ignore[return-value]  # set when no error was


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
