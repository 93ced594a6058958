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
from .flat import FlatColumn, FlatFooter, decode_flat_footer
from .metadata import ColumnChunk, FileMetaData, RowGroup
from .pages import DATA_PAGE, PageHeader, PageHeaderReader, decode_page_header
from .schema import (
    MAX_SCHEMA_DEPTH,
    ColumnDescriptor,
    ConvertedType,
    LogicalKind,
    LogicalType,
    Repetition,
    Schema,
    SchemaNode,
    TimeUnit,
    build_schema,
)
from .tail import (
    ENCRYPTED_MAGIC,
    MAGIC,
    MIN_FILE_SIZE,
    TRAILER_SIZE,
    FooterLocation,
    check_leading_magic,
    parse_footer_tail,
)
from .thrift import THRIFT_DECODER
from .values import (
    CannotMatch,
    Encoded,
    NeverPrunes,
    Probe,
    WithNanoseconds,
    encode_text,
    encode_value,
    parse_text_value,
)

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
    "FooterLocation",
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
