"""Iceberg schema evolution that matching columns by name would answer otherwise.

A data file's columns are matched to a predicate by name (its footer's statistics, null
counts and filters, then its rows); Iceberg matches them by field id. The two differ in a
file written under an earlier schema when:

- a column was renamed since (the file holds the field under its old name), or dropped and
  its name reused (the file holds another field under this name);
- a column was promoted from float to double: the file stores FLOAT, where a literal is
  compared as its nearest float32, while the table compares the file's values promoted
  to double. A literal that is a float32 compares alike in both (every float32 is a
  double, and both orders agree), so only a literal that is no float32 differs.

The table's schema history (``table.metadata.schemas``) says which predicate columns may
be concerned; the footers of the files the manifests keep (read through pyiceberg's own
FileIO, where pyiceberg reads them, and decoded by the hardened decoder) say whether one
of them is: then the predicate is refused, naming the column and the file. A table whose
files were all written after the change answers as any other.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import PyBloomError, SourceError, UnsupportedTypeError
from ..parquet import Schema, decode_file_metadata, parse_footer_tail
from ..predicate import Between, Compare, Eq, In, NotIn, Predicate, TextLiteral, iter_leaves
from ..types import PhysicalType

#: The suffix of a data file read first for its footer (a longer footer costs one more read).
_TAIL_BYTES = 64 * 1024
#: Footers read at once (pyiceberg's FileIO blocks; each read waits on storage).
_THREADS = 8


def renamed_reason(table: Any, column: str) -> str | None:
    """Why files of the table may name ``column`` otherwise than its schema does now (None:
    every schema of its history spells it as now): a rename, or a name reused."""
    try:
        field_id = table.schema().find_field(column).field_id
    except ValueError:
        return None
    for schema in table.metadata.schemas:
        then = schema.find_column_name(field_id)
        if then is not None and then != column:
            return f"was {then!r} in the table's schema {schema.schema_id} (a rename)"
        try:
            other = schema.find_field(column).field_id
        except ValueError:
            continue
        if other != field_id:
            return (
                f"names another field (id {other}) in the table's schema {schema.schema_id} "
                f"than now (id {field_id}): a column dropped and its name reused"
            )
    return None


@dataclass(frozen=True)
class _Suspect:
    """A predicate column a file written under an earlier schema may answer otherwise."""

    column: str
    field_id: int
    message: str
    float_only: bool  # concerns only a file storing the field as FLOAT

    def concerns(self, schema: Schema) -> bool:
        """Whether a file of this Parquet schema is such a file."""
        with_ids = any(d.field_id is not None for d in schema.columns)
        for desc in schema.columns:
            mine = desc.field_id == self.field_id if with_ids else desc.path == self.column
            if self.float_only:
                if mine and desc.physical_type == PhysicalType.FLOAT:
                    return True
            elif not with_ids:
                return True  # read by the name mapping, which follows renames
            elif mine != (desc.path == self.column):
                return True  # the field under another name, or another field under this one
        return False


def _literals(leaf: Predicate) -> tuple[Any, ...]:
    if isinstance(leaf, (In, NotIn)):
        return leaf.values
    if isinstance(leaf, Between):
        return (leaf.low, leaf.high)
    if isinstance(leaf, (Eq, Compare)):
        return (leaf.value,)
    return ()


def _not_float32(value: Any) -> bool:
    """Whether a literal compared with a double column differs from every float32 (False
    where the literal is no number: its conversion says what is wrong)."""
    if value is None or isinstance(value, bool):
        return False
    try:
        number = float(value.text if isinstance(value, TextLiteral) else value)
    except (TypeError, ValueError, OverflowError):
        return False
    if math.isnan(number):
        return False
    with np.errstate(over="ignore"):
        return float(np.float32(number)) != number


def _type_name(schema: Any, field_id: int) -> str:
    try:
        return type(schema.find_field(field_id).field_type).__name__
    except ValueError:
        return ""


def _suspects(table: Any, where: Predicate) -> list[_Suspect]:
    current = table.schema()
    name = table.name()
    name = ".".join(name) if isinstance(name, tuple) else str(name)
    out = []
    for leaf in iter_leaves(where):
        try:
            field = current.find_field(leaf.column)
        except ValueError:
            continue
        reason = renamed_reason(table, leaf.column)
        if reason is not None:
            out.append(_Suspect(leaf.column, field.field_id, (
                f"the column {leaf.column!r} of the Iceberg table {name} {reason}, and a "
                "data file was written under that schema: pybloom-async matches a "
                "predicate's columns by name, and would prune it by another column's "
                "values; query this column with pyiceberg"
            ), False))  # fmt: skip
        if type(field.field_type).__name__ != "DoubleType":
            continue
        odd = [v for v in _literals(leaf) if _not_float32(v)]
        if odd and any(
            _type_name(s, field.field_id) == "FloatType" for s in table.metadata.schemas
        ):
            shown = odd[0].text if isinstance(odd[0], TextLiteral) else odd[0]
            out.append(_Suspect(leaf.column, field.field_id, (
                f"the column {leaf.column!r} of the Iceberg table {name} was a float before "
                f"it became a double, and {shown} is not a float32: a data file stores it as "
                "FLOAT, where it would be compared as its nearest float32, not as the "
                "table's double; compare with a float32 value (such as 0.5)"
            ), True))  # fmt: skip
    return out


def _file_schema(table: Any, task: Any) -> Schema:
    """A data file's Parquet schema: its footer read through pyiceberg's FileIO (its size
    from the manifest), decoded by ours."""
    path = str(task.file.file_path)
    size = int(task.file.file_size_in_bytes)
    try:
        with table.io.new_input(path).open() as stream:
            take = min(size, _TAIL_BYTES)
            stream.seek(size - take)
            tail = bytes(stream.read(take))
            if len(tail) != take:
                raise SourceError(f"read {len(tail)} of the file's last {take} bytes", path=path)
            bounds = parse_footer_tail(tail, size, path=path)
            missing = bounds.missing_range(len(tail))
            if missing is not None:
                stream.seek(missing[0])
                more = bytes(stream.read(missing[1] - missing[0]))
                if len(more) != missing[1] - missing[0]:
                    raise SourceError("the file ended before its footer", path=path)
                tail = more + tail
    except PyBloomError:
        raise
    except Exception as exc:  # pyiceberg's FileIO raises OSError and its own errors
        text = " ".join(str(exc).split()) or type(exc).__name__
        raise SourceError(f"cannot read the data file's footer: {text}", path=path) from None
    return decode_file_metadata(bounds.metadata_bytes(tail), path).schema


def check_evolution(table: Any, where: Predicate, tasks: Sequence[Any]) -> None:
    """Refuse ``where`` when one of the data files ``tasks`` (those the manifests keep)
    would answer it otherwise than the table (the module's cases). Their footers are read
    only when the table's schema history concerns a predicate column. Blocking.

    Raises
    ------
    UnsupportedTypeError
        Naming the column, why, and the file.
    SourceError, ParquetFormatError
        A footer that cannot be read.
    """
    suspects = _suspects(table, where)
    if not suspects or not tasks:
        return
    with ThreadPoolExecutor(min(_THREADS, len(tasks))) as pool:
        schemas = pool.map(lambda task: _file_schema(table, task), tasks)
        for task, schema in zip(tasks, schemas, strict=True):
            for suspect in suspects:
                if suspect.concerns(schema):
                    raise UnsupportedTypeError(
                        suspect.message, path=str(task.file.file_path), column=suspect.column
                    )
