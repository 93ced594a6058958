"""Reading a task on an executor: its row groups' column chunks, its matching rows as Arrow.

Each file goes through the per-file step of a lookup
(:func:`pybloom_async.rows.api.file_rows`, under
:meth:`pybloom_async.read.run.Run.with_file`: a local file's whole work in one
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

from ..errors import FILE_FAILURES, PyBloomError
from ..read.run import Run, open_run
from ..rows.api import file_rows
from ..rows.plan import rows_where
from ..tasks.workers import for_each
from .scan import FileRead, ReadTask

log = logging.getLogger(__name__)

#: Files of one task read at once on an executor (and held until they are handed over).
DEFAULT_TASK_CONCURRENCY = 8


async def _read_one(run: Run, read: FileRead, task: ReadTask) -> list[Any]:
    """One file's matching rows (tables in row-group order); [] for a file skipped. The
    per-file step of a lookup (:func:`pybloom_async.rows.api.file_rows`), with the plan the
    driver made; a file the driver could not read is planned there, pruned by what its
    partition folders leave of the predicate (their values filled in its rows)."""
    compiled = None
    if read.plan is None:  # the task's predicate, compiled once for the task (its job's)
        compiled = task.job.compiled_for(rows_where(read.rows, task.job))
    try:
        found = await file_rows(run, read.location, task.job, True, read.plan, compiled, read.rows)
    except FILE_FAILURES as exc:
        exc.with_context(path=read.path)
        if not task.settings.skips:
            raise
        log.warning("pybloom skipped a file it cannot read: %s", exc)
        return []
    except PyBloomError as exc:
        raise exc.with_context(path=read.path) from None
    return found.tables


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
