"""A row group's matching rows taken from its column chunks without decoding the rest.

A lookup's matches are a few rows of a row group; pyarrow decodes every value of a chunk
to give them. For a flat column of a plain type, the C chunk reader (:mod:`.chunk`) finds
each wanted row's value in the chunk's pages instead, in one call: only the pages that hold
a wanted row (and the dictionary, as far as they use it) are decompressed, and their levels
and values are walked no further than the last wanted row. Only the wanted values are
copied out. Where the C reader refuses a chunk, :mod:`.page_walk` walks its pages in
Python with the same page calls; here each column's values become an Arrow array. A row
group read by page (its offset index chose the pages that hold the rows) is taken the
same way, its chosen pages read as a chunk of just those pages (:func:`take_paged`).

What it reads: columns without repetition and with at most one definition level, stored
as INT32, INT64, FLOAT, DOUBLE or BYTE_ARRAY, whose Arrow type (as pyarrow reads this file)
is their values' own or a view of them: integers, floats, ``date32``, timestamps of the
column's unit, strings and binaries. Pages v1 (levels RLE) and v2, values PLAIN or
dictionary-encoded, every codec but Hadoop's LZ4 framing and LZO. Any other
column, encoding or page, and any page that does not read as its header says, is left to
pyarrow, which decodes the whole chunk as before and names what is wrong: this module
never raises for what a file holds.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from .._native import ffi, lib
from ..errors import PyBloomError
from ..parquet.logical import LogicalKind, TimeUnit
from ..parquet.schema import ColumnDescriptor
from ..read.ranges import HeldBytes
from ..types import PhysicalType
from .chunk import MAX_TAKEN_BYTES, Chunk, ChunkPart, Chunks
from .page_walk import (
    DTYPES,
    ChunkPages,
    Page,
    Refused,
    as_i64,
    as_u8,
    checked,
    chunk_pages,
    value_width,
)
from .pages import GroupPages, decode_group, held_reader
from .plan import FilePlan, chunk_range, row_numbers

if TYPE_CHECKING:
    from ..parquet.page_index import PageSpan

#: Whether a chunk is read by the C chunk reader (:mod:`.chunk`) first, and walked by
#: :mod:`.page_walk` only where that refuses it. The tests switch it off to read every
#: chunk by the walk.
NATIVE_CHUNKS = True

#: Arrow's type of those values as they are stored.
_STORAGE = {
    PhysicalType.INT32: pa.int32(),
    PhysicalType.INT64: pa.int64(),
    PhysicalType.FLOAT: pa.float32(),
    PhysicalType.DOUBLE: pa.float64(),
}
_UNITS = {TimeUnit.MILLIS: "ms", TimeUnit.MICROS: "us", TimeUnit.NANOS: "ns"}
_INT32_MAX = (1 << 31) - 1  # the last offset of a string or binary array


@dataclass(frozen=True)
class Column:
    """A column the C decoder takes rows of: its leaf and the Arrow type of the result."""

    desc: ColumnDescriptor
    arrow_type: Any


#: What :func:`takeable` found, by the ids of the schemas (shared by the files of one
#: schema) and the column's name, beside the schemas (so their ids are theirs while the
#: entry lives). Bounded: cleared when full.
_TAKEABLE: dict[tuple[int, int, str], tuple[Any, Any, Column | None]] = {}
_TAKEABLE_MAX = 4096


def takeable(plan: FilePlan, name: str) -> Column | None:
    """The column ``name`` (a top-level name of the file) if its rows can be taken here."""
    key = (id(plan.schema), id(plan.arrow_schema), name)
    found = _TAKEABLE.get(key)
    if found is not None and found[0] is plan.schema and found[1] is plan.arrow_schema:
        return found[2]
    column = _takeable(plan, name)
    if len(_TAKEABLE) >= _TAKEABLE_MAX:
        _TAKEABLE.clear()
    _TAKEABLE[key] = (plan.schema, plan.arrow_schema, column)
    return column


def _takeable(plan: FilePlan, name: str) -> Column | None:
    if name not in plan.schema:
        return None
    desc = plan.schema.column(name)
    if desc.path_parts != (name,) or desc.max_repetition_level or desc.max_definition_level > 1:
        return None
    at = plan.arrow_schema.get_field_index(name)
    if at < 0:
        return None
    arrow_type = plan.arrow_schema.field(at).type
    return Column(desc, arrow_type) if arrow_type == _natural(desc, arrow_type) else None


def _natural(desc: ColumnDescriptor, arrow_type: Any) -> Any:
    """The Arrow type the column's values have with no conversion but a view or an exact
    narrowing (None: none here). ``arrow_type`` chooses among those that are its values'."""
    physical, logical = desc.physical_type, desc.logical_type
    kind = logical.kind if logical is not None else None
    if physical is PhysicalType.BYTE_ARRAY:
        # Bytes as they are: text or not (pyarrow reads either as either by ARROW:schema).
        plain = (pa.string(), pa.large_string(), pa.binary(), pa.large_binary())
        return arrow_type if arrow_type in plain else None
    if physical is PhysicalType.FLOAT or physical is PhysicalType.DOUBLE:
        return _STORAGE[physical] if kind is None else None
    if kind is None:
        return _STORAGE.get(physical)
    if kind is LogicalKind.INTEGER and logical is not None:
        width, signed = logical.bit_width, logical.is_signed
        if physical is PhysicalType.INT64 and width == 64:
            return pa.int64() if signed else pa.uint64()
        if physical is PhysicalType.INT32 and width in (8, 16, 32):
            return getattr(pa, f"{'' if signed else 'u'}int{width}")()
        return None
    if kind is LogicalKind.DATE and physical is PhysicalType.INT32:
        return pa.date32()
    if kind is LogicalKind.TIMESTAMP and physical is PhysicalType.INT64 and logical is not None:
        unit = _UNITS.get(logical.unit) if logical.unit is not None else None
        if unit is None or not pa.types.is_timestamp(arrow_type) or arrow_type.unit != unit:
            return None
        return arrow_type  # its time zone is pyarrow's reading of isAdjustedToUTC
    return None


def take_columns(
    plan: FilePlan,
    held: HeldBytes,
    group: int,
    names: Sequence[str],
    rows: Any,
    read: Mapping[str, ChunkPages | Chunk] | None = None,
) -> dict[str, Any]:
    """The columns of ``names`` taken at ``rows`` (ascending row numbers in the row group,
    numpy integers) of row group ``group``: those the C decoder reads, each an Arrow array
    of the type pyarrow reads it as; the others are left out (pyarrow decodes them).
    ``read``: chunks of the row group already read, by column (their pages reused)."""
    found: dict[str, Any] = {}
    wanted = np.asarray(rows, dtype=np.int64)
    for name in names:
        column = takeable(plan, name)
        if column is None:
            continue
        try:
            chunk = read.get(name) if read is not None else None
            found[name] = _take_chunk(plan, held, group, column, wanted, chunk)
        except (Refused, PyBloomError, pa.ArrowException, OSError):
            continue
    return found


def take_paged(plan: FilePlan, held: HeldBytes, pages: GroupPages, rows: Any) -> dict[str, Any]:
    """The columns of a row group read by page (``pages``: each column's dictionary page
    and the data pages chosen through its offset index) taken at ``rows`` (ascending row
    numbers in the row group, every one within the pages chosen): those the C decoder
    reads, each an Arrow array of the type pyarrow reads it as; the others are left out
    (:func:`~.pages.decode_group` decodes them).

    A column's chosen pages are read as one chunk of just those pages, back to back after
    its dictionary page, each row placed at its page's place among them."""
    found: dict[str, Any] = {}
    if not NATIVE_CHUNKS:
        return found
    wanted = np.asarray(rows, dtype=np.int64)
    counts = np.array([len(wanted)], dtype=np.uint64)
    for name in pages.columns:
        taken = take_paged_many(plan, held, [pages.group], [pages], wanted, counts, [name])
        if taken is not None:
            found.update(taken)
    return found


def paged_table(plan: FilePlan, held: HeldBytes, selected: GroupPages) -> Any:
    """The rows ``selected.rows`` of a row group read by page, every column of
    ``selected`` (in its order) as a ``pa.Table``: taken in C from the chosen pages where
    the C reader reads the column (:func:`take_paged`), decoded by pyarrow from a
    one-column file of its pages where not (:func:`~.pages.decode_group`).

    Raises
    ------
    WholeChunks
        A column's pages do not decode to the rows its offset index promised.
    """
    assert plan.page_index is not None
    columns = take_paged(plan, held, selected, row_numbers(selected.rows))
    rest = {name: c for name, c in selected.columns.items() if name not in columns}
    if rest:
        decoded = decode_group(
            GroupPages(selected.group, selected.rows, rest),
            plan.page_index,
            plan.arrow_schema,
            plan.schema,
            held_reader(held),
        )
        columns.update(zip(decoded.column_names, decoded.columns, strict=True))
    names = list(selected.columns)
    return pa.table([columns[name] for name in names], names=names)


def take_paged_many(
    plan: FilePlan,
    held: HeldBytes,
    groups: Sequence[int],
    pages: Sequence[GroupPages | None],
    rows: Any,
    counts: Any,
    names: Sequence[str],
) -> dict[str, Any] | None:
    """:func:`take_paged` of many row groups at once, as :func:`take_many` takes whole
    chunks: ``counts[i]`` of ``rows`` are those of row group ``groups[i]``, whose pages
    chosen are ``pages[i]``, and each column of ``names`` is taken in one C call. A row
    group whose pages chosen leave a column out (or None) is read there as a whole chunk.
    None when a column or its pages are not read so (the caller takes them another way)."""
    if not NATIVE_CHUNKS:
        return None
    bounds = np.concatenate(([0], np.cumsum(np.asarray(counts, dtype=np.int64))))
    found: dict[str, Any] = {}
    for name in names:
        column = takeable(plan, name)
        if column is None:
            return None
        parts, places = [], []
        for i, (group, selection) in enumerate(zip(groups, pages, strict=True)):
            wanted = rows[bounds[i] : bounds[i + 1]]
            if selection is None or name not in selection.columns:
                whole = _whole_part(plan, held, group, column.desc)
                part = None if whole is None else (whole, wanted)
            else:
                part = _paged_part(plan, held, selection, column.desc, wanted)
            if part is None:
                return None
            parts.append(part[0])
            places.append(part[1])
        try:
            chunks = _chunks_of(parts, column.desc)
            if chunks is None:
                return None
            with chunks:
                taken = chunks.take(np.concatenate(places), counts)
            if taken is None:
                return None
            found[name] = _built(column, len(rows), *taken)
        except (Refused, PyBloomError, pa.ArrowException):
            return None
    return found


def _paged_part(
    plan: FilePlan, held: HeldBytes, pages: GroupPages, desc: ColumnDescriptor, rows: Any
) -> tuple[ChunkPart, Any] | None:
    """A column's chosen pages of one row group as :meth:`Chunks.open` takes a chunk (its
    dictionary page and chosen data pages back to back, each page's rows as the offset
    index gives them: a page whose header says otherwise is not read), and ``rows`` placed
    among their rows; None: the column is not read by page there, a byte is not held, or a
    row lies in no page chosen."""
    entry = pages.columns.get(desc.path_parts[0])
    if entry is None:
        return None
    _, dictionary, spans = entry
    if not spans or any(not 0 < s.end_row - s.first_row < 1 << 31 for s in spans):
        return None  # no page, or an entry of no rows or more than a row group holds
    placed = _placed(spans, rows)
    if placed is None:
        return None
    ranges = ([dictionary] if dictionary is not None else []) + [
        (span.offset, span.offset + span.size) for span in spans
    ]
    joined = [ranges[0]]
    for start, end in ranges[1:]:  # pages that follow one another: one range
        if joined[-1][1] == start:
            joined[-1] = (joined[-1][0], end)
        else:
            joined.append((start, end))
    # Views where they lie, most often one (every page chosen); HeldBytes.view copies only
    # a range split across its pieces.
    views = [view for view in (held.view(start, end) for start, end in joined) if view is not None]
    if len(views) != len(joined):
        return None  # a byte not held
    meta = plan.chunk(pages.group, desc.index)
    page_rows = np.array([s.end_row - s.first_row for s in spans], dtype=np.uint32)
    num_rows = sum(s.end_row - s.first_row for s in spans)
    data = views[0] if len(views) == 1 else memoryview(b"".join(views))
    return (data, meta.codec, num_rows, meta.total_uncompressed_size, page_rows), placed


def _placed(spans: Sequence[PageSpan], rows: Any) -> Any:
    """``rows`` (ascending row numbers of the row group) as places among the rows of the
    pages ``spans`` (at least one, ascending, as chosen) read back to back; None: a row
    lies in none."""
    if len(spans) == 1:  # most often: a chunk of one page
        first, end = spans[0].first_row, spans[0].end_row
        inside = not len(rows) or (first <= int(rows[0]) and int(rows[-1]) < end)
        return rows - first if inside else None
    starts = np.fromiter((s.first_row for s in spans), np.int64, len(spans))
    ends = np.fromiter((s.end_row for s in spans), np.int64, len(spans))
    at = np.searchsorted(ends, rows, side="right")
    if len(rows) and (int(at[-1]) >= len(spans) or bool(np.any(rows < starts[at]))):
        return None
    bases = np.concatenate(([0], np.cumsum(ends - starts)[:-1]))
    return bases[at] + rows - starts[at]


def stacked(rows: Sequence[Any]) -> tuple[Any, Any]:
    """Row groups' rows (each a numpy array of row numbers) as :func:`take_many` takes
    them: all of them in turn (numpy int64), and how many are each row group's (uint64)."""
    counts = np.array([len(r) for r in rows], dtype=np.uint64)
    return np.concatenate([np.asarray(r, dtype=np.int64) for r in rows]), counts


def take_many(
    plan: FilePlan,
    held: HeldBytes,
    groups: Sequence[int],
    rows: Any,
    counts: Any,
    names: Sequence[str],
    read: Mapping[str, Chunks] | None = None,
) -> dict[str, Any] | None:
    """The columns ``names`` taken at the rows of row groups ``groups``: ``counts[i]`` of
    ``rows`` (numpy int64, each row group's ascending) are row group ``groups[i]``'s, in
    turn. Each column is taken in one C call (``pba_chunks_take``), as one Arrow array of
    all those rows in order. ``read``: chunks of the same row groups already open, by
    column (their pages reused). None when a column or a chunk is not read so (the caller
    takes the row groups one by one, which reads them another way and names what is
    wrong)."""
    if not NATIVE_CHUNKS:
        return None
    found: dict[str, Any] = {}
    for name in names:
        column = takeable(plan, name)
        if column is None:
            return None
        try:
            given = read.get(name) if read is not None else None
            if given is not None:
                taken = given.take(rows, counts)
            else:
                chunks = open_chunks(plan, held, groups, column.desc)
                if chunks is None:
                    return None
                with chunks:
                    taken = chunks.take(rows, counts)
            if taken is None:
                return None
            found[name] = _built(column, len(rows), *taken)
        except (Refused, PyBloomError, pa.ArrowException, OSError):
            return None
    return found


def open_chunks(
    plan: FilePlan, held: HeldBytes, groups: Sequence[int], desc: ColumnDescriptor
) -> Chunks | None:
    """The chunks of ``desc`` in row groups ``groups``, to be read by one C call per use
    (None: a chunk's bytes are not held, or one is not read so)."""
    if not NATIVE_CHUNKS:
        return None
    parts = []
    for group in groups:
        part = _whole_part(plan, held, group, desc)
        if part is None:
            return None
        parts.append(part)
    return _chunks_of(parts, desc)


def _whole_part(
    plan: FilePlan, held: HeldBytes, group: int, desc: ColumnDescriptor
) -> ChunkPart | None:
    """The chunk of ``desc`` in row group ``group`` as :meth:`Chunks.open` takes it (None:
    its bytes are not held)."""
    data = held.view(*chunk_range(plan, group, desc.index))
    if data is None:
        return None
    place = plan.chunk(group, desc.index).place
    rows = plan.metadata.row_groups[group].num_rows
    return data, place.codec, rows, place.total_uncompressed_size


def _chunks_of(parts: Sequence[ChunkPart], desc: ColumnDescriptor) -> Chunks | None:
    """:meth:`Chunks.open` of ``parts``, chunks (or chosen pages) of the column ``desc``."""
    return Chunks.open(parts, value_width(desc.physical_type), desc.max_definition_level == 1)


def open_chunk(plan: FilePlan, held: HeldBytes, group: int, desc: ColumnDescriptor) -> Chunk | None:
    """The chunk of ``desc`` in row group ``group`` opened by the C chunk reader (None: its
    bytes are not held, or it is not read so)."""
    return Chunk.of(open_chunks(plan, held, [group], desc))


def _take_chunk(
    plan: FilePlan,
    held: HeldBytes,
    group: int,
    column: Column,
    rows: Any,
    chunk: ChunkPages | Chunk | None = None,
) -> Any:
    """One chunk's values at ``rows``: read by the C chunk reader, or its pages walked."""
    num_rows = plan.metadata.row_groups[group].num_rows
    if len(rows) and not 0 <= rows[0] <= rows[-1] < num_rows:
        raise Refused
    if not isinstance(chunk, ChunkPages):
        native = chunk if chunk is not None else open_chunk(plan, held, group, column.desc)
        taken = native.take(rows) if native is not None else None
        if taken is not None:
            valid, values, offsets = taken
            return _built(column, len(rows), valid, values, offsets)
        chunk = None
    if chunk is None:
        chunk = chunk_pages(plan, held, group, column.desc)
    pieces: list[tuple[Page, Any]] = []
    taken_rows = 0
    wanted = rows.tolist()  # bisected per page: a few rows, where numpy's call costs more
    for page in chunk.pages:
        more = bisect.bisect_left(wanted, page.row + page.values)
        if more > taken_rows:
            parsed = chunk.read(page)
            pieces.append((parsed, parsed.refs(rows[taken_rows:more] - page.row, page.values)))
        taken_rows = more
    if taken_rows != len(rows):
        raise Refused
    return _assembled(column, pieces, len(rows))


def _assembled(column: Column, pieces: Sequence[tuple[Page, Any]], n: int) -> Any:
    """The taken values of every page, in order, as one Arrow array of the column's type."""
    refs = np.concatenate([r for _, r in pieces]) if pieces else np.zeros(0, np.int64)
    present = refs >= 0
    dtype = DTYPES.get(column.desc.physical_type)
    if dtype is not None:
        out = np.zeros(n, dtype=dtype)
        at = 0
        for page, page_refs in pieces:
            here = page_refs >= 0
            if page.dictionary is not None:
                source = page.dictionary.read()[2]
                picked = source[page_refs[here]]
            else:
                source = np.frombuffer(
                    page.values, dtype=dtype, count=len(page.values) // page.width
                )
                picked = source[page_refs[here] // page.width]
            out[at : at + len(page_refs)][here] = picked
            at += len(page_refs)
        return _built(column, n, present, out, None)
    offsets, data = _gathered(pieces)
    return _built(column, n, present, data, offsets)


def _built(column: Column, n: int, present: Any, values: Any, offsets: Any) -> Any:
    """The Arrow array of the column's type of ``n`` values: ``present`` (nonzero where a
    value is, zero for a NULL), and ``values`` (fixed width: the values; byte arrays: their
    bytes, at ``offsets``, int64)."""
    nulls = n - int(np.count_nonzero(present))
    validity = None if not nulls else pa.py_buffer(np.packbits(present, bitorder="little"))
    if offsets is None:
        storage = _STORAGE[column.desc.physical_type]
        array = pa.Array.from_buffers(
            storage, n, [validity, pa.py_buffer(values)], null_count=nulls
        )
        return _as(array, column.arrow_type)
    large = pa.types.is_large_string(column.arrow_type) or pa.types.is_large_binary(
        column.arrow_type
    )
    if not large:
        if offsets[-1] > _INT32_MAX:
            raise Refused
        offsets = offsets.astype(np.int32)
    return pa.Array.from_buffers(
        column.arrow_type,
        n,
        [validity, pa.py_buffer(offsets), pa.py_buffer(values)],
        null_count=nulls,
    )


def _gathered(pieces: Sequence[tuple[Page, Any]]) -> tuple[Any, Any]:
    """The byte arrays every page's refs name: Arrow's offsets (int64) and bytes."""
    parts = []
    for page, refs in pieces:
        if page.dictionary is not None:
            data, _count, entries = page.dictionary.read()
            refs = np.where(refs >= 0, entries[np.maximum(refs, 0)], -1)
        else:
            data = page.values
        refs = np.ascontiguousarray(refs, dtype=np.int64)
        offsets = np.empty(len(refs) + 1, dtype=np.int64)
        checked(
            lib.pba_gather_byte_arrays(
                as_u8(data), len(data), as_i64(refs), len(refs), as_i64(offsets), ffi.NULL, 0
            )
        )
        parts.append((data, refs, offsets))
    total = sum(int(offsets[-1]) for _, _, offsets in parts)
    if total > MAX_TAKEN_BYTES:
        raise Refused
    out = np.empty(total, dtype=np.uint8)
    all_offsets = [np.zeros(1, dtype=np.int64)]
    at = 0
    for data, refs, offsets in parts:
        room = out[at:]
        checked(
            lib.pba_gather_byte_arrays(
                as_u8(data),
                len(data),
                as_i64(refs),
                len(refs),
                as_i64(offsets),
                as_u8(room),
                len(room),
            )
        )
        all_offsets.append(offsets[1:] + at)
        at += int(offsets[-1])
    return np.concatenate(all_offsets), out


def _as(array: Any, arrow_type: Any) -> Any:
    """``array`` (of its values' storage type) as ``arrow_type``: a view of the same width,
    or an exact narrowing of an integer (a value out of range is refused)."""
    if array.type == arrow_type:
        return array
    if arrow_type.bit_width == array.type.bit_width:
        return array.view(arrow_type)
    return array.cast(arrow_type, safe=True)
