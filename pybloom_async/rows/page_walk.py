"""A flat column chunk's pages walked in Python: the reader :mod:`.take` falls back on.

The C chunk reader (:mod:`.chunk`) reads a chunk in one call. Where it cannot (a codec the
library was built without, a page it refuses), the chunk's pages are walked here: their
headers read one by one (:func:`..parquet.pages.read_page_header`, which asks thrift where
the C decoder refuses), each page that holds a wanted row decompressed by pyarrow and its
levels and values read by the C page calls (``pba_take_refs``, ``pba_match_rows``).

What it reads, and what it refuses (:class:`Refused`), is what :mod:`.take` says.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from .._native import ffi, lib
from ..parquet.elements import (
    DATA_PAGES,
    DICTIONARY_ENCODINGS,
    CompressionCodec,
    Encoding,
    PageType,
)
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

_PLAIN_DICTIONARY_PAGE = (Encoding.PLAIN, Encoding.PLAIN_DICTIONARY)

#: numpy's type of a PLAIN value of each fixed-width physical type read here.
DTYPES: dict[PhysicalType, np.dtype[Any]] = {
    PhysicalType.INT32: np.dtype("<i4"),
    PhysicalType.INT64: np.dtype("<i8"),
    PhysicalType.FLOAT: np.dtype("<f4"),
    PhysicalType.DOUBLE: np.dtype("<f8"),
}


def value_width(physical: PhysicalType) -> int:
    """The width of a PLAIN value of ``physical`` read here: 4 or 8 (:data:`DTYPES`), or 0
    for a byte array's."""
    dtype = DTYPES.get(physical)
    return dtype.itemsize if dtype is not None else 0


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


class Refused(Exception):
    """The chunk is not read here (pyarrow decodes it, and says what is wrong)."""


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
    chunk = plan.chunk(group, desc.index)
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
            dtype = DTYPES.get(self._desc.physical_type)
            if dtype is not None:
                if len(data) < count * dtype.itemsize:
                    raise Refused
                values: Any = np.frombuffer(data, dtype=dtype, count=count)
            else:
                if count > len(data) // 4:  # each entry's length takes 4 bytes
                    raise Refused
                values = np.empty(count, dtype=np.int64)
                checked(lib.pba_byte_array_offsets(as_u8(data), len(data), count, as_i64(values)))
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
        return cls(levels, body, dictionary, value_width(desc.physical_type))

    def refs(self, rows: Any, values: int) -> Any:
        """Where each of ``rows`` (in the page) has its value (see ``pba_take_refs``)."""
        rows = np.ascontiguousarray(rows, dtype=np.uint32)
        refs = np.empty(len(rows), dtype=np.int64)
        count = self.dictionary.read()[1] if self.dictionary is not None else 0
        levels = self.levels
        checked(
            lib.pba_take_refs(
                ffi.NULL if levels is None else as_u8(levels),
                0 if levels is None else len(levels),
                as_u8(self.values),
                len(self.values),
                values,
                count,
                self.width,
                ffi.from_buffer("uint32_t[]", rows),
                len(rows),
                as_i64(refs),
            )
        )
        return refs


def as_i64(values: Any) -> Any:
    return ffi.from_buffer("int64_t[]", values)


def as_u8(data: Any) -> Any:
    return ffi.from_buffer("uint8_t[]", data)


def checked(status: int) -> None:
    if status != 0:
        raise Refused
