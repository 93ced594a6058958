"""Verdicts handed over file by file (``on_file``), in file order, with bounded buffering."""

from __future__ import annotations

from pathlib import Path

import anyio
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pybloom_async.errors import PredicateError
from pybloom_async.index.build import build_index
from pybloom_async.index.prune import prune_with_index
from pybloom_async.pruning.api import prune, prune_sync
from pybloom_async.pruning.verdicts import Rule, Verdict
from pybloom_async.tasks.workers import AHEAD_PER_WORKER, for_each


def write_lake(root: Path, files: int) -> list[Path]:
    """File f holds ids f*100 .. f*100+99 in four row groups, with a filter on id."""
    root.mkdir()
    paths = []
    for f in range(files):
        path = root / f"part-{f:02d}.parquet"
        ids = pa.array(range(f * 100, f * 100 + 100), pa.int64())
        pq.write_table(
            pa.table({"id": ids}), path, row_group_size=25, bloom_filter_options={"id": True}
        )
        paths.append(path)
    return paths


@pytest.mark.anyio
async def test_for_each_delivers_in_order_and_holds_back_a_bounded_number() -> None:
    limit, count = 3, 60
    window = AHEAD_PER_WORKER * limit
    started: list[int] = []
    got: list[int] = []
    before_first_done: list[int] = []

    async def work(i: int) -> int:
        started.append(i)
        if i == 0:  # the first item is slow: the others finish first, and wait for it
            with anyio.fail_after(5):
                while len(started) < window:
                    await anyio.sleep(0.001)
            await anyio.sleep(0.05)
            before_first_done.extend(started)
        return i

    out = await for_each(range(count), work, limit, on_result=got.append)
    assert out == []
    assert got == list(range(count))
    # While item 0 was running, nothing beyond the window started.
    assert max(before_first_done) == window - 1
    assert len(started) == count


@pytest.mark.anyio
async def test_for_each_raises_the_error_of_on_result() -> None:
    class Stop(Exception):
        pass

    def refuse(result: int) -> None:
        if result == 2:
            raise Stop

    async def work(i: int) -> int:
        return i

    with pytest.raises(Stop):
        await for_each(range(10), work, 2, on_result=refuse)


@pytest.mark.anyio
async def test_prune_on_file_gives_the_verdicts_of_prune(tmp_path: Path) -> None:
    write_lake(tmp_path / "lake", 12)
    (tmp_path / "lake" / "part-05b.parquet").write_bytes(b"not parquet")
    where = "id IN (5, 310, 777)"
    expected = await prune(str(tmp_path / "lake"), where, concurrency=2)
    batches: list[list[Verdict]] = []
    assert await prune(str(tmp_path / "lake"), where, concurrency=2, on_file=batches.append) == []
    assert [v for batch in batches for v in batch] == expected
    assert len(batches) == 13 and all(len({v.file for v in b}) == 1 for b in batches)
    assert any(v.rule is Rule.UNREADABLE for v in expected)


def test_prune_sync_on_file_on_local_files(tmp_path: Path) -> None:
    """The blocking path (local files, no loop) hands verdicts over like prune() does."""
    paths = [str(p) for p in write_lake(tmp_path / "lake", 4)]
    expected = prune_sync(paths, "id IN (5, 310)")
    batches: list[list[Verdict]] = []
    assert prune_sync(paths, "id IN (5, 310)", on_file=batches.append) == []
    assert [v for batch in batches for v in batch] == expected
    assert [b[0].file for b in batches] == paths and all(len(b) == 4 for b in batches)


@pytest.mark.anyio
async def test_a_missing_column_raises_before_any_verdict_is_handed_over(tmp_path: Path) -> None:
    write_lake(tmp_path / "lake", 3)
    batches: list[list[Verdict]] = []
    with pytest.raises(PredicateError, match="no file read has this column"):
        await prune(str(tmp_path / "lake"), "nope = 1", on_file=batches.append)
    assert batches == []


@pytest.mark.anyio
async def test_prune_with_index_on_file_gives_its_verdicts_in_file_order(tmp_path: Path) -> None:
    paths = write_lake(tmp_path / "lake", 8)
    # Indexes for the even files only: the odd ones have none (kept, then row groups).
    await build_index([str(p) for p in paths[::2]], ["id"])
    where = "id IN (5, 450)"
    expected = await prune_with_index(str(tmp_path / "lake"), where, concurrency=3)
    index_verdicts: list[Verdict] = []
    batches: list[list[Verdict]] = []
    got = await prune_with_index(
        str(tmp_path / "lake"),
        where,
        concurrency=3,
        on_file=batches.append,
        index_verdicts=index_verdicts,
    )
    assert got == []
    assert [v for batch in batches for v in batch] == expected
    assert len(index_verdicts) == 8
    # Files the indexes pruned are file verdicts, between the row groups of the others.
    rules = [(Path(b[0].file).name, b[0].row_group is None) for b in batches]
    assert [name for name, _ in rules] == [p.name for p in paths]
    assert any(file_level for _, file_level in rules)
    assert not all(file_level for _, file_level in rules)
