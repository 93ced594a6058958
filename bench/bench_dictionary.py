"""Row groups ruled out by their dictionaries (issue 31): a lake whose keys repeat.

The lakes of ``bench_lookup.py`` and ``bench_rows.py`` hold a key once per row group, so a
key column's dictionary is about the size of its data and checking it costs about what
decoding it does. Keys that repeat are the common case (a user's events, an order's
lines): 20 files of 4 row groups of 100,000 rows, ``user_id`` drawn from 5,000 per row
group (each about 20 times), and three other columns; no Bloom filter, as in most lakes
(pyarrow's defaults), and keys spread so that min/max statistics rule nothing out.
``user_id IN`` 100 keys, 5 present and 95 absent (IDs asked for that may not exist): the
row groups of the 5 present keys hold a match, and the dictionaries can rule out the
other 75 (with a filter at fpp 0.01 about 1 - 0.99^95 of them would be kept by false
positive; here every one is).

Run one query per process (the library imported before the clock), for paired runs of
two trees with ``farm-bench --vs``::

    .venv/bin/python bench/bench_dictionary.py            # once: writes the lake
    .venv/bin/python bench/bench_dictionary.py --query     # one lookup, its time and rows

Output: ``rows N wall S cpu S``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

LAKE = Path(__file__).resolve().parent / "data" / "dictionary" / "repeated-20-nofilter-v1"
FILES, GROUPS, ROWS, DISTINCT = 20, 4, 100_000, 5_000


def key_of(file: int, group: int, k: int) -> int:
    """The k-th key of a row group (distinct across row groups and files)."""
    return ((file * GROUPS + group) * DISTINCT + k) * 0x9E3779B97F4A7C15 % (2**40)


def write() -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    LAKE.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(3)
    for f in range(FILES):
        parts = []
        for g in range(GROUPS):
            keys = np.array([key_of(f, g, k) for k in range(DISTINCT)], dtype=np.int64)
            parts.append(keys[rng.integers(0, DISTINCT, ROWS)])
        ids = np.concatenate(parts)
        n = len(ids)
        table = pa.table(
            {
                "user_id": ids,
                "ts": pa.array(rng.integers(1.7e15, 1.8e15, n), pa.timestamp("us")),
                "amount": rng.random(n),
                "country": pa.array(rng.choice(["DE", "FR", "US", "JP"], n)),
            }
        )
        pq.write_table(
            table,
            LAKE / f"part-{f:03d}.parquet",
            row_group_size=ROWS,
        )


def query() -> None:
    rng = random.Random(11)
    present = [
        key_of(rng.randrange(FILES), rng.randrange(GROUPS), rng.randrange(DISTINCT))
        for _ in range(5)
    ]
    absent = [key_of(FILES + 1, 0, k) + 1 for k in range(95)]
    where = f"user_id IN ({', '.join(map(str, sorted(set(present + absent))))})"
    import pybloom_async

    t, c = time.perf_counter(), time.process_time()
    rows = pybloom_async.lookup_sync(str(LAKE), where)
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    print(f"rows {rows.num_rows} wall {wall:.3f} cpu {cpu:.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--query", action="store_true", help="run one lookup")
    args = parser.parse_args()
    if args.query:
        if not LAKE.exists():
            sys.exit(f"no lake at {LAKE}: run without --query first")
        query()
    else:
        write()


if __name__ == "__main__":
    main()
