"""The pruned files as a ``pyarrow.dataset.Dataset``, for the user's own engine.

:func:`pruned_dataset` prunes the files as :func:`pybloom_async.lookup` does (its per-file
step, :func:`.api.file_rows`; local files swept first, :mod:`.sweep`) and hands
back a dataset of only what may match: one fragment per file with a kept row group,
restricted to its kept row groups (``ParquetFileFormat.make_fragment(...,
row_groups=...)``). Polars (``pl.scan_pyarrow_dataset``), DuckDB (``con.register``)
and DataFusion (``ctx.register_dataset``) scan it and read only those row groups.

* A file whose every row group is pruned is left out; so is a file the lake index rules
  out (``use_index``, the policy of every entry point: :mod:`pybloom_async.index_policy`),
  whose columns still count for the schema, as in a lookup.
* A file that pruning keeps whole (unreadable, with its reason) stays whole: the
  engine reads it, and reports its error itself if it cannot.
* The schema is the one :func:`pybloom_async.lookup` unifies (documented in
  :mod:`pybloom_async.rows.api`), over every top-level column of every file read,
  in the order first seen; a file without a column gives nulls there. When the
  partition folders rule out every file, or a predicate column is in none of the
  files kept, the footers of the files they ruled out count too
  (:mod:`pybloom_async.rows.footers`): the engine still finds the files' columns. A Delta or
  Iceberg table's dataset has the table's own schema (partition columns included,
  typed as its library reads them), whichever files are kept: when statistics rule
  out every file, the engine still finds the user's columns and returns no row.
* The fragments are read through pyarrow's filesystems, configured from the same
  options as the reader (:mod:`pybloom_async.rows.arrow_fs`): local files, S3, GCS
  and Azure. pyarrow has no HTTP filesystem, so HTTP(S) URLs are refused.

Rows come file by file, but within a file pyarrow may scan the kept row groups in
another order than the file's (``make_fragment`` takes them as a set): an engine
that must keep the file's order sorts.

Each kept file's footer is read twice: once by pruning, once by the engine when it
scans (pyarrow cannot take a footer already read into a fragment without reading it
again). The engine reads the files when it scans, with no version pinned: a file
replaced after pruning is read as it is then (its size is given to pyarrow, so a
file whose size changed fails to read instead of being read wrong).

Where the files come from is one step (:func:`dataset_from_files` takes the files
that a listing, or a table format's live files, gives). A Delta or Iceberg table
gives its live files after its own first stage (partition values and statistics,
:func:`pybloom_async.tables.resolve_table`); a Delta table's partition columns,
which are in no data file, become each fragment's partition expression, so the
engine sees them as columns. A kept file that a deletion vector or a delete file
removes rows from is refused (a plain Parquet scan would bring those rows back, and a
fragment cannot carry a row mask): :func:`pybloom_async.lookup` applies them.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..checks import require_pyarrow
from ..errors import (
    PredicateError,
    PyBloomError,
    SourceError,
    UnsupportedTypeError,
)
from ..index_policy.choice import (
    IndexChoice,
    index_choice,
    lake_files_for,
    listed_files,
    table_files_for,
)
from ..io.address import parse_address
from ..io.base import FileInfo, location_text
from ..io.files import local_only, local_paths
from ..io.store import StoreOptions, resolve_options
from ..lake.digest import LakeFiles
from ..predicate import Predicate
from ..pruning.api import CompiledPredicate
from ..pruning.partition_types import Partitioning
from ..pruning.partitions import PartitionPredicate
from ..read.run import Run, RunOptions, handed_whole, open_run, run_options
from ..tables import (
    TableFiles,
    TableSource,
    arrow_schema,
    files_only_columns,
    files_with_deletes,
    resolve_table,
    table_kind,
)
from ..tasks.loops import inline, sync_twin, to_worker
from .api import file_rows
from .arguments import DEFAULT_MAX_FETCH_BYTES
from .arrow_fs import arrow_filesystem, arrow_path
from .footers import index_ruled_out_plan, with_ruled_out
from .sweep import Sweep, each_file

if TYPE_CHECKING:
    import pyarrow.dataset as ds
    from typing_extensions import Unpack

    from ..read.run import RunKeywords
    from .plan import FilePlan, Job


Sources = str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo]


@dataclass
class _Kept:
    """One file the dataset holds: its plan (None: kept whole, unread, for ``error``)."""

    location: str | FileInfo
    plan: FilePlan | None
    error: PyBloomError | None = None
    partition: Mapping[str, Any] = field(default_factory=dict)  # kept whole: its folders'
    schema_only: bool = False  # ruled out by the lake index: in no fragment, in the schema


async def _decide(
    run: Run,
    location: str | FileInfo,
    parts: PartitionPredicate,
    job: Job,
    lake: LakeFiles | None,
    indexed: set[str] | None,
    sweep: Sweep | None,
) -> _Kept | None:
    """Prune one file through the per-file step (:func:`.api.file_rows`, for an engine);
    keep what its fragment needs.

    A file its partition values make the predicate TRUE for keeps every row group. A file
    the lake index rules out is read for the schema only, as a lookup reads it (its footer
    from the index's digest where it has one; None: unreadable, see :mod:`.footers`);
    ``indexed``: the paths of the files it keeps. ``sweep``: what the run's sweep found of
    the file (:mod:`.sweep`)."""
    from .plan import rows_of

    path = location_text(location)
    if lake is not None and indexed is not None and path not in indexed:
        plan = await index_ruled_out_plan(run, location, parts, lake.schemas.get(path))
        return None if plan is None else _Kept(location, plan, schema_only=True)
    rows = rows_of(parts, location)
    swept = sweep.passed(path) if sweep is not None else None
    try:
        compiled = parts.decide(location).compiled
        found = await file_rows(
            run, location, job, False, None, compiled, rows, lake, swept, engine=True
        )
        return _Kept(location, found.plan)
    except PredicateError as exc:
        raise exc.with_context(path=path) from None
    except PyBloomError as exc:
        if run.strict:
            raise exc.with_context(path=path) from None
        # Unreadable (or pyarrow cannot read its footer): kept whole, as pruning keeps it;
        # the engine reports its error itself.
        return _Kept(location, None, exc, rows.values if rows is not None else {})


async def _decided(
    run: Run,
    files: Sequence[str | FileInfo],
    parts: PartitionPredicate,
    lake: LakeFiles | None,
    local: bool,
) -> list[_Kept | None]:
    """Every file through :func:`_decide`, in order; ``local`` files swept first."""
    from .plan import Job

    indexed = {location_text(f) for f in lake.kept} if lake is not None else None
    # No rows are read here: the job prunes (the engine reads what is kept).
    job = Job(None, None, DEFAULT_MAX_FETCH_BYTES, page_index=False)
    sweep = None
    if local:
        wanted = indexed if indexed is not None else {location_text(f) for f in files}
        sweep = Sweep(run, parts, wanted, lake.footers if lake is not None else {}, run.strict)

    def swept(plan: FilePlan) -> _Kept:
        return _Kept(plan.location, plan)

    def one(location: str | FileInfo) -> Awaitable[_Kept | None]:
        return _decide(run, location, parts, job, lake, indexed, sweep)

    return await each_file(run, list(files), one, swept, run.progress, sweep)


def _schema(plans: Sequence[FilePlan], folders: Sequence[Any]) -> Any:
    """The unified schema of every top-level column of every file, first seen first, then
    the partition columns ``folders``: the default columns of :func:`pybloom_async.lookup`
    over the same files."""
    from .schema import result_schema

    schema, _ = result_schema(plans, None, folders)
    return schema


_Systems = dict[tuple[str, str | None], Any]  # one pyarrow filesystem per store and account


def _filesystems(files: Sequence[str | FileInfo], options: StoreOptions) -> _Systems:
    """The filesystems the files need: locations and options refused before any read."""
    systems: _Systems = {}
    for location in files:
        address = parse_address(location_text(location))
        key = (address.kind, address.account)
        if key not in systems:
            arrow_path(address)  # refuses HTTP(S) URLs
            systems[key] = arrow_filesystem(address, options)
    return systems


def _partition_expression(values: Mapping[str, Any], schema: Any) -> Any:
    """``c1 == v1 AND ...`` over a file's partition values, typed by the table's schema."""
    import pyarrow as pa
    import pyarrow.compute as pc

    expression = None
    for name, value in values.items():
        field = pc.field(name)
        term = (
            field.is_null()
            if value is None
            else field == pa.scalar(value, type=schema.field(name).type)
        )
        expression = term if expression is None else expression & term
    return pc.scalar(True) if expression is None else expression


def _fragments(
    kept: Sequence[_Kept], systems: _Systems, table: TableFiles | None, folders: Any = None
) -> list[Any]:
    """One fragment per file with kept row groups (whole for a file kept whole); ``folders``
    is the schema of the files' partition columns."""
    import pyarrow.dataset as pads

    fmt = pads.ParquetFileFormat()
    partitioned = table is not None and table.kind == "delta" and table.partition_columns
    parts = arrow_schema(table, table.partition_columns) if partitioned and table else None
    fragments = []
    for entry in kept:
        if entry.plan is not None and not entry.plan.kept:
            continue  # every row group pruned
        location = entry.location
        address = parse_address(location_text(location))
        key = (address.kind, address.account)
        extra: dict[str, Any] = {}
        folder_values = entry.plan.partition if entry.plan is not None else entry.partition
        if parts is not None and table is not None:
            values = table.partitions.get(location_text(location), {})
            extra["partition_expression"] = _partition_expression(values, parts)
        elif folders is not None and folder_values:
            # Its key=value folders, as the engine reads them (they win over its columns).
            extra["partition_expression"] = _partition_expression(folder_values, folders)
        if entry.plan is None:
            size = location.size if isinstance(location, FileInfo) else None
            fragment = fmt.make_fragment(arrow_path(address), systems[key], file_size=size, **extra)
        else:
            fragment = fmt.make_fragment(
                arrow_path(address),
                systems[key],
                row_groups=entry.plan.kept,
                file_size=entry.plan.footer_location.file_size,
                **extra,
            )
        fragments.append(fragment)
    return fragments


def _refuse_deletes(table: TableFiles, kept: Sequence[_Kept]) -> None:
    """A kept file with rows deleted outside it cannot be handed over as plain Parquet.

    Raises
    ------
    UnsupportedTypeError
        Naming the table, the first such file and how many there are.
    """
    wanted = [location_text(e.location) for e in kept if e.plan is None or e.plan.kept]
    deleted = files_with_deletes(table, wanted)
    if deleted:
        raise UnsupportedTypeError(
            f"{len(deleted)} kept file(s) of the {table.kind} table {table.name} have rows "
            "deleted by deletion vectors or delete files, which a Parquet dataset cannot "
            "apply: use lookup(), which applies them",
            path=deleted[0],
        )


async def dataset_from_files(
    run: Run,
    files: Sequence[str | FileInfo],
    parts: PartitionPredicate,
    *,
    table: TableFiles | None = None,
    every: Callable[[], Awaitable[Sequence[str | FileInfo]]] | None = None,
    lake: LakeFiles | None = None,
    local: bool = False,
) -> ds.Dataset:
    """The pruned dataset of ``files`` (already listed), pruned through ``run``; ``lake``:
    what the lake index says of them (the files it rules out count for the schema only).

    The step :func:`pruned_dataset` runs after listing, and after resolving a
    table (``table``: its live files are ``files``; its partition columns
    become partition expressions, its schema was checked against the predicate).
    ``parts``: the run's compiled predicate over the files' ``key=value`` folders (settled
    on ``files``; a table's: no partitioning), whose values become partition expressions
    too; ``every``: every file listed, those the
    folders ruled out too, whose footers count for the schema where the files kept leave
    it unknown (:mod:`.footers`). ``local``: the files are local paths, swept as a
    lookup's are (:mod:`.sweep`).
    """
    pa = require_pyarrow("build a dataset")
    import pyarrow.dataset as pads

    from .plan import partition_fields
    from .schema import check_predicate_columns

    predicate = parts.compiled.predicate
    options = resolve_options(run.reader.options, {})
    systems = _filesystems(files, options)
    decided = await _decided(run, files, parts, lake, local)
    read = [entry.plan for entry in decided if entry is not None and entry.plan is not None]
    kept = [entry for entry in decided if entry is not None and not entry.schema_only]
    plans = read
    if every is not None:  # footers read for the schema only: no file of the dataset
        plans = await with_ruled_out(run, read, every, parts, None, predicate)
    folders = partition_fields(parts) if parts.active else ()
    if table is None:
        check_predicate_columns(predicate, plans, [f.name for f in folders])
    else:
        await to_worker(_refuse_deletes, table, kept)
    if table is not None:
        schema = arrow_schema(table, table.top_level)
    elif not read and kept:
        # No footer could be read: there is no schema to give the engine, and an empty one
        # would read no column at all.
        first, error = kept[0], kept[0].error
        raise SourceError(
            "no file could be read, so the dataset has no schema; the first: "
            + (error.message if error is not None else "unread"),
            path=location_text(first.location),
            row_group=error.row_group if error is not None else None,
            column=error.column if error is not None else None,
        )
    else:
        schema = _schema(plans, folders) if plans else pa.schema(list(folders))
    # The dataset's own filesystem is only its default: each fragment carries its own.
    default = next(iter(systems.values()), None) or arrow_filesystem(
        parse_address(os.curdir), options
    )
    fragments = _fragments(kept, systems, table, schema if parts.active else None)
    dataset = pads.FileSystemDataset(fragments, schema, pads.ParquetFileFormat(), default)
    virtual = {f.name for f in folders} | set(table.partition_columns if table else ())
    return _counted(dataset, schema, virtual)


def _counted(dataset: Any, schema: Any, virtual: set[str]) -> Any:
    """``dataset`` as a :func:`counted_dataset_class`: its ``count_rows`` counts the rows of
    the row groups it keeps, by a test true for every row of a column the files store (the
    first of ``schema`` not in ``virtual``: a partition column's test would be settled by
    the fragment's partition values)."""
    import pyarrow.compute as pc

    stored = [f.name for f in schema if f.name not in virtual]
    if not stored:
        return dataset  # files of no column: there is no column to name
    counted = counted_dataset_class()(
        list(dataset.get_fragments()), schema, dataset.format, dataset.filesystem
    )
    column = pc.field(stored[0])
    counted.every_row = column.is_valid() | column.is_null()
    return counted


@functools.cache
def counted_dataset_class() -> Any:
    """pyarrow's ``FileSystemDataset`` whose ``count_rows`` counts the rows it keeps.

    pyarrow (26) counts a Parquet fragment's rows from its file's footer when no filter
    names a column: the row groups the fragment leaves out are counted too. Given a test
    that names a column, it counts the rows it reads. Only the count takes that test:
    a filter on the dataset itself would make every scan filter its batches, which pyarrow
    cannot do for every type (string_view, for one).
    """
    import pyarrow.dataset as pads

    class PrunedDataset(pads.FileSystemDataset):  # type: ignore[misc]
        #: A test true for every row, of a column the files store.
        every_row: Any = None

        def count_rows(self, **kwargs: Any) -> int:
            if self.every_row is not None:
                given = kwargs.get("filter")
                kwargs["filter"] = self.every_row if given is None else given & self.every_row
            return int(super().count_rows(**kwargs))

    return PrunedDataset


_DOC_PARAMETERS = """
    Parameters
    ----------
    sources:
        Files, directories or object-store prefixes (``s3://bucket/table/``);
        directories and prefixes expand to their ``*.parquet`` files. Local
        paths and ``s3://``, ``gs://``, ``az://`` URLs (pyarrow has no HTTP
        filesystem). Or a ``deltalake.DeltaTable`` or a pyiceberg ``Table``:
        its live files, after its partition values and statistics.
    where:
        A predicate built with :func:`pybloom_async.col`, or its text form
        (``"id = 42 AND email IN ('a', 'b')"``).
    partitioning:
        ``key=value`` folders as columns, as for :func:`pybloom_async.lookup`
        (``"hive"``, the default; types given as a dict or a ``pyarrow.Schema``;
        None: plain folders): each fragment gets its folders' values as its
        partition expression, so the engine sees them as columns (and they win
        over a column of that name in the file); files they rule out are left out.
    use_index:
        Which index serves the run, as for :func:`pybloom_async.lookup`: ``"auto"``
        (default: the lake index under one directory or prefix, or a table's, rules out
        the files it covers and finds fresh), ``"lake"`` (it must be there) or ``"none"``.
        A file it rules out is in no fragment; its columns count for the schema, as in a
        lookup (from the index's footer digest, or its footer).
    run, **keywords:
        The run's options (:class:`~pybloom_async.RunOptions`), as for
        :func:`pybloom_async.prune`: ``on_error="raise"`` raises on an unreadable file, a
        damaged filter or a missing column instead of keeping the file or row
        group; ``options`` (or the reader's) also configure the dataset's
        filesystems; ``stats`` counts pruning's reads only, not the engine's.

    Raises
    ------
    PredicateError
        ``where`` is malformed, a literal is not a value of its column's type,
        or a column of ``where`` is in none of the files.
    SchemaMismatchError
        Two files give a column types that do not unify.
    InvalidArgumentError
        An argument is of the wrong kind; an HTTP(S) URL; an option that
        pyarrow's filesystem for the store cannot take (named).
    ParquetFormatError, SourceError, SourceNotFoundError
        A listing fails; with ``on_error="raise"``, the first unreadable file; or no
        file at all can be read.
    MissingDependencyError
        pyarrow is not installed.
    UnsupportedTypeError
        A kept file of a table has rows deleted by a deletion vector or a
        delete file (use :func:`pybloom_async.lookup`).
"""


async def pruned_dataset(
    sources: Sources | TableSource,
    where: Predicate | str,
    *,
    partitioning: Any = "hive",
    use_index: IndexChoice | None = "auto",
    run: RunOptions | None = None,
    **keywords: Unpack[RunKeywords],
) -> ds.Dataset:
    """A ``pyarrow.dataset.Dataset`` of only the row groups that may hold matching rows.

    Files are pruned ``concurrency`` at once, each footer read once by pruning.
    The dataset holds the rows of the kept row groups, not only the matching
    ones: the engine applies ``where`` (or any other filter) when it scans. Local paths
    only are pruned as :func:`pruned_dataset_sync` prunes them, in one worker thread (a
    cancellation stops it before its next file; ``progress`` is called on the caller's
    event loop, and every call has run when this returns).
    """
    choice = index_choice(use_index, sidecar=False)
    opts = run_options(run, keywords, "pruned_dataset")
    # Compiled once for the run (a malformed predicate is refused before any listing).
    compiled = CompiledPredicate(where)
    if not inline() and local_paths(sources):
        # The whole run in one worker thread, as lookup takes local paths (one hand-off,
        # not one per file).
        return await handed_whole(
            opts, lambda run: _pruned(sources, compiled, partitioning, choice, run)
        )
    return await _pruned(sources, compiled, partitioning, choice, opts)


async def _pruned(
    sources: Sources | TableSource,
    compiled: CompiledPredicate,
    partitioning: Any,
    choice: IndexChoice,
    opts: RunOptions,
) -> ds.Dataset:
    """:func:`pruned_dataset` of checked arguments."""
    predicate = compiled.predicate
    async with open_run(opts) as r:
        if table_kind(sources) is not None:
            table = await to_worker(resolve_table, sources, predicate, opts.options)
            files_only_columns(table, predicate, opts.raises)
            live = (await table_files_for(choice, r, table, compiled)).kept
            return await dataset_from_files(
                r, live, PartitionPredicate(compiled, None), table=table
            )
        parts = PartitionPredicate(compiled, Partitioning.of(partitioning))
        listed = await listed_files(choice, r, sources, parts)
        files, segments = listed.files, listed.segments
        lake = (
            await lake_files_for(choice, r, sources, files, compiled, segments)
            if segments
            else None
        )
        return await dataset_from_files(
            r, files, parts, every=listed.every, lake=lake, local=local_paths(sources)
        )


pruned_dataset_sync = sync_twin(pruned_dataset, inline_when=local_only("sources"))
pruned_dataset.__doc__ = (pruned_dataset.__doc__ or "") + _DOC_PARAMETERS
