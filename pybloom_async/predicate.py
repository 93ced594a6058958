"""Predicates for pruning: ``=``, ``IN``, null-safe ``<=>``, AND and OR over columns.

Build them in Python::

    from pybloom_async import col
    where = (col("id") == 42) & col("email").isin(["a@x", "b@x"])

or parse the same thing from text, as the command line takes it::

    parse_predicate("id = 42 AND email IN ('a@x', 'b@x')")

Literal values keep the form they were written in (an integer, an exact
decimal, a string, ...) and are converted to each column's physical type only
when a file is pruned, because the same name can have different types in
different files. There the rule is:

* a literal that is not a value of the column's type at all (text that does
  not read as the type, ``'2024/01/05'`` for a DATE; a Python value of the
  wrong kind, bytes or ``0x10`` for an integer column) is the user's mistake:
  :class:`~pybloom_async.errors.PredicateError`, naming the file, the column,
  the value and the forms the column takes, with or without ``strict``;
* a well-formed value that the column cannot hold (300 for an INT(8) column,
  1e39 for a FLOAT, 10 characters for a FIXED_LEN_BYTE_ARRAY(4), more decimal
  places than the column's scale, a finer time than the column's unit) matches
  no row: those row groups are ruled out by type.

Numbers are taken exactly, except in FLOAT, DOUBLE and FLOAT16 columns, where
a number means the nearest value of the type, as SQL reads a literal (``0.1``
is the float nearest to one tenth; beyond the type's range, no value). A
Python value means what the text form writes for it, so that ``p`` and
``parse_predicate(p.to_text())`` always agree: a ``float`` is the number it
prints as (``0.1`` is one tenth, also in a DECIMAL column), and a ``str``,
``date``, ``time``, ``datetime`` or ``UUID`` is the quoted text of it, read by
the column's type: ``col("d") == "2024-01-05"`` probes that date in a DATE
column, ``col("s") == date(2024, 1, 5)`` the text ``'2024-01-05'`` in a STRING
one.

Predicates are not booleans: combine them with ``&`` (AND) and ``|`` (OR),
never with ``and``, ``or`` or ``not``, and parenthesise each comparison
(``(col("a") == 1) | (col("b") == 2)``), as in numpy, pandas and polars.
Only ``==``, :meth:`ColumnRef.eq_null_safe` and :meth:`ColumnRef.isin` make
predicates; ``!=``, ``<``, ``>``, ``<=``, ``>=`` and ``~`` raise
:class:`~pybloom_async.errors.PredicateError`."""

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
from .predicate_tokens import KEYWORDS, TEXT_FORMS, TextLiteral, Token, quoted_text, tokenize

__all__ = [
    "And",
    "Eq",
    "In",
    "Or",
    "Predicate",
    "col",
    "literal_text",
    "parse_predicate",
]

#: What the Python builders and the text form support, for error messages.
_PYTHON_FORMS = (
    "predicates support ==, eq_null_safe() and isin(), combined with & (AND), | (OR) "
    "and parentheses"
)


def _unsupported_python(what: str) -> PredicateError:
    return PredicateError(f"{what} is not supported: {_PYTHON_FORMS}")


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
        return And.of(self, _operand(other, "&"))

    def __or__(self, other: Predicate) -> Predicate:
        return Or.of(self, _operand(other, "|"))

    def __rand__(self, other: object) -> Predicate:
        raise _operand_error(other, "&")

    def __ror__(self, other: object) -> Predicate:
        raise _operand_error(other, "|")

    def __bool__(self) -> bool:
        # Without this, `p or q` would silently be `p` (every object is truthy), and
        # the row groups matching only q would be pruned.
        raise PredicateError(
            "a predicate has no truth value: combine predicates with & (AND) and | (OR), "
            "not with 'and', 'or' or 'not', and put each comparison in parentheses, "
            "e.g. (col('a') == 1) | (col('b') == 2)"
        )

    def __invert__(self) -> Predicate:
        raise _unsupported_python("NOT (~)")


def _operand(other: object, op: str) -> Predicate:
    if not isinstance(other, Predicate):
        raise _operand_error(other, op)
    return other


def _operand_error(other: object, op: str) -> PredicateError:
    example = f"(col('a') == 1) {op} (col('b') == 2)"
    if isinstance(other, ColumnRef):
        return PredicateError(
            f"{op} combines predicates, not columns: {op} binds tighter than ==, so put each "
            f"comparison in parentheses: {example}"
        )
    name = type(other).__name__
    article = "an" if name[:1].lower() in "aeiou" else "a"
    return PredicateError(
        f"{op} combines two predicates, not a predicate and {article} {name} (write {example})"
    )


@dataclass(frozen=True, eq=True)
class Eq(Predicate):
    """``column = value`` (``null_safe``: ``column <=> value``, where NULL matches NULL)."""

    column: str
    value: Any
    null_safe: bool = False

    def columns(self) -> frozenset[str]:
        return frozenset((self.column,))

    def _render(self, full: bool) -> str:
        op = "<=>" if self.null_safe else "="
        return f"{_quote_column(self.column)} {op} {literal_text(self.value)}"


@dataclass(frozen=True, eq=True)
class In(Predicate):
    """``column IN (v1, v2, ...)``: true when the column equals any of the values."""

    column: str
    values: tuple[Any, ...]

    def columns(self) -> frozenset[str]:
        return frozenset((self.column,))

    def _render(self, full: bool) -> str:
        values = self.values if full else self.values[:5]
        shown = ", ".join(literal_text(v) for v in values)
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
        if isinstance(value, (ColumnRef, Predicate)):
            raise PredicateError(
                f"a column is compared with a value, not with a {type(value).__name__}",
                column=self.path,
            )
        return Eq(self.path, value)

    def __ne__(self, value: object) -> bool:
        raise _unsupported_python("!=")

    def __lt__(self, value: object) -> bool:
        raise _unsupported_python("<")

    def __le__(self, value: object) -> bool:
        raise _unsupported_python("<=")

    def __gt__(self, value: object) -> bool:
        raise _unsupported_python(">")

    def __ge__(self, value: object) -> bool:
        raise _unsupported_python(">=")

    def __invert__(self) -> Predicate:
        raise _unsupported_python("NOT (~)")

    # `col("a") == 1 & col("b") == 2` evaluates `1 & col("b")` first (& binds tighter
    # than ==): say so instead of Python's TypeError.
    def __and__(self, other: object) -> Predicate:
        raise _operand_error(self, "&")

    __rand__ = __and__

    def __or__(self, other: object) -> Predicate:
        raise _operand_error(self, "|")

    __ror__ = __or__

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
    """The column as the text form writes it: quoted unless a bare word reads back as it."""
    bare = re.fullmatch(r"[A-Za-z_][\w.]*", path) and path.upper() not in KEYWORDS
    return path if bare else "`" + path.replace("`", "``") + "`"


#: Above this many bits Python may refuse to write an int as decimal text (its default limit
#: is 4300 digits); Decimal writes it exactly.
_STR_DIGITS_BITS = 4000


def literal_text(v: Any) -> str:
    """A literal value as the text form writes it (``'text'``, ``X'00ff'``, ``42``, ``NULL``)."""
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
    if isinstance(v, decimal.Decimal) and not v.is_finite():
        if v.is_nan():
            return "NAN"  # NaN, -NaN and sNaN: the text form has one NaN
        return "-INF" if v.is_signed() else "INF"
    if isinstance(v, int) and v.bit_length() > _STR_DIGITS_BITS:
        return str(decimal.Decimal(v))  # exact, without the int-to-text digit limit
    return str(v)


def _paren(p: Predicate, kind: type, full: bool) -> str:
    text = p._render(full)
    return f"({text})" if isinstance(p, kind) else text


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = tokenize(text)
        self.i = 0

    def peek(self, ahead: int = 0) -> Token | None:
        i = self.i + ahead
        return self.toks[i] if i < len(self.toks) else None

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
            self.take("rparen", "')'")
            return p
        after = self.peek(1)
        if tok is not None and tok.bare_word == "NOT" and (after is None or after.kind != "op"):
            raise self.unsupported("NOT", tok)
        column = self.take("ident", "a column name").value
        tok = self.peek()
        if tok is not None and tok.kind == "op":
            self.i += 1
            return Eq(column, self.literal(), null_safe=tok.value == "<=>")
        if tok is not None and tok.kind == "IN":
            self.i += 1
            self.take("lparen", "'(' after IN")
            values = [self.literal()]
            while (t := self.peek()) is not None and t.kind == "comma":
                self.i += 1
                values.append(self.literal())
            self.take("rparen", "',' or ')' in the IN list")
            return In(column, tuple(values))
        if tok is not None and tok.bare_word is not None:
            if tok.bare_word == "IS":
                raise self.unsupported(
                    "IS", tok, f"for IS NULL write {_quote_column(column)} <=> NULL ({TEXT_FORMS})"
                )
            raise self.unsupported(tok.text, tok)
        raise self.error(f"expected =, <=> or IN after column {column!r}", tok)

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
    """Parse ``"id = 42 AND (email IN ('a', 'b') OR name <=> NULL)"``.

    Grammar: OR of ANDs of atoms; an atom is ``column = value``,
    ``column <=> value``, ``column IN (value, ...)`` or a parenthesised
    predicate. Columns are dotted names, or quoted with backticks or double
    quotes. Values: integers, decimals and floats (``-0.0``, ``1e3``, ``NaN``,
    ``inf``), ``'strings'`` (``''`` escapes a quote; also dates, timestamps and
    UUIDs, read by the column's type), ``X'00ff'`` or ``0x00ff`` binary,
    ``TRUE``/``FALSE`` and ``NULL``. Keywords are case-insensitive. ``NOT``,
    ``!=``, ``<>``, ``<``, ``>``, ``<=``, ``>=``, ``IS``, ``LIKE`` and
    ``BETWEEN`` are not supported.

    Values are read by each column's type when a file is pruned: a value that
    is not one of the column's type (``'2024/01/05'`` or ``'abc'`` for a DATE
    or an INT64 column, ``0x10`` for an INT64 column) is a
    :class:`PredicateError` then, naming the file, column, value and the forms
    the column takes; a well-formed value the column cannot hold (300 for an
    INT(8) column) rules the row groups out (see the module docstring).

    Raises
    ------
    PredicateError
        The text does not follow the grammar; the message says where and what
        is supported.
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
