"""A file's rows read in two phases: the work on each row group between the requests.

Phase one decodes a kept row group's predicate columns (from the pages that may match,
or whole chunks) and keeps the rows that match: a :class:`Hit`. The bytes phase two needs
for each hit are the pages of its other columns that hold those rows (their offset index)
or their whole chunks, batched within ``max_fetch_bytes``; phase two decodes them at the
matching rows and joins them to phase one's columns. No I/O here: :mod:`.fetch` makes the
requests and calls these in worker threads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import PyBloomError
from ..read.ranges import HeldBytes
from .arrow import int64_array
from .decode import (
    Matches,
    ReadColumns,
    format_error,
    leaves_of,
    match_row_groups,
    matched_rows,
    named_failure,
    shaped,
)
from .match import computable
from .pages import GroupPages, WholeChunks, pages_for_rows
from .plan import Fetched, FileMatch, FilePlan, Job, chunk_range, row_numbers
from .take import paged_table, stacked, take_columns, take_many, take_paged_many


@dataclass
class Hit:
    """A row group with a matching row after its predicate columns were decoded: those
    columns' matching rows, and the rows (in the row group) that match."""

    group: int
    first: Any  # pa.Table: the predicate columns, matching rows only
    matched: Any  # np.ndarray of row numbers in the row group, ascending
    pages: GroupPages | None = None  # the other columns' pages that hold them (or whole)


def first_rows(
    pages: GroupPages,
    held: HeldBytes,
    plan: FilePlan,
    group: int,
    columns: ReadColumns,
    job: Job,
    match: FileMatch,
) -> Hit | None:
    """Phase one of a row group read through its page index: its predicate columns decoded
    from ``pages`` (the pages that may match) and matched (None: no row matches).

    Raises
    ------
    WholeChunks
        The pages did not decode as indexed.
    """
    assert plan.page_index is not None
    try:
        table = paged_table(plan, held, pages)
        rows = row_numbers(pages.rows)
        table = computable(table)
        found, matched = matched_rows(table, plan, job, match, match.positions(group, rows))
        if not matched.size:
            return None
        return Hit(group, found, rows[matched])
    except WholeChunks:
        raise
    except (PyBloomError, OSError, pa.ArrowException) as exc:
        raise format_error(exc, plan, group) from None


#: Rows few enough that a walk in Python costs less than numpy's calls.
_FEW_ROWS = 64


def _runs(matched: Any) -> list[tuple[int, int]]:
    """Ascending row numbers as ``[start, end)`` runs."""
    if len(matched) <= _FEW_ROWS:
        runs: list[tuple[int, int]] = []
        for row in matched.tolist():
            if runs and runs[-1][1] == row:
                runs[-1] = (runs[-1][0], row + 1)
            else:
                runs.append((row, row + 1))
        return runs
    breaks = np.flatnonzero(np.diff(matched) != 1) + 1
    starts = np.concatenate(([0], breaks))
    ends = np.concatenate((breaks, [len(matched)]))
    return [(int(matched[a]), int(matched[b - 1]) + 1) for a, b in zip(starts, ends, strict=True)]


def _other_ranges(
    plan: FilePlan,
    job: Job,
    columns: ReadColumns,
    hit: Hit,
    index_bytes: Callable[[int, int], bytes],
    leaves: Mapping[str, int | None],
) -> list[tuple[int, int]]:
    """The bytes phase two reads for a row group: the pages of its other columns that hold
    its matching rows (their offset index), and the whole chunks of those it cannot read
    by page (nested, or without an offset index) or need not (:func:`_worth_pages`).
    ``leaves``: the other columns' (:func:`_leaf_indexes`)."""
    index = plan.page_index if job.page_index else None
    paged: dict[str, Any] = {}
    rows: list[tuple[int, int]] = []
    if index is not None:
        rows = _runs(hit.matched)
        for name in columns.rest:
            if not _worth_pages(plan, job, hit.group, leaves[name]):
                continue
            try:
                found = pages_for_rows(
                    index,
                    hit.group,
                    [name],
                    rows,
                    plan.schema,
                    index_bytes,
                    plan.path,
                    partial=True,
                )
            except WholeChunks:
                continue  # nested, no usable offset index, or every page: its whole chunk
            paged.update(found.columns)
    hit.pages = GroupPages(hit.group, rows, paged) if paged else None
    ranges = hit.pages.ranges() if hit.pages is not None else []
    whole = _whole(columns, paged)
    ranges += [chunk_range(plan, hit.group, leaf) for leaf in leaves_of(plan, whole)]
    return ranges


def _leaf_indexes(plan: FilePlan, names: Sequence[str]) -> dict[str, int | None]:
    """Each name's leaf (None: not a leaf of the file), looked up once per file."""
    schema = plan.schema
    return {name: schema.column(name).index if name in schema else None for name in names}


def _worth_pages(plan: FilePlan, job: Job, group: int, leaf: int | None) -> bool:
    """Whether phase two reads a column's chunk by page: one of at least the reader's
    ``max_hole_bytes`` (1 MiB by default). A smaller chunk is read whole: the gaps
    between its chosen pages are below that size, so a store's fetch reads over them
    anyway (its ranges bridge such gaps), and choosing and placing the pages costs more than
    the bytes they leave out (``bench/RESULTS.md``). A name that is not a leaf (None) is
    left to :func:`pages_for_rows`, which says so."""
    if leaf is None:
        return True
    return plan.chunk(group, leaf).total_compressed_size >= job.merging.max_hole_bytes


def _whole(columns: ReadColumns, paged: Mapping[str, Any]) -> list[str]:
    """The other columns read from whole chunks (those not read by page)."""
    return [name for name in columns.rest if name not in paged]


def other_rows(hit: Hit, plan: FilePlan, job: Job, columns: ReadColumns, held: HeldBytes) -> Any:
    """Phase two of a row group: its other columns at its matching rows, joined to the
    predicate columns' (WholeChunks: the pages did not decode as indexed)."""
    try:
        parts: dict[str, Any] = {}
        paged = hit.pages.columns if hit.pages is not None else {}
        if hit.pages is not None:  # its rows, the runs of hit.matched
            decoded = paged_table(plan, held, hit.pages)
            parts.update(zip(decoded.column_names, computable(decoded).columns, strict=True))
        whole = _whole(columns, paged)
        if whole:  # taken from their pages by the C decoder, or decoded by pyarrow
            parts.update(take_columns(plan, held, hit.group, whole, hit.matched))
            decoded = [name for name in whole if name not in parts]
            if decoded:
                fetched = Fetched(plan, held)
                read = fetched.read_row_group(hit.group, columns=decoded, use_threads=False)
                read = computable(read).take(int64_array(hit.matched))
                parts.update(zip(read.column_names, read.columns, strict=True))
        table = hit.first
        for name in columns.rest:  # top-level names (the predicate's leaves are first)
            table = table.append_column(name, parts[name])
        return shaped(table, plan, job)
    except WholeChunks:
        raise
    except (PyBloomError, OSError, pa.ArrowException) as exc:
        raise format_error(exc, plan, hit.group) from None


def many_other_rows(
    hits: Sequence[Hit], plan: FilePlan, job: Job, columns: ReadColumns, held: HeldBytes
) -> Any:
    """Phase two of many row groups at once: each other column taken at every hit's rows
    in one C call, from whole chunks (:func:`.take.take_many`), or from the pages chosen
    for it in some hits and the whole chunks of the others (:func:`.take.take_paged_many`),
    and one table of them all, joined to phase one's columns (None: a column is not read
    so; :func:`other_rows` then reads the hits one by one)."""
    rest = list(columns.rest)
    paged = [n for n in rest if any(h.pages is not None and n in h.pages.columns for h in hits)]
    whole = [n for n in rest if n not in paged]
    rows, counts = stacked([h.matched for h in hits])
    groups = [h.group for h in hits]
    taken = take_many(plan, held, groups, rows, counts, whole) if whole else {}
    if taken is None:
        return None
    if paged:
        selections = [h.pages for h in hits]
        by_page = take_paged_many(plan, held, groups, selections, rows, counts, paged)
        if by_page is None:
            return None
        taken.update(by_page)
    try:
        table = pa.concat_tables([hit.first for hit in hits])
        for name in rest:  # top-level names (the predicate's leaves are first)
            table = table.append_column(name, taken[name])
        return shaped(table, plan, job)
    except (PyBloomError, OSError, pa.ArrowException):
        return None  # read one by one, where an error names its row group


def whole_first_rows(
    fetched: Fetched, groups: list[int], columns: ReadColumns, job: Job, match: FileMatch
) -> list[Hit]:
    """Phase one of row groups read as whole chunks, decoded in one call: those with a
    match. An error names the row group that fails (each decoded alone to find it)."""

    def decode(run: list[int]) -> Matches:
        return match_row_groups(fetched, run, columns, job, match)

    found: Matches = named_failure(decode, fetched.plan, groups)
    return [Hit(group, rows, matched) for group, rows, matched in found.per_group()]


def hit_batches(
    plan: FilePlan,
    job: Job,
    columns: ReadColumns,
    hits: Sequence[Hit],
    index_bytes: Callable[[int, int], bytes],
) -> Iterator[list[tuple[Hit, list[tuple[int, int]]]]]:
    """The row groups with a match and their phase-two bytes, in runs whose bytes stay
    within ``max_fetch_bytes`` (one row group above it is fetched alone)."""
    batch: list[tuple[Hit, list[tuple[int, int]]]] = []
    size = 0
    leaves = _leaf_indexes(plan, columns.rest) if plan.page_index and job.page_index else {}
    for hit in hits:
        ranges = _other_ranges(plan, job, columns, hit, index_bytes, leaves)
        need = sum(end - start for start, end in ranges)
        if batch and size + need > job.max_fetch_bytes:
            yield batch
            batch, size = [], 0
        batch.append((hit, ranges))
        size += need
    if batch:
        yield batch
