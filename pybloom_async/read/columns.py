"""Column values of existing Parquet files, hashed as their writer would have.

To add a filter to a file that has none, or to build a file-level index, we
read a column chunk with pyarrow and hash every non-null value by the PLAIN
encoding of the column's *physical* type. pyarrow hands back logical values
(timestamps, decimals, unsigned integers, half floats, ...), so each is turned
back, exactly, into the physical representation the file stores: the same bytes
another engine hashes when it probes the filter. A column whose values cannot be
mapped back exactly is refused with a reason; it never gets a filter that could
answer "absent" for a value that is there.

pyarrow is needed here (the ``arrow`` extra); it is imported on first use, and a
:class:`ColumnReader` made without it raises
:class:`~pybloom_async.errors.MissingDependencyError`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..checks import require_pyarrow
from ..core.hashing import HashArray, hash_values
from ..errors import ParquetFormatError, PyBloomError, UnsupportedTypeError
from ..parquet.logical import LogicalKind
from ..parquet.schema import ColumnDescriptor
from ..types import PhysicalType

_JULIAN_UNIX_EPOCH = 2_440_588
_NANOS_PER_DAY = 86_400 * 1_000_000_000


def unsupported_reason(column: ColumnDescriptor) -> str | None:
    """Why ``column`` cannot get a filter from us, or None when it can.

    BOOLEAN filters are useless (two values) and readers do not trust them;
    INTERVAL and BYTE_ARRAY decimals have no exact Arrow round trip.
    """
    pt = column.physical_type
    kind = column.logical_type.kind if column.logical_type is not None else None
    if pt is PhysicalType.BOOLEAN:
        return "BOOLEAN columns get no Bloom filter (two values: min/max statistics do better)"
    if kind is LogicalKind.INTERVAL:
        return "INTERVAL values have no exact Arrow representation"
    if kind is LogicalKind.UNRECOGNIZED:
        return "the column's logical type is newer than this library"
    if kind in (LogicalKind.VARIANT, LogicalKind.GEOMETRY, LogicalKind.GEOGRAPHY):
        return f"{kind.name} columns are not supported"
    if kind is LogicalKind.DECIMAL and pt is PhysicalType.BYTE_ARRAY:
        return "BYTE_ARRAY decimals have writer-specific byte widths"
    if pt is PhysicalType.FIXED_LEN_BYTE_ARRAY and not column.type_length:
        return "FIXED_LEN_BYTE_ARRAY column without a type length"
    return None


def leaf_values(values: Any, column: ColumnDescriptor) -> Any:
    """The leaf values of a column read by pyarrow, nesting removed.

    ``values`` is the (Chunked)Array pyarrow returns for the top-level field that
    holds ``column``, read with only that leaf selected. Structs, lists and maps are
    walked down to the leaf; parent nulls become nulls (and empty lists vanish), so
    no placeholder value is ever hashed.
    """
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        return pa.chunked_array(
            [leaf_values(c, column) for c in values.chunks], type=_leaf_type(values.type, column)
        )
    arr = values
    while True:
        t = arr.type
        if isinstance(t, pa.BaseExtensionType):
            arr = arr.storage
        elif pa.types.is_struct(t):
            names = [t.field(i).name for i in range(t.num_fields)]
            pick = _child_index(names, column)
            arr = arr.flatten()[pick]  # flatten() merges the struct's own nulls into the child
        elif pa.types.is_map(t):
            arr = arr.keys if _wants_map_key(column) else arr.items
        elif _is_list(t):
            arr = arr.flatten()
        else:
            return arr


def _leaf_type(t: Any, column: ColumnDescriptor) -> Any:
    import pyarrow as pa

    while True:
        if isinstance(t, pa.BaseExtensionType):
            t = t.storage_type
        elif pa.types.is_struct(t):
            names = [t.field(i).name for i in range(t.num_fields)]
            t = t.field(_child_index(names, column)).type
        elif pa.types.is_map(t):
            t = t.key_type if _wants_map_key(column) else t.item_type
        elif _is_list(t):
            t = t.value_type
        else:
            return t


def _is_list(t: Any) -> bool:
    """Whether the Arrow type is one of the list types (its values one level down)."""
    import pyarrow as pa

    return bool(
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    )


def _child_index(names: list[str], column: ColumnDescriptor) -> int:
    if len(names) == 1:
        return 0
    for part in column.path_parts:
        if part in names:
            return names.index(part)
    raise UnsupportedTypeError(
        f"cannot find the leaf among struct fields {names}", column=column.path
    )


def _wants_map_key(column: ColumnDescriptor) -> bool:
    return len(column.path_parts) >= 1 and column.path_parts[-1] == "key"


def physical_values(values: Any, column: ColumnDescriptor) -> Any:
    """An Arrow array whose layout is the PLAIN encoding of ``column``'s physical type.

    ``values`` holds leaf values (see :func:`leaf_values`) as pyarrow decodes the
    column. Nulls stay nulls.

    Raises
    ------
    UnsupportedTypeError
        The column's type is refused (:func:`unsupported_reason`), or the Arrow type
        cannot be mapped back to the physical type exactly.
    """
    import pyarrow as pa

    reason = unsupported_reason(column)
    if reason is not None:
        raise UnsupportedTypeError(reason, column=column.path)
    if isinstance(values, pa.ChunkedArray):
        if values.num_chunks == 0:  # an empty chunk of no rows: its type says what to give
            return pa.chunked_array([physical_values(values.combine_chunks(), column)])
        return pa.chunked_array([physical_values(c, column) for c in values.chunks])
    arr = values
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    t = arr.type
    pt = column.physical_type
    if pt is PhysicalType.INT32:
        return _to_int(arr, column, pa.int32(), 4)
    if pt is PhysicalType.INT64:
        return _to_int(arr, column, pa.int64(), 8)
    if pt is PhysicalType.FLOAT and pa.types.is_float32(t):
        return arr
    if pt is PhysicalType.DOUBLE and pa.types.is_float64(t):
        return arr
    if pt is PhysicalType.BYTE_ARRAY and (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_string_view(t)
        or pa.types.is_binary_view(t)
    ):
        return arr
    if pt is PhysicalType.FIXED_LEN_BYTE_ARRAY:
        width = int(column.type_length or 0)
        if pa.types.is_fixed_size_binary(t) and t.byte_width == width:
            return arr
        if pa.types.is_decimal(t):
            return _decimal_big_endian(arr, width)
        if pa.types.is_float16(t) and width == 2:
            raw = _values_numpy(arr, np.dtype("<u2"))
            return _fixed_from_numpy(raw.view(np.uint8).reshape(-1, 2), arr)
    if pt is PhysicalType.INT96 and pa.types.is_timestamp(t):
        return _int96_from_timestamps(arr)
    raise UnsupportedTypeError(
        f"Arrow type {t} cannot be turned back into {pt.name} values exactly",
        column=column.path,
    )


def _values_numpy(arr: Any, dtype: np.dtype[Any], per_value: int = 1) -> np.ndarray[Any, Any]:
    """The fixed-width value buffer of ``arr`` as numpy (nulls hold whatever is there)."""
    data = arr.buffers()[1]
    n = len(arr)
    if data is None or n == 0:
        return np.zeros(n * per_value, dtype=dtype)
    full = np.frombuffer(data, dtype=dtype)
    start = arr.offset * per_value
    return full[start : start + n * per_value]


def _with_validity(values: np.ndarray[Any, Any], source: Any, type_: Any) -> Any:
    import pyarrow as pa

    if source.null_count == 0:
        return pa.array(values, type=type_)
    mask = np.asarray(source.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    return pa.array(values, type=type_, mask=mask)


def _to_int(arr: Any, column: ColumnDescriptor, target: Any, width: int) -> Any:
    import pyarrow as pa

    t = arr.type
    signed = np.dtype(f"<i{width}")
    if t == target:
        return arr
    if pa.types.is_integer(t):
        if t.bit_width < width * 8:
            return arr.cast(target)  # widening: exact, sign kept as the writer does
        if t.bit_width == width * 8:
            # Unsigned of the same width: the file stores the same bits as signed.
            return _with_validity(_values_numpy(arr, signed), arr, target)
    if pa.types.is_decimal(t):
        scale_ok = column.logical_type is None or column.logical_type.scale in (None, t.scale)
        if not scale_ok:
            raise UnsupportedTypeError(
                f"decimal scale {t.scale} differs from the column's", column=column.path
            )
        words = _decimal_words(arr)  # little-endian two's complement, low word first
        low = np.ascontiguousarray(words[:, 0])  # the unscaled value fits the low word
        unscaled = low.view(np.int64) if width == 8 else (low & 0xFFFFFFFF).astype(np.uint32)
        return _with_validity(unscaled.view(signed), arr, target)
    if (
        pa.types.is_date32(t)
        or pa.types.is_time32(t)
        or pa.types.is_time64(t)
        or pa.types.is_duration(t)
    ) and t.bit_width == width * 8:
        return _with_validity(_values_numpy(arr, signed), arr, target)
    if pa.types.is_timestamp(t) and width == 8:
        unit = _column_unit(column)
        if unit is not None and unit != t.unit:
            try:
                arr = arr.cast(pa.timestamp(unit, tz=t.tz))  # a safe cast: exact or raises
            except pa.ArrowInvalid as exc:
                raise UnsupportedTypeError(
                    f"timestamps in {t.unit} do not convert exactly to the column's {unit}",
                    column=column.path,
                ) from exc
        return _with_validity(_values_numpy(arr, signed), arr, target)
    raise UnsupportedTypeError(
        f"Arrow type {t} cannot be turned back into {column.physical_type.name} values exactly",
        column=column.path,
    )


def _column_unit(column: ColumnDescriptor) -> str | None:
    lt = column.logical_type
    if lt is None or lt.unit is None:
        return None
    return {"MILLIS": "ms", "MICROS": "us", "NANOS": "ns"}.get(lt.unit.name)


def _decimal_words(arr: Any) -> np.ndarray[Any, Any]:
    """Decimal values as rows of little-endian 64-bit words (2 for decimal128, 4 for 256)."""
    import pyarrow as pa

    nwords = 4 if pa.types.is_decimal256(arr.type) else 2
    if pa.types.is_decimal32(arr.type) or pa.types.is_decimal64(arr.type):
        raw = _values_numpy(arr, np.dtype("<i4" if pa.types.is_decimal32(arr.type) else "<i8"))
        wide = raw.astype(np.int64)
        hi = np.where(wide < 0, np.int64(-1), np.int64(0))
        return np.stack([wide, hi], axis=1).view(np.uint64)
    flat = _values_numpy(arr, np.dtype("<u8"), per_value=nwords)
    return flat.reshape(-1, nwords)


def _decimal_big_endian(arr: Any, width: int) -> Any:
    """Unscaled decimals as ``width``-byte big-endian two's complement (FIXED_LEN_BYTE_ARRAY)."""
    words = _decimal_words(arr)
    # Little-endian bytes, one row per value (the width given: no row to infer it from).
    le = np.ascontiguousarray(words).view(np.uint8).reshape(len(arr), words.shape[1] * 8)
    have = le.shape[1]
    if width <= have:
        out = le[:, :width][:, ::-1]
    else:
        sign = np.where(le[:, have - 1] >= 0x80, 0xFF, 0x00).astype(np.uint8)
        pad = np.repeat(sign[:, None], width - have, axis=1)
        out = np.concatenate([le, pad], axis=1)[:, ::-1]
    return _fixed_from_numpy(np.ascontiguousarray(out), arr)


def _fixed_from_numpy(rows: np.ndarray[Any, Any], source: Any) -> Any:
    import pyarrow as pa

    n, width = rows.shape if rows.ndim == 2 else (len(source), 0)
    data = pa.py_buffer(np.ascontiguousarray(rows, dtype=np.uint8).tobytes())
    validity = None
    if source.null_count:
        valid = np.asarray(source.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
        validity = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())
    return pa.Array.from_buffers(pa.binary(width), n, [validity, data], source.null_count)


def _int96_from_timestamps(arr: Any) -> Any:
    """Timestamps (any unit) as INT96: nanoseconds of the day (8 B LE), Julian day (4 B LE)."""
    per_ns = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}[arr.type.unit]
    raw = _values_numpy(arr, np.dtype("<i8"))
    if arr.null_count:
        raw = np.where(np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), bool), raw, 0)
    per_day = _NANOS_PER_DAY // per_ns  # units per day: exact integer arithmetic throughout
    days = np.floor_divide(raw, per_day)
    in_day = (raw - days * per_day) * per_ns  # < one day of nanoseconds: no overflow
    julian = days + _JULIAN_UNIX_EPOCH
    if len(julian) and (int(julian.min()) < 0 or int(julian.max()) > 0xFFFFFFFF):
        raise UnsupportedTypeError("INT96 timestamp outside the Julian day range")
    rec = np.empty(len(arr), dtype=[("nanos", "<i8"), ("day", "<u4")])
    rec["nanos"] = in_day
    rec["day"] = julian.astype(np.uint32)
    rows = rec.view(np.uint8).reshape(len(arr), 12)
    return _fixed_from_numpy(rows, arr)


@contextlib.contextmanager
def arrow_failures(
    path: str, row_group: int | None = None, column: str | None = None
) -> Iterator[None]:
    """pyarrow's own failures inside as ParquetFormatError ("cannot read the values") naming
    the file (and the row group and column where given); the package's errors as raised."""
    try:
        yield
    except PyBloomError:
        raise
    except (ArithmeticError, LookupError, TypeError, ValueError, OSError) as exc:
        # pyarrow raises ArrowException subclasses of these (ArrowInvalid is a ValueError).
        raise ParquetFormatError(
            f"cannot read the values: {type(exc).__name__}: {exc}",
            path=path,
            row_group=row_group,
            column=column,
        ) from exc


def column_hashes(values: Any, column: ColumnDescriptor) -> HashArray:
    """XXH64 of every non-null leaf value, as a Parquet writer hashes ``column``.

    ``values`` is what pyarrow returns for the column's top-level field with
    only this leaf selected (nesting is walked down by :func:`leaf_values`).

    Raises
    ------
    UnsupportedTypeError
        The column cannot get an exact filter (the message says why).
    """
    leaf = leaf_values(values, column)
    phys = physical_values(leaf, column)
    return hash_values(phys, column.physical_type, column.type_length)


class ColumnReader:
    """Reads column chunks of one Parquet file with pyarrow and hashes their values.

    ``source`` is a local path or the file's bytes. INT96 columns are read
    twice (nanoseconds, and seconds to detect values outside the nanosecond
    range, which pyarrow would otherwise wrap silently).
    """

    def __init__(self, source: str | os.PathLike[str] | bytes | memoryview) -> None:
        pa = require_pyarrow("read column values")
        pq = pa.parquet

        self._display = os.fspath(source) if isinstance(source, (str, os.PathLike)) else "<bytes>"
        self._source: Any = (
            os.fspath(source) if isinstance(source, (str, os.PathLike)) else pa.py_buffer(source)
        )
        try:
            self._file = pq.ParquetFile(self._open(), coerce_int96_timestamp_unit="ns")
        except (pa.ArrowException, OSError) as exc:
            raise ParquetFormatError(
                f"pyarrow cannot open the file: {exc}", path=self._display
            ) from exc
        self._seconds: Any = None

    def _open(self) -> Any:
        import pyarrow as pa

        if isinstance(self._source, str):
            return self._source
        return pa.BufferReader(self._source)

    @property
    def num_row_groups(self) -> int:
        """Row groups in the file, as pyarrow sees them."""
        return int(self._file.metadata.num_row_groups)

    def read(self, row_group: int, column: ColumnDescriptor) -> Any:
        """The chunk's values as pyarrow decodes them (top-level field, one leaf selected)."""
        import pyarrow as pa

        try:
            table = self._file.reader.read_row_group(
                row_group, column_indices=[column.index], use_threads=False
            )
        except (pa.ArrowException, OSError) as exc:
            raise ParquetFormatError(
                f"pyarrow cannot read the chunk: {exc}",
                path=self._display,
                row_group=row_group,
                column=column.path,
            ) from exc
        return table.column(0)

    def hashes(self, row_group: int, column: ColumnDescriptor) -> HashArray:
        """Hashes of the chunk's non-null values (see :func:`column_hashes`).

        Raises
        ------
        UnsupportedTypeError
            The column cannot get an exact filter.
        ParquetFormatError
            pyarrow cannot read the chunk, or its values cannot be turned back into
            the column's physical values (pyarrow's own error, named).
        """
        values = self.read(row_group, column)
        with arrow_failures(self._display, row_group, column.path):
            try:
                if column.physical_type is PhysicalType.INT96:
                    self._check_int96(row_group, column, values)
                return column_hashes(values, column)
            except PyBloomError as exc:
                raise exc.with_context(path=self._display, row_group=row_group) from None

    def _check_int96(self, row_group: int, column: ColumnDescriptor, values: Any) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self._seconds is None:
            self._seconds = pq.ParquetFile(self._open(), coerce_int96_timestamp_unit="s")
        coarse = self._seconds.reader.read_row_group(
            row_group, column_indices=[column.index], use_threads=False
        ).column(0)
        fine = leaf_values(values, column).cast(pa.int64()).fill_null(0)
        secs = leaf_values(coarse, column).cast(pa.int64()).fill_null(0)
        fine_np = np.asarray(fine.to_numpy(), dtype=np.int64)
        secs_np = np.asarray(secs.to_numpy(), dtype=np.int64)
        if not np.array_equal(np.floor_divide(fine_np, 1_000_000_000), secs_np):
            raise UnsupportedTypeError(
                "INT96 timestamps outside 1677..2262 cannot be read exactly",
                path=self._display,
                row_group=row_group,
                column=column.path,
            )
