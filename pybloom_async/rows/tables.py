"""Lookups over tables: a Delta or Iceberg table's rows that satisfy a predicate, exactly.

1. The table's library lists the live files, and its partition values and
   statistics rule files out (:func:`pybloom_async.tables.resolve_table`);
2. Bloom pruning runs on those files (:func:`pybloom_async.pruning.api.prune_files`,
   in the lookup's run);
3. the kept files' rows are read through the table's library, so deletion
   vectors and delete files are applied and partition columns filled in
   (:func:`pybloom_async.tables.read_rows`);
4. the predicate is evaluated on those rows by the rule lookups use on files
   (:mod:`pybloom_async.rows.match`), literals converted by the column's type.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any

import anyio
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InvalidArgumentError, PredicateError
from ..io.store import StoreOptions
from ..parquet import MAGIC, Schema, decode_file_metadata
from ..predicate import Predicate, iter_leaves
from ..pruning.api import CompiledPredicate, prune_files
from ..read.run import Run
from ..tables import (
    TableFiles,
    TableSource,
    arrow_schema,
    as_store_options,
    read_rows,
    resolve_table,
)
from .match import Leaves, computable, evaluate, leaf_array

__all__ = ["matching_rows", "parquet_schema", "read_columns_of", "table_batches"]


def parquet_schema(schema: pa.Schema) -> Schema:
    """The Parquet schema pyarrow writes for ``schema``: what literals are converted by."""
    sink = pa.BufferOutputStream()
    pq.write_table(schema.empty_table(), sink)
    data = sink.getvalue().to_pybytes()
    assert data.endswith(MAGIC)
    length = int.from_bytes(data[-8:-4], "little")
    return decode_file_metadata(data[-8 - length : -8], "(table schema)").schema


def read_columns_of(
    table: TableFiles, columns: Sequence[str] | None, where: Predicate
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
    for leaf in iter_leaves(where):
        top = next(
            (c for c in table.top_level if leaf.column == c or leaf.column.startswith(c + ".")),
            leaf.column,
        )
        if top not in wanted:
            wanted.append(top)
    return wanted


def matching_rows(rows: Any, where: Predicate, schema: Schema, name: str, result: pa.Schema) -> Any:
    """The rows where ``where`` is TRUE, with the result's columns and types."""
    data = computable(rows)
    arrays = {}
    for leaf in iter_leaves(where):
        if leaf.column not in arrays:
            arrays[leaf.column] = leaf_array(data, schema.column(leaf.column), leaf.column)
    mask = evaluate(where, data, Leaves(schema, name), arrays)
    return rows.filter(mask).select(result.names).cast(result)


async def table_batches(
    base: Run,
    source: TableSource,
    where: Predicate,
    columns: Sequence[str] | None,
    *,
    on_error: str,
    options: StoreOptions | Mapping[str, Any] | None,
) -> AsyncGenerator[Any, None]:
    """The rows of a table that satisfy ``where``, as ``pyarrow.Table`` s (the first: empty).

    The first table yielded is an empty one with the result's schema.

    Raises
    ------
    InvalidArgumentError
        ``on_error="skip"``: a table's live files are all part of its answer.
    PredicateError
        A column of ``where`` or ``columns`` is not in the table, or a literal is
        not a value of its column's type.
    """
    if on_error != "raise":
        raise InvalidArgumentError(
            "on_error='skip' does not apply to a table: its live files are all part of the "
            "answer, and one that cannot be read fails the lookup",
            value=on_error,
        )
    store = as_store_options(options)
    table = await anyio.to_thread.run_sync(resolve_table, source, where, store)
    names = read_columns_of(table, columns, where)
    read_schema = arrow_schema(table, names)
    result = pa.schema([read_schema.field(c) for c in (columns or table.top_level)])
    schema = parquet_schema(read_schema)
    yield result.empty_table()
    verdicts = await prune_files(base, table.files, CompiledPredicate(where), require_columns=False)
    kept: dict[str, list[int] | None] = {}
    for v in verdicts:
        if v.row_group is None:
            kept[v.file] = None  # not pruned: its library reads it whole (or says why not)
        elif v.kept:
            groups = kept.setdefault(v.file, [])
            if groups is not None:
                groups.append(v.row_group)
    if not kept:
        return
    parts = read_rows(table, kept, names, store)
    while True:
        rows = await anyio.to_thread.run_sync(next, parts, None)
        if rows is None:
            return
        yield await anyio.to_thread.run_sync(
            matching_rows, rows.cast(read_schema), where, schema, table.name, result
        )
