"""Reading Parquet footers: file metadata, the schema, and probe values per column.

Pure functions over bytes (no I/O): the async reader fetches the bytes and
calls :func:`parse_footer_tail` and :func:`decode_file_metadata`; the pruner
encodes probe values with :func:`encode_value`. Small files of a known layout
(sidecar indexes) are read with :func:`decode_flat_footer` and
:class:`PageHeaderReader` instead.
"""

from __future__ import annotations

from .decode import decode_file_metadata
from .elements import CompressionCodec, Encoding, KeyValue, PageEncodingStats, PageType, Statistics
from .encoded import CannotMatch, Encoded, NeverPrunes, Probe, WithNanoseconds
from .flat import FlatColumn, FlatFooter, decode_flat_footer
from .logical import ConvertedType, LogicalKind, LogicalType, TimeUnit
from .metadata import ColumnChunk, FileMetaData, GroupChunks, RowGroup
from .pages import DATA_PAGE, PageHeader, PageHeaderReader, decode_page_header
from .schema import MAX_SCHEMA_DEPTH, ColumnDescriptor, Repetition, Schema, SchemaNode, build_schema
from .tail import (
    ENCRYPTED_MAGIC,
    MAGIC,
    MIN_FILE_SIZE,
    TRAILER_SIZE,
    FooterBounds,
    check_leading_magic,
    parse_footer_tail,
)
from .text_values import parse_text_value
from .thrift import THRIFT_DECODER
from .values import encode_text, encode_value

__all__ = [
    "DATA_PAGE",
    "ENCRYPTED_MAGIC",
    "MAGIC",
    "MAX_SCHEMA_DEPTH",
    "MIN_FILE_SIZE",
    "THRIFT_DECODER",
    "TRAILER_SIZE",
    "CannotMatch",
    "ColumnChunk",
    "ColumnDescriptor",
    "CompressionCodec",
    "ConvertedType",
    "Encoded",
    "Encoding",
    "FileMetaData",
    "FlatColumn",
    "FlatFooter",
    "FooterBounds",
    "GroupChunks",
    "KeyValue",
    "LogicalKind",
    "LogicalType",
    "NeverPrunes",
    "PageEncodingStats",
    "PageHeader",
    "PageHeaderReader",
    "PageType",
    "Probe",
    "Repetition",
    "RowGroup",
    "Schema",
    "SchemaNode",
    "Statistics",
    "TimeUnit",
    "WithNanoseconds",
    "build_schema",
    "check_leading_magic",
    "decode_file_metadata",
    "decode_flat_footer",
    "decode_page_header",
    "encode_text",
    "encode_value",
    "parse_footer_tail",
    "parse_text_value",
]
