"""Delta Lake tables through ``deltalake`` (delta-rs): live files, first stage, rows.

The live files are the log's add actions at the table's loaded version
(``DeltaTable.get_add_actions(flatten=True)``): files the log has removed are
never listed, even while they are still on storage. Before any footer is read,
a file is ruled out by its partition values (compared exactly, every form of
predicate) and by the log's statistics (``num_records``, ``null_count.<c>``,
``min.<c>``, ``max.<c>``: ``=``, ``IN``, ranges and their NOT as bounds), the
min/max only for integer and date columns: Delta truncates string statistics,
and float and timestamp comparisons are not exact here, so those never rule a
file out by their values (by null counts they may).

Partition values are the log's own strings, as deltalake reads them back: a string
partition value ``''`` stays ``''`` (deltalake writes it so and its scan returns it;
Spark would have written null), which ``get_add_actions`` alone cannot tell from a null.

Rows are read by the lookup's own path (``rows/``), with the deletion vectors
deltalake decodes (``DeltaTable.deletion_vectors()``) applied: a row they delete is
never returned (:func:`deletion_masks`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote, unquote, urlparse
from urllib.request import url2pathname

from ..checks import require_pyarrow
from ..errors import ParquetFormatError, SourceError, SourceNotFoundError, UnsupportedTypeError
from ..io.base import FileInfo
from ..io.store import StoreOptions
from ..predicate import Predicate, normal_form
from . import TableFiles, check_columns, import_extra
from .values import may_hold_for_value, may_hold_within, may_match

_INTEGERS = ("byte", "short", "integer", "long")
_ORDERED = (*_INTEGERS, "date")
#: Reader features whose tables the row path here reads exactly (column mapping is
#: refused on its own, by its mode).
_READER_FEATURES = frozenset({
    "columnMapping", "deletionVectors", "timestampNtz", "typeWidening", "typeWidening-preview",
    "v2Checkpoint", "vacuumProtocolCheck", "variantType", "variantType-preview",
})  # fmt: skip


def delta_storage_options(options: StoreOptions | None) -> dict[str, str] | None:
    """deltalake's ``storage_options`` for the object-store options prune takes.

    Only the options given are mapped; deltalake reads the environment for the rest.
    """
    if options is None:
        return None
    given = {
        "aws_endpoint_url": options.endpoint,
        "aws_region": options.region,
        "aws_access_key_id": options.access_key_id,
        "aws_secret_access_key": options.secret_access_key,
        "aws_session_token": options.session_token,
        "azure_storage_account_name": options.account_name,
        "azure_storage_account_key": options.account_key,
        "azure_storage_sas_key": options.sas_token,
        "google_service_account": options.service_account_path,
        "google_service_account_key": options.service_account_key,
    }
    out = {k: v for k, v in given.items() if v is not None}
    if options.endpoint is not None and options.endpoint.startswith("http://"):
        out["allow_http"] = "true"
    if options.allow_http is not None:
        out["allow_http"] = str(options.allow_http).lower()
    if options.skip_signature:
        out["aws_skip_signature"] = "true"
    out["timeout"] = f"{options.timeout}s"
    out["connect_timeout"] = f"{options.connect_timeout}s"
    out.update(options.extra_config or {})
    return out


def open_delta(uri: str, version: int | None, options: StoreOptions | None) -> Any:
    """``DeltaTable(uri, version=...)`` with the object-store options mapped.

    Raises
    ------
    MissingDependencyError
        deltalake is not installed.
    SourceError
        deltalake cannot open the table (no such version, ...); SourceNotFoundError
        when there is no table there.
    """
    deltalake = import_extra("deltalake", "delta", "read Delta tables")
    try:
        return deltalake.DeltaTable(
            uri, version=version, storage_options=delta_storage_options(options)
        )
    except Exception as exc:  # deltalake raises its own errors, OSError and ValueError
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        error = SourceNotFoundError if type(exc).__name__ == "TableNotFoundError" else SourceError
        raise error(f"cannot open the Delta table: {message}", path=uri) from None


def reopen(dt: Any) -> Any:
    """The table ``dt`` opened again at its latest version, with the storage options it had.

    Raises
    ------
    SourceError
        deltalake cannot open the table.
    """
    deltalake = import_extra("deltalake", "delta", "read Delta tables")
    storage = getattr(dt, "_storage_options", None)  # deltalake keeps them on the object
    try:
        return deltalake.DeltaTable(str(dt.table_uri), storage_options=storage)
    except Exception as exc:  # deltalake raises its own errors, OSError and ValueError
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SourceError(
            f"cannot open the Delta table: {message}", path=str(dt.table_uri)
        ) from None


def _root(table_uri: str) -> str:
    """The table's root as our sources take it: a local path, or the URL itself."""
    if table_uri.startswith("file://"):
        return url2pathname(urlparse(table_uri).path).rstrip("/") or "/"
    return table_uri.rstrip("/")


def _paths(field: Any, prefix: str = "") -> Iterator[str]:
    """Every column path under an Arrow field, the field first."""
    name = prefix + field.name
    yield name
    import pyarrow as pa

    if pa.types.is_struct(field.type):
        for child in field.type:
            yield from _paths(child, name + ".")


def _kinds(dt: Any) -> dict[str, str]:
    """Top-level primitive columns and their Delta type names (``long``, ``string``, ...)."""
    out = {}
    for f in dt.schema().fields:
        kind = getattr(f.type, "type", None)
        if isinstance(kind, str):
            out[f.name] = kind
    return out


def _partition_value(value: Any, kind: str) -> Any:
    """A partition value as :func:`plain_value` gives literals of its kind (None: null)."""
    if isinstance(value, str) and kind in _INTEGERS:
        try:
            return int(value)
        except ValueError:
            return value
    if isinstance(value, str) and kind == "date":
        import datetime

        try:
            return datetime.date.fromisoformat(value)
        except ValueError:
            return value
    return value


def _file_may_match(
    where: Predicate, row: Mapping[str, Any], kinds: Mapping[str, str], partitioned: set[str]
) -> bool:
    """Whether the file an add action describes may hold a row where ``where`` (a normal
    form) holds: its partition values compared exactly, its statistics as bounds."""

    def leaf(p: Predicate) -> bool:
        c = next(iter(p.columns()))
        kind = kinds.get(c, "")
        if c in partitioned:
            return may_hold_for_value(p, kind, _partition_value(row.get(f"partition.{c}"), kind))
        rows, nulls = row.get("num_records"), row.get(f"null_count.{c}")
        all_null = rows is not None and nulls is not None and nulls >= rows
        if kind not in _ORDERED:  # no bounds to trust here: the null counts only
            return may_hold_within(p, kind, None, None, all_null, nulls)
        low, high = row.get(f"min.{c}"), row.get(f"max.{c}")
        return may_hold_within(p, kind, low, high, all_null, nulls)

    return may_match(normal_form(where), leaf)


def _file_key(path: str) -> str:
    """One spelling of a data file's location, whichever way deltalake wrote it."""
    path = unquote(path)
    if path.startswith("file://"):
        path = url2pathname(urlparse(path).path)
    return os.path.normpath(path) if "://" not in path else path


def _sql_name(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'


def _empty_string_partitions(
    dt: Any, actions: Sequence[Mapping[str, Any]], partitioned: Sequence[str],
    kinds: Mapping[str, str], root: str,
) -> dict[str, list[str]]:  # fmt: skip
    """Per file (:func:`_file_key`), the string partition columns whose value is ``''``.

    ``get_add_actions`` gives None for both a null and an empty string; deltalake's scan
    reads ``''`` back as ``''``, so the files whose value is ``''`` are asked of deltalake
    itself (its file listing with the predicate ``c = ''``), only for a string partition
    column where some value reads as None.
    """
    out: dict[str, list[str]] = {}
    for c in partitioned:
        if kinds.get(c) != "string" or all(a.get(f"partition.{c}") is not None for a in actions):
            continue
        try:
            found = dt.file_uris(file_pruning_predicate=f"{_sql_name(c)} = ''")
        except Exception as exc:  # deltalake raises its own errors
            raise SourceError(
                f"deltalake cannot list the files whose partition {c!r} is '': {exc}",
                path=str(dt.table_uri),
            ) from None
        for uri in found:
            text = str(uri)
            key = _file_key(text if "://" in text or os.path.isabs(text) else f"{root}/{text}")
            out.setdefault(key, []).append(c)
    return out


def resolve_delta(dt: Any, where: Predicate | None, options: StoreOptions | None) -> TableFiles:
    """The live files of a Delta table (at its loaded version) that may hold matching rows.

    Raises
    ------
    PredicateError
        A column of ``where`` is not in the table.
    """
    pa = require_pyarrow("read Delta tables")
    name = str(dt.table_uri)
    unknown = sorted(set(dt.protocol().reader_features or ()) - _READER_FEATURES)
    if unknown:
        # The protocol's rule: a reader refuses a table whose reader features it lacks.
        raise UnsupportedTypeError(
            f"the Delta table {name} needs reader feature(s) {', '.join(unknown)}, "
            "which pybloom-async does not read"
        )
    mapping = dt.metadata().configuration.get("delta.columnMapping.mode", "none")
    if mapping not in (None, "none"):
        # The files name their columns by physical names the schema maps: reading them by
        # the logical names would find no column (and no row).
        raise UnsupportedTypeError(
            f"the Delta table {name} uses column mapping (mode {mapping!r}), which "
            "pybloom-async does not read"
        )
    schema = pa.schema(dt.schema().to_arrow())
    columns = tuple(p for f in schema for p in _paths(f))
    if where is not None:
        check_columns(where, columns, name)
    partitioned = list(dt.metadata().partition_columns)
    kinds = _kinds(dt)
    root = _root(name)
    actions = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
    empty = _empty_string_partitions(dt, actions, partitioned, kinds, root)
    files, partitions, relative = [], {}, {}
    for row in actions:
        rel = unquote(str(row["path"]))
        # An absolute path (a shallow clone) is read where it is.
        path = rel if "://" in rel or os.path.isabs(rel) else f"{root}/{rel}"
        relative[path] = rel  # every live file's: deletion vectors are matched against them
        for c in empty.get(_file_key(path), ()):
            row[f"partition.{c}"] = ""
        if where is not None and not _file_may_match(where, row, kinds, set(partitioned)):
            continue
        files.append(FileInfo(path, int(row["size_bytes"])))
        partitions[path] = {c: row.get(f"partition.{c}") for c in partitioned}
    return TableFiles(
        "delta",
        name,
        dt,
        files,
        len(actions),
        columns,
        tuple(schema.names),
        tuple(partitioned),
        partitions,
        relative=relative,
        version=int(dt.version()),
    )


def has_deletion_vectors(table: TableFiles) -> bool:
    """Whether the table's protocol allows deletion vectors (no vector otherwise)."""
    return "deletionVectors" in (table.table.protocol().reader_features or ())


def files_with_deletion_vectors(table: TableFiles, wanted: set[str]) -> list[str]:
    """The wanted files that a deletion vector removes rows from, in the table's order."""
    masks = deletion_masks(table, wanted)
    return [f.path for f in table.files if f.path in masks]


def deletion_masks(table: TableFiles, wanted: set[str]) -> dict[str, Any]:
    """The deletion vectors of the wanted files, as keep masks (a ``pyarrow.BooleanArray``
    per file, bit-packed as deltalake hands it over: True where the row is live; rows past
    a mask's end are live).

    deltalake decodes the vectors (``DeltaTable.deletion_vectors()``: inline, relative and
    absolute ones, as the protocol defines them); a vector it cannot read is its error,
    never a file read without it. Blocking.

    Raises
    ------
    SourceError
        deltalake cannot read a deletion vector.
    ParquetFormatError
        A vector names a file that is not among the table's live files.
    """
    import pyarrow as pa

    dt = table.table
    if not has_deletion_vectors(table):
        return {}
    # Every live file, not only the wanted ones: a vector that names no live file means
    # the paths are spelled differently here, and its rows must not come back silently.
    by_relative: dict[str, str] = {}
    for path, rel in table.relative.items():
        by_relative[rel] = by_relative[quote(rel)] = by_relative[path] = path
    roots = {str(dt.table_uri).rstrip("/") + "/", unquote(str(dt.table_uri)).rstrip("/") + "/"}
    out = {}
    try:
        vectors = pa.table(dt.deletion_vectors())
    except Exception as exc:  # deltalake raises its own errors (a vector it cannot read)
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SourceError(
            f"deltalake cannot read the table's deletion vectors: {message}", path=str(dt.table_uri)
        ) from None
    for batch in vectors.to_batches():
        for uri, mask in zip(
            batch.column("filepath").to_pylist(), batch.column("selection_vector"), strict=True
        ):
            # The vector's file URI, in whichever spelling (encoded or not) names a live file.
            spellings = {str(uri), unquote(str(uri))}
            spellings |= {s.removeprefix(root) for s in spellings for root in roots}
            found = next((by_relative[s] for s in spellings if s in by_relative), None)
            if found is None:
                raise ParquetFormatError(
                    "deltalake gave a deletion vector for a file that is not among the "
                    "table's live files",
                    path=str(uri),
                )
            if found in wanted:
                out[found] = mask.values
    return out
