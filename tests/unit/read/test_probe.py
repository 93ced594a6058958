"""Filters probed where they lie (read.probe.probe_in_place): any source's filters that
its footer's read holds, in that memory; a filter outside it, only from a local file."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pybloom_async import ReaderConfig
from pybloom_async.core.hashing import hash_values
from pybloom_async.io.base import SourceStats
from pybloom_async.io.local import BlockingLocalFileSource
from pybloom_async.io.memory import MemorySource
from pybloom_async.read.fetch import read_footer_from
from pybloom_async.read.probe import ABSENT, MAY, Probe, probe_in_place
from pybloom_async.types import PhysicalType

CONFIG = ReaderConfig()


def _file() -> bytes:
    """4 row groups of ids, a filter on ``id`` in each, the filters before the footer."""
    ids = pa.array(range(0, 8000, 2), pa.int64())
    buf = io.BytesIO()
    pq.write_table(
        pa.table({"id": ids, "v": pa.array(range(4000), pa.int32())}),
        buf,
        row_group_size=1000,
        bloom_filter_options={"id": {"ndv": 1000, "fpp": 0.01}},
    )
    return buf.getvalue()


def _probes(footer: Any, keys: list[int]) -> list[Probe]:
    hashes = np.asarray(hash_values(keys, PhysicalType.INT64), dtype=np.uint64)
    out = []
    for group in footer.metadata.chunks_of([0]):
        chunk = group.columns[0]
        assert chunk.bloom_filter_offset is not None and chunk.bloom_filter_length
        out.append(
            Probe(chunk.bloom_filter_offset, chunk.bloom_filter_length, hashes, 0, len(keys))
        )
    return out


def _footer(source: Any, suffix: int) -> Any:
    async def read() -> Any:
        return await read_footer_from(source, CONFIG, suffix)

    return anyio.run(read)


def _local_answers(path: Path, keys: list[int]) -> list[int] | None:
    """A local file's answers, its filters read where they lie (not in the footer's read)."""

    async def run() -> list[int] | None:
        local = BlockingLocalFileSource(str(path), stats=SourceStats())
        try:
            footer = await read_footer_from(local, CONFIG, 64)  # the footer alone
            assert footer.tail_start > min(p.offset for p in _probes(footer, keys))
            return probe_in_place(local, footer, _probes(footer, keys), CONFIG.plan)
        finally:
            await local.aclose()

    return anyio.run(run)


def test_a_stores_filters_held_by_its_footers_read_are_probed_there(tmp_path: Path) -> None:
    data = _file()
    path = tmp_path / "f.parquet"
    path.write_bytes(data)
    memory = MemorySource(data, path="memory")
    held = _footer(memory, len(data))  # the suffix read took every filter
    for keys, expected in (([2], [MAY, ABSENT, ABSENT, ABSENT]), ([7001], [ABSENT] * 4)):
        reads = memory.stats.requests
        assert probe_in_place(memory, held, _probes(held, keys), CONFIG.plan) == expected
        assert memory.stats.requests == reads  # nothing read
        assert _local_answers(path, keys) == expected  # as a local file's filters answer


def test_a_stores_filter_outside_its_footers_read_is_left_to_the_planned_reads() -> None:
    memory = MemorySource(_file(), path="memory")
    footer = _footer(memory, 64)  # the footer alone
    assert footer.tail_start > min(p.offset for p in _probes(footer, [2]))
    reads = memory.stats.requests
    assert probe_in_place(memory, footer, _probes(footer, [2]), CONFIG.plan) is None
    assert memory.stats.requests == reads
