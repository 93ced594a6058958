"""The result's schema over many files: one rule for every entry point.

The result has the projected columns, in the order asked; by default every top-level column
of every file read, each once, in the order first seen (files in their order, then each
file's columns in its order), then the partition columns of the files listed (``key=value``
folders, :mod:`pybloom_async.io.partitions`; a file's folder wins over its own column of
that name). A file that lacks a column gives nulls for it. Types that
differ between files are unified by Arrow's permissive promotion
(``pa.unify_schemas(promote_options="permissive")``: int32 and int64 give int64, string and
large_string give large_string, decimals widen, ...) but only within one kind of type
(integers with integers, floats with floats, text with text, ...), at every depth: struct
children (by name; a child one file lacks gives nulls), list items, map keys and values are
unified as top-level columns are. Dictionaries take part as their values, string and binary
views as the large types; int64 and uint64 do not unify. Writers that store one Parquet kind
as two Arrow types unify too: a fixed-size binary with any binary gives binary (large_binary
with a large one), and instants (timestamps with a time zone, Parquet's ``isAdjustedToUTC``)
in two zones give the same instants in UTC, at the finer unit; an instant and a local time
(no zone) do not unify.
Anything else is a :class:`~pybloom_async.errors.SchemaMismatchError` naming the two files
and the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa

from ..errors import PredicateError, SchemaMismatchError
from ..predicate import Predicate, iter_leaves
from .arrow import arrow_scalar
from .plan import FilePlan, columns_of, has_column, top_level


def _kind(t: Any) -> str:
    """The kind of an Arrow type within which types are promoted to one another."""
    if pa.types.is_dictionary(t):
        return _kind(t.value_type)
    for kind, test in (
        ("integer", pa.types.is_integer),
        ("floating point", pa.types.is_floating),
        ("decimal", pa.types.is_decimal),
        ("text", lambda x: pa.types.is_string(x) or pa.types.is_large_string(x)),
        ("text", pa.types.is_string_view),
        ("binary", lambda x: pa.types.is_binary(x) or pa.types.is_large_binary(x)),
        ("binary", pa.types.is_binary_view),
        ("binary", pa.types.is_fixed_size_binary),
        ("timestamp", pa.types.is_timestamp),
        ("date", pa.types.is_date),
        ("time", pa.types.is_time),
        ("duration", pa.types.is_duration),
    ):
        if test(t):
            return kind
    return str(t)  # everything else (fixed-size, extension, ...) only unifies with itself


def _unify_field(first: tuple[str, Any], other: tuple[str, Any], name: str) -> Any:
    """The field both files' types promote to, or SchemaMismatchError naming both files."""
    (path_a, a), (path_b, b) = first, other
    if a.type == b.type:
        return a
    unified = _unify_types(a.type, b.type)
    if unified is None:
        raise SchemaMismatchError(
            f"column {name!r} is {a.type} in {path_a} and {b.type} in {path_b}: the types do "
            "not unify (only types of one kind are promoted, at every depth: integers, floats, "
            "decimals, text, ...)"
        )
    return a.with_type(unified)


def _unify_types(a: Any, b: Any) -> Any | None:
    """The type two files' types promote to (None: they do not unify).

    One rule at every depth: struct children (by name; a child one file lacks is
    taken from the other, as a column one file lacks), list items and map keys and
    values are unified as top-level columns are.
    """
    if a == b:
        return a
    if pa.types.is_null(a):
        return b
    if pa.types.is_null(b):
        return a
    # Dictionaries unify by their values, views as the large types.
    a, b = _plain(a), _plain(b)
    if a == b:
        return a
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        return _unify_structs(a, b)
    if _is_list(a) and _is_list(b):
        item = _unify_types(a.value_type, b.value_type)
        if item is None:
            return None
        field = a.value_field.with_type(item).with_nullable(True)
        large = pa.types.is_large_list(a) or pa.types.is_large_list(b)
        return pa.large_list(field) if large else pa.list_(field)
    if pa.types.is_map(a) and pa.types.is_map(b):
        key, item = _unify_types(a.key_type, b.key_type), _unify_types(a.item_type, b.item_type)
        if key is None or item is None:
            return None
        return pa.map_(a.key_field.with_type(key), a.item_field.with_type(item).with_nullable(True))
    if _kind(a) != _kind(b) or {a, b} == {pa.int64(), pa.uint64()}:
        return None  # other kinds; no 64-bit integer type holds both
    if pa.types.is_fixed_size_binary(a) or pa.types.is_fixed_size_binary(b):
        # Bytes of any length hold both (a UUID as DuckDB writes it, as BLOB, ...).
        large = pa.types.is_large_binary(a) or pa.types.is_large_binary(b)
        return pa.large_binary() if large else pa.binary()
    if pa.types.is_timestamp(a) and a.tz != b.tz:
        return _instants(a, b)
    try:
        merged = pa.unify_schemas(
            [pa.schema([("x", a)]), pa.schema([("x", b)])], promote_options="permissive"
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None
    return merged.field(0).type


def _instants(a: Any, b: Any) -> Any | None:
    """Two time zones of instants (Parquet's ``isAdjustedToUTC``): the same points in time,
    in UTC at the finer unit. An instant and a local time (no zone) do not unify: they are
    two kinds in Parquet, and no rule says where the local one lies."""
    if a.tz is None or b.tz is None:
        return None
    units = ("s", "ms", "us", "ns")
    return pa.timestamp(max(a.unit, b.unit, key=units.index), tz="UTC")


def _is_list(t: Any) -> bool:
    return bool(pa.types.is_list(t) or pa.types.is_large_list(t))


def _unify_structs(a: Any, b: Any) -> Any | None:
    fields = {f.name: f for f in a}
    if len(fields) != a.num_fields or len({f.name for f in b}) != b.num_fields:
        return None  # a child named twice: nothing to match by name
    for other in b:
        mine = fields.get(other.name)
        if mine is None:
            fields[other.name] = other.with_nullable(True)
            continue
        unified = _unify_types(mine.type, other.type)
        if unified is None:
            return None
        fields[other.name] = mine.with_type(unified).with_nullable(mine.nullable or other.nullable)
    for name, field in fields.items():
        if b.get_field_index(name) < 0:
            fields[name] = field.with_nullable(True)  # the other file lacks it: nulls there
    return pa.struct(list(fields.values()))


def _plain(t: Any) -> Any:
    if pa.types.is_dictionary(t):
        return _plain(t.value_type)
    if pa.types.is_string_view(t):
        return pa.large_string()
    if pa.types.is_binary_view(t):
        return pa.large_binary()
    return t


def column_kinds(plans: Sequence[FilePlan]) -> list[FilePlan]:
    """The first of ``plans`` with each set of columns as the result sees them (the same
    Arrow schema and partition columns), in order: what the result's columns are made of
    (files pruned whole share their bound file's Arrow schema)."""
    seen: set[Any] = set()
    found = []
    for plan in plans:
        key = (id(plan.arrow_schema), tuple(plan.partition), plan.partition_fields)
        if key not in seen:
            seen.add(key)
            found.append(plan)
    return found


def union_names(plans: Sequence[FilePlan], folders: Sequence[Any] = ()) -> list[str]:
    """Every top-level column of the files, each once, in the order first seen; then the
    partition columns ``folders`` (Arrow fields), in the order first met in the listing."""
    keys = [str(f.name) for f in folders]
    names: dict[str, None] = {}
    for plan in column_kinds(plans):
        names.update(dict.fromkeys(n for n in top_level(plan) if n not in keys))
    return list(names) + keys


def result_schema(
    plans: Sequence[FilePlan], columns: Sequence[str] | None, folders: Sequence[Any] = ()
) -> tuple[Any, list[str]]:
    """The result's schema (see the module docstring) and its column names: ``columns``, or
    by default every top-level column of the files, then the partition columns
    (:func:`union_names`).

    ``folders`` are the partition columns of every file listed, with their types: they are
    columns of the result even when the files that have them were all ruled out.
    """
    names = list(columns) if columns is not None else union_names(plans, folders)
    seen: dict[str, tuple[str, Any]] = {f.name: ("its partition folders", f) for f in folders}
    for plan in column_kinds(plans):  # a file like one before adds nothing, nor fails
        by_name = {f.name: f for f in columns_of(plan)}
        for name in names:
            field = by_name.get(name)
            if field is None:
                continue
            if name not in seen:
                seen[name] = (plan.path, field)
            else:
                seen[name] = (seen[name][0], _unify_field(seen[name], (plan.path, field), name))
    missing = [n for n in names if n not in seen]
    if missing and plans:
        shown = _files_have([str(f.name) for f in columns_of(plan)] for plan in plans)
        raise PredicateError(
            f"no file read has the column(s) {', '.join(map(repr, missing))} (columns are "
            f"top-level names); {shown}"
        )
    fields = [
        seen[n][1].with_nullable(True) if n in seen else pa.field(n, pa.null()) for n in names
    ]
    return pa.schema(fields), names


def check_predicate_columns(
    where: Predicate | None, plans: Sequence[FilePlan], folders: Sequence[str] = ()
) -> None:
    """A predicate column that no file read has as a leaf, nor any file listed as a
    partition column (``folders``), is a mistake, not an empty answer (a scan, ``where``
    None, has none)."""
    if not plans or where is None:
        return
    for column in dict.fromkeys(leaf.column for leaf in iter_leaves(where)):
        if column not in folders and not any(has_column(plan, column) for plan in plans):
            known = _files_have(
                [c.path for c in plan.schema.columns] + list(plan.partition) for plan in plans
            )
            raise PredicateError(f"no file read has this column; {known}", column=column)


#: Columns an error lists before it gives their count.
_SHOWN_COLUMNS = 20


def _files_have(columns: Iterable[Sequence[str]]) -> str:
    """``the file has: id, name`` or ``the 3 files have: id, a, b, ... (45 columns)``: the
    union of the files' columns (each file's ``columns``), first seen first."""
    names: dict[str, None] = {}
    files = 0
    for own in columns:
        files += 1
        names.update(dict.fromkeys(own))
    shown = ", ".join(list(names)[:_SHOWN_COLUMNS])
    if len(names) > _SHOWN_COLUMNS:
        shown += f", ... ({len(names)} columns)"
    return f"{'the file has' if files == 1 else f'the {files} files have'}: {shown}"


def conform_file(tables: list[Any], plan: FilePlan, schema: Any, names: list[str]) -> list[Any]:
    """A file's tables of matching rows (one per row group read) shaped as the result:
    joined first when their schemas agree, so that the file is shaped once.

    Raises
    ------
    SchemaMismatchError
        A column's values do not fit the result's type.
    """
    if len(tables) > 1:
        try:
            tables = [pa.concat_tables(tables)]
        except pa.ArrowInvalid:
            pass  # shaped one by one, each to the result's types
    return [conform(t, plan, schema, names) for t in tables]


def conform(rows: Any, plan: FilePlan, schema: Any, names: list[str]) -> Any:
    """One file's matching rows shaped as the result: its columns, in its order and types
    (a column the file lacks gives nulls; a partition column, the file's value).

    Raises
    ------
    SchemaMismatchError
        A column's values do not fit the result's type.
    """
    out = []
    mine = {f.name: f for f in plan.partition_fields}
    stored = set(rows.column_names).intersection(plan.arrow_schema.names)
    for field in schema:
        if field.name in plan.partition:
            value = arrow_scalar(plan.partition[field.name], mine[field.name].type)
            out.append(pa.repeat(value, rows.num_rows))
        elif field.name in stored:
            out.append(rows.column(field.name))
        else:
            out.append(pa.nulls(rows.num_rows, field.type))
    result = pa.Table.from_arrays(out, names=names)
    if result.schema.equals(schema, check_metadata=True):
        return result  # a cast to the same schema would copy nothing, at a call per column
    try:
        return result.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise SchemaMismatchError(
            f"a column's values do not fit the result type: {exc}", path=plan.path
        ) from None
