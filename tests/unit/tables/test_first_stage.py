"""The first stage's literals: a plain value only where the comparison is exact."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

import pytest

from pybloom_async.predicate import Eq, In, parse_predicate
from pybloom_async.predicate_tokens import TextLiteral
from pybloom_async.tables import table_kind
from pybloom_async.tables.values import UNKNOWN, leaf_values, may_match, plain_value


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
