"""File identity: what one version of a file is, from a stat, an fstat or a store's metadata.

One form for every layer: caches key footers by it, sidecar indexes record it and
compare it, rewrites and index builds check that a local file did not change under
them. Two identities are the same version when they are equal.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import SourceError

__all__ = [
    "SourceIdentity",
    "local_identity",
    "meta_identity",
    "mtime_ns",
    "stat_identity",
    "store_etag",
]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class SourceIdentity:
    """What identifies one version of a file, for caches: same identity, same bytes.

    ``etag`` is the store's entity tag; for local files a synthetic one built from the inode,
    the modification time in nanoseconds and the size (as nginx does for its ETags).
    Local files read by ``stat``/``fstat`` also carry the exact ``mtime_ns`` and
    ``inode`` (device, inode number); both are None when unknown.
    """

    path: str
    size: int
    etag: str | None
    mtime: dt.datetime | None
    mtime_ns: int | None = None
    inode: tuple[int, int] | None = None


def local_identity(path: str, st: os.stat_result) -> SourceIdentity:
    """The identity of a local file from its ``stat`` or ``fstat`` result."""
    return SourceIdentity(
        path,
        st.st_size,
        f"{st.st_ino:x}-{st.st_mtime_ns:x}-{st.st_size:x}",
        dt.datetime.fromtimestamp(st.st_mtime_ns / 1e9, tz=dt.timezone.utc),
        st.st_mtime_ns,
        (st.st_dev, st.st_ino),
    )


def stat_identity(path: str) -> SourceIdentity:
    """The identity of the local file at ``path`` (one ``os.stat``; OSError as raised)."""
    return local_identity(path, os.stat(path))


def meta_identity(path: str, meta: Mapping[str, Any]) -> SourceIdentity:
    """An object's identity from a store's metadata (``size``, ``e_tag``, ``last_modified``)."""
    size = meta["size"]
    if not isinstance(size, int) or size < 0:
        raise SourceError(f"the store reported an invalid size {size!r}", path=path)
    return SourceIdentity(path, size, meta.get("e_tag"), meta.get("last_modified"))


def mtime_ns(identity: SourceIdentity) -> int:
    """The modification time in nanoseconds since the epoch; 0 when unknown."""
    if identity.mtime_ns is not None:
        return identity.mtime_ns
    mtime = identity.mtime
    if mtime is None:
        return 0
    if mtime.tzinfo is None:
        mtime = mtime.replace(tzinfo=dt.timezone.utc)
    delta = mtime - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


def store_etag(identity: SourceIdentity) -> str:
    """The ETag an object store gave; "" for local files (their tag is synthetic) or none."""
    if identity.inode is not None:
        return ""
    return identity.etag or ""
