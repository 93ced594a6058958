"""Predicates: builders, the text grammar, and its error messages."""

from __future__ import annotations

import decimal

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
        ("id = 1 AND", "expected ident"),
        ("id = 1 junk", "unexpected 'junk'"),
        ("id IN ()", "expected a value"),
        ("id IN (1, 2", "expected rparen"),
        ("id = 'unterminated", "unexpected character"),
        ("b = X'0'", "odd number"),
        ("b = 0x1", "even number"),
        ("(id = 1", "expected rparen"),
        ("id ~ 3", "unexpected character"),
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
