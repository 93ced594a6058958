"""Predicates: builders, the text grammar, and its error messages."""

from __future__ import annotations

import datetime
import decimal
import re
import uuid
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pybloom_async import (
    Rule,
    build_index_sync,
    lookup_sync,
    probe_sync,
    prune_paimon_sync,
    prune_sync,
    prune_with_index_sync,
)
from pybloom_async.errors import PredicateError, PyBloomError
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
    TextLiteral,
    as_predicate,
    col,
    iter_leaves,
    normal_form,
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
        ("id", r"expected a comparison \(=, <, IN, BETWEEN, IS, \.\.\.\)"),
        ("id BETWEEN 1", "expected AND between the two bounds of BETWEEN"),
        ("id BETWEEN 1 OR 2", "expected AND between the two bounds"),
        ("id IS 3", "expected NULL or NOT NULL after IS"),
        ("id NOT = 3", "expected IN or BETWEEN after 'id' NOT"),
        ("NOT", "expected a predicate after NOT"),
        ("id < ", "expected a value"),
        ("id < 1 AND NOT", "expected a predicate after NOT"),
        ("id = ", "expected a value"),
        ("id = 1 AND", "expected a column name"),
        ("id = 1 junk", "unexpected 'junk'"),
        ("id IN (,)", "expected a value"),
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


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", [("literal", 1, 0)]),
        ("  -2 ,+3", [("literal", -2, 2), ("comma", ",", 5), ("literal", 3, 6)]),
        (
            "1.5 1e5 .5 1.e5",
            [
                ("literal", Decimal(t), p)
                for t, p in (("1.5", 0), ("1e5", 4), (".5", 8), ("1.e5", 11))
            ],
        ),
        ("1e", [("literal", 1, 0), ("ident", "e", 1)]),  # no exponent: a name follows
        ("12abc", [("literal", 12, 0), ("ident", "abc", 2)]),
        ("0x1F", [("literal", b"\x1f", 0)]),  # not the integer 0
        ("9" * 5000, [("literal", Decimal("9" * 5000), 0)]),  # past int()'s digit limit
        (
            " a IN (1)\n ",
            [
                ("ident", "a", 1),
                ("IN", "IN", 3),
                ("lparen", "(", 6),
                ("literal", 1, 7),
                ("rparen", ")", 8),
            ],
        ),
    ],
)
def test_tokens_their_values_and_places(text: str, expected: list[tuple[str, object, int]]) -> None:
    """Integers and exact decimals told apart, each token at its place past the whitespace
    before it (what error messages name)."""
    from pybloom_async.predicate.tokens import tokenize

    got = [(t.kind, t.value, t.pos) for t in tokenize(text)]
    assert got == expected
    assert [type(v) for _, v, _ in got] == [type(v) for _, v, _ in expected]


@pytest.mark.parametrize(
    "text",
    [
        "x IN (1, 2 ,3 , -4,+5)",
        "x IN (1, 0x1F, 2)",  # binary, not the integer 0
        "x IN (1, 10x)",
        "x IN (1, 2.5, 3e2, 4E1, 5., 6)",
        "x IN (1, " + "9" * 5000 + ", 2)",  # past int()'s digit limit
        "x IN (1,\n2,\t3) AND y = 4, 5",
        "x IN (1, 'a', 2, NULL, 3)",
        "x IN (1, 2",
        "x IN (1, 2 3)",
        "x = 1,2,",
    ],
)
def test_an_integer_lists_tokens_are_those_of_the_general_loop(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tokenizer takes the rest of an IN list of integers two tokens a match: the same
    tokens, values and places as its general loop makes, one token a match."""
    from pybloom_async.predicate import tokens

    fast = tokens.tokenize(text)
    monkeypatch.setattr(tokens, "_NEXT_INTEGER", re.compile(r"(?!)"))  # never matches
    general = tokens.tokenize(text)
    assert fast == general
    assert [type(t.value) for t in fast] == [type(t.value) for t in general]


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


def test_an_empty_in_list_reads_back() -> None:
    """``x IN ()`` and ``x NOT IN ()``, as to_text writes them and DuckDB reads them."""
    for p in (col("x").isin([]), ~col("x").isin([]), col("x").isin([]) | (col("y") == 1)):
        assert parse_predicate(p.to_text()) == p
    assert parse_predicate("x IN ( )") == col("x").isin([])
    with pytest.raises(PredicateError, match="expected a value"):
        parse_predicate("x IN (1, )")


@pytest.mark.parametrize(
    "name", ["in", "and", "OR", "null", "nan", "True", "false", "inf", "Infinity"]
)
def test_a_column_named_like_a_keyword_is_quoted(name: str) -> None:
    p = (col(name) == 1) & col(name).isin([2, None])
    text = p.to_text()
    assert text.startswith(f"`{name}` = 1")
    assert parse_predicate(text) == p


@given(st.text(min_size=1, max_size=20), st.text(min_size=1, max_size=20))
@settings(max_examples=300, deadline=None)
def test_any_column_name_reads_back(first: str, second: str) -> None:
    p = (col(first) == 1) | col(second).eq_null_safe(None)
    assert parse_predicate(p.to_text()) == p


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


def test_comparison_builders() -> None:
    x = col("x")
    assert (x != 1) == Compare("x", "!=", 1)
    assert (x < 1, x <= 1, x > 1, x >= 1) == tuple(
        Compare("x", op, 1) for op in ("<", "<=", ">", ">=")
    )
    assert (1 < x) == Compare("x", ">", 1)  # noqa: SIM300 (reflected: x > 1)
    assert x.between(1, 5) == Between("x", 1, 5)
    assert x.is_null() == IsNull("x") == Eq("x", None, null_safe=True) == x.eq_null_safe(None)
    assert type(Eq("x", None, null_safe=True)) is IsNull  # one form of IS NULL
    assert x.is_not_null() == IsNotNull("x")
    assert Compare("x", "<>", 1) == Compare("x", "!=", 1)
    # ~ takes the complement where one exists, else wraps in Not.
    assert ~x.isin([1, 2]) == NotIn("x", (1, 2))
    assert ~NotIn("x", (1,)) == In("x", (1,))
    assert ~(x == 1) == Compare("x", "!=", 1)
    assert ~(x != 1) == Eq("x", 1)
    assert ~x.is_null() == IsNotNull("x") and ~x.is_not_null() == IsNull("x")
    assert ~(x < 1) == Not(Compare("x", "<", 1))  # NaN: not x >= 1
    assert ~x.eq_null_safe(1) == Not(Eq("x", 1, null_safe=True))
    assert ~~(x < 1) == (x < 1)
    both = (x == 1) & (col("y") > 2)
    assert ~both == Not(both)
    assert (~both).columns() == {"x", "y"}
    with pytest.raises(
        PredicateError, match="Compare takes <, <=, >, >= or !=, not '=' \\(Eq is =\\)"
    ):
        Compare("x", "=", 1)
    with pytest.raises(PredicateError, match="IsNull takes a column only"):
        IsNull("x", 1)  # type: ignore[call-arg]
    with pytest.raises(PredicateError, match="NOT takes a predicate"):
        Not(x)  # type: ignore[arg-type]
    for attempt in (lambda: x < col("y"), lambda: x.between(1, col("y")), lambda: x != (x == 1)):
        with pytest.raises(PredicateError, match="compared with a value"):
            attempt()
    with pytest.raises(PredicateError, match="~ negates a predicate, not a column"):
        ~x  # noqa: B018


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x != 1", Compare("x", "!=", 1)),
        ("x <> 1", Compare("x", "!=", 1)),
        ("x < 1 AND y <= 2", And((Compare("x", "<", 1), Compare("y", "<=", 2)))),
        ("x > -1.5 OR y >= 'a'", Or((Compare("x", ">", Decimal("-1.5")),
                                     Compare("y", ">=", TextLiteral("a"))))),
        ("x BETWEEN 1 AND 5", Between("x", 1, 5)),
        ("x NOT BETWEEN 1 AND 5", Not(Between("x", 1, 5))),
        ("x BETWEEN 1 AND 5 AND y = 2", And((Between("x", 1, 5), Eq("y", 2)))),
        ("x BETWEEN 1 AND 5 OR y BETWEEN 2 AND 3",
         Or((Between("x", 1, 5), Between("y", 2, 3)))),
        ("x NOT IN (1, NULL)", NotIn("x", (1, None))),
        ("x IS NULL", IsNull("x")),
        ("x is not null", IsNotNull("x")),
        ("NOT x = 1", Not(Eq("x", 1))),
        ("NOT x = 1 AND y = 2", And((Not(Eq("x", 1)), Eq("y", 2)))),  # NOT binds tighter
        ("NOT (x = 1 AND y = 2)", Not(And((Eq("x", 1), Eq("y", 2))))),
        ("a = 1 OR NOT b = 2 AND c = 3",
         Or((Eq("a", 1), And((Not(Eq("b", 2)), Eq("c", 3)))))),
        ("NOT NOT x < 1", Not(Not(Compare("x", "<", 1)))),
        ("not = 1 AND is IS NULL", And((Eq("not", 1), IsNull("is")))),
        ("between BETWEEN 1 AND 2", Between("between", 1, 2)),
        ("not NOT IN (1)", NotIn("not", (1,))),
        ("NOT not < 1", Not(Compare("not", "<", 1))),
        ("x < NULL", Compare("x", "<", None)),
    ],
)  # fmt: skip
def test_parse_the_new_forms(text: str, expected: object) -> None:
    assert parse_predicate(text) == expected


def test_the_normal_form_pushes_not_to_the_leaves() -> None:
    p = parse_predicate("NOT (a = 1 OR b IN (2) OR NOT (c IS NULL AND d < 3)) AND e <=> 4")
    normal = normal_form(p)
    assert normal == And((Compare("a", "!=", 1), NotIn("b", (2,)), IsNull("c"),
                          Compare("d", "<", 3), Eq("e", 4, null_safe=True)))  # fmt: skip
    assert normal_form(p) is normal and normal_form(normal) is normal
    # What has no complement stays under NOT, as one leaf.
    kept = parse_predicate("NOT (a < 1 OR b BETWEEN 1 AND 2 OR c <=> 3 OR d <=> NULL)")
    assert normal_form(kept) == And((Not(Compare("a", "<", 1)), Not(Between("b", 1, 2)),
                                     Not(Eq("c", 3, null_safe=True)), IsNotNull("d")))  # fmt: skip
    already = parse_predicate("a != 1 AND (NOT b < 2 OR c NOT IN (3))")
    assert normal_form(already) is already
    # The cache is not part of the predicate: equality, pickling and copies ignore it.
    import copy
    import pickle

    assert "_normal" not in pickle.loads(pickle.dumps(p)).__dict__
    assert copy.deepcopy(p) == p


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
SUPPORTED = (
    "supported: =, <=>, != (<>), <, <=, >, >=, [NOT] IN (...), [NOT] BETWEEN ... AND ..., "
    "IS [NOT] NULL, combined with NOT, AND, OR and parentheses"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id = 1 AND", "expected a column name at the end"),
        ("id IN (1, 2", "expected ',' or ')' in the IN list at the end"),
        ("(id = 1", "expected ')' at the end"),
        ("id IN (1 'x')", "found 'x'"),
        ("id = 1 2.5", "unexpected '2.5' at position 7"),
        ("id IN 1", "expected '(' after IN"),
        ("a = 1 && b = 2", "operator '&&' at position 6 in 'a = 1 && b = 2'; write AND"),
        ("a = 1 || b = 2", "write OR"),
        ("id ~ 3", "unsupported operator '~' at position 3 in 'id ~ 3'; write NOT"),
        ("!(id = 3)", "write NOT"),
        ("id LIKE 'a%'", "LIKE is not supported (at position 3 of \"id LIKE 'a%'\"); for a prefix"),
        (
            "id MATCHES 3",
            f"MATCHES is not supported (at position 3 of 'id MATCHES 3'); {SUPPORTED}",
        ),
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


# ---- literals read by each file's column types ----------------------------------------


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    """``full``: one row group with every kind of column; ``ids``: only ``user_id``."""
    full, ids = tmp_path / "full.parquet", tmp_path / "ids.parquet"
    table = pa.table(
        {
            "user_id": pa.array([1, 2, 3], pa.int64()),
            "email": ["a@x", "b@x", "x"],
            "d": pa.array([datetime.date(2024, 1, 5)] * 3, pa.date32()),
            "small": pa.array([1, 2, 3], pa.int8()),
            "code": pa.array([b"abcd", b"efgh", b"ijkl"], pa.binary(4)),
            "price": pa.array([decimal.Decimal("1.50")] * 3, pa.decimal128(9, 2)),
        }
    )
    pq.write_table(table, full, bloom_filter_options={c: True for c in table.column_names})
    pq.write_table(
        pa.table({"user_id": pa.array([7], pa.int64())}), ids,
        bloom_filter_options={"user_id": True},
    )  # fmt: skip
    return full, ids


MALFORMED = [
    # (predicate, column, value as shown, accepted forms)
    ("d = '2024/01/05'", "d", "'2024/01/05'", "a DATE column takes 'YYYY-MM-DD'"),
    ("d = '2024-02-30'", "d", "'2024-02-30'", "a DATE column takes 'YYYY-MM-DD'"),
    ("user_id = 'abc'", "user_id", "'abc'", "an INT64 column takes integers"),
    ("user_id = 0x10", "user_id", "X'10'", "an INT64 column takes integers"),
    ("user_id IN (1, 'two')", "user_id", "'two'", "an INT64 column takes integers"),
    ("email = 5", "email", "5", "a STRING column takes text in single quotes"),
    ("small = TRUE", "small", "TRUE", "an INT(8) column takes integers"),
    ("price = 'cheap'", "price", "'cheap'", "a DECIMAL(9, 2) column takes numbers"),
    (col("user_id") == "abc", "user_id", "'abc'", "an INT64 column takes integers"),
    (col("user_id") == b"\x10", "user_id", "X'10'", "an INT64 column takes integers"),
    (col("d") == datetime.datetime(2024, 1, 5), "d", "'2024-01-05T00:00:00'", "DATE"),
]


@pytest.mark.parametrize(("where", "column", "shown", "forms"), MALFORMED)
@pytest.mark.parametrize("strict", [False, True])
def test_a_literal_not_of_the_columns_type_is_an_error(
    files: tuple[Path, Path], where: object, column: str, shown: str, forms: str, strict: bool
) -> None:
    full, ids = files
    # With strict, ids.parquet (no column but user_id) would fail first for its columns.
    paths = [full] if strict else [full, ids]
    checks = [
        lambda: prune_sync(paths, where, on_error="raise" if strict else "skip"),  # blocking path
        lambda: prune_sync(
            paths * 5, where, on_error="raise" if strict else "skip"
        ),  # the event loop's
    ]
    for check in checks:
        with pytest.raises(PredicateError) as info:
            check()
        message = str(info.value)
        assert f"{shown} is not a value of this column" in message
        assert forms in message and f"column {column!r}" in message
        assert f"file {full}" in message or f"file {ids}" in message


def test_probe_and_the_index_read_literals_alike(files: tuple[Path, Path]) -> None:
    full, ids = files
    with pytest.raises(PredicateError, match=r"'abc' is not a value of this column.*INT64"):
        probe_sync(full, "user_id", [TextLiteral("1"), TextLiteral("abc")])
    build_index_sync([str(full), str(ids)], ["user_id", "d"])
    for where in ("d = '2024/01/05'", "user_id = 0x10"):
        for row_groups in (False, True):
            with pytest.raises(PredicateError, match="is not a value of this column") as info:
                prune_with_index_sync(str(full.parent), where, row_groups=row_groups)
            assert "file " in str(info.value)


def test_well_formed_values_the_column_cannot_hold_are_ruled_out(
    files: tuple[Path, Path],
) -> None:
    full, _ = files
    for where, reason in [
        ("small = 300", "300 is outside INT(8)'s range [-128, 127]"),
        ("code = 'ten chars!'", "10 bytes cannot be stored in a 4-byte column"),
        ("price = 1.505", "has more than 2 fractional digits"),
        ("user_id = 1.5", "has a fractional part"),
        ("user_id = 99999999999999999999", "is outside the column's range"),
        (f"user_id = {'9' * 5000}", "is outside the 64-bit integer range"),
        (col("small") == 300, "outside INT(8)'s range"),
    ]:
        for strict in (False, True):
            (v,) = prune_sync(full, where, on_error="raise" if strict else "skip")
            assert not v.kept and v.rule is Rule.TYPE, (where, v)
            assert reason in v.reason


@pytest.fixture
def numbers(tmp_path: Path) -> tuple[Path, Path]:
    """The column ``f`` as FLOAT in one file and DOUBLE in the other; ``i`` an INT8."""
    f32, f64 = tmp_path / "f32.parquet", tmp_path / "f64.parquet"
    for path, kind in ((f32, pa.float32()), (f64, pa.float64())):
        table = pa.table(
            {
                "f": pa.array([0.1, 1.5, 3e38], kind),
                "i": pa.array([1, 2, 3], pa.int8()),
                "price": pa.array([decimal.Decimal("1.50")] * 3, pa.decimal128(9, 2)),
                "s": ["2024-01-05", "x", "y"],
            }
        )
        pq.write_table(table, path, bloom_filter_options={c: True for c in table.column_names})
    return f32, f64


def test_both_forms_read_a_literal_alike(numbers: tuple[Path, Path]) -> None:
    """One rule: what the column cannot hold matches nothing, in the text form as in Python."""
    f32, f64 = numbers
    cases = [
        # (python, text, rows in f32, rows in f64)
        (col("f") == 1e39, "f = 1e39", 0, 0),  # beyond FLOAT; a DOUBLE holds it, no row has it
        (col("f") == 1.7e308, "f = 1.7e308", 0, 0),
        (col("f") == 0.1, "f = 0.1", 1, 1),  # the nearest value of each type
        (col("f") == 3e38, "f = 3e38", 1, 1),
        (col("f").isin([0.1, 1e300]), "f IN (0.1, 1e300)", 1, 1),
        (col("f") == 10**400, f"f = {10**400}", 0, 0),
        (col("i") == 300, "i = 300", 0, 0),
        (col("i") == 2.0, "i = 2.0", 1, 1),
        (col("i") == 2.5, "i = 2.5", 0, 0),
        (col("price") == 1.5, "price = 1.5", 3, 3),  # a float is the number it prints as
        (col("price") == 1.505, "price = 1.505", 0, 0),
        (col("s") == datetime.date(2024, 1, 5), "s = '2024-01-05'", 1, 1),  # the quoted text
    ]
    for python, text, in_f32, in_f64 in cases:
        assert parse_predicate(python.to_text()) == parse_predicate(text), python
        for path, want in ((f32, in_f32), (f64, in_f64)):
            rows = [lookup_sync(str(path), where).num_rows for where in (python, text)]
            assert rows == [want, want], (python, path.name)
            by_python, by_text = (prune_sync(str(path), where) for where in (python, text))
            assert [(v.kept, v.rule) for v in by_python] == [(v.kept, v.rule) for v in by_text]
    (v,) = prune_sync(str(f32), "f = 1e39")
    assert not v.kept and v.rule is Rule.TYPE and "beyond the range of a FLOAT" in v.reason
    # A text IN list over a lake whose files store the column as FLOAT and as DOUBLE.
    got = lookup_sync([str(f32), str(f64)], "f IN (0.1, 1e39, 1.5)")
    assert got.num_rows == 4


def test_a_str_is_read_like_quoted_text(files: tuple[Path, Path]) -> None:
    full, _ = files
    for python, text in [
        (col("d") == "2024-01-05", "d = '2024-01-05'"),
        (col("user_id") == "3", "user_id = '3'"),
        (col("price").isin(["1.5", "2"]), "price IN ('1.5', '2')"),
    ]:
        (by_python,) = prune_sync(full, python)
        (by_text,) = prune_sync(full, text)
        (round_trip,) = prune_sync(full, python.to_text())
        assert by_python.kept and by_python == by_text == round_trip, (python, by_python)


def test_hex_text_in_an_unannotated_binary_column_is_probed_both_ways(tmp_path: Path) -> None:
    # '0x61' may be the text "0x61" as well as the byte 0x61: such a column holds either.
    path = tmp_path / "b.parquet"
    values = [b"0x61", *(f"v{i}".encode() for i in range(99))]
    pq.write_table(pa.table({"b": pa.array(values, pa.binary())}), path,
                   bloom_filter_options={"b": True})  # fmt: skip
    many = [f"w{i}" for i in range(70)]  # long IN lists take the vectorised path
    for where in ("b = '0x61'", col("b") == "0x61", col("b").isin(["0x61", *many])):
        (v,) = prune_sync(path, where)
        assert v.kept, where
    (v,) = prune_sync(path, "b = '0x62'")
    assert not v.kept


def test_an_or_with_python_or_is_refused_not_narrowed(files: tuple[Path, Path]) -> None:
    full, _ = files
    with pytest.raises(PredicateError, match="no truth value"):
        prune_sync(full, (col("user_id") == 99) or (col("email") == "x"))
    (v,) = prune_sync(full, (col("user_id") == 99) | (col("email") == "x"))
    assert v.kept


# ---- columns ---------------------------------------------------------------------------


def test_a_column_no_file_has_is_an_error(files: tuple[Path, Path], tmp_path: Path) -> None:
    full, ids = files
    for paths in ([full, ids], str(full.parent)):  # blocking, then the event loop's path
        for strict in (False, True):
            with pytest.raises(PredicateError) as info:
                prune_sync(
                    paths, "user_id = 1 OR emial = 'x'", on_error="raise" if strict else "skip"
                )
            message = str(info.value)
            assert "column 'emial'" in message
            if strict:  # strict stops at the first file without the column
                assert f"file {full.parent}" in message
            else:
                assert "no file read has this column; the 2 files have: " in message
                assert "user_id, email, d, small, code, price" in message
    with pytest.raises(PredicateError, match="no file read has the columns 'a', 'b'"):
        prune_sync(ids, "a = 1 AND b = 2")
    # The list is cut short: 30 columns, 20 shown and the count.
    wide = tmp_path / "wide" / "w.parquet"
    wide.parent.mkdir()
    pq.write_table(pa.table({f"c{i}": [i] for i in range(30)}), wide)
    with pytest.raises(PredicateError, match=r"c18, c19, \.\.\. \(30 columns\)"):
        prune_sync(wide, "nope = 1")
    # No file read (none there, or none readable): nothing to compare with.
    empty = tmp_path / "empty"
    empty.mkdir()
    assert prune_sync(str(empty), "nope = 1") == []
    (empty / "bad.parquet").write_bytes(b"not parquet at all, not at all")
    (v,) = prune_sync(str(empty), "nope = 1")
    assert v.kept and v.rule is Rule.UNREADABLE


def test_a_column_some_files_lack_keeps_them(files: tuple[Path, Path]) -> None:
    full, ids = files
    for paths in ([full, ids], str(full.parent)):
        got = {Path(v.file).name: v for v in prune_sync(paths, "email = 'nobody'")}
        assert not got["full.parquet"].kept
        lacking = got["ids.parquet"]
        assert lacking.kept and lacking.rule is Rule.MISSING_COLUMN
        assert "email" in lacking.reason
    # Through the sidecar indexes too (the file without the column is kept, then read).
    build_index_sync([str(full), str(ids)], ["user_id", "email"])
    got = {Path(v.file).name: v for v in prune_with_index_sync(str(full.parent), "email = 'x'")}
    assert got["full.parquet"].kept
    assert got["ids.parquet"].kept and got["ids.parquet"].rule is Rule.MISSING_COLUMN


def test_the_index_pass_checks_columns_only_when_every_footer_is_read(
    files: tuple[Path, Path],
) -> None:
    full, ids = files
    build_index_sync([str(full), str(ids)], ["user_id"])
    # The index rules out ids.parquet (no user_id 1): its footer is never read, so a
    # column the other file lacks cannot be called missing everywhere.
    got = prune_with_index_sync(str(full.parent), "user_id = 1 AND emial = 'x'")
    assert {Path(v.file).name: v.kept for v in got} == {"full.parquet": True, "ids.parquet": False}
    # Every file reaches the row-group pass: every footer is read, and none has it.
    with pytest.raises(PredicateError, match="no file read has this column"):
        prune_with_index_sync(str(full.parent), "user_id IN (1, 7) AND emial = 'x'")


# ---- Paimon data files ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "types", "forms"),
    [
        ("id = 0x10", {"id": "INT"}, "an INT column takes integers"),
        ("id = 'abc'", {"id": "BIGINT"}, "a BIGINT column takes integers"),
        ("name = 5", {"name": "VARCHAR"}, "a VARCHAR column takes text in single quotes"),
        ("d = '2024/01/05'", {"d": "DATE"}, "a DATE column takes 'YYYY-MM-DD'"),
        ("t = 'noon'", {"t": "TIMESTAMP(3)"}, "a TIMESTAMP(3) column takes 'YYYY-MM-DD"),
        ("b = 'zz' AND b = 1", {"b": "BYTES"}, "a BYTES column takes binary"),
        (col("id") == b"\x10", {"id": "INT"}, "an INT column takes integers"),
    ],
)
def test_paimon_literals_not_of_the_type_are_errors(
    tmp_path: Path, where: object, types: dict[str, str], forms: str
) -> None:
    # Raised before any file is read (the types come with the call), so none needs to exist.
    with pytest.raises(PredicateError, match=r"is not a .* value") as info:
        prune_paimon_sync([tmp_path / "data.orc"], where, types)
    assert forms in str(info.value) and "column '" in str(info.value)


def test_paimon_literals_read_like_parquet_text(tmp_path: Path) -> None:
    types = {"id": "INT", "d": "DATE", "t": "TIMESTAMP(6)", "b": "BYTES", "x": "DOUBLE"}
    wheres = ["id = '42'", "id = 3.0", "d = '2024-01-05'", "t = '2024-01-05T10:00:00.123456789Z'",
              "b = '0xff'", "b = 'text'", "x = 1.5", "id = 300", "id = 1.5"]  # fmt: skip
    for where in wheres:
        (v,) = prune_paimon_sync([tmp_path / "data.orc"], where, types)
        assert v.kept and v.rule is Rule.NO_FILTER, where  # no index: kept


# ---- the text form of a predicate evaluates as the predicate ------------------------------

_UTC = datetime.timezone.utc
_PLUS2 = datetime.timezone(datetime.timedelta(hours=2))
_DAY = datetime.date(2024, 1, 5)
_MOMENT = datetime.datetime(2024, 1, 5, 10, 0)


def _typed_table() -> pa.Table:
    """Ten rows of every column type pruning reads, and a struct leaf."""
    n = 10
    ids = list(range(n))
    return pa.table(
        {
            "i8": pa.array([i - 5 for i in ids], pa.int8()),
            "i16": pa.array([i * 300 for i in ids], pa.int16()),
            "i32": pa.array([i * 7 for i in ids], pa.int32()),
            "i64": pa.array([i * 2**40 for i in ids], pa.int64()),
            "u8": pa.array([i * 25 for i in ids], pa.uint8()),
            "u32": pa.array([2**31 + i for i in ids], pa.uint32()),
            "u64": pa.array([2**63 + i for i in ids], pa.uint64()),
            "f32": pa.array(
                [0.1, 1.5, -0.0, 3e38, 2.5, 16777216.0, 1e-3, 7.0, 0.2, 65504.0], pa.float32()
            ),
            "f64": pa.array([0.1, 1.5, 0.0, 1e300, 2.5, 2.0**53, 1e-3, 7.0, 0.3, 1e39]),
            "f16": pa.array([0.5, 1.5, -0.0, 65504.0, 2.5, 0.1, 1.0, 7.0, 0.25, 3.0], pa.float16()),
            "dec": pa.array([decimal.Decimal(i * 25).scaleb(-2) for i in ids], pa.decimal128(9, 2)),
            "wide": pa.array(
                [decimal.Decimal(10**20 + i).scaleb(-4) for i in ids], pa.decimal128(30, 4)
            ),
            "s": pa.array(["1", "1.5", "abc", "2024-01-05", "0x61", "", "x", "TRUE", "0", "é"]),
            "ls": pa.array([f"k{i}" for i in ids], pa.large_string()),
            "b": pa.array([b"\x00", b"abcd", b"a", b"", b"0x61", b"x", b"y", b"z", b"1", b"2"]),
            "fsb": pa.array([bytes([i]) * 4 for i in ids], pa.binary(4)),
            "flag": pa.array([i % 2 == 0 for i in ids]),
            "d": pa.array([_DAY + datetime.timedelta(days=i) for i in ids], pa.date32()),
            "t_ms": pa.array([datetime.time(10, i) for i in ids], pa.time32("ms")),
            "t_us": pa.array([datetime.time(10, 0, 0, 123456 + i) for i in ids], pa.time64("us")),
            "ts_ms": pa.array(
                [_MOMENT + datetime.timedelta(seconds=i) for i in ids], pa.timestamp("ms")
            ),
            "ts_utc": pa.array(
                [(_MOMENT + datetime.timedelta(microseconds=i)).replace(tzinfo=_UTC) for i in ids],
                pa.timestamp("us", tz="UTC"),
            ),
            "ts_ns": pa.array(
                [_MOMENT + datetime.timedelta(hours=i) for i in ids], pa.timestamp("ns")
            ),
            "u": pa.array([uuid.UUID(int=i).bytes for i in ids], pa.uuid()),
            "dict": pa.array([f"c{i % 3}" for i in ids]).dictionary_encode(),
            "st": pa.array([{"a": i} for i in ids], pa.struct([("a", pa.int64())])),
        }
    )


_COLUMNS = [c for c in _typed_table().column_names if c != "st"] + ["st.a", "ts96"]

#: Literals of every kind, tried on every column: the right kind, the wrong kind, values
#: the column cannot hold, NaN and infinities, and every Python type the text form writes.
_LITERALS: list[object] = [
    None, True, False, 0, 1, -1, 2, 7, 127, 128, 300, -129, 2**31, 2**63, 2**64, 10**20,
    10**400, 0.0, -0.0, 0.1, 0.2, 0.3, 1.5, 2.5, 1e-3, 1e39, 1e300, 3e38, 65504.0, 65520.0,
    16777217.0, 2.0**53 + 1, float("nan"), float("inf"), float("-inf"), decimal.Decimal("0.10"),
    decimal.Decimal("0.25"), decimal.Decimal("1.505"), decimal.Decimal("1E+2"),
    decimal.Decimal("-0"), decimal.Decimal("NaN"), decimal.Decimal("-Infinity"),
    decimal.Decimal("3.4028235E+38"), "1", "1.5", "abc", "2024-01-05", "0x61", "", "TRUE",
    "10:00:00", b"\x00", b"abcd", b"a", _DAY, _MOMENT, _MOMENT.replace(tzinfo=_UTC),
    _MOMENT.replace(tzinfo=_PLUS2), datetime.time(10, 0), datetime.time(10, 0, 0, 123456),
    datetime.time(10, 0, tzinfo=_UTC), uuid.UUID(int=3), uuid.UUID(int=99),
]  # fmt: skip


@pytest.fixture(scope="module")
def typed_files(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Every type in two row groups with filters; an INT96 file where ``f32`` is a DOUBLE."""
    root = tmp_path_factory.mktemp("typed")
    table = _typed_table()
    leaves = [c for c in table.column_names if c != "st"] + ["st.a"]
    main = root / "types.parquet"
    # None for BOOLEAN; sized for a row group's 5 rows (pyarrow's own sizing: 8 s for these).
    filters = {c: {"ndv": 5, "fpp": 0.01} for c in leaves if c != "flag"}
    pq.write_table(table, main, row_group_size=5, bloom_filter_options=filters)
    other = root / "int96.parquet"
    moments = [_MOMENT + datetime.timedelta(microseconds=i) for i in range(4)]
    pq.write_table(
        pa.table(
            {
                "ts96": pa.array(moments, pa.timestamp("ns")),
                "f32": pa.array([0.1, 1e39, 2.5, 65520.0]),
                "i64": pa.array([0, 2**40, 3, 4], pa.int64()),
            }
        ),
        other,
        use_deprecated_int96_timestamps=True,
        bloom_filter_options={"f32": True, "i64": True},
    )
    return [str(main), str(other)]


def _outcome(files: list[str], where: object) -> tuple[object, object]:
    """What prune and lookup answer: the verdicts and rows, or the kind of error."""
    try:
        verdicts: object = [
            (Path(v.file).name, v.row_group, v.kept, v.rule) for v in prune_sync(files, where)
        ]
    except PyBloomError as exc:
        verdicts = type(exc).__name__
    try:
        table = lookup_sync(files, where)
        rows: object = (table.schema, table.to_pydict())
    except PyBloomError as exc:
        rows = type(exc).__name__
    return verdicts, rows


def _leaf(draw: st.DrawFn) -> object:
    column = draw(st.sampled_from(_COLUMNS))
    values = st.sampled_from(_LITERALS)
    kind = draw(st.sampled_from(["=", "<=>", "IN"]))
    if kind == "IN":
        return col(column).isin(draw(st.lists(values, min_size=1, max_size=4)))
    value = draw(values)
    return col(column) == value if kind == "=" else col(column).eq_null_safe(value)


@st.composite
def _predicates(draw: st.DrawFn) -> object:
    leaves = [_leaf(draw) for _ in range(draw(st.integers(1, 3)))]
    out = leaves[0]
    for leaf in leaves[1:]:
        out = (out & leaf) if draw(st.booleans()) else (out | leaf)  # type: ignore[operator]
    return out


@given(_predicates())
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_the_text_form_evaluates_as_the_predicate(typed_files: list[str], where: object) -> None:
    """parse(p.to_text()) prunes and looks up exactly as p, for literals of every kind."""
    assert isinstance(where, (Eq, In, And, Or))
    again = parse_predicate(where.to_text())
    assert _outcome(typed_files, again) == _outcome(typed_files, where), where.to_text()


# ---- every form reads back from its text ----------------------------------------------------


def _any_leaf(draw: st.DrawFn) -> object:
    column = draw(st.sampled_from([*_COLUMNS, "not", "is", "between", "a b", "in"]))
    c = col(column)
    value = draw(st.sampled_from(_LITERALS))
    other = draw(st.sampled_from(_LITERALS))
    kind = draw(st.sampled_from(["=", "<=>", "IN", "NOT IN", "!=", "<", "<=", ">", ">=",
                                 "BETWEEN", "IS NULL", "IS NOT NULL"]))  # fmt: skip
    if kind in ("IN", "NOT IN"):
        inside = c.isin(draw(st.lists(st.sampled_from(_LITERALS), min_size=1, max_size=4)))
        return inside if kind == "IN" else ~inside
    if kind == "BETWEEN":
        return c.between(value, other)
    if kind == "IS NULL":
        return c.is_null()
    if kind == "IS NOT NULL":
        return c.is_not_null()
    if kind == "<=>":
        return c.eq_null_safe(value)
    return Compare(column, kind, value) if kind != "=" else c == value


@st.composite
def _any_predicate(draw: st.DrawFn, depth: int = 0) -> object:
    roll = draw(st.integers(0, 9))
    if depth < 3 and roll < 3:
        parts = [draw(_any_predicate(depth + 1)) for _ in range(draw(st.integers(2, 3)))]
        return And.of(*parts) if roll == 0 else Or.of(*parts)  # type: ignore[arg-type]
    if depth < 3 and roll == 3:
        return Not(draw(_any_predicate(depth + 1)))  # type: ignore[arg-type]
    if depth < 3 and roll == 4:
        return ~draw(_any_predicate(depth + 1))  # type: ignore[operator]
    return _any_leaf(draw)


@given(_any_predicate())
@settings(max_examples=400, deadline=None)
def test_every_form_reads_back_from_its_text(where: object) -> None:
    assert isinstance(where, Predicate)
    text = where.to_text()
    again = parse_predicate(text)
    # Python values come back as the literals the text writes (a date as its quoted text):
    # the same tree, the same text, and that text's own parse is a fixed point.
    # (a float's text reads back as the exact decimal it prints as: 1e+39 as 1E+39).
    assert _shape(again) == _shape(where), text
    fixed = again.to_text()
    assert parse_predicate(fixed).to_text() == fixed
    assert normal_form(parse_predicate(fixed)).to_text() == normal_form(again).to_text()


def _shape(p: object) -> object:
    """The tree's classes, columns and operators, without the literals."""
    if isinstance(p, (And, Or)):
        return (type(p).__name__, tuple(_shape(c) for c in p.children))
    if isinstance(p, Not):
        return ("Not", _shape(p.child))
    return (type(p).__name__, getattr(p, "column", None), getattr(p, "op", None))
