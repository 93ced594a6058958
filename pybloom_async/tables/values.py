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
import re
from collections.abc import Callable
from typing import Any, Final

from ..predicate import And, Eq, In, Or, Predicate
from ..predicate_tokens import TextLiteral

__all__ = ["UNKNOWN", "leaf_values", "may_match", "plain_value"]


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


def may_match(where: Predicate, leaf_may_match: Callable[[Eq | In], bool]) -> bool:
    """Whether ``where`` may hold for some row, given what each leaf may do.

    ``leaf_may_match`` answers False only when the leaf is certainly not TRUE
    for any row; AND then rules out when any part does, OR when every part does
    (no NOT, so a leaf that is never TRUE makes no row TRUE).
    """
    if isinstance(where, (Eq, In)):
        return leaf_may_match(where)
    if isinstance(where, And):
        return all(may_match(c, leaf_may_match) for c in where.children)
    if isinstance(where, Or):
        return any(may_match(c, leaf_may_match) for c in where.children)
    return True


def leaf_values(leaf: Eq | In, kind: str) -> list[Any] | None:
    """The non-null values of a leaf as ``kind``; None when one of them is not certain.

    NULL in ``=`` and ``IN`` matches no row, so it is left out.
    """
    values = (leaf.value,) if isinstance(leaf, Eq) else leaf.values
    out = []
    for value in values:
        if value is None:
            continue
        plain = plain_value(value, kind)
        if plain is UNKNOWN:
            return None
        out.append(plain)
    return out
