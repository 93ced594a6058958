"""Listing the Parquet files of a directory or object-store prefix, streamed in path order."""

from __future__ import annotations

import itertools
import os
import stat
from collections.abc import AsyncGenerator, Generator, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import obstore
from anyio import CapacityLimiter

from ..errors import SourceError, SourceNotFoundError

if TYPE_CHECKING:
    from obstore.store import ObjectStore
from ..tasks.loops import to_worker
from .address import Address, object_url, parse_address
from .base import FileInfo, SourceStats
from .failures import map_errors, unreachable_reason
from .identity import local_identity, meta_identity
from .partitions import FolderFilter, PairCache, PartitionedFile, folder_pair
from .store import StoreOptions, cached_store, check_applicable, resolve_options
from .table_folders import DELTA_LOG, PrefixTables, TableGuard

#: Objects per LIST page (the most S3, GCS and Azure return in one).
PAGE_SIZE = 1000
#: Subfolders (hive partitions) of a prefix listed at once, ahead of the one being read:
#: each holds at most one page ahead, so a listing holds about this many pages.
PARTITIONS_AHEAD = 8
#: Local files stat'ed per call into a worker thread.
_LOCAL_CHUNK = 256
#: Stores whose LIST returns keys in lexicographic (UTF-8 byte) order, so that pages can be
#: handed over as they come; others (WebDAV) are collected and sorted first.
_ORDERED_KINDS = frozenset({"s3", "gs", "az"})


def _is_hidden(name: str) -> bool:
    # Hadoop's convention (FileInputFormat's hidden-file filter), which Spark and Hive
    # follow: names starting with "_" or "." are metadata or in-progress output
    # (_SUCCESS, _temporary/, .part-0.parquet.crc), never data.
    return name.startswith(("_", "."))


def _is_parquet(name: str) -> bool:
    return name.lower().endswith(".parquet") and not _is_hidden(name)


def is_listed(parts: list[str]) -> bool:
    """Whether a listing lists the file at these path segments below its directory or prefix."""
    return bool(parts) and _is_parquet(parts[-1]) and not any(_is_hidden(s) for s in parts[:-1])


def walk_order(parts: list[str]) -> list[tuple[int, str]]:
    """The sort key of a file below a listed directory, in the order the listing gives it.

    A local directory gives its own files first (by name), then each subdirectory's
    (by name), so ``d/z.parquet`` comes before ``d/a/b.parquet``.
    """
    return [(1, s) for s in parts[:-1]] + [(0, parts[-1])]


# ---- local directories ----------------------------------------------------------------


def _listed(
    path: str, size: int, identity: Any, pairs: tuple[Any, ...], link: bool | None = None
) -> FileInfo:
    """A listed file; below ``key=value`` folders, with their pairs (see ``io/partitions``).
    ``link``: whether the local entry is a symbolic link (None: not known)."""
    etag, mtime = (identity.etag, identity.mtime) if identity is not None else (None, None)
    if pairs:
        return PartitionedFile(path, size, etag, mtime, link=link, partition=pairs)
    return FileInfo(path, size, etag, mtime, link=link)


class _Folders:
    """The ``key=value`` folders below the root: their pairs (shared by a folder's files),
    and the caller's filter of folders not to list; ``tables``: tables below are refused."""

    def __init__(
        self, keep: FolderFilter | None, sep: str, tables: TableGuard | None = None
    ) -> None:
        self.keep = keep
        self.sep = sep
        self.cache = PairCache()
        self.tables = tables

    def pairs(self, folder: str) -> tuple[Any, ...]:
        return self.cache.get(folder, self.sep)

    def skipped(self, folder: str) -> bool:
        """Whether the folder (relative to the root) is one the filter rules out."""
        name = folder.rsplit(self.sep, 1)[-1]
        return (
            self.keep is not None
            and folder_pair(name) is not None
            and not self.keep(self.pairs(folder))
        )


def _walk_local(
    top: str, identities: bool, folders: _Folders, relative: str = "", given: str = ""
) -> Iterator[FileInfo]:
    """The Parquet files under ``top`` in walk order; one directory's names held at a time.

    As ``os.walk(top, followlinks=False)``: symbolic links to directories are not
    followed, links to files are listed (a broken one fails the listing). Folders the
    filter rules out are not entered.
    """
    files: list[str] = []
    links: set[str] = set()
    dirs: list[str] = []
    delta_log = False
    with os.scandir(top) as entries:
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                delta_log = delta_log or entry.name == DELTA_LOG
                if not _is_hidden(entry.name) and not entry.is_symlink():
                    dirs.append(entry.name)
            elif _is_parquet(entry.name):
                files.append(entry.name)
                if entry.is_symlink():  # known from the directory: no system call
                    links.add(entry.name)
    if folders.tables is not None:  # a table's folder is refused before any file of it
        folders.tables.walked(top, delta_log, dirs, given)
    files.sort()
    dirs.sort()
    pairs = folders.pairs(relative)
    # The names wait in one string while their files are read: ~20 bytes a name instead
    # of a str object each (~70; 1.3 MiB for 20,000 files). A name holds no NUL.
    count, names = len(files), "\0".join(files)
    del files
    start = 0
    for _ in range(count):
        end = names.find("\0", start)
        end = len(names) if end < 0 else end
        name, start = names[start:end], end + 1
        full = os.path.join(top, name)
        st = os.stat(full)
        identity = local_identity(full, st) if identities else None
        yield _listed(full, st.st_size, identity, pairs, name in links)
    del names
    for name in dirs:
        below = os.path.join(relative, name) if relative else name
        if not folders.skipped(below):
            yield from _walk_local(os.path.join(top, name), identities, folders, below, given)


def _local_pages(
    path: str, identities: bool, keep: FolderFilter | None, tables: TableGuard | None = None
) -> Generator[list[FileInfo], None, None]:
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        identity = local_identity(path, st)
        yield [FileInfo(path, st.st_size, identity.etag, identity.mtime)]
        return
    walk = _walk_local(path, identities, _Folders(keep, os.sep, tables), given=path)
    while page := list(itertools.islice(walk, _LOCAL_CHUNK)):
        yield page


# ---- object stores --------------------------------------------------------------------


class _StorePages:
    """The Parquet files under a prefix, page by page, in key order.

    The first page tells whether the prefix has subfolders (hive partitions): then
    it comes out while the subfolders are found, and they are listed from where it
    ended, ``PARTITIONS_AHEAD`` at a time, each one page ahead; their pages come out
    in key order as the one being read is done. A flat prefix is read page after
    page. ``anything`` says whether any object at all was seen.
    """

    def __init__(
        self,
        store: ObjectStore,
        loc: Address,
        keep: FolderFilter | None,
        tables: TableGuard | None = None,
    ) -> None:
        self.display = loc.display
        self.store = store
        self.prefix = loc.key.rstrip("/")
        self.ordered = loc.kind in _ORDERED_KINDS
        self.anything = False
        self.pool: ThreadPoolExecutor | None = None
        self.folders = _Folders(keep, "/")
        self.tables = None if tables is None else PrefixTables(tables, loc, self.prefix)

    def files(self, page: list[Mapping[str, Any]]) -> list[FileInfo]:
        out = []
        for meta in page:
            self.anything = True
            key = meta["path"]
            relative = key[len(self.prefix) :].lstrip("/") if self.prefix else key
            parts = relative.split("/")
            listed = is_listed(parts) and not self._ruled_out(parts)
            if self.tables is not None:  # keys come in key order here (see pages)
                self.tables.see(parts, listed)
            if listed:
                # The URL keeps the scheme and authority it was listed with (s3a://,
                # abfss://container@account...) and reads back as this key: it reopens
                # the same object with the same store.
                url = object_url(self.display, key)
                identity = meta_identity(url, meta)
                pairs = self.folders.pairs("/".join(parts[:-1]))
                out.append(_listed(url, identity.size, identity, pairs))
        return out

    def _ruled_out(self, parts: list[str]) -> bool:
        """Whether a folder of a file listed (a prefix lists deep) is one to skip."""
        if self.folders.keep is None or len(parts) < 2:
            return False
        return any(self.folders.skipped("/".join(parts[:i])) for i in range(1, len(parts)))

    def _stream(self, prefix: str) -> Iterator[list[Mapping[str, Any]]]:
        return iter(obstore.list(self.store, prefix or None, chunk_size=PAGE_SIZE))

    def pages(self) -> Generator[list[FileInfo], None, None]:
        stream = self._stream(self.prefix)
        first = next(stream, [])
        if not self.ordered:
            every = first + [meta for page in stream for meta in page]
            every.sort(key=lambda meta: str(meta["path"]))
            yield self.files(every)
            return
        cut = len(self.prefix) + 1 if self.prefix else 0
        nested = [m for m in first if "/" in m["path"][cut:]]
        if len(first) < PAGE_SIZE or not nested or len(nested) < len(first) // 2:
            # Everything, or a prefix mostly of its own objects: read page after page.
            yield self.files(first)
            for page in stream:
                yield self.files(page)
            return
        # The first page holds the smallest keys: it comes out while the subfolders are
        # found; they are then listed from where it ends.
        self.pool = ThreadPoolExecutor(PARTITIONS_AHEAD, thread_name_prefix="pybloom-list")
        folders = self.pool.submit(obstore.list_with_delimiter, self.store, self.prefix or None)
        last = first[-1]["path"]
        yield self.files(first)
        del stream, first, nested
        yield from self._partitioned(folders.result(), last)

    def _partitioned(self, listed: Mapping[str, Any], last: str) -> Iterator[list[FileInfo]]:
        # Keys sort in one order: an object "t/a=1.parquet" before the folder "t/a=1/",
        # and every key of a folder together, so the folders and the objects between
        # them come out in key order when taken by name ("t/a=1/" with its slash).
        items: list[tuple[str, Any]] = [(m["path"], m) for m in listed["objects"]]
        items += [(p.rstrip("/") + "/", None) for p in listed["common_prefixes"]]
        # What the first page gave: objects up to its last key, folders that end before it.
        items = [(k, m) for k, m in items if k > last or (m is None and last.startswith(k))]
        # Folders the filter rules out are not listed at all.
        cut = len(self.prefix) + 1 if self.prefix else 0
        items = [(k, m) for k, m in items if m is not None or not self.folders.skipped(k[cut:-1])]
        items.sort(key=lambda item: item[0])
        del listed
        assert self.pool is not None
        pool = self.pool
        ahead: dict[int, tuple[Iterator[Any], Future[Any]]] = {}

        def start(i: int) -> None:
            if i < len(items) and items[i][1] is None and i not in ahead:
                folder = items[i][0]
                offset = last if last.startswith(folder) else None
                stream = iter(
                    obstore.list(
                        self.store, folder.rstrip("/"), offset=offset, chunk_size=PAGE_SIZE
                    )
                )
                ahead[i] = (stream, pool.submit(next, stream, None))

        for i in range(PARTITIONS_AHEAD):
            start(i)
        for i, (_, meta) in enumerate(items):
            start(i + PARTITIONS_AHEAD)
            if meta is not None:
                yield self.files([meta])
                continue
            stream, page = ahead.pop(i)
            while (got := page.result()) is not None:
                page = pool.submit(next, stream, None)
                yield self.files(got)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)


# Long because: the docstring documents every argument and error (44 lines); the code is 59.
async def iter_parquet_files(
    location: str | os.PathLike[str],
    *,
    options: StoreOptions | None = None,
    stats: SourceStats | None = None,
    limiter: CapacityLimiter | None = None,
    identities: bool = True,
    folders: FolderFilter | None = None,
    tables: TableGuard | None = None,
    **option_values: object,
) -> AsyncGenerator[FileInfo, None]:
    """The Parquet files of a file, directory or object-store prefix, file by file as the
    listing goes, sorted by path (:func:`list_parquet_files`: all at once).

    A file or object named exactly is given as is, whatever its name. Directories and
    prefixes are walked recursively for ``*.parquet`` (any case), skipping names that start
    with ``_`` or ``.`` (Spark/Hadoop metadata and in-progress output). A directory's own
    files come before its subdirectories'. A file below ``key=value`` folders comes as a
    :class:`~pybloom_async.io.partitions.PartitionedFile` with their pairs.

    Nothing is held for the files already given: a local directory's names are
    held while it is read, an object-store listing holds a few pages (see
    ``PARTITIONS_AHEAD``). Object stores that list in key order (S3, GCS, Azure)
    hand each page over as it comes; a prefix whose first page lies in subfolders
    (hive partitions) has them listed concurrently. A listing over plain HTTP
    (WebDAV) is collected and sorted first. An error may come after some files.

    Parameters
    ----------
    location, options, stats, limiter, **option_values:
        As for :func:`open_source`. Listing counts one metadata request per call.
    identities:
        False: the files listed under a local directory come without ETag and
        modification time (their size only). A local file's source reads its own
        identity when opened, so a listing made to read the files need not hold
        one per file (about 130 bytes each).
    folders:
        Asked of each ``key=value`` folder below the root, with the pairs of the folders
        it lies in: False skips it and everything below it (a local directory is not
        entered; a store's top-level folder is not listed, deeper ones' files are left
        out as they come).
    tables:
        Refuse a Delta or Iceberg table below the location (its files are no plain
        files; :mod:`pybloom_async.io.table_folders`), with this guard's message, before
        any of its files comes.

    Raises
    ------
    SourceNotFoundError
        The path does not exist, or no object at all lies under the prefix.
    SourceError
        Listing failed (plain HTTP servers cannot list: name the files instead).
    InvalidArgumentError
        As :func:`open_source`; with ``tables``, a table below.
    """
    loc = parse_address(location)
    resolved = resolve_options(options, option_values)
    check_applicable(loc, resolved)
    counter = stats if stats is not None else SourceStats()
    if loc.kind == "file":
        walk = _local_pages(loc.path, identities, folders, tables)  # in worker threads
        try:
            while True:
                with map_errors(loc.display, "listing"):
                    page = await to_worker(next, walk, None, limiter=limiter)
                if page is None:
                    break
                for file in page:
                    yield file
        finally:
            walk.close()
        counter.add_metadata()
        return
    store = cached_store(loc, resolved)
    if loc.key and not loc.key.endswith("/"):
        # The location may name one object: one HEAD tells. Object stores have no
        # directories, so "not found" here means: list it as a prefix.
        meta: Mapping[str, Any] | None
        try:
            with map_errors(loc.display, "looking up"):
                meta = await to_worker(obstore.head, store, loc.key, limiter=limiter)
        except SourceNotFoundError:
            meta = None
        counter.add_metadata()
        if meta is not None:
            identity = meta_identity(loc.display, meta)
            yield FileInfo(loc.display, identity.size, identity.etag, identity.mtime)
            return
    lister = _StorePages(store, loc, folders, tables)
    pages = lister.pages()
    try:
        while True:
            try:
                with map_errors(loc.display, "listing"):
                    got = await to_worker(next, pages, None, limiter=limiter)
            except SourceError as exc:
                answered = exc.__cause__ is None or unreachable_reason(exc.__cause__) is None
                if loc.kind == "http" and answered and not isinstance(exc, SourceNotFoundError):
                    raise SourceError(
                        "listing failed: plain HTTP servers cannot list (obstore needs WebDAV); "
                        "name the files instead",
                        path=loc.display,
                    ) from exc
                raise
            if got is None:
                break
            for file in got:
                yield file
    finally:
        pages.close()
        lister.close()
    counter.add_metadata()
    if not lister.anything:
        raise SourceNotFoundError("listing: no objects under this prefix", path=loc.display)


async def list_parquet_files(location: str | os.PathLike[str], **keywords: Any) -> list[FileInfo]:
    """:func:`iter_parquet_files`' files as one list (the same arguments, order and errors)."""
    return [f async for f in iter_parquet_files(location, **keywords)]
