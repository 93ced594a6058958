"""The byte-source seam: ByteSource, its statistics and file identities.

A :class:`ByteSource` reads byte ranges of one file or object. It validates every range
against the size before a request is made, counts requests and bytes in a
:class:`SourceStats` (tests assert on them), and turns foreign failures into the
package's errors naming the path, at the boundary (:mod:`.failures`).

Everything runs on anyio, so asyncio and trio share one code path. Blocking work goes to
the process's worker threads (:func:`~pybloom_async.tasks.loops.to_worker`), bounded by a
``CapacityLimiter``: the caller's, or anyio's default thread limiter of the running event
loop (40 threads), which then bounds all sources together. The sources: :mod:`.memory`,
:mod:`.local`, :mod:`.store`.
"""

from __future__ import annotations

import abc
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from types import TracebackType
from typing import TypeAlias, TypeVar

from ..checks import integer, path_text
from ..errors import InvalidArgumentError, PyBloomError, SourceError
from .failures import map_errors
from .identity import SourceIdentity

#: Bytes of :meth:`ByteSource.read_ranges_held`: bytes, or a read-only view of a buffer
#: the C core keeps for reuse (given back when the view and its slices are gone).
Held: TypeAlias = bytes | memoryview
_Held = TypeVar("_Held", bytes, Held)

T = TypeVar("T")
_S = TypeVar("_S", bound="ByteSource")
# Each request, at DEBUG (the CLI's -vv).
_log = logging.getLogger(__name__)


def _ms(start: float) -> float:
    return (time.monotonic() - start) * 1000


# --------------------------------------------------------------------------- counters


@dataclass
class SourceStats:
    """Counts of the requests a source (or several sharing this object) made.

    ``requests`` counts data reads (one per range: an HTTP range GET, a ``pread`` loop,
    a memory slice); ``bytes_read`` their payload; ``metadata_requests`` size lookups,
    opens and listings (HEAD, ``fstat``, LIST pages).
    """

    requests: int = 0
    bytes_read: int = 0
    metadata_requests: int = 0
    # Sources of several event loops (one per thread) may share one object.
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add_reads(self, requests: int, nbytes: int) -> None:
        """Record ``requests`` data reads that returned ``nbytes`` in total."""
        with self._lock:
            self.requests += requests
            self.bytes_read += nbytes

    def add_metadata(self, requests: int = 1) -> None:
        """Record metadata requests (HEAD, stat, list pages)."""
        with self._lock:
            self.metadata_requests += requests

    def reset(self) -> None:
        """Zero every counter."""
        with self._lock:
            self.requests = self.bytes_read = self.metadata_requests = 0


@dataclass(frozen=True, slots=True)
class FileInfo:
    """A file found by :func:`list_parquet_files`; ``path`` is accepted by :func:`open_source`.

    Passing the FileInfo itself to :func:`open_source` reuses the size, so no HEAD is needed.
    Slotted: a listing holds one per file (no per-instance dict: 20,000 files take
    about half the memory), and it still pickles (Spark sends them to executors).
    ``link``: whether a local listing found the entry to be a symbolic link (None: not
    known); not part of what the file is (not compared).
    """

    path: str
    size: int
    etag: str | None = None
    mtime: datetime | None = None
    link: bool | None = field(default=None, compare=False, repr=False)


def location_text(location: str | os.PathLike[str] | FileInfo) -> str:
    """The path or URL a file is given by: a :class:`FileInfo`'s ``path``, or the text.

    Raises
    ------
    InvalidArgumentError
        Not a path or URL (bytes, a number, None).
    """
    if isinstance(location, str):
        return location
    return location.path if isinstance(location, FileInfo) else path_text("location", location)


# --------------------------------------------------------------------------- the interface


class ByteSource(abc.ABC):
    """Async random access to the bytes of one file or object.

    Use as ``async with``; reading after :meth:`aclose` raises SourceError. Sizes and ranges
    are validated before any request: ``0 <= start <= end <= size``.
    """

    def __init__(
        self,
        path: str,
        *,
        stats: SourceStats | None = None,
        size: int | None = None,
        etag: str | None = None,
        mtime: datetime | None = None,
    ) -> None:
        self._path = path
        self.stats = stats if stats is not None else SourceStats()
        self._size = None if size is None else integer("size", size, minimum=0)
        self._etag = etag
        self._mtime = mtime
        self._closed = False

    @property
    def path(self) -> str:
        """The local path or URL, as shown in messages."""
        return self._path

    #: Whether the source is a local file, whose :meth:`identity` comes with its opening:
    #: a cache checks it on every use instead of trusting its age.
    local: bool = False

    @property
    def known_size(self) -> int | None:
        """The size when already known (from a listing, a cache or a read), else None."""
        return self._size

    @property
    def etag(self) -> str | None:
        """The entity tag, once known (after :meth:`size`, :meth:`identity` or a suffix read)."""
        return self._etag

    @property
    def mtime(self) -> datetime | None:
        """The last-modified time, once known."""
        return self._mtime

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._path!r})"

    async def __aenter__(self: _S) -> _S:
        await self._open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Release the source's resources; further reads raise SourceError. Idempotent."""
        self._closed = True

    def _check_open(self) -> None:
        if self._closed:
            raise SourceError("source is closed", path=self._path)

    async def size(self) -> int:
        """The size in bytes; one metadata request the first time unless already known.

        Raises
        ------
        SourceNotFoundError
            The file or object does not exist.
        SourceError
            The lookup failed, or the source is closed.
        """
        self._check_open()
        if self._size is None:
            start = time.monotonic()
            with map_errors(self._path, "looking up the size"):
                identity = await self._stat()
            self.stats.add_metadata()
            self._remember(identity)
            _log.debug("%s: size %d (%.0f ms)", self._path, identity.size, _ms(start))
        assert self._size is not None
        return self._size

    async def identity(self) -> SourceIdentity:
        """Size, etag and mtime of the source, for cache keys.

        Raises
        ------
        SourceNotFoundError, SourceError
            As :meth:`size`.
        """
        size = await self.size()
        return SourceIdentity(self._path, size, self._etag, self._mtime)

    def assume_identity(self, identity: SourceIdentity) -> None:
        """Take size, ETag and mtime from an earlier read of the same file (no request).

        A reader that already learned them (from the footer read, or a cache)
        spares the HEAD a new source would otherwise make before its first
        ranged read. Reads on a store are still pinned to the ETag, so a file
        replaced since then gives a clear error rather than mixed bytes.
        """
        if identity.path != self._path:
            raise InvalidArgumentError(
                f"identity of {identity.path!r} given to the source of {self._path!r}"
            )
        self._remember(identity)

    def _remember(self, identity: SourceIdentity) -> None:
        self._size = identity.size
        self._etag = identity.etag if identity.etag is not None else self._etag
        self._mtime = identity.mtime if identity.mtime is not None else self._mtime

    async def read_range(self, start: int, end: int) -> bytes:
        """Read bytes ``[start, end)``.

        Raises
        ------
        InvalidArgumentError
            ``start``/``end`` are not ints with ``0 <= start <= end``.
        SourceError
            ``end`` is past the end of the file, the read failed or returned too few bytes.
        SourceNotFoundError
            The file or object does not exist.
        """
        (data,) = await self.read_ranges([(start, end)])
        return data

    async def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        """Read several ranges, concurrently where the source allows; results in input order.

        Empty ranges give ``b""`` without a request. Ranges are not merged here: that is the
        planner's job (:func:`pybloom_async.read.ranges.merge_ranges`).

        Raises
        ------
        InvalidArgumentError, SourceError, SourceNotFoundError
            As :meth:`read_range`; nothing is requested when any range is invalid.
        """
        return await self._ranges(ranges, self._read)

    async def read_ranges_held(self, ranges: Sequence[tuple[int, int]]) -> list[Held]:
        """:meth:`read_ranges` for bytes read to be read once and dropped soon (a file's
        column chunks while its rows are read): a local file reads large ranges into
        buffers the C core keeps for reuse (read-only views), where new bytes objects
        would each be fresh memory to fault in. Other sources give bytes.

        Raises
        ------
        InvalidArgumentError, SourceError, SourceNotFoundError
            As :meth:`read_ranges`.
        """
        return await self._ranges(ranges, self._read_held)

    async def _ranges(
        self,
        ranges: Sequence[tuple[int, int]],
        read: Callable[[list[tuple[int, int]]], Awaitable[Sequence[_Held]]],
    ) -> list[_Held]:
        checked: list[tuple[int, int]] = []
        for item in ranges:
            try:
                start, end = item
            except (TypeError, ValueError):
                raise InvalidArgumentError(
                    f"range {item!r} is not a (start, end) pair", path=self._path
                ) from None
            start = integer("range start", start, minimum=0)
            end = integer("range end", end, minimum=0)
            if end < start:
                raise InvalidArgumentError(
                    f"range [{start}, {end}) ends before it starts", path=self._path
                )
            checked.append((start, end))
        size = await self.size()
        for start, end in checked:
            if end > size:
                raise SourceError(
                    f"range [{start}, {end}) runs past the end of the file ({size} bytes)",
                    path=self._path,
                )
        wanted = [(s, e) for s, e in checked if e > s]
        if not wanted:
            return [b"" for _ in checked]
        self._check_open()
        began = time.monotonic()
        with map_errors(self._path, "reading"):
            results = await read(wanted)
        if _log.isEnabledFor(logging.DEBUG):
            shown = ", ".join(f"[{s}, {e})" for s, e in wanted[:4])
            more = f" and {len(wanted) - 4} more" if len(wanted) > 4 else ""
            _log.debug("%s: read %s%s (%.0f ms)", self._path, shown, more, _ms(began))
        total = 0
        for (start, end), data in zip(wanted, results, strict=True):
            if len(data) != end - start:
                raise SourceError(
                    f"read of range [{start}, {end}) returned {len(data)} bytes; "
                    "the file changed or was truncated",
                    path=self._path,
                )
            total += len(data)
        self.stats.add_reads(len(wanted), total)
        by_range = iter(results)
        return [next(by_range) if e > s else b"" for s, e in checked]

    async def read_whole(
        self,
        limit: int,
        too_large: Callable[[int], PyBloomError],
        *,
        one_request: bool = False,
        what: str = "object",
    ) -> bytes:
        """The whole file or object, refused with ``too_large(size)`` above ``limit`` bytes.

        By default the size is looked up first, so nothing is read of a file too large.
        With ``one_request``, a suffix of ``limit`` bytes is read and tells the size too
        (an object store then needs no HEAD request); ``what`` names the object in the
        error when that read comes back short.

        Raises
        ------
        PyBloomError
            What ``too_large`` returns, when the size is above ``limit``.
        SourceNotFoundError, SourceError
            As :meth:`read_range`.
        """
        if not one_request:
            size = await self.size()
            if size > limit:
                raise too_large(size)
            return await self.read_range(0, size)
        data = await self.read_suffix(limit)
        size = await self.size()  # learned by the suffix read: no request
        if size > limit:
            raise too_large(size)
        if len(data) != size:
            raise SourceError(f"read {len(data)} bytes of a {size}-byte {what}", path=self.path)
        return data

    async def read_suffix(self, n: int) -> bytes:
        """Read the last ``n`` bytes (the whole file if it is shorter).

        Where the store allows, this is one request that also learns the size, so a
        footer costs one round trip.

        Raises
        ------
        InvalidArgumentError
            ``n`` is not a non-negative int.
        SourceError, SourceNotFoundError
            As :meth:`read_range`.
        """
        n = integer("suffix length", n, minimum=0)
        self._check_open()
        if self._size is None and n > 0:
            began = time.monotonic()
            with map_errors(self._path, "reading the tail"):
                found = await self._read_suffix(n)
            if found is not None:
                _log.debug(
                    "%s: read the last %d bytes of %d (%.0f ms)",
                    self._path, len(found[0]), found[1].size, _ms(began),
                )  # fmt: skip
            if found is not None:
                data, identity = found
                if len(data) != min(n, identity.size):
                    raise SourceError(
                        f"suffix read of {n} bytes returned {len(data)} of a "
                        f"{identity.size}-byte object",
                        path=self._path,
                    )
                self._remember(identity)
                self.stats.add_reads(1, len(data))
                return data
        size = await self.size()
        return await self.read_range(max(0, size - n), size)

    async def _open(self) -> None:
        """Acquire resources eagerly (``async with``); by default nothing to do."""
        self._check_open()

    @abc.abstractmethod
    async def _stat(self) -> SourceIdentity:
        """Look up size (and etag, mtime); foreign errors are mapped by the caller."""

    @abc.abstractmethod
    async def _read(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        """Read validated, non-empty ranges; foreign errors are mapped by the caller."""

    async def _read_held(self, ranges: list[tuple[int, int]]) -> list[Held]:
        """:meth:`_read` for :meth:`read_ranges_held` (here: the same bytes)."""
        return list(await self._read(ranges))

    async def _read_suffix(self, n: int) -> tuple[bytes, SourceIdentity] | None:
        """Read the suffix and the identity in one request, or None if not supported."""
        return None
