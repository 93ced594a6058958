"""The formats' own small encodings, built by hand for tests that write bytes themselves
(thrift's and snappy's varints)."""

from __future__ import annotations


def varint(n: int) -> bytes:
    """``n`` (not negative) as an unsigned LEB128 varint: 7 bits a byte, low bits first."""
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)
