"""lake-index build and lake-index compact."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import TextIO

from ..errors import InvalidArgumentError, PyBloomError, SourceNotFoundError
from ..io.base import SourceStats
from ..lake.build import build_lake_index
from ..lake.compact import compact_lake_index
from .cli_args import NAMED, on_error, store_options
from .cli_output import (
    finish_run,
    one_line,
    plural_s,
    requests_text,
    required_columns,
    write_json,
)


def _root_error(args: argparse.Namespace, exc: SourceNotFoundError) -> PyBloomError:
    """A ROOT with nothing there (or no index to compact) is an input error: exit 2."""
    if exc.path == args.root:
        return InvalidArgumentError(exc.message, path=exc.path)
    return exc


async def cmd_lake_index(args: argparse.Namespace, out: TextIO) -> int:
    """Run ``lake-index build`` or ``lake-index compact``; the exit code."""
    stats = SourceStats()
    try:
        if args.lake_command == "compact":
            return await _compact(args, out, stats)
        built = await build_lake_index(
            args.root, required_columns(args), fpp=args.fpp, ndv=args.ndv,
            mode="filters" if args.from_filters else "values", options=store_options(args),
            stats=stats, concurrency=args.concurrency, on_error=on_error(args),
        )  # fmt: skip
    except SourceNotFoundError as exc:
        raise _root_error(args, exc) from None
    if args.json:
        write_json(out, built.to_dict())
    else:
        for segment in built.segments:
            out.write(f"wrote {segment}\n")
        out.write(
            f"{plural_s(built.files, 'file')} indexed"
            + (f", {len(built.folded):,} folded from their filters" if args.from_filters else "")
            + f" ({requests_text(stats)})\n"
        )
        _write_from_values(out, built.from_values)
        for column, rate in built.fpp.items():
            out.write(
                f"  {column}: false-positive rate {rate['mean']:.3g} on average, "
                f"{rate['max']:.3g} at most (target {args.fpp:g})\n"
            )
        for path, why in built.errors.items():
            out.write(f"{path}: failed: {one_line(why)}\n")
    return finish_run(sorted(built.errors.items()), built.files + len(built.errors), "not indexed")


def _write_from_values(out: TextIO, from_values: Mapping[str, str]) -> None:
    """The files built from their values instead of folded: each reason once."""
    by_reason: dict[str, list[str]] = {}
    for path, why in from_values.items():
        by_reason.setdefault(why, []).append(path)
    for why, paths in by_reason.items():
        named = ", ".join(paths[:NAMED]) + (", ..." if len(paths) > NAMED else "")
        out.write(
            f"  {plural_s(len(paths), 'file')} built from their values instead of folded "
            f"({named}): {why}\n"
        )


async def _compact(args: argparse.Namespace, out: TextIO, stats: SourceStats) -> int:
    done = await compact_lake_index(args.root, options=store_options(args), stats=stats)
    if args.json:
        write_json(out, done.to_dict())
    else:
        out.write(
            f"{plural_s(len(done.merged), 'segment')} merged into "
            f"{plural_s(len(done.written), 'segment')}, {len(done.left):,} left as they are "
            f"({requests_text(stats)})\n"
        )
        for location, why in done.left.items():
            out.write(f"  left {location}: {why}\n")
    # Segments of other columns never merge: the index cannot be compacted as it is.
    failed = [(location, done.left[location]) for location in done.other_columns]
    total = len(done.merged) + len(done.left)
    return finish_run(
        failed, total, "cannot be merged", then="they index other columns", noun="segment"
    )
