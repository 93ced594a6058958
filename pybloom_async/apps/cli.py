"""The ``pybloom-async`` command line: probe, prune and inspect Parquet Bloom filters.

Every command takes files, directories and object-store prefixes; a file named
twice (directly and through its directory) is read once. An input that cannot
be read (a missing path, a file that is not Parquet, a refused listing) does not
stop the run: it is reported by name, in the output and in one line on stderr,
and the exit code says so. ``--json`` prints one JSON array (``--summary
--json``: one JSON object). Object stores take their credentials from the
standard environment variables (AWS_*, AZURE_*, GOOGLE_*) unless given as
options.

Exit codes:

* 0: every input was read (and, for ``add-filters`` and ``index build``, done);
* 1: the run failed: an unexpected error, or ``--strict`` stopped at a problem;
* 2: a usage or input error (a bad option or predicate, a column no file has),
  reported as one line on stderr before any result;
* 3: some inputs could not be read (or rewritten, or indexed); the results of
  all the others were printed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, NoReturn, TextIO

import anyio

from .. import __version__
from ..errors import (
    InvalidArgumentError,
    MissingDependencyError,
    PaimonIndexError,
    PredicateError,
    PyBloomError,
    SourceError,
    UnsupportedTypeError,
)
from ..index.build import IndexBuild, build_index
from ..index.prune import prune_with_index
from ..io.base import FileInfo, SourceStats
from ..io.store import StoreOptions
from ..paimon.container import is_paimon_file_index, parse_paimon_file_index
from ..paimon.types import paimon_type_info
from ..parquet import ColumnDescriptor, Schema, parse_text_value
from ..predicate import Eq, TextLiteral, parse_predicate
from ..pruning.api import probe, prune
from ..pruning.paimon_files import MAX_PAIMON_INDEX_BYTES, prune_paimon
from ..pruning.runner import expand_paths
from ..pruning.verdicts import Rule, Verdict
from ..read.fetch import FilterState, ReaderConfig
from ..read.reader import BloomReader
from ..rewrite.add_filters import DEFAULT_ADD_MAX_BYTES, AddFiltersResult, add_bloom_filters_async

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_UNREADABLE = 3

EXIT_CODES = """\
exit codes:
  0  every input was read (add-filters, index build: and done)
  1  the run failed: an unexpected error, or --strict stopped at a problem
  2  usage or input error (bad option or predicate, a column no file has)
  3  some inputs could not be read (or rewritten, or indexed); the results
     of all the others were printed"""

#: Unreadable inputs named in a summary line and in the note on stderr.
_NAMED = 3


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _CommaList(argparse.Action):
    """``--columns a,b``: adds each comma-separated name to the list ``--column`` fills."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        names = [n.strip() for n in str(values).split(",") if n.strip()]
        if not names:
            parser.error(f"{option_string} wants comma-separated column paths, got {values!r}")
        setattr(namespace, self.dest, [*(getattr(namespace, self.dest) or []), *names])


def _column_args(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--column",
        "-c",
        dest="columns",
        action="append",
        metavar="COLUMN",
        help=f"{what}: a dotted column path (repeatable)",
    )
    p.add_argument(
        "--columns",
        dest="columns",
        action=_CommaList,
        metavar="A,B",
        help="the same, comma-separated: id,email",
    )


def _store_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("object stores (default: the standard environment variables)")
    g.add_argument("--endpoint", help="endpoint URL (S3-compatible servers, Azurite, ...)")
    g.add_argument("--region", help="S3 region")
    g.add_argument("--allow-http", action="store_true", default=None, help="allow plain HTTP")
    g.add_argument(
        "--skip-signature",
        action="store_true",
        default=None,
        help="anonymous requests (public buckets)",
    )
    g.add_argument("--timeout", type=float, default=30.0, help="request timeout, seconds")
    g.add_argument("--max-retries", type=int, default=5, help="retries per request")
    g.add_argument("--concurrency", type=int, default=64, help="files read at once")
    g.add_argument(
        "--footer-read",
        type=int,
        default=64 * 1024,
        help="bytes of the speculative footer read (default 65536)",
    )


def _options(args: argparse.Namespace) -> StoreOptions:
    return StoreOptions(
        endpoint=args.endpoint,
        region=args.region,
        allow_http=args.allow_http,
        skip_signature=args.skip_signature,
        timeout=args.timeout,
        max_retries=args.max_retries,
    )


def _config(args: argparse.Namespace) -> ReaderConfig:
    return ReaderConfig(footer_read_bytes=args.footer_read, concurrency=args.concurrency)


def _reader(args: argparse.Namespace, stats: SourceStats) -> BloomReader:
    return BloomReader(config=_config(args), options=_options(args), stats=stats, max_files=1 << 20)


def _command(
    sub: Any, name: str, help_text: str, examples: str
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help_text,
        description=help_text[:1].upper() + help_text[1:] + ".",
        epilog=f"example:\n{examples}\n\n{EXIT_CODES}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for the documentation and the tests)."""
    parser = _Parser(
        prog="pybloom-async",
        description="Probe, prune and inspect Parquet Split Block Bloom Filters.",
        epilog=(
            "example:\n"
            "  pybloom-async prune s3://lake/events/ --where \"user_id = 42\" --summary\n"
            "  pybloom-async COMMAND --help    (an example for each command)\n\n" + EXIT_CODES
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = _command(
        sub,
        "probe",
        "whether row groups may hold values of one column (kept) or rule them out",
        "  pybloom-async probe data.parquet --column user_id --value 42 --value 43\n"
        "  pybloom-async probe lake/ -c email --values-from emails.txt --summary",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="files, directories or prefixes")
    p.add_argument("--column", "-c", action="append", metavar="COLUMN", help="a dotted column path")
    p.add_argument(
        "--value",
        "-v",
        action="append",
        default=[],
        help="a value, read by the column's type (repeatable): 42, -0.0, nan, "
        "2024-01-31, 2024-01-31T12:00:00Z, UUIDs, 0x00ff for binary, text as is",
    )
    p.add_argument(
        "--values-from",
        metavar="FILE",
        help="more values, one per line exactly as written (blank lines are skipped); "
        "- reads standard input",
    )
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.add_argument(
        "--summary",
        action="store_true",
        help="print totals only (with --json: one JSON object)",
    )
    p.add_argument(
        "--paimon-type",
        metavar="TYPE",
        help="PATHs are Apache Paimon data files (or their .index containers) and the "
        "column has this Paimon type (BIGINT, VARCHAR, TIMESTAMP(3), ...)",
    )
    _store_args(p)

    p = _command(
        sub,
        "prune",
        "which row groups may hold rows matching a predicate",
        "  pybloom-async prune s3://lake/events/ --where \"user_id = 42 AND country = 'DE'\"\n"
        "  pybloom-async prune lake/ --where @ids.sql --summary --json",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="files, directories or prefixes")
    p.add_argument(
        "--where",
        "-w",
        required=True,
        metavar="PREDICATE",
        help="e.g. \"id = 42 AND email IN ('a', 'b')\"; @FILE reads it from a file, "
        "- from standard input (for long IN lists)",
    )
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.add_argument(
        "--strict",
        action="store_true",
        help="fail on damaged filters or unreadable files instead of keeping them",
    )
    p.add_argument(
        "--summary",
        action="store_true",
        help="print totals only (with --json: one JSON object)",
    )
    p.add_argument(
        "--paimon-types",
        metavar="COL=TYPE,...",
        help="PATHs are Apache Paimon data files (each with <file>.index) whose "
        "columns have these Paimon types, e.g. id=BIGINT,name=VARCHAR",
    )
    p.add_argument(
        "--use-index",
        action="store_true",
        help="skip files by their sidecar indexes (_bloom_index/) first, then prune the "
        "row groups of the files kept",
    )
    _store_args(p)

    p = _command(
        sub,
        "inspect",
        "the Bloom filters of files, per row group and column",
        "  pybloom-async inspect data.parquet --columns id,email",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="files, directories or prefixes")
    _column_args(p, "only these columns")
    p.add_argument("--json", action="store_true", help="print a JSON array")
    _store_args(p)

    p = sub.add_parser(
        "index",
        help="file-level sidecar indexes (_bloom_index/)",
        description="File-level sidecar indexes (_bloom_index/).",
        epilog="example:\n  pybloom-async index build lake/ --columns id,email\n\n" + EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    index_sub = p.add_subparsers(dest="index_command", required=True, metavar="COMMAND")
    p = _command(
        index_sub,
        "build",
        "build (or replace) the sidecar index of each file",
        "  pybloom-async index build s3://lake/events/ --columns user_id,email",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="files, directories or prefixes")
    _column_args(p, "index these columns (required)")
    p.add_argument("--fpp", type=float, default=0.01, help="false-positive rate (default 0.01)")
    p.add_argument(
        "--ndv", type=int, help="size every filter for N distinct values (default: exact count)"
    )
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.add_argument("--strict", action="store_true", help="stop at the first file that fails")
    _store_args(p)
    p.set_defaults(concurrency=None)  # files indexed at once: the number of CPUs

    p = _command(
        sub,
        "add-filters",
        "add Bloom filters to Parquet files that have none",
        "  pybloom-async add-filters lake/ --columns user_id,email --fpp 0.01",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="files, directories or prefixes")
    _column_args(p, "add filters to these columns, a group: all its leaves (required)")
    p.add_argument("--ndv", type=int, help="size filters for at most N distinct values per chunk")
    p.add_argument("--fpp", type=float, default=0.01, help="false-positive rate (default 0.01)")
    p.add_argument(
        "--max-bytes",
        type=int,
        default=DEFAULT_ADD_MAX_BYTES,
        help=f"largest bitset per filter (default {DEFAULT_ADD_MAX_BYTES})",
    )
    p.add_argument("--out", help="write the result here instead of replacing PATH (one PATH)")
    p.add_argument("--replace", action="store_true", help="rebuild filters that already exist")
    p.add_argument("--json", action="store_true", help="print a JSON array, one object per file")
    p.add_argument("--strict", action="store_true", help="stop at the first file that fails")
    _store_args(p)
    return parser


# ---- inputs ---------------------------------------------------------------------------


def _text_argument(option: str, value: str) -> str:
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


def _probe_values(args: argparse.Namespace) -> list[str]:
    """The --value texts, then the lines of --values-from, in order."""
    texts = list(args.value)
    if args.values_from is not None:
        lines = _read_file("--values-from", args.values_from).split("\n")
        texts.extend(line.removesuffix("\r") for line in lines if line.strip())
    if not texts:
        raise InvalidArgumentError("give the values: --value V (repeatable) or --values-from FILE")
    return texts


def _required_columns(args: argparse.Namespace) -> list[str]:
    if not args.columns:
        raise InvalidArgumentError("give the columns: --column NAME (repeatable) or --columns A,B")
    return list(dict.fromkeys(args.columns))


def _path_of(location: str | FileInfo) -> str:
    return location.path if isinstance(location, FileInfo) else location


async def _expand(
    paths: Sequence[str], reader: BloomReader, strict: bool = False
) -> tuple[list[str | FileInfo], list[SourceError]]:
    """The files to read, and the inputs that named none (or could not be listed)."""
    unreadable: list[SourceError] = []
    files = await expand_paths(paths, reader, unreadable=unreadable)
    if strict and unreadable:
        raise unreadable[0]
    return files, unreadable


class _ColumnCheck:
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


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else plural or word + 's'}"


def _frac(part: int, whole: int, word: str, plural: str | None = None) -> str:
    return f"{part:,}/{_plural(whole, word, plural)}"


def _requests(stats: SourceStats) -> str:
    return f"{_plural(stats.requests, 'request')}, {_plural(stats.bytes_read, 'byte')} read"


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _unreadable_text(files: Sequence[str], total: int) -> str:
    """``N unreadable: a, b, c, ...``: the count, and the first few of the files."""
    if not total:
        return "0 unreadable"
    shown = ", ".join(files[:_NAMED])
    return f"{total:,} unreadable: {shown}" + (", ..." if total > len(files[:_NAMED]) else "")


def _write_json(out: TextIO, data: Any) -> None:
    json.dump(data, out, ensure_ascii=False)
    out.write("\n")


def _table(out: TextIO, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> None:
    # Written by hand: rich's Table took 2.5 s for 10,000 rows, this takes 10 ms.
    cells = [[("" if r.get(c) is None else str(r.get(c))) for c in columns] for r in rows]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]
    out.write("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip() + "\n")
    for row in cells:
        out.write("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() + "\n")


class _Progress:
    """A progress bar on stderr (tqdm), shown only on a terminal and for two files or more."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.enabled = stream.isatty()
        self.bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < 2:
            return
        if self.bar is None or self.bar.total != total or done < self.bar.n:
            # A new pass (prune --use-index reads the indexes, then the files kept).
            self.close()
            from tqdm import tqdm  # imported only when a bar is shown: no start-up cost

            self.bar = tqdm(total=total, unit="file", file=self.stream)
        self.bar.update(done - self.bar.n)
        if done >= total:
            self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> _Progress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _finish(failed: Sequence[tuple[str, str]], total: int, what: str) -> int:
    """The exit code; when inputs failed, one line on stderr naming the first few."""
    if not failed:
        return EXIT_OK
    shown = "; ".join(f"{name}: {_clip(reason)}" for name, reason in failed[:_NAMED])
    more = f"; ... ({len(failed)} in all)" if len(failed) > _NAMED else ""
    print(
        f"pybloom-async: {_frac(len(failed), total, 'input')} {what}: {shown}{more}",
        file=sys.stderr,
    )
    return EXIT_UNREADABLE


def _unreadable_of(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(file, reason) of each file with an ``unreadable`` verdict, once."""
    found: dict[str, str] = {}
    for r in rows:
        if r.get("rule") == Rule.UNREADABLE.value or r.get("state") == Rule.UNREADABLE.value:
            found.setdefault(r["file"], str(r.get("reason")))
    return list(found.items())


def _decided(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
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
    unreadable = [name for name, _ in _unreadable_of(rows)]
    return {
        "row_groups": len(groups),
        "row_groups_kept": sum(groups.values()),
        "files": len(files),
        "files_kept": sum(files.values()),
        "unreadable": len(unreadable),
        "unreadable_files": unreadable[:_NAMED],
        "missing_column_row_groups": len(missing_groups),
        "missing_column_files": len(missing_files),
    }


def _decided_text(s: Mapping[str, Any]) -> str:
    """The shared part of a summary line: kept row groups and files, unreadable, missing."""
    if s["row_groups"]:
        kept = (
            f"{_frac(s['row_groups_kept'], s['row_groups'], 'row group')} kept "
            f"in {_frac(s['files_kept'], s['files'], 'file')}"
        )
    else:  # file-level verdicts only (Paimon, sidecar indexes, nothing readable)
        kept = f"{_frac(s['files_kept'], s['files'], 'file')} kept"
    parts = [kept]
    parts.append(_unreadable_text(s["unreadable_files"], s["unreadable"]))
    if s["missing_column_files"]:
        where = _plural(s["missing_column_files"], "file")
        if s["missing_column_row_groups"]:
            where = f"{_plural(s['missing_column_row_groups'], 'row group')} in {where}"
        parts.append(f"{where} kept for a missing column")
    return "; ".join(parts)


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


def _raise_if_not_about_the_file(exc: PyBloomError) -> None:
    """Re-raise what no other file would change: the user's input or a missing package.

    A value that is not of its column's type (``PredicateError``) is exit 2, a missing
    pyarrow exit 1, for the whole run; only the file's own faults make it ``unreadable``.
    """
    if isinstance(exc, (PredicateError, MissingDependencyError)):
        raise exc


async def _probe_parquet(
    args: argparse.Namespace,
    column: str,
    texts: Sequence[str],
    reader: BloomReader,
    progress: _Progress,
    kept: dict[str, Any],
) -> list[dict[str, Any]]:
    """Rows per file, row group and value; ``kept`` gets each value some row group keeps."""
    files, unreadable = await _expand(args.paths, reader)
    rows: list[dict[str, Any]] = []
    for exc in unreadable:
        rows += _file_rows(exc.path or "", column, texts, str(exc), Rule.UNREADABLE)
        kept.update((t, t) for t in texts if t not in kept)
    check = _ColumnCheck([column])
    for done, location in enumerate(files, 1):
        path = _path_of(location)
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
            _raise_if_not_about_the_file(exc)
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
    root, _ = _paimon_type(args.paimon_type)
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
        **_decided(rows),
        "requests": stats.requests,
        "bytes_read": stats.bytes_read,
    }


def _probe_summary_text(s: Mapping[str, Any]) -> str:
    shown = ", ".join(str(v) for v in s["kept_values"])
    more = ", ..." if s["values_kept"] > len(s["kept_values"]) else ""
    values = f"{_frac(s['values_kept'], s['values'], 'value')} kept"
    if shown:
        values += f" ({shown}{more})"
    return f"{values}; {_decided_text(s)}; {_plural(s['requests'], 'request')}, " + (
        f"{_plural(s['bytes_read'], 'byte')} read"
    )


async def _cmd_probe(args: argparse.Namespace, out: TextIO) -> int:
    if not args.column or len(set(args.column)) > 1:
        raise InvalidArgumentError("probe takes one column: --column NAME")
    column = args.column[0]
    texts = _probe_values(args)
    stats = SourceStats()
    reader = _reader(args, stats)
    kept: dict[str, Any] = {}  # text -> value as shown, for the values some row group keeps
    with _Progress(sys.stderr) as progress:
        if args.paimon_type:
            rows = await _probe_paimon(args, column, texts, reader, kept)
        else:
            rows = await _probe_parquet(args, column, texts, reader, progress, kept)
    summary = _probe_summary(rows, texts, kept, stats)
    if args.summary and args.json:
        _write_json(out, summary)
    elif args.json:
        _write_json(out, rows)
    else:
        if not args.summary:
            _table(out, rows, ["file", "row_group", "column", "value", "kept", "reason"])
        out.write(_probe_summary_text(summary) + "\n")
    return _finish(_unreadable_of(rows), summary["files"], "could not be read")


# ---- prune ----------------------------------------------------------------------------


def _prune_summary(
    verdicts: Sequence[Verdict], stats: SourceStats, index_verdicts: Sequence[Verdict] | None
) -> dict[str, Any]:
    rows = [v.to_dict() for v in verdicts]
    summary = {
        **_decided(rows),
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
    text = _decided_text(s)
    if s["rows"]:
        first, rest = text.split("; ", 1)
        text = f"{first} ({s['rows_kept']:,}/{_plural(s['rows'], 'row')}); {rest}"
    return f"{text}; {_plural(s['requests'], 'request')}, {_plural(s['bytes_read'], 'byte')} read"


def _index_summary_text(s: Mapping[str, Any]) -> str:
    """One line: what the sidecar indexes decided, file by file."""
    return (
        f"sidecar indexes: {_frac(s['files_skipped'], s['files'], 'file')} skipped "
        f"({_plural(s['rows_skipped'], 'row')}); {s[Rule.STALE_INDEX.value]:,} stale, "
        f"{s[Rule.NO_INDEX.value]:,} missing or unusable (or without the column), "
        f"{s[Rule.UNREADABLE.value]:,} unreadable"
    )


async def _cmd_prune(args: argparse.Namespace, out: TextIO) -> int:
    where = parse_predicate(_text_argument("--where", args.where))
    stats = SourceStats()
    index_verdicts: list[Verdict] = []
    verdicts: list[Verdict] = []
    with _Progress(sys.stderr) as progress:
        if args.paimon_types:
            if args.use_index:
                raise InvalidArgumentError("--use-index does not apply to Paimon data files")
            verdicts = await prune_paimon(
                args.paths, where, _paimon_types(args.paimon_types), strict=args.strict,
                reader=_reader(args, stats), concurrency=args.concurrency,
            )  # fmt: skip
        else:
            files, unreadable = await _expand(args.paths, _reader(args, stats), args.strict)
            verdicts = [
                Verdict(exc.path or "", None, None, True, str(exc), Rule.UNREADABLE)
                for exc in unreadable
            ]
            # prune's own reader drops each file's footer and filters once it is decided.
            common: dict[str, Any] = dict(
                strict=args.strict, options=_options(args), stats=stats, config=_config(args),
                concurrency=args.concurrency, progress=progress,
            )  # fmt: skip
            if files and args.use_index:
                verdicts += await prune_with_index(
                    files, where, index_verdicts=index_verdicts, **common
                )
            elif files:
                verdicts += await prune(files, where, **common)
    summary = _prune_summary(verdicts, stats, index_verdicts if args.use_index else None)
    if args.summary and args.json:
        _write_json(out, summary)
    elif args.json:
        _write_json(out, [v.to_dict() for v in verdicts])
    else:
        if not args.summary:
            rows = [v.to_dict() for v in verdicts]
            _table(out, rows, ["file", "row_group", "num_rows", "kept", "rule", "reason"])
        if args.use_index:
            out.write(_index_summary_text(summary["sidecar_index"]) + "\n")
        out.write(_prune_summary_text(summary) + "\n")
    failed = _unreadable_of([v.to_dict() for v in verdicts])
    return _finish(failed, summary["files"], "could not be read")


def _paimon_type(name: str) -> tuple[str, str]:
    try:
        return paimon_type_info(name)
    except UnsupportedTypeError as exc:
        raise InvalidArgumentError(exc.message) from None


def _paimon_types(text: str) -> dict[str, str]:
    types: dict[str, str] = {}
    for part in text.split(","):
        column, sep, type_name = part.partition("=")
        if not sep or not column.strip() or not type_name.strip():
            raise PredicateError(f"--paimon-types wants COLUMN=TYPE pairs, got {part!r}")
        _paimon_type(type_name.strip())
        types[column.strip()] = type_name.strip()
    return types


# ---- inspect --------------------------------------------------------------------------

_INSPECT_COLUMNS = ["row_group", "column", "state", "offset", "length", "num_bytes",
                    "fill_ratio", "estimated_ndv", "estimated_fpp", "reason"]  # fmt: skip
_PAIMON_COLUMNS = ["column", "index_type", "start", "length", "empty", "num_bits",
                   "num_hash_functions", "bits_set", "error", "reason"]  # fmt: skip


async def _paimon_container(reader: BloomReader, location: str) -> bytes | None:
    """The file's bytes if it is a Paimon file-index container, else None."""
    async with reader.open(location) as source:
        size = await source.size()
        if size < 8 or not is_paimon_file_index(await source.read_range(0, 8)):
            return None
        if size > MAX_PAIMON_INDEX_BYTES:
            raise PaimonIndexError(
                f"Paimon index of {size} bytes is above the limit", path=location
            )
        return await source.read_range(0, size)


def _file_row(path: str, column: str | None, state: str, reason: str) -> dict[str, Any]:
    return {"file": path, "row_group": None, "column": column, "state": state, "reason": reason}


async def _inspect_file(
    reader: BloomReader, location: str | FileInfo, check: _ColumnCheck | None
) -> list[dict[str, Any]]:
    path = _path_of(location)
    if not path.lower().endswith(".parquet"):  # a Paimon container is named <data file>.index
        container = await _paimon_container(reader, path)
        if container is not None:
            described = parse_paimon_file_index(container).describe()
            return [{"file": path, **row} for row in described
                    if check is None or row["column"] in check.names]  # fmt: skip
    rows: list[dict[str, Any]] = []
    columns: list[str] | None = None
    if check is not None:
        footer = await reader.footer(location)
        missing = check.see(path, footer.metadata.schema)
        for name, exc in missing.items():
            rows.append(_file_row(path, name, Rule.MISSING_COLUMN.value, exc.message))
        columns = [c for c in check.names if c not in missing]
        if not columns:
            return rows
    footer, filters = await reader.footer_and_filters(location, columns)
    schema = footer.metadata.schema
    # Schema order: the file's column order within each row group.
    order = sorted(filters, key=lambda key: (key[0], schema.column(key[1]).index))
    for g, column in order:
        read = filters[(g, column)]
        chunk = footer.metadata.row_groups[g].columns[schema.column(column).index]
        row: dict[str, Any] = {
            "file": footer.path,
            "row_group": g,
            "column": column,
            "physical_type": chunk.physical_type.name,
            "num_values": chunk.num_values,
            "state": read.state.value,
            "offset": chunk.bloom_filter_offset,
            "length": chunk.bloom_filter_length,
            "num_bytes": None,
            "fill_ratio": None,
            "estimated_ndv": None,
            "estimated_fpp": None,
            "reason": read.reason,
        }
        if read.state is FilterState.OK and read.filter is not None:
            f = read.filter
            ndv = f.estimated_ndv()
            row.update(
                num_bytes=f.num_bytes,
                fill_ratio=float(f"{f.fill_ratio:.4g}"),
                estimated_ndv=round(ndv),
                estimated_fpp=float(f"{f.estimated_fpp(ndv):.3g}"),
            )
        rows.append(row)
    return rows


def _inspect_total(rows: Sequence[Mapping[str, Any]], inputs: int, stats: SourceStats) -> str:
    filters = [r for r in rows if r.get("row_group") is not None or "index_type" in r]
    states: dict[str, int] = {}
    for r in filters:
        state = r.get("state") or ("unusable" if r.get("error") else "ok")
        states[state] = states.get(state, 0) + 1
    by_state = ", ".join(f"{n:,} {state}" for state, n in sorted(states.items()))
    unreadable = [name for name, _ in _unreadable_of(rows)]
    missing = sum(r.get("state") == Rule.MISSING_COLUMN.value for r in rows)
    parts = [
        f"{_plural(len(filters), 'filter')} in {_plural(inputs, 'file')}"
        + (f": {by_state}" if by_state else ""),
        f"{_plural(sum(r.get('num_bytes') or 0 for r in filters), 'byte')} of bitsets",
    ]
    parts.append(_unreadable_text(unreadable, len(unreadable)))
    if missing:
        parts.append(f"{_plural(missing, 'column')} missing from a file")
    return "; ".join(parts) + f"; {_requests(stats)}"


async def _cmd_inspect(args: argparse.Namespace, out: TextIO) -> int:
    stats = SourceStats()
    reader = _reader(args, stats)
    check = _ColumnCheck(list(dict.fromkeys(args.columns))) if args.columns else None
    files, unreadable = await _expand(args.paths, reader)
    rows = [_file_row(exc.path or "", None, Rule.UNREADABLE.value, str(exc)) for exc in unreadable]
    with _Progress(sys.stderr) as progress:
        for done, location in enumerate(files, 1):
            try:
                rows += await _inspect_file(reader, location, check)
            except PyBloomError as exc:
                _raise_if_not_about_the_file(exc)
                rows.append(_file_row(_path_of(location), None, Rule.UNREADABLE.value, str(exc)))
            finally:
                reader.clear()  # one file at a time: nothing to keep
                progress(done, len(files))
    if check is not None:
        check.raise_absent()
    inputs = len(files) + len(unreadable)
    if args.json:
        _write_json(out, rows)
    else:
        paimon = bool(rows) and all("index_type" in r or r["row_group"] is None for r in rows)
        columns = _PAIMON_COLUMNS if paimon and any("index_type" in r for r in rows) else (
            _INSPECT_COLUMNS
        )
        _table(out, rows, ["file", *columns] if inputs > 1 else columns)
        out.write(_inspect_total(rows, inputs, stats) + "\n")
    return _finish(_unreadable_of(rows), inputs, "could not be read")


# ---- index build, add-filters ---------------------------------------------------------


async def _absent_column(
    reader: BloomReader, files: Sequence[str | FileInfo], names: Sequence[str], groups: bool
) -> PredicateError | None:
    """For a run where every file failed: the error of a column none of the files has."""
    check = _ColumnCheck(names, groups)
    for location in files:
        try:
            check.see(_path_of(location), (await reader.footer(location)).metadata.schema)
        except PyBloomError:
            continue  # unreadable: reported as such
        finally:
            reader.clear()
    return check.absent()


async def _cmd_index(args: argparse.Namespace, out: TextIO) -> int:
    columns = _required_columns(args)
    stats = SourceStats()
    reader = BloomReader(options=_options(args), stats=stats, max_files=0)
    files, unreadable = await _expand(args.paths, reader, args.strict)
    rows: list[dict[str, Any]] = [
        {"file": exc.path or "", "index": None, "columns": columns, "num_rows": None,
         "index_bytes": None, "error": str(exc)}
        for exc in unreadable
    ]  # fmt: skip
    builds: list[IndexBuild] = []
    with _Progress(sys.stderr) as progress:
        if files:
            builds = await build_index(
                files, columns, fpp=args.fpp, ndv=args.ndv, options=_options(args), stats=stats,
                concurrency=args.concurrency, strict=args.strict, progress=progress,
            )  # fmt: skip
    ok = [b for b in builds if b.error is None]
    absent = await _absent_column(reader, files, columns, False) if files and not ok else None
    if absent is not None:
        raise absent
    rows += [b.to_dict() for b in builds]
    if args.json:
        _write_json(out, rows)
    else:
        _table(out, rows, ["file", "index", "num_rows", "index_bytes", "error"])
        out.write(
            f"{_frac(len(ok), len(rows), 'index', 'indexes')} written "
            f"({_plural(sum(b.index_bytes or 0 for b in ok), 'byte')}); {_requests(stats)}\n"
        )
    failed = [(r["file"], r["error"]) for r in rows if r["error"] is not None]
    return _finish(failed, len(rows), "not indexed")


def _added_dict(
    path: str, result: AddFiltersResult | None, error: PyBloomError | None
) -> dict[str, Any]:
    if result is not None:
        return {**result.to_dict(), "error": None}
    return {"path": path, "out": None, "written": False, "bytes_before": None,
            "bytes_after": None, "filter_bytes": 0, "filters": [], "skipped": [],
            "error": str(error)}  # fmt: skip


async def _cmd_add_filters(args: argparse.Namespace, out: TextIO) -> int:
    columns = _required_columns(args)
    reader = BloomReader(options=_options(args), max_files=0)
    files, unreadable = await _expand(args.paths, reader, args.strict)
    if args.out is not None and (len(args.paths) != 1 or len(files) + len(unreadable) != 1):
        raise InvalidArgumentError("--out takes a single PATH (a file, not a directory)")
    done: list[tuple[str, AddFiltersResult | None, PyBloomError | None]] = [
        (exc.path or "", None, exc) for exc in unreadable
    ]
    with _Progress(sys.stderr) as progress:
        for count, location in enumerate(files, 1):
            path = _path_of(location)
            try:
                result = await add_bloom_filters_async(
                    path, columns, ndv=args.ndv, fpp=args.fpp, out=args.out,
                    max_bytes=args.max_bytes, replace=args.replace, options=_options(args),
                )  # fmt: skip
            except PyBloomError as exc:
                _raise_if_not_about_the_file(exc)
                if args.strict or (isinstance(exc, InvalidArgumentError) and exc.path is None):
                    raise  # --strict, or an option that no file can take
                done.append((path, None, exc))
            else:
                done.append((path, result, None))
            progress(count, len(files))
    absent = None
    if files and all(result is None for _, result, _ in done):
        absent = await _absent_column(reader, files, columns, True)
    if absent is not None:
        # The file's own error for that column, which lists the columns it has.
        raise next((e for _, _, e in done if e is not None and e.column == absent.column), absent)
    if args.json:
        _write_json(out, [_added_dict(*entry) for entry in done])
    else:
        for path, added, error in done:
            if added is None:
                out.write(f"{path}: failed: {error}\n")
                continue
            action = "added" if added.written else "needed (file left as it is)"
            out.write(
                f"{added.out}: {_plural(len(added.filters), 'filter')} {action}, "
                f"{_plural(added.filter_bytes, 'byte')}; {added.bytes_before:,} -> "
                f"{added.bytes_after:,} bytes\n"
            )
            for s in added.skipped:
                where = "" if s.row_group is None else f" (row group {s.row_group})"
                out.write(f"  skipped {s.column}{where}: {s.reason}\n")
        if len(done) > 1:
            results = [r for _, r, _ in done if r is not None]
            out.write(
                f"{_frac(sum(r.written for r in results), len(done), 'file')} rewritten, "
                f"{_plural(sum(len(r.filters) for r in results), 'filter')} added "
                f"({_plural(sum(r.filter_bytes for r in results), 'byte')}); "
                f"{len(done) - len(results):,} failed\n"
            )
    failed = [(path, str(error)) for path, result, error in done if result is None]
    return _finish(failed, len(done), "failed")


COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO], Any]] = {
    "probe": _cmd_probe,
    "prune": _cmd_prune,
    "inspect": _cmd_inspect,
    "add-filters": _cmd_add_filters,
    "index": _cmd_index,
}


def _describe_unexpected(exc: BaseException) -> str:
    """One line for an unexpected error; an exception group names what it holds."""
    group = getattr(exc, "exceptions", None)  # (Base)ExceptionGroup, also the 3.10 backport
    if isinstance(group, tuple) and group and all(isinstance(e, BaseException) for e in group):
        inner = "; ".join(_describe_unexpected(e) for e in group[:3])
        more = f"; ... ({len(group)} in all)" if len(group) > 3 else ""
        return f"{len(group)} errors: {inner}{more}"
    return f"{type(exc).__name__}: {exc}"


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command line; returns the exit code (see the module documentation)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        status = exc.code
        return status if isinstance(status, int) else EXIT_OK if status is None else EXIT_USAGE
    stream = out if out is not None else sys.stdout
    try:
        code: int = anyio.run(COMMANDS[args.command], args, stream)
    except PyBloomError as exc:
        print(f"pybloom-async: error: {exc}", file=sys.stderr)
        return EXIT_USAGE if isinstance(exc, ValueError) else EXIT_ERROR
    except KeyboardInterrupt:
        print("pybloom-async: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Output piped into `head` and the like: not an error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except OSError as exc:
        print(f"pybloom-async: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:  # a bug: still one line, the traceback on request
        if os.environ.get("PYBLOOM_ASYNC_DEBUG"):
            raise
        print(
            f"pybloom-async: internal error: {_describe_unexpected(exc)} "
            "(set PYBLOOM_ASYNC_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return EXIT_ERROR
    return code


if __name__ == "__main__":
    raise SystemExit(main())
