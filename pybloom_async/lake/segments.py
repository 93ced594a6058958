"""The segments of a lake index: named, listed, read (one suffix read) and written atomically."""

from __future__ import annotations

import os
import secrets
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import obstore

from ..errors import PyBloomError, SourceError
from ..io.address import parse_address
from ..io.base import FileInfo
from ..io.failures import map_errors
from ..io.identity import SourceIdentity, stat_identity
from ..io.sinks import write_atomic
from ..io.store import StoreOptions, cached_store
from ..read.ranges import HeldBytes
from ..read.reader import BloomReader
from ..tasks.loops import to_worker
from .format import (
    TRAILER,
    Segment,
    decode_directory,
    decode_trailer,
    lake_dir,
)

#: The first read of a segment: its last 64 KiB, which hold the trailer and, up to
#: about 1,500 files, the whole directory (one request); larger ones need one more.
SUFFIX_BYTES = 64 * 1024
SEGMENT_SUFFIX = ".pbl"


def new_segment_name() -> str:
    """A fresh segment object name; names sort by creation time (newest last)."""
    return f"seg-{time.time_ns():020d}-{secrets.token_hex(4)}{SEGMENT_SUFFIX}"


def relative_name(root: str, location: str) -> str | None:
    """A data file's name relative to the lake's root ("/"-separated), None if outside it."""
    base = os.fspath(root).rstrip("/")
    loc = parse_address(location)
    if loc.kind == "file":
        base_path = os.path.abspath(parse_address(base).path)
        full = os.path.abspath(loc.path)
        rel = os.path.relpath(full, base_path)
        if rel.startswith(".."):
            return None
        return rel.replace(os.sep, "/")
    if not location.startswith(base + "/"):
        return None
    return location[len(base) + 1 :]


def relative_names(root: str, locations: Sequence[str]) -> list[str | None]:
    """:func:`relative_name` of many files, the root resolved once (100,000 files: ms)."""
    base = os.fspath(root).rstrip("/")
    loc = parse_address(base)
    prefix = (os.path.abspath(loc.path) if loc.kind == "file" else base) + "/"
    out: list[str | None] = []
    for location in locations:
        if location.startswith(prefix) and "/../" not in location and "/./" not in location:
            out.append(location[len(prefix) :])
        else:
            out.append(relative_name(root, location))
    return out


def _list_local(folder: str) -> list[FileInfo]:
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    return [FileInfo(os.path.join(folder, n), 0) for n in names if n.endswith(SEGMENT_SUFFIX)]


def _list_store_segments(folder: str, options: StoreOptions | None) -> list[FileInfo]:
    loc = parse_address(folder)
    store = cached_store(loc, options or StoreOptions())
    parts = urllib.parse.urlsplit(loc.display)
    base = f"{parts.scheme}://{parts.netloc}/"
    out = []
    for chunk in obstore.list(store, loc.key, chunk_size=1000):
        for meta in chunk:
            key = meta["path"]
            if key.endswith(SEGMENT_SUFFIX) and "/" not in key[len(loc.key) :].lstrip("/"):
                out.append(FileInfo(base + key, meta["size"], meta.get("e_tag")))
    return out


async def listed_segments(root: str, reader: BloomReader, kept: bool = False) -> list[FileInfo]:
    """The segments of the lake under ``root``, oldest first ([] when none), with the size
    and ETag the listing gave (none for local files). ``kept``: a listing the reader kept
    is used while younger than its ``max_age`` (a new segment is then not seen for as long:
    its files are read as files in no segment are).

    Raises
    ------
    SourceError
        The listing failed (a missing index folder is not an error).
    """
    folder = lake_dir(root)
    key = ("lake index listing", folder)
    if kept and (found := reader.kept(key)) is not None:
        return list(found)
    loc = parse_address(folder)
    with map_errors(loc.display, "listing the lake index"):
        if loc.kind == "file":
            found = await to_worker(_list_local, loc.path)
        elif loc.kind == "http":
            raise SourceError("plain HTTP cannot list: the lake index needs a listing", path=folder)
        else:
            found = await to_worker(_list_store_segments, folder, reader.options)
    reader.stats.add_metadata()
    found = sorted(found, key=lambda f: f.path.rsplit("/", 1)[-1])
    if kept:
        reader.keep(key, None, tuple(found))
    return found


async def list_segments(root: str, reader: BloomReader) -> list[str]:
    """The segment locations of the lake under ``root``, oldest first ([] when none).

    Raises
    ------
    SourceError
        The listing failed (a missing index folder is not an error).
    """
    return [f.path for f in await listed_segments(root, reader)]


async def listed_or_reason(root: str, reader: BloomReader, strict: bool) -> list[str] | str:
    """:func:`list_segments`, or why the index folder cannot be listed (every file is then
    kept); with ``strict`` the error is raised."""
    try:
        return await list_segments(root, reader)
    except SourceError as exc:
        if strict:
            raise
        return f"the lake index folder cannot be listed: {exc}"


@dataclass(frozen=True, eq=False)
class LoadedSegment:
    """A segment's location, its identity (later reads are pinned to it) and its directory;
    ``base``: where the segment starts in its object (a blob of a Puffin file); ``held``:
    bytes before the directory that its first read brought (segment offsets: the last
    digest records, the schemas' usually)."""

    location: str
    identity: SourceIdentity
    segment: Segment
    base: int = 0
    held: HeldBytes = field(default_factory=HeldBytes)
    #: What lookups derived from it (its digest's records read, footers decoded): kept
    #: with it by a long-lived reader.
    memo: dict[Any, Any] = field(default_factory=dict)


async def read_segment(reader: BloomReader, location: str) -> LoadedSegment:
    """A segment's directory: one suffix read, and one more only for a large directory.

    Raises
    ------
    ParquetFormatError
        The segment is damaged (bad magic, offsets, CRC or directory).
    SourceError, SourceNotFoundError
        The segment cannot be read.
    """
    async with reader.open(location) as source:
        tail = await source.read_suffix(SUFFIX_BYTES)
        identity = await source.identity()
        size = identity.size
        offset, length, crc = decode_trailer(tail, size, location)
        start = size - len(tail)
        if offset < start:
            head = await source.read_range(offset, start)
            packed = head + tail[: length - len(head)]
        else:
            packed = tail[offset - start : offset - start + length]
    if len(packed) != length or offset + length + TRAILER.size != size:
        raise SourceError("the segment changed while it was being read", path=location)
    segment = decode_directory(packed, crc, offset, location)
    held = HeldBytes([(start, tail[: offset - start])] if start < offset else [])
    return LoadedSegment(location, identity, segment, 0, held)


async def loaded_or_reason(reader: BloomReader, location: str, strict: bool) -> LoadedSegment | str:
    """:func:`read_segment`, or why the segment cannot be read (its files are then kept);
    with ``strict`` the error is raised."""
    try:
        return await read_segment(reader, location)
    except PyBloomError as exc:
        if strict:
            raise
        return str(exc)


async def kept_or_loaded(reader: BloomReader, listed: FileInfo) -> LoadedSegment | str:
    """A listed segment as the reader kept it, when it is the same version (the ETag and
    size of its listing on a store, a stat of a local file): no request; else
    :func:`loaded_or_reason`, and kept."""
    key = ("lake index segment", listed.path)
    try:
        version = await _version(reader, listed)
    except OSError:
        version = None
    if version is not None and (found := reader.kept(key, version)) is not None:
        return found  # type: ignore[no-any-return]
    loaded = await loaded_or_reason(reader, listed.path, False)
    if isinstance(loaded, LoadedSegment):
        reader.keep(key, (loaded.identity.size, loaded.identity.etag), loaded)
    return loaded


async def _version(reader: BloomReader, listed: FileInfo) -> tuple[int, str] | None:
    """The listed segment's size and tag now (None: unknown)."""
    loc = parse_address(listed.path)
    if loc.kind == "file":
        identity = await to_worker(stat_identity, loc.path)
        reader.stats.add_metadata()
        return identity.size, identity.etag or ""
    return None if listed.etag is None else (listed.size, listed.etag)


async def read_segment_in(
    reader: BloomReader,
    location: str,
    identity: SourceIdentity,
    span: tuple[int, int],
    tail: bytes,
) -> LoadedSegment:
    """A segment stored at ``span`` (``[start, end)``) of a larger object, whose last bytes
    ``tail`` were already read: the trailer and directory come from them, or from one more
    ranged read (pinned to ``identity``) when they lie before.

    Raises
    ------
    ParquetFormatError
        The segment is damaged (bad magic, offsets, CRC or directory).
    SourceError
        It cannot be read.
    """
    start, end = span
    tail_start = identity.size - len(tail)

    async def piece(a: int, b: int) -> bytes:
        if a >= tail_start:
            return tail[a - tail_start : b - tail_start]
        async with reader.open(location) as source:
            source.assume_identity(identity)
            return await source.read_range(a, b)

    trailer = await piece(max(start, end - TRAILER.size), end)
    offset, length, crc = decode_trailer(trailer, end - start, location)
    packed = await piece(start + offset, start + offset + length)
    if len(packed) != length:
        raise SourceError("the segment changed while it was being read", path=location)
    segment = decode_directory(packed, crc, offset, location)
    return LoadedSegment(location, identity, segment, start)


def write_segment(root: str, payload: bytes, options: StoreOptions | None) -> str:
    """Write a new segment under ``root``'s lake folder atomically; returns its location."""
    folder = lake_dir(root)
    loc = parse_address(folder)
    if loc.kind == "file":
        try:
            os.makedirs(loc.path, exist_ok=True)
        except OSError as exc:
            raise SourceError(f"cannot create the index folder: {exc}", path=folder) from exc
    location = folder + new_segment_name()
    write_atomic(location, payload, options=options)
    return location


def delete_segments(locations: list[str], options: StoreOptions | None) -> None:
    """Remove segments (after a compaction wrote their replacement)."""
    for location in locations:
        loc = parse_address(location)
        with map_errors(loc.display, "deleting"):
            if loc.kind == "file":
                os.remove(loc.path)
            else:
                obstore.delete(cached_store(loc, options or StoreOptions()), loc.key)
