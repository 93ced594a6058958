"""Run the differential test for a while: case count, seeds covered, failures grouped.

    nice -n 10 .venv/bin/python tests/property/run_long.py --minutes 10 --seed-start 100000

Seeds run one after another from ``--seed-start`` until the time is up. Failures are grouped
by check and message; the first case of each group is shrunk and printed as a standalone
reproduction (``--no-shrink`` to skip). ``--look-for-known`` opens every known-bug gate
(``PYBLOOM_DIFF_KNOWN_BUGS=none`` does the same), to see that the run finds them;
``--find-known-seeds`` prints, for each gate, a seed whose case shows its bug (for
``KNOWN_BUG_SEEDS`` in test_differential.py). ``--json FILE`` writes the summary as JSON.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
import traceback
from collections import defaultdict
from pathlib import Path

# The tree this script lies in, before any installed copy of the package (as pytest's rootdir
# comes first), then tests/ for the support package.
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from support.differential import (
    KNOWN,
    KNOWN_BUGS,
    Failure,
    explain,
    generate_case,
    run_case,
)


def _group(failure: Failure) -> str:
    """A failure's group: its check and message without paths and numbers."""
    text = re.sub(r"/\S+", "<path>", failure.summary)
    return f"{failure.check}: " + re.sub(r"\d+", "N", text)[:140]


def _run(seed: int, known: frozenset[str]) -> tuple[str, list[Failure]]:
    case = generate_case(seed, known=known)
    work = Path(tempfile.mkdtemp(prefix="pybloom-diff-"))
    try:
        return case.family, run_case(case, work, known=known)
    except Exception as exc:  # a harness error is reported, not fatal
        detail = "".join(traceback.format_exception(exc))[-1500:]
        return case.family, [Failure("harness", f"{type(exc).__name__}: {exc}"[:200], detail)]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def find_known_seeds(limit: int, known: frozenset[str]) -> dict[str, int]:
    """For each known bug, the first seed whose case fails once that bug's gate is open."""
    found: dict[str, int] = {}
    for seed in range(limit):
        full = generate_case(seed, known=known)
        for bug in sorted(set(KNOWN) - set(found)):
            table_gate = bug == "table_dataset_empty" and full.family != "lake"
            if bug not in full.gated and not table_gate:
                continue
            _, failures = _run(seed, known - {bug})
            if failures:
                found[bug] = seed
                print(f"{bug}: seed {seed} ({failures[0].check}: {failures[0].summary[:100]})")
        if len(found) == len(KNOWN):
            break
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seed-start", type=int, default=0)
    parser.add_argument("--look-for-known", action="store_true")
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--find-known-seeds", type=int, metavar="LIMIT", default=0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    known = frozenset() if args.look_for_known else KNOWN_BUGS
    if args.find_known_seeds:
        print(find_known_seeds(args.find_known_seeds, KNOWN_BUGS))
        return 0
    deadline = time.monotonic() + args.minutes * 60
    seed = args.seed_start
    families: dict[str, int] = defaultdict(int)
    groups: dict[str, list[int]] = defaultdict(list)
    first: dict[str, tuple[int, list[Failure]]] = {}
    started = time.monotonic()
    while time.monotonic() < deadline:
        family, failures = _run(seed, known)
        families[family] += 1
        for failure in failures:
            key = _group(failure)
            if seed not in groups[key]:
                groups[key].append(seed)
            first.setdefault(key, (seed, failures))
        seed += 1
        if seed % 50 == 0:
            print(f"... {seed - args.seed_start} cases, {len(groups)} failure groups", flush=True)
    cases = seed - args.seed_start
    elapsed = time.monotonic() - started
    print(f"\n{cases} cases in {elapsed / 60:.1f} min, seeds {args.seed_start}..{seed - 1} "
          f"({dict(families)})")  # fmt: skip
    print(f"known bugs steered clear of: {sorted(known) or 'none'}")
    failing = sorted({s for seeds in groups.values() for s in seeds})
    print(f"{len(failing)} failing cases, {len(groups)} failure groups")
    for key, seeds in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(seeds):4d}  {key}   seeds {seeds[:10]}")
    if not args.no_shrink:
        for key, (case_seed, failures) in first.items():
            if key.startswith("harness"):
                print(f"\n=== {key} (seed {case_seed})\n{failures[0].detail}")
                continue
            case = generate_case(case_seed, known=known)
            mine = [f for f in failures if _group(f) == key]
            print(f"\n=== {key} (seed {case_seed})\n{explain(case, mine, known, shrink_s=45)}")
    if args.json:
        args.json.write_text(json.dumps({
            "cases": cases, "seconds": round(elapsed), "seed_start": args.seed_start,
            "seed_end": seed - 1, "families": families, "known": sorted(known),
            "groups": groups,
        }, indent=2))  # fmt: skip
    return 1 if groups else 0


if __name__ == "__main__":
    raise SystemExit(main())
