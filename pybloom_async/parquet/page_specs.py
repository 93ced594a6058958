"""Thrift specs of the page structs: page headers and the page index.

The structs a reader meets beside the footer rather than in it: the header before each
page of a column chunk (``PageHeader``, with the data and dictionary pages' own headers),
and the two halves of a chunk's page index (``ColumnIndex``; ``OffsetIndex``, a list of
``PageLocation``). They are wire shapes like the footer's (:mod:`.thrift_specs`, whose base
struct and spec builders they use); ``pages.py`` and ``page_index.py`` check them.
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
    """``struct DataPageHeader`` (data page v1; without its statistics)."""

    num_values: int | None = None
    encoding: int | None = None
    definition_level_encoding: int | None = None
    repetition_level_encoding: int | None = None


class DictionaryPageHeader(Struct):
    """``struct DictionaryPageHeader``."""

    num_values: int | None = None
    encoding: int | None = None
    is_sorted: bool | None = None


class DataPageHeaderV2(Struct):
    """``struct DataPageHeaderV2`` (without its statistics)."""

    num_values: int | None = None
    num_nulls: int | None = None
    num_rows: int | None = None
    encoding: int | None = None
    definition_levels_byte_length: int | None = None
    repetition_levels_byte_length: int | None = None
    is_compressed: bool | None = None


class PageHeader(Struct):
    """``struct PageHeader``: the header before each page of a column chunk.

    The data page (v1 and v2) and dictionary page members are read; an index page is
    recognised by ``type`` (its own header is skipped).
    """

    type: int | None = None
    uncompressed_page_size: int | None = None
    compressed_page_size: int | None = None
    crc: int | None = None
    data_page_header: DataPageHeader | None = None
    dictionary_page_header: DictionaryPageHeader | None = None
    data_page_header_v2: DataPageHeaderV2 | None = None


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
install_spec(
    DataPageHeader,
    (1, TType.I32, "num_values", None),
    (2, TType.I32, "encoding", None),
    (3, TType.I32, "definition_level_encoding", None),
    (4, TType.I32, "repetition_level_encoding", None),
    # 5 (statistics) is not read.
)
install_spec(
    DictionaryPageHeader,
    (1, TType.I32, "num_values", None),
    (2, TType.I32, "encoding", None),
    (3, TType.BOOL, "is_sorted", None),
)
install_spec(
    DataPageHeaderV2,
    (1, TType.I32, "num_values", None),
    (2, TType.I32, "num_nulls", None),
    (3, TType.I32, "num_rows", None),
    (4, TType.I32, "encoding", None),
    (5, TType.I32, "definition_levels_byte_length", None),
    (6, TType.I32, "repetition_levels_byte_length", None),
    (7, TType.BOOL, "is_compressed", None),
    # 8 (statistics) is not read.
)
install_spec(
    PageHeader,
    (1, TType.I32, "type", None),
    (2, TType.I32, "uncompressed_page_size", None),
    (3, TType.I32, "compressed_page_size", None),
    (4, TType.I32, "crc", None),
    (5, TType.STRUCT, "data_page_header", struct_args(DataPageHeader)),
    # 6 (the index page header) is not read.
    (7, TType.STRUCT, "dictionary_page_header", struct_args(DictionaryPageHeader)),
    (8, TType.STRUCT, "data_page_header_v2", struct_args(DataPageHeaderV2)),
)
