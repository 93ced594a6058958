"""Random predicates for oracle tests, and SQL's three-valued truth of one on a Python row."""

from __future__ import annotations

import math
import operator
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pybloom_async.predicate import (
    And,
    Between,
    Compare,
    Eq,
    In,
    IsNotNull,
    IsNull,
    Not,
    NotIn,
    Or,
    Predicate,
)

#: ``literals(rng, column)``: values to probe ``column`` with (present and absent ones).
Literals = Callable[[random.Random, str], list[Any]]

#: The forms :func:`random_predicate` draws by default, and every form there is.
EQUALITIES = ("=", "<=>", "IN")
ALL_FORMS = (*EQUALITIES, "!=", "<", "<=", ">", ">=", "BETWEEN", "NOT IN", "IS NULL",
             "IS NOT NULL", "NOT")  # fmt: skip


def random_predicate(
    rng: random.Random,
    columns: Sequence[str],
    literals: Literals,
    *,
    null_share: float = 0.35,
    depth: int = 0,
    forms: Sequence[str] = EQUALITIES,
) -> Predicate:
    """A random tree of at most two levels of AND/OR over ``columns``.

    With the default ``forms``, one roll decides each node: below 0.3 (above the
    leaves) an AND or an OR of two children; else a leaf: ``<=> NULL`` below
    ``null_share``, an IN of up to four literals below 0.7, otherwise ``=`` (null-safe
    three times in ten). With other ``forms`` (see :data:`ALL_FORMS`), a leaf is one of
    them, drawn evenly, and ``NOT`` wraps a subtree.
    """
    if tuple(forms) != EQUALITIES:
        return _any_form(rng, columns, literals, forms, depth)
    roll = rng.random()
    if depth < 2 and roll < 0.3:
        children = tuple(
            random_predicate(rng, columns, literals, null_share=null_share, depth=depth + 1)
            for _ in range(2)
        )
        return And(children) if rng.random() < 0.5 else Or(children)
    column = rng.choice(list(columns))
    values = literals(rng, column)
    if roll < null_share:
        return Eq(column, None, null_safe=True)
    if roll < 0.7:
        return In(column, tuple(rng.sample(values, min(4, len(values)))))
    return Eq(column, rng.choice(values), null_safe=rng.random() < 0.3)


def _any_form(
    rng: random.Random,
    columns: Sequence[str],
    literals: Literals,
    forms: Sequence[str],
    depth: int,
) -> Predicate:
    roll = rng.random()
    if depth < 2 and roll < 0.3:
        children = [_any_form(rng, columns, literals, forms, depth + 1) for _ in range(2)]
        return And.of(*children) if rng.random() < 0.5 else Or.of(*children)
    leaves = [f for f in forms if f != "NOT"]
    if "NOT" in forms and depth < 2 and roll < 0.4:
        return Not(_any_form(rng, columns, literals, forms, depth + 1))
    column = rng.choice(list(columns))
    values = literals(rng, column)
    form = rng.choice(leaves)
    if form in ("IN", "NOT IN"):
        chosen = tuple(rng.sample(values, min(rng.randint(1, 4), len(values))))
        return In(column, chosen) if form == "IN" else NotIn(column, chosen)
    if form == "IS NULL":
        return IsNull(column)
    if form == "IS NOT NULL":
        return IsNotNull(column)
    if form == "BETWEEN":
        return Between(column, rng.choice(values), rng.choice(values))
    if form in ("=", "<=>"):
        return Eq(column, rng.choice(values), null_safe=form == "<=>")
    return Compare(column, form, rng.choice(values))


# ---- the oracle -------------------------------------------------------------------------------

_ORDER = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _not(v: bool | None) -> bool | None:
    return None if v is None else not v


def _leaf(row: Mapping[str, Any], column: str) -> Any:
    value: Any = row
    for part in column.split("."):
        if value is None:
            return None
        value = value.get(part)
    return value


def truth(p: Predicate, row: Mapping[str, Any], value_of: Callable[[str, Any], Any]) -> bool | None:
    """SQL's three-valued truth of ``p`` on one row (``row``: column -> Python value;
    dotted columns reach into dicts). ``value_of(column, literal)`` gives a non-NULL
    literal as a value of the row's kind (a date from its text, a FLOAT's nearest value).

    IEEE floats: -0.0 equals 0.0, NaN equals nothing and is in no range."""
    if isinstance(p, And):
        parts = [truth(c, row, value_of) for c in p.children]
        return False if False in parts else None if None in parts else True
    if isinstance(p, Or):
        parts = [truth(c, row, value_of) for c in p.children]
        return True if True in parts else None if None in parts else False
    if isinstance(p, Not):
        return _not(truth(p.child, row, value_of))
    if isinstance(p, IsNotNull):
        return _leaf(row, p.column) is not None
    data = _leaf(row, p.column)
    if isinstance(p, Eq):
        if p.null_safe:
            if p.value is None or data is None:
                return p.value is None and data is None
            return _equal(data, value_of(p.column, p.value))
        if data is None or p.value is None:
            return None
        return _equal(data, value_of(p.column, p.value))
    if isinstance(p, (In, NotIn)):
        found: bool | None = False
        for v in p.values:
            if data is None or v is None:
                found = None if found is False else found
            elif _equal(data, value_of(p.column, v)):
                found = True
        return found if isinstance(p, In) else _not(found)
    if isinstance(p, Between):
        low = truth(Compare(p.column, ">=", p.low), row, value_of)
        high = truth(Compare(p.column, "<=", p.high), row, value_of)
        return False if False in (low, high) else None if None in (low, high) else True
    assert isinstance(p, Compare)
    if p.op == "!=":
        return _not(truth(Eq(p.column, p.value), row, value_of))
    if data is None or p.value is None:
        return None
    literal = value_of(p.column, p.value)
    if _nan(data) or _nan(literal):
        return False
    return bool(_ORDER[p.op](data, literal))


def _equal(data: Any, literal: Any) -> bool:
    if _nan(data) or _nan(literal):
        return False
    return bool(data == literal)
