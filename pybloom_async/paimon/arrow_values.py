"""pyarrow arrays and scalars as C batches for Paimon's kernels: Arrow buffers passed as they
are where the kernels read their layout (fixed-width values, binary offsets), others through
numpy or Python values (:mod:`.values`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .._native import lib
from ..core.columns import binary_parts, without_views
from ..errors import UnsupportedTypeError
from .types import PaimonType
from .values import KIND_BY_WIDTH, TS_UNITS, Batch, int_batch, make_batch, numpy_batch, python_batch


def arrow_batches(values: Any, ptype: PaimonType) -> Iterator[Batch]:
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        for chunk in values.chunks:
            yield from arrow_batches(chunk, ptype)
        return
    if isinstance(values, pa.Scalar):
        yield python_batch([values.as_py()], ptype)
        return
    if not isinstance(values, pa.Array):
        raise UnsupportedTypeError(f"unsupported pyarrow input {type(values).__name__}")
    arr = values
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    t = arr.type
    fam = ptype.family
    if pa.types.is_null(t):
        yield python_batch([None] * len(arr), ptype)
        return
    if fam in ("string", "binary"):
        yield _arrow_binary(arr, ptype)
        return
    width: int | None = None
    kind = 0
    ts_unit = 0
    if fam == "int":
        if pa.types.is_signed_integer(t) and t.bit_width <= ptype.bits:
            width, kind = t.bit_width // 8, KIND_BY_WIDTH[t.bit_width // 8]
        elif (ptype.name == "DATE" and pa.types.is_date32(t)) or (
            ptype.name == "TIME" and pa.types.is_time32(t) and t.unit == "ms"
        ):
            # date32 is int32 days and time32[ms] int32 millis: Paimon's own ints.
            width, kind = 4, lib.PBA_PAIMON_KIND_INT32
    elif fam == "float" and pa.types.is_float32(t):
        width, kind = 4, lib.PBA_PAIMON_KIND_FLOAT32
    elif fam == "double" and pa.types.is_float64(t):
        width, kind = 8, lib.PBA_PAIMON_KIND_FLOAT64
    elif fam == "timestamp" and pa.types.is_timestamp(t):
        # Arrow timestamps are epoch counts in UTC whatever their zone label.
        width, kind, ts_unit = 8, lib.PBA_PAIMON_KIND_TIMESTAMP, TS_UNITS[t.unit]
    if width is not None:
        bufs = arr.buffers()
        # Buffer slices, never memoryviews, are what the kept pointers export (see _native).
        data = bufs[1].slice(arr.offset * width, len(arr) * width) if bufs[1] is not None else b""
        has_nulls = arr.null_count > 0 and bufs[0] is not None
        yield make_batch(
            kind,
            len(arr),
            data,
            ts_unit=ts_unit,
            ts_precision=max(ptype.precision, 0),
            validity=bufs[0] if has_nulls else None,
            validity_offset=arr.offset if has_nulls else 0,
            keepalive=(arr, bufs[1]),
        )
        return
    yield _arrow_via_numpy(arr, ptype)


def _arrow_via_numpy(arr: Any, ptype: PaimonType) -> Batch:
    """Arrow arrays without a zero-copy path: one conversion through numpy."""
    import pyarrow as pa

    t = arr.type
    mask = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else None
    name = ptype.name
    if name == "DATE" and pa.types.is_date64(t):
        ints = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        return int_batch(np.floor_divide(ints, 86_400_000), mask, ptype)
    if name == "TIME" and (pa.types.is_time32(t) or pa.types.is_time64(t)):
        per_ms = {"s": -1000, "ms": 1, "us": 1000, "ns": 1_000_000}[t.unit]
        # Arrow casts time32 only to int32 and time64 only to int64.
        raw = arr.cast(pa.int32() if pa.types.is_time32(t) else pa.int64())
        ints = raw.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        millis = ints * 1000 if per_ms < 0 else np.floor_divide(ints, per_ms)
        return int_batch(millis, mask, ptype)
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        np_arr = np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False))
        return numpy_batch(np_arr, ptype, mask)
    if ptype.family == "timestamp" and pa.types.is_date(t):
        raise UnsupportedTypeError(
            f"{ptype.describe()} values cannot come from an Arrow {t} array; cast to timestamp"
        )
    raise UnsupportedTypeError(f"{ptype.describe()} values cannot come from an Arrow {t} array")


def _arrow_binary(arr: Any, ptype: PaimonType) -> Batch:
    import pyarrow as pa

    arr = without_views(arr)
    t = arr.type
    bufs = arr.buffers()
    has_nulls = arr.null_count > 0 and bufs[0] is not None
    validity = bufs[0] if has_nulls else None
    voff = arr.offset if has_nulls else 0
    if pa.types.is_fixed_size_binary(t):
        w = t.byte_width
        data = bufs[1].slice(arr.offset * w, len(arr) * w)
        return make_batch(
            lib.PBA_PAIMON_KIND_FIXED,
            len(arr),
            data,
            width=w,
            validity=validity,
            validity_offset=voff,
            keepalive=(arr, bufs[1]),
        )
    parts = binary_parts(arr)
    if parts is None:
        raise UnsupportedTypeError(f"{ptype.name} values cannot come from an Arrow {t} array")
    offsets, values, large = parts
    return make_batch(
        lib.PBA_PAIMON_KIND_BYTES,
        len(arr),
        values,
        offsets=offsets,
        offsets64=large,
        validity=validity,
        validity_offset=voff,
        keepalive=(arr, offsets, values),
    )
