"""Spark's pushed filters as predicates: what the data source takes, and what it hands back.

Spark (PySpark >= 4.1, ``spark.sql.python.filterPushdown.enabled``) offers a Python data
source the conjuncts of a query's filter as ``pyspark.sql.datasource.Filter`` objects. A
filter is taken only when the predicate means exactly what Spark means by it, so that the
rows the data source returns are the rows Spark would keep:

* ``EqualTo``, ``EqualNullSafe`` (``<=> NULL`` is ``IS NULL``), ``In`` (NULLs in the list
  dropped: they never make a row TRUE) and ``IsNull``, on a column of a type compared
  exactly on both sides: booleans, integers, floats, decimals, strings of Spark's binary
  collation, binaries, dates and timestamps;
* not a NaN literal (Spark's ``NaN = NaN`` is TRUE, a probe of NaN matches nothing here);
* not a decimal column of more than 28 digits (PySpark rounds such literals to 28 digits
  on their way to the data source);
* not a column whose name holds a dot (a predicate's dotted path names a struct's child).

Every other filter is returned to Spark, which evaluates it on the rows read. The filters
are matched by class name, so that this module imports without PySpark.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ...predicate import And, Eq, In, Predicate

if TYPE_CHECKING:
    from pyspark.sql.types import DataType, StructType

__all__ = ["column_type", "pushable", "split_filters"]

#: Spark types whose equality is the predicate's: the literal Spark passes is of the
#: column's type, and both sides compare it exactly.
_EXACT_TYPES = frozenset(
    {
        "BooleanType",
        "ByteType",
        "ShortType",
        "IntegerType",
        "LongType",
        "FloatType",
        "DoubleType",
        "DecimalType",
        "StringType",
        "BinaryType",
        "DateType",
        "TimestampType",
        "TimestampNTZType",
    }
)


#: The widest decimal a pushed literal keeps exactly (Python's default decimal context).
_EXACT_DECIMAL_DIGITS = 28


def column_type(schema: StructType, path: Sequence[str]) -> DataType | None:
    """The type of the column at ``path`` (struct children by name), None if there is none."""
    current: Any = schema
    for part in path:
        if type(current).__name__ != "StructType":
            return None
        found = next((f for f in current.fields if f.name == part), None)
        if found is None:
            return None
        current = found.dataType
    return current  # type: ignore[no-any-return]


def _exact(t: Any) -> bool:
    name = type(t).__name__
    if name not in _EXACT_TYPES:
        return False
    if name == "DecimalType":
        # PySpark builds a pushed decimal in Python's default context (28 digits): a wider
        # literal arrives rounded (measured on 4.3: 29 digits lose the last), so it would
        # match the wrong rows; Spark compares those itself.
        return int(getattr(t, "precision", _EXACT_DECIMAL_DIGITS + 1)) <= _EXACT_DECIMAL_DIGITS
    # Spark 4 strings carry a collation; only the binary one compares as bytes do.
    return name != "StringType" or getattr(t, "collation", "UTF8_BINARY") == "UTF8_BINARY"


def _nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _column(attribute: Sequence[str], schema: StructType) -> str | None:
    """The predicate's column path for a filter's attribute, if the filter may be taken."""
    parts = tuple(attribute)
    if not parts or any(not p or "." in p for p in parts):
        return None
    t = column_type(schema, parts)
    return ".".join(parts) if t is not None and _exact(t) else None


def pushable(f: Any, schema: StructType) -> Predicate | None:
    """The predicate for one pushed filter, or None when Spark must evaluate it itself."""
    kind = type(f).__name__
    if kind not in ("EqualTo", "EqualNullSafe", "In", "IsNull"):
        return None
    column = _column(f.attribute, schema)
    if column is None:
        return None
    if kind == "IsNull":
        return Eq(column, None, null_safe=True)
    if kind == "In":
        values = tuple(v for v in f.value if v is not None)
        if not values or any(_nan(v) for v in values):
            return None
        return In(column, values)
    if _nan(f.value):
        return None
    if kind == "EqualNullSafe":
        return Eq(column, f.value, null_safe=True)
    if f.value is None:
        return None  # `= NULL` is never TRUE; Spark folds it before pushing anyway
    return Eq(column, f.value)


def split_filters(filters: Iterable[Any], schema: StructType) -> tuple[list[Predicate], list[Any]]:
    """The predicates taken, and the filters (the objects given) Spark keeps."""
    taken: list[Predicate] = []
    kept: list[Any] = []
    for f in filters:
        p = pushable(f, schema)
        if p is None:
            kept.append(f)
        else:
            taken.append(p)
    return taken, kept


def conjunction(parts: Sequence[Predicate]) -> Predicate | None:
    """The AND of ``parts`` (None for none)."""
    return And.of(*parts) if parts else None
