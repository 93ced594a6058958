"""Running work over many files: bounded concurrency, paths expanded and named once."""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import AsyncIterable, AsyncIterator, Callable, Mapping, Sequence
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio

from ..checks import positive_int
from ..errors import (
    InvalidArgumentError,
    PyBloomError,
    SourceError,
    SourceNotFoundError,
)
from ..io.address import parse_address
from ..io.base import FileInfo, SourceStats
from ..io.listing import is_listed, iter_parquet_files, walk_order
from ..io.store import StoreOptions
from ..read.fetch import ReaderConfig
from ..read.reader import BloomReader

#: With ``on_result``, how many items past the oldest undelivered one may be started, per
#: worker: a slow item holds back at most this many finished results, not the rest of the run.
AHEAD_PER_WORKER = 4


# Long because: the docstring is 24 lines; the code (taking, delivering in order, the
# workers) shares its state through closures, which one function keeps in one place.
async def for_each(
    items: Sequence[Any] | AsyncIterable[Any],
    work: Callable[[Any], Any],
    limit: int,
    progress: Callable[[int, int], None] | None = None,
    on_result: Callable[[Any], None] | None = None,
) -> list[Any]:
    """Run ``await work(item)`` for every item, ``limit`` at a time; results in item order.

    ``limit`` workers take the items in turn from one iterator, so the tasks alive at
    once do not grow with the number of items (a task per item, waiting on a limiter,
    cost about 6 KiB each: 60 MiB for 10,000 files). The first exception (a
    PyBloomError in strict mode, or one nobody expected) cancels the rest and is
    raised as it is, never wrapped in an exception group.

    ``items`` may be an async iterable (a :class:`FileStream`): it is read as the
    workers need items, so work starts while it still lists, and ``progress`` is told
    the items taken so far as the total. An error it raises ends the run like one from
    ``work``; it is closed at the end.

    With ``on_result``, each result is handed to it in item order as soon as it and
    every earlier one are done, and the returned list is empty: a result is held only
    until it is delivered, and no item starts more than ``AHEAD_PER_WORKER * limit``
    items past the oldest one not yet delivered. An exception from ``on_result``
    cancels the rest and is raised as it is.
    """
    keep = on_result is None
    results: list[Any] = []
    failure: list[Exception] = []
    done = 0
    taken = 0
    sized = isinstance(items, Sequence)
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

    async def worker(scope: anyio.CancelScope) -> None:
        nonlocal done
        while True:
            try:
                got = await take()
                if got is None:
                    return
                i, item = got
                while not keep and i >= delivered + window:
                    await moved.wait()
                if keep:
                    results[i] = await work(item)
                else:
                    deliver(i, await work(item))
            except PyBloomError as exc:
                failure.append(exc)
                scope.cancel()
                return
            except Exception as exc:  # unexpected, or from on_result: raised as it is
                failure.append(exc)
                scope.cancel()
                return
            done += 1
            if progress is not None:
                progress(done, len(items) if isinstance(items, Sequence) else taken)

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
    return results


_END = object()


class FileStream:
    """The files of some paths, listed as they are read (see :func:`stream_paths`)."""

    def __init__(self, files: AsyncIterator[str | FileInfo]) -> None:
        self._files = files

    def __aiter__(self) -> AsyncIterator[str | FileInfo]:
        return self._files

    async def aclose(self) -> None:
        """Stop listing (a listing's worker threads are let go)."""
        closing = getattr(self._files, "aclose", None)
        if closing is not None:
            await closing()


def stream_paths(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo] | FileStream,
    reader: BloomReader,
    *,
    unreadable: Callable[[SourceError], None] | None = None,
) -> FileStream:
    """:func:`expand_paths`, file by file as the listings go; a FileStream is returned as is.

    The same files in the same order, each once, with the spelling it was first
    given; nothing is held per file listed, so a run over a large directory or
    prefix starts reading while it is still listed and its memory does not grow
    with the listing (see :func:`iter_parquet_files`). Listing errors come as the
    stream reaches the location; with ``unreadable``, each is handed to it then
    (and may be raised from it) instead.
    """
    if isinstance(paths, FileStream):
        return paths
    if isinstance(paths, (str, os.PathLike, FileInfo)):
        paths = [paths]
    return FileStream(_stream(list(paths), reader, unreadable))


async def _stream(
    paths: list[str | os.PathLike[str] | FileInfo],
    reader: BloomReader,
    unreadable: Callable[[SourceError], None] | None,
) -> AsyncIterator[str | FileInfo]:
    seen = _Seen()
    for p in paths:
        if isinstance(p, FileInfo):
            if seen.named(p.path):
                yield p
            continue
        text = os.fspath(p)
        local = "://" not in text
        if (
            text.lower().endswith(".parquet")
            and not text.endswith("/")
            and not (local and unreadable is not None)  # else: checked, as below
        ) or (local and os.path.isfile(text)):
            if seen.named(text):
                yield text
            continue
        root = seen.root(text)
        found = False
        try:
            # Local files are opened by path (their source reads its own identity):
            # the listing keeps no ETag or time per file.
            listing = iter_parquet_files(
                text, options=reader.options, stats=reader.stats, limiter=None, identities=False
            )
            async with aclosing(listing):  # a stream closed early lets its listing go
                async for file in listing:
                    found = True
                    if seen.listed(file.path, root):
                        yield file
        except SourceError as exc:
            if unreadable is None:
                raise
            exc.with_context(path=text)
            unreadable(exc)
            continue
        if not found and unreadable is not None:
            unreadable(
                SourceNotFoundError("no Parquet files under this directory or prefix", path=text)
            )
        seen.done(root)


class _Root:
    """A directory or prefix being listed: which files its listing gives."""

    def __init__(self, text: str) -> None:
        loc = parse_address(text) if "://" in text else None
        if loc is None or loc.kind == "file":
            self.under = os.path.join(os.path.realpath(text if loc is None else loc.path), "")
            self.sep = os.sep
        else:
            scheme, netloc = urllib.parse.urlsplit(loc.display)[:2]
            prefix = loc.key.rstrip("/")
            self.under = f"{scheme}://{netloc}/" + (prefix + "/" if prefix else "")
            self.sep = "/"

    def parts(self, key: str) -> list[str] | None:
        """The key's segments below the root, if its listing gives the file at ``key``."""
        if not key.startswith(self.under):
            return None
        parts = key[len(self.under) :].split(self.sep)
        return parts if is_listed(parts) else None


class _Seen:
    """Which files have come, without a set of every file listed.

    Files named directly (and files reached through a symbolic link to outside the
    listing) are held; a file listed from a directory or prefix is known by where it
    lies: a listing done before gives every file below its root. Within one local
    listing a file and a link to it are both listed: whichever comes first in the
    walk is kept (``ahead`` holds the targets of links met before them).
    """

    def __init__(self) -> None:
        self.keys: set[str] = set()
        self.roots: list[_Root] = []
        self.real_dirs: dict[str, str] = {}
        self.ahead: set[str] = set()

    def key(self, text: str) -> tuple[str, bool]:
        return _file_key(text, self.real_dirs)

    def before(self, key: str) -> bool:
        return key in self.keys or any(r.parts(key) is not None for r in self.roots)

    def named(self, text: str) -> bool:
        """Whether a file named directly comes now (its first time)."""
        key, _ = self.key(text)
        if self.before(key):
            return False
        self.keys.add(key)
        return True

    def root(self, text: str) -> _Root:
        self.ahead.clear()
        return _Root(text)

    def listed(self, text: str, root: _Root) -> bool:
        """Whether a file given by the listing of ``root`` comes now (its first time)."""
        key, linked = self.key(text)
        if self.before(key) or key in self.ahead:
            return False
        here = root.parts(key)
        if here is None:  # the object the root names, or a link to outside the root
            self.keys.add(key)
            return True
        if linked:
            # A link to a file of this same listing: the one met first in the walk comes.
            head, name = os.path.split(text)
            at = self.real_dirs[head] + os.sep + name
            spot = at[len(root.under) :].split(os.sep) if at.startswith(root.under) else [name]
            if walk_order(here) < walk_order(spot):
                return False
            self.ahead.add(key)
        return True

    def done(self, root: _Root) -> None:
        self.roots.append(root)


async def expand_paths(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo],
    reader: BloomReader,
    *,
    unreadable: list[SourceError] | None = None,
) -> list[str | FileInfo]:
    """Files named directly stay as they are; directories and prefixes become their files.

    Each file comes once, with the spelling it was first given: named twice, or
    directly and through its directory, it is not read twice. Local paths are
    compared by their real path (``d/a.parquet``, ``./d/a.parquet``,
    ``d//a.parquet``, ``file://`` URLs and a symbolic link to it are one file);
    object-store URLs as written. :func:`stream_paths`
    gives the same files one by one, as they are listed.

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
    record = unreadable.append if unreadable is not None else None
    stream = stream_paths(paths, reader, unreadable=record)
    try:
        return [f async for f in stream]
    finally:
        await stream.aclose()


_File = TypeVar("_File", bound="str | FileInfo")


def once_each(files: Sequence[_File]) -> list[_File]:
    """Each file once, where it first comes: local paths compared by their real path."""
    seen: set[str] = set()
    real_dirs: dict[str, str] = {}
    out = []
    for entry in files:
        key = _file_key(entry.path if isinstance(entry, FileInfo) else entry, real_dirs)[0]
        if key not in seen:
            seen.add(key)
            out.append(entry)
    return out


def _file_key(text: str, real_dirs: dict[str, str]) -> tuple[str, bool]:
    """What one file is known by: a local path or ``file://`` URL by its real path, a URL as
    written; and whether the local path is a symbolic link."""
    if "://" in text:
        try:
            loc = parse_address(text)
        except InvalidArgumentError:
            return text, False  # reading it says what is wrong
        if loc.kind != "file":
            return text, False
        text = loc.path
    return _real_path(text, real_dirs)


def _real_path(path: str, real_dirs: dict[str, str]) -> tuple[str, bool]:
    """``os.path.realpath(path)``, resolving each directory once (a listing shares them).

    Also whether ``path`` itself is a symbolic link.
    """
    head, name = os.path.split(path)
    real = real_dirs.get(head)
    if real is None:
        real = real_dirs[head] = os.path.realpath(head or os.curdir)
    # A listing's paths are mostly real already: then the path itself is the key (no
    # second string per file), unless it spells its separator twice ("d//a.parquet").
    same = real == head and len(path) == len(head) + 1 + len(name)
    full = path if same else os.path.join(real, name)
    if os.path.islink(full):
        return os.path.realpath(full), True
    return full, False


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
