"""File identity: one form from stat, fstat and store metadata."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import pytest

from pybloom_async.errors import SourceError
from pybloom_async.io.base import SourceIdentity as FromBase
from pybloom_async.io.identity import (
    SourceIdentity,
    local_identity,
    meta_identity,
    mtime_ns,
    stat_identity,
    store_etag,
)


def test_stat_and_fstat_give_the_same_exact_identity(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    path.write_bytes(b"PAR1")
    os.utime(path, ns=(1_700_000_000_123_456_789, 1_700_000_000_123_456_789))
    st = os.stat(path)
    by_path = stat_identity(str(path))
    fd = os.open(path, os.O_RDONLY)
    try:
        by_fd = local_identity(str(path), os.fstat(fd))
    finally:
        os.close(fd)
    assert by_path == by_fd
    assert by_path.size == 4
    assert by_path.mtime_ns == 1_700_000_000_123_456_789
    assert by_path.inode == (st.st_dev, st.st_ino)
    assert mtime_ns(by_path) == 1_700_000_000_123_456_789
    assert store_etag(by_path) == ""  # a local file's tag is synthetic: never recorded


def test_one_nanosecond_is_another_version(tmp_path: Path) -> None:
    path = tmp_path / "f.parquet"
    path.write_bytes(b"PAR1")
    os.utime(path, ns=(1_700_000_000_000_000_001, 1_700_000_000_000_000_001))
    before = stat_identity(str(path))
    os.utime(path, ns=(1_700_000_000_000_000_002, 1_700_000_000_000_000_002))
    assert stat_identity(str(path)) != before


def test_store_identity_from_metadata() -> None:
    when = dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.timezone.utc)
    identity = meta_identity("s3://b/k", {"size": 10, "e_tag": '"abc"', "last_modified": when})
    assert identity == SourceIdentity("s3://b/k", 10, '"abc"', when)
    assert identity.mtime_ns is None and identity.inode is None
    assert mtime_ns(identity) == int(when.timestamp()) * 1_000_000_000 + 123_456_000
    assert store_etag(identity) == '"abc"'
    naive = SourceIdentity("x", 1, None, when.replace(tzinfo=None))
    assert mtime_ns(naive) == mtime_ns(identity)
    assert mtime_ns(SourceIdentity("x", 1, None, None)) == 0
    assert store_etag(SourceIdentity("x", 1, None, None)) == ""


@pytest.mark.parametrize("size", [-1, "10", None])
def test_store_metadata_with_a_bad_size_is_refused(size: object) -> None:
    with pytest.raises(SourceError, match="invalid size"):
        meta_identity("s3://b/k", {"size": size})


def test_the_io_base_name_is_the_same_class() -> None:
    assert FromBase is SourceIdentity
