"""The predicate as DuckDB SQL, where SQL means what the product's documentation says.

Only for columns of integers, exact decimals, text, dates and booleans: there ``=``, ``IN``,
``IS NOT DISTINCT FROM`` (``<=>``), the orderings, ``BETWEEN``, ``<>``, ``NOT IN``, ``IS
NOT NULL`` and ``NOT`` agree with the oracle (DuckDB compares text as bytes, a literal
beyond a column's type by its value, and NULL in SQL's three-valued logic). Floats (DuckDB
orders NaN and says ``NaN = NaN``), bytes and timestamps are left to the oracle alone.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from pybloom_async.predicate import (
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
)

from .oracle import Domain

_FAMILIES = {"int", "decimal", "string", "date", "bool"}


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def column(path: str) -> str:
    return ".".join(quote(part) for part in path.split("."))


def _number(value: Any) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value) if abs(value) < 10**38 else None
    exact = Decimal(value) if isinstance(value, float) else value
    if not isinstance(exact, Decimal) or not exact.is_finite():
        return None
    digits = len(exact.as_tuple().digits)
    text = format(exact, "f")
    return text if digits <= 38 and len(text.replace("-", "").replace(".", "")) <= 38 else None


def literal(value: Any, domain: Domain) -> str | None:
    """A literal as DuckDB SQL for a column of ``domain``; None when no exact form exists."""
    if value is None:
        return "NULL"
    family = domain.family
    if family == "bool":
        return ("TRUE" if value else "FALSE") if isinstance(value, bool) else None
    if family in ("int", "decimal"):
        return _number(value)
    if family == "string":
        return "'" + value.replace("'", "''") + "'" if isinstance(value, str) else None
    if family == "date":
        if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
            value = value.isoformat()
        return f"DATE '{value}'" if isinstance(value, str) else None
    return None


def where(p: Predicate, domains: dict[str, Domain | None]) -> str | None:
    """``p`` as a DuckDB WHERE clause, or None when some part has no exact SQL form."""
    if isinstance(p, Not):
        inner = where(p.child, domains)
        return None if inner is None else f"(NOT {inner})"
    if isinstance(p, (Eq, In, NotIn, Compare, Between, IsNotNull)):
        domain = domains.get(p.column)
        if domain is None or domain.family not in _FAMILIES:
            return None
        name = column(p.column)
        if isinstance(p, IsNotNull):
            return f"({name} IS NOT NULL)"
        values = (
            p.values if isinstance(p, (In, NotIn))
            else (p.low, p.high) if isinstance(p, Between) else (p.value,)
        )  # fmt: skip
        rendered = [literal(v, domain) for v in values]
        if any(r is None for r in rendered):
            return None
        if isinstance(p, (In, NotIn)):
            keyword = "IN" if isinstance(p, In) else "NOT IN"
            return f"({name} {keyword} ({', '.join(str(r) for r in rendered)}))"
        if isinstance(p, Between):
            return f"({name} BETWEEN {rendered[0]} AND {rendered[1]})"
        if isinstance(p, Compare):
            return f"({name} {'<>' if p.op == '!=' else p.op} {rendered[0]})"
        op = "IS NOT DISTINCT FROM" if p.null_safe else "="
        return f"{name} {op} {rendered[0]}"
    if isinstance(p, (And, Or)):
        parts = [where(c, domains) for c in p.children]
        if any(part is None for part in parts):
            return None
        joiner = " AND " if isinstance(p, And) else " OR "
        return "(" + joiner.join(str(part) for part in parts) + ")"
    return None
