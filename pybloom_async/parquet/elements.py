"""Small parts of the footer model: encodings, codecs, page types, statistics, key/value pairs."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any


class Encoding(enum.IntEnum):
    """Page encodings (``Encoding`` in parquet.thrift)."""

    PLAIN = 0
    PLAIN_DICTIONARY = 2
    RLE = 3
    BIT_PACKED = 4
    DELTA_BINARY_PACKED = 5
    DELTA_LENGTH_BYTE_ARRAY = 6
    DELTA_BYTE_ARRAY = 7
    RLE_DICTIONARY = 8
    BYTE_STREAM_SPLIT = 9


class CompressionCodec(enum.IntEnum):
    """Column chunk compression (``CompressionCodec`` in parquet.thrift)."""

    UNCOMPRESSED = 0
    SNAPPY = 1
    GZIP = 2
    LZO = 3
    BROTLI = 4
    LZ4 = 5
    ZSTD = 6
    LZ4_RAW = 7


class PageType(enum.IntEnum):
    """Page kinds (``PageType`` in parquet.thrift)."""

    DATA_PAGE = 0
    INDEX_PAGE = 1
    DICTIONARY_PAGE = 2
    DATA_PAGE_V2 = 3


#: The data pages' kinds, and the encodings of a data page that holds dictionary indices.
DATA_PAGES = (PageType.DATA_PAGE, PageType.DATA_PAGE_V2)
DICTIONARY_ENCODINGS = (Encoding.PLAIN_DICTIONARY, Encoding.RLE_DICTIONARY)

# Known values become enum members; values from newer writers stay plain ints
# rather than failing the whole footer. Dict lookups: Enum(value) costs a
# Python call, and a footer can hold millions of these.
ENCODINGS: dict[int, int] = {m.value: m for m in Encoding}
CODECS: dict[int, int] = {m.value: m for m in CompressionCodec}
PAGE_TYPES: dict[int, int] = {m.value: m for m in PageType}


class Statistics(SimpleNamespace):
    """Column chunk statistics; ``min_value``/``max_value`` hold PLAIN-encoded bytes.

    ``min``/``max`` are the deprecated fields (signed order only); prefer the
    ``*_value`` fields, whose order is the column's. Fields the writer left out
    read as ``None``. Read-only.
    """

    # The footer decoder builds these directly (keyword arguments, one per
    # field found): no second object per column chunk.
    min_value: bytes | None = None
    max_value: bytes | None = None
    null_count: int | None = None
    distinct_count: int | None = None
    is_min_value_exact: bool | None = None
    is_max_value_exact: bool | None = None
    nan_count: int | None = None
    min: bytes | None = None
    max: bytes | None = None

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Statistics is read-only (cannot set {name!r})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Statistics is read-only (cannot delete {name!r})")

    def __hash__(self) -> int:  # type: ignore[override]  # SimpleNamespace is unhashable
        return hash(tuple(sorted(vars(self).items())))


@dataclass(frozen=True, slots=True)
class PageEncodingStats:
    """How many pages of one type used one encoding."""

    page_type: int  # a PageType member, or the raw number if unknown
    encoding: int  # an Encoding member, or the raw number if unknown
    count: int


@dataclass(frozen=True, slots=True)
class KeyValue:
    """One entry of the file's key/value metadata (the value is raw bytes)."""

    key: str
    value: bytes | None
