"""The planned files read at once (rows/fetch.read_ahead: ``lookup_batches`` and the lookup
command): parts in file order, at most READ_AHEAD_FILES files and READ_AHEAD_BYTES of kept
row groups each, one file at a time when asked (--limit), files without kept row groups
left out."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import aclosing
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from pybloom_async import PyBloomError, lookup_batches
from pybloom_async.rows import fetch
from pybloom_async.rows.fetch import READ_AHEAD_BYTES, READ_AHEAD_FILES, read_ahead

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _plan(name: str, kept: list[int], sizes: list[int]) -> Any:
    groups = [SimpleNamespace(total_byte_size=size) for size in sizes]
    return SimpleNamespace(name=name, kept=kept, metadata=SimpleNamespace(row_groups=groups))


def _names(parts: list[list[Any]]) -> list[list[str]]:
    return [[plan.name for plan in part] for part in parts]


def test_parts_keep_file_order_and_their_bounds() -> None:
    small = [_plan(f"f{i}", [0], [1_000]) for i in range(READ_AHEAD_FILES + 3)]
    parts = read_ahead(small, READ_AHEAD_FILES)
    assert [len(p) for p in parts] == [READ_AHEAD_FILES, 3]
    assert [name for part in _names(parts) for name in part] == [p.name for p in small]
    half = READ_AHEAD_BYTES // 2
    large = [
        _plan("a", [0, 1], [half, half]),  # its kept row groups fill a part alone
        _plan("pruned", [], [half]),  # nothing kept: not read
        _plan("b", [1], [10, half]),
        _plan("c", [0], [half]),
        _plan("d", [0], [1]),
        _plan("huge", [0], [3 * READ_AHEAD_BYTES]),  # above the bound: a part of its own
    ]
    parts = read_ahead(large, READ_AHEAD_FILES)
    assert _names(parts) == [["a"], ["b", "c"], ["d"], ["huge"]]
    assert _names(read_ahead(large, 1)) == [["a"], ["b"], ["c"], ["d"], ["huge"]]


def _files(root: Path, n: int) -> list[str]:
    """``n`` files of ids ``10 * i`` .. ``10 * i + 9``, snappy, one row group each."""
    paths = []
    for i in range(n):
        path = root / f"part-{i}.parquet"
        ids = pa.array(range(10 * i, 10 * i + 10), pa.int64())
        pq.write_table(pa.table({"id": ids, "s": [f"v{k}" * 20 for k in range(10)]}), path)
        paths.append(str(path))
    return paths


@pytest.mark.anyio
@pytest.mark.parametrize("inline", [False, True])
async def test_batches_read_files_at_once_in_file_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, anyio_backend: str, inline: bool
) -> None:
    """On the event loop (file URLs: not local paths only) files overlap as tasks; local
    paths run inline in a worker thread, and files that prove slow spread over the run's
    threads."""
    import time

    from pybloom_async import ReaderConfig

    paths = _files(tmp_path, 8)
    at_once, most = 0, 0
    real = fetch.planned_file_tables

    async def counted(reader: Any, plan: Any, job: Any) -> AsyncGenerator[Any, None]:
        nonlocal at_once, most
        at_once += 1
        most = max(most, at_once)
        try:
            if inline:
                time.sleep(0.01)  # a slow file
            else:
                await anyio.sleep(0.01)
            async with aclosing(real(reader, plan, job)) as tables:
                async for table in tables:
                    yield table
        finally:
            at_once -= 1

    monkeypatch.setattr(fetch, "planned_file_tables", counted)
    where = "id IN (1, 21, 45, 59, 33, 71)"
    sources = paths if inline else [Path(p).as_uri() for p in paths]
    config = ReaderConfig(local_threads=2)
    got = [b async for b in lookup_batches(sources, where, config=config)]
    assert [r["id"] for b in got for r in b.to_pylist()] == [1, 21, 33, 45, 59, 71]
    assert most > 1  # several files were read at once


@pytest.mark.anyio
async def test_a_file_that_fails_is_skipped_in_its_place_or_raised(
    tmp_path: Path, anyio_backend: str
) -> None:
    paths = _files(tmp_path, 4)
    data = bytearray(Path(paths[2]).read_bytes())
    for at in range(8, 200):  # its data page, not its footer: planned, then unreadable
        data[at] ^= 0x5A
    Path(paths[2]).write_bytes(bytes(data))
    where = "id IN (1, 11, 21, 31)"
    skipped: list[PyBloomError] = []
    got = [b async for b in lookup_batches(paths, where, on_error="skip", skipped=skipped)]
    assert [r["id"] for b in got for r in b.to_pylist()] == [1, 11, 31]
    assert [Path(e.path or "").name for e in skipped] == ["part-2.parquet"]
    with pytest.raises(PyBloomError, match=r"part-2\.parquet"):
        _ = [b async for b in lookup_batches(paths, where)]
