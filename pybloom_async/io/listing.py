"""Listing the Parquet files of a directory or object-store prefix."""

from __future__ import annotations

import os
import stat
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import obstore
from anyio import CapacityLimiter

from ..errors import SourceError, SourceNotFoundError

if TYPE_CHECKING:
    from obstore.store import ObjectStore
from .address import Address, parse_address
from .base import FileInfo, SourceStats, map_errors, unreachable_reason
from .identity import local_identity, meta_identity
from .store import StoreOptions, cached_store, check_applicable, resolve_options

__all__ = ["list_parquet_files"]


def _is_hidden(name: str) -> bool:
    # Hadoop's convention (FileInputFormat's hidden-file filter), which Spark and Hive
    # follow: names starting with "_" or "." are metadata or in-progress output
    # (_SUCCESS, _temporary/, .part-0.parquet.crc), never data.
    return name.startswith(("_", "."))


def _is_parquet(name: str) -> bool:
    return name.lower().endswith(".parquet") and not _is_hidden(name)


def _list_local(path: str, identities: bool = True) -> list[FileInfo]:
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        identity = local_identity(path, st)
        return [FileInfo(path, st.st_size, identity.etag, identity.mtime)]
    found: list[FileInfo] = []
    for root, dirs, files in os.walk(path, onerror=_raise, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not _is_hidden(d))
        for name in sorted(files):
            if _is_parquet(name):
                full = os.path.join(root, name)
                fst = os.stat(full)
                if not identities:
                    found.append(FileInfo(full, fst.st_size))
                    continue
                identity = local_identity(full, fst)
                found.append(FileInfo(full, fst.st_size, identity.etag, identity.mtime))
    return found


def _raise(exc: OSError) -> None:
    raise exc


def _list_store(store: ObjectStore, loc: Address) -> tuple[list[FileInfo], bool]:
    """Objects under the prefix: (parquet files, whether anything at all was there)."""
    # Listed URLs keep the scheme and authority they were listed with (s3a://,
    # abfss://container@account...), so they reopen with the same store.
    parts = urllib.parse.urlsplit(loc.display)
    base = f"{parts.scheme}://{parts.netloc}/"
    prefix = loc.key.rstrip("/")
    found: list[FileInfo] = []
    anything = False
    for chunk in obstore.list(store, prefix or None, chunk_size=1000):
        for meta in chunk:
            anything = True
            key = meta["path"]
            relative = key[len(prefix) :].lstrip("/") if prefix else key
            segments = relative.split("/")
            if any(_is_hidden(s) for s in segments[:-1]) or not _is_parquet(segments[-1]):
                continue
            identity = meta_identity(base + key, meta)
            found.append(FileInfo(base + key, identity.size, identity.etag, identity.mtime))
    found.sort(key=lambda f: f.path)
    return found, anything


async def list_parquet_files(
    location: str | os.PathLike[str],
    *,
    options: StoreOptions | None = None,
    stats: SourceStats | None = None,
    limiter: CapacityLimiter | None = None,
    identities: bool = True,
    **option_values: object,
) -> list[FileInfo]:
    """Expand a file, directory or object-store prefix into its Parquet files, sorted by path.

    A file or object named exactly is returned as is, whatever its name. Directories and
    prefixes are walked recursively for ``*.parquet`` (any case), skipping names that start
    with ``_`` or ``.`` (Spark/Hadoop metadata and in-progress output).

    Parameters
    ----------
    location, options, stats, limiter, **option_values:
        As for :func:`open_source`. Listing counts one metadata request per call.
    identities:
        False: the files listed under a local directory come without ETag and
        modification time (their size only). A local file's source reads its own
        identity when opened, so a listing made to read the files need not hold
        one per file (about 130 bytes each).

    Raises
    ------
    SourceNotFoundError
        The path does not exist, or no object at all lies under the prefix.
    SourceError
        Listing failed (plain HTTP servers cannot list: name the files instead).
    InvalidArgumentError
        As :func:`open_source`.
    """
    loc = parse_address(location)
    resolved = resolve_options(options, option_values)
    check_applicable(loc, resolved)
    counter = stats if stats is not None else SourceStats()
    if loc.kind == "file":
        with map_errors(loc.display, "listing"):
            files = await anyio.to_thread.run_sync(
                _list_local, loc.path, identities, limiter=limiter
            )
        counter.add_metadata()
        return files
    store = cached_store(loc, resolved)
    if loc.key and not loc.key.endswith("/"):
        # The location may name one object: one HEAD tells. Object stores have no
        # directories, so "not found" here means: list it as a prefix.
        meta: Mapping[str, Any] | None
        try:
            with map_errors(loc.display, "looking up"):
                meta = await anyio.to_thread.run_sync(obstore.head, store, loc.key, limiter=limiter)
        except SourceNotFoundError:
            meta = None
        counter.add_metadata()
        if meta is not None:
            identity = meta_identity(loc.display, meta)
            return [FileInfo(loc.display, identity.size, identity.etag, identity.mtime)]
    try:
        with map_errors(loc.display, "listing"):
            files, anything = await anyio.to_thread.run_sync(
                _list_store, store, loc, limiter=limiter
            )
    except SourceError as exc:
        answered = exc.__cause__ is None or unreachable_reason(exc.__cause__) is None
        if loc.kind == "http" and answered and not isinstance(exc, SourceNotFoundError):
            raise SourceError(
                "listing failed: plain HTTP servers cannot list (obstore needs WebDAV); "
                "name the files instead",
                path=loc.display,
            ) from exc
        raise
    counter.add_metadata()
    if not anything:
        raise SourceNotFoundError("listing: no objects under this prefix", path=loc.display)
    return files
