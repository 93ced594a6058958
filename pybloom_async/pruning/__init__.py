"""Row-group pruning by predicate: verdicts, the evaluator and the entry points."""

from __future__ import annotations
