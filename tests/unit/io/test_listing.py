"""Listing streamed file by file: local walk order and pages, object-store pages and partitions."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import obstore
import pytest

from pybloom_async.errors import SourceNotFoundError
from pybloom_async.io import listing
from pybloom_async.io.listing import iter_parquet_files, list_parquet_files

if TYPE_CHECKING:
    from support.servers import S3Server

pytestmark = pytest.mark.anyio


def touch(path: Path, data: bytes = b"x") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


async def streamed(location: str, **options: Any) -> list[str]:
    return [f.path async for f in iter_parquet_files(location, **options)]


async def test_a_local_directory_streams_in_walk_order(tmp_path: Path) -> None:
    for name in ("z.parquet", "a/b.parquet", "a/C.PARQUET", "_tmp/x.parquet", ".x.parquet",
                 "a/notes.txt", "a/.hidden/y.parquet", "b/_SUCCESS"):  # fmt: skip
        touch(tmp_path / name)
    (tmp_path / "link").symlink_to(tmp_path / "a")  # a link to a directory is not followed
    # A directory's own files first (by name), then each subdirectory's.
    expected = [str(tmp_path / n) for n in ("z.parquet", "a/C.PARQUET", "a/b.parquet")]
    assert await streamed(str(tmp_path)) == expected
    assert [f.path for f in await list_parquet_files(tmp_path)] == expected
    infos = [f async for f in iter_parquet_files(str(tmp_path), identities=False)]
    assert [(f.size, f.etag) for f in infos] == [(1, None)] * 3


async def test_local_names_come_back_whole(tmp_path: Path) -> None:
    """Names of every shape come back as written, sorted: one character, prefixes of
    one another, spaces, non-ASCII (wide) characters, and bytes that are not UTF-8."""
    names = ["b.parquet", "a b.parquet", "ab.parquet", "a.parquet", "é.parquet",
             "日本.parquet", "😀.parquet", "x" * 200 + ".parquet"]  # fmt: skip
    for name in names:
        touch(tmp_path / name)
    raw = os.fsencode(tmp_path) + b"/\xff\xfe.parquet"  # undecodable: a surrogate escape
    with open(raw, "wb") as f:
        f.write(b"x")
    names.append(os.fsdecode(b"\xff\xfe.parquet"))
    got = await streamed(str(tmp_path))
    assert got == [str(tmp_path / n) for n in sorted(names)]
    assert [os.path.getsize(p) for p in got] == [1] * len(names)


async def test_the_first_local_file_comes_before_the_directory_is_read_to_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for i in range(1000):
        touch(tmp_path / f"f{i:04d}.parquet")
    stats: list[str] = []
    real_stat = os.stat

    def counting_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if str(path).endswith(".parquet"):
            stats.append(str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", counting_stat)
    files = iter_parquet_files(str(tmp_path), identities=False)
    first = await files.__anext__()
    assert first.path == str(tmp_path / "f0000.parquet")
    # One page of files looked at, not the 1,000 of the directory.
    assert len(stats) <= 256
    rest = [f async for f in files]
    assert len(rest) == 999 and len(stats) == 1000


async def test_a_missing_local_path_still_says_so(tmp_path: Path) -> None:
    with pytest.raises(SourceNotFoundError):
        await streamed(str(tmp_path / "nope"))


@pytest.mark.servers
async def test_hive_partitions_are_listed_concurrently_in_key_order(
    s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = f"hive-{uuid.uuid4().hex}/t"
    keys = [
        "a=1/x.parquet", "a=1/y.parquet", "a=1/z.parquet", "a=1.parquet", "a=10/y.parquet",
        "a=2/_tmp/z.parquet", "a=2/w.parquet", "a=2/v.txt", "_SUCCESS", "b=3/c=4/q.parquet",
    ]  # fmt: skip
    for key in keys:
        s3_server.put(f"{root}/{key}", b"x")
    expected = sorted(
        s3_server.url(f"{root}/{k}") for k in keys if k.endswith(".parquet") and "/_" not in k
    )
    assert expected[:2] == [
        s3_server.url(f"{root}/a=1.parquet"),
        s3_server.url(f"{root}/a=1/x.parquet"),
    ]
    location = s3_server.url(f"{root}/")
    # One page holds everything: read as it comes.
    assert await streamed(location, **s3_server.options) == expected
    calls: list[str] = []
    real = obstore.list_with_delimiter

    def spy(store: Any, prefix: str | None = None, **kwargs: Any) -> Any:
        calls.append(prefix or "")
        return real(store, prefix, **kwargs)

    # A full first page in subfolders: it comes first (up to a=1/y), then the subfolders
    # are listed two at a time, a=1/ from where the page ended.
    monkeypatch.setattr(listing, "PAGE_SIZE", 4)
    monkeypatch.setattr(listing, "PARTITIONS_AHEAD", 2)
    monkeypatch.setattr(obstore, "list_with_delimiter", spy)
    assert await streamed(location, **s3_server.options) == expected
    assert calls == [root]
    with pytest.raises(SourceNotFoundError, match="no objects under this prefix"):
        await streamed(s3_server.url(f"{root}-nothing/"), **s3_server.options)
