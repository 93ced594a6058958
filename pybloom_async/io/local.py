"""Local files as byte sources: positional reads on one descriptor, regular files only.

Local files are read with ``os.pread`` on one descriptor in worker threads. ``pread`` takes
its offset as an argument, so concurrent reads of one descriptor never race on a shared
file position and need no lock. (aiofiles was the first idea; it runs only on asyncio, it
fails outright under trio with "no running event loop", and its seek-then-read would need
a lock.)
"""

from __future__ import annotations

import abc
import errno
import os
import stat
import threading
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from anyio import CapacityLimiter

from .._native import ffi, lib
from ..tasks.loops import to_worker
from ..tasks.workers import gather
from .base import ByteSource, Held, SourceStats
from .failures import map_errors
from .identity import SourceIdentity, local_identity

# --------------------------------------------------------------------------- local files

_B = TypeVar("_B", bytes, Held)


if hasattr(os, "pread"):

    def _pread(fd: int, size: int, offset: int, _lock: threading.Lock) -> bytes:
        return os.pread(fd, size, offset)

else:  # pragma: no cover - Windows has no pread: serialise seek + read

    def _pread(fd: int, size: int, offset: int, _lock: threading.Lock) -> bytes:
        with _lock:
            os.lseek(fd, offset, os.SEEK_SET)
            return os.read(fd, size)


def read_exactly(fd: int, start: int, end: int, lock: threading.Lock) -> bytes:
    """Read ``[start, end)`` fully: pread may return less than asked (signals, pipes, NFS)."""
    first = _pread(fd, end - start, start, lock)
    if len(first) == end - start or not first:
        return first
    parts = [first]
    pos = start + len(first)
    while pos < end:
        chunk = _pread(fd, end - pos, pos, lock)
        if not chunk:  # end of file: the caller reports the short read
            break
        parts.append(chunk)
        pos += len(chunk)
    return b"".join(parts)


#: Reads of :meth:`ByteSource.read_ranges_held` this large or more go to the C core's kept
#: buffers (the size from which its pool keeps them: 64 KiB).
HELD_MIN_BYTES = int(lib.PBA_BUFFER_KEPT_MIN)


def read_held(fd: int, start: int, end: int, lock: threading.Lock) -> Held:
    """:func:`read_exactly` into a buffer the C core keeps for reuse, for a large range
    where ``os.preadv`` exists: a read-only view (shorter at the end of the file), whose
    buffer goes back when the view and its slices are gone."""
    size = end - start
    if size < HELD_MIN_BYTES or not hasattr(os, "preadv"):
        return read_exactly(fd, start, end, lock)
    raw = lib.pba_buffer_new(size)
    if raw == ffi.NULL:
        raise MemoryError(f"no memory for a read of {size} bytes")
    owned = ffi.gc(ffi.cast("uint8_t *", raw), lib.pba_buffer_free, size)
    view = memoryview(ffi.buffer(owned, size))  # keeps the buffer while it lives
    got = 0
    while got < size:
        n = os.preadv(fd, [view[got:]], start + got)
        if not n:  # end of file: the caller reports the short read
            break
        got += n
    return view[:got].toreadonly()


def read_held_ranges(fd: int, ranges: list[tuple[int, int]], lock: threading.Lock) -> list[Held]:
    """:func:`read_held` of each range, the large ones read in one call of the C core
    (``pba_buffers_read``): a file's chunks cost its thread one release of the interpreter
    lock, not one per read and buffer (each a chance for another thread to take the lock
    and keep it while this one waits)."""
    large = [i for i, (start, end) in enumerate(ranges) if end - start >= HELD_MIN_BYTES]
    if len(large) < 2:
        return [read_held(fd, start, end, lock) for start, end in ranges]
    n = len(large)
    lens = [ranges[i][1] - ranges[i][0] for i in large]
    bufs = ffi.new("void *[]", n)
    got = ffi.new("uint64_t[]", n)
    status = lib.pba_buffers_read(
        fd, n, ffi.new("int64_t[]", [ranges[i][0] for i in large]), ffi.new("uint64_t[]", lens),
        bufs, got,
    )  # fmt: skip
    if status == errno.ENOSYS:  # no pread here: read one by one
        return [read_held(fd, start, end, lock) for start, end in ranges]
    if status == errno.ENOMEM:
        raise MemoryError(f"no memory for reads of {sum(lens)} bytes")
    if status:
        raise OSError(status, os.strerror(status))
    views = []  # every buffer owned by Python first: none leaks when a small read fails
    for k in range(n):
        owned = ffi.gc(ffi.cast("uint8_t *", bufs[k]), lib.pba_buffer_free, lens[k])
        views.append(memoryview(ffi.buffer(owned, lens[k]))[: got[k]].toreadonly())
    taken = iter(views)
    return [
        next(taken) if end - start >= HELD_MIN_BYTES else read_exactly(fd, start, end, lock)
        for start, end in ranges
    ]


def open_regular(path: str) -> tuple[int, SourceIdentity]:
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, "is a directory", path)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{path} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd, local_identity(path, st)


class _DescriptorSource(ByteSource):
    """A local file known by one descriptor: its size and identity come from ``fstat``."""

    _fd: int | None
    local = True  # reads are pread calls; the identity is the fstat of the opening

    @abc.abstractmethod
    async def _descriptor(self) -> int:
        """The open descriptor (opened on first use; its identity remembered)."""

    @abc.abstractmethod
    async def _reads(
        self, ranges: list[tuple[int, int]], read: Callable[[int, int, int, threading.Lock], _B]
    ) -> list[_B]:
        """``read(fd, start, end, lock)`` of each range, in order."""

    async def _read(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        return await self._reads(ranges, read_exactly)

    async def _read_held(self, ranges: list[tuple[int, int]]) -> list[Held]:
        return await self._reads(ranges, read_held)

    async def _open(self) -> None:
        self._check_open()
        with map_errors(self._path, "opening"):
            await self._descriptor()

    async def _stat(self) -> SourceIdentity:
        await self._descriptor()
        assert self._size is not None
        return SourceIdentity(self._path, self._size, self._etag, self._mtime)

    async def size(self) -> int:
        """The size in bytes, from ``fstat`` when the file is opened.

        Raises
        ------
        SourceNotFoundError, SourceError
            As :meth:`ByteSource.size`.
        """
        self._check_open()
        if self._size is None:
            with map_errors(self._path, "opening"):
                await self._descriptor()
        assert self._size is not None
        return self._size


class LocalFileSource(_DescriptorSource):
    """A local file read with ``os.pread`` on one descriptor, in worker threads.

    The file is opened on first use (or by ``async with``) and stays open until
    :meth:`aclose`. Ranges of one call are read concurrently, each in its own thread call.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        stats: SourceStats | None = None,
        limiter: CapacityLimiter | None = None,
    ) -> None:
        super().__init__(os.fspath(path), stats=stats)
        self._limiter = limiter
        self._fd: int | None = None
        self._seek_lock = threading.Lock()  # only used where os.pread is missing
        # Reads running in threads. aclose() must not close the descriptor under them: the
        # number could be reused by another open() and a pread would read the wrong file.
        self._in_flight = 0

    async def _descriptor(self) -> int:
        if self._fd is None:
            fd, identity = await to_worker(open_regular, self._path, limiter=self._limiter)
            self.stats.add_metadata()
            # Two tasks may have opened concurrently (the await above is a switch point):
            # keep the first descriptor, close ours. Runs on the event-loop thread, so the
            # check and the assignment cannot interleave with another task.
            if self._fd is not None or self._closed:
                os.close(fd)
                self._check_open()
            else:
                self._fd = fd
                self._remember(identity)
        assert self._fd is not None
        return self._fd

    async def _reads(
        self, ranges: list[tuple[int, int]], read: Callable[[int, int, int, threading.Lock], _B]
    ) -> list[_B]:
        await self._descriptor()
        if len(ranges) == 1:
            return [await self._pread_in_thread(read, *ranges[0])]
        return await gather(partial(self._pread_in_thread, read), ranges)

    async def _pread_in_thread(
        self, read: Callable[[int, int, int, threading.Lock], _B], start: int, end: int
    ) -> _B:
        # The check and the count happen before the first switch point, so aclose() either
        # ran before (we refuse) or sees this read in flight (and leaves the close to us).
        self._check_open()
        fd = self._fd
        assert fd is not None
        self._in_flight += 1
        try:
            return await to_worker(read, fd, start, end, self._seek_lock, limiter=self._limiter)
        finally:
            self._in_flight -= 1
            if self._closed and self._in_flight == 0:
                self._close_descriptor()

    def _close_descriptor(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    async def aclose(self) -> None:
        """Close the descriptor (once reads in flight finish); further reads raise SourceError."""
        self._closed = True
        if self._in_flight == 0:
            self._close_descriptor()


#: Descriptors a blocking reader keeps open, per path: the descriptor and the identity
#: it was opened with.
Descriptors = dict[str, tuple[int, SourceIdentity]]


class BlockingLocalFileSource(_DescriptorSource):
    """A local file read with ``pread`` in the calling thread: no worker thread, no loop.

    Its coroutines never suspend, so a caller's coroutine built only on them can be run
    without an event loop (``tasks.loops.run_inline``). Validation, counting and error
    mapping are :class:`ByteSource`'s, as for :class:`LocalFileSource`. The descriptor is
    its own, closed by :meth:`aclose`, unless ``kept`` is given: then it belongs to the
    caller's table, which keeps it for the file's next source.
    """

    def __init__(self, path: str, *, stats: SourceStats, kept: Descriptors | None = None) -> None:
        super().__init__(path, stats=stats)
        self._kept = kept
        self._fd: int | None = None
        self._seek_lock = threading.Lock()  # only used where os.pread is missing

    async def _descriptor(self) -> int:
        # Never suspends: opened (or found kept) in the calling thread.
        if self._fd is None:
            self._check_open()
            found = None if self._kept is None else self._kept.get(self._path)
            if found is None:
                found = open_regular(self._path)
                self.stats.add_metadata()
                if self._kept is not None:
                    self._kept[self._path] = found
            self._fd = found[0]
            self._remember(found[1])
        return self._fd

    async def _reads(
        self, ranges: list[tuple[int, int]], read: Callable[[int, int, int, threading.Lock], _B]
    ) -> list[_B]:
        self._check_open()
        fd = await self._descriptor()
        return [read(fd, start, end, self._seek_lock) for start, end in ranges]

    async def _read_held(self, ranges: list[tuple[int, int]]) -> list[Held]:
        self._check_open()
        fd = await self._descriptor()
        return read_held_ranges(fd, ranges, self._seek_lock)

    def descriptor_now(self) -> int | None:
        """The open descriptor, for reads made in this thread by native code (which count
        them with ``stats.add_reads``); None before it is opened or after it is closed."""
        return None if self._closed else self._fd

    async def aclose(self) -> None:
        """Close its own descriptor (a kept one is its owner's); further reads raise
        SourceError."""
        self._closed = True
        fd, self._fd = self._fd, None
        if fd is not None and self._kept is None:
            os.close(fd)
