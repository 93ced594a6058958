"""Spark's pushed filters as predicates: what the data source takes, and what it hands back.

Spark (PySpark >= 4.1, ``spark.sql.python.filterPushdown.enabled``) offers a Python data
source the conjuncts of a query's filter (its top-level AND, split) as
``pyspark.sql.datasource.Filter`` objects: a comparison of one column with a literal,
maybe under one ``Not``; an ``OR`` is never offered. A filter is taken only when the
predicate is TRUE for exactly the rows Spark's filter is TRUE for, NULLs and NaNs
included, so that the rows the data source returns are the rows Spark would keep (Spark
does not evaluate a taken filter again). The conjuncts taken are ANDed.

Taken, on a column of a type both sides compare alike (booleans, integers, floats,
decimals, strings of Spark's binary collation, binaries, dates and timestamps):

* ``EqualTo``, ``EqualNullSafe`` (``<=> NULL`` is ``IS NULL``), ``In`` (NULLs in the list
  dropped: they never make a row TRUE), ``IsNull`` and ``IsNotNull``;
* the ranges ``LessThan``, ``LessThanOrEqual``, ``GreaterThan``, ``GreaterThanOrEqual``:
  integers, decimals, dates and timestamps order by value on both sides; strings and
  binaries as unsigned bytes on both sides (UTF-8 for strings, so code points, not
  Java's UTF-16 units); booleans ``false < true``;
* ``Not`` of a filter taken, as SQL's NOT (unknown stays unknown): ``Not(In)`` keeps the
  list's NULLs, which make ``NOT IN`` never TRUE, as in Spark.

Floats: Spark orders NaN above every number and has ``NaN = NaN`` TRUE, where the
predicate's NaN is in no range and equal to nothing; both have ``-0.0 = 0.0``. So
``x < v``, ``x <= v``, ``=`` and ``IN`` (NaN never TRUE on either side) are taken as
they are, and ``x > v`` / ``x >= v`` (TRUE for a NaN in Spark) as ``NOT (x <= v)`` /
``NOT (x < v)``, which are TRUE for a NaN and unknown for a NULL, as Spark's are.

Timestamps (``TimestampType``: Spark's instants, columns with the UTC flag or INT96)
arrive in UTC and are taken as UTC times without a zone: the instant in a column with
the flag, the stored time in an INT96 column (where Spark writes UTC). Timestamps without
a time zone (``TimestampNTZType``) arrive and are taken as they are.

Returned to Spark, which evaluates them on the rows read:

* on a ``FloatType`` column, a literal that is no half-precision value (``0.1``; ``0.5``,
  ``100.0``, infinities are): the data source types FLOAT16 columns as FLOAT too, and
  there the predicate's literal means the nearest half, not itself;
* a NaN literal (``x = NaN`` is TRUE for a NaN row in Spark; no predicate says so) and
  a NULL literal in ``=`` or a range (never TRUE; Spark folds those before pushing);
* a decimal column of more than 28 digits (PySpark rounds such literals to 28 digits on
  their way to the data source);
* a string column of another collation (``UTF8_LCASE`` compares otherwise), a column of
  any other type (arrays, maps, structs as a whole, intervals, times, variants);
* a column whose name holds a dot (a predicate's dotted path names a struct's child);
* ``StringStartsWith``, ``StringEndsWith``, ``StringContains`` (``LIKE``), and any filter
  class this module does not know.

The filters are matched by class name, so that this module imports without PySpark.
"""

from __future__ import annotations

import datetime as dt
import math
import struct
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..predicate import And, Compare, Eq, In, IsNotNull, IsNull, Not, Predicate

if TYPE_CHECKING:
    from pyspark.sql.types import DataType, StructType


#: Spark types whose comparisons are the predicate's: the literal Spark passes is of the
#: column's type, and both sides compare and order it alike (floats: see _FLOATS).
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

#: Spark types holding NaN, which Spark orders above every number.
_FLOATS = frozenset({"FloatType", "DoubleType"})

#: Spark's range filters and their operators.
_RANGES = {
    "LessThan": "<",
    "LessThanOrEqual": "<=",
    "GreaterThan": ">",
    "GreaterThanOrEqual": ">=",
}

#: Spark's ``x > v`` and ``x >= v`` on floats (TRUE for a NaN) as NOT of the complement.
_ABOVE_AS_NOT = {">": "<=", ">=": "<"}

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


def _column(attribute: Sequence[str], schema: StructType) -> tuple[str, Any] | None:
    """The predicate's column path and Spark type for a filter's attribute, if the filter
    may be taken."""
    parts = tuple(attribute)
    if not parts or any(not p or "." in p for p in parts):
        return None
    t = column_type(schema, parts)
    return (".".join(parts), t) if t is not None and _exact(t) else None


def pushable(f: Any, schema: StructType) -> Predicate | None:
    """The predicate for one pushed filter, or None when Spark must evaluate it itself."""
    return _predicate(f, schema, negated=False)


def _predicate(f: Any, schema: StructType, negated: bool) -> Predicate | None:
    """``f`` as a predicate (``negated``: ``f`` is under an odd number of Nots)."""
    kind = type(f).__name__
    if kind == "Not":
        child = _predicate(f.child, schema, not negated)
        # The complement in SQL's three-valued logic (x != v, NOT IN, IS NOT NULL, NOT).
        return None if child is None else ~child
    if kind not in ("EqualTo", "EqualNullSafe", "In", "IsNull", "IsNotNull", *_RANGES):
        return None
    found = _column(f.attribute, schema)
    if found is None:
        return None
    column, t = found
    if kind == "IsNull":
        return IsNull(column)
    if kind == "IsNotNull":
        return IsNotNull(column)
    instant = type(t).__name__ == "TimestampType"
    if kind == "In":
        return _in(column, tuple(_literal(v, instant) for v in f.value), negated, t)
    value = _literal(f.value, instant)
    if _nan(value) or (value is not None and _loose((value,), t)):
        return None
    if kind == "EqualNullSafe":
        return Eq(column, value, null_safe=True)
    if value is None:
        return None  # `= NULL`, `< NULL` are never TRUE; Spark folds them before pushing
    if kind == "EqualTo":
        return Eq(column, value)
    op = _RANGES[kind]
    if type(t).__name__ in _FLOATS and op in _ABOVE_AS_NOT:
        return Not(Compare(column, _ABOVE_AS_NOT[op], value))
    return Compare(column, op, value)


def _literal(value: Any, instant: bool) -> Any:
    """A pushed literal as the predicate takes it: an instant (``TimestampType``, handed
    over in UTC) as its UTC wall-clock time without a zone, which a column with the UTC
    flag reads as that instant and an INT96 column (Spark's UTC instants, no flag) as its
    stored time; with its zone, a range over INT96 has no one place."""
    if instant and isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return value


def _in(column: str, values: tuple[Any, ...], negated: bool, t: Any) -> Predicate | None:
    known = tuple(v for v in values if v is not None)
    if any(_nan(v) for v in known) or _loose(known, t):
        return None
    if negated:
        # NOT (x IN (1, NULL)) is never TRUE: the NULL stays, and NOT IN keeps it so.
        return In(column, values) if values else None
    return In(column, known) if known else None


def _loose(values: tuple[Any, ...], t: Any) -> bool:
    """Whether a ``FloatType`` column's literals include one that FLOAT16 cannot hold.

    FLOAT16 columns are typed FLOAT (:mod:`.spark_types`), where Spark's literal means
    itself; a predicate's literal means the column's nearest value (0.1 is the half
    0.0999755859375 there), so only the literals a half holds exactly compare alike in
    both kinds of column.
    """
    if type(t).__name__ != "FloatType":
        return False
    for v in values:
        try:
            if struct.unpack("<e", struct.pack("<e", v))[0] != v:
                return True
        except (OverflowError, struct.error, TypeError):
            return True
    return False


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
