"""The blocking path: local files read without an event loop, and the *_sync entry points' loop
checks.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

import anyio

from ..errors import EventLoopError, InvalidArgumentError
from ..io.base import ByteSource, FileInfo, SourceStats
from ..io.local import BlockingLocalFileSource, Descriptors, LocalFileSource
from ..io.store import StoreOptions
from .fetch import DEFAULT_READER_CONFIG, Footer, ReaderConfig
from .reader import BloomReader, Location, read_footer

__all__ = [
    "read_footer_sync",
    "sync_twin",
]
T = TypeVar("T")
_P = ParamSpec("_P")


# ---- blocking reads of local files, for the *_sync entry points -----------------------


@dataclass
class _OpenFiles:
    """What a blocking reader keeps between calls: descriptors, and the paths it resolved."""

    kept: Descriptors = field(default_factory=dict)
    local: dict[str | FileInfo, str] = field(default_factory=dict)


class BlockingLocalReader(BloomReader):
    """A :class:`BloomReader` for local files whose reads block the calling thread.

    Every coroutine of the reader completes without suspending; run them with
    :func:`run_blocking`, outside any event loop. Only local paths (and
    ``file://`` URLs) can be opened. A file stays open from its first read until
    :meth:`close` (or the end of a ``with`` block), so the footer and the filters
    of one call come from the same version of the file, and it is opened once.
    """

    # BloomReader's constructor serves unchanged: the files this reader keeps open are
    # set up on first use.
    _files: _OpenFiles | None = None

    @property
    def _open_files(self) -> _OpenFiles:
        if self._files is None:
            self._files = _OpenFiles()
        return self._files

    def open(self, location: Location) -> ByteSource:
        """A blocking source for a local path, counted in :attr:`stats`.

        Raises
        ------
        InvalidArgumentError
            The location is not a local file.
        """
        files = self._open_files
        key = location if isinstance(location, (str, FileInfo)) else os.fspath(location)
        path = files.local.get(key)
        if path is None:
            source = super().open(location)  # the checks of any reader's open
            if not isinstance(source, LocalFileSource):
                raise InvalidArgumentError(
                    "the blocking reader reads local files only", path=source.path
                )
            path = files.local[key] = source.path
        return BlockingLocalFileSource(path, stats=self.stats, kept=files.kept)

    def close(self) -> None:
        """Close the files kept open. The reader may be used again (it reopens them)."""
        # Emptied in place: a source made before still looks here, and must reopen.
        kept = self._open_files.kept
        descriptors = list(kept.values())
        kept.clear()
        for fd, _ in descriptors:
            os.close(fd)

    def __enter__(self) -> BlockingLocalReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


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


def run_in_new_loop(main: Callable[[], Awaitable[T]], *, caller: str, instead: str) -> T:
    """Run ``main()`` on a new event loop, for the ``*_sync`` functions.

    Raises
    ------
    EventLoopError
        As :func:`refuse_running_loop`; nothing is run.
    """
    refuse_running_loop(caller, instead)
    return anyio.run(main)


def sync_twin(function: Callable[_P, Awaitable[T]]) -> Callable[_P, T]:
    """The ``<name>_sync`` twin of an async entry point: the same arguments, its own loop.

    The twin runs ``function`` on a new event loop (:func:`run_in_new_loop`), and
    refuses a thread that runs one. Its signature is ``function``'s (for type
    checkers and ``help()``), so the argument list is written once.
    """
    name = function.__name__

    def twin(*args: _P.args, **kwargs: _P.kwargs) -> T:
        return run_in_new_loop(
            lambda: function(*args, **kwargs), caller=f"{name}_sync", instead=name
        )

    twin.__name__ = twin.__qualname__ = f"{name}_sync"
    twin.__module__ = function.__module__
    twin.__doc__ = (
        f":func:`{name}` for scripts (not from inside an event loop); the same arguments.\n\n"
        "    Raises\n    ------\n    EventLoopError\n"
        f"        Called from a thread that runs an event loop: ``await {name}(...)`` there.\n"
    )
    # An async function's return annotation is already the awaited type.
    twin.__signature__ = inspect.signature(function)  # type: ignore[attr-defined]
    return twin


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


def blocking_local_paths(
    locations: str | os.PathLike[str] | FileInfo | Sequence[str | os.PathLike[str] | FileInfo],
    max_files: int,
) -> list[str] | None:
    """The paths, when they are at most ``max_files`` local files; else None.

    Decides which calls may take the blocking path: local paths that name a
    file (not a directory to expand) the way the multi-file functions read
    them: ending in ``.parquet``, or an existing regular file. URLs, listing
    entries and directories go the asynchronous way.
    """
    if isinstance(locations, (str, os.PathLike, FileInfo)):
        locations = [locations]
    if len(locations) > max_files:
        return None
    out = []
    for location in locations:
        if isinstance(location, FileInfo):
            return None
        try:
            text = os.fspath(location)
        except TypeError:
            return None
        if not isinstance(text, str) or "://" in text:
            return None
        named_parquet = text.lower().endswith(".parquet") and not text.endswith("/")
        if not named_parquet and not os.path.isfile(text):
            return None
        out.append(text)
    return out


def read_footer_sync(
    location: Location,
    *,
    config: ReaderConfig | None = None,
    options: StoreOptions | Mapping[str, Any] | None = None,
    stats: SourceStats | None = None,
    reader: BloomReader | None = None,
) -> Footer:
    """:func:`read_footer` for scripts (not from inside an event loop); the same arguments.

    A local file is read in the calling thread without starting an event loop.

    Raises
    ------
    EventLoopError
        Called from a thread that runs an event loop: ``await read_footer(...)`` there.
    ParquetFormatError, EncryptedFileError, SourceError, SourceNotFoundError
        As :func:`read_footer`.
    """
    refuse_running_loop("read_footer_sync", "read_footer")
    if reader is None and blocking_local_paths(location, 1) is not None:
        with BlockingLocalReader(
            config=config or DEFAULT_READER_CONFIG, options=options, stats=stats, max_files=0
        ) as blocking:
            return run_blocking(blocking.footer(location))
    return anyio.run(
        lambda: read_footer(location, config=config, options=options, stats=stats, reader=reader)
    )
