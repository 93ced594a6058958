"""The probe command: which row groups or files may hold the given values."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from ..errors import (
    InvalidArgumentError,
    PyBloomError,
)
from ..io.base import SourceStats, location_text
from ..paimon.files import prune_paimon
from ..parquet import ColumnDescriptor
from ..predicate import Eq, TextLiteral
from ..pruning.api import probe
from ..pruning.verdicts import Rule
from ..read.reader import BloomReader
from ..values import parse_text_value
from .cli_args import make_reader
from .cli_inspect import paimon_type
from .cli_output import (
    ColumnCheck,
    Progress,
    decided_rows,
    decided_text,
    expand_inputs,
    finish_run,
    fraction,
    plural_s,
    print_table,
    probe_values,
    raise_if_not_about_the_file,
    unreadable_of,
    write_json,
)

# ---- probe ----------------------------------------------------------------------------


def _typed(text: str, column: ColumnDescriptor) -> Any:
    """An int for text that the column reads as an int (shown as a number), else the text.

    Probing the int is probing the text: ``encode_text`` is ``encode_value`` of
    ``parse_text_value``.
    """
    try:
        value = parse_text_value(text, column)
    except PyBloomError:
        return TextLiteral(text)
    return value if type(value) is int else TextLiteral(text)


def _value_key(value: Any) -> tuple[str, Any]:
    return ("text", value.text) if isinstance(value, TextLiteral) else ("int", value)


def _file_rows(
    path: str, column: str, texts: Sequence[str], reason: str, rule: Rule
) -> list[dict[str, Any]]:
    """Rows for a whole file kept without a look at its row groups (unreadable, no column)."""
    return [
        {"file": path, "row_group": None, "column": column, "value": text, "kept": True,
         "reason": reason, "rule": rule.value}
        for text in texts
    ]  # fmt: skip


async def _probe_parquet(
    args: argparse.Namespace,
    column: str,
    texts: Sequence[str],
    reader: BloomReader,
    progress: Progress,
    kept: dict[str, Any],
) -> list[dict[str, Any]]:
    """Rows per file, row group and value; ``kept`` gets each value some row group keeps."""
    files, unreadable = await expand_inputs(args.paths, reader)
    rows: list[dict[str, Any]] = []
    for exc in unreadable:
        rows += _file_rows(exc.path or "", column, texts, str(exc), Rule.UNREADABLE)
        kept.update((t, t) for t in texts if t not in kept)
    check = ColumnCheck([column])
    for done, location in enumerate(files, 1):
        path = location_text(location)
        try:
            footer = await reader.footer(location)
            missing = check.see(path, footer.metadata.schema)
            if missing:
                reason = f"{column}: {missing[column].message}"
                rows += _file_rows(path, column, texts, reason, Rule.MISSING_COLUMN)
                kept.update((t, t) for t in texts if t not in kept)
                continue
            desc = footer.metadata.schema.column(column)
            values = [_typed(t, desc) for t in texts]
            texts_of: dict[tuple[str, Any], list[str]] = {}
            for t, v in zip(texts, values, strict=True):  # 4 and 04: one value of an int column
                texts_of.setdefault(_value_key(v), []).append(t)
            for result in await probe(location, column, values, reader=reader):
                row = result.to_dict()
                if row["kept"]:
                    for t in texts_of[_value_key(result.value)]:
                        kept.setdefault(t, row["value"])
                rows.append(row)
        except PyBloomError as exc:
            raise_if_not_about_the_file(exc)
            rows += _file_rows(path, column, texts, f"file not read: {exc}", Rule.UNREADABLE)
            kept.update((t, t) for t in texts if t not in kept)
        finally:
            reader.clear()  # one file at a time: nothing to keep
            progress(done, len(files))
    check.raise_absent()
    return rows


async def _probe_paimon(
    args: argparse.Namespace,
    column: str,
    texts: Sequence[str],
    reader: BloomReader,
    kept: dict[str, Any],
) -> list[dict[str, Any]]:
    """Rows per file and value; ``kept`` gets each value some file keeps."""
    root, _ = paimon_type(args.paimon_type)
    as_int = root in ("TINYINT", "SMALLINT", "INT", "BIGINT")
    rows: list[tuple[int, int, dict[str, Any]]] = []
    for v, text in enumerate(texts):
        verdicts = await prune_paimon(
            args.paths, Eq(column, TextLiteral(text)), {column: args.paimon_type}, reader=reader
        )
        value: Any = int(text) if as_int and re.fullmatch(r"[-+]?\d+", text) else text
        for f, verdict in enumerate(verdicts):
            if verdict.kept:
                kept.setdefault(text, value)
            rows.append((f, v, {"file": verdict.file, "row_group": None, "column": column,
                                "value": value, "kept": verdict.kept, "reason": verdict.reason,
                                "rule": verdict.rule.value}))  # fmt: skip
    return [row for _, _, row in sorted(rows, key=lambda r: (r[0], r[1]))]


def _probe_summary(
    rows: Sequence[Mapping[str, Any]],
    texts: Sequence[str],
    kept: Mapping[str, Any],
    stats: SourceStats,
) -> dict[str, Any]:
    return {
        "values": len(set(texts)),
        "values_kept": len(kept),
        "kept_values": [kept[t] for t in texts if t in kept][:5],
        **decided_rows(rows),
        "requests": stats.requests,
        "bytes_read": stats.bytes_read,
    }


def _probe_summary_text(s: Mapping[str, Any]) -> str:
    shown = ", ".join(str(v) for v in s["kept_values"])
    more = ", ..." if s["values_kept"] > len(s["kept_values"]) else ""
    values = f"{fraction(s['values_kept'], s['values'], 'value')} kept"
    if shown:
        values += f" ({shown}{more})"
    return f"{values}; {decided_text(s)}; {plural_s(s['requests'], 'request')}, " + (
        f"{plural_s(s['bytes_read'], 'byte')} read"
    )


async def cmd_probe(args: argparse.Namespace, out: TextIO) -> int:
    if not args.column or len(set(args.column)) > 1:
        given = f", not {', '.join(dict.fromkeys(args.column))}" if args.column else ""
        raise InvalidArgumentError(
            f"probe takes one column{given}: --column NAME (prune --where takes several)"
        )
    column = args.column[0]
    texts = probe_values(args)
    stats = SourceStats()
    reader = make_reader(args, stats)
    kept: dict[str, Any] = {}  # text -> value as shown, for the values some row group keeps
    with Progress(sys.stderr) as progress:
        if args.paimon_type:
            rows = await _probe_paimon(args, column, texts, reader, kept)
        else:
            rows = await _probe_parquet(args, column, texts, reader, progress, kept)
    summary = _probe_summary(rows, texts, kept, stats)
    if args.summary and args.json:
        write_json(out, summary)
    elif args.json:
        write_json(out, rows)
    else:
        if not args.summary:
            print_table(out, rows, ["file", "row_group", "column", "value", "kept", "reason"])
        out.write(_probe_summary_text(summary) + "\n")
    return finish_run(unreadable_of(rows), summary["files"], "could not be read")
