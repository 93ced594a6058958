"""Building sidecar indexes: one per data file, hashed from its columns, written atomically."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import numpy as np

from ..checks import integer, positive_int, probability, require_pyarrow
from ..core.filter import SplitBlockBloomFilter
from ..errors import (
    InvalidArgumentError,
    ParquetFormatError,
    PredicateError,
    PyBloomError,
    SourceError,
    UnsupportedTypeError,
)
from ..io.address import is_local
from ..io.base import FileInfo, location_text
from ..io.failures import map_errors
from ..io.files import FileStream, expand_paths
from ..io.identity import SourceIdentity, mtime_ns, stat_identity, store_etag
from ..io.sinks import remove_if_present, write_atomic
from ..io.store import StoreOptions
from ..parquet import (
    ColumnDescriptor,
    FileMetaData,
    decode_file_metadata,
    parse_footer_tail,
)
from ..read.columns import ColumnReader, arrow_failures, unsupported_reason
from ..read.reader import BloomReader
from ..read.run import RunOptions, open_run, run_options
from ..tasks.loops import sync_twin, to_worker
from ..tasks.workers import for_each
from .format import (
    MAX_INDEX_BYTES,
    IndexedColumn,
    SidecarIndex,
    base_name,
    encode_index,
    index_location,
    legacy_index_location,
    local_path,
)
from .parse import too_large

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..read.run import RunKeywords


log = logging.getLogger(__name__)
#: Object-store data files are read whole into memory to be indexed; larger
#: ones are refused (``max_object_bytes``).
MAX_OBJECT_BYTES = 4 * 1024 * 1024 * 1024


# ---- building -------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexBuild:
    """The outcome of indexing one data file.

    ``error`` is None when the index was written; otherwise it says why not
    (and nothing was written for that file). ``replaced`` is the index under the name
    earlier versions wrote (``.index.v1.parquet``), removed once the new one was
    written; None when there was none.
    """

    file: str
    index: str
    columns: tuple[str, ...]
    num_rows: int | None
    index_bytes: int | None
    error: str | None = None
    replaced: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "file": self.file,
            "index": self.index,
            "columns": list(self.columns),
            "num_rows": self.num_rows,
            "index_bytes": self.index_bytes,
            "error": self.error,
            "replaced": self.replaced,
        }


def _resolve_columns(
    meta: FileMetaData, columns: Sequence[str], path: str
) -> list[ColumnDescriptor]:
    out = []
    for name in columns:
        try:
            desc = meta.schema.column(name)
        except PredicateError as exc:
            raise exc.with_context(path=path) from None
        reason = unsupported_reason(desc)
        if reason is not None:
            raise UnsupportedTypeError(f"cannot index: {reason}", path=path, column=name)
        out.append(desc)
    return out


def _ndv_for(ndv: int | Mapping[str, int] | None, column: str) -> int | None:
    value = ndv.get(column) if isinstance(ndv, Mapping) else ndv
    if value is None:
        return None
    return integer("ndv", value, minimum=0, column=column)


def _hash_file(
    source: str | bytes,
    meta: FileMetaData,
    descs: Sequence[ColumnDescriptor],
    identity: SourceIdentity,
    data_file: str,
    fpp: float,
    ndv: int | Mapping[str, int] | None,
    path: str,
) -> SidecarIndex:
    """Hash every column over the whole file and build the filters (CPU: a worker thread);
    pyarrow's own failures are ParquetFormatError naming the file."""
    with arrow_failures(path):
        reader = ColumnReader(source)
        if reader.num_row_groups != len(meta.row_groups):
            groups = len(meta.row_groups)
            raise ParquetFormatError(
                f"pyarrow sees {reader.num_row_groups} row groups, the footer {groups}", path=path
            )
        columns: list[IndexedColumn] = []
        for desc in descs:
            uniques = []
            value_count = 0
            nulls = 0
            for rg in meta.row_groups:
                hashes = reader.hashes(rg.index, desc)
                if desc.max_repetition_level == 0 and len(hashes) > rg.num_rows:
                    raise ParquetFormatError(
                        f"{len(hashes)} values in a row group of {rg.num_rows} rows",
                        path=path,
                        row_group=rg.index,
                        column=desc.path,
                    )
                value_count += len(hashes)
                nulls += rg.num_rows - len(hashes)
                uniques.append(np.unique(hashes))
            distinct = (
                np.unique(np.concatenate(uniques)) if uniques else np.empty(0, dtype=np.uint64)
            )
            wanted = _ndv_for(ndv, desc.path)
            size_for = len(distinct) if wanted is None else wanted
            bloom = SplitBlockBloomFilter.for_ndv(size_for, fpp)
            bloom.insert_hashes(distinct)
            columns.append(
                IndexedColumn(
                    descriptor=ColumnDescriptor(
                        index=len(columns),
                        path_parts=desc.path_parts,
                        physical_type=desc.physical_type,
                        type_length=desc.type_length,
                        max_repetition_level=desc.max_repetition_level,
                        logical_type=desc.logical_type,
                    ),
                    ndv=size_for,
                    fpp=fpp,
                    distinct_count=len(distinct),
                    value_count=value_count,
                    null_count=nulls if desc.max_repetition_level == 0 else -1,
                    filter=bloom,
                )
            )
        return SidecarIndex(
            data_file=data_file,
            file_size=identity.size,
            file_mtime_ns=mtime_ns(identity),
            file_etag=store_etag(identity),
            file_inode=identity.inode[1] if identity.inode is not None else 0,
            file_ctime_ns=identity.ctime_ns or 0,
            num_rows=meta.num_rows,
            num_row_groups=len(meta.row_groups),
            columns=tuple(columns),
        )


def _footer_of(data: bytes, path: str) -> FileMetaData:
    location = parse_footer_tail(data, len(data), path=path)
    return decode_file_metadata(location.metadata_bytes(data), path=path, lazy=False)


@dataclass
class _BuildContext:
    reader: BloomReader
    columns: tuple[str, ...]
    fpp: float
    ndv: int | Mapping[str, int] | None
    cpu: anyio.CapacityLimiter
    max_index_bytes: int
    max_object_bytes: int
    strict: bool


async def _build_one(ctx: _BuildContext, location: str | FileInfo) -> IndexBuild:
    path = location_text(location)
    index_path = index_location(path)
    try:
        data_file = base_name(path)
        if is_local(path):
            local = local_path(path)
            with map_errors(path, "opening"):
                before = await to_worker(stat_identity, local)
            ctx.reader.stats.add_metadata()
            meta = (await ctx.reader.footer(location)).metadata
            index = await to_worker(
                _hash_file, local, meta, _resolve_columns(meta, ctx.columns, path), before,
                data_file, ctx.fpp, ctx.ndv, path, limiter=ctx.cpu,
            )  # fmt: skip
            with map_errors(path, "opening"):
                after = await to_worker(stat_identity, local)
            ctx.reader.stats.add_metadata()
            if after != before:
                raise SourceError("the file changed while it was being indexed", path=path)
            if meta.num_rows != index.num_rows or before.size != index.file_size:
                raise SourceError("the file changed while it was being indexed", path=path)
        else:
            async with ctx.reader.open(location) as source:
                if isinstance(location, FileInfo) and location.size > ctx.max_object_bytes:
                    raise _object_too_large(location.size, ctx.max_object_bytes, path)
                data = await source.read_suffix(ctx.max_object_bytes)
                identity = await source.identity()
            if identity.size > ctx.max_object_bytes:
                raise _object_too_large(identity.size, ctx.max_object_bytes, path)
            meta = await to_worker(_footer_of, data, path, limiter=ctx.cpu)
            index = await to_worker(
                _hash_file, data, meta, _resolve_columns(meta, ctx.columns, path),
                identity, data_file, ctx.fpp, ctx.ndv, path, limiter=ctx.cpu,
            )  # fmt: skip
        payload = await to_worker(encode_index, index, limiter=ctx.cpu)
        if len(payload) > ctx.max_index_bytes:
            raise too_large(len(payload), ctx.max_index_bytes, index_path)
        await to_worker(_write_index, index_path, payload, ctx.reader.options)
        replaced = await to_worker(_remove_legacy, path, ctx.reader.options)
        return IndexBuild(
            path, index_path, ctx.columns, index.num_rows, len(payload), replaced=replaced
        )
    except PyBloomError as exc:
        if ctx.strict:
            raise exc.with_context(path=path) from None
        return IndexBuild(path, index_path, ctx.columns, None, None, str(exc))


def _object_too_large(size: int, limit: int, path: str) -> SourceError:
    return SourceError(
        f"object of {size} bytes is above the limit of {limit} for indexing in memory "
        "(max_object_bytes)",
        path=path,
    )


def _write_index(location: str, payload: bytes, options: StoreOptions | None) -> None:
    if is_local(location):
        local = local_path(location)
        try:
            os.makedirs(os.path.dirname(local) or ".", exist_ok=True)
        except OSError as exc:
            raise SourceError(f"cannot create the index folder: {exc}", path=location) from exc
    write_atomic(location, payload, options=options)


def _remove_legacy(data_location: str, options: StoreOptions | None) -> str | None:
    """Remove the index under the name earlier versions wrote, once the new one is written.

    Globs for data files (``lake/**/*.parquet``) read that name as data. The new index
    is already in place, and readers prefer it, so a removal that fails loses nothing:
    it is logged, and the next build tries again.
    """
    legacy = legacy_index_location(data_location)
    try:
        return legacy if remove_if_present(legacy, options=options) else None
    except PyBloomError as exc:
        log.warning("the index under its earlier name remains: %s", exc)
        return None


def unique(files: Sequence[str | FileInfo]) -> list[str | FileInfo]:
    """Files in order, each path once."""
    seen: set[str] = set()
    out = []
    for f in files:
        key = location_text(f)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


# Long because: the docstring documents every parameter and error (47 lines); the code is 43.
async def build_index(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo] | FileStream,
    columns: Sequence[str],
    *,
    fpp: float = 0.01,
    ndv: int | Mapping[str, int] | None = None,
    max_index_bytes: int = MAX_INDEX_BYTES,
    max_object_bytes: int = MAX_OBJECT_BYTES,
    run: RunOptions | None = None,
    **keywords: Unpack[RunKeywords],
) -> list[IndexBuild]:
    """Build (or replace) the sidecar index of every data file.

    Local files are read by path; object-store files are read whole into
    memory in one request. An index under the name earlier versions wrote
    (``.index.v1.parquet``, which globs for data files take) is removed once the new one
    is written (on object stores: one HEAD per file, and a DELETE where it exists).
    Values are hashed with :class:`pybloom_async.read.columns.ColumnReader` (as a
    writer hashes the physical type; nulls skipped) and one filter per column is built over the
    whole file, sized for ``ndv`` or the file's exact distinct count. Each
    index is written atomically (temporary file + fsync + rename locally, one
    PUT on object stores).

    Parameters
    ----------
    paths:
        Files, directories or object-store prefixes (expanded as by
        :func:`pybloom_async.pruning.api`; ``_bloom_index/`` is skipped), or a
        :class:`~pybloom_async.io.files.FileStream` of files already found, taken as
        they come (a file gone since is its own result's error).
    columns:
        Dotted paths of the columns to index.
    fpp:
        Target false-positive rate of each filter.
    ndv:
        Distinct values to size every filter for (an int, or per column); by
        default the exact distinct count of each file's column.
    max_index_bytes, max_object_bytes:
        Limits on an index's size and on an object read into memory.
    run, **keywords:
        The run's options (:class:`~pybloom_async.RunOptions`): ``concurrency`` is the
        files indexed at once (default: the number of CPUs, at least 2);
        ``on_error="raise"`` raises the first error instead of reporting it in the file's result;
        ``progress`` is called after each file.

    Returns
    -------
    list of IndexBuild
        In file order; ``error`` says why a file got no index.

    Raises
    ------
    InvalidArgumentError
        No columns, or an invalid ``fpp``, ``ndv``, ``concurrency`` or limit.
    MissingDependencyError
        pyarrow (the ``arrow`` extra) is not installed.
    PyBloomError
        With ``on_error="raise"``: the first file that could not be indexed.
    """
    if isinstance(columns, str):
        columns = [columns]
    wanted = tuple(dict.fromkeys(columns))
    if not wanted or not all(isinstance(c, str) and c for c in wanted):
        raise InvalidArgumentError("columns must name at least one column")
    cpus = os.cpu_count() or 1
    if isinstance(ndv, Mapping):
        for name in ndv:
            _ndv_for(ndv, name)
    elif ndv is not None:
        integer("ndv", ndv, minimum=0)
    opts = run_options(run, keywords, "build_index")
    async with open_run(opts, default_concurrency=max(2, cpus)) as r:
        ctx = _BuildContext(
            reader=r.reader,
            columns=wanted,
            fpp=probability("fpp", fpp),
            ndv=ndv,
            cpu=anyio.CapacityLimiter(cpus),
            max_index_bytes=positive_int("max_index_bytes", max_index_bytes),
            max_object_bytes=positive_int("max_object_bytes", max_object_bytes),
            strict=opts.raises,
        )
        require_pyarrow("build sidecar indexes")  # before any file is listed or read
        files = unique(await expand_paths(paths, r.reader))
        results: list[IndexBuild] = await for_each(
            files, lambda loc: _build_one(ctx, loc), r.limit, r.progress
        )
    return results


build_index_sync = sync_twin(build_index)
