"""The commands that write: index build and add-filters."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from ..errors import (
    InvalidArgumentError,
    PredicateError,
    PyBloomError,
)
from ..index.build import IndexBuild, build_index
from ..io.base import FileInfo, SourceStats
from ..read.reader import BloomReader
from ..rewrite.add_filters import AddFiltersResult, add_bloom_filters
from .cli_args import store_options
from .cli_output import (
    ColumnCheck,
    Progress,
    expand_inputs,
    finish_run,
    fraction,
    path_text,
    plural_s,
    print_table,
    raise_if_not_about_the_file,
    requests_text,
    required_columns,
    write_json,
)

# ---- index build, add-filters ---------------------------------------------------------


async def _absent_column(
    reader: BloomReader, files: Sequence[str | FileInfo], names: Sequence[str], groups: bool
) -> PredicateError | None:
    """For a run where every file failed: the error of a column none of the files has."""
    check = ColumnCheck(names, groups)
    for location in files:
        try:
            check.see(path_text(location), (await reader.footer(location)).metadata.schema)
        except PyBloomError:
            continue  # unreadable: reported as such
        finally:
            reader.clear()
    return check.absent()


async def cmd_index(args: argparse.Namespace, out: TextIO) -> int:
    columns = required_columns(args)
    stats = SourceStats()
    reader = BloomReader(options=store_options(args), stats=stats, max_files=0)
    files, unreadable = await expand_inputs(args.paths, reader, args.strict)
    rows: list[dict[str, Any]] = [
        {"file": exc.path or "", "index": None, "columns": columns, "num_rows": None,
         "index_bytes": None, "error": str(exc)}
        for exc in unreadable
    ]  # fmt: skip
    builds: list[IndexBuild] = []
    with Progress(sys.stderr) as progress:
        if files:
            builds = await build_index(
                files, columns, fpp=args.fpp, ndv=args.ndv, options=store_options(args),
                stats=stats, concurrency=args.concurrency, strict=args.strict, progress=progress,
            )  # fmt: skip
    ok = [b for b in builds if b.error is None]
    absent = await _absent_column(reader, files, columns, False) if files and not ok else None
    if absent is not None:
        raise absent
    rows += [b.to_dict() for b in builds]
    if args.json:
        write_json(out, rows)
    else:
        print_table(out, rows, ["file", "index", "num_rows", "index_bytes", "error"])
        out.write(
            f"{fraction(len(ok), len(rows), 'index', 'indexes')} written "
            f"({plural_s(sum(b.index_bytes or 0 for b in ok), 'byte')}); {requests_text(stats)}\n"
        )
    failed = [(r["file"], r["error"]) for r in rows if r["error"] is not None]
    return finish_run(failed, len(rows), "not indexed")


def _added_dict(
    path: str, result: AddFiltersResult | None, error: PyBloomError | None
) -> dict[str, Any]:
    if result is not None:
        return {**result.to_dict(), "error": None}
    return {"path": path, "out": None, "written": False, "bytes_before": None,
            "bytes_after": None, "filter_bytes": 0, "filters": [], "skipped": [],
            "error": str(error)}  # fmt: skip


async def cmd_add_filters(args: argparse.Namespace, out: TextIO) -> int:
    columns = required_columns(args)
    reader = BloomReader(options=store_options(args), max_files=0)
    files, unreadable = await expand_inputs(args.paths, reader, args.strict)
    if args.out is not None and (len(args.paths) != 1 or len(files) + len(unreadable) != 1):
        raise InvalidArgumentError("--out takes a single PATH (a file, not a directory)")
    done: list[tuple[str, AddFiltersResult | None, PyBloomError | None]] = [
        (exc.path or "", None, exc) for exc in unreadable
    ]
    with Progress(sys.stderr) as progress:
        for count, location in enumerate(files, 1):
            path = path_text(location)
            try:
                result = await add_bloom_filters(
                    path, columns, ndv=args.ndv, fpp=args.fpp, out=args.out,
                    max_bytes=args.max_bytes, replace=args.replace, options=store_options(args),
                )  # fmt: skip
            except PyBloomError as exc:
                raise_if_not_about_the_file(exc)
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
        write_json(out, [_added_dict(*entry) for entry in done])
    else:
        for path, added, error in done:
            if added is None:
                out.write(f"{path}: failed: {error}\n")
                continue
            action = "added" if added.written else "needed (file left as it is)"
            out.write(
                f"{added.out}: {plural_s(len(added.filters), 'filter')} {action}, "
                f"{plural_s(added.filter_bytes, 'byte')}; {added.bytes_before:,} -> "
                f"{added.bytes_after:,} bytes\n"
            )
            for s in added.skipped:
                where = "" if s.row_group is None else f" (row group {s.row_group})"
                out.write(f"  skipped {s.column}{where}: {s.reason}\n")
        if len(done) > 1:
            results = [r for _, r, _ in done if r is not None]
            out.write(
                f"{fraction(sum(r.written for r in results), len(done), 'file')} rewritten, "
                f"{plural_s(sum(len(r.filters) for r in results), 'filter')} added "
                f"({plural_s(sum(r.filter_bytes for r in results), 'byte')}); "
                f"{len(done) - len(results):,} failed\n"
            )
    failed = [(path, str(error)) for path, result, error in done if result is None]
    return finish_run(failed, len(done), "failed")
