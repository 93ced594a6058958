"""Reading the matching rows of one file: its kept chunks (or pages) fetched in merged
requests, decoded by pyarrow, the predicate evaluated on the data.

The plan (:mod:`.plan`) says what to read; :mod:`.decode` decodes and matches what is read.
Each byte is fetched at most once per batch of row groups: the footer's tail, phase one's
bytes and every fallback read serve what follows (:class:`~pybloom_async.read.ranges.HeldBytes`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import PyBloomError, SourceError
from ..io.base import ByteSource
from ..io.objects import ObjectStoreSource
from ..read.ranges import HeldBytes, plan_reads
from ..tasks.loops import to_worker
from ..tasks.workers import gather
from .arrow import int64_array
from .decode import (
    Matches,
    ReadColumns,
    decode_batches,
    decode_pages_of,
    decode_row_groups,
    format_error,
    leaves_of,
    match_row_groups,
    matched_rows,
    named_failure,
    read_columns_of,
    shaped,
    where_columns,
)
from .dictionary import dictionary_kept
from .match import computable
from .pages import (
    GroupPages,
    WholeChunks,
    decode_group,
    held_reader,
    index_ranges,
    pages_for_rows,
    select_group,
)
from .plan import (
    FileMatch,
    FilePlan,
    Job,
    chunk_range,
    file_match,
    row_group_reader,
    rows_where,
)

#: A file's rows are read in two phases (its predicate's columns first, the others for the
#: matching rows only) when the kept row groups' other columns come to this many bytes or
#: more (1 MiB): below it, one request per file (no round trip added to a point lookup
#: whose kept data is small). Measured in bench/RESULTS.md ("Only the bytes that can match").
TWO_PHASE_MIN_BYTES = 1 << 20


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


async def _fetch(
    source: ByteSource,
    job: Job,
    wanted: Sequence[tuple[int, int]],
    held: HeldBytes,
    keep_out: Sequence[tuple[int, int]] = (),
) -> HeldBytes:
    """``held`` and the bytes of ``wanted`` it lacks, fetched in one request of merged
    ranges: a byte held is never fetched again, and no hole holding a byte of ``keep_out``
    is read over (:func:`~pybloom_async.read.ranges.plan_reads`)."""
    config = job.merging
    ranges = plan_reads(
        wanted, held.ranges(), keep_out, config.max_hole_bytes, config.max_range_bytes
    )
    if not ranges:
        return held
    data = await source.read_ranges([(r.start, r.end) for r in ranges])
    return held.plus((r.start, d) for r, d in zip(ranges, data, strict=True))


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
    source: ByteSource,
    plan: FilePlan,
    job: Job,
    names: list[str],
    read: list[int],
    held_only: bool = False,
) -> dict[int, GroupPages] | None:
    """Per kept row group its page selection of the columns ``names``; groups missing read
    whole chunks. The index bytes the footer's tail lacks are fetched (one request), or
    with ``held_only`` not: then None (no selection without a request)."""
    index = plan.page_index
    where = rows_where(plan, job)
    if not job.page_index or index is None or where is None:
        return {}
    schema = plan.schema
    predicate = [schema.column(c).index for c in where_columns(plan, job) if c in schema]
    missing = index_ranges(index, plan.kept, read, predicate)
    if missing and held_only:
        return None
    held = await _fetch(source, job, missing, plan.held)

    def select() -> dict[int, GroupPages]:
        found: dict[int, GroupPages] = {}
        cache: dict[int, Any] = {}
        serve = held_reader(held)
        for group in plan.kept:
            try:
                found[group] = select_group(
                    index, group, where, schema, names, serve, plan.path, cache
                )
            except WholeChunks:
                pass  # this group reads whole chunks
        return found

    return await to_worker(select)


async def file_tables(source: ByteSource, plan: FilePlan, job: Job) -> AsyncGenerator[Any, None]:
    """The matching rows of one file, in tables of a run of kept row groups each (in order;
    a run without a match may give an empty one), read from ``source``: the file as it was
    when its footer was read.

    When the kept row groups' other columns (not the predicate's) come to
    :data:`TWO_PHASE_MIN_BYTES` or more, the predicate's columns are fetched first, and
    the others only for the row groups, and through the offset index only for the pages,
    that hold a matching row (:func:`_in_two_phases`); else everything comes in one
    request (:func:`_in_one_phase`).

    Raises
    ------
    SourceError
        The file changed since its footer was read, or cannot be read.
    ParquetFormatError
        A row group cannot be decoded (naming it).
    """
    await _pinned(source, plan)
    table_file = await job.table_file(plan) if job.table_file is not None else None
    columns = read_columns_of(plan, job, table_file)
    match = file_match(plan, job, table_file)
    phases = _in_two_phases if _two_phases(plan, job, columns) else _in_one_phase
    async for table in phases(source, plan, job, columns, match):
        yield table


def _two_phases(plan: FilePlan, job: Job, columns: ReadColumns) -> bool:
    """Whether the other columns are worth a second request (see :func:`file_tables`)."""
    if rows_where(plan, job) is None or not columns.first or not columns.rest_leaves:
        return False
    other = 0
    for group in plan.kept:
        for leaf in columns.rest_leaves:
            start, end = chunk_range(plan, group, leaf)
            other += end - start
    return other >= TWO_PHASE_MIN_BYTES


async def _in_one_phase(
    source: ByteSource, plan: FilePlan, job: Job, columns: ReadColumns, match: FileMatch
) -> AsyncGenerator[Any, None]:
    """Every column read of the kept row groups (or their pages) in one request per
    ``max_fetch_bytes``; the other columns decoded only where a row matches."""
    leaf_indexes = columns.leaves
    selected = await _select_pages(source, plan, job, columns.names, leaf_indexes) or {}
    for groups in _fetch_groups(plan, leaf_indexes, job.max_fetch_bytes):
        wanted = []
        for g in groups:
            pages = selected.get(g)
            if pages is not None:
                wanted.extend(pages.ranges())
            else:
                wanted.extend(chunk_range(plan, g, leaf) for leaf in leaf_indexes)
        held = await _fetch(source, job, wanted, plan.held)
        pf = row_group_reader(plan, held)
        whole: list[int] = []  # row groups read as whole chunks, decoded together
        for group in groups:
            pages = selected.get(group)
            if pages is None:
                whole.append(group)
                continue
            if whole:
                async for table in _decoded(pf, held, plan, whole, columns, job, match):
                    yield table
                whole = []
            if not pages.rows:
                continue  # no page may hold a match
            try:
                yield await to_worker(decode_pages_of, pages, plan, job, match, held)
            except WholeChunks:  # the pages did not decode as indexed: whole chunks
                chunks = [chunk_range(plan, group, x) for x in leaf_indexes]
                group_pf = row_group_reader(plan, await _fetch(source, job, chunks, held))
                yield await _decoded_run(group_pf, plan, [group], columns, job, match)
            except (PyBloomError, OSError, pa.ArrowException) as exc:
                raise format_error(exc, plan, group) from None
        if whole:
            async for table in _decoded(pf, held, plan, whole, columns, job, match):
                yield table


async def _decoded(
    pf: Any,
    held: HeldBytes,
    plan: FilePlan,
    groups: list[int],
    columns: ReadColumns,
    job: Job,
    match: FileMatch,
) -> AsyncGenerator[Any, None]:
    """:func:`~.decode.decode_row_groups` in a worker, a bounded run of row groups at a time
    (:func:`~.decode.decode_batches`), less those their dictionaries rule out (``held``:
    their bytes); an error names the row group that fails (each decoded alone to find it)."""
    groups = await to_worker(dictionary_kept, plan, job, held, groups)
    for run in decode_batches(plan, groups, columns.leaves):
        yield await _decoded_run(pf, plan, run, columns, job, match)


async def _decoded_run(
    pf: Any, plan: FilePlan, groups: list[int], columns: ReadColumns, job: Job, match: FileMatch
) -> Any:
    def decode(run: list[int]) -> Any:
        return decode_row_groups(pf, plan, run, columns, job, match)

    return await to_worker(named_failure, decode, plan, groups)


# ---- two phases ------------------------------------------------------------------------


@dataclass
class _Hit:
    """A row group with a matching row after its predicate columns were decoded: those
    columns' matching rows, and the rows (in the row group) that match."""

    group: int
    first: Any  # pa.Table: the predicate columns, matching rows only
    matched: Any  # np.ndarray of row numbers in the row group, ascending
    pages: GroupPages | None = None  # the other columns' pages that hold them (or whole)


def _first_rows(
    pages: GroupPages,
    held: HeldBytes,
    plan: FilePlan,
    group: int,
    columns: ReadColumns,
    job: Job,
    match: FileMatch,
) -> _Hit | None:
    """Phase one of a row group read through its page index: its predicate columns decoded
    from ``pages`` (the pages that may match) and matched (None: no row matches).

    Raises
    ------
    WholeChunks
        The pages did not decode as indexed.
    """
    assert plan.page_index is not None
    try:
        table = decode_group(
            pages, plan.page_index, plan.arrow_schema, plan.schema, held_reader(held)
        )
        rows = np.concatenate([np.arange(a, b) for a, b in pages.rows] or [np.arange(0)])
        table = computable(table)
        found, matched = matched_rows(table, plan, job, match, match.positions(group, rows))
        if not matched.size:
            return None
        return _Hit(group, found, rows[matched])
    except WholeChunks:
        raise
    except (PyBloomError, OSError, pa.ArrowException) as exc:
        raise format_error(exc, plan, group) from None


def _runs(matched: Any) -> list[tuple[int, int]]:
    """Ascending row numbers as ``[start, end)`` runs."""
    breaks = np.flatnonzero(np.diff(matched) != 1) + 1
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks, [len(matched)]))
    return [(int(matched[a]), int(matched[b - 1]) + 1) for a, b in zip(starts, ends, strict=True)]


def _other_ranges(
    plan: FilePlan,
    job: Job,
    columns: ReadColumns,
    hit: _Hit,
    index_bytes: Callable[[int, int], bytes],
) -> list[tuple[int, int]]:
    """The bytes phase two reads for a row group: the pages of its other columns that hold
    its matching rows (their offset index), and the whole chunks of those it cannot read
    by page (nested, or without an offset index)."""
    index = plan.page_index if job.page_index else None
    paged: dict[str, Any] = {}
    if index is not None:
        rows = _runs(hit.matched)
        for name in columns.rest:
            try:
                found = pages_for_rows(
                    index, hit.group, [name], rows, plan.schema, index_bytes, plan.path
                )
            except WholeChunks:
                continue  # nested, or no usable offset index: its whole chunks
            paged.update(found.columns)
    hit.pages = GroupPages(hit.group, _runs(hit.matched), paged) if paged else None
    ranges = hit.pages.ranges() if hit.pages is not None else []
    whole = _whole(columns, paged)
    ranges += [chunk_range(plan, hit.group, leaf) for leaf in leaves_of(plan, whole)]
    return ranges


def _whole(columns: ReadColumns, paged: Mapping[str, Any]) -> list[str]:
    """The other columns read from whole chunks (those not read by page)."""
    return [name for name in columns.rest if name not in paged]


def _other_rows(hit: _Hit, plan: FilePlan, job: Job, columns: ReadColumns, held: HeldBytes) -> Any:
    """Phase two of a row group: its other columns at its matching rows, joined to the
    predicate columns' (WholeChunks: the pages did not decode as indexed)."""
    try:
        parts: dict[str, Any] = {}
        paged = hit.pages.columns if hit.pages is not None else {}
        if hit.pages is not None:
            assert plan.page_index is not None
            decoded = decode_group(
                hit.pages, plan.page_index, plan.arrow_schema, plan.schema, held_reader(held)
            )
            parts.update(zip(decoded.column_names, computable(decoded).columns, strict=True))
        whole = _whole(columns, paged)
        if whole:
            pf = row_group_reader(plan, held)
            read = computable(pf.read_row_group(hit.group, columns=whole, use_threads=False))
            read = read.take(int64_array(hit.matched))
            parts.update(zip(read.column_names, read.columns, strict=True))
        table = hit.first
        for name in columns.rest:  # top-level names (the predicate's leaves are first)
            table = table.append_column(name, parts[name])
        return shaped(table, plan, job)
    except WholeChunks:
        raise
    except (PyBloomError, OSError, pa.ArrowException) as exc:
        raise format_error(exc, plan, hit.group) from None


async def _in_two_phases(
    source: ByteSource, plan: FilePlan, job: Job, columns: ReadColumns, match: FileMatch
) -> AsyncGenerator[Any, None]:
    """The predicate's columns of every kept row group first, decoded and matched; then
    the other columns only of the row groups with a match, and where the offset index says
    so only of the pages that hold a matching row.

    Phase one reads the pages of the predicate's columns that may match when the footer's
    tail holds the page index (no request for it); else their whole chunks, with the other
    columns' offset indexes in the same request: two requests per file either way. Row
    groups decode in worker threads at once (pyarrow releases the GIL), but for a local
    file, whose work is one thread already.
    """
    index = plan.page_index if job.page_index else None
    read = columns.first_leaves + columns.rest_leaves
    selected = await _select_pages(source, plan, job, columns.first, read, held_only=True)
    # What every batch starts from: the bytes the footer's tail held (data and page index),
    # and (when they were not there) the other columns' offset indexes, fetched with batch one.
    index_held = plan.held
    wanted_index: list[tuple[int, int]] = []
    if selected is None:  # the index is not in the tail: whole chunks, and the offset indexes
        selected = {}
        wanted_index = index_ranges(index, plan.kept, columns.rest_leaves, []) if index else []
    # Phase one never reads over the other columns' chunks: phase two may not want them.
    others = [chunk_range(plan, g, leaf) for g in plan.kept for leaf in columns.rest_leaves]
    for groups in _fetch_groups(plan, columns.first_leaves, job.max_fetch_bytes):
        groups = [g for g in groups if g not in selected or selected[g].rows]
        wanted = list(wanted_index)
        for g in groups:
            pages = selected.get(g)
            if pages is not None:
                wanted.extend(pages.ranges())
            else:
                wanted.extend(chunk_range(plan, g, leaf) for leaf in columns.first_leaves)
        held = await _fetch(source, job, wanted, index_held, others)
        if wanted_index:  # later batches keep the offset indexes, not this batch's data
            index_held = index_held.plus((a, held.read(a, b) or b"") for a, b in wanted_index)
            wanted_index = []
        hits = await _phase_one(source, plan, job, columns, match, groups, selected, held)
        for batch in _hit_batches(plan, job, columns, hits, held_reader(held)):
            # Phase two: only the bytes phase one did not bring (each byte fetched once).
            held = await _fetch(source, job, [r for _, ranges in batch for r in ranges], held)
            for hit, _ in batch:
                try:
                    yield await to_worker(_other_rows, hit, plan, job, columns, held)
                except WholeChunks:  # the pages did not decode as indexed: whole chunks
                    hit.pages = None
                    ranges = [chunk_range(plan, hit.group, x) for x in columns.rest_leaves]
                    whole = await _fetch(source, job, ranges, held)
                    yield await to_worker(_other_rows, hit, plan, job, columns, whole)


async def _phase_one(
    source: ByteSource,
    plan: FilePlan,
    job: Job,
    columns: ReadColumns,
    match: FileMatch,
    groups: Sequence[int],
    selected: dict[int, GroupPages],
    held: HeldBytes,
) -> list[_Hit]:
    """The row groups of one batch with a match, decoded at once; a row group whose pages
    do not decode as indexed is read again from its whole chunks (the bytes not held)."""

    async def one(group: int) -> list[_Hit]:
        try:
            pages = selected[group]
            hit = await to_worker(_first_rows, pages, held, plan, group, columns, job, match)
            return [] if hit is None else [hit]
        except WholeChunks:
            ranges = [chunk_range(plan, group, leaf) for leaf in columns.first_leaves]
            whole = await _fetch(source, job, ranges, held)
            return await to_worker(_whole_first_rows, whole, plan, [group], columns, job, match)

    paged = [g for g in groups if g in selected]
    whole = [g for g in groups if g not in selected]
    found = [hit for hits in await gather(one, [(g,) for g in paged]) for hit in hits]
    # The row groups read as whole chunks, less those their dictionaries rule out: decoded
    # together, a bounded run at a time.
    whole = await to_worker(dictionary_kept, plan, job, held, whole)
    for run in decode_batches(plan, whole, columns.first_leaves):
        found += await to_worker(_whole_first_rows, held, plan, run, columns, job, match)
    return sorted(found, key=lambda hit: hit.group)


def _whole_first_rows(
    held: HeldBytes,
    plan: FilePlan,
    groups: list[int],
    columns: ReadColumns,
    job: Job,
    match: FileMatch,
) -> list[_Hit]:
    """Phase one of row groups read as whole chunks, decoded in one call: those with a
    match. An error names the row group that fails (each decoded alone to find it)."""
    pf = row_group_reader(plan, held)

    def decode(run: list[int]) -> Matches:
        return match_row_groups(pf, plan, run, columns, job, match)

    found: Matches = named_failure(decode, plan, groups)
    return [_Hit(group, rows, matched) for group, rows, matched in found.per_group()]


def _hit_batches(
    plan: FilePlan,
    job: Job,
    columns: ReadColumns,
    hits: Sequence[_Hit],
    index_bytes: Callable[[int, int], bytes],
) -> Iterator[list[tuple[_Hit, list[tuple[int, int]]]]]:
    """The row groups with a match and their phase-two bytes, in runs whose bytes stay
    within ``max_fetch_bytes`` (one row group above it is fetched alone)."""
    batch: list[tuple[_Hit, list[tuple[int, int]]]] = []
    size = 0
    for hit in hits:
        ranges = _other_ranges(plan, job, columns, hit, index_bytes)
        need = sum(end - start for start, end in ranges)
        if batch and size + need > job.max_fetch_bytes:
            yield batch
            batch, size = [], 0
        batch.append((hit, ranges))
        size += need
    if batch:
        yield batch
