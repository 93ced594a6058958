"""Values as the C core's column: Python values, numpy arrays and pyarrow arrays described
as the Arrow-style ``pba_column`` the core hashes and inserts in one call.

Arrow and numpy buffers are passed without a copy whenever their layout already is the
PLAIN encoding; other inputs are converted once, and a conversion that would change a
value raises instead of hashing something else.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._native import ffi
from ..errors import UnsupportedTypeError, ValueEncodingError
from ..types import PhysicalType

_INT_RANGES = {
    PhysicalType.INT32: (-(2**31), 2**31 - 1),
    PhysicalType.INT64: (-(2**63), 2**63 - 1),
}
_SIGNED: dict[PhysicalType, np.dtype[Any]] = {
    PhysicalType.INT32: np.dtype("<i4"),
    PhysicalType.INT64: np.dtype("<i8"),
}
_UNSIGNED_VIEW: dict[PhysicalType, np.dtype[Any]] = {
    PhysicalType.INT32: np.dtype("<u4"),
    PhysicalType.INT64: np.dtype("<u8"),
}
_FLOATS: dict[PhysicalType, np.dtype[Any]] = {
    PhysicalType.FLOAT: np.dtype("<f4"),
    PhysicalType.DOUBLE: np.dtype("<f8"),
}


@dataclass
class Column:
    """A ``pba_column`` for the C core plus the Python objects that own its memory."""

    c: Any
    keepalive: tuple[Any, ...]
    n: int


def iter_columns(values: Any, ptype: PhysicalType, type_length: int | None) -> Iterator[Column]:
    """Describe ``values`` as one or more C columns (several for a ChunkedArray)."""
    width = _check_type_length(ptype, type_length)
    if _is_pyarrow(values):
        yield from _arrow_columns(values, ptype, width)
        return
    yield _numpy_column(_to_numpy(values, ptype, width), ptype, width)


# ---- helpers -----------------------------------------------------------------


def _check_type_length(ptype: PhysicalType, type_length: int | None) -> int:
    if ptype is PhysicalType.FIXED_LEN_BYTE_ARRAY:
        if type_length is None or isinstance(type_length, bool) or type_length <= 0:
            raise UnsupportedTypeError(
                "FIXED_LEN_BYTE_ARRAY needs type_length, a positive width in bytes"
            )
        return int(type_length)
    if ptype is PhysicalType.BYTE_ARRAY:
        return 0
    width = ptype.fixed_width
    assert width is not None
    if type_length is not None and type_length != width and ptype is not PhysicalType.INT96:
        raise UnsupportedTypeError(
            f"type_length={type_length} does not apply to {ptype.name} (width {width})"
        )
    return width


def _is_pyarrow(values: Any) -> bool:
    return type(values).__module__.startswith("pyarrow")


def _new_column(
    ptype: PhysicalType,
    width: int,
    n: int,
    data: Any,
    data_len: int,
    offsets: Any = ffi.NULL,
    offsets64: bool = False,
    validity: Any = ffi.NULL,
    validity_offset: int = 0,
    keepalive: tuple[Any, ...] = (),
) -> Column:
    c = ffi.new("pba_column *")
    c.physical_type = int(ptype)
    c.type_length = width
    c.n = n
    c.data = data
    c.data_len = data_len
    c.offsets = offsets
    c.offsets64 = 1 if offsets64 else 0
    c.validity = validity
    c.validity_offset = validity_offset
    return Column(c, (data, offsets, validity, *keepalive), n)


def _numpy_column(arr: np.ndarray[Any, Any] | _Packed, ptype: PhysicalType, width: int) -> Column:
    if isinstance(arr, _Packed):
        data = ffi.from_buffer(arr.data) if len(arr.data) else ffi.NULL
        offsets = ffi.from_buffer(arr.offsets)
        return _new_column(ptype, 0, arr.n, data, len(arr.data), offsets, True, keepalive=(arr,))
    buf = ffi.from_buffer(arr) if arr.nbytes else ffi.NULL
    # Fixed-width byte values (FLBA, INT96) arrive as a flat uint8 array.
    n = arr.nbytes // width if arr.dtype == np.uint8 and width > 1 else arr.shape[0]
    return _new_column(ptype, width, n, buf, arr.nbytes, keepalive=(arr,))


@dataclass
class _Packed:
    """Variable-length values packed Arrow style: int64 offsets + one data buffer."""

    offsets: np.ndarray[Any, Any]
    data: bytes
    n: int


def pack_binary(items: Iterable[Any]) -> _Packed:
    """Pack str (as UTF-8) and bytes-like items into offsets + data."""
    chunks: list[bytes] = []
    for item in items:
        if isinstance(item, str):
            chunks.append(item.encode("utf-8"))
        elif isinstance(item, (bytes, bytearray, memoryview, np.bytes_)):
            chunks.append(bytes(item))
        else:
            raise UnsupportedTypeError(
                f"BYTE_ARRAY values must be str or bytes, not {type(item).__name__}", value=item
            )
    lengths = np.fromiter((len(c) for c in chunks), dtype=np.int64, count=len(chunks))
    offsets = np.zeros(len(chunks) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return _Packed(offsets, b"".join(chunks), len(chunks))


def _as_sequence(values: Any) -> Sequence[Any]:
    if isinstance(values, (str, bytes, bytearray, memoryview, int, float, bool)):
        return [values]
    if isinstance(values, np.generic):
        return [values.item() if not isinstance(values, np.bytes_) else bytes(values)]
    if isinstance(values, Sequence):
        return values
    if isinstance(values, Iterable):
        return list(values)
    return [values]


def _to_numpy(values: Any, ptype: PhysicalType, width: int) -> np.ndarray[Any, Any] | _Packed:
    """Convert non-Arrow input to the PLAIN layout of ``ptype`` (copy only if needed)."""
    if ptype is PhysicalType.BYTE_ARRAY:
        if isinstance(values, np.ndarray):
            if values.dtype.kind in "SU" or values.dtype == object:
                return pack_binary(values.tolist())
            raise UnsupportedTypeError(
                f"BYTE_ARRAY values must be str or bytes, not a {values.dtype} array"
            )
        return pack_binary(_as_sequence(values))
    if ptype in (PhysicalType.FIXED_LEN_BYTE_ARRAY, PhysicalType.INT96):
        return _fixed_bytes(values, ptype, width)
    if isinstance(values, np.ndarray):
        arr = values.reshape(-1) if values.ndim == 0 else values
        if arr.ndim != 1:
            raise UnsupportedTypeError(f"expected a one-dimensional array, got shape {arr.shape}")
    else:
        seq = _as_sequence(values)
        arr = _from_python(seq, ptype)
    return _convert_array(arr, ptype)


def _from_python(seq: Sequence[Any], ptype: PhysicalType) -> np.ndarray[Any, Any]:
    if ptype is PhysicalType.BOOLEAN:
        for v in seq:
            if not isinstance(v, (bool, np.bool_)) and v not in (0, 1):
                raise ValueEncodingError("BOOLEAN values must be True/False or 0/1", value=v)
        return np.asarray([bool(v) for v in seq], dtype=np.uint8)
    if ptype in _INT_RANGES:
        lo, hi = _INT_RANGES[ptype]
        out = np.empty(len(seq), dtype=_SIGNED[ptype])
        for i, v in enumerate(seq):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise ValueEncodingError(
                    f"{ptype.name} values must be integers, not {type(v).__name__}", value=v
                )
            iv = int(v)
            if not lo <= iv <= hi:
                raise ValueEncodingError(
                    f"{iv} is outside the {ptype.name} range [{lo}, {hi}]", value=v
                )
            out[i] = iv
        return out
    # FLOAT / DOUBLE: go through float64 and let _convert_array check exactness.
    out64 = np.empty(len(seq), dtype=np.float64)
    for i, v in enumerate(seq):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number)):
            raise ValueEncodingError(
                f"{ptype.name} values must be numbers, not {type(v).__name__}", value=v
            )
        if isinstance(v, (int, np.integer)) and float(v) != v:
            raise ValueEncodingError(f"{v} has no exact {ptype.name} representation", value=v)
        out64[i] = float(v)
    return out64


def _convert_array(arr: np.ndarray[Any, Any], ptype: PhysicalType) -> np.ndarray[Any, Any]:
    kind = arr.dtype.kind
    if ptype is PhysicalType.BOOLEAN:
        if kind == "b":
            return np.ascontiguousarray(arr.view(np.uint8))
        if kind in "iu":
            if arr.size and (arr.min() < 0 or arr.max() > 1):
                raise ValueEncodingError("BOOLEAN values must be 0 or 1")
            return np.ascontiguousarray(arr, dtype=np.uint8)
        raise UnsupportedTypeError(f"BOOLEAN values cannot come from a {arr.dtype} array")
    if ptype in _INT_RANGES:
        target = _SIGNED[ptype]
        if kind == "u" and arr.dtype.itemsize == target.itemsize:
            # Parquet stores UINT_32 / UINT_64 as the same bits in INT32 / INT64.
            return np.ascontiguousarray(arr.astype(_UNSIGNED_VIEW[ptype], copy=False)).view(target)
        if kind in "iu":
            if arr.dtype.itemsize > target.itemsize or (
                kind == "u" and arr.dtype.itemsize == target.itemsize
            ):
                lo, hi = _INT_RANGES[ptype]
                if arr.size and (int(arr.min()) < lo or int(arr.max()) > hi):
                    raise ValueEncodingError(f"values outside the {ptype.name} range")
            return np.ascontiguousarray(arr, dtype=target)
        raise UnsupportedTypeError(f"{ptype.name} values cannot come from a {arr.dtype} array")
    target = _FLOATS[ptype]
    if arr.dtype == target:
        return np.ascontiguousarray(arr)
    if kind == "f":
        converted = arr.astype(target)
        exact = (converted.astype(arr.dtype) == arr) | np.isnan(arr)
    elif kind in "iu":
        converted = arr.astype(target)
        # Integers up to 2^24 (FLOAT) / 2^53 (DOUBLE) convert exactly; larger
        # ones are compared as Python ints, since float comparisons round.
        limit = 2**24 if ptype is PhysicalType.FLOAT else 2**53
        exact = np.abs(arr.astype(np.float64)) < limit
        for i in np.flatnonzero(~exact).tolist():
            exact[i] = float(converted[i]) == int(arr[i])
    else:
        raise UnsupportedTypeError(f"{ptype.name} values cannot come from a {arr.dtype} array")
    if not bool(np.all(exact)):
        bad = arr[~exact][0]
        raise ValueEncodingError(
            f"{bad!r} has no exact {ptype.name} representation", value=bad.item()
        )
    return np.ascontiguousarray(converted)


def _fixed_bytes(values: Any, ptype: PhysicalType, width: int) -> np.ndarray[Any, Any]:
    if isinstance(values, np.ndarray):
        if values.dtype.kind in "SV" and values.dtype.itemsize == width and values.ndim == 1:
            return np.ascontiguousarray(values).view(np.uint8)
        if values.dtype == np.uint8 and values.ndim == 2 and values.shape[1] == width:
            return np.ascontiguousarray(values).reshape(-1)
        values = values.tolist()
    seq = _as_sequence(values)
    out = bytearray()
    for v in seq:
        if not isinstance(v, (bytes, bytearray, memoryview)):
            raise UnsupportedTypeError(
                f"{ptype.name} values must be bytes of length {width}, not {type(v).__name__}",
                value=v,
            )
        b = bytes(v)
        if len(b) != width:
            raise ValueEncodingError(
                f"{ptype.name} values must be exactly {width} bytes, got {len(b)}", value=v
            )
        out += b
    return np.frombuffer(bytes(out), dtype=np.uint8)


# ---- pyarrow -----------------------------------------------------------------

# Arrow types whose data buffer already is the PLAIN encoding of a physical type.
_ARROW_ZERO_COPY = {
    PhysicalType.INT32: ("int32", "uint32", "date32", "time32"),
    PhysicalType.INT64: ("int64", "uint64", "timestamp", "date64", "time64", "duration"),
    PhysicalType.FLOAT: ("float",),
    PhysicalType.DOUBLE: ("double",),
}


def _arrow_columns(values: Any, ptype: PhysicalType, width: int) -> Iterator[Column]:
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        for chunk in values.chunks:
            yield from _arrow_columns(chunk, ptype, width)
        return
    if not isinstance(values, pa.Array):
        raise UnsupportedTypeError(f"unsupported pyarrow input {type(values).__name__}")
    arr = values
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    if ptype is PhysicalType.BYTE_ARRAY:
        yield _arrow_binary(arr, ptype)
        return
    base = _arrow_base_name(t)
    zero_copy = base in _ARROW_ZERO_COPY.get(ptype, ()) or (
        ptype in (PhysicalType.FIXED_LEN_BYTE_ARRAY, PhysicalType.INT96)
        and pa.types.is_fixed_size_binary(t)
        and t.byte_width == width
    )
    if zero_copy:
        bufs = arr.buffers()
        data = bufs[1]
        validity, voff = _arrow_validity(arr, bufs[0])
        start = arr.offset * width
        # A Buffer slice, never a memoryview, is what the kept pointer exports (see _native).
        piece = data.slice(start, len(arr) * width) if data is not None else b""
        buf = ffi.from_buffer(piece) if len(piece) else ffi.NULL
        yield _new_column(
            ptype,
            width,
            len(arr),
            buf,
            len(piece),
            validity=validity,
            validity_offset=voff,
            keepalive=(arr, data, piece),
        )
        return
    # Anything else goes through numpy with the exactness checks; nulls are
    # filled with a placeholder and masked by the validity bitmap.
    if ptype in (PhysicalType.FIXED_LEN_BYTE_ARRAY, PhysicalType.INT96):
        raise UnsupportedTypeError(
            f"{ptype.name} values cannot come from an Arrow {t} array "
            f"(need fixed_size_binary({width}))"
        )
    if pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_floating(t):
        filled = arr.fill_null(False if pa.types.is_boolean(t) else 0) if arr.null_count else arr
        np_arr = filled.to_numpy(zero_copy_only=False)
        converted = _convert_array(np.asarray(np_arr), ptype)
        col = _numpy_column(converted, ptype, width)
        if arr.null_count:
            bitmap = np.packbits(arr.is_valid().to_numpy(zero_copy_only=False), bitorder="little")
            col.c.validity = ffi.from_buffer(bitmap)
            col.keepalive = (*col.keepalive, bitmap)
        yield col
        return
    raise UnsupportedTypeError(f"{ptype.name} values cannot come from an Arrow {t} array")


def _arrow_base_name(t: Any) -> str:
    import pyarrow as pa

    for name, pred in (
        ("timestamp", pa.types.is_timestamp),
        ("date32", pa.types.is_date32),
        ("date64", pa.types.is_date64),
        ("time32", pa.types.is_time32),
        ("time64", pa.types.is_time64),
        ("duration", pa.types.is_duration),
    ):
        if pred(t):
            return name
    return str(t)


def _arrow_validity(arr: Any, bitmap: Any) -> tuple[Any, int]:
    if bitmap is None or arr.null_count == 0:
        return ffi.NULL, 0
    return ffi.from_buffer(bitmap), arr.offset


def without_views(arr: Any) -> Any:
    """An Arrow ``string_view`` or ``binary_view`` array as ``large_string`` or
    ``large_binary`` (the C core reads offsets, not views); any other array as it is."""
    import pyarrow as pa

    t = arr.type
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        return arr.cast(pa.large_string() if pa.types.is_string_view(t) else pa.large_binary())
    return arr


def binary_parts(arr: Any) -> tuple[Any, Any, bool] | None:
    """An Arrow string or binary array's offsets (covering its rows: ``len(arr) + 1`` of
    them) and values, and whether its offsets are 64-bit; None for an array of another type.

    Both are pyarrow Buffers (the values ``b""`` when there are none), never memoryviews:
    a pointer the C core keeps exports them (see ``pybloom_async._native``).
    """
    import pyarrow as pa

    t = arr.type
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    if not (large or pa.types.is_string(t) or pa.types.is_binary(t)):
        return None
    width = 8 if large else 4
    bufs = arr.buffers()
    offsets = bufs[1].slice(arr.offset * width, (len(arr) + 1) * width)
    return offsets, (bufs[2] if bufs[2] is not None else b""), large


def _arrow_binary(arr: Any, ptype: PhysicalType) -> Column:
    import pyarrow as pa

    arr = without_views(arr)
    if pa.types.is_fixed_size_binary(arr.type):
        arr = arr.cast(pa.binary())
    parts = binary_parts(arr)
    if parts is None:
        raise UnsupportedTypeError(f"BYTE_ARRAY values cannot come from an Arrow {arr.type} array")
    offsets, data, large = parts
    validity, voff = _arrow_validity(arr, arr.buffers()[0])
    return _new_column(
        ptype,
        0,
        len(arr),
        ffi.from_buffer(data) if len(data) else ffi.NULL,
        len(data),
        ffi.from_buffer(offsets),
        large,
        validity,
        voff,
        keepalive=(arr, offsets, data),
    )
