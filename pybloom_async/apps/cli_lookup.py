"""The lookup command: the rows that satisfy a predicate, as a table, JSON, CSV or Parquet.

Values are rendered so that nothing is lost or guessed: binary values as
lowercase hex (no ``0x``), nulls as an empty cell (JSON ``null``), dates and
timestamps in ISO 8601, decimals as strings (exact), NaN and infinities as the
strings ``nan``, ``inf`` and ``-inf`` in JSON (which has no such numbers).
Nanosecond timestamps and times (``timestamp[ns]``, ``time64[ns]``) are ISO 8601
with 9 fractional digits, durations in nanoseconds as Python writes a
``timedelta`` with 9 (Python's own types stop at microseconds).
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import logging
import math
import shutil
import sys
import tempfile
from collections.abc import AsyncGenerator, Sequence
from contextlib import ExitStack, aclosing
from typing import IO, TYPE_CHECKING, Any, TextIO, cast

from ..checks import positive_int
from ..errors import InvalidArgumentError, PyBloomError
from ..io.base import SourceStats
from ..io.files import local_paths
from ..io.sinks import write_atomic
from ..predicate import Predicate, parse_predicate
from ..pruning.api import CompiledPredicate
from ..read.reader import BloomReader
from ..read.run import RunKeywords, RunOptions, open_run, streamed_whole
from ..rows.api import LookupOptions, plan_lookup, skip_file
from ..tables import TableSource
from .cli_args import index_option, make_reader, on_error, partitioning, store_options
from .cli_output import (
    Progress,
    check_out,
    finish_run,
    plural_s,
    print_table,
    requests_text,
    text_argument,
    unreadable_text,
)
from .cli_tables import open_table

if TYPE_CHECKING:
    from ..rows.plan import FilePlan  # pyarrow's: imported when rows are read

log = logging.getLogger(__name__)

# ---- values ---------------------------------------------------------------------------


def json_value(value: Any) -> Any:
    """A value of ``pyarrow``'s ``to_pylist`` as JSON can hold it exactly."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, (dt.date, dt.time)):  # datetime is a date
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):  # lists, and a map's (key, value) pairs
        return [json_value(v) for v in value]
    return str(value)  # Decimal (exact as text), timedelta, UUID, ...


_NS = 1_000_000_000


def _ns_texts(arr: Any) -> list[str | None]:
    """Nanosecond timestamps, times or durations as exact text (9 fractional digits)."""
    import pyarrow as pa

    t = arr.type
    ticks = arr.cast(pa.int64()).to_pylist()
    split = [None if v is None else divmod(v, _NS) for v in ticks]
    if pa.types.is_timestamp(t):
        # The whole seconds as pyarrow gives them (its time zones), the nanoseconds added.
        seconds = pa.array([None if p is None else p[0] for p in split], pa.int64())
        whole = seconds.cast(pa.timestamp("s", tz=t.tz)).to_pylist()
        out: list[str | None] = []
        for p, w in zip(split, whole, strict=True):
            if p is None or w is None:
                out.append(None)
                continue
            iso = w.isoformat()  # YYYY-MM-DDTHH:MM:SS, then an offset with a time zone
            out.append(f"{iso[:19]}.{p[1]:09d}{iso[19:]}")
        return out
    if pa.types.is_time(t):
        return [
            None
            if p is None
            else f"{p[0] // 3600:02d}:{p[0] // 60 % 60:02d}:{p[0] % 60:02d}.{p[1]:09d}"
            for p in split
        ]
    return [None if p is None else f"{dt.timedelta(seconds=p[0])}.{p[1]:09d}" for p in split]


def _has_ns(t: Any) -> bool:
    import pyarrow as pa

    if pa.types.is_timestamp(t) or pa.types.is_time64(t) or pa.types.is_duration(t):
        return bool(t.unit == "ns")
    if pa.types.is_dictionary(t):
        return _has_ns(t.value_type)
    return any(_has_ns(t.field(i).type) for i in range(t.num_fields))


def _py_values(arr: Any) -> list[Any]:
    """``arr.to_pylist()``, with nanosecond values as exact text where Python cannot hold them."""
    import pyarrow as pa

    t = arr.type
    if not _has_ns(t):
        return list(arr.to_pylist())
    if pa.types.is_dictionary(t):
        return _py_values(arr.dictionary_decode())
    valid = arr.is_valid().to_pylist()
    if pa.types.is_struct(t):
        fields = [(t.field(i).name, _py_values(arr.field(i))) for i in range(t.num_fields)]
        return [
            {name: values[i] for name, values in fields} if ok else None
            for i, ok in enumerate(valid)
        ]
    if pa.types.is_map(t):
        bounds = arr.offsets.to_pylist()
        keys, items = _py_values(arr.keys), _py_values(arr.items)
        return [
            list(zip(keys[a:b], items[a:b], strict=True)) if ok else None
            for a, b, ok in zip(bounds, bounds[1:], valid, strict=False)
        ]
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        bounds = arr.offsets.to_pylist()
        values = _py_values(arr.values)
        return [
            values[a:b] if ok else None for a, b, ok in zip(bounds, bounds[1:], valid, strict=False)
        ]
    if pa.types.is_fixed_size_list(t):
        size = t.list_size
        values = _py_values(arr.values)
        start = arr.offset * size
        return [
            values[start + i * size : start + (i + 1) * size] if ok else None
            for i, ok in enumerate(valid)
        ]
    return _ns_texts(arr)


def _rows(batch: Any) -> list[dict[str, Any]]:
    """The batch's rows as ``to_pylist`` gives them, nanosecond values as exact text."""
    names = batch.schema.names
    columns = [_py_values(column) for column in batch.columns]
    return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]


def _cell(value: Any) -> Any:
    """A table cell: as JSON writes it, nested values as compact JSON."""
    value = json_value(value)
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return value


def _hex_binaries(batch: Any) -> Any:
    """The batch with binary columns as hex text (the CSV writer takes UTF-8 only)."""
    import pyarrow as pa

    columns = []
    for column in batch.columns:
        if (
            pa.types.is_binary(column.type)
            or pa.types.is_large_binary(column.type)
            or (pa.types.is_fixed_size_binary(column.type))
        ):
            column = pa.array(
                [None if v is None else v.hex() for v in column.to_pylist()], pa.string()
            )
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


# ---- the command ----------------------------------------------------------------------


class _Writer:
    """Writes batches in one format to a text stream, as they come (tables: at the end)."""

    def __init__(self, fmt: str, out: TextIO) -> None:
        self.fmt = fmt
        self.out = out
        self.rows = 0
        self.names: list[str] | None = None
        self.table_rows: list[dict[str, Any]] = []
        self.batches: list[Any] = []
        self.json_rows = 0

    def write(self, batch: Any) -> None:
        first = self.names is None
        self.names = batch.schema.names
        self.rows += batch.num_rows
        if self.fmt == "table":
            self.table_rows += [{k: _cell(v) for k, v in r.items()} for r in _rows(batch)]
        elif self.fmt == "json":
            for r in _rows(batch):
                self.out.write(",\n" if self.json_rows else "[")
                self.json_rows += 1
                json.dump({k: json_value(v) for k, v in r.items()}, self.out, ensure_ascii=False)
        elif self.fmt == "csv":
            import pyarrow.csv as pcsv

            buffer = io.BytesIO()
            options = pcsv.WriteOptions(include_header=first)
            pcsv.write_csv(_hex_binaries(batch), buffer, options)
            self.out.write(buffer.getvalue().decode("utf-8"))
        else:  # parquet: written whole at the end
            self.batches.append(batch)

    def finish(self, schema: Any) -> bytes | None:
        """Ends the output; ``schema``: the result's (for an empty result), or None."""
        if self.fmt == "table":
            names = self.names or (schema.names if schema is not None else [])
            if names:
                print_table(self.out, self.table_rows, names)
        elif self.fmt == "json":
            self.out.write("]\n" if self.json_rows else "[]\n")
        elif self.fmt == "csv" and self.names is None and schema is not None:
            from ..rows.arrow import empty_batch

            self.write(empty_batch(schema))
        elif self.fmt == "parquet" and (self.batches or schema is not None):
            import pyarrow as pa
            import pyarrow.parquet as pq

            from ..rows.arrow import empty_table

            table = pa.Table.from_batches(self.batches) if self.batches else empty_table(schema)
            buffer = io.BytesIO()
            pq.write_table(table, buffer)
            return buffer.getvalue()
        return None


#: Rows held in memory before the output spills to a temporary file (see ``--partial``).
SPOOL_BYTES = 64 << 20


def _check_lookup_args(args: argparse.Namespace) -> int | None:
    """The ``--limit``; input errors of the options, before anything is read."""
    limit = None if args.limit is None else positive_int("--limit", args.limit)
    if args.format == "parquet" and args.out is None:
        raise InvalidArgumentError("--format parquet writes a file: give --out FILE")
    if args.strict and args.partial:
        raise InvalidArgumentError("give --strict or --partial, not both")
    if args.out is not None:
        check_out("--out", args.out, store_options(args))
    return limit


def _target(
    args: argparse.Namespace, out: TextIO, stack: ExitStack
) -> tuple[TextIO, IO[str] | None]:
    """Where the rows are written as they come, and the spooled file if that is one.

    The answer is given only when every file was read (or with ``--partial``): until
    then it waits in memory (``--out``) or in a spooled file, never on stdout.
    """
    if args.out is not None:
        return io.StringIO(), None
    if args.partial:
        return out, None
    # Closed by the caller's ExitStack (ruff cannot see it).
    spool = stack.enter_context(
        tempfile.SpooledTemporaryFile(SPOOL_BYTES, "w+", encoding="utf-8", newline="")  # noqa: SIM115
    )
    return cast(TextIO, spool), spool


async def _read_rows(
    args: argparse.Namespace,
    where: Predicate,
    columns: list[str] | None,
    limit: int | None,
    reader: BloomReader,
    writer: _Writer,
) -> tuple[int, list[PyBloomError], Any]:
    """Write the rows; the files named, those that could not be read, the answer's schema.

    The inputs are listed once, by the lookup's own planning, and every file is planned
    once: the answer's schema comes from that plan, and the rows are read from it (a
    table's: its first, empty, table).
    """
    skipped: list[PyBloomError] = []
    table = await open_table(args)
    with Progress(sys.stderr) as progress:
        keywords: RunKeywords = {
            "reader": reader, "concurrency": args.concurrency, "progress": progress,
            "on_error": on_error(args),
        }  # fmt: skip
        options = LookupOptions(
            page_index=not args.no_page_index,
            partitioning=partitioning(args) if table is None else "hive",
            use_index=index_option(args),
        )
        if table is not None:
            # A table's live files are all part of its answer: one unreadable fails the lookup.
            tables = _table_tables(table, where, columns, keywords, options)
            return 1, [], await _write(tables, limit, writer)
        # One PATH goes as the library's lookup takes it, so that the lake index under it
        # answers as it does there; several are a list (no index root).
        paths = args.paths[0] if len(args.paths) == 1 else list(args.paths)
        ahead = limit is None

        def rows_of(run: RunOptions) -> AsyncGenerator[Any, None]:
            return _planned_rows(paths, where, columns, options, run, skipped, args.strict, ahead)

        opts = RunOptions(**keywords)
        # Local paths without --limit: planned and read in one worker thread, as the
        # library's lookup reads them (with --limit, nothing is read past it).
        whole = ahead and local_paths(paths)
        rows = streamed_whole(opts, rows_of, ROWS_AHEAD) if whole else rows_of(opts)
        plan = await anext(rows)
        total = len(plan.files) + len(skipped)  # the files planned, and those that failed
        log.info("%s listed from %s", plural_s(total, "file"), plural_s(len(args.paths), "input"))
        schema = await _write(rows, limit, writer)
        return total, skipped, schema if plan.files else None  # no file read: no schema


#: Tables of a lookup of local paths read and not yet written, at most.
ROWS_AHEAD = 4


async def _planned_rows(
    paths: str | list[str],
    where: Predicate,
    columns: list[str] | None,
    options: LookupOptions,
    run: RunOptions,
    skipped: list[PyBloomError],
    strict: bool,
    ahead: bool,
) -> AsyncGenerator[Any, None]:
    """The lookup's plan, then its answer's schema (an empty table), then the matching rows
    of the planned files in their order (:func:`~pybloom_async.rows.fetch.planned_tables`,
    in a run of its own: its files spread over the run's threads inline, or its lane): with
    ``ahead``, several files read at once; without (``--limit``), one after another, and
    nothing past where the limit is reached. A file that fails is added to ``skipped`` in
    its place, or raised there with ``strict``: the files before it are written first."""
    import pyarrow as pa

    from ..rows.arrow import empty_table
    from ..rows.fetch import planned_tables

    plan = await plan_lookup(paths, where, columns, skipped=skipped, lookup=options, run=run)
    yield plan
    yield empty_table(pa.schema(plan.job.schema))

    def failed(file_plan: FilePlan, exc: PyBloomError) -> None:
        skip_file(exc, file_plan.location, skipped)

    async with open_run(run) as base:
        tables = planned_tables(
            base.reader, plan.files, plan.job, None if strict else failed, ahead
        )
        async with aclosing(tables) as found:
            async for table in found:
                yield table


async def _table_tables(
    table: TableSource,
    where: Predicate,
    columns: list[str] | None,
    keywords: RunKeywords,
    lookup: LookupOptions,
) -> AsyncGenerator[Any, None]:
    """A table's answer: its schema (an empty table), then its matching rows."""
    from ..rows.tables import table_batches  # pyarrow: imported when a table is read

    async with open_run(RunOptions(**keywords)) as run:
        tables = table_batches(
            run, table, CompiledPredicate(where), columns, on_error="raise",
            options=run.reader.options, lookup=lookup, stream=True,
        )  # fmt: skip
        async with aclosing(tables) as stream:
            async for found in stream:
                yield found


async def _write(tables: AsyncGenerator[Any, None], limit: int | None, writer: _Writer) -> Any:
    """Write the batches of ``tables`` (the first: empty, the answer's schema) up to the
    limit; returns that schema."""
    schema = None
    try:
        async for table in tables:
            if schema is None:
                schema = table.schema
            for batch in table.to_batches():
                if not batch.num_rows:
                    continue
                if limit is not None and writer.rows + batch.num_rows >= limit:
                    writer.write(batch.slice(0, limit - writer.rows))
                    return schema
                writer.write(batch)
    finally:
        await tables.aclose()
    return schema


async def cmd_lookup(args: argparse.Namespace, out: TextIO) -> int:
    where = parse_predicate(text_argument("--where", args.where))
    limit = _check_lookup_args(args)
    columns = list(dict.fromkeys(args.columns)) if args.columns else None
    stats = SourceStats()
    reader = make_reader(args, stats)
    with ExitStack() as stack:
        target, spool = _target(args, out, stack)
        writer = _Writer(args.format, target)
        total, errors, schema = await _read_rows(args, where, columns, limit, reader, writer)
        failed = [(exc.path or "", str(exc)) for exc in errors]
        answered = not failed or args.partial
        data = writer.finish(schema) if answered else None
        reader.clear()
        if answered and args.out is not None:
            if data is None and isinstance(target, io.StringIO):
                data = target.getvalue().encode("utf-8")
            if data is not None:  # (parquet with no readable file: nothing to write)
                write_atomic(args.out, data, options=store_options(args))
        if answered and spool is not None:
            spool.seek(0)
            shutil.copyfileobj(spool, out)
    if not args.quiet:
        source = args.delta or args.iceberg
        text = _summary_text(writer.rows, limit, total, failed, stats, source, answered)
        print(text, file=sys.stderr)
    then = (
        "--partial: the rows of the others were printed"
        if args.partial
        else "no rows printed; --partial prints those of the files read"
    )
    return finish_run(failed, total, "could not be read", then=then)


def _summary_text(
    rows: int,
    limit: int | None,
    total: int,
    failed: Sequence[tuple[str, str]],
    stats: SourceStats,
    table: str | None = None,
    answered: bool = True,
) -> str:
    """One line, worded as prune's summary: rows returned, files, unreadable, requests."""
    returned = f"{plural_s(rows, 'row')} returned"
    if limit is not None and rows >= limit:
        returned += f" (--limit {limit:,})"
    if table is not None:  # an unreadable file of a table fails the command instead
        return f"{returned} from the table {table}; {requests_text(stats)}"
    returned += f" from {plural_s(total, 'file')}"
    if not answered:
        returned = f"{plural_s(rows, 'row')} found in {plural_s(total, 'file')}, none printed"
    names = [name for name, _ in failed]
    return f"{returned}; {unreadable_text(names, len(failed))}; {requests_text(stats)}"
