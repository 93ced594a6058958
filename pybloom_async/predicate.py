"""Predicates for pruning: ``=``, ``IN``, null-safe ``<=>``, AND and OR over columns.

Build them in Python::

    from pybloom_async import col
    where = (col("id") == 42) & col("email").isin(["a@x", "b@x"])

or parse the same thing from text, as the command line takes it::

    parse_predicate("id = 42 AND email IN ('a@x', 'b@x')")

Literal values keep the form they were written in (an integer, an exact
decimal, a string, ...) and are converted to each column's physical type only
when a file is pruned, because the same name can have different types in
different files.
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .errors import PredicateError

__all__ = [
    "And",
    "Eq",
    "In",
    "Or",
    "Predicate",
    "TextLiteral",
    "col",
    "parse_predicate",
]


@dataclass(frozen=True)
class TextLiteral:
    """A quoted literal from the text form, converted by the column's type later.

    ``'2024-01-31'`` is a string for a STRING column and a date for a DATE
    column; the parser cannot know which, so it keeps the text.
    """

    text: str


class Predicate:
    """Base of the predicate tree. Combine with ``&`` (AND) and ``|`` (OR)."""

    def columns(self) -> frozenset[str]:
        """The column paths the predicate reads."""
        raise NotImplementedError

    def to_text(self) -> str:
        """The complete text form: :func:`parse_predicate` reads it back to an equal predicate.

        ``str()`` is for display and shortens long IN lists; this never does.
        Dates, times, timestamps and UUIDs become quoted ISO / canonical text,
        which each column's type converts back exactly.
        """
        return self._render(full=True)

    def _render(self, full: bool) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return self._render(full=False)

    def __and__(self, other: Predicate) -> Predicate:
        if not isinstance(other, Predicate):
            return NotImplemented
        return And.of(self, other)

    def __or__(self, other: Predicate) -> Predicate:
        if not isinstance(other, Predicate):
            return NotImplemented
        return Or.of(self, other)


@dataclass(frozen=True, eq=True)
class Eq(Predicate):
    """``column = value`` (``null_safe``: ``column <=> value``, where NULL matches NULL)."""

    column: str
    value: Any
    null_safe: bool = False

    def columns(self) -> frozenset[str]:
        return frozenset((self.column,))

    def _render(self, full: bool) -> str:
        return f"{_quote_column(self.column)} {'<=>' if self.null_safe else '='} {_lit(self.value)}"


@dataclass(frozen=True, eq=True)
class In(Predicate):
    """``column IN (v1, v2, ...)``: true when the column equals any of the values."""

    column: str
    values: tuple[Any, ...]

    def columns(self) -> frozenset[str]:
        return frozenset((self.column,))

    def _render(self, full: bool) -> str:
        values = self.values if full else self.values[:5]
        shown = ", ".join(_lit(v) for v in values)
        more = f", ... ({len(self.values)} values)" if len(self.values) > len(values) else ""
        return f"{_quote_column(self.column)} IN ({shown}{more})"


@dataclass(frozen=True, eq=True)
class And(Predicate):
    """All children hold."""

    children: tuple[Predicate, ...]

    @classmethod
    def of(cls, *parts: Predicate) -> Predicate:
        flat: list[Predicate] = []
        for p in parts:
            flat.extend(p.children if isinstance(p, And) else (p,))
        return flat[0] if len(flat) == 1 else cls(tuple(flat))

    def columns(self) -> frozenset[str]:
        return frozenset().union(*(c.columns() for c in self.children))

    def _render(self, full: bool) -> str:
        return " AND ".join(_paren(c, Or, full) for c in self.children)


@dataclass(frozen=True, eq=True)
class Or(Predicate):
    """At least one child holds."""

    children: tuple[Predicate, ...]

    @classmethod
    def of(cls, *parts: Predicate) -> Predicate:
        flat: list[Predicate] = []
        for p in parts:
            flat.extend(p.children if isinstance(p, Or) else (p,))
        return flat[0] if len(flat) == 1 else cls(tuple(flat))

    def columns(self) -> frozenset[str]:
        return frozenset().union(*(c.columns() for c in self.children))

    def _render(self, full: bool) -> str:
        return " OR ".join(_paren(c, And, full) for c in self.children)


class ColumnRef:
    """A column by its dotted path; ``==`` and ``isin`` make predicates."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        if not isinstance(path, str) or not path:
            raise PredicateError("a column path must be a non-empty string")
        self.path = path

    def __eq__(self, value: object) -> Eq:  # type: ignore[override]
        return Eq(self.path, value)

    def eq_null_safe(self, value: Any) -> Eq:
        """``column <=> value``: like ``==``, but NULL equals NULL."""
        return Eq(self.path, value, null_safe=True)

    def isin(self, values: Iterable[Any]) -> In:
        """``column IN (values)``."""
        if isinstance(values, (str, bytes)):
            raise PredicateError(
                f"isin() takes a collection of values, not one {type(values).__name__}",
                column=self.path,
            )
        return In(self.path, tuple(values))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"col({self.path!r})"


def col(path: str) -> ColumnRef:
    """Refer to a column by its dotted path (``"user.id"`` for nested columns)."""
    return ColumnRef(path)


def _quote_column(path: str) -> str:
    return path if re.fullmatch(r"[A-Za-z_][\w.]*", path) else "`" + path.replace("`", "``") + "`"


def _lit(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, TextLiteral):
        return "'" + v.text.replace("'", "''") + "'"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, (bytes, bytearray)):
        return "X'" + bytes(v).hex() + "'"
    if isinstance(v, (datetime.date, datetime.time)):
        return "'" + v.isoformat() + "'"  # datetime is a date: ISO 8601 with its offset
    if isinstance(v, uuid.UUID):
        return "'" + str(v) + "'"
    if isinstance(v, float) and math.isinf(v):
        return "INF" if v > 0 else "-INF"
    return str(v)


def _paren(p: Predicate, kind: type, full: bool) -> str:
    text = p._render(full)
    return f"({text})" if isinstance(p, kind) else text


# ---- text form -----------------------------------------------------------------

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<lparen>\()
  | (?P<rparen>\))
  | (?P<comma>,)
  | (?P<op><=>|==|=)
  | (?P<hexstr>[xX]'(?P<hexbody>[0-9A-Fa-f]*)')
  | (?P<hexnum>0[xX](?P<hexdigits>[0-9A-Fa-f]*))
  | (?P<string>'(?P<sbody>(?:[^']|'')*)')
  | (?P<signedinf>[-+](?:[iI][nN][fF](?:[iI][nN][iI][tT][yY])?)(?![\w.]))
  | (?P<number>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
  | (?P<qident>`(?P<qbody>(?:[^`]|``)+)`|"(?P<dqbody>(?:[^"]|"")+)")
  | (?P<word>[A-Za-z_][\w.]*)
    """,
    re.VERBOSE,
)

_KEYWORDS = {"AND", "OR", "IN", "NULL", "TRUE", "FALSE", "NAN", "INF", "INFINITY"}


@dataclass(frozen=True)
class _Tok:
    kind: str
    value: Any
    pos: int


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise PredicateError(
                f"unexpected character {text[pos]!r} at position {pos} in {text!r}"
            )
        kind = m.lastgroup
        assert kind is not None
        # lastgroup names the innermost group for nested ones; map back.
        for outer in ("hexstr", "hexnum", "string", "qident"):
            if m.group(outer) is not None:
                kind = outer
                break
        if kind == "ws":
            pass
        elif kind == "string":
            toks.append(_Tok("literal", TextLiteral(m.group("sbody").replace("''", "'")), pos))
        elif kind == "hexstr":
            body = m.group("hexbody")
            if len(body) % 2:
                raise PredicateError(f"binary literal X'{body}' has an odd number of digits")
            toks.append(_Tok("literal", bytes.fromhex(body), pos))
        elif kind == "hexnum":
            digits = m.group("hexdigits")
            if not digits or len(digits) % 2:
                raise PredicateError(f"binary literal 0x{digits} needs an even number of digits")
            toks.append(_Tok("literal", bytes.fromhex(digits), pos))
        elif kind == "signedinf":
            toks.append(_Tok("literal", float(m.group("signedinf")), pos))
        elif kind == "number":
            toks.append(_Tok("literal", _number(m.group("number")), pos))
        elif kind == "qident":
            body = m.group("qbody")
            name = (
                body.replace("``", "`")
                if body is not None
                else m.group("dqbody").replace('""', '"')
            )
            toks.append(_Tok("ident", name, pos))
        elif kind == "word":
            word = m.group("word")
            upper = word.upper()
            if upper in _KEYWORDS:
                toks.append(_Tok(upper, word, pos))
            else:
                toks.append(_Tok("ident", word, pos))
        else:
            toks.append(_Tok(kind, m.group(kind), pos))
        pos = m.end()
    return toks


def _number(text: str) -> int | decimal.Decimal:
    # Integers stay ints; anything with a point or exponent is an exact
    # Decimal, so 0.1 is 1/10 and not the double nearest to it.
    if re.fullmatch(r"[-+]?\d+", text):
        return int(text)
    return decimal.Decimal(text)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0

    def peek(self) -> _Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, kind: str) -> _Tok:
        tok = self.peek()
        if tok is None or tok.kind != kind:
            where = f"at position {tok.pos}" if tok else "at the end"
            found = repr(tok.value) if tok else "nothing"
            raise PredicateError(f"expected {kind} {where} of {self.text!r}, found {found}")
        self.i += 1
        return tok

    def parse(self) -> Predicate:
        if not self.toks:
            raise PredicateError("empty predicate")
        p = self.or_expr()
        tok = self.peek()
        if tok is not None:
            raise PredicateError(f"unexpected {tok.value!r} at position {tok.pos} in {self.text!r}")
        return p

    def or_expr(self) -> Predicate:
        parts = [self.and_expr()]
        while (tok := self.peek()) is not None and tok.kind == "OR":
            self.i += 1
            parts.append(self.and_expr())
        return Or.of(*parts)

    def and_expr(self) -> Predicate:
        parts = [self.atom()]
        while (tok := self.peek()) is not None and tok.kind == "AND":
            self.i += 1
            parts.append(self.atom())
        return And.of(*parts)

    def atom(self) -> Predicate:
        tok = self.peek()
        if tok is not None and tok.kind == "lparen":
            self.i += 1
            p = self.or_expr()
            self.take("rparen")
            return p
        column = self.take("ident").value
        tok = self.peek()
        if tok is not None and tok.kind == "op":
            self.i += 1
            return Eq(column, self.literal(), null_safe=tok.value == "<=>")
        if tok is not None and tok.kind == "IN":
            self.i += 1
            self.take("lparen")
            values = [self.literal()]
            while (t := self.peek()) is not None and t.kind == "comma":
                self.i += 1
                values.append(self.literal())
            self.take("rparen")
            return In(column, tuple(values))
        where = f"position {tok.pos}" if tok else "the end"
        raise PredicateError(
            f"expected =, <=> or IN after column {column!r} at {where} of {self.text!r}"
        )

    def literal(self) -> Any:
        tok = self.peek()
        if tok is None:
            raise PredicateError(f"expected a value at the end of {self.text!r}")
        self.i += 1
        if tok.kind == "literal":
            return tok.value
        if tok.kind == "NULL":
            return None
        if tok.kind in ("TRUE", "FALSE"):
            return tok.kind == "TRUE"
        if tok.kind == "NAN":
            return float("nan")
        if tok.kind in ("INF", "INFINITY"):
            return float("inf")
        raise PredicateError(f"expected a value at position {tok.pos} of {self.text!r}")


def parse_predicate(text: str) -> Predicate:
    """Parse ``"id = 42 AND (email IN ('a', 'b') OR name <=> NULL)"``.

    Grammar: OR of ANDs of atoms; an atom is ``column = value``,
    ``column <=> value``, ``column IN (value, ...)`` or a parenthesised
    predicate. Columns are dotted names, or quoted with backticks or double
    quotes. Values: integers, decimals and floats (``-0.0``, ``1e3``, ``NaN``,
    ``inf``), ``'strings'`` (``''`` escapes a quote; also dates, timestamps and
    UUIDs, read by the column's type), ``X'00ff'`` or ``0x00ff`` binary,
    ``TRUE``/``FALSE`` and ``NULL``. Keywords are case-insensitive.

    Raises
    ------
    PredicateError
        The text does not follow the grammar; the message says where.
    """
    if not isinstance(text, str):
        raise PredicateError(f"a predicate text must be a str, not {type(text).__name__}")
    return _Parser(text).parse()


def as_predicate(where: Predicate | str) -> Predicate:
    """Accept a predicate or its text form."""
    if isinstance(where, Predicate):
        return where
    if isinstance(where, str):
        return parse_predicate(where)
    raise PredicateError(f"where must be a predicate or a str, not {type(where).__name__}")


def iter_leaves(p: Predicate) -> Iterator[Eq | In]:
    """Every ``=`` / ``<=>`` / ``IN`` in the tree, depth first."""
    if isinstance(p, (Eq, In)):
        yield p
    elif isinstance(p, (And, Or)):
        for c in p.children:
            yield from iter_leaves(c)
    else:
        raise PredicateError(f"unsupported predicate {type(p).__name__}")
