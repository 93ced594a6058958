"""Async reading of footers and Bloom filters from Parquet files on disk or object stores.

One file costs few round trips:

1. the footer comes with one speculative suffix read (64 KiB by default; a
   second read only when the footer is larger);
2. the filters are fetched as the planner (:mod:`pybloom_async.read.plan`) says:
   exact merged ranges where ``bloom_filter_length`` is known (or nothing at
   all when they lie in the suffix already read), guess reads where it is not;
3. only filters whose bitset runs past its guess need one more read.

Every offset and size is validated before a byte is fetched or allocated; a
damaged filter becomes an ``unusable`` entry with a reason, never a crash.
Everything runs on anyio (asyncio or trio); a :class:`BloomReader` caches
footers and filters for long-lived services.

Scripts that ask about one local file (``prune_sync``, ``probe_sync``) do not
need an event loop or worker threads at all: :class:`BlockingLocalReader` reads
with ``pread`` in the calling thread, so the same coroutines, planner, decoder
and pruning code complete without ever suspending, and :func:`run_blocking`
runs them to the end without a loop (starting one and handing each read to a
thread cost more than the whole answer).
"""

from __future__ import annotations

import asyncio
import enum
import os
import sys
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Collection, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio

from ..checks import integer, positive_int, seconds
from ..core.filter import SplitBlockBloomFilter, decode_header
from ..errors import EventLoopError, InvalidArgumentError, ParquetFormatError, PyBloomError
from ..io.base import ByteSource, FileInfo, SourceIdentity, SourceStats
from ..io.local import LocalFileSource, open_regular, read_exactly
from ..io.store import StoreOptions, open_source
from ..parquet import (
    FileMetaData,
    FooterLocation,
    RowGroup,
    Schema,
    parse_footer_tail,
)
from ..parquet.decode import decode_file_metadata_with
from ..parquet.tail import check_leading_magic
from ..parquet.thrift import THRIFT_DECODER
from .plan import (
    DEFAULT_PLAN_CONFIG,
    FilterStatus,
    PlanConfig,
    plan_bitset_reads,
    plan_filter_reads,
)

__all__ = [
    "BloomFilterRead",
    "BloomReader",
    "Footer",
    "ReaderConfig",
    "read_bloom_filters",
    "read_footer",
    "read_footer_sync",
]

Location = str | os.PathLike[str] | FileInfo
T = TypeVar("T")


@dataclass(frozen=True)
class ReaderConfig:
    """Limits and tuning of the reader.

    Parameters
    ----------
    footer_read_bytes:
        Size of the speculative suffix read that fetches the footer (64 KiB:
        most footers fit, and Spark, pyarrow and DuckDB put the filters right
        before the footer, so small files need no other read).
    max_footer_bytes:
        A footer claiming more than this is refused before it is fetched.
    plan:
        The planner's limits: merge hole and size, guess size, filter size
        limit (:class:`pybloom_async.read.plan.PlanConfig`).
    concurrency:
        Files read at once by the multi-file functions.
    io_threads:
        Worker threads for blocking I/O (local ``pread``, obstore's sync API):
        the cap on requests in flight, so it should not be below the number of
        files read at once times the reads per file.
    """

    footer_read_bytes: int = 64 * 1024
    max_footer_bytes: int = 64 * 1024 * 1024
    plan: PlanConfig = DEFAULT_PLAN_CONFIG
    concurrency: int = 64
    io_threads: int = 256

    def __post_init__(self) -> None:
        # Stored as checked (plain ints). The footer's 8-byte trailer (length + magic)
        # must fit the first read.
        footer_read = integer("footer_read_bytes", self.footer_read_bytes, minimum=8)
        object.__setattr__(self, "footer_read_bytes", footer_read)
        for name in ("max_footer_bytes", "concurrency", "io_threads"):
            object.__setattr__(self, name, positive_int(name, getattr(self, name)))
        if not isinstance(self.plan, PlanConfig):
            raise InvalidArgumentError(
                f"plan must be a PlanConfig, not {type(self.plan).__name__}", value=self.plan
            )


DEFAULT_READER_CONFIG = ReaderConfig()


@dataclass(frozen=True, repr=False)
class Footer:
    """A decoded footer and the bytes read to get it (reused for filters in the tail)."""

    path: str
    metadata: FileMetaData
    location: FooterLocation
    tail: bytes
    identity: SourceIdentity

    def __repr__(self) -> str:
        # Short: the tail alone is tens of KiB, the metadata one entry per column chunk.
        meta = self.metadata
        return (
            f"Footer(path={self.path!r}, file_size={self.file_size}, num_rows={meta.num_rows}, "
            f"row_groups={len(meta.row_groups)}, columns={len(meta.schema.columns)})"
        )

    @property
    def file_size(self) -> int:
        """Size of the file in bytes."""
        return self.location.file_size

    @property
    def tail_start(self) -> int:
        """Offset of the first byte of :attr:`tail`."""
        return self.location.file_size - len(self.tail)

    @property
    def row_groups(self) -> tuple[RowGroup, ...]:
        """The row groups (shortcut for ``metadata.row_groups``)."""
        return self.metadata.row_groups

    @property
    def schema(self) -> Schema:
        """The schema (shortcut for ``metadata.schema``)."""
        return self.metadata.schema


class FilterState(enum.Enum):
    """Outcome of reading one column chunk's filter."""

    #: The filter was read and validated.
    OK = "ok"
    #: The column chunk has no filter.
    ABSENT = "absent"
    #: The filter's offset, length or header is invalid (``reason`` says why).
    UNUSABLE = "unusable"


@dataclass(frozen=True)
class BloomFilterRead:
    """One column chunk's filter: the filter, or why there is none."""

    row_group: int
    column: str
    state: FilterState
    filter: SplitBlockBloomFilter | None = None
    reason: str | None = None
    offset: int | None = None
    length: int | None = None
    header_len: int | None = None

    @property
    def ok(self) -> bool:
        """Whether a usable filter was read."""
        return self.state is FilterState.OK


FilterKey = tuple[int, str]


async def _read_footer(source: ByteSource, config: ReaderConfig) -> Footer:
    path = source.path
    tail = await source.read_suffix(config.footer_read_bytes)
    file_size = await source.size()
    location = parse_footer_tail(tail, file_size, path=path)
    missing = location.missing_range(len(tail))
    if missing is not None:
        if location.metadata_length > config.max_footer_bytes:
            raise ParquetFormatError(
                f"footer of {location.metadata_length} bytes is above the limit of "
                f"{config.max_footer_bytes} (ReaderConfig.max_footer_bytes)",
                path=path,
            )
        head = await source.read_range(*missing)
        tail = head + tail
        if missing[0] == 0:
            check_leading_magic(tail[:4], path=path)
    # When the file is longer than what was read, its leading magic is not
    # checked: that would cost a request. The trailing magic, the footer
    # length, a strict thrift decode and the validation of every offset
    # against the file still stand between a damaged file and a wrong answer.
    # Lazy, except that the one pass over the footer also reads the column chunks:
    # every caller reads them next (they are validated on that first read).
    metadata = decode_file_metadata_with(
        location.metadata_bytes(tail), path, THRIFT_DECODER, lazy=True, with_chunks=True
    )
    identity = await source.identity()
    return Footer(path, metadata, location, bytes(tail), identity)


def _wanted(
    footer: Footer, columns: Collection[str] | None, row_groups: Collection[int] | None
) -> list[tuple[FilterKey, int | None, int | None]]:
    meta = footer.metadata
    if columns is not None:
        indexes = [meta.schema.column(c).index for c in columns]  # PredicateError if unknown
    else:
        indexes = list(range(len(meta.schema.columns)))
    n = len(meta.row_groups)
    if row_groups is None:
        groups: Iterable[int] = range(n)
    else:
        groups = sorted(set(row_groups))
        for g in groups:
            if isinstance(g, bool) or not isinstance(g, int) or not 0 <= g < n:
                raise InvalidArgumentError(
                    f"row group {g!r} does not exist (the file has {n})", path=footer.path
                )
    paths = [(i, meta.schema.columns[i].path) for i in indexes]
    wanted = []
    for g in groups:
        chunks = meta.row_groups[g].columns
        for i, path in paths:
            chunk = chunks[i]
            wanted.append(((g, path), chunk.bloom_filter_offset, chunk.bloom_filter_length))
    return wanted


async def _read_filters(
    source: ByteSource,
    footer: Footer,
    wanted: list[tuple[FilterKey, int | None, int | None]],
    config: ReaderConfig,
) -> dict[FilterKey, BloomFilterRead]:
    plan_config = config.plan
    max_bytes = plan_config.max_filter_bytes
    plan = plan_filter_reads(
        wanted,
        file_size=footer.file_size,
        footer_start=footer.location.metadata_offset,
        tail_start=footer.tail_start,
        config=plan_config,
    )
    fetched = await source.read_ranges([(r.start, r.end) for r in plan.fetches])
    buffers = plan.buffers(fetched, footer.tail)
    headers: list[tuple[int, int] | str | None] = []
    for entry in plan.filters:
        if entry.status is not FilterStatus.PLANNED:
            headers.append(None)
            continue
        assert entry.read is not None
        try:
            headers.append(decode_header(entry.read.view(buffers), max_bytes=max_bytes))
        except PyBloomError as exc:
            headers.append(f"bad Bloom filter header at offset {entry.offset}: {exc.message}")
    bitsets = plan_bitset_reads(plan, headers)
    if bitsets.fetches:  # usually none: the first round read every bitset whole
        fetched2 = await source.read_ranges([(r.start, r.end) for r in bitsets.fetches])
        buffers = bitsets.buffers(fetched2, buffers)
    out: dict[FilterKey, BloomFilterRead] = {}
    for r in bitsets.filters:
        (g, column) = r.key
        if r.status is FilterStatus.READY:
            assert r.bitset is not None
            try:
                bloom = SplitBlockBloomFilter.from_bitset(
                    r.bitset.view(buffers), max_bytes=max_bytes
                )
            except PyBloomError as exc:  # defence in depth: the plan checked the size
                out[r.key] = BloomFilterRead(
                    g, column, FilterState.UNUSABLE, None, exc.message, r.offset, r.length
                )
                continue
            out[r.key] = BloomFilterRead(
                g, column, FilterState.OK, bloom, None, r.offset, r.length, r.header_len
            )
        elif r.status is FilterStatus.ABSENT:
            out[r.key] = BloomFilterRead(g, column, FilterState.ABSENT, None, "no Bloom filter")
        else:
            out[r.key] = BloomFilterRead(
                g, column, FilterState.UNUSABLE, None, r.reason, r.offset, r.length
            )
    return out


class _Entry:
    __slots__ = ("checked_at", "filter_bytes", "filters", "footer")

    def __init__(self, footer: Footer) -> None:
        self.footer = footer
        self.filters: dict[FilterKey, BloomFilterRead] = {}
        self.checked_at = time.monotonic()
        self.filter_bytes = 0


class BloomReader:
    """Reads footers and filters, with bounded in-memory caches for long-lived services.

    Cached entries are keyed by path and tied to the file's identity (size,
    ETag or inode + mtime). An entry younger than ``max_age`` seconds is used
    with no I/O at all; an older one costs one metadata request (HEAD or
    ``fstat``) to confirm the file is unchanged, else it is dropped and read
    again. So a file replaced under the same name is noticed within
    ``max_age`` seconds; pass ``max_age=0`` to check every time.

    Parameters
    ----------
    config:
        Reader limits (:class:`ReaderConfig`).
    options:
        Object-store options (:class:`pybloom_async.io.sources.StoreOptions` or a
        dict of its fields); by default obstore reads the environment.
    stats:
        Counts every request made through this reader.
    max_files:
        Footers kept in the cache (least recently used dropped first); 0
        disables caching.
    max_filter_bytes:
        Total bitset bytes kept in the cache.
    max_age:
        Seconds a cached entry is trusted without a check.
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
        self.options = _store_options(options)
        self.stats = stats if stats is not None else SourceStats()
        self.max_files = integer("max_files", max_files, minimum=0)
        self.max_filter_bytes = integer("max_filter_bytes", max_filter_bytes, minimum=0)
        self.max_age = seconds("max_age", max_age, allow_zero=True)
        self._cache: OrderedDict[str, _Entry] = OrderedDict()
        self._cached_bytes = 0
        self._io = anyio.CapacityLimiter(config.io_threads)

    def open(self, location: Location) -> ByteSource:
        """A source for a path, URL or listing entry, counted in :attr:`stats`."""
        return open_source(location, options=self.options, stats=self.stats, limiter=self._io)

    async def _cached(self, key: str, source: ByteSource) -> _Entry | None:
        entry = self._cache.get(key)
        if entry is None:
            return None
        if time.monotonic() - entry.checked_at >= self.max_age:
            if await source.identity() != entry.footer.identity:
                self._drop(key)
                return None
            entry.checked_at = time.monotonic()
        else:
            source.assume_identity(entry.footer.identity)
        self._cache.move_to_end(key)
        return entry

    def _drop(self, key: str) -> None:
        entry = self._cache.pop(key, None)
        if entry is not None:
            self._cached_bytes -= entry.filter_bytes

    def _store(self, key: str, entry: _Entry) -> None:
        if self.max_files <= 0:
            return
        if key not in self._cache:
            self._cache[key] = entry
        self._cache.move_to_end(key)
        while len(self._cache) > self.max_files or (
            self._cached_bytes > self.max_filter_bytes and len(self._cache) > 1
        ):
            self._drop(next(iter(self._cache)))

    def _add_filters(self, entry: _Entry, found: Mapping[FilterKey, BloomFilterRead]) -> None:
        for key, read in found.items():
            if key in entry.filters:
                continue
            entry.filters[key] = read
            if read.filter is not None:
                entry.filter_bytes += read.filter.num_bytes
                self._cached_bytes += read.filter.num_bytes

    async def footer(self, location: Location) -> Footer:
        """The footer of one file (from the cache when it is fresh).

        Raises
        ------
        ParquetFormatError, EncryptedFileError
            The file is not a readable Parquet file.
        SourceError, SourceNotFoundError
            It could not be read.
        """
        async with self.open(location) as source:
            entry = await self._entry(source)
            return entry.footer

    async def _entry(self, source: ByteSource) -> _Entry:
        key = source.path
        entry = await self._cached(key, source)
        if entry is None:
            entry = _Entry(await _read_footer(source, self.config))
            self._store(key, entry)
        return entry

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
        async with self.open(location) as source:
            entry = await self._entry(source)
            footer = entry.footer
            wanted = _wanted(footer, columns, row_groups)
            missing = [w for w in wanted if w[0] not in entry.filters]
            if missing:
                found = await _read_filters(source, footer, missing, self.config)
                if self.max_files > 0 and entry is self._cache.get(source.path):
                    self._add_filters(entry, found)
                    self._store(source.path, entry)
                else:
                    entry.filters.update(found)
            return footer, {w[0]: entry.filters[w[0]] for w in wanted}

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
        """Forget every cached footer and filter."""
        self._cache.clear()
        self._cached_bytes = 0


def _store_options(options: StoreOptions | Mapping[str, Any] | None) -> StoreOptions | None:
    if options is None or isinstance(options, StoreOptions):
        return options
    if isinstance(options, Mapping):
        try:
            return StoreOptions(**dict(options))
        except TypeError as exc:
            raise InvalidArgumentError(f"invalid object-store options: {exc}") from None
    raise InvalidArgumentError(
        f"options must be a StoreOptions or a dict, not {type(options).__name__}"
    )


def _reader(
    reader: BloomReader | None,
    config: ReaderConfig | None,
    options: StoreOptions | Mapping[str, Any] | None,
    stats: SourceStats | None,
) -> BloomReader:
    if reader is not None:
        return reader
    return BloomReader(
        config=config or DEFAULT_READER_CONFIG, options=options, stats=stats, max_files=0
    )


async def read_footer(
    location: Location,
    *,
    config: ReaderConfig | None = None,
    options: StoreOptions | Mapping[str, Any] | None = None,
    stats: SourceStats | None = None,
    reader: BloomReader | None = None,
) -> Footer:
    """Read and decode one file's footer (one suffix read, two for large footers).

    Parameters
    ----------
    location:
        A local path, a URL (``s3://``, ``gs://``, ``az://``, ``http(s)://``) or
        a :class:`~pybloom_async.io.sources.FileInfo` from a listing.
    config, options, stats:
        Reader limits, object-store options, request counters.
    reader:
        A long-lived :class:`BloomReader` to use (and fill) its cache.

    Raises
    ------
    ParquetFormatError, EncryptedFileError, SourceError, SourceNotFoundError
    """
    return await _reader(reader, config, options, stats).footer(location)


async def read_bloom_filters(
    location: Location,
    columns: Collection[str] | None = None,
    row_groups: Collection[int] | None = None,
    *,
    config: ReaderConfig | None = None,
    options: StoreOptions | Mapping[str, Any] | None = None,
    stats: SourceStats | None = None,
    reader: BloomReader | None = None,
) -> dict[FilterKey, BloomFilterRead]:
    """Read the Bloom filters of one file, keyed by ``(row_group, column_path)``.

    Every chosen (row group, column) gets an entry: ``OK`` with its filter,
    ``ABSENT``, or ``UNUSABLE`` with the reason (offset outside the data,
    length mismatch, bad header, size above the limit, ...).

    Raises
    ------
    PredicateError
        A column is not in the file.
    ParquetFormatError, EncryptedFileError, SourceError, SourceNotFoundError
        The file itself cannot be read.
    """
    return await _reader(reader, config, options, stats).bloom_filters(
        location, columns, row_groups
    )


# ---- blocking reads of local files, for the *_sync entry points -----------------------


class _BlockingLocalFileSource(LocalFileSource):
    """A local file read with ``pread`` in the calling thread: no worker thread, no loop.

    Its coroutines never suspend, so a caller's coroutine built only on them can
    be run by :func:`run_blocking`. Validation, counting and error mapping are
    those of :class:`~pybloom_async.io.sources.LocalFileSource`; the descriptor
    belongs to the reader, which keeps it for the file's next source.
    """

    def __init__(self, path: str, *, stats: SourceStats, kept: _Descriptors) -> None:
        super().__init__(path, stats=stats)
        self._kept = kept

    async def _descriptor(self) -> int:
        if self._fd is None:
            self._check_open()
            found = self._kept.get(self._path)
            if found is None:
                found = self._kept[self._path] = open_regular(self._path)
                self.stats.add_metadata()
            self._fd = found[0]
            self._remember(found[1])
        return self._fd

    async def _read(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        self._check_open()
        fd = await self._descriptor()
        return [read_exactly(fd, start, end, self._seek_lock) for start, end in ranges]

    async def aclose(self) -> None:
        """Forget the descriptor (the reader closes it); further reads raise SourceError."""
        self._closed = True
        self._fd = None


_Descriptors = dict[str, tuple[int, SourceIdentity]]


class BlockingLocalReader(BloomReader):
    """A :class:`BloomReader` for local files whose reads block the calling thread.

    Every coroutine of the reader completes without suspending; run them with
    :func:`run_blocking`, outside any event loop. Only local paths (and
    ``file://`` URLs) can be opened. A file stays open from its first read until
    :meth:`close` (or the end of a ``with`` block), so the footer and the filters
    of one call come from the same version of the file, and it is opened once.
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
        super().__init__(
            config=config,
            options=options,
            stats=stats,
            max_files=max_files,
            max_filter_bytes=max_filter_bytes,
            max_age=max_age,
        )
        self._kept: _Descriptors = {}
        self._local: dict[str | FileInfo, str] = {}

    def open(self, location: Location) -> ByteSource:
        """A blocking source for a local path, counted in :attr:`stats`.

        Raises
        ------
        InvalidArgumentError
            The location is not a local file.
        """
        key = location if isinstance(location, (str, FileInfo)) else os.fspath(location)
        path = self._local.get(key)
        if path is None:
            source = super().open(location)  # the checks of any reader's open
            if not isinstance(source, LocalFileSource):
                raise InvalidArgumentError(
                    "the blocking reader reads local files only", path=source.path
                )
            path = self._local[key] = source.path
        return _BlockingLocalFileSource(path, stats=self.stats, kept=self._kept)

    def close(self) -> None:
        """Close the files kept open. The reader may be used again (it reopens them)."""
        # Emptied in place: a source made before still looks here, and must reopen.
        descriptors = list(self._kept.values())
        self._kept.clear()
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
