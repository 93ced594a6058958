"""A predicate's leaves made ready for one file: literals encoded for their column, hashed once."""

from __future__ import annotations

import copy
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..core.hashing import hash_values
from ..errors import PredicateError
from ..parquet import ColumnDescriptor
from ..predicate import (
    COMPARISONS,
    Between,
    Compare,
    Eq,
    In,
    IsNotNull,
    Not,
    NotIn,
    Predicate,
)
from ..read.fetch import Footer
from ..types import PhysicalType
from ..values import CannotMatch, NeverPrunes
from ..values.order import Unordered, domain_bounds
from .in_lists import plain_in_list
from .literals import encode_literal, literal_sort_key, order_literal, sort_kind
from .verdicts import show


@dataclass
class Leaf:
    """One comparison of the predicate's normal form, prepared for one file's column.

    An equality (``=``, ``<=>``, ``IN``) has its literals' ``keys`` (sorted, in the
    statistics' order) and ``hashes`` (for the Bloom filter). ``negated``: the leaf is
    the NOT of that test (``!=``, ``NOT IN``, ``IS NOT NULL``, ``NOT (x <=> v)``) or of
    its range. ``ordered``: a range (``<``, ``BETWEEN``, ...) from ``low`` to ``high``
    (None: unbounded; ``*_open``: the end itself excluded), or ``unordered`` when its
    literal has no place (NaN). Only a plain equality asks the filter.
    """

    label: str
    column: str
    desc: ColumnDescriptor | None = None
    missing_reason: str | None = None
    null_probe: bool = False
    null_safe: bool = False
    never_prunes: str | None = None
    cannot: list[str] = field(default_factory=list)
    kind: str | None = None
    keys: list[Any] = field(default_factory=list)
    hashes: np.ndarray[Any, Any] = field(default_factory=lambda: np.empty(0, np.uint64))
    negated: bool = False
    ordered: bool = False
    low: Any = None
    low_open: bool = False
    high: Any = None
    high_open: bool = False
    unordered: str | None = None
    #: The least and greatest key the column's type stores (None: no such bounds).
    domain: tuple[Any, Any] | None = None
    #: The leaf as the C evaluator takes it (``pruning/native.py``), made on first use;
    #: False when it cannot take it.
    native: Any = field(default=None, compare=False, repr=False)

    @property
    def needs_filter(self) -> bool:
        return (
            self.desc is not None
            and self.desc.physical_type is not PhysicalType.BOOLEAN
            and not self.null_probe
            and not self.negated
            and not self.ordered
            and self.never_prunes is None
            and len(self.keys) > 0
        )


def _label(p: Predicate) -> str:
    text = str(p)
    return text if len(text) <= 120 else text[:117] + "..."


#: Which form of a predicate's leaf is built: the leaf itself; ``rows``, the leaf whose
#: keys select rows (an IN list's NULLs dropped: :func:`_rows_form`); ``low`` and ``high``,
#: a BETWEEN's ends as the comparisons ``>= low`` and ``<= high``.
Variant = Literal["", "rows", "low", "high"]

#: What building a leaf reads of its column: its path and type (not its place or levels).
_TypeKey = tuple[tuple[str, ...], PhysicalType, int | None, Any]


class LeafCache:
    """The leaves of one run's predicate, each built once per column type and variant.

    The one place leaves are built (:func:`_build_leaf`): every container of a run (a
    file's statistics and filters, a page index, a dictionary, partition values, a sidecar
    index, the lake index) asks here. A leaf built for one type serves every column
    descriptor of that type (path, physical and logical type), bound to each descriptor
    by a shallow copy: its literals are encoded and hashed once.

    Entries are keyed by the identity of the predicate's leaf, and last as long as it: the
    run's own leaves for the run, a leaf made for one file (a lookup's IN list cut to what
    its filters may hold, ``rows/narrow.py``) until that file is read. An entry goes as its
    leaf is freed (a weak reference's callback, before its ``id`` can be taken again), so
    no run holds what its files made. Safe to share between the run's worker threads.
    """

    def __init__(self) -> None:
        self._typed: dict[tuple[int, Variant, _TypeKey], Leaf] = {}
        self._bound: dict[tuple[int, Variant, ColumnDescriptor], Leaf] = {}
        #: Per leaf's ``id``: a weak reference to it, and the entries made for it.
        self._keys: dict[int, tuple[weakref.ref[Predicate], list[tuple[Any, ...]]]] = {}
        self._lock = threading.Lock()

    def leaf(self, p: Predicate, desc: ColumnDescriptor, variant: Variant = "") -> Leaf:
        """The ``variant`` of a normal form's leaf ``p`` (see :data:`Variant`) for ``desc``.

        Raises
        ------
        PredicateError
            A literal is not a value of the column's type (nothing is cached then).
        """
        key = (id(p), variant, desc)
        found = self._bound.get(key)  # p is alive: an entry of its id is its own
        if found is not None:
            return found
        with self._lock:
            found = self._bound.get(key)
            if found is None:
                form = _variant(p, variant)
                # A variant that is the leaf itself is the leaf's entry.
                typed_key = (id(p), variant if form is not p else "", _type_of(desc))
                typed = self._typed.get(typed_key)
                if typed is None:
                    typed = self._typed[typed_key] = _build_leaf(form, desc)
                    self._remember(p, typed_key)
                found = typed
                if found.desc != desc:
                    found = copy.copy(found)  # the literals' keys and hashes shared
                    found.desc = desc
                self._bound[key] = found
                self._remember(p, key)
        return found

    def _remember(self, p: Predicate, key: tuple[Any, ...]) -> None:
        pid = id(p)
        entry = self._keys.get(pid)
        if entry is None:
            mine = weakref.ref(self)  # the callback does not keep the cache alive

            def forget(_: object) -> None:
                cache = mine()
                if cache is not None:
                    cache._forget(pid)

            entry = self._keys[pid] = (weakref.ref(p, forget), [])
        entry[1].append(key)

    def _forget(self, pid: int) -> None:
        """Drop the entries of a leaf being freed (in any thread, at any point: each step
        is one dictionary operation, and no entry of a live leaf has its ``id``)."""
        entry = self._keys.pop(pid, None)
        if entry is not None:
            for key in entry[1]:
                self._typed.pop(key, None)
                self._bound.pop(key, None)


def _type_of(desc: ColumnDescriptor) -> _TypeKey:
    return (desc.path_parts, desc.physical_type, desc.type_length, desc.logical_type)


def _variant(p: Predicate, variant: Variant) -> Predicate:
    if variant == "rows":
        return _rows_form(p)
    if variant in ("low", "high"):
        assert isinstance(p, Between), type(p).__name__
        if variant == "low":
            return Compare(p.column, ">=", p.low)
        return Compare(p.column, "<=", p.high)
    return p


def _rows_form(p: Predicate) -> Predicate:
    """The leaf whose keys select rows (pages): an IN list's NULLs dropped.

    Pruning keeps every row group for ``IN (..., NULL)`` (a NULL probe never prunes), but
    a NULL in an IN list matches no row: the rows it may hold are those of its other
    values (none left: an empty list, no row).
    """
    if isinstance(p, In) and any(v is None for v in p.values):
        return In(p.column, tuple(v for v in p.values if v is not None))
    return p


def prepare(p: Predicate, footer: Footer, cache: LeafCache) -> Leaf:
    """The leaf for one file, from the run's ``cache`` (files whose column has the same
    type share one).

    ``p`` is a leaf of a normal form (:func:`pybloom_async.predicate.normal_form`).
    """
    column = leaf_column(p)
    try:
        desc = footer.metadata.schema.column(column)
    except PredicateError as exc:
        return Leaf(_label(p), column, missing_reason=exc.message)
    return cache.leaf(p, desc)


def leaf_column(p: Predicate) -> str:
    """The column of a normal form's leaf (a comparison, or NOT of one)."""
    test = p.child if isinstance(p, Not) else p
    if not isinstance(test, COMPARISONS):
        raise PredicateError(f"unsupported predicate {type(p).__name__}")
    return test.column


def _build_leaf(p: Predicate, desc: ColumnDescriptor) -> Leaf:
    """A normal form's leaf (:func:`pybloom_async.predicate.normal_form`) for ``desc``:
    the leaf ladder, reached through :class:`LeafCache` only.

    Raises
    ------
    PredicateError
        A literal is not a value of the column's type.
    """
    leaf = Leaf(_label(p), leaf_column(p), desc=desc, domain=domain_bounds(desc))
    test = p.child if isinstance(p, Not) else p
    leaf.negated = test is not p
    if isinstance(test, IsNotNull):
        leaf.null_probe = leaf.null_safe = leaf.negated = True
        return leaf
    if isinstance(test, Between) or (isinstance(test, Compare) and test.op != "!="):
        return _range_leaf(leaf, test, desc)
    values: Sequence[Any]
    if isinstance(test, Compare):  # !=: NOT (column = value)
        leaf.negated = True
        values = (test.value,)
    elif isinstance(test, Eq):
        values = (test.value,)
        leaf.null_safe = test.null_safe
    else:
        assert isinstance(test, (In, NotIn))
        leaf.negated = isinstance(test, NotIn)
        values = test.values
    if any(v is None for v in values):
        # = NULL, <=> NULL and NULL in a list: a NULL probe never prunes by a filter
        # (<=> NULL is decided by the null counts); the other values are still checked.
        for value in values:
            if value is not None:
                encode_literal(value, desc)  # PredicateError: not a value of the column's type
        leaf.null_probe = True
        leaf.null_safe = leaf.null_safe and len(values) == 1
        return leaf
    _equality(leaf, values, desc)
    return leaf


def _equality(leaf: Leaf, values: Sequence[Any], desc: ColumnDescriptor) -> None:
    """The leaf's keys and hashes: every encoding of every value."""
    types = set(map(type, values))
    leaf.kind = sort_kind(desc)
    plain = plain_in_list(values, desc, types)
    if plain is not None:
        leaf.keys, leaf.hashes, leaf.cannot = plain
        return
    alternatives: list[tuple[Any, bytes]] = []
    for value in values:
        encoded = encode_literal(value, desc)  # PredicateError: not a value of the column's type
        if isinstance(encoded, NeverPrunes):
            leaf.never_prunes = f"{show(value)}: {encoded.reason}"
            return
        if isinstance(encoded, CannotMatch):
            if len(leaf.cannot) < 3:
                leaf.cannot.append(f"{show(value)}: {encoded.reason}")
            continue
        for raw in encoded.alternatives:
            sort_key = literal_sort_key(leaf.kind, raw, desc.physical_type) if leaf.kind else 0
            alternatives.append((sort_key, raw))
    if leaf.kind:
        alternatives.sort(key=lambda a: a[0])
    leaf.keys = [a[0] for a in alternatives]
    # Hashing the PLAIN bytes is what the writer did, whatever the type.
    leaf.hashes = hash_values([a[1] for a in alternatives], PhysicalType.BYTE_ARRAY)


def _range_leaf(leaf: Leaf, test: Compare | Between, desc: ColumnDescriptor) -> Leaf:
    """A range's ends as places in the column's order (every literal read first)."""
    leaf.ordered = True
    leaf.kind = sort_kind(desc)
    ends = (
        [(test.low, ">="), (test.high, "<=")]
        if isinstance(test, Between)
        else [(test.value, test.op)]
    )
    places = [(None if v is None else order_literal(v, desc), op) for v, op in ends]
    for place, op in places:
        if place is None:
            leaf.null_probe = True  # a comparison with NULL is never TRUE, its NOT may be
        elif isinstance(place, NeverPrunes):
            leaf.never_prunes = place.reason
        elif isinstance(place, Unordered):
            leaf.unordered = place.reason
        elif op in ("<", "<="):
            leaf.high, leaf.high_open = place, op == "<"
        else:
            leaf.low, leaf.low_open = place, op == ">"
    return leaf
