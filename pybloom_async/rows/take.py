"""A row group's matching rows taken from whole column chunks without decoding the rest.

A lookup's matches are a few rows of a row group; pyarrow decodes every value of a chunk
to give them. For a flat column of a plain type, the C decoder (``csrc/rows/take.c``) finds
each wanted row's value in the chunk's pages instead: the page headers are read here, only
the pages that hold a wanted row (and the dictionary, if they use it) are decompressed, and
their levels and values are walked no further than the last wanted row. Only the wanted
values are copied out.

What it reads: columns without repetition and with at most one definition level, stored
as INT32, INT64, FLOAT, DOUBLE or BYTE_ARRAY, whose Arrow type (as pyarrow reads this file)
is their values' own or a view of them: integers, floats, ``date32``, timestamps of the
column's unit, strings and binaries. Pages v1 (levels RLE) and v2, values PLAIN or
dictionary-encoded, every codec pyarrow decompresses but Hadoop's LZ4 framing. Any other
column, encoding or page, and any page that does not read as its header says, is left to
pyarrow, which decodes the whole chunk as before and names what is wrong: this module
never raises for what a file holds.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from .._native import ffi, lib
from ..errors import PyBloomError
from ..parquet.elements import (
    DATA_PAGES,
    DICTIONARY_ENCODINGS,
    CompressionCodec,
    Encoding,
    PageType,
)
from ..parquet.logical import LogicalKind, TimeUnit
from ..parquet.pages import PageHeader, read_page_header
from ..parquet.schema import ColumnDescriptor
from ..read.ranges import HeldBytes
from ..types import PhysicalType
from .plan import FilePlan, chunk_range

#: pyarrow's names of the codecs a page is decompressed with (LZ4 is Hadoop's framing, LZO
#: has no codec in pyarrow: their chunks are left to pyarrow's reader).
ARROW_CODECS: dict[int, str] = {
    CompressionCodec.SNAPPY: "snappy",
    CompressionCodec.GZIP: "gzip",
    CompressionCodec.BROTLI: "brotli",
    CompressionCodec.ZSTD: "zstd",
    CompressionCodec.LZ4_RAW: "lz4_raw",
}

#: A page larger than this, uncompressed, is left to pyarrow.
MAX_PAGE_BYTES = 256 << 20
#: Byte arrays taken from one chunk total at most this (more: left to pyarrow).
MAX_TAKEN_BYTES = 256 << 20

_PLAIN_DICTIONARY_PAGE = (Encoding.PLAIN, Encoding.PLAIN_DICTIONARY)

#: numpy's type of a PLAIN value of each fixed-width physical type read here.
_DTYPES: dict[PhysicalType, np.dtype[Any]] = {
    PhysicalType.INT32: np.dtype("<i4"),
    PhysicalType.INT64: np.dtype("<i8"),
    PhysicalType.FLOAT: np.dtype("<f4"),
    PhysicalType.DOUBLE: np.dtype("<f8"),
}
#: Arrow's type of those values as they are stored.
_STORAGE = {
    PhysicalType.INT32: pa.int32(),
    PhysicalType.INT64: pa.int64(),
    PhysicalType.FLOAT: pa.float32(),
    PhysicalType.DOUBLE: pa.float64(),
}
_UNITS = {TimeUnit.MILLIS: "ms", TimeUnit.MICROS: "us", TimeUnit.NANOS: "ns"}


def decompressible(codec: int) -> bool:
    """Whether pages of ``codec`` are decompressed here (:func:`decompressed`)."""
    return codec == CompressionCodec.UNCOMPRESSED or codec in ARROW_CODECS


def decompressed(data: memoryview, raw_size: int, codec: int) -> memoryview | None:
    """A page's bytes decompressed to ``raw_size`` bytes, without a copy of them (None: a
    codec pyarrow cannot decompress, or bytes that do not decompress to that size)."""
    if codec == CompressionCodec.UNCOMPRESSED:
        return data if len(data) == raw_size else None
    name = ARROW_CODECS.get(codec)
    if name is None or not 0 <= raw_size <= MAX_PAGE_BYTES:
        return None
    try:
        out = memoryview(pa.decompress(data, raw_size, codec=name))
    except (pa.ArrowException, OSError, ValueError):
        return None
    return out if len(out) == raw_size else None


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


class Refused(Exception):
    """The chunk is not read here (pyarrow decodes it, and says what is wrong)."""


def take_columns(
    plan: FilePlan,
    held: HeldBytes,
    group: int,
    names: Sequence[str],
    rows: Any,
    read: Mapping[str, ChunkPages] | None = None,
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


def _take_chunk(
    plan: FilePlan,
    held: HeldBytes,
    group: int,
    column: Column,
    rows: Any,
    chunk: ChunkPages | None = None,
) -> Any:
    """One chunk's values at ``rows``: its pages walked by their headers."""
    num_rows = plan.metadata.row_groups[group].num_rows
    if len(rows) and not 0 <= rows[0] <= rows[-1] < num_rows:
        raise Refused
    if chunk is None:
        chunk = chunk_pages(plan, held, group, column.desc)
    pieces: list[tuple[Page, Any]] = []
    taken = 0
    wanted = rows.tolist()  # bisected per page: a few rows, where numpy's call costs more
    for page in chunk.pages:
        more = bisect.bisect_left(wanted, page.row + page.values)
        if more > taken:
            parsed = chunk.read(page)
            pieces.append((parsed, parsed.refs(rows[taken:more] - page.row, page.values)))
        taken = more
    if taken != len(rows):
        raise Refused
    return _assembled(column, pieces, len(rows))


@dataclass(frozen=True)
class DataPage:
    """A data page of a chunk as its header says: its first row in the row group, its
    values (its rows: the column is flat), its header and its bytes as stored."""

    row: int
    values: int
    header: PageHeader
    data: memoryview

    @property
    def encoding(self) -> int | None:
        """How its values are encoded."""
        return self.header.v2.encoding if self.header.v2 is not None else self.header.encoding


@dataclass(frozen=True)
class ChunkPages:
    """A chunk's pages, read by their headers (nothing decompressed yet): its dictionary,
    if it has one, and its data pages in order, covering its row group's rows."""

    dictionary: Dictionary | None
    pages: list[DataPage]
    codec: int
    desc: ColumnDescriptor
    #: The chunk's uncompressed bytes, as its footer says.
    limit: int
    #: The pages read so far, by their first row (each is decompressed once).
    parsed: dict[int, Page] = field(default_factory=dict, compare=False)

    def read(self, page: DataPage) -> Page:
        """The data page decompressed, its levels and values apart."""
        found = self.parsed.get(page.row)
        if found is None:
            if (page.header.uncompressed_page_size or 0) > self.limit:
                raise Refused  # more than the footer says the chunk holds
            found = Page.of(page.header, page.data, self.codec, self.desc, self.dictionary)
            self.parsed[page.row] = found
        return found


def chunk_pages(plan: FilePlan, held: HeldBytes, group: int, desc: ColumnDescriptor) -> ChunkPages:
    """The pages of the chunk of ``desc`` in row group ``group`` (its bytes in ``held``).

    Raises
    ------
    Refused
        The chunk is not read here: its bytes are not held, its codec is not one
        :func:`decompressed` reads, or its pages are not as this reader reads them (a page
        kind newer than it, a second dictionary, pages past the chunk or short of its rows).
    """
    chunk = plan.metadata.row_groups[group].columns[desc.index]
    num_rows = plan.metadata.row_groups[group].num_rows
    start, end = chunk_range(plan, group, desc.index)
    if num_rows >= 1 << 31:
        raise Refused
    data = held.view(start, end)  # the pages and their headers are read in place
    if data is None or not decompressible(chunk.codec):
        raise Refused
    pages: list[DataPage] = []
    dictionary: Dictionary | None = None
    at, row = 0, 0
    while row < num_rows:
        if at >= len(data):
            raise Refused
        header = read_page_header(data, at, path=plan.path, column=desc.path)
        body = at + header.header_length
        size = header.compressed_page_size
        if size is None or not 0 <= size <= len(data) - body:
            raise Refused
        page = data[body : body + size]
        at = body + size
        if header.type == PageType.DICTIONARY_PAGE:
            if dictionary is not None or row:
                raise Refused
            limit = chunk.total_uncompressed_size
            dictionary = Dictionary(header, page, chunk.codec, desc, limit)
            continue
        if header.type == PageType.INDEX_PAGE:
            continue
        if header.type not in DATA_PAGES:
            raise Refused  # a page kind newer than this reader
        values = _page_values(header)
        if values is None or not 0 < values <= num_rows - row:
            raise Refused
        pages.append(DataPage(row, values, header, page))
        row += values
    return ChunkPages(dictionary, pages, chunk.codec, desc, chunk.total_uncompressed_size)


def _page_values(header: PageHeader) -> int | None:
    """A data page's values (its rows: the column is flat)."""
    if header.v2 is not None:
        v2 = header.v2
        return v2.num_values if v2.num_rows == v2.num_values else None
    return header.num_values


class Dictionary:
    """A chunk's dictionary page, decompressed and read when a page first needs it."""

    def __init__(
        self, header: PageHeader, page: memoryview, codec: int, desc: ColumnDescriptor, limit: int
    ) -> None:
        self._header, self._page, self._codec, self._desc = header, page, codec, desc
        self._limit = limit  # the chunk's uncompressed bytes, as its footer says
        self._read: tuple[memoryview, int, Any] | None = None

    def read(self) -> tuple[memoryview, int, Any]:
        """Its bytes, its entry count, and its values (fixed width: a numpy array) or the
        offsets of its byte arrays' lengths."""
        if self._read is None:
            header = self._header
            count = header.num_values
            raw = header.uncompressed_page_size
            if header.encoding not in _PLAIN_DICTIONARY_PAGE or count is None or raw is None:
                raise Refused
            if count <= 0 or raw > self._limit:
                raise Refused
            data = decompressed(self._page, raw, self._codec)
            if data is None:
                raise Refused
            dtype = _DTYPES.get(self._desc.physical_type)
            if dtype is not None:
                if len(data) < count * dtype.itemsize:
                    raise Refused
                values: Any = np.frombuffer(data, dtype=dtype, count=count)
            else:
                if count > len(data) // 4:  # each entry's length takes 4 bytes
                    raise Refused
                values = np.empty(count, dtype=np.int64)
                _check(lib.pba_byte_array_offsets(_u8(data), len(data), count, _i64(values)))
            self._read = (data, count, values)
        return self._read


@dataclass
class Page:
    """A data page's definition levels and values, decompressed."""

    levels: memoryview | None
    values: memoryview
    dictionary: Dictionary | None
    width: int

    @classmethod
    def of(
        cls,
        header: PageHeader,
        page: memoryview,
        codec: int,
        desc: ColumnDescriptor,
        dictionary: Dictionary | None,
    ) -> Page:
        raw = header.uncompressed_page_size
        if raw is None:
            raise Refused
        optional = desc.max_definition_level == 1
        levels: memoryview | None = None
        if header.v2 is not None:
            v2 = header.v2
            encoding = v2.encoding
            rep, defs = v2.repetition_levels_byte_length or 0, v2.definition_levels_byte_length
            if rep or defs is None or not 0 <= defs <= len(page) or (defs and not optional):
                raise Refused
            levels = page[:defs] if optional else None
            values = page[defs:]
            if v2.is_compressed:
                body = decompressed(values, raw - defs, codec)
            else:
                body = values if len(values) == raw - defs else None
        else:
            encoding = header.encoding
            body = decompressed(page, raw, codec)
            if body is not None and optional:
                if header.definition_level_encoding != Encoding.RLE or len(body) < 4:
                    raise Refused
                size = int.from_bytes(body[:4], "little")
                if size > len(body) - 4:
                    raise Refused
                levels, body = body[4 : 4 + size], body[4 + size :]
        if body is None:
            raise Refused
        if encoding in DICTIONARY_ENCODINGS:
            if dictionary is None:
                raise Refused
        elif encoding == Encoding.PLAIN:
            dictionary = None
        else:
            raise Refused
        dtype = _DTYPES.get(desc.physical_type)
        return cls(levels, body, dictionary, dtype.itemsize if dtype is not None else 0)

    def refs(self, rows: Any, values: int) -> Any:
        """Where each of ``rows`` (in the page) has its value (see ``pba_take_refs``)."""
        rows = np.ascontiguousarray(rows, dtype=np.uint32)
        refs = np.empty(len(rows), dtype=np.int64)
        count = self.dictionary.read()[1] if self.dictionary is not None else 0
        levels = self.levels
        _check(
            lib.pba_take_refs(
                ffi.NULL if levels is None else _u8(levels),
                0 if levels is None else len(levels),
                _u8(self.values),
                len(self.values),
                values,
                count,
                self.width,
                ffi.from_buffer("uint32_t[]", rows),
                len(rows),
                _i64(refs),
            )
        )
        return refs


def _assembled(column: Column, pieces: Sequence[tuple[Page, Any]], n: int) -> Any:
    """The taken values of every page, in order, as one Arrow array of the column's type."""
    refs = np.concatenate([r for _, r in pieces]) if pieces else np.zeros(0, np.int64)
    present = refs >= 0
    nulls = n - int(np.count_nonzero(present))
    validity = None if not nulls else pa.py_buffer(np.packbits(present, bitorder="little"))
    dtype = _DTYPES.get(column.desc.physical_type)
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
        storage = _STORAGE[column.desc.physical_type]
        array = pa.Array.from_buffers(storage, n, [validity, pa.py_buffer(out)], null_count=nulls)
        return _as(array, column.arrow_type)
    offsets, data = _gathered(pieces)
    large = pa.types.is_large_string(column.arrow_type) or pa.types.is_large_binary(
        column.arrow_type
    )
    if not large:
        if offsets[-1] > np.iinfo(np.int32).max:
            raise Refused
        offsets = offsets.astype(np.int32)
    return pa.Array.from_buffers(
        column.arrow_type,
        n,
        [validity, pa.py_buffer(offsets), pa.py_buffer(data)],
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
        _check(
            lib.pba_gather_byte_arrays(
                _u8(data), len(data), _i64(refs), len(refs), _i64(offsets), ffi.NULL, 0
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
        _check(
            lib.pba_gather_byte_arrays(
                _u8(data), len(data), _i64(refs), len(refs), _i64(offsets), _u8(room), len(room)
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


def _i64(values: Any) -> Any:
    return ffi.from_buffer("int64_t[]", values)


def _u8(data: Any) -> Any:
    return ffi.from_buffer("uint8_t[]", data)


def _check(status: int) -> None:
    if status != 0:
        raise Refused
