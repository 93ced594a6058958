"""Paimon's 64-bit Bloom filter (BloomFilter64), bit for bit as Paimon writes it."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._native import check, ffi, lib
from ..errors import (
    PaimonIndexError,
    UnsupportedTypeError,
    ValueEncodingError,
)
from .types import (
    INT32_MAX,
    INT32_MIN,
    INT64_MIN,
    U64_MASK,
    BoolArray,
    HashArray,
    parse_paimon_type,
)
from .values import as_list, native_order, value_batches

#: Paimon's defaults for ``file-index.bloom-filter.<column>.items`` / ``.fpp``.
DEFAULT_ITEMS = 1_000_000
DEFAULT_FPP = 0.1


# ---- BloomFilter64 ---------------------------------------------------------------------


def _hash_arg(h: Any) -> int:
    """A 64-bit hash given signed (Java long) or unsigned, as the unsigned value."""
    if isinstance(h, (bool, np.bool_)) or not isinstance(h, (int, np.integer)):
        raise ValueEncodingError(f"a hash must be an integer, not {type(h).__name__}", value=h)
    iv = int(h)
    if not INT64_MIN <= iv <= U64_MASK:
        raise ValueEncodingError("a hash must fit in 64 bits", value=h)
    return iv & U64_MASK


def _hash_array(hashes: Any) -> HashArray:
    """Hashes as a contiguous native uint64 array (int64 input is reinterpreted)."""
    arr = hashes if isinstance(hashes, np.ndarray) else None
    if arr is None:
        arr = np.fromiter((_hash_arg(h) for h in as_list(hashes)), dtype=np.uint64)
    if arr.ndim != 1:
        arr = arr.reshape(-1)
    if arr.dtype.kind == "i" and arr.dtype.itemsize == 8:
        arr = native_order(arr).view(np.uint64)
    elif arr.dtype.kind == "u" and arr.dtype.itemsize == 8:
        arr = native_order(arr)
    else:
        raise UnsupportedTypeError(f"hashes must be a uint64 or int64 array, not {arr.dtype}")
    return arr


class BloomFilter64:
    """Paimon's ``BloomFilter64``: k-hash Bloom filter over 64-bit value hashes.

    ``BloomFilter64(items, fpp)`` sizes the filter exactly as Paimon does,
    quirks included: ``nb = (int)(-items * ln(fpp) / ln(2)^2)``, then
    ``num_bits = nb + (8 - nb % 8)`` (a whole extra byte when ``nb`` is already
    a multiple of 8) and ``k = max(1, round(num_bits / items * ln 2))``. Bit
    ``i`` of the hash's ``j``-th probe (Kirsch-Mitzenmacher, ``h1 + j*h2`` in
    wrapping int32, negatives complemented) lives in byte ``i >> 3`` at bit
    ``i & 7``. The serialized form is ``k`` as a big-endian int32 followed by
    the bit array.

    Parameters
    ----------
    items:
        Expected number of values (Paimon's ``...items`` option; a Java int).
    fpp:
        Target false-positive probability (Paimon's ``...fpp`` option).

    Raises
    ------
    PaimonIndexError
        Paimon cannot build a filter of this size (Java throws
        NegativeArraySizeException: the bit count overflows an int, or a
        large ``fpp`` makes it negative).
    ValueEncodingError
        ``items`` is not an int in Java's int range.
    """

    __slots__ = ("_bits", "_k", "_num_bytes")

    def __init__(self, items: int = DEFAULT_ITEMS, fpp: float = DEFAULT_FPP) -> None:
        num_bits, self._k = self.geometry(items, fpp)
        self._num_bytes = num_bits // 8
        self._bits = ffi.new("uint8_t[]", self._num_bytes)

    @staticmethod
    def geometry(items: int, fpp: float) -> tuple[int, int]:
        """``(num_bits, num_hash_functions)`` of ``BloomFilter64(items, fpp)``, allocating nothing.

        Raises
        ------
        PaimonIndexError, ValueEncodingError
            As the constructor.
        """
        if isinstance(items, bool) or not isinstance(items, (int, np.integer)):
            raise ValueEncodingError("items must be an int", value=items)
        if not INT32_MIN <= int(items) <= INT32_MAX:
            raise ValueEncodingError("items must fit a Java int", value=items)
        nb = ffi.new("int32_t *")
        k = ffi.new("int32_t *")
        code = lib.pba_paimon_geometry(int(items), float(fpp), nb, k)
        if code == lib.PBA_PAIMON_ERR_SIZE:
            raise PaimonIndexError(
                f"Paimon cannot build a BloomFilter64 for items={items}, fpp={fpp}: "
                "its bit count overflows or is not positive (Java throws "
                "NegativeArraySizeException)"
            )
        check(code, "BloomFilter64")
        return int(nb[0]), int(k[0])

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> BloomFilter64:
        """Read a serialized filter (``[k int32 BE][bit array]``), as found in a container.

        Raises
        ------
        PaimonIndexError
            Fewer than 5 bytes, ``k <= 0``, ``k`` larger than the bit count (no
            Paimon writer produces it), or a bit array too large for Paimon.
        """
        view = memoryview(data).cast("B")
        k = ffi.new("int32_t *")
        nbytes = ffi.new("size_t *")
        if view.nbytes:
            with ffi.from_buffer(view) as src:  # released before any raise (see _native)
                code = lib.pba_paimon_parse_header(src, view.nbytes, k, nbytes)
        else:
            code = lib.pba_paimon_parse_header(ffi.new("uint8_t[]", 1), 0, k, nbytes)
        if code != 0:
            if code == lib.PBA_PAIMON_ERR_TRUNCATED:
                raise PaimonIndexError(
                    f"Paimon bloom filter of {view.nbytes} bytes: needs at least 5 bytes "
                    "(a 4-byte k and one byte of bits)"
                )
            if code == lib.PBA_PAIMON_ERR_GEOMETRY:
                raw = int.from_bytes(view[:4], "big", signed=True)
                limit = 8 * lib.PBA_PAIMON_MAX_BITSET_BYTES
                raise PaimonIndexError(
                    f"Paimon bloom filter has k={raw} for {8 * (view.nbytes - 4)} bits "
                    f"(k must be 1..number of bits, bits at most {limit})"
                )
            check(code, "BloomFilter64.from_bytes")
        self = cls.__new__(cls)
        self._num_bytes = int(nbytes[0])
        self._k = int(k[0])
        self._bits = ffi.new("uint8_t[]", self._num_bytes)
        ffi.memmove(self._bits, view[4:], self._num_bytes)
        return self

    @property
    def num_bits(self) -> int:
        """Size of the bit array in bits (always a multiple of 8)."""
        return self._num_bytes * 8

    @property
    def num_hash_functions(self) -> int:
        """k: the number of bit positions per value."""
        return self._k

    @property
    def bitset(self) -> bytes:
        """A copy of the bit array (bit i is byte i >> 3, bit i & 7)."""
        return bytes(ffi.buffer(self._bits, self._num_bytes))

    @property
    def bits_set(self) -> int:
        """Number of bits set (a fill ratio near 1/2 means the filter is at its design load)."""
        bits = np.frombuffer(ffi.buffer(self._bits, self._num_bytes), dtype=np.uint8)
        return int(np.unpackbits(bits).sum(dtype=np.int64))

    def bit_positions(self, h: int) -> list[int]:
        """The k bit positions of 64-bit hash ``h``, in probe order (j = 1..k)."""
        out = ffi.new("int32_t[]", self._k)
        status = lib.pba_paimon_positions(_hash_arg(h), self._num_bytes, self._k, out)
        check(status, "positions")
        return list(out)

    def add_hash(self, h: int) -> None:
        """Add a 64-bit hash (unsigned, or signed as a Java long)."""
        status = lib.pba_paimon_add_hash(self._bits, self._num_bytes, self._k, _hash_arg(h))
        check(status, "add")

    def test_hash(self, h: int) -> bool:
        """True when the filter may hold hash ``h``; False when it certainly does not."""
        r = lib.pba_paimon_test_hash(self._bits, self._num_bytes, self._k, _hash_arg(h))
        check(min(r, 0), "test")
        return bool(r)

    def add_hashes(self, hashes: Any) -> None:
        """Add many hashes (numpy uint64/int64 array or a sequence of ints) in one C call."""
        arr = _hash_array(hashes)
        ptr = ffi.from_buffer("uint64_t[]", arr) if arr.size else ffi.NULL
        status = lib.pba_paimon_add_hashes(self._bits, self._num_bytes, self._k, ptr, arr.size)
        check(status, "add_hashes")

    def test_hashes(self, hashes: Any) -> BoolArray:
        """Per-hash answers of :meth:`test_hash` as a numpy bool array."""
        arr = _hash_array(hashes)
        out = np.empty(arr.size, dtype=np.uint8)
        if arr.size:
            check(
                lib.pba_paimon_test_hashes(
                    self._bits,
                    self._num_bytes,
                    self._k,
                    ffi.from_buffer("uint64_t[]", arr),
                    arr.size,
                    ffi.from_buffer(out),
                ),
                "test_hashes",
            )
        return out.view(np.bool_)

    def add(self, values: Any, data_type: str, precision: int | None = None) -> int:
        """Hash (as :func:`paimon_hash`) and add every non-null value; returns how many.

        A batch that fails validation leaves the filter unchanged.

        Raises
        ------
        UnsupportedTypeError, ValueEncodingError
            As :func:`paimon_hash`.
        """
        ptype = parse_paimon_type(data_type, precision)
        total = 0
        added = ffi.new("size_t *")
        for batch in value_batches(values, ptype):
            status = lib.pba_paimon_add_values(self._bits, self._num_bytes, self._k, batch.c, added)
            check(status, "add")
            total += int(added[0])
        return total

    def might_contain(self, values: Any, data_type: str, precision: int | None = None) -> BoolArray:
        """Per-value probe: True where a value may be in the filter.

        A null answers True, as Paimon's reader keeps a file for an equality
        with a null literal. Signed zeros are probed as given (Paimon hashes
        0.0 and -0.0 differently); :func:`paimon_may_contain` probes both.

        Raises
        ------
        UnsupportedTypeError, ValueEncodingError
            As :func:`paimon_hash`.
        """
        ptype = parse_paimon_type(data_type, precision)
        parts = []
        for batch in value_batches(values, ptype):
            out = np.empty(batch.n, dtype=np.uint8)
            ptr = ffi.from_buffer(out) if batch.n else ffi.NULL
            check(
                lib.pba_paimon_test_values(
                    self._bits,
                    self._num_bytes,
                    self._k,
                    batch.c,
                    ptr,
                    batch.n,
                ),
                "might_contain",
            )
            parts.append(out.view(np.bool_))
        if not parts:
            return np.empty(0, dtype=np.bool_)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def to_bytes(self) -> bytes:
        """Serialize as Paimon does: k (int32 big-endian) then the bit array."""
        out = bytearray(4 + self._num_bytes)
        check(
            lib.pba_paimon_serialize(
                self._bits, self._num_bytes, self._k, ffi.from_buffer(out), len(out)
            ),
            "to_bytes",
        )
        return bytes(out)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BloomFilter64):
            return NotImplemented
        return self._k == other._k and self.bitset == other.bitset

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"BloomFilter64(num_bits={self.num_bits}, num_hash_functions={self._k})"
