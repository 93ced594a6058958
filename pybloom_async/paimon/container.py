"""Apache Paimon's ``bloom-filter`` file index: read, probe, write and prune with it.

Paimon tables can carry a per-column Bloom filter for every data file. Each one
is a ``BloomFilter64``: a classic k-hash Bloom filter over a byte array, fed
with a 64-bit hash per value (Paimon's ``FastHash``: Thomas Wang's integer mix
for integer-like types, XXH64 for strings and binary). The filters of one data
file sit in a *file-index container*, written as ``<data-file>.index`` or,
when small, embedded in the manifest entry of the data file.

This module reproduces all three byte for byte (the sizing quirks, the bit
order, the sign handling, the container layout) from the reference vectors
described in ``testdata/paimon/README.md``; the hot loops run in the C core
(``csrc/paimon.c``) with the GIL released.

Pruning follows the package's rule: never a false negative. A missing,
damaged or unreadable index keeps the file and says why; see
:func:`paimon_may_contain` and :func:`paimon_prune`.
"""

from __future__ import annotations

import datetime as _dt
import re
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from .._native import ffi, lib
from ..errors import (
    PaimonIndexError,
    PredicateError,
    PyBloomError,
    UnsupportedTypeError,
    ValueEncodingError,
)

__all__ = [
    "BLOOM_FILTER_INDEX_TYPE",
    "DEFAULT_FPP",
    "DEFAULT_ITEMS",
    "FILE_INDEX_MAGIC",
    "FILE_INDEX_VERSION",
    "BloomFilter64",
    "PaimonFileIndex",
    "PaimonIndexColumn",
    "PaimonIndexEntry",
    "is_paimon_file_index",
    "paimon_bloom_filter_settings",
    "paimon_hash",
    "paimon_index_file_name",
    "paimon_may_contain",
    "paimon_prune",
    "parse_paimon_file_index",
    "read_paimon_file_index",
    "write_paimon_file_index",
]

HashArray = npt.NDArray[np.uint64]
BoolArray = npt.NDArray[np.bool_]

#: ``FileIndexFormat`` magic number, the first 8 bytes (big-endian) of a container.
FILE_INDEX_MAGIC = 1493475289347502
#: The only container version Paimon has defined.
FILE_INDEX_VERSION = 1
#: Index-type name of the Bloom filter in a container header.
BLOOM_FILTER_INDEX_TYPE = "bloom-filter"
#: Paimon's defaults for ``file-index.bloom-filter.<column>.items`` / ``.fpp``.
DEFAULT_ITEMS = 1_000_000
DEFAULT_FPP = 0.1

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_U64_MASK = 2**64 - 1
# Paimon types without a precision suffix default to these (its type system
# follows Flink's: TIMESTAMP and TIMESTAMP_LTZ mean microsecond precision).
_DEFAULT_TIMESTAMP_PRECISION = 6
_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH_NAIVE = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


# ---- errors from the C core ---------------------------------------------------


def _check(code: int, what: str) -> None:
    """Raise the package error matching a ``PBA_PAIMON_*`` status (no-op for 0)."""
    if code == 0:
        return
    text = ffi.string(lib.pba_paimon_strerror(code)).decode("ascii")
    message = f"{what}: {text}"
    if code in (lib.PBA_PAIMON_ERR_LENGTH, lib.PBA_PAIMON_ERR_OFFSETS, lib.PBA_PAIMON_ERR_RANGE):
        raise ValueEncodingError(message)
    if code in (
        lib.PBA_PAIMON_ERR_GEOMETRY,
        lib.PBA_PAIMON_ERR_SIZE,
        lib.PBA_PAIMON_ERR_TRUNCATED,
    ):
        raise PaimonIndexError(message)
    raise PyBloomError(message)


# ---- Paimon data types ----------------------------------------------------------


@dataclass(frozen=True)
class _PaimonType:
    """A Paimon column type reduced to what FastHash needs."""

    name: str  # canonical root, e.g. "INT", "TIMESTAMP_LTZ"
    family: str  # int | float | double | timestamp | string | binary
    bits: int  # integer width for family "int" (DATE and TIME are 32-bit ints)
    precision: int  # timestamp precision, else -1

    def describe(self) -> str:
        return f"{self.name}({self.precision})" if self.precision >= 0 else self.name


_INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64, "DATE": 32, "TIME": 32}
_ALIASES = {
    "INTEGER": "INT",
    "DOUBLE PRECISION": "DOUBLE",
    "TIME WITHOUT TIME ZONE": "TIME",
    "TIME_WITHOUT_TIME_ZONE": "TIME",
    "TIMESTAMP WITHOUT TIME ZONE": "TIMESTAMP",
    "TIMESTAMP_WITHOUT_TIME_ZONE": "TIMESTAMP",
    "TIMESTAMP WITH LOCAL TIME ZONE": "TIMESTAMP_LTZ",
    "TIMESTAMP_WITH_LOCAL_TIME_ZONE": "TIMESTAMP_LTZ",
    "BOOL": "BOOLEAN",
    "DEC": "DECIMAL",
    "NUMERIC": "DECIMAL",
}
_FAMILIES = {
    "TINYINT": "int",
    "SMALLINT": "int",
    "INT": "int",
    "BIGINT": "int",
    "DATE": "int",
    "TIME": "int",
    "FLOAT": "float",
    "DOUBLE": "double",
    "TIMESTAMP": "timestamp",
    "TIMESTAMP_LTZ": "timestamp",
    "CHAR": "string",
    "VARCHAR": "string",
    "STRING": "string",
    "BINARY": "binary",
    "VARBINARY": "binary",
    "BYTES": "binary",
}
# Types Paimon's bloom-filter index refuses when the index is created; the
# messages are those of the UnsupportedOperationException it throws.
_UNSUPPORTED = {
    "BOOLEAN", "DECIMAL", "ARRAY", "MAP", "MULTISET", "ROW", "VARIANT", "BLOB", "VECTOR",
}
_TYPE_RE = re.compile(
    r"^(?P<root>[A-Z_]+(?: PRECISION)?)(?:\s*\((?P<args>[^()]*)\))?"
    r"(?P<suffix> WITH LOCAL TIME ZONE| WITHOUT TIME ZONE)?$"
)


def _unsupported(data_type: str, root: str) -> UnsupportedTypeError:
    detail = "Does not support decimal" if root == "DECIMAL" else (
        f"Does not support type {root.lower()}"
    )
    return UnsupportedTypeError(
        f"Paimon's bloom-filter index does not support {data_type!r} ({detail})"
    )


def paimon_type_info(data_type: str) -> tuple[str, str]:
    """The canonical root (``"BIGINT"``, ``"DATE"``, ...) and FastHash family of a type name.

    The family is one of ``int``, ``float``, ``double``, ``timestamp``,
    ``string``, ``binary``.

    Raises
    ------
    UnsupportedTypeError
        Not a Paimon type name, or a type the bloom-filter index rejects.
    """
    parsed = _parse_type(data_type, None)
    return parsed.name, parsed.family


def _parse_type(data_type: str, precision: int | None) -> _PaimonType:
    """Turn a Paimon type name (``"BIGINT"``, ``"TIMESTAMP(3)"``, ...) into a _PaimonType.

    Raises
    ------
    UnsupportedTypeError
        Not a type name, or a type Paimon's bloom-filter index rejects.
    """
    if not isinstance(data_type, str):
        raise UnsupportedTypeError(
            f"data_type must be a Paimon type name such as 'BIGINT', not {type(data_type).__name__}"
        )
    text = " ".join(data_type.strip().upper().split())
    for tail in (" NOT NULL", " NULL"):
        if text.endswith(tail):
            text = text[: -len(tail)]
    head = re.split(r"[<(\s]", text, maxsplit=1)[0]
    if _ALIASES.get(head, head) in _UNSUPPORTED:
        raise _unsupported(data_type, _ALIASES.get(head, head))
    match = _TYPE_RE.match(text)
    if match is None:
        raise UnsupportedTypeError(f"not a Paimon type name: {data_type!r}")
    base = _ALIASES.get(match["root"], match["root"])
    suffix = match["suffix"] or ""
    if suffix and base not in ("TIME", "TIMESTAMP"):
        raise UnsupportedTypeError(f"not a Paimon type name: {data_type!r}")
    root = _ALIASES.get(base + suffix, base)
    family = _FAMILIES.get(root)
    if family is None:
        raise UnsupportedTypeError(f"not a Paimon type name: {data_type!r}")
    declared: int | None = None
    args = match["args"]
    if args is not None:
        if family in ("int", "float", "double") and root != "TIME":
            raise UnsupportedTypeError(f"{root} takes no parameter: {data_type!r}")
        try:
            declared = int(args.strip())
        except ValueError:
            raise UnsupportedTypeError(f"bad parameter in Paimon type {data_type!r}") from None
    if family == "timestamp" or root == "TIME":
        if precision is not None and declared is not None and precision != declared:
            raise UnsupportedTypeError(f"precision={precision} contradicts the type {data_type!r}")
        p = precision if precision is not None else declared
        if p is None:
            p = _DEFAULT_TIMESTAMP_PRECISION if family == "timestamp" else 0
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p <= 9:
            raise UnsupportedTypeError(f"{root} precision must be 0..9, got {p!r}")
        # TIME hashes its millisecond-of-day int whatever its precision.
        ts_precision = p if family == "timestamp" else -1
        return _PaimonType(root, family, _INT_BITS.get(root, 64), ts_precision)
    if precision is not None:
        raise UnsupportedTypeError(f"precision applies to TIME and TIMESTAMP, not {root}")
    return _PaimonType(root, family, _INT_BITS.get(root, 64), -1)


# ---- values -> C batches ---------------------------------------------------------


@dataclass
class _Batch:
    """A ``pba_paimon_values`` plus the Python objects that own its memory."""

    c: Any
    keepalive: tuple[Any, ...]
    n: int


_KIND_BY_WIDTH = {
    1: lib.PBA_PAIMON_KIND_INT8,
    2: lib.PBA_PAIMON_KIND_INT16,
    4: lib.PBA_PAIMON_KIND_INT32,
    8: lib.PBA_PAIMON_KIND_INT64,
}
_TS_UNITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def _ptr(buf: Any) -> Any:
    """A C pointer into a buffer-protocol object, NULL for an empty one."""
    return ffi.from_buffer(buf) if memoryview(buf).nbytes else ffi.NULL


def _make_batch(
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
) -> _Batch:
    c = ffi.new("pba_paimon_values *")
    c.kind = kind
    c.width = width
    c.ts_unit = ts_unit
    c.ts_precision = ts_precision
    c.n = n
    data_mv = memoryview(data if data is not None else b"")
    c.data = _ptr(data_mv)
    c.data_len = data_mv.nbytes
    owned: list[Any] = [data_mv, c.data]
    if offsets is not None:
        off_mv = memoryview(offsets)
        c.offsets = _ptr(off_mv)
        c.offsets_len = off_mv.nbytes
        c.offsets64 = 1 if offsets64 else 0
        owned += [off_mv, c.offsets]
    if validity is not None:
        val_mv = memoryview(validity)
        c.validity = _ptr(val_mv)
        c.validity_len = val_mv.nbytes
        c.validity_offset = validity_offset
        owned += [val_mv, c.validity]
    return _Batch(c, (*owned, *keepalive), n)


def _bitmap(mask: npt.NDArray[np.bool_] | None) -> npt.NDArray[np.uint8] | None:
    """LSB-first validity bitmap of a boolean 'is valid' mask (None: all valid)."""
    if mask is None or bool(mask.all()):
        return None
    return np.packbits(mask, bitorder="little")


def _native(arr: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The array contiguous and in native byte order (a copy only when needed)."""
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return np.ascontiguousarray(arr)


def _is_null(value: Any) -> bool:
    return value is None or (isinstance(value, np.datetime64 | np.timedelta64) and np.isnat(value))


def _as_list(values: Any) -> list[Any]:
    """A Python scalar or iterable as a list of items (str/bytes are scalars)."""
    if values is None or isinstance(
        values, (str, bytes, bytearray, memoryview, int, float, _dt.date, _dt.time, np.generic)
    ):
        return [values]
    if isinstance(values, Iterable):
        return list(values)
    return [values]


def _batches(values: Any, ptype: _PaimonType) -> Iterator[_Batch]:
    """Describe ``values`` as C batches (several for a pyarrow ChunkedArray)."""
    if type(values).__module__.startswith("pyarrow"):
        yield from _arrow_batches(values, ptype)
    elif isinstance(values, np.ndarray) and values.dtype != object:
        yield _numpy_batch(values, ptype, None)
    else:
        items = values.tolist() if isinstance(values, np.ndarray) else _as_list(values)
        yield _python_batch(items, ptype)


def _range_check(
    arr: np.ndarray[Any, Any], mask: npt.NDArray[np.bool_] | None, ptype: _PaimonType
) -> None:
    """Reject integers outside the Paimon type's range (only non-null slots count)."""
    lo, hi = -(2 ** (ptype.bits - 1)), 2 ** (ptype.bits - 1) - 1
    vals = arr if mask is None else arr[mask]
    if vals.size == 0:
        return
    vmin, vmax = int(vals.min()), int(vals.max())
    if vmin < lo or vmax > hi:
        bad = vmin if vmin < lo else vmax
        raise ValueEncodingError(
            f"{bad} is outside the {ptype.name} range [{lo}, {hi}]", value=bad
        )


def _int_batch(
    arr: np.ndarray[Any, Any], mask: npt.NDArray[np.bool_] | None, ptype: _PaimonType
) -> _Batch:
    """Integers for TINYINT..BIGINT, DATE (days) and TIME (millis of day)."""
    if arr.dtype.kind == "i" and arr.dtype.itemsize * 8 <= ptype.bits:
        # Narrower or equal signed ints: sign extension in C gives the same
        # int64 FastHash sees, so the buffer goes in as it is.
        data = _native(arr)
    elif arr.dtype.kind in "iu":
        _range_check(arr, mask, ptype)
        data = arr.astype(np.int64)
    else:
        raise UnsupportedTypeError(
            f"{ptype.describe()} values cannot come from a {arr.dtype} array"
        )
    bitmap = _bitmap(mask)
    return _make_batch(
        _KIND_BY_WIDTH[data.dtype.itemsize], len(data), data, validity=bitmap,
        keepalive=(data,),
    )


def _numpy_batch(
    arr: np.ndarray[Any, Any], ptype: _PaimonType, mask: npt.NDArray[np.bool_] | None
) -> _Batch:
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
        return _python_batch(arr.tolist(), ptype)
    if kind == "b":
        raise UnsupportedTypeError(
            f"{ptype.describe()} values cannot come from a boolean array"
        )
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
            return _int_batch(arr.view(np.int64), mask, ptype)
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
            return _int_batch(millis, mask, ptype)
        if kind in "iu":
            return _int_batch(arr, mask, ptype)
    elif fam in ("float", "double") and kind in "fiu":
        target = np.float32 if fam == "float" else np.float64
        # Java's (float) / (double) conversion rounds to nearest, as astype does.
        data = _native(arr) if arr.dtype == target else arr.astype(target)
        kind_c = lib.PBA_PAIMON_KIND_FLOAT32 if fam == "float" else lib.PBA_PAIMON_KIND_FLOAT64
        return _make_batch(kind_c, len(data), data, validity=_bitmap(mask), keepalive=(data,))
    elif fam == "timestamp" and kind == "M":
        unit = np.datetime_data(arr.dtype)[0]
        if unit not in _TS_UNITS:
            if unit not in ("Y", "M", "W", "D", "h", "m"):
                raise UnsupportedTypeError(f"{ptype.describe()} cannot come from {arr.dtype}")
            arr = arr.astype("datetime64[s]")
            unit = "s"
        data = _native(arr).view(np.int64)
        return _make_batch(
            lib.PBA_PAIMON_KIND_TIMESTAMP, len(data), data,
            ts_unit=_TS_UNITS[unit], ts_precision=ptype.precision,
            validity=_bitmap(mask), keepalive=(data,),
        )
    raise UnsupportedTypeError(f"{ptype.describe()} values cannot come from a {arr.dtype} array")


def _epoch_micros(value: _dt.datetime) -> int:
    """Epoch microseconds of a datetime; naive means UTC (Paimon's TIMESTAMP is zone-less)."""
    epoch = _EPOCH_NAIVE if value.tzinfo is None or value.utcoffset() is None else _EPOCH_UTC
    delta = value - epoch
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _python_scalar(value: Any, ptype: _PaimonType) -> int | float:
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
            f"not {type(value).__name__}", value=value
        )
    raise UnsupportedTypeError(
        f"{ptype.describe()} values cannot be {type(value).__name__}", value=value
    )


def _python_batch(items: Sequence[Any], ptype: _PaimonType) -> _Batch:
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
        return _make_batch(
            lib.PBA_PAIMON_KIND_BYTES, n, data, offsets=offsets, offsets64=True,
            validity=_bitmap(mask), keepalive=(data, offsets),
        )
    if fam in ("float", "double"):
        floats = np.zeros(n, dtype=np.float64)
        for i, v in enumerate(items):
            if not _is_null(v):
                floats[i] = _python_scalar(v, ptype)
        return _numpy_batch(floats, ptype, mask)
    ints = np.zeros(n, dtype=np.int64)
    for i, v in enumerate(items):
        if _is_null(v):
            continue
        if isinstance(v, np.datetime64):
            iv: int | float = _numpy_datetime_scalar(v, ptype)
        else:
            iv = _python_scalar(v, ptype)
        lo, hi = (_INT64_MIN, _INT64_MAX) if fam == "timestamp" else (
            -(2 ** (ptype.bits - 1)), 2 ** (ptype.bits - 1) - 1
        )
        if not lo <= int(iv) <= hi:
            raise ValueEncodingError(
                f"{iv} is outside the {ptype.describe()} range [{lo}, {hi}]", value=v
            )
        ints[i] = int(iv)
    if fam == "timestamp":
        return _make_batch(
            lib.PBA_PAIMON_KIND_TIMESTAMP, n, ints, ts_unit=6, ts_precision=ptype.precision,
            validity=_bitmap(mask), keepalive=(ints,),
        )
    return _make_batch(lib.PBA_PAIMON_KIND_INT64, n, ints, validity=_bitmap(mask),
                       keepalive=(ints,))


def _numpy_datetime_scalar(value: np.datetime64, ptype: _PaimonType) -> int:
    """A numpy datetime64 scalar as DATE days or TIMESTAMP epoch microseconds (floored)."""
    unit = np.datetime_data(value.dtype)[0]
    if ptype.name == "DATE":
        if unit != "D":
            raise UnsupportedTypeError("DATE values need datetime64[D]", value=value)
        return int(value.astype(np.int64))
    if ptype.family != "timestamp":
        raise UnsupportedTypeError(f"{ptype.describe()} values cannot be datetime64", value=value)
    if unit not in _TS_UNITS:
        value = value.astype("datetime64[s]")
        unit = "s"
    count = int(value.astype(np.int64))
    # Floor division: Paimon's Timestamp floors sub-microsecond parts.
    if unit == "ns":
        return count // 1000
    return count * {"s": 1_000_000, "ms": 1000, "us": 1}[unit]


# ---- pyarrow ----------------------------------------------------------------------


def _arrow_batches(values: Any, ptype: _PaimonType) -> Iterator[_Batch]:
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        for chunk in values.chunks:
            yield from _arrow_batches(chunk, ptype)
        return
    if isinstance(values, pa.Scalar):
        yield _python_batch([values.as_py()], ptype)
        return
    if not isinstance(values, pa.Array):
        raise UnsupportedTypeError(f"unsupported pyarrow input {type(values).__name__}")
    arr = values
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    t = arr.type
    fam = ptype.family
    if pa.types.is_null(t):
        yield _python_batch([None] * len(arr), ptype)
        return
    if fam in ("string", "binary"):
        yield _arrow_binary(arr, ptype)
        return
    width: int | None = None
    kind = 0
    ts_unit = 0
    if fam == "int":
        if pa.types.is_signed_integer(t) and t.bit_width <= ptype.bits:
            width, kind = t.bit_width // 8, _KIND_BY_WIDTH[t.bit_width // 8]
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
        width, kind, ts_unit = 8, lib.PBA_PAIMON_KIND_TIMESTAMP, _TS_UNITS[t.unit]
    if width is not None:
        bufs = arr.buffers()
        whole = memoryview(bufs[1]) if bufs[1] is not None else memoryview(b"")
        data = whole[arr.offset * width : (arr.offset + len(arr)) * width]
        has_nulls = arr.null_count > 0 and bufs[0] is not None
        yield _make_batch(
            kind, len(arr), data, ts_unit=ts_unit, ts_precision=max(ptype.precision, 0),
            validity=bufs[0] if has_nulls else None,
            validity_offset=arr.offset if has_nulls else 0,
            keepalive=(arr, bufs[1]),
        )
        return
    yield _arrow_via_numpy(arr, ptype)


def _arrow_via_numpy(arr: Any, ptype: _PaimonType) -> _Batch:
    """Arrow arrays without a zero-copy path: one conversion through numpy."""
    import pyarrow as pa

    t = arr.type
    mask = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else None
    name = ptype.name
    if name == "DATE" and pa.types.is_date64(t):
        ints = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        return _int_batch(np.floor_divide(ints, 86_400_000), mask, ptype)
    if name == "TIME" and (pa.types.is_time32(t) or pa.types.is_time64(t)):
        per_ms = {"s": -1000, "ms": 1, "us": 1000, "ns": 1_000_000}[t.unit]
        # Arrow casts time32 only to int32 and time64 only to int64.
        raw = arr.cast(pa.int32() if pa.types.is_time32(t) else pa.int64())
        ints = raw.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        millis = ints * 1000 if per_ms < 0 else np.floor_divide(ints, per_ms)
        return _int_batch(millis, mask, ptype)
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        np_arr = np.asarray(arr.fill_null(0).to_numpy(zero_copy_only=False))
        return _numpy_batch(np_arr, ptype, mask)
    if ptype.family == "timestamp" and pa.types.is_date(t):
        raise UnsupportedTypeError(
            f"{ptype.describe()} values cannot come from an Arrow {t} array; cast to timestamp"
        )
    raise UnsupportedTypeError(f"{ptype.describe()} values cannot come from an Arrow {t} array")


def _arrow_binary(arr: Any, ptype: _PaimonType) -> _Batch:
    import pyarrow as pa

    t = arr.type
    if pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        arr = arr.cast(pa.large_string() if pa.types.is_string_view(t) else pa.large_binary())
        t = arr.type
    bufs = arr.buffers()
    has_nulls = arr.null_count > 0 and bufs[0] is not None
    validity = bufs[0] if has_nulls else None
    voff = arr.offset if has_nulls else 0
    if pa.types.is_fixed_size_binary(t):
        w = t.byte_width
        data = memoryview(bufs[1])[arr.offset * w : (arr.offset + len(arr)) * w]
        return _make_batch(
            lib.PBA_PAIMON_KIND_FIXED, len(arr), data, width=w, validity=validity,
            validity_offset=voff, keepalive=(arr, bufs[1]),
        )
    if not (
        pa.types.is_string(t) or pa.types.is_binary(t)
        or pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    ):
        raise UnsupportedTypeError(f"{ptype.name} values cannot come from an Arrow {t} array")
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    ow = 8 if large else 4
    offsets = memoryview(bufs[1])[arr.offset * ow : (arr.offset + len(arr) + 1) * ow]
    values = bufs[2] if bufs[2] is not None else b""
    return _make_batch(
        lib.PBA_PAIMON_KIND_BYTES, len(arr), values, offsets=offsets, offsets64=large,
        validity=validity, validity_offset=voff, keepalive=(arr, bufs[1], bufs[2]),
    )


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
    ptype = _parse_type(data_type, precision)
    parts = []
    for batch in _batches(values, ptype):
        count = ffi.new("size_t *")
        _check(lib.pba_paimon_count_valid(batch.c, count), "paimon_hash")
        out = np.empty(count[0], dtype=np.uint64)
        written = ffi.new("size_t *")
        ptr = ffi.from_buffer("uint64_t[]", out) if count[0] else ffi.NULL
        _check(lib.pba_paimon_hash_values(batch.c, ptr, count[0], written), "paimon_hash")
        parts.append(out[: written[0]])
    if not parts:
        return np.empty(0, dtype=np.uint64)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


# ---- BloomFilter64 ---------------------------------------------------------------------


def _hash_arg(h: Any) -> int:
    """A 64-bit hash given signed (Java long) or unsigned, as the unsigned value."""
    if isinstance(h, (bool, np.bool_)) or not isinstance(h, (int, np.integer)):
        raise ValueEncodingError(f"a hash must be an integer, not {type(h).__name__}", value=h)
    iv = int(h)
    if not _INT64_MIN <= iv <= _U64_MASK:
        raise ValueEncodingError("a hash must fit in 64 bits", value=h)
    return iv & _U64_MASK


def _hash_array(hashes: Any) -> HashArray:
    """Hashes as a contiguous native uint64 array (int64 input is reinterpreted)."""
    arr = hashes if isinstance(hashes, np.ndarray) else None
    if arr is None:
        arr = np.fromiter((_hash_arg(h) for h in _as_list(hashes)), dtype=np.uint64)
    if arr.ndim != 1:
        arr = arr.reshape(-1)
    if arr.dtype.kind == "i" and arr.dtype.itemsize == 8:
        arr = _native(arr).view(np.uint64)
    elif arr.dtype.kind == "u" and arr.dtype.itemsize == 8:
        arr = _native(arr)
    else:
        raise UnsupportedTypeError(f"hashes must be a uint64 or int64 array, not {arr.dtype}")
    return arr


class BloomFilter64:
    """Paimon's ``BloomFilter64``: k-hash Bloom filter over 64-bit value hashes.

    ``BloomFilter64(items, fpp)`` sizes the filter exactly as Paimon does,
    quirks included: ``nb = (int)(-items * ln(fpp) / ln(2)^2)``, then
    ``num_bits = nb + (8 - nb % 8)`` (a whole extra byte when ``nb`` is already
    a multiple of 8) and ``k = max(1, round(num_bits / items * ln 2))``. Bit
    ``i`` of the hash's ``j``-th probe (Kirsch-Mitzenmacher, ``h1 + j*h2`` in
    wrapping int32, negatives complemented) lives in byte ``i >> 3`` at bit
    ``i & 7``. The serialized form is ``k`` as a big-endian int32 followed by
    the bit array.

    Parameters
    ----------
    items:
        Expected number of values (Paimon's ``...items`` option; a Java int).
    fpp:
        Target false-positive probability (Paimon's ``...fpp`` option).

    Raises
    ------
    PaimonIndexError
        Paimon cannot build a filter of this size (Java throws
        NegativeArraySizeException: the bit count overflows an int, or a
        large ``fpp`` makes it negative).
    ValueEncodingError
        ``items`` is not an int in Java's int range.
    """

    __slots__ = ("_bits", "_k", "_num_bytes")

    def __init__(self, items: int = DEFAULT_ITEMS, fpp: float = DEFAULT_FPP) -> None:
        num_bits, self._k = self.geometry(items, fpp)
        self._num_bytes = num_bits // 8
        self._bits = ffi.new("uint8_t[]", self._num_bytes)

    @staticmethod
    def geometry(items: int, fpp: float) -> tuple[int, int]:
        """``(num_bits, num_hash_functions)`` of ``BloomFilter64(items, fpp)``, allocating nothing.

        Raises
        ------
        PaimonIndexError, ValueEncodingError
            As the constructor.
        """
        if isinstance(items, bool) or not isinstance(items, (int, np.integer)):
            raise ValueEncodingError("items must be an int", value=items)
        if not _INT32_MIN <= int(items) <= _INT32_MAX:
            raise ValueEncodingError("items must fit a Java int", value=items)
        nb = ffi.new("int32_t *")
        k = ffi.new("int32_t *")
        code = lib.pba_paimon_geometry(int(items), float(fpp), nb, k)
        if code == lib.PBA_PAIMON_ERR_SIZE:
            raise PaimonIndexError(
                f"Paimon cannot build a BloomFilter64 for items={items}, fpp={fpp}: "
                "its bit count overflows or is not positive (Java throws "
                "NegativeArraySizeException)"
            )
        _check(code, "BloomFilter64")
        return int(nb[0]), int(k[0])

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> BloomFilter64:
        """Read a serialized filter (``[k int32 BE][bit array]``), as found in a container.

        Raises
        ------
        PaimonIndexError
            Fewer than 5 bytes, ``k <= 0``, ``k`` larger than the bit count (no
            Paimon writer produces it), or a bit array too large for Paimon.
        """
        view = memoryview(data).cast("B")
        k = ffi.new("int32_t *")
        nbytes = ffi.new("size_t *")
        src = ffi.from_buffer(view) if view.nbytes else ffi.new("uint8_t[]", 1)
        code = lib.pba_paimon_parse_header(src, view.nbytes, k, nbytes)
        if code != 0:
            if code == lib.PBA_PAIMON_ERR_TRUNCATED:
                raise PaimonIndexError(
                    f"Paimon bloom filter of {view.nbytes} bytes: needs at least 5 bytes "
                    "(a 4-byte k and one byte of bits)"
                )
            if code == lib.PBA_PAIMON_ERR_GEOMETRY:
                raw = int.from_bytes(view[:4], "big", signed=True)
                limit = 8 * lib.PBA_PAIMON_MAX_BITSET_BYTES
                raise PaimonIndexError(
                    f"Paimon bloom filter has k={raw} for {8 * (view.nbytes - 4)} bits "
                    f"(k must be 1..number of bits, bits at most {limit})"
                )
            _check(code, "BloomFilter64.from_bytes")
        self = cls.__new__(cls)
        self._num_bytes = int(nbytes[0])
        self._k = int(k[0])
        self._bits = ffi.new("uint8_t[]", self._num_bytes)
        ffi.memmove(self._bits, view[4:], self._num_bytes)
        return self

    @property
    def num_bits(self) -> int:
        """Size of the bit array in bits (always a multiple of 8)."""
        return self._num_bytes * 8

    @property
    def num_hash_functions(self) -> int:
        """k: the number of bit positions per value."""
        return self._k

    @property
    def bitset(self) -> bytes:
        """A copy of the bit array (bit i is byte i >> 3, bit i & 7)."""
        return bytes(ffi.buffer(self._bits, self._num_bytes))

    @property
    def bits_set(self) -> int:
        """Number of bits set (a fill ratio near 1/2 means the filter is at its design load)."""
        bits = np.frombuffer(ffi.buffer(self._bits, self._num_bytes), dtype=np.uint8)
        return int(np.unpackbits(bits).sum(dtype=np.int64))

    def bit_positions(self, h: int) -> list[int]:
        """The k bit positions of 64-bit hash ``h``, in probe order (j = 1..k)."""
        out = ffi.new("int32_t[]", self._k)
        _check(lib.pba_paimon_positions(_hash_arg(h), self._num_bytes, self._k, out), "positions")
        return list(out)

    def add_hash(self, h: int) -> None:
        """Add a 64-bit hash (unsigned, or signed as a Java long)."""
        _check(lib.pba_paimon_add_hash(self._bits, self._num_bytes, self._k, _hash_arg(h)), "add")

    def test_hash(self, h: int) -> bool:
        """True when the filter may hold hash ``h``; False when it certainly does not."""
        r = lib.pba_paimon_test_hash(self._bits, self._num_bytes, self._k, _hash_arg(h))
        _check(min(r, 0), "test")
        return bool(r)

    def add_hashes(self, hashes: Any) -> None:
        """Add many hashes (numpy uint64/int64 array or a sequence of ints) in one C call."""
        arr = _hash_array(hashes)
        ptr = ffi.from_buffer("uint64_t[]", arr) if arr.size else ffi.NULL
        _check(lib.pba_paimon_add_hashes(self._bits, self._num_bytes, self._k, ptr, arr.size),
               "add_hashes")

    def test_hashes(self, hashes: Any) -> BoolArray:
        """Per-hash answers of :meth:`test_hash` as a numpy bool array."""
        arr = _hash_array(hashes)
        out = np.empty(arr.size, dtype=np.uint8)
        if arr.size:
            _check(lib.pba_paimon_test_hashes(
                self._bits, self._num_bytes, self._k,
                ffi.from_buffer("uint64_t[]", arr), arr.size, ffi.from_buffer(out),
            ), "test_hashes")
        return out.view(np.bool_)

    def add(self, values: Any, data_type: str, precision: int | None = None) -> int:
        """Hash (as :func:`paimon_hash`) and add every non-null value; returns how many.

        A batch that fails validation leaves the filter unchanged.

        Raises
        ------
        UnsupportedTypeError, ValueEncodingError
            As :func:`paimon_hash`.
        """
        ptype = _parse_type(data_type, precision)
        total = 0
        added = ffi.new("size_t *")
        for batch in _batches(values, ptype):
            _check(lib.pba_paimon_add_values(self._bits, self._num_bytes, self._k, batch.c, added),
                   "add")
            total += int(added[0])
        return total

    def might_contain(self, values: Any, data_type: str, precision: int | None = None) -> BoolArray:
        """Per-value probe: True where a value may be in the filter.

        A null answers True, as Paimon's reader keeps a file for an equality
        with a null literal. Signed zeros are probed as given (Paimon hashes
        0.0 and -0.0 differently); :func:`paimon_may_contain` probes both.

        Raises
        ------
        UnsupportedTypeError, ValueEncodingError
            As :func:`paimon_hash`.
        """
        ptype = _parse_type(data_type, precision)
        parts = []
        for batch in _batches(values, ptype):
            out = np.empty(batch.n, dtype=np.uint8)
            ptr = ffi.from_buffer(out) if batch.n else ffi.NULL
            _check(lib.pba_paimon_test_values(
                self._bits, self._num_bytes, self._k, batch.c, ptr, batch.n,
            ), "might_contain")
            parts.append(out.view(np.bool_))
        if not parts:
            return np.empty(0, dtype=np.bool_)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def to_bytes(self) -> bytes:
        """Serialize as Paimon does: k (int32 big-endian) then the bit array."""
        out = bytearray(4 + self._num_bytes)
        _check(lib.pba_paimon_serialize(
            self._bits, self._num_bytes, self._k, ffi.from_buffer(out), len(out)
        ), "to_bytes")
        return bytes(out)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BloomFilter64):
            return NotImplemented
        return self._k == other._k and self.bitset == other.bitset

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"BloomFilter64(num_bits={self.num_bits}, num_hash_functions={self._k})"


# ---- the file-index container ---------------------------------------------------------------


@dataclass(frozen=True)
class PaimonIndexEntry:
    """One index of one column in a container header.

    ``start`` is the absolute offset of the payload in the container, or -1 for
    an empty entry (then ``length`` is 0).
    """

    index_type: str
    start: int
    length: int

    @property
    def empty(self) -> bool:
        """True for Paimon's empty marker (start -1, no bytes)."""
        return self.start == -1


@dataclass(frozen=True)
class PaimonIndexColumn:
    """A column of a container header and its index entries, in header order."""

    name: str
    entries: tuple[PaimonIndexEntry, ...]


@dataclass(frozen=True)
class PaimonFileIndex:
    """A parsed Paimon file-index container (``FileIndexFormat`` version 1).

    ``data`` is the whole container; every entry has been checked to lie
    inside it.
    """

    version: int
    head_length: int
    columns: tuple[PaimonIndexColumn, ...]
    redundant_length: int
    data: bytes

    @property
    def total_length(self) -> int:
        """Size of the container in bytes."""
        return len(self.data)

    def payload(self, column: str, index_type: str = BLOOM_FILTER_INDEX_TYPE) -> bytes | None:
        """The payload of one index: None when absent, ``b""`` for an empty entry."""
        for col in self.columns:
            if col.name != column:
                continue
            for entry in col.entries:
                if entry.index_type == index_type:
                    if entry.empty:
                        return b""
                    return self.data[entry.start : entry.start + entry.length]
        return None

    def describe(self) -> list[dict[str, Any]]:
        """One row per index entry, for display (the CLI's ``inspect``).

        Each row has ``column``, ``index_type``, ``start``, ``length`` and
        ``empty``; a bloom-filter row also has ``num_bits``,
        ``num_hash_functions`` and ``bits_set``, or ``error`` when its payload
        is damaged.
        """
        rows: list[dict[str, Any]] = []
        for col in self.columns:
            for entry in col.entries:
                row: dict[str, Any] = {
                    "column": col.name,
                    "index_type": entry.index_type,
                    "start": entry.start,
                    "length": entry.length,
                    "empty": entry.empty,
                }
                if entry.index_type == BLOOM_FILTER_INDEX_TYPE and not entry.empty:
                    try:
                        bloom = BloomFilter64.from_bytes(
                            self.data[entry.start : entry.start + entry.length]
                        )
                    except PaimonIndexError as exc:
                        row["error"] = str(exc)
                    else:
                        row["num_bits"] = bloom.num_bits
                        row["num_hash_functions"] = bloom.num_hash_functions
                        row["bits_set"] = bloom.bits_set
                rows.append(row)
        return rows

    def to_dict(self) -> dict[str, dict[str, bytes]]:
        """``{column: {index_type: payload}}`` with ``b""`` for empty entries."""
        result: dict[str, dict[str, bytes]] = {}
        for col in self.columns:
            per = result.setdefault(col.name, {})
            for entry in col.entries:
                per[entry.index_type] = (
                    b"" if entry.empty else self.data[entry.start : entry.start + entry.length]
                )
        return result


def _encode_modified_utf8(text: str) -> bytes:
    """Java's ``DataOutput.writeUTF`` body: modified UTF-8 of the UTF-16 code units.

    U+0000 becomes C0 80 and characters above U+FFFF become two 3-byte
    surrogates, as Java strings hold them.
    """
    out = bytearray()
    for ch in text:
        cp = ord(ch)
        units = [cp] if cp <= 0xFFFF else [
            0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)
        ]
        for u in units:
            if 0 < u < 0x80:
                out.append(u)
            elif u < 0x800:
                out += bytes((0xC0 | (u >> 6), 0x80 | (u & 0x3F)))
            else:
                out += bytes((0xE0 | (u >> 12), 0x80 | ((u >> 6) & 0x3F), 0x80 | (u & 0x3F)))
    return bytes(out)


def _decode_modified_utf8(raw: bytes) -> str:
    """Inverse of :func:`_encode_modified_utf8`, as ``DataInput.readUTF`` accepts it.

    Surrogate pairs are joined into one character; a lone surrogate stays a
    lone surrogate (Java strings may hold one).

    Raises
    ------
    PaimonIndexError
        A byte sequence readUTF rejects (bad lead byte, missing continuation).
    """
    if raw.isascii() and 0 not in raw:
        return raw.decode("ascii")
    units: list[int] = []
    i, n = 0, len(raw)
    while i < n:
        b = raw[i]
        if b < 0x80:
            units.append(b)
            i += 1
        elif b >> 5 == 0b110 and i + 1 < n and raw[i + 1] >> 6 == 0b10:
            units.append(((b & 0x1F) << 6) | (raw[i + 1] & 0x3F))
            i += 2
        elif (
            b >> 4 == 0b1110 and i + 2 < n
            and raw[i + 1] >> 6 == 0b10 and raw[i + 2] >> 6 == 0b10
        ):
            units.append(((b & 0x0F) << 12) | ((raw[i + 1] & 0x3F) << 6) | (raw[i + 2] & 0x3F))
            i += 3
        else:
            raise PaimonIndexError(f"malformed modified UTF-8 name at byte {i}: {raw.hex()}")
    chars: list[str] = []
    j = 0
    while j < len(units):
        u = units[j]
        if 0xD800 <= u < 0xDC00 and j + 1 < len(units) and 0xDC00 <= units[j + 1] < 0xE000:
            chars.append(chr(0x10000 + ((u - 0xD800) << 10) + (units[j + 1] - 0xDC00)))
            j += 2
        else:
            chars.append(chr(u))
            j += 1
    return "".join(chars)


class _Cursor:
    """Bounds-checked big-endian reads over the container bytes."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int, what: str) -> bytes:
        if n > len(self.data) - self.pos:
            raise PaimonIndexError(
                f"Paimon file index truncated: {what} needs {n} bytes at offset {self.pos}, "
                f"container has {len(self.data)}"
            )
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def i32(self, what: str) -> int:
        return int(struct.unpack(">i", self.take(4, what))[0])

    def i64(self, what: str) -> int:
        return int(struct.unpack(">q", self.take(8, what))[0])

    def utf(self, what: str) -> str:
        length = int(struct.unpack(">H", self.take(2, what))[0])
        return _decode_modified_utf8(self.take(length, what))

    def remaining(self) -> int:
        return len(self.data) - self.pos


def parse_paimon_file_index(data: bytes | bytearray | memoryview) -> PaimonFileIndex:
    """Parse a Paimon file-index container and validate every offset against its size.

    Unknown index types are kept as opaque entries (pruning ignores them).

    Parameters
    ----------
    data:
        The whole container: a ``<data-file>.index`` file, or the
        ``_EMBEDDED_FILE_INDEX`` bytes of a manifest entry.

    Raises
    ------
    PaimonIndexError
        Wrong magic, a version other than 1, a truncated header, negative
        counts, an entry whose bytes lie outside the container (or inside the
        header), a negative length other than the empty marker (start -1,
        length 0), a zero-length bloom-filter entry, a duplicate entry, or a
        malformed column name.
    """
    buf = bytes(data)
    cur = _Cursor(buf)
    magic = cur.i64("magic")
    if magic != FILE_INDEX_MAGIC:
        raise PaimonIndexError(
            f"not a Paimon file index: magic {magic & _U64_MASK:#018x}, "
            f"expected {FILE_INDEX_MAGIC:#018x}"
        )
    version = cur.i32("version")
    if version != FILE_INDEX_VERSION:
        raise PaimonIndexError(f"unsupported Paimon file-index version {version} (only 1)")
    head_length = cur.i32("head length")
    if not 0 < head_length <= len(buf):
        raise PaimonIndexError(
            f"Paimon file index head length {head_length} outside the container "
            f"({len(buf)} bytes)"
        )
    column_count = cur.i32("column count")
    # A column needs at least a 2-byte name length and a 4-byte index count.
    if column_count < 0 or column_count > cur.remaining() // 6:
        raise PaimonIndexError(f"Paimon file index column count {column_count} is impossible")
    raw_columns: list[tuple[str, list[tuple[str, int, int]]]] = []
    for _ in range(column_count):
        name = cur.utf("column name")
        index_count = cur.i32("index count")
        # An entry needs at least a 2-byte type length, start and length.
        if index_count < 0 or index_count > cur.remaining() // 10:
            raise PaimonIndexError(
                f"Paimon file index: column {name!r} has impossible index count {index_count}"
            )
        entries = []
        for _ in range(index_count):
            index_type = cur.utf("index type")
            start = cur.i32("index start")
            length = cur.i32("index length")
            entries.append((index_type, start, length))
        raw_columns.append((name, entries))
    redundant_length = cur.i32("redundant length")
    if redundant_length < 0:
        raise PaimonIndexError(f"Paimon file index redundant length {redundant_length} < 0")
    cur.take(redundant_length, "redundant bytes")
    if cur.pos > head_length:
        raise PaimonIndexError(
            f"Paimon file index header ends at {cur.pos}, past its head length {head_length}"
        )
    columns = []
    seen: set[tuple[str, str]] = set()
    for name, entries in raw_columns:
        checked = []
        for index_type, start, length in entries:
            where = f"column {name!r}, index {index_type!r}"
            if (name, index_type) in seen:
                raise PaimonIndexError(f"Paimon file index lists {where} twice")
            seen.add((name, index_type))
            if start == -1 and length == 0:
                checked.append(PaimonIndexEntry(index_type, -1, 0))
                continue
            if length < 0:
                raise PaimonIndexError(f"Paimon file index: {where} has negative length {length}")
            if start < head_length or length > len(buf) - start:
                raise PaimonIndexError(
                    f"Paimon file index: {where} spans [{start}, {start + length}) outside "
                    f"the body [{head_length}, {len(buf)})"
                )
            if length == 0 and index_type == BLOOM_FILTER_INDEX_TYPE:
                # Paimon marks an empty bloom filter with start -1; a zero-length
                # payload elsewhere is damage, not an empty entry.
                raise PaimonIndexError(f"Paimon file index: {where} has no bytes")
            checked.append(PaimonIndexEntry(index_type, start, length))
        columns.append(PaimonIndexColumn(name, tuple(checked)))
    return PaimonFileIndex(version, head_length, tuple(columns), redundant_length, buf)


def is_paimon_file_index(data: bytes | bytearray | memoryview) -> bool:
    """True when ``data`` starts with the file-index magic (a cheap sniff, not a validation)."""
    head = bytes(memoryview(data)[:8])
    return len(head) == 8 and struct.unpack(">q", head)[0] == FILE_INDEX_MAGIC


def read_paimon_file_index(data: bytes | bytearray | memoryview) -> dict[str, dict[str, bytes]]:
    """Read a Paimon file-index container into ``{column: {index_type: payload}}``.

    Empty entries map to ``b""``; a ``"bloom-filter"`` payload is what
    :meth:`BloomFilter64.from_bytes` reads. Column order is the header's.

    Raises
    ------
    PaimonIndexError
        As :func:`parse_paimon_file_index`.
    """
    return parse_paimon_file_index(data).to_dict()


def write_paimon_file_index(indexes: Mapping[str, Mapping[str, bytes | None]]) -> bytes:
    """Write a Paimon file-index container (version 1) that Paimon's reader accepts.

    Parameters
    ----------
    indexes:
        ``{column: {index_type: payload}}``; the header and the body follow the
        mapping's order. A payload of ``None`` or ``b""`` is written as an empty
        entry (start -1, length 0). Names may be any Unicode (written as Java's
        modified UTF-8).

    Raises
    ------
    PaimonIndexError
        A name longer than 65535 bytes in modified UTF-8, or a container
        larger than Java's int offsets allow.
    """
    def utf(text: str, what: str) -> bytes:
        if not isinstance(text, str):
            raise PaimonIndexError(f"{what} must be str, not {type(text).__name__}")
        raw = _encode_modified_utf8(text)
        if len(raw) > 0xFFFF:
            raise PaimonIndexError(f"{what} is {len(raw)} bytes in modified UTF-8 (max 65535)")
        return struct.pack(">H", len(raw)) + raw

    encoded: list[tuple[bytes, list[tuple[bytes, bytes | None]]]] = []
    head_length = 8 + 4 + 4 + 4 + 4  # magic, version, head length, column count, redundant
    for column, per in indexes.items():
        name = utf(column, f"column name {column!r}")
        head_length += len(name) + 4
        entries = []
        for index_type, payload in per.items():
            type_raw = utf(index_type, f"index type {index_type!r}")
            head_length += len(type_raw) + 8
            blob = bytes(payload) if payload else None
            entries.append((type_raw, blob))
        encoded.append((name, entries))
    total = head_length + sum(len(b) for _, es in encoded for _, b in es if b)
    if total > _INT32_MAX:
        raise PaimonIndexError(f"Paimon file index of {total} bytes exceeds Java int offsets")
    head = bytearray(struct.pack(">qiii", FILE_INDEX_MAGIC, FILE_INDEX_VERSION, head_length,
                                 len(encoded)))
    body = bytearray()
    for name, entries in encoded:
        head += name + struct.pack(">i", len(entries))
        for type_raw, payload in entries:
            if payload is None:
                head += type_raw + struct.pack(">ii", -1, 0)
            else:
                head += type_raw + struct.pack(">ii", head_length + len(body), len(payload))
                body += payload
    head += struct.pack(">i", 0)  # redundant length: v1 carries no extra bytes
    assert len(head) == head_length
    return bytes(head + body)


def paimon_index_file_name(data_file_name: str) -> str:
    """Name of the container Paimon writes next to a data file: ``<name>.index``."""
    return f"{data_file_name}.index"


def paimon_bloom_filter_settings(table_options: Mapping[str, str]) -> dict[str, tuple[int, float]]:
    """The bloom-filter columns of a Paimon table and each one's ``(items, fpp)``.

    Reads ``file-index.bloom-filter.columns`` and the per-column
    ``file-index.bloom-filter.<column>.items`` / ``.fpp`` keys with Paimon's
    defaults (1,000,000 and 0.1). As in Paimon, a per-column key counts only
    when what follows ``file-index.`` splits on dots into exactly
    ``bloom-filter``, the column and the option, so columns with a dot in
    their name always get the defaults.

    Raises
    ------
    PaimonIndexError
        An items value that is not an int or an fpp that is not a number.
    """
    listed = table_options.get(f"file-index.{BLOOM_FILTER_INDEX_TYPE}.columns", "")
    columns = [c.strip() for c in listed.split(",") if c.strip()]
    per_column: dict[str, dict[str, str]] = {}
    for key, value in table_options.items():
        if not key.startswith("file-index."):
            continue
        parts = key[len("file-index.") :].split(".")
        while parts and parts[-1] == "":  # Java's split drops trailing empty strings
            parts.pop()
        if len(parts) == 3 and parts[0] == BLOOM_FILTER_INDEX_TYPE:
            per_column.setdefault(parts[1], {})[parts[2]] = value
    settings: dict[str, tuple[int, float]] = {}
    for column in columns:
        opts = per_column.get(column, {})
        try:
            items = int(opts.get("items", DEFAULT_ITEMS))
            fpp = float(opts.get("fpp", DEFAULT_FPP))
        except ValueError as exc:
            raise PaimonIndexError(
                f"bad bloom-filter option for column {column!r}: {exc}"
            ) from None
        settings[column] = (items, fpp)
    return settings


# ---- pruning --------------------------------------------------------------------------------

Verdict = tuple[bool, str]
#: A predicate over columns, as plain data:
#: ``{column: values, ...}`` (AND of ``IN`` lists; a scalar is ``=``),
#: ``("=", column, value)``, ``("in", column, values)``,
#: ``("and", p, p, ...)``, ``("or", p, p, ...)``.
Predicate = Mapping[str, Any] | tuple[Any, ...]


def _probe_list(values: Any) -> Any:
    """Values of an IN list: a lone str/bytes/scalar becomes a one-item list."""
    if type(values).__module__.startswith("pyarrow") or isinstance(values, np.ndarray):
        return values
    return _as_list(values)


def paimon_may_contain(
    index: bytes | bytearray | memoryview | None,
    data_type: str,
    values: Any,
    precision: int | None = None,
    *,
    strict: bool = False,
) -> Verdict:
    """Decide whether a data file may hold any of ``values`` in one column (``=`` / ``IN``).

    Answers as Paimon's bloom-filter index reader does, with two deliberate
    differences. A probe of 0.0 or -0.0 on a FLOAT/DOUBLE column checks both
    zeros (Paimon hashes them differently, but IEEE equality treats them as
    equal), which can only keep more files. A filter whose k is 128 or more
    (only absurd fpp settings produce one) is read with the k it was written
    with, where Paimon's reader misreads k and keeps every file; the writer
    set its bits with that k, so the exact answer is still never a false
    negative.

    Parameters
    ----------
    index:
        The column's ``bloom-filter`` payload from the container; ``b""`` for
        an empty entry; None when the container has no such index.
    data_type, precision:
        The column's Paimon type, as for :func:`paimon_hash`.
    values:
        The probed value, or an iterable / numpy / pyarrow array of them (IN).
    strict:
        Raise instead of keeping the file when the filter is damaged or a
        value cannot be hashed.

    Returns
    -------
    (keep, reason)
        ``keep`` is False only when no probed value can be in the file.

    Raises
    ------
    PaimonIndexError, UnsupportedTypeError, ValueEncodingError
        Only with ``strict=True``, for a damaged filter, a type Paimon cannot
        index, or a value that cannot be hashed exactly.
    """
    if index is None:
        return True, "no bloom-filter index for this column"
    probes = _probe_list(values)
    try:
        ptype = _parse_type(data_type, precision)
        if len(index) == 0:
            # Paimon writes start -1 when it had nothing to index; its reader
            # (EmptyFileIndexReader) answers skip for every equality.
            return False, "empty bloom-filter entry: the column holds no indexed value"
        bloom = BloomFilter64.from_bytes(index)
        answers = bloom.might_contain(probes, ptype.describe())
        if ptype.family in ("float", "double") and not answers.any():
            hashes = paimon_hash(probes, ptype.describe())
            zeros = paimon_hash([0.0, -0.0], ptype.describe())
            if np.isin(hashes, zeros).any() and bloom.test_hashes(zeros).any():
                return True, "bloom filter may contain a signed zero (0.0 / -0.0 are both probed)"
    except (PaimonIndexError, UnsupportedTypeError, ValueEncodingError) as exc:
        if strict:
            raise
        return True, f"kept: {exc}"
    if answers.size == 0:
        return False, "no value probed"
    hit = np.flatnonzero(answers)
    if hit.size:
        first = int(hit[0])
        shown = probes[first] if isinstance(probes, list) else f"#{first}"
        if isinstance(probes, list) and probes[first] is None:
            return True, "null literal: Paimon keeps the file"
        return True, f"bloom filter may contain {shown!r}"
    return False, f"bloom filter excludes all {answers.size} probed value(s)"


def _column_type(column_types: Mapping[str, Any], column: str) -> tuple[str, int | None]:
    try:
        spec = column_types[column]
    except KeyError:
        raise PredicateError(f"no Paimon type given for column {column!r}", column=column) from None
    if isinstance(spec, str):
        return spec, None
    if isinstance(spec, tuple) and len(spec) == 2:
        return str(spec[0]), spec[1]
    raise PredicateError(
        f"type of column {column!r} must be a type name or (type name, precision)", column=column
    )


def paimon_prune(
    container: bytes | bytearray | memoryview | PaimonFileIndex | None,
    predicate: Predicate,
    column_types: Mapping[str, str | tuple[str, int | None]],
    *,
    strict: bool = False,
) -> Verdict:
    """Decide whether a Paimon data file may match a predicate, from its file-index container.

    ``=`` and ``IN`` consult the column's bloom filter (see
    :func:`paimon_may_contain`); AND skips when any part skips, OR only when
    every part does. A column the container does not index, or an index type
    other than ``bloom-filter``, keeps the file, as Paimon does.

    Parameters
    ----------
    container:
        The container bytes (the ``.index`` file or the manifest's embedded
        bytes), an already parsed :class:`PaimonFileIndex`, or None when the
        data file has no index.
    predicate:
        ``{column: values}`` (AND of IN lists; a scalar means ``=``), or nested
        tuples ``("=", column, value)``, ``("in", column, values)``,
        ``("and", p, ...)``, ``("or", p, ...)``.
    column_types:
        Paimon type of every probed column: a name such as ``"BIGINT"`` or
        ``("TIMESTAMP", 3)``. The container does not record types.
    strict:
        Raise on a damaged container, filter or value instead of keeping the file.

    Returns
    -------
    (keep, reason)

    Raises
    ------
    PredicateError
        A malformed predicate, or a column without a type in ``column_types``.
    PaimonIndexError, UnsupportedTypeError, ValueEncodingError
        Only with ``strict=True``.
    """
    parsed: PaimonFileIndex | None
    if container is None or isinstance(container, PaimonFileIndex):
        parsed = container
    else:
        try:
            parsed = parse_paimon_file_index(container)
        except PaimonIndexError as exc:
            if strict:
                raise
            _walk_predicate(predicate, column_types, None, strict)  # still report bad predicates
            return True, f"kept: {exc}"
    return _walk_predicate(predicate, column_types, parsed, strict)


def _walk_predicate(
    predicate: Predicate,
    column_types: Mapping[str, Any],
    index: PaimonFileIndex | None,
    strict: bool,
) -> Verdict:
    if isinstance(predicate, Mapping):
        parts: list[Any] = [("in", column, values) for column, values in predicate.items()]
        return _walk_predicate(("and", *parts), column_types, index, strict)
    if not isinstance(predicate, tuple) or not predicate or not isinstance(predicate[0], str):
        raise PredicateError(f"malformed Paimon predicate {predicate!r}")
    op = predicate[0].lower()
    if op in ("and", "or"):
        children = predicate[1:]
        if not children:
            raise PredicateError(f"{op.upper()} needs at least one operand")
        verdicts = [_walk_predicate(p, column_types, index, strict) for p in children]
        if op == "and":
            for keep, reason in verdicts:
                if not keep:
                    return False, reason
            return True, "; ".join(reason for _, reason in verdicts)
        if any(keep for keep, _ in verdicts):
            return True, "; ".join(reason for keep, reason in verdicts if keep)
        return False, "; ".join(reason for _, reason in verdicts)
    if op in ("=", "==", "eq", "in"):
        if len(predicate) != 3 or not isinstance(predicate[1], str):
            raise PredicateError(f"{op!r} takes a column name and value(s): {predicate!r}")
        column = predicate[1]
        data_type, precision = _column_type(column_types, column)
        values = [predicate[2]] if op != "in" else predicate[2]
        if index is None:
            return True, f"{column}: no file index"
        payload = index.payload(column)
        keep, reason = paimon_may_contain(payload, data_type, values, precision, strict=strict)
        return keep, f"{column}: {reason}"
    raise PredicateError(f"unsupported operator {predicate[0]!r} (use =, in, and, or)")
