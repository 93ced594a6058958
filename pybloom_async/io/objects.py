"""Sources opened by location: the object-store source, and :func:`open_source`.

:func:`open_source` makes the source of a local path or URL: a local file, or an object
(S3, GCS, Azure, HTTP) read through the cached store client of its options
(``io/store.py``), with obstore's *sync* API in worker threads.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import obstore
import obstore.exceptions as obstore_errors
from anyio import CapacityLimiter

from ..errors import InvalidArgumentError
from ..tasks.loops import to_worker
from ..tasks.workers import gather
from .address import parse_address
from .base import ByteSource, FileInfo, SourceStats, T
from .failures import gave_no_answer
from .identity import SourceIdentity, meta_identity
from .local import BlockingLocalFileSource, LocalFileSource
from .store import StoreOptions, cached_store, check_applicable, resolve_options

if TYPE_CHECKING:
    from obstore import GetOptions
    from obstore.store import ObjectStore


class ObjectStoreSource(ByteSource):
    """An object in S3, GCS, Azure Blob or on an HTTP server, read with obstore's sync API.

    Each call runs in a worker thread (:func:`~pybloom_async.tasks.loops.to_worker`) under
    the limiter.
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
        return await to_worker(functools.partial(func, *args, **kwargs), limiter=self._limiter)

    async def _stat(self) -> SourceIdentity:
        meta = await self._run(obstore.head, self.store, self.key)
        return meta_identity(self._path, meta)

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
        return await gather(
            self._run, [(self._get_range, start, end, etag) for start, end in ranges]
        )

    def _get_suffix(self, n: int) -> tuple[bytes, SourceIdentity] | None:
        try:
            result = obstore.get(self.store, self.key, options={"range": {"suffix": n}})
            data = bytes(result.bytes())
        except FileNotFoundError:
            raise
        except (obstore_errors.BaseError, OSError) as exc:
            if gave_no_answer(exc):
                raise  # a store that did not answer is not asked again for this file
            # An empty object cannot answer a range request (servers reply 200 or 416, which
            # obstore reports as unsupported or as a generic error). Find out with a HEAD;
            # any other object re-raises the original error.
            meta = obstore.head(self.store, self.key)
            if meta["size"] == 0:
                return b"", meta_identity(self._path, meta)
            raise
        return data, meta_identity(self._path, result.meta)

    async def _read_suffix(self, n: int) -> tuple[bytes, SourceIdentity] | None:
        if not self._suffix_requests:
            return None
        return await self._run(self._get_suffix, n)


def open_source(
    location: str | os.PathLike[str] | FileInfo,
    *,
    options: StoreOptions | None = None,
    stats: SourceStats | None = None,
    limiter: CapacityLimiter | None = None,
    blocking: bool = False,
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
    blocking:
        A local file read in the calling thread (:class:`BlockingLocalFileSource`), for
        work running inline; only local files can be.

    Raises
    ------
    InvalidArgumentError
        Unsupported scheme, malformed URL, unknown or inapplicable option, a store that
        cannot be configured from the options and environment, or ``blocking`` for an
        object store.
    """
    info: FileInfo | None = None
    if isinstance(location, FileInfo):
        info, location = location, location.path
    loc = parse_address(location)
    resolved = resolve_options(options, option_values)
    check_applicable(loc, resolved)
    if loc.kind == "file":
        if blocking:
            return BlockingLocalFileSource(loc.path, stats=stats or SourceStats())
        return LocalFileSource(loc.path, stats=stats, limiter=limiter)
    if blocking:
        raise InvalidArgumentError(
            "an object-store file cannot be read in the calling thread", path=loc.display
        )
    store = cached_store(loc, resolved)
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
