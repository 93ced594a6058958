"""The lake as written, as the oracle reads it: its files, their folders, the errors due.

``open_lake`` reads every file whole (pyarrow, file by file) and works out, from the
documented rules alone, which files their partition folders rule out, the partition
columns' types, and the error a call must raise (``expected_error``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from pybloom_async.predicate import Predicate

from .folders import check_folder_literals, folder_types, ruled_out_by_folder, with_folders
from .oracle import (
    FileFacts,
    LiteralTypeError,
    check_literals,
    columns_of,
    evaluate,
    read_file,
)
from .spec import Case
from .write import source_names


@dataclass
class Lake:
    """The lake as it is on disk now: what the entry points get, what the oracle read."""

    root: Path
    paths: list[Path]
    sources: Any
    order: list[str]  # files in the order a reader reads them, each once
    facts: dict[str, FileFacts] = field(default_factory=dict)
    garbage: list[str] = field(default_factory=list)
    #: Hive partition columns of the files listed (their types, in the order first met),
    #: the files their folder values rule out (never opened), and whether a literal is
    #: not of a partition column's type.
    folder_types: dict[str, Any] = field(default_factory=dict)
    ruled_out: set[str] = field(default_factory=set)
    folder_error: bool = False

    @property
    def readable(self) -> list[FileFacts]:
        """The files read: valid Parquet, not ruled out by their folders."""
        return [self.facts[p] for p in self.order if p in self.facts and p not in self.ruled_out]

    @property
    def unreadable(self) -> list[str]:
        """The files that are not Parquet and are opened (not ruled out by their folders)."""
        return [p for p in self.garbage if p not in self.ruled_out]

    @property
    def listed(self) -> list[FileFacts]:
        """Every valid Parquet file listed, its folders ruling it out or not."""
        return [self.facts[p] for p in self.order if p in self.facts]

    def names(self, wanted: Sequence[str] = ()) -> list[str]:
        """The result's default columns: the files' own (first seen), then the partition
        columns (first met in the listing). The files read; the files listed when their
        folders rule out every file (an empty answer has the files' columns), or when a
        column ``wanted`` (of the predicate, or asked) is in none of the files read."""
        files = self.readable
        unknown = any(
            c not in self.folder_types and not any(f.has(c) or c in f.top_level for f in files)
            for c in wanted
        )  # fmt: skip
        if not files or unknown:
            files = self.listed
        own = [n for f in files for n in f.top_level if n not in self.folder_types]
        return list(dict.fromkeys(own)) + list(self.folder_types)

    def has_anywhere(self, column: str) -> bool:
        """A partition column, or a leaf of some file listed (ruled out or not): a column
        missing from some files reads as NULL there; only a column no file has is an error."""
        return column in self.folder_types or any(f.has(column) for f in self.listed)


def open_lake(case: Case, root: Path, paths: Sequence[Path], sources: Any = None) -> Lake:
    named, order = source_names(case, root, paths)
    lake = Lake(root, list(paths), named if sources is None else sources, order)
    wanted = columns_of(case.predicate)
    # Partition folders count when the files are listed from the directory.
    listed = case.sources in ("dir", "dir_and_file")
    folders = {str(root / s.relative): s.folder for s in case.files} if listed else {}
    given = case.lookup.partitioning
    if not listed:
        lake.folder_types = {}  # files named directly have no partition columns
    else:
        typed = dict(given) if given is not None else None
        lake.folder_types = folder_types((folders.get(path, ()) for path in order), typed)
    try:
        check_folder_literals(case.predicate, lake.folder_types)
    except LiteralTypeError:
        lake.folder_error = True
    for path in order:
        folder = folders.get(path, ())
        try:
            if folder and ruled_out_by_folder(case.predicate, folder, lake.folder_types):
                lake.ruled_out.add(path)
        except LiteralTypeError:
            lake.folder_error = True
        try:
            facts = read_file(path, wanted)
        except (pa.ArrowInvalid, OSError):
            lake.garbage.append(path)
            continue
        lake.facts[path] = with_folders(facts, folder, lake.folder_types, wanted)
    return lake


def expected_error(case: Case, lake: Lake, predicate: Predicate) -> str | None:
    """The error the documentation promises for this lake and predicate, if any: a column
    no file listed has (with at least one file read) or a literal not of its column's type."""
    if lake.folder_error:
        return "PredicateError"
    if not lake.readable:
        # No file read: the footers of those the folders ruled out are read for the
        # answer's columns, and count as read (a column none of them has is a mistake).
        if lake.listed and not all(lake.has_anywhere(c) for c in columns_of(predicate)):
            return "PredicateError"
    elif not all(lake.has_anywhere(column) for column in columns_of(predicate)):
        return "PredicateError"
    for facts in lake.readable:
        try:
            evaluate(predicate, facts)
        except LiteralTypeError:
            return "PredicateError"
    # A column no file read has: the footers of the files the folders ruled out are read
    # for it, and its literals are typed by the first of them (listed first) that has it.
    domains = {}
    for column in columns_of(predicate):
        if column in lake.folder_types or any(f.has(column) for f in lake.readable):
            continue
        holder = next((f for f in lake.listed if f.has(column)), None)
        if holder is not None:
            domains[column] = holder.domains[column]
    try:
        check_literals(predicate, domains)
    except LiteralTypeError:
        return "PredicateError"
    return None


__all__ = ["Lake", "expected_error", "open_lake"]
