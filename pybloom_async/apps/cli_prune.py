"""The prune command: row groups and files a predicate keeps, from filters or sidecar indexes."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from ..errors import (
    InvalidArgumentError,
)
from ..index.prune import prune_with_index
from ..io.base import SourceStats
from ..paimon.files import prune_paimon
from ..predicate import parse_predicate
from ..pruning.api import prune
from ..pruning.verdicts import Rule, Verdict
from .cli_args import make_reader, reader_config, store_options
from .cli_inspect import paimon_types
from .cli_output import (
    Progress,
    decided_rows,
    decided_text,
    expand_inputs,
    finish_run,
    fraction,
    plural_s,
    print_table,
    text_argument,
    unreadable_of,
    write_json,
)

# ---- prune ----------------------------------------------------------------------------


def _prune_summary(
    verdicts: Sequence[Verdict], stats: SourceStats, index_verdicts: Sequence[Verdict] | None
) -> dict[str, Any]:
    rows = [v.to_dict() for v in verdicts]
    summary = {
        **decided_rows(rows),
        # Row-group verdicts count their rows, file-level ones (sidecar indexes) the file's.
        "rows": sum(v.num_rows or 0 for v in verdicts),
        "rows_kept": sum(v.num_rows or 0 for v in verdicts if v.kept),
    }
    if index_verdicts is not None:
        skipped = [v for v in index_verdicts if not v.kept]
        summary["sidecar_index"] = {
            "files": len(index_verdicts),
            "files_skipped": len(skipped),
            "rows_skipped": sum(v.num_rows or 0 for v in skipped),
            **{rule.value: sum(v.rule is rule for v in index_verdicts)
               for rule in (Rule.STALE_INDEX, Rule.NO_INDEX, Rule.UNREADABLE)},
        }  # fmt: skip
    summary["requests"] = stats.requests
    summary["bytes_read"] = stats.bytes_read
    return summary


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
    index_verdicts: list[Verdict] = []
    verdicts: list[Verdict] = []
    with Progress(sys.stderr) as progress:
        if args.paimon_types:
            if args.use_index:
                raise InvalidArgumentError("--use-index does not apply to Paimon data files")
            verdicts = await prune_paimon(
                args.paths, where, paimon_types(args.paimon_types), strict=args.strict,
                reader=make_reader(args, stats), concurrency=args.concurrency,
            )  # fmt: skip
        else:
            reader = make_reader(args, stats)
            files, unreadable = await expand_inputs(args.paths, reader, args.strict)
            verdicts = [
                Verdict(exc.path or "", None, None, True, str(exc), Rule.UNREADABLE)
                for exc in unreadable
            ]
            # prune's own reader drops each file's footer and filters once it is decided.
            common: dict[str, Any] = dict(
                strict=args.strict, options=store_options(args), stats=stats,
                config=reader_config(args), concurrency=args.concurrency, progress=progress,
            )  # fmt: skip
            if files and args.use_index:
                verdicts += await prune_with_index(
                    files, where, index_verdicts=index_verdicts, **common
                )
            elif files:
                verdicts += await prune(files, where, **common)
    summary = _prune_summary(verdicts, stats, index_verdicts if args.use_index else None)
    if args.summary and args.json:
        write_json(out, summary)
    elif args.json:
        write_json(out, [v.to_dict() for v in verdicts])
    else:
        if not args.summary:
            rows = [v.to_dict() for v in verdicts]
            print_table(out, rows, ["file", "row_group", "num_rows", "kept", "rule", "reason"])
        if args.use_index:
            out.write(_index_summary_text(summary["sidecar_index"]) + "\n")
        out.write(_prune_summary_text(summary) + "\n")
    failed = unreadable_of([v.to_dict() for v in verdicts])
    return finish_run(failed, summary["files"], "could not be read")
