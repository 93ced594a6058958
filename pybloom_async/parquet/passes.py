"""The decoding passes over a footer (which fields each pass keeps) and the chunk checks."""

from __future__ import annotations

from collections.abc import Sized
from typing import Any

from thrift.Thrift import TType

from ..errors import EncryptedFileError, ParquetFormatError
from ..types import PhysicalType
from . import thrift_specs as wire
from .elements import Statistics
from .schema import ColumnDescriptor


class Unset:
    """Marks a lazily decoded attribute not decoded yet (None is a valid value)."""

    __slots__ = ()


UNSET = Unset()


# The decoder's type arguments for each pass over a footer; each reads only
# the fields named (thrift_specs.decode_args).
_HEAD_FILE_FIELDS = (
    "version",
    "schema",
    "num_rows",
    "row_groups",
    "created_by",
    "encryption_algorithm",
)
_HEAD_GROUP_FIELDS = (
    "total_byte_size",
    "num_rows",
    "file_offset",
    "total_compressed_size",
    "ordinal",
)


def _over_chunks(file_fields: tuple[str, ...], group_fields: tuple[str, ...], chunk: Any) -> Any:
    """A pass over FileMetaData reading ``file_fields``, and of each row group ``group_fields``
    and its column chunks as ``chunk`` (type arguments) says."""
    return wire.decode_args(
        wire.FileMetaData,
        file_fields,
        row_groups=wire.list_of(
            TType.STRUCT,
            wire.decode_args(
                wire.RowGroup,
                group_fields,
                **({"columns": wire.list_of(TType.STRUCT, chunk)} if chunk is not None else {}),
            ),
        ),
    )


# What pruning and read planning use of a chunk; statistics are built as the public class.
_CHUNK_ARGS = wire.decode_args(
    wire.ColumnChunk,
    ("meta_data", "crypto_metadata"),
    meta_data=wire.decode_args(
        wire.ColumnMetaData,
        (
            "type",
            "path_in_schema",
            "num_values",
            "statistics",
            "bloom_filter_offset",
            "bloom_filter_length",
        ),
        statistics=[Statistics, wire.Statistics.thrift_spec],
    ),
)
# The rest of a chunk.
_DETAILS_ARGS = wire.decode_args(
    wire.ColumnChunk,
    (
        "file_path",
        "file_offset",
        "meta_data",
        "offset_index_offset",
        "offset_index_length",
        "column_index_offset",
        "column_index_length",
    ),
    meta_data=wire.decode_args(
        wire.ColumnMetaData,
        (
            "encodings",
            "codec",
            "total_uncompressed_size",
            "total_compressed_size",
            "data_page_offset",
            "index_page_offset",
            "dictionary_page_offset",
            "encoding_stats",
            "size_statistics",
        ),
    ),
)


def _head_pass(schema: bool, key_values: bool, chunks: bool) -> Any:
    files = tuple(f for f in _HEAD_FILE_FIELDS if schema or f != "schema")
    if key_values:
        files += ("key_value_metadata",)
    if chunks:
        return _over_chunks(files, (*_HEAD_GROUP_FIELDS, "columns"), _CHUNK_ARGS)
    return _over_chunks(files, _HEAD_GROUP_FIELDS, None)


#: The first pass over a footer, by what it reads besides the head: ``(schema, key/value
#: metadata, chunks)``. The schema is not read where one of the same bytes was decoded
#: already (:mod:`.decode`); the chunks and the key/value metadata for callers about to
#: read them (one pass instead of two); the key/value metadata alone for the reader, which
#: reads chunks with the footer scanner (``scan.py``) and whose result schema depends on it.
HEAD_PASSES = {
    (schema, key_values, chunks): _head_pass(schema, key_values, chunks)
    for schema in (True, False)
    for key_values in (True, False)
    for chunks in (True, False)
}
HEAD_PASS = HEAD_PASSES[True, False, False]
CHUNKS_PASS = _over_chunks(("row_groups",), ("columns",), _CHUNK_ARGS)
DETAILS_PASS = _over_chunks(("row_groups",), ("columns",), _DETAILS_ARGS)
KEY_VALUES_PASS = wire.decode_args(wire.FileMetaData, ("key_value_metadata",))
SCHEMA_PASS = wire.decode_args(wire.FileMetaData, ("schema",))


_CORE_REQUIRED = ("type", "path_in_schema", "num_values")
_DETAILS_REQUIRED = (
    "encodings",
    "codec",
    "total_uncompressed_size",
    "total_compressed_size",
    "data_page_offset",
)


def check_unencrypted(head: wire.FileMetaData, path: str | None) -> None:
    """Refuse a plaintext footer whose columns are encrypted (its encryption_algorithm)."""
    if head.encryption_algorithm is not None:
        raise EncryptedFileError(
            "encrypted files are not supported (plaintext footer with encrypted columns)",
            path=path,
        )


def check_chunk_count(chunks: Sized, leaves: int, group: int, path: str | None) -> None:
    """Refuse a row group without one column chunk per schema leaf (matched by position)."""
    if len(chunks) != leaves:
        raise ParquetFormatError(
            f"row group {group} has {len(chunks)} column chunks but the schema has "
            f"{leaves} leaf columns",
            path=path,
        )


def check_chunk(
    chunk: wire.ColumnChunk, group: int, column: ColumnDescriptor, path: str | None
) -> None:
    """Raise the error a column chunk of the chunks pass deserves; return if it has none.

    Called only when the quick checks in ``ChunkTable`` failed; the one case that
    then passes is a path whose names are not UTF-8 (compared as decoded).
    """
    if chunk.crypto_metadata is not None:
        raise EncryptedFileError(
            "encrypted files are not supported (column chunk is encrypted; "
            f"{chunk_place(group, column)})",
            path=path,
        )
    md = chunk.meta_data
    if md is None:
        raise ParquetFormatError(
            f"column chunk has no meta_data ({chunk_place(group, column)})", path=path
        )
    _require(md, _CORE_REQUIRED, group, column, path)
    # Columns are matched to schema leaves by position (parquet.thrift: "This
    # list must have the same order as the SchemaElement list"); the path and
    # type recorded in the chunk must agree with the leaf at that position.
    # Raw names are compared first; names that are not UTF-8 are compared as
    # decoded (with U+FFFD), as the schema shows them.
    recorded = tuple(n.decode("utf-8", errors="replace") for n in md.path_in_schema or ())
    if recorded != column.path_parts:
        raise ParquetFormatError(
            f"column chunk path {'.'.join(recorded)!r} does not match schema leaf "
            f"{column.index} ({chunk_place(group, column)})",
            path=path,
        )
    if md.type != column.physical_type:
        raise ParquetFormatError(
            f"column chunk type {md.type} does not match the schema's "
            f"{column.physical_type.name} ({chunk_place(group, column)})",
            path=path,
        )
    if (md.num_values or 0) < 0:
        raise ParquetFormatError(
            f"ColumnMetaData.num_values is negative: {md.num_values} "
            f"({chunk_place(group, column)})",
            path=path,
        )


def _require(
    md: wire.ColumnMetaData,
    names: tuple[str, ...],
    group: int,
    column: ColumnDescriptor,
    path: str | None,
) -> None:
    """Refuse a chunk's metadata without one of the fields ``names`` (parquet.thrift's
    required ones that a pass reads)."""
    for name in names:
        if getattr(md, name) is None:
            raise ParquetFormatError(
                f"required field ColumnMetaData.{name} is missing ({chunk_place(group, column)})",
                path=path,
            )


def check_details(
    md: wire.ColumnMetaData, group: int, column: ColumnDescriptor, path: str | None
) -> None:
    """Validate the fields of the details pass of one chunk."""
    _require(md, _DETAILS_REQUIRED, group, column, path)
    for s in md.encoding_stats or ():
        if s.page_type is None or s.encoding is None or s.count is None:
            if s.page_type is None:
                missing = "page_type"
            else:
                missing = "encoding" if s.encoding is None else "count"
            raise ParquetFormatError(
                f"required field PageEncodingStats.{missing} is missing "
                f"({chunk_place(group, column)})",
                path=path,
            )
    if md.size_statistics is not None:
        _check_size_statistics(md.size_statistics, group, column, path)


def _check_size_statistics(
    sizes: wire.SizeStatistics, group: int, column: ColumnDescriptor, path: str | None
) -> None:
    """A chunk's size statistics as pyarrow checks them when it builds the chunk's metadata
    (some of its accessors then end the process instead of raising): a level histogram has
    one entry per level, unencoded byte sizes belong to BYTE_ARRAY columns."""
    for name, histogram, levels in (
        ("repetition", sizes.repetition_level_histogram, column.max_repetition_level + 1),
        ("definition", sizes.definition_level_histogram, column.max_definition_level + 1),
    ):
        if histogram and len(histogram) != levels:
            raise ParquetFormatError(
                f"the size statistics' {name}-level histogram has {len(histogram)} entries, "
                f"not {levels} ({chunk_place(group, column)})",
                path=path,
            )
    if (
        sizes.unencoded_byte_array_data_bytes is not None
        and column.physical_type != PhysicalType.BYTE_ARRAY
    ):
        raise ParquetFormatError(
            "the size statistics give unencoded BYTE_ARRAY sizes for a "
            f"{column.physical_type.name} column ({chunk_place(group, column)})",
            path=path,
        )


def chunk_place(group: int, column: ColumnDescriptor) -> str:
    return f"row group {group}, column {column.path!r}"
