"""The command line's parser: commands, their arguments and the shared option groups."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, NoReturn

from ..checks import OnError, on_error_of
from ..errors import InvalidArgumentError
from ..index_policy.choice import INDEX_CHOICES, IndexChoice, index_choice
from ..io.base import SourceStats
from ..io.store import StoreOptions
from ..read.fetch import ReaderConfig
from ..read.reader import BloomReader
from ..rewrite.add_filters import DEFAULT_ADD_MAX_BYTES
from ..version import __version__

#: Unreadable inputs named in a summary line and in the note on stderr.
NAMED = 3

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_UNREADABLE = 3

EXIT_CODES = """\
exit codes:
  0  every input was read (add-filters, index build: and done)
  1  the run failed: an unexpected error, or --strict stopped at a problem
  2  usage or input error (bad option or predicate, a column no file has)
  3  some inputs could not be read (or rewritten, indexed, merged); the
     results of all the others were printed (lookup: only with --partial)"""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _CommaList(argparse.Action):
    """``--columns a,b`` (and ``-c a,b``): adds each comma-separated name to the list.

    Column names with a comma cannot be named here (Spark and Delta refuse them).
    """

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
        action=_CommaList,
        metavar="COLUMN",
        help=f"{what}: a dotted column path (repeatable, or comma-separated: -c id,email)",
    )
    p.add_argument(
        "--columns",
        dest="columns",
        action=_CommaList,
        metavar="A,B",
        help="the same, comma-separated: id,email",
    )


def _paths_or_table(p: argparse.ArgumentParser, version: str) -> None:
    """PATH... or a table (``--delta URI [--version N]``, ``--iceberg CATALOG.TABLE``)."""
    p.add_argument("paths", nargs="*", metavar="PATH", help="files, directories or prefixes")
    g = p.add_argument_group("tables (instead of PATH...)")
    g.add_argument("--delta", metavar="URI", help="a Delta Lake table (needs [delta])")
    g.add_argument("--version", type=int, metavar="N", help=version)
    g.add_argument(
        "--iceberg",
        metavar="CATALOG.TABLE",
        help="an Iceberg table, CATALOG.NAMESPACE.TABLE, its catalog configured as for "
        "pyiceberg (~/.pyiceberg.yaml, PYICEBERG_CATALOG__*) (needs [iceberg])",
    )


def _paths_and_where(p: argparse.ArgumentParser) -> None:
    """PATH... (or a table) and --where, as prune and lookup take them."""
    _paths_or_table(p, "the Delta table's version (default: latest)")
    p.add_argument(
        "--where",
        "-w",
        required=True,
        metavar="PREDICATE",
        help="e.g. \"id = 42 AND day >= '2024-05-01'\": =, <=>, != (<>), <, <=, >, >=, "
        "[NOT] IN (...), [NOT] BETWEEN a AND b, IS [NOT] NULL, with NOT, AND, OR and "
        "parentheses; @FILE reads it from a file, - from standard input (for long IN lists)",
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
    g.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="seconds for one attempt of a request (default 30). A request the store never "
        "answers fails after --max-retries + 1 attempts and short waits between them, and "
        "no retry starts after 60 s: at most 92 s with the defaults, 15 s with --timeout 2",
    )
    g.add_argument(
        "--max-retries", type=int, default=5, help="retries of a request that failed (default 5)"
    )
    g.add_argument("--concurrency", type=int, default=64, help="files read at once")
    g.add_argument(
        "--footer-read",
        type=int,
        default=None,
        metavar="BYTES",
        help="bytes of the first read of each file (default: adaptive, learned from the "
        "files already read, so one request per file on object stores)",
    )


def _partition_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "partition folders (default: key=value folders below a PATH are columns, typed "
        "from their values)"
    )
    g.add_argument(
        "--partition-types",
        metavar="COL=TYPE,...",
        help="the partition columns and their types, e.g. dt=date,country=string (other "
        "key=value folders are plain folders; folders that cannot match are not listed)",
    )
    g.add_argument(
        "--no-partitions",
        action="store_true",
        help="key=value folders are plain folders, not columns",
    )


def _index_args(p: argparse.ArgumentParser, sidecar: bool) -> None:
    """``--index`` (the one index policy, ``index_policy``), with ``prune``'s older flags."""
    kinds = INDEX_CHOICES if sidecar else tuple(c for c in INDEX_CHOICES if c != "sidecar")
    p.add_argument(
        "--index",
        choices=kinds,
        help="which index serves the run: auto (default: the lake index under the one PATH, "
        "_bloom_index/_lake.v1/, for the files it covers and finds fresh), lake (it must be "
        "there)"
        + (", sidecar (each file's _bloom_index/ first)" if sidecar else "")
        + ", none (the files' own filters only)",
    )
    if sidecar:
        p.add_argument("--use-index", action="store_true", help="the same as --index sidecar")
        p.add_argument("--lake-index", action="store_true", help="the same as --index lake")


def index_option(args: argparse.Namespace) -> IndexChoice:
    """The ``--index`` asked for, its older spellings (``--use-index``, ``--lake-index``)
    included.

    Raises
    ------
    InvalidArgumentError
        Two of them that disagree.
    """
    given = [args.index] if args.index is not None else []
    given += ["sidecar"] if getattr(args, "use_index", False) else []
    given += ["lake"] if getattr(args, "lake_index", False) else []
    if len(set(given)) > 1:
        raise InvalidArgumentError(
            "give one of --index, --use-index (--index sidecar), --lake-index (--index lake)"
        )
    return index_choice(given[0] if given else "auto", name="--index")


def on_error(args: argparse.Namespace) -> OnError:
    """The error policy ``--strict`` asks for (the run's ``on_error``): ``"raise"`` with
    it, ``"skip"`` without (every command's default)."""
    return on_error_of(bool(args.strict))


def partitioning(args: argparse.Namespace) -> str | dict[str, str] | None:
    """What ``--partition-types`` and ``--no-partitions`` ask for (``partitioning=``)."""
    if args.no_partitions:
        if args.partition_types:
            raise InvalidArgumentError("give --partition-types or --no-partitions, not both")
        return None
    if not args.partition_types:
        return "hive"
    types: dict[str, str] = {}
    for item in args.partition_types.split(","):
        name, eq, kind = item.partition("=")
        if not eq or not name.strip() or not kind.strip():
            raise InvalidArgumentError(
                "--partition-types takes COL=TYPE,... (e.g. dt=date,country=string)", value=item
            )
        types[name.strip()] = kind.strip()
    return types


def store_options(args: argparse.Namespace) -> StoreOptions:
    return StoreOptions(
        endpoint=args.endpoint,
        region=args.region,
        allow_http=args.allow_http,
        skip_signature=args.skip_signature,
        timeout=args.timeout,
        max_retries=args.max_retries,
    )


def reader_config(args: argparse.Namespace) -> ReaderConfig:
    return ReaderConfig(footer_read_bytes=args.footer_read, concurrency=args.concurrency)


def make_reader(args: argparse.Namespace, stats: SourceStats) -> BloomReader:
    return BloomReader(
        config=reader_config(args), options=store_options(args), stats=stats, max_files=1 << 20
    )


def add_command(sub: Any, name: str, help_text: str, examples: str) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help_text,
        description=help_text[:1].upper() + help_text[1:] + ".",
        epilog=f"example:\n{examples}\n\n{EXIT_CODES}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--verbose",
        "-v",
        action="count",
        default=0,
        help="log what the run does to stderr: -v the steps and every failure in full, "
        "-vv also each request",
    )
    return parser


def _add_group(sub: Any, name: str, help_text: str, description: str, example: str) -> Any:
    """A command with subcommands (``index build``): its parser's subparsers, one required.

    The chosen subcommand is ``args.<first word of name>_command`` (``lake_command``).
    """
    p = sub.add_parser(
        name,
        help=help_text,
        description=description,
        epilog=f"example:\n{example}\n\n{EXIT_CODES}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    dest = f"{name.split('-')[0]}_command"
    return p.add_subparsers(dest=dest, required=True, metavar="COMMAND")


def _output_args(
    p: argparse.ArgumentParser,
    *,
    json: str = "a JSON array",
    summary: bool = False,
    strict: str | None = None,
) -> None:
    """The output switches a command shares: ``--json`` (printing ``json``), and
    ``--summary`` and ``--strict`` (with its ``strict`` help) where it has them."""
    p.add_argument("--json", action="store_true", help=f"print {json}")
    if strict is not None:
        p.add_argument("--strict", action="store_true", help=strict)
    if summary:
        p.add_argument(
            "--summary",
            action="store_true",
            help="print totals only (with --json: one JSON object)",
        )


def _paths_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH", help="files, directories or prefixes")


def _fpp_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fpp", type=float, default=0.01, help="false-positive rate (default 0.01)")


def _add_probe(sub: Any) -> None:
    """The probe command's arguments."""
    p = add_command(
        sub,
        "probe",
        "whether row groups may hold values of one column (kept) or rule them out",
        "  pybloom-async probe data.parquet --column user_id --value 42 --value 43\n"
        "  pybloom-async probe lake/ -c email --values-from emails.txt --summary",
    )
    _paths_arg(p)
    p.add_argument(
        "--column", "-c", action=_CommaList, metavar="COLUMN", help="a dotted column path"
    )
    p.add_argument(
        "--value",
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
    _output_args(p, summary=True)
    p.add_argument(
        "--paimon-type",
        metavar="TYPE",
        help="PATHs are Apache Paimon data files (or their .index containers) and the "
        "column has this Paimon type (BIGINT, VARCHAR, TIMESTAMP(3), ...)",
    )
    _store_args(p)


def _add_prune(sub: Any) -> None:
    """The prune command's arguments."""
    p = add_command(
        sub,
        "prune",
        "which row groups may hold rows matching a predicate",
        "  pybloom-async prune s3://lake/events/ --where \"user_id = 42 AND country = 'DE'\"\n"
        "  pybloom-async prune lake/ --where @ids.sql --summary --json",
    )
    _paths_and_where(p)
    _output_args(
        p,
        summary=True,
        strict="fail on damaged filters or unreadable files instead of keeping them",
    )
    p.add_argument(
        "--paimon-types",
        metavar="COL=TYPE,...",
        help="PATHs are Apache Paimon data files (each with <file>.index) whose "
        "columns have these Paimon types, e.g. id=BIGINT,name=VARCHAR",
    )
    _index_args(p, sidecar=True)
    _partition_args(p)
    _store_args(p)


def _add_inspect(sub: Any) -> None:
    """The inspect command's arguments."""
    p = add_command(
        sub,
        "inspect",
        "the Bloom filters of files, per row group and column",
        "  pybloom-async inspect data.parquet --columns id,email",
    )
    _paths_arg(p)
    _column_args(p, "only these columns")
    _output_args(p)
    _store_args(p)


def _add_index(sub: Any) -> None:
    """The index command and its build subcommand."""
    index_sub = _add_group(
        sub,
        "index",
        "file-level sidecar indexes (_bloom_index/)",
        "File-level sidecar indexes (_bloom_index/).",
        "  pybloom-async index build lake/ --columns id,email",
    )
    p = add_command(
        index_sub,
        "build",
        "build (or replace) the sidecar index of each file",
        "  pybloom-async index build s3://lake/events/ --columns user_id,email",
    )
    _paths_arg(p)
    _column_args(p, "index these columns (required)")
    _fpp_arg(p)
    p.add_argument(
        "--ndv", type=int, help="size every filter for N distinct values (default: exact count)"
    )
    _output_args(p, strict="stop at the first file that fails")
    _store_args(p)
    p.set_defaults(concurrency=None)  # files indexed at once: the number of CPUs


def _add_lake_index(sub: Any) -> None:
    """The lake-index command and its build and compact subcommands."""
    lake_sub = _add_group(
        sub,
        "lake-index",
        "the lake-wide index (_bloom_index/_lake.v1/): one read per key for all files",
        "The lake-wide Bloom index (_bloom_index/_lake.v1/).",
        "  pybloom-async lake-index build lake/ --columns id,email",
    )
    p = add_command(
        lake_sub,
        "build",
        "add a segment (one per size class) indexing the files under ROOT",
        "  pybloom-async lake-index build s3://lake/events/ --columns user_id --from-filters",
    )
    p.add_argument("root", metavar="ROOT", help="the lake's directory or prefix")
    _column_args(p, "index these columns (required)")
    _fpp_arg(p)
    p.add_argument("--ndv", type=int, help="size for N distinct values per file")
    p.add_argument(
        "--from-filters",
        action="store_true",
        help="fold the files' own filters (no data page read); others are built from values",
    )
    _output_args(p, json="a JSON object", strict="stop at the first file that fails")
    _store_args(p)
    p.set_defaults(concurrency=None)
    p = add_command(
        lake_sub,
        "compact",
        "merge the segments of the lake index under ROOT",
        "  pybloom-async lake-index compact s3://lake/events/",
    )
    p.add_argument("root", metavar="ROOT", help="the lake's directory or prefix")
    _output_args(p, json="a JSON object")
    _store_args(p)


def _add_add_filters(sub: Any) -> None:
    """The add-filters command's arguments."""
    p = add_command(
        sub,
        "add-filters",
        "add Bloom filters to Parquet files, or to a table's files by a commit",
        "  pybloom-async add-filters lake/ --columns user_id,email --fpp 0.01\n"
        "  pybloom-async add-filters --delta s3://lake/events --columns user_id\n"
        "  pybloom-async add-filters --iceberg prod.db.events --columns user_id",
    )
    _paths_or_table(
        p,
        "the Delta table's latest version, as a check: the run stops if the table has "
        "moved on (filters are always committed on top of the latest version)",
    )
    _column_args(p, "add filters to these columns, a group: all its leaves (required)")
    p.add_argument("--ndv", type=int, help="size filters for at most N distinct values per chunk")
    _fpp_arg(p)
    p.add_argument(
        "--max-bytes",
        type=int,
        default=DEFAULT_ADD_MAX_BYTES,
        help=f"largest bitset per filter (default {DEFAULT_ADD_MAX_BYTES})",
    )
    p.add_argument(
        "--out", help="write the result here instead of replacing PATH (one PATH, not a table)"
    )
    p.add_argument("--replace", action="store_true", help="rebuild filters that already exist")
    _output_args(
        p, json="a JSON array, one object per file", strict="stop at the first file that fails"
    )
    _store_args(p)


def _add_lookup(sub: Any) -> None:
    """The lookup command's arguments."""
    p = add_command(
        sub,
        "lookup",
        "the rows that satisfy a predicate, read through the Bloom filters",
        '  pybloom-async lookup s3://lake/events/ --where "user_id IN (42, 43)" --columns '
        "user_id,ts\n"
        "  pybloom-async lookup lake/ --where @ids.sql --format parquet --out rows.parquet",
    )
    _paths_and_where(p)
    _column_args(p, "the columns of the result, in this order (default: all)")
    p.add_argument(
        "--format",
        "-f",
        choices=("table", "json", "csv", "parquet"),
        default="table",
        help="table (default); json: one array of objects (binary as hex, dates and "
        "timestamps ISO 8601, decimals as strings); csv (binary as hex); parquet (needs --out)",
    )
    p.add_argument("--out", "-o", metavar="FILE", help="write the rows here (atomically)")
    p.add_argument("--limit", "-n", type=int, metavar="N", help="stop after the first N rows")
    p.add_argument("--quiet", "-q", action="store_true", help="no summary line on stderr")
    p.add_argument(
        "--partial",
        action="store_true",
        help="when some files cannot be read, still print the rows of the others (exit 3); "
        "by default nothing is printed then, as the answer would lack their rows",
    )
    p.add_argument(
        "--strict", action="store_true", help="stop at the first file that cannot be read (exit 1)"
    )
    p.add_argument(
        "--no-page-index",
        action="store_true",
        help="read the kept row groups' whole column chunks, not only the pages a file's "
        "page index admits",
    )
    _index_args(p, sidecar=False)
    _partition_args(p)
    _store_args(p)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for the documentation and the tests)."""
    parser = _Parser(
        prog="pybloom-async",
        description="Probe, prune and inspect Parquet Split Block Bloom Filters, look up the\n"
        "rows they point to, and add filters, sidecar indexes and a lake-wide index to\n"
        "existing files.",
        epilog=(
            "example:\n"
            '  pybloom-async prune s3://lake/events/ --where "user_id = 42" --summary\n'
            "  pybloom-async COMMAND --help    (an example for each command)\n\n" + EXIT_CODES
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_probe, _add_prune, _add_inspect, _add_lookup, _add_index, _add_add_filters):
        add(sub)
    _add_lake_index(sub)
    return parser
