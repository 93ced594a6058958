"""Page indexes (``ColumnIndex``, ``OffsetIndex``) and single-column files of chosen pages.

Pure functions over bytes, no I/O. A column chunk written with a page index has,
in its ``ColumnChunk`` (fields 4-7), the place of an ``OffsetIndex`` (where each
data page lies and the index of its first row) and of a ``ColumnIndex`` (each
page's min/max bounds, whether it holds only nulls, its null count). Writers
put them after the row groups, usually just before the footer.

:func:`chunk_layout` takes those places from the footer's chunks as the file's plan
reads them (the footer scanner's records: the footer is not decoded again) and checks
them; :func:`decode_offset_index` and :func:`decode_column_index` decode one chunk's
indexes. Everything read is untrusted: lengths are capped, every offset is
checked against the file's data and the chunk, and any inconsistency is a
:class:`~pybloom_async.errors.ParquetFormatError` (lookups then read the whole
chunk).

:func:`single_column_file` writes a complete one-column, one-row-group Parquet
file around a chunk's dictionary page and some of its data pages, so that any
Parquet reader decodes exactly those pages.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any, NamedTuple

from thrift.protocol.TCompactProtocol import TCompactProtocol
from thrift.transport.TTransport import TMemoryBuffer

from ..errors import ParquetFormatError
from . import page_specs as page_wire
from . import thrift_specs as wire
from .elements import DATA_PAGES, DICTIONARY_ENCODINGS
from .tail import MAGIC
from .thrift import THRIFT_DECODER, decode_struct

#: Largest ColumnIndex or OffsetIndex read for one chunk (16 MiB): a few dozen bytes a
#: page, so far more pages than any chunk has; a larger claimed length is a damaged file.
MAX_INDEX_BYTES = 16 * 1024 * 1024

_OFFSET_ARGS = [page_wire.OffsetIndex, page_wire.OffsetIndex.thrift_spec]
_COLUMN_ARGS = [page_wire.ColumnIndex, page_wire.ColumnIndex.thrift_spec]


class ChunkLayout(NamedTuple):
    """One column chunk as a page-index read needs it; ranges are absolute ``[start, end)``."""

    start: int  # the chunk's first byte (its dictionary page, if any)
    end: int
    offset_index: tuple[int, int] | None
    column_index: tuple[int, int] | None
    #: The footer's chunk (:class:`~pybloom_async.parquet.ColumnChunk`): its type,
    #: encodings, codec and encoding statistics, read when a page read needs them.
    meta: Any = None


class PageSpan(NamedTuple):
    """One data page: its bytes ``[offset, offset + size)`` and rows ``[first_row, end_row)``."""

    offset: int
    size: int
    first_row: int
    end_row: int


class ColumnIndex(NamedTuple):
    """One chunk's ColumnIndex; every tuple has one entry per page."""

    null_pages: tuple[bool, ...]
    min_values: tuple[bytes, ...]
    max_values: tuple[bytes, ...]
    boundary_order: int
    null_counts: tuple[int, ...] | None


def _index_range(
    offset: int | None, length: int | None, data_end: int, what: str, path: str | None
) -> tuple[int, int] | None:
    if offset is None or length is None:
        return None
    if not 0 < length <= MAX_INDEX_BYTES or not 4 <= offset <= data_end - length:
        raise ParquetFormatError(
            f"the {what} [{offset}, +{length}) lies outside the file's data", path=path
        )
    return offset, offset + length


def dictionary_pages(chunk: Any) -> int | None:
    """How many of a chunk's data pages are dictionary-encoded (from its encoding
    statistics), or None when unknown. Writers (Arrow, parquet-java) fall back from the
    dictionary once, so these are the first pages; a reader that trusts it must survive a
    writer that did not."""
    stats = chunk.encoding_stats
    if not stats:
        return None
    count = 0
    for entry in stats:
        if entry.page_type in DATA_PAGES and entry.encoding in DICTIONARY_ENCODINGS:
            if entry.count is None or entry.count < 0:
                return None
            count += entry.count
    return count


def chunk_layout(chunk: Any, data_end: int, *, path: str | None = None) -> ChunkLayout:
    """A footer's column chunk (:class:`~pybloom_async.parquet.ColumnChunk`) as a
    page-index read places it: its bytes and its indexes', checked against the file.

    Parameters
    ----------
    data_end:
        Where the FileMetaData starts: every index and page lies before it.

    Raises
    ------
    ParquetFormatError
        The chunk lies in another file or outside the file's data, or an index does.
    """
    if chunk.file_path is not None:
        raise ParquetFormatError("a column chunk lies in another file", path=path)
    start = chunk.data_page_offset
    dictionary = chunk.dictionary_page_offset
    if dictionary is not None and 0 < dictionary < start:
        start = dictionary
    end = start + chunk.total_compressed_size
    if not 4 <= start < end <= data_end:
        raise ParquetFormatError("a column chunk lies outside the file's data", path=path)
    offsets = _index_range(
        chunk.offset_index_offset, chunk.offset_index_length, data_end, "offset index", path
    )
    columns = _index_range(
        chunk.column_index_offset, chunk.column_index_length, data_end, "column index", path
    )
    return ChunkLayout(start, end, offsets, columns, chunk)


def decode_offset_index(
    data: bytes, chunk: ChunkLayout, num_rows: int, *, path: str | None = None
) -> tuple[PageSpan, ...]:
    """One chunk's data pages, checked: inside the chunk, in order, rows rising from 0.

    Raises
    ------
    ParquetFormatError
        The bytes do not decode, or the pages are not a consistent layout of the chunk.
    """
    raw = page_wire.OffsetIndex()
    decode_struct(data, raw, _OFFSET_ARGS, what="offset index", path=path, decoder=THRIFT_DECODER)
    locations = raw.page_locations or []
    if not locations:
        raise ParquetFormatError("the offset index lists no page", path=path)
    pages: list[PageSpan] = []
    previous_end = chunk.start
    for i, loc in enumerate(locations):
        offset, size, first = loc.offset, loc.compressed_page_size, loc.first_row_index
        if offset is None or size is None or first is None:
            raise ParquetFormatError("an offset index entry lacks a field", path=path)
        last_row = pages[-1].first_row if pages else -1
        expected_first = 0 if i == 0 else last_row + 1
        if not (
            previous_end <= offset
            and size > 0
            and offset + size <= chunk.end
            and expected_first <= first < num_rows
            and (i > 0 or first == 0)
        ):
            raise ParquetFormatError(
                f"offset index entry {i} (offset {offset}, size {size}, first row {first}) "
                "does not fit its column chunk",
                path=path,
            )
        if pages:
            pages[-1] = pages[-1]._replace(end_row=first)
        pages.append(PageSpan(offset, size, first, num_rows))
        previous_end = offset + size
    return tuple(pages)


def decode_column_index(data: bytes, pages: int, *, path: str | None = None) -> ColumnIndex:
    """One chunk's ColumnIndex, checked to have ``pages`` entries in every list.

    Raises
    ------
    ParquetFormatError
        The bytes do not decode, or a list has the wrong length.
    """
    raw = page_wire.ColumnIndex()
    decode_struct(data, raw, _COLUMN_ARGS, what="column index", path=path, decoder=THRIFT_DECODER)
    nulls, lows, highs = raw.null_pages, raw.min_values, raw.max_values
    counts = raw.null_counts
    if (
        nulls is None
        or lows is None
        or highs is None
        or not len(nulls) == len(lows) == len(highs) == pages
        or (counts is not None and len(counts) != pages)
    ):
        raise ParquetFormatError(
            f"the column index does not describe the chunk's {pages} page(s)", path=path
        )
    return ColumnIndex(
        tuple(bool(n) for n in nulls),
        tuple(bytes(v) for v in lows),
        tuple(bytes(v) for v in highs),
        raw.boundary_order or 0,
        None if counts is None else tuple(counts),
    )


def single_column_file(
    element: Any,
    meta: Any,
    dictionary: bytes,
    pages: Sequence[bytes],
    num_rows: int,
    key_values: Sequence[tuple[bytes, bytes]] = (),
) -> bytes:
    """A Parquet file of one flat column: ``dictionary`` (a page, or empty), then ``pages``.

    Parameters
    ----------
    element:
        The column's wire SchemaElement (its name, types, repetition).
    meta:
        The chunk's wire ColumnMetaData: its type, encodings, path and codec are kept.
    num_rows:
        The rows the pages hold (a flat column has one value per row).
    key_values:
        The file's key/value metadata (e.g. the Arrow schema of this one column).
    """
    body = b"".join((dictionary, *pages))
    column = wire.ColumnMetaData(
        type=meta.type,
        encodings=meta.encodings or [],
        path_in_schema=meta.path_in_schema,
        codec=meta.codec or 0,
        num_values=num_rows,
        total_uncompressed_size=len(body),
        total_compressed_size=len(body),
        data_page_offset=len(MAGIC) + len(dictionary),
        dictionary_page_offset=len(MAGIC) if dictionary else None,
    )
    root = wire.SchemaElement(name=b"schema", num_children=1)
    footer = wire.FileMetaData(
        version=1,
        schema=[root, element],
        num_rows=num_rows,
        row_groups=[
            wire.RowGroup(
                columns=[wire.ColumnChunk(file_offset=len(MAGIC), meta_data=column)],
                total_byte_size=len(body),
                num_rows=num_rows,
            )
        ],
        key_value_metadata=[wire.KeyValue(key=k, value=v) for k, v in key_values] or None,
    )
    buffer = TMemoryBuffer()
    footer.write(TCompactProtocol(buffer))
    encoded = buffer.getvalue()
    return b"".join((MAGIC, body, encoded, struct.pack("<I", len(encoded)), MAGIC))
