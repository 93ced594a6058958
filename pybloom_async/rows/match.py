"""Exact evaluation of a predicate on decoded rows, for :func:`pybloom_async.lookup`.

Literals are converted by the one rule pruning uses
(:func:`pybloom_async.pruning.literals.encode_literal`): each value becomes the exact
stored (PLAIN) encodings of the Parquet column, and those are turned back
into values of the Arrow type pyarrow decodes the column to; a range's ends are
placed as pruning places them (:mod:`.ranges`). So a literal matches the rows
pruning would keep it for, and nothing else:

* a literal that is not a value of the column's type raises the same
  :class:`~pybloom_async.errors.PredicateError` as pruning;
* a value the column cannot hold (300 for INT(8)) equals no row and orders by
  its exact value (``int8_col < 300`` holds for every non-NULL row);
* ``0.0`` matches ``-0.0`` (both encodings are probed); NaN equals no row and
  lies in no range, as in IEEE comparisons (so ``x != 1`` holds for a NaN);
* ``= NULL`` and NULL inside ``IN`` match no row; ``IS NULL`` (``<=> NULL``)
  matches the nulls.

The predicate is evaluated in its normal form (NOT pushed to the leaves) with
SQL's three-valued logic: a comparison with NULL is unknown, NOT of unknown is
unknown, AND and OR are Kleene's; rows where the predicate is not TRUE are not
returned.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import PredicateError, UnsupportedTypeError
from ..parquet import ColumnDescriptor, LogicalKind, Schema, TimeUnit
from ..predicate import (
    COMPARISONS,
    And,
    Between,
    Compare,
    Eq,
    In,
    IsNotNull,
    Not,
    NotIn,
    Or,
    Predicate,
    normal_form,
)
from ..pruning.literals import encode_literal
from ..types import PhysicalType
from ..values import CannotMatch, NeverPrunes, Probe
from .arrow import NULL_BOOL, TRUE, arrow_values, constant_bools, int_storage
from .ranges import Bound, range_bound

_NANOS = {TimeUnit.MILLIS: 10**6, TimeUnit.MICROS: 10**3, TimeUnit.NANOS: 1}
_ARROW_NANOS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
#: The Julian day of 1970-01-01 (INT96 timestamps: nanoseconds of the day, then the day).
_JULIAN_EPOCH_DAY = 2_440_588
_NANOS_PER_DAY = 86_400 * 10**9


def _without_views(t: pa.DataType) -> pa.DataType:
    """The type with string_view/binary_view replaced by the large types compute supports."""
    if pa.types.is_string_view(t):
        return pa.large_string()
    if pa.types.is_binary_view(t):
        return pa.large_binary()
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_without_views(f.type)) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        item = t.value_field.with_type(_without_views(t.value_type))
        return pa.list_(item) if pa.types.is_list(t) else pa.large_list(item)
    return t


def computable(table: pa.Table) -> pa.Table:
    """The table with view types cast to large ones (pyarrow cannot filter or compare views).

    The result is cast back to the result schema at the end.
    """
    schema = pa.schema([f.with_type(_without_views(f.type)) for f in table.schema])
    return table if schema == table.schema else table.cast(schema)


def _storage(data: pa.ChunkedArray) -> pa.ChunkedArray:
    """Plain values to compare: extension types by their storage, dictionaries decoded,
    half floats as floats."""
    t = data.type
    if isinstance(t, pa.BaseExtensionType):  # canonical ones (arrow.uuid, arrow.json) too
        return pa.chunked_array([c.storage for c in data.chunks], type=t.storage_type)
    if pa.types.is_dictionary(t):
        return _storage(data.cast(t.value_type))
    if pa.types.is_decimal(t) and t.bit_width < 128:  # decimal32/64: no compute kernels
        return data.cast(pa.decimal128(t.precision, t.scale))
    if pa.types.is_float16(t):
        return data.cast(pa.float32())  # exact; compute has no half-float kernels
    return data


def leaf_array(table: pa.Table, desc: ColumnDescriptor, path: str) -> pa.ChunkedArray:
    """The values of one leaf column in a decoded row group (a struct's nulls are the leaf's).

    Raises
    ------
    UnsupportedTypeError
        The leaf is inside a list or map (repeated): comparing it needs row
        semantics the predicates do not define.
    """
    if desc.max_repetition_level > 0:
        raise UnsupportedTypeError(
            "a column inside a list or map cannot be compared in a lookup", column=path
        )
    parts = desc.path_parts
    data: pa.ChunkedArray = table.column(parts[0])
    for name in parts[1:]:
        if not pa.types.is_struct(data.type):
            raise UnsupportedTypeError(
                f"cannot reach the leaf through a {data.type} column", column=path
            )
        data = pc.struct_field(data, [data.type.get_field_index(name)])
    return _storage(data)


def _unit_value(nanos: int, arrow_unit: str) -> int | None:
    factor = _ARROW_NANOS[arrow_unit]
    return nanos // factor if nanos % factor == 0 else None


def _decode(raw: bytes, desc: ColumnDescriptor, arrow_type: pa.DataType) -> Any:
    """The Arrow value (as a Python / int storage value) of one stored encoding, or None."""
    pt = desc.physical_type
    lt = desc.logical_type
    kind = lt.kind if lt is not None else None
    if pa.types.is_boolean(arrow_type):
        return raw == b"\x01"
    if pa.types.is_floating(arrow_type):
        if pt is PhysicalType.FLOAT:
            return struct.unpack("<f", raw)[0]
        if pt is PhysicalType.DOUBLE:
            return struct.unpack("<d", raw)[0]
        return float(np.frombuffer(raw, "<f2")[0])  # FLOAT16: 2 bytes
    if pa.types.is_decimal(arrow_type):
        assert lt is not None and lt.scale is not None
        if pt in (PhysicalType.INT32, PhysicalType.INT64):
            unscaled = int.from_bytes(raw, "little", signed=True)
        else:
            unscaled = int.from_bytes(raw, "big", signed=True) if raw else 0
        # Exact: scaleb() would round to the context's 28 digits.
        return Decimal(f"{unscaled}E{-lt.scale}")
    if (
        pa.types.is_string(arrow_type)
        or pa.types.is_large_string(arrow_type)
        or (pa.types.is_string_view(arrow_type))
    ):
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return None  # not text: no row of a string column holds it
    if pa.types.is_fixed_size_binary(arrow_type):
        return raw if len(raw) == arrow_type.byte_width else None
    if (
        pa.types.is_binary(arrow_type)
        or pa.types.is_large_binary(arrow_type)
        or (pa.types.is_binary_view(arrow_type))
    ):
        return raw
    if pt is PhysicalType.INT96:
        nanos_of_day = int.from_bytes(raw[:8], "little", signed=True)
        day = int.from_bytes(raw[8:12], "little", signed=True)
        nanos = (day - _JULIAN_EPOCH_DAY) * _NANOS_PER_DAY + nanos_of_day
        return _unit_value(nanos, arrow_type.unit) if pa.types.is_timestamp(arrow_type) else None
    stored = int.from_bytes(raw, "little", signed=True)
    if pa.types.is_integer(arrow_type):
        if not pa.types.is_signed_integer(arrow_type) and stored < 0:
            stored += 1 << (8 * len(raw))  # unsigned values stored as two's complement
        return stored
    if (pa.types.is_timestamp(arrow_type) or pa.types.is_time(arrow_type)) and (
        kind in (LogicalKind.TIMESTAMP, LogicalKind.TIME) and lt is not None
    ):
        assert lt.unit is not None
        return _unit_value(stored * _NANOS[lt.unit], arrow_type.unit)
    if pa.types.is_date64(arrow_type) and kind is LogicalKind.DATE:
        return stored * 86_400_000  # days stored, milliseconds decoded
    return stored  # DATE days, durations and raw counts: the stored integer itself


_INTS: dict[PhysicalType, np.dtype[Any]] = {
    PhysicalType.INT32: np.dtype("<i4"),
    PhysicalType.INT64: np.dtype("<i8"),
}


def plain_ints(values: tuple[Any, ...], desc: ColumnDescriptor) -> Any:
    """The literals as a numpy array of an INT32 or INT64 column's own values, when the
    column has no annotation and every literal is a Python int in its range (their
    encoding is then the integer's own: :func:`encode_literal` is not needed, nor run
    once per value); None otherwise."""
    dtype = _INTS.get(desc.physical_type)
    if dtype is None or desc.logical_type is not None or desc.converted_type is not None:
        return None
    if not values or set(map(type, values)) != {int}:  # not bools, not None
        return None
    info = np.iinfo(dtype)
    if min(values) < info.min or max(values) > info.max:
        return None
    return np.array(values, dtype=dtype)


def _stored(
    values: tuple[Any, ...], desc: ColumnDescriptor, arrow_type: pa.DataType, path: str
) -> tuple[bytes, ...]:
    """The stored (PLAIN) encodings equal to any of the literals, each once (null literals
    and NaN left out: they equal nothing)."""
    ints = plain_ints(values, desc)
    if ints is not None:
        data, width = ints.tobytes(), ints.dtype.itemsize
        return tuple(dict.fromkeys(data[i : i + width] for i in range(0, len(data), width)))
    raws: dict[bytes, None] = {}  # distinct by stored bytes: 0.0 and -0.0 are both needed
    for value in values:
        if value is None:
            continue
        encoded = encode_literal(value, desc)  # PredicateError: not of the column's type
        if isinstance(encoded, CannotMatch):
            continue
        if isinstance(encoded, NeverPrunes):
            if desc.physical_type in (PhysicalType.FLOAT, PhysicalType.DOUBLE) or (
                pa.types.is_floating(arrow_type)
            ):
                continue  # NaN: equal to nothing, as in SQL
            raise UnsupportedTypeError(
                f"the column's values cannot be compared exactly: {encoded.reason}",
                column=path,
            )
        assert isinstance(encoded, Probe)
        raws.update(dict.fromkeys(encoded.alternatives))
    return tuple(raws)


def _value_set(
    values: tuple[Any, ...], desc: ColumnDescriptor, arrow_type: pa.DataType, path: str
) -> pa.Array:
    """The Arrow values equal to any of the literals (null literals left out)."""
    ints = plain_ints(values, desc)
    if ints is not None and arrow_type == (pa.int32() if ints.dtype.itemsize == 4 else pa.int64()):
        return arrow_values(ints.tolist(), arrow_type)
    found: list[Any] = []
    for raw in _stored(values, desc, arrow_type, path):
        decoded = _decode(raw, desc, arrow_type)
        if decoded is not None:
            found.append(decoded)
    storage = int_storage(arrow_type)
    try:
        if storage is not None:
            return arrow_values(found, storage).view(arrow_type)
        return arrow_values(found, arrow_type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise UnsupportedTypeError(
            f"the literals cannot be compared with a {arrow_type} column: {exc}", column=path
        ) from None


#: What the predicate's leaves are prepared into, by leaf, column, Arrow type and part (0: an
#: equality's value set, 1 and 2: a range's ends, -1: an equality's stored encodings, -2:
#: those as the C matcher's keys), each beside its leaf: shared by a run's files, so a
#: literal list is encoded once per column type, not once per file.
ValueSets = dict[tuple[int, ColumnDescriptor, pa.DataType, int], tuple[Predicate, Any]]


class Leaves:
    """One file's comparisons; their value sets and range ends come from ``cache`` (a
    run's, shared by its files: prepared once per column type)."""

    def __init__(self, schema: Schema, path: str, cache: ValueSets | None = None) -> None:
        self.schema = schema
        self.path = path
        # Keyed by the leaf's id: the leaf is kept beside what it was prepared into, so that
        # its id is never another leaf's while the entry lives.
        self._prepared: ValueSets = {} if cache is None else cache

    def descriptor(self, column: str) -> ColumnDescriptor | None:
        """The file's leaf for a predicate column, None when the file lacks it."""
        if column not in self.schema:
            return None
        return self.schema.column(column)

    def cached(
        self, leaf: Predicate, desc: ColumnDescriptor, arrow_type: pa.DataType, part: int, make: Any
    ) -> Any:
        """What ``make()`` prepares of ``leaf`` for ``desc`` read as ``arrow_type`` (``part``
        says what: see :data:`ValueSets`), made once per run."""
        key = (id(leaf), desc, arrow_type, part)
        found = self._prepared.get(key)
        if found is not None and found[0] is leaf:
            return found[1]
        try:
            value = make()
        except PredicateError as exc:
            raise exc.with_context(path=self.path) from None
        self._prepared[key] = (leaf, value)
        return value

    def value_set(
        self, leaf: Predicate, values: tuple[Any, ...], desc: ColumnDescriptor, arrow_type: Any
    ) -> pa.Array:
        """The Arrow values equal to any of ``values`` (the literals of ``leaf``)."""
        column = desc.path
        return self.cached(
            leaf, desc, arrow_type, 0, lambda: _value_set(values, desc, arrow_type, column)
        )

    def stored(
        self, leaf: Predicate, values: tuple[Any, ...], desc: ColumnDescriptor, arrow_type: Any
    ) -> tuple[bytes, ...]:
        """The stored (PLAIN) encodings equal to any of ``values`` (the literals of
        ``leaf``): those a row's value equals when the leaf holds for it."""
        column = desc.path
        found: tuple[bytes, ...] = self.cached(
            leaf, desc, arrow_type, -1, lambda: _stored(values, desc, arrow_type, column)
        )
        return found

    def bound(
        self, leaf: Predicate, part: int, value: Any, op: str, desc: ColumnDescriptor, data: Any
    ) -> Bound:
        """One end of a range (``column op value``) as a comparison of the decoded values."""
        bound: Bound = self.cached(
            leaf, desc, data.type, part + 1, lambda: range_bound(value, op, desc, data)
        )
        return bound


def _nulls_unknown(data: Any, mask: Any) -> Any:
    """``mask`` where ``data`` has a value, NULL (unknown) where it is NULL."""
    if data.null_count == 0:
        return mask
    return pc.if_else(pc.is_valid(data), mask, NULL_BOOL)


def _missing_mask(test: Predicate, n: int) -> pa.Array:
    """A leaf's truth where every value is NULL (a column the file lacks, or of type null)."""
    if isinstance(test, Eq) and test.null_safe:
        return constant_bools(n, test.value is None)  # IS NULL true; <=> v false
    if isinstance(test, IsNotNull):
        return constant_bools(n, False)
    return constant_bools(n, None)


def _test_mask(
    test: Predicate, leaf: Predicate, data: Any, desc: ColumnDescriptor, leaves: Leaves
) -> Any:
    """The three-valued truth of one comparison on the decoded values."""
    if isinstance(test, IsNotNull):
        return pc.is_valid(data)
    if isinstance(test, (Compare, Between)) and not (isinstance(test, Compare) and test.op == "!="):
        ends = (
            [(test.low, ">="), (test.high, "<=")]
            if isinstance(test, Between)
            else [(test.value, test.op)]
        )
        out = None
        for part, (value, op) in enumerate(ends):
            if value is None:
                mask: Any = constant_bools(len(data), None)  # a comparison with NULL: unknown
            else:
                mask = leaves.bound(leaf, part, value, op, desc, data).apply(data)
            out = mask if out is None else pc.and_kleene(out, mask)
        return out
    values: tuple[Any, ...]
    if isinstance(test, Compare):  # != : NOT (=)
        values = (test.value,)
    elif isinstance(test, Eq):
        if test.null_safe and test.value is None:
            return pc.is_null(data)
        values = (test.value,)
    else:
        assert isinstance(test, (In, NotIn))
        values = test.values
    value_set = leaves.value_set(leaf, values, desc, data.type)
    hits = (
        pc.is_in(data, value_set=value_set, skip_nulls=True)
        if len(value_set)
        else constant_bools(len(data), False)
    )
    if isinstance(test, Eq) and test.null_safe:
        return hits  # <=> v: false for a NULL
    if any(v is None for v in values):
        # = NULL is unknown; a list holding NULL is true on a match, else unknown.
        return pc.if_else(hits, TRUE, NULL_BOOL)
    return _nulls_unknown(data, hits)


def _leaf_mask(
    leaf: Predicate, table: pa.Table, leaves: Leaves, arrays: Mapping[str, pa.ChunkedArray]
) -> Any:
    test = leaf.child if isinstance(leaf, Not) else leaf
    assert isinstance(test, COMPARISONS)
    data = arrays.get(test.column)
    if data is None or pa.types.is_null(data.type):  # the file lacks the column: all NULL
        mask = _missing_mask(test, table.num_rows)
    else:
        desc = leaves.descriptor(test.column)
        assert desc is not None
        mask = _test_mask(test, leaf, data, desc, leaves)
    negated = (
        isinstance(leaf, Not)
        or isinstance(test, (NotIn, IsNotNull))
        or (isinstance(test, Compare) and test.op == "!=")
    )
    if negated and not isinstance(test, IsNotNull):
        return pc.invert(mask)  # Kleene: NOT of unknown is unknown
    return mask


def evaluate(
    where: Predicate, table: pa.Table, leaves: Leaves, arrays: Mapping[str, pa.ChunkedArray]
) -> Any:
    """A boolean mask: TRUE for the rows of ``table`` where ``where`` is TRUE.

    Three-valued: the mask is NULL where ``where`` is unknown (those rows are not
    returned). ``arrays`` maps each predicate column the file has to its values.

    Raises
    ------
    PredicateError
        A literal is not a value of its column's type (naming the file).
    UnsupportedTypeError
        A column's values cannot be compared exactly.
    """
    return _evaluate(normal_form(where), table, leaves, arrays)


def _evaluate(
    p: Predicate, table: pa.Table, leaves: Leaves, arrays: Mapping[str, pa.ChunkedArray]
) -> Any:
    if isinstance(p, (And, Or)):
        combine = pc.and_kleene if isinstance(p, And) else pc.or_kleene
        masks = [_evaluate(c, table, leaves, arrays) for c in p.children]
        out = masks[0]
        for m in masks[1:]:
            out = combine(out, m)
        return out
    return _leaf_mask(p, table, leaves, arrays)
