"""Row-group pruning by predicate: verdicts, the evaluator and the entry points."""

from __future__ import annotations

from .api import probe, probe_sync, prune, prune_sync
from .verdicts import ProbeResult, Rule, Verdict

__all__ = [
    "ProbeResult",
    "Rule",
    "Verdict",
    "probe",
    "probe_sync",
    "prune",
    "prune_sync",
]
