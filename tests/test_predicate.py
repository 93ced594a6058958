"""Predicates: builders, the text grammar, and its error messages."""

from __future__ import annotations

import decimal
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pybloom_async.errors import PredicateError
from pybloom_async.predicate import (
    And,
    Eq,
    In,
    Or,
    TextLiteral,
    as_predicate,
    col,
    iter_leaves,
    parse_predicate,
)


def test_builders() -> None:
    p = (col("id") == 42) & col("email").isin(["a", "b"])
    assert p == And((Eq("id", 42), In("email", ("a", "b"))))
    q = p | col("x").eq_null_safe(None)
    assert isinstance(q, Or) and q.children[1] == Eq("x", None, null_safe=True)
    assert q.columns() == {"id", "email", "x"}
    # AND/OR flatten instead of nesting.
    assert ((col("a") == 1) & (col("b") == 2) & (col("c") == 3)) == And(
        (Eq("a", 1), Eq("b", 2), Eq("c", 3))
    )
    with pytest.raises(PredicateError):
        col("a").isin("abc")
    with pytest.raises(PredicateError):
        col("")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id = 42", Eq("id", 42)),
        ("id == -7", Eq("id", -7)),
        ("price = 1.10", Eq("price", decimal.Decimal("1.10"))),
        ("x = -0.0", Eq("x", decimal.Decimal("-0.0"))),
        ("x = 1e3", Eq("x", decimal.Decimal("1e3"))),
        ("name = 'O''Brien'", Eq("name", TextLiteral("O'Brien"))),
        ("name = ''", Eq("name", TextLiteral(""))),
        ("name = 'ünï'", Eq("name", TextLiteral("ünï"))),
        ("b = X'00FF'", Eq("b", b"\x00\xff")),
        ("b = 0xdead", Eq("b", b"\xde\xad")),
        ("flag = true", Eq("flag", True)),
        ("v <=> NULL", Eq("v", None, null_safe=True)),
        ("v = null", Eq("v", None)),
        ("user.id = 1", Eq("user.id", 1)),
        ("`odd name` = 1", Eq("odd name", 1)),
        ('"dq""name" = 1', Eq('dq"name', 1)),
        ("a IN (1, 2, 3)", In("a", (1, 2, 3))),
        ("a in ('x')", In("a", (TextLiteral("x"),))),
        (
            "id = 42 AND email IN ('a', 'b')",
            And((Eq("id", 42), In("email", (TextLiteral("a"), TextLiteral("b"))))),
        ),
        ("a = 1 OR b = 2 AND c = 3", Or((Eq("a", 1), And((Eq("b", 2), Eq("c", 3)))))),
        ("(a = 1 OR b = 2) AND c = 3", And((Or((Eq("a", 1), Eq("b", 2))), Eq("c", 3)))),
    ],
)
def test_parse(text: str, expected: object) -> None:
    assert parse_predicate(text) == expected


def test_nan_and_inf_literals() -> None:
    p = parse_predicate("f = NaN OR g = inf")
    assert isinstance(p, Or)
    nan = p.children[0]
    assert isinstance(nan, Eq) and nan.value != nan.value
    assert p.children[1] == Eq("g", float("inf"))


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "empty"),
        ("id", "expected =, <=> or IN"),
        ("id = ", "expected a value"),
        ("id = 1 AND", "expected a column name"),
        ("id = 1 junk", "unexpected 'junk'"),
        ("id IN ()", "expected a value"),
        ("id IN (1, 2", "expected ',' or '\\)'"),
        ("id = 'unterminated", "unexpected character"),
        ("b = X'0'", "odd number"),
        ("b = 0x1", "even number"),
        ("(id = 1", "expected '\\)'"),
        ("id ~ 3", "unsupported operator '~'"),
        ("id = AND", "expected a value"),
    ],
)
def test_parse_errors_say_where(text: str, match: str) -> None:
    with pytest.raises(PredicateError, match=match):
        parse_predicate(text)


def test_round_trip_through_str() -> None:
    for text in [
        "id = 42 AND email IN ('a', 'b')",
        "(a = 1 OR b <=> NULL) AND `weird col` = X'00ff'",
        "x = -0.5 OR y = TRUE",
    ]:
        p = parse_predicate(text)
        assert parse_predicate(str(p)) == p


def test_as_predicate_and_leaves() -> None:
    p = as_predicate("a = 1 OR (b IN (2, 3) AND c = 4)")
    assert [type(x).__name__ for x in iter_leaves(p)] == ["Eq", "In", "Eq"]
    assert as_predicate(p) is p
    with pytest.raises(PredicateError):
        as_predicate(42)  # type: ignore[arg-type]


@given(st.text(max_size=60))
@settings(max_examples=500, deadline=None)
def test_random_text_parses_or_raises_predicate_error(text: str) -> None:
    try:
        parse_predicate(text)
    except PredicateError:
        pass


def test_to_text_reads_back_exactly() -> None:
    import datetime
    import uuid

    cases = [
        col("d") == datetime.date(2024, 1, 2),
        col("t").isin(
            [
                datetime.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=datetime.timezone.utc),
                datetime.datetime(2020, 1, 1),
            ]
        ),
        col("tm") == datetime.time(12, 30, 0, 500),
        col("u") == uuid.UUID(int=5),
        (col("a").isin(list(range(9))) | (col("b") == float("inf"))) & (col("c") == -float("inf")),
        col("x").eq_null_safe(None),
        col("m") == decimal.Decimal("-1.50"),
        col("s") == "it's",
        col("bin") == b"\x00\xff",
    ]
    for p in cases:
        text = p.to_text()
        again = parse_predicate(text)
        assert again.to_text() == text
        assert "..." not in text
    # the display form shortens long lists; the text form never does
    long = col("k").isin(list(range(100)))
    assert "(100 values)" in str(long)
    assert parse_predicate(long.to_text()) == long
    assert parse_predicate("x = -Infinity") == (col("x") == float("-inf"))
    assert parse_predicate("x = +inf") == (col("x") == float("inf"))


# ---- Python operators: predicates are not booleans ------------------------------------


def test_predicates_have_no_truth_value() -> None:
    a, b = col("user_id") == 3, col("email") == "x"
    for attempt in (
        lambda: bool(a),
        lambda: a or b,  # was silently `a`: the row groups holding only b were pruned
        lambda: a and b,  # was silently `b`
        lambda: not a,
        lambda: col("a").isin([1]) or b,
        lambda: col("a") == 1 == col("b"),  # a chained comparison ands two predicates
    ):
        with pytest.raises(PredicateError) as info:
            attempt()
        message = str(info.value)
        assert "&" in message and "|" in message and "parentheses" in message


@pytest.mark.parametrize(
    ("attempt", "operator"),
    [
        (lambda: col("a") != 1, "!="),
        (lambda: col("a") < 1, "<"),
        (lambda: col("a") <= 1, "<="),
        (lambda: col("a") > 1, ">"),
        (lambda: col("a") >= 1, ">="),
        (lambda: 1 < col("a"), ">"),  # noqa: SIM300 (reflected: col("a") > 1)
        (lambda: ~(col("a") == 1), "NOT (~)"),
        (lambda: ~col("a"), "NOT (~)"),
    ],
)
def test_unsupported_operators_say_what_is_supported(attempt: object, operator: str) -> None:
    with pytest.raises(PredicateError) as info:
        attempt()  # type: ignore[operator]
    message = str(info.value)
    assert message.startswith(f"{operator} is not supported")
    for supported in ("==", "eq_null_safe()", "isin()", "&", "|", "parentheses"):
        assert supported in message


def test_and_or_need_predicates_on_both_sides() -> None:
    # `&` binds tighter than `==`: this computes `1 & col("b")` first.
    with pytest.raises(PredicateError, match=r"put each comparison in parentheses"):
        col("a") == 1 & col("b") == 2  # noqa: B015
    with pytest.raises(PredicateError, match=r"put each comparison in parentheses"):
        col("a") == 1 | col("b") == 2  # noqa: B015
    for attempt in (lambda: (col("a") == 1) & 5, lambda: 5 | (col("a") == 1)):
        with pytest.raises(PredicateError, match="combines two predicates"):
            attempt()
    with pytest.raises(PredicateError, match="compared with a value"):
        col("a") == col("b")  # noqa: B015
    # Equality of predicates themselves is still plain dataclass equality.
    assert ((col("a") == 1) == (col("a") == 1)) is True
    assert ((col("a") == 1) != (col("a") == 2)) is True
    assert (col("a") == 1) in [col("b") == 2, col("a") == 1]


# ---- the text form speaks the user's language -----------------------------------------

TOKEN_NAMES = re.compile(r"\b(ident|rparen|lparen|comma|literal|op|TextLiteral|Decimal)\b")
SUPPORTED = "supported: =, <=> and IN (...), combined with AND, OR and parentheses"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id = 1 AND", "expected a column name at the end"),
        ("id IN (1, 2", "expected ',' or ')' in the IN list at the end"),
        ("(id = 1", "expected ')' at the end"),
        ("id IN (1 'x')", "found 'x'"),
        ("id = 1 2.5", "unexpected '2.5' at position 7"),
        ("id IN 1", "expected '(' after IN"),
        ("id != 3", f"unsupported operator '!=' at position 3 in 'id != 3'; {SUPPORTED}"),
        ("id <> 3", f"unsupported operator '<>' at position 3 in 'id <> 3'; {SUPPORTED}"),
        ("id < 3", "unsupported operator '<'"),
        ("id >= 3", "unsupported operator '>='"),
        ("a = 1 && b = 2", "operator '&&' at position 6 in 'a = 1 && b = 2'; write AND"),
        ("a = 1 || b = 2", "write OR"),
        ("NOT id = 3", f"NOT is not supported (at position 0 of 'NOT id = 3'); {SUPPORTED}"),
        ("id NOT IN (1, 2)", "NOT is not supported (at position 3"),
        ("a = 1 AND not b = 2", "NOT is not supported (at position 10"),
        ("id ~ 3", "NOT is not supported"),
        ("id IS NULL", "for IS NULL write id <=> NULL"),
        ("id LIKE 'a%'", f"LIKE is not supported (at position 3 of \"id LIKE 'a%'\"); {SUPPORTED}"),
        ("id BETWEEN 1 AND 2", "BETWEEN is not supported"),
        ('name = "x"', "double quotes quote column names; text goes in single quotes: 'x'"),
        ('name IN ("it\'s")', "text goes in single quotes: 'it''s'"),
        ("name = bob", "found bob (a column name: columns are compared with values, not with "),
        ("id = 'unterminated", "a 'string' that is never closed?"),
    ],
)
def test_syntax_errors_speak_the_users_language(text: str, expected: str) -> None:
    with pytest.raises(PredicateError) as info:
        parse_predicate(text)
    message = str(info.value)
    assert expected in message
    assert not TOKEN_NAMES.search(message), message


def test_not_and_is_stay_usable_as_column_names() -> None:
    assert parse_predicate("not = 1 AND is IN (2)") == And((Eq("not", 1), In("is", (2,))))
    assert parse_predicate("`NOT` = 1") == Eq("NOT", 1)
