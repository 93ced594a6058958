"""File identity: one form from stat, fstat and store metadata."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

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
    version_change,
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


def _same_size_twin(path: Path, data: bytes) -> bytes:
    """Other bytes of the same length as the file's."""
    other = bytes(b ^ 0xFF for b in data)
    assert len(other) == len(path.read_bytes())
    return other


def _recorded(identity: SourceIdentity) -> dict[str, Any]:
    """What an index records of a file (the fields of both index formats)."""
    return {
        "size": identity.size,
        "etag": store_etag(identity) or None,
        "mtime": mtime_ns(identity),
        "inode": identity.inode[1] if identity.inode else None,
        "ctime": identity.ctime_ns,
    }


def test_a_local_file_is_the_same_version_only_with_its_inode_and_change_time(
    tmp_path: Path,
) -> None:
    path = tmp_path / "f.parquet"
    path.write_bytes(b"PAR1 one PAR1")
    built = stat_identity(str(path))
    assert version_change(stat_identity(str(path)), **_recorded(built)) is None
    st = os.stat(path)
    # Written in place at the same size, its time set back (cp -p over it): same inode.
    with open(path, "r+b") as f:
        f.write(_same_size_twin(path, path.read_bytes()))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    now = stat_identity(str(path))
    assert (now.size, now.mtime_ns, now.inode) == (built.size, built.mtime_ns, built.inode)
    assert now != built and now.etag != built.etag  # the reader's cache sees it
    assert "change time" in (version_change(now, **_recorded(built)) or "")
    # Replaced by another file of the same size and time (rsync -t, tar x): a new inode.
    other = tmp_path / "other.parquet"
    other.write_bytes(b"PAR1 two PAR1")
    os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(other, path)
    now = stat_identity(str(path))
    assert (now.size, now.mtime_ns) == (built.size, built.mtime_ns) and now != built
    assert version_change(now, **_recorded(built)) is not None


def test_an_index_without_inode_and_change_time_is_not_trusted_for_a_local_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "f.parquet"
    path.write_bytes(b"PAR1")
    now = stat_identity(str(path))
    old = _recorded(now) | {"inode": None, "ctime": None}
    assert "older version" in (version_change(now, **old) or "")
    assert "older version" in (version_change(now, **old | {"inode": 0, "ctime": 0}) or "")


def test_objects_are_compared_by_etag_else_by_time() -> None:
    when = dt.datetime(2024, 5, 6, tzinfo=dt.timezone.utc)
    now = meta_identity("s3://b/k", {"size": 10, "e_tag": '"a"', "last_modified": when})
    same = {"size": 10, "etag": '"a"', "mtime": 0, "inode": None, "ctime": None}
    assert version_change(now, **same) is None
    assert "ETag" in (version_change(now, **same | {"etag": '"b"'}) or "")
    assert "size" in (version_change(now, **same | {"size": 11}) or "")
    untagged = SourceIdentity("https://h/k", 10, None, when)
    by_time = same | {"etag": None, "mtime": mtime_ns(untagged)}
    assert version_change(untagged, **by_time) is None
    assert version_change(untagged, **by_time | {"mtime": 1}) is not None
    assert version_change(SourceIdentity("x", 10, None, None), **same) is not None
