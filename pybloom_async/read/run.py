"""A run over many files: its options (one object), its reader, its limit, the per-file hop.

Every multi-file entry point takes its run options as one value, :class:`RunOptions`
(``run=``), or as keyword arguments of the same names (:class:`RunKeywords`, written once
here and spelled in the signatures as ``**keywords: Unpack[RunKeywords]``).

:meth:`Run.with_file` is how every multi-file caller reaches one file: the file is opened
once, and the work given runs on it; a local file's whole work (open, stat, tail, footer,
filters, probes, and for a lookup its rows) runs inline in one worker-thread call (see
:mod:`pybloom_async.tasks.loops`), an object store's on the event loop with its reads
concurrent.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Collection, Coroutine, Mapping
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from ..checks import OnError, error_policy, positive_int
from ..errors import InvalidArgumentError
from ..io.address import is_local
from ..io.base import FileInfo, SourceStats, location_text
from ..io.environment import environment_read_once
from ..io.files import local_only
from ..io.store import StoreOptions, as_store_options
from ..tasks.lanes import Lane, open_lane
from ..tasks.loops import (
    callbacks_run,
    inline,
    inline_in_worker,
    inline_stream_in_worker,
    on_loop,
    run_inline,
    sync_twin,
)
from ..tasks.pace import Pace
from ..tasks.workers import Batches, spread_over
from .fetch import BloomFilterRead, FilterKey, Footer, ReaderConfig
from .reader import BloomReader, OpenedFile

if TYPE_CHECKING:
    from typing_extensions import Unpack


T = TypeVar("T")
Location = str | os.PathLike[str] | FileInfo


@dataclass(frozen=True)
class RunOptions:
    """How a run over many files goes; every multi-file entry point takes one (``run=``).

    Parameters
    ----------
    on_error:
        What a problem (an unreadable file, a damaged filter or index, a missing column)
        does. ``"raise"``: the first one fails the call, naming it. ``"skip"``: it is
        recorded and the answer stays correct: pruning keeps the file or row group, with
        the reason in its verdict (never pruned on a problem); a lookup leaves an
        unreadable file's rows out and reports its error (``skipped``). None (default):
        the entry point's own default, ``"skip"`` for pruning, the indexes, the lake index
        and datasets, ``"raise"`` for lookups.
    concurrency:
        Files read at once (default: the reader config's, 64).
    options:
        Object-store options (:class:`~pybloom_async.io.store.StoreOptions` or a dict of
        its fields: endpoint, region, credentials, allow_http, ...); by default obstore
        reads the standard environment variables.
    stats:
        Counts requests and bytes (given with ``reader``: this run's, which the reader's
        own stats count too).
    config:
        Reader limits and tuning (:class:`~pybloom_async.ReaderConfig`).
    reader:
        A long-lived :class:`~pybloom_async.BloomReader` whose cache to use (and keep
        filled); its own options, stats and config then apply.
    progress:
        Called as ``progress(done, total)`` after each file (``total`` grows while a
        directory or prefix is still being listed).
    strict:
        Deprecated: ``strict=True`` is ``on_error="raise"``, ``strict=False``
        ``on_error="skip"`` (a DeprecationWarning; not given with ``on_error``). Read
        :attr:`raises` for the policy.

    Raises
    ------
    InvalidArgumentError
        A field of the wrong kind or out of range, or ``strict`` with ``on_error``.
    """

    on_error: OnError | None = None
    concurrency: int | None = None
    options: StoreOptions | Mapping[str, Any] | None = None
    stats: SourceStats | None = None
    config: ReaderConfig | None = None
    reader: BloomReader | None = None
    progress: Callable[[int, int], None] | None = None
    strict: dataclasses.InitVar[bool | None] = None

    def __post_init__(self, strict: bool | None) -> None:
        object.__setattr__(self, "on_error", error_policy(self.on_error, strict))
        if self.concurrency is not None:
            positive_int("concurrency", self.concurrency)
        object.__setattr__(self, "options", as_store_options(self.options))
        for name, kind in (
            ("stats", SourceStats),
            ("config", ReaderConfig),
            ("reader", BloomReader),
        ):
            value = getattr(self, name)
            if value is not None and not isinstance(value, kind):
                raise InvalidArgumentError(
                    f"{name} must be a {kind.__name__}, not {type(value).__name__}", value=value
                )
        if self.progress is not None and not callable(self.progress):
            raise InvalidArgumentError("progress must be callable", value=self.progress)

    @property
    def raises(self) -> bool:
        """Whether the first problem fails the call (``on_error="raise"``; None, the
        default, is ``"skip"`` here: the lookups, whose default is ``"raise"``, read
        :attr:`on_error` themselves)."""
        return self.on_error == "raise"


async def handed_whole(opts: RunOptions, work: Callable[[RunOptions], Coroutine[Any, Any, T]]) -> T:
    """``work(opts)``, a run of local paths, handed whole to one worker thread
    (:func:`~pybloom_async.tasks.loops.inline_in_worker`, its reader's whole-run limiter):
    one hand-off where the event loop's own path hands each file to a thread and back.
    ``progress`` is told on the caller's event loop, and every call of it has run when
    this returns; what it raises there is raised here (at the run's next call of it, or
    at the end)."""
    limiter = opts.reader.whole_run_limiter if opts.reader is not None else None
    progress = on_loop(opts.progress)
    done = await inline_in_worker(work, limiter, dataclasses.replace(opts, progress=progress))
    await callbacks_run()
    if progress is not None:
        progress.raise_failure()
    return done


async def streamed_whole(
    opts: RunOptions, work: Callable[[RunOptions], AsyncGenerator[T, None]], ahead: int
) -> AsyncGenerator[T, None]:
    """The items of ``work(opts)``, a streamed run of local paths, handed whole to one
    worker thread (:func:`~pybloom_async.tasks.loops.inline_stream_in_worker`, at most
    ``ahead`` items waiting for the caller; not counted in the reader's whole-run limiter,
    as the caller holds the stream as long as it likes), as :func:`handed_whole` hands a
    run: ``progress`` is told on the caller's event loop, and every call of it has run
    when the stream ends; what it raises there is raised here."""
    progress = on_loop(opts.progress)
    stream = inline_stream_in_worker(work, ahead, dataclasses.replace(opts, progress=progress))
    async with aclosing(stream) as items:
        async for item in items:
            yield item
    await callbacks_run()
    if progress is not None:
        progress.raise_failure()


class RunKeywords(TypedDict, total=False):
    """:class:`RunOptions`' fields as keyword arguments (``**keywords: Unpack[RunKeywords]``)."""

    on_error: OnError | None
    concurrency: int | None
    options: StoreOptions | Mapping[str, Any] | None
    stats: SourceStats | None
    config: ReaderConfig | None
    reader: BloomReader | None
    progress: Callable[[int, int], None] | None
    strict: bool | None


_FIELDS = frozenset(f.name for f in dataclasses.fields(RunOptions)) | {"strict"}


def run_options(run: RunOptions | None, keywords: Mapping[str, Any], caller: str) -> RunOptions:
    """``run`` with the keyword arguments given beside it applied (they win).

    Raises
    ------
    TypeError
        A keyword that is not a run option, as Python says it for any function.
    InvalidArgumentError
        ``run`` is not a RunOptions, or a value is invalid.
    """
    unknown = sorted(set(keywords) - _FIELDS)
    if unknown:
        raise TypeError(f"{caller}() got an unexpected keyword argument {unknown[0]!r}")
    if run is None:
        return RunOptions(**keywords) if keywords else _DEFAULT
    if not isinstance(run, RunOptions):
        raise InvalidArgumentError(f"run must be a RunOptions, not {type(run).__name__}", value=run)
    return dataclasses.replace(run, **keywords) if keywords else run


_DEFAULT = RunOptions()


#: Local files handed to a run's lane at once, at most (:attr:`Run.batches`): a warm local
#: file's work is a few hundred microseconds, and each hand-off costs about as much; a
#: handful more keeps the files' results coming back to the event loop steadily.
LOCAL_BATCH = 8


@dataclass
class Run:
    """One run over many files: its options, its reader (its own unless one was given), the
    number of files read at once, and the lane whose threads run local files' work
    (``ReaderConfig.local_threads`` of them, within the reader's limiter); None inline."""

    options: RunOptions
    reader: BloomReader
    owned: bool
    limit: int
    lane: Lane | None
    pace: Pace = dataclasses.field(default_factory=Pace)

    @property
    def strict(self) -> bool:
        """Whether the first problem raises (:attr:`RunOptions.raises`)."""
        return self.options.raises

    @property
    def progress(self) -> Callable[[int, int], None] | None:
        """The caller's progress callback, if any."""
        return self.options.progress

    @property
    def batches(self) -> Batches | None:
        """How :func:`~pybloom_async.tasks.workers.for_each` hands this run's local files to
        its lane: :data:`LOCAL_BATCH` at a time (None inline: no lane)."""
        lane = self.lane
        if lane is None or inline():
            return None
        return Batches(LOCAL_BATCH, _is_local, functools.partial(lane.run, run_inline), self.pace)

    def done(self, location: Location) -> None:
        """A file is decided: the run's own reader drops its footer and filters.

        Kept to the end, every footer and filter of the run would stay in memory
        (about 5 KiB per small file); a caller's reader keeps its cache as it is.
        """
        if self.owned:
            self.reader.forget(location)

    async def with_file(
        self,
        location: Location,
        work: Callable[[OpenedFile], Coroutine[Any, Any, T]],
        footer: Footer | None = None,
        quick: Callable[[], T | Footer | None] | None = None,
    ) -> T:
        """``work`` on the file, opened once: the one way a run reaches a file.

        A local file's work runs inline in a thread of the run's lane (its reads block that
        thread; the lane's threads take file after file without waiting for the event
        loop), so a file costs one hand-off however many reads it makes; an object store's
        runs here, its reads concurrent. Running inline already, it runs here. ``footer``:
        the file's footer kept elsewhere (see :meth:`BloomReader.opened`). ``quick``: a
        blocking call tried first in the same thread, whose answer is the file's, or its
        footer for ``work`` (a local file pruned in one C call:
        :mod:`~pybloom_async.pruning.file_pass`); None: ``work`` as without it. Running
        inline, ``quick`` is tried before any coroutine or opened file around it (a file
        it answers costs its C call alone).
        """
        if quick is not None and inline():
            found, footer = _tried(quick, footer)
            if found is not None:
                return found
            quick = None
        return await self.near(location, self._opened, location, work, footer, quick)

    async def near(
        self,
        location: Location,
        function: Callable[..., Coroutine[Any, Any, T]],
        *args: Any,
    ) -> T:
        """``function(*args)``, the work of one file (or of the files beside it), in a
        thread of the lane when the file is local (as :meth:`with_file`), here otherwise."""
        if self.lane is not None and not inline() and _is_local(location):
            return await self.lane.run(self.pace.timed, run_inline, function, *args)
        return await function(*args)

    async def _opened(
        self,
        location: Location,
        work: Callable[[OpenedFile], Coroutine[Any, Any, T]],
        footer: Footer | None,
        quick: Callable[[], T | Footer | None] | None = None,
    ) -> T:
        if quick is not None:
            found, footer = _tried(quick, footer)
            if found is not None:
                return found
        async with self.reader.opened(location, footer) as file:
            return await work(file)


def _tried(
    quick: Callable[[], T | Footer | None], footer: Footer | None
) -> tuple[T | None, Footer | None]:
    """:meth:`Run.with_file`'s ``quick`` called: its answer (None: the file's work is still
    to do), and the footer to open the file with (the one ``quick`` read, else ``footer``)."""
    found = quick()
    if isinstance(found, Footer):
        return None, found
    return found, footer


class _BothStats(SourceStats):
    """Counts that go to two SourceStats: a run's (``stats=``) and its reader's own."""

    def __init__(self, first: SourceStats, second: SourceStats) -> None:
        super().__init__()
        self._pair = (first, second)

    def add_reads(self, requests: int, nbytes: int) -> None:
        for stats in self._pair:
            stats.add_reads(requests, nbytes)

    def add_metadata(self, requests: int = 1) -> None:
        for stats in self._pair:
            stats.add_metadata(requests)


class _CountedReader(BloomReader):
    """A caller's reader for one run given ``stats=`` too: the same reader (its instance
    dictionary is the caller's reader's, so the cache, limiters and learned suffix are one),
    whose requests in this run are counted in the run's ``stats`` as well as in its own.
    Other runs of that reader, at the same time, count in its own stats only."""

    __slots__ = ("_counted",)

    def __init__(self, reader: BloomReader, stats: SourceStats) -> None:
        self.__dict__ = reader.__dict__  # one state, shared with the caller's reader
        self._counted = _BothStats(reader.__dict__["stats"], stats)

    @property
    def stats(self) -> SourceStats:  # type: ignore[override]  # read-only: the reader's own is kept
        """The run's counts and the reader's own at once."""
        return self._counted


def release_thread_memory() -> None:
    """Hand back what pyarrow's allocator keeps for the calling thread (its default pool,
    mimalloc, keeps freed pages per thread until that thread calls into it again: a lane's
    threads, idle after a burst of lookups, held 40-60 MiB). Nothing if pyarrow is not
    loaded; microseconds when there is nothing to hand back."""
    pyarrow = sys.modules.get("pyarrow")
    if pyarrow is not None:
        pyarrow.default_memory_pool().release_unused()


def _is_local(location: Location) -> bool:
    return is_local(location_text(location))


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


@asynccontextmanager
async def open_run(
    options: RunOptions | None = None,
    *,
    default_concurrency: int | None = None,
    max_files: int = 0,
) -> AsyncIterator[Run]:
    """The run's reader (``options.reader``, or one made here and cleared at the end).

    Without ``options.concurrency`` the run reads ``default_concurrency`` files at once,
    or the reader config's number. A reader made here caches nothing by default (each
    file's work reads what it needs once, in one :meth:`Run.with_file` call); with
    ``max_files`` it caches that many files, each dropped when it is done
    (:meth:`Run.done`).

    Raises
    ------
    InvalidArgumentError
        A reader argument is invalid.
    """
    opts = options if options is not None else _DEFAULT
    owned = opts.reader is None
    rdr = opts.reader or BloomReader(
        config=opts.config or ReaderConfig(),
        options=opts.options,
        stats=opts.stats,
        max_files=max_files,
    )
    if owned:
        rdr.probes_in_place = True  # it keeps a file only while the file is read
    if opts.reader is not None and opts.stats is not None and opts.stats is not rdr.stats:
        rdr = _CountedReader(rdr, opts.stats)
    wanted = default_concurrency if opts.concurrency is None else opts.concurrency
    limit = files_at_once(wanted, rdr.config)
    try:
        with environment_read_once():
            threads = min(limit, rdr.config.local_threads or 1)
            if inline():
                # No event loop: the files' work runs here, one after another, or spread
                # over as many threads as a lane would have once files prove slow.
                with spread_over(threads):
                    yield Run(opts, rdr, owned, limit, None)
                return
            pace = Pace()
            async with open_lane(threads, rdr.local_limiter, release_thread_memory, pace) as lane:
                yield Run(opts, rdr, owned, limit, lane, pace)
    finally:
        if owned:
            rdr.clear()


async def read_footer(
    location: Location, *, run: RunOptions | None = None, **keywords: Unpack[RunKeywords]
) -> Footer:
    """Read and decode one file's footer (one suffix read, two for large footers).

    Parameters
    ----------
    location:
        A local path, a URL (``s3://``, ``gs://``, ``az://``, ``http(s)://``) or
        a :class:`~pybloom_async.io.base.FileInfo` from a listing.
    run, **keywords:
        The run's options (:class:`RunOptions`): ``options``, ``stats``, ``config``, and
        ``reader``, a long-lived :class:`BloomReader` to use (and fill) its cache.

    Raises
    ------
    ParquetFormatError, EncryptedFileError, SourceError, SourceNotFoundError
    """
    async with open_run(run_options(run, keywords, "read_footer")) as r:
        return await r.with_file(location, OpenedFile.footer)


async def read_bloom_filters(
    location: Location,
    columns: Collection[str] | None = None,
    row_groups: Collection[int] | None = None,
    *,
    run: RunOptions | None = None,
    **keywords: Unpack[RunKeywords],
) -> dict[FilterKey, BloomFilterRead]:
    """Read the Bloom filters of one file, keyed by ``(row_group, column_path)``.

    Every chosen (row group, column; default all) gets an entry: ``OK`` with its
    filter, ``ABSENT``, or ``UNUSABLE`` with the reason (offset outside the data,
    length mismatch, bad header, size above the limit, ...). ``run`` and the
    keywords are as for :func:`read_footer`.

    Raises
    ------
    PredicateError
        A column is not in the file.
    InvalidArgumentError
        A row group does not exist.
    ParquetFormatError, EncryptedFileError, SourceError, SourceNotFoundError
        The file itself cannot be read.
    """

    async def work(file: OpenedFile) -> dict[FilterKey, BloomFilterRead]:
        return await file.filters(columns, row_groups)

    async with open_run(run_options(run, keywords, "read_bloom_filters")) as r:
        return await r.with_file(location, work)


read_footer_sync = sync_twin(read_footer, inline_when=local_only("location"))
read_bloom_filters_sync = sync_twin(read_bloom_filters, inline_when=local_only("location"))
