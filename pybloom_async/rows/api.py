"""Lookups: the rows that hold the keys, exactly.

:func:`lookup` answers "give me the rows where ``id IN (...)``" over many
Parquet files, reading only what pruning keeps:

1. each file's footer is read once, and its row groups are pruned
   (:func:`pybloom_async.prune`, through the same reader, so the footer and
   the filters are not read twice);
2. for the kept row groups, only the column chunks of the projected and the
   predicate columns are fetched, merged by the planner
   (:func:`pybloom_async.plan.merge_ranges`) into one ``read_ranges`` call
   per file (more only when they exceed ``max_fetch_bytes``); where a file
   has a page index, only the pages whose min/max admit a probed value are
   fetched (:mod:`pybloom_async.rows.pages`; ``page_index=False`` reads whole
   column chunks);
3. pyarrow decodes those bytes (the footer is handed to it, not read again),
   and the predicate is evaluated on the decoded values
   (:mod:`pybloom_async.lookup_match`): the result holds exactly the rows that
   satisfy it, with no false positives and no missed row.

Schemas across files: the result has the projected columns, in the order
asked (default: every top-level column of the first file). A file that lacks
a column gives nulls for it. Types that differ between files are unified by
Arrow's permissive promotion (``pa.unify_schemas(promote_options=
"permissive")``: int32 and int64 give int64, string and large_string give
large_string, decimals widen, ...) but only within one kind of type (integers
with integers, floats with floats, text with text, ...); dictionaries take part
as their values, string and binary views as the large types; int64 and uint64
do not unify. The same rule holds at every depth: struct children (matched by
name; a child one file lacks gives nulls there), list items (list and
large_list give large_list), map keys and values. Anything else is a
:class:`~pybloom_async.errors.SchemaMismatchError` naming the two files and the field.

A file that lacks a predicate column holds nulls there: ``x = 1`` matches none
of its rows, ``x <=> NULL`` all of them.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from ..checks import positive_int, require_pyarrow
from ..errors import (
    InvalidArgumentError,
    ParquetFormatError,
    PyBloomError,
    SourceError,
)
from ..io.base import FileInfo, SourceStats, gather
from ..io.store import StoreOptions
from ..lake.prune import files_kept_by_lake_index, lake_segments_at
from ..predicate import Predicate, as_predicate
from ..pruning.api import prune
from ..pruning.runner import Run, expand_paths, for_each, open_run
from ..read.blocking import sync_twin
from ..read.fetch import ReaderConfig
from ..read.reader import BloomReader
from ..tables import TableSource, table_kind

if TYPE_CHECKING:
    from .fetch import FilePlan, Job

__all__ = [
    "DEFAULT_MAX_FETCH_BYTES",
    "lookup",
    "lookup_batches",
    "lookup_sync",
]

log = logging.getLogger(__name__)

#: Largest sum of column-chunk bytes fetched for one file at once (256 MiB). A file's kept
#: chunks beyond it are fetched in several requests, row group by row group, so memory
#: stays bounded; a single row group larger than it is still fetched, on its own.
DEFAULT_MAX_FETCH_BYTES = 256 * 1024 * 1024

Sources = str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo] | TableSource


# ---- one file ---------------------------------------------------------------------------

_SKIPPABLE = (SourceError, ParquetFormatError)


async def _plan_file(
    run: Run, location: str | FileInfo, where: Predicate, page_index: bool = False
) -> FilePlan:
    """Read the footer once, prune the row groups, keep what reading the rows needs."""
    try:
        footer = await run.reader.footer(location)
        verdicts = await prune([location], where, reader=run.reader, require_columns=False)
    finally:
        run.done(location)
    if any(v.row_group is None for v in verdicts):
        kept = list(range(len(footer.metadata.row_groups)))  # not pruned: read them all
    else:
        kept = [v.row_group for v in verdicts if v.kept and v.row_group is not None]
    from .fetch import describe

    return describe(location, footer, kept, page_index)


# ---- many files ------------------------------------------------------------------------


def _skip(exc: PyBloomError, location: str | FileInfo, skipped: list[PyBloomError] | None) -> None:
    path = location.path if isinstance(location, FileInfo) else os.fspath(location)
    exc.with_context(path=path)
    log.warning("lookup skipped a file: %s", exc)
    if skipped is not None:
        skipped.append(exc)


@dataclass
class _Run:
    reader: BloomReader
    job: Job
    plans: list[FilePlan]
    limit: int
    skip: bool
    skipped: list[PyBloomError] | None


@dataclass(frozen=True)
class _Arguments:
    """lookup's arguments, checked once before any file or table is read."""

    predicate: Predicate
    columns: list[str] | None
    on_error: str
    max_fetch_bytes: int
    page_index: bool

    @property
    def skip(self) -> bool:
        """Whether unreadable files are skipped."""
        return self.on_error == "skip"


def _check_arguments(
    where: Predicate | str,
    columns: Sequence[str] | None,
    on_error: str,
    max_fetch_bytes: int,
    page_index: bool,
) -> _Arguments:
    require_pyarrow("look up rows")
    predicate = as_predicate(where)
    if on_error not in ("raise", "skip"):
        raise InvalidArgumentError(
            f"on_error must be 'raise' or 'skip', not {on_error!r}", value=on_error
        )
    fetch_limit = positive_int("max_fetch_bytes", max_fetch_bytes)
    if not isinstance(page_index, bool):
        raise InvalidArgumentError("page_index must be True or False", value=page_index)
    if columns is not None:
        if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
            raise InvalidArgumentError("columns must be a list of column names", value=columns)
        if len(set(columns)) != len(columns):
            raise InvalidArgumentError("a column is named twice in columns", value=columns)
        columns = list(columns)
    return _Arguments(predicate, columns, on_error, fetch_limit, page_index)


def _table_rows(base: Run, sources: Sources, args: _Arguments, options: Any) -> Any | None:
    """A Delta or Iceberg table's matching rows, one table per file (rows/tables.py);
    None when ``sources`` is not a table."""
    if table_kind(sources) is None:
        return None
    from .tables import table_batches

    return table_batches(
        base, sources, args.predicate, args.columns, on_error=args.on_error, options=options
    )


async def _prepare(
    base: Run, sources: Sources, args: _Arguments, skipped: list[PyBloomError] | None
) -> _Run:
    """List the files, read every footer once and prune."""
    from .fetch import Job, check_predicate_columns, result_schema, schema_plans

    predicate, skip, page_index = args.predicate, args.skip, args.page_index
    rdr, limit = base.reader, base.limit
    listing_errors: list[SourceError] = []

    async def listing() -> list[str | FileInfo]:
        if skip:
            return await expand_paths(sources, rdr, unreadable=listing_errors)
        return await expand_paths(sources, rdr)

    async def segments() -> list[str]:
        return await lake_segments_at(sources, rdr)

    # The files and the lake index's segments are listed at once: one round trip.
    found, lake = await gather(lambda step: step(), [(listing,), (segments,)])
    for error in listing_errors:
        _skip(error, error.path or "", skipped)
    files = await files_kept_by_lake_index(sources, found, predicate, rdr, lake)

    async def one(location: str | FileInfo) -> FilePlan | None:
        try:
            return await _plan_file(base, location, predicate, page_index)
        except _SKIPPABLE as exc:
            if not skip:
                raise
            _skip(exc, location, skipped)
            return None
        except PyBloomError as exc:  # the predicate or a column type: raised whatever on_error
            path = location.path if isinstance(location, FileInfo) else os.fspath(location)
            raise exc.with_context(path=path) from None

    plans = [p for p in await for_each(files, one, limit) if p is not None]
    # The schema as without the lake index: footers of files it ruled out where it depends.
    shaping = await schema_plans(base, found, files, plans, predicate, args.columns)
    check_predicate_columns(predicate, shaping)
    schema, names = result_schema(shaping, args.columns)
    job = Job(predicate, names, schema, args.max_fetch_bytes, page_index)
    return _Run(rdr, job, plans, limit, skip, skipped)


async def _collect(run: _Run, plan: FilePlan) -> list[Any] | None:
    """All matching rows of one file (None: skipped)."""
    try:
        from .fetch import file_tables

        return [t async for t in file_tables(run.reader, plan, run.job)]
    except _SKIPPABLE as exc:
        if not run.skip:
            raise
        _skip(exc, plan.location, run.skipped)
        return None


_DOC_PARAMETERS = """
    Parameters
    ----------
    sources:
        Files, directories or object-store prefixes (``s3://bucket/table/``);
        directories and prefixes expand to their ``*.parquet`` files. Or a
        table: a ``deltalake.DeltaTable`` (at its loaded version) or a
        ``pyiceberg`` table (its current snapshot): its live files are pruned,
        then their rows are read through the table's library, deletion vectors
        and delete files applied, partition columns filled in. A table's
        columns are its schema's; ``on_error`` must be ``"raise"``.
    where:
        A predicate built with :func:`pybloom_async.col`, or its text form
        (``"id = 42 AND email IN ('a', 'b')"``).
    columns:
        Top-level columns of the result, in this order (default: every column
        of the first file). Predicate columns are read even when not listed.
    on_error:
        ``"raise"`` (default): an unreadable file (missing, damaged, not
        Parquet) raises, naming it. ``"skip"``: it is left out, logged, and
        its error appended to ``skipped``.
    skipped:
        A list that receives the errors of the files skipped.
    concurrency, options, stats, config, reader:
        Files read at once; object-store options; request counters; reader
        limits, or a long-lived :class:`~pybloom_async.BloomReader` whose
        cache to use (and keep filled).
    max_fetch_bytes:
        Largest sum of column-chunk bytes fetched for one file at once
        (:data:`DEFAULT_MAX_FETCH_BYTES`).
    page_index:
        Where a file has a page index (ColumnIndex/OffsetIndex), fetch and
        decode only the pages whose min/max admit a probed value (default);
        ``False`` reads the kept row groups' whole column chunks.

    Raises
    ------
    PredicateError
        ``where`` is malformed, a literal is not a value of its column's type,
        or a column (of ``where`` or ``columns``) is in none of the files.
    SchemaMismatchError
        Two files give a result column types that do not unify.
    UnsupportedTypeError
        A predicate column is inside a list or map, or its values cannot be
        compared exactly.
    ParquetFormatError, SourceError, SourceNotFoundError
        With ``on_error="raise"``, the first unreadable file (named).
    InvalidArgumentError
        An argument is of the wrong kind or out of range.
    MissingDependencyError
        pyarrow is not installed.
"""


async def lookup_batches(
    sources: Sources,
    where: Predicate | str,
    columns: Sequence[str] | None = None,
    *,
    on_error: Literal["raise", "skip"] = "raise",
    skipped: list[PyBloomError] | None = None,
    concurrency: int | None = None,
    options: StoreOptions | Mapping[str, Any] | None = None,
    stats: SourceStats | None = None,
    config: ReaderConfig | None = None,
    reader: BloomReader | None = None,
    max_fetch_bytes: int = DEFAULT_MAX_FETCH_BYTES,
    page_index: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> AsyncGenerator[Any, None]:
    """The rows satisfying ``where``, as ``pyarrow.RecordBatch`` es, row group by row group.

    For results too large to hold at once: files are read one after another,
    and at most ``max_fetch_bytes`` of one file's column chunks (or one row
    group) are in memory. Every footer is read (and every file pruned) before
    the first batch, so that the batches share one schema. Row groups without
    a matching row give no batch. With ``on_error="skip"``, a file that fails
    after some of its batches were yielded is skipped from there on.
    ``progress``, if given, is called as ``progress(done, total)`` after each
    file read (or pruned whole).
    """
    args = _check_arguments(where, columns, on_error, max_fetch_bytes, page_index)
    async with open_run(
        reader=reader, config=config, options=options, stats=stats, concurrency=concurrency
    ) as base:
        found = _table_rows(base, sources, args, options)
        if found is not None:
            async for table in found:
                for batch in table.to_batches():
                    if batch.num_rows:
                        yield batch
            return
        run = await _prepare(base, sources, args, skipped)
        for done, plan in enumerate(run.plans, 1):
            if plan.kept:
                from .fetch import file_tables

                tables = file_tables(run.reader, plan, run.job)
                try:
                    async for table in tables:
                        for batch in table.to_batches():
                            if batch.num_rows:
                                yield batch
                except _SKIPPABLE as exc:
                    if not run.skip:
                        raise
                    _skip(exc, plan.location, run.skipped)
                finally:
                    await tables.aclose()
            if progress is not None:
                progress(done, len(run.plans))


async def lookup(
    sources: Sources,
    where: Predicate | str,
    columns: Sequence[str] | None = None,
    *,
    on_error: Literal["raise", "skip"] = "raise",
    skipped: list[PyBloomError] | None = None,
    concurrency: int | None = None,
    options: StoreOptions | Mapping[str, Any] | None = None,
    stats: SourceStats | None = None,
    config: ReaderConfig | None = None,
    reader: BloomReader | None = None,
    max_fetch_bytes: int = DEFAULT_MAX_FETCH_BYTES,
    page_index: bool = True,
) -> Any:
    """The rows of the files that satisfy ``where``, exactly, as a ``pyarrow.Table``.

    Only the row groups pruning keeps are read, and of those only the column
    chunks of the result and predicate columns, in one merged request per
    file. Rows come in file order, then row-group order; an empty result has
    the result's schema. Files are read ``concurrency`` at once.
    """
    args = _check_arguments(where, columns, on_error, max_fetch_bytes, page_index)
    async with open_run(
        reader=reader, config=config, options=options, stats=stats, concurrency=concurrency
    ) as base:
        found = _table_rows(base, sources, args, options)
        if found is not None:
            import pyarrow as pa

            return pa.concat_tables([t async for t in found])
        run = await _prepare(base, sources, args, skipped)
        wanted = [plan for plan in run.plans if plan.kept]
        per_file = await for_each(wanted, lambda plan: _collect(run, plan), run.limit)
    tables = [t for tables in per_file if tables for t in tables]
    if not tables:
        return run.job.schema.empty_table()
    import pyarrow as pa

    return pa.concat_tables(tables)


lookup_sync = sync_twin(lookup)
for _function in (lookup, lookup_batches):
    _function.__doc__ = (_function.__doc__ or "") + _DOC_PARAMETERS
