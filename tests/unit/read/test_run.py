"""The run setup: one reader per run, its limit, per-file forgetting and the final clear."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pybloom_async.errors import InvalidArgumentError
from pybloom_async.io.base import SourceStats
from pybloom_async.read.fetch import ReaderConfig
from pybloom_async.read.reader import BloomReader
from pybloom_async.read.run import RunKeywords, RunOptions, open_run


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
async def test_the_run_made_reader_caches_nothing_by_default_and_is_cleared(
    data_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cleared: list[BloomReader] = []
    original = BloomReader.clear

    def clear(self: BloomReader) -> None:
        cleared.append(self)
        original(self)

    monkeypatch.setattr(BloomReader, "clear", clear)
    stats = SourceStats()
    # Each file's work reads what it needs in one Run.with_file call: nothing to cache.
    async with open_run(RunOptions(config=ReaderConfig(concurrency=7), stats=stats)) as run:
        assert run.owned and run.limit == 7
        assert run.reader.stats is stats and run.reader.max_files == 0
    assert cleared == [run.reader]
    # Asked to, it caches while a file is being decided, and forgets it when done.
    async with open_run(RunOptions(stats=stats), max_files=1 << 20) as run:
        await run.reader.footer(data_file)
        requests = stats.requests
        await run.reader.footer(data_file)
        assert stats.requests == requests  # cached while the file is being decided
        run.done(data_file)
        await run.reader.footer(data_file)
        assert stats.requests > requests  # forgotten once decided: read again


@pytest.mark.anyio
async def test_a_callers_reader_keeps_its_cache(data_file: str) -> None:
    reader = CountingReader()
    async with open_run(RunOptions(reader=reader, concurrency=3), default_concurrency=9) as run:
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
            async with open_run(RunOptions(concurrency=bad)):
                pass  # pragma: no cover


# ---- the per-file hop and the run options ----------------------------------------------


def _lake(tmp_path: Path, n: int) -> list[str]:
    paths = []
    for i in range(n):
        path = tmp_path / f"part-{i:02d}.parquet"
        table = pa.table({"id": pa.array(range(i * 1000, i * 1000 + 400), pa.int64())})
        pq.write_table(table, path, row_group_size=100, bloom_filter_options={"id": {}})
        paths.append(str(path))
    return paths


@pytest.mark.anyio
async def test_a_local_file_costs_one_worker_thread_hand_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Open, stat, tail, footer, filters, probes (and for a lookup, the rows) of one local
    file run in one worker-thread call, however many reads they make."""
    from pybloom_async import col, lookup, prune
    from pybloom_async.tasks import loops

    paths = _lake(tmp_path, 12)
    calls: list[object] = []
    original = loops.in_thread

    async def counting(function: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(function)
        return await original(function, *args, **kwargs)

    monkeypatch.setattr(loops, "in_thread", counting)
    where = col("id").isin([5, 3005, 7005, 11399])
    verdicts = await prune(paths, where)
    assert sum(v.kept for v in verdicts) >= 4
    # At most one each: a lane's thread takes file after file in one call.
    assert 1 <= len(calls) <= len(paths)
    calls.clear()
    rows = await lookup(paths, where)
    assert sorted(rows.column("id").to_pylist()) == [5, 3005, 7005, 11399]
    assert 1 <= len(calls) <= len(paths)
    calls.clear()
    await prune(str(tmp_path), where)  # listed: the listing's pages cost a hand-off each
    assert len(calls) <= len(paths) + 2


def test_the_run_options_are_written_once() -> None:
    """No public entry point spells out the run's option block: they take ``run=`` and
    ``**keywords: Unpack[RunKeywords]``, whose names are exactly RunOptions' fields."""
    import dataclasses
    import inspect
    from typing import get_type_hints

    import pybloom_async as pba

    # Its fields, and strict, the deprecated form of on_error (init-only).
    block = {f.name for f in dataclasses.fields(RunOptions)} | {"strict"}
    assert set(get_type_hints(RunKeywords)) == block
    takers = []
    for name in pba.__all__:
        obj = getattr(pba, name)
        if not callable(obj) or isinstance(obj, type):
            continue
        parameters = inspect.signature(obj).parameters
        spelled = block & set(parameters) - {"strict"}  # on_error's deprecated form
        assert len(spelled) <= 1, f"{name} spells out run options: {sorted(spelled)}"
        if "run" in parameters:
            takers.append(name)
            assert parameters["keywords"].kind is inspect.Parameter.VAR_KEYWORD, name
    assert {"prune", "lookup", "pruned_dataset", "build_index", "build_lake_index"} <= set(takers)


def test_the_lookup_options_are_written_once() -> None:
    """No entry point spells out the lookup's knobs: they take ``lookup=`` and its fields as
    keyword arguments (``LookupOptionsKeywords``, inside ``LookupKeywords``)."""
    import dataclasses
    import inspect
    from typing import get_type_hints

    import pybloom_async as pba
    from pybloom_async.rows.api import plan_lookup
    from pybloom_async.rows.arguments import LookupKeywords, LookupOptionsKeywords

    knobs = {f.name for f in dataclasses.fields(pba.LookupOptions)}
    assert set(get_type_hints(LookupOptionsKeywords)) == knobs
    assert set(get_type_hints(LookupKeywords)) == knobs | set(get_type_hints(RunKeywords))
    takers = [pba.lookup, pba.lookup_batches, pba.lookup_sync, plan_lookup]
    for function in takers:
        parameters = inspect.signature(function).parameters
        assert not knobs & set(parameters), function
        assert "lookup" in parameters and "on_error" not in parameters, function


@pytest.mark.anyio
async def test_keywords_beside_run_options_win_and_unknown_ones_are_refused(
    tmp_path: Path,
) -> None:
    from pybloom_async import col, prune

    paths = _lake(tmp_path, 2)
    counted = SourceStats()
    run = RunOptions(stats=SourceStats(), concurrency=1)
    await prune(paths, col("id") == 5, run=run, stats=counted)
    assert counted.requests > 0 and run.stats is not None and run.stats.requests == 0
    with pytest.raises(TypeError, match="unexpected keyword argument 'concurency'"):
        await prune(paths, col("id") == 5, concurency=2)  # type: ignore[call-arg]
    with pytest.raises(InvalidArgumentError, match="run must be a RunOptions"):
        await prune(paths, col("id") == 5, run={"strict": True})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="strict"):
        RunOptions(strict="yes")  # type: ignore[arg-type]


@pytest.mark.anyio
@pytest.mark.parametrize("streamed", [False, True])
async def test_an_unexpected_error_is_raised_as_itself(streamed: bool) -> None:
    """Never a bare exception group: the first failure cancels the rest and is raised."""
    from collections.abc import AsyncIterator

    import anyio

    from pybloom_async.tasks.workers import for_each

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


@pytest.mark.anyio
async def test_stats_beside_a_reader_count_the_runs_requests(tmp_path: Path) -> None:
    """stats= with reader=: the run's requests are counted in both (they stayed at 0), for
    prune, lookup and pruned_dataset alike."""
    from pybloom_async import col, lookup, prune, pruned_dataset

    paths = _lake(tmp_path, 2)
    reader = BloomReader(max_files=0)
    counted = SourceStats()
    await prune(paths, col("id") == 5, reader=reader, stats=counted)
    assert counted.requests > 0 and counted.metadata_requests > 0
    own = reader.stats
    assert (counted.requests, counted.bytes_read) == (own.requests, own.bytes_read)
    again = SourceStats()
    table = await lookup(paths, col("id") == 5, reader=reader, stats=again)
    assert table.num_rows == 1 and again.requests > 0
    assert reader.stats.requests == counted.requests + again.requests
    dataset = SourceStats()
    kept = await pruned_dataset(paths, col("id") == 5, reader=reader, stats=dataset)
    assert kept.to_table().num_rows == 100 and dataset.requests > 0
    assert reader.stats.requests == counted.requests + again.requests + dataset.requests
    async with open_run(RunOptions(reader=reader, stats=reader.stats)) as run:
        assert run.reader is reader  # its own stats: nothing to add


def test_stats_beside_a_reader_count_in_every_entry_point(tmp_path: Path) -> None:
    """Every entry point that takes a run counts its requests in the run's ``stats`` when a
    ``reader`` is given too, as many as the reader's own stats count for that call."""
    import pybloom_async as pba

    paths = _lake(tmp_path, 2)
    root = str(tmp_path)
    calls: dict[str, Any] = {
        "build_index": lambda **run: pba.build_index_sync(paths, ["id"], **run),
        "prune_with_index": lambda **run: pba.prune_with_index_sync(paths, "id = 5", **run),
        "build_lake_index": lambda **run: pba.build_lake_index_sync(root, ["id"], **run),
        "prune (lake)": lambda **run: pba.prune_sync(root, "id = 5", **run),
        "lookup (lake)": lambda **run: pba.lookup_sync(root, "id = 5", **run),
        "compact_lake_index": lambda **run: pba.compact_lake_index_sync(root, **run),
        "read_footer": lambda **run: pba.read_footer_sync(paths[0], **run),
        "read_bloom_filters": lambda **run: pba.read_bloom_filters_sync(paths[0], **run),
        "probe": lambda **run: pba.probe_sync(paths[0], "id", 5, **run),
    }
    for name, call in calls.items():
        reader = BloomReader(max_files=0)
        counted = SourceStats()
        call(reader=reader, stats=counted)
        own = reader.stats
        assert counted.requests + counted.metadata_requests > 0, name
        assert (counted.requests, counted.metadata_requests, counted.bytes_read) == (
            own.requests,
            own.metadata_requests,
            own.bytes_read,
        ), name
