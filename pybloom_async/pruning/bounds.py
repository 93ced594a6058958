"""What a container's statistics prove: the span of its values, and the leaves it decides.

A container is a row group (its chunk's statistics) or a page (the page index). Its
:class:`View` holds the bounds of its non-null values, taken from the min/max and the
column's type together (an INT(8) holds nothing above 127, whatever the statistics
say), and what its null counts say. :func:`decide` answers, from the view alone, the
leaves no Bloom filter can: ranges, negations and null tests (``!=``, ``NOT IN``,
``NOT (x < 5)``, ``IS NOT NULL``). Each answer is exact or keeps the container:

* bounds are used only as bounds: a truncated maximum (``is_max_value_exact`` false, or
  any maximum of a page index, which says nothing of it) is a prefix of the true
  maximum or above it, so only the prefix's successor bounds the values; a minimum is
  never above the values, truncated or not; NaN bounds and bounds out of order are
  not used, nor are statistics of types whose order is not the one compared here
  (INT96, BOOLEAN, FLOAT16, logical types we do not order);
* a NOT (``!=``, ``NOT IN``, ``NOT (x < 5)``) rules a container out only when every
  non-null value makes its test true, which bounds prove for an exact single value or
  a span inside a range; for floats only where the statistics count no NaN
  (``nan_count`` 0), since a NaN (which min/max leave out) makes every such NOT true;
* NULL makes every comparison unknown: an all-null container holds no TRUE row for
  anything but ``IS NULL`` and ``NOT (x <=> v)``.
"""

from __future__ import annotations

import bisect
import math
import struct
from typing import Any, NamedTuple

from .leaves import Leaf
from .literals import binary_float, literal_sort_key
from .verdicts import Rule


class Outcome(NamedTuple):
    excluded: bool
    rule: Rule
    reason: str


class Bounds(NamedTuple):
    """Every non-null value ``v`` of the container has ``low <= v`` and ``v <= high``
    (``v < high`` when ``high_open``); None: no bound known on that side."""

    low: Any = None
    high: Any = None
    high_open: bool = False


class View(NamedTuple):
    """A container as the statistics see it: ``bounds`` from its min/max and the type,
    ``typed`` the bounds of the type alone; ``all_null`` when every value is NULL, the
    number of NULLs (None: unknown), and ``nan_free`` when no value is NaN (not a float
    column, or the statistics count no NaN)."""

    bounds: Bounds
    typed: Bounds
    all_null: bool
    null_count: int | None
    nan_free: bool


def _successor(prefix: bytes) -> bytes | None:
    """The least byte string above every string that starts with ``prefix``."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


def bounds_of(
    leaf: Leaf, low_raw: bytes | None, high_raw: bytes | None, high_exact: bool = True
) -> tuple[Bounds, Bounds]:
    """The bounds of a container's values (with the type's), and those of the type alone.

    ``low_raw`` and ``high_raw`` are the PLAIN-encoded min and max (None: absent);
    ``high_exact`` False when the maximum may be truncated.
    """
    domain = leaf.domain
    typed = Bounds(*domain) if domain is not None else _NONE
    low, high, high_open = stats_bounds(leaf, low_raw, high_raw, high_exact)
    if low is None or (typed.low is not None and low < typed.low):
        low = typed.low
    if typed.high is not None and (high is None or typed.high < high):
        high, high_open = typed.high, False
    return Bounds(low, high, high_open), typed


_NONE = Bounds()


def stats_bounds(
    leaf: Leaf, low_raw: bytes | None, high_raw: bytes | None, high_exact: bool = True
) -> Bounds:
    """The min and max as bounds in the column's order, where they can be trusted (a
    truncated maximum through its prefix's successor)."""
    low, high = _keys(leaf, low_raw, high_raw)
    if high is not None and leaf.kind == "bytes" and not high_exact:
        return Bounds(low, _successor(high), True)
    return Bounds(low, high, False)


def _keys(leaf: Leaf, low_raw: bytes | None, high_raw: bytes | None) -> tuple[Any, Any]:
    """The min and max as keys of the column's order, when they can be trusted."""
    assert leaf.desc is not None
    if leaf.kind is None or (low_raw is None and high_raw is None):
        return None, None
    pt = leaf.desc.physical_type
    try:
        low = None if low_raw is None else literal_sort_key(leaf.kind, low_raw, pt)
        high = None if high_raw is None else literal_sort_key(leaf.kind, high_raw, pt)
    except (struct.error, ValueError):
        return None, None  # statistics of the wrong width: ignore them
    if any(isinstance(k, float) and math.isnan(k) for k in (low, high)):
        return None, None
    if low is not None and high is not None and low > high:
        return None, None  # inconsistent statistics are not trusted
    return low, high


def key_span(keys: list[Any], bounds: Bounds) -> tuple[int, int]:
    """Indexes ``[lo, hi)`` of the sorted ``keys`` inside the bounds."""
    lo = 0 if bounds.low is None else bisect.bisect_left(keys, bounds.low)
    if bounds.high is None:
        return lo, len(keys)
    cut = bisect.bisect_left if bounds.high_open else bisect.bisect_right
    return lo, cut(keys, bounds.high)


def _meets(leaf: Leaf, b: Bounds) -> bool:
    """Whether the leaf's range and the bounds may share a value."""
    low, high = leaf.low, leaf.high
    if (
        low is not None
        and high is not None
        and (low > high or (low == high and (leaf.low_open or leaf.high_open)))
    ):
        return False  # an empty range (BETWEEN 5 AND 1)
    if (
        high is not None
        and b.low is not None
        and (b.low > high or (b.low == high and leaf.high_open))
    ):
        return False
    return not (
        low is not None
        and b.high is not None
        and (b.high < low or (b.high == low and (leaf.low_open or b.high_open)))
    )


def range_typed(leaf: Leaf, typed: Bounds) -> Outcome | None:
    """A range's outcome from its column's type alone (``typed``: the type's bounds), the
    same in every container whose values are not all null; None: the type may hold it."""
    if leaf.unordered is not None:
        return Outcome(True, Rule.TYPE, f"{leaf.label}: {leaf.unordered}")
    if not _meets(leaf, typed):
        return Outcome(True, Rule.TYPE, f"{leaf.label}: the column's type holds no such value")
    return None


def range_outside(leaf: Leaf) -> Outcome:
    """A range the min/max statistics leave no value in."""
    return Outcome(True, Rule.STATISTICS, f"{leaf.label}: outside the min/max statistics")


def range_may(leaf: Leaf) -> Outcome:
    """A range the statistics may hold values of."""
    return Outcome(False, Rule.MAY_MATCH, f"{leaf.label}: may hold values in range")


def all_null_outcome(leaf: Leaf) -> Outcome:
    """A leaf (not ``IS NULL`` nor ``NOT (x <=> v)``) in a container whose every value is
    null."""
    return Outcome(True, Rule.NULLS, f"{leaf.column} is all nulls (statistics)")


def _inside(leaf: Leaf, b: Bounds) -> bool:
    """Whether every value within the bounds lies in the leaf's range."""
    if b.low is None or b.high is None:
        return False
    if leaf.low is not None and not (b.low > leaf.low or (b.low == leaf.low and not leaf.low_open)):
        return False
    return (
        leaf.high is None
        or b.high < leaf.high
        or (b.high == leaf.high and (not leaf.high_open or b.high_open))
    )


def _single(leaf: Leaf, b: Bounds) -> bool:
    """Whether every value within the bounds is one of the leaf's keys (one value)."""
    return (
        b.low is not None
        and not b.high_open
        and b.low == b.high
        and any(k == b.low for k in leaf.keys)
    )


def _no_nan(leaf: Leaf, nan_count: int | None = None) -> bool:
    """Whether the container holds no NaN: not a float column, or none counted."""
    assert leaf.desc is not None
    return not binary_float(leaf.desc) or nan_count == 0


def decide(leaf: Leaf, view: View) -> Outcome:
    """The outcome of a leaf no filter decides (see :attr:`Leaf.needs_filter`) for one
    container: excluded only when no row of it can make the leaf TRUE."""
    column = leaf.column
    if leaf.null_probe and leaf.null_safe and leaf.negated:  # IS NOT NULL
        if view.all_null:
            return Outcome(True, Rule.NULLS, f"{column} is all nulls (statistics)")
        return Outcome(False, Rule.MAY_MATCH, f"{leaf.label}: {column} may hold values")
    if leaf.null_probe:
        return Outcome(False, Rule.NEVER_PRUNES, f"{leaf.label}: NULL probes never prune")
    if leaf.never_prunes is not None:
        return Outcome(False, Rule.NEVER_PRUNES, leaf.never_prunes)
    nulls_match = leaf.negated and leaf.null_safe  # NOT (x <=> v) holds for a NULL
    if view.all_null and not nulls_match:
        return all_null_outcome(leaf)
    if leaf.ordered and not leaf.negated:
        typed = range_typed(leaf, view.typed)
        if typed is not None:
            return typed
        if not _meets(leaf, view.bounds):
            return range_outside(leaf)
        return range_may(leaf)
    if nulls_match and (view.null_count is None or view.null_count > 0 or view.all_null):
        return Outcome(False, Rule.MAY_MATCH, f"{leaf.label}: {column} may hold nulls")
    if leaf.ordered:  # NOT of a range
        if leaf.unordered is None and view.nan_free and _inside(leaf, view.bounds):
            rule = Rule.TYPE if _inside(leaf, view.typed) else Rule.STATISTICS
            return Outcome(True, rule, f"{leaf.label}: every value is in the range")
        return Outcome(False, Rule.MAY_MATCH, f"{leaf.label}: may hold values outside the range")
    # !=, NOT IN, NOT (x <=> v): false only where every value is one of the keys.
    if leaf.keys and view.nan_free and _single(leaf, view.bounds):
        return Outcome(True, Rule.STATISTICS, f"{leaf.label}: every value equals it (statistics)")
    return Outcome(False, Rule.MAY_MATCH, f"{leaf.label}: may hold other values")


def index_view(leaf: Leaf, num_rows: int | None = None, null_count: int | None = None) -> View:
    """The view of an index that keeps no min/max (a sidecar or lake index): the type's
    bounds, and the null count when it keeps one (``num_rows``: the file's rows)."""
    assert leaf.desc is not None
    bounds, typed = bounds_of(leaf, None, None)
    known = null_count is not None and null_count >= 0 and leaf.desc.max_repetition_level == 0
    all_null = known and num_rows is not None and num_rows > 0 and null_count == num_rows
    return View(bounds, typed, all_null, null_count if known else None, _no_nan(leaf))


def chunk_view(leaf: Leaf, stats: Any, num_values: int) -> View:
    """A row group's view of a leaf's column, from its chunk's statistics (or None)."""
    assert leaf.desc is not None
    if stats is None:
        bounds, typed = bounds_of(leaf, None, None)
        return View(bounds, typed, False, None, _no_nan(leaf))
    bounds, typed = bounds_of(
        leaf, stats.min_value, stats.max_value, stats.is_max_value_exact is not False
    )
    nulls = stats.null_count
    all_null = (
        nulls is not None
        and num_values > 0
        and nulls == num_values
        and leaf.desc.max_repetition_level == 0
    )
    return View(bounds, typed, all_null, nulls, _no_nan(leaf, stats.nan_count))
