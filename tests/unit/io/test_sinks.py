"""Whole-file writes that readers see complete or not at all (``pybloom_async.io.sinks``)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import anyio
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.servers import S3Server

from pybloom_async import add_bloom_filters_sync, build_index_sync, index_location
from pybloom_async.errors import InvalidArgumentError, SourceError
from pybloom_async.io.objects import open_source
from pybloom_async.io.sinks import (
    remove_if_present,
    temporary_name,
    write_atomic,
    write_local_atomic,
)
from pybloom_async.io.store import StoreOptions


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def test_creates_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    write_atomic(target, b"first")
    assert target.read_bytes() == b"first"
    write_atomic(str(target), [b"sec", b"ond"])
    assert target.read_bytes() == b"second"
    assert _leftovers(tmp_path) == []


def test_a_failing_writer_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "keep.bin"
    target.write_bytes(b"original")

    def half_then_fail(f: IO[bytes]) -> None:
        f.write(b"partial")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        write_local_atomic(target, half_then_fail)
    assert target.read_bytes() == b"original"
    assert _leftovers(tmp_path) == []


def test_a_replaced_file_keeps_its_permissions(tmp_path: Path) -> None:
    target = tmp_path / "mode.bin"
    target.write_bytes(b"x")
    os.chmod(target, 0o640)
    write_atomic(target, b"y")
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640


def test_missing_directory_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="directory does not exist") as info:
        write_atomic(tmp_path / "nope" / "f.bin", b"x")
    assert info.value.path == str(tmp_path / "nope" / "f.bin")


def test_unwritable_directory_is_a_source_error(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root ignores directory permissions")
    locked = tmp_path / "locked"
    locked.mkdir()
    os.chmod(locked, 0o500)
    try:
        with pytest.raises(SourceError, match="write failed"):
            write_atomic(locked / "f.bin", b"x")
    finally:
        os.chmod(locked, 0o700)


def test_temporary_names_are_hidden_and_beside_the_target(tmp_path: Path) -> None:
    final = str(tmp_path / "data.parquet")
    a, b = temporary_name(final), temporary_name(final)
    assert a != b
    assert os.path.dirname(a) == str(tmp_path)
    assert os.path.basename(a).startswith(".data.parquet.") and a.endswith(".tmp")


def test_http_is_read_only() -> None:
    with pytest.raises(InvalidArgumentError, match="read-only"):
        write_atomic("http://127.0.0.1:1/x.parquet", b"x")


@pytest.mark.servers
def test_object_store_put(s3_server: S3Server) -> None:
    url = s3_server.url("sinks/out.bin")
    options = StoreOptions(**s3_server.options)
    write_atomic(url, [b"hello ", b"store"], options=options)

    async def read_back() -> bytes:
        async with open_source(url, options=options) as src:
            return await src.read_range(0, await src.size())

    assert anyio.run(read_back) == b"hello store"


# --------------------------------------------------------------------------- file modes


@pytest.fixture(params=[0o022, 0o077], ids=["umask022", "umask077"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    """The process umask set for the test (restored after it)."""
    mask: int = request.param
    old = os.umask(mask)
    try:
        yield mask
    finally:
        os.umask(old)


def _mode(path: Path | str) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _data_file(path: Path) -> Path:
    pq.write_table(pa.table({"id": pa.array(range(100), pa.int64())}), path)
    return path


def test_a_new_file_is_not_executable(tmp_path: Path, umask: int) -> None:
    target = tmp_path / "new.bin"
    write_atomic(target, b"x")
    assert _mode(target) == 0o666 & ~umask
    write_local_atomic(tmp_path / "new2.bin", lambda f: f.write(b"y"))
    assert _mode(tmp_path / "new2.bin") == 0o666 & ~umask


def test_a_new_index_file_is_not_executable(tmp_path: Path, umask: int) -> None:
    data = _data_file(tmp_path / "d.parquet")
    (build,) = build_index_sync(str(data), ["id"])
    assert build.error is None and build.index == index_location(str(data))
    assert _mode(build.index) == 0o666 & ~umask
    assert _mode(data) == 0o666 & ~umask  # the data file is not touched


def test_add_filters_out_is_not_executable(tmp_path: Path, umask: int) -> None:
    data = _data_file(tmp_path / "d.parquet")
    out = tmp_path / "with_filters.parquet"
    result = add_bloom_filters_sync(data, ["id"], out=out)
    assert result.written
    assert _mode(out) == 0o666 & ~umask


def test_add_filters_in_place_keeps_the_mode(tmp_path: Path, umask: int) -> None:
    data = _data_file(tmp_path / "d.parquet")
    os.chmod(data, 0o640)
    before = data.stat().st_ino
    result = add_bloom_filters_sync(data, ["id"])
    assert result.written and data.stat().st_ino != before  # replaced, not rewritten
    assert _mode(data) == 0o640


@pytest.mark.parametrize("mask", [0o022, 0o077], ids=["umask022", "umask077"])
def test_cli_add_filters_out_mode(tmp_path: Path, mask: int) -> None:
    data = _data_file(tmp_path / "d.parquet")
    out = tmp_path / "out.parquet"
    proc = subprocess.run(
        [sys.executable, "-m", "pybloom_async.apps.cli", "add-filters", str(data),
         "--columns", "id", "--out", str(out)],
        capture_output=True, text=True, timeout=120, umask=mask,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert _mode(out) == 0o666 & ~mask


def test_remove_if_present(tmp_path: Path) -> None:
    """True when the file was there and is gone; False when it was not; HTTP is read-only."""
    target = tmp_path / "a.bin"
    target.write_bytes(b"x")
    assert remove_if_present(str(target)) is True and not target.exists()
    assert remove_if_present(str(target)) is False
    assert remove_if_present(target.as_uri()) is False
    with pytest.raises(InvalidArgumentError, match="read-only"):
        remove_if_present("https://example.org/a.bin")
    (tmp_path / "d").mkdir()
    with pytest.raises(SourceError):
        remove_if_present(str(tmp_path / "d"))  # a folder is not removed
