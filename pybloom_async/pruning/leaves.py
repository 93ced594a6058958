"""A predicate's leaves made ready for one file: literals encoded for their column, hashed once."""

from __future__ import annotations

import copy
import datetime
import decimal
import math
import numbers
import struct
import threading
import uuid
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from ..core.hashing import hash_values
from ..errors import (
    PredicateError,
    UnsupportedTypeError,
    ValueEncodingError,
)
from ..parquet import ColumnDescriptor, LogicalKind
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
    TextLiteral,
    literal_text,
)
from ..read.fetch import Footer
from ..types import PhysicalType
from ..values import CannotMatch, Encoded, NeverPrunes, encode_text, encode_value, parse_text_value
from ..values.order import Position, Unordered, domain_bounds, position_of
from .in_lists import plain_in_list
from .verdicts import show


def binary_float(column: ColumnDescriptor) -> bool:
    """A binary floating-point column: a number literal means the nearest value of it."""
    lt = column.logical_type
    return column.physical_type in (PhysicalType.FLOAT, PhysicalType.DOUBLE) or (
        lt is not None and lt.kind is LogicalKind.FLOAT16
    )


def _read_as_number(column: ColumnDescriptor) -> bool:
    """A column whose values are exact numbers (integers, decimals, dates, times and
    timestamps as counts): a Python float there is the decimal number it prints as."""
    lt = column.logical_type
    return (lt is not None and lt.kind is LogicalKind.DECIMAL) or column.physical_type in (
        PhysicalType.INT32,
        PhysicalType.INT64,
    )


def literal_of(value: Any) -> str:
    """A literal as the text form writes it, cut short for a message."""
    text = literal_text(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"


#: Beyond this many bits an integer is beyond every binary float type (2**1024 > DBL_MAX).
_BEYOND_FLOATS = 1100


def _quoted(value: Any) -> str | None:
    """The text of a literal the text form writes in quotes, or None for other values."""
    if isinstance(value, TextLiteral):
        return value.text
    if isinstance(value, str):
        return value
    if isinstance(value, datetime.time) and value.tzinfo and value.utcoffset() is None:
        return None  # no fixed offset to write: the encoder says why
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    return None


def _number_text(value: Any) -> str | None:
    """A finite int, Decimal or float as the decimal text it stands for, else None.

    A float stands for the number it prints as (``0.1`` is one tenth), as in
    the text form, which writes it so.
    """
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, numbers.Integral):
        number = int(value)
        return str(number) if number.bit_length() <= _BEYOND_FLOATS else None
    if isinstance(value, decimal.Decimal):
        return str(value) if value.is_finite() else None
    if isinstance(value, float) and math.isfinite(value):
        return float.__repr__(value)
    return None


def _encode(value: Any, column: ColumnDescriptor) -> Encoded:
    """A literal's encodings in ``column``, read by the column's type.

    One rule for both forms of a predicate (see :mod:`pybloom_async.predicate`):
    a value the text form writes in quotes (``str``, dates, times, timestamps,
    UUIDs) means that text read by the column's type; in a FLOAT, DOUBLE or
    FLOAT16 column a number means the nearest value of the type, as SQL reads a
    literal; a Python float means the decimal it prints as; otherwise a number
    is taken exactly. A literal that is not a value of the column's type is the
    user's mistake; one the column cannot hold is ``CannotMatch``.

    Raises
    ------
    PredicateError
        The literal is not a value of the column's type (naming the column,
        the value and the forms the column takes).
    """
    try:
        text = _quoted(value)
        if text is not None:
            return encode_text(text, column)
        if binary_float(column):
            number = _number_text(value)
            if number is not None:
                return encode_text(number, column)  # the nearest value, as in SQL
            if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
                return CannotMatch(f"{show(value)} is beyond the range of the column's type")
            if isinstance(value, decimal.Decimal):  # NaN and infinities
                return encode_value(float(value), column)
        elif isinstance(value, float) and _read_as_number(column):
            value = decimal.Decimal(float.__repr__(value))  # the number it prints as
        return encode_value(value, column)
    except (ValueEncodingError, UnsupportedTypeError) as exc:
        raise PredicateError(
            f"{literal_of(value)} is not a value of this column: {exc.message}", column=column.path
        ) from None


def _sort_kind(column: ColumnDescriptor) -> str | None:
    """How min/max statistics of the column compare, or None when we do not use them."""
    pt = column.physical_type
    lt = column.logical_type
    kind = lt.kind if lt is not None else None
    if pt in (PhysicalType.INT32, PhysicalType.INT64):
        if kind is LogicalKind.INTEGER and lt is not None and lt.is_signed is False:
            return "uint"
        if kind in (
            None,
            LogicalKind.INTEGER,
            LogicalKind.DECIMAL,
            LogicalKind.DATE,
            LogicalKind.TIME,
            LogicalKind.TIMESTAMP,
        ):
            return "int"
        return None
    if pt in (PhysicalType.FLOAT, PhysicalType.DOUBLE):
        return "float" if kind is None else None
    if pt in (PhysicalType.BYTE_ARRAY, PhysicalType.FIXED_LEN_BYTE_ARRAY):
        if kind is LogicalKind.DECIMAL:
            return "signed_be"
        if kind in (
            None,
            LogicalKind.STRING,
            LogicalKind.ENUM,
            LogicalKind.JSON,
            LogicalKind.BSON,
            LogicalKind.UUID,
        ):
            return "bytes"
        return None
    return None  # BOOLEAN, INT96: no usable order


def literal_sort_key(kind: str, raw: bytes, pt: PhysicalType) -> Any:
    if kind == "int":
        return int.from_bytes(raw, "little", signed=True)
    if kind == "uint":
        return int.from_bytes(raw, "little", signed=False)
    if kind == "float":
        return struct.unpack("<f" if pt is PhysicalType.FLOAT else "<d", raw)[0]
    if kind == "signed_be":
        return int.from_bytes(raw, "big", signed=True) if raw else 0
    return bytes(raw)


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
                _encode(value, desc)  # PredicateError: not a value of the column's type
        leaf.null_probe = True
        leaf.null_safe = leaf.null_safe and len(values) == 1
        return leaf
    _equality(leaf, values, desc)
    return leaf


def _equality(leaf: Leaf, values: Sequence[Any], desc: ColumnDescriptor) -> None:
    """The leaf's keys and hashes: every encoding of every value."""
    types = set(map(type, values))
    leaf.kind = _sort_kind(desc)
    plain = plain_in_list(values, desc, types)
    if plain is not None:
        leaf.keys, leaf.hashes, leaf.cannot = plain
        return
    alternatives: list[tuple[Any, bytes]] = []
    for value in values:
        encoded = _encode(value, desc)  # PredicateError: not a value of the column's type
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
    leaf.kind = _sort_kind(desc)
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


def encode_literal(value: Any, column: ColumnDescriptor) -> Encoded:
    """A predicate literal's exact encodings in ``column``, read as pruning reads it.

    The one rule for literals (see :mod:`pybloom_async.predicate`), for code that
    compares data with a predicate and must agree with the pruning (``rows``).

    Raises
    ------
    PredicateError
        The literal is not a value of the column's type.
    """
    return _encode(value, column)


def order_literal(value: Any, column: ColumnDescriptor) -> Position | Unordered | NeverPrunes:
    """A predicate literal's exact place in ``column``'s order, read as pruning reads it.

    The literal rule of :func:`encode_literal`, for ranges: a quoted text (a ``str``,
    date, time, UUID) is read by the column's type, except that in an unannotated
    binary column it is the text itself (a range has one place, not the two an
    equality probes); in a FLOAT, DOUBLE or FLOAT16 column a number is the type's
    nearest value (beyond its range, the exact number); elsewhere a Python float is the
    decimal number it prints as. See :func:`pybloom_async.values.order.position_of`.

    Raises
    ------
    PredicateError
        The literal is not a value of the column's type, the type has no order, or an
        aware datetime meets a local-time column.
    """
    try:
        return position_of(_read_for_order(value, column), column)
    except (ValueEncodingError, UnsupportedTypeError) as exc:
        raise PredicateError(
            f"{literal_of(value)} is not a value of this column: {exc.message}", column=column.path
        ) from None


def _read_for_order(value: Any, column: ColumnDescriptor) -> Any:
    text = _quoted(value)
    binary = (PhysicalType.BYTE_ARRAY, PhysicalType.FIXED_LEN_BYTE_ARRAY)
    if text is not None:
        if column.logical_type is None and column.physical_type in binary:
            return text
        return parse_text_value(text, column)
    if binary_float(column):
        number = _number_text(value)
        if number is not None:
            return parse_text_value(number, column)  # the nearest value, as in SQL
        return value  # beyond every float, NaN or an infinity: placed exactly
    if isinstance(value, float) and _read_as_number(column):
        return decimal.Decimal(float.__repr__(value))  # the number it prints as
    return value
