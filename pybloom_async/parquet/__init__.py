"""Reading Parquet footers: file metadata, the schema, page headers and page indexes.

Pure functions over bytes (no I/O): the async reader fetches the bytes and
calls :func:`parse_footer_tail` and :func:`decode_file_metadata`; the pruner
encodes probe values with :mod:`pybloom_async.values`. Small files of a known layout
(sidecar indexes) are read with the same decoder and :class:`PageHeaderReader`.
"""

from __future__ import annotations

from .chunks import ChunkPlace as ChunkPlace
from .chunks import ColumnChunk as ColumnChunk
from .chunks import GroupChunks as GroupChunks
from .decode import decode_file_metadata as decode_file_metadata
from .elements import CompressionCodec as CompressionCodec
from .elements import Encoding as Encoding
from .elements import PageType as PageType
from .elements import Statistics as Statistics
from .logical import ConvertedType as ConvertedType
from .logical import LogicalKind as LogicalKind
from .logical import LogicalType as LogicalType
from .logical import TimeUnit as TimeUnit
from .metadata import FileMetaData as FileMetaData
from .metadata import RowGroup as RowGroup
from .pages import DATA_PAGE as DATA_PAGE
from .pages import PageHeaderReader as PageHeaderReader
from .pages import decode_page_header as decode_page_header
from .schema import ColumnDescriptor as ColumnDescriptor
from .schema import Repetition as Repetition
from .schema import Schema as Schema
from .schema_build import MAX_SCHEMA_DEPTH as MAX_SCHEMA_DEPTH
from .schema_build import build_schema as build_schema
from .tail import MAGIC as MAGIC
from .tail import FooterBounds as FooterBounds
from .tail import check_leading_magic as check_leading_magic
from .tail import parse_footer_tail as parse_footer_tail
from .thrift import THRIFT_DECODER as THRIFT_DECODER
