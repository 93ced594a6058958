"""The differential test's oracle, on hand-written cases: its rules are the documented ones.

The oracle decides what every entry point must answer, so its semantics are pinned here
(SQL's NULL rules, the docs' NaN and -0.0 rules, exact literal values, timestamps), and so
are the generator's determinism and the reproduction it prints.
"""

from __future__ import annotations

import datetime as dt
import math
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from support.differential import generate_case, reproduction
from support.differential.checks import Failure, text_predicate
from support.differential.oracle import Domain, literal_keys, truth

from pybloom_async import col
from pybloom_async.predicate import Eq, Predicate

UTC = dt.timezone.utc
INT = Domain("int")
F32 = Domain("float", width="f")
F64 = Domain("float", width="d")


def _holds(p: Predicate, value: Any, domain: Domain) -> bool | None:
    return truth(p, {"x": value}, {"x": domain})


@pytest.mark.parametrize(
    ("predicate", "value", "domain", "expected"),
    [
        (col("x") == 1, None, INT, None),  # NULL = 1 is unknown
        (col("x") == None, 1, INT, None),  # noqa: E711 - the predicate, not a comparison
        (col("x").eq_null_safe(None), None, INT, True),
        (col("x").eq_null_safe(None), 1, INT, False),
        (col("x").eq_null_safe(1), None, INT, False),
        (col("x").isin([1, None]), 1, INT, True),
        (col("x").isin([1, None]), 2, INT, None),  # no match, a NULL in the list: unknown
        (col("x").isin([1, 2]), 3, INT, False),
        ((col("x") == 1) | (col("x") == None), 1, INT, True),  # noqa: E711
        ((col("x") == 2) & (col("x") == None), 1, INT, False),  # noqa: E711
        (col("x") == 3.0, 3, INT, True),  # exact values: 3.0 is the integer 3
        (col("x") == Decimal("2.5"), 2, INT, False),
        (col("x") == 2**64, 2**64 - 1, INT, False),
        (col("x") == 0.0, -0.0, F64, True),
        (col("x") == -0.0, 0.0, F32, True),
        (col("x") == math.nan, math.nan, F64, False),  # NaN equals nothing,
        (col("x").eq_null_safe(math.nan), math.nan, F64, False),  # not even through <=>
        (col("x") == 0.1, 0.10000000149011612, F32, True),  # a float: its text, rounded
        (col("x") == 0.1, 0.1, F64, True),
        (col("x") == Decimal("0.1"), 0.10000000149011612, F32, True),  # a decimal rounds
        (col("x") == Decimal("1e39"), math.inf, F32, False),  # beyond FLOAT: nothing
        (col("x") == math.inf, math.inf, F32, True),
    ],
)
def test_sql_and_documented_rules(
    predicate: Predicate, value: Any, domain: Domain, expected: bool | None
) -> None:
    assert _holds(predicate, value, domain) is expected


def test_literal_forms_of_temporal_values() -> None:
    day = Domain("date")
    assert literal_keys(dt.date(1970, 1, 2), day) == literal_keys("1970-01-02", day) == {1}
    utc, local = Domain("timestamp", utc=True), Domain("timestamp", utc=False)
    aware = dt.datetime(1970, 1, 1, 1, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    assert literal_keys(aware, utc) == {0}  # an instant
    assert literal_keys(aware, local) == {0, 3600 * 10**9}  # wall clock or instant
    assert literal_keys("1970-01-01T00:00:00.000000001Z", utc) == {1}
    assert literal_keys("1970-01-01 00:00:01", utc) == {10**9}  # naive on UTC: UTC
    assert literal_keys("00:00:01.5", Domain("time")) == {1_500_000_000}


def test_the_text_form_reads_a_double_as_its_decimal_text() -> None:
    text = text_predicate(col("x") == 0.1)
    assert isinstance(text, Eq) and text.value == Decimal("0.1")
    # The same number either way: the FLOAT nearest to one tenth.
    assert _holds(col("x") == 0.1, 0.10000000149011612, F32) is True
    assert _holds(text, 0.10000000149011612, F32) is True


I8 = Domain("int")
DEC = Domain("decimal")
TEXT = Domain("string")


@pytest.mark.parametrize(
    ("predicate", "value", "domain", "expected"),
    [
        (col("x") < 300, 127, I8, True),  # a value the column cannot hold orders by its value
        (col("x") > 300, 127, I8, False),
        (col("x") < 2.5, 2, I8, True),
        (col("x") < 2.5, 3, I8, False),
        (col("x") < Decimal("1.505"), Decimal("1.50"), DEC, True),
        (col("x") <= Decimal("1.499"), Decimal("1.50"), DEC, False),
        (col("x") < 1, None, INT, None),  # NULL is unknown...
        (~(col("x") < 1), None, INT, None),  # ... and so is its NOT
        (col("x") != 1, None, INT, None),
        (col("x") != 1, math.nan, F64, True),  # NaN is unequal to everything
        (col("x") < 1, math.nan, F64, False),  # and in no range
        (~(col("x") < 1), math.nan, F64, True),
        (col("x") < math.nan, 0.0, F64, False),
        (col("x") < 0.0, -0.0, F64, False),  # -0.0 = 0.0
        (col("x") < 1e39, math.inf, F32, False),  # beyond FLOAT: above every finite value
        (col("x") < 1e39, 3.4028234663852886e38, F32, True),
        (col("x") < 1e-46, 0.0, F32, False),  # 1e-46's nearest FLOAT is 0.0
        (col("x").between(1, 3), 3, INT, True),
        (col("x").between(3, 1), 2, INT, False),
        (~col("x").between(1, 3), 4, INT, True),
        (col("x").between(None, 3), 4, INT, False),  # unknown AND false
        (~col("x").between(None, 3), 4, INT, True),
        (~col("x").isin([1, None]), 2, INT, None),  # NOT IN with a NULL: never true
        (~col("x").isin([1, 2]), 3, INT, True),
        (~col("x").eq_null_safe(1), None, INT, True),
        (col("x").is_not_null(), None, INT, False),
        (col("x") < "é", "z", TEXT, True),  # code points: z (U+7A) < é (U+E9)
        (col("x") > "\U0001f986", "\uffff", TEXT, False),
    ],
)
def test_ranges_and_negations(
    predicate: Predicate, value: Any, domain: Domain, expected: bool | None
) -> None:
    assert _holds(predicate, value, domain) is expected


def test_an_aware_timestamp_has_no_place_in_a_local_time_column() -> None:
    from support.differential.oracle import LiteralTypeError, check_literals

    aware = dt.datetime(1970, 1, 1, tzinfo=UTC)
    local, utc = Domain("timestamp", utc=False), Domain("timestamp", utc=True)
    with pytest.raises(LiteralTypeError):
        check_literals(col("x") < aware, {"x": local})
    check_literals(col("x") < aware, {"x": utc})
    check_literals(col("x") != aware, {"x": local})  # = and != take either reading
    assert _holds(col("x") <= aware, 0, utc) is True


def test_cases_are_the_same_for_a_seed_and_differ_between_seeds() -> None:
    assert generate_case(7) == generate_case(7)
    assert generate_case(7) != generate_case(8)


@pytest.mark.parametrize("check", ["prune", "lookup_sync", "sidecar", "lake_lookup"])
def test_the_reproduction_is_a_script_that_runs(
    check: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = generate_case(1)  # a lake with an index plan: every kind of call can be printed
    assert case.index is not None
    script = reproduction(case, Failure(check, "an example"), frozenset())
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    namespace: dict[str, Any] = {"__name__": "repro"}
    exec(compile(script, "repro.py", "exec"), namespace)  # writes the files, makes the call
    assert namespace["where"].to_text() == case.predicate.to_text()
    written = {p.name for p in tmp_path.glob("*/lake/*.parquet")}
    assert written >= {f.name for f in case.files} - {case.files[case.index.target].name}


def test_folders_keep_the_outermost_value_and_read_escapes_as_writers_write_them() -> None:
    import pyarrow as pa
    from support.differential.evolution import shortest_float32
    from support.differential.folders import folder_types, folder_values, ruled_out_by_folder
    from support.differential.write import folder_name

    twice = (("a", "1"), ("a", "2"))
    types = folder_types([twice, (("a", "3"),)])
    assert types == {"a": pa.int64()}
    assert folder_values(twice, types) == {"a": 1}  # as DuckDB and pyarrow read it
    assert ruled_out_by_folder(col("a") == 2, twice, types)
    assert not ruled_out_by_folder(col("a") == 1, twice, types)
    # Given types: only the keys named are partition columns, the outermost value still wins.
    given = folder_types([(("a", "007"), ("b", "x"), ("a", "1"))], {"a": "string"})
    assert folder_values((("a", "007"), ("b", "x"), ("a", "1")), given) == {"a": "007"}
    odd = "x%y/ü =z"
    assert folder_name("k", odd, "uri") == "k=x%25y%2F%C3%BC%20%3Dz"  # pyarrow's escaping
    assert folder_name("k", odd) == "k=x%25y%2Fü %3Dz"  # Hive's: spaces and ü as they are
    assert folder_values((("k", odd),), {"k": pa.string()}) == {"k": odd}
    assert shortest_float32(0.10000000149011612) == 0.1
