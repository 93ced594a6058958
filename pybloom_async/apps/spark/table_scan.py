"""Delta and Iceberg tables in the data source: planned on the driver, read by the executors
through their libraries, as :func:`pybloom_async.lookup` reads a table.

The driver opens the table at its current version (Delta) or snapshot (Iceberg), lets its
library list the live files its partition values and statistics keep
(:func:`pybloom_async.tables.resolve_table`), prunes their row groups by their filters
(:func:`pybloom_async.pruning.api.prune_files`) and cuts the kept files into tasks. Each
executor opens the table at that same version (an Iceberg table whose snapshot moved since
fails the read), and reads its files' rows through the library, deletion vectors and
delete files applied, partition columns filled in
(:func:`pybloom_async.tables.read_rows`); the predicate is evaluated on them exactly
(:func:`pybloom_async.rows.tables.matching_rows`).

A plain path inside a table is refused (:func:`refuse_table_folder`): read as files, a
table would bring back the rows its log or manifests removed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ...errors import InvalidArgumentError, SourceError
from ...io.store import StoreOptions
from ...predicate import Predicate
from ...pruning.api import CompiledPredicate, prune_files
from ...read.run import open_run
from ...rewrite.guard import TableGuard
from ...rows.tables import matching_rows, parquet_schema, read_columns_of
from ...tables import TableSource, arrow_schema, read_rows, resolve_table
from ...tasks.loops import to_worker
from .scan import FileRead, ReadSettings, split_tasks

__all__ = [
    "TableRef",
    "TableTask",
    "plan_table",
    "read_table_task",
    "refuse_table_folder",
    "table_ref",
    "table_schema",
]


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
            from ...tables.delta import open_delta

            return open_delta(self.name, self.version, self.options)
        from ...tables.iceberg import load_iceberg

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
    """One Spark task of a table: its kept files (and row groups), and what they share."""

    ref: TableRef
    where: Predicate | None
    kept: tuple[tuple[str, tuple[int, ...] | None], ...]
    names: tuple[str, ...]
    rows: pa.Schema  # the batches' schema (Spark's)


async def plan_table(
    ref: TableRef,
    where: Predicate | None,
    rows: pa.Schema,
    settings: ReadSettings,
    max_partition_bytes: int,
    min_partitions: int,
) -> list[TableTask]:
    """The table's kept files cut into tasks, the table pinned at its current version."""
    source = await to_worker(ref.open)
    pinned = ref.pinned(source)
    table = await to_worker(resolve_table, source, where, ref.options)
    kept: dict[str, list[int] | None] = {}
    if where is None:
        kept = {f.path: None for f in table.files}
    else:
        async with open_run(settings.run()) as run:
            verdicts = await prune_files(
                run, table.files, CompiledPredicate(where), require_columns=False
            )
        for v in verdicts:  # as a table's lookup keeps them (rows/tables.py)
            if v.row_group is None:
                kept[v.file] = None
            elif v.kept:
                groups = kept.setdefault(v.file, [])
                if groups is not None:
                    groups.append(v.row_group)
    sizes = {f.path: f for f in table.files}
    reads = [FileRead(sizes.get(path, path)) for path in kept]
    tasks = []
    for group in split_tasks(reads, max_partition_bytes, min_partitions):
        part = []
        for read in group:
            groups = kept[read.path]
            part.append((read.path, None if groups is None else tuple(groups)))
        tasks.append(TableTask(pinned, where, tuple(part), tuple(rows.names), rows))
    return tasks


def read_table_task(task: TableTask) -> Iterator[Any]:
    """The task's rows that satisfy its predicate, as batches of its schema (blocking)."""
    source = task.ref.open()
    table = resolve_table(source, task.where, task.ref.options)
    names = list(task.names)
    wanted = read_columns_of(table, names, task.where) if task.where is not None else names
    read_schema = arrow_schema(table, wanted)
    result = pa.schema([read_schema.field(c) for c in names])
    schema = parquet_schema(read_schema) if task.where is not None else None
    kept = {path: None if groups is None else list(groups) for path, groups in task.kept}
    for rows in read_rows(table, kept, wanted, task.ref.options):
        if task.where is None or schema is None:
            out = rows.select(names).cast(result)
        else:
            out = matching_rows(rows.cast(read_schema), task.where, schema, table.name, result)
        for batch in out.cast(task.rows).to_batches():
            if batch.num_rows:
                yield batch


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
