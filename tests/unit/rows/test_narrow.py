"""A file's IN lists narrowed by its kept row groups' filters: the same rows, shorter lists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pybloom_async import col, lookup_sync
from pybloom_async.predicate import In, iter_leaves
from pybloom_async.rows import narrow

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _write(path: Path, ids: list[int | None], filters: bool = True, **kwargs: Any) -> None:
    table = pa.table({"id": pa.array(ids, pa.int64()), "s": [f"s{i}" for i in range(len(ids))]})
    options = {"id": {"ndv": 100, "fpp": 0.01}} if filters else None
    pq.write_table(table, path, row_group_size=100, bloom_filter_options=options, **kwargs)


@pytest.fixture
def lists(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """The IN lists each file's rows are matched against."""
    seen: list[list[int]] = []
    real = narrow.narrowed_where

    async def spy(file: Any, plan: Any, where: Any) -> Any:
        out = await real(file, plan, where)
        seen.append([len(p.values) for p in iter_leaves(out) if isinstance(p, In)])
        return out

    monkeypatch.setattr(narrow, "narrowed_where", spy)
    return seen


def test_an_in_list_is_cut_to_what_the_kept_row_groups_may_hold(
    tmp_path: Path, lists: list[list[int]]
) -> None:
    _write(tmp_path / "a.parquet", list(range(0, 400)))
    _write(tmp_path / "b.parquet", list(range(1000, 1400)))
    keys = [5, 250, 1010, *range(5000, 5100)]  # 100 absent keys beside three present
    # Under an OR the rows are not matched on a key: the list is evaluated on every row.
    where = In("id", tuple(keys)) | (col("s") == "absent")
    got = lookup_sync(str(tmp_path), where)
    assert sorted(got.column("id").to_pylist()) == [5, 250, 1010]
    assert len(lists) == 2 and all(n < 10 for (n,) in lists), lists


def test_a_list_the_rows_are_matched_on_is_not_cut(tmp_path: Path, lists: list[list[int]]) -> None:
    """Rows matched on the list's key (``rows/keyed.py``) keep the run's own list: the
    matcher finds a row among 100 keys as fast as among 3, and the run prepares it once."""
    _write(tmp_path / "a.parquet", list(range(0, 400)))
    _write(tmp_path / "b.parquet", list(range(1000, 1400)))
    keys = [5, 250, 1010, *range(5000, 5100)]
    got = lookup_sync(str(tmp_path), In("id", tuple(keys)))
    assert sorted(got.column("id").to_pylist()) == [5, 250, 1010]
    got = lookup_sync(str(tmp_path), In("id", tuple(keys)) & (col("s") != "s5"))
    assert sorted(got.column("id").to_pylist()) == [250, 1010]
    assert lists == [[103], [103], [103], [103]]


def test_nulls_and_an_or_keep_their_meaning_when_no_value_is_left(
    tmp_path: Path, lists: list[list[int]]
) -> None:
    """A file whose filters rule out every value of the list: its NULLs stay unknown for
    the list, so only the other side of the OR selects them."""
    ids: list[int | None] = [None if i % 10 == 0 else i for i in range(300)]
    _write(tmp_path / "a.parquet", ids)
    where = "id IN (5000, 5001, 5002) OR s = 's10'"
    got = lookup_sync(str(tmp_path / "a.parquet"), where)
    assert got.to_pylist() == [{"id": None, "s": "s10"}]
    assert lists == [[0]]
    got = lookup_sync(str(tmp_path / "a.parquet"), "id IN (5000, 5001) OR id IS NULL")
    assert got.num_rows == 30


def test_a_kept_row_group_without_a_filter_keeps_the_whole_list(
    tmp_path: Path, lists: list[list[int]]
) -> None:
    _write(tmp_path / "a.parquet", list(range(300)), filters=False)
    got = lookup_sync(str(tmp_path / "a.parquet"), "id IN (7, 8, 9000) OR s = 'absent'")
    assert sorted(got.column("id").to_pylist()) == [7, 8]
    assert lists == [[3]]


@pytest.mark.parametrize(
    ("where", "want", "length"),
    [
        ("id IN (7, 8, 9000) OR id IS NULL", [7, 8], 2),
        ("id IN (7, 300000000000) OR id IS NULL", [7], 2),
    ],
)
def test_an_int32_column_and_values_beyond_it(
    tmp_path: Path, lists: list[list[int]], where: str, want: list[int], length: int
) -> None:
    """An INT32 column's values are hashed as 4 bytes; a value beyond the type leaves the
    list as it is (it can match no row either way)."""
    table = pa.table({"id": pa.array(range(300), pa.int32())})
    path = tmp_path / "a.parquet"
    pq.write_table(table, path, row_group_size=100, bloom_filter_options={"id": True})
    got = lookup_sync(str(path), where)
    assert sorted(got.column("id").to_pylist()) == want
    assert lists == [[length]]
