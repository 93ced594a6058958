"""A predicate's leaves made ready for one file: literals encoded for their column, hashed once."""

from __future__ import annotations

import datetime
import decimal
import math
import numbers
import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..core.hashing import hash_values
from ..errors import (
    PredicateError,
    UnsupportedTypeError,
    ValueEncodingError,
)
from ..parquet import (
    CannotMatch,
    ColumnDescriptor,
    Encoded,
    LogicalKind,
    NeverPrunes,
    encode_text,
    encode_value,
)
from ..predicate import Eq, In, literal_text
from ..predicate_tokens import TextLiteral
from ..read.fetch import Footer
from ..types import PhysicalType
from .verdicts import show


def _binary_float(column: ColumnDescriptor) -> bool:
    """A binary floating-point column: a number literal means the nearest value of it."""
    lt = column.logical_type
    return column.physical_type in (PhysicalType.FLOAT, PhysicalType.DOUBLE) or (
        lt is not None and lt.kind is LogicalKind.FLOAT16
    )


def _decimal_column(column: ColumnDescriptor) -> bool:
    lt = column.logical_type
    return lt is not None and lt.kind is LogicalKind.DECIMAL


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
        if _binary_float(column):
            number = _number_text(value)
            if number is not None:
                return encode_text(number, column)  # the nearest value, as in SQL
            if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
                return CannotMatch(f"{show(value)} is beyond the range of the column's type")
            if isinstance(value, decimal.Decimal):  # NaN and infinities
                return encode_value(float(value), column)
        elif isinstance(value, float) and _decimal_column(column):
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
    """One ``=`` / ``IN`` of the predicate, prepared for one file's column."""

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

    @property
    def needs_filter(self) -> bool:
        return (
            self.desc is not None
            and self.desc.physical_type is not PhysicalType.BOOLEAN
            and not self.null_probe
            and self.never_prunes is None
            and len(self.keys) > 0
        )


def _label(p: Eq | In) -> str:
    text = str(p)
    return text if len(text) <= 120 else text[:117] + "..."


LeafCache = dict[tuple[int, ColumnDescriptor], "Leaf"]


def prepare(p: Eq | In, footer: Footer, cache: LeafCache | None = None) -> Leaf:
    """The leaf for one file; files whose column has the same type share one."""
    try:
        desc = footer.metadata.schema.column(p.column)
    except PredicateError as exc:
        return Leaf(_label(p), p.column, missing_reason=exc.message)
    if cache is None:
        return build_leaf(p, desc)
    key = (id(p), desc)
    leaf = cache.get(key)
    if leaf is None:
        leaf = cache[key] = build_leaf(p, desc)
    return leaf


_INT_LIMITS: dict[PhysicalType, tuple[int, int, np.dtype[Any]]] = {
    PhysicalType.INT32: (-(2**31), 2**31 - 1, np.dtype("<i4")),
    PhysicalType.INT64: (-(2**63), 2**63 - 1, np.dtype("<i8")),
}


def _plain_int(desc: ColumnDescriptor) -> bool:
    """INT32/INT64 holding plain signed integers of the full width (no scale, no unit)."""
    if desc.physical_type not in _INT_LIMITS:
        return False
    lt = desc.logical_type
    if lt is None:
        return True
    width = 32 if desc.physical_type is PhysicalType.INT32 else 64
    return lt.kind is LogicalKind.INTEGER and lt.is_signed is True and lt.bit_width == width


def _plain_string(desc: ColumnDescriptor) -> bool:
    lt = desc.logical_type
    return desc.physical_type is PhysicalType.BYTE_ARRAY and (
        lt is None or lt.kind in (LogicalKind.STRING, LogicalKind.ENUM, LogicalKind.JSON)
    )


def _sorted_unique(arr: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The distinct values of a 1-D array, sorted (``np.unique`` without its general machinery)."""
    arr = np.sort(arr)
    if len(arr) > 1:
        differs = arr[1:] != arr[:-1]
        if not differs.all():
            arr = arr[np.concatenate(([True], differs))]
    return arr


_NONE_TYPE = type(None)
#: Up to this many ints, an IN list is sorted and deduplicated in Python, beyond in numpy.
_SMALL_IN_LIST = 1000
_STRING_TYPES = frozenset((str, TextLiteral))


def _fast_alternatives(
    leaf: Leaf, values: Sequence[Any], desc: ColumnDescriptor, types: set[type]
) -> bool:
    """Vectorised keys and hashes for long IN lists of plain ints or strings.

    Gives exactly what the general path gives (one PLAIN encoding per value),
    without a Python call per value into the encoder. Returns False when the
    values are not all of the simple kind (``types``: the set of their types),
    leaving the general path to decide.
    """
    if len(values) < 64:
        return False
    if types == {int} and _plain_int(desc):
        lo, hi, dtype = _INT_LIMITS[desc.physical_type]
        inside: Sequence[int] = values
        if min(values) < lo or max(values) > hi:
            # Checked here, not left to numpy: numpy 1.x wraps out-of-range ints around.
            inside = [v for v in values if lo <= v <= hi]
            for v in values:
                if not lo <= v <= hi and len(leaf.cannot) < 3:
                    leaf.cannot.append(f"{v}: outside the column's range [{lo}, {hi}]")
        if len(inside) <= _SMALL_IN_LIST:
            # Sorted (as the statistics bisect needs) and distinct; for a short list
            # Python's set and sort cost less than numpy's per-call overhead.
            leaf.keys = sorted(set(inside))
            arr = np.array(leaf.keys, dtype=dtype)
        else:
            arr = _sorted_unique(np.array(inside, dtype=dtype))
            leaf.keys = arr.tolist()
        leaf.hashes = hash_values(arr, desc.physical_type)
        return True
    if types <= _STRING_TYPES and _plain_string(desc):
        texts = [v.text if isinstance(v, TextLiteral) else v for v in values]
        if desc.logical_type is None and any(t[:2] in ("0x", "0X") for t in texts):
            return False  # unannotated binary: 0x... is also probed as the bytes it spells
        try:
            raw = sorted({t.encode() for t in texts})
        except UnicodeEncodeError:
            return False  # lone surrogates: let the encoder explain
        leaf.keys = list(raw)
        leaf.hashes = hash_values(raw, PhysicalType.BYTE_ARRAY)
        return True
    return False


def build_leaf(p: Eq | In, desc: ColumnDescriptor) -> Leaf:
    leaf = Leaf(_label(p), p.column, desc=desc)
    values: Sequence[Any]
    if isinstance(p, Eq):
        if p.value is None:
            leaf.null_probe = True
            leaf.null_safe = p.null_safe
            return leaf
        values = (p.value,)
        types = {type(p.value)}
    else:
        values = p.values
        types = set(map(type, values))
        if _NONE_TYPE in types:
            # NULL in an IN list: nulls never prune.
            leaf.null_probe = True
            return leaf
    leaf.kind = _sort_kind(desc)
    if _fast_alternatives(leaf, values, desc, types):
        return leaf
    alternatives: list[tuple[Any, bytes]] = []
    for value in values:
        encoded = _encode(value, desc)  # PredicateError: not a value of the column's type
        if isinstance(encoded, NeverPrunes):
            leaf.never_prunes = f"{show(value)}: {encoded.reason}"
            return leaf
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
