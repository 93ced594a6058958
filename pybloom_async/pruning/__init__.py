"""Row-group pruning by predicate: verdicts, the evaluator and the entry points."""

from __future__ import annotations

from .api import (
    ProbeResult,
    Rule,
    Verdict,
    probe,
    probe_sync,
    prune,
    prune_paimon,
    prune_paimon_sync,
    prune_sync,
)

__all__ = [
    "ProbeResult",
    "Rule",
    "Verdict",
    "probe",
    "probe_sync",
    "prune",
    "prune_paimon",
    "prune_paimon_sync",
    "prune_sync",
]
