"""Hashing: XXH64 golden vectors, and the PLAIN encoding of every physical type.

The `xxhash` package is the oracle: for every input we hash the PLAIN bytes
it should produce with python-xxhash and compare.
"""

from __future__ import annotations

import random
import struct

import numpy as np
import pyarrow as pa
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from pybloom_async import (
    PhysicalType,
    PyBloomError,
    UnsupportedTypeError,
    ValueEncodingError,
    hash_values,
    xxh64,
)
from pybloom_async._native import ffi, lib


def oracle(items: list[bytes]) -> list[int]:
    return [xxhash.xxh64_intdigest(b) for b in items]


def test_xxh64_golden_vectors() -> None:
    # python-xxhash's and xxHash's own test vectors.
    assert xxh64(b"") == 17241709254077376921
    assert xxh64(b"abc") == 4952883123889572249
    assert xxh64(b"a", seed=0) == xxhash.xxh64_intdigest(b"a")


def test_xxh64_every_length_0_to_300_matches_oracle() -> None:
    rng = random.Random(1234)
    for n in range(301):
        data = rng.randbytes(n)
        assert xxh64(data) == xxhash.xxh64_intdigest(data), n
        seed = rng.getrandbits(64)
        assert xxh64(data, seed) == xxhash.xxh64_intdigest(data, seed=seed), n


def test_xxh64_rejects_str_and_bad_seed() -> None:
    with pytest.raises(UnsupportedTypeError):
        xxh64("text")  # type: ignore[arg-type]
    with pytest.raises(ValueEncodingError):
        xxh64(b"", seed=-1)


@given(st.binary(max_size=300), st.integers(0, 2**64 - 1))
@settings(max_examples=200, deadline=None)
def test_xxh64_random(data: bytes, seed: int) -> None:
    assert xxh64(data, seed) == xxhash.xxh64_intdigest(data, seed=seed)


# ---- per physical type ------------------------------------------------------


def test_int32_and_int64_little_endian() -> None:
    vals = [0, 1, -1, 2**31 - 1, -(2**31), 12345]
    expect32 = oracle([struct.pack("<i", v) for v in vals])
    assert hash_values(vals, "INT32").tolist() == expect32
    assert hash_values(np.array(vals, dtype=np.int32), PhysicalType.INT32).tolist() == expect32
    assert hash_values(pa.array(vals, pa.int32()), 1).tolist() == expect32
    vals64 = [*vals, 2**63 - 1, -(2**63)]
    expect64 = oracle([struct.pack("<q", v) for v in vals64])
    assert hash_values(vals64, "int64").tolist() == expect64
    assert hash_values(np.array(vals64, dtype=np.int64), "INT64").tolist() == expect64
    # Narrower integer inputs widen exactly.
    small = [0, 1, -1, 32767, -32768]
    assert hash_values(np.array(small, dtype=np.int16), "INT64").tolist() == oracle(
        [struct.pack("<q", v) for v in small]
    )


def test_unsigned_inputs_keep_their_bits() -> None:
    # Parquet stores UINT_32 / UINT_64 as the same bits in INT32 / INT64.
    u32 = np.array([0, 3_000_000_000, 2**32 - 1], dtype=np.uint32)
    assert hash_values(u32, "INT32").tolist() == oracle([struct.pack("<I", int(v)) for v in u32])
    u64 = np.array([2**64 - 1, 5], dtype=np.uint64)
    assert hash_values(u64, "INT64").tolist() == oracle([struct.pack("<Q", int(v)) for v in u64])


def test_float_and_double() -> None:
    vals = [0.0, -0.0, 1.5, -2.25, float("inf"), 3.4028234663852886e38]
    assert hash_values(vals, "FLOAT").tolist() == oracle([struct.pack("<f", v) for v in vals])
    assert hash_values(vals, "DOUBLE").tolist() == oracle([struct.pack("<d", v) for v in vals])
    f32 = np.array(vals, dtype=np.float32)
    assert hash_values(f32, "FLOAT").tolist() == oracle([v.tobytes() for v in f32])
    # -0.0 and 0.0 differ: writers do not normalise, so neither do we.
    a, b = hash_values([0.0, -0.0], "DOUBLE")
    assert a != b


def test_float_inexact_values_raise() -> None:
    with pytest.raises(ValueEncodingError, match="exact FLOAT"):
        hash_values([0.1], "FLOAT")
    with pytest.raises(ValueEncodingError):
        hash_values(np.array([0.1]), "FLOAT")
    with pytest.raises(ValueEncodingError):
        hash_values([2**53 + 1], "DOUBLE")
    with pytest.raises(ValueEncodingError):
        hash_values(np.array([2**24 + 1], dtype=np.int64), "FLOAT")
    # Exactly representable integers are fine.
    assert hash_values([2**24], "FLOAT").tolist() == oracle([struct.pack("<f", 2.0**24)])


def test_int_range_and_type_errors() -> None:
    with pytest.raises(ValueEncodingError, match="outside the INT32 range"):
        hash_values([2**31], "INT32")
    with pytest.raises(ValueEncodingError):
        hash_values(np.array([2**40], dtype=np.int64), "INT32")
    with pytest.raises(ValueEncodingError):
        hash_values([2**64], "INT64")
    with pytest.raises(ValueEncodingError, match="integers"):
        hash_values([1.0], "INT64")
    with pytest.raises(UnsupportedTypeError):
        hash_values(np.array([1.0]), "INT64")
    with pytest.raises(UnsupportedTypeError):
        hash_values([1], "NOT_A_TYPE")


def test_boolean_one_byte() -> None:
    assert hash_values([True, False], "BOOLEAN").tolist() == oracle([b"\x01", b"\x00"])
    assert hash_values(np.array([True, False]), "BOOLEAN").tolist() == oracle([b"\x01", b"\x00"])
    assert hash_values(pa.array([True, None, False]), "BOOLEAN").tolist() == oracle(
        [b"\x01", b"\x00"]
    )
    with pytest.raises(ValueEncodingError):
        hash_values([2], "BOOLEAN")


def test_byte_array_without_length_prefix() -> None:
    vals = ["", "a", "héllo wörld", "x" * 1000]
    expect = oracle([v.encode() for v in vals])
    assert hash_values(vals, "BYTE_ARRAY").tolist() == expect
    assert hash_values([v.encode() for v in vals], "BYTE_ARRAY").tolist() == expect
    for typ in (pa.string(), pa.large_string(), pa.string_view()):
        assert hash_values(pa.array(vals, typ), "BYTE_ARRAY").tolist() == expect
    for typ in (pa.binary(), pa.large_binary()):
        arr = pa.array([v.encode() for v in vals], typ)
        assert hash_values(arr, "BYTE_ARRAY").tolist() == expect
    dict_arr = pa.array(vals * 2).dictionary_encode()
    assert hash_values(dict_arr, "BYTE_ARRAY").tolist() == expect * 2


def test_arrow_nulls_slices_and_chunks() -> None:
    arr = pa.array(["a", None, "b", "c", None, "d"])
    assert hash_values(arr, "BYTE_ARRAY").tolist() == oracle([b"a", b"b", b"c", b"d"])
    # A slice starts mid-buffer: offsets and validity bits must follow it.
    assert hash_values(arr.slice(2, 3), "BYTE_ARRAY").tolist() == oracle([b"b", b"c"])
    ints = pa.array([1, None, 3, 4, None, 6, 7, 8, 9, 10], pa.int64())
    assert hash_values(ints.slice(3, 6), "INT64").tolist() == oracle(
        [struct.pack("<q", v) for v in (4, 6, 7, 8, 9)]
    )
    chunked = pa.chunked_array([pa.array([1, 2], pa.int32()), pa.array([None, 4], pa.int32())])
    assert hash_values(chunked, "INT32").tolist() == oracle(
        [struct.pack("<i", v) for v in (1, 2, 4)]
    )
    # An Arrow int8 column converts through numpy, nulls still skipped.
    assert hash_values(pa.array([1, None, -3], pa.int8()), "INT32").tolist() == oracle(
        [struct.pack("<i", v) for v in (1, -3)]
    )


def test_arrow_temporal_types_share_physical_layout() -> None:
    import datetime as dt

    dates = pa.array([dt.date(1970, 1, 2), dt.date(2024, 2, 29)], pa.date32())
    days = [1, (dt.date(2024, 2, 29) - dt.date(1970, 1, 1)).days]
    assert hash_values(dates, "INT32").tolist() == oracle([struct.pack("<i", d) for d in days])
    ts = pa.array([0, 1_700_000_000_000_000], pa.timestamp("us", tz="UTC"))
    assert hash_values(ts, "INT64").tolist() == oracle(
        [struct.pack("<q", v) for v in (0, 1_700_000_000_000_000)]
    )


def test_fixed_len_byte_array_and_int96() -> None:
    vals = [bytes(range(16)), b"\xff" * 16]
    assert hash_values(vals, "FIXED_LEN_BYTE_ARRAY", 16).tolist() == oracle(vals)
    arr = pa.array(vals, pa.binary(16))
    assert hash_values(arr, "FIXED_LEN_BYTE_ARRAY", type_length=16).tolist() == oracle(vals)
    np_vals = np.frombuffer(b"".join(vals), dtype="V16")
    assert hash_values(np_vals, "FIXED_LEN_BYTE_ARRAY", 16).tolist() == oracle(vals)
    i96 = [b"\x00" * 12, bytes(range(12))]
    assert hash_values(i96, "INT96").tolist() == oracle(i96)
    with pytest.raises(ValueEncodingError, match="exactly 16 bytes"):
        hash_values([b"short"], "FIXED_LEN_BYTE_ARRAY", 16)
    with pytest.raises(UnsupportedTypeError, match="type_length"):
        hash_values(vals, "FIXED_LEN_BYTE_ARRAY")
    with pytest.raises(UnsupportedTypeError):
        hash_values(pa.array(vals, pa.binary(16)), "FIXED_LEN_BYTE_ARRAY", 8)


def test_empty_inputs() -> None:
    for ptype in ("INT32", "INT64", "DOUBLE", "BYTE_ARRAY"):
        assert hash_values([], ptype).size == 0
    assert hash_values(pa.array([], pa.string()), "BYTE_ARRAY").size == 0
    assert hash_values(pa.array([None, None], pa.int64()), "INT64").size == 0


def test_c_core_rejects_bad_offsets() -> None:
    # Offsets that decrease or point past the data must be refused before any
    # byte is read (a pba_column built by a C caller, not by this package).
    data = ffi.new("char[]", b"abcdef")
    for offs in ([0, 3, 2], [0, 3, 100], [-1, 2, 3]):
        offsets = ffi.new("int32_t[]", offs)
        col = ffi.new("pba_column *")
        col.physical_type = int(PhysicalType.BYTE_ARRAY)
        col.n = 2
        col.data = data
        col.data_len = 6
        col.offsets = offsets
        out = ffi.new("uint64_t[2]")
        n_out = ffi.new("size_t *")
        assert lib.pba_hash_column(col, out, n_out) == lib.PBA_ERR_OFFSETS
    col = ffi.new("pba_column *")
    col.physical_type = 99
    col.n = 1
    col.data = data
    assert lib.pba_hash_column(col, ffi.new("uint64_t[1]"), ffi.new("size_t *")) == lib.PBA_ERR_ARG


def test_errors_are_in_the_hierarchy() -> None:
    for bad in (lambda: hash_values([object()], "BYTE_ARRAY"), lambda: hash_values(["x"], "INT64")):
        with pytest.raises(PyBloomError):
            bad()
