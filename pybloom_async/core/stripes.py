"""Block-major stripes: one hash checked against block b of many filters at once.

A probe of a Split Block Bloom Filter touches one 32-byte block,
``((hash >> 32) * num_blocks) >> 32``, which depends only on the hash and the
block count. When N filters share a block count B, a hash touches block b of
each, and the N blocks number b, stored one after the other (the *stripe* of
b), answer a point lookup for all N filters (``pba_sbbf_check_stripe``).

Folding. Filter sizes are powers of two, so a filter of B' = B * 2**j blocks
folds exactly to B blocks: with x = hash >> 32,
``floor(x * B' / 2**32) >> j == floor(x * B / 2**32)`` (floor of a floor over
an integer), so every hash that picks block b' of the large filter picks block
b' >> j of the small one, and the bits set inside a block depend only on the
low 32 bits of the hash. The OR of blocks ``b * 2**j .. (b + 1) * 2**j - 1``
(``pba_sbbf_fold``, halving j times) is therefore the filter the same values
would have built at B blocks. A filter smaller than B cannot be widened: a block
of it mixes what would land in several blocks of the larger one.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from .._native import check, ffi, lib
from ..errors import FilterSizeError
from .filter import SplitBlockBloomFilter
from .sizes import MIN_BYTES

#: Bytes in one SBBF block (eight 32-bit words).
BLOCK_BYTES = 32


def block_indexes(hashes: Any, num_blocks: int) -> npt.NDArray[np.uint64]:
    """The block (and so the stripe) each hash probes in filters of ``num_blocks`` blocks."""
    h = np.asarray(hashes, dtype=np.uint64).reshape(-1)
    # (h >> 32) < 2**32 and num_blocks <= 2**22 (128 MiB filters): the product fits 64 bits.
    out: npt.NDArray[np.uint64] = ((h >> np.uint64(32)) * np.uint64(num_blocks)) >> np.uint64(32)
    return out


def check_stripe(
    stripe: bytes | bytearray | memoryview, num_files: int, hashes: Any
) -> npt.NDArray[np.bool_]:
    """Which of the ``num_files`` blocks of one stripe may hold any of ``hashes``.

    Every hash must probe this stripe (see :func:`block_indexes`). One C call per
    hash, each with the GIL released, all into one output.

    Raises
    ------
    PyBloomError
        ``stripe`` is not ``num_files * 32`` bytes.
    """
    out = np.zeros(max(num_files, 1), dtype=np.uint8)
    target = ffi.from_buffer("uint8_t[]", out)
    rc = 0
    with ffi.from_buffer(stripe) as view:  # released before any raise (see _native)
        for h in np.asarray(hashes, dtype=np.uint64).reshape(-1).tolist():
            rc = lib.pba_sbbf_check_stripe(view, len(view), num_files, int(h), target)
            if rc < 0:
                break
    if rc < 0:
        check(int(rc), "checking a stripe")
    return out[:num_files].astype(np.bool_)


def fold_to(bloom: SplitBlockBloomFilter, num_bytes: int) -> SplitBlockBloomFilter:
    """A copy of ``bloom`` folded to ``num_bytes`` (exact, see the module docstring).

    Raises
    ------
    FilterSizeError
        ``num_bytes`` is not a power of two in [32, bloom.num_bytes].
    """
    size = bloom.num_bytes
    if num_bytes < MIN_BYTES or num_bytes & (num_bytes - 1) or num_bytes > size:
        raise FilterSizeError(
            f"cannot fold a filter of {size} bytes to {num_bytes} bytes "
            "(only to a smaller power of two: see pybloom_async.core.stripes)"
        )
    times = size.bit_length() - num_bytes.bit_length()
    if times == 0:
        return bloom.copy()
    work = bytearray(bloom.bitset)
    got = int(lib.pba_sbbf_fold(ffi.from_buffer(work), size, times))
    if got != num_bytes:  # pragma: no cover - the C core agrees with the arithmetic above
        raise FilterSizeError(f"folding {size} bytes {times} times gave {got} bytes")
    return SplitBlockBloomFilter.from_bitset(memoryview(work)[:num_bytes])
