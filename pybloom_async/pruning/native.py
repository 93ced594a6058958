"""A file's plain equalities decided in C: the statistics, then the filters, of every row
group at once.

:func:`.api.prune_opened` decides a row group leaf by leaf in Python (``evaluate``): a
chunk object per wanted column, a statistics object per chunk, the sorted keys searched
between min and max, then the filters read whole and probed. For a predicate with plain
equalities (``=``, ``<=>``, ``IN``) on columns ordered as integers, floats or byte
strings, :func:`decide_natively` takes those steps in two C calls
(``csrc/footer/decide.c``) over the footer scanner's records, and the filters are probed
where they lie (:mod:`..read.probe`): a small filter read whole, a large one's header and
a block per key, not the bitset; a caller's reader reads and keeps them as ever. The
predicate's other leaves (ranges, negations, NULL tests: decided by the statistics alone)
are the Python evaluator's (:func:`.evaluate.eval_leaf`), and so are the AND and OR above
the leaves and every reason a verdict gives (:func:`.evaluate.combine`, the same
outcomes): a verdict is the same either way; ``tests/unit/pruning/
test_native_equalities.py`` and the ``native`` fuzz target hold both to that.

Anything else answers None before a byte is read (no plain equality, or one of a column
the C side does not order), or once the C side is UNSURE (an unusual statistic, a filter
not where or as the footer says), and the Python evaluator decides the file from the
start, naming the reason.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from typing import Any

import numpy as np

from .._native import check, ffi, lib
from ..predicate import Predicate
from ..read.fetch import FilterState, Footer
from ..read.probe import ABSENT, MAY, Probe
from ..read.reader import OpenedFile
from ..types import PhysicalType
from .bounds import (
    Outcome,
    all_null_outcome,
    bounds_of,
    range_may,
    range_outside,
    range_typed,
)
from .evaluate import KEPT_ORDER, UNDECIDED, combine, eval_leaf
from .leaves import Leaf
from .verdicts import Rule, Verdict

_KIND = {"int": lib.PBA_KEY_INT, "uint": lib.PBA_KEY_UINT, "float": lib.PBA_KEY_FLOAT}
_WIDTH = {
    PhysicalType.INT32: 4,
    PhysicalType.INT64: 8,
    PhysicalType.FLOAT: 4,
    PhysicalType.DOUBLE: 8,
}
_SPAN = lib.PBA_EQ_SPAN
_NULLS = lib.PBA_EQ_NULLS
_STATS = lib.PBA_EQ_STATS
#: pba_eq_outcome: code, lo, hi, (padding), filter_offset, filter_length.
_OUTCOME = struct.Struct("=iII4xqq")
assert _OUTCOME.size == ffi.sizeof("pba_eq_outcome"), "pba_eq_outcome layout changed"
assert (ABSENT, MAY) == (0, 1), "NativeLeaf.passed is indexed by a probe's answer"


class NativeLeaf:
    """One equality leaf as ``pba_decide_equalities`` takes it, with its outcomes made once
    (the Python evaluator's, word for word)."""

    __slots__ = ("keys", "kind", "n", "no_filter", "nulls", "offsets", "passed", "stats", "width")

    def __init__(self, leaf: Leaf, kind: int, width: int, encoded: list[bytes]) -> None:
        blob = b"".join(encoded)
        offsets = [0]
        for raw in encoded:
            offsets.append(offsets[-1] + len(raw))
        self.kind = kind
        self.width = width
        self.n = len(encoded)
        self.keys = ffi.new("uint8_t[]", blob or b"\0")
        self.offsets = ffi.new("uint64_t[]", offsets)
        column, label = leaf.column, leaf.label
        self.nulls = Outcome(True, Rule.NULLS, f"{column} is all nulls (statistics)")
        self.stats = Outcome(True, Rule.STATISTICS, f"{label}: outside the min/max statistics")
        self.no_filter = Outcome(False, Rule.NO_FILTER, f"{column} has no Bloom filter")
        self.passed = (
            Outcome(True, Rule.BLOOM_FILTER, f"{label}: excluded by the Bloom filter"),
            Outcome(False, Rule.MAY_MATCH, f"{label}: the Bloom filter may contain it"),
        )

    def fill(self, c: Any, slot: int, leaf: Leaf) -> None:
        """Set the ``pba_eq_leaf`` ``c`` for ``leaf`` (its chunk at ``slot`` among a row
        group's wanted chunks); the arrays stay this object's."""
        _place(c, slot, self.kind, self.width, leaf)
        c.n_keys = self.n
        c.keys = self.keys
        c.key_offsets = self.offsets


def _place(c: Any, slot: int, kind: int, width: int, leaf: Leaf) -> None:
    """What a C leaf (``pba_eq_leaf``, ``pba_range_leaf``) says of its column: its chunk's
    slot, the kind and width of its values, whether an all-null chunk holds no match."""
    assert leaf.desc is not None
    c.slot = slot
    c.kind = kind
    c.width = width
    c.nulls_exclude = leaf.desc.max_repetition_level == 0


def native_leaf(leaf: Leaf) -> NativeLeaf | None:
    """The leaf for the C evaluator, or None when only the Python one decides it: not a
    plain equality, a column whose statistics are not ordered as integers, floats or byte
    strings, a NaN or a key that does not encode back to itself."""
    found = leaf.native
    if found is None:
        found = leaf.native = _make(leaf) or False
    return found or None


def _make(leaf: Leaf) -> NativeLeaf | None:
    desc = leaf.desc
    if desc is None or not leaf.needs_filter or len(leaf.hashes) != len(leaf.keys):
        return None
    keys = leaf.keys
    if leaf.kind == "bytes":
        if not all(type(k) is bytes for k in keys):
            return None
        return NativeLeaf(leaf, lib.PBA_KEY_BYTES, 0, list(keys))
    kind = _KIND.get(leaf.kind or "")
    width = _WIDTH.get(desc.physical_type)
    if kind is None or width is None:
        return None
    encoded: list[bytes] = []
    try:
        if kind == lib.PBA_KEY_FLOAT:
            if desc.physical_type not in (PhysicalType.FLOAT, PhysicalType.DOUBLE):
                return None
            fmt = struct.Struct("<f" if width == 4 else "<d")
            for k in keys:
                if type(k) is not float or math.isnan(k):
                    return None
                raw = fmt.pack(k)
                if fmt.unpack(raw)[0] != k:
                    return None
                encoded.append(raw)
        else:
            if desc.physical_type not in (PhysicalType.INT32, PhysicalType.INT64):
                return None
            signed = kind == lib.PBA_KEY_INT
            for k in keys:
                if type(k) is not int:
                    return None
                encoded.append(k.to_bytes(width, "little", signed=signed))
    except (OverflowError, struct.error):
        return None
    return NativeLeaf(leaf, kind, width, encoded)


class NativeRange:
    """One range leaf as ``pba_decide_ranges`` takes it: its ends encoded in the kind's
    order (8-byte numbers, or the bytes), and its outcomes made once (the Python
    evaluator's, word for word: :func:`.bounds.decide`)."""

    __slots__ = ("ends", "high", "kind", "low", "outcomes", "typed", "width")

    def __init__(self, leaf: Leaf, kind: int, width: int, low: bytes | None, high: bytes | None):
        self.kind = kind
        self.width = width
        self.low = low
        self.high = high
        self.ends = tuple(ffi.new("uint8_t[]", end or b"\0") for end in (low, high))
        typed = range_typed(leaf, bounds_of(leaf, None, None)[1])
        self.typed = typed is not None
        # By PBA_RANGE_* code: MAY, NULLS, STATS, TYPED.
        self.outcomes = (
            range_may(leaf),
            all_null_outcome(leaf),
            range_outside(leaf),
            typed or range_may(leaf),
        )

    def fill(self, c: Any, slot: int, leaf: Leaf) -> None:
        """Set the ``pba_range_leaf`` ``c`` for ``leaf`` (its chunk at ``slot``); the ends
        stay this object's."""
        _place(c, slot, self.kind, self.width, leaf)
        c.typed_excluded = self.typed
        if self.low is not None:
            c.low, c.low_len, c.has_low, c.low_open = self.ends[0], len(self.low), 1, leaf.low_open
        if self.high is not None:
            c.high, c.high_len, c.has_high = self.ends[1], len(self.high), 1
            c.high_open = leaf.high_open


def native_range(leaf: Leaf) -> NativeRange | None:
    """The range leaf for the C side, or None when only the Python evaluator decides it:
    not a plain range (a negation, a NULL test, a leaf that never prunes), a column whose
    statistics are not ordered as integers, floats or byte strings, or an end that does not
    encode (NaN, beyond 64 bits)."""
    desc = leaf.desc
    if desc is None or not leaf.ordered or leaf.negated or leaf.null_probe:
        return None
    if leaf.never_prunes is not None or leaf.needs_filter:
        return None
    ends: list[bytes | None] = []
    try:
        if leaf.kind == "bytes":
            for end in (leaf.low, leaf.high):
                if end is not None and type(end) is not bytes:
                    return None
                ends.append(end)
            return NativeRange(leaf, lib.PBA_KEY_BYTES, 0, ends[0], ends[1])
        kind = _KIND.get(leaf.kind or "")
        width = _WIDTH.get(desc.physical_type)
        if kind is None or width is None:
            return None
        floats = desc.physical_type in (PhysicalType.FLOAT, PhysicalType.DOUBLE)
        if floats != (kind == lib.PBA_KEY_FLOAT):
            return None
        for end in (leaf.low, leaf.high):
            if end is None:
                ends.append(None)
            elif kind == lib.PBA_KEY_FLOAT:
                if type(end) is not float or math.isnan(end):
                    return None
                ends.append(struct.pack("<d", end))
            else:
                if type(end) is not int:
                    return None
                ends.append(end.to_bytes(8, "little", signed=kind == lib.PBA_KEY_INT))
    except OverflowError:
        return None
    return NativeRange(leaf, kind, width, ends[0], ends[1])


async def decide_natively(
    file: OpenedFile, footer: Footer, where: Predicate, leaves: Mapping[int, Leaf], path: str
) -> list[Verdict] | None:
    """The verdicts of every row group of ``file``, whose ``footer`` was read, or None
    when the Python evaluator must decide it (see the module's docstring)."""
    sorted_leaves = sort_leaves(leaves)
    if sorted_leaves is None:
        return None
    natives, fixed, others = sorted_leaves
    decided = _statistics(footer, natives)
    if decided is None:
        return None
    if any(d[0] not in (_SPAN, _NULLS, _STATS) for d in decided):
        return None  # a statistic of an unusual shape (UNSURE): the Python evaluator's
    m = len(natives)
    meta = footer.metadata
    n_groups = len(decided) // m
    # The ranges, negations and null tests beside them: decided by the Python evaluator
    # from the statistics alone, the same in both rounds.
    other_keys = [key for key, _ in others]
    other_outs: list[list[Outcome]] = []
    if others:
        groups = meta.chunks_of(sorted({leaf.desc.index for _, leaf in others if leaf.desc}))
        other_outs = [
            [eval_leaf(leaf, groups[g], None, False, path) for _, leaf in others]
            for g in range(n_groups)
        ]
    current: dict[int, Outcome] = dict(fixed)

    def outcome(g: int, answers: Mapping[tuple[int, int], Outcome] | None) -> Outcome:
        """Row group ``g``'s outcome; a leaf its filter decides takes the filter's answer
        (None: round 1, UNDECIDED)."""
        current.update(zip(other_keys, other_outs[g] if others else (), strict=True))
        for i, (key, _, nat) in enumerate(natives):
            code = decided[g * m + i][0]
            if code == _SPAN:
                current[key] = UNDECIDED if answers is None else answers[(g, i)]
            else:
                current[key] = nat.nulls if code == _NULLS else nat.stats
        return combine(where, lambda p: current[id(p)], KEPT_ORDER)

    # Round 1: the statistics.
    firsts = [outcome(g, None) for g in range(n_groups)]
    # Round 2: the filters of the row groups still undecided: probed where they lie, else
    # read (and kept) by the reader as the Python evaluator reads them.
    undecided = [g for g, first in enumerate(firsts) if not first.excluded]
    answers: dict[tuple[int, int], Outcome] = {}
    if undecided:
        found = _probed(file, natives, decided, undecided)
        if found is None:
            found = await _read(file, natives, decided, undecided)
            if found is None:
                return None
        answers = found
    verdicts = []
    row_groups = meta.row_groups
    for g, first in enumerate(firsts):
        out_g = first if first.excluded else outcome(g, answers)
        verdicts.append(
            Verdict(path, g, row_groups[g].num_rows, not out_g.excluded, out_g.reason, out_g.rule)
        )
    return verdicts


def sort_leaves(
    leaves: Mapping[int, Leaf],
) -> tuple[_Natives, dict[int, Outcome], list[tuple[int, Leaf]]] | None:
    """The leaves the C side decides (at least one), the outcomes of those missing from the
    file, and the leaves the statistics alone decide; None when a leaf needs the Python
    evaluator's filters (an equality of a column not ordered as the C side orders)."""
    natives: _Natives = []
    fixed: dict[int, Outcome] = {}
    others: list[tuple[int, Leaf]] = []
    for key, leaf in leaves.items():
        if leaf.desc is None:
            why = f"{leaf.column}: {leaf.missing_reason}"
            fixed[key] = Outcome(False, Rule.MISSING_COLUMN, why)
            continue
        nat = native_leaf(leaf)
        if nat is not None:
            natives.append((key, leaf, nat))
        elif _before_filters(leaf):
            others.append((key, leaf))
        else:
            return None
    return (natives, fixed, others) if natives else None


def _before_filters(leaf: Leaf) -> bool:
    """Whether the leaf ladder decides the leaf before any filter (a range, a negation, a
    NULL test, a leaf that never prunes or cannot match): the same outcome in both rounds."""
    return (
        leaf.ordered
        or leaf.negated
        or leaf.null_probe
        or leaf.never_prunes is not None
        or not leaf.keys
    )


_Natives = list[tuple[int, Leaf, NativeLeaf]]
_Decided = list[tuple[int, int, int, int, int]]


def _statistics(footer: Footer, natives: _Natives) -> _Decided | None:
    """Per (row group, leaf), what the statistics decide (``pba_eq_outcome`` unpacked), in
    one C call over the footer scanner's records; None: the scanner does not read this
    footer as the decoder does."""
    indexes = sorted({leaf.desc.index for _, leaf, _ in natives if leaf.desc is not None})
    records = footer.metadata.chunk_records(indexes)
    if records is None:
        return None
    m = len(natives)
    arr = ffi.new("pba_eq_leaf[]", m)
    for i, (_, leaf, nat) in enumerate(natives):
        assert leaf.desc is not None
        nat.fill(arr[i], indexes.index(leaf.desc.index), leaf)
    n_groups = records.n_groups
    out = ffi.new("pba_eq_outcome[]", max(n_groups * m, 1))
    data = records.data
    chunks = ffi.from_buffer("pba_footer_chunk[]", records.chunks) if records.chunks else ffi.NULL
    rc = lib.pba_decide_equalities(
        ffi.from_buffer(data), len(data), chunks, n_groups, records.width, arr, m, out
    )
    check(rc, "deciding equalities")
    return list(_OUTCOME.iter_unpack(ffi.buffer(out, n_groups * m * _OUTCOME.size)))


def _probed(
    file: OpenedFile, natives: _Natives, decided: _Decided, undecided: list[int]
) -> dict[tuple[int, int], Outcome] | None:
    """The filters' answers, each probed where it lies (:meth:`OpenedFile.probe`), or
    None: not a file read so, or a filter not as the footer says."""
    m = len(natives)
    probes: list[Probe] = []
    asked: list[tuple[int, int, NativeLeaf]] = []
    out: dict[tuple[int, int], Outcome] = {}
    recorded = absent = 0
    for g in undecided:
        for i, (_, leaf, nat) in enumerate(natives):
            code, lo, hi, offset, length = decided[g * m + i]
            if offset <= 0:  # none recorded: the planned reads say ABSENT too
                absent += 1
                if code == _SPAN:
                    out[(g, i)] = nat.no_filter
                continue
            recorded += 1
            if code == _SPAN:
                asked.append((g, i, nat))
                may = None
                if nat.n > 1:
                    # Every key asked, each answer kept (rows/narrow cuts an IN list by them).
                    may = np.zeros(nat.n, dtype=np.uint8)
                probes.append(Probe(offset, length, leaf.hashes, lo, hi, may))
    if recorded and absent:
        return None  # some recorded, others not: the planned reads decide each
    if probes:
        got = file.probe(probes)
        if got is None:
            return None
        for (g, i, nat), r, probe in zip(asked, got, probes, strict=True):
            out[(g, i)] = nat.passed[r]
            leaf = natives[i][1]
            if probe.may is not None and leaf.desc is not None:
                file.marks[(g, leaf.desc.path)] = (leaf.hashes, probe.may)
    return out


async def _read(
    file: OpenedFile, natives: _Natives, decided: _Decided, undecided: list[int]
) -> dict[tuple[int, int], Outcome] | None:
    """The filters' answers from the filters the reader reads (or holds already), as
    :func:`.api.prune_opened` reads them; None when one is unusable (the Python evaluator
    then says why, or raises)."""
    m = len(natives)
    columns = sorted({leaf.desc.path for _, leaf, _ in natives if leaf.desc is not None})
    filters = await file.filters(columns, undecided)
    out: dict[tuple[int, int], Outcome] = {}
    for g in undecided:
        for i, (_, leaf, nat) in enumerate(natives):
            code, lo, hi, _, _ = decided[g * m + i]
            if code != _SPAN:
                continue
            assert leaf.desc is not None
            read = filters.get((g, leaf.desc.path))
            if read is None or read.state is FilterState.ABSENT:
                out[(g, i)] = nat.no_filter
            elif read.state is FilterState.OK and read.filter is not None:
                out[(g, i)] = nat.passed[read.filter.count_hashes(leaf.hashes[lo:hi]) > 0]
            else:
                return None
    return out
