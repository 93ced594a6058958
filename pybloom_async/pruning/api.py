"""Row-group pruning: which row groups (or files) may hold rows matching a predicate.

The predicate is evaluated in its normal form (NOT pushed down to the leaves,
:func:`pybloom_async.predicate.normal_form`). For every file, each
``=`` / ``IN`` value is converted exactly to the column's physical type
(:func:`pybloom_async.values.encode_value`) and hashed once, each range end
placed exactly in the column's order (:mod:`pybloom_async.values.order`); then
every row group is decided by, in order:

* the type: a value the column cannot hold (out of range, inexact) equals no row,
  and a range beyond the type's values holds none;
* the null counts and the min/max statistics, where the column's sort order is
  known (ranges, ``!=``, ``NOT IN`` and NOT too: :mod:`.bounds`);
* the Bloom filter, probed in batch for the ``=`` / ``IN`` values left.

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

import os
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from ..errors import (
    PredicateError,
    PyBloomError,
)
from ..io.address import local_path
from ..io.base import FileInfo, location_text
from ..io.files import FileStream, expand_paths, local_only, stream_paths
from ..parquet import ColumnDescriptor, GroupChunks, RowGroup, Schema
from ..predicate import Eq, Predicate, TextLiteral, as_predicate, iter_leaves, normal_form
from ..read.fetch import BloomFilterRead, FilterKey, Footer
from ..read.reader import OpenedFile
from ..read.run import Run, RunOptions, open_run, run_options
from ..tables import TableSource, files_only_columns, resolve_table, table_kind
from ..tasks.loops import sync_twin, to_worker
from ..tasks.workers import for_each
from .evaluate import Decided, eval_leaf, evaluate, leaves_of
from .file_pass import FilePass
from .leaves import Leaf, LeafCache, Variant, leaf_column, prepare
from .native import decide_natively
from .partition_types import Partitioning
from .partitions import PartitionPredicate, check_once_decided
from .verdicts import ProbeResult, Rule, Verdict

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..read.run import RunKeywords


#: What a reader keeps the footers of earlier runs' file passes under (with their folder),
#: and how many of them per folder (the schemas a folder's files have, mostly one).
_PASS_REFERENCES = "file pass references"
_KEPT_REFERENCES = 4
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
    # Files are decided in several worker threads at once (one per local file).
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def of(cls, where: Predicate) -> _ColumnsSeen:
        return cls(tuple(dict.fromkeys(p.column for p in iter_leaves(where))))

    def add(self, schema: Schema) -> None:
        if len(self.found) == len(self.wanted):
            # Every column found (the set only grows): the file count is read only when
            # one is in no file, so no lock is taken for it.
            return
        with self.lock:
            self.files += 1
            if len(self.found) == len(self.wanted):
                return
            self.found.update(c for c in self.wanted if c not in self.found and c in schema)
            if len(self.found) < len(self.wanted):
                for column in schema.columns:
                    if len(self.names) >= _COUNTED_COLUMNS:
                        break
                    self.names.setdefault(column.path)

    def found_columns(self, names: Sequence[str]) -> None:
        """Columns a file has outside its footer (partition folders)."""
        with self.lock:
            self.found.update(c for c in names if c in self.wanted)

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


class CompiledPredicate:
    """A predicate made ready once for a whole run: its leaves, and their literals encoded
    once per column type (not once per file), and which of its columns the files have.

    The run's entry point makes one and hands it down: every container the run reads (a
    file's statistics and filters, its page index and dictionaries, partition values, a
    sidecar index, the lake index) takes its leaves from it (:meth:`leaf`), so each leaf is
    built once per column type for the whole run. Files whose column has the same physical
    and logical type share one encoded leaf.
    """

    def __init__(self, where: Predicate | str) -> None:
        self.predicate = as_predicate(where)
        #: What is evaluated: the predicate with NOT pushed down to its leaves.
        self.normal = normal_form(self.predicate)
        self.leaves = leaves_of(self.normal)
        self.seen = _ColumnsSeen.of(self.predicate)
        #: Leaves a file's partition values left out of this residual (:meth:`narrowed`).
        self.unchecked: tuple[Predicate, ...] = ()
        self._cache = LeafCache()
        self._pass: FilePass | None = None
        self._pass_lock = threading.Lock()

    def leaf(self, p: Predicate, desc: ColumnDescriptor, variant: Variant = "") -> Leaf:
        """The run's leaf for ``p`` (a leaf of :attr:`normal`, or of a residual made of
        them) in the column ``desc``; ``variant`` as :data:`~.leaves.Variant` says.

        Raises
        ------
        PredicateError
            A literal is not a value of the column's type.
        """
        return self._cache.leaf(p, desc, variant)

    def leaves_for(self, footer: Footer) -> dict[int, Leaf]:
        """The leaves encoded for one file's columns, keyed by ``id`` of the predicate leaf.

        Raises
        ------
        PredicateError
            A literal is not a value of its column's type.
        """
        if self.unchecked:
            self.check_literals(footer.metadata.schema, self.unchecked)
        return {id(p): prepare(p, footer, self._cache) for p in self.leaves}

    def check_literals(self, schema: Schema, leaves: Iterable[Predicate]) -> None:
        """Type the literals of ``leaves`` (of :attr:`normal`) by a file's columns where
        its partition values decide the predicate without them: a literal typed wrong is
        an error in every file read, whatever the folders decide.

        Raises
        ------
        PredicateError
            A literal is not a value of its column's type.
        """
        for p in leaves:
            column = leaf_column(p)
            if column in schema:  # (a column the file lacks: nothing to type it by)
                self._cache.leaf(p, schema.column(column))

    def file_pass(self, run: Run, path: str) -> FilePass | None:
        """The run's local files pruned in one C call each (:mod:`.file_pass`), when
        ``path`` is a local file's (a path or a ``file://`` URL); None otherwise. A
        caller's reader too: read from the page cache in C, a local file is pruned faster
        than from the reader's cached footer and filters, and as it is now.

        The pass is bound at once from the footers the reader kept of earlier runs' passes
        over the folder of ``path`` (the run's first file asking), so that a service's
        lookup over a lake prunes its first file in C too; a footer whose schema the
        predicate does not fit binds nothing (its own files say why)."""
        if local_path(path) is None:
            return None
        found = self._pass
        if found is None:
            with self._pass_lock:
                found = self._pass
                if found is None:
                    reader = run.reader
                    key = (_PASS_REFERENCES, os.path.dirname(path))

                    def bound(footer: Footer) -> None:
                        kept = reader.kept(key, "") or ()
                        if all(footer is not other for other in kept):
                            reader.keep(key, "", (*kept, footer)[-_KEPT_REFERENCES:])

                    found = FilePass(self.normal, reader.config, run.strict, self.seen.add, bound)
                    for footer in reader.kept(key, "") or ():
                        try:
                            found.learn(footer, self.leaves_for(footer))
                        except PyBloomError:  # its own files say why
                            continue
                    self._pass = found
        return found

    def __reduce__(self) -> tuple[type[CompiledPredicate], tuple[Predicate], dict[str, Any]]:
        """Pickled as its predicate and :attr:`unchecked` (a Spark task's job): compiled
        again where it is read, once per task, its leaves built there."""
        return (CompiledPredicate, (self.predicate,), {"unchecked": self.unchecked})

    def narrowed(self, where: Predicate, unchecked: Sequence[Predicate] = ()) -> CompiledPredicate:
        """This run's compiled predicate for ``where``, what a file's partition values leave
        of this one (sharing its encoded literals and columns seen); ``unchecked``: the
        leaves they left out, still typed by each file (:meth:`leaves_for`)."""
        child = CompiledPredicate(where)
        child.seen = self.seen
        child.unchecked = tuple(unchecked)
        child._cache = self._cache
        return child


@dataclass(frozen=True)
class FilePruned:
    """One file pruned: its footer, and a verdict per row group."""

    footer: Footer
    verdicts: list[Verdict]

    @property
    def kept(self) -> list[int]:
        """The row groups that may hold a match."""
        return [v.row_group for v in self.verdicts if v.kept and v.row_group is not None]


async def prune_opened(file: OpenedFile, compiled: CompiledPredicate, strict: bool) -> FilePruned:
    """Prune one opened file: the one per-file pruning, which every multi-file caller runs.

    Round 1 decides what types, nulls and statistics decide; only the row groups still
    undecided get their filters read (one planned read), and round 2 probes them.

    Raises
    ------
    PredicateError
        A literal is not a value of its column's type; with ``strict``, a column the file
        lacks.
    PyBloomError
        The file cannot be read; with ``strict``, a damaged filter.
    """
    footer = await file.footer()
    location = file.location
    # Verdicts name the file as it was given (a table's URI stays a URI).
    path = location_text(location)
    where = compiled.normal
    leaves = compiled.leaves_for(footer)
    compiled.seen.add(footer.metadata.schema)
    if strict:
        for leaf in leaves.values():
            if leaf.desc is None:
                raise PredicateError(
                    leaf.missing_reason or "no such column", path=path, column=leaf.column
                )
    fast = await decide_natively(file, footer, where, leaves, path)
    if fast is not None:
        if compiled._pass is not None:
            compiled._pass.learn(footer, leaves)
        return FilePruned(footer, fast)
    meta = footer.metadata
    # The chunks of the predicate's columns (the footer scanner reads them, and checks every
    # chunk); no chunk at all when the file has none of them, as before any was read.
    indexes = {leaf.desc.index for leaf in leaves.values() if leaf.desc is not None}
    row_groups: Sequence[RowGroup | GroupChunks] = (
        meta.chunks_of(indexes) if indexes else meta.row_groups
    )
    # Round 1 without filters: row groups the types and statistics already exclude need
    # no filter read at all; their outcome is final.
    decided: Decided = {}
    first = [evaluate(where, leaves, rg, None, strict, path, decided) for rg in row_groups]
    undecided = [rg.index for rg, out in zip(row_groups, first, strict=True) if not out.excluded]
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
    return FilePruned(footer, verdicts)


async def prune_file(
    run: Run, location: str | FileInfo, compiled: CompiledPredicate
) -> list[Verdict]:
    """One file's verdicts, for the callers that want verdicts (prune, the index passes).

    Reached through :meth:`Run.with_file` (a local file in one worker-thread call); an
    unreadable file is one kept verdict with the reason (``strict``: raised).

    Raises
    ------
    PredicateError
        As :func:`prune_opened`, naming the file.
    PyBloomError
        With ``strict``, the first problem.
    """
    path = location_text(location)
    strict = run.strict

    async def work(file: OpenedFile) -> list[Verdict]:
        return (await prune_opened(file, compiled, strict)).verdicts

    quick = None
    passes = compiled.file_pass(run, path)  # the pass finds a FileInfo's size itself
    if passes is not None:
        stats = run.reader.stats

        def quick() -> list[Verdict] | None:
            return passes.verdicts(path, stats)

    try:
        return await run.with_file(location, work, quick=quick)
    except PredicateError as exc:
        # A literal that is not of its column's type (or, strict, a missing column):
        # the predicate is wrong, not the file.
        raise exc.with_context(path=path) from None
    except PyBloomError as exc:
        if strict:
            raise exc.with_context(path=path) from None
        return [Verdict(path, None, None, True, f"file not pruned: {exc}", Rule.UNREADABLE)]
    finally:
        run.done(location)  # the run's own reader caches a file only while it is pruned


#: What a prune reads: files, directories or object-store prefixes, a stream of files,
#: or a Delta or Iceberg table (``prune``'s ``paths``, here and in the index policy's).
PrunePaths: TypeAlias = (
    str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo] | FileStream | TableSource
)


# Long because: the docstring documents every parameter and error (45 lines); the code is 29.
async def prune(
    paths: PrunePaths,
    where: Predicate | str,
    *,
    run: RunOptions | None = None,
    require_columns: bool | Callable[[], bool] = True,
    on_file: Callable[[list[Verdict]], None] | None = None,
    partitioning: Any = "hive",
    **keywords: Unpack[RunKeywords],
) -> list[Verdict]:
    """Decide, for every row group of every file, whether it may hold matching rows.

    Parameters
    ----------
    paths:
        Files, directories or object-store prefixes (``s3://bucket/table/``);
        directories and prefixes expand to their ``*.parquet`` files, read as
        they are listed (or a :class:`~pybloom_async.io.files.FileStream`).
        Or a table: a ``deltalake.DeltaTable`` or a ``pyiceberg`` table, whose
        live files are pruned (files its partition values and statistics rule
        out get no verdict; its schema decides which columns exist).
    where:
        A predicate built with :func:`pybloom_async.col`, or its text form
        (``"id = 42 AND email IN ('a', 'b')"``).
    run, **keywords:
        The run's options (:class:`~pybloom_async.RunOptions`: ``on_error``,
        ``concurrency``, ``options``, ``stats``, ``config``, ``reader``, ``progress``),
        as one object or as keyword arguments (which win). ``on_error``: ``"skip"``
        (prune's default) keeps a file or row group it cannot decide, with the reason;
        ``"raise"`` raises the first problem.
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
    partitioning:
        ``key=value`` folders below a directory or prefix are columns of the
        files under them (``"hive"``, the default; the folder's value wins over a
        column of that name in the file; see :mod:`pybloom_async.pruning.partition_types`
        for their types). The predicate's leaves on them are decided per file
        before it is opened: a file they rule out is never read and gets no
        verdict; a file where they alone make the predicate TRUE keeps every row
        group (``Rule.PARTITION``). A dict of column names to types (or a
        ``pyarrow.Schema``) gives the columns and their types (then folders
        that cannot match are not even listed); None turns folders into plain
        folders.

    Returns
    -------
    list of Verdict
        In file order, then row-group order (empty with ``on_file``).

    Raises
    ------
    PredicateError
        ``where`` is malformed; a literal is not a value of its column's type
        in some file (``'2024/01/05'`` for a DATE; the message names the file,
        column, value and accepted forms), whatever ``on_error``; or a
        column is in none of the files read (``require_columns``), the
        message listing the columns they have.
    InvalidArgumentError
        A run option is invalid (``concurrency`` not a positive int, ...).
    PyBloomError
        With ``on_error="raise"``, the first problem met.
    """
    opts = run_options(run, keywords, "prune")
    compiled = CompiledPredicate(where)
    parts = PartitionPredicate(compiled, Partitioning.of(partitioning))
    if table_kind(paths) is not None:
        # The table's live files after its own first stage (tables/); its schema has
        # been checked, and a partition column is in no data file.
        table = await to_worker(resolve_table, paths, compiled.predicate, opts.options)
        files_only_columns(table, compiled.predicate, opts.raises)
        paths, require_columns = table.files, False
    async with open_run(opts) as r:
        # Read as listed: no list of files held.
        stream = stream_paths(paths, r.reader, folders=parts.folder_filter())
        if not isinstance(paths, FileStream):  # a stream given is read once
            given = paths
            parts.every = lambda: expand_paths(given, r.reader, unreadable=[])
        active = parts if parts.active else None
        return await prune_files(r, stream, compiled, require_columns, on_file, r.progress, active)


async def prune_files(
    run: Run,
    files: Sequence[str | FileInfo] | FileStream,
    compiled: CompiledPredicate,
    require_columns: bool | Callable[[], bool] = True,
    on_file: Callable[[list[Verdict]], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
    partitions: PartitionPredicate | None = None,
) -> list[Verdict]:
    """:func:`prune` within a run already open, over files already found (the index
    passes hand their kept files here): ``run.limit`` files at once, each through
    :func:`prune_file`; ``require_columns`` and ``on_file`` as for :func:`prune`; with
    ``partitions``, each file's partition values decide their leaves first (files they
    rule out are left out; see :mod:`pybloom_async.pruning.partitions`)."""
    seen = compiled.seen
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

    def one(location: str | FileInfo) -> Any:
        if partitions is None:
            return prune_file(run, location, compiled)
        return partitions.prune_file(run, location, prune_file)

    results = await for_each(
        files if partitions is None else partitions.kept_files(files),
        one,
        run.limit,
        progress,
        hand_over if on_file is not None else None,
        run.batches,
    )
    await check_once_decided(run, compiled, partitions, require_columns)
    if on_file is not None:
        for earlier in held:
            on_file(earlier)
        return []
    return [v for per_file in results for v in per_file]


#: ``prune`` for scripts; local paths are read in the calling thread with no event loop
#: (the same code, a fraction of the time: ``io.files.local_only``).
prune_sync = sync_twin(prune, inline_when=local_only("paths"))


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
    run: RunOptions | None = None,
    **keywords: Unpack[RunKeywords],
) -> list[ProbeResult]:
    """For every row group and value, whether the file's data rules the value out.

    Like DuckDB's ``parquet_bloom_probe``, with the same exact conversions and
    statistics checks as :func:`prune`. Text values (``TextLiteral``, or str for
    non-string columns via the CLI) are read by the column's type.

    ``values`` is a list (or any iterable) of values, or one value: a str,
    bytes or any non-iterable value (``probe(path, "id", 42)``) is probed as
    itself, never as its characters or bytes. ``run`` and the keywords are the
    run's options, as for :func:`prune` (``on_error="raise"`` raises on a damaged filter).

    Raises
    ------
    PredicateError
        The column is not in the file (the message lists those it has), or a
        value is not one of the column's type.
    ParquetFormatError, SourceError, ...
        The file cannot be read.
    """
    opts = run_options(run, keywords, "probe")
    eqs = [Eq(column, v) for v in _probe_values(values)]
    cache = LeafCache()  # the values' leaves, built once

    async def work(file: OpenedFile) -> list[ProbeResult]:
        # One open: the footer and the column's filters (PredicateError names an unknown
        # column).
        footer = await file.footer()
        filters = await file.filters([column])
        desc = footer.metadata.schema.column(column)
        try:
            leaves = {id(e): prepare(e, footer, cache) for e in eqs}
        except PredicateError as exc:
            raise exc.with_context(path=footer.path) from None
        out = []
        for rg in footer.metadata.row_groups:
            for e in eqs:
                o = eval_leaf(
                    leaves[id(e)], rg, filters.get((rg.index, desc.path)), opts.raises, footer.path
                )
                out.append(
                    ProbeResult(
                        footer.path, rg.index, desc.path, e.value, o.excluded, o.reason, o.rule
                    )
                )
        return out

    async with open_run(opts) as r:
        return await r.with_file(path, work)


#: ``probe`` for scripts: a local file is read in the calling thread with no event loop.
probe_sync = sync_twin(probe, inline_when=local_only("path"))
