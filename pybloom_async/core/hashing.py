"""Hashing values the way Parquet Bloom filters do: XXH64 of the PLAIN encoding.

Values are described as the C core's column (:mod:`.columns`), which the core hashes in
one call with the GIL released.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .._native import check, ffi, lib
from ..errors import UnsupportedTypeError, ValueEncodingError
from ..types import PhysicalType
from .columns import iter_columns

HashArray = npt.NDArray[np.uint64]


def simd_backend() -> str:
    """Name of the SBBF kernels in use: ``"avx2"`` or ``"scalar"``.

    Chosen once when the C core loads; ``PYBLOOM_ASYNC_SIMD=scalar`` in the
    environment forces the portable kernels.
    """
    return str(ffi.string(lib.pba_simd_backend()).decode("ascii"))


def xxh64(data: bytes | bytearray | memoryview, seed: int = 0) -> int:
    """XXH64 of a bytes-like object (the vendored xxHash), as an unsigned int."""
    if isinstance(data, str):
        raise UnsupportedTypeError("xxh64 hashes bytes; encode the str first (e.g. UTF-8)")
    if not 0 <= seed < 2**64:
        raise ValueEncodingError("seed must fit in 64 unsigned bits", value=seed)
    with ffi.from_buffer(data) as buf:
        return int(lib.pba_xxh64(buf, len(buf), seed))


def hash_values(
    values: Any,
    physical_type: PhysicalType | str | int,
    type_length: int | None = None,
) -> HashArray:
    """Hash values as a Parquet writer would before inserting them into its filter.

    Parameters
    ----------
    values:
        A scalar, a sequence, a numpy array, or a pyarrow Array / ChunkedArray.
    physical_type:
        The column's Parquet physical type (member, name such as ``"INT64"``,
        or thrift number).
    type_length:
        Width in bytes for FIXED_LEN_BYTE_ARRAY.

    Returns
    -------
    numpy.ndarray of uint64
        One hash per non-null value, in input order; nulls are skipped, as
        writers skip them.

    Raises
    ------
    ValueEncodingError
        A value does not fit the physical type exactly.
    UnsupportedTypeError
        The input's type cannot be converted to the physical type.
    """
    ptype = PhysicalType.coerce(physical_type)
    parts = []
    for col in iter_columns(values, ptype, type_length):
        count = int(lib.pba_column_count_valid(col.c))
        out = np.empty(max(count, 1), dtype=np.uint64)  # never a NULL pointer
        written = ffi.new("size_t *")
        check(lib.pba_hash_column(col.c, ffi.from_buffer("uint64_t[]", out), written))
        parts.append(out[: written[0]])
    if not parts:
        return np.empty(0, dtype=np.uint64)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def hash_plain_byte_arrays(data: bytes | memoryview) -> HashArray:
    """The hashes of a PLAIN-encoded BYTE_ARRAY run (each value a 4-byte little-endian
    length, then its bytes: a dictionary page's body), one per value, as a writer hashes
    them into its filter.

    Raises
    ------
    ValueEncodingError
        A length runs past the data.
    """
    size = len(data)
    out = np.empty(max(size // 4, 1), dtype=np.uint64)  # a value takes 4 bytes at least
    written = ffi.new("size_t *")
    with ffi.from_buffer(data) as buf:  # released before any raise (see _native)
        rc = lib.pba_hash_plain_byte_array(
            buf, size, ffi.from_buffer("uint64_t[]", out), size // 4, written
        )
    check(rc)
    return out[: written[0]]
