"""A cheap decode of small footers: leaf columns and their chunks in a single row group.

:func:`pybloom_async.parquet.decode_file_metadata` builds the typed model of any footer
(a :class:`~pybloom_async.parquet.ColumnDescriptor` per leaf, logical types, statistics,
lazily decoded passes). A small file of a layout known in advance, such as a sidecar
index (a one-row file of some 30 REQUIRED leaves), needs none of that: only each leaf's
path, physical type and repetition and where its one chunk's pages lie. Building the
model cost more than reading the whole file's values, so :func:`decode_flat_footer`
reads exactly those fields in one pass of the thrift decoder and checks them:

* the whole footer is well-formed thrift (the decoder reads every byte, skipping the
  fields it does not keep), and not encrypted;
* the schema is a tree: every group's children follow it, nothing is left over, nesting
  stays within ``MAX_SCHEMA_DEPTH``; each element has a name, each leaf a known
  physical type and each element a known repetition;
* with one row group, it has one chunk per leaf, in schema order, whose recorded path
  and type are the leaf's, with the fields below present and sizes not negative.

Offsets and sizes are returned as found: the caller checks them against its file.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple, NoReturn

from thrift.Thrift import TType

from ..errors import EncryptedFileError, ParquetFormatError
from ..types import PhysicalType
from . import thrift_specs as wire
from .passes import check_chunk_count, check_unencrypted
from .schema_build import MAX_SCHEMA_DEPTH, PHYSICAL_BY_NUMBER, REPETITION_BY_NUMBER, child_count
from .thrift import THRIFT_DECODER, decode_struct, require_field


class FlatColumn(NamedTuple):
    """One leaf column and its chunk in the file's only row group, as stored."""

    path: tuple[str, ...]  # names from the root's child down (invalid UTF-8 as U+FFFD)
    physical_type: PhysicalType
    required: bool  # the leaf and every group above it are REQUIRED
    codec: int  # a CompressionCodec number
    num_values: int
    data_page_offset: int
    dictionary_page_offset: int | None
    total_compressed_size: int


class FlatFooter(NamedTuple):
    """What :func:`decode_flat_footer` read."""

    num_rows: int
    num_row_groups: int
    #: One per leaf, in schema order; empty unless there is exactly one row group.
    columns: tuple[FlatColumn, ...]


_ARGS = wire.decode_args(
    wire.FileMetaData,
    ("version", "schema", "num_rows", "row_groups", "encryption_algorithm"),
    schema=wire.list_of(
        TType.STRUCT,
        wire.decode_args(wire.SchemaElement, ("type", "repetition_type", "name", "num_children")),
    ),
    row_groups=wire.list_of(
        TType.STRUCT,
        wire.decode_args(
            wire.RowGroup,
            ("columns",),
            columns=wire.list_of(
                TType.STRUCT,
                wire.decode_args(
                    wire.ColumnChunk,
                    ("meta_data", "crypto_metadata"),
                    meta_data=wire.decode_args(
                        wire.ColumnMetaData,
                        (
                            "type",
                            "path_in_schema",
                            "codec",
                            "num_values",
                            "total_compressed_size",
                            "data_page_offset",
                            "dictionary_page_offset",
                        ),
                    ),
                ),
            ),
        ),
    ),
)

_REQUIRED_CHUNK_FIELDS = ("codec", "num_values", "total_compressed_size", "data_page_offset")


def decode_flat_footer(
    buf: bytes | bytearray | memoryview,
    path: str | None = None,
    *,
    decoder: Literal["fastbinary", "python"] = THRIFT_DECODER,
) -> FlatFooter:
    """Decode the leaves of a footer and the chunks of its only row group, and check them.

    Parameters
    ----------
    buf:
        Exactly the FileMetaData bytes (see :class:`FooterBounds`).
    path:
        The file's name, for error messages.
    decoder:
        The thrift decoder: the full decoder's choice by default (``THRIFT_DECODER``).

    Raises
    ------
    ParquetFormatError
        Malformed thrift, a missing required field, a schema that is not a tree, or
        chunks that do not match the leaves.
    EncryptedFileError
        The file or a column is encrypted.
    """
    head = wire.FileMetaData()
    decode_struct(bytes(buf), head, _ARGS, what="footer (FileMetaData)", path=path, decoder=decoder)
    check_unencrypted(head, path)
    require_field(head.version, "FileMetaData.version", path)
    num_rows = require_field(head.num_rows, "FileMetaData.num_rows", path)
    if num_rows < 0:
        raise ParquetFormatError(f"FileMetaData.num_rows is negative: {num_rows}", path=path)
    leaves = _leaves(require_field(head.schema, "FileMetaData.schema", path), path)
    groups = require_field(head.row_groups, "FileMetaData.row_groups", path)
    if len(groups) != 1:
        return FlatFooter(num_rows, len(groups), ())
    chunks = require_field(groups[0].columns, "RowGroup.columns", path, where="row group 0")
    check_chunk_count(chunks, len(leaves), 0, path)
    out = []
    for chunk, (parts, raw_path, physical, required) in zip(chunks, leaves, strict=True):
        md = chunk.meta_data
        # The common case in one test; error texts are built only on failure.
        if (
            chunk.crypto_metadata is not None
            or md is None
            or md.path_in_schema != raw_path
            or md.type != physical
            or md.codec is None
            or md.num_values is None
            or md.num_values < 0
            or md.total_compressed_size is None
            or md.total_compressed_size < 0
            or md.data_page_offset is None
            or md.data_page_offset < 0
        ):
            _refuse_chunk(chunk, parts, path)
        out.append(
            FlatColumn(
                parts,
                physical,
                required,
                md.codec,
                md.num_values,
                md.data_page_offset,
                md.dictionary_page_offset,
                md.total_compressed_size,
            )
        )
    return FlatFooter(num_rows, 1, tuple(out))


def _refuse_chunk(chunk: wire.ColumnChunk, parts: tuple[str, ...], path: str | None) -> NoReturn:
    """Raise the error a column chunk that failed the quick checks deserves."""
    where = f"row group 0, column {'.'.join(parts)!r}"
    if chunk.crypto_metadata is not None:
        raise EncryptedFileError(
            f"encrypted files are not supported (column chunk is encrypted; {where})", path=path
        )
    md = chunk.meta_data
    if md is None:
        raise ParquetFormatError(f"column chunk has no meta_data ({where})", path=path)
    for name in _REQUIRED_CHUNK_FIELDS:
        value = getattr(md, name)
        if value is None:
            raise ParquetFormatError(
                f"required field ColumnMetaData.{name} is missing ({where})", path=path
            )
        if value < 0:
            raise ParquetFormatError(
                f"ColumnMetaData.{name} is negative: {value} ({where})", path=path
            )
    raise ParquetFormatError(
        f"column chunk path or type does not match its schema leaf ({where})", path=path
    )


def _leaves(
    elements: list[wire.SchemaElement], path: str | None
) -> list[tuple[tuple[str, ...], list[bytes], PhysicalType, bool]]:
    """Per leaf: its names, its raw names, its physical type, and whether it is required."""
    if not elements:
        raise ParquetFormatError("the schema is empty (no root element)", path=path)
    root = elements[0]
    if root.type is not None and not root.num_children:
        raise ParquetFormatError("the schema root is a primitive column, not a group", path=path)
    total = len(elements)
    leaves = []
    # One entry per open group: [children left, names, raw names, required so far].
    stack: list[list[Any]] = [[child_count(root, 1, total, path), (), [], True]]
    i = 1
    # Each turn consumes an element or closes a group: at most 2 * len(elements) turns.
    while stack:
        top = stack[-1]
        if top[0] == 0:
            stack.pop()
            continue
        if i >= total:
            raise ParquetFormatError(
                f"schema group {'.'.join(top[1]) or 'root'!r} declares more children than "
                f"the {total} schema elements hold",
                path=path,
            )
        element = elements[i]
        i += 1
        top[0] -= 1
        raw = element.name
        if raw is None:
            raise ParquetFormatError(f"schema element {i - 1} has no name", path=path)
        parts = (*top[1], raw.decode("utf-8", errors="replace"))
        raw_parts = [*top[2], raw]
        repetition = element.repetition_type
        # Absent means REQUIRED, as the full schema decoder takes it.
        if repetition is not None and repetition not in REPETITION_BY_NUMBER:
            raise ParquetFormatError(
                f"schema element {i - 1}: unsupported repetition type {repetition}", path=path
            )
        required = top[3] and not repetition
        ptype = element.type
        if ptype is None or (element.num_children is not None and element.num_children > 0):
            # A group (the rule of schema._is_group: typed elements without children are
            # leaves).
            if len(stack) >= MAX_SCHEMA_DEPTH:
                raise ParquetFormatError(
                    f"schema element {i - 1}: groups nested deeper than {MAX_SCHEMA_DEPTH} levels",
                    path=path,
                )
            count = child_count(element, i, total, path, str(i - 1))
            stack.append([count, parts, raw_parts, required])
            continue
        physical = PHYSICAL_BY_NUMBER.get(ptype)
        if physical is None:
            raise ParquetFormatError(
                f"schema element {i - 1}: unknown physical type {ptype}", path=path
            )
        leaves.append((parts, raw_parts, physical, required))
    if i != total:
        raise ParquetFormatError(
            f"{total - i} schema element(s) follow the root's last child", path=path
        )
    return leaves
