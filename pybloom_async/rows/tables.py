"""Lookups over tables: a Delta or Iceberg table's rows that satisfy a predicate, exactly.

1. The table's library lists the live files, and its partition values and
   statistics rule files out (:func:`pybloom_async.tables.resolve_table`); a lake
   index that belongs to the table rules out more (:mod:`pybloom_async.lake.tables`);
2. each remaining file goes through the one per-file pass of lookups
   (:func:`pybloom_async.rows.api.read_one_file`): its footer, Bloom pruning, and only
   the kept row groups' (or pages') needed column chunks, as for plain files;
3. the table's word on each file read (:class:`_TableFile`, the ``Job.table_file``
   hook): its deleted rows, by position (Delta deletion vectors, Iceberg position
   deletes and deletion vectors) or by value (Iceberg equality deletes), are dropped
   from every decoded row group, and the columns the table keeps outside the file
   (Delta partition values, Iceberg identity partitions a file lacks) are compared as
   the predicate says and filled in;
4. the rows are shaped as the table's schema types them.

A delete that cannot be applied (a delete file that cannot be read, a vector deltalake
cannot decode, a delete format not read here) fails the lookup, naming it: a deleted
row never comes back.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Future
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import (
    InvalidArgumentError,
    ParquetFormatError,
    PredicateError,
    PyBloomError,
    SourceError,
    UnsupportedTypeError,
)
from ..index_policy.choice import table_files_for
from ..io.address import local_path
from ..io.base import FileInfo, location_text
from ..io.store import StoreOptions
from ..lake.digest import LakeFiles
from ..parquet import MAGIC, ColumnDescriptor, Schema, decode_file_metadata
from ..predicate import Predicate, iter_leaves
from ..pruning.api import CompiledPredicate
from ..pruning.in_lists import sorted_unique
from ..read.reader import BloomReader
from ..read.run import Run
from ..tables import TableFiles, TableSource, arrow_schema, as_store_options, resolve_table
from ..tables.deletes import (
    MAX_DELETE_FILE_BYTES,
    EqualityDeletes,
    FileDeletes,
    equality_deletes,
    position_deletes,
    vector_deletes,
)
from ..tables.evolution import renamed_reason
from ..tables.iceberg import arrow_schema_of, data_location
from ..tasks.loops import to_worker
from .arguments import LookupOptions
from .arrow import empty_table
from .match import Leaves, ValueSets
from .plan import FilePlan, Job

T = TypeVar("T")


def parquet_schema(schema: pa.Schema) -> Schema:
    """The Parquet schema pyarrow writes for ``schema``: what literals are converted by."""
    sink = pa.BufferOutputStream()
    pq.write_table(empty_table(schema), sink)
    data = sink.getvalue().to_pybytes()
    assert data.endswith(MAGIC)
    length = int.from_bytes(data[-8:-4], "little")
    return decode_file_metadata(data[-8 - length : -8], "(table schema)").schema


def read_columns_of(
    table: TableFiles, columns: Sequence[str] | None, where: Predicate | None
) -> list[str]:
    """The result's columns (checked), then the predicate's top-level columns to read too."""
    if columns is None:
        wanted = list(table.top_level)
    else:
        wanted = list(columns)
        for name in wanted:
            if name not in table.top_level:
                shown = ", ".join(table.top_level[:20])
                raise PredicateError(
                    f"the table {table.name} has no such column; it has: {shown}", column=name
                )
    for leaf in iter_leaves(where) if where is not None else ():
        top = next(
            (c for c in table.top_level if leaf.column == c or leaf.column.startswith(c + ".")),
            leaf.column,
        )
        if top not in wanted:
            wanted.append(top)
    return wanted


# ---- one data file ---------------------------------------------------------------------


class _TableLeaves(Leaves):
    """A file's comparisons, with the table's own columns (partition values) converted by
    the table's types."""

    def __init__(
        self, schema: Schema, path: str, table_schema: Schema, own: set[str],
        cache: ValueSets | None = None,
    ) -> None:  # fmt: skip
        super().__init__(schema, path, cache)
        self._table_schema = table_schema
        self._own = own

    def descriptor(self, column: str) -> ColumnDescriptor | None:
        if column in self._own:
            return self._table_schema.column(column)
        return super().descriptor(column)


def _leaf_values(rows: Any, column: str) -> Any:
    """A (dotted) column's values in decoded rows; nulls when the rows lack it."""
    parts = column.split(".")
    if parts[0] not in rows.column_names:
        return None
    data = rows.column(parts[0])
    for name in parts[1:]:
        index = data.type.get_field_index(name) if pa.types.is_struct(data.type) else -1
        if index < 0:
            return None
        data = pc.struct_field(data, [index])
    return data


@dataclass
class _TableFile:
    """The table's word on one data file: the ``Job.table_file`` hook (``rows/plan.py``)."""

    deletes: FileDeletes
    constants: dict[str, Any]  # column -> pa.Scalar, typed as the table's schema
    table_schema: Schema  # the constants' Parquet descriptors
    columns: tuple[str, ...] = ()
    #: Delta: the file's keep mask, asked for only when a row group has a matching row
    #: (deltalake's vectors may still be on their way; a worker thread waits for them).
    keep_mask: Callable[[], Any] | None = None

    def leaves(self, schema: Schema, path: str, cache: ValueSets | None = None) -> Leaves:
        return _TableLeaves(schema, path, self.table_schema, set(self.constants), cache)

    def values(self, rows: int) -> Mapping[str, Any]:
        return {c: pa.chunked_array([_repeat(v, rows)]) for c, v in self.constants.items()}

    def live(self, rows: Any, positions: Any) -> Any:
        if self.keep_mask is not None:
            mask = self.keep_mask()  # bit-packed: unpacked only for the files read
            self.deletes.keep = None if mask is None else mask.to_numpy(zero_copy_only=False)
            self.keep_mask = None
        if not self.deletes:
            return None

        def values(column: str) -> Any:
            if column in self.constants:
                return _repeat(self.constants[column], rows.num_rows)
            found = _leaf_values(rows, column)
            if found is None:  # the file lacks the column: nulls
                return pa.nulls(rows.num_rows)
            return found

        return self.deletes.live(positions, values)


def _repeat(value: Any, count: int) -> Any:
    if not value.is_valid:
        return pa.nulls(count, value.type)
    return pa.repeat(value, count)


def _typed(value: Any, arrow_type: Any, column: str, path: str) -> Any:
    """A partition value (text from the log, or a typed value) as a scalar of the column."""
    if value is None:
        return pa.scalar(None, type=arrow_type)
    try:
        return pa.array([value]).cast(arrow_type)[0]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise ParquetFormatError(
            f"the partition value {value!r} of {column!r} is not a {arrow_type}: {exc}", path=path
        ) from None


@dataclass
class _Reading:
    """What reading a table's files needs beyond the files: each file's deletes and the
    columns the table keeps outside it, asked for file by file (``Job.table_file``)."""

    table: TableFiles
    reader: BloomReader
    schema: pa.Schema  # the table's whole Arrow schema
    constants_schema: Schema  # Parquet descriptors of the partition columns
    names: Sequence[str] = ()  # the table's top-level columns read
    #: Delta: path -> keep mask, read by deltalake in a thread of its own while the files'
    #: footers are read, awaited by the first row group with a matching row (None: the
    #: table has no deletion vectors).
    masks: Future[dict[str, Any]] | None = None
    #: Delete file -> what it deletes, once read (those read at once wait for the first).
    decoded: dict[str, Future[Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def table_file(self, plan: FilePlan) -> _TableFile | None:
        path = location_text(plan.location)
        keep_mask = None
        if self.table.kind == "delta":
            deletes = FileDeletes()
            if self.masks is not None:
                masks = self.masks
                keep_mask = lambda: masks.result().get(path)  # noqa: E731
            values = self.table.partitions.get(path, {})
        else:
            task = self.table.tasks[path]
            deletes = await self._iceberg_deletes(task)
            read = [*self.names, *deletes.columns]  # the equality deletes' columns too
            _check_field_ids(self.table, plan.schema, path, read)
            values = _missing_identity_values(self.table, task, plan.schema)
        constants = {c: _typed(v, self.schema.field(c).type, c, path) for c, v in values.items()}
        if not deletes and not constants and keep_mask is None:
            return None
        return _TableFile(deletes, constants, self.constants_schema, deletes.columns, keep_mask)

    async def _iceberg_deletes(self, task: Any) -> FileDeletes:
        found = FileDeletes()
        positions = []
        for delete in sorted(task.delete_files, key=lambda d: str(d.file_path)):
            what = await self._decoded(delete)
            if isinstance(what, EqualityDeletes):
                found.equality.append(what)
            else:
                # keyed as the delete file spells the data file: as the manifests do
                spelled = str(task.file.file_path)
                positions.append(what.get(spelled, np.zeros(0, dtype=np.int64)))
        if positions:
            found.positions = sorted_unique(np.concatenate(positions))
        return found

    async def _decoded(self, delete: Any) -> Any:
        """What one delete file deletes: read and decoded once for the lookup, however many
        data files (read at once) it covers."""
        key = str(delete.file_path)
        with self.lock:
            pending = self.decoded.get(key)
            mine = pending is None
            if mine:
                pending = self.decoded[key] = Future()
        assert pending is not None
        if not mine:
            return await to_worker(pending.result)
        try:
            size = int(delete.file_size_in_bytes)
            data = await _read_whole(self.reader, data_location(key), size)
            what = await to_worker(_decode_delete, self.table, delete, data)
        except BaseException as exc:
            pending.set_exception(exc)
            raise
        pending.set_result(what)
        return what


async def _read_whole(reader: BloomReader, path: str, size: int) -> bytes:
    """A delete file, read whole in one request (its size comes from the manifest)."""
    if size > MAX_DELETE_FILE_BYTES:
        raise SourceError(
            f"the delete file is {size} bytes, above the {MAX_DELETE_FILE_BYTES} read whole",
            path=path,
        )
    async with reader.open(FileInfo(path, size)) as source:
        return await source.read_range(0, size)


def _decode_delete(table: TableFiles, delete: Any, data: bytes) -> Any:
    """One Iceberg delete file: positions per data file, or its equality deletes."""
    path = str(delete.file_path)
    content = getattr(delete.content, "name", str(delete.content))
    file_format = getattr(delete.file_format, "name", str(delete.file_format))
    if content == "POSITION_DELETES" and file_format == "PARQUET":
        return position_deletes(data, path)
    if content == "POSITION_DELETES" and file_format == "PUFFIN":
        from pyiceberg.table.deletion_vector import deletion_vectors_from_puffin_file
        from pyiceberg.table.puffin import PuffinFile

        return vector_deletes(data, path, lambda raw: deletion_vectors_from_puffin_file(
            PuffinFile(raw)))  # fmt: skip
    if content == "EQUALITY_DELETES" and file_format == "PARQUET":
        schema = table.table.schema()
        arrow = arrow_schema_of(schema)
        fields = []
        for field_id in delete.equality_ids or ():
            name = schema.find_column_name(field_id)
            if name is None:
                raise UnsupportedTypeError(
                    f"the equality delete file names field id {field_id}, which the table's "
                    "schema no longer has",
                    path=path,
                )
            fields.append((field_id, name, _arrow_type(arrow, name)))
        return equality_deletes(data, path, fields)
    raise UnsupportedTypeError(
        f"the delete file holds {content.lower()} in {file_format}, which pybloom-async "
        "does not read: its rows cannot be read exactly",
        path=path,
    )


def _arrow_type(schema: pa.Schema, dotted: str) -> Any:
    parts = dotted.split(".")
    t = schema.field(parts[0]).type
    for name in parts[1:]:
        t = t.field(name).type
    return t


def _check_field_ids(table: TableFiles, schema: Schema, path: str, names: Sequence[str]) -> None:
    """Columns are read by name: a file that names a column read (``names``, top level)
    otherwise than the table does now is refused: a column renamed since the file was
    written, or dropped and its name reused (by the file's field ids; a file without
    them is read by the table's name mapping, so any such change in the table's history
    refuses it).

    Raises
    ------
    UnsupportedTypeError
        Naming the file's column and the table's.
    """
    iceberg = table.table.schema()
    known = set(table.columns)
    read = {n.split(".")[0] for n in names}

    def is_read(column: str | None) -> bool:
        return column is not None and column.split(".")[0] in read

    if not any(d.field_id is not None for d in schema.columns):
        for column in table.columns:
            reason = renamed_reason(table.table, column) if is_read(column) else None
            if reason is not None:
                raise UnsupportedTypeError(
                    f"the column {column!r} {reason}, and the file has no field ids: "
                    "pybloom-async reads columns by name and does not read such files",
                    path=path,
                    column=column,
                )
        return
    for desc in schema.columns:
        if desc.field_id is None or desc.max_repetition_level > 0:
            continue
        now = iceberg.find_column_name(desc.field_id)
        if now == desc.path or (now is None and desc.path not in known):
            continue
        if not (is_read(desc.path) or is_read(now)):
            continue
        raise UnsupportedTypeError(
            f"the file's column {desc.path!r} (field id {desc.field_id}) is "
            + (f"{now!r} in the table now" if now is not None else "not in the table now")
            + ": pybloom-async reads columns by name and does not read such files",
            path=path,
            column=desc.path,
        )


def _missing_identity_values(table: TableFiles, task: Any, schema: Schema) -> dict[str, Any]:
    """Identity-partition columns the data file lacks: their partition values (as pyiceberg
    projects them)."""
    spec = table.table.metadata.specs().get(task.file.spec_id)
    if spec is None:
        return {}
    iceberg = table.table.schema()
    out = {}
    for position, part in enumerate(spec.fields):
        if type(part.transform).__name__ != "IdentityTransform":
            continue
        name = iceberg.find_column_name(part.source_id)
        if name is None or "." in name or name in schema:
            continue
        if any(d.field_id == part.source_id for d in schema.columns):
            continue
        value = task.file.partition[position]
        if value is not None:
            out[name] = value
    return out


def _prepare(
    table: TableFiles, reader: BloomReader, paths: set[str], names: Sequence[str]
) -> _Reading:
    """The table's schema and its partition columns' descriptors, once for the lookup; a
    Delta table's deletion vectors of the files ``paths`` are started (read in a thread of
    their own, awaited by the first file read that needs them). Blocking."""
    schema = arrow_schema(table, table.top_level)
    own = [f for f in schema if f.name in set(table.partition_columns)]
    reading = _Reading(table, reader, schema, parquet_schema(pa.schema(own)), names)
    if table.kind == "delta":
        from ..tables.delta import deletion_masks, has_deletion_vectors

        if has_deletion_vectors(table):
            reading.masks = _started(deletion_masks, table, paths)
    return reading


def _started(function: Callable[..., T], *args: Any) -> Future[T]:
    """``function(*args)`` run at once in a thread of its own, which no task owns: a lookup
    that did not need its result (or was cancelled) leaves it to finish.

    Not a daemon thread: the interpreter waits for it at exit. A daemon thread still inside
    deltalake when the interpreter finalizes crashes the process (seen: a segmentation
    fault at the exit of a script whose lookup needed no deletion vector).
    """
    future: Future[T] = Future()

    def run() -> None:
        try:
            future.set_result(function(*args))
        except BaseException as exc:  # handed to whoever awaits the result
            future.set_exception(exc)

    threading.Thread(target=run, name="pybloom-async deletion vectors", daemon=False).start()
    return future


# ---- the table -------------------------------------------------------------------------


def _shape(
    rows: Any, names: Sequence[str], schema: pa.Schema, constants: Mapping[str, Any], path: str
) -> Any:
    """Matching rows with the table's columns ``names``: partition values filled in, each
    column typed as the table's schema (a column the file lacks gives nulls)."""
    arrays = []
    stored = set(rows.column_names)
    for name in names:
        target = schema.field(name).type
        try:
            if name in constants:
                arrays.append(_repeat(constants[name], rows.num_rows).cast(target))
            elif name in stored:
                column = rows.column(name)  # cast only when its type differs: a compute call
                arrays.append(column if column.type == target else column.cast(target))
            else:
                arrays.append(pa.nulls(rows.num_rows, target))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise ParquetFormatError(
                f"the column {name!r} does not fit the table's type {target}: {exc}", path=path
            ) from None
    return pa.Table.from_arrays(arrays, names=list(names))


async def table_batches(
    base: Run,
    source: TableSource,
    compiled: CompiledPredicate,
    columns: Sequence[str] | None,
    *,
    on_error: str,
    options: StoreOptions | Mapping[str, Any] | None,
    lookup: LookupOptions,
    stream: bool = False,
) -> AsyncGenerator[Any, None]:
    """The rows of a table that satisfy the run's predicate (``compiled`` once: the lake
    index and every file share its leaves), as ``pyarrow.Table`` s (the first: empty).

    The first table yielded is an empty one with the result's schema. Without
    ``stream`` every file is read in one pass (footer, pruning and rows); with it, every
    file is pruned first and the rows are then read file by file, row group by row group.
    ``lookup``: how rows are read (its ``use_index``: whether the table's own lake index
    serves, ``index_policy``; its ``partitioning`` does not apply: a table's partition
    columns are its own).

    Raises
    ------
    InvalidArgumentError
        ``on_error="skip"``: a table's live files are all part of its answer.
    PredicateError
        A column of the predicate or ``columns`` is not in the table, or a literal is
        not a value of its column's type.
    UnsupportedTypeError, SourceError, ParquetFormatError
        A delete that cannot be applied, or a file that cannot be read (named).
    """
    if on_error != "raise":
        raise InvalidArgumentError(
            "on_error='skip' does not apply to a table: its live files are all part of the "
            "answer, and one that cannot be read fails the lookup",
            value=on_error,
        )
    store = as_store_options(options)
    table = await to_worker(resolve_table, source, compiled.predicate, store)
    rows = table_rows(
        base, table, compiled, columns, max_fetch_bytes=lookup.max_fetch_bytes,
        page_index=lookup.page_index, stream=stream,
        files=lambda: table_files_for(lookup.use_index, base, table, compiled),
    )  # fmt: skip
    async with aclosing(rows) as found_rows:
        async for found in found_rows:
            yield found


# Long because: the two ways of reading (one pass, or streamed file by file) share the setup.
async def table_rows(
    base: Run,
    table: TableFiles,
    compiled: CompiledPredicate | None,
    columns: Sequence[str] | None,
    *,
    max_fetch_bytes: int,
    page_index: bool,
    stream: bool,
    files: Callable[[], Awaitable[Sequence[FileInfo] | LakeFiles]],
) -> AsyncGenerator[Any, None]:
    """The rows of the table's ``files`` (awaited after the first table; with a lake index's
    word on them, their footers from its digest) that satisfy the run's predicate,
    ``compiled`` once (None: every live row), as ``pyarrow.Table`` s, the first an empty
    one with the result's schema: each file through the one per-file pass of lookups, its
    deletes applied and the columns the table keeps outside it filled in (the module's
    steps 2-4).

    Raises
    ------
    PredicateError
        A column of the predicate or ``columns`` is not in the table, or a literal is
        not a value of its column's type.
    UnsupportedTypeError, SourceError, ParquetFormatError
        A delete that cannot be applied, or a file that cannot be read (named).
    """
    from ..pruning.partitions import PartitionPredicate
    from .api import FileRows, read_one_file
    from .fetch import planned_file_tables
    from .sweep import Sweep, each_file

    where = compiled.predicate if compiled is not None else None
    names = read_columns_of(table, columns, where)
    read_schema = arrow_schema(table, names)
    result = pa.schema([read_schema.field(c) for c in (columns or table.top_level)])
    yield empty_table(result)
    given = await files()
    lake = given if isinstance(given, LakeFiles) else None
    kept = list(given) if not isinstance(given, LakeFiles) else given.kept
    if not kept:
        return
    paths = {location_text(f) for f in kept}
    reading = await to_worker(_prepare, table, base.reader, paths, names)
    job = Job(
        compiled, names, max_fetch_bytes, page_index, merging=base.reader.config.plan,
        table_file=reading.table_file,
    )  # fmt: skip
    parts = None if compiled is None else PartitionPredicate(compiled, None)
    # A table on local disk: its files swept as a folder's are (see .sweep).
    sweep = None
    if parts is not None and all(local_path(p) is not None for p in paths):
        sweep = Sweep(base, parts, paths, lake.footers if lake is not None else {})

    async def one(location: str | FileInfo) -> Any:
        swept = sweep.passed(location_text(location)) if sweep is not None else None
        try:
            return await read_one_file(base, location, parts, job, not stream, lake, swept)
        except PyBloomError as exc:
            raise exc.with_context(path=location_text(location)) from None

    def shaped(rows: Any, plan: FilePlan) -> Any:
        path = location_text(plan.location)
        constants = _constants_of(reading, plan, path)
        return _shape(rows, names, read_schema, constants, path).select(result.names)

    found = await each_file(base, list(kept), one, FileRows, base.progress, sweep)
    for f in found:
        if not f.plan.kept:
            continue
        if not stream:  # a table of no rows adds nothing (the answer's schema came first)
            for rows in (t for t in f.tables if t.num_rows):
                yield shaped(rows, f.plan)
            continue
        try:
            async with aclosing(planned_file_tables(base.reader, f.plan, job)) as tables:
                async for rows in tables:
                    if rows.num_rows:
                        yield shaped(rows, f.plan)
        except PyBloomError as exc:
            raise exc.with_context(path=f.plan.path) from None


def _constants_of(reading: _Reading, plan: FilePlan, path: str) -> dict[str, Any]:
    """The columns the table keeps outside the file, typed (as :meth:`_Reading.table_file`)."""
    table = reading.table
    if table.kind == "delta":
        values = table.partitions.get(path, {})
    else:
        values = _missing_identity_values(table, table.tasks[path], plan.schema)
    return {c: _typed(v, reading.schema.field(c).type, c, path) for c, v in values.items()}
