"""Planning a read on the driver: the result's schema, the files pruned, the Spark tasks.

The driver does what :func:`pybloom_async.lookup` does before its first row
(:func:`pybloom_async.rows.api.plan_lookup`): it lists the files while it lists the lake
index's segments, lets the index rule files out, reads each remaining footer once and
prunes its row groups by its in-file filters, all with the async reader. What is left is
cut into tasks (:class:`ReadTask`) of at most ``max_partition_bytes`` of bytes to read
each (the kept row groups' chunks of the columns read: :func:`group_bytes`), in file order,
a large file's row groups split between tasks; the executors read them (:mod:`.reading`).

``key=value`` folders are columns as for the local lookup (``ReadSettings.lookup``'s
``partitioning``): their types come from every value listed
(:meth:`~pybloom_async.pruning.partitions.PartitionPredicate.settle`, the one rule), they
are columns of the schema (:func:`file_schema`), a predicate on them rules out the files of
other folders before any is opened, and each file's values travel with its plan, for the
executor to fill in.

The footers travel with the tasks (each file's :class:`~pybloom_async.rows.plan.FilePlan`),
so an executor reads nothing but the kept row groups' column chunks. A file the driver
cannot read is not dropped: its task reads it whole on an executor, which fails the job
naming it (or skips it with ``on_error="skip"``) if it cannot read it either. Without
``on_error="skip"`` the plan fails on the driver: the driver and the executors follow one
policy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..checks import OnError, error_policy
from ..errors import InvalidArgumentError, PyBloomError
from ..io.base import FileInfo, SourceStats, location_text
from ..io.files import expand_paths
from ..io.store import StoreOptions
from ..predicate import IsNotNull, Predicate
from ..pruning.api import CompiledPredicate
from ..pruning.partition_types import Partitioning
from ..pruning.partitions import PartitionPredicate
from ..read.fetch import ReaderConfig
from ..read.plan import PlanConfig
from ..read.reader import OpenedFile
from ..read.run import RunOptions, open_run
from ..rows.api import LookupOptions, LookupPlan, planned_files
from ..rows.arguments import check_arguments
from ..rows.decode import read_columns_of
from ..rows.plan import FilePlan, Job, RowsOf, describe, partition_fields, rows_of
from ..rows.schema import result_schema
from ..tasks.workers import for_each
from ..types import PhysicalType

#: Bytes to read per Spark task, at most (Spark's ``spark.sql.files.maxPartitionBytes``).
DEFAULT_MAX_PARTITION_BYTES = 128 * 1024 * 1024
#: What opening a file costs, counted in bytes when tasks are cut (Spark's
#: ``spark.sql.files.openCostInBytes``): many small pieces do not crowd into one task.
OPEN_COST_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class ReadSettings:
    """How the files are read, on the driver and on every executor (pickled with the tasks).

    ``options``: object-store options (credentials travel with them: prefer the
    executors' own environment on shared clusters); ``on_error``: what a file that cannot
    be read does, on the driver and on the executors alike, as a lookup's run option
    (:class:`~pybloom_async.RunOptions`): None (default) and ``"raise"`` fail the read
    naming it (``"raise"`` also fails on a required lake index's stale entry or damaged
    segment, as a run's ``on_error="raise"`` does, and on a footer the schema cannot be
    read from, which the others leave out of it); ``"skip"`` leaves it out, logged (a
    file the driver cannot read is handed to an executor, which reads it whole or skips
    it);
    ``lookup``: how rows are read (:class:`~pybloom_async.LookupOptions`: ``max_fetch_bytes``,
    ``page_index``, ``partitioning``, and ``use_index``, which index serves the driver's plan).
    """

    options: StoreOptions | None = None
    config: ReaderConfig | None = None
    concurrency: int | None = None
    on_error: OnError | None = None
    lookup: LookupOptions = dataclasses.field(default_factory=LookupOptions)

    def __post_init__(self) -> None:
        error_policy(self.on_error)
        if not isinstance(self.lookup, LookupOptions):
            raise InvalidArgumentError(
                f"lookup must be a LookupOptions, not {type(self.lookup).__name__}",
                value=self.lookup,
            )

    @property
    def skips(self) -> bool:
        """Whether a file that cannot be read is left out (``on_error="skip"``)."""
        return self.on_error == "skip"

    @property
    def raises(self) -> bool:
        """Whether every problem fails the read (``on_error="raise"``, given)."""
        return self.on_error == "raise"

    def folders(self) -> Partitioning | None:
        """What ``key=value`` folders are (None: plain folders)."""
        return self.lookup.folders()

    def run(self, stats: SourceStats | None = None) -> RunOptions:
        """The run options of these settings."""
        return RunOptions(
            options=self.options,
            config=self.config,
            concurrency=self.concurrency,
            stats=stats,
            on_error=self.on_error,
        )


@dataclass(frozen=True)
class FileRead:
    """One file's part of a task: its plan (the footer read on the driver, the row groups to
    read), or only its location when the driver could not read it (read whole, then), with
    what its partition folders make of its rows (``rows``; None: it has none)."""

    location: str | FileInfo
    plan: FilePlan | None = None
    rows: RowsOf | None = None

    @property
    def path(self) -> str:
        """The file's path or URL."""
        location = self.location
        return location_text(location)

    def cost(self, job: Job | None = None) -> int:
        """Bytes this read costs a task: the open cost, and the column chunks of the columns
        ``job`` reads (None: every column) in its kept row groups (the whole file when the
        driver could not read it)."""
        if self.plan is None:
            size = self.location.size if isinstance(self.location, FileInfo) else 0
            return OPEN_COST_BYTES + max(0, size or 0)
        return OPEN_COST_BYTES + sum(group_bytes(self.plan, job).values())


def group_bytes(plan: FilePlan, job: Job | None) -> dict[int, int]:
    """Each kept row group's bytes to read: the compressed chunks of the columns ``job``
    reads of the file, its predicate's and the result's (None: every column)."""
    groups = plan.metadata.row_groups
    if job is None:
        return {g: _total_bytes(groups[g]) for g in plan.kept}
    leaves = read_columns_of(plan, job).leaves
    return {g: sum(_chunk_bytes(groups[g].columns[leaf]) for leaf in leaves) for g in plan.kept}


def _chunk_bytes(chunk: Any) -> int:
    size = chunk.total_compressed_size
    return int(size) if size is not None and size > 0 else 0


def _total_bytes(group: Any) -> int:
    compressed = group.total_compressed_size
    return int(compressed if compressed is not None and compressed > 0 else group.total_byte_size)


@dataclass(frozen=True)
class ReadTask:
    """One Spark task: the files (and row groups) to read, in order, and what they share."""

    reads: tuple[FileRead, ...]
    job: Job
    settings: ReadSettings


def _pieces(read: FileRead, split: int, job: Job | None) -> list[FileRead]:
    """A file's kept row groups in runs of at most ``split`` bytes to read (one run at
    least)."""
    plan = read.plan
    if plan is None or len(plan.kept) < 2:
        return [read]
    sizes = group_bytes(plan, job)
    runs: list[list[int]] = [[]]
    size = OPEN_COST_BYTES
    for g in plan.kept:
        need = sizes[g]
        if runs[-1] and size + need > split:
            runs.append([])
            size = OPEN_COST_BYTES
        runs[-1].append(g)
        size += need
    if len(runs) == 1:
        return [read]
    return [FileRead(read.location, dataclasses.replace(plan, kept=run), read.rows) for run in runs]


def split_tasks(
    reads: Sequence[FileRead],
    max_partition_bytes: int,
    min_partitions: int,
    job: Job | None = None,
) -> list[list[FileRead]]:
    """The reads cut into tasks, in order, as Spark cuts files into partitions, by the bytes
    each reads: its kept row groups' chunks of the columns ``job`` reads (None: every
    column), and the open cost of each file (:meth:`FileRead.cost`).

    A task holds at most ``min(max_partition_bytes, max(OPEN_COST_BYTES, total /
    min_partitions))`` bytes (Spark's ``FilePartition.maxSplitBytes``), a piece larger
    than that alone; a file's row groups are split between tasks at row-group bounds.
    """
    total = sum(r.cost(job) for r in reads)
    split = min(max_partition_bytes, max(OPEN_COST_BYTES, total // max(1, min_partitions)))
    pieces = [(p, p.cost(job)) for read in reads for p in _pieces(read, split, job)]
    tasks: list[list[FileRead]] = []
    current: list[FileRead] = []
    size = 0
    for piece, cost in pieces:
        if current and size + cost > split:
            tasks.append(current)
            current, size = [], 0
        current.append(piece)
        size += cost
    if current:
        tasks.append(current)
    return tasks


def int96_columns(plans: Sequence[FilePlan]) -> frozenset[str]:
    """The dotted paths of the columns some file stores as INT96."""
    return frozenset(
        c.path for p in plans for c in p.schema.columns if c.physical_type is PhysicalType.INT96
    )


#: PartitionPredicate decides a predicate's leaves on partition columns, and settles the
#: columns' types from a listing; a read with no predicate asks only the latter (its types,
#: and each file's values), so this predicate, never decided, is all it holds.
NO_PREDICATE = IsNotNull("*")


def listed_partitions(
    listed: Sequence[str | FileInfo],
    settings: ReadSettings,
    compiled: CompiledPredicate | None = None,
) -> PartitionPredicate | None:
    """The partition columns of the files ``listed``, typed by the local lookup's rule (None:
    folders are plain folders); ``compiled``, the run's predicate its files are decided by."""
    partitioning = settings.folders()
    if partitioning is None:
        return None
    parts = PartitionPredicate(compiled or CompiledPredicate(NO_PREDICATE), partitioning)
    parts.settle(listed)
    return parts


def no_schema(
    sources: object, files: int, first: PyBloomError | None = None
) -> InvalidArgumentError:
    """The error of a read none of whose ``files`` footers could be read (``first``: the
    first reason, where known)."""
    what = "no Parquet file" if not files else f"none of the {files} files"
    why = f" ({first})" if first is not None else ""
    return InvalidArgumentError(
        f"{what} can be read under {sources!r}{why}, so there is no schema to read them by: "
        "give one (.schema(...))"
    )


def scan_rows(parts: PartitionPredicate | None, location: str | FileInfo) -> RowsOf | None:
    """What a file's partition folders give its rows in a read with no predicate: their
    values and Arrow fields (None: it has no partition folder)."""
    if parts is None or not parts.pairs(location):
        return None
    values = parts.values(location, location_text(location))
    fields = {f.name: f for f in partition_fields(parts)}
    return RowsOf(values=values, fields=[fields[key] for key in values])


async def file_schema(
    sources: str | Sequence[str | FileInfo], settings: ReadSettings
) -> tuple[pa.Schema, frozenset[str]]:
    """The schema of the rows of ``sources`` (the rule lookups follow,
    :func:`pybloom_async.rows.schema.result_schema`, over every file, its partition columns
    last) and its INT96 columns.

    Every footer is read (once, concurrently); one that cannot be read is left out, or
    raised with ``on_error="raise"`` (the rows' reading decides for the others).

    Raises
    ------
    InvalidArgumentError
        No file can be read: there is no schema to give; or ``partitioning`` is invalid.
    SchemaMismatchError
        Two files' types do not unify, or a folder's value is not of the type given.
    SourceNotFoundError, SourceError
        A directory or prefix cannot be listed.
    """
    async with open_run(settings.run()) as run:
        listed = await expand_paths(sources, run.reader)
        parts = listed_partitions(listed, settings)

        async def one(location: str | FileInfo) -> FilePlan | None:
            rows = scan_rows(parts, location)  # a value not of its type given: raised
            try:
                footer = await run.with_file(location, OpenedFile.footer)
                return describe(location, footer, [], rows=rows)
            except PyBloomError as exc:
                if settings.raises:
                    raise exc.with_context(path=FileRead(location).path) from None
                return None
            finally:
                run.done(location)

        found = await for_each(listed, one, run.limit)
    plans = [p for p in found if p is not None]
    if not plans:
        raise no_schema(sources, len(listed))
    schema, _ = result_schema(plans, None, partition_fields(parts) if parts else ())
    return schema, int96_columns(plans)


async def planned_lookup(
    sources: str | Sequence[str | FileInfo],
    compiled: CompiledPredicate,
    settings: ReadSettings,
    run: RunOptions,
    schema: Any = None,
) -> tuple[LookupPlan, list[PyBloomError]]:
    """The local lookup's plan for the source's settings and ``run`` (which holds their
    ``on_error``): with ``"skip"``, the files the driver cannot read are skipped and
    returned; otherwise the first one fails the plan, as it fails a lookup.

    Raises
    ------
    PyBloomError
        Unless ``on_error="skip"``, the first file the driver cannot read (named).
    """
    skipped: list[PyBloomError] = []
    columns = list(schema.names) if schema is not None else None
    args = check_arguments(compiled, columns, settings.lookup, run, {}, "plan_lookup")
    planned = await planned_files(sources, args, schema, skipped)
    return planned, skipped


async def plan_read(
    sources: str | Sequence[str | FileInfo],
    where: Predicate | None,
    schema: pa.Schema,
    settings: ReadSettings,
    stats: SourceStats | None = None,
) -> tuple[list[FileRead], Job]:
    """The files to read (each with its kept row groups) and the job they share.

    ``schema`` is the rows' Arrow schema (the batches are cast to it). With ``where``
    None every row group of every file is read (a scan). ``stats`` counts the driver's
    requests.

    Raises
    ------
    PredicateError
        A literal is not a value of its column's type.
    PyBloomError
        Unless ``on_error="skip"``, the first file the driver cannot read (named).
    """
    run = settings.run(stats)
    if where is None:
        return await _scan(sources, schema, settings, run)
    compiled = CompiledPredicate(where)  # once for the driver's plan
    planned, skipped = await planned_lookup(sources, compiled, settings, run, schema)
    reads = [FileRead(p.location, p) for p in planned.files if p.kept]
    unread = [e.path for e in skipped if e.path]
    if unread:
        reads += await _unplanned(sources, compiled, unread, settings, run)
    return reads, planned.job


async def _unplanned(
    sources: str | Sequence[str | FileInfo],
    compiled: CompiledPredicate,
    paths: list[str],
    settings: ReadSettings,
    options: RunOptions,
) -> list[FileRead]:
    """The files the driver could not read, for the executors to read whole, each with what
    its partition folders make of its rows (the files are listed again for their folders:
    only when a file could not be read)."""
    if settings.folders() is None:
        return [FileRead(path) for path in paths]
    async with open_run(options) as run:
        listed = await expand_paths(sources, run.reader, unreadable=[])
    parts = listed_partitions(listed, settings, compiled)
    assert parts is not None
    found = {location_text(f): f for f in listed}
    reads = []
    for path in paths:
        location = found.get(path, path)
        reads.append(FileRead(location, rows=rows_of(parts, location)))
    return reads


async def scan_files(
    sources: str | Sequence[str | FileInfo], settings: ReadSettings, options: RunOptions
) -> tuple[list[FileRead], PartitionPredicate | None, PlanConfig]:
    """Every file listed, each footer read once, every row group kept (a read with no
    predicate); a file the driver cannot read has no plan (raised unless ``on_error="skip"``). Also
    the partition columns and how the reader merges ranges."""
    async with open_run(options) as run:
        listed = await expand_paths(sources, run.reader)
        parts = listed_partitions(listed, settings)

        async def one(location: str | FileInfo) -> FileRead:
            rows = scan_rows(parts, location)
            try:
                footer = await run.with_file(location, OpenedFile.footer)
            except PyBloomError as exc:
                if not settings.skips:
                    raise exc.with_context(path=FileRead(location).path) from None
                return FileRead(location, rows=rows)
            finally:
                run.done(location)
            everything = list(range(len(footer.metadata.row_groups)))
            return FileRead(location, describe(location, footer, everything, False, rows))

        reads = await for_each(listed, one, run.limit)
        return reads, parts, run.reader.config.plan


def scan_job(
    schema: pa.Schema,
    settings: ReadSettings,
    parts: PartitionPredicate | None,
    merging: PlanConfig,
) -> Job:
    """The job of a read with no predicate, shaped to ``schema``."""
    names = list(schema.names)
    folders = partition_fields(parts) if parts else ()
    job = Job(None, names, settings.lookup.max_fetch_bytes, False, merging=merging, folders=folders)
    return job.shaped(schema, names)


async def _scan(
    sources: str | Sequence[str | FileInfo],
    schema: pa.Schema,
    settings: ReadSettings,
    options: RunOptions,
) -> tuple[list[FileRead], Job]:
    """Every row group of every file: no predicate to prune by."""
    reads, parts, merging = await scan_files(sources, settings, options)
    job = scan_job(schema, settings, parts, merging)
    return [r for r in reads if r.plan is None or r.plan.kept], job
