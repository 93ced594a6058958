"""What the commands share: inputs read, columns checked, progress, tables, JSON and summaries."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Mapping, Sequence
from types import TracebackType
from typing import Any, TextIO

from ..errors import (
    InvalidArgumentError,
    MissingDependencyError,
    PredicateError,
    PyBloomError,
    SourceError,
)
from ..io.address import parse_address
from ..io.base import FileInfo, SourceStats
from ..io.failures import shorten
from ..io.files import FileStream, expand_paths
from ..io.store import StoreOptions, check_applicable
from ..parquet import Schema
from ..pruning.verdicts import Rule
from ..read.reader import BloomReader
from .cli_args import EXIT_OK, EXIT_UNREADABLE, NAMED

log = logging.getLogger(__name__)

# ---- inputs ---------------------------------------------------------------------------


def text_argument(option: str, value: str) -> str:
    """An option's text as given, or read from ``@FILE``, or from standard input for ``-``."""
    if value == "-":
        return sys.stdin.read()
    if not value.startswith("@"):
        return value
    return _read_file(option, value[1:])


def _read_file(option: str, name: str) -> str:
    if name == "-":
        return sys.stdin.read()
    try:
        with open(name, encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        raise InvalidArgumentError(f"{option}: cannot read {name}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(f"{option}: {name} is not UTF-8 text ({exc.reason})") from None


def probe_values(args: argparse.Namespace) -> list[str]:
    """The --value texts, then the lines of --values-from, in order."""
    texts = list(args.value)
    if args.values_from is not None:
        lines = _read_file("--values-from", args.values_from).split("\n")
        texts.extend(line.removesuffix("\r") for line in lines if line.strip())
    if not texts:
        raise InvalidArgumentError("give the values: --value V (repeatable) or --values-from FILE")
    return texts


def required_columns(args: argparse.Namespace) -> list[str]:
    if not args.columns:
        raise InvalidArgumentError("give the columns: --column NAME (repeatable) or --columns A,B")
    return list(dict.fromkeys(args.columns))


async def expand_inputs(
    paths: Sequence[str], reader: BloomReader, strict: bool = False, table_files: bool = False
) -> tuple[list[str | FileInfo], list[SourceError]]:
    """The files to read, and the inputs that named none (or could not be listed).

    A path in a Delta or Iceberg table, or holding one, is refused unless ``table_files``
    (see :func:`pybloom_async.io.files.expand_paths`).
    """
    unreadable: list[SourceError] = []
    files = await expand_paths(paths, reader, unreadable=unreadable, table_files=table_files)
    log.info("%s listed from %s", plural_s(len(files), "file"), plural_s(len(paths), "input"))
    if strict and unreadable:
        raise unreadable[0]
    return files, unreadable


class ColumnCheck:
    """Columns that no file read has: a mistyped name is an input error, not an answer.

    ``groups``: a group's path names a column too (add-filters takes all its leaves).
    """

    def __init__(self, names: Sequence[str], groups: bool = False) -> None:
        self.names = list(names)
        self.groups = groups
        self.found: set[str] = set()
        self.errors: dict[str, PredicateError] = {}

    def see(self, path: str, schema: Schema) -> dict[str, PredicateError]:
        """Note one file's columns; returns the names it lacks, with the reason."""
        missing = {}
        for name in self.names:
            try:
                schema.column(name)
            except PredicateError as exc:
                prefix = tuple(name.split("."))
                if self.groups and any(
                    c.path_parts[: len(prefix)] == prefix for c in schema.columns
                ):
                    self.found.add(name)
                    continue
                missing[name] = exc
                self.errors.setdefault(name, exc)
                exc.with_context(path=path)
            else:
                self.found.add(name)
        return missing

    def absent(self) -> PredicateError | None:
        """The error of the first column that no file seen has, if one has none."""
        for name in self.names:
            if name not in self.found and name in self.errors:
                return self.errors[name]
        return None

    def raise_absent(self) -> None:
        """Raise the error of the first column that no file seen has."""
        error = self.absent()
        if error is not None:
            raise error


# ---- output ---------------------------------------------------------------------------

#: The longest reason a line on stderr gives for one input (it names up to NAMED of them).
REASON_LIMIT = 220


def plural_s(n: int, word: str, plural: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


def fraction(part: int, whole: int, word: str, plural: str | None = None) -> str:
    return f"{part:,}/{plural_s(whole, word, plural)}"


def requests_text(stats: SourceStats) -> str:
    return f"{plural_s(stats.requests, 'request')}, {plural_s(stats.bytes_read, 'byte')} read"


def unreadable_text(files: Sequence[str], total: int) -> str:
    """``N unreadable: a, b, c, ...``: the count, and the first few of the files."""
    if not total:
        return "0 unreadable"
    shown = ", ".join(files[:NAMED])
    return f"{total:,} unreadable: {shown}" + (", ..." if total > len(files[:NAMED]) else "")


def write_json(out: TextIO, data: Any) -> None:
    json.dump(data, out, ensure_ascii=False)
    out.write("\n")


def print_table(out: TextIO, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> None:
    # Written by hand: rich's Table took 2.5 s for 10,000 rows, this takes 10 ms.
    cells = [[("" if r.get(c) is None else str(r.get(c))) for c in columns] for r in rows]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]
    out.write("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip() + "\n")
    for row in cells:
        out.write("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() + "\n")


class Progress:
    """A progress bar on stderr (tqdm), shown only on a terminal and for two files or more.

    Files read as they are listed (:meth:`listing`) have no total until the listing
    ends: the bar shows an open count ("34 file") until then, and the total from there.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.enabled = stream.isatty()
        self.bar: Any = None
        self.listing_open = False

    def listing(self, files: FileStream) -> FileStream:
        """``files`` as they come; the bar gets its total when the listing ends."""
        self.listing_open = True

        async def counted() -> AsyncIterator[str | FileInfo]:
            count = 0
            try:
                async for location in files:
                    count += 1
                    yield location
                self.listing_open = False
                log.info("%s listed", plural_s(count, "file"))
                if self.bar is not None:
                    self.bar.total = count
                    self.bar.refresh()
            finally:
                await files.aclose()

        return FileStream(counted(), free=files.free)

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < 2:
            return
        shown = None if self.listing_open else total
        if self.bar is None or done < self.bar.n:
            # A new pass (a command that reads its files twice).
            self.close()
            from tqdm import tqdm  # imported only when a bar is shown: no start-up cost

            self.bar = tqdm(total=shown, unit="file", file=self.stream)
        elif self.bar.total != shown:
            self.bar.total = shown
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def one_line(text: str) -> str:
    """``text`` on one line: a foreign message's line breaks (pyarrow's) become spaces."""
    return " ".join(text.split())


def failure_text(name: str, reason: str) -> str:
    """Why ``name`` failed, for a line that names it: its end (the cause) always kept."""
    return shorten(one_line(reason).removesuffix(f" (file {name})"), REASON_LIMIT)


def finish_run(
    failed: Sequence[tuple[str, str]],
    total: int,
    what: str,
    then: str | None = None,
    noun: str = "input",
) -> int:
    """The exit code; when inputs failed, one line on stderr naming the first few.

    ``then``: what was done about it, said before the reasons (which end the line);
    ``noun``: what the ``total`` counts.
    """
    if not failed:
        return EXIT_OK
    for name, reason in failed:  # every one, in full (-v)
        log.info("%s %s: %s", name, what, one_line(reason))
    shown = "; ".join(f"{name}: {failure_text(name, reason)}" for name, reason in failed[:NAMED])
    more = f"; ... ({len(failed)} in all)" if len(failed) > NAMED else ""
    done = f" ({then})" if then else ""
    print(
        f"pybloom-async: {fraction(len(failed), total, noun)} {what}{done}: {shown}{more}",
        file=sys.stderr,
    )
    return EXIT_UNREADABLE


def check_out(option: str, location: str, options: StoreOptions) -> None:
    """An output location that can be written, checked before any work is done.

    Raises
    ------
    InvalidArgumentError
        A malformed or HTTP location (read-only), a local directory, or a local path
        whose directory does not exist.
    """
    loc = parse_address(location)
    if loc.kind == "http":
        raise InvalidArgumentError(f"{option}: HTTP locations are read-only", path=location)
    if loc.kind != "file":
        check_applicable(loc, options)
        return
    if os.path.isdir(loc.path):
        raise InvalidArgumentError(f"{option}: a directory, not a file", path=location)
    folder = os.path.dirname(loc.path) or "."
    if not os.path.isdir(folder):
        raise InvalidArgumentError(
            f"{option}: the directory {folder} does not exist", path=location
        )


def unreadable_of(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(file, reason) of each file with an ``unreadable`` verdict, once."""
    found: dict[str, str] = {}
    for r in rows:
        if r.get("rule") == Rule.UNREADABLE.value or r.get("state") == Rule.UNREADABLE.value:
            found.setdefault(r["file"], str(r.get("reason")))
    return list(found.items())


def decided_rows(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts shared by the prune and probe summaries (a row group kept for any value is kept)."""
    files: dict[str, bool] = {}
    groups: dict[tuple[str, int], bool] = {}
    missing_groups: set[tuple[str, int]] = set()
    missing_files: dict[str, None] = {}
    for r in rows:
        name, kept, group = r["file"], bool(r["kept"]), r["row_group"]
        files[name] = files.get(name, False) or kept
        if group is not None:
            groups[(name, group)] = groups.get((name, group), False) or kept
        if r["rule"] == Rule.MISSING_COLUMN.value and kept:
            missing_files[name] = None
            if group is not None:
                missing_groups.add((name, group))
    unreadable = [name for name, _ in unreadable_of(rows)]
    return {
        "row_groups": len(groups),
        "row_groups_kept": sum(groups.values()),
        "files": len(files),
        "files_kept": sum(files.values()),
        "unreadable": len(unreadable),
        "unreadable_files": unreadable[:NAMED],
        "missing_column_row_groups": len(missing_groups),
        "missing_column_files": len(missing_files),
    }


def decided_text(s: Mapping[str, Any]) -> str:
    """The shared part of a summary line: kept row groups and files, unreadable, missing."""
    if s["row_groups"]:
        kept = (
            f"{fraction(s['row_groups_kept'], s['row_groups'], 'row group')} kept "
            f"in {fraction(s['files_kept'], s['files'], 'file')}"
        )
    else:  # file-level verdicts only (Paimon, sidecar indexes, nothing readable)
        kept = f"{fraction(s['files_kept'], s['files'], 'file')} kept"
    parts = [kept]
    parts.append(unreadable_text(s["unreadable_files"], s["unreadable"]))
    if s["missing_column_files"]:
        where = plural_s(s["missing_column_files"], "file")
        if s["missing_column_row_groups"]:
            where = f"{plural_s(s['missing_column_row_groups'], 'row group')} in {where}"
        parts.append(f"{where} kept for a missing column")
    return "; ".join(parts)


def raise_if_not_about_the_file(exc: PyBloomError) -> None:
    """Re-raise what no other file would change: the user's input or a missing package.

    A value that is not of its column's type (``PredicateError``) is exit 2, a missing
    pyarrow exit 1, for the whole run; only the file's own faults make it ``unreadable``.
    """
    if isinstance(exc, (PredicateError, MissingDependencyError)):
        raise exc
