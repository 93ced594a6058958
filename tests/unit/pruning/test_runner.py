"""The run setup: one reader per run, its limit, per-file forgetting and the final clear."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pybloom_async.errors import InvalidArgumentError
from pybloom_async.io.base import SourceStats
from pybloom_async.pruning.runner import for_each, open_run
from pybloom_async.read.fetch import ReaderConfig
from pybloom_async.read.reader import BloomReader


class CountingReader(BloomReader):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.forgotten: list[object] = []
        self.cleared = 0

    def forget(self, location: Any) -> None:
        self.forgotten.append(location)
        super().forget(location)

    def clear(self) -> None:
        self.cleared += 1
        super().clear()


@pytest.fixture
def data_file(tmp_path: Path) -> str:
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"id": pa.array(range(10), pa.int64())}), path)
    return str(path)


@pytest.mark.anyio
async def test_the_run_made_reader_forgets_each_file_and_is_cleared(
    data_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cleared: list[BloomReader] = []
    original = BloomReader.clear

    def clear(self: BloomReader) -> None:
        cleared.append(self)
        original(self)

    monkeypatch.setattr(BloomReader, "clear", clear)
    stats = SourceStats()
    async with open_run(config=ReaderConfig(concurrency=7), stats=stats) as run:
        assert run.owned and run.limit == 7
        assert run.reader.stats is stats and run.reader.max_files == 1 << 20
        await run.reader.footer(data_file)
        requests = stats.requests
        await run.reader.footer(data_file)
        assert stats.requests == requests  # cached while the file is being decided
        run.done(data_file)
        await run.reader.footer(data_file)
        assert stats.requests > requests  # forgotten once decided: read again
    assert cleared == [run.reader]


@pytest.mark.anyio
async def test_a_callers_reader_keeps_its_cache(data_file: str) -> None:
    reader = CountingReader()
    async with open_run(reader=reader, concurrency=3, default_concurrency=9) as run:
        assert run.reader is reader and not run.owned and run.limit == 3
        run.done(data_file)
    assert reader.forgotten == [] and reader.cleared == 0


@pytest.mark.anyio
async def test_limits_and_their_checks() -> None:
    async with open_run(default_concurrency=5, max_files=0) as run:
        assert run.limit == 5 and run.reader.max_files == 0
    async with open_run() as run:
        assert run.limit == ReaderConfig().concurrency
    for bad in (0, -1, True, 1.5):
        with pytest.raises(InvalidArgumentError, match="concurrency"):
            async with open_run(concurrency=bad):
                pass  # pragma: no cover


@pytest.mark.anyio
@pytest.mark.parametrize("streamed", [False, True])
async def test_an_unexpected_error_is_raised_as_itself(streamed: bool) -> None:
    """Never a bare exception group: the first failure cancels the rest and is raised."""

    async def work(item: int) -> int:
        if item == 3:
            raise ValueError("unexpected")
        await anyio.sleep(0)
        return item

    async def stream() -> AsyncIterator[int]:
        for i in range(10):
            yield i

    items: Any = stream() if streamed else list(range(10))
    with pytest.raises(ValueError, match="unexpected"):
        await for_each(items, work, 4)
    with pytest.raises(ValueError, match="unexpected"):
        await for_each(stream() if streamed else list(range(10)), work, 4, on_result=print)
