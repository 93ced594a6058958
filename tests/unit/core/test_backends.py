"""SIMD dispatch: which backend runs, and AVX2 and scalar agree bit for bit."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pybloom_async import SplitBlockBloomFilter, hash_values, simd_backend
from pybloom_async._native import lib

AVX2 = bool(lib.pba_avx2_available())
needs_avx2 = pytest.mark.skipif(not AVX2, reason="this CPU/OS cannot run AVX2")


@contextmanager
def backend(name: str) -> Iterator[None]:
    before = simd_backend()
    assert lib.pba_set_backend(name.encode()) == 0
    try:
        yield
    finally:
        lib.pba_set_backend(before.encode())


def test_backend_reports_what_load_time_dispatch_chose() -> None:
    forced = os.environ.get("PYBLOOM_ASYNC_SIMD") == "scalar"
    assert simd_backend() == ("avx2" if AVX2 and not forced else "scalar")


@pytest.mark.parametrize(("env", "expected"), [("scalar", "scalar"), ("", "avx2")])
def test_environment_forces_the_backend_at_load(env: str, expected: str) -> None:
    if expected == "avx2" and not AVX2:
        expected = "scalar"
    code = "import pybloom_async; print(pybloom_async.simd_backend())"
    environ = {k: v for k, v in os.environ.items() if k != "PYBLOOM_ASYNC_SIMD"}
    if env:
        environ["PYBLOOM_ASYNC_SIMD"] = env
    out = subprocess.run(
        [sys.executable, "-c", code], env=environ, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == expected


def test_unknown_backend_is_refused() -> None:
    assert lib.pba_set_backend(b"avx512") == lib.PBA_ERR_ARG
    assert simd_backend() in ("avx2", "scalar")


def run_both(
    num_bytes: int, inserts: np.ndarray, probes: np.ndarray
) -> list[tuple[bytes, list[bool], int]]:
    results = []
    for name in ("scalar", "avx2"):
        with backend(name):
            f = SplitBlockBloomFilter(num_bytes)
            f.insert_hashes(inserts)
            answers = f.check_hashes(probes).tolist()
            results.append((bytes(f.bitset), answers, f.count_hashes(probes)))
    return results


@needs_avx2
@given(
    st.integers(5, 21).map(lambda e: 1 << e),
    st.lists(st.integers(0, 2**64 - 1), max_size=300),
    st.lists(st.integers(0, 2**64 - 1), max_size=300),
)
@settings(max_examples=150, deadline=None)
def test_avx2_and_scalar_agree(num_bytes: int, inserts: list[int], probes: list[int]) -> None:
    a = np.array(inserts, dtype=np.uint64)
    p = np.array(inserts + probes, dtype=np.uint64)
    scalar, avx2 = run_both(num_bytes, a, p)
    assert scalar == avx2
    assert all(scalar[1][: len(inserts)])


@needs_avx2
@pytest.mark.parametrize("num_bytes", [4 << 20, 32 << 20])
def test_avx2_and_scalar_agree_on_prefetching_sizes(num_bytes: int) -> None:
    # Filters from 4 MiB take the prefetching loops; check them and their tails.
    rng = np.random.default_rng(num_bytes)
    for n in (0, 1, 15, 16, 17, 100_003):
        inserts = rng.integers(0, 2**64, size=n, dtype=np.uint64)
        probes = np.concatenate([inserts, rng.integers(0, 2**64, size=n, dtype=np.uint64)])
        scalar, avx2 = run_both(num_bytes, inserts, probes)
        assert scalar == avx2
        assert all(scalar[1][:n])


@needs_avx2
@given(st.lists(st.text(max_size=20), max_size=200), st.integers(5, 16).map(lambda e: 1 << e))
@settings(max_examples=60, deadline=None)
def test_fused_hash_paths_agree(words: list[str], num_bytes: int) -> None:
    out = []
    for name in ("scalar", "avx2"):
        with backend(name):
            f = SplitBlockBloomFilter(num_bytes)
            f.insert(words, "BYTE_ARRAY")
            out.append(
                (
                    bytes(f.bitset),
                    f.check_many(words + ["?" + w for w in words], "BYTE_ARRAY").tolist(),
                )
            )
    assert out[0] == out[1]


@needs_avx2
@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=70), st.sampled_from(["INT64", "INT32",
       "DOUBLE", "FLOAT"]))  # fmt: skip
@settings(max_examples=150, deadline=None)
def test_vectorised_fixed_width_hashing_agrees(values: list[int], ptype: str) -> None:
    """The AVX2 XXH64 of 4- and 8-byte values equals the scalar one, tails included."""
    dtype = {"INT64": np.int64, "INT32": np.int32, "DOUBLE": np.float64, "FLOAT": np.float32}[ptype]
    raw = np.array(values, dtype=np.int64).astype(np.int32 if dtype in (np.int32, np.float32)
                                                  else np.int64)  # fmt: skip
    arr = raw.view(dtype)
    got = []
    for name in ("scalar", "avx2"):
        with backend(name):
            got.append(hash_values(arr, ptype).tolist())
    assert got[0] == got[1]
