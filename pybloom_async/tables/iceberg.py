"""Apache Iceberg tables through ``pyiceberg``: live files, first stage, rows.

``table.scan(row_filter).plan_files()`` gives the live data files with the
manifests' partition values and statistics already applied, each as a
FileScanTask with its delete files. The row filter is our predicate in
pyiceberg's terms (``EqualTo``, ``In``, ``IsNull``, ``And``, ``Or``) where the
value is certain for the column's type (integers, strings, dates, booleans);
any other comparison becomes ``AlwaysTrue`` there, so the manifests never rule
out a file that may hold a match.

Rows are read by pyiceberg's Arrow reader from the surviving FileScanTasks, so
position and equality deletes are applied: a deleted row is never returned.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import ParquetFormatError, SourceError, SourceNotFoundError, UnsupportedTypeError
from ..io.base import FileInfo
from ..predicate import And, Eq, In, Or, Predicate
from . import TableFiles, check_columns, import_extra
from .values import leaf_values

__all__ = ["load_iceberg", "read_iceberg_rows", "resolve_iceberg", "row_filter"]

#: pyiceberg's primitive types by class name, as :func:`plain_value` names their kinds.
_KINDS = {
    "IntegerType": "integer",
    "LongType": "long",
    "StringType": "string",
    "DateType": "date",
    "BooleanType": "boolean",
}


def load_iceberg(identifier: str) -> Any:
    """The table ``CATALOG.NAMESPACE.TABLE``, its catalog configured as pyiceberg's usual.

    The catalog's configuration comes from ``~/.pyiceberg.yaml`` or the
    ``PYICEBERG_CATALOG__<NAME>__*`` environment variables.

    Raises
    ------
    MissingDependencyError
        pyiceberg is not installed.
    InvalidArgumentError
        ``identifier`` does not name a catalog and a table.
    SourceError
        The catalog or the table cannot be loaded; SourceNotFoundError when the
        catalog is not configured, or has no such namespace or table.
    """
    from ..errors import InvalidArgumentError

    catalog_name, _, table_name = identifier.partition(".")
    if not catalog_name or "." not in table_name:
        raise InvalidArgumentError(
            f"an Iceberg table is named CATALOG.NAMESPACE.TABLE, not {identifier!r}",
            value=identifier,
        )
    catalog_module = import_extra("pyiceberg.catalog", "iceberg", "read Iceberg tables")
    try:
        catalog = catalog_module.load_catalog(catalog_name)
    except Exception as exc:  # a catalog without configuration: ValueError
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        error = SourceNotFoundError if isinstance(exc, ValueError) else SourceError
        raise error(f"cannot load the Iceberg table: {text}", path=identifier) from None
    try:
        return catalog.load_table(table_name)
    except Exception as exc:  # pyiceberg raises its own errors, ValueError and OSError
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        missing = type(exc).__name__ in ("NoSuchTableError", "NoSuchNamespaceError")
        error = SourceNotFoundError if missing else SourceError
        raise error(f"cannot load the Iceberg table: {text}", path=identifier) from None


def _columns(fields: Sequence[Any], prefix: str = "") -> Iterator[str]:
    for f in fields:
        name = prefix + f.name
        yield name
        nested = getattr(f.field_type, "fields", None)
        if f.field_type.is_struct and nested is not None:
            yield from _columns(nested, name + ".")


def _kind(schema: Any, column: str) -> str:
    try:
        field = schema.find_field(column)
    except ValueError:
        return ""
    return _KINDS.get(type(field.field_type).__name__, "")


def row_filter(where: Predicate, schema: Any) -> Any:
    """``where`` as a pyiceberg row filter that is TRUE wherever ``where`` may be.

    Leaves whose values are not certain for their column's type become ``AlwaysTrue``.
    """
    expressions = import_extra("pyiceberg.expressions", "iceberg", "read Iceberg tables")
    if isinstance(where, (And, Or)):
        parts = [row_filter(c, schema) for c in where.children]
        combine = expressions.And if isinstance(where, And) else expressions.Or
        return combine(*parts)
    if not isinstance(where, (Eq, In)):
        return expressions.AlwaysTrue()
    if isinstance(where, Eq) and where.value is None:
        return expressions.IsNull(where.column) if where.null_safe else expressions.AlwaysTrue()
    kind = _kind(schema, where.column)
    values = leaf_values(where, kind)
    if not values:  # not certain, or only NULLs (kept, as Bloom pruning keeps them)
        return expressions.AlwaysTrue()
    if kind == "date":
        values = [v.isoformat() for v in values]  # pyiceberg reads ISO text as a date
    if len(values) == 1:
        return expressions.EqualTo(where.column, values[0])
    return expressions.In(where.column, set(values))


def resolve_iceberg(table: Any, where: Predicate | None) -> TableFiles:
    """The live files of an Iceberg table (its current snapshot) that may hold matching rows.

    Raises
    ------
    PredicateError
        A column of ``where`` is not in the table.
    """
    schema = table.schema()
    name = ".".join(table.name()) if isinstance(table.name(), tuple) else str(table.name())
    columns = tuple(_columns(schema.fields))
    if where is not None:
        check_columns(where, columns, name)
    try:
        scan = table.scan() if where is None else table.scan(row_filter=row_filter(where, schema))
        tasks = list(scan.plan_files())
    except (ValueError, NotImplementedError) as exc:  # e.g. equality deletes, not read yet
        raise UnsupportedTypeError(f"pyiceberg cannot plan a scan of {name}: {exc}") from None
    for task in tasks:
        _check_deletes(task)
    files = [FileInfo(t.file.file_path, int(t.file.file_size_in_bytes)) for t in tasks]
    spec = table.spec()
    partitioned = tuple(
        schema.find_column_name(f.source_id) or ""
        for f in spec.fields
        if type(f.transform).__name__ == "IdentityTransform"
    )
    return TableFiles(
        "iceberg",
        name,
        table,
        files,
        len(files),
        columns,
        tuple(f.name for f in schema.fields),
        partitioned,
        tasks={t.file.file_path: t for t in tasks},
    )


def _check_deletes(task: Any) -> None:
    """Only position deletes are applied by pyiceberg's Arrow reader: refuse any other kind.

    Raises
    ------
    UnsupportedTypeError
        A delete file of another kind (equality deletes) applies to the task's file.
    """
    for delete in task.delete_files:
        if getattr(delete.content, "name", "") != "POSITION_DELETES":
            raise UnsupportedTypeError(
                f"the delete file {delete.file_path} holds {delete.content.name.lower()}, "
                "which pyiceberg does not apply: its rows cannot be read exactly",
                path=task.file.file_path,
            )


def read_iceberg_rows(table: TableFiles, paths: Sequence[str], columns: Sequence[str]) -> Any:
    """The live rows of the given files (deletes applied), as one ``pyarrow.Table``.

    The top-level ``columns``, typed as the table's schema. Blocking.

    Raises
    ------
    SourceError
        pyiceberg cannot read a file or its deletes.
    """
    io_module = import_extra("pyiceberg.io.pyarrow", "iceberg", "read Iceberg tables")
    expressions = import_extra("pyiceberg.expressions", "iceberg", "read Iceberg tables")
    t = table.table
    for path in paths:
        _check_deletes(table.tasks[path])
    try:
        scan = io_module.ArrowScan(
            t.metadata, t.io, t.schema().select(*columns), expressions.AlwaysTrue()
        )
        return scan.to_table([table.tasks[p] for p in paths]).select(list(columns))
    except (OSError, ValueError) as exc:
        raise SourceError(f"cannot read the table's rows: {exc}", path=table.name) from None
    except Exception as exc:  # pyarrow's errors while pyiceberg decodes
        if type(exc).__module__.startswith("pyarrow"):
            raise ParquetFormatError(f"cannot decode the table's rows: {exc}") from None
        raise
