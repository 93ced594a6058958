"""Literals as the table libraries compare them, only where the comparison is exact.

The first stage of a table prune (partition values, the log's or the manifests'
statistics) may only rule a file out when the literal's value in the column's
type is certain. Here a literal becomes a plain Python value of one of a few
kinds (integer, string, date, boolean); anything else (floats and their NaN,
decimals, timestamps and their precision, binary) is :data:`UNKNOWN`, and the
first stage keeps the file: Bloom pruning and the exact row match decide later.
"""

from __future__ import annotations

import datetime
import operator
import re
from collections.abc import Callable
from typing import Any, Final

from ..predicate import (
    And,
    Between,
    Compare,
    Eq,
    In,
    IsNotNull,
    Not,
    NotIn,
    Or,
    Predicate,
    TextLiteral,
)


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


#: A literal whose value in the column's type is not certain here.
UNKNOWN: Final = _Unknown()

_INTEGER_TEXT = re.compile(r"[-+]?[0-9]{1,19}")
_DATE_TEXT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")

#: Integer ranges of the kinds the libraries name.
_INT_RANGES = {
    "byte": 8,
    "short": 16,
    "integer": 32,
    "int": 32,
    "long": 64,
}


def plain_value(value: Any, kind: str) -> Any:
    """``value`` as a Python value of the column kind ``kind``, or :data:`UNKNOWN`.

    ``kind`` is one of ``byte``, ``short``, ``integer``/``int``, ``long``,
    ``string``, ``date``, ``boolean``; any other kind gives :data:`UNKNOWN`.
    A value the column cannot hold (an integer out of range) is also
    :data:`UNKNOWN`: the later stages decide what it matches.
    """
    if kind in _INT_RANGES:
        number: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, TextLiteral) and _INTEGER_TEXT.fullmatch(value.text):
            number = int(value.text)
        bits = _INT_RANGES[kind]
        if number is None or not -(1 << (bits - 1)) <= number < (1 << (bits - 1)):
            return UNKNOWN
        return number
    if kind == "string":
        if isinstance(value, str):
            return value
        return value.text if isinstance(value, TextLiteral) else UNKNOWN
    if kind == "date":
        if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
            return value
        if isinstance(value, TextLiteral) and _DATE_TEXT.fullmatch(value.text):
            try:
                return datetime.date.fromisoformat(value.text)
            except ValueError:
                return UNKNOWN
        return UNKNOWN
    if kind == "boolean":
        return value if isinstance(value, bool) else UNKNOWN
    return UNKNOWN


def may_match(where: Predicate, leaf_may_match: Callable[[Predicate], bool]) -> bool:
    """Whether ``where`` may hold for some row, given what each leaf may do.

    ``where`` is a normal form (:func:`~pybloom_async.predicate.normal_form`:
    NOT pushed down to its leaves); ``leaf_may_match`` answers False only when the leaf
    is certainly not TRUE for any row; AND then rules out when any part does, OR when
    every part does.
    """
    if isinstance(where, And):
        return all(may_match(c, leaf_may_match) for c in where.children)
    if isinstance(where, Or):
        return any(may_match(c, leaf_may_match) for c in where.children)
    return leaf_may_match(where)


def leaf_values(leaf: Eq | In, kind: str) -> list[Any] | None:
    """The non-null values of a leaf as ``kind``; None when one of them is not certain.

    NULL in ``=`` and ``IN`` matches no row, so it is left out.
    """
    values = (leaf.value,) if isinstance(leaf, Eq) else leaf.values
    return plain_values(values, kind)


def plain_values(values: tuple[Any, ...], kind: str) -> list[Any] | None:
    """The non-NULL ``values`` as plain values of ``kind``; None when one is not certain."""
    out = []
    for value in values:
        if value is None:
            continue
        plain = plain_value(value, kind)
        if plain is UNKNOWN:
            return None
        out.append(plain)
    return out


_ORDER = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
#: Kinds whose plain values order as the column's values do (booleans: no range here).
_ORDERED = frozenset({*_INT_RANGES, "string", "date"})


def range_ends(test: Compare | Between, kind: str) -> list[tuple[str, Any]] | None:
    """A range's ends as ``(op, plain value)``; None when one is not certain (or NULL)."""
    ends = (
        [(">=", test.low), ("<=", test.high)]
        if isinstance(test, Between)
        else [(test.op, test.value)]
    )
    if kind not in _ORDERED or any(v is None for _, v in ends):
        return None
    out = []
    for op, value in ends:
        plain = plain_value(value, kind)
        if plain is UNKNOWN:
            return None
        out.append((op, plain))
    return out


def leaf_parts(leaf: Predicate) -> tuple[Predicate, bool]:
    """The comparison under a normal form's leaf, and whether the leaf is its NOT."""
    if isinstance(leaf, Not):
        return leaf.child, True
    if isinstance(leaf, (NotIn, IsNotNull)) or (isinstance(leaf, Compare) and leaf.op == "!="):
        return leaf, True
    return leaf, False


def _equality_values(test: Predicate) -> tuple[Any, ...]:
    if isinstance(test, (In, NotIn)):
        return test.values
    assert isinstance(test, (Eq, Compare))
    return (test.value,)


def _null_probe(test: Predicate) -> bool:
    """``= NULL`` or ``!= NULL``: never true, kept all the same, as pruning keeps them."""
    return isinstance(test, (Eq, Compare)) and test.value is None


def may_hold_for_value(leaf: Predicate, kind: str, value: Any) -> bool:
    """Whether a normal form's leaf may be TRUE where its column holds ``value`` (a plain
    value of ``kind``, None: NULL), as a partition value is held by every row of a file.

    SQL's three-valued logic: a comparison with NULL is unknown, and so is its NOT.
    """
    test, negated = leaf_parts(leaf)
    if isinstance(test, IsNotNull):
        return value is not None
    if isinstance(test, Eq) and test.null_safe and test.value is None:
        return value is None
    if isinstance(test, (Compare, Between)) and not (isinstance(test, Compare) and test.op == "!="):
        ends = range_ends(test, kind)
        if ends is None:
            return True
        if value is None:
            return False
        if not all(type(v) is type(value) for _, v in ends):
            return True
        inside = all(_ORDER[op](value, v) for op, v in ends)
        return inside != negated
    literals = _equality_values(test)
    plain = plain_values(literals, kind)
    if plain is None or not all(type(v) is type(value) for v in plain) or _null_probe(test):
        return True
    null_safe = isinstance(test, Eq) and test.null_safe
    if value is None:
        return negated and null_safe  # NOT (x <=> v) holds for a NULL
    if negated and any(v is None for v in literals) and not null_safe:
        return False  # x NOT IN (..., NULL): never true
    return (value in plain) != negated


def may_hold_within(
    leaf: Predicate, kind: str, low: Any, high: Any, all_null: bool, nulls: int | None
) -> bool:
    """Whether a normal form's leaf may be TRUE for some row of a file whose column's
    values lie in ``[low, high]`` (plain values of ``kind``; None: unknown), every one
    NULL (``all_null``) or ``nulls`` of them (None: unknown)."""
    test, negated = leaf_parts(leaf)
    if isinstance(test, IsNotNull):
        return not all_null
    if isinstance(test, Eq) and test.null_safe and test.value is None:  # IS NULL
        return nulls is None or nulls > 0
    null_safe = isinstance(test, Eq) and test.null_safe
    if negated and null_safe and (nulls is None or nulls > 0):
        return True  # NOT (x <=> v) holds for a NULL
    if all_null:
        return False
    if low is None or high is None or type(low) is not type(high):
        return True
    if isinstance(test, (Compare, Between)) and not (isinstance(test, Compare) and test.op == "!="):
        ends = range_ends(test, kind)
        if ends is None or not all(type(v) is type(low) for _, v in ends):
            return True
        if len(ends) == 2 and ends[0][1] > ends[1][1]:  # BETWEEN 5 AND 3 holds nowhere
            return negated
        if not negated:  # some value in [low, high] may be inside the range
            return all(_ORDER[op](high if op[0] == ">" else low, v) for op, v in ends)
        # NOT: some value outside the range, unless [low, high] lies inside it
        return not all(_ORDER[op](low, v) and _ORDER[op](high, v) for op, v in ends)
    literals = _equality_values(test)
    plain = plain_values(literals, kind)
    if plain is None or not all(type(v) is type(low) for v in plain) or _null_probe(test):
        return True
    if not negated:
        return any(low <= v <= high for v in plain)
    return not (low == high and low in plain)
