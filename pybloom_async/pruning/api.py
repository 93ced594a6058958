"""Row-group pruning: which row groups (or files) may hold rows matching a predicate.

For every file, each ``=`` / ``IN`` value is converted exactly to the
column's physical type (:func:`pybloom_async.parquet.encode_value`) and
hashed once; then every row group is decided by, in order:

* the type: a value the column cannot hold (out of range, inexact) cannot match;
* the min/max statistics, where the column's sort order is known;
* the Bloom filter, probed in batch for all values left.

AND excludes a row group when any part does, OR when every part does. A row
group is kept whenever the data cannot rule it out: no filter, a damaged
filter, a NaN or NULL probe, a column the file lacks. Each verdict names the
rule that decided it. There are no false negatives: nothing here removes a
row group that holds a matching row.

What the user typed wrong is an error, not an empty answer: a literal that is
not a value of its column's type (see :mod:`pybloom_async.predicate`) and a
column that none of the files read has raise
:class:`~pybloom_async.errors.PredicateError`."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio

from ..errors import (
    PredicateError,
    PyBloomError,
)
from ..io.base import FileInfo, SourceStats
from ..io.store import StoreOptions
from ..parquet import (
    Schema,
)
from ..predicate import Eq, Predicate, as_predicate
from ..predicate_tokens import TextLiteral
from ..read.blocking import (
    BlockingLocalReader,
    blocking_local_paths,
    refuse_running_loop,
    run_blocking,
)
from ..read.fetch import BloomFilterRead, FilterKey, ReaderConfig
from ..read.reader import BloomReader
from ..tables import TableSource, files_only_columns, resolve_table, table_kind
from .evaluate import Decided, eval_leaf, evaluate, leaves_of
from .leaves import LeafCache, prepare
from .runner import FileStream, files_at_once, for_each, once_each, open_run, stream_paths
from .verdicts import ProbeResult, Rule, Verdict

__all__ = ["probe", "probe_sync", "prune", "prune_sync"]


#: The error on a column no file has lists at most this many of the files' columns...
_SHOWN_COLUMNS = 20
#: ... and counts up to this many distinct ones.
_COUNTED_COLUMNS = 1000


@dataclass
class _ColumnsSeen:
    """Which of the predicate's columns the files read so far have.

    A column that no file read has is a mistake (a typo, a wrong nesting), not
    an empty answer; a column only some files lack keeps those files
    (``Rule.MISSING_COLUMN``). The files' own columns are collected only while
    a predicate column is still unfound, for the error message.
    """

    wanted: tuple[str, ...]
    found: set[str] = field(default_factory=set)
    files: int = 0
    names: dict[str, None] = field(default_factory=dict)  # first seen first

    @classmethod
    def of(cls, where: Predicate) -> _ColumnsSeen:
        return cls(tuple(dict.fromkeys(p.column for p in leaves_of(where))))

    def add(self, schema: Schema) -> None:
        self.files += 1
        if len(self.found) == len(self.wanted):
            return
        self.found.update(c for c in self.wanted if c not in self.found and c in schema)
        if len(self.found) < len(self.wanted):
            for column in schema.columns:
                if len(self.names) >= _COUNTED_COLUMNS:
                    break
                self.names.setdefault(column.path)

    def complete(self) -> bool:
        """Whether every predicate column is in some file read so far."""
        return len(self.found) == len(self.wanted)

    def check(self) -> None:
        """Raise when at least one file was read and a predicate column is in none of them.

        Raises
        ------
        PredicateError
            Listing the columns the files do have.
        """
        missing = [c for c in self.wanted if c not in self.found]
        if not self.files or not missing:
            return
        names = list(self.names)
        shown = ", ".join(names[:_SHOWN_COLUMNS])
        if len(names) > _SHOWN_COLUMNS:
            count = len(names) if len(names) < _COUNTED_COLUMNS else f"at least {len(names)}"
            shown += f", ... ({count} columns)"
        files = "the file has" if self.files == 1 else f"the {self.files} files have"
        if len(missing) == 1:
            raise PredicateError(
                f"no file read has this column; {files}: {shown}", column=missing[0]
            )
        raise PredicateError(
            f"no file read has the columns {', '.join(map(repr, missing))}; {files}: {shown}"
        )


async def _prune_file(
    reader: BloomReader,
    location: str | FileInfo,
    where: Predicate,
    strict: bool,
    cache: LeafCache,
    seen: _ColumnsSeen,
) -> list[Verdict]:
    path = location.path if isinstance(location, FileInfo) else os.fspath(location)
    try:
        # One source for the footer and the filters: opened, and its store found, once.
        async with reader.opened(location) as file:
            footer = await file.footer()
            leaves = {id(p): prepare(p, footer, cache) for p in leaves_of(where)}
            seen.add(footer.metadata.schema)
            if strict:
                for leaf in leaves.values():
                    if leaf.desc is None:
                        raise PredicateError(
                            leaf.missing_reason or "no such column", path=path, column=leaf.column
                        )
            row_groups = footer.metadata.row_groups
            # Round 1 without filters: row groups the types and statistics already
            # exclude need no filter read at all; their outcome is final.
            decided: Decided = {}
            first = [evaluate(where, leaves, rg, None, strict, path, decided) for rg in row_groups]
            undecided = [
                rg.index for rg, out in zip(row_groups, first, strict=True) if not out.excluded
            ]
            columns = sorted(
                {leaf.desc.path for leaf in leaves.values() if leaf.needs_filter and leaf.desc}
            )
            filters: dict[FilterKey, BloomFilterRead] = {}
            if undecided and columns:
                filters = await file.filters(columns, undecided)
            verdicts = []
            for rg, out in zip(row_groups, first, strict=True):
                if not out.excluded:
                    out = evaluate(where, leaves, rg, filters, strict, path, decided)
                verdicts.append(
                    Verdict(path, rg.index, rg.num_rows, not out.excluded, out.reason, out.rule)
                )
            return verdicts
    except PredicateError as exc:
        # A literal that is not of its column's type (or, strict, a missing column):
        # the predicate is wrong, not the file.
        raise exc.with_context(path=path) from None
    except PyBloomError as exc:
        if strict:
            raise exc.with_context(path=path) from None
        return [Verdict(path, None, None, True, f"file not pruned: {exc}", Rule.UNREADABLE)]


# Long because: the docstring documents every parameter and error (48 lines); the code is 41.
async def prune(
    paths: (
        str
        | os.PathLike[str]
        | Sequence[str | os.PathLike[str] | FileInfo]
        | FileStream
        | TableSource
    ),
    where: Predicate | str,
    *,
    strict: bool = False,
    concurrency: int | None = None,
    options: StoreOptions | Mapping[str, Any] | None = None,
    stats: SourceStats | None = None,
    config: ReaderConfig | None = None,
    reader: BloomReader | None = None,
    progress: Callable[[int, int], None] | None = None,
    require_columns: bool | Callable[[], bool] = True,
    on_file: Callable[[list[Verdict]], None] | None = None,
) -> list[Verdict]:
    """Decide, for every row group of every file, whether it may hold matching rows.

    Parameters
    ----------
    paths:
        Files, directories or object-store prefixes (``s3://bucket/table/``);
        directories and prefixes expand to their ``*.parquet`` files, read as
        they are listed (or a :class:`~pybloom_async.pruning.runner.FileStream`).
        Or a table: a ``deltalake.DeltaTable`` or a ``pyiceberg`` table, whose
        live files are pruned (files its partition values and statistics rule
        out get no verdict; its schema decides which columns exist).
    where:
        A predicate built with :func:`pybloom_async.col`, or its text form
        (``"id = 42 AND email IN ('a', 'b')"``).
    strict:
        Raise on an unreadable file, a damaged filter or a missing column
        instead of keeping the row group with a reason.
    concurrency:
        Files read at once (default: the reader config's, 64).
    options:
        Object-store options (endpoint, region, credentials, allow_http, ...);
        by default obstore reads the standard environment variables.
    stats:
        Counts requests and bytes.
    config, reader:
        Reader limits, or a long-lived :class:`BloomReader` whose cache to use.
    progress:
        Called as ``progress(done, total)`` after each file.
    require_columns:
        Raise when a column of ``where`` is in none of the files read (at
        least one read). False when ``paths`` are a part of a larger set whose
        other files may have it. Files that lack a column some other file has
        are kept (``Rule.MISSING_COLUMN``) either way. A callable is asked at
        the end (verdicts are held as for True until then).
    on_file:
        Called with each file's verdicts (row-group order) as files are decided,
        in file order; the run then holds only the verdicts of files decided
        ahead of an earlier one still being read, and returns an empty list.
        With ``require_columns``, nothing is handed over until a file with
        every column of ``where`` is read (so a missing column raises before
        any verdict is out).

    Returns
    -------
    list of Verdict
        In file order, then row-group order (empty with ``on_file``).

    Raises
    ------
    PredicateError
        ``where`` is malformed; a literal is not a value of its column's type
        in some file (``'2024/01/05'`` for a DATE; the message names the file,
        column, value and accepted forms), with or without ``strict``; or a
        column is in none of the files read (``require_columns``), the
        message listing the columns they have.
    InvalidArgumentError
        ``concurrency`` is not a positive int.
    PyBloomError
        With ``strict=True``, the first problem met.
    """
    predicate = as_predicate(where)
    if table_kind(paths) is not None:
        # The table's live files after its own first stage (tables/); its schema has
        # been checked, and a partition column is in no data file.
        table = await anyio.to_thread.run_sync(resolve_table, paths, predicate, options)
        files_only_columns(table, predicate, strict)
        paths, require_columns = table.files, False
    cache: LeafCache = {}  # values encoded once per column type, not once per file
    seen = _ColumnsSeen.of(predicate)

    held: list[list[Verdict]] = []  # with on_file: until the columns are known to exist

    def hand_over(verdicts: list[Verdict]) -> None:
        assert on_file is not None
        if require_columns and not seen.complete():
            held.append(verdicts)
            return
        for earlier in held:
            on_file(earlier)
        held.clear()
        on_file(verdicts)

    # The concurrency is checked before any listing.
    async with open_run(
        reader=reader, config=config, options=options, stats=stats, concurrency=concurrency
    ) as run:
        files = stream_paths(paths, run.reader)  # read as listed: no list of files held

        async def one(location: str | FileInfo) -> list[Verdict]:
            try:
                return await _prune_file(run.reader, location, predicate, strict, cache, seen)
            finally:
                run.done(location)  # the run's own reader caches a file only while it is pruned

        results = await for_each(
            files, one, run.limit, progress, hand_over if on_file is not None else None
        )
    if require_columns() if callable(require_columns) else require_columns:
        seen.check()
    if on_file is not None:
        for earlier in held:
            on_file(earlier)
        return []
    return [v for per_file in results for v in per_file]


#: Up to this many local files, the *_sync functions read in the calling thread, one file
#: after another, with no event loop (see reader.BlockingLocalReader); more files, or any
#: URL or directory, go through :func:`prune` and its concurrent reads. Starting the loop
#: and its threads costs about as much CPU as pruning a few files from the page cache,
#: while files on a slow disk are better read concurrently: a few is where both meet.
BLOCKING_MAX_FILES = 4


def prune_sync(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo] | TableSource,
    where: Predicate | str,
    **kwargs: Any,
) -> list[Verdict]:
    """:func:`prune` for scripts (not from inside an event loop); the same arguments.

    A few local files (``BLOCKING_MAX_FILES``) are read in the calling thread
    without starting an event loop: the same reader, planner and pruning code,
    the same verdicts, a fraction of the time.

    Raises
    ------
    EventLoopError
        Called from a thread that runs an event loop (Jupyter, async code): use
        ``await prune(...)`` there.
    """
    refuse_running_loop("prune_sync", "prune")
    direct = kwargs.get("reader") or table_kind(paths) is not None
    local = None if direct else blocking_local_paths(paths, BLOCKING_MAX_FILES)
    if local is not None:
        on_file = kwargs.pop("on_file", None)
        verdicts = _prune_blocking(once_each(local), where, **kwargs)
        if on_file is None:
            return verdicts
        # As prune() hands them over: per file, in file order, after the column check.
        for _, per_file in itertools.groupby(verdicts, key=lambda v: v.file):
            on_file(list(per_file))
        return []
    return anyio.run(lambda: prune(paths, where, **kwargs))


def _prune_blocking(
    files: Sequence[str],
    where: Predicate | str,
    *,
    strict: bool = False,
    concurrency: int | None = None,
    options: StoreOptions | Mapping[str, Any] | None = None,
    stats: SourceStats | None = None,
    config: ReaderConfig | None = None,
    progress: Callable[[int, int], None] | None = None,
    require_columns: bool = True,
) -> list[Verdict]:
    """:func:`prune` over local files, one after another, with blocking reads and no loop."""
    predicate = as_predicate(where)
    rdr = BlockingLocalReader(
        config=config or ReaderConfig(), options=options, stats=stats, max_files=1 << 20
    )
    files_at_once(concurrency, rdr.config)  # validated as prune() does; files go one by one
    cache: LeafCache = {}
    seen = _ColumnsSeen.of(predicate)
    out: list[Verdict] = []
    with rdr:
        for done, path in enumerate(files, 1):
            out.extend(run_blocking(_prune_file(rdr, path, predicate, strict, cache, seen)))
            if progress is not None:
                progress(done, len(files))
    if require_columns:
        seen.check()
    return out


def _probe_values(values: Any) -> list[Any]:
    """The values to probe: a str, bytes or any non-iterable is one value, not its items."""
    if isinstance(values, (str, bytes, bytearray, memoryview, TextLiteral)):
        return [values]
    try:
        return list(values)
    except TypeError:  # not iterable: an int, a float, a date, None, ...
        return [values]


async def probe(
    path: str | os.PathLike[str] | FileInfo,
    column: str,
    values: Any,
    *,
    strict: bool = False,
    options: StoreOptions | Mapping[str, Any] | None = None,
    stats: SourceStats | None = None,
    config: ReaderConfig | None = None,
    reader: BloomReader | None = None,
) -> list[ProbeResult]:
    """For every row group and value, whether the file's data rules the value out.

    Like DuckDB's ``parquet_bloom_probe``, with the same exact conversions and
    statistics checks as :func:`prune`. Text values (``TextLiteral``, or str for
    non-string columns via the CLI) are read by the column's type.

    ``values`` is a list (or any iterable) of values, or one value: a str,
    bytes or any non-iterable value (``probe(path, "id", 42)``) is probed as
    itself, never as its characters or bytes.

    Raises
    ------
    PredicateError
        The column is not in the file (the message lists those it has), or a
        value is not one of the column's type.
    ParquetFormatError, SourceError, ...
        The file cannot be read.
    """
    # One open: the footer and the column's filters (PredicateError names an unknown column).
    async with open_run(reader=reader, config=config, options=options, stats=stats) as run:
        footer, filters = await run.reader.footer_and_filters(path, [column])
    desc = footer.metadata.schema.column(column)
    eqs = [Eq(column, v) for v in _probe_values(values)]
    try:
        leaves = {id(e): prepare(e, footer) for e in eqs}
    except PredicateError as exc:
        raise exc.with_context(path=footer.path) from None
    out = []
    for rg in footer.metadata.row_groups:
        for e in eqs:
            o = eval_leaf(
                leaves[id(e)], rg, filters.get((rg.index, desc.path)), strict, footer.path
            )
            out.append(
                ProbeResult(footer.path, rg.index, desc.path, e.value, o.excluded, o.reason, o.rule)
            )
    return out


def probe_sync(
    path: str | os.PathLike[str] | FileInfo, column: str, values: Any, **kwargs: Any
) -> list[ProbeResult]:
    """:func:`probe` for scripts (not from inside an event loop); the same arguments.

    A local file is read in the calling thread without an event loop, as in
    :func:`prune_sync`.

    Raises
    ------
    EventLoopError
        Called from a thread that runs an event loop: use ``await probe(...)`` there.
    """
    refuse_running_loop("probe_sync", "probe")
    if not kwargs.get("reader") and blocking_local_paths(path, 1) is not None:
        with BlockingLocalReader(
            config=kwargs.get("config") or ReaderConfig(),
            options=kwargs.get("options"),
            stats=kwargs.get("stats"),
        ) as reader:
            return run_blocking(probe(path, column, values, **{**kwargs, "reader": reader}))
    return anyio.run(lambda: probe(path, column, values, **kwargs))
