"""Locate and decode a Parquet footer (pure functions over bytes; no I/O).

A Parquet file ends with ``<FileMetaData> <4-byte little-endian length> PAR1``
and starts with ``PAR1``. The async reader fetches a suffix of the file and
calls :func:`parse_footer_tail` to find the FileMetaData; when the suffix does
not reach back far enough, :meth:`FooterLocation.missing_range` says which
bytes to fetch. :func:`decode_file_metadata` then turns the thrift
compact-protocol bytes into immutable, typed objects: the schema, row counts
and row-group sizes at once, the column chunks and key/value metadata when
first read (each a further pass of the C decoder over the same bytes, reading
only its part). Building Python objects is what a decode costs, so a footer
read for its filter offsets pays for the chunks once, and one read to list its
columns never does.

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
from types import SimpleNamespace
from typing import Any, Literal

from thrift.protocol.TCompactProtocol import TCompactProtocol
from thrift.protocol.TProtocol import TProtocolException
from thrift.Thrift import TException, TType
from thrift.transport.TTransport import TMemoryBuffer

from ..errors import EncryptedFileError, InvalidArgumentError, ParquetFormatError, PyBloomError
from ..types import PhysicalType
from . import thrift_specs as wire
from .schema import ColumnDescriptor, Schema, _build_schema

try:
    from thrift.protocol import fastbinary as _fastbinary
except ImportError:  # pragma: no cover - thrift built without its C extension
    _fastbinary = None

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


class ColumnChunk:
    """One column of one row group, with what the planner needs to fetch its filter.

    ``bloom_filter_offset``/``bloom_filter_length`` are passed through as found
    (``None`` when absent); the planner range-checks them. Read-only: every
    attribute comes from the decoded footer and was validated before this
    object was made. The attributes pruning does not need (codec, encodings,
    page offsets and sizes, encoding statistics, file path and offset) are
    decoded for all chunks of the file the first time one of them is read.
    """

    __slots__ = ("_column", "_md", "_row_group", "_source")

    def __init__(
        self, row_group: int, column: ColumnDescriptor, md: wire.ColumnMetaData, source: _Source
    ) -> None:
        self._row_group = row_group
        self._column = column
        self._md = md
        self._source = source

    @property
    def row_group(self) -> int:
        """Index of the chunk's row group."""
        return self._row_group

    @property
    def column(self) -> ColumnDescriptor:
        """The schema leaf this chunk holds."""
        return self._column

    @property
    def path(self) -> str:
        """The column's dotted path."""
        return self._column.path

    @property
    def physical_type(self) -> PhysicalType:
        """The column's physical type."""
        return self._column.physical_type

    @property
    def num_values(self) -> int:
        """Values in the chunk, nulls included."""
        return self._md.num_values  # type: ignore[return-value]  # checked at decode

    @property
    def statistics(self) -> Statistics | None:
        """Min/max and null counts, if the writer recorded them."""
        return self._md.statistics  # built as the Statistics class here (_CHUNKS_PASS)

    @property
    def bloom_filter_offset(self) -> int | None:
        """Where the chunk's Bloom filter starts, as found (unchecked; see the planner)."""
        return self._md.bloom_filter_offset

    @property
    def bloom_filter_length(self) -> int | None:
        """Header + bitset bytes of the filter, as found (unchecked), when recorded."""
        return self._md.bloom_filter_length

    @property
    def has_bloom_filter(self) -> bool:
        """Whether the writer recorded a Bloom filter for this chunk."""
        return self._md.bloom_filter_offset is not None

    # ---- details, decoded on first use (see _Source.details)

    def _details(self) -> wire.ColumnChunk:
        return self._source.details()[self._row_group][self._column.index]

    def _details_md(self) -> wire.ColumnMetaData:
        md = self._details().meta_data
        assert md is not None  # checked when the details were decoded
        return md

    @property
    def codec(self) -> int:
        """A CompressionCodec member, or the raw number if unknown."""
        codec: int = self._details_md().codec  # type: ignore[assignment]  # checked
        return _CODECS.get(codec, codec)

    @property
    def encodings(self) -> tuple[int, ...]:
        """Encoding members (raw numbers if unknown)."""
        return tuple(_ENCODINGS.get(e, e) for e in self._details_md().encodings or ())

    @property
    def data_page_offset(self) -> int:
        """Offset of the chunk's first data page."""
        return self._details_md().data_page_offset  # type: ignore[return-value]  # checked

    @property
    def dictionary_page_offset(self) -> int | None:
        """Offset of the dictionary page, if any."""
        return self._details_md().dictionary_page_offset

    @property
    def index_page_offset(self) -> int | None:
        """Offset of the index page (no writer uses it), if any."""
        return self._details_md().index_page_offset

    @property
    def total_compressed_size(self) -> int:
        """Bytes of the chunk's pages as stored."""
        return self._details_md().total_compressed_size  # type: ignore[return-value]  # checked

    @property
    def total_uncompressed_size(self) -> int:
        """Bytes of the chunk's pages uncompressed."""
        return self._details_md().total_uncompressed_size  # type: ignore[return-value]  # checked

    @property
    def encoding_stats(self) -> tuple[PageEncodingStats, ...] | None:
        """Page counts per page type and encoding, if recorded."""
        raw = self._details_md().encoding_stats
        if raw is None:
            return None
        # Each entry's fields were checked when the details were decoded.
        return tuple(
            PageEncodingStats(
                page_type=_PAGE_TYPES.get(s.page_type, s.page_type),  # type: ignore[arg-type]
                encoding=_ENCODINGS.get(s.encoding, s.encoding),  # type: ignore[arg-type]
                count=s.count,  # type: ignore[arg-type]
            )
            for s in raw
        )

    @property
    def file_path(self) -> str | None:
        """The file holding the chunk's data when not this one (rare)."""
        return _text(self._details().file_path)

    @property
    def file_offset(self) -> int:
        """The deprecated ``file_offset`` (0 when the writer omitted it)."""
        # parquet.thrift gives file_offset a default of 0; some writers omit it.
        offset = self._details().file_offset
        return offset if offset is not None else 0

    def __repr__(self) -> str:
        return (
            f"ColumnChunk(row_group={self._row_group}, path={self.path!r}, "
            f"physical_type={self.physical_type.name}, num_values={self.num_values}, "
            f"bloom_filter_offset={self.bloom_filter_offset}, "
            f"bloom_filter_length={self.bloom_filter_length})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ColumnChunk):
            return NotImplemented
        return (
            self._row_group == other._row_group
            and self._column == other._column
            and self._source.data == other._source.data
        )

    def __hash__(self) -> int:
        return hash((self._row_group, self._column.index, self._source.data))


class RowGroup:
    """One row group: its size and its column chunks in schema-leaf order.

    The column chunks of all row groups are decoded and validated together, the
    first time any row group's :attr:`columns` is read (see
    :func:`decode_file_metadata`).
    """

    __slots__ = ("_chunks", "_head", "_index")

    def __init__(self, index: int, head: wire.RowGroup, chunks: _Chunks) -> None:
        self._index = index
        self._head = head
        self._chunks = chunks

    @property
    def index(self) -> int:
        """Position of the row group in the file."""
        return self._index

    @property
    def num_rows(self) -> int:
        """Rows in the row group."""
        return self._head.num_rows  # type: ignore[return-value]  # checked at decode

    @property
    def total_byte_size(self) -> int:
        """Uncompressed bytes of the row group's data, as the writer recorded."""
        return self._head.total_byte_size  # type: ignore[return-value]  # checked at decode

    @property
    def file_offset(self) -> int | None:
        """Offset of the row group's first page, if recorded."""
        return self._head.file_offset

    @property
    def total_compressed_size(self) -> int | None:
        """Stored bytes of the row group, if recorded."""
        return self._head.total_compressed_size

    @property
    def ordinal(self) -> int | None:
        """The writer's ordinal of the row group, if recorded."""
        return self._head.ordinal

    @property
    def columns(self) -> tuple[ColumnChunk, ...]:
        """The column chunks, one per schema leaf, in leaf order.

        Raises
        ------
        ParquetFormatError, EncryptedFileError
            The footer's column chunks are invalid (found on first access).
        """
        return self._chunks.get()[self._index]

    def __repr__(self) -> str:
        return (
            f"RowGroup(index={self._index}, num_rows={self.num_rows}, "
            f"total_byte_size={self.total_byte_size})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RowGroup):
            return NotImplemented
        return self._index == other._index and self._chunks.source.data == other._chunks.source.data

    def __hash__(self) -> int:
        return hash((self._index, self._chunks.source.data))


class FileMetaData:
    """The decoded footer of one Parquet file.

    The schema, row counts and row-group sizes are decoded and validated by
    :func:`decode_file_metadata`; the column chunks and the key/value metadata
    on first access, unless it was called with ``lazy=False``. Read-only; equal
    when decoded from equal bytes.
    """

    __slots__ = (
        "_chunks",
        "_created_by",
        "_num_rows",
        "_row_groups",
        "_schema",
        "_source",
        "_version",
    )

    def __init__(
        self,
        source: _Source,
        head: wire.FileMetaData,
        schema: Schema,
        raw_paths: list[list[bytes]],
        with_chunks: bool,
    ) -> None:
        self._source = source
        self._version: int = head.version  # type: ignore[assignment]  # checked by the caller
        self._num_rows: int = head.num_rows  # type: ignore[assignment]  # checked by the caller
        self._schema = schema
        self._created_by = _text(head.created_by)
        raw = head.row_groups if with_chunks else None
        chunks = self._chunks = _Chunks(source, schema, raw_paths, raw)
        self._row_groups = tuple(
            RowGroup(index, group, chunks) for index, group in enumerate(head.row_groups or ())
        )

    @property
    def version(self) -> int:
        """The format version the writer recorded."""
        return self._version

    @property
    def num_rows(self) -> int:
        """Rows in the file."""
        return self._num_rows

    @property
    def schema(self) -> Schema:
        """The schema tree and its leaf columns."""
        return self._schema

    @property
    def row_groups(self) -> tuple[RowGroup, ...]:
        """The row groups, in file order."""
        return self._row_groups

    @property
    def created_by(self) -> str | None:
        """The writer's name and version, if recorded."""
        return self._created_by

    @property
    def metadata_length(self) -> int:
        """Size of the thrift-encoded FileMetaData in bytes."""
        return len(self._source.data)

    @property
    def key_value_metadata(self) -> tuple[KeyValue, ...] | None:
        """The file's key/value metadata, if any (decoded on first access).

        Raises
        ------
        ParquetFormatError
            An entry has no key, or the list is malformed.
        """
        return self._source.key_values()

    def column_chunks(self, path: str | Sequence[str]) -> tuple[ColumnChunk, ...]:
        """The chunks of one column, one per row group.

        Raises
        ------
        PredicateError
            No such column, or the dotted path is ambiguous.
        ParquetFormatError, EncryptedFileError
            The footer's column chunks are invalid (found on first access).
        """
        index = self.schema.column(path).index
        return tuple(group[index] for group in self._chunks.get())

    def load(self) -> FileMetaData:
        """Decode and validate every part still pending; returns ``self``.

        Raises
        ------
        ParquetFormatError, EncryptedFileError
            As :func:`decode_file_metadata` with ``lazy=False``.
        """
        self._chunks.get()
        self._source.details()
        self._source.key_values()
        return self

    def __repr__(self) -> str:
        return (
            f"FileMetaData(num_rows={self._num_rows}, row_groups={len(self._row_groups)}, "
            f"columns={len(self._schema.columns)}, created_by={self._created_by!r})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FileMetaData):
            return NotImplemented
        return self._source.data == other._source.data

    def __hash__(self) -> int:
        return hash(self._source.data)


# The lazily decoded parts hang off two helpers that hold no reference back to
# the objects that use them: a footer is then freed by reference counting, not
# left in a cycle for the garbage collector (thousands of footers a second in
# a bulk prune). Two threads reading the same part for the first time both
# decode it from the same bytes and either equal result stays; no lock (a lock
# would also make footers unpicklable).


class _Source:
    """A footer's bytes; decodes the column-chunk details and key/value metadata on demand."""

    __slots__ = ("_details", "_key_values", "columns", "data", "decoder", "num_groups", "path")

    def __init__(
        self,
        data: bytes,
        path: str | None,
        decoder: Literal["fastbinary", "python"],
        num_groups: int,
        columns: tuple[ColumnDescriptor, ...],
    ) -> None:
        self.data = data
        self.path = path
        self.decoder: Literal["fastbinary", "python"] = decoder
        self.num_groups = num_groups
        self.columns = columns
        self._details: tuple[list[wire.ColumnChunk], ...] | None = None
        self._key_values: tuple[KeyValue, ...] | _Unset | None = _UNSET

    def decode(self, args: list[Any]) -> wire.FileMetaData:
        """One pass of the decoder over the footer, reading what ``args`` name."""
        raw = wire.FileMetaData()
        _decode_thrift(
            self.data, raw, args, what="footer (FileMetaData)", path=self.path, decoder=self.decoder
        )
        return raw

    def groups(self, raw: wire.FileMetaData) -> list[wire.RowGroup]:
        """The row groups of a later pass, checked against the first pass's count."""
        groups = raw.row_groups or []
        if len(groups) != self.num_groups:  # the same list read again: cannot differ
            raise ParquetFormatError(
                f"the footer's row groups changed between reads ({len(groups)} vs "
                f"{self.num_groups})",
                path=self.path,
            )
        return groups

    def details(self) -> tuple[list[wire.ColumnChunk], ...]:
        """Per row group, per column: the chunk fields pruning does not use, validated."""
        found = self._details
        if found is None:
            found = self._details = self._decode_details()
        return found

    def _decode_details(self) -> tuple[list[wire.ColumnChunk], ...]:
        out = []
        columns = self.columns
        for index, group in enumerate(self.groups(self.decode(_DETAILS_PASS))):
            chunks = group.columns or []
            if len(chunks) != len(columns):  # checked in the chunks pass already
                raise ParquetFormatError(
                    f"row group {index} has {len(chunks)} column chunks but the schema has "
                    f"{len(columns)} leaf columns",
                    path=self.path,
                )
            for chunk, column in zip(chunks, columns, strict=True):
                md = chunk.meta_data
                if md is None:  # checked in the chunks pass already
                    raise ParquetFormatError(
                        f"column chunk has no meta_data ({_place(index, column)})", path=self.path
                    )
                _check_details(md, index, column, self.path)
            out.append(chunks)
        return tuple(out)

    def key_values(self) -> tuple[KeyValue, ...] | None:
        """The key/value metadata (None when the footer has none), validated."""
        found = self._key_values
        if isinstance(found, _Unset):
            raw = self.decode(_KEY_VALUES_PASS)
            path = self.path
            found = self._key_values = (
                None
                if raw.key_value_metadata is None
                else tuple(
                    KeyValue(
                        key=_text(_need(item.key, "KeyValue.key", path)) or "", value=item.value
                    )
                    for item in raw.key_value_metadata
                )
            )
        return found


class _Chunks:
    """The column chunks of every row group, decoded and validated on first use."""

    __slots__ = ("_chunks", "_raw", "raw_paths", "schema", "source")

    def __init__(
        self,
        source: _Source,
        schema: Schema,
        raw_paths: list[list[bytes]],
        raw: list[wire.RowGroup] | None,
    ) -> None:
        self.source = source
        self.schema = schema
        self.raw_paths = raw_paths
        # The row groups as the first pass decoded them, when it read the chunks too
        # (not yet validated); else None and a pass of their own reads them.
        self._raw = raw
        self._chunks: tuple[tuple[ColumnChunk, ...], ...] | None = None

    def get(self) -> tuple[tuple[ColumnChunk, ...], ...]:
        found = self._chunks
        if found is None:
            found = self._chunks = self._decode()
            self._raw = None
        return found

    def _decode(self) -> tuple[tuple[ColumnChunk, ...], ...]:
        source = self.source
        path = source.path
        columns = self.schema.columns
        raw_paths = self.raw_paths
        raw = self._raw
        groups = source.groups(source.decode(_CHUNKS_PASS)) if raw is None else raw
        out = []
        for index, group in enumerate(groups):
            chunks = group.columns
            if chunks is None:
                raise ParquetFormatError(
                    f"required field RowGroup.columns is missing (row group {index})", path=path
                )
            if len(chunks) != len(columns):
                raise ParquetFormatError(
                    f"row group {index} has {len(chunks)} column chunks but the schema has "
                    f"{len(columns)} leaf columns",
                    path=path,
                )
            made = []
            # Once per column chunk: the common case is a few comparisons, and
            # error texts are built only on failure.
            for chunk, column, raw_path in zip(chunks, columns, raw_paths, strict=True):
                md = chunk.meta_data
                if (
                    chunk.crypto_metadata is not None
                    or md is None
                    or md.type != column.physical_type
                    or md.path_in_schema != raw_path
                    or md.num_values is None
                    or md.num_values < 0
                ):
                    _check_chunk(chunk, index, column, path)  # raises, or accepts the path
                made.append(ColumnChunk(index, column, md, source))  # type: ignore[arg-type]
            out.append(tuple(made))
        return tuple(out)


class _Unset:
    """Marks a lazily decoded attribute not decoded yet (None is a valid value)."""

    __slots__ = ()


_UNSET = _Unset()


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
    ("file_path", "file_offset", "meta_data"),
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
        ),
    ),
)
_HEAD_PASS = _over_chunks(_HEAD_FILE_FIELDS, _HEAD_GROUP_FIELDS, None)
_HEAD_AND_CHUNKS_PASS = _over_chunks(
    _HEAD_FILE_FIELDS, (*_HEAD_GROUP_FIELDS, "columns"), _CHUNK_ARGS
)
_CHUNKS_PASS = _over_chunks(("row_groups",), ("columns",), _CHUNK_ARGS)
_DETAILS_PASS = _over_chunks(("row_groups",), ("columns",), _DETAILS_ARGS)
_KEY_VALUES_PASS = wire.decode_args(wire.FileMetaData, ("key_value_metadata",))


class _PythonCompactProtocol(TCompactProtocol):  # type: ignore[misc]  # untyped base
    """The pure-Python compact protocol, made as strict as the C decoder.

    Four differences from thrift's class: skipping an unknown string field
    returns its bytes instead of decoding them as UTF-8 (binary fields such as
    ``encrypted_column_metadata`` are not UTF-8), a list whose wire element
    type differs from the spec is an error instead of being misread, a nested
    struct is built from the spec it is given, with one keyword argument per
    field found, as the C decoder does (thrift's class would read it with the
    spec of its class instead), and a negative field id is an unknown field
    (thrift's ``readStruct`` indexes the spec tuple with it, so id -1 would be
    read as the spec's last field).
    """

    def readFieldBegin(self) -> Any:
        name, ttype, fid = super().readFieldBegin()
        # Past every spec (field ids are i16): skipped as unknown, as the C decoder does.
        return name, ttype, fid if fid >= 0 else 32767

    def readString(self) -> Any:
        return self.readBinary()

    def _bounded_varint(self, max_bytes: int) -> int:
        # The C decoder reads i16 varints of at most 3 bytes and i32 of at most 5; thrift's
        # Python class reads any length. Refuse the same inputs the C decoder refuses.
        result = shift = 0
        for _ in range(max_bytes):
            byte = int(self.trans.readAll(1)[0])
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
        raise TProtocolException(TProtocolException.INVALID_DATA, "varint exceeded limit")

    def _zigzag_int(self, max_bytes: int, bits: int) -> int:
        n = self._bounded_varint(max_bytes)
        value = (n >> 1) ^ -(n & 1)
        if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
            raise TProtocolException(
                TProtocolException.INVALID_DATA, f"i{bits} value {value} out of range"
            )
        return value

    def readI16(self) -> int:
        return self._zigzag_int(3, 16)

    def readI32(self) -> int:
        return self._zigzag_int(5, 32)

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

    def readContainerStruct(self, spec: Any) -> Any:
        cls, struct_spec = spec
        return self.readStruct(cls, struct_spec, is_immutable=True)


def _limits_for(length: int) -> int:
    # In the compact protocol every list element and every string byte takes at
    # least one byte of input, so no honest length exceeds the buffer's size.
    return max(length, 1)


def _decode_thrift(
    data: bytes,
    obj: Any,
    args: list[Any],
    *,
    what: str,
    path: str | None,
    decoder: Literal["fastbinary", "python"],
) -> None:
    """Fill ``obj`` from compact-protocol ``data`` as ``args`` (``[class, spec]``) say.

    Any failure becomes ParquetFormatError.
    """
    limit = _limits_for(len(data))
    transport = TMemoryBuffer(data)
    try:
        if decoder == "fastbinary":
            protocol: Any = TCompactProtocol(
                transport, string_length_limit=limit, container_length_limit=limit
            )
            _fastbinary.decode_compact(obj, protocol, args)
        else:
            protocol = _PythonCompactProtocol(
                transport, string_length_limit=limit, container_length_limit=limit
            )
            protocol.readStruct(obj, args[1])
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
    buf: bytes | bytearray | memoryview, path: str | None = None, *, lazy: bool = True
) -> FileMetaData:
    """Decode and validate a thrift compact-protocol FileMetaData.

    Parameters
    ----------
    buf:
        Exactly the FileMetaData bytes (see :class:`FooterLocation`); trailing
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
    return _decode_file_metadata(buf, path, THRIFT_DECODER, lazy=lazy)


def _decode_file_metadata(
    buf: bytes | bytearray | memoryview,
    path: str | None,
    decoder: Literal["fastbinary", "python"],
    *,
    lazy: bool = False,
    with_chunks: bool = False,
) -> FileMetaData:
    """:func:`decode_file_metadata` with the decoder chosen (the tests run both).

    Eager unless ``lazy``. ``with_chunks`` has the first pass read the column chunks
    too, for callers about to read them (the reader, for pruning): one pass over the
    footer instead of two. They are validated on first access all the same.
    """
    data = bytes(buf)
    head = wire.FileMetaData()
    first = _HEAD_AND_CHUNKS_PASS if with_chunks else _HEAD_PASS
    _decode_thrift(data, head, first, what="footer (FileMetaData)", path=path, decoder=decoder)
    # The decoders only store values of the spec's types, so the checks below
    # see ints, bytes, lists and wire structs, never anything else.
    if head.encryption_algorithm is not None:
        raise EncryptedFileError(
            "encrypted files are not supported (plaintext footer with encrypted columns)",
            path=path,
        )
    _need(head.version, "FileMetaData.version", path)
    elements = _need(head.schema, "FileMetaData.schema", path)
    _non_negative(
        _need(head.num_rows, "FileMetaData.num_rows", path), "FileMetaData.num_rows", path
    )
    groups = _need(head.row_groups, "FileMetaData.row_groups", path)
    schema, raw_paths = _build_schema(elements, path)
    for index, group in enumerate(groups):
        rows = group.num_rows
        if rows is None or rows < 0 or group.total_byte_size is None:
            where = f"row group {index}"
            rows = _need(rows, "RowGroup.num_rows", path, where=where)
            _non_negative(rows, "RowGroup.num_rows", path, where)
            _need(group.total_byte_size, "RowGroup.total_byte_size", path, where=where)
    source = _Source(data, path, decoder, len(groups), schema.columns)
    meta = FileMetaData(source, head, schema, raw_paths, with_chunks)
    return meta if lazy else meta.load()


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


_CORE_REQUIRED = ("type", "path_in_schema", "num_values")
_DETAILS_REQUIRED = (
    "encodings",
    "codec",
    "total_uncompressed_size",
    "total_compressed_size",
    "data_page_offset",
)


def _check_chunk(
    chunk: wire.ColumnChunk, group: int, column: ColumnDescriptor, path: str | None
) -> None:
    """Raise the error a column chunk of the chunks pass deserves; return if it has none.

    Called only when the quick checks in ``_Chunks`` failed; the one case that
    then passes is a path whose names are not UTF-8 (compared as decoded).
    """
    if chunk.crypto_metadata is not None:
        raise EncryptedFileError(
            "encrypted files are not supported (column chunk is encrypted; "
            f"{_place(group, column)})",
            path=path,
        )
    md = chunk.meta_data
    if md is None:
        raise ParquetFormatError(
            f"column chunk has no meta_data ({_place(group, column)})", path=path
        )
    for name in _CORE_REQUIRED:
        if getattr(md, name) is None:
            raise ParquetFormatError(
                f"required field ColumnMetaData.{name} is missing ({_place(group, column)})",
                path=path,
            )
    # Columns are matched to schema leaves by position (parquet.thrift: "This
    # list must have the same order as the SchemaElement list"); the path and
    # type recorded in the chunk must agree with the leaf at that position.
    # Raw names are compared first; names that are not UTF-8 are compared as
    # decoded (with U+FFFD), as the schema shows them.
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


def _check_details(
    md: wire.ColumnMetaData, group: int, column: ColumnDescriptor, path: str | None
) -> None:
    """Validate the fields of the details pass of one chunk."""
    for name in _DETAILS_REQUIRED:
        if getattr(md, name) is None:
            raise ParquetFormatError(
                f"required field ColumnMetaData.{name} is missing ({_place(group, column)})",
                path=path,
            )
    for s in md.encoding_stats or ():
        if s.page_type is None or s.encoding is None or s.count is None:
            if s.page_type is None:
                missing = "page_type"
            else:
                missing = "encoding" if s.encoding is None else "count"
            raise ParquetFormatError(
                f"required field PageEncodingStats.{missing} is missing ({_place(group, column)})",
                path=path,
            )


def _place(group: int, column: ColumnDescriptor) -> str:
    return f"row group {group}, column {column.path!r}"
