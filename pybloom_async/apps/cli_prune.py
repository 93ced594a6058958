"""The prune command: row groups and files a predicate keeps, through the index the policy
chooses (``--index``, :mod:`pybloom_async.index_policy`) and the files' own filters."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from ..errors import (
    InvalidArgumentError,
    SourceError,
    SourceNotFoundError,
)
from ..index_policy.api import prune
from ..index_policy.choice import lake_root
from ..io.base import SourceStats
from ..io.files import stream_paths
from ..paimon.files import prune_paimon
from ..predicate import parse_predicate
from ..pruning.verdicts import Rule, Verdict
from .cli_args import (
    NAMED,
    index_option,
    make_reader,
    on_error,
    partitioning,
    reader_config,
    store_options,
)
from .cli_inspect import paimon_types
from .cli_output import (
    Progress,
    decided_rows,
    decided_text,
    finish_run,
    fraction,
    plural_s,
    print_table,
    text_argument,
    unreadable_of,
    write_json,
)
from .cli_tables import open_table

# ---- prune ----------------------------------------------------------------------------


class _Tally:
    """The summary's counts, added file by file: no verdict is kept for them.

    Each file's verdicts come in one batch (and every file once), so the counts
    of :func:`decided_rows` add up over batches to those of the whole run.
    """

    def __init__(self) -> None:
        self.counts: dict[str, Any] = dict.fromkeys(decided_rows(()), 0)
        self.rows = 0
        self.rows_kept = 0
        self.failed: list[tuple[str, str]] = []  # (file, reason) of unreadable files

    def add(self, verdicts: Sequence[Verdict]) -> None:
        rows = [v.to_dict() for v in verdicts]
        for key, value in decided_rows(rows).items():
            if key != "unreadable_files":
                self.counts[key] += value
        self.failed += unreadable_of(rows)
        # Row-group verdicts count their rows, file-level ones (sidecar indexes) the file's.
        self.rows += sum(v.num_rows or 0 for v in verdicts)
        self.rows_kept += sum(v.num_rows or 0 for v in verdicts if v.kept)

    def summary(self, stats: SourceStats, index: _IndexTally | None) -> dict[str, Any]:
        summary = {
            **self.counts,
            "unreadable_files": [name for name, _ in self.failed[:NAMED]],
            "rows": self.rows,
            "rows_kept": self.rows_kept,
        }
        if index is not None:
            summary["sidecar_index"] = {
                "files": index.counts["files"],
                "files_skipped": index.counts["files"] - index.counts["files_kept"],
                "rows_skipped": index.rows - index.rows_kept,
                **index.rules,
            }
        summary["requests"] = stats.requests
        summary["bytes_read"] = stats.bytes_read
        return summary


class _IndexTally(_Tally):
    """The counts of the sidecar-index pass: files skipped, and why files were kept."""

    def __init__(self) -> None:
        super().__init__()
        self.rules = {rule.value: 0 for rule in (Rule.STALE_INDEX, Rule.NO_INDEX, Rule.UNREADABLE)}

    def append(self, verdict: Verdict) -> None:
        self.add([verdict])
        if verdict.rule.value in self.rules:
            self.rules[verdict.rule.value] += 1


class _JsonArray:
    """The verdicts written as one JSON array, row by row, as they come."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.opened = False

    def add(self, verdicts: Sequence[Verdict]) -> None:
        for v in verdicts:
            # json.dump's own separators, so the output is what write_json gave for a list.
            self.out.write(", " if self.opened else "[")
            self.opened = True
            self.out.write(json.dumps(v.to_dict(), ensure_ascii=False))

    def close(self) -> None:
        self.out.write("]\n" if self.opened else "[]\n")


def _prune_summary_text(s: Mapping[str, Any]) -> str:
    text = decided_text(s)
    if s["rows"]:
        first, rest = text.split("; ", 1)
        text = f"{first} ({s['rows_kept']:,}/{plural_s(s['rows'], 'row')}); {rest}"
    return f"{text}; {plural_s(s['requests'], 'request')}, {plural_s(s['bytes_read'], 'byte')} read"


def _index_summary_text(s: Mapping[str, Any]) -> str:
    """One line: what the sidecar indexes decided, file by file."""
    return (
        f"sidecar indexes: {fraction(s['files_skipped'], s['files'], 'file')} skipped "
        f"({plural_s(s['rows_skipped'], 'row')}); {s[Rule.STALE_INDEX.value]:,} stale, "
        f"{s[Rule.NO_INDEX.value]:,} missing or unusable (or without the column), "
        f"{s[Rule.UNREADABLE.value]:,} unreadable"
    )


async def cmd_prune(args: argparse.Namespace, out: TextIO) -> int:
    where = parse_predicate(text_argument("--where", args.where))
    stats = SourceStats()
    tally = _Tally()
    choice = index_option(args)
    index_tally = _IndexTally()  # what an index pass decided, when one serves the run
    rows: list[dict[str, Any]] = []  # the table's, which needs every row for its widths
    array = _JsonArray(out) if args.json and not args.summary else None

    def take(verdicts: list[Verdict]) -> None:
        tally.add(verdicts)
        if array is not None:
            array.add(verdicts)
        elif not args.summary:
            rows.extend(v.to_dict() for v in verdicts)

    table = await open_table(args)
    with Progress(sys.stderr) as progress:
        common: dict[str, Any] = dict(
            on_error=on_error(args), stats=stats, concurrency=args.concurrency, progress=progress,
            on_file=take, use_index=choice, index_verdicts=index_tally,
        )  # fmt: skip
        if table is not None:
            await prune(table, where, reader=make_reader(args, stats), **common)
        elif args.paimon_types:
            if choice not in ("auto", "none"):
                raise InvalidArgumentError(f"--index {choice} does not apply to Paimon data files")
            take(await prune_paimon(
                args.paths, where, paimon_types(args.paimon_types), on_error=on_error(args),
                reader=make_reader(args, stats), concurrency=args.concurrency,
            ))  # fmt: skip
        else:
            reader = make_reader(args, stats)

            def unreadable(exc: SourceError) -> None:
                # An input that names no file is reported as the listing meets it.
                if args.strict:
                    raise exc
                take([Verdict(exc.path or "", None, None, True, str(exc), Rule.UNREADABLE)])

            # The files are read as they are listed, and prune's own reader drops each
            # file's footer and filters once it is decided; the verdicts are counted (and
            # written) file by file. One PATH is the root a lake index may lie under: where
            # one serves, the policy takes the whole listing first (index_policy).
            files = progress.listing(stream_paths(args.paths, reader, unreadable=unreadable))
            one = args.paths[0] if len(args.paths) == 1 else None
            root = lake_root(one) if choice in ("auto", "lake") else None
            if choice == "lake" and root is None:
                raise InvalidArgumentError("--index lake takes one PATH: the lake's root")
            try:
                await prune(
                    files if root is None else root, where, files=None if root is None else files,
                    partitioning=partitioning(args), options=store_options(args),
                    config=reader_config(args), **common,
                )  # fmt: skip
            except SourceNotFoundError as exc:
                if choice != "lake" or exc.path != root:
                    raise
                # The root itself is not there: an input error, nothing was read.
                raise InvalidArgumentError(exc.message, path=exc.path) from None
    indexed = choice in ("lake", "sidecar") or bool(index_tally.counts["files"])
    summary = tally.summary(stats, index_tally if indexed else None)
    if array is not None:
        array.close()
    else:
        _write_summary(args, out, summary, rows, choice if indexed else None)
    return finish_run(tally.failed, summary["files"], "could not be read")


def _write_summary(
    args: argparse.Namespace,
    out: TextIO,
    summary: dict[str, Any],
    rows: list[dict[str, Any]],
    indexed: str | None,
) -> None:
    """The summary as JSON, or the table (unless ``--summary``) and the summary's lines."""
    if args.json:
        write_json(out, summary)
        return
    if not args.summary:
        print_table(out, rows, ["file", "row_group", "num_rows", "kept", "rule", "reason"])
    if indexed is not None:
        text = _index_summary_text(summary["sidecar_index"])
        if indexed != "sidecar":
            text = text.replace("sidecar indexes:", "lake index:", 1)
        out.write(text + "\n")
    out.write(_prune_summary_text(summary) + "\n")
