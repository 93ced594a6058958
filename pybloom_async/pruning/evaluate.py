"""The evaluator: a predicate's normal form over one row group.

Round 1 decides from types, nulls and statistics; round 2 from the Bloom filters,
which only plain equalities (``=``, ``<=>``, ``IN``) ask.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..errors import InvalidFilterError
from ..parquet import GroupChunks, RowGroup
from ..predicate import And, Or, Predicate
from ..read.fetch import BloomFilterRead, FilterKey, FilterState
from ..types import PhysicalType
from .bounds import Outcome, View, chunk_view, decide, key_span, stats_bounds
from .leaves import Leaf, leaf_column
from .verdicts import Rule

# ---- evaluation ------------------------------------------------------------------------


_PENDING = object()
#: The first round's outcome for a leaf that only its filter can decide.
UNDECIDED = Outcome(False, Rule.MAY_MATCH, "")

#: One file's leaves decided up to their filter: per ``(id(leaf), row group)``, the outcome
#: when the column, types, nulls or statistics already decide, else the ``[lo, hi)`` range of
#: the leaf's sorted keys the filter must be asked about. Filled in the first round (no
#: filters yet) and read in the second, so nothing before the filter is computed twice.
Decided = dict[tuple[int, int], "Outcome | tuple[int, int]"]


def before_membership(
    leaf: Leaf, view: Callable[[], View], nulls: int | None, source: str, rule: Rule | None = None
) -> Outcome | None:
    """The leaf ladder every container shares (a row group's footer, a sidecar or lake
    index, a dictionary): ordered or negated leaves decided by ``view`` (called only for
    them), then NULL probes by the container's null count (``nulls``; None: not known),
    then leaves that never prune, then literals the column cannot hold. None: the leaf is a
    plain equality, left to the container's own membership test (its filter, index bits or
    dictionary). ``source`` names the container in reasons; ``rule``, if given, is the rule
    every exclusion here carries (an index's own), else each step's (statistics, nulls,
    type)."""
    if leaf.ordered or leaf.negated:
        out = decide(leaf, view())
        return Outcome(True, rule, out.reason) if rule is not None and out.excluded else out
    if leaf.null_probe:
        if leaf.null_safe and nulls == 0:
            return Outcome(True, rule or Rule.NULLS, f"{leaf.column} has no nulls ({source})")
        if leaf.null_safe and nulls is not None and nulls > 0:
            return Outcome(False, Rule.MAY_MATCH, f"{leaf.column} has {nulls} nulls ({source})")
        return Outcome(False, Rule.NEVER_PRUNES, f"{leaf.label}: NULL probes never prune")
    if leaf.never_prunes is not None:
        return Outcome(False, Rule.NEVER_PRUNES, leaf.never_prunes)
    if not leaf.keys:
        why = "; ".join(leaf.cannot) or "no value"
        return Outcome(True, rule or Rule.TYPE, f"{leaf.column} cannot hold {why}")
    return None


def _before_filter(leaf: Leaf, rg: RowGroup | GroupChunks) -> Outcome | tuple[int, int]:
    """What decides a leaf without its filter, or the keys ``[lo, hi)`` left for the filter."""
    if leaf.desc is None:
        return Outcome(False, Rule.MISSING_COLUMN, f"{leaf.column}: {leaf.missing_reason}")
    chunk = rg.columns[leaf.desc.index]
    stats = chunk.statistics
    shared = before_membership(
        leaf,
        lambda: chunk_view(leaf, stats, chunk.num_values),
        stats.null_count if stats is not None else None,
        "statistics",
    )
    if shared is not None:
        return shared
    if stats is None:
        return 0, len(leaf.keys)
    if (
        stats.null_count is not None
        and chunk.num_values > 0
        and stats.null_count == chunk.num_values
        and leaf.desc.max_repetition_level == 0
    ):
        return Outcome(True, Rule.NULLS, f"{leaf.column} is all nulls (statistics)")
    exact = stats.is_max_value_exact is not False
    span = key_span(leaf.keys, stats_bounds(leaf, stats.min_value, stats.max_value, exact))
    if span[0] >= span[1]:
        return Outcome(True, Rule.STATISTICS, f"{leaf.label}: outside the min/max statistics")
    return span


def eval_leaf(
    leaf: Leaf,
    rg: RowGroup | GroupChunks,
    filt: BloomFilterRead | object | None,
    strict: bool,
    path: str,
    decided: Decided | None = None,
) -> Outcome:
    if decided is None:
        before = _before_filter(leaf, rg)
    else:
        key = (id(leaf), rg.index)
        found = decided.get(key)
        before = decided[key] = _before_filter(leaf, rg) if found is None else found
    if isinstance(before, Outcome):
        return before
    if filt is _PENDING:
        return UNDECIDED
    assert leaf.desc is not None  # else _before_filter decided
    if not isinstance(filt, BloomFilterRead) or filt.state is FilterState.ABSENT:
        return Outcome(False, Rule.NO_FILTER, f"{leaf.column} has no Bloom filter")
    if leaf.desc.physical_type is PhysicalType.BOOLEAN:
        # parquet-java (Spark) writes a filter for BOOLEAN columns but never
        # inserts into it: an all-zero filter that would exclude everything.
        return Outcome(
            False, Rule.UNUSABLE_FILTER, f"{leaf.column}: BOOLEAN Bloom filters are not trusted"
        )
    if filt.state is FilterState.UNUSABLE or filt.filter is None:
        if strict:
            raise InvalidFilterError(
                f"unusable Bloom filter: {filt.reason}",
                path=path,
                row_group=rg.index,
                column=leaf.column,
            )
        return Outcome(
            False, Rule.UNUSABLE_FILTER, f"{leaf.column}: unusable Bloom filter ({filt.reason})"
        )
    lo, hi = before
    if filt.filter.count_hashes(leaf.hashes[lo:hi]) == 0:
        return Outcome(True, Rule.BLOOM_FILTER, f"{leaf.label}: excluded by the Bloom filter")
    return Outcome(False, Rule.MAY_MATCH, f"{leaf.label}: the Bloom filter may contain it")


def evaluate(
    p: Predicate,
    leaves: Mapping[int, Leaf],
    rg: RowGroup | GroupChunks,
    filters: Mapping[FilterKey, BloomFilterRead] | None,
    strict: bool,
    path: str,
    decided: Decided | None = None,
) -> Outcome:
    """One row group's outcome from its footer (round 1) or also its filters (round 2)."""

    def decide(leaf_p: Predicate) -> Outcome:
        leaf = leaves[id(leaf_p)]
        filt: BloomFilterRead | object | None = _PENDING
        if filters is not None:
            filt = filters.get((rg.index, leaf.desc.path)) if leaf.desc is not None else None
        return eval_leaf(leaf, rg, filt, strict, path, decided)

    return combine(p, decide, KEPT_ORDER)


#: The most telling reason a row group stays: a damaged filter first.
KEPT_ORDER = (
    Rule.UNUSABLE_FILTER,
    Rule.MISSING_COLUMN,
    Rule.NO_FILTER,
    Rule.NEVER_PRUNES,
    Rule.MAY_MATCH,
)


def combine(
    p: Predicate,
    decide: Callable[[Predicate], Outcome],
    kept_order: Sequence[Rule],
    excluded_rule: Rule | None = None,
) -> Outcome:
    """The outcome of ``p``, a normal form (:func:`~pybloom_async.predicate.
    normal_form`), from its leaves' outcomes (``decide``): AND and OR.

    AND excludes with its first excluding part, else keeps with the first rule of
    ``kept_order`` that a part kept with; OR keeps with its first keeping part, else
    excludes with ``excluded_rule`` (default: the first part's rule). Reasons are joined.
    With NOT pushed down to the leaves, a leaf that no row makes TRUE makes no AND or OR
    above it TRUE by itself: each leaf's outcome says whether some row may make it TRUE.
    Shared by the in-file pruner and the sidecar and lake index pruners.
    """
    if isinstance(p, And):
        kept: list[Outcome] = []
        for child in p.children:
            out = combine(child, decide, kept_order, excluded_rule)
            if out.excluded:
                return out
            kept.append(out)
        return Outcome(False, _kept_rule(kept, kept_order), join_reasons(o.reason for o in kept))
    if isinstance(p, Or):
        outs = []
        for child in p.children:
            out = combine(child, decide, kept_order, excluded_rule)
            if not out.excluded:
                return out
            outs.append(out)
        # Every part excluded it; name the first part's rule.
        rule = excluded_rule if excluded_rule is not None else outs[0].rule
        return Outcome(True, rule, join_reasons(o.reason for o in outs))
    return decide(p)


def _kept_rule(outs: Sequence[Outcome], order: Sequence[Rule]) -> Rule:
    for rule in order:
        if any(o.rule is rule for o in outs):
            return rule
    return outs[0].rule if outs else Rule.MAY_MATCH


def join_reasons(reasons: Any) -> str:
    seen: list[str] = []
    for r in reasons:
        if r and r not in seen:
            seen.append(r)
    text = "; ".join(seen)
    return text if len(text) <= 400 else text[:397] + "..."


def leaves_of(p: Predicate) -> list[Predicate]:
    """The leaves of a normal form (comparisons, and NOT of those it keeps), depth first."""
    if isinstance(p, (And, Or)):
        out: list[Predicate] = []
        for c in p.children:
            out.extend(leaves_of(c))
        return out
    leaf_column(p)  # PredicateError: not a leaf of a normal form
    return [p]
