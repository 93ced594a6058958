"""Lookups: the rows that hold the keys, exactly.

:func:`lookup` answers "give me the rows where ``id IN (...)``" over many
Parquet files, reading only what pruning keeps:

1. each file's footer is read once, and its row groups are pruned
   (:func:`pybloom_async.prune`, through the same reader, so the footer and
   the filters are not read twice);
2. for the kept row groups, only the column chunks of the projected and the
   predicate columns are fetched, merged by the planner
   (:func:`pybloom_async.read.ranges.merge_ranges`) into one ``read_ranges`` call
   per file (more only when they exceed ``max_fetch_bytes``); where a file
   has a page index, only the pages whose min/max admit a probed value are
   fetched (:mod:`pybloom_async.rows.pages`; ``page_index=False`` reads whole
   column chunks);
3. pyarrow decodes those bytes (the footer is handed to it, not read again),
   and the predicate is evaluated on the decoded values
   (:mod:`pybloom_async.rows.match`): the result holds exactly the rows that
   satisfy it, with no false positives and no missed row.

Schemas across files (:mod:`pybloom_async.rows.schema`, the rule of every
entry point): the result has the projected columns, in the order asked
(default: every top-level column of every file read, each once, in the order
first seen). A file that lacks a column gives nulls for it. Types that differ
between files are unified by Arrow's permissive promotion (``pa.unify_schemas(promote_options=
"permissive")``: int32 and int64 give int64, string and large_string give
large_string, decimals widen, ...) but only within one kind of type (integers
with integers, floats with floats, text with text, ...); dictionaries take part
as their values, string and binary views as the large types; int64 and uint64
do not unify. The same rule holds at every depth: struct children (matched by
name; a child one file lacks gives nulls there), list items (list and
large_list give large_list), map keys and values; a fixed-size binary and a binary give
binary, instants in two time zones UTC ones. Anything else is a
:class:`~pybloom_async.errors.SchemaMismatchError` naming the two files and the field.
The files read for the schema are those the partition folders keep, those a lake index
rules out included, and the others where the files read leave it unknown
(:mod:`pybloom_async.rows.footers`). A lake index's footer digest gives the footers of the
files it covers and finds fresh (:mod:`pybloom_async.lake.digest`): none of theirs is read.

A file that lacks a predicate column holds nulls there: ``x = 1`` matches none
of its rows, ``x <=> NULL`` all of them.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import FILE_FAILURES, InvalidArgumentError, PyBloomError, SourceError
from ..index_policy.choice import lake_files_for, listed_files
from ..io.base import FileInfo, location_text
from ..io.files import local_only, local_paths
from ..lake.digest import LakeFiles
from ..predicate import Predicate, normal_form
from ..pruning.api import CompiledPredicate, prune_opened
from ..pruning.partitions import PartitionPredicate
from ..read.ranges import NO_BYTES
from ..read.reader import OpenedFile
from ..read.run import Run, RunOptions, handed_whole, open_run, streamed_whole
from ..tables import TableSource, table_kind
from ..tasks.loops import inline, sync_twin
from .arguments import DEFAULT_MAX_FETCH_BYTES as DEFAULT_MAX_FETCH_BYTES
from .arguments import LOOKUP_PARAMETERS_DOC, LookupArguments, LookupKeywords, check_arguments
from .arguments import LookupOptions as LookupOptions
from .footers import index_ruled_out_plan, progress_with, rows_read, schema_kinds, with_ruled_out
from .sweep import Sweep, each_file

if TYPE_CHECKING:
    import pyarrow as pa
    from typing_extensions import Unpack

    from ..read.fetch import Footer
    from .plan import FilePlan, Job, RowsOf


log = logging.getLogger(__name__)

Sources = str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo] | TableSource


# ---- one file ---------------------------------------------------------------------------


@dataclass
class FileRows:
    """One file read: what reading its rows needs, and its matching rows if read."""

    plan: FilePlan
    tables: list[Any] = field(default_factory=list)
    schema_only: bool = False  # ruled out by the lake index: its footer read for the schema


async def kept_row_groups(
    file: OpenedFile, compiled: CompiledPredicate | None, strict: bool
) -> tuple[Footer, list[int]]:
    """The file's footer (read once) and the row groups pruning keeps (``compiled`` None:
    every row matches, every row group is kept): the pruning of every per-file step that
    reads or hands on rows (a lookup's, :func:`pybloom_async.pruned_dataset`'s).
    ``strict``: as :func:`~pybloom_async.pruning.api.prune_opened` takes it; filters that
    cannot be read then raise, where otherwise they keep every row group."""
    footer = await file.footer()
    every = list(range(len(footer.metadata.row_groups)))
    if compiled is None:
        return footer, every
    try:
        return footer, (await prune_opened(file, compiled, strict)).kept
    except FILE_FAILURES:
        if strict:
            raise
        # The footer was read, its filters could not be: every row group is read (and
        # the data read says what is wrong, if anything).
        return footer, every


async def _plan(
    file: OpenedFile,
    compiled: CompiledPredicate | None,
    job: Job,
    rows: RowsOf | None,
    tail: bool,
    probed: bool = False,
    kept: list[int] | None = None,
    strict: bool = False,
    narrow: bool = True,
) -> FilePlan:
    """The footer read once, the row groups pruned (``compiled`` None: every row matches,
    every row group is kept), what reading the rows needs kept (``tail``: the data bytes
    the footer's read brought, for rows read right after). ``probed``: the lake index found
    that the file may hold every key: a file of one row group is read without its filter
    (the index asked that of its file filter; a filter read would cost a request more).
    ``kept``: the row groups its file pass kept (it is not pruned again). ``strict``: pruned
    so (:func:`kept_row_groups`); ``narrow``: the predicate's ``IN`` lists cut to what the
    kept row groups may hold, for the rows matched (not for row groups an engine reads)."""
    from .narrow import narrowed_where
    from .plan import describe, rows_where

    footer = await file.footer()
    groups = footer.metadata.row_groups
    if probed and sum(1 for g in groups if g.num_rows) <= 1:
        compiled = None
    if kept is None:
        _, kept = await kept_row_groups(file, compiled, strict)
    location = file.location
    where = location if isinstance(location, (str, FileInfo)) else os.fspath(location)
    plan = describe(where, footer, kept, job.page_index, rows, tail)
    matched = rows_where(plan, job)
    if narrow and compiled is not None and matched is not None and plan.kept:
        plan.where = await narrowed_where(file, plan, normal_form(matched))
    return plan


async def read_one_file(
    run: Run,
    location: str | FileInfo,
    parts: PartitionPredicate | None,
    job: Job,
    rows: bool,
    lake: LakeFiles | None = None,
    swept: tuple[Footer, list[int]] | None = None,
) -> FileRows:
    """:func:`file_rows` for a file of a lookup, a table's data files included
    (``rows/tables.py``): planned by what its partition folders leave of the predicate
    (``parts`` None: no predicate, every row group is read). ``lake``: what a lake index
    says of the files (its footer from the index's digest); ``swept``: what its sweep
    found (:mod:`.sweep`)."""
    from .plan import rows_of

    partition = rows_of(parts, location) if parts is not None else None
    compiled = parts.decide(location).compiled if parts is not None else None
    return await file_rows(run, location, job, rows, None, compiled, partition, lake, swept)


async def file_rows(
    run: Run,
    location: str | FileInfo,
    job: Job,
    rows: bool,
    plan: FilePlan | None = None,
    compiled: CompiledPredicate | None = None,
    partition: RowsOf | None = None,
    lake: LakeFiles | None = None,
    swept: tuple[Footer, list[int]] | None = None,
    engine: bool = False,
) -> FileRows:
    """One file, in one pass (one worker-thread call for a local file): the one per-file
    step of every read of rows (lookups, a table's data files, a Spark task) and of
    :func:`pybloom_async.pruned_dataset`. Planned here
    unless ``plan`` is given (made earlier, as a Spark driver makes it): its footer read,
    its row groups pruned by ``compiled`` (None: every row matches) and what its partition
    folders make of its rows (``partition``) kept. With ``rows``, the kept row groups'
    matching rows are read. ``lake``: what a lake index says of the files; ``swept``: its
    footer and kept row groups, from its sweep's file pass (:mod:`.sweep`). ``engine``: the
    kept row groups go to an engine, no row is read here: the file is pruned as strictly
    as the run says (under ``on_error="raise"`` a filter that cannot be read raises, where
    a lookup reads the row groups and the data says what is wrong)."""
    from .fetch import file_tables

    path = location_text(location)
    footer = lake.footers.get(path) if lake is not None else None
    probed = lake is not None and footer is not None and path in lake.probed

    passed: list[list[int]] = []  # the row groups the file pass kept, when it did

    async def work(file: OpenedFile) -> FileRows:
        made = plan
        if made is None:
            kept = passed[0] if passed else None
            strict = engine and run.strict
            made = await _plan(
                file, compiled, job, partition, rows, probed, kept, strict, not engine
            )
        found = FileRows(made)
        if rows and made.kept:
            found.tables = [t async for t in file_tables(file.source, made, job)]
            made.held = NO_BYTES  # read: its bytes go now, not with the whole lookup
            if plan is None:
                rows_read(made)
        return found

    quick = None
    passes = None if plan is not None or compiled is None else compiled.file_pass(run, path)
    if swept is not None:
        passed.append(swept[1])
        footer = swept[0]
    elif passes is not None and footer is None:
        from .plan import FilePlan
        from .pruned import passed_file  # a local file pruned whole in one C call

        def quick() -> FileRows | Footer | None:
            found = passed_file(passes, location, path, run.reader.stats, partition)
            if found is None:
                return None
            if isinstance(found, FilePlan):
                return FileRows(found)
            footer, kept = found
            passed.append(kept)
            return footer

    try:
        return await run.with_file(location, work, footer, quick)
    finally:
        run.done(location)


# ---- many files ------------------------------------------------------------------------


def skip_file(
    exc: PyBloomError, location: str | FileInfo, skipped: list[PyBloomError] | None
) -> None:
    """A file left out of a lookup (``on_error="skip"``): its error names it, is logged,
    and goes to ``skipped``."""
    path = location_text(location)
    exc.with_context(path=path)
    log.warning("lookup skipped a file: %s", exc)
    if skipped is not None:
        skipped.append(exc)


def _table_rows(base: Run, sources: Sources, args: LookupArguments, stream: bool) -> Any | None:
    """A Delta or Iceberg table's matching rows, one table per row group (rows/tables.py);
    None when ``sources`` is not a table."""
    if table_kind(sources) is None:
        return None
    from .tables import table_batches

    return table_batches(
        base,
        sources,
        args.compiled,
        args.columns,
        on_error=args.on_error,
        options=base.reader.options,
        lookup=args.lookup,
        stream=stream,
    )


async def _files(
    base: Run,
    sources: Sources,
    args: LookupArguments,
    skipped: list[PyBloomError] | None,
    parts: PartitionPredicate,
) -> tuple[list[str | FileInfo], LakeFiles, Callable[[], Awaitable[list[Any]]]]:
    """The files listed (with the lake index's segments at once) less those their partition
    values rule out, and those to read: less those the lake index rules out too (with what
    its digest gives of them). Then how to have every file listed
    (:class:`~pybloom_async.index_policy.choice.Listed`)."""
    choice = args.lookup.use_index
    errors: list[SourceError] | None = [] if args.skip else None
    listed = await listed_files(choice, base, sources, parts, errors)
    for error in errors or ():
        skip_file(error, error.path or "", skipped)
    kept = await lake_files_for(
        choice, base, sources, listed.files, parts.compiled, listed.segments
    )
    return listed.files, kept, listed.every


async def _read_files(
    base: Run,
    sources: Sources,
    args: LookupArguments,
    skipped: list[PyBloomError] | None,
    rows: bool,
    shaping: bool = True,
) -> tuple[list[FileRows], Job, list[FilePlan]]:
    """Every file in one pass each (with ``rows``, its matching rows too); unreadable ones
    skipped or raised as ``on_error`` says. Also the plans the result's schema is made of
    (:mod:`.footers`; only the files read without ``shaping``: the schema is known)."""
    from .plan import Job

    # The predicate compiled once for the run: the lake index, partition values, every
    # file's statistics, filters, page index and dictionaries take their leaves from it.
    compiled = args.compiled
    job = Job(
        compiled,
        args.columns,
        args.lookup.max_fetch_bytes,
        args.lookup.page_index,
        merging=base.reader.config.plan,
    )
    from .plan import partition_fields

    parts = PartitionPredicate(compiled, args.lookup.folders())
    listed, lake, every = await _files(base, sources, args, skipped, parts)
    files = lake.kept
    job = dataclasses.replace(job, folders=partition_fields(parts))
    kept = {location_text(f) for f in files}
    # The files a lake index rules out count for the result's schema: their footers are
    # read beside the others' passes (see .footers).
    eager = shaping and len(kept) < len(listed)

    sweep = Sweep(base, parts, kept, lake.footers) if local_paths(sources) else None

    async def one(location: str | FileInfo) -> FileRows | None:
        path = location_text(location)
        if path not in kept:
            plan = await index_ruled_out_plan(base, location, parts, lake.schemas.get(path))
            return None if plan is None else FileRows(plan, schema_only=True)
        swept = sweep.passed(path) if sweep is not None else None
        try:
            return await read_one_file(base, location, parts, job, rows, lake, swept)
        except FILE_FAILURES as exc:
            if not args.skip:
                raise exc.with_context(path=location_text(location)) from None
            skip_file(exc, location, skipped)
            return None
        except PyBloomError as exc:  # the predicate or a column type: raised whatever on_error
            raise exc.with_context(path=location_text(location)) from None

    queue = schema_kinds(listed, kept, lake.schemas, parts) if eager else files
    counted = progress_with(base.progress, len(listed) - len(queue) if eager else 0)
    found_all = await each_file(base, queue, one, FileRows, counted, sweep)
    done = [f for f in found_all if f is not None]
    found = [f for f in done if not f.schema_only]
    plans = [f.plan for f in found]
    if shaping:
        read = [f.plan for f in done]
        plans = await with_ruled_out(base, read, every, parts, job.columns, job.where)
    return found, job, plans


async def _planned(
    base: Run,
    sources: Sources,
    args: LookupArguments,
    skipped: list[PyBloomError] | None,
    schema: pa.Schema | None = None,
) -> tuple[list[FileRows], Job]:
    """Every file pruned, no row read, and the job shaped: the result's schema derived from
    the footers, or ``schema`` as given."""
    files, job, shaping = await _read_files(
        base, sources, args, skipped, rows=False, shaping=schema is None
    )
    if schema is None:
        schema, names = _result(shaping, job)
    else:
        names = list(schema.names)
    return files, job.shaped(schema, names)


def _result(plans: Sequence[FilePlan], job: Job) -> tuple[pa.Schema, list[str]]:
    """The result's schema over the files read (see :mod:`.schema`)."""
    from .schema import check_predicate_columns, result_schema

    check_predicate_columns(job.where, plans, [f.name for f in job.folders])
    return result_schema(plans, job.columns, job.folders)


async def lookup_batches(
    sources: Sources,
    where: Predicate | str,
    columns: Sequence[str] | None = None,
    *,
    skipped: list[PyBloomError] | None = None,
    lookup: LookupOptions | None = None,
    run: RunOptions | None = None,
    **keywords: Unpack[LookupKeywords],
) -> AsyncGenerator[pa.RecordBatch, None]:
    """The rows satisfying ``where``, as ``pyarrow.RecordBatch`` es, in file and row-group order.

    For results too large to hold at once. Every footer is read (and every file pruned)
    before the first batch, so that the batches share one schema; a file with kept row
    groups is then opened a second time for its rows (its version checked). Files are read
    a few at once (``rows.fetch.READ_AHEAD_FILES``, whose kept row groups come to at most
    ``rows.fetch.READ_AHEAD_BYTES``), each file's batches held until those of the files
    before it are yielded; a file above that bound is read alone, with at most
    ``max_fetch_bytes`` of its column chunks (or one row group) in memory. A file's row
    groups are decoded a bounded run at a time (``rows.decode.DECODE_BATCH_BYTES`` of the
    columns read, uncompressed); row groups without a matching row give no batch. With
    ``on_error="skip"``, a file that fails is skipped in its place (one read alone: from
    where it failed, after the batches it gave).
    ``progress`` (a run option) is called as ``progress(done, total)`` as the
    footers are read. Local paths only are read as :func:`lookup` reads them, in one
    worker thread, its batches handed back (at most :data:`BATCHES_AHEAD` waiting).
    """
    args = check_arguments(where, columns, lookup, run, keywords, "lookup_batches")
    if not inline() and local_paths(sources):
        found = streamed_whole(
            args.run,
            lambda run: _batches(sources, dataclasses.replace(args, run=run), skipped),
            BATCHES_AHEAD,
        )
    else:
        found = _batches(sources, args, skipped)
    async with aclosing(found) as batches:
        async for batch in batches:
            yield batch


#: Batches of a local run of :func:`lookup_batches` made and not yet taken, at most.
BATCHES_AHEAD = 4


async def _batches(
    sources: Sources, args: LookupArguments, skipped: list[PyBloomError] | None
) -> AsyncGenerator[pa.RecordBatch, None]:
    """:func:`lookup_batches` of checked arguments."""
    async with open_run(args.run) as base:
        found = _table_rows(base, sources, args, stream=True)
        if found is None:
            files, job = await _planned(base, sources, args, skipped)
            from .fetch import planned_tables

            def failed(plan: FilePlan, exc: PyBloomError) -> None:
                skip_file(exc, plan.location, skipped)

            plans = [f.plan for f in files]
            found = planned_tables(base.reader, plans, job, failed if args.skip else None)
        async with aclosing(found) as tables:
            async for table in tables:
                for batch in table.to_batches():
                    if batch.num_rows:
                        yield batch


async def lookup(
    sources: Sources,
    where: Predicate | str,
    columns: Sequence[str] | None = None,
    *,
    skipped: list[PyBloomError] | None = None,
    lookup: LookupOptions | None = None,
    run: RunOptions | None = None,
    **keywords: Unpack[LookupKeywords],
) -> pa.Table:
    """The rows of the files that satisfy ``where``, exactly, as a ``pyarrow.Table``.

    Only the row groups pruning keeps are read, and of those only the column
    chunks of the result and predicate columns, in one merged request per
    file. Each file is read in one pass (a local file in one worker-thread
    call): its footer, its filters and its matching rows. Rows come in file
    order, then row-group order; an empty result has the result's schema.
    Files are read ``concurrency`` (a run option) at once. Local paths only
    are read as :func:`lookup_sync` reads them, in one worker thread (a
    cancellation stops it before its next file; ``progress`` is called on
    the caller's event loop, and every call has run when this returns).
    """
    args = check_arguments(where, columns, lookup, run, keywords, "lookup")
    if not inline() and local_paths(sources):
        # Local paths only: the whole lookup in one worker thread, as lookup_sync runs it
        # (one hand-off, not one per file: a service's point lookup in half the CPU).
        return await handed_whole(
            args.run, lambda run: _lookup(sources, dataclasses.replace(args, run=run), skipped)
        )
    return await _lookup(sources, args, skipped)


async def _lookup(
    sources: Sources, args: LookupArguments, skipped: list[PyBloomError] | None
) -> pa.Table:
    """:func:`lookup` of checked arguments."""
    async with open_run(args.run) as base:
        found = _table_rows(base, sources, args, stream=False)
        if found is not None:
            import pyarrow as pa

            return pa.concat_tables([t async for t in found])
        files, job, shaping = await _read_files(base, sources, args, skipped, rows=True)
    schema, names = _result(shaping, job)
    from .schema import conform_file

    tables = [t for f in files for t in conform_file(f.tables, f.plan, schema, names)]
    if not tables:
        from .arrow import empty_table

        return empty_table(schema)
    import pyarrow as pa

    return pa.concat_tables(tables)


@dataclass(frozen=True)
class LookupPlan:
    """A lookup decided before any row is read (:func:`plan_lookup`).

    ``files``: every file read, in file order, each with the row groups pruning kept
    (possibly none); ``job``: what every file's read shares, shaped (the result's schema
    and column names). A file's rows are
    ``pybloom_async.rows.fetch.file_tables(source, plan, job)``, read from the version
    planned.
    """

    files: list[FilePlan]
    job: Job


async def plan_lookup(
    sources: Sources,
    where: Predicate | str,
    columns: Sequence[str] | None = None,
    *,
    schema: pa.Schema | None = None,
    skipped: list[PyBloomError] | None = None,
    lookup: LookupOptions | None = None,
    run: RunOptions | None = None,
    **keywords: Unpack[LookupKeywords],
) -> LookupPlan:
    """What :func:`lookup` decides before it reads a row: every file listed (the lake
    index consulted), pruned, its footer kept for the read, and the result's schema.

    For callers that read the rows elsewhere (Spark executors). ``schema``, if given, is
    the result's schema (its names are the columns): no footer is read to derive it.
    The other arguments are :func:`lookup`'s (``partitioning`` too: a file's partition
    values and residual predicate travel in its plan); a Delta or Iceberg table is not
    planned here (the Spark data source reads one with
    :func:`pybloom_async.rows.tables.table_rows`).

    Raises
    ------
    InvalidArgumentError
        ``sources`` is a table, or an argument is invalid.
    PredicateError, SchemaMismatchError, ParquetFormatError, SourceError
        As for :func:`lookup`.
    """
    if schema is not None:
        columns = list(schema.names)
    args = check_arguments(where, columns, lookup, run, keywords, "plan_lookup")
    return await planned_files(sources, args, schema, skipped)


async def planned_files(
    sources: Sources,
    args: LookupArguments,
    schema: pa.Schema | None = None,
    skipped: list[PyBloomError] | None = None,
) -> LookupPlan:
    """:func:`plan_lookup` with its arguments checked (``args``: its predicate compiled, as
    a Spark plan compiles it once for the files' listing and their plan).

    Raises
    ------
    InvalidArgumentError, PredicateError, SchemaMismatchError, ParquetFormatError, SourceError
        As for :func:`plan_lookup`.
    """
    if table_kind(sources) is not None:
        raise InvalidArgumentError(
            "plan_lookup plans files, not a Delta or Iceberg table: look up its rows with lookup"
        )
    async with open_run(args.run) as base:
        files, job = await _planned(base, sources, args, skipped, schema)
    return LookupPlan([f.plan for f in files], job)


#: ``lookup`` for scripts; local paths are read in the calling thread with no loop.
lookup_sync = sync_twin(lookup, inline_when=local_only("sources"))
for _function in (lookup, lookup_batches):
    _function.__doc__ = (_function.__doc__ or "") + LOOKUP_PARAMETERS_DOC
