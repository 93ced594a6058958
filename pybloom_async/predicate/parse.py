"""The predicate text form's parser (:func:`pybloom_async.predicate.parse_predicate`).

Precedence, loosest first: OR, AND, NOT, then one comparison. ``BETWEEN a AND b``
takes its AND before the boolean one sees it. ``NOT``, ``IS``, ``BETWEEN`` and
``LIKE`` are keywords only where a keyword fits, so columns of those names stay
usable bare (``not = 1``).
"""

from __future__ import annotations

from typing import Any

from ..errors import PredicateError
from .model import (
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
from .tokens import TEXT_FORMS, Token, quote_column, quoted_text, tokenize

#: What each comparison operator of the text form builds (``==`` is ``=``, ``<>`` is ``!=``).
_OPERATORS = {"=": "=", "==": "=", "<=>": "<=>", "!=": "!=", "<>": "!=",
              "<": "<", "<=": "<=", ">": ">", ">=": ">="}  # fmt: skip


class Parser:
    """A recursive-descent parser over one text's tokens."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = tokenize(text)
        self.i = 0

    def peek(self, ahead: int = 0) -> Token | None:
        i = self.i + ahead
        return self.toks[i] if i < len(self.toks) else None

    def word(self, ahead: int = 0) -> str | None:
        """The upper-cased bare word ``ahead`` tokens on (NOT, IS, ...), else None."""
        tok = self.peek(ahead)
        return tok.bare_word if tok is not None else None

    def where(self, tok: Token | None) -> str:
        return f"at position {tok.pos} of {self.text!r}" if tok else f"at the end of {self.text!r}"

    def error(self, message: str, tok: Token | None, hint: str = "") -> PredicateError:
        """``expected ...`` at the token, what was found instead, and a hint."""
        found = f", found {tok.text}" if tok else ""
        return PredicateError(f"{message} {self.where(tok)}{found}{hint}")

    def unsupported(self, what: str, tok: Token, hint: str = TEXT_FORMS) -> PredicateError:
        return PredicateError(f"{what} is not supported ({self.where(tok)}); {hint}")

    def take(self, kind: str, what: str) -> Token:
        tok = self.peek()
        if tok is None or tok.kind != kind:
            raise self.error(f"expected {what}", tok)
        self.i += 1
        return tok

    def parse(self) -> Predicate:
        if not self.toks:
            raise PredicateError("empty predicate")
        p = self.or_expr()
        tok = self.peek()
        if tok is not None:
            raise PredicateError(
                f"unexpected {tok.text!r} at position {tok.pos} in {self.text!r}: "
                "expected AND, OR or the end"
            )
        return p

    def or_expr(self) -> Predicate:
        parts = [self.and_expr()]
        while (tok := self.peek()) is not None and tok.kind == "OR":
            self.i += 1
            parts.append(self.and_expr())
        return Or.of(*parts)

    def and_expr(self) -> Predicate:
        parts = [self.not_expr()]
        while (tok := self.peek()) is not None and tok.kind == "AND":
            self.i += 1
            parts.append(self.not_expr())
        return And.of(*parts)

    def not_expr(self) -> Predicate:
        if self.word() == "NOT" and not self.comparison_follows(1):
            self.i += 1
            if self.peek() is None:
                raise self.error("expected a predicate after NOT", None)
            return Not(self.not_expr())
        return self.atom()

    def comparison_follows(self, ahead: int) -> bool:
        """Whether the token ``ahead`` on starts a comparison, so the one before is a column
        (``not = 1``, ``is IN (2)``, ``between NOT BETWEEN 1 AND 2``)."""
        tok = self.peek(ahead)
        if tok is None:
            return False
        if tok.kind in ("op", "IN") or self.word(ahead) in ("IS", "BETWEEN", "LIKE"):
            return True
        after = self.peek(ahead + 1)
        return (
            self.word(ahead) == "NOT"
            and after is not None
            and (after.kind == "IN" or self.word(ahead + 1) == "BETWEEN")
        )

    def atom(self) -> Predicate:
        tok = self.peek()
        if tok is not None and tok.kind == "lparen":
            self.i += 1
            p = self.or_expr()
            self.take("rparen", "')'")
            return p
        column = self.take("ident", "a column name").value
        tok = self.peek()
        if tok is not None and tok.kind == "op":
            self.i += 1
            op = _OPERATORS[tok.value]
            value = self.literal()
            if op in ("=", "<=>"):
                return Eq(column, value, null_safe=op == "<=>")
            return Compare(column, op, value)
        if tok is not None and tok.kind == "IN":
            self.i += 1
            return In(column, self.values())
        word = self.word()
        if word == "NOT":
            self.i += 1
            nxt = self.peek()
            if nxt is not None and nxt.kind == "IN":
                self.i += 1
                return NotIn(column, self.values())
            if self.word() == "BETWEEN":
                self.i += 1
                return Not(self.between(column))
            raise self.error(f"expected IN or BETWEEN after {column!r} NOT", nxt)
        if word == "BETWEEN":
            self.i += 1
            return self.between(column)
        if word == "IS":
            self.i += 1
            negated = self.word() == "NOT"
            if negated:
                self.i += 1
            self.take("NULL", "NULL or NOT NULL after IS")
            return IsNotNull(column) if negated else IsNull(column)
        if tok is not None and word is not None:
            hint = TEXT_FORMS
            if word == "LIKE":
                hint = f"for a prefix write a range: {quote_column(column)} >= 'abc' AND ..."
            raise self.unsupported(tok.text, tok, hint)
        raise self.error(
            f"expected a comparison (=, <, IN, BETWEEN, IS, ...) after column {column!r}", tok
        )

    def values(self) -> tuple[Any, ...]:
        self.take("lparen", "'(' after IN")
        closing = self.peek()
        if closing is not None and closing.kind == "rparen":  # IN (): no value, as DuckDB
            self.i += 1
            return ()
        values = [self.literal()]
        toks = self.toks
        while (t := self.peek()) is not None and t.kind == "comma":
            self.i += 1
            tok = toks[self.i] if self.i < len(toks) else None
            if tok is not None and tok.kind == "literal":  # most values: no call
                self.i += 1
                values.append(tok.value)
            else:
                values.append(self.literal())
        self.take("rparen", "',' or ')' in the IN list")
        return tuple(values)

    def between(self, column: str) -> Between:
        low = self.literal()
        self.take("AND", "AND between the two bounds of BETWEEN")
        return Between(column, low, self.literal())

    def literal(self) -> Any:
        tok = self.peek()
        if tok is None:
            raise self.error("expected a value", tok)
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
        if tok.kind == "ident" and tok.text.startswith('"'):
            raise self.error(
                "expected a value",
                tok,
                ": double quotes quote column names; text goes in single quotes: "
                + quoted_text(tok.value),
            )
        if tok.kind == "ident":
            raise self.error(
                "expected a value",
                tok,
                " (a column name: columns are compared with values, not with columns); "
                f"text goes in single quotes: {quoted_text(tok.value)}",
            )
        raise self.error("expected a value", tok)


def parse_predicate(text: str) -> Predicate:
    """Parse ``"id = 42 AND (day >= '2024-05-01' OR name IS NULL)"``.

    Grammar: OR of ANDs of NOTs of atoms (NOT binds tighter than AND, AND than
    OR); an atom is ``column = value`` (or ``==``), ``column <=> value``,
    ``column != value`` (or ``<>``), ``column < value`` (``<=``, ``>``, ``>=``),
    ``column [NOT] IN (value, ...)``, ``column [NOT] BETWEEN value AND value``
    (inclusive; its AND is not the boolean one), ``column IS [NOT] NULL``, or a
    parenthesised predicate. Columns are dotted names, or quoted with backticks
    or double quotes. Values: integers, decimals and floats (``-0.0``, ``1e3``,
    ``NaN``, ``inf``), ``'strings'`` (``''`` escapes a quote; also dates,
    timestamps and UUIDs, read by the column's type), ``X'00ff'`` or
    ``0x00ff`` binary, ``TRUE``/``FALSE`` and ``NULL``. Keywords are
    case-insensitive; ``NOT``, ``IS`` and ``BETWEEN`` remain usable as column
    names where no keyword fits (``not = 1``). ``LIKE`` is not supported.

    Values are read by each column's type when a file is pruned: a value that
    is not one of the column's type (``'2024/01/05'`` or ``'abc'`` for a DATE
    or an INT64 column, ``0x10`` for an INT64 column) is a
    :class:`PredicateError` then, naming the file, column, value and the forms
    the column takes; a well-formed value the column cannot hold (300 for an
    INT(8) column) equals no row and orders by its exact value (see the module
    docstring).

    Raises
    ------
    PredicateError
        The text does not follow the grammar; the message says where and what
        is supported.
    """
    if not isinstance(text, str):
        raise PredicateError(f"a predicate text must be a str, not {type(text).__name__}")
    return Parser(text).parse()


def as_predicate(where: Predicate | str) -> Predicate:
    """Accept a predicate or its text form."""
    if isinstance(where, Predicate):
        return where
    if isinstance(where, str):
        return parse_predicate(where)
    raise PredicateError(f"where must be a predicate or a str, not {type(where).__name__}")
