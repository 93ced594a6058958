"""Add Bloom filters to Parquet files written without them.

The new file is the old one up to where its footer started, byte for byte (data
pages, dictionary pages, page indexes, any filters already there), then one
filter per (row group, column) (thrift ``BloomFilterHeader`` + bitset, as every
writer stores them), then the old footer re-encoded by
:func:`~pybloom_async.parquet.splice.splice_bloom_filter_locations` with
``bloom_filter_offset`` and ``bloom_filter_length`` set and every other field kept
as it was, then the footer length and ``PAR1``. Readers that ignore filters see
the same file; readers that use them (parquet-java/Spark, DuckDB, Arrow, ours)
find them like any writer's.

**Which values.** Each chunk is read with pyarrow and every non-null value hashed
as a writer hashes the column's physical type (:mod:`pybloom_async.read.columns`).
Columns whose values cannot be mapped back exactly get no filter and are
reported with the reason, as are BOOLEAN columns.

**Sizing.** A chunk's filter is sized by the Parquet spec's rule for the chunk's
number of distinct values, as pyarrow sizes it (:mod:`.sizing`).

**Safety.** Local files are written to a hidden temporary file in the target's
directory, fsynced and renamed over the target
(:func:`~pybloom_async.io.sinks.write_local_atomic`): a crash leaves the old file
or the new one, never a partial file under the final name. The source is
checked again before the rename; if it changed meanwhile nothing is replaced.
Object-store files (``s3://``, ``gs://``, ``az://``) are read whole into memory
and written back with one PUT, which the store publishes atomically; a
concurrent writer's PUT between our read and write would be overwritten (no
conditional write). HTTP locations are read-only: use ``out=`` for them.

**Tables.** A Delta or Iceberg table's log or manifests record each file's size,
so its files are never rewritten in place: a plain path inside a table is refused
before anything is read (:mod:`.guard`), and given the table itself
(``deltalake.DeltaTable``, pyiceberg ``Table``) the filtered copies are written next
to the old files and committed by the table's own library (:mod:`.tables`)."""

from __future__ import annotations

import io
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any, overload

from ..checks import (
    integer,
    path_text,
    positive_int,
    probability,
    require_pyarrow,
    same_arguments_as,
)
from ..core.sizes import DEFAULT_MAX_BYTES, MIN_BYTES
from ..errors import (
    InvalidArgumentError,
    ParquetFormatError,
    PredicateError,
    UnsupportedTypeError,
)
from ..io.address import parse_address
from ..io.sinks import write_atomic, write_local_atomic
from ..io.store import StoreOptions, resolve_options
from ..parquet.decode import decode_file_metadata
from ..parquet.metadata import FileMetaData
from ..parquet.schema import ColumnDescriptor, Schema
from ..parquet.splice import splice_bloom_filter_locations
from ..parquet.tail import MAGIC, TRAILER_SIZE
from ..read.columns import unsupported_reason
from ..tables import TableSource, table_kind
from ..tasks.loops import sync_twin, to_worker
from .guard import guard_for
from .results import AddFiltersResult, ChunkFilter, SkippedChunk, TableFiltersResult
from .sizing import chunk_filter
from .source import SourceFile, fetch_remote, open_local

#: Default cap on one filter's bitset, as parquet-java's ``parquet.bloom.filter.max.bytes``.
DEFAULT_ADD_MAX_BYTES = 1024 * 1024
# ---- arguments ------------------------------------------------------------------------


#: The reason given (``skipped``) for a named column a file lacks, with ``require_columns=False``.
NOT_IN_FILE = "not in this file (written without it)"


def _column_names(columns: str | Sequence[str]) -> list[str]:
    names = columns.split(",") if isinstance(columns, str) else list(columns)
    if not all(isinstance(n, str) for n in names):
        raise InvalidArgumentError("columns are names (str), e.g. ['id', 'email'] or 'id,email'")
    cleaned = [n.strip() for n in names if n.strip()]
    if not cleaned:
        raise InvalidArgumentError("no columns given")
    return list(dict.fromkeys(cleaned))


def _check_options(ndv: int | None, fpp: float, max_bytes: int) -> None:
    if ndv is not None:
        positive_int("ndv", ndv)
    probability("fpp", fpp)
    integer("max_bytes", max_bytes, minimum=MIN_BYTES, maximum=DEFAULT_MAX_BYTES)


def _available(schema: Schema) -> str:
    paths = [c.path for c in schema.columns]
    shown = ", ".join(paths[:50])
    return shown + (f", ... ({len(paths) - 50} more)" if len(paths) > 50 else "")


def _resolve(
    schema: Schema, names: list[str], path: str, absent: list[SkippedChunk] | None = None
) -> list[ColumnDescriptor]:
    """Leaf columns for the names: a leaf's dotted path, or a group's (all leaves below).

    A name the file lacks is an error, or, given ``absent``, reported there (a table's
    files written before the column was added).
    """
    found: dict[int, ColumnDescriptor] = {}
    for name in names:
        if name in schema:
            try:
                desc = schema.column(name)
            except PredicateError as exc:
                raise InvalidArgumentError(exc.message, path=path, column=name) from None
            found.setdefault(desc.index, desc)
            continue
        prefix = tuple(name.split("."))
        below = [c for c in schema.columns if c.path_parts[: len(prefix)] == prefix]
        if not below and absent is not None:
            absent.append(SkippedChunk(name, None, NOT_IN_FILE))
        elif not below:
            raise InvalidArgumentError(
                f"no such column; the file has: {_available(schema)}", path=path, column=name
            )
        for desc in below:
            found.setdefault(desc.index, desc)
    return sorted(found.values(), key=lambda d: d.index)


def _collapse(skipped: list[SkippedChunk], groups: int) -> tuple[SkippedChunk, ...]:
    """One entry per column where every row group was skipped for the same reason."""
    by_reason: dict[tuple[str, str], list[SkippedChunk]] = {}
    for s in skipped:
        by_reason.setdefault((s.column, s.reason), []).append(s)
    out: list[SkippedChunk] = []
    for (column, reason), items in by_reason.items():
        if groups > 1 and len(items) == groups and all(s.row_group is not None for s in items):
            out.append(SkippedChunk(column, None, reason))
        else:
            out.extend(items)
    return tuple(out)


def _plan(
    meta: FileMetaData,
    descs: list[ColumnDescriptor],
    replace: bool,
) -> tuple[list[tuple[int, ColumnDescriptor]], list[SkippedChunk]]:
    """Which chunks get a filter, and which are skipped (with why)."""
    todo: list[tuple[int, ColumnDescriptor]] = []
    skipped: list[SkippedChunk] = []
    for desc in descs:
        reason = unsupported_reason(desc)
        if reason is not None:
            skipped.append(SkippedChunk(desc.path, None, reason))
            continue
        for group in meta.row_groups:
            chunk = group.columns[desc.index]
            if chunk.file_path is not None:
                skipped.append(
                    SkippedChunk(desc.path, group.index, "the chunk's data is in another file")
                )
            elif chunk.has_bloom_filter and not replace:
                skipped.append(
                    SkippedChunk(
                        desc.path,
                        group.index,
                        "already has a Bloom filter; replace=True (--replace) rebuilds it",
                    )
                )
            else:
                todo.append((group.index, desc))
    return todo, skipped


@dataclass(frozen=True)
class FilterSpec:
    """The checked options of one run: what each file of it gets (one file, or a table's)."""

    names: list[str]
    ndv: int | None
    fpp: float
    max_bytes: int
    replace: bool
    options: StoreOptions | None

    def rewrite(
        self, source: SourceFile, target: str, *, absent_ok: bool = False
    ) -> AddFiltersResult:
        """``source`` with its missing filters added, written to ``target``; blocking.

        ``absent_ok``: a named column the file lacks is reported, not an error.
        """
        return _add(
            source, target, self.names, self.ndv, self.fpp, self.max_bytes, self.replace,
            self.options, absent_ok,
        )  # fmt: skip


@dataclass(frozen=True)
class _Job:
    """One add-filters run, its arguments checked: a file (or ``table``) and the spec."""

    display: str
    local: str | None  # the path of a local source, None for an object store
    target: str
    spec: FilterSpec
    table: TableSource = None  # a Delta or Iceberg table instead of a file
    absent_ok: bool = False  # a named column the file lacks is reported, not an error

    def run(self, source: SourceFile) -> AddFiltersResult:
        return self.spec.rewrite(source, self.target, absent_ok=self.absent_ok)


def _job(
    path: str | os.PathLike[str] | TableSource,
    columns: str | Sequence[str],
    *,
    ndv: int | None = None,
    fpp: float = 0.01,
    out: str | os.PathLike[str] | None = None,
    max_bytes: int = DEFAULT_ADD_MAX_BYTES,
    replace: bool = False,
    options: StoreOptions | Mapping[str, Any] | None = None,
    require_columns: bool = True,
) -> _Job:
    """The arguments of :func:`add_bloom_filters` and its twin, written once, checked."""
    names = _column_names(columns)
    _check_options(ndv, fpp, max_bytes)
    require_pyarrow("add Bloom filters")  # before anything is read
    if isinstance(options, Mapping):
        options = resolve_options(None, options)
    spec = FilterSpec(names, ndv, fpp, max_bytes, replace, options)
    if table_kind(path) is not None:
        if out is not None:
            raise InvalidArgumentError(
                "out= applies to a file: a table's new files go next to the old ones"
            )
        return _Job("", None, "", spec, table=path)
    display = path_text("path", path)
    where = parse_address(display)
    target = display if out is None else path_text("out", out)
    parse_address(target)  # a malformed destination fails before any work
    local = where.path if where.kind == "file" else None
    return _Job(display, local, target, spec, absent_ok=not require_columns)


# Typed twice, for each kind of ``path``: a file gives an AddFiltersResult, a table a
# TableFiltersResult; the implementation takes the arguments of _job, written once.
@overload
async def add_bloom_filters(
    path: str | os.PathLike[str], columns: str | Sequence[str], *, ndv: int | None = ...,
    fpp: float = ..., out: str | os.PathLike[str] | None = ..., max_bytes: int = ...,
    replace: bool = ..., options: StoreOptions | Mapping[str, Any] | None = ...,
    require_columns: bool = ...,
) -> AddFiltersResult: ...  # fmt: skip
@overload
async def add_bloom_filters(
    path: TableSource, columns: str | Sequence[str], *, ndv: int | None = ...,
    fpp: float = ..., out: None = ..., max_bytes: int = ..., replace: bool = ...,
    options: StoreOptions | Mapping[str, Any] | None = ..., require_columns: bool = ...,
) -> TableFiltersResult: ...  # fmt: skip


# Long because: the docstring documents every parameter, result and error; the code is short.
@same_arguments_as(_job)
async def add_bloom_filters(*args: Any, **kwargs: Any) -> AddFiltersResult | TableFiltersResult:
    """Add a Split Block Bloom Filter per row group to the named columns of a Parquet file.

    Or of every live file of a Delta or Iceberg table that lacks one, by a commit
    (:mod:`pybloom_async.rewrite.tables`): the new files are written next to the old
    ones, and one commit replaces the old files with them.

    An object store is read on the caller's event loop (asyncio or trio); the blocking
    work (opening a local file, hashing, writing, a table's commit) runs in a worker
    thread that starts no event loop. Cancelling the caller does not stop that thread:
    the run completes (or fails) and its temporary file is cleaned up as usual. Scripts
    call :func:`add_bloom_filters_sync`.

    Parameters
    ----------
    path:
        A local Parquet file, or an object-store URL (read whole into memory); or a
        ``deltalake.DeltaTable`` or a ``pyiceberg`` ``Table``.
    columns:
        Column paths (``"id"``, ``"s.a"``, ``"tags.list.element"``) as a list or a
        comma-separated string; a group's path means every leaf below it.
    ndv:
        Distinct values to size each filter for, at most; default: each chunk's
        exact distinct count (see the module documentation).
    fpp:
        Target false-positive probability, in (0, 1).
    out:
        Where to write the result (local path or URL); default: replace ``path``
        atomically.
    max_bytes:
        Largest bitset per filter (default 1 MiB, like parquet-java); filters that
        would be larger are capped and their ``expected_fpp`` reported.
    replace:
        Also rebuild filters of chunks that have one (the old bytes stay in the
        file, unreferenced); by default such chunks are skipped and reported.
    options:
        Object-store settings, a :class:`~pybloom_async.io.store.StoreOptions` or a
        mapping of its fields (default: the standard environment variables).
    require_columns:
        False: a column the file lacks is reported in ``skipped`` (:data:`NOT_IN_FILE`),
        not an error; the others get their filters (a table's files always work so).

    Returns
    -------
    AddFiltersResult
        Per chunk, the filter written; the columns or chunks skipped and why.
    TableFiltersResult
        For a table: each file replaced, the files left as they are and why, the
        version (Delta) or snapshot id (Iceberg) of the commit.

    Raises
    ------
    InvalidArgumentError
        A column is not in the file (the message lists the file's columns), an
        option is out of range, or the file (or ``out``) lies in a Delta or Iceberg
        table, whose files change only by a commit (nothing is read or written).
    CommitConflictError
        A table: a concurrent commit conflicts; nothing committed, new files removed.
    UnsupportedTypeError
        A table whose files its library cannot replace exactly (see :mod:`.tables`).
    MissingDependencyError
        pyarrow (the ``arrow`` extra) is not installed.
    ParquetFormatError, EncryptedFileError
        The file is not a readable, unencrypted Parquet file.
    SourceError
        Reading or writing failed, or a local source changed during the run (the
        original is left as it was in every case).
    """
    job = _job(*args, **kwargs)
    if job.table is not None:
        from .tables import add_filters_to_table

        return await add_filters_to_table(job.table, job.spec)
    await to_worker(guard_for(job.spec.options).check, job.target)
    if job.local is not None:
        source = await to_worker(open_local, job.local)
    else:
        source = await fetch_remote(job.display, job.spec.options)
    try:
        return await to_worker(job.run, source)
    finally:
        source.close()


def _add(
    source: SourceFile,
    target: str,
    names: list[str],
    ndv: int | None,
    fpp: float,
    max_bytes: int,
    replace: bool,
    options: StoreOptions | None,
    absent_ok: bool = False,
) -> AddFiltersResult:
    meta = decode_file_metadata(source.metadata, path=source.display, lazy=False)
    absent: list[SkippedChunk] | None = [] if absent_ok else None
    descs = _resolve(meta.schema, names, source.display, absent)
    todo, skipped = _plan(meta, descs, replace)
    skipped[:0] = absent or []
    if not todo:
        return AddFiltersResult(
            source.display, target, False, source.size, source.size,
            skipped=_collapse(skipped, len(meta.row_groups)),
        )  # fmt: skip
    reader = source.reader()
    if reader.num_row_groups != len(meta.row_groups):
        raise ParquetFormatError(
            f"pyarrow sees {reader.num_row_groups} row groups, the footer {len(meta.row_groups)}",
            path=source.display,
        )
    filters: list[ChunkFilter] = []
    size_after = 0

    def emit(f: IO[bytes]) -> None:
        nonlocal size_after
        filters.clear()
        source.copy_prefix(f)
        position = source.metadata_offset
        locations: dict[tuple[int, int], tuple[int, int]] = {}
        for group, desc in todo:
            try:
                hashes = reader.hashes(group, desc)
            except UnsupportedTypeError as exc:
                skipped.append(SkippedChunk(desc.path, group, exc.message))
                continue
            num_values = meta.row_groups[group].columns[desc.index].num_values
            if hashes.size > num_values:
                raise ParquetFormatError(
                    f"pyarrow read {hashes.size} values, the footer records {num_values}",
                    path=source.display,
                    row_group=group,
                    column=desc.path,
                )
            built = chunk_filter(hashes, ndv, fpp, max_bytes)
            bloom = built.bloom
            blob = bloom.to_bytes()
            f.write(blob)
            locations[(group, desc.index)] = (position, len(blob))
            filters.append(
                ChunkFilter(
                    row_group=group, column=desc.path, num_values=int(hashes.size),
                    ndv=built.distinct, ndv_exact=built.exact, sized_for=built.sized_for,
                    num_bytes=bloom.num_bytes, offset=position, length=len(blob),
                    fpp=float(fpp), expected_fpp=bloom.estimated_fpp(built.distinct),
                    capped=built.capped,
                )
            )  # fmt: skip
            position += len(blob)
        footer = splice_bloom_filter_locations(source.metadata, locations, path=source.display)
        f.write(footer)
        f.write(len(footer).to_bytes(4, "little"))
        f.write(MAGIC)
        size_after = position + len(footer) + TRAILER_SIZE
        source.check_unchanged()

    _write(target, emit, options)
    return AddFiltersResult(
        source.display, target, True, source.size, size_after, tuple(filters),
        _collapse(skipped, len(meta.row_groups)),
    )  # fmt: skip


def _write(target: str, emit: Callable[[IO[bytes]], None], options: StoreOptions | None) -> None:
    where = parse_address(target)
    if where.kind == "file":
        write_local_atomic(where.path, emit)
        return
    buffer = io.BytesIO()
    emit(buffer)
    write_atomic(target, buffer.getbuffer(), options=options)


add_bloom_filters_sync = sync_twin(add_bloom_filters)


@same_arguments_as(_job)
async def add_bloom_filters_async(
    *args: Any, **kwargs: Any
) -> AddFiltersResult | TableFiltersResult:
    """Deprecated: the old name of :func:`add_bloom_filters`, kept for one release.

    Awaits :func:`add_bloom_filters` with the same arguments, after a
    ``DeprecationWarning`` naming it.
    """
    warnings.warn(
        "add_bloom_filters_async() is deprecated: await add_bloom_filters() instead "
        "(add_bloom_filters_sync() is the blocking twin)",
        DeprecationWarning,
        stacklevel=2,
    )
    result: AddFiltersResult | TableFiltersResult = await add_bloom_filters(*args, **kwargs)
    return result
