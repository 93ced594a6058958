"""The Split Block Bloom Filter of the Parquet format, backed by the C core."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from .._native import check, ffi, lib
from ..checks import probability
from ..errors import (
    FilterSizeError,
    InvalidArgumentError,
    InvalidFilterError,
    UnsupportedTypeError,
    ValueEncodingError,
)
from ..types import PhysicalType
from .columns import iter_columns
from .sizes import DEFAULT_MAX_BYTES, MIN_BYTES, check_num_bytes, decode_header, optimal_num_bytes

_UINT64 = np.dtype(np.uint64)


def _hash_buffer(hashes: Any) -> tuple[Any, int, Any]:
    """A C view of uint64 hashes: (pointer, count, owner). Copies only if needed."""
    if (
        type(hashes) is np.ndarray
        and hashes.dtype == _UINT64
        and hashes.ndim == 1
        and hashes.flags.c_contiguous
    ):
        # The usual case (hash_values' output, or a slice of it; pruning probes one per
        # row group and value list): usable as it is.
        ptr = ffi.from_buffer("uint64_t[]", hashes) if hashes.size else ffi.NULL
        return ptr, int(hashes.size), hashes
    if isinstance(hashes, np.ndarray):
        arr = hashes
        if arr.dtype == np.int64:
            arr = arr.view(np.uint64)
        elif arr.dtype != np.uint64:
            raise UnsupportedTypeError(f"hashes must be uint64 (or int64), not {arr.dtype}")
        arr = np.ascontiguousarray(arr.reshape(-1))
    else:
        try:
            mv = memoryview(hashes)
        except TypeError:
            arr = np.asarray(list(hashes), dtype=np.uint64)
        else:
            if mv.format not in ("Q", "<Q", "=Q", "L", "q", "<q", "=q", "l") or mv.itemsize != 8:
                raise UnsupportedTypeError(
                    f"hashes buffer must hold 64-bit integers, not format {mv.format!r}"
                )
            arr = np.frombuffer(mv, dtype=np.uint64) if mv.contiguous else np.array(mv, np.uint64)
    ptr = ffi.from_buffer("uint64_t[]", arr) if arr.size else ffi.NULL
    return ptr, int(arr.size), arr


class SplitBlockBloomFilter:
    """A Parquet Split Block Bloom Filter (SBBF), bit-compatible with the spec.

    The bitset lives in memory owned by the C core (64-byte aligned, on huge
    pages when large). Batch methods run in C with the GIL released.

    Thread safety: any number of threads may call the ``check*`` methods of one
    filter at once. ``insert*``, ``fold_to_fpp`` and ``|=`` modify the filter
    and must not run concurrently with any other call on the same filter.

    Parameters
    ----------
    num_bytes:
        Bitset size: a power of two from 32 bytes to ``max_bytes``.
    max_bytes:
        The size limit (default 128 MiB).

    Raises
    ------
    FilterSizeError, FilterTooLargeError
        ``num_bytes`` is not a valid size.
    """

    __slots__ = ("__weakref__", "_bits", "_num_bytes", "_view")

    def __init__(self, num_bytes: int, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        n = check_num_bytes(num_bytes, max_bytes)
        self._bits = self._alloc(n)
        self._num_bytes = n
        self._view: Any = None  # the buffer _bits points into, for a view (see view_of)

    @staticmethod
    def _alloc(num_bytes: int) -> Any:
        ptr = lib.pba_sbbf_alloc(num_bytes)
        if ptr == ffi.NULL:
            raise MemoryError(f"cannot allocate a Bloom filter of {num_bytes} bytes")
        return ffi.gc(ptr, lib.pba_sbbf_free, size=num_bytes)

    # ---- construction ----------------------------------------------------------

    @classmethod
    def for_ndv(
        cls, ndv: int, fpp: float = 0.01, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> SplitBlockBloomFilter:
        """A filter sized by the Parquet spec for ``ndv`` distinct values at ``fpp``.

        Bits per value = -8 / ln(1 - fpp^(1/8)); the byte count is rounded up to
        a power of two and clamped to [32, max_bytes].

        Raises
        ------
        ValueError
            ``ndv`` is negative or ``fpp`` is not in (0, 1).
        """
        return cls(optimal_num_bytes(ndv, fpp, max_bytes), max_bytes=max_bytes)

    @classmethod
    def from_bytes(cls, buf: Any, *, max_bytes: int = DEFAULT_MAX_BYTES) -> SplitBlockBloomFilter:
        """Load a filter as a Parquet file stores it: thrift header, then bitset.

        The header is validated (BLOCK / XXHASH / UNCOMPRESSED, numBytes a power
        of two within ``max_bytes``) and the buffer must hold exactly the
        announced bitset after it, all before anything is allocated.

        Raises
        ------
        InvalidFilterError, FilterSizeError, FilterTooLargeError
        """
        view = memoryview(buf).cast("B") if not isinstance(buf, bytes) else memoryview(buf)
        header_len, num_bytes = decode_header(view, max_bytes)
        available = len(view) - header_len
        if available < num_bytes:
            raise InvalidFilterError(
                f"Bloom filter is truncated: the header announces {num_bytes} bytes of "
                f"bitset but only {available} follow it"
            )
        if available > num_bytes:
            raise InvalidFilterError(
                f"Bloom filter buffer is {len(view)} bytes but its header ({header_len} B) "
                f"announces a bitset of {num_bytes} bytes"
            )
        return cls.from_bitset(view[header_len:], max_bytes=max_bytes)

    @classmethod
    def from_bitset(
        cls, bitset: Any, *, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> SplitBlockBloomFilter:
        """A filter holding a copy of a raw bitset (no header).

        Raises
        ------
        FilterSizeError, FilterTooLargeError
            The bitset's length is not a valid filter size.
        """
        view = memoryview(bitset).cast("B")
        self = cls(len(view), max_bytes=max_bytes)
        ffi.memmove(self._bits, view, len(view))
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as its bitset, so that filters travel between processes (Spark tasks).
        return (_restore, (bytes(self.bitset), max(self._num_bytes, DEFAULT_MAX_BYTES)))

    @classmethod
    def view_of(
        cls,
        buffer: bytes,
        offset: int = 0,
        num_bytes: int | None = None,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> SplitBlockBloomFilter:
        """A filter over the bitset at ``buffer[offset : offset + num_bytes]``, in place.

        No copy: the buffer (immutable ``bytes``, as reads return) is kept alive. For
        probing bytes just read: the kernels read any alignment. The first change to it
        (an insert, a fold, a union, ``clear``) copies the bitset into memory of its own.

        Raises
        ------
        FilterSizeError, FilterTooLargeError
            ``num_bytes`` (default: the rest of the buffer) is not a valid filter size.
        InvalidArgumentError
            The range lies outside the buffer, or the buffer is not ``bytes``.
        """
        if not isinstance(buffer, bytes):
            raise InvalidArgumentError(
                f"a filter view needs bytes, not {type(buffer).__name__}", value=buffer
            )
        size = len(buffer) - offset if num_bytes is None else num_bytes
        if not 0 <= offset <= offset + size <= len(buffer):
            raise InvalidArgumentError(
                f"bytes [{offset}, {offset + size}) lie outside a buffer of {len(buffer)}"
            )
        n = check_num_bytes(size, max_bytes)
        self = cls.__new__(cls)
        base = ffi.from_buffer(buffer)
        self._bits = ffi.cast("uint8_t *", base) + offset
        self._num_bytes = n
        self._view = base  # kept alive while the filter views it
        return self

    def _own(self) -> None:
        """Before a change: a view's bitset is copied into memory of its own."""
        if self._view is not None:
            bits = self._alloc(self._num_bytes)
            ffi.memmove(bits, self._bits, self._num_bytes)
            self._bits, self._view = bits, None

    def owned(self) -> SplitBlockBloomFilter:
        """This filter, or for a view a copy with a bitset of its own (to keep it without
        keeping the buffer it views)."""
        return self if self._view is None else self.copy()

    def copy(self) -> SplitBlockBloomFilter:
        """An independent copy of this filter."""
        other = SplitBlockBloomFilter(self._num_bytes, max_bytes=max(self._num_bytes, MIN_BYTES))
        ffi.memmove(other._bits, self._bits, self._num_bytes)
        return other

    # ---- properties -----------------------------------------------------------

    @property
    def num_bytes(self) -> int:
        """Size of the bitset in bytes."""
        return self._num_bytes

    @property
    def num_blocks(self) -> int:
        """Number of 32-byte blocks."""
        return self._num_bytes // 32

    @property
    def bitset(self) -> memoryview:
        """A read-only view of the bitset (valid while the filter is alive)."""
        return memoryview(ffi.buffer(self._bits, self._num_bytes)).toreadonly()

    @property
    def popcount(self) -> int:
        """Number of bits set."""
        return int(lib.pba_sbbf_popcount(self._bits, self._num_bytes))

    @property
    def fill_ratio(self) -> float:
        """Fraction of bits set."""
        return self.popcount / (self._num_bytes * 8)

    def estimated_ndv(self) -> float:
        """Estimate of the number of distinct values inserted, from the fill ratio.

        Each insert picks one block and sets one of the 32 bits of each of its
        8 words, so a given bit is set by one insert with probability
        1/(32 * blocks) = 8/bits and stays clear after n inserts with
        probability (1 - 8/bits)^n; solving for n gives the estimate.
        """
        bits = self._num_bytes * 8
        set_bits = self.popcount
        if set_bits >= bits:
            return math.inf
        return math.log1p(-set_bits / bits) / math.log1p(-8.0 / bits)

    def estimated_fpp(self, ndv: float | None = None) -> float:
        """Expected false-positive rate holding ``ndv`` values (default: estimated).

        Uses the exact SBBF model: values per block are Poisson distributed, and
        a block with k values answers a foreign probe with (1 - (31/32)^k)^8.
        """
        n = self.estimated_ndv() if ndv is None else float(ndv)
        if math.isinf(n):
            return 1.0
        return float(lib.pba_sbbf_expected_fpp(self._num_bytes, n))

    # ---- hashes ---------------------------------------------------------------

    def insert_hash(self, h: int) -> None:
        """Insert one 64-bit hash."""
        self._own()
        lib.pba_sbbf_insert_hash(self._bits, self._num_bytes, _u64(h))

    def check_hash(self, h: int) -> bool:
        """Whether a 64-bit hash may be in the filter (False: certainly not)."""
        return bool(lib.pba_sbbf_check_hash(self._bits, self._num_bytes, _u64(h)))

    def insert_hashes(self, hashes: Any) -> None:
        """Insert many hashes: any buffer of uint64 (or int64), without a copy."""
        self._own()
        ptr, n, _owner = _hash_buffer(hashes)
        if n:
            lib.pba_sbbf_insert_hashes(self._bits, self._num_bytes, ptr, n)

    def check_hashes(self, hashes: Any) -> npt.NDArray[np.bool_]:
        """Probe many hashes; returns one bool per hash."""
        ptr, n, _owner = _hash_buffer(hashes)
        out = np.zeros(n, dtype=np.bool_)
        if n:
            lib.pba_sbbf_check_hashes(
                self._bits, self._num_bytes, ptr, n, ffi.from_buffer("uint8_t[]", out)
            )
        return out

    def count_hashes(self, hashes: Any) -> int:
        """Number of hashes that may be in the filter."""
        ptr, n, _owner = _hash_buffer(hashes)
        return int(lib.pba_sbbf_count_hashes(self._bits, self._num_bytes, ptr, n)) if n else 0

    # ---- values ---------------------------------------------------------------

    def insert(
        self,
        values: Any,
        physical_type: PhysicalType | str | int,
        type_length: int | None = None,
    ) -> None:
        """Hash values by their PLAIN encoding and insert them; nulls are skipped.

        ``values`` may be a scalar, a sequence, a numpy array or a pyarrow
        (Chunked)Array; Arrow and numpy buffers already in PLAIN layout are
        read in place.

        Raises
        ------
        ValueEncodingError, UnsupportedTypeError
            A value does not fit the physical type exactly.
        """
        self._own()
        ptype = PhysicalType.coerce(physical_type)
        for col in iter_columns(values, ptype, type_length):
            check(lib.pba_sbbf_insert_column(self._bits, self._num_bytes, col.c), "insert")

    def check_many(
        self,
        values: Any,
        physical_type: PhysicalType | str | int,
        type_length: int | None = None,
    ) -> npt.NDArray[np.bool_]:
        """Probe many values; one bool per input value (False for nulls).

        Raises
        ------
        ValueEncodingError, UnsupportedTypeError
            A value does not fit the physical type exactly.
        """
        ptype = PhysicalType.coerce(physical_type)
        parts = []
        for col in iter_columns(values, ptype, type_length):
            out = np.zeros(col.n, dtype=np.bool_)
            if col.n:
                check(
                    lib.pba_sbbf_check_column(
                        self._bits, self._num_bytes, col.c, ffi.from_buffer("uint8_t[]", out)
                    ),
                    "check",
                )
            parts.append(out)
        if not parts:
            return np.zeros(0, dtype=np.bool_)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def check(
        self,
        value: Any,
        physical_type: PhysicalType | str | int,
        type_length: int | None = None,
    ) -> bool:
        """Whether one value may be in the filter (False: certainly not)."""
        if isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.ndim > 0):
            raise ValueEncodingError("check() takes one value; use check_many()", value=value)
        result = self.check_many([value], physical_type, type_length)
        return bool(result[0])

    # ---- serialisation ----------------------------------------------------------

    def header_bytes(self) -> bytes:
        """The thrift-compact ``BloomFilterHeader`` a Parquet file stores before the bitset."""
        out = ffi.new("uint8_t[32]")
        n = lib.pba_bloom_header_encode(self._num_bytes, out)
        check(n if n < 0 else 0, "header")
        return bytes(ffi.buffer(out, n))

    def to_bytes(self) -> bytes:
        """Header + bitset, exactly as stored at ``bloom_filter_offset`` in a Parquet file."""
        return self.header_bytes() + bytes(ffi.buffer(self._bits, self._num_bytes))

    # ---- whole-filter operations --------------------------------------------------

    def fold_to_fpp(self, ndv: float, fpp: float) -> SplitBlockBloomFilter:
        """Halve the filter while it still meets ``fpp`` for ``ndv`` distinct values.

        Block j of a halved filter is the OR of blocks 2j and 2j+1, which is
        where the spec's block index sends every hash after halving, so every
        inserted value stays in. Modifies the filter in place and returns it.

        Raises
        ------
        ValueError
            ``ndv`` is negative or ``fpp`` is not in (0, 1).
        """
        self._own()
        probability("fpp", fpp, error=ValueEncodingError)
        if not ndv >= 0:
            raise ValueEncodingError("ndv must be >= 0", value=ndv)
        steps = int(lib.pba_sbbf_fold_steps(self._num_bytes, float(ndv), float(fpp)))
        if steps:
            new_size = int(lib.pba_sbbf_fold(self._bits, self._num_bytes, steps))
            smaller = self._alloc(new_size)
            ffi.memmove(smaller, self._bits, new_size)
            self._bits, self._num_bytes = smaller, new_size
        return self

    def clear(self) -> None:
        """Remove every value (clear all bits), keeping the size."""
        self._own()
        lib.pba_sbbf_clear(self._bits, self._num_bytes)

    def __ior__(self, other: SplitBlockBloomFilter) -> SplitBlockBloomFilter:
        if not isinstance(other, SplitBlockBloomFilter):
            return NotImplemented
        if other._num_bytes != self._num_bytes:
            raise FilterSizeError(
                f"cannot union filters of {self._num_bytes} and {other._num_bytes} bytes"
            )
        self._own()
        lib.pba_sbbf_union(self._bits, other._bits, self._num_bytes)
        return self

    def union(self, other: SplitBlockBloomFilter) -> SplitBlockBloomFilter:
        """A new filter holding every value of both (sizes must be equal)."""
        result = self.copy()
        result |= other
        return result

    def __or__(self, other: SplitBlockBloomFilter) -> SplitBlockBloomFilter:
        if not isinstance(other, SplitBlockBloomFilter):
            return NotImplemented
        return self.union(other)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SplitBlockBloomFilter):
            return NotImplemented
        return self._num_bytes == other._num_bytes and bytes(self.bitset) == bytes(other.bitset)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return (
            f"SplitBlockBloomFilter(num_bytes={self._num_bytes}, fill_ratio={self.fill_ratio:.4f})"
        )


def _u64(h: int) -> int:
    if isinstance(h, (np.integer,)):
        h = int(h)
    if not isinstance(h, int) or isinstance(h, bool):
        raise UnsupportedTypeError(f"a hash is an int, not {type(h).__name__}")
    if -(2**63) <= h < 0:
        return h + 2**64  # an int64 view of the same 64 bits
    if not 0 <= h < 2**64:
        raise ValueEncodingError("a hash must fit in 64 bits", value=h)
    return h


def _restore(bitset: bytes, max_bytes: int) -> SplitBlockBloomFilter:
    """A pickled filter back from its bitset (:meth:`SplitBlockBloomFilter.__reduce__`)."""
    return SplitBlockBloomFilter.from_bitset(bitset, max_bytes=max_bytes)
