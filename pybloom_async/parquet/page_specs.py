"""Thrift specs of the page structs: page headers and the page index.

The structs a reader meets beside the footer rather than in it: the header before each
page of a column chunk (``PageHeader``, with the data page v1 header), and the two halves
of a chunk's page index (``ColumnIndex``; ``OffsetIndex``, a list of ``PageLocation``).
They are wire shapes like the footer's (:mod:`.thrift_specs`, whose base struct and spec
builders they use); ``pages.py`` and ``page_index.py`` check them.
"""

from __future__ import annotations

from thrift.Thrift import TType

from .thrift_specs import BINARY, Struct, install_spec, list_of, struct_args


class PageLocation(Struct):
    """``struct PageLocation``: one data page of an offset index."""

    offset: int | None = None
    compressed_page_size: int | None = None
    first_row_index: int | None = None


class OffsetIndex(Struct):
    """``struct OffsetIndex`` (without ``unencoded_byte_array_data_bytes``)."""

    page_locations: list[PageLocation] | None = None


class ColumnIndex(Struct):
    """``struct ColumnIndex`` (without the level histograms)."""

    null_pages: list[bool] | None = None
    min_values: list[bytes] | None = None
    max_values: list[bytes] | None = None
    boundary_order: int | None = None
    null_counts: list[int] | None = None


class DataPageHeader(Struct):
    """``struct DataPageHeader`` (data page v1; without the level encodings and statistics)."""

    num_values: int | None = None
    encoding: int | None = None


class PageHeader(Struct):
    """``struct PageHeader``: the header before each page of a column chunk.

    Only the data page v1 member is read; dictionary, index and v2 data pages are
    recognised by ``type`` (their own headers are skipped).
    """

    type: int | None = None
    uncompressed_page_size: int | None = None
    compressed_page_size: int | None = None
    crc: int | None = None
    data_page_header: DataPageHeader | None = None


install_spec(
    PageLocation,
    (1, TType.I64, "offset", None),
    (2, TType.I32, "compressed_page_size", None),
    (3, TType.I64, "first_row_index", None),
)
install_spec(
    OffsetIndex, (1, TType.LIST, "page_locations", list_of(TType.STRUCT, struct_args(PageLocation)))
)
install_spec(
    ColumnIndex,
    (1, TType.LIST, "null_pages", list_of(TType.BOOL)),
    (2, TType.LIST, "min_values", list_of(TType.STRING, BINARY)),
    (3, TType.LIST, "max_values", list_of(TType.STRING, BINARY)),
    (4, TType.I32, "boundary_order", None),
    (5, TType.LIST, "null_counts", list_of(TType.I64)),
)
install_spec(DataPageHeader, (1, TType.I32, "num_values", None), (2, TType.I32, "encoding", None))
install_spec(
    PageHeader,
    (1, TType.I32, "type", None),
    (2, TType.I32, "uncompressed_page_size", None),
    (3, TType.I32, "compressed_page_size", None),
    (4, TType.I32, "crc", None),
    (5, TType.STRUCT, "data_page_header", struct_args(DataPageHeader)),
    # 6-8 (index, dictionary and v2 data page headers) are not read.
)
