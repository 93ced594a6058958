"""PATH... or a table: the inputs of prune and lookup (``--delta URI``, ``--iceberg NAME``)."""

from __future__ import annotations

import argparse

from ..errors import InvalidArgumentError, SourceError, SourceNotFoundError
from ..tables import TableSource
from ..tasks.loops import to_worker
from .cli_args import store_options


def check_inputs(args: argparse.Namespace) -> None:
    """Exactly one of PATH..., ``--delta`` and ``--iceberg``; ``--version`` only with ``--delta``.

    Raises
    ------
    InvalidArgumentError
        The inputs are missing, or given in more than one form.
    """
    given = [name for name, on in (("PATH", args.paths), ("--delta", args.delta),
                                   ("--iceberg", args.iceberg)) if on]  # fmt: skip
    if len(given) != 1:
        raise InvalidArgumentError(
            "give PATH..., --delta URI or --iceberg CATALOG.TABLE"
            + (f", not {' and '.join(given)} together" if given else "")
        )
    if args.version is not None:
        if args.delta is None:
            raise InvalidArgumentError("--version applies to --delta only")
        if args.version < 0:
            raise InvalidArgumentError(f"--version must be >= 0, not {args.version}")
    for option in ("use_index", "paimon_types"):
        if (args.delta or args.iceberg) and getattr(args, option, None):
            flag = "--" + option.replace("_", "-")
            raise InvalidArgumentError(f"{flag} does not apply to a table")


async def open_table(args: argparse.Namespace) -> TableSource | None:
    """The table ``--delta`` or ``--iceberg`` names (None for PATH...), checked first.

    Raises
    ------
    InvalidArgumentError
        See :func:`check_inputs`; and no table is there, or it has no ``--version``.
    MissingDependencyError
        The table's library is not installed.
    SourceError
        The table cannot be opened (the store failed).
    """
    check_inputs(args)
    if args.delta is None and args.iceberg is None:
        return None
    return await open_named_table(args, args.version)


async def open_named_table(args: argparse.Namespace, version: int | None) -> TableSource:
    """The table ``--delta`` (at ``version``, default latest) or ``--iceberg`` names.

    A table that is not there, and a version the table does not have, are input
    errors (exit 2), told before anything is read.

    Raises
    ------
    InvalidArgumentError
        No table there (or no such catalog), or no such version.
    MissingDependencyError
        The table's library is not installed.
    SourceError
        The table cannot be opened (the store failed).
    """
    from ..tables.delta import open_delta
    from ..tables.iceberg import load_iceberg

    try:
        if args.iceberg is not None:
            return await to_worker(load_iceberg, args.iceberg)
        options = store_options(args)
        return await to_worker(open_delta, args.delta, version, options)
    except SourceNotFoundError as exc:
        raise InvalidArgumentError(exc.message, path=exc.path) from None
    except SourceError as exc:
        if args.iceberg is not None or version is None:
            raise
        # deltalake says "LogSegment end version 0 not the same as the specified end
        # version 99": the latest version, if the table opens, says it plainly.
        latest = int((await open_named_table(args, None)).version())
        if version > latest:
            raise InvalidArgumentError(
                f"--version {version}: the table's latest version is {latest}", path=args.delta
            ) from None
        raise InvalidArgumentError(
            f"--version {version} cannot be read: {exc.message}", path=args.delta
        ) from None
