"""Benchmark: Paimon's BloomFilter64 next to the Parquet SBBF at the same bits per value.

For int64 keys (numpy and pyarrow arrays), short strings (a pyarrow string
array, 8..24 ASCII letters) and pre-hashed uint64 values, it reports ns per
value to hash + insert and to hash + test, for

* ``BloomFilter64(n, fpp)`` with fpp chosen so that Paimon's sizing gives
  exactly the target bits per value (``fpp = exp(-bits * ln(2)^2)``), and
* ``SplitBlockBloomFilter(n * bits / 8)`` (a power of two for the default n),

plus the false-positive rate each reaches on keys that were never inserted
(fixed seed) and the rate its own model predicts. Test timings are split into
probes of absent keys (what pruning mostly sees; BloomFilter64 stops at the
first clear bit) and of present keys (every bit read). Medians of ``--reps``
runs. Run: ``.venv/bin/python bench/bench_paimon.py [--n N] [--reps R]``
"""

from __future__ import annotations

import argparse
import math
import platform
import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
from record import cpu_model

from pybloom_async import SplitBlockBloomFilter
from pybloom_async._native import ffi, lib
from pybloom_async.paimon.filter import BloomFilter64

BITS_PER_VALUE = (8, 16)


def median_ns(
    fn: Callable[[], object], n: int, reps: int, setup: Callable[[], object] | None = None
) -> float:
    """Median ns per value of ``fn`` over ``reps`` runs; ``setup`` runs untimed before each."""
    samples = []
    for _ in range(reps):
        if setup is not None:
            setup()
        t0 = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - t0) / n)
    return statistics.median(samples)


def short_strings(rng: np.random.Generator, n: int, first: bytes) -> pa.Array:
    """n random strings of 8..24 letters starting with ``first`` (keeps sets disjoint)."""
    lengths = rng.integers(8, 25, size=n)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    letters = rng.integers(ord("a"), ord("z") + 1, size=int(offsets[-1]), dtype=np.uint8)
    letters[offsets[:-1]] = first[0]
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(letters))


class Paimon:
    """Adapter: BloomFilter64 sized for ``bits`` per value over ``n`` values."""

    name = "BloomFilter64"

    def __init__(self, n: int, bits: int) -> None:
        self.fpp = math.exp(-bits * math.log(2) ** 2)
        self.n = n
        self.f = BloomFilter64(n, self.fpp)

    def reset(self) -> None:
        self.f = BloomFilter64(self.n, self.fpp)

    def geometry(self) -> str:
        return f"{self.f.num_bits / self.n:.2f} b/v, k={self.f.num_hash_functions}"

    def expected_fpr(self) -> float:
        m, k = self.f.num_bits, self.f.num_hash_functions
        return (1 - math.exp(-k * self.n / m)) ** k

    def insert(self, values: Any, kind: str) -> None:
        if kind == "hash":
            self.f.add_hashes(values)
        else:
            self.f.add(values, "BIGINT" if kind == "int64" else "STRING")

    def test(self, values: Any, kind: str) -> Any:
        if kind == "hash":
            return self.f.test_hashes(values)
        return self.f.might_contain(values, "BIGINT" if kind == "int64" else "STRING")


class Sbbf:
    """Adapter: the Parquet Split Block Bloom Filter with ``n * bits / 8`` bytes."""

    name = "SBBF"

    def __init__(self, n: int, bits: int) -> None:
        self.n = n
        self.num_bytes = n * bits // 8
        self.f = SplitBlockBloomFilter(self.num_bytes)

    def reset(self) -> None:
        self.f.clear()

    def geometry(self) -> str:
        return f"{8 * self.num_bytes / self.n:.2f} b/v, k=8"

    def expected_fpr(self) -> float:
        return float(lib.pba_sbbf_expected_fpp(self.num_bytes, float(self.n)))

    def insert(self, values: Any, kind: str) -> None:
        if kind == "hash":
            self.f.insert_hashes(values)
        else:
            self.f.insert(values, "INT64" if kind == "int64" else "BYTE_ARRAY")

    def test(self, values: Any, kind: str) -> Any:
        if kind == "hash":
            return self.f.check_hashes(values)
        return self.f.check_many(values, "INT64" if kind == "int64" else "BYTE_ARRAY")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1 << 20, help="values inserted (and probed)")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=20240521)
    args = parser.parse_args()
    n, reps = args.n, args.reps
    if n < 32 or n & (n - 1):
        parser.error("--n must be a power of two >= 32 (SBBF sizes are powers of two)")
    rng = np.random.default_rng(args.seed)

    # Inserted keys are even, absent keys odd; strings differ in their first
    # letter: the absent sets never meet the inserted ones, so every "yes" on
    # them is a false positive.
    present_int = rng.integers(-(2**62), 2**62, size=n, dtype=np.int64) * 2
    absent_int = rng.integers(-(2**62), 2**62, size=n, dtype=np.int64) * 2 + 1
    present_str = short_strings(rng, n, b"a")
    absent_str = short_strings(rng, n, b"Q")
    present_hash = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    absent_hash = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    inputs = [
        ("int64", "numpy int64", present_int, absent_int),
        ("int64", "pyarrow int64", pa.array(present_int), pa.array(absent_int)),
        ("str", "pyarrow string", present_str, absent_str),
        ("hash", "uint64 hashes", present_hash, absent_hash),
    ]

    backend = ffi.string(lib.pba_simd_backend()).decode()
    print(
        f"# {cpu_model()}; {platform.python_implementation()} {platform.python_version()}; "
        f"SBBF backend {backend}"
    )
    print(
        f"# n = {n:,} values inserted, {n:,} absent probes, median of {reps} runs, seed {args.seed}"
    )
    header = (
        f"{'filter':<14} {'geometry':<18} {'input':<15} {'insert':>8} "
        f"{'test absent':>11} {'test present':>12} {'FPR':>8} {'model':>8}"
    )
    print(header)
    print(f"{'':<14} {'':<18} {'':<15} {'ns/val':>8} {'ns/val':>11} {'ns/val':>12}")
    print("-" * len(header))
    for bits in BITS_PER_VALUE:
        for make in (Paimon, Sbbf):
            filt = make(n, bits)
            for kind, label, present, absent in inputs:
                measure(filt, kind, label, present, absent, n, reps)
        print()


def measure(
    filt: Paimon | Sbbf, kind: str, label: str, present: Any, absent: Any, n: int, reps: int
) -> None:
    """Time insert and both tests of one filter on one input and print its row."""
    ins = median_ns(partial(filt.insert, present, kind), n, reps, filt.reset)
    t_absent = median_ns(partial(filt.test, absent, kind), n, reps)
    t_present = median_ns(partial(filt.test, present, kind), n, reps)
    if not bool(np.asarray(filt.test(present, kind)).all()):
        raise AssertionError(f"{filt.name}: false negative on {label}")
    fpr = float(np.asarray(filt.test(absent, kind)).mean())
    print(
        f"{filt.name:<14} {filt.geometry():<18} {label:<15} {ins:>8.2f} "
        f"{t_absent:>11.2f} {t_present:>12.2f} {fpr:>8.4%} "
        f"{filt.expected_fpr():>8.4%}",
        flush=True,
    )


if __name__ == "__main__":
    main()
