"""Delta and Iceberg tables in the data source: planned on the driver, read by the executors
through the per-file path of a table's lookup, deletes applied by us.

The driver opens the table at its current version (Delta) or snapshot (Iceberg), lets its
library list the live files its partition values and statistics keep
(:func:`pybloom_async.tables.resolve_table`), rules out those the table's own lake index
excludes (as the ``index`` option says: :mod:`pybloom_async.index_policy`), prunes the rest's
row groups by their filters (:func:`pybloom_async.pruning.api.prune_files`) and cuts the
files with a kept row group into tasks. Each executor opens the table at that same version
(an Iceberg table whose snapshot moved since fails the read), which gives it what its
files' deletes need (a Delta file's deletion vector, an Iceberg file's delete files), and
reads its files as a table's lookup does (:func:`pybloom_async.rows.tables.table_rows`):
each file's kept row groups and needed column chunks, its deleted rows dropped, its
partition columns filled in, the predicate evaluated on the rows exactly.

A plain path inside a table is refused (:func:`refuse_table_folder`): read as files, a
table would bring back the rows its log or manifests removed.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import pyarrow as pa

from ..errors import InvalidArgumentError, SourceError
from ..io.base import FileInfo
from ..io.store import StoreOptions
from ..predicate import Predicate
from ..pruning.api import CompiledPredicate, prune_files
from ..read.run import open_run
from ..rewrite.guard import TableGuard
from ..rows.tables import table_rows
from ..tables import TableFiles, TableSource, arrow_schema, resolve_table
from ..tasks.loops import to_worker
from .reading import DEFAULT_TASK_CONCURRENCY
from .scan import FileRead, ReadSettings, split_tasks


@dataclass(frozen=True)
class TableRef:
    """A table by name: ``kind`` (delta, iceberg), its URI or ``CATALOG.NAMESPACE.TABLE``,
    and the version (Delta) or snapshot id (Iceberg) read, once pinned."""

    kind: str
    name: str
    version: int | None
    options: StoreOptions | None

    def open(self) -> TableSource:
        """The table at this version (blocking).

        Raises
        ------
        SourceError
            The table cannot be opened, or (Iceberg) its snapshot moved since it was pinned.
        """
        if self.kind == "delta":
            from ..tables.delta import open_delta

            return open_delta(self.name, self.version, self.options)
        from ..tables.iceberg import load_iceberg

        table = load_iceberg(self.name)
        snapshot = table.current_snapshot()
        now = None if snapshot is None else int(snapshot.snapshot_id)
        if self.version is not None and now != self.version:
            raise SourceError(
                f"the Iceberg table moved from snapshot {self.version} to {now} since the "
                "query was planned: run the query again",
                path=self.name,
            )
        return table

    def pinned(self, table: TableSource) -> TableRef:
        """This reference at the version ``table`` is at."""
        version: int | None
        if self.kind == "delta":
            version = int(table.version())
        else:
            snapshot = table.current_snapshot()
            version = None if snapshot is None else int(snapshot.snapshot_id)
        return TableRef(self.kind, self.name, version, self.options)


def refuse_table_folder(sources: str | Sequence[str], options: StoreOptions | None) -> None:
    """Refuse a plain path inside a Delta or Iceberg table (blocking).

    Raises
    ------
    InvalidArgumentError
        Naming the table and the option that reads it.
    """
    guard = TableGuard(options)
    for source in [sources] if isinstance(sources, str) else sources:
        found = guard.table_of(source, folder=not source.lower().endswith(".parquet"))
        if found is not None:
            how = "load(uri)" if found.kind == "delta" else "load('CATALOG.NAMESPACE.TABLE')"
            raise InvalidArgumentError(
                f"this lies in the {found.kind.title()} table at {found.root}: read as plain "
                "files it would bring back the rows its table removed; read it with "
                f".option('table', '{found.kind}').{how}",
                path=source,
            )


def table_schema(ref: TableRef) -> pa.Schema:
    """The table's columns, as its library reads them (blocking)."""
    table = resolve_table(ref.open(), None, ref.options)
    return arrow_schema(table, list(table.top_level))


@dataclass(frozen=True)
class TableTask:
    """One Spark task of a table: its files (those with a kept row group on the driver;
    their row groups are pruned again as they are read), and what they share."""

    ref: TableRef
    where: Predicate | None
    files: tuple[str, ...]
    names: tuple[str, ...]
    rows: pa.Schema  # the batches' schema (Spark's)
    settings: ReadSettings


async def plan_table(
    ref: TableRef,
    where: Predicate | None,
    rows: pa.Schema,
    settings: ReadSettings,
    max_partition_bytes: int,
    min_partitions: int,
) -> list[TableTask]:
    """The table's kept files cut into tasks, the table pinned at its current version."""
    from ..index_policy.choice import table_files_for

    source = await to_worker(ref.open)
    pinned = ref.pinned(source)
    table = await to_worker(resolve_table, source, where, ref.options)
    kept: dict[str, list[int] | None] = {}
    if where is None:
        kept = {f.path: None for f in table.files}
    else:
        compiled = CompiledPredicate(where)  # once: the lake index and the files share it
        async with open_run(settings.run()) as run:
            found = await table_files_for(settings.lookup.use_index, run, table, compiled)
            files = [f for f in found.kept if isinstance(f, FileInfo)]
            verdicts = await prune_files(run, files, compiled, require_columns=False)
        for v in verdicts:  # a file whose row groups are all ruled out makes no task
            if v.row_group is None:
                kept[v.file] = None
            elif v.kept:
                groups = kept.setdefault(v.file, [])
                if groups is not None:
                    groups.append(v.row_group)
    sizes = {f.path: f for f in table.files}
    reads = [FileRead(sizes.get(path, path)) for path in kept]
    return [
        TableTask(pinned, where, tuple(r.path for r in group), tuple(rows.names), rows, settings)
        for group in split_tasks(reads, max_partition_bytes, min_partitions)
    ]


def read_table_task(task: TableTask) -> Iterator[Any]:
    """The task's live rows that satisfy its predicate, as batches of its schema (blocking),
    its files read a window of ``concurrency`` (default 8) at a time.

    Raises
    ------
    SourceError
        The table cannot be opened at the pinned version, or a file of the task is not
        among its live files there.
    UnsupportedTypeError, ParquetFormatError
        A delete that cannot be applied, or a file that cannot be read (named).
    """
    table = resolve_table(task.ref.open(), task.where, task.ref.options)
    live = {f.path: f for f in table.files}
    for path in task.files:
        if path not in live:
            raise SourceError(
                f"the file is not among the live files of the table {table.name} at the "
                "version planned",
                path=path,
            )
    width = task.settings.concurrency or DEFAULT_TASK_CONCURRENCY
    # Compiled once for the task: every window's files share its leaves.
    compiled = None if task.where is None else CompiledPredicate(task.where)
    for start in range(0, len(task.files), width):
        window = [live[path] for path in task.files[start : start + width]]
        for rows in anyio.run(_window_rows, task, table, compiled, window):
            for batch in rows.cast(task.rows).to_batches():
                if batch.num_rows:
                    yield batch


async def _window_rows(
    task: TableTask,
    table: TableFiles,
    compiled: CompiledPredicate | None,
    files: list[FileInfo],
) -> list[Any]:
    """The matching live rows of some of the task's files (``compiled``: the task's
    predicate), one table per row group."""

    async def given() -> list[FileInfo]:
        return files

    settings = task.settings
    async with open_run(settings.run()) as run:
        found: AsyncGenerator[Any, None] = table_rows(
            run, table, compiled, list(task.names),
            max_fetch_bytes=settings.lookup.max_fetch_bytes,
            page_index=settings.lookup.page_index, stream=False, files=given,
        )  # fmt: skip
        try:
            return [rows async for rows in found if rows.num_rows]
        finally:
            await found.aclose()


def table_ref(kind: str, sources: str | list[str], version: int | None, options: Any) -> TableRef:
    """The table the options name (one path or name).

    Raises
    ------
    InvalidArgumentError
        Several paths for one table.
    """
    if not isinstance(sources, str):
        raise InvalidArgumentError("option table reads one table: load(uri) or load(name)")
    name = os.fspath(sources)
    return TableRef(kind, name, version, options)
