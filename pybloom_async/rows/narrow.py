"""A file's IN lists narrowed to the values its kept row groups' Bloom filters may hold.

Pruning keeps a row group when any value of an ``IN`` list may be in its filter; its rows
are then matched against the whole list, and ``is_in`` costs more per row the longer the
list (about 28 ns a row for 100 values, 9 for 3). A value that every kept row group's
filter rules out is in none of the rows read (a filter has no false negative), so the
file's rows are matched against the values left: the same rows, for less.

Only the plain case is narrowed, where the values are hashed exactly as pruning hashes
them: integer literals of an INT32 or INT64 column without annotations, every kept row
group with a filter read for it. Anything else keeps its list.

A file whose rows are first matched on a key (:mod:`.keyed`) is not narrowed: the C
matcher finds a row among 1,000 keys as fast as among 3, and only the rows it finds are
evaluated. Its list stays the run's own, so what is prepared of it (the matcher's keys,
the value set) is made once per run, not once per file.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.hashing import hash_values
from ..parquet import ColumnDescriptor
from ..predicate import And, In, Or, Predicate, iter_leaves, normal_form
from ..read.fetch import BloomFilterRead, FilterKey, FilterState
from ..read.probe import Probe
from ..read.reader import OpenedFile
from .keyed import matched_by_key
from .match import plain_ints
from .plan import FilePlan


async def narrowed_where(file: OpenedFile, plan: FilePlan, where: Predicate) -> Predicate:
    """``where`` (in normal form) with each plain IN list over a column of ``file`` cut to
    the values its kept row groups' filters may hold (the filters pruning read: cached)."""
    if not plan.kept or matched_by_key(plan, where):
        return where
    lists = [
        (p, values)
        for p in iter_leaves(where)
        if isinstance(p, In) and (values := _plain(p, plan)) is not None
    ]
    if not lists:
        return where
    filters: dict[FilterKey, BloomFilterRead] | None = None
    cut: dict[int, Predicate] = {}
    for p, values in lists:
        desc = plan.schema.column(p.column)
        hashes = hash_values(values, desc.physical_type)
        may = await _probed(file, plan, desc, hashes)
        if may is None:
            if filters is None:
                columns = sorted({q.column for q, _ in lists})
                filters = await file.filters(columns, plan.kept)
            may = _from_filters(filters, plan, desc, hashes)
            if may is None:
                continue  # a kept row group without its filter: every value may be there
        if not may.all():
            cut[id(p)] = In(p.column, tuple(values[may].tolist()))
    return _replaced(where, cut) if cut else where


async def _probed(
    file: OpenedFile, plan: FilePlan, desc: ColumnDescriptor, hashes: Any
) -> np.ndarray[Any, Any] | None:
    """Which hashes the kept row groups' filters may hold, each filter probed where it
    lies (pruning's probes keep no filter, so none is there to ask); None when they
    are not probed so (a caller's reader, which kept them) or one is not as recorded."""
    known = _marked(file, plan, desc, hashes)
    if known is not None:
        return known
    footer = await file.footer()
    groups = footer.metadata.chunks_of([desc.index])
    may = np.zeros(len(hashes), dtype=np.uint8)
    probes = []
    for g in plan.kept:
        chunk = groups[g].columns[desc.index]
        offset, length = chunk.bloom_filter_offset, chunk.bloom_filter_length
        if offset is None or length is None:
            return None
        probes.append(Probe(offset, length, hashes, 0, len(hashes), may))
    if file.probe(probes) is None:
        return None
    return may.astype(np.bool_)


def _marked(
    file: OpenedFile, plan: FilePlan, desc: ColumnDescriptor, hashes: Any
) -> np.ndarray[Any, Any] | None:
    """Which hashes the kept row groups may hold, from what pruning's probes marked (every
    key of the list asked in every kept row group); None when one was not asked so."""
    may = np.zeros(len(hashes), dtype=np.bool_)
    for g in plan.kept:
        found = file.marks.get((g, desc.path))
        if found is None:
            return None
        asked, marks = found
        if len(asked) == len(hashes) and np.array_equal(asked, hashes):
            may |= marks.astype(np.bool_)  # the list's own hashes, in its order
            continue
        # Another order or a part of them: each hash found among those asked (a hash's
        # mark depends on it and the filter only, so which of equal ones is found is moot).
        order = np.argsort(asked, kind="stable")
        ranked = asked[order]
        at = np.minimum(np.searchsorted(ranked, hashes), max(len(ranked) - 1, 0))
        if not len(ranked) or not np.array_equal(ranked[at], hashes):
            return None  # a hash this row group was not asked
        may |= marks[order][at].astype(np.bool_)
    return may


def _from_filters(
    filters: dict[FilterKey, BloomFilterRead], plan: FilePlan, desc: ColumnDescriptor, hashes: Any
) -> np.ndarray[Any, Any] | None:
    """Which hashes the kept row groups' filters (read whole) may hold; None when a kept
    row group has none usable."""
    reads = [filters.get((g, desc.path)) for g in plan.kept]
    if any(r is None or r.state is not FilterState.OK or r.filter is None for r in reads):
        return None
    may = np.zeros(len(hashes), dtype=np.bool_)
    for read in reads:
        assert read is not None and read.filter is not None
        may = may | read.filter.check_hashes(hashes)
    return may


def _plain(p: In, plan: FilePlan) -> Any:
    """A plain integer IN list's values as a numpy array of the column's type (None: not
    one). Python ints only (not bools), in range: checked by C loops, not one in Python per
    value."""
    if len(p.values) < 2 or p.column not in plan.schema:
        return None
    return plain_ints(p.values, plan.schema.column(p.column))


def _replaced(p: Predicate, cut: dict[int, Predicate]) -> Predicate:
    if isinstance(p, (And, Or)):
        children = tuple(_replaced(c, cut) for c in p.children)
        return normal_form(type(p)(children))
    return cut.get(id(p), p)
