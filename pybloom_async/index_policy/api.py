"""``prune`` and ``prune_sync``: the index the policy chooses (:mod:`.choice`), then the
files' own filters.

``use_index="none"`` is :func:`pybloom_async.pruning.api.prune` unchanged; ``"sidecar"`` is
:func:`pybloom_async.index.prune.prune_with_index`; ``"auto"`` and ``"lake"`` read the lake
index under one directory or prefix (or a table's), then prune the files it keeps.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgumentError
from ..index.prune import prune_with_index
from ..io.address import is_local
from ..io.base import FileInfo
from ..io.files import FileStream, expand_paths, local_paths
from ..lake.digest import digest_schemas
from ..lake.prune import IndexEntry, index_pass_run, row_group_verdicts, verdicts_at
from ..lake.tables import prune_table_with_lake_index
from ..predicate import Predicate
from ..pruning.api import CompiledPredicate, PrunePaths
from ..pruning.api import prune as prune_in_files
from ..pruning.partition_types import Partitioning
from ..pruning.partitions import PartitionPredicate, check_once_decided
from ..pruning.verdicts import Verdict, VerdictSink, hand_over_by_file
from ..read.run import Run, RunOptions, handed_whole, open_run, run_options
from ..tables import TableSource, files_only_columns, resolve_table, table_kind
from ..tasks.loops import inline, on_loop, sync_twin, to_worker
from ..tasks.workers import gather
from .choice import IndexChoice, index_choice, lake_root, lake_segments_for, no_lake_index

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..read.run import RunKeywords


# Long because: the docstring documents every parameter (41 lines); the code is 34.
async def prune(
    paths: PrunePaths,
    where: Predicate | str,
    *,
    use_index: IndexChoice | None = "auto",
    row_groups: bool = True,
    run: RunOptions | None = None,
    require_columns: bool = True,
    on_file: Callable[[list[Verdict]], None] | None = None,
    files: Sequence[str | FileInfo] | FileStream | None = None,
    partitioning: Any = "hive",
    index_verdicts: VerdictSink | None = None,
    **keywords: Unpack[RunKeywords],
) -> list[Verdict]:
    """Decide which row groups (or files) may hold rows matching ``where``.

    Local paths (with ``use_index`` ``"auto"`` or ``"none"`` and ``row_groups``) are
    pruned as :func:`prune_sync` prunes them, in one worker thread (a cancellation stops
    it before its next file); ``on_file`` and ``progress`` are called on the caller's
    event loop, in order, and have all run when this returns.

    Parameters
    ----------
    paths, where, run, require_columns, on_file, partitioning, **keywords:
        As for :func:`pybloom_async.pruning.api.prune` (``run`` and the keywords are
        the run's options, :class:`~pybloom_async.RunOptions`; ``partitioning``:
        ``key=value`` folders as columns, decided per file before it is read; the
        sidecar pass does not read them: with ``use_index="sidecar"``, a predicate on a
        partition column finds no such column).
    use_index:
        Which index serves the run (the policy of every entry point: see
        ``docs/lake-index.md``, "Which index serves a run"). ``"auto"`` (default): the
        lake index under ``paths`` (one directory or prefix, or a Delta or Iceberg
        table's) for the files it covers and finds fresh, the files' own filters for the
        others and when there is none. ``"lake"``: the same, but a missing lake index is
        an error. ``"sidecar"``: each file's sidecar index first
        (:func:`pybloom_async.prune_with_index`). ``"none"`` (or None): the files' own
        filters only.
    row_groups:
        True: a file the lake index rules out has one verdict with ``row_group`` None
        (rule ``lake_index``, its row count), every other file its row groups' verdicts.
        False: file verdicts only (``row_group`` None; without an index found, every
        file is kept with rule ``no_index``); it needs an index (not ``"none"``).
    files:
        With ``"auto"`` or ``"lake"``: the lake's files (a list, or a
        :class:`~pybloom_async.io.files.FileStream` read as it comes where no index
        serves), instead of listing ``paths`` (which is then only the lake's root).
    index_verdicts:
        If given, the file verdicts of the index pass, when an index serves the run, are
        appended to it (for reports): a list, or any object with ``append``.

    Raises
    ------
    InvalidArgumentError
        An unknown ``use_index``; ``"lake"`` with no lake index under ``paths``;
        ``row_groups=False`` with ``"none"``.
    IndexStaleError
        With ``"lake"`` and ``on_error="raise"``: a file changed since the index was built.
    PredicateError, PyBloomError
        As the pruner chosen.
    """
    choice = index_choice(use_index)
    opts = run_options(run, keywords, "prune")
    if (
        not inline()
        and _inline_allowed_for(paths, use_index, row_groups)
        and not isinstance(files, FileStream)  # a stream is read on the caller's loop
    ):
        # Local paths: the whole prune in one worker thread, as prune_sync runs it (one
        # hand-off, not one per file). on_file is called on the caller's event loop, in
        # file order, every call has run when this returns, and what it raises stops the
        # run and is raised here.
        told = on_loop(on_file)
        verdicts = await handed_whole(
            opts,
            lambda whole: prune(
                paths, where, use_index=use_index, row_groups=row_groups, run=whole,
                require_columns=require_columns, on_file=told, files=files,
                partitioning=partitioning, index_verdicts=index_verdicts,
            ),
        )  # fmt: skip
        if told is not None:
            told.raise_failure()  # the last call's: every call has run
        return verdicts
    root = lake_root(paths)
    if files is not None and (choice not in ("auto", "lake") or root is None):
        raise InvalidArgumentError("files= goes with use_index 'auto' or 'lake' and the root")
    if choice == "none" and not row_groups:
        raise InvalidArgumentError("row_groups=False needs an index (use_index)")
    if table_kind(paths) is not None and choice != "none":
        return await _prune_table(paths, where, choice, opts, row_groups, on_file)
    if choice == "sidecar":
        return await prune_with_index(
            paths, where, run=opts, row_groups=row_groups, require_columns=require_columns,
            on_file=on_file, index_verdicts=index_verdicts,
        )  # fmt: skip
    if choice == "lake" and root is None:
        raise no_lake_index(None)
    if root is None and not row_groups:
        raise InvalidArgumentError(
            "row_groups=False needs an index: one directory or prefix with its lake index, "
            "or use_index='sidecar'"
        )
    lake = _Lake(choice, row_groups, require_columns, partitioning, index_verdicts)
    async with open_run(opts) as r:
        if choice == "lake" or not row_groups:
            # The index is needed, so are the files: both listed at once.
            return hand_over_by_file(await lake.prune(r, root or "", where, files), on_file)
        # One listing of the index folder (none while a long-lived reader keeps it). On an
        # object store it goes beside the files' listing, one round trip (as for lookups):
        # a lake without an index pays no round trip for it, and an unreachable store
        # fails in one request's time. A local folder's costs a stat (and files given as
        # a list need no listing): the files are then pruned as they are listed.
        if root is not None and not is_local(root) and not isinstance(files, Sequence):
            stream = files

            async def listing() -> list[str | FileInfo]:
                if stream is None:
                    return await expand_paths(root, r.reader)
                return [f async for f in stream]

            files, found = await gather(
                lambda step: step(),
                [(listing,), (lambda: lake_segments_for(choice, root, r.reader),)],
            )
        else:
            found = await lake_segments_for(choice, root, r.reader)
        if found:
            verdicts = await lake.prune(r, root or "", where, files, found)
            return hand_over_by_file(verdicts, on_file)
        # No lake index serves the run: the files' own filters, read as they are listed.
        given = dataclasses.replace(opts, reader=r.reader)
        return await prune_in_files(
            paths if files is None else files, where, run=given,
            require_columns=require_columns, on_file=on_file, partitioning=partitioning,
        )  # fmt: skip


async def _prune_table(
    table_source: TableSource,
    where: Predicate | str,
    choice: IndexChoice,
    opts: RunOptions,
    row_groups: bool,
    on_file: Callable[[list[Verdict]], None] | None,
) -> list[Verdict]:
    """A Delta or Iceberg table's live files by the lake index that belongs to it (its
    schema was checked: no column check), then their own filters."""
    if choice == "sidecar":
        raise InvalidArgumentError(
            "use_index='sidecar' reads an index beside each file: give paths, not a table "
            "(or use_index='lake' with the lake index at the table's root)"
        )
    compiled = CompiledPredicate(where)  # once for the run: the index and the files share it
    predicate = compiled.predicate
    table = await to_worker(resolve_table, table_source, predicate, opts.options)
    files_only_columns(table, predicate, opts.raises)
    return await prune_table_with_lake_index(
        table, compiled, run=opts, row_groups=row_groups, on_file=on_file,
        required=choice == "lake",
    )  # fmt: skip


@dataclass(frozen=True)
class _Lake:
    """The lake-index pass of a run: its files and the index listed at once (partition
    folders decided), the files decided by the index, then the kept files' row groups by
    their own filters."""

    choice: IndexChoice
    row_groups: bool
    require_columns: bool
    partitioning: Any
    index_verdicts: VerdictSink | None

    async def prune(
        self,
        r: Run,
        root: str,
        where: Predicate | str,
        files: Sequence[str | FileInfo] | FileStream | None,
        listed_segments: list[FileInfo] | None = None,
    ) -> list[Verdict]:
        compiled = CompiledPredicate(where)
        parts = PartitionPredicate(compiled, Partitioning.of(self.partitioning))

        async def listing() -> list[str | FileInfo]:
            if isinstance(files, FileStream):
                return [f async for f in files]
            if files is not None:
                return list(files)
            return await expand_paths(root, r.reader, folders=parts.folder_filter())

        async def segments() -> list[FileInfo]:
            if listed_segments is not None:
                return listed_segments
            return await lake_segments_for(self.choice, root, r.reader)

        listed, found = await gather(lambda step: step(), [(listing,), (segments,)])
        parts.settle(listed)
        parts.every = lambda: expand_paths(root, r.reader, unreadable=[])
        listed = parts.kept_list(listed)
        entries: list[IndexEntry | None] = []
        async with index_pass_run(r, self.choice == "lake") as index_run:
            decided = await verdicts_at(index_run, root, listed, compiled, found, entries)
        if self.index_verdicts is not None:
            for verdict in decided:
                self.index_verdicts.append(verdict)
        # The files the index rules out (file verdicts alone: every file, none is read) count
        # as read where its digest gives their schemas (usually in the segment's first
        # read): they hold the predicate's columns and type its literals, so that a mistake
        # is the error it is without the index.
        every = not self.row_groups
        known, kinds = await digest_schemas(r.reader, listed, decided, entries, every)
        for path, footer in kinds:
            parts.count_as_read(path, footer.metadata.schema)
        active = parts if parts.active else None
        if every:
            columns = self.require_columns and known == len(listed)
            await check_once_decided(r, compiled, active, columns, read_ruled_out=False)
            return decided
        return await row_group_verdicts(
            r, listed, decided, compiled, self.require_columns, active, known
        )


def _inline_allowed_for(paths: Any, use_index: Any, row_groups: Any) -> bool:
    """A prune of local paths runs inline, the lake index's too; a sidecar pass needs a loop."""
    return use_index in (None, "none", "auto") and row_groups is True and local_paths(paths)


def _inline_allowed(bound: inspect.BoundArguments) -> bool:
    """:func:`_inline_allowed_for` of a call's arguments (the rule of ``prune_sync``)."""
    args = bound.arguments
    return _inline_allowed_for(
        args.get("paths"), args.get("use_index", "auto"), args.get("row_groups", True)
    )


#: ``prune`` for scripts; local paths are read in the calling thread with no event loop
#: (``tasks.loops``), but for a sidecar pass.
prune_sync = sync_twin(prune, inline_when=_inline_allowed)
