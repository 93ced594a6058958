"""Hive partition folders as the documentation reads them: the oracle's side.

A folder is ``((key, value or None), ...)``, outermost first, the values as written before
escaping (None: ``__HIVE_DEFAULT_PARTITION__``). A key met twice on one path keeps its
outermost value (as DuckDB and pyarrow read it); types are inferred from the values the
files listed have, or given (``partitioning={...}``: then only the keys named are partition
columns).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from pybloom_async.predicate import And, Not, Or, Predicate

from .oracle import (
    FileFacts,
    and3,
    canonical,
    check_literals,
    columns_of,
    domain_of,
    facts_of,
    not3,
    or3,
    truth,
)

Folder = Sequence[tuple[str, "str | None"]]

#: ``partitioning={...}`` type names -> Arrow types (the ones the generator gives).
GIVEN_TYPES = {
    "int64": pa.int64(), "string": pa.string(), "date32": pa.date32(),
    "timestamp[us]": pa.timestamp("us"),
}  # fmt: skip


def key_values(folder: Folder, given: Mapping[str, Any] | None = None) -> dict[str, str | None]:
    """Each partition key's value on the path: the outermost when a key is met twice (in
    the order first met); with types given, only the keys named."""
    out: dict[str, str | None] = {}
    for key, value in folder:
        if (given is None or key in given) and key not in out:
            out[key] = value
    return out


_INT_TEXT = re.compile(r"-?(0|[1-9][0-9]*)")
_DATE_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}")
_STAMP_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,6})?")


def _value_type(text: str) -> pa.DataType:
    """One folder value's type, by the documented rule (written here again, not imported)."""
    if _INT_TEXT.fullmatch(text) and -(2**63) <= int(text) < 2**63:
        return pa.int64()
    try:
        if _DATE_TEXT.fullmatch(text):
            dt.date.fromisoformat(text)
            return pa.date32()
        if _STAMP_TEXT.fullmatch(text):
            dt.datetime.fromisoformat(text)
            return pa.timestamp("us")
    except ValueError:
        pass
    return pa.string()


def folder_types(
    folders: Iterable[Folder], given: Mapping[str, str] | None = None
) -> dict[str, pa.DataType]:
    """Each partition column's type: given (``partitioning={...}``: the keys named, in that
    order), else over every file listed, in the order first met: the one type all its
    (outermost) values have, else string (a column of NULLs only: string)."""
    if given is not None:
        return {key: GIVEN_TYPES[name] for key, name in given.items()}
    seen: dict[str, set[pa.DataType]] = {}
    for folder in folders:
        for key, text in key_values(folder).items():
            found = seen.setdefault(key, set())
            if text is not None:
                found.add(_value_type(text))
    return {key: next(iter(t)) if len(t) == 1 else pa.string() for key, t in seen.items()}


def folder_values(folder: Folder, types: Mapping[str, pa.DataType]) -> dict[str, Any]:
    """The file's partition values (the outermost of a key met twice; the keys of ``types``
    only), each by its column's type: the folder names written, parsed by
    ``pyarrow.dataset.HivePartitioning`` (``__HIVE_DEFAULT_PARTITION__``: None). A file
    above the folders (or without a key) holds None there."""
    import pyarrow.dataset as ds

    from .write import folder_name

    values = key_values(folder, types)
    keys = list(values)
    if not keys:
        return {}
    hive = ds.HivePartitioning(pa.schema([(k, types[k]) for k in keys]), segment_encoding="uri")
    path = "/".join(folder_name(k, v) for k, v in values.items()) + "/f"  # the last: a file
    parsed = ds.get_partition_keys(hive.parse(path))
    return {k: parsed.get(k) for k in keys}


def with_folders(
    facts: FileFacts,
    folder: Sequence[tuple[str, str | None]],
    types: Mapping[str, pa.DataType],
    predicate_columns: Iterable[str],
) -> FileFacts:
    """The file's rows with its partition columns: its own column of a key's name replaced
    by the folder's value (the path wins), the others appended in the folders' order."""
    if not folder:
        return facts
    table = facts.table
    for key, value in folder_values(folder, types).items():
        column = pa.array([value] * table.num_rows, types[key])
        if key in table.column_names:
            table = table.drop_columns([key])
        table = table.append_column(key, column)
    return facts_of(table, facts.path, facts.row_group_rows, predicate_columns)


def ruled_out_by_folder(
    p: Predicate, folder: Sequence[tuple[str, str | None]], types: Mapping[str, pa.DataType]
) -> bool:
    """Whether the file's folder values alone make ``p`` never TRUE, whatever its rows hold
    (its other leaves may be anything). A leaf below a partition column (``p.x``) is NULL.

    Raises LiteralTypeError when a literal is not of its partition column's type.
    """
    values = folder_values(folder, types)
    domains = {k: domain_of(types[k]) for k in values}
    canonical_values = {
        k: None if v is None else canonical(pa.array([v], types[k]))[0] for k, v in values.items()
    }

    anything: frozenset[bool | None] = frozenset({True, False, None})

    def outcomes(q: Predicate) -> frozenset[bool | None]:
        """The truth values ``q`` may take over the file's rows (three-valued)."""
        if isinstance(q, Not):
            return frozenset(not3(t) for t in outcomes(q.child))
        if isinstance(q, (And, Or)):
            combine = and3 if isinstance(q, And) else or3
            got: frozenset[bool | None] = frozenset({isinstance(q, And)})
            for child in q.children:
                got = frozenset(combine([a, b]) for a in got for b in outcomes(child))
            return got
        column = q.column  # type: ignore[attr-defined]
        if column in values:
            check_literals(q, domains)
            return frozenset({truth(q, canonical_values, domains)})
        if column.split(".")[0] in values:  # below a partition column: NULL
            return frozenset({truth(q, {column: None}, {column: None})})
        return anything

    return True not in outcomes(p)


def check_folder_literals(p: Predicate, types: Mapping[str, pa.DataType]) -> None:
    """Raise LiteralTypeError when a literal on a partition column is not of its type (the
    product decides those leaves for every file listed, whatever else rules it out)."""
    check_literals(p, {c: domain_of(types[c]) for c in columns_of(p) if c in types})
