"""Tables as sources: Delta Lake (``deltalake``) and Apache Iceberg (``pyiceberg``).

A table is turned into the list of its live data files, read from the table's
own log or manifests by its own library (never parsed here), after the table's
first stage of pruning: partition values and the per-file statistics the log or
the manifests keep. Bloom pruning (``pruning/``) then runs on those files, and
lookups (``rows/``) read the surviving rows by their own path, the table's deletes
applied (deletion vectors as deltalake decodes them, delete files as pyiceberg lists
them: :mod:`.deletes`).

Neither library is imported with the package: each is imported when a table of
its kind is resolved, with a clear error naming the extra when it is missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ..errors import InvalidArgumentError, MissingDependencyError, PredicateError
from ..io.base import FileInfo
from ..io.store import StoreOptions
from ..io.store import as_store_options as as_store_options
from ..predicate import Predicate, iter_leaves

#: A ``deltalake.DeltaTable`` or a ``pyiceberg.table.Table``.
TableSource: TypeAlias = Any


@dataclass
class TableFiles:
    """A table's live data files that its partition values and statistics keep.

    ``files`` hold the sizes the log or manifests record (no HEAD needed);
    ``live`` counts the live files before the first stage. ``partitions``
    maps a file's path to its partition values (Delta), ``tasks`` to its
    FileScanTask (Iceberg).
    """

    kind: str  # "delta" or "iceberg"
    name: str
    table: Any
    files: list[FileInfo]
    live: int
    columns: tuple[str, ...]  # every column path of the table's schema, top level first
    top_level: tuple[str, ...]
    partition_columns: tuple[str, ...] = ()
    partitions: dict[str, dict[str, Any]] = field(default_factory=dict)
    tasks: dict[str, Any] = field(default_factory=dict)
    # Delta: every live file's path (kept or not) -> its path in the log
    relative: dict[str, str] = field(default_factory=dict)
    #: What was read: the Delta version, or the Iceberg snapshot id (None: an empty table).
    version: int | None = None


def table_kind(source: object) -> str | None:
    """``"delta"`` or ``"iceberg"`` for a table object, None for anything else.

    Decided by the object's class, without importing either library.
    """
    for cls in type(source).__mro__:
        module = cls.__module__ or ""
        if module.startswith("deltalake") and cls.__name__ == "DeltaTable":
            return "delta"
        if module.startswith("pyiceberg.table") and cls.__name__ == "Table":
            return "iceberg"
    return None


def table_root(table: TableFiles) -> str:
    """Where the table lives: a Delta table's URI, an Iceberg table's location."""
    if table.kind == "delta":
        return str(table.table.table_uri).rstrip("/")
    return str(table.table.location()).rstrip("/")


def import_extra(module: str, extra: str, purpose: str) -> Any:
    """Import ``module`` or say which extra of pybloom-async provides it.

    Raises
    ------
    MissingDependencyError
        The module is not installed, or cannot be imported.
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] == top:
            message = f"{top} is needed to {purpose}: install pybloom-async[{extra}]"
        else:
            message = f"{top} is needed to {purpose} but cannot be imported: {exc}"
        raise MissingDependencyError(message) from None


def check_columns(where: Predicate, known: tuple[str, ...], name: str) -> None:
    """A predicate column the table does not have is a mistake, not an empty answer.

    Raises
    ------
    PredicateError
        Naming the column and listing the table's columns.
    """
    have = set(known)
    for leaf in iter_leaves(where):
        if leaf.column not in have:
            shown = ", ".join(known[:20]) + (", ..." if len(known) > 20 else "")
            raise PredicateError(
                f"the table {name} has no such column; it has: {shown}", column=leaf.column
            )


def files_only_columns(table: TableFiles, where: Predicate, strict: bool) -> None:
    """With ``strict``, refuse a predicate on columns that are in no data file (Delta partitions).

    Strict pruning raises on a column a file lacks; a Delta table keeps its
    partition columns in the log, not in the files.

    Raises
    ------
    InvalidArgumentError
        ``strict`` and ``where`` reads a partition column of a Delta table.
    """
    outside = sorted(where.columns() & set(table.partition_columns))
    if strict and table.kind == "delta" and outside:
        raise InvalidArgumentError(
            f"on_error='raise' pruning reads data files only, and the partition column(s) "
            f"{', '.join(map(repr, outside))} of the Delta table {table.name} are in none: "
            "prune with on_error='skip' (partition values are compared first, exactly)"
        )


def resolve_table(
    source: TableSource,
    where: Predicate | None,
    options: StoreOptions | Mapping[str, Any] | None = None,
) -> TableFiles:
    """The live files of a table that its partition values and statistics keep for ``where``.

    ``where`` None: every live file.

    Blocking (the table libraries read the log or the manifests): call it in a
    worker thread from async code.

    Raises
    ------
    PredicateError
        A column of ``where`` is not in the table.
    MissingDependencyError
        The table's library is not installed.
    InvalidArgumentError
        ``source`` is not a table.
    """
    kind = table_kind(source)
    if kind == "delta":
        from .delta import resolve_delta

        return resolve_delta(source, where, as_store_options(options))
    if kind == "iceberg":
        from .iceberg import resolve_iceberg

        return resolve_iceberg(source, where)
    raise InvalidArgumentError(f"not a Delta or Iceberg table: {type(source).__name__}")


def arrow_schema(table: TableFiles, columns: Sequence[str]) -> Any:
    """The ``pyarrow.Schema`` of the table's top-level ``columns``, as its library reads them
    (an Iceberg table's: as pyiceberg's scan types them, :func:`.iceberg.arrow_schema_of`)."""
    if table.kind == "delta":
        import pyarrow as pa

        schema = pa.schema(table.table.schema().to_arrow())
    else:
        from .iceberg import arrow_schema_of

        schema = arrow_schema_of(table.table.schema())
    return _select(schema, columns)


def _select(schema: Any, columns: Sequence[str]) -> Any:
    import pyarrow as pa

    return pa.schema([schema.field(c) for c in columns])


def files_with_deletes(table: TableFiles, paths: Sequence[str]) -> list[str]:
    """Which of ``paths`` have rows deleted outside the file (deletion vectors, delete files).

    Reading such a file as plain Parquet would bring those rows back. Blocking
    (deltalake reads the vectors).
    """
    if table.kind == "delta":
        from .delta import files_with_deletion_vectors

        return files_with_deletion_vectors(table, set(paths))
    return [p for p in paths if table.tasks[p].delete_files]
