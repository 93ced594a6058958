"""PATH... or a table: the inputs of prune and lookup (``--delta URI``, ``--iceberg NAME``)."""

from __future__ import annotations

import argparse

import anyio

from ..errors import InvalidArgumentError
from ..tables import TableSource
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
        See :func:`check_inputs`.
    MissingDependencyError
        The table's library is not installed.
    SourceError
        The table cannot be opened.
    """
    check_inputs(args)
    if args.delta is not None:
        from ..tables.delta import open_delta

        options = store_options(args)
        return await anyio.to_thread.run_sync(open_delta, args.delta, args.version, options)
    if args.iceberg is not None:
        from ..tables.iceberg import load_iceberg

        return await anyio.to_thread.run_sync(load_iceberg, args.iceberg)
    return None


__all__ = ["check_inputs", "open_table"]
