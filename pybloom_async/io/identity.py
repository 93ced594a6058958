"""File identity: what one version of a file is, from a stat, an fstat or a store's metadata.

One form for every layer: caches key footers by it, sidecar indexes record it and
compare it, rewrites and index builds check that a local file did not change under
them. Two identities are the same version when they are equal.

A local file's version is its size, modification time, inode and status change time
(``st_ctime_ns``). Size and modification time alone do not tell versions apart: a
file replaced by another of the same size whose time was carried over (``cp -p``,
``rsync -t``, ``tar x``) keeps both. Such a replacement is a new inode (rename, or
unlink and create) or, when written in place, a new change time, which no user call
can set back. An object's version is its ETag (else its size and Last-Modified).
:func:`version_change` is the one comparison of a recorded version with a file now.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import SourceError

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


@dataclass(frozen=True)
class SourceIdentity:
    """What identifies one version of a file, for caches: same identity, same bytes.

    ``etag`` is the store's entity tag; for local files a synthetic one built from the inode,
    the modification time in nanoseconds, the size (as nginx does for its ETags) and the
    status change time, so that sources which keep only the tag still tell versions apart.
    Local files read by ``stat``/``fstat`` also carry the exact ``mtime_ns``, ``inode``
    (device, inode number) and ``ctime_ns``; all three are None when unknown.
    """

    path: str
    size: int
    etag: str | None
    mtime: dt.datetime | None
    mtime_ns: int | None = None
    inode: tuple[int, int] | None = None
    ctime_ns: int | None = None


def local_identity(path: str, st: os.stat_result) -> SourceIdentity:
    """The identity of a local file from its ``stat`` or ``fstat`` result."""
    return stat_fields_identity(
        path, st.st_size, st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns
    )


def stat_fields_identity(
    path: str, size: int, dev: int, ino: int, mtime_ns: int, ctime_ns: int
) -> SourceIdentity:
    """The identity of a local file from the fields of its ``stat`` (read by native code)."""
    return SourceIdentity(
        path,
        size,
        f"{ino:x}-{mtime_ns:x}-{size:x}-{ctime_ns:x}",
        dt.datetime.fromtimestamp(mtime_ns / 1e9, tz=dt.timezone.utc),
        mtime_ns,
        (dev, ino),
        ctime_ns,
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


def version_change(
    now: SourceIdentity,
    *,
    size: int,
    etag: str | None,
    mtime: int | None,
    inode: int | None,
    ctime: int | None,
) -> str | None:
    """Why the file ``now`` is not the version an index recorded; None when it is.

    The recorded fields are what :func:`store_etag`, :func:`mtime_ns` and the
    identity's ``inode[1]`` and ``ctime_ns`` gave when the index was built (times in
    ns; None or 0: not recorded). A local file (``now`` from a ``stat``) is the same
    version only when its size, modification time, inode number and change time all
    are: an index that did not record the inode and change time (an older format) is
    never trusted for a local file. An object is compared by ETag when both sides
    have one, else by modification time; with neither, it is not the same.
    """
    if size != now.size:
        return f"file size is {now.size}, the index was built for {size}"
    now_ns = mtime_ns(now)
    if now.inode is not None:
        if mtime != now_ns:
            return f"modification time is {now_ns} ns, the index was built for {mtime} ns"
        if not inode or not ctime:
            return (
                "the index does not record the local file's inode and change time "
                "(written by an older version): rebuild it"
            )
        if inode != now.inode[1]:
            return f"inode is {now.inode[1]}, the index was built for {inode}"
        if now.ctime_ns != ctime:
            return f"change time is {now.ctime_ns} ns, the index was built for {ctime} ns"
        return None
    now_etag = store_etag(now)
    if etag and now_etag:
        return None if etag == now_etag else f"ETag is {now_etag}, the index was built for {etag}"
    if mtime and now_ns:
        if mtime == now_ns:
            return None
        return f"modification time is {now_ns} ns, the index was built for {mtime} ns"
    return "the file's version cannot be compared (no ETag or modification time)"
