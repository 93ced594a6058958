"""Async reading of footers and Bloom filters from Parquet files on disk or object stores.

One file costs few round trips:

1. the footer comes with one speculative suffix read (a second read only when
   the footer is larger); on object stores its size is learned from the files
   already read (:mod:`pybloom_async.read.suffix`), so that it covers the footer
   and the filters of the next file too;
2. the filters are fetched as the planner (:mod:`pybloom_async.read.plan`) says:
   exact merged ranges where ``bloom_filter_length`` is known (or nothing at
   all when they lie in the suffix already read), guess reads where it is not;
3. only filters whose bitset runs past its guess need one more read.

Every offset and size is validated before a byte is fetched or allocated; a
damaged filter becomes an ``unusable`` entry with a reason, never a crash.
Everything runs on anyio (asyncio or trio); a :class:`BloomReader` caches
footers and filters for long-lived services.

Running inline (:mod:`pybloom_async.tasks.loops`: one local file's work in one
worker-thread call, or a ``*_sync`` call on local paths in the caller's
thread), the reader opens local files as blocking sources: the same coroutines,
planner, decoder and pruning code then complete without ever suspending."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Collection, Hashable, Mapping, Sequence
from typing import Any, NamedTuple

import anyio

from ..checks import integer, seconds
from ..errors import InvalidArgumentError
from ..io.address import parse_address
from ..io.base import ByteSource, FileInfo, SourceStats, location_text
from ..io.failures import map_errors
from ..io.identity import SourceIdentity, stat_identity
from ..io.objects import ObjectStoreSource, open_source
from ..io.store import StoreOptions, as_store_options
from ..tasks.loops import inline, to_worker
from .fetch import (
    DEFAULT_READER_CONFIG,
    BloomFilterRead,
    FilterKey,
    Footer,
    ReaderConfig,
    first_needed_byte,
    read_filters_from,
    read_footer_from,
    wanted_filters,
)
from .probe import Probe, probe_in_place
from .suffix import SuffixLearner

Location = str | os.PathLike[str] | FileInfo


class _Entry:
    __slots__ = ("checked_at", "filter_bytes", "filters", "footer")

    def __init__(self, footer: Footer) -> None:
        self.footer = footer
        self.filters: dict[FilterKey, BloomFilterRead] = {}
        self.checked_at = time.monotonic()
        self.filter_bytes = 0


class _Kept(NamedTuple):
    version: Hashable
    value: Any
    at: float


class BloomReader:
    """Reads footers and filters, with bounded in-memory caches for long-lived services.

    Cached entries are keyed by path and tied to the file's identity (size,
    ETag or inode + mtime). A local file is checked on every use (the ``fstat``
    of its opening, which its reads need anyway), so a replaced file is never
    read with its old footer; and a run's local files after the first of their
    schema are pruned from their bytes in one C call each, not from the cache
    (read again from the page cache, they cost a tenth of the cached model's
    Python). On an object store, an entry younger than
    ``max_age`` seconds is used with no request at all (reads are still pinned
    to its ETag); an older one costs one HEAD to confirm the object is
    unchanged, else it is dropped and read again. Pass ``max_age=0`` to check
    every time.

    It also keeps what callers derive from whole objects (:meth:`keep`): a lake index's
    segments, each with its version, and its segment listing for ``max_age`` seconds.

    With the adaptive suffix (``ReaderConfig.footer_read_bytes=None``, the
    default), the reader learns from every object-store file it reads how large
    the first read of the next one should be (:attr:`suffix`). Nothing waits for
    that: files read before anything is learned read ``adaptive_start`` bytes,
    all at once.

    Parameters
    ----------
    config:
        Reader limits (:class:`ReaderConfig`).
    options:
        Object-store options (:class:`pybloom_async.io.store.StoreOptions` or a
        dict of its fields); by default obstore reads the environment.
    stats:
        Counts every request made through this reader.
    max_files:
        Footers kept in the cache (least recently used dropped first); 0
        disables caching.
    max_filter_bytes:
        Total bitset bytes kept in the cache.
    max_age:
        Seconds a cached object-store entry is trusted without a HEAD.
    """

    def __init__(
        self,
        *,
        config: ReaderConfig = DEFAULT_READER_CONFIG,
        options: StoreOptions | Mapping[str, Any] | None = None,
        stats: SourceStats | None = None,
        max_files: int = 4096,
        max_filter_bytes: int = 512 * 1024 * 1024,
        max_age: float = 60.0,
    ) -> None:
        if not isinstance(config, ReaderConfig):
            raise InvalidArgumentError(
                f"config must be a ReaderConfig, not {type(config).__name__}", value=config
            )
        self.config = config
        self.options = as_store_options(options)
        self.stats = stats if stats is not None else SourceStats()
        self.max_files = integer("max_files", max_files, minimum=0)
        self.max_filter_bytes = integer("max_filter_bytes", max_filter_bytes, minimum=0)
        self.max_age = seconds("max_age", max_age, allow_zero=True)
        #: Whether a file's filters are probed where they lie (:meth:`OpenedFile.probe`: a
        #: local file's read in the calling thread, any file's held by its footer's read)
        #: rather than read whole into the cache: set by a run for the reader it makes
        #: itself, which keeps a file only while it is read.
        self.probes_in_place = False
        self._cache: OrderedDict[str, _Entry] = OrderedDict()
        # What is derived from whole objects (a lake index's listing and segments), by key.
        self._kept: OrderedDict[Hashable, _Kept] = OrderedDict()
        self._cached_bytes = 0
        # Files of one run are read in several worker threads at once (one per local file):
        # the cache's bookkeeping is done under this lock, never across a read.
        self._lock = threading.Lock()
        self._io = anyio.CapacityLimiter(config.io_threads)
        # The threads every run of this reader may use at once for local files' work.
        self._local = anyio.CapacityLimiter(config.local_threads or 1)
        # Its async lookups of local paths, each run whole in one worker thread: two at a
        # time where two cores are, so that one's C calls (its files swept, its chunks
        # decompressed, the interpreter released) run beside the other's Python. One at
        # a time, or three, served fewer lookups: 41-49 and 45-47 a second against 47-56
        # (32 at once, 200 files, 2 cores).
        self._whole_runs = anyio.CapacityLimiter(min(2, os.cpu_count() or 1))
        self.suffix = SuffixLearner(
            config.adaptive_start, config.max_suffix_bytes, floor=config.min_suffix_bytes
        )

    @property
    def io_limiter(self) -> anyio.CapacityLimiter:
        """The worker threads this reader's blocking work may use at once."""
        return self._io

    @property
    def cached_filter_bytes(self) -> int:
        """Bitset bytes the cache holds now (at most ``max_filter_bytes``)."""
        return self._cached_bytes

    @property
    def local_limiter(self) -> anyio.CapacityLimiter:
        """The worker threads every run of this reader may use at once for local files'
        work (``ReaderConfig.local_threads``)."""
        return self._local

    @property
    def whole_run_limiter(self) -> anyio.CapacityLimiter:
        """The worker threads this reader's async lookups of local paths run in, each whole
        in one, two at a time on two cores or more (each spreads its files over
        ``ReaderConfig.local_threads`` threads once they prove slow, as ``lookup_sync``
        does)."""
        return self._whole_runs

    def open(self, location: Location) -> ByteSource:
        """A source for a path, URL or listing entry, counted in :attr:`stats`.

        Running inline (one file's work in one worker thread), a local file's reads block
        the calling thread.
        """
        return open_source(
            location, options=self.options, stats=self.stats, limiter=self._io, blocking=inline()
        )

    async def identity(self, location: Location) -> SourceIdentity:
        """The file's version now, for comparing with what an index was built from.

        A local path is stat-ed (counted as a metadata request); a listing entry
        gives the size, ETag and time the listing saw, without a request; any
        other location costs one HEAD.

        Raises
        ------
        SourceNotFoundError
            A local file does not exist.
        SourceError
            It cannot be stat-ed, or the HEAD fails.
        InvalidArgumentError
            The path cannot be a file's (a NUL byte).
        """
        path = location_text(location)
        address = parse_address(path)
        if address.kind == "file":
            with map_errors(path, "looking up"):
                identity = await to_worker(stat_identity, address.path)
            self.stats.add_metadata()
            return identity
        if isinstance(location, FileInfo):
            return SourceIdentity(path, location.size, location.etag, location.mtime)
        async with self.open(location) as source:
            return await source.identity()  # one HEAD, counted

    async def _cached(self, key: str, source: ByteSource) -> _Entry | None:
        entry = self._cache.get(key)
        if entry is None:
            return None
        # A local file is checked every time (its identity comes with its opening, which
        # its reads need anyway); a store's once max_age has passed (a HEAD).
        if source.local or time.monotonic() - entry.checked_at >= self.max_age:
            if await source.identity() != entry.footer.identity:
                with self._lock:
                    if self._cache.get(key) is entry:
                        self._evict(key)
                return None
            entry.checked_at = time.monotonic()
        else:
            source.assume_identity(entry.footer.identity)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
        return entry

    def kept(self, key: Hashable, version: Hashable = None) -> Any:
        """A value :meth:`keep` kept under ``key`` (None: none, or no longer valid): with a
        ``version``, only when kept for that version of its object; without, only while
        younger than ``max_age`` (a listing)."""
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                return None
            if version is None:
                if time.monotonic() - found.at >= self.max_age:
                    return None
            elif found.version != version:
                return None
            self._kept.move_to_end(key)
            return found.value

    def keep(self, key: Hashable, version: Hashable, value: Any) -> None:
        """Keep ``value``, derived from the object ``version`` names (None: trusted for
        ``max_age``), for :meth:`kept`; at most ``max_files`` values (least recently used
        dropped first), none when ``max_files`` is 0."""
        if self.max_files <= 0:
            return
        with self._lock:
            self._kept[key] = _Kept(version, value, time.monotonic())
            self._kept.move_to_end(key)
            while len(self._kept) > self.max_files:
                self._kept.popitem(last=False)

    def forget(self, location: Location) -> None:
        """Drop one file's cached footer and filters (the next read fetches them again)."""
        # The cache key is the source's own path, the address's display form: found
        # without making a source (this runs once per file of a run).
        if not self._cache:
            return  # nothing cached (a reader that caches nothing): no address to parse
        path = location_text(location)
        key = parse_address(path).display
        with self._lock:
            self._evict(key)

    def _evict(self, key: str) -> None:
        """Drop one entry (the caller holds the lock)."""
        entry = self._cache.pop(key, None)
        if entry is not None:
            self._cached_bytes -= entry.filter_bytes

    def _store(
        self, key: str, entry: _Entry, found: Mapping[FilterKey, BloomFilterRead] | None = None
    ) -> None:
        """Keep an entry (with filters ``found`` added to it), within the cache's bounds."""
        with self._lock:
            if found is not None:
                self._add_filters(entry, found)
            if self.max_files <= 0 or (found is not None and self._cache.get(key) is not entry):
                return  # not cached, or dropped meanwhile: its filters served this call only
            if key not in self._cache:
                self._cache[key] = entry
            self._cache.move_to_end(key)
            while len(self._cache) > self.max_files or (
                self._cached_bytes > self.max_filter_bytes and len(self._cache) > 1
            ):
                self._evict(next(iter(self._cache)))

    def _add_filters(self, entry: _Entry, found: Mapping[FilterKey, BloomFilterRead]) -> None:
        """Add filters to an entry (the caller holds the lock)."""
        cached = self._cache.get(entry.footer.path) is entry
        for key, read in found.items():
            if key in entry.filters:
                continue
            if cached and read.filter is not None:
                # A filter read views the bytes of its read (no copy); one kept in the
                # cache gets its own, so the cache holds what it counts, not whole reads.
                read = dataclasses.replace(read, filter=read.filter.owned())
            entry.filters[key] = read
            if read.filter is not None:
                entry.filter_bytes += read.filter.num_bytes
                if cached:
                    self._cached_bytes += read.filter.num_bytes

    def opened(self, location: Location, footer: Footer | None = None) -> OpenedFile:
        """One file opened once for its footer and then its filters (``async with``).

        What :meth:`footer` and :meth:`footer_and_filters` do, from one source: a caller that
        needs the footer before it knows which filters to ask for (pruning) opens the file,
        and finds its store client, once instead of twice. ``footer``: the file's footer as
        kept elsewhere (a lake index's digest), for the version its identity names: used with
        no read when the file is that version (a local file's opening says; a store's reads
        are pinned to it), else the footer is read.
        """
        return OpenedFile(self, location, footer)

    async def footer(self, location: Location) -> Footer:
        """The footer of one file (from the cache when it is fresh).

        Raises
        ------
        ParquetFormatError, EncryptedFileError
            The file is not a readable Parquet file.
        SourceError, SourceNotFoundError
            It could not be read.
        """
        async with self.opened(location) as file:
            return await file.footer()

    async def _given(self, source: ByteSource, known: Footer) -> _Entry | None:
        """An entry for a footer kept elsewhere, when the file is the version it names."""
        identity = dataclasses.replace(known.identity, path=source.path)
        if source.local:
            # The opening's fstat, in the form a footer read records (its tag holds the
            # inode, times and size).
            now = await source.identity()
            # A table's file is known by its size (never rewritten under its name).
            if now.size != identity.size or identity.etag not in (None, now.etag):
                return None
            identity = now
        else:
            source.assume_identity(identity)
        return _Entry(dataclasses.replace(known, path=source.path, identity=identity))

    async def _entry(self, source: ByteSource) -> _Entry:
        key = source.path
        entry = await self._cached(key, source)
        if entry is None:
            entry = _Entry(await self._read_footer(source))
            self._store(key, entry)
        return entry

    async def _read_footer(self, source: ByteSource) -> Footer:
        config = self.config
        if not config.adaptive or not isinstance(source, ObjectStoreSource):
            return await read_footer_from(source, config)
        # Never waits: before anything is learned the proposal is adaptive_start, so
        # the files a run starts at once are read at once (a burst of transient faults
        # spreads over their requests, and no file's latency adds to another's).
        learner = self.suffix
        size = learner.propose(source.known_size)
        footer = await read_footer_from(source, config, size, reach=size)
        learner.observe(
            footer.file_size, first_needed_byte(footer), footer.location.metadata_offset
        )
        return footer

    async def _filters(
        self,
        source: ByteSource,
        entry: _Entry,
        columns: Collection[str] | None,
        row_groups: Collection[int] | None,
    ) -> dict[FilterKey, BloomFilterRead]:
        footer = entry.footer
        wanted = wanted_filters(footer, columns, row_groups)
        missing = [w for w in wanted if w[0] not in entry.filters]
        if missing:
            found = await read_filters_from(source, footer, missing, self.config)
            self._store(source.path, entry, found)
        return {w[0]: entry.filters[w[0]] for w in wanted}

    async def footer_and_filters(
        self,
        location: Location,
        columns: Collection[str] | None = None,
        row_groups: Collection[int] | None = None,
    ) -> tuple[Footer, dict[FilterKey, BloomFilterRead]]:
        """The footer and the filters of chosen columns and row groups (default all).

        Raises
        ------
        PredicateError
            A column is not in the file.
        InvalidArgumentError
            A row group does not exist.
        ParquetFormatError, EncryptedFileError, SourceError
            The file cannot be read. Damaged *filters* are not errors: their
            entries are ``UNUSABLE`` with a reason.
        """
        async with self.opened(location) as file:
            footer = await file.footer()
            return footer, await file.filters(columns, row_groups)

    async def bloom_filters(
        self,
        location: Location,
        columns: Collection[str] | None = None,
        row_groups: Collection[int] | None = None,
    ) -> dict[FilterKey, BloomFilterRead]:
        """The filters of chosen columns and row groups, keyed by ``(row_group, column)``."""
        _, filters = await self.footer_and_filters(location, columns, row_groups)
        return filters

    def clear(self) -> None:
        """Forget every cached footer and filter, and every value kept."""
        with self._lock:
            self._cache.clear()
            self._kept.clear()
            self._cached_bytes = 0


class OpenedFile:
    """A file opened through a :class:`BloomReader` (:meth:`BloomReader.opened`).

    Its footer, then any of its filters, come through one source, with the reader's
    cache as in :meth:`BloomReader.footer_and_filters`.
    """

    __slots__ = ("_entry", "_known", "_location", "_reader", "_source", "marks")

    def __init__(self, reader: BloomReader, location: Location, known: Footer | None) -> None:
        self._reader = reader
        self._location = location
        self._source: ByteSource | None = None
        self._entry: _Entry | None = None
        self._known = known
        #: What probes in place found, for whoever asks the same filters again while the
        #: file is open: per ``(row group, column path)``, some hashes (a uint64 array) and
        #: per hash 1 when the filter may hold it (and the statistics let it), else 0.
        self.marks: dict[FilterKey, tuple[Any, Any]] = {}

    @property
    def location(self) -> Location:
        """The path, URL or listing entry it was opened for."""
        return self._location

    @property
    def source(self) -> ByteSource:
        """Its byte source (open while the file is)."""
        assert self._source is not None, "use OpenedFile in 'async with'"
        return self._source

    async def __aenter__(self) -> OpenedFile:
        source = self._reader.open(self._location)
        self._source = await source.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        assert self._source is not None
        await self._source.__aexit__(*exc_info)

    async def footer(self) -> Footer:
        """The file's footer (see :meth:`BloomReader.footer`)."""
        if self._entry is None:
            assert self._source is not None, "use OpenedFile in 'async with'"
            known, self._known = self._known, None
            if known is not None:
                self._entry = await self._reader._given(self._source, known)
            if self._entry is None:
                self._entry = await self._reader._entry(self._source)
        return self._entry.footer

    async def filters(
        self, columns: Collection[str] | None = None, row_groups: Collection[int] | None = None
    ) -> dict[FilterKey, BloomFilterRead]:
        """Its filters of chosen columns and row groups (see :meth:`BloomReader.bloom_filters`)."""
        await self.footer()
        assert self._source is not None and self._entry is not None
        return await self._reader._filters(self._source, self._entry, columns, row_groups)

    def probe(self, probes: Sequence[Probe]) -> list[int] | None:
        """Its filters asked about hashes where they lie, read by the C core
        (:func:`.probe.probe_in_place`): per probe ABSENT or MAY; None when a filter is
        neither in the footer's read nor in a local file read in this thread, its reader
        keeps filters (a caller's: :attr:`BloomReader.probes_in_place`), or a filter is
        not as the footer says. Call after :meth:`footer`."""
        assert self._source is not None and self._entry is not None, "read the footer first"
        if not self._reader.probes_in_place:
            return None
        return probe_in_place(self._source, self._entry.footer, probes, self._reader.config.plan)
