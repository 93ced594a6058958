"""The first stage's literals: a plain value only where the comparison is exact."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.predicates import truth

from pybloom_async.predicate import (
    Between,
    Compare,
    Eq,
    In,
    IsNotNull,
    IsNull,
    Not,
    NotIn,
    Predicate,
    TextLiteral,
    normal_form,
    parse_predicate,
)
from pybloom_async.tables import table_kind
from pybloom_async.tables.values import (
    UNKNOWN,
    leaf_values,
    may_hold_for_value,
    may_hold_within,
    may_match,
    plain_value,
)


@pytest.mark.parametrize(
    ("value", "kind", "expected"),
    [
        (5, "long", 5),
        (TextLiteral("-12"), "long", -12),
        (True, "long", UNKNOWN),  # a bool is not an integer here
        (5.0, "long", UNKNOWN),
        (Decimal("5"), "long", UNKNOWN),
        (128, "byte", UNKNOWN),  # out of range: the later stages decide
        (-128, "byte", -128),
        (1 << 31, "integer", UNKNOWN),
        (TextLiteral("1e3"), "long", UNKNOWN),
        ("a", "string", "a"),
        (TextLiteral("a"), "string", "a"),
        (b"a", "string", UNKNOWN),
        (datetime.date(2024, 1, 5), "date", datetime.date(2024, 1, 5)),
        (TextLiteral("2024-01-05"), "date", datetime.date(2024, 1, 5)),
        (TextLiteral("2024-02-30"), "date", UNKNOWN),
        (datetime.datetime(2024, 1, 5), "date", UNKNOWN),
        (1.5, "double", UNKNOWN),  # floats never rule a file out here (NaN, -0.0)
        (TextLiteral("2024-01-05 00:00:00"), "timestamp", UNKNOWN),
        (True, "boolean", True),
    ],
)
def test_plain_value(value: Any, kind: str, expected: Any) -> None:
    assert plain_value(value, kind) == expected or plain_value(value, kind) is expected


def test_leaf_values_leave_nulls_out_and_give_up_on_one_unknown() -> None:
    assert leaf_values(In("c", (1, None, 2)), "long") == [1, 2]
    assert leaf_values(In("c", (1, 2.5)), "long") is None
    assert leaf_values(Eq("c", None), "long") == []


def test_may_match_follows_and_or() -> None:
    where = parse_predicate("a = 1 AND (b = 2 OR c = 3)")
    cannot = {"a"}
    assert not may_match(where, lambda leaf: leaf.column not in cannot)
    cannot = {"b"}
    assert may_match(where, lambda leaf: leaf.column not in cannot)
    cannot = {"b", "c"}
    assert not may_match(where, lambda leaf: leaf.column not in cannot)


def test_table_kind_needs_no_import() -> None:
    assert table_kind("s3://bucket/t") is None
    assert table_kind(["a.parquet"]) is None


def test_the_package_imports_no_table_library() -> None:
    import subprocess
    import sys

    code = (
        "import sys, pybloom_async, pybloom_async.tables, pybloom_async.rows.api; "
        "print(sorted(m for m in ('deltalake', 'pyiceberg') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# ---- every form, on a partition value and within statistics ---------------------------------

_LITERALS = st.one_of(st.none(), st.integers(-4, 4), st.sampled_from([2.5, TextLiteral("1")]))


@st.composite
def _leaves(draw: st.DrawFn) -> Predicate:
    """A normal form's leaf over column ``c``: any comparison, or NOT of an ordering."""
    form = draw(st.sampled_from(["=", "<=>", "IN", "NOT IN", "!=", "<", "<=", ">", ">=",
                                 "BETWEEN", "IS NULL", "IS NOT NULL", "NOT <", "NOT BETWEEN",
                                 "NOT <=>"]))  # fmt: skip
    value, other = draw(_LITERALS), draw(_LITERALS)
    values = tuple(draw(st.lists(_LITERALS, min_size=1, max_size=3)))
    leaf: Predicate
    if form in ("IN", "NOT IN"):
        leaf = In("c", values) if form == "IN" else NotIn("c", values)
    elif form in ("IS NULL", "IS NOT NULL"):
        leaf = IsNull("c") if form == "IS NULL" else IsNotNull("c")
    elif form.endswith("BETWEEN"):
        leaf = Between("c", value, other)
    elif form.endswith("<=>"):
        leaf = Eq("c", value, null_safe=True)
    elif form == "=":
        leaf = Eq("c", value)
    else:
        leaf = Compare("c", form.removeprefix("NOT "), value)
    return normal_form(Not(leaf)) if form.startswith("NOT ") and form != "NOT IN" else leaf


def _value_of(column: str, literal: Any) -> Any:
    return int(literal.text) if isinstance(literal, TextLiteral) else literal


@given(_leaves(), st.one_of(st.none(), st.integers(-5, 5)))
@settings(max_examples=600, deadline=None)
def test_a_partition_value_keeps_every_file_where_the_leaf_may_hold(
    leaf: Predicate, value: int | None
) -> None:
    holds = truth(leaf, {"c": value}, _value_of) is True
    assert may_hold_for_value(leaf, "long", value) or not holds, leaf


@given(_leaves(), st.lists(st.one_of(st.none(), st.integers(-5, 5)), min_size=1, max_size=4))
@settings(max_examples=600, deadline=None)
def test_statistics_keep_every_file_where_the_leaf_may_hold(
    leaf: Predicate, values: list[int | None]
) -> None:
    present = [v for v in values if v is not None]
    low, high = (min(present), max(present)) if present else (None, None)
    nulls = len(values) - len(present)
    holds = any(truth(leaf, {"c": v}, _value_of) is True for v in values)
    kept = may_hold_within(leaf, "long", low, high, not present, nulls)
    assert kept or not holds, (leaf, values)


def test_first_stage_decides_what_it_can() -> None:
    assert not may_hold_for_value(Compare("c", "<", 3), "long", 3)
    assert may_hold_for_value(Compare("c", "<=", 3), "long", 3)
    assert not may_hold_for_value(Compare("c", "<", 3), "long", None)  # NULL: unknown
    assert not may_hold_for_value(normal_form(Not(Compare("c", "<", 3))), "long", None)
    assert may_hold_for_value(normal_form(Not(Eq("c", 3, null_safe=True))), "long", None)
    assert not may_hold_for_value(NotIn("c", (1, None)), "long", 2)
    assert may_hold_for_value(Compare("c", ">", 2.5), "long", 1)  # not certain: kept
    assert may_hold_for_value(Compare("c", "<", "b"), "boolean", True)  # no order: kept
    assert not may_hold_within(Compare("c", ">", 9), "long", 0, 9, False, 0)
    assert not may_hold_within(Compare("c", "!=", 4), "long", 4, 4, False, 3)
    assert may_hold_within(Compare("c", "!=", 4), "long", 4, 5, False, 0)
    assert not may_hold_within(normal_form(Not(Between("c", 0, 9))), "long", 0, 9, False, 2)
    assert not may_hold_within(IsNotNull("c"), "long", None, None, True, 5)
    assert not may_hold_within(Between("c", 5, 3), "long", 0, 9, False, 0)
