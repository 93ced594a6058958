"""Building a lake index: per file, from its values or by folding its in-file filters.

Every file gets one filter per column at its segment's block count B, and the
filters are stored block-major (``lake/format.py``). B comes from the largest
file of a size class (its ndv at the target fpp); files within a factor of
``CLASS_SPAN`` of each other share a class and a segment, so a small file is not
padded to a large file's B (its fpp is lower; its stripes are short).

Folding (``core/stripes.fold_to``) is exact when every row-group filter of a
file has at least B blocks; a file with a smaller, missing or damaged
row-group filter is built from its values instead (``LakeBuild.from_values``
names them).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from .._native import check, ffi, lib
from ..checks import path_text, probability, require_pyarrow
from ..core.filter import SplitBlockBloomFilter
from ..core.stripes import BLOCK_BYTES, fold_to
from ..errors import InvalidArgumentError, PredicateError, PyBloomError, SourceError
from ..io.base import FileInfo, location_text
from ..io.files import expand_paths
from ..io.identity import SourceIdentity, mtime_ns, store_etag
from ..parquet import ColumnDescriptor
from ..read.fetch import BloomFilterRead, ReaderConfig
from ..read.run import RunOptions, open_run, run_options
from ..tables import TableSource, resolve_table, table_kind, table_root
from ..tasks.loops import sync_twin, to_worker
from ..tasks.workers import for_each
from .digest import digest_records, footer_digest
from .format import LakeColumn, LakeFile, encode_segment
from .gather import blocks_for, column_descriptor, fold_material, ndv_of, read_values
from .material import BuildContext, ColumnMaterial, FileMaterial
from .segments import relative_name, write_segment
from .tables import index_names, register_iceberg_index, table_index_info

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..read.run import RunKeywords


#: Files whose wanted block counts lie within this factor share a segment.
CLASS_SPAN = 8
#: The speculative footer read of a build from filters (a larger footer costs one more read).
FOLD_FOOTER_READ = 16 * 1024


@dataclass
class LakeBuild:
    """What a build wrote: segments, files indexed, and which files were not and why.

    ``fpp`` gives, per column, the false-positive rate its filters reach, estimated
    from each file filter's fill (the SBBF model): ``{"mean": ..., "max": ...}`` over
    the files indexed. A probe of one value keeps ``mean`` of the files that do not
    hold it, on average.
    """

    segments: list[str] = field(default_factory=list)
    files: int = 0
    folded: list[str] = field(default_factory=list)
    from_values: dict[str, str] = field(default_factory=dict)  # file -> why not folded
    errors: dict[str, str] = field(default_factory=dict)  # file -> why not indexed
    # Per column, the estimated false-positive rate of each file filter written.
    _fpps: dict[str, list[float]] = field(default_factory=dict, repr=False)

    @property
    def fpp(self) -> dict[str, dict[str, float]]:
        """Per column, ``{"mean": ..., "max": ...}`` of its file filters' estimated fpp."""
        return {
            column: {"mean": sum(values) / len(values), "max": max(values)}
            for column, values in self._fpps.items()
            if values
        }

    def fpp_sink(self) -> dict[str, list[float]]:
        """Where :func:`encode_class` records each file filter's estimated fpp, per column
        (builds that encode a class themselves pass it)."""
        return self._fpps

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "segments": self.segments,
            "files": self.files,
            "folded": len(self.folded),
            "from_values": self.from_values,
            "errors": self.errors,
            "fpp": self.fpp,
        }


async def survey_file(ctx: BuildContext, location: str | FileInfo) -> FileMaterial | str:
    """One file's material: filters (fold mode) or distinct hashes; a text on failure."""
    path = location_text(location)
    try:
        if ctx.table is not None:
            name = index_names(ctx.table, [path])[0]
        else:
            name = relative_name(ctx.root, path)
        if name is None:
            raise SourceError(f"the file is not under the lake's root {ctx.root!r}", path=path)
        if ctx.table is not None and isinstance(location, FileInfo):
            # A table's file is never rewritten under its name: its size, as the table
            # lists it, is what a prune compares (no stat, no HEAD).
            identity = SourceIdentity(path, location.size, None, None)
        else:
            # The version indexed: what a prune's stale check compares with (a stat, or the
            # listing's size and ETag).
            identity = await ctx.reader.identity(location)
        reads: Mapping[tuple[int, str], BloomFilterRead] = {}
        # One opening: the footer, then the filters.
        async with ctx.reader.opened(location) as file:
            footer = await file.footer()
            meta = footer.metadata
            if ctx.mode == "filters":
                present = [
                    c for c in ctx.columns if not isinstance(column_descriptor(meta, c), str)
                ]
                if present:
                    reads = await file.filters(present)
        if meta.num_rows < 0:
            raise SourceError("the footer has a negative row count", path=path)
        digest = footer_digest(footer, identity, ctx.table is not None)
        f = FileMaterial(location, path, name, identity, meta.num_rows, {}, digest)
        need_values: list[ColumnMaterial] = []
        for column in ctx.columns:
            desc = column_descriptor(meta, column)
            if isinstance(desc, str):
                f.columns[column] = desc
                continue
            col = ColumnMaterial(desc, 1)
            f.columns[column] = col
            wanted = ndv_of(ctx, column)
            if ctx.mode == "filters":
                col.fold_problem = fold_material(col, reads, meta, column, wanted, ctx.fpp)
                if col.fold_problem is None:
                    continue
            need_values.append(col)
        if need_values:
            await read_values(ctx, f, meta, need_values)
            for col in need_values:
                assert col.hashes is not None
                wanted = ndv_of(ctx, col.desc.path)
                col.ndv = len(col.hashes) if wanted is None else wanted
                col.want_blocks = blocks_for(col.ndv, ctx.fpp)
        return f
    except PyBloomError as exc:
        if ctx.strict:
            raise exc.with_context(path=path) from None
        return str(exc)
    finally:
        ctx.reader.forget(location)


def class_groups(files: Sequence[FileMaterial], span: int) -> list[list[FileMaterial]]:
    """Files grouped by wanted block count, each group within ``span`` of its smallest."""
    ordered = sorted(files, key=lambda f: f.want)
    out: list[list[FileMaterial]] = []
    for f in ordered:
        if out and f.want <= out[-1][0].want * span:
            out[-1].append(f)
        else:
            out.append([f])
    return out


def _same_type(a: ColumnDescriptor, b: ColumnDescriptor) -> bool:
    return (
        a.physical_type is b.physical_type
        and a.type_length == b.type_length
        and a.logical_type == b.logical_type
        and a.max_repetition_level == b.max_repetition_level
    )


def _column_of(
    files: Sequence[FileMaterial],
    column: str,
    index: int,
    fpp: float,
    fpps: list[float] | None = None,
) -> tuple[LakeColumn, bytearray] | None:
    """One column of a segment: its block-major bitset over ``files`` (CPU)."""
    first = next(
        (f.columns[column] for f in files if isinstance(f.columns[column], ColumnMaterial)), None
    )
    if not isinstance(first, ColumnMaterial):
        return None
    desc = first.desc
    blocks = max(c.want_blocks for f in files if isinstance(c := f.columns[column], ColumnMaterial))
    n = len(files)
    num_bytes = blocks * BLOCK_BYTES
    bits = bytearray(num_bytes * n)
    out = ffi.from_buffer(bits)
    uncovered, folded = set(), set()
    for i, f in enumerate(files):
        col = f.columns[column]
        if not isinstance(col, ColumnMaterial) or not _same_type(col.desc, desc):
            uncovered.add(i)
            continue
        bloom = file_bloom(col, num_bytes)
        if col.hashes is None:
            folded.add(i)
        if fpps is not None:
            fpps.append(bloom.estimated_fpp())  # from its fill: what a probe will meet
        check(lib.pba_sbbf_scatter_blocks(ffi.from_buffer(bloom.bitset), num_bytes, out, n, i))
    # The ndv of the class's largest file, the one B is sized for.
    ndv = max(c.ndv for f in files if isinstance(c := f.columns[column], ColumnMaterial))
    described = ColumnDescriptor(
        index=index,
        path_parts=desc.path_parts,
        physical_type=desc.physical_type,
        type_length=desc.type_length,
        max_repetition_level=desc.max_repetition_level,
        logical_type=desc.logical_type,
    )
    lake_col = LakeColumn(described, blocks, ndv, fpp, 0, frozenset(uncovered), frozenset(folded))
    return lake_col, bits


def file_bloom(col: ColumnMaterial, num_bytes: int) -> SplitBlockBloomFilter:
    """One file's filter of a column at a segment's size: its hashes inserted, or its
    row-group filters folded to that size (exact), or the one built elsewhere."""
    if col.bloom is not None:
        if col.bloom.num_bytes != num_bytes:
            raise ValueError(f"a filter of {col.bloom.num_bytes} bytes for {num_bytes}")
        return col.bloom
    bloom = SplitBlockBloomFilter(num_bytes)
    if col.hashes is not None:
        bloom.insert_hashes(col.hashes)
    else:
        assert col.filters is not None
        for rg_filter in col.filters:
            bloom |= fold_to(rg_filter, num_bytes)
    return bloom


def encode_class(
    files: Sequence[FileMaterial],
    columns: Sequence[str],
    fpp: float,
    fpps: dict[str, list[float]] | None = None,
    table: Mapping[str, Any] | None = None,
) -> bytes:
    """The segment of one size class (CPU: a worker thread).

    ``fpps``, if given, gets per column the estimated false-positive rate of each
    file filter. ``table``: what a table's index covers.
    """
    parts: list[tuple[LakeColumn, bytearray]] = []
    for column in columns:
        got = _column_of(
            files, column, len(parts), fpp, None if fpps is None else fpps.setdefault(column, [])
        )
        if got is not None:
            parts.append(got)
    entries = [
        LakeFile(f.name, f.identity.size, store_etag(f.identity) or None,
                 mtime_ns(f.identity) or None, f.num_rows,
                 f.identity.inode[1] if f.identity.inode is not None else None,
                 f.identity.ctime_ns)
        for f in files
    ]  # fmt: skip
    return encode_segment(entries, parts, table, digest_records(files))


def check_present(files: Sequence[FileMaterial], columns: Sequence[str]) -> None:
    """A column no file has is a mistake of the caller (PredicateError), not an empty index."""
    for column in columns:
        reasons = [f.columns[column] for f in files]
        if reasons and all(isinstance(r, str) for r in reasons):
            raise PredicateError(f"cannot index {column!r}: {reasons[0]}", column=column)


def check_columns(columns: Sequence[str] | str) -> tuple[str, ...]:
    """The columns to index, each once; InvalidArgumentError when none."""
    if isinstance(columns, str):
        columns = [columns]
    wanted = tuple(dict.fromkeys(columns))
    if not wanted or not all(isinstance(c, str) and c for c in wanted):
        raise InvalidArgumentError("columns must name at least one column")
    return wanted


def mark_fold_problems(
    group: Sequence[FileMaterial], columns: Sequence[str], fpp: float
) -> dict[str, int]:
    """Mark the files of a class whose filters are smaller than the class's B (they are built
    from their values); the class's B per column."""
    sizes: dict[str, int] = {}
    for column in columns:
        cols = [c for f in group if isinstance(c := f.columns[column], ColumnMaterial)]
        if not cols:
            continue
        blocks = sizes[column] = max(c.want_blocks for c in cols)
        for f in group:
            col = f.columns[column]
            if (
                isinstance(col, ColumnMaterial)
                and col.filters is not None
                and col.min_blocks < blocks
            ):
                # Folding halves a filter, it never doubles one; and a file filter of the
                # row groups' size would hold every value of the file: too full.
                col.fold_problem = (
                    f"{column}: its row-group filters have {col.min_blocks} blocks, fewer than "
                    f"the {blocks} a file filter needs here for fpp {fpp:g}; filters fold "
                    f"to fewer blocks, never more, and {col.min_blocks} blocks would be too "
                    "full for the whole file's values"
                )
    return sizes


async def settle_file(ctx: BuildContext, f: FileMaterial) -> None:
    """One file's material made final: the values read of the columns marked as not folding."""
    todo = [c for c in f.columns.values() if isinstance(c, ColumnMaterial) and c.fold_problem]
    redo = [c for c in todo if c.hashes is None]
    if redo:
        meta = (await ctx.reader.footer(f.location)).metadata
        await read_values(ctx, f, meta, redo)
        ctx.reader.forget(f.location)
        for c in redo:
            c.filters = None


def record_outcome(f: FileMaterial, result: LakeBuild) -> None:
    """Record in ``result`` whether the file was folded, or built from values and why."""
    columns = [c for c in f.columns.values() if isinstance(c, ColumnMaterial)]
    for c in columns:
        if c.fold_problem:
            result.from_values[f.path] = c.fold_problem
    if any(not c.fold_problem and c.filters is not None for c in columns):
        result.folded.append(f.path)


async def _fold_or_values(ctx: BuildContext, group: list[FileMaterial], result: LakeBuild) -> None:
    """Files of a class whose filters are smaller than the class's B get their values read."""
    mark_fold_problems(group, ctx.columns, ctx.fpp)
    for f in group:
        await settle_file(ctx, f)
        record_outcome(f, result)


# Long because: the docstring documents every parameter and error.
async def build_lake_index(
    root: str | os.PathLike[str] | TableSource,
    columns: Sequence[str] | str,
    *,
    fpp: float = 0.01,
    ndv: int | Mapping[str, int] | None = None,
    mode: str = "values",
    size_classes: bool = True,
    files: Sequence[str | FileInfo] | None = None,
    run: RunOptions | None = None,
    **keywords: Unpack[RunKeywords],
) -> LakeBuild:
    """Build a lake index segment (one per size class) for the Parquet files under ``root``.

    The segments go to ``<root>/_bloom_index/_lake.v1/``, each written
    atomically (temporary file + rename locally, one PUT on object stores);
    earlier segments stay (merge them with :func:`compact_lake_index`).

    Parameters
    ----------
    root:
        The lake's directory or object-store prefix; or a Delta or Iceberg
        table: its live files are indexed, the index goes to the table's root.
    columns:
        Dotted paths of the columns to index.
    fpp, ndv:
        Target false-positive rate, and distinct values to size for (an int or
        per column; default: each file's distinct count, or in ``filters`` mode
        the estimate from its filters' fill).
    mode:
        ``"values"``: hash the values (read with pyarrow). ``"filters"``: fold
        the files' own row-group filters, reading no data page; files whose
        filters cannot be folded are built from values (``LakeBuild.from_values``).
    run, **keywords:
        The run's options (:class:`~pybloom_async.RunOptions`), as for
        :func:`pybloom_async.prune`; ``strict`` raises the first file that cannot be
        indexed instead of recording it in ``LakeBuild.errors``.
    size_classes:
        False: one segment for all files (small files padded to the largest B).
    files:
        The data files (e.g. a table's file list) instead of listing ``root``.

    Raises
    ------
    InvalidArgumentError
        No columns, an unknown ``mode``, an invalid ``fpp``, ``ndv`` or ``concurrency``.
    SourceError, SourceNotFoundError
        ``root`` cannot be listed or the segment cannot be written.
    """
    opts = run_options(run, keywords, "build_lake_index")
    wanted = check_columns(columns)
    table = None
    if table_kind(root) is not None:
        table = await to_worker(resolve_table, root, None, opts.options)
        root, files = table_root(table), table.files
    if mode not in ("values", "filters"):
        raise InvalidArgumentError(f"mode must be 'values' or 'filters', not {mode!r}")
    cpus = os.cpu_count() or 1
    if mode == "filters" and opts.config is None:
        # Folding reads footers and filters only: a short speculative footer read, so that
        # the bytes before the footer (usually the filters, read next) are not read twice.
        opts = dataclasses.replace(opts, config=ReaderConfig(footer_read_bytes=FOLD_FOOTER_READ))
    async with open_run(opts, default_concurrency=max(2, cpus)) as run_:
        ctx = BuildContext(
            root=path_text("root", root), reader=run_.reader, columns=wanted,
            fpp=probability("fpp", fpp), ndv=ndv, mode=mode,
            cpu=anyio.CapacityLimiter(cpus), strict=opts.raises, table=table,
        )  # fmt: skip
        for column in wanted:
            ndv_of(ctx, column)
        if mode == "values":
            require_pyarrow("build a lake index from values")
        found = await expand_paths(ctx.root if files is None else list(files), run_.reader)
        surveyed = await for_each(
            found, lambda loc: survey_file(ctx, loc), run_.limit, run_.progress
        )
        result = LakeBuild()
        good: list[FileMaterial] = []
        for loc, s in zip(found, surveyed, strict=True):
            if isinstance(s, str):
                result.errors[location_text(loc)] = s
            else:
                good.append(s)
        check_present(good, wanted)
        groups = class_groups(good, CLASS_SPAN) if size_classes else ([good] if good else [])
        info = None if table is None else table_index_info(table)
        payloads = []
        for group in groups:
            group.sort(key=lambda f: f.name)
            await _fold_or_values(ctx, group, result)
            payload = await to_worker(
                encode_class, group, wanted, ctx.fpp, result.fpp_sink(), info, limiter=ctx.cpu
            )
            result.files += len(group)
            if table is not None and table.kind == "iceberg":
                payloads.append(payload)  # blobs of one Puffin file, registered below
                continue
            location = await to_worker(write_segment, ctx.root, payload, run_.reader.options)
            result.segments.append(location)
        if table is not None and table.kind == "iceberg" and payloads:
            location = await to_worker(
                register_iceberg_index, table, payloads, wanted, result.files
            )
            result.segments.append(location)
    return result


build_lake_index_sync = sync_twin(build_lake_index)
