"""Locate and decode a Parquet footer (pure functions over bytes; no I/O).

A Parquet file ends with ``<FileMetaData> <4-byte little-endian length> PAR1``
and starts with ``PAR1``. The async reader fetches a suffix of the file and
calls :func:`parse_footer_tail` to find the FileMetaData; when the suffix does
not reach back far enough, :meth:`FooterLocation.missing_range` says which
bytes to fetch. :func:`decode_file_metadata` then turns the thrift
compact-protocol bytes into immutable, typed objects.

Every byte here is untrusted. The thrift decoder is given limits derived from
the footer's own size (a list cannot hold more elements, nor a string more
bytes, than the footer has), its own nesting-depth limit keeps deep structures
from exhausting the stack, and every exception it raises becomes a
:class:`~pybloom_async.errors.ParquetFormatError` naming the file.
"""

from __future__ import annotations

import enum
import importlib.metadata
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from thrift.protocol.TCompactProtocol import TCompactProtocol
from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TException
from thrift.transport.TTransport import TMemoryBuffer

from ..errors import EncryptedFileError, InvalidArgumentError, ParquetFormatError, PyBloomError
from ..types import PhysicalType
from . import thrift_specs as wire
from .schema import ColumnDescriptor, Schema, build_schema

__all__ = [
    "ENCRYPTED_MAGIC",
    "MAGIC",
    "MIN_FILE_SIZE",
    "THRIFT_DECODER",
    "TRAILER_SIZE",
    "ColumnChunk",
    "CompressionCodec",
    "Encoding",
    "FileMetaData",
    "FooterLocation",
    "KeyValue",
    "PageEncodingStats",
    "PageType",
    "RowGroup",
    "Statistics",
    "check_leading_magic",
    "decode_file_metadata",
    "parse_footer_tail",
]

MAGIC = b"PAR1"
#: Trailing magic of files whose footer is encrypted (Parquet modular encryption).
ENCRYPTED_MAGIC = b"PARE"
#: The footer length (4 bytes) and the trailing magic (4 bytes).
TRAILER_SIZE = 8
#: Leading magic + trailer; a footer needs at least one byte more.
MIN_FILE_SIZE = len(MAGIC) + TRAILER_SIZE


def _pick_decoder() -> Literal["fastbinary", "python"]:
    """Use thrift's C decoder only where it is safe on hostile input.

    Measured here with crafted footers: before thrift 0.25 the C extension's
    ``skip`` of an unknown field recurses without a depth limit, and about
    100 000 nested list or struct headers (100 KB of footer) overflow the stack
    and kill the process with SIGSEGV (0.20 to 0.24); those versions also
    pre-allocate a list of the claimed length. 0.25 stops at depth 64 and
    grows lists as it reads. Older versions fall back to the pure-Python
    protocol, which checks depth in Python.
    """
    try:
        from thrift.protocol import fastbinary  # noqa: F401
    except ImportError:
        return "python"
    try:
        version = importlib.metadata.version("thrift")
    except importlib.metadata.PackageNotFoundError:
        return "python"
    numbers = []
    for piece in version.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        numbers.append(int(digits) if digits else 0)
    return "fastbinary" if tuple(numbers) >= (0, 25) else "python"


#: Which thrift decoder :func:`decode_file_metadata` uses: ``"fastbinary"``
#: (thrift's C extension, thrift >= 0.25) or ``"python"`` (pure Python, slower).
THRIFT_DECODER: Literal["fastbinary", "python"] = _pick_decoder()


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


# Known values become enum members; values from newer writers stay plain ints
# rather than failing the whole footer. Dict lookups: Enum(value) costs a
# Python call, and a footer can hold millions of these.
_ENCODINGS: dict[int, int] = {m.value: m for m in Encoding}
_CODECS: dict[int, int] = {m.value: m for m in CompressionCodec}
_PAGE_TYPES: dict[int, int] = {m.value: m for m in PageType}


@dataclass(frozen=True, slots=True)
class FooterLocation:
    """Where the FileMetaData lies in a file, from the file's last 8 bytes.

    ``metadata_offset`` and ``metadata_length`` are absolute: the thrift bytes
    are ``file[metadata_offset : metadata_offset + metadata_length]``, which
    always ends 8 bytes before ``file_size``.
    """

    file_size: int
    metadata_offset: int
    metadata_length: int
    leading_magic_checked: bool

    @property
    def metadata_end(self) -> int:
        """Absolute offset one past the FileMetaData (where the 4-byte length starts)."""
        return self.metadata_offset + self.metadata_length

    def missing_range(self, tail_length: int) -> tuple[int, int] | None:
        """The absolute ``(start, end)`` still needed when the last ``tail_length`` bytes are held.

        Returns ``None`` when that suffix already covers the FileMetaData.
        Fetch the range and pass ``fetched + tail`` to :meth:`metadata_bytes`.
        """
        tail_start = self.file_size - tail_length
        if tail_start <= self.metadata_offset:
            return None
        return (self.metadata_offset, tail_start)

    def metadata_bytes(self, tail: bytes | bytearray | memoryview) -> memoryview:
        """Slice the FileMetaData out of a suffix of the file.

        Parameters
        ----------
        tail:
            The file's last ``len(tail)`` bytes; it must reach back to
            ``metadata_offset`` (see :meth:`missing_range`).

        Raises
        ------
        InvalidArgumentError
            ``tail`` is longer than the file or does not cover the FileMetaData.
        """
        view = memoryview(tail).cast("B")
        if len(view) > self.file_size:
            raise InvalidArgumentError(
                f"tail of {len(view)} bytes is longer than the {self.file_size}-byte file"
            )
        start = self.metadata_offset - (self.file_size - len(view))
        if start < 0:
            raise InvalidArgumentError(
                f"tail of {len(view)} bytes does not reach the footer at offset "
                f"{self.metadata_offset}; fetch missing_range() first"
            )
        return view[start : start + self.metadata_length]


def parse_footer_tail(
    tail: bytes | bytearray | memoryview, file_size: int, *, path: str | None = None
) -> FooterLocation:
    """Validate a file's trailer and locate its FileMetaData.

    Parameters
    ----------
    tail:
        The last ``len(tail)`` bytes of the file: at least 8 (or the whole
        file). When it is the whole file the leading ``PAR1`` is checked too;
        otherwise call :func:`check_leading_magic` if the first bytes are read.
    file_size:
        The file's size in bytes.
    path:
        The file's name, for error messages.

    Raises
    ------
    ParquetFormatError
        The file is too small, a magic number is wrong, or the footer length
        points outside the file.
    EncryptedFileError
        The file ends with ``PARE`` (encrypted footer).
    InvalidArgumentError
        ``tail`` is longer than ``file_size``, or shorter than 8 bytes.
    """
    view = memoryview(tail).cast("B")
    if file_size < 0 or len(view) > file_size:
        raise InvalidArgumentError(
            f"tail of {len(view)} bytes does not fit a file of {file_size} bytes"
        )
    if file_size <= MIN_FILE_SIZE:
        raise ParquetFormatError(
            f"file is {file_size} bytes, too small for Parquet (at least {MIN_FILE_SIZE + 1})",
            path=path,
        )
    if len(view) < TRAILER_SIZE:
        raise InvalidArgumentError(f"need the file's last {TRAILER_SIZE} bytes, got {len(view)}")
    magic = bytes(view[-4:])
    if magic == ENCRYPTED_MAGIC:
        raise EncryptedFileError(
            "encrypted files are not supported (the footer is encrypted: trailing magic PARE)",
            path=path,
        )
    if magic != MAGIC:
        raise ParquetFormatError(
            f"not a Parquet file: trailing magic is {magic!r}, expected {MAGIC!r}", path=path
        )
    (length,) = struct.unpack("<I", view[-8:-4])
    # The FileMetaData sits between the leading magic and the trailer.
    room = file_size - MIN_FILE_SIZE
    if length == 0:
        raise ParquetFormatError("footer length is 0", path=path)
    if length > room:
        raise ParquetFormatError(
            f"footer length {length} exceeds the {room} bytes between the magic numbers",
            path=path,
        )
    checked = False
    if len(view) == file_size:
        check_leading_magic(view[:4], path=path)
        checked = True
    return FooterLocation(
        file_size=file_size,
        metadata_offset=file_size - TRAILER_SIZE - length,
        metadata_length=length,
        leading_magic_checked=checked,
    )


def check_leading_magic(head: bytes | bytearray | memoryview, *, path: str | None = None) -> None:
    """Check that a file starts with ``PAR1``.

    Parameters
    ----------
    head:
        At least the file's first 4 bytes.

    Raises
    ------
    EncryptedFileError
        The file starts with ``PARE`` (encrypted footer).
    ParquetFormatError
        Any other start, or fewer than 4 bytes.
    """
    first = bytes(memoryview(head).cast("B")[:4])
    if first == ENCRYPTED_MAGIC:
        raise EncryptedFileError(
            "encrypted files are not supported (leading magic PARE)", path=path
        )
    if first != MAGIC:
        raise ParquetFormatError(
            f"not a Parquet file: leading magic is {first!r}, expected {MAGIC!r}", path=path
        )


@dataclass(frozen=True, slots=True)
class Statistics:
    """Column chunk statistics; ``min_value``/``max_value`` hold PLAIN-encoded bytes.

    ``min``/``max`` are the deprecated fields (signed order only); prefer the
    ``*_value`` fields, whose order is the column's.
    """

    min_value: bytes | None = None
    max_value: bytes | None = None
    null_count: int | None = None
    distinct_count: int | None = None
    is_min_value_exact: bool | None = None
    is_max_value_exact: bool | None = None
    nan_count: int | None = None
    min: bytes | None = None
    max: bytes | None = None


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


@dataclass(frozen=True, slots=True)
class ColumnChunk:
    """One column of one row group, with what the planner needs to fetch its filter.

    ``bloom_filter_offset``/``bloom_filter_length`` are passed through as found
    (``None`` when absent); the planner range-checks them.
    """

    row_group: int
    column: ColumnDescriptor
    codec: int  # a CompressionCodec member, or the raw number if unknown
    num_values: int
    encodings: tuple[int, ...]  # Encoding members (raw numbers if unknown)
    data_page_offset: int
    dictionary_page_offset: int | None
    index_page_offset: int | None
    total_compressed_size: int
    total_uncompressed_size: int
    statistics: Statistics | None
    encoding_stats: tuple[PageEncodingStats, ...] | None
    bloom_filter_offset: int | None
    bloom_filter_length: int | None
    file_path: str | None
    file_offset: int

    @property
    def path(self) -> str:
        """The column's dotted path."""
        return self.column.path

    @property
    def physical_type(self) -> PhysicalType:
        """The column's physical type."""
        return self.column.physical_type

    @property
    def has_bloom_filter(self) -> bool:
        """Whether the writer recorded a Bloom filter for this chunk."""
        return self.bloom_filter_offset is not None


@dataclass(frozen=True, slots=True)
class RowGroup:
    """One row group: its size and its column chunks in schema-leaf order."""

    index: int
    num_rows: int
    total_byte_size: int
    columns: tuple[ColumnChunk, ...]
    file_offset: int | None = None
    total_compressed_size: int | None = None
    ordinal: int | None = None


@dataclass(frozen=True, slots=True)
class FileMetaData:
    """The decoded footer of one Parquet file."""

    version: int
    num_rows: int
    schema: Schema
    row_groups: tuple[RowGroup, ...]
    created_by: str | None
    key_value_metadata: tuple[KeyValue, ...] | None
    metadata_length: int

    def column_chunks(self, path: str | Sequence[str]) -> tuple[ColumnChunk, ...]:
        """The chunks of one column, one per row group.

        Raises
        ------
        PredicateError
            No such column, or the dotted path is ambiguous.
        """
        index = self.schema.column(path).index
        return tuple(rg.columns[index] for rg in self.row_groups)


class _PythonCompactProtocol(TCompactProtocol):  # type: ignore[misc]  # untyped base
    """The pure-Python compact protocol, made as strict as the C decoder.

    Two differences from thrift's class: skipping an unknown string field
    returns its bytes instead of decoding them as UTF-8 (binary fields such as
    ``encrypted_column_metadata`` are not UTF-8), and a list whose wire element
    type differs from the spec is an error instead of being misread.
    """

    def readString(self) -> Any:
        return self.readBinary()

    def readContainerList(self, spec: Any) -> list[Any]:
        ttype, element_spec, _ = spec
        wire_type, size = self.readListBegin()
        if size and wire_type != ttype:
            raise TProtocolException(
                TProtocolException.INVALID_DATA,
                f"list elements have type {wire_type}, expected {ttype}",
            )
        read = self._read_by_ttype(ttype, spec, element_spec)
        items = [next(read) for _ in range(size)]
        self.readListEnd()
        return items


def _limits_for(length: int) -> int:
    # In the compact protocol every list element and every string byte takes at
    # least one byte of input, so no honest length exceeds the buffer's size.
    return max(length, 1)


def _decode_thrift(
    data: bytes,
    obj: wire.FileMetaData,
    *,
    what: str,
    path: str | None,
    decoder: Literal["fastbinary", "python"],
) -> None:
    """Fill ``obj`` from compact-protocol ``data``; any failure becomes ParquetFormatError."""
    limit = _limits_for(len(data))
    transport = TMemoryBuffer(data)
    try:
        if decoder == "fastbinary":
            from thrift.protocol import fastbinary

            protocol: Any = TCompactProtocol(
                transport, string_length_limit=limit, container_length_limit=limit
            )
            fastbinary.decode_compact(obj, protocol, [type(obj), type(obj).thrift_spec])
        else:
            protocol = _PythonCompactProtocol(
                transport, string_length_limit=limit, container_length_limit=limit
            )
            protocol.readStruct(obj, type(obj).thrift_spec)
    except PyBloomError:
        raise
    except Exception as exc:  # every decoder failure, whatever its type, is a format error
        raise ParquetFormatError(f"malformed {what}: {_describe(exc)}", path=path) from exc


def _describe(exc: BaseException) -> str:
    text = str(exc)
    if isinstance(exc, EOFError):
        return "it ends in the middle of a value (truncated?)"
    if isinstance(exc, TException) and "depth" in text.lower():
        return "structures are nested too deeply"
    if isinstance(exc, RecursionError):
        return "structures are nested too deeply"
    if "limit" in text or "Length exceeded" in text:
        return "a list or string claims more elements than the footer has bytes"
    if isinstance(exc, MemoryError):
        return "it claims a size too large to allocate"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def decode_file_metadata(
    buf: bytes | bytearray | memoryview, path: str | None = None
) -> FileMetaData:
    """Decode and validate a thrift compact-protocol FileMetaData.

    Parameters
    ----------
    buf:
        Exactly the FileMetaData bytes (see :class:`FooterLocation`); trailing
        bytes after the struct's end are ignored.
    path:
        The file's name, for error messages.

    Raises
    ------
    ParquetFormatError
        The bytes are not a valid FileMetaData: truncated, malformed thrift,
        missing required fields, an invalid schema, or column chunks that do
        not match the schema's leaves.
    EncryptedFileError
        The file or one of its columns is encrypted (plaintext-footer mode).
    """
    return _decode_file_metadata(buf, path, THRIFT_DECODER)


def _decode_file_metadata(
    buf: bytes | bytearray | memoryview,
    path: str | None,
    decoder: Literal["fastbinary", "python"],
) -> FileMetaData:
    # Split out so the tests can run both decoders on the same input.
    data = bytes(buf)
    raw = wire.FileMetaData()
    _decode_thrift(data, raw, what="footer (FileMetaData)", path=path, decoder=decoder)
    # The decoders only store values of the spec's types, so the checks below
    # see ints, bytes, lists and wire structs, never anything else.
    return _convert(raw, len(data), path)


def _need(value: Any, name: str, path: str | None, *, where: str = "") -> Any:
    if value is None:
        place = f" ({where})" if where else ""
        raise ParquetFormatError(f"required field {name} is missing{place}", path=path)
    return value


def _non_negative(value: int, name: str, path: str | None, where: str = "") -> int:
    if value < 0:
        place = f" ({where})" if where else ""
        raise ParquetFormatError(f"{name} is negative: {value}{place}", path=path)
    return value


def _text(raw: bytes | None) -> str | None:
    # created_by and key names are informational: a bad byte must not make
    # the file unreadable, so it becomes U+FFFD.
    return None if raw is None else raw.decode("utf-8", errors="replace")


def _convert(raw: wire.FileMetaData, length: int, path: str | None) -> FileMetaData:
    if raw.encryption_algorithm is not None:
        raise EncryptedFileError(
            "encrypted files are not supported (plaintext footer with encrypted columns)",
            path=path,
        )
    version = _need(raw.version, "FileMetaData.version", path)
    elements = _need(raw.schema, "FileMetaData.schema", path)
    num_rows = _non_negative(
        _need(raw.num_rows, "FileMetaData.num_rows", path), "FileMetaData.num_rows", path
    )
    raw_groups = _need(raw.row_groups, "FileMetaData.row_groups", path)
    schema = build_schema(elements, path=path)
    encodings_seen: dict[tuple[int, ...], tuple[int, ...]] = {}
    groups = tuple(
        _row_group(index, group, schema, path, encodings_seen)
        for index, group in enumerate(raw_groups)
    )
    kv: tuple[KeyValue, ...] | None = None
    if raw.key_value_metadata is not None:
        kv = tuple(
            KeyValue(key=_text(_need(item.key, "KeyValue.key", path)) or "", value=item.value)
            for item in raw.key_value_metadata
        )
    return FileMetaData(
        version=version,
        num_rows=num_rows,
        schema=schema,
        row_groups=groups,
        created_by=_text(raw.created_by),
        key_value_metadata=kv,
        metadata_length=length,
    )


def _row_group(
    index: int,
    raw: wire.RowGroup,
    schema: Schema,
    path: str | None,
    encodings_seen: dict[tuple[int, ...], tuple[int, ...]],
) -> RowGroup:
    where = f"row group {index}"
    chunks = _need(raw.columns, "RowGroup.columns", path, where=where)
    if len(chunks) != len(schema.columns):
        raise ParquetFormatError(
            f"row group {index} has {len(chunks)} column chunks but the schema has "
            f"{len(schema.columns)} leaf columns",
            path=path,
        )
    return RowGroup(
        index=index,
        num_rows=_non_negative(
            _need(raw.num_rows, "RowGroup.num_rows", path, where=where),
            "RowGroup.num_rows",
            path,
            where,
        ),
        total_byte_size=_need(raw.total_byte_size, "RowGroup.total_byte_size", path, where=where),
        columns=tuple(
            _column_chunk(index, chunk, column, path, encodings_seen)
            for chunk, column in zip(chunks, schema.columns, strict=True)
        ),
        file_offset=raw.file_offset,
        total_compressed_size=raw.total_compressed_size,
        ordinal=raw.ordinal,
    )


_CHUNK_REQUIRED = (
    "type",
    "encodings",
    "path_in_schema",
    "codec",
    "num_values",
    "total_uncompressed_size",
    "total_compressed_size",
    "data_page_offset",
)


def _column_chunk(
    group: int,
    raw: wire.ColumnChunk,
    column: ColumnDescriptor,
    path: str | None,
    encodings_seen: dict[tuple[int, ...], tuple[int, ...]],
) -> ColumnChunk:
    # Error texts are built only on failure: this runs once per column chunk.
    if raw.crypto_metadata is not None:
        raise EncryptedFileError(
            "encrypted files are not supported (column chunk is encrypted; "
            f"{_place(group, column)})",
            path=path,
        )
    md = raw.meta_data
    if md is None:
        raise ParquetFormatError(
            f"column chunk has no meta_data ({_place(group, column)})", path=path
        )
    for name in _CHUNK_REQUIRED:
        if getattr(md, name) is None:
            raise ParquetFormatError(
                f"required field ColumnMetaData.{name} is missing ({_place(group, column)})",
                path=path,
            )
    # Columns are matched to schema leaves by position (parquet.thrift: "This
    # list must have the same order as the SchemaElement list"); the path and
    # type recorded in the chunk must agree with the leaf at that position.
    recorded = tuple(n.decode("utf-8", errors="replace") for n in md.path_in_schema or ())
    if recorded != column.path_parts:
        raise ParquetFormatError(
            f"column chunk path {'.'.join(recorded)!r} does not match schema leaf "
            f"{column.index} ({_place(group, column)})",
            path=path,
        )
    if md.type != column.physical_type:
        raise ParquetFormatError(
            f"column chunk type {md.type} does not match the schema's "
            f"{column.physical_type.name} ({_place(group, column)})",
            path=path,
        )
    if (md.num_values or 0) < 0:
        raise ParquetFormatError(
            f"ColumnMetaData.num_values is negative: {md.num_values} ({_place(group, column)})",
            path=path,
        )
    # Chunks of one column usually share one encodings list: keep one tuple.
    key = tuple(md.encodings or ())
    encodings = encodings_seen.get(key)
    if encodings is None:
        encodings = encodings_seen[key] = tuple(_ENCODINGS.get(e, e) for e in key)
    stats = md.statistics
    # The "or 0"s only narrow the types: _CHUNK_REQUIRED was checked above.
    return ColumnChunk(
        row_group=group,
        column=column,
        codec=_CODECS.get(md.codec or 0, md.codec or 0),
        num_values=md.num_values or 0,
        encodings=encodings,
        data_page_offset=md.data_page_offset or 0,
        dictionary_page_offset=md.dictionary_page_offset,
        index_page_offset=md.index_page_offset,
        total_compressed_size=md.total_compressed_size or 0,
        total_uncompressed_size=md.total_uncompressed_size or 0,
        statistics=None
        if stats is None
        else Statistics(
            min_value=stats.min_value,
            max_value=stats.max_value,
            null_count=stats.null_count,
            distinct_count=stats.distinct_count,
            is_min_value_exact=stats.is_min_value_exact,
            is_max_value_exact=stats.is_max_value_exact,
            nan_count=stats.nan_count,
            min=stats.min,
            max=stats.max,
        ),
        encoding_stats=None
        if md.encoding_stats is None
        else tuple(_page_stats(s, group, column, path) for s in md.encoding_stats),
        bloom_filter_offset=md.bloom_filter_offset,
        bloom_filter_length=md.bloom_filter_length,
        file_path=_text(raw.file_path),
        # parquet.thrift gives file_offset a default of 0; some writers omit it.
        file_offset=raw.file_offset if raw.file_offset is not None else 0,
    )


def _page_stats(
    raw: wire.PageEncodingStats, group: int, column: ColumnDescriptor, path: str | None
) -> PageEncodingStats:
    if raw.page_type is None or raw.encoding is None or raw.count is None:
        missing = (
            "page_type"
            if raw.page_type is None
            else ("encoding" if raw.encoding is None else "count")
        )
        raise ParquetFormatError(
            f"required field PageEncodingStats.{missing} is missing ({_place(group, column)})",
            path=path,
        )
    return PageEncodingStats(
        page_type=_PAGE_TYPES.get(raw.page_type, raw.page_type),
        encoding=_ENCODINGS.get(raw.encoding, raw.encoding),
        count=raw.count,
    )


def _place(group: int, column: ColumnDescriptor) -> str:
    return f"row group {group}, column {column.path!r}"
