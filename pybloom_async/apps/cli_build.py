"""The commands that write: index build and add-filters."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from ..errors import (
    InvalidArgumentError,
    PredicateError,
    PyBloomError,
)
from ..index.build import IndexBuild, build_index
from ..io.base import FileInfo, SourceStats, location_text
from ..io.failures import gave_no_answer
from ..read.reader import BloomReader
from ..rewrite.add_filters import NOT_IN_FILE, add_bloom_filters
from ..rewrite.guard import TableGuard, shared_guard
from ..rewrite.results import AddFiltersResult
from ..tasks.loops import to_worker
from .cli_args import EXIT_OK, on_error, store_options
from .cli_output import (
    ColumnCheck,
    Progress,
    check_out,
    expand_inputs,
    finish_run,
    fraction,
    one_line,
    plural_s,
    print_table,
    raise_if_not_about_the_file,
    requests_text,
    required_columns,
    write_json,
)
from .cli_tables import check_inputs, open_named_table

log = logging.getLogger(__name__)

# ---- index build, add-filters ---------------------------------------------------------


async def _absent_column(
    reader: BloomReader, files: Sequence[str | FileInfo], names: Sequence[str], groups: bool
) -> PredicateError | None:
    """For a run where every file failed: the error of a column none of the files has.

    A store that gave no answer is not asked again: the files fail for that, whatever
    their columns.
    """
    check = ColumnCheck(names, groups)
    for location in files:
        try:
            check.see(location_text(location), (await reader.footer(location)).metadata.schema)
        except PyBloomError as exc:
            if gave_no_answer(exc):
                return None
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
         "index_bytes": None, "error": str(exc), "replaced": None}
        for exc in unreadable
    ]  # fmt: skip
    builds: list[IndexBuild] = []
    with Progress(sys.stderr) as progress:
        if files:
            builds = await build_index(
                files, columns, fpp=args.fpp, ndv=args.ndv, options=store_options(args),
                stats=stats, concurrency=args.concurrency, on_error=on_error(args),
                progress=progress,
            )  # fmt: skip
    ok = [b for b in builds if b.error is None]
    # Only the files that failed over a column are read again (a file that failed to be
    # read would fail again, and a store that gave no answer is not asked twice).
    about_columns = [
        b.file for b in builds if b.error and any(f"column {c!r}" in b.error for c in columns)
    ]
    absent = await _absent_column(reader, about_columns, columns, False) if not ok else None
    if absent is not None:
        raise absent
    rows += [b.to_dict() for b in builds]
    if args.json:
        write_json(out, rows)
    else:
        print_table(out, rows, ["file", "index", "num_rows", "index_bytes", "error"])
        replaced = sum(b.replaced is not None for b in ok)
        earlier = f"; {replaced} under the earlier .parquet name removed" if replaced else ""
        out.write(
            f"{fraction(len(ok), len(rows), 'index', 'indexes')} written "
            f"({plural_s(sum(b.index_bytes or 0 for b in ok), 'byte')}{earlier}); "
            f"{requests_text(stats)}\n"
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


async def _open_for_commit(args: argparse.Namespace) -> object:
    """The table ``--delta`` or ``--iceberg`` names, at its latest version; input errors first.

    Raises
    ------
    InvalidArgumentError
        No such table or catalog, ``--version`` is not the latest, or ``--out`` given.
    """
    check_inputs(args)
    if args.out is not None:
        raise InvalidArgumentError(
            "--out takes a single PATH: a table's new files go beside the old"
        )
    table = await open_named_table(args, None)
    if args.iceberg is not None:
        return table
    latest = int(table.version())
    if args.version is not None and args.version != latest:
        raise InvalidArgumentError(
            f"--version {args.version}: the table's latest version is {latest}; filters are "
            "committed on top of the latest",
            path=args.delta,
        )
    return table


async def _add_filters_to_table(args: argparse.Namespace, columns: list[str], out: TextIO) -> int:
    table = await _open_for_commit(args)
    result = await add_bloom_filters(
        table, columns, ndv=args.ndv, fpp=args.fpp, max_bytes=args.max_bytes,
        replace=args.replace, options=store_options(args),
    )  # fmt: skip
    if args.json:
        write_json(out, result.to_dict())
        return EXIT_OK
    where = "version" if result.kind == "delta" else "snapshot"
    done = f"committed as {where} {result.version}" if result.committed else "nothing to commit"
    out.write(
        f"{result.table}: {plural_s(len(result.files), 'file')} replaced, "
        f"{plural_s(sum(len(f.filters) for f in result.files), 'filter')} added "
        f"({plural_s(result.filter_bytes, 'byte')}), {len(result.skipped):,} left as they are; "
        f"read at {where} {result.read_version}, {done}\n"
    )
    for f in result.files:
        out.write(f"  {f.path} -> {f.out}: {plural_s(len(f.filters), 'filter')}\n")
    for s in result.skipped:
        out.write(f"  left {s.path}: {s.reason}\n")
    if result.committed:
        out.write(
            "  the replaced files stay for the earlier versions: the table's own maintenance "
            "removes them (Delta VACUUM, Iceberg snapshot expiry)\n"
        )
    return EXIT_OK


async def _check_columns_first(
    args: argparse.Namespace,
    reader: BloomReader,
    files: Sequence[str | FileInfo],
    columns: list[str],
) -> dict[str, PyBloomError]:
    """A column that no file has is an input error, found before any file is rewritten.

    Footers are read in order until every column is found (usually the first file's
    does). Returns the files whose footer could not be read, with the error: they
    are reported, not read again; after one the store did not answer, no more
    footers are read (the columns are then taken on trust).
    """
    check = ColumnCheck(columns, groups=True)
    unread: dict[str, PyBloomError] = {}
    for location in files:
        if all(name in check.found for name in columns):
            return unread
        path = location_text(location)
        try:
            check.see(path, (await reader.footer(location)).metadata.schema)
        except PyBloomError as exc:
            raise_if_not_about_the_file(exc)
            if args.strict:
                raise
            unread[path] = exc
            if gave_no_answer(exc):
                return unread
        finally:
            reader.clear()
    if len(unread) < len(files):  # some file was read: a column none has is a typo
        check.raise_absent()
    return unread


async def cmd_add_filters(args: argparse.Namespace, out: TextIO) -> int:
    columns = required_columns(args)
    if args.delta is not None or args.iceberg is not None or not args.paths:
        return await _add_filters_to_table(args, columns, out)
    if args.out is not None:
        if len(args.paths) != 1:
            raise InvalidArgumentError("--out takes a single PATH (a file, not a directory)")
        check_out("--out", args.out, store_options(args))
    reader = BloomReader(options=store_options(args), max_files=0)
    # Table files are listed, then refused by the guard below with what rewriting would do.
    files, unreadable = await expand_inputs(args.paths, reader, args.strict, table_files=True)
    if args.out is not None and len(files) + len(unreadable) != 1:
        raise InvalidArgumentError("--out takes a single PATH (a file, not a directory)")
    done: list[tuple[str, AddFiltersResult | None, PyBloomError | None]] = [
        (exc.path or "", None, exc) for exc in unreadable
    ]
    # Files of a Delta or Iceberg table change only by a commit: refused before any is touched.
    guard = TableGuard(store_options(args))
    targets = [args.out or location_text(location) for location in files]
    await to_worker(guard.check_all, targets)
    unread = await _check_columns_first(args, reader, files, columns)
    with Progress(sys.stderr) as progress, shared_guard(guard):
        for count, location in enumerate(files, 1):
            path = location_text(location)
            if path in unread:
                done.append((path, None, unread[path]))
                continue
            try:
                # A column the file lacks (but another file has): the others' filters are
                # added and the column named as skipped; --strict makes it a failure.
                result = await add_bloom_filters(
                    path, columns, ndv=args.ndv, fpp=args.fpp, out=args.out,
                    max_bytes=args.max_bytes, replace=args.replace, options=store_options(args),
                    require_columns=args.strict,
                )  # fmt: skip
            except PyBloomError as exc:
                raise_if_not_about_the_file(exc)
                if args.strict or (isinstance(exc, InvalidArgumentError) and exc.path is None):
                    raise  # --strict, or an option that no file can take
                done.append((path, None, exc))
            else:
                done.append((path, result, None))
                log.info(
                    "%s: %s, %s", result.out,
                    plural_s(len(result.filters), "filter") + " added" if result.written
                    else "left as it is", plural_s(len(result.skipped), "column") + " skipped",
                )  # fmt: skip
            progress(count, len(files))
    if args.json:
        write_json(out, [_added_dict(*entry) for entry in done])
    else:
        _write_added(out, done)
    failed = [(path, str(error)) for path, result, error in done if result is None]
    return finish_run(failed, len(done), "failed")


def _write_added(
    out: TextIO, done: Sequence[tuple[str, AddFiltersResult | None, PyBloomError | None]]
) -> None:
    """A line per file (and per column skipped), then the totals."""
    lacking: dict[str, int] = {}  # column -> files that lack it
    for path, added, error in done:
        if added is None:
            out.write(f"{path}: failed: {one_line(str(error))}\n")
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
            if s.reason == NOT_IN_FILE:
                lacking[s.column] = lacking.get(s.column, 0) + 1
    if len(done) > 1:
        results = [r for _, r, _ in done if r is not None]
        files_lacking = sum(any(s.reason == NOT_IN_FILE for s in r.skipped) for r in results)
        lack = (
            f"; {plural_s(files_lacking, 'file')} lack a column ({', '.join(lacking)})"
            if lacking
            else ""
        )
        out.write(
            f"{fraction(sum(r.written for r in results), len(done), 'file')} rewritten, "
            f"{plural_s(sum(len(r.filters) for r in results), 'filter')} added "
            f"({plural_s(sum(r.filter_bytes for r in results), 'byte')}); "
            f"{len(done) - len(results):,} failed{lack}\n"
        )
