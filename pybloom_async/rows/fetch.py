"""Reading the matching rows of one file: its kept chunks (or pages) fetched in merged
requests, decoded by pyarrow, the predicate evaluated on the data.

The plan (:mod:`.plan`) says what to read; the rows come shaped as the result
(:mod:`.schema`) once its schema is known. A table's data file (``Job.table_file``)
has its deleted rows dropped and the table's own columns (partition values) compared
too: each decoded row's position in the file is known (a row group's first row from
the footer, a page-index read's row ranges), so deletes by position apply to it.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..errors import ParquetFormatError, PyBloomError, SourceError
from ..io.base import ByteSource
from ..io.store import ObjectStoreSource
from ..predicate import iter_leaves
from ..read.ranges import merge_ranges
from ..tasks.loops import to_worker
from .match import Leaves, computable, evaluate, leaf_array
from .pages import (
    GroupPages,
    WholeChunks,
    decode_group,
    held_reader,
    index_ranges,
    select_group,
)
from .plan import FetchedFile, FilePlan, Job, TableFile, chunk_range, read_columns
from .schema import conform

__all__ = ["file_tables"]


def _fetch_groups(
    plan: FilePlan, leaves: Sequence[int], max_fetch_bytes: int
) -> Iterator[list[int]]:
    """The kept row groups in runs whose chunks together stay within ``max_fetch_bytes``."""
    run: list[int] = []
    size = 0
    for group in plan.kept:
        need = sum(e - s for s, e in (chunk_range(plan, group, leaf) for leaf in leaves))
        if run and size + need > max_fetch_bytes:
            yield run
            run, size = [], 0
        run.append(group)
        size += need
    if run:
        yield run


def _first_rows(plan: FilePlan) -> list[int]:
    """Each row group's first row in the file: the sum of the earlier groups' row counts."""
    starts, at = [], 0
    for group in plan.metadata.row_groups:
        starts.append(at)
        at += group.num_rows
    return starts


def _decode_group(
    pf: Any,
    plan: FilePlan,
    group: int,
    columns: list[str],
    job: Job,
    leaves: Leaves,
    table_file: TableFile | None = None,
    first_row: int = 0,
) -> Any:
    """Decode one row group, keep the rows where the predicate holds, shape them as the result.

    The predicate's columns are decoded first and the others only when a row matches: a
    row group kept by a filter's false positive (about 1 in 100 per probed value) costs
    the decode of its predicate columns only.
    """
    schema = plan.schema
    present = [leaf.column for leaf in iter_leaves(job.where) if leaf.column in schema]
    if table_file is not None:
        present += [c for c in table_file.columns if c in schema]
    tops = {schema.column(c).path_parts[0] for c in present}
    first = [c for c in columns if c in tops or c in present]
    rest = [c for c in columns if c not in first]

    def others() -> Any:
        return pf.read_row_group(group, columns=rest, use_threads=False) if rest else None

    table = pf.read_row_group(group, columns=first, use_threads=False)
    positions = None
    if table_file is not None:
        positions = np.arange(first_row, first_row + table.num_rows, dtype=np.int64)
    return _matching(table, plan, job, leaves, others, table_file, positions)


def _decode_pages(
    selected: GroupPages,
    plan: FilePlan,
    job: Job,
    leaves: Leaves,
    pieces: Sequence[tuple[int, bytes]],
    table_file: TableFile | None = None,
    first_row: int = 0,
) -> Any:
    """:func:`_decode_group` for a row group read through its page index (the rows of
    ``selected.rows``, in order)."""
    assert plan.page_index is not None
    table = decode_group(
        selected, plan.page_index, plan.arrow_schema, plan.schema, held_reader(pieces)
    )
    positions = None
    if table_file is not None:
        spans = [np.arange(first_row + a, first_row + b, dtype=np.int64) for a, b in selected.rows]
        positions = np.concatenate(spans) if spans else np.zeros(0, dtype=np.int64)
    return _matching(table, plan, job, leaves, None, table_file, positions)


def _matching(
    table: Any,
    plan: FilePlan,
    job: Job,
    leaves: Leaves,
    others: Callable[[], Any] | None = None,
    table_file: TableFile | None = None,
    positions: Any = None,
) -> Any:
    """The rows of a decoded table where the predicate holds, shaped as the result.

    ``others``, if given, decodes the result's remaining columns: called only when a
    row matches. ``table_file`` (a table's data file, with ``positions``: each row's
    ordinal in the file) drops the deleted rows and gives the table's own columns.
    """
    table = computable(table)
    schema = plan.schema
    arrays = {}
    for leaf in iter_leaves(job.where):
        if leaf.column not in arrays and leaf.column in schema:
            arrays[leaf.column] = leaf_array(table, schema.column(leaf.column), leaf.column)
    if table_file is not None:
        arrays.update(table_file.values(table.num_rows))
    mask = evaluate(job.where, table, leaves, arrays)
    if table_file is not None and pc.any(mask).as_py():
        # Deleted rows are dropped from the matches (none: the deletes are not needed).
        live = table_file.live(table, positions)
        if live is not None:
            mask = pc.and_kleene(mask, pa.array(live))
    if others is not None and pc.any(mask).as_py():
        more = others()
        if more is not None:
            more = computable(more)
            for name, column in zip(more.column_names, more.columns, strict=True):
                table = table.append_column(more.schema.field(name), column)
    rows = table.filter(mask)
    if job.schema is None:
        return rows
    return conform(rows, plan, job.schema, job.names or [])


async def _read(source: ByteSource, job: Job, wanted: Sequence[tuple[int, int]]) -> Any:
    """The byte ranges of one file, merged into one request: ``[(start, bytes), ...]``."""
    config = job.merging
    merged = merge_ranges(wanted, config.max_hole_bytes, config.max_range_bytes)
    if not merged:
        return []
    data = await source.read_ranges([(r.start, r.end) for r in merged])
    return [(r.start, d) for r, d in zip(merged, data, strict=True)]


async def _pinned(source: ByteSource, plan: FilePlan) -> None:
    """Reads of ``source`` come from the version whose footer was read.

    A local file's identity comes free with its opening; a store pins its reads to the
    ETag instead (a replaced object then fails its reads rather than mixing versions).

    Raises
    ------
    SourceError
        The local file changed after its footer was read.
    """
    if isinstance(source, ObjectStoreSource):
        source.assume_identity(plan.identity)
    elif await source.identity() != plan.identity:
        raise SourceError("the file changed after its footer was read", path=plan.path)


async def _select_pages(
    source: ByteSource, plan: FilePlan, job: Job, names: list[str], read: list[int]
) -> dict[int, GroupPages]:
    """Per kept row group its page selection; groups missing read whole chunks."""
    index = plan.page_index
    if not job.page_index or index is None:
        return {}
    schema = plan.schema
    predicate = [
        schema.column(p.column).index for p in iter_leaves(job.where) if p.column in schema
    ]
    pieces = list(index.held)
    pieces += await _read(source, job, index_ranges(index, plan.kept, read, predicate))

    def select() -> dict[int, GroupPages]:
        found: dict[int, GroupPages] = {}
        cache: dict[int, Any] = {}
        serve = held_reader(pieces)
        for group in plan.kept:
            try:
                found[group] = select_group(
                    index, group, job.where, schema, names, serve, plan.path, cache
                )
            except WholeChunks:
                pass  # this group reads whole chunks
        return found

    return await to_worker(select)


async def file_tables(source: ByteSource, plan: FilePlan, job: Job) -> AsyncGenerator[Any, None]:
    """The matching rows of one file, one table per kept row group (none without a match),
    read from ``source``: the file as it was when its footer was read.

    Raises
    ------
    SourceError
        The file changed since its footer was read, or cannot be read.
    ParquetFormatError
        A row group cannot be decoded (naming it).
    """
    await _pinned(source, plan)
    table_file = await job.table_file(plan) if job.table_file is not None else None
    compared = [leaf.column for leaf in iter_leaves(job.where)]
    if table_file is not None:
        compared += list(table_file.columns)
    columns, leaf_indexes = read_columns(plan, job.wanted(plan), compared)
    if table_file is not None:
        leaves = table_file.leaves(plan.schema, plan.path, job.value_sets)
    else:
        leaves = Leaves(plan.schema, plan.path, job.value_sets)
    selected = await _select_pages(source, plan, job, columns, leaf_indexes)
    size = plan.footer_location.file_size
    starts = _first_rows(plan)
    for groups in _fetch_groups(plan, leaf_indexes, job.max_fetch_bytes):
        wanted = []
        for g in groups:
            pages = selected.get(g)
            if pages is not None:
                wanted.extend(pages.ranges())
            else:
                wanted.extend(chunk_range(plan, g, leaf) for leaf in leaf_indexes)
        pieces = await _read(source, job, wanted)
        pf = pq.ParquetFile(FetchedFile(size, pieces, plan.path), metadata=plan.pyarrow_metadata)
        for group in groups:
            try:
                pages = selected.get(group)
                group_pf, table = pf, None
                if pages is not None:
                    if not pages.rows:
                        continue  # no page may hold a match
                    try:
                        table = await to_worker(
                            _decode_pages, pages, plan, job, leaves, pieces, table_file,
                            starts[group],
                        )  # fmt: skip
                    except WholeChunks:  # the pages did not decode as indexed: whole chunks
                        whole = await _read(
                            source, job, [chunk_range(plan, group, x) for x in leaf_indexes]
                        )
                        group_pf = pq.ParquetFile(
                            FetchedFile(size, whole, plan.path), metadata=plan.pyarrow_metadata
                        )
                if table is None:
                    table = await to_worker(
                        _decode_group, group_pf, plan, group, columns, job, leaves, table_file,
                        starts[group],
                    )  # fmt: skip
            except PyBloomError as exc:
                raise exc.with_context(path=plan.path, row_group=group) from None
            except (OSError, pa.ArrowException) as exc:
                raise ParquetFormatError(
                    f"the row group cannot be decoded: {exc}", path=plan.path, row_group=group
                ) from None
            yield table
