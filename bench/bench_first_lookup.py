"""What a process's first lookup costs beyond a later one (issue 31: at most 0.05 s more).

Each run is a fresh process (pandas installed, as most users have it): ``import
pybloom_async`` before the clock, as the engines are timed after their import (and, in the
``arrow`` variant, ``pyarrow.parquet`` and ``pyarrow.compute``, as a script that uses
pyarrow has them); then the first lookup, then a second one of another key, each timed.
pyarrow imports pandas on its first conversion of a Python value (apache/arrow issue
34994); the lookup path builds its Arrow values from buffers instead (``rows/arrow.py``).
Medians of ``--runs`` processes.

    .venv/bin/python bench/bench_first_lookup.py --runs 7 --json-out bench/results/first-lookup.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import Recorder

CHILD = r"""
import json, sys, time
import pybloom_async
from pybloom_async import lookup_sync
root, first, second, arrow = sys.argv[1:5]
if arrow == "1":  # a script that uses pyarrow has imported it (not pandas)
    import pyarrow.compute, pyarrow.parquet
t0 = time.perf_counter(); a = lookup_sync(root, first); t1 = time.perf_counter()
b = lookup_sync(root, second); t2 = time.perf_counter()
print(json.dumps({"first_s": t1 - t0, "second_s": t2 - t1, "rows": [a.num_rows, b.num_rows],
                  "pandas_imported": "pandas" in sys.modules}))
"""

QUERIES = {
    "point": ("id = 1234", "id = 4321"),
    "IN 100": (
        "id IN (" + ",".join(str(7 * i) for i in range(100)) + ")",
        "id IN (" + ",".join(str(11 * i) for i in range(100)) + ")",
    ),
    "key AND range": ("id = 1234 AND f > 0.01", "id = 4321 AND f > 0.01"),
}


def write_lake(root: Path, files: int = 20) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(3)
    for i in range(files):
        n = 20_000
        ids = np.arange(i * n, (i + 1) * n)
        table = pa.Table.from_arrays(
            [pa.array(ids), pa.array(rng.random(n)), pa.array([f"user-{k}" for k in ids])],
            names=["id", "f", "name"],
        )
        pq.write_table(table, root / f"part-{i:03d}.parquet", row_group_size=5_000,
                       bloom_filter_options={"id": {"ndv": 5_000, "fpp": 0.01}})  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--python", default=sys.executable, help="the interpreter to time")
    args = parser.parse_args()
    recorder = Recorder("first-lookup", runs=args.runs)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_lake(root)
        for variant, (name, (first, second)) in [
            (v, q) for v in ("bare", "arrow") for q in QUERIES.items()
        ]:
            runs = []
            for _ in range(args.runs):
                argv = [
                    args.python,
                    "-c",
                    CHILD,
                    str(root),
                    first,
                    second,
                    str(int(variant == "arrow")),
                ]
                out = subprocess.run(argv, check=True, capture_output=True, text=True).stdout
                runs.append(json.loads(out.strip().splitlines()[-1]))
            name = f"{name} ({variant})"
            first_s = statistics.median(r["first_s"] for r in runs)
            second_s = statistics.median(r["second_s"] for r in runs)
            extra = statistics.median(r["first_s"] - r["second_s"] for r in runs)
            pandas = sum(r["pandas_imported"] for r in runs)
            results[name] = {"first_s": first_s, "second_s": second_s, "extra_s": extra,
                             "pandas_imported_runs": pandas, "runs": runs}  # fmt: skip
            print(f"{name}: first {first_s:.3f} s, second {second_s:.3f} s, first costs "
                  f"{extra:+.3f} s more (median of {args.runs}); pandas imported in "
                  f"{pandas} of {args.runs} runs")  # fmt: skip
    if args.json_out:
        recorder.write(args.json_out, results)


if __name__ == "__main__":
    main()
