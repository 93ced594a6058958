"""Reading a task on an executor: its row groups' column chunks, its matching rows as Arrow.

Each file goes through the per-file path of every multi-file reader
(:meth:`pybloom_async.read.run.Run.with_file`: a local file's whole work in one
worker-thread call): with the plan made on the driver, only the kept row groups' chunks of
the columns read are fetched (merged into few requests), pyarrow decodes them, the
predicate is evaluated on the data and the rows are cast to the task's schema
(:func:`pybloom_async.rows.fetch.file_tables`). The file must be the version the driver
planned (same size, modification time, ETag...): a file replaced since fails its read
rather than mixing versions. A file the driver could not read is read here in one pass:
footer, pruning, rows. A file's partition values (``key=value`` folders) come with its
plan, or with its read when the driver could not read it, and fill its partition columns.

Files are read ``concurrency`` at a time (default 8) and their rows handed to Spark in
file order, one window of files at a time, so a task holds at most the matching rows of
one window.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import anyio

from ..errors import ParquetFormatError, PyBloomError, SourceError
from ..pruning.api import CompiledPredicate, prune_opened
from ..read.reader import OpenedFile
from ..read.run import Run, open_run
from ..rows.fetch import file_tables
from ..rows.plan import FilePlan, Job, describe
from ..tasks.workers import for_each
from .scan import FileRead, ReadTask

log = logging.getLogger(__name__)

#: Files of one task read at once on an executor (and held until they are handed over).
DEFAULT_TASK_CONCURRENCY = 8
_UNREADABLE = (SourceError, ParquetFormatError)


async def _plan_here(file: OpenedFile, read: FileRead, job: Job) -> FilePlan:
    """The plan of a file the driver could not read: its footer, its row groups pruned by
    what its partition folders leave of the predicate (their values filled in its rows)."""
    footer = await file.footer()
    everything = list(range(len(footer.metadata.row_groups)))
    kept = everything
    where, rows = job.where, read.rows
    if rows is not None:  # as rows.plan.rows_where decides it for a file planned
        where = None if rows.every_row else (rows.where if rows.where is not None else where)
    if where is not None:
        try:
            kept = (await prune_opened(file, CompiledPredicate(where), strict=False)).kept
        except _UNREADABLE:
            pass  # its filters cannot be read: every row group is read
    return describe(read.location, footer, kept, job.page_index, rows)


async def _read_one(run: Run, read: FileRead, task: ReadTask) -> list[Any]:
    """One file's matching rows (tables in row-group order); [] for a file skipped."""

    async def work(file: OpenedFile) -> list[Any]:
        plan = read.plan if read.plan is not None else await _plan_here(file, read, task.job)
        if not plan.kept:
            return []
        return [t async for t in file_tables(file.source, plan, task.job)]

    try:
        return await run.with_file(read.location, work)
    except _UNREADABLE as exc:
        exc.with_context(path=read.path)
        if task.settings.on_error != "skip":
            raise
        log.warning("pybloom skipped a file it cannot read: %s", exc)
        return []
    except PyBloomError as exc:
        raise exc.with_context(path=read.path) from None
    finally:
        run.done(read.location)


async def task_tables(task: ReadTask, reads: Sequence[FileRead]) -> list[list[Any]]:
    """The matching rows of ``reads`` (some of ``task``'s), per file, in order."""
    async with open_run(task.settings.run()) as run:
        return await for_each(list(reads), lambda r: _read_one(run, r, task), run.limit)


def read_task(task: ReadTask) -> Iterator[Any]:
    """The task's matching rows as ``pyarrow.RecordBatch`` es of the task's schema, in order.

    Raises
    ------
    SourceError, ParquetFormatError
        A file cannot be read (with ``on_error="raise"``), or changed since it was planned.
    SchemaMismatchError
        A value does not fit the schema's type (a nanosecond Spark cannot hold, ...).
    """
    width = task.settings.concurrency or DEFAULT_TASK_CONCURRENCY
    for start in range(0, len(task.reads), width):
        window = task.reads[start : start + width]
        for tables in anyio.run(task_tables, task, window):
            for table in tables:
                for batch in table.to_batches():
                    if batch.num_rows:
                        yield batch
