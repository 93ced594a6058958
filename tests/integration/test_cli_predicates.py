"""The command line's predicates, through the console script: typed values and syntax errors.

A value the user typed wrong is an error (exit 2, one line naming the file, column, value
and the forms the column takes), never an empty answer with exit 0; a well-formed value the
column cannot hold rules row groups out. Syntax errors name no parser token and say what
is supported.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest


def cli(*argv: str) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pybloom_async.apps.cli", *argv],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return proc.returncode, proc.stdout, proc.stderr


def one_line_error(err: str) -> str:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("pybloom-async: error: "), err
    return err


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``full.parquet`` with typed columns, ``ids.parquet`` with ``user_id`` only."""
    folder = tmp_path_factory.mktemp("lake")
    table = pa.table(
        {
            "user_id": pa.array([1, 2, 3], pa.int64()),
            "email": ["a@x", "b@x", "x"],
            "d": pa.array([dt.date(2024, 1, 5)] * 3, pa.date32()),
            "small": pa.array([1, 2, 3], pa.int8()),
            "price": pa.array([Decimal("1.50")] * 3, pa.decimal128(9, 2)),
        }
    )
    pq.write_table(table, folder / "full.parquet",
                   bloom_filter_options={c: True for c in table.column_names})  # fmt: skip
    pq.write_table(pa.table({"user_id": pa.array([7], pa.int64())}), folder / "ids.parquet",
                   bloom_filter_options={"user_id": True})  # fmt: skip
    return folder


@pytest.mark.parametrize(
    ("where", "column", "shown", "forms"),
    [
        ("d = '2024/01/05'", "d", "'2024/01/05'", "a DATE column takes 'YYYY-MM-DD'"),
        ("user_id = 'abc'", "user_id", "'abc'", "an INT64 column takes integers"),
        ("user_id = 0x10", "user_id", "X'10'", "an INT64 column takes integers"),
        ("email = 5", "email", "5", "a STRING column takes text in single quotes"),
    ],
)
@pytest.mark.parametrize("flags", [[], ["--strict"], ["--json"]])
def test_a_value_not_of_the_columns_type_exits_2(
    lake: Path, where: str, column: str, shown: str, forms: str, flags: list[str]
) -> None:
    code, out, err = cli("prune", str(lake / "full.parquet"), "--where", where, *flags)
    assert code == 2 and out == "", (code, out, err)
    err = one_line_error(err)
    assert f"{shown} is not a value of this column" in err and forms in err
    assert f"file {lake / 'full.parquet'}" in err and f"column {column!r}" in err


def test_probe_and_use_index_read_values_alike(lake: Path) -> None:
    code, _, err = cli("probe", str(lake / "full.parquet"), "-c", "d", "--value", "2024-01-05",
                       "--value", "2024/01/05")  # fmt: skip
    assert code == 2 and "a DATE column takes 'YYYY-MM-DD'" in one_line_error(err)
    code, _, err = cli("index", "build", str(lake), "--columns", "user_id")
    assert code == 0, err
    code, _, err = cli("prune", str(lake), "--use-index", "--where", "user_id = 'abc'")
    assert code == 2 and "'abc' is not a value of this column" in one_line_error(err)


def test_paimon_values_not_of_the_type_exit_2(tmp_path: Path) -> None:
    code, _, err = cli("prune", str(tmp_path / "data.orc"), "--where", "id = 0x10",
                       "--paimon-types", "id=INT")  # fmt: skip
    assert code == 2 and "an INT column takes integers" in one_line_error(err)


def test_a_value_the_column_cannot_hold_rules_row_groups_out(lake: Path) -> None:
    code, out, err = cli("prune", str(lake / "full.parquet"), "--where",
                         "small = 300 OR price = 1.505", "--json", "--strict")  # fmt: skip
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["kept"] is False and row["rule"] == "type"
    assert "300 is outside INT(8)'s range" in row["reason"]


def test_columns_no_file_has_and_columns_some_files_lack(lake: Path) -> None:
    code, out, err = cli("prune", str(lake), "--where", "emial = 'x'")
    assert code == 2 and out == ""
    err = one_line_error(err)
    assert "no file read has this column; the 2 files have: " in err and "column 'emial'" in err
    assert "user_id" in err and "email" in err and "price" in err
    code, out, err = cli("prune", str(lake), "--where", "email = 'x'", "--json")
    assert code == 0, err
    rules = {Path(r["file"]).name: (r["kept"], r["rule"]) for r in json.loads(out)}
    assert rules == {"full.parquet": (True, "may_match"), "ids.parquet": (True, "missing_column")}


def test_ranges_and_negations_prune_and_look_up(lake: Path) -> None:
    """Every form of the text grammar at the command line, agreeing with the col() form."""
    from pybloom_async import col, lookup_sync

    full = lake / "full.parquet"
    for where, python, rows, kept in [
        ("small > 300", col("small") > 300, 0, False),  # by type: INT(8) holds none
        ("small < 300 AND user_id != 2", (col("small") < 300) & (col("user_id") != 2), 2, True),
        ("small BETWEEN 2 AND 3", col("small").between(2, 3), 2, True),
        ("small NOT BETWEEN 1 AND 3", ~col("small").between(1, 3), 0, False),
        ("NOT (d >= '2024-01-05' OR email IS NULL)", ~((col("d") >= "2024-01-05")
                                                       | col("email").is_null()), 0, False),
        ("email NOT IN ('a@x', NULL)", ~col("email").isin(["a@x", None]), 0, True),
        ("price <= 1.5 AND email IS NOT NULL", (col("price") <= 1.5)
         & col("email").is_not_null(), 3, True),
        ("email >= 'b' AND email < 'y'", (col("email") >= "b") & (col("email") < "y"), 2, True),
    ]:  # fmt: skip
        code, out, err = cli("prune", str(full), "--where", where, "--json")
        assert code == 0, err
        (row,) = json.loads(out)
        assert row["kept"] is kept, (where, row)
        code, out, err = cli("lookup", str(full), "--where", where, "--format", "json")
        assert code == 0, err
        assert len(json.loads(out)) == rows, where
        assert lookup_sync(str(full), python).num_rows == rows, where


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (
            "id MATCHES 3",
            "MATCHES is not supported (at position 3 of 'id MATCHES 3'); supported: =, <=>, "
            "!= (<>), <, <=, >, >=, [NOT] IN (...), [NOT] BETWEEN ... AND ..., IS [NOT] NULL, "
            "combined with NOT, AND, OR and parentheses",
        ),
        ("id BETWEEN 1 OR 3", "expected AND between the two bounds of BETWEEN at position 13"),
        ("id IS 3", "expected NULL or NOT NULL after IS"),
        ("id ! 3", "unsupported operator '!' at position 3 in 'id ! 3'; write NOT"),
        ('email = "x"', "double quotes quote column names; text goes in single quotes: 'x'"),
        ("id = 1 AND", "expected a column name at the end of 'id = 1 AND'"),
        ("id IN (1, 2", "expected ',' or ')' in the IN list at the end of 'id IN (1, 2'"),
        ("a = 1 && b = 2", "'&&' at position 6 in 'a = 1 && b = 2'; write AND"),
    ],
)
def test_syntax_errors_exit_2_in_the_users_language(lake: Path, where: str, expected: str) -> None:
    code, out, err = cli("prune", str(lake), "--where", where)
    assert code == 2 and out == ""
    err = one_line_error(err)
    assert expected in err
    for token in ("ident", "rparen", "lparen", "comma", "TextLiteral"):
        assert token not in err
