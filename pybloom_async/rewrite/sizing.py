"""One chunk's filter, sized as writers size it.

A chunk's filter is sized by the Parquet spec's rule (bits per value =
-8 / ln(1 - fpp^(1/8)), rounded up to a power of two, capped at ``max_bytes``)
for the chunk's number of distinct values (distinct hashes); an ``ndv`` given by
the caller is an upper bound: ``min(ndv, distinct)``. This is the size pyarrow
picks for the same data and options, so both write bit-identical filters.

Counting distinct values exactly (a sort) would cost more than reading and
hashing the chunk, so large chunks are built large and folded: the hashes go
into a filter sized for the chunk's value count (an upper bound on the distinct
count), the distinct count is estimated from its fill, and when the whole
error band of the estimate maps to one filter size, the filter is folded to that
size (halving an SBBF ORs block 2j and 2j+1 into block j, exactly the filter the
same values build at half the size). Near a size boundary, or when the big filter
is too full for a good estimate, the distinct count is taken exactly. Either way
the size is the one the exact count gives; ``ChunkFilter.ndv_exact`` says which
count is reported. (``fold_to_fpp`` is not used: its stopping rule is the SBBF
model's, not the spec's sizing rule that writers share.)"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.filter import SplitBlockBloomFilter
from ..core.sizes import DEFAULT_MAX_BYTES, optimal_num_bytes

# Chunks with fewer values get an exact distinct count (a sort of their hashes is cheap).
_EXACT_BELOW = 1 << 12
# Above this fill ratio a filter's distinct-count estimate is too coarse to size from.
_MAX_FILL_FOR_ESTIMATE = 0.7


def _distinct(hashes: np.ndarray[Any, Any]) -> int:
    if hashes.size == 0:
        return 0
    ordered = np.sort(hashes)
    return 1 + int(np.count_nonzero(ordered[1:] != ordered[:-1]))


def _fold(bloom: SplitBlockBloomFilter, num_bytes: int, max_bytes: int) -> SplitBlockBloomFilter:
    """The filter halved down to ``num_bytes``: block j := block 2j | block 2j+1.

    The spec's block index is ``((hash >> 32) * blocks) >> 32``; with half the
    blocks it is the old index // 2, and the bits set inside a block depend on the
    low 32 bits only, so the fold equals the filter built at the smaller size.
    """
    if bloom.num_bytes == num_bytes:
        return bloom
    words = np.frombuffer(bloom.bitset, dtype="<u4").reshape(-1, 8)
    while words.shape[0] * 32 > num_bytes:
        words = words[0::2] | words[1::2]
    return SplitBlockBloomFilter.from_bitset(words.tobytes(), max_bytes=max_bytes)


@dataclass(frozen=True, slots=True)
class SizedFilter:
    """One chunk's filter with the distinct count it was sized for and how it was taken."""

    bloom: SplitBlockBloomFilter
    distinct: int
    exact: bool
    sized_for: int
    capped: bool


def chunk_filter(
    hashes: np.ndarray[Any, Any], ndv: int | None, fpp: float, max_bytes: int
) -> SizedFilter:
    """The filter for one chunk's hashes, sized for its distinct count (module docs)."""

    def size_for(distinct: int) -> int:
        return optimal_num_bytes(distinct if ndv is None else min(ndv, distinct), fpp, max_bytes)

    n = int(hashes.size)
    big = SplitBlockBloomFilter(size_for(n), max_bytes=max_bytes)
    big.insert_hashes(hashes)
    distinct, exact = -1, True
    if n >= _EXACT_BELOW and big.fill_ratio <= _MAX_FILL_FOR_ESTIMATE:
        estimate = big.estimated_ndv()
        # A generous band: the estimate's error is well under 1% at these sizes.
        slack = 0.02 * estimate + 4.0 * math.sqrt(estimate) + 1.0
        low = size_for(max(0, math.floor(estimate - slack)))
        if low == size_for(min(n, math.ceil(estimate + slack))):
            distinct, exact = min(n, round(estimate)), False
    if exact:
        distinct = _distinct(hashes)
    sized_for = distinct if ndv is None else min(ndv, distinct)
    num_bytes = size_for(distinct)
    capped = num_bytes < optimal_num_bytes(sized_for, fpp, DEFAULT_MAX_BYTES)
    return SizedFilter(_fold(big, num_bytes, max_bytes), distinct, exact, sized_for, capped)
