"""Files read as they are listed: the stream, its duplicate check, and prune over it."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pybloom_async.errors import SourceError, SourceNotFoundError
from pybloom_async.index.build import build_index
from pybloom_async.index.prune import prune_with_index
from pybloom_async.io.base import FileInfo
from pybloom_async.io.files import FileStream, expand_paths, once_each, stream_paths
from pybloom_async.pruning.api import prune
from pybloom_async.pruning.verdicts import Verdict
from pybloom_async.read.reader import BloomReader
from pybloom_async.tasks.workers import for_each

pytestmark = pytest.mark.anyio


def write(path: Path, start: int = 0) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    ids = pa.array(range(start, start + 10), pa.int64())
    pq.write_table(pa.table({"id": ids}), path, bloom_filter_options={"id": {"ndv": 10}})
    return str(path)


async def paths_of(stream: FileStream) -> list[str]:
    return [f.path if isinstance(f, FileInfo) else f async for f in stream]


async def test_each_file_once_without_a_set_of_the_listing(tmp_path: Path) -> None:
    d = tmp_path / "d"
    a, b, c = write(d / "a.parquet"), write(d / "b.parquet"), write(d / "sub" / "c.parquet")
    (d / "0link.parquet").symlink_to(d / "b.parquet")  # met before b: it comes, b does not
    (d / "zlink.parquet").symlink_to(d / "a.parquet")  # met after a: it does not come
    (tmp_path / "out.parquet").symlink_to(d / "sub" / "c.parquet")
    inputs = [str(d), str(d / "sub"), a, str(tmp_path / "out.parquet"), str(d / "." / "b.parquet")]
    stream = stream_paths(inputs, BloomReader())
    assert await paths_of(stream) == [str(d / "0link.parquet"), a, c]
    # expand_paths gives them as a list; a file named first keeps its spelling.
    listed = await expand_paths([b, str(d)], BloomReader())
    assert [f.path if isinstance(f, FileInfo) else f for f in listed] == [b, a, c]


async def test_every_spelling_of_one_file_is_one_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A separator twice, ``.``, a relative path, a ``file://`` URL: the same file."""
    d = tmp_path / "d"
    a, b = write(d / "a.parquet"), write(d / "b.parquet")
    monkeypatch.chdir(tmp_path)
    spellings = [
        str(d) + "//a.parquet",
        str(d) + "/./a.parquet",
        os.path.join("d", "a.parquet"),
        "file://" + a,
        "file://localhost" + a,
        "file://" + str(d) + "//a.parquet",
    ]
    for other in spellings:
        assert await paths_of(stream_paths([a, other], BloomReader())) == [a], other
        assert once_each([a, other]) == [a], other
        assert once_each([FileInfo(other, 1), a]) == [FileInfo(other, 1)], other
        # Through a directory, spelled either way, before or after the file.
        for root in (str(d) + "/", str(d) + "//", "file://" + str(d) + "/"):
            listed = await paths_of(stream_paths([other, root], BloomReader()))
            assert [os.path.realpath(p) for p in listed[1:]] == [b], (other, root)
            assert listed[0] == other
            listed = await paths_of(stream_paths([root, other], BloomReader()))
            assert [os.path.realpath(p) for p in listed] == [a, b], (other, root)
    # Object-store URLs are compared as written: "k" and "/k" are two keys.
    assert once_each(["s3://bucket/k.parquet", "s3://bucket//k.parquet"]) == [
        "s3://bucket/k.parquet",
        "s3://bucket//k.parquet",
    ]
    assert once_each(["ftp://h/a.parquet"] * 2) == ["ftp://h/a.parquet"]  # reading it says why


def test_links_at_every_level_of_the_folders_are_one_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Folders are resolved from their parents' real paths (each once): a file reached
    through a linked folder at any depth, after its siblings resolved its parents, or
    through ``..`` past a link, is the file its real path names."""
    real = tmp_path / "real"
    a = write(real / "x" / "y" / "a.parquet")
    write(real / "x" / "y" / "b.parquet")
    (tmp_path / "top").symlink_to(real)  # the first level a link
    (real / "x" / "ylink").symlink_to(real / "x" / "y")  # the last level a link
    (real / "x" / "up").symlink_to(real / "x" / "y")  # "up/.." is y's parent, not x
    monkeypatch.chdir(tmp_path)
    spellings = [
        str(real / "x" / "y" / "b.parquet"),  # a sibling first: its parents resolved
        str(tmp_path / "top" / "x" / "y" / "a.parquet"),
        str(real / "x" / "ylink" / "a.parquet"),
        str(tmp_path / "top" / "x" / "ylink" / "a.parquet"),
        os.path.join("top", "x", "y", "a.parquet"),
        str(real / "x" / "up" / ".." / "y" / "a.parquet"),
    ]
    assert once_each(spellings) == spellings[:2]
    assert once_each([a, *spellings]) == [a, spellings[0]]
    for spelled in spellings:
        assert os.path.realpath(spelled) in (a, str(real / "x" / "y" / "b.parquet"))


async def test_unreadable_inputs_are_handed_over_as_the_stream_meets_them(tmp_path: Path) -> None:
    a = write(tmp_path / "d" / "a.parquet")
    (tmp_path / "empty").mkdir()
    met: list[SourceError] = []
    stream = stream_paths(
        [str(tmp_path / "gone"), str(tmp_path / "d"), str(tmp_path / "empty")],
        BloomReader(),
        unreadable=met.append,
    )
    assert await paths_of(stream) == [a]
    assert [type(e) for e in met] == [SourceNotFoundError, SourceNotFoundError]
    assert "no Parquet files" in str(met[1]) and met[1].path == str(tmp_path / "empty")
    with pytest.raises(SourceNotFoundError):
        await paths_of(stream_paths([str(tmp_path / "gone")], BloomReader()))


async def gated(files: list[str], gate: anyio.Event) -> AsyncIterator[str]:
    """The first file, then the rest once ``gate`` is set: a listing that is still going."""
    yield files[0]
    await gate.wait()
    for f in files[1:]:
        yield f


async def test_prune_hands_over_verdicts_before_the_listing_ends(tmp_path: Path) -> None:
    files = [write(tmp_path / f"{i}.parquet", 10 * i) for i in range(3)]
    gate = anyio.Event()
    seen: list[list[Verdict]] = []

    def on_file(verdicts: list[Verdict]) -> None:
        seen.append(verdicts)
        gate.set()  # the listing goes on only once a verdict is out

    with anyio.fail_after(30):
        await prune(FileStream(gated(files, gate)), "id = 15", on_file=on_file)
    assert [v[0].file for v in seen] == files
    assert [v[0].kept for v in seen] == [False, True, False]


async def test_prune_with_index_runs_both_passes_while_the_listing_goes_on(
    tmp_path: Path,
) -> None:
    files = [write(tmp_path / f"{i}.parquet", 10 * i) for i in range(4)]
    await build_index([files[0], files[2]], ["id"])  # 1 and 3 have none: kept, read
    gate = anyio.Event()
    seen: list[Verdict] = []
    index_verdicts: list[Verdict] = []

    def on_file(verdicts: list[Verdict]) -> None:
        seen.extend(verdicts)
        gate.set()

    with anyio.fail_after(30):
        await prune_with_index(
            FileStream(gated(files, gate)),
            "id IN (15, 25)",
            on_file=on_file,
            index_verdicts=index_verdicts,
        )
    # In file order: 0 pruned by its index, 1 by its row group, 2 kept, 3 pruned.
    assert [(v.file, v.row_group, v.kept) for v in seen] == [
        (files[0], None, False), (files[1], 0, True), (files[2], 0, True), (files[3], 0, False),
    ]  # fmt: skip
    assert [v.rule.value for v in index_verdicts] == [
        "sidecar_index", "no_index", "may_match", "no_index",
    ]  # fmt: skip


async def test_a_typo_in_a_column_still_raises_through_the_index(tmp_path: Path) -> None:
    files = [write(tmp_path / f"{i}.parquet", 10 * i) for i in range(2)]
    await build_index(files, ["id"])
    from pybloom_async.errors import PredicateError

    with pytest.raises(PredicateError, match="no file read has this column"):
        await prune_with_index(files, "idd = 3")


async def test_for_each_over_a_stream_reports_the_items_taken_as_the_total() -> None:
    async def items() -> AsyncIterator[int]:
        for i in range(5):
            yield i

    progress: list[tuple[int, int]] = []

    async def double(x: int) -> int:
        return 2 * x

    got = await for_each(items(), double, 2, lambda d, t: progress.append((d, t)))
    assert got == [0, 2, 4, 6, 8]
    assert [d for d, _ in progress] == [1, 2, 3, 4, 5]
    assert all(d <= t <= 5 for d, t in progress) and progress[-1] == (5, 5)


def test_a_stream_starts_its_workers_as_items_come() -> None:
    # A stream of one item (then a wait) must not start `limit` tasks up front: a
    # lookup prunes each file through a one-file stream.
    import asyncio

    from pybloom_async.tasks.workers import for_each

    alive: list[int] = []

    async def main() -> None:
        release = anyio.Event()

        async def items() -> AsyncIterator[int]:
            yield 1
            await release.wait()

        async def work(item: int) -> int:
            alive.append(len(asyncio.all_tasks()))
            release.set()
            return item

        baseline = len(asyncio.all_tasks())
        assert await for_each(items(), work, 64) == [1]
        alive.append(baseline)

    anyio.run(main)
    working, baseline = alive
    assert working - baseline <= 2, alive  # the worker with the item, one waiting for the next


def test_links_are_one_file_with_their_targets(tmp_path: Path) -> None:
    """Every way of linking to a file names it once (as ``os.path.realpath`` says), and
    distinct files stay distinct: relative and absolute links, chains, links through a
    linked folder, ``..`` in a target, and dangling links."""
    import os

    from pybloom_async.io.files import once_each

    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    a, b = data / "a.parquet", data / "sub" / "b.parquet"
    a.write_bytes(b"a")
    b.write_bytes(b"b")
    lake = tmp_path / "lake"
    lake.mkdir()
    (tmp_path / "linked").symlink_to(data)  # a linked folder
    links = {
        "rel": "../data/a.parquet",
        "abs": str(a),
        "dots": "../data/sub/../a.parquet",
        "via": "../linked/sub/b.parquet",
        "gone": "../data/missing.parquet",
    }
    for name, target in links.items():
        os.symlink(target, lake / f"{name}.parquet")
    os.symlink("rel.parquet", lake / "chain.parquet")  # a link to a link
    os.symlink("chain2.parquet", lake / "loop1.parquet")
    os.symlink("loop1.parquet", lake / "chain2.parquet")  # a loop
    names = [*sorted(str(p) for p in lake.iterdir()), str(a), str(b)]
    kept = once_each(names)
    expected: dict[str, str] = {}
    for name in names:
        expected.setdefault(os.path.realpath(name), name)
    assert kept == list(expected.values())
