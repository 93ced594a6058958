"""Paths to files: directories and prefixes expanded as they are listed, each file named once.

Local paths are compared by their real path (``d/a.parquet``, ``./d/a.parquet`` and a
symbolic link to it are one file); URLs as written.
"""

from __future__ import annotations

import inspect
import os
import urllib.parse
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import aclosing
from typing import Protocol, TypeVar

from ..checks import sources_list
from ..errors import InvalidArgumentError, SourceError, SourceNotFoundError
from ..tasks.loops import to_worker
from .address import parse_address
from .base import FileInfo, SourceStats, location_text
from .failures import gave_no_answer
from .listing import is_listed, iter_parquet_files, walk_order
from .partitions import FolderFilter
from .store import StoreOptions
from .table_folders import TableGuard


class StoreAccess(Protocol):
    """What listing needs of a reader: its store options and its request counters."""

    @property
    def options(self) -> StoreOptions | None: ...

    @property
    def stats(self) -> SourceStats: ...


class FileStream:
    """The files of some paths, listed as they are read (see :func:`stream_paths`).

    ``free``: its next file never waits on the work of the files taken before it (a listing,
    files already found), so a worker may take several before working any (see
    :func:`~pybloom_async.tasks.workers.for_each`'s batches); a stream fed by the files'
    own work (an index pass admitting files as others finish) is not free.
    """

    def __init__(self, files: AsyncIterator[str | FileInfo], free: bool = False) -> None:
        self._files = files
        self.free = free

    def __aiter__(self) -> AsyncIterator[str | FileInfo]:
        return self._files

    async def aclose(self) -> None:
        """Stop listing (a listing's worker threads are let go)."""
        closing = getattr(self._files, "aclose", None)
        if closing is not None:
            await closing()


def found_files(files: Sequence[str | FileInfo]) -> FileStream:
    """Files already found (a driver's listing, handed to a task): each as given, none
    listed or checked again. A file gone since is then that file's own error (an
    unreadable file, kept), not a listing's that would fail the others."""

    async def each() -> AsyncIterator[str | FileInfo]:
        for location in files:
            yield location

    return FileStream(each(), free=True)


def stream_paths(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo] | FileStream,
    reader: StoreAccess,
    *,
    unreadable: Callable[[SourceError], None] | None = None,
    folders: FolderFilter | None = None,
    table_files: bool = False,
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
    if isinstance(paths, FileInfo):
        paths = [paths]
    tables = None if table_files else TableGuard(reader.options, reader.stats)
    listed = _stream(sources_list("sources", paths), reader, unreadable, folders, tables)
    return FileStream(listed, free=True)


async def _stream(
    paths: list[str | os.PathLike[str] | FileInfo],
    reader: StoreAccess,
    unreadable: Callable[[SourceError], None] | None,
    folders: FolderFilter | None,
    tables: TableGuard | None,
) -> AsyncIterator[str | FileInfo]:
    seen = _Seen()
    for p in paths:
        if isinstance(p, FileInfo):  # listed, or a table's own file
            if seen.named(p.path):
                yield p
            continue
        text = location_text(p)
        local = "://" not in text
        if tables is not None:  # the folders above (the listing sees those below)
            try:
                if local:
                    tables.check(text)  # stat calls, once per folder (as isfile below)
                else:
                    await to_worker(tables.check, text)  # LISTs, once per folder
            except SourceError as exc:
                # A folder above could not be listed: a store that allows reads but not
                # lists shows no table, and reading the path says what else is wrong; one
                # that does not answer is not asked again (its error is the path's).
                if gave_no_answer(exc):
                    error = type(exc)(exc.message, path=text)  # the path's error, not the LIST's
                    if unreadable is not None:
                        unreadable(error)
                        continue
                    if "timed out" in exc.message:
                        # Asked again, it would time out again: the run fails within one
                        # request's time. (A refused connection fails fast: the path's own
                        # read then says what is wrong, as a kept file where it may.)
                        raise error from None
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
                text,
                options=reader.options,
                stats=reader.stats,
                limiter=None,
                identities=False,
                folders=folders,
                tables=tables,
            )
            async with aclosing(listing):  # a stream closed early lets its listing go
                async for file in listing:
                    found = True
                    if seen.listed(file.path, root, file.link):
                        yield file
        except SourceError as exc:
            if unreadable is None:
                raise
            exc.with_context(path=text)
            unreadable(exc)
            continue
        if not found and unreadable is not None and folders is None:
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

    def key(self, text: str, link: bool | None = None) -> tuple[str, bool]:
        return _file_key(text, self.real_dirs, link)

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

    def listed(self, text: str, root: _Root, link: bool | None = None) -> bool:
        """Whether a file given by the listing of ``root`` comes now (its first time);
        ``link``: whether the listing found it to be a symbolic link (None: not known)."""
        key, linked = self.key(text, link)
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
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo] | FileStream,
    reader: StoreAccess,
    *,
    unreadable: list[SourceError] | None = None,
    folders: FolderFilter | None = None,
    table_files: bool = False,
) -> list[str | FileInfo]:
    """Files named directly stay as they are; directories and prefixes become their files.

    Each file comes once, with the spelling it was first given: named twice, or
    directly and through its directory, it is not read twice. Local paths are
    compared by their real path (``d/a.parquet``, ``./d/a.parquet``,
    ``d//a.parquet``, ``file://`` URLs and a symbolic link to it are one file);
    object-store URLs as written. :func:`stream_paths`
    gives the same files one by one, as they are listed; a FileStream (of files already
    found, say: :func:`found_files`) is read as it comes.

    Parameters
    ----------
    unreadable:
        If given, a location that cannot be listed or names no Parquet file (a
        path that does not exist, an empty prefix, a directory or prefix without
        ``*.parquet`` files, a listing refused) is recorded here, as an error
        naming it, instead of raising or adding nothing. Local files named
        directly are checked here too; object-store files named directly are
        not (reading them reports a missing one).
    folders:
        ``key=value`` folders not to list (see
        :func:`pybloom_async.io.listing.list_parquet_files`); a directory or prefix
        whose files all lie below such folders names no file, which is no error.
    table_files:
        Read the files of Delta and Iceberg tables as plain files (to describe them as
        they are). By default a path in a table's folder, or a directory or prefix that
        holds one, is refused: only the table's log or manifests say which of its
        files are live (see :mod:`pybloom_async.io.table_folders`).

    Raises
    ------
    SourceNotFoundError
        Without ``unreadable``: a path does not exist, or nothing lies under a prefix.
    SourceError
        Without ``unreadable``: listing failed.
    InvalidArgumentError
        A location is not a valid path or URL; or it lies in a Delta or Iceberg table,
        or holds one (without ``table_files``).
    """
    record = unreadable.append if unreadable is not None else None
    stream = stream_paths(
        paths, reader, unreadable=record, folders=folders, table_files=table_files
    )
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
        key = _file_key(location_text(entry), real_dirs)[0]
        if key not in seen:
            seen.add(key)
            out.append(entry)
    return out


#: Links followed from one path before the resolution is left to ``os.path.realpath`` (the
#: kernel's own limit, ``MAXSYMLINKS``, is 40).
_MAX_LINKS = 40


def _file_key(text: str, real_dirs: dict[str, str], link: bool | None = None) -> tuple[str, bool]:
    """What one file is known by: a local path or ``file://`` URL by its real path, a URL as
    written; and whether the local path is a symbolic link (``link``: already known)."""
    if "://" in text:
        try:
            loc = parse_address(text)
        except InvalidArgumentError:
            return text, False  # reading it says what is wrong
        if loc.kind != "file":
            return text, False
        text = loc.path
    return _real_path(text, real_dirs, link)


def _real_dir(head: str, real_dirs: dict[str, str]) -> str:
    """``os.path.realpath(head)``, once per directory: its parent's (resolved so, once)
    joined with its name when ``head`` is no symbolic link, one ``lstat`` where
    ``realpath`` makes one per component (a listing's folders share their parents)."""
    real = real_dirs.get(head)
    if real is None:
        parent, name = os.path.split(head)
        if not parent or parent == head or name in ("", os.curdir, os.pardir):
            real = os.path.realpath(head or os.curdir)
        elif os.path.islink(head):
            real = os.path.realpath(head)
        else:
            real = os.path.join(_real_dir(parent, real_dirs), name)
        real_dirs[head] = real
    return real


def _real_path(path: str, real_dirs: dict[str, str], link: bool | None = None) -> tuple[str, bool]:
    """``os.path.realpath(path)``, resolving each directory once (a listing shares them).

    Also whether ``path`` itself is a symbolic link (``link`` False: the listing found it is
    not, so no ``lstat`` is made). A link is followed by reading it and resolving its
    target's directory once too: a lake of links into one folder costs a ``readlink`` per
    file, not a ``lstat`` per component of each target.
    """
    head, name = os.path.split(path)
    real = _real_dir(head, real_dirs)
    # A listing's paths are mostly real already: then the path itself is the key (no
    # second string per file), unless it spells its separator twice ("d//a.parquet").
    same = real == head and len(path) == len(head) + 1 + len(name)
    full = path if same else os.path.join(real, name)
    if link is False or not os.path.islink(full):
        return full, False
    for _ in range(_MAX_LINKS):
        try:
            target = os.path.join(os.path.dirname(full), os.readlink(full))
        except OSError:
            break  # gone meanwhile: realpath says what it can
        t_head, t_name = os.path.split(target)
        if t_name in ("", os.curdir, os.pardir):
            break  # a link to a directory: realpath's business
        full = os.path.join(_real_dir(t_head, real_dirs), t_name)
        if not os.path.islink(full):
            return full, True
    return os.path.realpath(path), True


def local_paths(
    locations: str | os.PathLike[str] | FileInfo | Sequence[str | os.PathLike[str] | FileInfo],
) -> bool:
    """Whether ``locations`` are local paths only (files or folders to list, as the
    multi-file functions read them): no URL, no listing entry, not empty."""
    if isinstance(locations, (str, os.PathLike, FileInfo)):
        locations = [locations]
    if not isinstance(locations, Sequence) or not locations:
        return False
    for location in locations:
        if isinstance(location, FileInfo):
            return False
        try:
            text = os.fspath(location)
        except TypeError:
            return False
        if not isinstance(text, str) or "://" in text:
            return False
    return True


def local_only(argument: str) -> Callable[[inspect.BoundArguments], bool]:
    """The rule of the ``*_sync`` twins: inline (in the calling thread, with no event loop:
    ``tasks.loops``) when ``argument`` names local paths only. Starting a loop and handing
    each file to a worker thread cost more than a warm local file's whole work; the items
    that wait on a disk or decode rows are spread over threads (``tasks.workers``)."""

    def check(bound: inspect.BoundArguments) -> bool:
        value = bound.arguments.get(argument)
        return value is not None and local_paths(value)

    return check
