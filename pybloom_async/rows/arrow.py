"""Arrow arrays and scalars built from their buffers, not converted from Python values.

pyarrow imports pandas (where it is installed) the first time it converts a Python or numpy
value (``pa.array``, ``pa.scalar``; apache/arrow issue 34994): about 0.17 s, paid by a
process's first lookup. The values a lookup makes (literal sets, range ends, masks, row
numbers, partition values) are built here from their buffers instead; a type not handled
here falls back to ``pa.array`` (the same values, perhaps with that import).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

_NUMPY: dict[pa.DataType, Any] = {
    pa.int8(): np.int8,
    pa.int16(): np.int16,
    pa.int32(): np.int32,
    pa.int64(): np.int64,
    pa.uint8(): np.uint8,
    pa.uint16(): np.uint16,
    pa.uint32(): np.uint32,
    pa.uint64(): np.uint64,
    pa.float32(): np.float32,
    pa.float64(): np.float64,
}


def empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    """The batch of ``schema`` with no rows (``Schema.empty_table`` and ``from_pylist([])``
    convert an empty Python list per column, which imports pandas)."""
    return pa.RecordBatch.from_arrays([pa.nulls(0, field.type) for field in schema], schema=schema)


def empty_table(schema: pa.Schema) -> pa.Table:
    """The table of ``schema`` with no rows, one empty chunk per column."""
    return pa.Table.from_batches([empty_batch(schema)])


def bool_array(values: Any) -> pa.Array:
    """A boolean array of a numpy array's truth values (no NULL)."""
    values = np.asarray(values, dtype=bool)
    bits = np.packbits(values, bitorder="little")
    return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])


def constant_bools(n: int, value: bool | None) -> pa.Array:
    """``n`` times ``value`` (None: NULL)."""
    if value is None:
        return pa.nulls(n, pa.bool_())
    return bool_array(np.full(n, value, dtype=bool))


def int64_array(values: Any) -> pa.Array:
    """An int64 array of a numpy array's integers (row numbers)."""
    data = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(data), [None, pa.py_buffer(data)])


def numpy_of(values: pa.Array) -> Any:
    """A fixed-width array without NULLs as a numpy view of its buffer (``to_numpy`` imports
    pandas, where it is installed, on a process's first call)."""
    dtype = _NUMPY.get(values.type)
    if dtype is None or values.null_count:
        raise TypeError(f"not a fixed-width array without nulls: {values.type}")
    return np.frombuffer(
        values.buffers()[1],
        dtype=dtype,
        count=len(values),
        offset=values.offset * np.dtype(dtype).itemsize,
    )


def rows_at(table: pa.Table, indices: Any) -> pa.Table:
    """The rows of ``table`` at ``indices`` (an Arrow or numpy integer array). A table without
    columns keeps the count (Arrow's ``take`` gives it no row at all): a file that has none
    of the columns read still has its rows."""
    if not table.num_columns:
        return table.slice(0, len(indices))
    if isinstance(indices, np.ndarray):
        indices = int64_array(indices)
    return table.take(indices)


def _binary(raw: Sequence[bytes], arrow_type: pa.DataType) -> pa.Array | None:
    large = pa.types.is_large_binary(arrow_type) or pa.types.is_large_string(arrow_type)
    total = sum(len(v) for v in raw)
    if not large and total >= 2**31:
        return None  # not for int32 offsets: pa.array says so
    offsets = np.zeros(len(raw) + 1, dtype=np.int64 if large else np.int32)
    np.cumsum([len(v) for v in raw], out=offsets[1:])
    return pa.Array.from_buffers(
        arrow_type, len(raw), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(raw))]
    )


def arrow_values(values: Sequence[Any], arrow_type: pa.DataType) -> pa.Array:
    """``values`` (no None among them) as an array of ``arrow_type``.

    Raises
    ------
    OverflowError, pyarrow.ArrowInvalid, pyarrow.ArrowTypeError
        A value does not fit the type (as ``pa.array`` raises).
    """
    if not len(values):
        return pa.nulls(0, arrow_type)
    built: pa.Array | None = None
    dtype = _NUMPY.get(arrow_type)
    if dtype is not None and pa.types.is_integer(arrow_type):
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            info = np.iinfo(dtype)
            if not all(int(info.min) <= v <= int(info.max) for v in values):
                raise OverflowError(f"a value does not fit {arrow_type}")
            built = _fixed(np.array(values, dtype=dtype), arrow_type)
    elif dtype is not None and all(isinstance(v, float) for v in values):
        built = _fixed(np.array(values, dtype=dtype), arrow_type)  # (an int may not be exact)
    elif pa.types.is_date32(arrow_type) and all(_is_date(v) for v in values):
        days = [(v - _EPOCH).days for v in values]
        built = _fixed(np.array(days, dtype=np.int32), arrow_type)
    elif pa.types.is_boolean(arrow_type) and all(isinstance(v, bool) for v in values):
        built = bool_array(np.array(values, dtype=bool))
    elif _text(arrow_type) and all(isinstance(v, str) for v in values):
        built = _binary([v.encode() for v in values], arrow_type)
    elif _bytes(arrow_type) and all(isinstance(v, bytes) for v in values):
        built = _binary(values, arrow_type)
    return pa.array(values, type=arrow_type) if built is None else built


_EPOCH = datetime.date(1970, 1, 1)


def _is_date(value: Any) -> bool:
    return isinstance(value, datetime.date) and not isinstance(value, datetime.datetime)


def _text(arrow_type: pa.DataType) -> bool:
    return bool(pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type))


def _bytes(arrow_type: pa.DataType) -> bool:
    return bool(pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type))


def _fixed(data: Any, arrow_type: pa.DataType) -> pa.Array:
    return pa.Array.from_buffers(arrow_type, len(data), [None, pa.py_buffer(data)])


def arrow_scalar(value: Any, arrow_type: pa.DataType) -> pa.Scalar:
    """``value`` (None: NULL) as a scalar of ``arrow_type``."""
    if value is None:
        return pa.nulls(1, arrow_type)[0]
    return arrow_values([value], arrow_type)[0]


#: The boolean scalars the masks are made of.
NULL_BOOL = pa.nulls(1, pa.bool_())[0]
TRUE = bool_array(np.ones(1, dtype=bool))[0]


def int_storage(arrow_type: pa.DataType) -> pa.DataType | None:
    """The integer type an Arrow temporal type is stored as (its values are built from, and
    compared as, those integers); None for any other type."""
    if pa.types.is_date32(arrow_type) or pa.types.is_time32(arrow_type):
        return pa.int32()
    if (
        pa.types.is_date64(arrow_type)
        or pa.types.is_time64(arrow_type)
        or pa.types.is_timestamp(arrow_type)
        or pa.types.is_duration(arrow_type)
    ):
        return pa.int64()
    return None
