"""Side-by-side run of the SBBF core against its peers, with ratios and the targets.

Runs, interleaved for several rounds on the same machine: our C benchmark
(``bench/bin/bench_sbbf``), Arrow C++'s ``parquet::BlockSplitBloomFilter`` and
parquet-java's ``BlockSplitBloomFilter`` (``bench/peers/``), and prints the
median over rounds of each harness's own median, as a Markdown table with the
speed-up over each peer. Interleaving and ratios make the comparison robust to
other load on a shared machine; absolute figures are not.

``--json-out FILE`` also writes every harness's median per op and size, with the
machine, date and load (``bench/record.py``); ``bench/charts.py`` draws from it.

Run: ``make peers bench/bin/bench_sbbf && .venv/bin/python bench/compare_core.py
[--json-out bench/results/core_vs_peers.json]``
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from record import Recorder

ROOT = Path(__file__).resolve().parent.parent
LINE = re.compile(r"^peer=(\S+)(?: backend=(\S+))? op=(\S+) size=(\d+).*? ns_per_elem=([\d.]+)")
SIZES = (32768, 1048576, 134217728)

# (our op, peer op) pairs compared, with the speed-up targets per size.
ROWS = [
    ("probe", "probe", {32768: 3.0, 1048576: 3.0, 134217728: 4.0}),
    ("hash_probe_int64", "hash_probe_int64", {1048576: 2.0, 134217728: 4.0}),
    ("insert", "insert", {}),
    ("hash_probe_str", "hash_probe_str", {}),
]


def run(cmd: list[str]) -> dict[tuple[str, str, int], float]:
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True).stdout
    found: dict[tuple[str, str, int], float] = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            peer, backend, op, size, ns = m.groups()
            name = f"{peer}-{backend}" if backend else peer
            found[(name, op, int(size))] = float(ns)
    return found


def java_cmd() -> list[str]:
    out = subprocess.run(
        ["make", "-s", "--no-print-directory", "-n", "bench-peers-java"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    # The recipe spans continuation lines; join them into one command.
    return ["bash", "-c", out.replace("\\\n", " ").strip().splitlines()[-1]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--elements", type=int, default=1 << 22)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--json-out", type=Path, help="also write the medians here as JSON")
    args = parser.parse_args()
    recorder = Recorder("core_vs_peers", rounds=args.rounds, elements=args.elements, reps=args.reps)
    harnesses = {
        "ours": [str(ROOT / "bench/bin/bench_sbbf"), str(args.elements), str(args.reps)],
        "arrow": [str(ROOT / "bench/bin/arrow_sbbf_bench")],
        "java": java_cmd(),
    }
    samples: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    for r in range(args.rounds):
        for name, cmd in harnesses.items():
            print(f"# round {r + 1}/{args.rounds}: {name}", file=sys.stderr, flush=True)
            for key, ns in run(cmd).items():
                samples[key].append(ns)
    med = {k: statistics.median(v) for k, v in samples.items()}
    if args.json_out:
        rows = [
            {"harness": h, "op": op, "size_bytes": size, "ns_per_elem": ns,
             "rounds": samples[(h, op, size)]}
            for (h, op, size), ns in sorted(med.items())
        ]  # fmt: skip
        print(f"# wrote {recorder.write(args.json_out, rows)}", file=sys.stderr)
    print(
        "| op | size | ours avx2 | ours scalar | Arrow C++ | parquet-java | vs Arrow | vs Java "
        "| target vs Arrow |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for ours_op, peer_op, targets in ROWS:
        for size in SIZES:
            a = med.get(("pybloom-avx2", ours_op, size))
            sc = med.get(("pybloom-scalar", ours_op, size))
            ar = med.get(("arrow", peer_op, size))
            jv = med.get(("java", peer_op, size))
            vs_a = f"{ar / a:.1f}x" if a and ar else "-"
            vs_j = f"{jv / a:.1f}x" if a and jv else "-"
            target = targets.get(size)
            verdict = "-"
            if target and a and ar:
                verdict = f">= {target:g}x: {'met' if ar / a >= target else 'MISSED'}"

            def cell(x: float | None) -> str:
                return f"{x:.2f}" if x is not None else "-"

            print(f"| {ours_op} | {size // 1024} KiB | {cell(a)} | {cell(sc)} | {cell(ar)} "
                  f"| {cell(jv)} | {vs_a} | {vs_j} | {verdict} |")  # fmt: skip


if __name__ == "__main__":
    main()
