"""Python-level benchmark of pybloom-async's filter API.

Reports ns per element (and millions of values per second) for insert and
probe of precomputed hashes, and for hash + insert / hash + probe of numpy
int64 arrays and short strings (a pyarrow string array), on both backends, at
32 KiB, 1 MiB and 128 MiB. Medians of several repetitions; output lines have
the same shape as the C and peer harnesses:

    peer=pybloom-py backend=avx2 op=hash_probe_int64 size=1048576 ns_per_elem=4.10 mvals_per_s=243.9

Run: ``.venv/bin/python bench/bench_python.py [--elements N] [--reps R]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial

import numpy as np
import pyarrow as pa

from pybloom_async import SplitBlockBloomFilter
from pybloom_async._native import lib

SIZES = (32 << 10, 1 << 20, 128 << 20)


def timed(
    fn: Callable[[], object], n: int, reps: int, setup: Callable[[], object] | None = None
) -> float:
    """Median ns per element of ``fn`` over ``reps`` runs (``setup`` untimed)."""
    samples = []
    for _ in range(reps):
        if setup is not None:
            setup()
        t0 = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - t0) / n)
    return statistics.median(samples)


def report(backend: str, op: str, size: int, ns: float) -> None:
    print(
        f"peer=pybloom-py backend={backend} op={op} size={size} "
        f"ns_per_elem={ns:.3f} mvals_per_s={1e3 / ns:.1f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=1 << 22)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    n, reps = args.elements, args.reps
    rng = np.random.default_rng(42)
    hashes = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    probes = np.where(
        rng.random(n) < 0.5,
        hashes[rng.integers(0, n, n)],
        rng.integers(0, 2**64, size=n, dtype=np.uint64),
    )
    ints = rng.integers(0, 2**63 - 1, size=n, dtype=np.int64)
    int_probes = np.where(
        rng.random(n) < 0.5,
        ints[rng.integers(0, n, n)],
        rng.integers(0, 2**63 - 1, size=n, dtype=np.int64),
    )
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    lengths = rng.integers(8, 25, size=n // 4)
    words = [letters[rng.integers(0, 26, int(k))].tobytes().decode() for k in lengths]
    strings = pa.array(words, pa.string())
    ns = len(words)
    print(f"# pybloom-async Python API, {n} elements ({ns} strings), median of {reps} runs")
    for size in SIZES:
        for backend in ("scalar", "avx2"):
            if lib.pba_set_backend(backend.encode()) != 0:
                continue
            f = SplitBlockBloomFilter(size)
            Case = tuple[str, Callable[[], object], int, Callable[[], object] | None]
            cases: list[Case] = [
                ("insert", partial(f.insert_hashes, hashes), n, f.clear),
                ("probe", partial(f.check_hashes, probes), n, None),
                ("hash_insert_int64", partial(f.insert, ints, "INT64"), n, f.clear),
                ("hash_probe_int64", partial(f.check_many, int_probes, "INT64"), n, None),
            ]
            for op, fn, count, setup in cases:
                report(backend, op, size, timed(fn, count, reps, setup))
            f.insert(strings, "BYTE_ARRAY")
            probe_str = partial(f.check_many, strings, "BYTE_ARRAY")
            report(backend, "hash_probe_str", size, timed(probe_str, ns, reps))


if __name__ == "__main__":
    main()
