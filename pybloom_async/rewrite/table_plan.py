"""What a table's add-filters run works on: the files to replace, the ones left, new names."""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import CommitConflictError, InvalidArgumentError
from .results import SkippedFile

# The suffix new files get; a file rewritten again (replace=True) gets a fresh one, not two.
_SUFFIX = re.compile(r"\.bf-[0-9a-f]{16}$")
_PARQUET = ".parquet"


@dataclass(frozen=True)
class Candidate:
    """A live file that may get filters: where it is, where its new copy goes.

    ``entry`` is what the table's library knows of the file (what its commit needs).
    """

    path: str
    target: str
    entry: Any


@dataclass
class TablePlan:
    """A table's live files to look at, the ones left as they are, and the version read."""

    kind: str  # "delta" or "iceberg"
    name: str
    read_version: int | None  # the Delta version, or the Iceberg snapshot id, read
    candidates: list[Candidate] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    partition_columns: tuple[str, ...] = ()


# Per kind: the table's name, what its read_version counts, and the library that commits.
_COMMITS = {
    "delta": ("Delta", "version", "deltalake"),
    "iceberg": ("Iceberg", "snapshot", "pyiceberg"),
}


def commit_conflict(plan: TablePlan, exc: BaseException) -> CommitConflictError:
    """The error of a commit the table's library refused (``exc``, a concurrent commit won):
    one line saying that nothing was committed, so a run again may succeed."""
    table, read, library = _COMMITS[plan.kind]
    text = " ".join(str(exc).split()) or type(exc).__name__
    return CommitConflictError(
        f"the {table} table {plan.name} changed since {read} {plan.read_version} and "
        f"{library} refused the commit ({text}); nothing was committed: run again"
    )


def sibling(location: str) -> str:
    """A new, unique location in the folder of ``location`` (``<stem>.bf-<16 hex>.parquet``).

    The name keeps the old one's stem, so a file's copies are easy to pair, and uses
    only characters no URL encoding touches.
    """
    folder, slash, name = location.rpartition("/")
    stem = name[: -len(_PARQUET)] if name.lower().endswith(_PARQUET) else name
    stem = _SUFFIX.sub("", stem)
    return f"{folder}{slash}{stem}.bf-{secrets.token_hex(8)}{_PARQUET}"


def check_names(
    names: Sequence[str],
    top_level: Sequence[str],
    partition_only: Sequence[str],
    table: str,
) -> None:
    """Each column named is one of the table's (its first segment, for a nested path).

    Raises
    ------
    InvalidArgumentError
        A name is not a column of the table (the message lists them), or is a
        partition column whose values are not in the data files (Delta).
    """
    known = set(top_level)
    for name in names:
        head = name.split(".")[0]
        if head in partition_only:
            raise InvalidArgumentError(
                f"a partition column of the table {table}: its values are in the log, not "
                "in the data files",
                column=name,
            )
        if head not in known:
            shown = ", ".join(top_level[:50]) + (", ..." if len(top_level) > 50 else "")
            raise InvalidArgumentError(
                f"the table {table} has no such column; it has: {shown}", column=name
            )
