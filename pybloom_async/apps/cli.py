"""The ``pybloom-async`` command line: probe, prune, inspect, lookup, add-filters, index,
lake-index.

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
* 3: some inputs could not be read (or rewritten, indexed, merged); the results
  of all the others were printed (``lookup``: only with ``--partial``, as an answer
  without some files' rows is no answer)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO

import anyio

from ..errors import (
    PyBloomError,
)
from ..io.failures import describe
from ..version import __version__
from .cli_args import EXIT_ERROR, EXIT_OK, EXIT_USAGE, build_parser, store_options
from .cli_build import cmd_add_filters, cmd_index
from .cli_inspect import cmd_inspect
from .cli_lake import cmd_lake_index
from .cli_lookup import cmd_lookup
from .cli_output import one_line
from .cli_probe import cmd_probe
from .cli_prune import cmd_prune

# Named, not __name__: run as ``python -m``, this module is __main__.
log = logging.getLogger("pybloom_async.apps.cli")

COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO], Any]] = {
    "probe": cmd_probe,
    "prune": cmd_prune,
    "inspect": cmd_inspect,
    "lookup": cmd_lookup,
    "add-filters": cmd_add_filters,
    "index": cmd_index,
    "lake-index": cmd_lake_index,
}


def _describe_unexpected(exc: BaseException) -> str:
    """One line for an unexpected error; an exception group names what it holds."""
    group = getattr(exc, "exceptions", None)  # (Base)ExceptionGroup, also the 3.10 backport
    if isinstance(group, tuple) and group and all(isinstance(e, BaseException) for e in group):
        inner = "; ".join(_describe_unexpected(e) for e in group[:3])
        more = f"; ... ({len(group)} in all)" if len(group) > 3 else ""
        return f"{len(group)} errors: {inner}{more}"
    return describe(exc)


def _run_text(args: argparse.Namespace) -> str:
    """What the run reads and how long a request may take, for -v."""
    parts = [f"pybloom-async {__version__} {args.command}"]
    inputs = getattr(args, "paths", None) or [getattr(args, "root", None)]
    inputs = [i for i in inputs if i] or [
        getattr(args, "delta", None) or getattr(args, "iceberg", None)
    ]
    parts.append(f"inputs: {', '.join(map(str, inputs))}")
    if getattr(args, "timeout", None) is not None:
        options = store_options(args)
        parts.append(
            f"object stores: --timeout {options.timeout:g} s, --max-retries "
            f"{options.max_retries}: a request that gets no answer fails within "
            f"{options.max_request_seconds():.1f} s"
        )
    return "; ".join(parts)


@contextlib.contextmanager
def _logging(verbose: int) -> Iterator[None]:
    """The package's log on stderr: -v INFO (the run's steps), -vv DEBUG (each request)."""
    if not verbose:
        yield
        return
    package = logging.getLogger("pybloom_async")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("[%(relativeCreated)6.0f ms] %(name)s: %(message)s"))
    level = package.level
    package.addHandler(handler)
    package.setLevel(logging.INFO if verbose == 1 else logging.DEBUG)
    try:
        yield
    finally:
        package.removeHandler(handler)
        package.setLevel(level)


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command line; returns the exit code (see the module documentation)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed
        status = exc.code
        return status if isinstance(status, int) else EXIT_OK if status is None else EXIT_USAGE
    with _logging(args.verbose):
        start = time.monotonic()
        if args.verbose:
            log.info("%s", _run_text(args))
        code = _run(args, out if out is not None else sys.stdout)
        log.info("exit %d after %.2f s", code, time.monotonic() - start)
    return code


def _run(args: argparse.Namespace, stream: TextIO) -> int:
    """The command's exit code; every error as one line on stderr."""
    try:
        code: int = anyio.run(COMMANDS[args.command], args, stream)
    except PyBloomError as exc:
        print(f"pybloom-async: error: {one_line(str(exc))}", file=sys.stderr)
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
        print(f"pybloom-async: error: {describe(exc)}", file=sys.stderr)
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
