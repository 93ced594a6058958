"""Apache Iceberg tables through ``pyiceberg``: live files, first stage, rows.

``table.scan(row_filter).plan_files()`` gives the live data files with the
manifests' partition values and statistics already applied, each as a
FileScanTask with its delete files. The row filter is our predicate (NOT pushed
down to its leaves) in pyiceberg's terms (``EqualTo``, ``In``, ``NotEqualTo``,
``NotIn``, ``LessThan``, ``GreaterThanOrEqual``, ..., ``IsNull``, ``NotNull``,
``And``, ``Or``) where the value is certain for the column's type (integers,
strings, dates, booleans; ranges not on booleans); any other comparison becomes
``AlwaysTrue`` there, so the manifests never rule out a file that may hold a match.

Rows are read by pyiceberg's Arrow reader from the surviving FileScanTasks, so
position and equality deletes are applied: a deleted row is never returned.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import ParquetFormatError, SourceError, SourceNotFoundError, UnsupportedTypeError
from ..io.base import FileInfo
from ..predicate import And, Between, Compare, Eq, In, IsNotNull, NotIn, Or, Predicate
from ..predicate_normal import normal_form
from . import TableFiles, check_columns, import_extra
from .values import leaf_parts, plain_values, range_ends

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
    return _filter(normal_form(where), schema, expressions)


#: Each ordering as pyiceberg names it, and its complement (no NaN in the kinds ordered).
_ORDERINGS = {"<": ("LessThan", ">="), "<=": ("LessThanOrEqual", ">"),
              ">": ("GreaterThan", "<="), ">=": ("GreaterThanOrEqual", "<")}  # fmt: skip


def _filter(p: Predicate, schema: Any, ex: Any) -> Any:
    if isinstance(p, (And, Or)):
        parts = [_filter(c, schema, ex) for c in p.children]
        return (ex.And if isinstance(p, And) else ex.Or)(*parts)
    test, negated = leaf_parts(p)
    if isinstance(test, IsNotNull):
        return ex.NotNull(test.column)
    if isinstance(test, Eq) and test.null_safe and test.value is None:
        return ex.IsNull(test.column)
    assert isinstance(test, (Eq, In, NotIn, Compare, Between))
    kind = _kind(schema, test.column)

    def literal(value: Any) -> Any:
        return value.isoformat() if kind == "date" else value  # pyiceberg reads ISO dates

    if isinstance(test, Between) or (isinstance(test, Compare) and test.op != "!="):
        ends = range_ends(test, kind)
        if ends is None:
            return ex.AlwaysTrue()
        if len(ends) == 2 and ends[0][1] > ends[1][1]:  # BETWEEN 5 AND 3 holds nowhere
            return ex.NotNull(test.column) if negated else ex.AlwaysFalse()
        if negated:  # NOT of a range: outside one of its ends (NULL stays out either way)
            ends = [(_ORDERINGS[op][1], v) for op, v in ends]
        parts = [getattr(ex, _ORDERINGS[op][0])(test.column, literal(v)) for op, v in ends]
        if len(parts) == 1:
            return parts[0]
        return ex.Or(*parts) if negated else ex.And(*parts)
    literals = test.values if isinstance(test, (In, NotIn)) else (test.value,)
    values = plain_values(literals, kind)
    if not values:  # not certain, or only NULLs (kept, as Bloom pruning keeps them)
        return ex.AlwaysTrue()
    values = [literal(v) for v in values]
    if not negated:
        return (
            ex.EqualTo(test.column, values[0])
            if len(values) == 1
            else ex.In(test.column, set(values))
        )
    if any(v is None for v in literals):
        return ex.AlwaysTrue()  # != NULL, NOT IN (.., NULL): never true; the rows say so
    differs = (
        ex.NotEqualTo(test.column, values[0])
        if len(values) == 1
        else ex.NotIn(test.column, set(values))
    )
    if isinstance(test, Eq) and test.null_safe:
        return ex.Or(ex.IsNull(test.column), differs)  # NOT (x <=> v): NULL too
    return differs


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
