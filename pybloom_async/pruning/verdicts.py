"""What pruning answers: the rules, a verdict per row group or file, probe results."""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..predicate import TextLiteral


class Rule(str, enum.Enum):
    """What decided a verdict."""

    BLOOM_FILTER = "bloom_filter"  # the filter rules the value(s) out
    STATISTICS = "statistics"  # min/max rule the value(s) out
    TYPE = "type"  # the column cannot hold the value(s)
    NULLS = "null_count"  # null counts decide (all null / no nulls)
    MAY_MATCH = "may_match"  # the filter (or statistics) admit a value
    NO_FILTER = "no_filter"  # no filter to ask
    UNUSABLE_FILTER = "unusable_filter"  # the filter is damaged
    NEVER_PRUNES = "never_prunes"  # NaN, NULL probes
    MISSING_COLUMN = "missing_column"  # the file lacks the column
    UNREADABLE = "unreadable"  # the file could not be read
    SIDECAR_INDEX = "sidecar_index"  # the file's sidecar index rules the value(s) out
    NO_INDEX = "no_index"  # no usable sidecar index (missing or unreadable): file kept
    STALE_INDEX = "stale_index"  # the data file changed after it was indexed: file kept
    LAKE_INDEX = "lake_index"  # the lake-wide index rules the value(s) out
    PARTITION = "partition"  # the file's partition folders decide the predicate: every row

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether one row group may hold matching rows.

    ``row_group`` and ``num_rows`` are None when the whole file could not be
    read (then ``kept`` is True and ``reason`` says why). Slotted: a run may
    hold one per file or row group.
    """

    file: str
    row_group: int | None
    num_rows: int | None
    kept: bool
    reason: str
    rule: Rule

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "file": self.file,
            "row_group": self.row_group,
            "num_rows": self.num_rows,
            "kept": self.kept,
            "reason": self.reason,
            "rule": self.rule.value,
        }


@dataclass(frozen=True)
class ProbeResult:
    """Whether one row group's data rules one value out (``excluded``)."""

    file: str
    row_group: int
    column: str
    value: Any
    excluded: bool
    reason: str
    rule: Rule

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: ``kept`` (not ``excluded``), as in :meth:`Verdict.to_dict`.

        An int value stays a number; other values are shown as text.
        """
        return {
            "file": self.file,
            "row_group": self.row_group,
            "column": self.column,
            "value": self.value if type(self.value) is int else show(self.value),
            "kept": not self.excluded,
            "reason": self.reason,
            "rule": self.rule.value,
        }


# ---- values -> probe keys ----------------------------------------------------------


def show(value: Any) -> str:
    if isinstance(value, TextLiteral):
        return value.text
    if isinstance(value, (bytes, bytearray)):
        return "0x" + bytes(value).hex()
    return str(value)


class VerdictSink(Protocol):
    """Where an index pass's file verdicts go, as they are decided (a list will do; an
    object that counts them holds nothing per file)."""

    def append(self, verdict: Verdict, /) -> None: ...


def hand_over_by_file(
    verdicts: list[Verdict], on_file: Callable[[list[Verdict]], None] | None
) -> list[Verdict]:
    """``verdicts`` as a pass returns them: as they are without ``on_file``; else handed to
    it one file's list at a time, in file order, and none returned."""
    if on_file is None:
        return verdicts
    by_file: dict[str, list[Verdict]] = {}
    for v in verdicts:
        by_file.setdefault(v.file, []).append(v)
    for group in by_file.values():
        on_file(group)
    return []
