"""Page-index pruning for lookups: of a kept row group, only the pages that may match.

Where a file has a page index, a lookup reads, for each kept row group:

1. the ``ColumnIndex`` of every predicate column and the ``OffsetIndex`` of
   every column read (:func:`index_ranges`: those already in the footer's
   tail are not fetched again; the others are one merged request per file);
2. the rows the predicate may hold (:func:`select_group`), from its normal form
   (NOT pushed to the leaves): per ``=``/``IN`` leaf, the rows of the pages whose
   ``[min, max]`` admit a probed value (the order and the probe values are
   pruning's: the run's leaves, :meth:`pybloom_async.pruning.api.CompiledPredicate.leaf`,
   in their ``rows`` form: a NULL in an IN list matches no row, so its other values
   decide); per range, negation or null test, the pages whose bounds and null counts
   do not rule it out (each page taken through the leaf ladder every container
   shares, :func:`pybloom_async.pruning.evaluate.before_membership`); intersected for
   AND and joined for OR;
3. for every column read, its dictionary page and the data pages that overlap
   those rows; then the selected rows taken in C from those pages where the C
   chunk reader reads the column (:func:`pybloom_async.rows.take.paged_table`),
   or decoded (:func:`decode_group`) by pyarrow from a one-column file holding
   just those pages (:func:`pybloom_async.parquet.page_index.single_column_file`)
   and cut to the selected rows. Either way each chosen page must hold the rows
   its offset index gives it.

The predicate is still evaluated on the decoded rows, so a page selection only
has to keep every page that may hold a match. Pages are admitted whenever
their bounds cannot be compared exactly (no usable order: INT96, BOOLEAN,
floats with a logical type, unknown kinds; NaN bounds; bounds of the wrong
width or out of order). ``boundary_order`` is not needed: each page is tested.
A row group falls back to whole column chunks (:class:`WholeChunks`) when a
column read is nested, lacks an offset index, or its index is damaged; a
decode that does not give the rows the index promised does the same.
"""

from __future__ import annotations

import base64
import bisect
import functools
import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import ParquetFormatError, PredicateError
from ..parquet import ColumnDescriptor, FileMetaData, Schema
from ..parquet import thrift_specs as wire
from ..parquet.page_index import (
    ChunkLayout,
    ColumnIndex,
    PageSpan,
    chunk_layout,
    decode_column_index,
    decode_offset_index,
    dictionary_pages,
    single_column_file,
)
from ..parquet.pages import read_page_header
from ..predicate import And, Or, Predicate, normal_form
from ..pruning.api import CompiledPredicate
from ..pruning.bounds import Bounds, View, bounds_of
from ..pruning.evaluate import before_membership
from ..pruning.leaves import Leaf, leaf_column
from ..pruning.literals import binary_float, literal_sort_key
from ..read.ranges import HeldBytes

#: Row ranges: sorted, disjoint, non-empty ``[start, end)`` intervals.
Rows = list[tuple[int, int]]


class WholeChunks(Exception):
    """The page index cannot serve this row group: read its whole column chunks."""


@dataclass
class FilePageIndex:
    """One file's page-index places: per kept row group, per leaf, its chunk's layout
    (:func:`~pybloom_async.parquet.page_index.chunk_layout`, from the footer's chunks as
    the file's plan reads them); and the index bytes its footer read already holds."""

    metadata: FileMetaData
    groups: dict[int, list[ChunkLayout]]
    held: list[tuple[int, bytes]] = field(default_factory=list)


def has_offset_index(meta: FileMetaData, group: int) -> bool:
    """Whether a chunk of row group ``group`` records an offset index (a page index): every
    leaf's chunks as the file's plan reads them (one scan of the footer for both, and no
    chunk's details decoded where the scanner reads it: ``ColumnChunk.has_offset_index``;
    no chunk object made where the scanner's records are kept)."""
    return meta.offset_indexed(group)


def file_page_index(
    metadata: FileMetaData,
    data_end: int,
    tail: bytes,
    tail_start: int,
    kept: Sequence[int],
    path: str,
) -> FilePageIndex | None:
    """The page index of a file's kept row groups (None: it has none, or a place is
    damaged: whole chunks are read, as without a page index).

    ``data_end`` is where the FileMetaData starts; ``tail`` the file's last bytes from
    ``tail_start``: the kept row groups' index bytes found there are kept.
    """
    leaves = range(len(metadata.schema.columns))
    try:
        chunks = metadata.chunks_of(leaves)
        groups = {
            group: [
                chunk_layout(chunks[group].columns[leaf], data_end, path=path) for leaf in leaves
            ]
            for group in kept
        }
    except ParquetFormatError:
        return None
    if not any(c.offset_index is not None for layouts in groups.values() for c in layouts):
        return None
    found = FilePageIndex(metadata, groups)
    for layouts in groups.values():
        for chunk in layouts:
            for span in (chunk.offset_index, chunk.column_index):
                if span is not None and span[0] >= tail_start:
                    found.held.append((span[0], tail[span[0] - tail_start : span[1] - tail_start]))
    return found


def _flat(desc: ColumnDescriptor) -> bool:
    return (
        len(desc.path_parts) == 1
        and desc.max_repetition_level == 0
        and desc.max_definition_level <= 1
    )


def index_ranges(
    index: FilePageIndex, groups: Sequence[int], read: Sequence[int], predicate: Sequence[int]
) -> list[tuple[int, int]]:
    """Index bytes still to fetch: offset indexes of ``read``, column indexes of ``predicate``."""
    held = {start for start, _ in index.held}
    wanted = []
    for group in groups:
        chunks = index.groups[group]
        for leaf in read:
            if leaf < len(chunks) and chunks[leaf].offset_index is not None:
                wanted.append(chunks[leaf].offset_index)
        for leaf in predicate:
            if leaf < len(chunks) and chunks[leaf].column_index is not None:
                wanted.append(chunks[leaf].column_index)
    return sorted({span for span in wanted if span is not None and span[0] not in held})


# ---- row ranges ------------------------------------------------------------------------


def _union(a: Rows, b: Rows) -> Rows:
    out: Rows = []
    for start, end in sorted(a + b):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _intersect(a: Rows, b: Rows) -> Rows:
    out: Rows = []
    i = j = 0
    na, nb = len(a), len(b)
    while i < na and j < nb:
        (a_start, a_end), (b_start, b_end) = a[i], b[j]
        start, end = max(a_start, b_start), min(a_end, b_end)
        if start < end:
            out.append((start, end))
        if a_end < b_end:
            i += 1
        else:
            j += 1
    return out


def _overlapping(spans: Sequence[PageSpan], rows: Rows) -> list[int]:
    """The places of the pages ``spans`` (ascending, as their offset index is checked to
    be) that hold one of ``rows`` (ascending, disjoint ``[start, end)`` runs): one walk of
    both, not every page against every run."""
    chosen: list[int] = []
    j, n = 0, len(rows)
    for i, page in enumerate(spans):
        while j < n and rows[j][1] <= page.first_row:
            j += 1
        if j == n:
            break
        if rows[j][0] < page.end_row:
            chosen.append(i)
    return chosen


def _page_rows(pages: Sequence[PageSpan], admitted: Sequence[bool]) -> Rows:
    spans = [(p.first_row, p.end_row) for p, ok in zip(pages, admitted, strict=True) if ok]
    return _union([], spans)


def _bounds_admit(leaf: Leaf, index: ColumnIndex, page: int) -> bool:
    """Whether the page's bounds may hold one of the leaf's keys (True when unsure)."""
    assert leaf.kind is not None and leaf.desc is not None
    pt = leaf.desc.physical_type
    try:
        low = literal_sort_key(leaf.kind, index.min_values[page], pt)
        high = literal_sort_key(leaf.kind, index.max_values[page], pt)
    except (struct.error, ValueError):
        return True  # bounds of the wrong width
    if isinstance(low, float) and (math.isnan(low) or math.isnan(high)):
        return True
    if low > high:
        return True  # inconsistent bounds are not trusted
    return bisect.bisect_left(leaf.keys, low) < bisect.bisect_right(leaf.keys, high)


def _page_view(leaf: Leaf, index: ColumnIndex, page: int) -> View:
    """One page as its column index sees it. No flag says whether a page's maximum is
    exact, so a byte string's is taken as possibly truncated (a prefix of the true one)."""
    counts = index.null_counts
    nulls = counts[page] if counts is not None else None
    assert leaf.desc is not None
    nan_free = not binary_float(leaf.desc)  # no NaN counts read for pages
    if index.null_pages[page]:
        return View(Bounds(), Bounds(), True, nulls, nan_free)
    bounds, typed = bounds_of(leaf, index.min_values[page], index.max_values[page], False)
    return View(bounds, typed, False, nulls, nan_free)


def _leaf_pages(leaf: Leaf, index: ColumnIndex, count: int) -> list[bool]:
    """Per page, whether it may hold a row the leaf matches: the leaf ladder every
    container shares (:func:`~pybloom_async.pruning.evaluate.before_membership`), then a
    plain equality's keys against the page's bounds."""
    counts = index.null_counts
    admitted = []
    for i in range(count):
        nulls = counts[i] if counts is not None else None
        view = functools.partial(_page_view, leaf, index, i)
        shared = before_membership(leaf, view, nulls, "page index")
        if shared is not None:
            admitted.append(not shared.excluded)
        else:  # a plain equality: its keys within the page's bounds (no order: may hold)
            admitted.append(
                leaf.kind is None or (not index.null_pages[i] and _bounds_admit(leaf, index, i))
            )
    return admitted


@dataclass
class GroupPages:
    """What to fetch and decode of one row group: the rows, and per column read its pages."""

    group: int
    rows: Rows
    # name -> (the chunk, its dictionary bytes range or None, the data pages chosen)
    columns: dict[str, tuple[ChunkLayout, tuple[int, int] | None, list[PageSpan]]]

    def ranges(self) -> list[tuple[int, int]]:
        """Byte ranges to fetch: each column's dictionary page and chosen pages."""
        out = []
        for _, dictionary, pages in self.columns.values():
            if dictionary is not None:
                out.append(dictionary)
            out.extend((p.offset, p.offset + p.size) for p in pages)
        return out


class _Group:
    """One row group's page index, each chunk's decoded on first use."""

    def __init__(
        self,
        index: FilePageIndex,
        group: int,
        schema: Schema,
        read_bytes: Callable[[int, int], bytes],
        path: str,
        compiled: CompiledPredicate | None = None,
    ) -> None:
        self.chunks = index.groups[group]
        self.num_rows = index.metadata.row_groups[group].num_rows
        self.schema = schema
        self.read_bytes = read_bytes
        self.path = path
        self.compiled = compiled
        self._pages: dict[int, tuple[PageSpan, ...]] = {}

    def pages(self, desc: ColumnDescriptor) -> tuple[PageSpan, ...]:
        """The column's data pages (WholeChunks: nested, or no usable offset index)."""
        found = self._pages.get(desc.index)
        if found is None:
            chunk = self.chunks[desc.index]
            if not _flat(desc) or chunk.offset_index is None:
                raise WholeChunks(f"{desc.path}: nested, or no offset index")
            try:
                raw = self.read_bytes(*chunk.offset_index)
                found = decode_offset_index(raw, chunk, self.num_rows, path=self.path)
            except ParquetFormatError as exc:
                raise WholeChunks(str(exc)) from None
            self._pages[desc.index] = found
        return found

    def rows(self, p: Predicate) -> Rows:
        """The rows ``p`` may hold: AND intersects, OR joins, a leaf asks its pages' bounds."""
        if isinstance(p, And):
            out = [(0, self.num_rows)]
            for child in p.children:
                out = _intersect(out, self.rows(child))
            return out
        if isinstance(p, Or):
            out = []
            for child in p.children:
                out = _union(out, self.rows(child))
            return out
        return self._leaf_rows(p)

    def _leaf_rows(self, p: Predicate) -> Rows:
        every = [(0, self.num_rows)]
        column = leaf_column(p)
        if column not in self.schema:
            return every
        desc = self.schema.column(column)
        chunk = self.chunks[desc.index]
        if not _flat(desc) or chunk.column_index is None or chunk.offset_index is None:
            return every
        spans = self.pages(desc)
        if self.compiled is None:  # the rows are known: no predicate is asked
            return every
        try:
            leaf = self.compiled.leaf(p, desc, "rows")
        except PredicateError:
            return every  # the evaluation on decoded rows raises it
        try:
            raw = self.read_bytes(*chunk.column_index)
            column_index = decode_column_index(raw, len(spans), path=self.path)
        except ParquetFormatError:
            return every
        return _page_rows(spans, _leaf_pages(leaf, column_index, len(spans)))


def select_group(
    index: FilePageIndex,
    group: int,
    where: Predicate,
    schema: Schema,
    names: Sequence[str],
    read_bytes: Callable[[int, int], bytes],
    path: str,
    compiled: CompiledPredicate,
) -> GroupPages:
    """The rows of one row group the predicate may hold, and the pages that cover them.

    ``names`` are the columns read (top-level names); ``read_bytes(start, end)`` serves
    the index bytes fetched; ``compiled``: the run's predicate, whose leaves every row
    group and file share (``where`` is it, or a residual made of its leaves).

    Raises
    ------
    WholeChunks
        A column read is nested or has no usable offset index, or every page may match.
    """
    state = _Group(index, group, schema, read_bytes, path, compiled)
    descs = _descriptors(state, names, schema)
    rows = state.rows(normal_form(where))
    if rows == [(0, state.num_rows)]:
        raise WholeChunks("every page may hold a match")  # pyarrow reads the chunks itself
    return _chosen(state, group, descs, rows)


def pages_for_rows(
    index: FilePageIndex,
    group: int,
    names: Sequence[str],
    rows: Rows,
    schema: Schema,
    read_bytes: Callable[[int, int], bytes],
    path: str,
    *,
    partial: bool = False,
) -> GroupPages:
    """The pages of the columns ``names`` that hold ``rows`` (known to match: a lookup's
    other columns, fetched once its predicate columns were decoded).

    ``partial``: pages are wanted only where they leave some out. When every data page of
    every column holds one of ``rows``, the whole chunks are the same bytes, and are read
    with less work: WholeChunks says so.

    Raises
    ------
    WholeChunks
        A column is nested or has no usable offset index (or, ``partial``, every page of
        every column is chosen).
    """
    state = _Group(index, group, schema, read_bytes, path)
    descs = _descriptors(state, names, schema)
    found = _chosen(state, group, descs, rows)
    if partial and all(
        len(found.columns[name][2]) == len(state.pages(desc)) for name, desc in descs.items()
    ):
        raise WholeChunks("every page holds a row")
    return found


def _descriptors(
    state: _Group, names: Sequence[str], schema: Schema
) -> dict[str, ColumnDescriptor]:
    """Each column's leaf, its pages read (WholeChunks: not a flat leaf with an offset index)."""
    descs: dict[str, ColumnDescriptor] = {}
    for name in names:
        if name not in schema:
            raise WholeChunks(f"{name}: not a leaf column")
        descs[name] = schema.column(name)
        state.pages(descs[name])
    return descs


def _chosen(
    state: _Group, group: int, descs: dict[str, ColumnDescriptor], rows: Rows
) -> GroupPages:
    """Per column, its dictionary page and the data pages that overlap ``rows``."""
    columns = {}
    for name, desc in descs.items():
        spans = state.pages(desc)
        chosen = _overlapping(spans, rows)
        chunk = state.chunks[desc.index]
        dictionary = (chunk.start, spans[0].offset) if spans[0].offset > chunk.start else None
        if dictionary is not None and chosen and chosen[0] > 0:
            encoded = dictionary_pages(chunk.meta)
            if encoded is not None and chosen[0] >= encoded:
                dictionary = None  # only pages written after the dictionary fallback
        columns[name] = (chunk, dictionary, [spans[i] for i in chosen])
    return GroupPages(group, rows, columns)


# ---- decoding --------------------------------------------------------------------------


def _arrow_schema_value(arrow_field: Any) -> bytes:
    """The ``ARROW:schema`` value of a one-field schema, as Arrow's Parquet writer stores it."""
    return base64.b64encode(pa.schema([arrow_field]).serialize().to_pybytes())


def decode_group(
    selected: GroupPages,
    index: FilePageIndex,
    arrow_schema: Any,
    schema: Schema,
    read_bytes: Callable[[int, int], bytes],
) -> Any:
    """The selected rows of one row group, one column per column read, as a ``pa.Table``.

    Raises
    ------
    WholeChunks
        A column's pages do not decode to the rows its offset index promised.
    """
    arrays = {}
    elements = index.metadata.schema_elements() if selected.columns else []
    for name, (chunk, dictionary, pages) in selected.columns.items():
        desc = schema.column(name)
        element = elements[_element_position(elements, desc)]
        field_index = arrow_schema.get_field_index(name)
        key_values = []
        if field_index >= 0:
            key_values.append(
                (b"ARROW:schema", _arrow_schema_value(arrow_schema.field(field_index)))
            )
        expected = sum(p.end_row - p.first_row for p in pages)
        bodies = [read_bytes(p.offset, p.offset + p.size) for p in pages]
        for page, body in zip(pages, bodies, strict=True):
            _check_page_rows(name, page, body)
        data = single_column_file(
            element,
            _wire_meta(chunk.meta, element),
            read_bytes(*dictionary) if dictionary is not None else b"",
            bodies,
            expected,
            key_values,
        )
        try:
            column = pq.read_table(pa.BufferReader(data), use_threads=False).column(0)
        except (OSError, pa.ArrowException) as exc:
            raise WholeChunks(f"{name}: the chosen pages do not decode: {exc}") from None
        if len(column) != expected:
            raise WholeChunks(f"{name}: {len(column)} rows decoded, {expected} expected")
        arrays[name] = _cut(column, pages, selected.rows)
    return pa.table(arrays)


def _wire_meta(chunk: Any, element: Any) -> wire.ColumnMetaData:
    """What a one-column file keeps of a top-level leaf's chunk metadata: its type,
    encodings, codec (read from the footer's chunk: its details decoded once, when first
    asked) and path (the leaf's name as the footer stores it, ``element``'s)."""
    return wire.ColumnMetaData(
        type=int(chunk.physical_type),
        encodings=[int(e) for e in chunk.encodings],
        path_in_schema=[element.name],
        codec=int(chunk.codec),
    )


def _check_page_rows(name: str, page: PageSpan, body: bytes) -> None:
    """That a chosen data page (of a flat column) holds the rows its offset index gives it:
    the rows are cut from the decoded values by the index, so a page that holds more or
    fewer would shift every row after it.

    Raises
    ------
    WholeChunks
        Its header says otherwise, or does not read.
    """
    try:
        header = read_page_header(body)
    except ParquetFormatError:
        raise WholeChunks(f"{name}: a chosen page's header does not read") from None
    rows = header.v2.num_rows if header.v2 is not None else header.num_values
    if rows != page.end_row - page.first_row:
        raise WholeChunks(f"{name}: a page holds {rows} rows, its offset index says otherwise")


def _element_position(elements: Sequence[Any], desc: ColumnDescriptor) -> int:
    """Where a top-level leaf's SchemaElement lies in the footer's flat list."""
    position = 1
    for _ in range(_top_position(elements, desc.path_parts[0])):
        position += _subtree_size(elements, position)
    return position


def _top_position(elements: Sequence[Any], name: str) -> int:
    position, i = 1, 0
    count = (elements[0].num_children or 0) if elements else 0
    while i < count and position < len(elements):
        if (elements[position].name or b"").decode("utf-8", "replace") == name:
            return i
        position += _subtree_size(elements, position)
        i += 1
    raise WholeChunks(f"{name}: not found in the footer's schema")


def _subtree_size(elements: Sequence[Any], position: int) -> int:
    size, pending = 0, 1
    while pending and position + size < len(elements):
        pending += (elements[position + size].num_children or 0) - 1
        size += 1
    return size


def _cut(column: Any, pages: Sequence[PageSpan], rows: Rows) -> Any:
    """The decoded values of ``pages`` (in order) cut to ``rows``."""
    starts = [p.first_row for p in pages]
    positions = []
    at = 0
    for p in pages:
        positions.append(at)
        at += p.end_row - p.first_row
    pieces = []
    for start, end in rows:
        i = bisect.bisect_right(starts, start) - 1
        offset = positions[i] + start - pages[i].first_row
        pieces.append(column.slice(offset, end - start))
    if not pieces:
        return column.slice(0, 0)
    return pa.chunked_array([c for piece in pieces for c in piece.chunks], type=column.type)


def held_reader(held: HeldBytes) -> Callable[[int, int], bytes]:
    """``read_bytes`` over the bytes of a file fetched so far (WholeChunks where one is not)."""

    def read(start: int, end: int) -> bytes:
        data = held.read(start, end)
        if data is None:
            raise WholeChunks(f"bytes [{start}, {end}) were not fetched")
        return data

    return read
