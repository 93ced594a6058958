"""Apache Iceberg tables through ``pyiceberg``: live files, first stage, delete files.

pyiceberg reads the manifests of the current snapshot (``ManifestGroupPlanner.
plan_manifest_entries``), with their partition values and statistics already
applied to the row filter: our predicate (NOT pushed down to its leaves) in
pyiceberg's terms (``EqualTo``, ``In``, ``NotEqualTo``, ``NotIn``, ``LessThan``,
``GreaterThanOrEqual``, ..., ``IsNull``, ``NotNull``, ``And``, ``Or``) where the
value is certain for the column's type (integers, strings, dates, booleans; ranges
not on booleans); any other comparison becomes ``AlwaysTrue`` there, so the
manifests never rule out a file that may hold a match.

Each live data file becomes a FileScanTask with the delete files that apply to it, by
the rules of the Iceberg spec (scan planning): position deletes (and deletion vectors)
through pyiceberg's own ``DeleteFileIndex`` (data sequence number at most the delete's,
same partition, the referenced file); equality deletes here, as pyiceberg 0.12's
``plan_files`` refuses them: a data file's data sequence number strictly below the
delete's, and the same spec and partition values, or a delete of an unpartitioned spec.
The rows are read by the lookup's own path with those deletes applied
(:mod:`pybloom_async.tables.deletes`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import SourceError, SourceNotFoundError, UnsupportedTypeError
from ..io.base import FileInfo
from ..predicate import (
    And,
    Between,
    Compare,
    Eq,
    In,
    IsNotNull,
    NotIn,
    Or,
    Predicate,
    normal_form,
)
from . import TableFiles, check_columns, import_extra
from .evolution import check_evolution
from .values import leaf_parts, plain_values, range_ends

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


def arrow_schema_of(schema: Any) -> Any:
    """The ``pyarrow.Schema`` of a pyiceberg ``Schema`` as pyiceberg's scan gives its rows:
    strings, binaries and lists in their 32-bit-offset types (``string``, ``binary``,
    ``list``), as pyarrow reads a Parquet file whose writer stored no Arrow schema (Spark,
    Flink, Trino), and no field-id metadata. pyiceberg's ``Schema.as_arrow`` gives the
    ``large_`` types instead (its scan keeps those only for files written with them)."""
    import pyarrow as pa
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    converted = schema_to_pyarrow(schema, include_field_ids=False)
    return pa.schema([_small_field(f) for f in converted], metadata=converted.metadata)


def _small_field(field: Any) -> Any:
    return field.with_type(_small_type(field.type))


def _small_type(t: Any) -> Any:
    import pyarrow as pa

    if pa.types.is_large_string(t):
        return pa.string()
    if pa.types.is_large_binary(t):
        return pa.binary()
    if pa.types.is_large_list(t) or pa.types.is_list(t):
        return pa.list_(_small_field(t.value_field))
    if pa.types.is_map(t):
        key, item = _small_field(t.key_field), _small_field(t.item_field)
        return pa.map_(key, item, keys_sorted=t.keys_sorted)
    if pa.types.is_struct(t):
        return pa.struct([_small_field(t.field(i)) for i in range(t.num_fields)])
    return t


def data_location(file_path: str) -> str:
    """A file's location as the manifests spell it, as a location pybloom-async opens.

    pyiceberg reads a ``file://`` location's path as it is spelled, escapes and all (its
    writer puts the partition value ``x%y`` in the folder ``p=x%25y``, named so on disk),
    while a ``file://`` URL given to pybloom-async is a real URL whose escapes are
    decoded: each ``%`` is escaped, so both name the one file. Object-store keys are read
    character for character by both, and a plain path is a path.
    """
    if file_path[:7].lower() == "file://" and "%" in file_path:
        return file_path.replace("%", "%25")
    return file_path


def manifest_location(location: str) -> str:
    """The inverse of :func:`data_location`: a location as the manifests spell it."""
    if location[:7].lower() == "file://" and "%" in location:
        return location.replace("%25", "%")
    return location


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


def plan_tasks(table: Any, expression: Any | None) -> list[Any]:
    """The current snapshot's live data files as FileScanTasks, each with its delete files.

    ``expression`` (a pyiceberg row filter, None: every file) rules files out by the
    manifests' partition values and statistics, as ``scan(row_filter).plan_files()``
    does; delete files are matched to data files by the spec's rules (module docstring).

    Raises
    ------
    ValueError
        A manifest entry of unknown content (pyiceberg's message).
    """
    purpose = "read Iceberg tables"
    table_module = import_extra("pyiceberg.table", "iceberg", purpose)
    manifest = import_extra("pyiceberg.manifest", "iceberg", purpose)
    index_module = import_extra("pyiceberg.table.delete_file_index", "iceberg", purpose)
    scan = table.scan() if expression is None else table.scan(row_filter=expression)
    snapshot = scan.snapshot()
    if snapshot is None:
        return []
    planner = table_module.ManifestGroupPlanner(
        table_metadata=table.metadata, io=table.io, row_filter=scan.row_filter,
        case_sensitive=scan.case_sensitive, options=scan.options,
    )  # fmt: skip
    content = manifest.DataFileContent
    first = manifest.INITIAL_SEQUENCE_NUMBER
    data, equality, positions = [], [], index_module.DeleteFileIndex()
    for entries in planner.plan_manifest_entries(snapshot.manifests(table.io)):
        for entry in entries:
            file = entry.data_file
            if file.content == content.DATA:
                data.append(entry)
            elif file.content == content.POSITION_DELETES:
                positions.add_delete_file(entry, partition_key=file.partition)
            elif file.content == content.EQUALITY_DELETES:
                equality.append(entry)
            else:
                raise ValueError(f"unknown content {file.content} of {file.file_path}")
    specs = table.metadata.specs()
    tasks = []
    for entry in data:
        file = entry.data_file
        sequence = entry.sequence_number or first
        deletes = set(positions.for_data_file(sequence, file, partition_key=file.partition))
        for delete in equality:
            if (delete.sequence_number or first) <= sequence:
                continue  # equality deletes apply to strictly older data only
            spec = specs.get(delete.data_file.spec_id or 0)
            if spec is None:
                raise ValueError(
                    f"the delete file {delete.data_file.file_path} names an unknown partition "
                    f"spec {delete.data_file.spec_id}"
                )
            if not spec.is_unpartitioned():
                if delete.data_file.spec_id != file.spec_id:
                    continue
                if delete.data_file.partition != file.partition:
                    continue
            deletes.add(delete.data_file)
        tasks.append(table_module.FileScanTask(file, delete_files=deletes))
    return tasks


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
    snapshot = table.current_snapshot()
    try:
        tasks = plan_tasks(table, None if where is None else row_filter(where, schema))
    except (ValueError, NotImplementedError) as exc:
        raise UnsupportedTypeError(f"pyiceberg cannot plan a scan of {name}: {exc}") from None
    if where is not None:
        check_evolution(table, where, tasks)
    files = [
        FileInfo(data_location(t.file.file_path), int(t.file.file_size_in_bytes)) for t in tasks
    ]
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
        tasks={data_location(t.file.file_path): t for t in tasks},
        version=None if snapshot is None else int(snapshot.snapshot_id),
    )
