"""The block-major stripe kernel of the C core.

N filters of one column with the same block count B, stored block-major: the
stripe of block b is block b of file 0, of file 1, ..., of file N-1. One hash
probes one stripe; ``pba_sbbf_check_stripe`` must answer, for every file,
exactly what ``pba_sbbf_check_hash`` answers on that file's own filter, on
both SIMD backends.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import sbbf_model

from pybloom_async import SplitBlockBloomFilter, simd_backend
from pybloom_async._native import ffi, lib

AVX2 = bool(lib.pba_avx2_available())
BACKENDS = ["scalar", "avx2"] if AVX2 else ["scalar"]
U64 = st.integers(0, 2**64 - 1)


@contextmanager
def backend(name: str) -> Iterator[None]:
    before = simd_backend()
    assert lib.pba_set_backend(name.encode()) == 0
    try:
        yield
    finally:
        lib.pba_set_backend(before.encode())


def block_major(filters: list[SplitBlockBloomFilter]) -> bytearray:
    """The block-major index of equally sized filters, built with the scatter helper."""
    num_bytes = filters[0].num_bytes if filters else 32
    index = bytearray(num_bytes * len(filters))
    for i, f in enumerate(filters):
        rc = lib.pba_sbbf_scatter_blocks(
            ffi.from_buffer(f.bitset), num_bytes, ffi.from_buffer(index), len(filters), i
        )
        assert rc == lib.PBA_OK
    return index


def check_stripe(stripe: bytes | bytearray, num_files: int, h: int) -> tuple[int, list[int]]:
    """(return value, out_may) of one call into a zeroed output."""
    out = ffi.new("uint8_t[]", max(num_files, 1))
    n = lib.pba_sbbf_check_stripe(ffi.from_buffer(stripe), len(stripe), num_files, h, out)
    return n, list(ffi.unpack(out, num_files))


def model_hits(stripe: bytes | bytearray, num_files: int, h: int) -> list[int]:
    """The spec model: a file may hold h when its block has all eight bits of h's mask."""
    _, bits = sbbf_model.block_and_bits(32, h)
    mask = np.array([1 << b for b in bits], dtype=np.uint32)
    words = np.frombuffer(bytes(stripe), dtype="<u4").reshape(num_files, 8)
    hits: npt.NDArray[np.bool_] = ((words & mask) == mask).all(axis=1)
    return [int(x) for x in hits]


# ---- the block index -------------------------------------------------------------


@given(U64, st.integers(0, 2**32 - 1))
@settings(max_examples=300, deadline=None)
def test_block_index_is_the_spec_formula(h: int, num_blocks: int) -> None:
    block, _ = sbbf_model.block_and_bits(num_blocks * 32, h)
    assert lib.pba_sbbf_block_index(h, num_blocks) == block


def test_block_index_extremes() -> None:
    # ((2^32-1) * (2^32-1)) >> 32 = 2^32 - 2: the last block of the largest count is reachable.
    assert lib.pba_sbbf_block_index(2**64 - 1, 2**32 - 1) == 2**32 - 2
    assert lib.pba_sbbf_block_index(2**64 - 1, 1) == 0
    assert lib.pba_sbbf_block_index(2**32 - 1, 2**20) == 0  # the low half never moves the block
    assert lib.pba_sbbf_block_index(2**63, 64) == 32


# ---- the stripe against every file's own filter -----------------------------------


@given(
    st.integers(5, 12).map(lambda e: 1 << e),
    st.lists(st.lists(U64, max_size=40), max_size=20),
    st.lists(U64, max_size=20),
    st.data(),
)
@settings(max_examples=150, deadline=None)
def test_stripe_answers_what_each_filter_answers(
    num_bytes: int,
    per_file: list[list[int]],
    shared: list[int],
    data: st.DataObject,
) -> None:
    # Keys inserted into some files only (a random subset per shared key), besides each
    # file's own keys; probes are every inserted key and as many foreign ones.
    inserted = [list(keys) for keys in per_file]
    for h in shared:
        if inserted:
            for i in data.draw(st.sets(st.integers(0, len(inserted) - 1))):
                inserted[i].append(h)
    filters = []
    for keys in inserted:
        f = SplitBlockBloomFilter(num_bytes)
        f.insert_hashes(np.array(keys, dtype=np.uint64))
        filters.append(f)
    index = block_major(filters)
    n_files = len(filters)
    stripe_len = 32 * n_files
    probes = [h for keys in inserted for h in keys] + shared
    probes += data.draw(st.lists(U64, max_size=len(probes) + 5))
    for h in probes:
        b = lib.pba_sbbf_block_index(h, num_bytes // 32)
        stripe = index[b * stripe_len : (b + 1) * stripe_len]
        expected = [
            lib.pba_sbbf_check_hash(ffi.from_buffer(f.bitset), num_bytes, h) for f in filters
        ]
        for name in BACKENDS:
            with backend(name):
                assert check_stripe(stripe, n_files, h) == (sum(expected), expected)
        for i, keys in enumerate(inserted):
            if h in keys:  # never a false negative
                assert expected[i] == 1


@pytest.mark.parametrize("num_files", [0, 1, 7, 8, 9, 1000, 131_072 + 23])
def test_stripe_sizes_and_backends_agree(num_files: int) -> None:
    # Dense random blocks (5/8 of the bits set: a block holds a random hash's eight bits
    # about 2% of the time) checked against the spec model. 131,095 files make a stripe
    # over 4 MiB, which takes the prefetching loop, then leaves 23 files to the plain
    # loop and its remainder of 3.
    rng = np.random.default_rng(num_files)
    words = rng.integers(0, 2**32, size=(3, num_files * 8), dtype=np.uint32)
    stripe = (words[0] | words[1] & words[2]).astype("<u4").tobytes()
    hashes = rng.integers(0, 2**64, size=40, dtype=np.uint64).tolist()
    # A hash whose mask sits in file 0's and the last file's blocks exactly.
    stripe = bytearray(stripe)
    for f in {0, num_files - 1} if num_files else set():
        _, bits = sbbf_model.block_and_bits(32, hashes[0])
        stripe[32 * f : 32 * f + 32] = np.array([1 << b for b in bits], dtype="<u4").tobytes()
    seen = set()
    for h in hashes:
        expected = model_hits(stripe, num_files, h)
        answers = []
        for name in BACKENDS:
            with backend(name):
                answers.append(check_stripe(stripe, num_files, h))
        assert all(a == (sum(expected), expected) for a in answers)
        seen.update(expected)
    if num_files >= 7:
        assert seen == {0, 1}
    if num_files:
        assert check_stripe(stripe, num_files, hashes[0])[1][0] == 1


@pytest.mark.parametrize("name", BACKENDS)
def test_out_may_accumulates_over_hashes(name: str) -> None:
    # Bytes already 1 stay 1 and the count is this hash's alone: several keys' calls
    # into one output give the files that may hold any of them.
    filters = [SplitBlockBloomFilter(64) for _ in range(9)]
    filters[2].insert_hash(11)
    filters[6].insert_hash(22 << 40)
    index = block_major(filters)
    out = ffi.new("uint8_t[]", 9)
    out[4] = 1
    with backend(name):
        for h in (11, 22 << 40):
            b = lib.pba_sbbf_block_index(h, 2)
            stripe = ffi.from_buffer(index[b * 9 * 32 : (b + 1) * 9 * 32])
            assert lib.pba_sbbf_check_stripe(stripe, 9 * 32, 9, h, out) >= 1
    expected = [
        int(i == 4 or f.check_hash(11) or f.check_hash(22 << 40)) for i, f in enumerate(filters)
    ]
    assert expected[2] == expected[4] == expected[6] == 1
    assert list(ffi.unpack(out, 9)) == expected


# ---- scatter and gather --------------------------------------------------------


@given(st.integers(5, 10).map(lambda e: 1 << e), st.integers(1, 12), st.randoms())
@settings(max_examples=60, deadline=None)
def test_scatter_lays_blocks_out_block_major_and_gather_inverts_it(
    num_bytes: int, num_files: int, rnd: random.Random
) -> None:
    bitsets = [rnd.randbytes(num_bytes) for _ in range(num_files)]
    index = bytearray(num_bytes * num_files)
    for i, bits in enumerate(bitsets):
        rc = lib.pba_sbbf_scatter_blocks(bits, num_bytes, ffi.from_buffer(index), num_files, i)
        assert rc == lib.PBA_OK
    for b in range(num_bytes // 32):
        for i, bits in enumerate(bitsets):
            at = (b * num_files + i) * 32
            assert index[at : at + 32] == bits[b * 32 : b * 32 + 32]
    for i, bits in enumerate(bitsets):
        back = bytearray(num_bytes)
        dst = ffi.from_buffer(back)
        rc = lib.pba_sbbf_gather_blocks(bytes(index), num_bytes, num_files, i, dst)
        assert rc == lib.PBA_OK
        assert back == bits


def test_scatter_leaves_the_other_files_blocks_alone() -> None:
    index = bytearray(b"\xaa" * 64 * 3)
    assert lib.pba_sbbf_scatter_blocks(b"\x01" * 64, 64, ffi.from_buffer(index), 3, 1) == 0
    assert index == b"\xaa" * 32 + b"\x01" * 32 + b"\xaa" * 64 + b"\x01" * 32 + b"\xaa" * 32


# ---- bad sizes and arguments ---------------------------------------------------------


def test_check_stripe_refuses_a_length_that_is_not_num_files_blocks() -> None:
    out = ffi.new("uint8_t[]", 4)
    buf = ffi.new("uint8_t[]", 128)
    for stripe_len, num_files in [(127, 4), (96, 4), (160, 4), (32, 0), (0, 1)]:
        got = lib.pba_sbbf_check_stripe(buf, stripe_len, num_files, 1, out)
        assert got == lib.PBA_ERR_SIZE
    assert list(ffi.unpack(out, 4)) == [0, 0, 0, 0]


def test_check_stripe_refuses_a_file_count_whose_size_overflows() -> None:
    # (2^59 + 1) * 32 wraps to 32 in 64 bits: a wrapped product would accept this one-block
    # stripe and then write 2^59 + 1 output bytes.
    out = ffi.new("uint8_t[]", 1)
    buf = ffi.new("uint8_t[]", 32)
    size_bits = ffi.sizeof("size_t") * 8
    num_files = 2 ** (size_bits - 5) + 1
    wrapped = num_files * 32 % 2**size_bits
    assert wrapped == 32
    assert lib.pba_sbbf_check_stripe(buf, wrapped, num_files, 0, out) == lib.PBA_ERR_SIZE


def test_check_stripe_null_pointers() -> None:
    buf = ffi.new("uint8_t[]", 32)
    out = ffi.new("uint8_t[]", 1)
    assert lib.pba_sbbf_check_stripe(ffi.NULL, 32, 1, 0, out) == lib.PBA_ERR_ARG
    assert lib.pba_sbbf_check_stripe(buf, 32, 1, 0, ffi.NULL) == lib.PBA_ERR_ARG
    # No file: nothing is read or written, whatever the pointers.
    assert lib.pba_sbbf_check_stripe(ffi.NULL, 0, 0, 0, ffi.NULL) == 0


@pytest.mark.parametrize("fn", ["pba_sbbf_scatter_blocks", "pba_sbbf_gather_blocks"])
def test_scatter_and_gather_refuse_bad_arguments(fn: str) -> None:
    a = ffi.new("uint8_t[]", 256)
    b = ffi.new("uint8_t[]", 256)

    def call(src: object, num_bytes: int, dst: object, num_files: int, file_index: int) -> int:
        if fn == "pba_sbbf_scatter_blocks":
            return int(lib.pba_sbbf_scatter_blocks(src, num_bytes, dst, num_files, file_index))
        return int(lib.pba_sbbf_gather_blocks(src, num_bytes, num_files, file_index, dst))

    for num_bytes in (0, 16, 48, 100):
        assert call(a, num_bytes, b, 2, 0) == lib.PBA_ERR_SIZE
    assert call(a, 2**32, b, 2**40, 0) == lib.PBA_ERR_SIZE  # 2^72 bytes of index
    assert call(a, 32, b, 2, 2) == lib.PBA_ERR_ARG
    assert call(a, 32, b, 0, 0) == lib.PBA_ERR_ARG
    assert call(ffi.NULL, 32, b, 2, 0) == lib.PBA_ERR_ARG
    assert call(a, 32, ffi.NULL, 2, 0) == lib.PBA_ERR_ARG
    assert call(a, 32, b, 2, 1) == lib.PBA_OK
