"""Async byte-range sources: local files, object stores (through obstore) and memory.

A :class:`ByteSource` reads byte ranges of one file or object. It validates every range
against the size before a request is made, counts requests and bytes in a
:class:`SourceStats` (tests assert on them), and turns foreign failures (``OSError``,
obstore's exceptions) into :class:`~pybloom_async.errors.SourceError` and
:class:`~pybloom_async.errors.SourceNotFoundError` naming the path, at the boundary.

Everything runs on anyio, so asyncio and trio share one code path. Blocking work goes to
worker threads with ``anyio.to_thread.run_sync``:

* local files are read with ``os.pread`` on one descriptor. ``pread`` takes its offset as an
  argument, so concurrent reads of one descriptor never race on a shared file position and
  need no lock. (aiofiles was the first idea; it runs only on asyncio, it fails outright
  under trio with "no running event loop", and its seek-then-read would need a lock.)
* object stores are read with obstore's *sync* API (``get``, ``head``, ``list``), never
  its async API: see DESIGN.md (aborts at interpreter exit on
  Python 3.11, no trio support).

Threads are bounded by a ``CapacityLimiter``: the caller's, or anyio's default thread
limiter of the running event loop (40 threads), which then bounds all sources together.
Store clients are cached per (kind, bucket or host, options), so thousands of files in one
bucket share one client and its connection pool.
"""

from __future__ import annotations

import abc
import contextlib
import dataclasses
import functools
import os
import re
import stat
import threading
import urllib.parse
import urllib.request
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread
import obstore
import obstore.exceptions as obstore_errors
from anyio import CapacityLimiter
from obstore.store import AzureStore, GCSStore, HTTPStore, S3Store

from ..checks import integer, seconds
from ..errors import InvalidArgumentError, PyBloomError, SourceError, SourceNotFoundError

if TYPE_CHECKING:
    from obstore import GetOptions
    from obstore.store import ClientConfig, ObjectStore, RetryConfig

__all__ = [
    "ByteSource",
    "FileInfo",
    "LocalFileSource",
    "MemorySource",
    "ObjectStoreSource",
    "SourceIdentity",
    "SourceStats",
    "StoreOptions",
    "clear_store_cache",
    "list_parquet_files",
    "open_source",
]

T = TypeVar("T")
_S = TypeVar("_S", bound="ByteSource")


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


@dataclass(frozen=True)
class SourceIdentity:
    """What identifies one version of a file, for caches: same identity, same bytes.

    ``etag`` is the store's entity tag; for local files a synthetic one built from the inode,
    the modification time in nanoseconds and the size (as nginx does for its ETags).
    """

    path: str
    size: int
    etag: str | None
    mtime: datetime | None


@dataclass(frozen=True)
class FileInfo:
    """A file found by :func:`list_parquet_files`; ``path`` is accepted by :func:`open_source`.

    Passing the FileInfo itself to :func:`open_source` reuses the size, so no HEAD is needed.
    """

    path: str
    size: int
    etag: str | None = None
    mtime: datetime | None = None


# --------------------------------------------------------------------------- error mapping


def _describe(exc: BaseException) -> str:
    """One line for a foreign error: obstore appends a multi-line debug dump to its messages."""
    lines = str(exc).strip().splitlines()
    text = lines[0] if lines else ""
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# Where object_store looks for credentials when none are configured: the cloud's instance
# metadata service (AWS IMDS, the GCE metadata server, Azure's managed identity endpoint;
# object_store's aws/credential.rs, gcp/credential.rs, azure/credential.rs). A failed
# request there means no credentials were found anywhere else.
_METADATA_PATHS = {
    "/latest/api/token": "AWS",
    "/latest/meta-data/iam/security-credentials": "AWS",
    "/computeMetadata/v1/instance/service-accounts/": "Google Cloud",
    "/metadata/identity/oauth2/token": "Azure",
}
_CREDENTIAL_HINTS = {
    "AWS": "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or the access_key_id and "
    "secret_access_key options)",
    "Google Cloud": "set GOOGLE_APPLICATION_CREDENTIALS or GOOGLE_SERVICE_ACCOUNT (or the "
    "service_account_path option)",
    "Azure": "set AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_KEY (or the account_key or "
    "sas_token option)",
}
# obstore's messages: "Error performing GET http://host:port/key in 1.2ms ..." and, in the
# debug dump that follows, the HTTP error's kind and the OS error's message.
_PERFORMING_RE = re.compile(r"Error performing [A-Z]+ ([a-zA-Z][\w+.-]*://[^\s/?]+)")
_METADATA_RE = re.compile(
    r"Error performing [A-Z]+ https?://[^\s/?]+("
    + "|".join(re.escape(p) for p in _METADATA_PATHS)
    + ")"
)
_CONNECT_RE = re.compile(r"\bkind: Connect\b")
_OS_MESSAGE_RE = re.compile(r'(?:message|error): "([^"]+)"')


def _missing_credentials(exc: BaseException) -> str | None:
    """The message for a failure of the credentials fallback, or None for other failures."""
    if not isinstance(exc, obstore_errors.GenericError):
        return None
    found = _METADATA_RE.search(str(exc))
    if found is None:
        return None
    cloud = _METADATA_PATHS[found.group(1)]
    return (
        f"no {cloud} credentials found: {_CREDENTIAL_HINTS[cloud]}, or "
        "--skip-signature (skip_signature=True) for public buckets"
    )


def _unreachable(exc: BaseException) -> str | None:
    """``"cannot connect to ENDPOINT: why"`` when no connection could be made, else None."""
    if not isinstance(exc, obstore_errors.BaseError):
        return None
    text = str(exc)
    if not _CONNECT_RE.search(text):
        return None
    found = _PERFORMING_RE.search(text)
    where = f"cannot connect to {found.group(1) if found else 'the endpoint'}"
    reasons = _OS_MESSAGE_RE.findall(text)
    return f"{where}: {reasons[-1]}" if reasons else where


def _source_error(exc: BaseException, path: str, action: str) -> PyBloomError:
    """The package's error for an OS or obstore failure met while doing ``action`` on ``path``."""
    missing = _missing_credentials(exc)
    if missing is not None:
        return SourceError(missing, path=path)
    unreachable = _unreachable(exc)
    if unreachable is not None:
        return SourceError(f"{action}: {unreachable}", path=path)
    if isinstance(exc, (FileNotFoundError, obstore_errors.NotFoundError, NotADirectoryError)):
        # NotADirectoryError: a path component is a regular file, as good as missing.
        return SourceNotFoundError(f"{action}: no such file or object", path=path)
    if isinstance(exc, obstore_errors.PreconditionError):
        return SourceError(
            f"{action}: the object changed since it was first read (ETag no longer matches)",
            path=path,
        )
    if isinstance(exc, (OSError, obstore_errors.BaseError)):
        return SourceError(f"{action} failed: {_describe(exc)}", path=path)
    # obstore reports a path it cannot parse as a bare ValueError.
    return InvalidArgumentError(f"{action}: {_describe(exc)}", path=path)


@contextlib.contextmanager
def _map_errors(path: str, action: str) -> Iterator[None]:
    """Turn OS and obstore failures raised inside into SourceError naming ``path``.

    A store that cannot be reached, and a run without credentials (the store's
    client then asks the cloud's instance metadata service, which fails off the
    cloud), are said as such, never as a missing file.
    """
    try:
        yield
    except PyBloomError:
        raise
    except (OSError, obstore_errors.BaseError, ValueError) as exc:
        raise _source_error(exc, path, action) from exc


async def _gather(call: Callable[..., Awaitable[T]], arglist: Sequence[tuple[Any, ...]]) -> list[T]:
    """Await ``call(*args)`` for each args concurrently; results in order.

    The first failure cancels the others and is raised as itself, not wrapped in an
    ExceptionGroup, so that the error mapping at the boundary sees the original exception.
    """
    results: list[Any] = [None] * len(arglist)
    failures: list[Exception] = []

    async def one(index: int, args: tuple[Any, ...]) -> None:
        try:
            results[index] = await call(*args)
        except Exception as exc:  # cancellation is a BaseException and passes through
            failures.append(exc)
            tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        for index, args in enumerate(arglist):
            tg.start_soon(one, index, args)
    if failures:
        raise failures[0]
    return results


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
            with _map_errors(self._path, "looking up the size"):
                identity = await self._stat()
            self.stats.add_metadata()
            self._remember(identity)
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
        planner's job (:func:`pybloom_async.read.plan.merge_ranges`).

        Raises
        ------
        InvalidArgumentError, SourceError, SourceNotFoundError
            As :meth:`read_range`; nothing is requested when any range is invalid.
        """
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
        with _map_errors(self._path, "reading"):
            results = await self._read(wanted)
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
            with _map_errors(self._path, "reading the tail"):
                found = await self._read_suffix(n)
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

    async def _read_suffix(self, n: int) -> tuple[bytes, SourceIdentity] | None:
        """Read the suffix and the identity in one request, or None if not supported."""
        return None


# --------------------------------------------------------------------------- memory


class MemorySource(ByteSource):
    """A source over bytes in memory, for tests and already-downloaded files."""

    def __init__(
        self,
        data: bytes | bytearray | memoryview,
        *,
        path: str = "<memory>",
        stats: SourceStats | None = None,
        etag: str | None = None,
    ) -> None:
        # One copy makes the content immutable, as a file's is between reads.
        self._data = bytes(data)
        super().__init__(path, stats=stats, etag=etag)

    async def _stat(self) -> SourceIdentity:
        return SourceIdentity(self._path, len(self._data), self._etag, None)

    async def _read(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        # Yield once, as a real source would, so callers' cancellation paths are exercised.
        await anyio.lowlevel.checkpoint()
        return [self._data[start:end] for start, end in ranges]


# --------------------------------------------------------------------------- local files


if hasattr(os, "pread"):

    def _pread(fd: int, size: int, offset: int, _lock: threading.Lock) -> bytes:
        return os.pread(fd, size, offset)

else:  # pragma: no cover - Windows has no pread: serialise seek + read

    def _pread(fd: int, size: int, offset: int, _lock: threading.Lock) -> bytes:
        with _lock:
            os.lseek(fd, offset, os.SEEK_SET)
            return os.read(fd, size)


def _read_exactly(fd: int, start: int, end: int, lock: threading.Lock) -> bytes:
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


def _local_identity(path: str, st: os.stat_result) -> SourceIdentity:
    return SourceIdentity(
        path,
        st.st_size,
        f"{st.st_ino:x}-{st.st_mtime_ns:x}-{st.st_size:x}",
        datetime.fromtimestamp(st.st_mtime_ns / 1e9, tz=timezone.utc),
    )


def _open_regular(path: str) -> tuple[int, SourceIdentity]:
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
    return fd, _local_identity(path, st)


class LocalFileSource(ByteSource):
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
            fd, identity = await anyio.to_thread.run_sync(
                _open_regular, self._path, limiter=self._limiter
            )
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

    async def _open(self) -> None:
        self._check_open()
        with _map_errors(self._path, "opening"):
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
            with _map_errors(self._path, "opening"):
                await self._descriptor()
        assert self._size is not None
        return self._size

    async def _read(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        await self._descriptor()
        if len(ranges) == 1:
            return [await self._pread_in_thread(*ranges[0])]
        return await _gather(self._pread_in_thread, ranges)

    async def _pread_in_thread(self, start: int, end: int) -> bytes:
        # The check and the count happen before the first switch point, so aclose() either
        # ran before (we refuse) or sees this read in flight (and leaves the close to us).
        self._check_open()
        fd = self._fd
        assert fd is not None
        self._in_flight += 1
        try:
            return await anyio.to_thread.run_sync(
                _read_exactly, fd, start, end, self._seek_lock, limiter=self._limiter
            )
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


# --------------------------------------------------------------------------- object stores


_YEAR = 365 * 86400  # longer timeouts are slips (milliseconds for seconds)


@dataclass(frozen=True)
class StoreOptions:
    """How to reach an object store. ``None`` means: what obstore reads from the environment.

    obstore reads the standard variables when a store is built: ``AWS_ACCESS_KEY_ID``,
    ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``,
    ``AZURE_STORAGE_ACCOUNT_NAME``, ``AZURE_STORAGE_ACCOUNT_KEY``, ``AZURE_STORAGE_SAS_KEY``,
    ``AZURE_STORAGE_ENDPOINT``, ``GOOGLE_SERVICE_ACCOUNT``, ``GOOGLE_SERVICE_ACCOUNT_KEY``,
    ``GOOGLE_APPLICATION_CREDENTIALS`` and the others listed in its ``S3Config``,
    ``AzureConfig`` and ``GCSConfig``. Timeouts and retries are always set explicitly.

    Parameters
    ----------
    endpoint:
        S3 endpoint, Azure blob endpoint or GCS base URL (for MinIO, azurite, fakes...).
        An ``http://`` endpoint turns ``allow_http`` on unless it is set to False.
    region:
        S3 region.
    access_key_id, secret_access_key, session_token:
        S3 credentials.
    account_name, account_key, sas_token:
        Azure storage account, its key, or a SAS token (percent-encoded query string).
    service_account_path, service_account_key:
        GCS service-account JSON file, or its content.
    skip_signature:
        Send unsigned requests (public buckets), S3 / GCS / Azure.
    allow_http:
        Allow plain-HTTP endpoints. None: the ``AWS_ALLOW_HTTP`` / ``AZURE_ALLOW_HTTP`` /
        ``GOOGLE_ALLOW_HTTP`` variable (obstore's own reading of it is lost once client
        options are passed, so it is read here), else off. ``http://`` URLs always allow it.
    timeout:
        Seconds for a whole request, connection to last byte (obstore's default: 30).
    connect_timeout:
        Seconds to establish a connection (obstore's default: 5).
    max_retries:
        Retries of a failed request: 5xx responses, connection errors and timeouts,
        with exponential backoff from 100 ms up to 10 s. 5 instead of obstore's 10, so a
        dead endpoint fails in about half a minute rather than minutes.
    retry_timeout:
        Seconds after which no retry starts; 60 instead of obstore's 180 for the same
        reason.
    extra_config:
        More store-specific keys passed as-is to obstore's S3/Azure/GCS config (e.g.
        ``{"virtual_hosted_style_request": "true"}``).

    Raises
    ------
    InvalidArgumentError
        A value has the wrong type or is out of range.
    """

    endpoint: str | None = None
    region: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None
    account_name: str | None = None
    account_key: str | None = None
    sas_token: str | None = None
    service_account_path: str | None = None
    service_account_key: str | None = None
    skip_signature: bool | None = None
    allow_http: bool | None = None
    timeout: float = 30.0
    connect_timeout: float = 5.0
    max_retries: int = 5
    retry_timeout: float = 60.0
    extra_config: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if f.name in _STRING_OPTIONS and (not isinstance(value, str) or not value):
                raise InvalidArgumentError(f"option {f.name} must be a non-empty string")
            if f.name in ("skip_signature", "allow_http") and not isinstance(value, bool):
                raise InvalidArgumentError(f"option {f.name} must be True, False or None")
        # Stored as checked (plain float and int): the options are part of the store-cache key.
        for name in ("timeout", "connect_timeout", "retry_timeout"):
            object.__setattr__(self, name, seconds(name, getattr(self, name), maximum=_YEAR))
        retries = integer("max_retries", self.max_retries, minimum=0, maximum=100)
        object.__setattr__(self, "max_retries", retries)
        if self.extra_config is not None:
            if not isinstance(self.extra_config, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in self.extra_config.items()
            ):
                raise InvalidArgumentError("extra_config must map strings to strings")
            # Freeze a private copy: the options are part of the store-cache key.
            object.__setattr__(self, "extra_config", dict(sorted(self.extra_config.items())))

    def _given(self) -> list[str]:
        """Names of the fields set away from their defaults (an empty extra_config is unset)."""
        given = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "extra_config":
                if value:
                    given.append(f.name)
            elif value != f.default:
                given.append(f.name)
        return given

    def _cache_key(self) -> tuple[Any, ...]:
        return tuple(
            tuple(sorted(v.items())) if isinstance(v, Mapping) else v
            for v in (getattr(self, f.name) for f in dataclasses.fields(self))
        )


_STRING_OPTIONS = frozenset(
    {
        "endpoint",
        "region",
        "access_key_id",
        "secret_access_key",
        "session_token",
        "account_name",
        "account_key",
        "sas_token",
        "service_account_path",
        "service_account_key",
    }
)
_COMMON_OPTIONS = frozenset(
    {"allow_http", "timeout", "connect_timeout", "max_retries", "retry_timeout"}
)
# Which options mean something to which store; any other one given is a mistake.
_APPLICABLE = {
    "s3": _COMMON_OPTIONS
    | {"endpoint", "region", "access_key_id", "secret_access_key", "session_token"}
    | {"skip_signature", "extra_config"},
    "gs": _COMMON_OPTIONS
    | {"endpoint", "service_account_path", "service_account_key", "skip_signature"}
    | {"extra_config"},
    "az": _COMMON_OPTIONS
    | {"endpoint", "account_name", "account_key", "sas_token", "skip_signature"}
    | {"extra_config"},
    "http": _COMMON_OPTIONS,
    "file": frozenset(),
}
_ENV_PREFIX = {"s3": "AWS", "gs": "GOOGLE", "az": "AZURE"}
_SCHEMES = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gs",
    "az": "az",
    "azure": "az",
    "abfs": "az",
    "abfss": "az",
    "http": "http",
    "https": "http",
    "file": "file",
}
_URL_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


@dataclass(frozen=True)
class _Location:
    """A parsed location: which store kind, which bucket/container/host, which key."""

    kind: str  # "file", "s3", "gs", "az", "http"
    display: str
    path: str = ""  # local path, for kind "file"
    bucket: str = ""  # bucket, container, or scheme://host for http
    key: str = ""
    account: str | None = None  # Azure account from an abfs://container@account... URL


def _parse_location(location: str | os.PathLike[str]) -> _Location:
    """Split a path or URL into store kind, bucket and key, without touching the network."""
    if not isinstance(location, str):
        if isinstance(location, os.PathLike):
            path = os.fspath(location)
            if isinstance(path, str):
                return _Location("file", path, path=path)
        raise InvalidArgumentError(
            f"location must be a path or URL string, not {type(location).__name__}"
        )
    if not location:
        raise InvalidArgumentError("location is empty")
    match = _URL_RE.match(location)
    if match is None:
        return _Location("file", location, path=location)
    scheme = match.group(1).lower()
    kind = _SCHEMES.get(scheme)
    if kind is None:
        raise InvalidArgumentError(
            f"unsupported URL scheme {scheme!r} in {location!r}; expected a local path or "
            "one of file, s3, s3a, gs, az, azure, abfs, abfss, http, https"
        )
    parts = urllib.parse.urlsplit(location)
    if parts.query or parts.fragment:
        raise InvalidArgumentError(f"URL {location!r} has a query or fragment; not supported")
    if kind == "file":
        if parts.netloc not in ("", "localhost"):
            raise InvalidArgumentError(f"file URL {location!r} names a remote host")
        path = urllib.request.url2pathname(parts.path)
        return _Location("file", path, path=path)
    if not parts.netloc:
        raise InvalidArgumentError(f"URL {location!r} has no bucket, container or host")
    if kind == "http":
        # A real URL: percent-escapes are undone here and redone by obstore.
        key = _check_key(location, urllib.parse.unquote(parts.path.lstrip("/")))
        return _Location("http", location, bucket=f"{scheme}://{parts.netloc}", key=key)
    key = _check_key(location, parts.path.lstrip("/"))
    bucket = parts.netloc
    account = None
    if kind == "az" and "@" in bucket:
        # abfs[s]://container@account.dfs.core.windows.net/path (the Hadoop ABFS form).
        bucket, host = bucket.split("@", 1)
        account = host.split(".", 1)[0] or None
    if not bucket:
        raise InvalidArgumentError(f"URL {location!r} has no bucket or container")
    return _Location(kind, location, bucket=bucket, key=key, account=account)


def _check_key(location: str, key: str) -> str:
    """Refuse keys obstore cannot address (it raises a bare ValueError for them)."""
    # A trailing "/" is allowed: it marks a prefix to list.
    segments = key[:-1].split("/") if key.endswith("/") else key.split("/")
    if key and any(seg in ("", ".", "..") for seg in segments):
        raise InvalidArgumentError(
            f"URL {location!r} has an empty, '.' or '..' path segment; object keys cannot"
        )
    return key


def _env_flag(name: str) -> bool | None:
    value = os.environ.get(name)
    if value is None:
        return None
    return value.strip().lower() in ("1", "true", "yes", "on")


def _client_options(kind: str, options: StoreOptions, url_scheme_http: bool) -> ClientConfig:
    client: ClientConfig = {
        "timeout": timedelta(seconds=options.timeout),
        "connect_timeout": timedelta(seconds=options.connect_timeout),
    }
    allow_http = options.allow_http
    if allow_http is None and options.endpoint is not None:
        allow_http = options.endpoint.lower().startswith("http://") or None
    if allow_http is None and kind in _ENV_PREFIX:
        allow_http = _env_flag(f"{_ENV_PREFIX[kind]}_ALLOW_HTTP")
    if allow_http is None and url_scheme_http:
        allow_http = True
    if allow_http is not None:
        client["allow_http"] = allow_http
    return client


def _retry_config(options: StoreOptions) -> RetryConfig:
    return {
        "max_retries": options.max_retries,
        "retry_timeout": timedelta(seconds=options.retry_timeout),
        "backoff": {
            "init_backoff": timedelta(milliseconds=100),
            "max_backoff": timedelta(seconds=10),
            "base": 2,
        },
    }


def _store_config(loc: _Location, options: StoreOptions) -> dict[str, str]:
    """Store-specific config keys for the options that were given (others: environment)."""
    names: dict[str, dict[str, str]] = {
        "s3": {
            "endpoint": "endpoint",
            "region": "region",
            "access_key_id": "access_key_id",
            "secret_access_key": "secret_access_key",
            "session_token": "session_token",
        },
        "gs": {
            "endpoint": "base_url",
            "service_account_path": "service_account",
            "service_account_key": "service_account_key",
        },
        "az": {
            "endpoint": "endpoint",
            "account_name": "account_name",
            "account_key": "account_key",
            "sas_token": "sas_key",
        },
    }
    config: dict[str, str] = dict(options.extra_config or {})
    for option, key in names[loc.kind].items():
        value = getattr(options, option)
        if value is not None:
            config[key] = value
    if options.skip_signature is not None:
        config["skip_signature"] = "true" if options.skip_signature else "false"
    if loc.kind == "az" and loc.account is not None and "account_name" not in config:
        config["account_name"] = loc.account
    return config


def _build_store(loc: _Location, options: StoreOptions) -> ObjectStore:
    client = _client_options(loc.kind, options, loc.bucket.startswith("http://"))
    retry = _retry_config(options)
    if loc.kind == "http":
        return HTTPStore(loc.bucket, client_options=client, retry_config=retry)
    # The config keys are built from tables (and extra_config), so they are checked by
    # obstore at run time (UnknownConfigurationKeyError), not by the TypedDicts.
    config: Any = _store_config(loc, options)
    if loc.kind == "s3":
        return S3Store(loc.bucket, config=config, client_options=client, retry_config=retry)
    if loc.kind == "gs":
        return GCSStore(loc.bucket, config=config, client_options=client, retry_config=retry)
    return AzureStore(loc.bucket, config=config, client_options=client, retry_config=retry)


_STORE_CACHE: OrderedDict[tuple[Any, ...], ObjectStore] = OrderedDict()
_STORE_CACHE_LOCK = threading.Lock()
# Distinct (store, options) pairs in one process are few; the bound only stops a caller
# cycling through endless option sets from growing the cache without limit.
_STORE_CACHE_SIZE = 64


def _cached_store(loc: _Location, options: StoreOptions) -> ObjectStore:
    """One store client per (kind, bucket/host, options, account): it pools connections."""
    # The environment is read when a store is built; the relevant variables are part of the
    # key so that a changed environment (tests, credential rotation) gets a fresh client.
    env = tuple(
        sorted(
            (k, v)
            for k, v in os.environ.items()
            if k.startswith(_ENV_PREFIX.get(loc.kind, "\0") + "_")
        )
    )
    key = (loc.kind, loc.bucket, loc.account, options._cache_key(), env)
    with _STORE_CACHE_LOCK:
        store = _STORE_CACHE.get(key)
        if store is not None:
            _STORE_CACHE.move_to_end(key)
            return store
    try:
        store = _build_store(loc, options)
    except (obstore_errors.BaseError, ValueError, TypeError) as exc:
        raise InvalidArgumentError(
            f"cannot configure the {loc.kind} store: {_describe(exc)}", path=loc.display
        ) from exc
    with _STORE_CACHE_LOCK:
        store = _STORE_CACHE.setdefault(key, store)
        _STORE_CACHE.move_to_end(key)
        while len(_STORE_CACHE) > _STORE_CACHE_SIZE:
            _STORE_CACHE.popitem(last=False)
    return store


def clear_store_cache() -> None:
    """Forget all cached store clients (new ones read the environment again)."""
    with _STORE_CACHE_LOCK:
        _STORE_CACHE.clear()


def _meta_identity(path: str, meta: Mapping[str, Any]) -> SourceIdentity:
    size = meta["size"]
    if not isinstance(size, int) or size < 0:
        raise SourceError(f"the store reported an invalid size {size!r}", path=path)
    return SourceIdentity(path, size, meta.get("e_tag"), meta.get("last_modified"))


class ObjectStoreSource(ByteSource):
    """An object in S3, GCS, Azure Blob or on an HTTP server, read with obstore's sync API.

    Each call runs in a worker thread (``anyio.to_thread.run_sync``) under the limiter.
    Usually made by :func:`open_source`.
    """

    def __init__(
        self,
        store: ObjectStore,
        key: str,
        *,
        url: str,
        stats: SourceStats | None = None,
        limiter: CapacityLimiter | None = None,
        size: int | None = None,
        etag: str | None = None,
        mtime: datetime | None = None,
        suffix_requests: bool = True,
    ) -> None:
        super().__init__(url, stats=stats, size=size, etag=etag, mtime=mtime)
        if not key:
            raise InvalidArgumentError("URL names a bucket or host but no object", path=url)
        self.store = store
        self.key = key
        self._limiter = limiter
        # Azure's Blob service has no suffix ranges (obstore raises NotSupportedError).
        self._suffix_requests = suffix_requests

    async def _run(self, func: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await anyio.to_thread.run_sync(
            functools.partial(func, *args, **kwargs), limiter=self._limiter
        )

    async def _stat(self) -> SourceIdentity:
        meta = await self._run(obstore.head, self.store, self.key)
        return _meta_identity(self._path, meta)

    def _get_range(self, start: int, end: int, etag: str | None) -> bytes:
        options: GetOptions = {"range": (start, end)}
        if etag is not None:
            options["if_match"] = etag
        # bytes() copies out of the Rust buffer here, in the worker thread.
        return bytes(obstore.get(self.store, self.key, options=options).bytes())

    async def _read(self, ranges: list[tuple[int, int]]) -> list[bytes]:
        # Pin every read to the version whose size (and footer) was read first: if the object
        # is replaced meanwhile, If-Match fails (PreconditionError) instead of mixing bytes of
        # two versions, which could yield a bitset of the wrong file. Weak ETags (W/"...")
        # never match under If-Match's strong comparison, so they are not sent.
        etag = self._etag if self._etag and not self._etag.startswith("W/") else None
        if len(ranges) == 1:
            return [await self._run(self._get_range, *ranges[0], etag)]
        # One thread call per range, concurrently (bounded by the limiter): obstore's
        # get_ranges would batch them but takes no If-Match.
        return await _gather(
            self._run, [(self._get_range, start, end, etag) for start, end in ranges]
        )

    def _get_suffix(self, n: int) -> tuple[bytes, SourceIdentity] | None:
        try:
            result = obstore.get(self.store, self.key, options={"range": {"suffix": n}})
            data = bytes(result.bytes())
        except FileNotFoundError:
            raise
        except (obstore_errors.BaseError, OSError):
            # An empty object cannot answer a range request (servers reply 200 or 416, which
            # obstore reports as unsupported or as a generic error). Find out with a HEAD;
            # any other object re-raises the original error.
            meta = obstore.head(self.store, self.key)
            if meta["size"] == 0:
                return b"", _meta_identity(self._path, meta)
            raise
        return data, _meta_identity(self._path, result.meta)

    async def _read_suffix(self, n: int) -> tuple[bytes, SourceIdentity] | None:
        if not self._suffix_requests:
            return None
        return await self._run(self._get_suffix, n)


# --------------------------------------------------------------------------- entry points


def _resolve_options(options: StoreOptions | None, values: Mapping[str, Any]) -> StoreOptions:
    # One shared default (it is immutable): building and validating StoreOptions on every
    # open cost more than reading a small footer from the page cache.
    base = options if options is not None else _DEFAULT_OPTIONS
    if not isinstance(base, StoreOptions):
        raise InvalidArgumentError(f"options must be StoreOptions, not {type(base).__name__}")
    if not values:
        return base
    known = {f.name for f in dataclasses.fields(StoreOptions)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise InvalidArgumentError(
            f"unknown option(s) {', '.join(unknown)}; expected some of {', '.join(sorted(known))}"
        )
    return dataclasses.replace(base, **values)


_DEFAULT_OPTIONS = StoreOptions()


def _check_applicable(loc: _Location, options: StoreOptions) -> None:
    if options is _DEFAULT_OPTIONS:
        return  # nothing given, nothing stray
    stray = [name for name in options._given() if name not in _APPLICABLE[loc.kind]]
    if stray:
        where = "local files" if loc.kind == "file" else f"{loc.kind} URLs"
        raise InvalidArgumentError(
            f"option(s) {', '.join(stray)} do not apply to {where}", path=loc.display
        )


def open_source(
    location: str | os.PathLike[str] | FileInfo,
    *,
    options: StoreOptions | None = None,
    stats: SourceStats | None = None,
    limiter: CapacityLimiter | None = None,
    **option_values: object,
) -> ByteSource:
    """Make a source for a local path or a URL; no I/O happens until the first read.

    Parameters
    ----------
    location:
        A local path, ``file://`` URL, ``s3://bucket/key`` (or ``s3a://``),
        ``gs://bucket/key``, ``az://container/key`` (or ``azure://``, ``abfs[s]://container/key``,
        ``abfs[s]://container@account.dfs.core.windows.net/key``), ``http(s)://host/path``,
        or a :class:`FileInfo` from :func:`list_parquet_files` (its size saves a HEAD).
    options, **option_values:
        Object-store settings (:class:`StoreOptions`); keyword values override fields of
        ``options``. Options that do not apply to the location's kind are refused.
    stats:
        Counters to update; share one object to count over many sources.
    limiter:
        Bounds worker threads; default: anyio's default thread limiter.

    Raises
    ------
    InvalidArgumentError
        Unsupported scheme, malformed URL, unknown or inapplicable option, or a store that
        cannot be configured from the options and environment.
    """
    info: FileInfo | None = None
    if isinstance(location, FileInfo):
        info, location = location, location.path
    loc = _parse_location(location)
    resolved = _resolve_options(options, option_values)
    _check_applicable(loc, resolved)
    if loc.kind == "file":
        return LocalFileSource(loc.path, stats=stats, limiter=limiter)
    store = _cached_store(loc, resolved)
    return ObjectStoreSource(
        store,
        loc.key,
        url=loc.display,
        stats=stats,
        limiter=limiter,
        size=info.size if info is not None else None,
        etag=info.etag if info is not None else None,
        mtime=info.mtime if info is not None else None,
        suffix_requests=loc.kind != "az",
    )


def _is_hidden(name: str) -> bool:
    # Hadoop's convention (FileInputFormat's hidden-file filter), which Spark and Hive
    # follow: names starting with "_" or "." are metadata or in-progress output
    # (_SUCCESS, _temporary/, .part-0.parquet.crc), never data.
    return name.startswith(("_", "."))


def _is_parquet(name: str) -> bool:
    return name.lower().endswith(".parquet") and not _is_hidden(name)


def _list_local(path: str) -> list[FileInfo]:
    st = os.stat(path)
    if not stat.S_ISDIR(st.st_mode):
        identity = _local_identity(path, st)
        return [FileInfo(path, st.st_size, identity.etag, identity.mtime)]
    found: list[FileInfo] = []
    for root, dirs, files in os.walk(path, onerror=_raise, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not _is_hidden(d))
        for name in sorted(files):
            if _is_parquet(name):
                full = os.path.join(root, name)
                fst = os.stat(full)
                identity = _local_identity(full, fst)
                found.append(FileInfo(full, fst.st_size, identity.etag, identity.mtime))
    return found


def _raise(exc: OSError) -> None:
    raise exc


def _list_store(store: ObjectStore, loc: _Location) -> tuple[list[FileInfo], bool]:
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
            identity = _meta_identity(base + key, meta)
            found.append(FileInfo(base + key, identity.size, identity.etag, identity.mtime))
    found.sort(key=lambda f: f.path)
    return found, anything


async def list_parquet_files(
    location: str | os.PathLike[str],
    *,
    options: StoreOptions | None = None,
    stats: SourceStats | None = None,
    limiter: CapacityLimiter | None = None,
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

    Raises
    ------
    SourceNotFoundError
        The path does not exist, or no object at all lies under the prefix.
    SourceError
        Listing failed (plain HTTP servers cannot list: name the files instead).
    InvalidArgumentError
        As :func:`open_source`.
    """
    loc = _parse_location(location)
    resolved = _resolve_options(options, option_values)
    _check_applicable(loc, resolved)
    counter = stats if stats is not None else SourceStats()
    if loc.kind == "file":
        with _map_errors(loc.display, "listing"):
            files = await anyio.to_thread.run_sync(_list_local, loc.path, limiter=limiter)
        counter.add_metadata()
        return files
    store = _cached_store(loc, resolved)
    if loc.key and not loc.key.endswith("/"):
        # The location may name one object: one HEAD tells. Object stores have no
        # directories, so "not found" here means: list it as a prefix.
        meta: Mapping[str, Any] | None
        try:
            with _map_errors(loc.display, "looking up"):
                meta = await anyio.to_thread.run_sync(obstore.head, store, loc.key, limiter=limiter)
        except SourceNotFoundError:
            meta = None
        counter.add_metadata()
        if meta is not None:
            identity = _meta_identity(loc.display, meta)
            return [FileInfo(loc.display, identity.size, identity.etag, identity.mtime)]
    try:
        with _map_errors(loc.display, "listing"):
            files, anything = await anyio.to_thread.run_sync(
                _list_store, store, loc, limiter=limiter
            )
    except SourceError as exc:
        answered = exc.__cause__ is None or _unreachable(exc.__cause__) is None
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
