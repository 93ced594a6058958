"""Values to Paimon's 64-bit hashes: numpy, pyarrow and Python inputs batched for the C kernels."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._native import check, ffi, lib
from ..errors import (
    UnsupportedTypeError,
    ValueEncodingError,
)
from .types import (
    INT64_MAX,
    INT64_MIN,
    HashArray,
    PaimonType,
    parse_paimon_type,
)

_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH_NAIVE = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


# ---- values -> C batches ---------------------------------------------------------


@dataclass
class Batch:
    """A ``pba_paimon_values`` plus the Python objects that own its memory."""

    c: Any
    keepalive: tuple[Any, ...]
    n: int


KIND_BY_WIDTH = {
    1: lib.PBA_PAIMON_KIND_INT8,
    2: lib.PBA_PAIMON_KIND_INT16,
    4: lib.PBA_PAIMON_KIND_INT32,
    8: lib.PBA_PAIMON_KIND_INT64,
}
TS_UNITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def _pointer(buf: Any) -> tuple[Any, int]:
    """A C pointer into a buffer-protocol object (NULL for an empty one) and its size.

    The pointer exports ``buf`` itself; a memoryview is copied first, since an export of
    one must not outlive the call (see ``pybloom_async._native``).
    """
    if isinstance(buf, memoryview):
        buf = buf.tobytes()
    size = memoryview(buf).nbytes
    return (ffi.from_buffer(buf) if size else ffi.NULL), size


def make_batch(
    kind: int,
    n: int,
    data: Any,
    *,
    width: int = 0,
    ts_unit: int = 0,
    ts_precision: int = 0,
    offsets: Any = None,
    offsets64: bool = False,
    validity: Any = None,
    validity_offset: int = 0,
    keepalive: tuple[Any, ...] = (),
) -> Batch:
    c = ffi.new("pba_paimon_values *")
    c.kind = kind
    c.width = width
    c.ts_unit = ts_unit
    c.ts_precision = ts_precision
    c.n = n
    data_ptr, c.data_len = _pointer(data if data is not None else b"")
    c.data = data_ptr
    owned: list[Any] = [data_ptr]
    if offsets is not None:
        off_ptr, c.offsets_len = _pointer(offsets)
        c.offsets = off_ptr
        c.offsets64 = 1 if offsets64 else 0
        owned.append(off_ptr)
    if validity is not None:
        val_ptr, c.validity_len = _pointer(validity)
        c.validity = val_ptr
        c.validity_offset = validity_offset
        owned.append(val_ptr)
    return Batch(c, (*owned, *keepalive), n)


def _bitmap(mask: npt.NDArray[np.bool_] | None) -> npt.NDArray[np.uint8] | None:
    """LSB-first validity bitmap of a boolean 'is valid' mask (None: all valid)."""
    if mask is None or bool(mask.all()):
        return None
    return np.packbits(mask, bitorder="little")


def native_order(arr: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The array contiguous and in native byte order (a copy only when needed)."""
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return np.ascontiguousarray(arr)


def _is_null(value: Any) -> bool:
    return value is None or (isinstance(value, np.datetime64 | np.timedelta64) and np.isnat(value))


def as_list(values: Any) -> list[Any]:
    """A Python scalar or iterable as a list of items (str/bytes are scalars)."""
    if values is None or isinstance(
        values, (str, bytes, bytearray, memoryview, int, float, _dt.date, _dt.time, np.generic)
    ):
        return [values]
    if isinstance(values, Iterable):
        return list(values)
    return [values]


def value_batches(values: Any, ptype: PaimonType) -> Iterator[Batch]:
    """Describe ``values`` as C batches (several for a pyarrow ChunkedArray)."""
    if type(values).__module__.startswith("pyarrow"):
        from .arrow_values import arrow_batches  # pyarrow inputs only; that module imports this

        yield from arrow_batches(values, ptype)
    elif isinstance(values, np.ndarray) and values.dtype != object:
        yield numpy_batch(values, ptype, None)
    else:
        items = values.tolist() if isinstance(values, np.ndarray) else as_list(values)
        yield python_batch(items, ptype)


def _range_check(
    arr: np.ndarray[Any, Any], mask: npt.NDArray[np.bool_] | None, ptype: PaimonType
) -> None:
    """Reject integers outside the Paimon type's range (only non-null slots count)."""
    lo, hi = -(2 ** (ptype.bits - 1)), 2 ** (ptype.bits - 1) - 1
    vals = arr if mask is None else arr[mask]
    if vals.size == 0:
        return
    vmin, vmax = int(vals.min()), int(vals.max())
    if vmin < lo or vmax > hi:
        bad = vmin if vmin < lo else vmax
        raise ValueEncodingError(f"{bad} is outside the {ptype.name} range [{lo}, {hi}]", value=bad)


def int_batch(
    arr: np.ndarray[Any, Any], mask: npt.NDArray[np.bool_] | None, ptype: PaimonType
) -> Batch:
    """Integers for TINYINT..BIGINT, DATE (days) and TIME (millis of day)."""
    if arr.dtype.kind == "i" and arr.dtype.itemsize * 8 <= ptype.bits:
        # Narrower or equal signed ints: sign extension in C gives the same
        # int64 FastHash sees, so the buffer goes in as it is.
        data = native_order(arr)
    elif arr.dtype.kind in "iu":
        _range_check(arr, mask, ptype)
        data = arr.astype(np.int64)
    else:
        raise UnsupportedTypeError(
            f"{ptype.describe()} values cannot come from a {arr.dtype} array"
        )
    bitmap = _bitmap(mask)
    return make_batch(
        KIND_BY_WIDTH[data.dtype.itemsize],
        len(data),
        data,
        validity=bitmap,
        keepalive=(data,),
    )


def numpy_batch(
    arr: np.ndarray[Any, Any], ptype: PaimonType, mask: npt.NDArray[np.bool_] | None
) -> Batch:
    """A one-dimensional numpy array (``mask``: True where valid) as a batch."""
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise UnsupportedTypeError(f"expected a one-dimensional array, got shape {arr.shape}")
    kind = arr.dtype.kind
    if kind in "OSU":
        # Object arrays hold Python objects; bytes and str arrays are NUL-padded
        # to a fixed width, and numpy's own reading of them (trailing NULs are
        # not part of a value) is the one tolist() gives.
        return python_batch(arr.tolist(), ptype)
    if kind == "b":
        raise UnsupportedTypeError(f"{ptype.describe()} values cannot come from a boolean array")
    fam = ptype.family
    if kind in "Mm":
        nat = np.isnat(arr)
        if nat.any():
            mask = ~nat if mask is None else (mask & ~nat)
    if fam == "int":
        if ptype.name == "DATE" and kind == "M":
            if np.datetime_data(arr.dtype)[0] != "D":
                raise UnsupportedTypeError(
                    f"DATE values need datetime64[D], not {arr.dtype} (convert explicitly)"
                )
            return int_batch(arr.view(np.int64), mask, ptype)
        if ptype.name == "TIME" and kind == "m":
            unit = np.datetime_data(arr.dtype)[0]
            per_ms = {"ns": 1_000_000, "us": 1000, "ms": 1}
            ints = arr.view(np.int64)
            if unit in per_ms:
                millis = np.floor_divide(ints, per_ms[unit])
            elif unit in ("s", "m", "h"):
                millis = arr.astype("timedelta64[ms]").view(np.int64)
            else:
                raise UnsupportedTypeError(f"TIME values cannot come from {arr.dtype}")
            return int_batch(millis, mask, ptype)
        if kind in "iu":
            return int_batch(arr, mask, ptype)
    elif fam in ("float", "double") and kind in "fiu":
        target = np.float32 if fam == "float" else np.float64
        # Java's (float) / (double) conversion rounds to nearest, as astype does.
        data = native_order(arr) if arr.dtype == target else arr.astype(target)
        kind_c = lib.PBA_PAIMON_KIND_FLOAT32 if fam == "float" else lib.PBA_PAIMON_KIND_FLOAT64
        return make_batch(kind_c, len(data), data, validity=_bitmap(mask), keepalive=(data,))
    elif fam == "timestamp" and kind == "M":
        unit = np.datetime_data(arr.dtype)[0]
        if unit not in TS_UNITS:
            if unit not in ("Y", "M", "W", "D", "h", "m"):
                raise UnsupportedTypeError(f"{ptype.describe()} cannot come from {arr.dtype}")
            arr = arr.astype("datetime64[s]")
            unit = "s"
        data = native_order(arr).view(np.int64)
        return make_batch(
            lib.PBA_PAIMON_KIND_TIMESTAMP,
            len(data),
            data,
            ts_unit=TS_UNITS[unit],
            ts_precision=ptype.precision,
            validity=_bitmap(mask),
            keepalive=(data,),
        )
    raise UnsupportedTypeError(f"{ptype.describe()} values cannot come from a {arr.dtype} array")


def _epoch_micros(value: _dt.datetime) -> int:
    """Epoch microseconds of a datetime; naive means UTC (Paimon's TIMESTAMP is zone-less)."""
    epoch = _EPOCH_NAIVE if value.tzinfo is None or value.utcoffset() is None else _EPOCH_UTC
    delta = value - epoch
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _python_scalar(value: Any, ptype: PaimonType) -> int | float:
    """One non-null Python value as the number the C batch holds for its family."""
    fam, name = ptype.family, ptype.name
    if isinstance(value, (bool, np.bool_)):
        raise UnsupportedTypeError(f"{ptype.describe()} values cannot be booleans", value=value)
    if isinstance(value, np.generic):
        value = value.item()
    if fam == "int":
        if name == "DATE" and isinstance(value, _dt.date) and not isinstance(value, _dt.datetime):
            return value.toordinal() - _EPOCH_DATE.toordinal()
        if name == "TIME" and isinstance(value, _dt.time):
            if value.utcoffset() is not None:
                raise UnsupportedTypeError("TIME values must be naive times", value=value)
            seconds = (value.hour * 60 + value.minute) * 60 + value.second
            return seconds * 1000 + value.microsecond // 1000
        if isinstance(value, int):
            return value
    elif fam in ("float", "double"):
        if isinstance(value, (int, float)):
            try:
                return float(value)
            except OverflowError:
                raise ValueEncodingError(
                    f"{value} is beyond the {ptype.name} range", value=value
                ) from None
    elif fam == "timestamp":
        if isinstance(value, _dt.datetime):
            return _epoch_micros(value)
        raise UnsupportedTypeError(
            f"{ptype.describe()} values must be datetime or numpy datetime64, "
            f"not {type(value).__name__}",
            value=value,
        )
    raise UnsupportedTypeError(
        f"{ptype.describe()} values cannot be {type(value).__name__}", value=value
    )


def python_batch(items: Sequence[Any], ptype: PaimonType) -> Batch:
    """Python objects (None = null) converted once into a C batch."""
    fam = ptype.family
    n = len(items)
    mask = np.fromiter((not _is_null(v) for v in items), dtype=np.bool_, count=n)
    if fam in ("string", "binary"):
        chunks: list[bytes] = []
        for v in items:
            if _is_null(v):
                chunks.append(b"")
            elif isinstance(v, str):
                if fam == "binary":
                    raise UnsupportedTypeError(
                        f"{ptype.name} values must be bytes, not str (encode it first)", value=v
                    )
                try:
                    chunks.append(v.encode("utf-8"))
                except UnicodeEncodeError as exc:
                    raise ValueEncodingError(
                        f"{ptype.name} value is not encodable as UTF-8: {exc.reason}", value=v
                    ) from None
            elif isinstance(v, (bytes, bytearray, memoryview, np.bytes_)):
                chunks.append(bytes(v))
            else:
                raise UnsupportedTypeError(
                    f"{ptype.name} values must be str or bytes, not {type(v).__name__}", value=v
                )
        lengths = np.fromiter((len(c) for c in chunks), dtype=np.int64, count=n)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = b"".join(chunks)
        return make_batch(
            lib.PBA_PAIMON_KIND_BYTES,
            n,
            data,
            offsets=offsets,
            offsets64=True,
            validity=_bitmap(mask),
            keepalive=(data, offsets),
        )
    if fam in ("float", "double"):
        floats = np.zeros(n, dtype=np.float64)
        for i, v in enumerate(items):
            if not _is_null(v):
                floats[i] = _python_scalar(v, ptype)
        return numpy_batch(floats, ptype, mask)
    ints = np.zeros(n, dtype=np.int64)
    for i, v in enumerate(items):
        if _is_null(v):
            continue
        if isinstance(v, np.datetime64):
            iv: int | float = _numpy_datetime_scalar(v, ptype)
        else:
            iv = _python_scalar(v, ptype)
        lo, hi = (
            (INT64_MIN, INT64_MAX)
            if fam == "timestamp"
            else (-(2 ** (ptype.bits - 1)), 2 ** (ptype.bits - 1) - 1)
        )
        if not lo <= int(iv) <= hi:
            raise ValueEncodingError(
                f"{iv} is outside the {ptype.describe()} range [{lo}, {hi}]", value=v
            )
        ints[i] = int(iv)
    if fam == "timestamp":
        return make_batch(
            lib.PBA_PAIMON_KIND_TIMESTAMP,
            n,
            ints,
            ts_unit=6,
            ts_precision=ptype.precision,
            validity=_bitmap(mask),
            keepalive=(ints,),
        )
    return make_batch(lib.PBA_PAIMON_KIND_INT64, n, ints, validity=_bitmap(mask), keepalive=(ints,))


def _numpy_datetime_scalar(value: np.datetime64, ptype: PaimonType) -> int:
    """A numpy datetime64 scalar as DATE days or TIMESTAMP epoch microseconds (floored)."""
    unit = np.datetime_data(value.dtype)[0]
    if ptype.name == "DATE":
        if unit != "D":
            raise UnsupportedTypeError("DATE values need datetime64[D]", value=value)
        return int(value.astype(np.int64))
    if ptype.family != "timestamp":
        raise UnsupportedTypeError(f"{ptype.describe()} values cannot be datetime64", value=value)
    if unit not in TS_UNITS:
        value = value.astype("datetime64[s]")
        unit = "s"
    count = int(value.astype(np.int64))
    # Floor division: Paimon's Timestamp floors sub-microsecond parts.
    if unit == "ns":
        return count // 1000
    return count * {"s": 1_000_000, "ms": 1000, "us": 1}[unit]


# ---- FastHash -------------------------------------------------------------------------


def paimon_hash(values: Any, data_type: str, precision: int | None = None) -> HashArray:
    """Hash values the way Paimon's ``FastHash`` does for a column of ``data_type``.

    Integer types, DATE (days) and TIME (millisecond of day) go through Thomas
    Wang's 64-bit mix; FLOAT/DOUBLE through it from their bit patterns (every
    NaN canonical, FLOAT rounded to binary32); TIMESTAMP and TIMESTAMP_LTZ as
    epoch milliseconds (precision <= 3) or microseconds (precision >= 4);
    CHAR/VARCHAR/STRING and BINARY/VARBINARY/BYTES as XXH64 (seed 0) of their
    bytes (str values as UTF-8, CHAR padding included if present).

    Parameters
    ----------
    values:
        A scalar, a sequence (None is null), a numpy array, or a pyarrow Array /
        ChunkedArray. Python ``datetime`` values for timestamps are UTC when
        naive; ``date`` for DATE; ``time`` for TIME.
    data_type:
        Paimon's type name: ``"INT"``, ``"BIGINT"``, ``"VARCHAR(20)"``,
        ``"TIMESTAMP(3)"``, ``"TIMESTAMP_LTZ(6)"``, ``"TIMESTAMP(9) WITH LOCAL TIME
        ZONE"``, ... A TIMESTAMP without precision is TIMESTAMP(6).
    precision:
        Timestamp (or TIME) precision, when not part of ``data_type``.

    Returns
    -------
    numpy.ndarray of uint64
        One hash per non-null value, in order; nulls are skipped, as Paimon's
        writer skips them.

    Raises
    ------
    UnsupportedTypeError
        BOOLEAN, DECIMAL and nested types (Paimon rejects them), an unknown type
        name, or values of a Python/numpy/Arrow type that does not fit the column.
    ValueEncodingError
        A value outside the type's range (e.g. 300 for TINYINT, a timestamp
        beyond Paimon's epoch-millisecond range, a str that is not valid UTF-8).
    """
    ptype = parse_paimon_type(data_type, precision)
    parts = []
    for batch in value_batches(values, ptype):
        count = ffi.new("size_t *")
        check(lib.pba_paimon_count_valid(batch.c, count), "paimon_hash")
        out = np.empty(count[0], dtype=np.uint64)
        written = ffi.new("size_t *")
        ptr = ffi.from_buffer("uint64_t[]", out) if count[0] else ffi.NULL
        status = lib.pba_paimon_hash_values(batch.c, ptr, count[0], written)
        check(status, "paimon_hash")
        parts.append(out[: written[0]])
    if not parts:
        return np.empty(0, dtype=np.uint64)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)
