"""The predicates' model: comparisons of columns with literals, AND, OR and NOT, built
in Python (``col``) and written as text (``to_text``); what they mean is the package's
docstring (:mod:`pybloom_async.predicate`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeAlias

from ..errors import PredicateError
from .tokens import literal_text, quote_column

#: The ordering operators of :class:`Compare`.
ORDERING = ("<", "<=", ">", ">=")


class Predicate:
    """Base of the predicate tree. Combine with ``&`` (AND), ``|`` (OR) and ``~`` (NOT)."""

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
            "a predicate has no truth value: combine predicates with & (AND), | (OR) and "
            "~ (NOT), not with 'and', 'or' or 'not', and put each comparison in parentheses, "
            "e.g. (col('a') == 1) | (col('b') == 2)"
        )

    def __invert__(self) -> Predicate:
        """NOT: the complement where one exists (``~(x == 1)`` is ``x != 1``, ``~x.isin(..)``
        is NOT IN, ``~x.is_null()`` is IS NOT NULL, ``~~p`` is ``p``), else :class:`Not`."""
        return Not(self)

    def __getstate__(self) -> dict[str, Any]:
        # The cached normal form (see normal_form) is not part of the predicate.
        return {k: v for k, v in self.__dict__.items() if k != "_normal"}


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


def _column(column: object) -> str:
    if not isinstance(column, str) or not column:
        raise PredicateError("a column path must be a non-empty string")
    return column


class _OnColumn(Predicate):
    """A predicate on one column (a comparison, IN, BETWEEN, IS [NOT] NULL): the column's
    path checked, and the one column it reads."""

    column: str

    def __post_init__(self) -> None:
        _column(self.column)

    def columns(self) -> frozenset[str]:
        return frozenset((self.column,))


@dataclass(frozen=True, eq=True)
class Eq(_OnColumn):
    """``column = value`` (``null_safe``: ``column <=> value``, where NULL matches NULL).

    ``Eq(column, None, null_safe=True)`` is :class:`IsNull`: the one form of ``IS NULL``.
    """

    column: str
    value: Any
    null_safe: bool = False

    def __new__(cls, *args: Any, **kwargs: Any) -> Eq:
        if cls is Eq and _null_safe_null(*args, **kwargs):
            return IsNull(args[0] if args else kwargs["column"])
        return super().__new__(cls)

    def _render(self, full: bool) -> str:
        op = "<=>" if self.null_safe else "="
        return f"{quote_column(self.column)} {op} {literal_text(self.value)}"

    def __invert__(self) -> Predicate:
        if self.null_safe:
            return Not(self)  # NOT (x <=> 1) holds for a NULL x: no comparison says so
        return Compare(self.column, "!=", self.value)


def _null_safe_null(
    column: Any = None, value: Any = 0, null_safe: bool = False, *_: Any, **__: Any
) -> bool:
    return value is None and null_safe is True


@dataclass(frozen=True, eq=True)
class IsNull(Eq):
    """``column IS NULL`` (also written ``column <=> NULL``): true for the NULLs, never unknown.

    The one form of a null-safe comparison with NULL: ``Eq(column, None, null_safe=True)``
    and ``col(column).eq_null_safe(None)`` give this class.
    """

    value: Any = field(default=None, repr=False)
    null_safe: bool = field(default=True, repr=False)

    def __post_init__(self) -> None:
        _column(self.column)
        if self.value is not None or self.null_safe is not True:
            raise PredicateError("IsNull takes a column only", column=self.column)

    def _render(self, full: bool) -> str:
        return f"{quote_column(self.column)} IS NULL"

    def __invert__(self) -> Predicate:
        return IsNotNull(self.column)


@dataclass(frozen=True, eq=True)
class IsNotNull(_OnColumn):
    """``column IS NOT NULL``: true for every non-NULL value, never unknown."""

    column: str

    def _render(self, full: bool) -> str:
        return f"{quote_column(self.column)} IS NOT NULL"

    def __invert__(self) -> Predicate:
        return IsNull(self.column)


@dataclass(frozen=True, eq=True)
class Compare(_OnColumn):
    """``column op value``, ``op`` one of ``<``, ``<=``, ``>``, ``>=`` and ``!=`` (``<>``).

    Values order as their column's type does (see the module's literal rule);
    ``!=`` is ``NOT (column = value)``: unknown for a NULL, true for a NaN.
    """

    column: str
    op: str
    value: Any

    def __post_init__(self) -> None:
        _column(self.column)
        if self.op == "<>":
            object.__setattr__(self, "op", "!=")
        if self.op not in (*ORDERING, "!="):
            hint = " (Eq is =)" if self.op in ("=", "==") else ""
            raise PredicateError(
                f"Compare takes <, <=, >, >= or !=, not {self.op!r}{hint}", column=self.column
            )

    def _render(self, full: bool) -> str:
        return f"{quote_column(self.column)} {self.op} {literal_text(self.value)}"

    def __invert__(self) -> Predicate:
        if self.op == "!=":
            return Eq(self.column, self.value)
        # NOT (x < 1) also holds for a NaN x, which x >= 1 does not: no comparison says so.
        return Not(self)


@dataclass(frozen=True, eq=True)
class Between(_OnColumn):
    """``column BETWEEN low AND high``: ``low <= column AND column <= high`` (inclusive)."""

    column: str
    low: Any
    high: Any

    def _render(self, full: bool) -> str:
        return self._text("BETWEEN")

    def _text(self, keyword: str) -> str:
        low, high = literal_text(self.low), literal_text(self.high)
        return f"{quote_column(self.column)} {keyword} {low} AND {high}"


@dataclass(frozen=True, eq=True)
class In(_OnColumn):
    """``column IN (v1, v2, ...)``: true when the column equals any of the values."""

    column: str
    values: tuple[Any, ...]

    def _render(self, full: bool) -> str:
        return f"{quote_column(self.column)} IN ({_values_text(self.values, full)})"

    def __invert__(self) -> Predicate:
        return NotIn(self.column, self.values)


@dataclass(frozen=True, eq=True)
class NotIn(_OnColumn):
    """``column NOT IN (v1, v2, ...)``: ``NOT (column IN (...))``.

    Never true when the list holds a NULL (the row might equal it: unknown).
    """

    column: str
    values: tuple[Any, ...]

    def _render(self, full: bool) -> str:
        return f"{quote_column(self.column)} NOT IN ({_values_text(self.values, full)})"

    def __invert__(self) -> Predicate:
        return In(self.column, self.values)


def _values_text(values: tuple[Any, ...], full: bool) -> str:
    shown = values if full else values[:5]
    text = ", ".join(literal_text(v) for v in shown)
    return text + (f", ... ({len(values)} values)" if len(values) > len(shown) else "")


@dataclass(frozen=True, eq=True)
class _Junction(Predicate):
    """AND or OR over children: one body for both, the word (``_word``) their only
    difference. A child of the other kind is written in parentheses."""

    children: tuple[Predicate, ...]
    _word: ClassVar[str]

    @classmethod
    def of(cls, *parts: Predicate) -> Predicate:
        flat: list[Predicate] = []
        for p in parts:
            flat.extend(p.children if isinstance(p, cls) else (p,))
        return flat[0] if len(flat) == 1 else cls(tuple(flat))

    def columns(self) -> frozenset[str]:
        return frozenset().union(*(c.columns() for c in self.children))

    def _render(self, full: bool) -> str:
        return f" {self._word} ".join(
            c._render(full) if isinstance(c, type(self)) else _paren(c, _Junction, full)
            for c in self.children
        )


@dataclass(frozen=True, eq=True)
class And(_Junction):
    """All children hold."""

    _word = "AND"


@dataclass(frozen=True, eq=True)
class Or(_Junction):
    """At least one child holds."""

    _word = "OR"


@dataclass(frozen=True, eq=True)
class Not(Predicate):
    """``NOT child``: true where the child is false; unknown where it is unknown."""

    child: Predicate

    def __post_init__(self) -> None:
        if not isinstance(self.child, Predicate):
            raise PredicateError(f"NOT takes a predicate, not a {type(self.child).__name__}")

    def columns(self) -> frozenset[str]:
        return self.child.columns()

    def _render(self, full: bool) -> str:
        if isinstance(self.child, Between):
            return self.child._text("NOT BETWEEN")
        return "NOT " + _paren(self.child, (And, Or), full)

    def __invert__(self) -> Predicate:
        return self.child


#: A leaf of the tree: one column compared with literals.
Comparison: TypeAlias = Eq | In | Compare | Between | NotIn | IsNotNull
#: The classes of :data:`Comparison`, for isinstance.
COMPARISONS = (Eq, In, Compare, Between, NotIn, IsNotNull)


class ColumnRef:
    """A column by its dotted path; its comparison operators and methods make predicates."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = _column(path)

    def _value(self, value: object) -> object:
        if isinstance(value, (ColumnRef, Predicate)):
            raise PredicateError(
                f"a column is compared with a value, not with a {type(value).__name__}",
                column=self.path,
            )
        return value

    def __eq__(self, value: object) -> Eq:  # type: ignore[override]
        return Eq(self.path, self._value(value))

    def __ne__(self, value: object) -> Compare:  # type: ignore[override]
        return Compare(self.path, "!=", self._value(value))

    def __lt__(self, value: object) -> Compare:
        return Compare(self.path, "<", self._value(value))

    def __le__(self, value: object) -> Compare:
        return Compare(self.path, "<=", self._value(value))

    def __gt__(self, value: object) -> Compare:
        return Compare(self.path, ">", self._value(value))

    def __ge__(self, value: object) -> Compare:
        return Compare(self.path, ">=", self._value(value))

    def __invert__(self) -> Predicate:
        raise PredicateError(
            "~ negates a predicate, not a column: write ~(col('a') == 1)", column=self.path
        )

    # `col("a") == 1 & col("b") == 2` evaluates `1 & col("b")` first (& binds tighter
    # than ==): say so instead of Python's TypeError.
    def __and__(self, other: object) -> Predicate:
        raise _operand_error(self, "&")

    __rand__ = __and__

    def __or__(self, other: object) -> Predicate:
        raise _operand_error(self, "|")

    __ror__ = __or__

    def eq_null_safe(self, value: Any) -> Eq:
        """``column <=> value``: like ``==``, but NULL equals NULL (``<=> None`` is IS NULL)."""
        return Eq(self.path, self._value(value), null_safe=True)

    def isin(self, values: Iterable[Any]) -> In:
        """``column IN (values)``; ``~col(c).isin(values)`` is NOT IN."""
        if isinstance(values, (str, bytes)):
            raise PredicateError(
                f"isin() takes a collection of values, not one {type(values).__name__}",
                column=self.path,
            )
        return In(self.path, tuple(self._value(v) for v in values))

    def between(self, low: Any, high: Any) -> Between:
        """``column BETWEEN low AND high``: both ends included."""
        return Between(self.path, self._value(low), self._value(high))

    def is_null(self) -> IsNull:
        """``column IS NULL``."""
        return IsNull(self.path)

    def is_not_null(self) -> IsNotNull:
        """``column IS NOT NULL``."""
        return IsNotNull(self.path)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"col({self.path!r})"


def col(path: str) -> ColumnRef:
    """Refer to a column by its dotted path (``"user.id"`` for nested columns)."""
    return ColumnRef(path)


def _paren(p: Predicate, kind: type | tuple[type, ...], full: bool) -> str:
    text = p._render(full)
    return f"({text})" if isinstance(p, kind) else text


def iter_leaves(p: Predicate) -> Iterator[Comparison]:
    """Every comparison in the tree (under AND, OR and NOT), depth first."""
    if isinstance(p, COMPARISONS):
        yield p
    elif isinstance(p, (And, Or)):
        for c in p.children:
            yield from iter_leaves(c)
    elif isinstance(p, Not):
        yield from iter_leaves(p.child)
    else:
        raise PredicateError(f"unsupported predicate {type(p).__name__}")
