"""The main job on an embedded default: `make demo` (``python -m pybloom_async.demo``).

Builds a Split Block Bloom Filter from a generated column of user ids with the
C core, serialises it as a Parquet file stores it, loads it back, and probes
ids that are and are not in the column, printing what it saw.
"""

from __future__ import annotations

import time

import numpy as np

from . import SplitBlockBloomFilter, simd_backend


def main() -> int:
    """Run the demo and print its findings; returns the process exit code."""
    rng = np.random.default_rng(2026)
    n = 1_000_000
    ids = rng.choice(np.arange(10 * n, dtype=np.int64), size=n, replace=False)
    print(f"kernels: {simd_backend()}")
    t0 = time.perf_counter()
    bloom = SplitBlockBloomFilter.for_ndv(n, fpp=0.01)
    bloom.insert(ids, "INT64")
    built = time.perf_counter() - t0
    print(
        f"built a {bloom.num_bytes // 1024} KiB filter over {n:,} INT64 ids "
        f"in {built * 1000:.1f} ms (fill {bloom.fill_ratio:.1%}, "
        f"estimated ndv {bloom.estimated_ndv():,.0f})"
    )
    stored = bloom.to_bytes()
    loaded = SplitBlockBloomFilter.from_bytes(stored)
    assert loaded == bloom
    print(
        f"serialised as in a Parquet file: {len(stored):,} bytes "
        f"(header {len(stored) - bloom.num_bytes} B)"
    )

    present = ids[:100_000]
    in_set = np.zeros(10 * n, dtype=bool)
    in_set[ids] = True
    absent = np.flatnonzero(~in_set)[:100_000].astype(np.int64)
    t0 = time.perf_counter()
    hits_present = loaded.check_many(present, "INT64")
    hits_absent = loaded.check_many(absent, "INT64")
    probed = time.perf_counter() - t0
    print(
        f"probed {len(present) + len(absent):,} ids in {probed * 1000:.1f} ms: "
        f"{int(hits_present.sum()):,}/{len(present):,} present ids found (never a false negative), "
        f"{int(hits_absent.sum()):,}/{len(absent):,} absent ids passed "
        f"(false-positive rate {hits_absent.mean():.3%}, model {loaded.estimated_fpp(n):.3%})"
    )
    if not hits_present.all():
        print("ERROR: a present id was not found")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
