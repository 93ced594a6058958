"""Long IN lists of plain integers or strings: their keys and hashes computed in one array
each, exactly what encoding and hashing each value gives, without a call per value."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.hashing import HashArray, hash_values
from ..parquet import ColumnDescriptor, LogicalKind
from ..predicate import TextLiteral
from ..types import PhysicalType

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


def sorted_unique(arr: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The distinct values of a 1-D array, sorted (``np.unique`` without its general machinery)."""
    arr = np.sort(arr)
    if len(arr) > 1:
        differs = arr[1:] != arr[:-1]
        if not differs.all():
            arr = arr[np.concatenate(([True], differs))]
    return arr


#: Up to this many ints, an IN list is sorted and deduplicated in Python, beyond in numpy.
_SMALL_IN_LIST = 1000
_STRING_TYPES = frozenset((str, TextLiteral))


def plain_in_list(
    values: Sequence[Any], desc: ColumnDescriptor, types: set[type]
) -> tuple[list[Any], HashArray, list[str]] | None:
    """Vectorised keys and hashes for long IN lists of plain ints or strings.

    Gives exactly what the general path gives (one PLAIN encoding per value),
    without a Python call per value into the encoder: the keys (sorted, distinct), their
    hashes, and up to three values the column cannot hold. Returns None when the
    values are not all of the simple kind (``types``: the set of their types),
    leaving the general path to decide.
    """
    if len(values) < 64:
        return None
    cannot: list[str] = []
    if types == {int} and _plain_int(desc):
        lo, hi, dtype = _INT_LIMITS[desc.physical_type]
        inside: Sequence[int] = values
        if min(values) < lo or max(values) > hi:
            # Checked here, not left to numpy: numpy 1.x wraps out-of-range ints around.
            inside = [v for v in values if lo <= v <= hi]
            for v in values:
                if not lo <= v <= hi and len(cannot) < 3:
                    cannot.append(f"{v}: outside the column's range [{lo}, {hi}]")
        if len(inside) <= _SMALL_IN_LIST:
            # Sorted (as the statistics bisect needs) and distinct; for a short list
            # Python's set and sort cost less than numpy's per-call overhead.
            keys: list[Any] = sorted(set(inside))
            arr = np.array(keys, dtype=dtype)
        else:
            arr = sorted_unique(np.array(inside, dtype=dtype))
            keys = arr.tolist()
        return keys, hash_values(arr, desc.physical_type), cannot
    if types <= _STRING_TYPES and _plain_string(desc):
        texts = [v.text if isinstance(v, TextLiteral) else v for v in values]
        if desc.logical_type is None and any(t[:2] in ("0x", "0X") for t in texts):
            return None  # unannotated binary: 0x... is also probed as the bytes it spells
        try:
            raw = sorted({t.encode() for t in texts})
        except UnicodeEncodeError:
            return None  # lone surrogates: let the encoder explain
        return list(raw), hash_values(raw, PhysicalType.BYTE_ARRAY), cannot
    return None
