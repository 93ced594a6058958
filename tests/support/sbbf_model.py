"""The Parquet spec's Split Block Bloom Filter, written out plainly as a test oracle.

Independent of the C core on purpose: the tests compare the library with it.
Source: parquet-format BloomFilter.md ("Technical Approach").
"""

from __future__ import annotations

import struct

# The eight salts of the Split Block Bloom Filter.
SALTS = (
    0x47B6137B, 0x44974D91, 0x8824AD5B, 0xA2B7289D,
    0x705495C7, 0x2DF1424B, 0x9EFC4947, 0x5C6BFB31,
)  # fmt: skip


def block_and_bits(bitset_len: int, h: int) -> tuple[int, list[int]]:
    """The block a 64-bit hash selects and the bit it sets in each of the 8 words."""
    block = ((h >> 32) * (bitset_len // 32)) >> 32
    key = h & 0xFFFFFFFF
    return block, [((key * salt) & 0xFFFFFFFF) >> 27 for salt in SALTS]


def insert(bitset: bytearray, h: int) -> None:
    """Insert a hash into a little-endian bitset in place."""
    block, bits = block_and_bits(len(bitset), h)
    for i, bit in enumerate(bits):
        pos = block * 32 + 4 * i
        word = struct.unpack_from("<I", bitset, pos)[0] | (1 << bit)
        struct.pack_into("<I", bitset, pos, word)


def contains(bitset: bytes, h: int) -> bool:
    """Whether a hash may be in the bitset."""
    block, bits = block_and_bits(len(bitset), h)
    words = struct.unpack_from("<8I", bitset, block * 32)
    return all(words[j] >> bits[j] & 1 for j in range(8))
