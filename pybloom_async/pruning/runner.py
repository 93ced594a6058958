"""Running work over many files: bounded concurrency, paths expanded and named once."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio

from ..checks import positive_int
from ..errors import (
    PyBloomError,
    SourceError,
    SourceNotFoundError,
)
from ..io.base import FileInfo, SourceStats
from ..io.listing import list_parquet_files
from ..io.store import StoreOptions
from ..read.fetch import ReaderConfig
from ..read.reader import BloomReader

#: With ``on_result``, how many items past the oldest undelivered one may be started, per
#: worker: a slow item holds back at most this many finished results, not the rest of the run.
AHEAD_PER_WORKER = 4


async def for_each(
    items: Sequence[Any],
    work: Callable[[Any], Any],
    limit: int,
    progress: Callable[[int, int], None] | None = None,
    on_result: Callable[[Any], None] | None = None,
) -> list[Any]:
    """Run ``await work(item)`` for every item, ``limit`` at a time; results in item order.

    ``limit`` workers take the items in turn from one iterator, so the tasks alive at
    once do not grow with the number of items (a task per item, waiting on a limiter,
    cost about 6 KiB each: 60 MiB for 10,000 files). The first PyBloomError (strict
    mode) cancels the rest and is raised as it is, not wrapped in an exception group.

    With ``on_result``, each result is handed to it in item order as soon as it and
    every earlier one are done, and the returned list is empty: a result is held only
    until it is delivered, and no item starts more than ``AHEAD_PER_WORKER * limit``
    items past the oldest one not yet delivered. An exception from ``on_result``
    cancels the rest and is raised as it is.
    """
    keep = on_result is None
    results: list[Any] = [None] * len(items) if keep else []
    failure: list[Exception] = []
    done = 0
    feed = iter(enumerate(items))  # shared: next() runs on the event loop, between awaits
    pending: dict[int, Any] = {}
    delivered = 0
    window = AHEAD_PER_WORKER * limit
    moved = anyio.Event()

    def deliver(i: int, result: Any) -> None:
        nonlocal delivered, moved
        assert on_result is not None
        pending[i] = result
        while delivered in pending:
            on_result(pending.pop(delivered))
            delivered += 1
        moved.set()
        moved = anyio.Event()

    async def worker(scope: anyio.CancelScope) -> None:
        nonlocal done
        for i, item in feed:
            while not keep and i >= delivered + window:
                await moved.wait()
            try:
                if keep:
                    results[i] = await work(item)
                else:
                    deliver(i, await work(item))
            except PyBloomError as exc:
                failure.append(exc)
                scope.cancel()
                return
            except Exception as exc:  # from on_result: the caller's own error
                if keep:
                    raise
                failure.append(exc)
                scope.cancel()
                return
            done += 1
            if progress is not None:
                progress(done, len(items))

    async with anyio.create_task_group() as tg:
        for _ in range(min(limit, len(items))):
            tg.start_soon(worker, tg.cancel_scope)
    if failure:
        raise failure[0]
    return results


async def expand_paths(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo],
    reader: BloomReader,
    *,
    unreadable: list[SourceError] | None = None,
) -> list[str | FileInfo]:
    """Files named directly stay as they are; directories and prefixes become their files.

    Each file comes once, with the spelling it was first given: named twice, or
    directly and through its directory, it is not read twice. Local paths are
    compared by their real path (``d/a.parquet``, ``./d/a.parquet`` and a
    symbolic link to it are one file); URLs as written.

    Parameters
    ----------
    unreadable:
        If given, a location that cannot be listed or names no Parquet file (a
        path that does not exist, an empty prefix, a directory or prefix without
        ``*.parquet`` files, a listing refused) is recorded here, as an error
        naming it, instead of raising or adding nothing. Local files named
        directly are checked here too; object-store files named directly are
        not (reading them reports a missing one).

    Raises
    ------
    SourceNotFoundError
        Without ``unreadable``: a path does not exist, or nothing lies under a prefix.
    SourceError
        Without ``unreadable``: listing failed.
    InvalidArgumentError
        A location is not a valid path or URL.
    """
    if isinstance(paths, (str, os.PathLike, FileInfo)):
        paths = [paths]
    out: list[str | FileInfo] = []
    for p in paths:
        if isinstance(p, FileInfo):
            out.append(p)
            continue
        text = os.fspath(p)
        local = "://" not in text
        if (
            text.lower().endswith(".parquet")
            and not text.endswith("/")
            and not (local and unreadable is not None)  # else: checked, as below
        ):
            out.append(text)
            continue
        if local and os.path.isfile(text):
            out.append(text)
            continue
        try:
            # Local files are opened by path (their source reads its own identity):
            # the listing keeps no ETag or time per file.
            found = await list_parquet_files(
                text, options=reader.options, stats=reader.stats, limiter=None, identities=False
            )
        except SourceError as exc:
            if unreadable is None:
                raise
            exc.with_context(path=text)
            unreadable.append(exc)
            continue
        if not found and unreadable is not None:
            unreadable.append(
                SourceNotFoundError("no Parquet files under this directory or prefix", path=text)
            )
        out.extend(found)
    return once_each(out)


_File = TypeVar("_File", bound="str | FileInfo")


def once_each(files: Sequence[_File]) -> list[_File]:
    """Each file once, where it first comes: local paths compared by their real path."""
    seen: set[str] = set()
    real_dirs: dict[str, str] = {}
    out = []
    for entry in files:
        text = entry.path if isinstance(entry, FileInfo) else entry
        key = text if "://" in text else _real_path(text, real_dirs)
        if key not in seen:
            seen.add(key)
            out.append(entry)
    return out


def _real_path(path: str, real_dirs: dict[str, str]) -> str:
    """``os.path.realpath(path)``, resolving each directory once (a listing shares them)."""
    head, name = os.path.split(path)
    real = real_dirs.get(head)
    if real is None:
        real = real_dirs[head] = os.path.realpath(head or os.curdir)
    # A listing's paths are mostly real already: then the path itself is the key (no
    # second string per file).
    full = path if real == head else os.path.join(real, name)
    return os.path.realpath(full) if os.path.islink(full) else full


def files_at_once(concurrency: int | None, config: ReaderConfig) -> int:
    """The number of files to read at once: ``concurrency``, or the config's.

    Raises
    ------
    InvalidArgumentError
        ``concurrency`` is not a positive int.
    """
    if concurrency is None:
        return config.concurrency  # checked by ReaderConfig
    return positive_int("concurrency", concurrency)


@dataclass
class Run:
    """One run over many files: its reader, whether the run made it, files read at once."""

    reader: BloomReader
    owned: bool
    limit: int

    def done(self, location: str | FileInfo) -> None:
        """A file is decided: the run's own reader drops its footer and filters.

        Kept to the end, every footer and filter of the run would stay in memory
        (about 5 KiB per small file); a caller's reader keeps its cache as it is.
        """
        if self.owned:
            self.reader.forget(location)


@asynccontextmanager
async def open_run(
    *,
    reader: BloomReader | None = None,
    config: ReaderConfig | None = None,
    options: StoreOptions | Mapping[str, Any] | None = None,
    stats: SourceStats | None = None,
    concurrency: int | None = None,
    default_concurrency: int | None = None,
    max_files: int = 1 << 20,
) -> AsyncIterator[Run]:
    """The run's reader (``reader``, or one made here and cleared at the end) and its limit.

    ``concurrency`` is checked before anything is listed or read; without it the
    run reads ``default_concurrency`` files at once, or the reader config's number.

    Raises
    ------
    InvalidArgumentError
        ``concurrency`` is not a positive int, or a reader argument is invalid.
    """
    owned = reader is None
    rdr = reader or BloomReader(
        config=config or ReaderConfig(), options=options, stats=stats, max_files=max_files
    )
    wanted = default_concurrency if concurrency is None else concurrency
    limit = files_at_once(wanted, rdr.config)
    try:
        yield Run(rdr, owned, limit)
    finally:
        if owned:
            rdr.clear()
