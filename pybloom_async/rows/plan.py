"""One file's plan for reading its rows: what its footer says, and what pyarrow needs.

pyarrow decodes row groups from a file-like object that serves only the bytes fetched
beforehand (:class:`FetchedFile`) and the footer the reader already holds: a decode never
makes a request of its own. pyarrow decodes a footer only to read rows from its file
(:func:`describe`); the Arrow schema of a file pruned whole comes from an earlier file of
the same schema.
"""

from __future__ import annotations

import dataclasses
import io
import re
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import ParquetFormatError
from ..io.base import FileInfo, location_text
from ..io.identity import SourceIdentity
from ..parquet import ColumnChunk, FileMetaData, FooterBounds, Schema
from ..predicate import Predicate
from ..pruning.api import CompiledPredicate
from ..pruning.partitions import PartitionPredicate
from ..read.fetch import Footer
from ..read.plan import DEFAULT_PLAN_CONFIG, PlanConfig
from ..read.ranges import NO_BYTES, HeldBytes
from .match import Leaves, ValueSets
from .pages import FilePageIndex, file_page_index, has_offset_index


class FetchedFile(io.RawIOBase):
    """A file whose only readable bytes are those fetched beforehand (:class:`HeldBytes`).

    pyarrow decodes row groups from it; a read of bytes not fetched is an
    error, so a decode never makes a request of its own.
    """

    def __init__(self, size: int, held: HeldBytes, path: str) -> None:
        super().__init__()
        self._size = size
        self._held = held
        self._path = path
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = base + offset
        return self._pos

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        want = min(len(view), max(0, self._size - self._pos))
        data = self._held.read(self._pos, self._pos + want)
        if data is None:
            raise OSError(
                f"bytes [{self._pos}, {self._pos + want}) of {self._path} were not fetched"
            )
        view[:want] = data
        self._pos += want
        return want


@dataclass
class FilePlan:
    """One file after pruning: what reading its rows needs (not the footer's tail bytes).

    A file pruned whole keeps only its (shared) schemas: a run over many files holds
    nothing more per such file (its footer's model would be garbage the collector walks).
    """

    location: str | FileInfo
    path: str
    schema: Schema
    footer_location: FooterBounds
    identity: SourceIdentity
    kept: list[int]
    arrow_schema: Any  # pa.Schema of the whole file
    #: The footer's bytes (a file with row groups to read keeps them), for pyarrow's decode
    #: of them when a row group is first decoded by pyarrow (:attr:`pyarrow_metadata`).
    footer_bytes: bytes | None
    page_index: FilePageIndex | None = None  # the kept row groups' page index, if any
    footer_metadata: FileMetaData | None = None  # our footer model (None: nothing kept)
    #: The predicate its rows are matched with, its partition leaves decided (None: the
    #: job's); ``every_row``: its partition values make the predicate TRUE for every row.
    where: Predicate | None = None
    every_row: bool = False
    #: Its partition columns (``key=value`` folders; they win over its own columns of the
    #: same name): their values, and their Arrow fields.
    partition: dict[str, Any] = dataclasses.field(default_factory=dict)
    partition_fields: tuple[Any, ...] = ()
    #: The bytes of the kept row groups' chunks and page index that the footer's read
    #: brought already (its tail): the rows' reads start from them, never fetch them again.
    held: HeldBytes = NO_BYTES

    #: pyarrow's decode of the footer, made when first asked.
    decoded_by_pyarrow: Any = None
    #: :func:`chunk_range` of each (row group, leaf) asked so far.
    chunk_ranges: dict[tuple[int, int], tuple[int, int]] = dataclasses.field(
        default_factory=dict, repr=False, compare=False
    )
    #: The chunks asked so far (:meth:`chunk`), by row group and leaf.
    chunks_made: dict[tuple[int, int], ColumnChunk] = dataclasses.field(
        default_factory=dict, repr=False, compare=False
    )

    @property
    def metadata(self) -> FileMetaData:
        """The footer's model, which a file with row groups to read keeps."""
        assert self.footer_metadata is not None, "a file pruned whole keeps no footer model"
        return self.footer_metadata

    def chunk(self, group: int, leaf: int) -> ColumnChunk:
        """Leaf ``leaf``'s chunk in row group ``group``. The footer scanner reads every
        leaf's chunks once (:meth:`FileMetaData.chunk`): the rows need the read columns'
        places, sizes and codecs, not every chunk's statistics decoded nor the other
        columns' chunks made."""
        found = self.chunks_made.get((group, leaf))
        if found is None:
            found = self.chunks_made[group, leaf] = self.metadata.chunk(group, leaf)
        return found

    @property
    def pyarrow_metadata(self) -> Any:
        """pyarrow's decode of the footer (``pq.FileMetaData``), made when pyarrow first
        decodes a row group of the file: a lookup whose rows are found by key and taken
        from their pages (:mod:`.keyed`, :mod:`.take`) never decodes the footer twice.

        Raises
        ------
        ParquetFormatError
            pyarrow cannot read the footer.
        """
        if self.decoded_by_pyarrow is None:
            assert self.footer_bytes is not None, "a file pruned whole keeps no footer"
            self.metadata.load()  # every field pyarrow's reader checks, checked first
            self.decoded_by_pyarrow = _pyarrow_metadata(self.footer_bytes, self.path)
        return self.decoded_by_pyarrow


def footer_bytes(footer: Footer) -> bytes:
    """The FileMetaData, its length and the magic: the file's last bytes, from the tail."""
    n = footer.location.metadata_length + 8
    return footer.tail[-n:]


def chunk_range(plan: FilePlan, group: int, leaf: int) -> tuple[int, int]:
    """Bytes of one column chunk, checked against the file (before the footer); each
    chunk's are found once per plan (the read asks for them many times).

    Raises
    ------
    ParquetFormatError
        The chunk lies in another file, or outside this one's data.
    """
    found = plan.chunk_ranges.get((group, leaf))
    if found is None:
        found = plan.chunk_ranges[group, leaf] = _chunk_range(plan, group, leaf)
    return found


def _chunk_range(plan: FilePlan, group: int, leaf: int) -> tuple[int, int]:
    chunk = plan.chunk(group, leaf)
    place = chunk.place
    start, dictionary = place.data_page_offset, place.dictionary_page_offset
    if dictionary is not None and 0 < dictionary < start:
        start = dictionary
    end = start + place.total_compressed_size
    if chunk.file_path is not None:
        raise ParquetFormatError(
            f"the column chunk is stored in another file ({chunk.file_path!r}): not supported",
            path=plan.path,
            row_group=group,
            column=chunk.path,
        )
    if not 4 <= start <= end <= plan.footer_location.metadata_offset:
        raise ParquetFormatError(
            f"column chunk bytes [{start}, {end}) lie outside the file's data",
            path=plan.path,
            row_group=group,
            column=chunk.path,
        )
    if _padded(plan.metadata.created_by):
        end = min(end + _DICTIONARY_PADDING, plan.footer_location.file_size)
    return start, end


#: parquet-mr before 1.2.9 left the dictionary page header out of a chunk's size, and Arrow
#: reads up to this many bytes more of each chunk of its files (PARQUET-816, IMPALA-694).
_DICTIONARY_PADDING = 100
_PARQUET_MR = re.compile(r"parquet-mr(?: version (\d+)\.(\d+)\.(\d+))?(?:[ (-]|$)")


def _padded(created_by: str | None) -> bool:
    """Whether Arrow reads a chunk's bytes padded: the writer is parquet-mr before 1.2.9,
    or parquet-mr without a version (which Arrow reads as 0.0.0)."""
    found = _PARQUET_MR.match(created_by or "")
    if found is None:
        return False
    version = tuple(int(x) for x in found.groups()) if found.group(1) else (0, 0, 0)
    return version < (1, 2, 9)


class Fetched:
    """A file's plan and the bytes fetched of it (``held``), read by our own code (rows
    found by key and taken: :mod:`.keyed`, :mod:`.take`) or by pyarrow, whose reader (with
    its decode of the footer) is made when it first decodes a row group.

    pyarrow reads without pre-buffering: each column chunk it decodes as it is
    (:func:`chunk_range`), where pre-buffering would coalesce the chunks of a row group over
    the holes between them, bytes of other columns never fetched."""

    def __init__(self, plan: FilePlan, held: HeldBytes) -> None:
        self.plan, self.held = plan, held
        self._reader: Any = None

    def _made(self) -> Any:
        if self._reader is None:
            plan = self.plan
            source = FetchedFile(plan.footer_location.file_size, self.held, plan.path)
            self._reader = pq.ParquetFile(source, metadata=plan.pyarrow_metadata, pre_buffer=False)
        return self._reader

    def read_row_groups(self, groups: Sequence[int], **options: Any) -> Any:
        """pyarrow's ``ParquetFile.read_row_groups`` of the fetched bytes."""
        return self._made().read_row_groups(groups, **options)

    def read_row_group(self, group: int, **options: Any) -> Any:
        """pyarrow's ``ParquetFile.read_row_group`` of the fetched bytes."""
        return self._made().read_row_group(group, **options)


def top_level(plan: FilePlan) -> list[str]:
    """The file's own top-level columns that the result reads from it (not those its
    partition folders replace)."""
    return [str(name) for name in plan.arrow_schema.names if name not in plan.partition]


def columns_of(plan: FilePlan) -> list[Any]:
    """The file's columns as the result sees them: its own (but those its partition folders
    replace), then its partition columns, as Arrow fields."""
    own = [f for f in plan.arrow_schema if f.name not in plan.partition]
    return own + list(plan.partition_fields)


def rows_where(plan: FilePlan | RowsOf | None, job: Job) -> Predicate | None:
    """The predicate the file's rows are matched with (None: every row matches), from its
    plan or, before it is planned, from what its partition folders make of its rows (None:
    it has none)."""
    if plan is None:
        return job.where
    if plan.every_row:
        return None
    return plan.where if plan.where is not None else job.where


def has_column(plan: FilePlan, column: str) -> bool:
    """Whether the file has a predicate column: a leaf of its own, or a partition column."""
    return column in plan.partition or column in plan.schema


def read_columns(
    plan: FilePlan, projected: Sequence[str], predicate_columns: Sequence[str]
) -> tuple[list[str], list[int]]:
    """pyarrow's column names to read (projected tops, predicate leaves) and their leaves."""
    schema = plan.schema
    tops = set(top_level(plan))
    names = [c for c in projected if c in tops]
    for column in predicate_columns:
        if column in schema:
            desc = schema.column(column)
            if desc.path_parts[0] not in names:
                names.append(column)
    leaves = []
    for desc in schema.columns:
        for name in names:
            if desc.path == name or desc.path.startswith(name + "."):
                leaves.append(desc.index)
                break
    return names, leaves


#: Arrow schemas by what decides them: the Parquet schema (its fingerprint) and the
#: ``ARROW:schema`` pyarrow stored beside it. Bounded as the decoder's schemas are.
_ARROW_SCHEMAS: dict[Any, Any] = {}
_ARROW_SCHEMAS_MAX = 256
_ARROW_SCHEMAS_LOCK = threading.Lock()
_ARROW_KEY = "ARROW:schema"


def _pyarrow_metadata(data: bytes, path: str) -> Any:
    """pyarrow's own decode of the footer (what its reader needs to decode data).

    Only pyarrow calls that raise are made on it: opening a reader with it, its schema, and
    reading row groups. ``FileMetaData.row_group`` and ``RowGroupMetaData.column`` are
    never called: they build pyarrow's C++ metadata classes, whose checks (a level
    histogram's length, for one) end the process on a hostile footer instead of raising.
    Our own decoder checks those fields before (:meth:`FileMetaData.load`), so that such a
    file is refused with a clear message before any row is read.
    """
    try:
        return pq.read_metadata(pa.BufferReader(data))
    except _PYARROW_ERRORS as exc:
        raise _unreadable(exc, path) from None


#: What pyarrow raises on a footer it cannot read: its own errors, and UnicodeDecodeError
#: for a column name that is not UTF-8 (its Python layer decodes the names).
_PYARROW_ERRORS = (OSError, pa.ArrowException, UnicodeDecodeError)


def _unreadable(exc: BaseException, path: str) -> ParquetFormatError:
    """The file's error for what pyarrow raised reading its footer."""
    if isinstance(exc, UnicodeDecodeError):
        return ParquetFormatError(
            f"pyarrow cannot read the footer: a column name is not UTF-8 ({exc})", path=path
        )
    return ParquetFormatError(f"pyarrow cannot read the footer: {exc}", path=path)


def arrow_schema_of(footer: Footer) -> tuple[Any, Any]:
    """The file's Arrow schema as pyarrow reads it, from an earlier file of the same schema
    or else from pyarrow's decode of the footer (then given too; None when not made): a
    file reaches pyarrow's footer decoder here only when its schema is one not met before."""
    meta = footer.metadata
    fingerprint = meta.schema.fingerprint
    stored = next((kv.value for kv in meta.key_value_metadata or () if kv.key == _ARROW_KEY), None)
    key = None if fingerprint is None else (fingerprint, stored)
    found = _ARROW_SCHEMAS.get(key) if key is not None else None
    if found is not None:
        return found, None
    # Files of one new schema met at once in several threads: one decodes it, the others
    # wait for it (a decode costs more than the wait).
    with _ARROW_SCHEMAS_LOCK:
        found = _ARROW_SCHEMAS.get(key) if key is not None else None
        if found is not None:
            return found, None
        footer.metadata.load()  # every field pyarrow's reader checks, checked first
        md = _pyarrow_metadata(footer_bytes(footer), footer.path)
        try:
            found = pq.ParquetFile(
                FetchedFile(footer.file_size, HeldBytes(), footer.path), metadata=md
            )
            found = found.schema_arrow
        except _PYARROW_ERRORS as exc:
            raise _unreadable(exc, footer.path) from None
        if key is not None:
            if len(_ARROW_SCHEMAS) >= _ARROW_SCHEMAS_MAX:
                _ARROW_SCHEMAS.clear()
            _ARROW_SCHEMAS[key] = found
    return found, md


def describe(
    location: str | FileInfo,
    footer: Footer,
    kept: list[int],
    page_index: bool = False,
    rows: RowsOf | None = None,
    tail: bool = False,
) -> FilePlan:
    """What reading the rows of the kept row groups needs, from the footer already read.

    pyarrow decodes the footer when it first decodes a row group (its reader needs its own
    metadata: :attr:`FilePlan.pyarrow_metadata`), or here for a schema not met before; the
    Arrow schema of a file comes from an earlier file of the same schema. A row group of
    no rows has nothing to read: it is left out (pyarrow writes one for an empty table,
    its chunks at offset 0). With ``page_index``,
    the places of the file's page index are read too (see :mod:`.pages`), and the index
    bytes the footer's tail already holds are kept. ``rows`` says what its partition
    folders make of the file's rows. With ``tail`` (rows read right after, in the same
    per-file step), the data bytes the tail holds are kept too: bounded by the tail,
    and only while the file is read.

    Raises
    ------
    ParquetFormatError
        The footer is damaged (a row group is read from it), or pyarrow cannot read the
        footer of a schema not met before.
    """
    groups = footer.metadata.row_groups
    kept = [g for g in kept if groups[g].num_rows != 0]
    arrow_schema, md = arrow_schema_of(footer)
    pages = None
    # Files without a page index (pyarrow's default) skip placing its chunks' indexes.
    if page_index and kept and has_offset_index(footer.metadata, kept[0]):
        bounds = footer.location
        pages = file_page_index(
            footer.metadata,
            bounds.metadata_offset,
            footer.tail,
            footer.tail_start,
            kept,
            footer.path,
        )
    plan = FilePlan(
        location,
        footer.path,
        footer.metadata.schema,
        footer.location,
        footer.identity,
        kept,
        arrow_schema,
        footer_bytes(footer) if kept else None,
        pages,
        footer.metadata if kept else None,
    )
    with_partition(plan, rows)
    if kept:
        plan.decoded_by_pyarrow = md
        data = _tail_data(plan, footer) if tail else []
        plan.held = HeldBytes([*data, *(pages.held if pages else ())])
    return plan


def with_partition(plan: FilePlan, rows: RowsOf | None) -> None:
    """Set what its partition folders make of the file's rows on its plan."""
    if rows is not None:
        if rows.check_literals is not None:
            rows.check_literals(plan.schema)
        plan.where, plan.every_row = rows.where, rows.every_row
        plan.partition, plan.partition_fields = dict(rows.values), tuple(rows.fields)


def _tail_data(plan: FilePlan, footer: Footer) -> list[tuple[int, bytes]]:
    """The data bytes the footer's tail holds (a small file's, or the last row groups' of a
    file read by a large suffix): one copy, so the tail itself goes. Not cut to the kept
    row groups' chunks: finding each chunk's place cost more than the copy (a lookup's
    plans hold these bytes only while their file is read)."""
    tail_start = footer.tail_start
    end = plan.footer_location.metadata_offset
    if tail_start >= end:
        return []
    return [(tail_start, footer.tail[: end - tail_start])]


@dataclass(frozen=True)
class RowsOf:
    """What a file's partition folders make of its rows (see :class:`FilePlan`)."""

    where: Predicate | None = None
    every_row: bool = False
    values: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    fields: Sequence[Any] = ()
    #: With ``every_row``: types the literals the folders decided without by the file's
    #: columns (:meth:`~pybloom_async.pruning.api.CompiledPredicate.check_literals`).
    check_literals: Callable[[Schema], None] | None = None


class TableFile(Protocol):
    """What a table (Delta, Iceberg) says about the rows of one of its data files, beyond
    the file itself: its deleted rows, and the values of columns it keeps outside the file
    (partition values). ``rows/tables.py`` supplies it; the read of the file's rows
    (:func:`pybloom_async.rows.fetch.file_tables`) asks it for every decoded row group."""

    @property
    def columns(self) -> Sequence[str]:
        """Columns of the file the deletes compare (read with the predicate's columns)."""

    def leaves(self, schema: Schema, path: str, cache: ValueSets | None = None) -> Leaves:
        """The comparisons of the file's rows, the table's own columns' literals included
        (``cache``: the run's value sets, as :class:`Leaves` takes them)."""

    def values(self, rows: int) -> Mapping[str, Any]:
        """Predicate columns the table keeps outside the file: ``rows`` values of each."""

    def live(self, rows: Any, positions: Any) -> Any:
        """Which decoded rows are live (a numpy bool array; None: all of them).

        ``rows`` is the decoded ``pyarrow.Table``, ``positions`` each row's ordinal in the
        file (numpy int64: a row group's first row is the sum of the earlier groups'
        row counts). Asked only for rows where the predicate holds somewhere, from a
        worker thread (it may wait for the table's deletes).
        """


@dataclass(frozen=True)
class Job:
    """What every file's read shares: the predicate, the columns asked for, the limits, and
    once every footer is read, the result's schema (then each table comes shaped to it)."""

    #: The run's predicate, compiled once: its leaves serve every file's page index and
    #: dictionaries (None: every row, a scan with no predicate to evaluate).
    compiled: CompiledPredicate | None
    columns: list[str] | None  # None: every top-level column of each file
    max_fetch_bytes: int
    page_index: bool = True  # only the pages that may match, where the file has a page index
    merging: PlanConfig = DEFAULT_PLAN_CONFIG  # how ranges are merged (the reader's)
    #: The predicate's value sets, built once per column type for all the run's files.
    value_sets: dict[Any, Any] = dataclasses.field(default_factory=dict, compare=False, repr=False)
    schema: Any = None  # pa.Schema of the result, once known
    names: list[str] | None = None  # its column names
    folders: tuple[Any, ...] = ()  # the partition columns of the files listed (pa.Field)
    #: A table's word on each of its files (deleted rows, partition values); None: plain files.
    table_file: Callable[[FilePlan], Awaitable[TableFile | None]] | None = None

    @property
    def where(self) -> Predicate | None:
        """The predicate the rows are matched with (None: every row)."""
        return self.compiled.predicate if self.compiled is not None else None

    def compiled_for(self, where: Predicate | None) -> CompiledPredicate | None:
        """The run's compiled predicate for ``where``: the job's own, or a residual of it
        (what a file's partition folders leave), which shares its leaves (None: no
        predicate, every row matches)."""
        if where is None:
            return None
        assert self.compiled is not None, "a file's predicate without the run's"
        return self.compiled if where is self.compiled.predicate else self.compiled.narrowed(where)

    def shaped(self, schema: Any, names: list[str]) -> Job:
        """This job with the result's schema known: tables come shaped to it."""
        return dataclasses.replace(self, schema=schema, names=names)

    def wanted(self, plan: FilePlan) -> list[str]:
        """The top-level columns to read of one file (the predicate's come on top)."""
        names = self.names if self.names is not None else self.columns
        return list(names) if names is not None else top_level(plan)


def rows_of(parts: PartitionPredicate, location: str | FileInfo) -> RowsOf | None:
    """What the file's partition folders give its rows: their values and Arrow fields, and
    what they leave of the predicate (None: the file has no partition folder).

    Raises
    ------
    PredicateError, SchemaMismatchError
        As :meth:`~pybloom_async.pruning.partitions.PartitionPredicate.decide`.
    """
    if not parts.pairs(location):
        return None
    decision = parts.decide(location)
    residual = decision.compiled
    path = location_text(location)
    values = parts.values(location, path)
    unchecked = decision.unchecked if residual is None else ()
    return RowsOf(
        where=residual.predicate if residual is not None else None,
        every_row=residual is None,
        values=values,
        fields=[pa.field(key, parts.type_of(key).arrow()) for key in values],
        check_literals=(
            (lambda schema: parts.compiled.check_literals(schema, unchecked)) if unchecked else None
        ),
    )


def partition_fields(parts: PartitionPredicate) -> tuple[Any, ...]:
    """The partition columns of the files listed (settled), as Arrow fields."""
    return tuple(pa.field(key, parts.type_of(key).arrow()) for key in parts.partition_columns())


@dataclass(frozen=True)
class FileMatch:
    """How one file's rows are matched: its comparisons (``leaves``), and a table's word on
    the file (``table``: its deleted rows, the columns it keeps outside the file; None: a
    plain file) with each row group's first row in the file (``starts``)."""

    leaves: Leaves
    table: TableFile | None = None
    starts: Sequence[int] = ()

    def positions(self, group: int, rows: Any) -> Any:
        """The rows' ordinals in the file (``rows``: in the row group; numpy int64), for a
        table's deletes (None: a plain file)."""
        if self.table is None:
            return None
        return np.asarray(rows, dtype=np.int64) + self.starts[group]


def file_match(plan: FilePlan, job: Job, table: TableFile | None) -> FileMatch:
    """How the file's rows are matched (``table``: the table's word on it, if any)."""
    if table is None:
        return FileMatch(Leaves(plan.schema, plan.path, job.value_sets))
    starts, at = [], 0
    for group in plan.metadata.row_groups:  # a row group's first row: the earlier ones' rows
        starts.append(at)
        at += group.num_rows
    return FileMatch(table.leaves(plan.schema, plan.path, job.value_sets), table, starts)


def row_numbers(spans: Sequence[tuple[int, int]]) -> Any:
    """The row numbers of ``[start, end)`` spans, in order (numpy int64)."""
    parts = [np.arange(a, b, dtype=np.int64) for a, b in spans]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
