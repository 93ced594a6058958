"""A filter's size: its bounds, the header that announces it decoded and checked, the size
for a number of distinct values at a false positive rate (the Parquet spec's rule)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._native import ffi, header_error, lib
from ..checks import integer, probability
from ..errors import FilterSizeError, FilterTooLargeError, ValueEncodingError

_U64_MAX = 2**64 - 1


#: The smallest filter: one 32-byte block, the Parquet spec's minimum.
MIN_BYTES = 32
#: The default upper bound on a filter's size, as in parquet-java and Arrow.
DEFAULT_MAX_BYTES = 128 * 1024 * 1024


def decode_header(buf: Any, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[int, int]:
    """Decode and validate the thrift ``BloomFilterHeader`` at the start of ``buf``.

    Parameters
    ----------
    buf:
        A bytes-like object starting with the header (the bitset may follow).
    max_bytes:
        The largest ``numBytes`` accepted.

    Returns
    -------
    (header_len, num_bytes)

    Raises
    ------
    InvalidFilterError
        The header is truncated, malformed, or names an algorithm, hash or
        compression other than BLOCK / XXHASH / UNCOMPRESSED.
    FilterSizeError, FilterTooLargeError
        ``numBytes`` is not a power of two in [32, max_bytes].
    """
    limit = _c_limit(max_bytes)
    out = ffi.new("pba_bloom_header *")
    with ffi.from_buffer(buf) as view:  # released before any raise (see _native)
        rc = lib.pba_bloom_header_decode(view, len(view), limit, out)
    if rc == lib.PBA_OK:
        return int(out.header_len), int(out.num_bytes)
    if rc == lib.PBA_ERR_HDR_NUMBYTES:
        n = int(out.num_bytes)
        if n > max_bytes and _is_pow2(n):
            raise FilterTooLargeError(
                f"Bloom filter header announces {n} bytes, above the limit of {max_bytes}"
            )
        raise FilterSizeError(
            f"Bloom filter header announces numBytes={n}; "
            f"it must be a power of two between {MIN_BYTES} and {max_bytes}"
        )
    raise header_error(rc)


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _c_limit(max_bytes: int) -> int:
    """``max_bytes`` as the C core's uint64_t: negative means 0, beyond 2**64 - 1 saturates.

    Any int is a meaningful limit; without the clamp a limit above 2**64 would raise
    cffi's OverflowError instead of being applied.
    """
    if type(max_bytes) is int and 0 <= max_bytes <= _U64_MAX:
        return max_bytes  # the usual case, once per filter read: no conversion needed
    return min(max(0, integer("max_bytes", max_bytes)), _U64_MAX)


def check_num_bytes(num_bytes: int, max_bytes: int) -> int:
    if isinstance(num_bytes, bool) or not isinstance(num_bytes, (int, np.integer)):
        raise FilterSizeError(f"num_bytes must be an int, not {type(num_bytes).__name__}")
    n = int(num_bytes)
    if _is_pow2(n) and n > max_bytes >= MIN_BYTES:
        raise FilterTooLargeError(f"filter of {n} bytes is above the limit of {max_bytes}")
    if n < 0 or n > _U64_MAX or not lib.pba_sbbf_valid_num_bytes(n, _c_limit(max_bytes)):
        raise FilterSizeError(
            f"num_bytes={n}: a filter size must be a power of two between "
            f"{MIN_BYTES} and {max_bytes} bytes"
        )
    return n


def optimal_num_bytes(ndv: int, fpp: float = 0.01, max_bytes: int = DEFAULT_MAX_BYTES) -> int:
    """Filter size for ``ndv`` values at ``fpp`` by the Parquet spec's sizing rule.

    Raises
    ------
    ValueError
        ``ndv`` is negative, ``fpp`` is not in (0, 1), or ``max_bytes`` < 32.
    """
    n = integer("ndv", ndv, minimum=0, error=ValueEncodingError)
    rate = probability("fpp", fpp, error=ValueEncodingError)
    limit = integer("max_bytes", max_bytes, minimum=MIN_BYTES, error=FilterSizeError)
    return int(lib.pba_sbbf_optimal_num_bytes(min(n, _U64_MAX), rate, _c_limit(limit)))
