"""A file's columns as a lake index build gathers them, one column at a time.

Each column's descriptor (or why the file's column cannot be indexed); its row-group
filters taken for folding, or why they cannot be folded; its values read and hashed
(whole-file distinct hashes, in a worker thread); and the block count its file filter
wants for its distinct values at the target fpp. ``lake/build.py`` surveys files with
these; the material itself is ``lake/material.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ..checks import integer, require_pyarrow
from ..core.sizes import optimal_num_bytes
from ..core.stripes import BLOCK_BYTES
from ..errors import PredicateError, SourceError
from ..io.address import parse_address
from ..parquet import ColumnDescriptor, FileMetaData
from ..read.columns import ColumnReader, unsupported_reason
from ..read.fetch import BloomFilterRead
from ..tasks.loops import to_worker
from ..types import PhysicalType
from .material import BuildContext, ColumnMaterial, FileMaterial

#: An object-store file built from values is read whole; larger ones are refused.
MAX_OBJECT_BYTES = 4 * 1024 * 1024 * 1024


def blocks_for(ndv: float, fpp: float) -> int:
    """The blocks a file filter of ``ndv`` distinct values needs for ``fpp``."""
    return optimal_num_bytes(max(0, int(ndv + 0.999)), fpp) // BLOCK_BYTES


def ndv_of(ctx: BuildContext, column: str) -> int | None:
    """The distinct count the build was given for ``column`` (None: count or estimate it)."""
    value = ctx.ndv.get(column) if isinstance(ctx.ndv, Mapping) else ctx.ndv
    return None if value is None else integer("ndv", value, minimum=0, column=column)


def column_descriptor(meta: FileMetaData, column: str) -> ColumnDescriptor | str:
    """The file's ``column``, or why it cannot be indexed (absent, or of a type that gets
    no filter)."""
    try:
        desc = meta.schema.column(column)
    except PredicateError as exc:
        return f"{column} is not in the file ({exc.message})"
    reason = unsupported_reason(desc)
    return desc if reason is None else reason


def fold_material(
    col: ColumnMaterial,
    reads: Mapping[tuple[int, str], BloomFilterRead],
    meta: FileMetaData,
    column: str,
    wanted: int | None,
    fpp: float,
) -> str | None:
    """Take a column's row-group filters for folding; or say why they cannot be folded."""
    if col.desc.physical_type is PhysicalType.BOOLEAN:
        return f"{column}: BOOLEAN filters are not folded (writers leave them empty)"
    filters = []
    for rg in meta.row_groups:
        got = reads.get((rg.index, column))
        if got is None or got.filter is None or not got.ok:
            return f"{column}: row group {rg.index} has no usable filter"
        filters.append(got.filter)
    col.filters = filters
    col.min_blocks = min((b.num_blocks for b in filters), default=1 << 22)
    est = sum(b.estimated_ndv() for b in filters)
    col.ndv = wanted if wanted is not None else int(min(est, meta.num_rows) + 0.999)
    col.want_blocks = blocks_for(col.ndv, fpp)
    return None


def _hash_columns(source: str | bytes, meta: FileMetaData, cols: Sequence[ColumnMaterial]) -> None:
    """Distinct hashes of each column over the whole file (CPU: a worker thread)."""
    reader = ColumnReader(source)
    for col in cols:
        parts = [np.unique(reader.hashes(rg.index, col.desc)) for rg in meta.row_groups]
        col.hashes = np.unique(np.concatenate(parts)) if parts else np.empty(0, np.uint64)


async def read_values(
    ctx: BuildContext, f: FileMaterial, meta: FileMetaData, cols: Sequence[ColumnMaterial]
) -> None:
    """The distinct hashes of ``cols`` over the whole file, read with pyarrow (an object is
    read whole, up to ``MAX_OBJECT_BYTES``)."""
    require_pyarrow("build a lake index from values")
    loc = parse_address(f.path)
    if loc.kind == "file":
        source: str | bytes = loc.path
    else:
        if f.identity.size > MAX_OBJECT_BYTES:
            raise SourceError(
                f"object of {f.identity.size} bytes is above the limit of {MAX_OBJECT_BYTES} "
                "for indexing from values",
                path=f.path,
            )
        async with ctx.reader.open(f.location) as src:
            src.assume_identity(f.identity)
            source = await src.read_range(0, f.identity.size)
    await to_worker(_hash_columns, source, meta, cols, limiter=ctx.cpu)
