"""The Python face of the stripe kernel, and exact folding to a common block count."""

from __future__ import annotations

import numpy as np
import pytest

from pybloom_async import SplitBlockBloomFilter
from pybloom_async._native import ffi, lib
from pybloom_async.core.stripes import block_indexes, check_stripe, fold_to
from pybloom_async.errors import FilterSizeError, PyBloomError


def test_block_indexes_match_the_c_core() -> None:
    rng = np.random.default_rng(5)
    hashes = rng.integers(0, 2**64 - 1, 2000, dtype=np.uint64, endpoint=True)
    for blocks in (1, 2, 64, 1 << 22):
        want = [lib.pba_sbbf_block_index(int(h), blocks) for h in hashes.tolist()]
        assert block_indexes(hashes, blocks).tolist() == want


def test_check_stripe_agrees_with_each_filter() -> None:
    rng = np.random.default_rng(6)
    filters = [SplitBlockBloomFilter(1024) for _ in range(37)]
    for f in filters:
        f.insert_hashes(rng.integers(0, 2**64 - 1, 60, dtype=np.uint64, endpoint=True))
    index = bytearray(1024 * len(filters))
    for i, f in enumerate(filters):
        lib.pba_sbbf_scatter_blocks(
            ffi.from_buffer(f.bitset), 1024, ffi.from_buffer(index), len(filters), i
        )
    probes = rng.integers(0, 2**64 - 1, 300, dtype=np.uint64, endpoint=True)
    blocks = block_indexes(probes, 32)
    for b in range(32):
        hs = probes[blocks == b]
        stripe = index[b * 32 * len(filters) : (b + 1) * 32 * len(filters)]
        got = check_stripe(stripe, len(filters), hs)
        want = [bool(f.check_hashes(hs).any()) for f in filters]
        assert got.tolist() == want


def test_check_stripe_refuses_a_wrong_length() -> None:
    with pytest.raises(PyBloomError):
        check_stripe(b"\0" * 63, 2, [1])


@pytest.mark.parametrize("times", [0, 1, 3])
def test_folding_equals_building_at_the_smaller_size(times: int) -> None:
    rng = np.random.default_rng(times)
    hashes = rng.integers(0, 2**64 - 1, 500, dtype=np.uint64, endpoint=True)
    big = SplitBlockBloomFilter(4096)
    big.insert_hashes(hashes)
    small = SplitBlockBloomFilter(4096 >> times)
    small.insert_hashes(hashes)
    folded = fold_to(big, 4096 >> times)
    assert bytes(folded.bitset) == bytes(small.bitset)
    assert bytes(big.bitset) != bytes(small.bitset) or times == 0  # big is left as it was


def test_folding_up_or_to_a_non_power_of_two_is_refused() -> None:
    f = SplitBlockBloomFilter(1024)
    for size in (2048, 96, 16):
        with pytest.raises(FilterSizeError):
            fold_to(f, size)
