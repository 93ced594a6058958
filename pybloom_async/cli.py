"""The ``pybloom-async`` command line: probe, prune and inspect Parquet Bloom filters.

Errors go to stderr as one line and a non-zero exit (2 for usage and input
errors, 1 for anything unexpected), never a traceback. ``--json`` prints one
JSON array; otherwise a readable table. Object stores take their credentials
from the standard environment variables (AWS_*, AZURE_*, GOOGLE_*) unless
given as options.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

import anyio

from . import __version__
from .errors import InvalidArgumentError, PaimonIndexError, PredicateError, PyBloomError
from .index import build_index, prune_with_index
from .paimon import is_paimon_file_index, parse_paimon_file_index
from .predicate import Eq, TextLiteral, parse_predicate
from .prune import (
    MAX_PAIMON_INDEX_BYTES,
    Rule,
    Verdict,
    expand_paths,
    probe,
    prune,
    prune_paimon,
)
from .reader import BloomReader, FilterState, ReaderConfig
from .rewrite import DEFAULT_ADD_MAX_BYTES, add_bloom_filters_async
from .sources import FileInfo, SourceStats, StoreOptions

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


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


def _reader(args: argparse.Namespace, stats: SourceStats) -> BloomReader:
    config = ReaderConfig(footer_read_bytes=args.footer_read, concurrency=args.concurrency)
    return BloomReader(config=config, options=_options(args), stats=stats, max_files=1 << 20)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for the documentation and the tests)."""
    parser = argparse.ArgumentParser(
        prog="pybloom-async",
        description="Probe, prune and inspect Parquet Split Block Bloom Filters.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("probe", help="which row groups' filters exclude values of one column")
    p.add_argument("file", help="a Parquet file: path or URL")
    p.add_argument("--column", "-c", required=True, help="dotted column path")
    p.add_argument(
        "--value",
        "-v",
        action="append",
        required=True,
        help="a value, read by the column's type (repeatable): 42, -0.0, nan, "
        "2024-01-31, 2024-01-31T12:00:00Z, UUIDs, 0x00ff for binary, text as is",
    )
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.add_argument(
        "--paimon-type",
        metavar="TYPE",
        help="FILE is an Apache Paimon data file (or its .index container) and the "
        "column has this Paimon type (BIGINT, VARCHAR, TIMESTAMP(3), ...)",
    )
    _store_args(p)

    p = sub.add_parser("prune", help="which row groups may hold rows matching a predicate")
    p.add_argument("paths", nargs="+", help="files, directories or object-store prefixes")
    p.add_argument("--where", "-w", required=True, help="e.g. \"id = 42 AND email IN ('a', 'b')\"")
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.add_argument(
        "--strict",
        action="store_true",
        help="fail on damaged filters or unreadable files instead of keeping them",
    )
    p.add_argument("--summary", action="store_true", help="print totals only (text output)")
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

    p = sub.add_parser("inspect", help="the Bloom filters of a file, per row group and column")
    p.add_argument("file", help="a Parquet file: path or URL")
    p.add_argument("--column", "-c", action="append", help="only these columns (repeatable)")
    p.add_argument("--json", action="store_true", help="print a JSON array")
    _store_args(p)

    p = sub.add_parser("index", help="file-level sidecar indexes (_bloom_index/)")
    index_sub = p.add_subparsers(dest="index_command", required=True)
    p = index_sub.add_parser("build", help="build (or replace) the sidecar index of each file")
    p.add_argument("paths", nargs="+", help="files, directories or object-store prefixes")
    p.add_argument("--columns", required=True, help="comma-separated column paths: id,email")
    p.add_argument("--fpp", type=float, default=0.01, help="false-positive rate (default 0.01)")
    p.add_argument(
        "--ndv", type=int, help="size every filter for N distinct values (default: exact count)"
    )
    p.add_argument("--json", action="store_true", help="print a JSON array")
    p.add_argument("--strict", action="store_true", help="stop at the first file that fails")
    _store_args(p)
    p.set_defaults(concurrency=None)  # files indexed at once: the number of CPUs

    p = sub.add_parser("add-filters", help="add Bloom filters to Parquet files that have none")
    p.add_argument("paths", nargs="+", help="Parquet files: paths or object-store URLs")
    p.add_argument(
        "--columns", required=True, help="comma-separated column paths (a group: all its leaves)"
    )
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
    _store_args(p)
    return parser


# ---- commands -------------------------------------------------------------------------


async def _cmd_probe(args: argparse.Namespace, out: TextIO) -> int:
    stats = SourceStats()
    reader = _reader(args, stats)
    values = [TextLiteral(v) for v in args.value]
    if args.paimon_type:
        rows = []
        for value in values:
            (verdict,) = await prune_paimon(
                [args.file], Eq(args.column, value), {args.column: args.paimon_type},
                reader=reader,
            )  # fmt: skip
            rows.append({"file": verdict.file, "row_group": None, "column": args.column,
                         "value": value.text, "excluded": not verdict.kept,
                         "reason": verdict.reason, "rule": verdict.rule.value})  # fmt: skip
    else:
        results = await probe(args.file, args.column, values, reader=reader)
        rows = [r.to_dict() for r in results]
    if args.json:
        json.dump(rows, out, ensure_ascii=False)
        out.write("\n")
    else:
        _table(out, rows, ["file", "row_group", "column", "value", "excluded", "reason"])
    return EXIT_OK


class _Progress:
    """A one-line progress bar on stderr, shown only when stderr is a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.enabled = stream.isatty()

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total < 2:
            return
        width = 30
        filled = width * done // total
        self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} files")
        if done == total:
            self.stream.write("\n")
        self.stream.flush()


async def _cmd_prune(args: argparse.Namespace, out: TextIO) -> int:
    where = parse_predicate(args.where)
    stats = SourceStats()
    reader = _reader(args, stats)
    index_verdicts: list[Verdict] = []
    if args.paimon_types:
        if args.use_index:
            raise InvalidArgumentError("--use-index does not apply to Paimon data files")
        verdicts = await prune_paimon(
            args.paths, where, _paimon_types(args.paimon_types), strict=args.strict,
            reader=reader, concurrency=args.concurrency,
        )  # fmt: skip
    elif args.use_index:
        verdicts = await prune_with_index(
            args.paths, where, strict=args.strict, reader=reader, progress=_Progress(sys.stderr),
            index_verdicts=index_verdicts,
        )  # fmt: skip
    else:
        verdicts = await prune(
            args.paths, where, strict=args.strict, reader=reader, progress=_Progress(sys.stderr)
        )
    rows = [v.to_dict() for v in verdicts]
    if args.json:
        json.dump(rows, out, ensure_ascii=False)
        out.write("\n")
        return EXIT_OK
    if not args.summary:
        _table(out, rows, ["file", "row_group", "num_rows", "kept", "rule", "reason"])
    if args.use_index:
        _index_summary(out, index_verdicts)
    files = {v.file for v in verdicts}
    kept_files = {v.file for v in verdicts if v.kept}
    groups = [v for v in verdicts if v.row_group is not None]
    if not groups:  # file-level verdicts (Paimon, unreadable files)
        out.write(
            f"{len(kept_files)}/{len(files)} files kept; {stats.requests} requests, "
            f"{stats.bytes_read:,} bytes read\n"
        )
        return EXIT_OK
    kept = [v for v in groups if v.kept]
    rows_all = sum(v.num_rows or 0 for v in groups)
    rows_kept = sum(v.num_rows or 0 for v in kept)
    out.write(
        f"{len(kept)}/{len(groups)} row groups kept ({rows_kept:,}/{rows_all:,} rows), "
        f"{len(kept_files)}/{len(files)} files; {stats.requests} requests, "
        f"{stats.bytes_read:,} bytes read\n"
    )
    return EXIT_OK


def _index_summary(out: TextIO, verdicts: Sequence[Verdict]) -> None:
    """One line: what the sidecar indexes decided, file by file."""
    skipped = [v for v in verdicts if not v.kept]
    count = {rule: sum(v.rule is rule for v in verdicts) for rule in Rule}
    out.write(
        f"sidecar indexes: {len(skipped)}/{len(verdicts)} files skipped "
        f"({sum(v.num_rows or 0 for v in skipped):,} rows); "
        f"{count[Rule.STALE_INDEX]} stale, {count[Rule.NO_INDEX]} missing or unusable "
        f"(or without the column), {count[Rule.UNREADABLE]} unreadable\n"
    )


async def _cmd_index(args: argparse.Namespace, out: TextIO) -> int:
    columns = [c.strip() for c in args.columns.split(",") if c.strip()]
    stats = SourceStats()
    builds = await build_index(
        args.paths, columns, fpp=args.fpp, ndv=args.ndv, options=_options(args), stats=stats,
        concurrency=args.concurrency, strict=args.strict, progress=_Progress(sys.stderr),
    )  # fmt: skip
    rows = [b.to_dict() for b in builds]
    ok = [b for b in builds if b.error is None]
    if args.json:
        json.dump(rows, out, ensure_ascii=False)
        out.write("\n")
    else:
        _table(out, rows, ["file", "index", "num_rows", "index_bytes", "error"])
        out.write(
            f"{len(ok)}/{len(builds)} indexes written "
            f"({sum(b.index_bytes or 0 for b in ok):,} bytes); {stats.requests} requests, "
            f"{stats.bytes_read:,} bytes read\n"
        )
    return EXIT_OK if len(ok) == len(builds) else EXIT_ERROR


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


async def _cmd_inspect(args: argparse.Namespace, out: TextIO) -> int:
    stats = SourceStats()
    reader = _reader(args, stats)
    container = await _paimon_container(reader, args.file)
    if container is not None:
        rows = [{"file": args.file, **row} for row in parse_paimon_file_index(container).describe()]
        if args.column:
            rows = [r for r in rows if r["column"] in args.column]
        if args.json:
            json.dump(rows, out, ensure_ascii=False)
            out.write("\n")
        else:
            _table(out, rows, ["column", "index_type", "start", "length", "empty", "num_bits",
                               "num_hash_functions", "bits_set", "error"])  # fmt: skip
        return EXIT_OK
    footer, filters = await reader.footer_and_filters(args.file, args.column)
    rows = []
    for (g, column), read in sorted(filters.items()):
        chunk = footer.metadata.row_groups[g].columns[footer.metadata.schema.column(column).index]
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
    if args.json:
        json.dump(rows, out, ensure_ascii=False)
        out.write("\n")
    else:
        _table(
            out,
            rows,
            [
                "row_group",
                "column",
                "state",
                "offset",
                "length",
                "num_bytes",
                "fill_ratio",
                "estimated_ndv",
                "estimated_fpp",
                "reason",
            ],
        )
    return EXIT_OK


async def _cmd_add_filters(args: argparse.Namespace, out: TextIO) -> int:
    # Directories and prefixes stand for the Parquet files in them (hidden and _-prefixed
    # names excluded, as for prune).
    found = await expand_paths(args.paths, BloomReader(options=_options(args)))
    paths = [f.path if isinstance(f, FileInfo) else f for f in found]
    if not paths:
        raise InvalidArgumentError("no Parquet files found under " + ", ".join(args.paths))
    if args.out is not None and len(paths) != 1:
        raise InvalidArgumentError("--out takes a single PATH (a file, not a directory)")
    results = []
    for path in paths:
        result = await add_bloom_filters_async(
            path, args.columns, ndv=args.ndv, fpp=args.fpp, out=args.out,
            max_bytes=args.max_bytes, replace=args.replace, options=_options(args),
        )  # fmt: skip
        results.append(result)
        if not args.json:
            action = "added" if result.written else "needed (file left as it is)"
            out.write(
                f"{result.out}: {len(result.filters)} filters {action}, "
                f"{result.filter_bytes:,} bytes; {result.bytes_before:,} -> "
                f"{result.bytes_after:,} bytes\n"
            )
            for s in result.skipped:
                where = "" if s.row_group is None else f" (row group {s.row_group})"
                out.write(f"  skipped {s.column}{where}: {s.reason}\n")
    if args.json:
        json.dump([r.to_dict() for r in results], out, ensure_ascii=False)
        out.write("\n")
    return EXIT_OK


def _paimon_types(text: str) -> dict[str, str]:
    types: dict[str, str] = {}
    for part in text.split(","):
        column, sep, type_name = part.partition("=")
        if not sep or not column.strip() or not type_name.strip():
            raise PredicateError(f"--paimon-types wants COLUMN=TYPE pairs, got {part!r}")
        types[column.strip()] = type_name.strip()
    return types


def _table(out: TextIO, rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> None:
    cells = [[("" if r.get(c) is None else str(r.get(c))) for c in columns] for r in rows]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]
    out.write("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip() + "\n")
    for row in cells:
        out.write("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() + "\n")


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
    """Run the command line; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
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
