"""A seeded differential test of every entry point against a pyarrow full-scan oracle.

``generate_case(seed)`` draws a lake (files of many column kinds, writers and layouts; see
``shapes`` for hive folders with repeated keys, escaped values and given types, columns that
later partitions gained, and mixed writers) or a Delta or Iceberg table (``evolution`` for an
Iceberg schema evolved by field id), a predicate and the calls to make; ``run_case`` writes
it and checks every entry point against the oracle; ``explain`` cuts a failing case down and
prints it as a standalone reproduction. The bounded test is
tests/property/test_differential.py, the long run tests/property/run_long.py.

Test modules import this before pytest could rewrite its asserts (it has none that
matter: failures are returned as data), hence: PYTEST_DONT_REWRITE.
"""

from __future__ import annotations

from .checks import Failure, run_case
from .gates import KNOWN, KNOWN_BUGS
from .generate import generate_case
from .repro import describe, reproduction, rerun, shrink
from .spec import Case

__all__ = [
    "KNOWN",
    "KNOWN_BUGS",
    "Case",
    "Failure",
    "describe",
    "explain",
    "generate_case",
    "reproduction",
    "run_case",
    "shrink",
]


def explain(
    case: Case, failures: list[Failure], known: frozenset[str], shrink_s: float = 30.0
) -> str:
    """A report for a failing case: its seed and spec, every failure, and the first one
    shrunk to a standalone script (to turn into a regression test)."""
    lines = [describe(case), "", *(str(f) for f in failures)]
    if failures and shrink_s > 0:
        small = shrink(case, failures[0], known, budget_s=shrink_s)
        again = [f for f in rerun(small, failures[0].check, known) if f.check == failures[0].check]
        lines += ["", "--- minimal reproduction (shrunk) ---", describe(small), "",
                  reproduction(small, again[0] if again else failures[0], known)]  # fmt: skip
    return "\n".join(lines)
