"""Decoding a footer's bytes into the typed model, eagerly or lazily."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from typing import Literal

from . import thrift_specs as wire
from .footer_bytes import FooterBytes
from .metadata import FileMetaData
from .passes import HEAD_PASSES, check_unencrypted
from .scan import schema_span
from .schema import Schema
from .schema_build import schema_from_elements
from .thrift import THRIFT_DECODER, decode_struct, non_negative, require_field


def decode_file_metadata(
    buf: bytes | bytearray | memoryview, path: str | None = None, *, lazy: bool = True
) -> FileMetaData:
    """Decode and validate a thrift compact-protocol FileMetaData.

    Parameters
    ----------
    buf:
        Exactly the FileMetaData bytes (see :class:`FooterBounds`); trailing
        bytes after the struct's end are ignored.
    path:
        The file's name, for error messages.
    lazy:
        With True (the default), the whole footer is checked to be well-formed
        thrift and the schema, row counts and row-group sizes are decoded and
        validated now; the column chunks (all row groups together) and the
        key/value metadata are decoded and validated the first time they are
        read, and the errors below may then come from ``RowGroup.columns`` or
        ``FileMetaData.key_value_metadata``. Nothing is exposed before it has
        been validated. With False everything is decoded now.

    Raises
    ------
    ParquetFormatError
        The bytes are not a valid FileMetaData: truncated, malformed thrift,
        missing required fields, an invalid schema, or column chunks that do
        not match the schema's leaves.
    EncryptedFileError
        The file or one of its columns is encrypted (plaintext-footer mode).
    """
    return decode_file_metadata_with(buf, path, THRIFT_DECODER, lazy=lazy)


def decode_file_metadata_with(
    buf: bytes | bytearray | memoryview,
    path: str | None,
    decoder: Literal["fastbinary", "python"],
    *,
    lazy: bool = False,
    with_chunks: bool = False,
    with_key_values: bool = False,
    share_schemas: bool = True,
) -> FileMetaData:
    """:func:`decode_file_metadata` with the decoder chosen (the tests run both).

    Eager unless ``lazy``. ``with_chunks`` has the first pass read the column chunks
    and the key/value metadata too, for callers about to read them: one pass over the
    footer instead of two. They are validated on first access all the same.
    ``with_key_values`` has it read the key/value metadata alone (the reader: pruning
    reads the chunks it needs with :meth:`FileMetaData.chunks_of`, and a lookup's result
    schema depends on the key/value metadata). With ``share_schemas`` False, the schema is
    decoded and built whatever was decoded before, and not kept (the tests compare).
    """
    data = bytes(buf)
    key = _schema_key(data) if share_schemas else None
    known = None if key is None else _schemas.get(key)
    head = wire.FileMetaData()
    first = HEAD_PASSES[known is None, with_chunks or with_key_values, with_chunks]
    decode_struct(data, head, first, what="footer (FileMetaData)", path=path, decoder=decoder)
    # The decoders only store values of the spec's types, so the checks below
    # see ints, bytes, lists and wire structs, never anything else.
    check_unencrypted(head, path)
    require_field(head.version, "FileMetaData.version", path)
    if known is None:
        elements = require_field(head.schema, "FileMetaData.schema", path)
    non_negative(
        require_field(head.num_rows, "FileMetaData.num_rows", path), "FileMetaData.num_rows", path
    )
    groups = require_field(head.row_groups, "FileMetaData.row_groups", path)
    schema, raw_paths = known if known is not None else _schema(elements, key, path)
    for index, group in enumerate(groups):
        rows = group.num_rows
        if rows is None or rows < 0 or group.total_byte_size is None:
            where = f"row group {index}"
            rows = require_field(rows, "RowGroup.num_rows", path, where=where)
            non_negative(rows, "RowGroup.num_rows", path, where)
            require_field(group.total_byte_size, "RowGroup.total_byte_size", path, where=where)
    source = FooterBytes(data, path, decoder, len(groups), schema.columns)
    if with_chunks or with_key_values:  # that pass read the key/value metadata
        source.keep_key_values(head)
    meta = FileMetaData(source, head, schema, raw_paths, with_chunks)
    return meta if lazy else meta.load()


# ---- schemas shared between footers ----------------------------------------------------
#
# A lake's files mostly share one schema, and building a schema's leaves (their paths,
# levels, logical types, all checked) cost more than the rest of a small footer. So
# schemas are kept by the footer's bytes of them (FileMetaData's ``schema`` list, found by
# the C footer scanner without decoding it): a footer whose schema bytes are an earlier
# one's gets the same Schema (read-only), and its first pass does not decode them again.
# The Schema's ``fingerprint`` (a number given once per schema built) keys the caches of
# what depends on the schema alone.

#: Schemas kept; beyond, the cache starts again (a run over files of this many distinct
#: schemas is rare, and rebuilding costs only what it saved).
MAX_SCHEMAS = 256
_schemas: dict[bytes, tuple[Schema, list[list[bytes]]]] = {}
_schemas_lock = threading.Lock()
_fingerprints = itertools.count(1)


def _schema_key(data: bytes) -> bytes | None:
    """The footer's schema bytes, or None where the scanner finds none (the decoder then
    says what is wrong, or builds the schema without keeping it)."""
    span = schema_span(data)
    if span is None:
        return None
    start, length = span
    return data[start : start + length]


def _schema(
    elements: Sequence[wire.SchemaElement], key: bytes | None, path: str | None
) -> tuple[Schema, list[list[bytes]]]:
    """The footer's schema (checked), kept under its bytes ``key`` when there is one."""
    found = schema_from_elements(elements, path)
    found[0].fingerprint = next(_fingerprints)
    if key is not None:
        with _schemas_lock:
            if len(_schemas) >= MAX_SCHEMAS:
                _schemas.clear()
            _schemas[key] = found
    return found
