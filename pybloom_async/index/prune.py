"""Pruning whole files by their sidecar indexes, then their row groups by in-file filters."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from ..checks import positive_int
from ..errors import (
    IndexStaleError,
    PredicateError,
    PyBloomError,
    SourceNotFoundError,
)
from ..io.address import is_local
from ..io.base import FileInfo, location_text
from ..io.files import FileStream, stream_paths
from ..io.identity import SourceIdentity, version_change
from ..predicate import Predicate
from ..pruning.api import CompiledPredicate, prune_files
from ..pruning.bounds import Outcome, index_view
from ..pruning.evaluate import before_membership, combine
from ..pruning.leaves import Leaf, leaf_column
from ..pruning.verdicts import Rule, Verdict, VerdictSink
from ..read.reader import BloomReader
from ..read.run import Run, RunOptions, open_run, run_options
from ..tasks.loops import sync_twin
from ..tasks.workers import AHEAD_PER_WORKER, for_each
from .format import (
    MAX_INDEX_BYTES,
    IndexedColumn,
    SidecarIndex,
    base_name,
    index_location,
)
from .parse import parse_index, read_index_data

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..read.run import RunKeywords


# ---- pruning ----------------------------------------------------------------------------------


def _eval_leaf(
    leaf: Leaf | None, column: str, entry: IndexedColumn | None, num_rows: int
) -> Outcome:
    if entry is None or leaf is None:
        return Outcome(False, Rule.NO_INDEX, f"{column} is not in the sidecar index")
    known = entry.null_count >= 0 and entry.descriptor.max_repetition_level == 0
    shared = before_membership(
        leaf,
        # No min/max here: the type's bounds and the null count decide, or the file stays.
        lambda: index_view(leaf, num_rows, entry.null_count),
        entry.null_count if known else None,
        "sidecar index",
        Rule.SIDECAR_INDEX,
    )
    if shared is not None:
        return shared
    if entry.filter.count_hashes(leaf.hashes) == 0:
        return Outcome(True, Rule.SIDECAR_INDEX, f"{leaf.label}: excluded by the sidecar index")
    return Outcome(False, Rule.MAY_MATCH, f"{leaf.label}: the sidecar index may contain it")


#: Why a file stays, most telling first (the in-file pruner has its own order).
_KEPT_ORDER = (Rule.NO_INDEX, Rule.NEVER_PRUNES, Rule.MAY_MATCH)


def _evaluate(compiled: CompiledPredicate, index: SidecarIndex) -> Outcome:
    def decide_leaf(leaf_p: Predicate) -> Outcome:
        column = leaf_column(leaf_p)
        entry = index.column(column)
        leaf = compiled.leaf(leaf_p, entry.descriptor) if entry is not None else None
        return _eval_leaf(leaf, column, entry, index.num_rows)

    return combine(compiled.normal, decide_leaf, _KEPT_ORDER, excluded_rule=Rule.SIDECAR_INDEX)


def _stale_reason(index: SidecarIndex, now: SourceIdentity, name: str) -> str | None:
    if index.data_file != name:
        return f"the index was built for {index.data_file[:200]!r}"
    return version_change(
        now,
        size=index.file_size,
        etag=index.file_etag,
        mtime=index.file_mtime_ns,
        inode=index.file_inode,
        ctime=index.file_ctime_ns,
    )


@dataclass
class _PruneContext:
    reader: BloomReader
    #: The run's predicate, compiled once: the indexes and the files' row groups share it.
    compiled: CompiledPredicate
    strict: bool
    max_index_bytes: int


async def _decide_file(ctx: _PruneContext, location: str | FileInfo) -> Verdict:
    path = location_text(location)
    index_path = index_location(path)
    got: dict[str, Any] = {}

    async def fetch_index() -> None:
        nonlocal index_path
        try:
            index_path, got["data"] = await read_index_data(ctx.reader, path, ctx.max_index_bytes)
        except PyBloomError as exc:
            got["index_error"] = exc

    async def fetch_identity() -> None:
        try:
            got["identity"] = await ctx.reader.identity(location)
        except PyBloomError as exc:
            got["file_error"] = exc

    if is_local(path):
        # No round trip to save: both here, one after the other (a lane thread: see `near`).
        await fetch_identity()
        await fetch_index()
    else:
        async with anyio.create_task_group() as tg:  # both at once: one round trip
            tg.start_soon(fetch_index)
            tg.start_soon(fetch_identity)
    try:
        if "file_error" in got:
            exc: PyBloomError = got["file_error"]
            if ctx.strict:
                raise exc
            return Verdict(path, None, None, True, f"file not pruned: {exc}", Rule.UNREADABLE)
        if "index_error" in got:
            raise got["index_error"]
        index = parse_index(got["data"], path=index_path, max_filter_bytes=ctx.max_index_bytes)
    except SourceNotFoundError as exc:
        if ctx.strict:
            raise exc.with_context(path=path) from None
        return Verdict(path, None, None, True, f"no sidecar index: {exc}", Rule.NO_INDEX)
    except PyBloomError as exc:
        if ctx.strict:
            raise exc.with_context(path=path) from None
        return Verdict(path, None, None, True, f"unusable sidecar index: {exc}", Rule.NO_INDEX)
    stale = _stale_reason(index, got["identity"], base_name(path))
    if stale is not None:
        if ctx.strict:
            raise IndexStaleError(f"sidecar index is stale: {stale}", path=path)
        return Verdict(path, None, None, True, f"stale sidecar index: {stale}", Rule.STALE_INDEX)
    try:
        out = _evaluate(ctx.compiled, index)
    except PredicateError as exc:  # a literal that is not of its column's type
        raise exc.with_context(path=path) from None
    return Verdict(path, None, index.num_rows, not out.excluded, out.reason, out.rule)


# Long because: the docstring documents every parameter and error (64 lines); the code is 30.
async def prune_with_index(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo] | FileStream,
    where: Predicate | str,
    *,
    run: RunOptions | None = None,
    row_groups: bool = True,
    max_index_bytes: int = MAX_INDEX_BYTES,
    index_verdicts: VerdictSink | None = None,
    require_columns: bool = True,
    on_file: Callable[[list[Verdict]], None] | None = None,
    **keywords: Unpack[RunKeywords],
) -> list[Verdict]:
    """Decide which files (then row groups) may hold matching rows, from sidecar indexes.

    The files are taken as they are listed; their indexes are read
    concurrently, one request each (a second where the index has the name earlier
    versions wrote, or none: :func:`~pybloom_async.index.parse.read_index_data`), and
    checked against the data file's current size and modification time or ETag. Each
    file gets a file-level verdict (``row_group`` None, ``num_rows`` the file's rows):
    pruned by the index
    (:attr:`Rule.SIDECAR_INDEX`), or kept: the index admits a value
    (``MAY_MATCH``), a NULL/NaN probe (``NEVER_PRUNES``), no usable index or a
    predicate column not indexed (``NO_INDEX``), or a stale index
    (``STALE_INDEX``). With ``row_groups=True`` the kept files then go through
    :func:`pybloom_async.pruning.api` (in-file filters and statistics) while
    later indexes are still read, and their row-group verdicts replace the file
    verdict.

    Parameters
    ----------
    paths:
        Files, directories or object-store prefixes (listed entries carry the
        size and ETag, so no HEAD is needed; files named by URL cost one HEAD).
    where:
        A predicate or its text form: ``=``, ``IN``, ``<=>`` (``<=> NULL`` keeps
        files with nulls and prunes files without), AND, OR.
    run, **keywords:
        The run's options (:class:`~pybloom_async.RunOptions`), as for
        :func:`pybloom_async.prune`. ``concurrency`` counts a file from its index
        read until its verdicts are out, across both passes; ``on_error="raise"`` raises on a
        missing, damaged, stale or oversized index (and on what :func:`prune` raises
        for) instead of keeping the file; ``progress`` is called after each file's
        index is decided (``total``: the files listed so far).
    row_groups:
        Also prune the row groups of the files the indexes keep.
    max_index_bytes:
        Indexes larger than this are not read (the file is kept).
    index_verdicts:
        If given, the file-level verdicts of the index pass are appended to it
        as they are decided, in file order (for reports: how many files the
        indexes pruned, were stale or missing). A list, or any object with
        ``append`` (one that counts them holds nothing per file).
    require_columns:
        As for :func:`pybloom_async.pruning.api`: checked by the row-group pass, and
        only when the indexes ruled out no file (the footer of a file they rule
        out is not read, so its columns are unknown).
    on_file:
        As for :func:`pybloom_async.pruning.api`: each file's final verdicts
        (its file verdict, or the row-group verdicts that replace it), in file
        order, handed over as the row-group pass decides them; the list
        returned is then empty. Nothing is held per file: a file the index
        pruned waits only for the kept files before it.

    Returns
    -------
    list of Verdict
        In file order; row-group order within a file (empty with ``on_file``).

    Raises
    ------
    PredicateError
        ``where`` is malformed, a literal is not a value of its column's type
        (naming the file), or no file has a column of ``where`` (see
        ``require_columns``).
    PyBloomError
        With ``on_error="raise"``, the first problem met.
    """
    opts = run_options(run, keywords, "prune_with_index")
    compiled = CompiledPredicate(where)
    async with open_run(opts) as r:
        ctx = _PruneContext(
            reader=r.reader,
            compiled=compiled,
            strict=opts.raises,
            max_index_bytes=positive_int("max_index_bytes", max_index_bytes),
        )
        out: list[Verdict] = []
        emit = on_file if on_file is not None else out.extend
        files = stream_paths(paths, r.reader)
        if not row_groups:

            async def decide(loc: str | FileInfo) -> Verdict:
                return await r.near(location_text(loc), _decide_file, ctx, loc)

            def one(v: Verdict) -> None:
                if index_verdicts is not None:
                    index_verdicts.append(v)
                emit([v])

            await for_each(files, decide, r.limit, r.progress, one)
            return out
        await _Passes(ctx, r, index_verdicts, emit).run(files, require_columns)
    return out


class _Passes:
    """The index pass and the row-group pass at once, over the files as they are listed.

    The index pass decides files in order and queues its verdicts; the row-group pass
    takes the kept files from the queue as it needs them. Verdicts come out in file
    order: a file the index pruned waits only for the kept files before it.

    Two bounds hold across both passes:

    * ``limit`` slots: a file holds one from the start of its index read until the
      index prunes it (when the row-group pass takes its verdict) or, kept, until its
      row-group verdicts are out. The files being read, and the worker threads their
      reads use, are as many as in a run without indexes (each pass with its own
      ``limit`` doubled the threads: 2.5 MiB of their stacks over 20,000 files,
      measured by ``tests/robustness/test_cli_memory.py``).
    * ``AHEAD_PER_WORKER * limit`` verdicts held: decided but not taken, or waiting
      behind a kept file still being read. A pruned file waiting its turn holds no
      slot, so a slow kept file does not stop the index pass; it stops this far ahead.
    """

    def __init__(
        self,
        ctx: _PruneContext,
        run: Run,
        index_verdicts: VerdictSink | None,
        emit: Callable[[list[Verdict]], None],
    ) -> None:
        self.ctx, self.job, self.sink, self.emit = ctx, run, index_verdicts, emit
        self.queue: deque[tuple[str | FileInfo, Verdict]] = deque()  # decided, not yet taken
        self.order: deque[Verdict] = deque()  # taken: kept files being read, pruned ones between
        self.slots = anyio.Semaphore(run.limit)
        self.held = AHEAD_PER_WORKER * run.limit
        self.changed = anyio.Event()
        self.index_done = False
        self.pruned_any = False

    def wake(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    async def admitted(self, files: FileStream) -> AsyncIterator[str | FileInfo]:
        """The files, each once it has a slot and room: taken in file order, so a file
        never waits for a slot that only a later one, delivered after it, could free."""
        try:
            async for location in files:
                while len(self.queue) + len(self.order) >= self.held:
                    await self.changed.wait()
                await self.slots.acquire()
                yield location
        finally:
            await files.aclose()

    async def decide(self, location: str | FileInfo) -> tuple[str | FileInfo, Verdict]:
        try:
            # A local file's index and stat in one thread of the run's lane, as its reads.
            verdict = await self.job.near(location_text(location), _decide_file, self.ctx, location)
            return location, verdict
        except BaseException:
            self.slots.release()
            raise

    def decided(self, item: tuple[str | FileInfo, Verdict]) -> None:
        if self.sink is not None:
            self.sink.append(item[1])
        self.pruned_any = self.pruned_any or not item[1].kept
        self.queue.append(item)
        self.wake()

    async def kept_files(self) -> AsyncIterator[str | FileInfo]:
        while True:
            while not self.queue and not self.index_done:
                await self.changed.wait()
            if not self.queue:
                return
            location, verdict = self.queue.popleft()
            if verdict.kept:
                self.order.append(verdict)
                yield location
                continue
            self.slots.release()
            if self.order:
                self.order.append(verdict)  # after a kept file still being read
            else:
                self.emit([verdict])
                self.wake()

    def row_groups_of(self, verdicts: list[Verdict]) -> None:
        """A kept file's row-group verdicts (prune hands over one list per file, in order)."""
        while not self.order[0].kept:
            self.emit([self.order.popleft()])
        kept = self.order.popleft()
        # A kept file without row groups keeps its file verdict.
        self.emit(verdicts or [kept])
        self.slots.release()
        while self.order and not self.order[0].kept:
            self.emit([self.order.popleft()])
        self.wake()

    async def run(self, files: FileStream, require_columns: bool) -> None:
        failure: list[Exception] = []

        async def index_pass() -> None:
            try:
                await for_each(
                    FileStream(self.admitted(files)),
                    self.decide,
                    self.job.limit,
                    self.job.progress,
                    self.decided,
                )
            except Exception as exc:
                failure.append(exc)
                tg.cancel_scope.cancel()
            finally:
                self.index_done = True
                self.wake()

        async def row_group_pass() -> None:
            try:
                # The same run (reader, limit): each kept file through the one per-file
                # pruning, which drops its footer and filters once it is decided.
                await prune_files(
                    self.job,
                    FileStream(self.kept_files()),
                    self.ctx.compiled,
                    # A file the index pruned had its footer unread: its columns are unknown.
                    lambda: require_columns and not self.pruned_any,
                    self.row_groups_of,
                )
            except Exception as exc:
                failure.append(exc)
                tg.cancel_scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(index_pass)
            tg.start_soon(row_group_pass)
        if failure:
            raise failure[0]
        while self.order:  # pruned files after the last kept one
            self.emit([self.order.popleft()])


prune_with_index_sync = sync_twin(prune_with_index)
