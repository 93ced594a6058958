"""A lake index segment probed for one predicate: its outcome for each of its files.

The leaves are prepared for the segment's columns, the stripes their keys hit are read
(one ranged read each, all at once) and checked, and each file's codes (excluded, may
match, not covered) are combined into the predicate's outcome, once per distinct row of
codes. A damaged segment is recorded, not raised: its caller decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.stripes import block_indexes, check_stripe
from ..errors import PredicateError, PyBloomError
from ..predicate import Predicate
from ..pruning.api import CompiledPredicate
from ..pruning.bounds import Outcome, index_view
from ..pruning.evaluate import before_membership, combine
from ..pruning.in_lists import sorted_unique
from ..pruning.leaves import Leaf, leaf_column
from ..pruning.verdicts import Rule
from ..read.reader import BloomReader
from ..types import PhysicalType
from .format import stripe_crc_ok
from .segments import LoadedSegment

#: Why a file stays, most telling first.
_KEPT_ORDER = (Rule.STALE_INDEX, Rule.NO_INDEX, Rule.NEVER_PRUNES, Rule.MAY_MATCH)


@dataclass
class _Probe:
    """One leaf in one segment: the prepared leaf, and per file whether it may match."""

    leaf: Leaf
    may: np.ndarray[Any, Any] | None = None  # None: no stripe needed (decided by the leaf)


@dataclass
class SegmentState:
    """One segment being probed: the segment, why it is damaged (None: it is not), and
    its leaves' probes."""

    loaded: LoadedSegment
    damaged: str | None = None
    probes: dict[int, _Probe] = field(default_factory=dict)  # id(leaf predicate) -> probe
    #: A literal of the run is not a value of a column's type as this segment has it: the
    #: error of the files it describes, raised for one still as described, not for a file
    #: removed or replaced since (whose own footer says what its types take).
    refused: PredicateError | None = None


def prepare_probes(
    state: SegmentState, compiled: CompiledPredicate
) -> dict[tuple[int, int], list[int]]:
    """The run's leaves for this segment's columns; the stripes they probe (no I/O).

    Raises
    ------
    PredicateError
        A literal is not a value of its column's type.
    """
    seg = state.loaded.segment
    n = len(seg.files)
    wanted: dict[tuple[int, int], list[int]] = {}  # (column no, block) -> probe ids
    for p in compiled.leaves:
        col = seg.column(leaf_column(p))
        if col is None:
            continue
        # A literal of the wrong type: its error names the column, not this segment (a file
        # of the index, not of the data).
        leaf = compiled.leaf(p, col.descriptor)
        probe = state.probes[id(p)] = _Probe(leaf)
        if not leaf.needs_filter or n == 0:
            continue
        probe.may = np.zeros(n, dtype=np.bool_)
        for b in sorted_unique(block_indexes(leaf.hashes, col.num_blocks)).tolist():
            wanted.setdefault((col.descriptor.index, int(b)), []).append(id(p))
    return wanted


async def probe_segment(
    reader: BloomReader, state: SegmentState, wanted: dict[tuple[int, int], list[int]]
) -> None:
    """Read the stripes the leaves probe (concurrently) and check them; damage is recorded."""
    seg = state.loaded.segment
    n = len(seg.files)
    if not wanted:
        return
    keys = list(wanted)
    base = state.loaded.base
    ranges = [
        (base + start, base + end)
        for start, end in (seg.columns[c].stripe_range(b, n) for c, b in keys)
    ]
    try:
        async with reader.open(state.loaded.location) as source:
            source.assume_identity(state.loaded.identity)
            pieces = await source.read_ranges(ranges)
    except PyBloomError as exc:
        state.damaged = f"segment unreadable: {exc}"
        return
    for (c, b), piece in zip(keys, pieces, strict=True):
        if not stripe_crc_ok(piece):
            state.damaged = f"stripe {b} of {seg.columns[c].path} fails its CRC"
            return
        col = seg.columns[c]
        for pid in wanted[(c, b)]:
            probe = state.probes[pid]
            assert probe.may is not None
            hashes = probe.leaf.hashes[block_indexes(probe.leaf.hashes, col.num_blocks) == b]
            probe.may |= check_stripe(piece[:-4], n, hashes)


#: Per file and leaf: what the index says (the leaf's outcome is the same for all files
#: with the same code, so a segment's files need only one evaluation per distinct row).
_EXCLUDED, _MAY, _UNCOVERED, _SAME_FOR_ALL = 0, 1, 2, 3


def _codes(state: SegmentState, leaves: Sequence[Predicate]) -> np.ndarray[Any, Any]:
    """A (files, leaves) array of codes for one segment."""
    seg = state.loaded.segment
    n = len(seg.files)
    codes = np.full((n, max(len(leaves), 1)), _SAME_FOR_ALL, dtype=np.int8)
    for j, p in enumerate(leaves):
        col = seg.column(leaf_column(p))
        probe = state.probes.get(id(p))
        if col is None or probe is None:
            continue
        if probe.may is not None and col.descriptor.physical_type is not PhysicalType.BOOLEAN:
            codes[:, j] = np.where(probe.may, _MAY, _EXCLUDED)
        if col.uncovered:
            codes[sorted(col.uncovered), j] = _UNCOVERED
    return codes


def _outcome(
    where: Predicate, state: SegmentState, leaves: Sequence[Predicate], row: Sequence[int]
) -> Outcome:
    """The outcome of ``where`` for the files of one segment whose codes are ``row``."""
    seg = state.loaded.segment
    position = {id(p): j for j, p in enumerate(leaves)}

    def decide_leaf(p: Predicate) -> Outcome:
        probe = state.probes.get(id(p))
        code = row[position[id(p)]]
        column = leaf_column(p)
        if seg.column(column) is None or probe is None:
            return Outcome(False, Rule.NO_INDEX, f"{column} is not in the lake index")
        if code == _UNCOVERED:
            return Outcome(False, Rule.NO_INDEX, f"{column} is not indexed for this file")
        leaf = probe.leaf
        # No min/max nor null counts here: only the type's bounds decide.
        shared = before_membership(
            leaf, lambda: index_view(leaf), None, "lake index", Rule.LAKE_INDEX
        )
        if shared is not None:
            return shared
        if code == _MAY:
            return Outcome(False, Rule.MAY_MATCH, f"{leaf.label}: the lake index may contain it")
        if code == _EXCLUDED:
            return Outcome(True, Rule.LAKE_INDEX, f"{leaf.label}: excluded by the lake index")
        return Outcome(False, Rule.MAY_MATCH, f"{leaf.label}: not decided by the lake index")

    return combine(where, decide_leaf, _KEPT_ORDER, excluded_rule=Rule.LAKE_INDEX)


def segment_outcomes(
    where: Predicate, state: SegmentState, leaves: Sequence[Predicate]
) -> tuple[list[Outcome], np.ndarray[Any, Any]]:
    """Every file's outcome in one segment: (distinct outcomes, each file's index into them)."""
    codes = _codes(state, leaves)
    if len(codes) == 0:
        return [], np.zeros(0, dtype=np.intp)
    rows, inverse = np.unique(codes, axis=0, return_inverse=True)
    outcomes = [_outcome(where, state, leaves, row.tolist()) for row in rows]
    return outcomes, inverse.reshape(-1)
