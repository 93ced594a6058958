"""Reading a sidecar index back: the strict decoder of its one layout, bounded reads."""

from __future__ import annotations

import os
import re
import struct
import zlib
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..checks import positive_int
from ..core.filter import SplitBlockBloomFilter
from ..core.sizes import DEFAULT_MAX_BYTES
from ..errors import (
    ParquetFormatError,
    PyBloomError,
    SourceNotFoundError,
)
from ..io.address import is_local
from ..io.base import FileInfo, SourceStats, location_text
from ..io.store import StoreOptions
from ..parquet import (
    DATA_PAGE,
    ChunkPlace,
    ColumnDescriptor,
    CompressionCodec,
    Encoding,
    PageHeaderReader,
    decode_file_metadata,
    parse_footer_tail,
)
from ..parquet.logical import parse_logical
from ..read.columns import unsupported_reason
from ..read.reader import BloomReader
from ..types import PhysicalType
from .format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    MAX_INDEX_BYTES,
    IndexedColumn,
    SidecarIndex,
    index_location,
    legacy_index_location,
)

# ---- reading ----------------------------------------------------------------------------

_TOP_FIELDS: dict[str, PhysicalType] = {
    "format": PhysicalType.BYTE_ARRAY,
    "format_version": PhysicalType.INT32,
    "created_by": PhysicalType.BYTE_ARRAY,
    "data_file": PhysicalType.BYTE_ARRAY,
    "file_size": PhysicalType.INT64,
    "file_mtime_ns": PhysicalType.INT64,
    "file_etag": PhysicalType.BYTE_ARRAY,
    "num_rows": PhysicalType.INT64,
    "num_row_groups": PhysicalType.INT32,
    "num_columns": PhysicalType.INT32,
}
#: Fields added to version 1 later: an index written before lacks them (read as 0).
_LATER_TOP_FIELDS: dict[str, PhysicalType] = {
    "file_inode": PhysicalType.INT64,
    "file_ctime_ns": PhysicalType.INT64,
}
_COLUMN_FIELDS: dict[str, PhysicalType] = {
    "path": PhysicalType.BYTE_ARRAY,
    "physical_type": PhysicalType.BYTE_ARRAY,
    "type_length": PhysicalType.INT32,
    "logical_type": PhysicalType.BYTE_ARRAY,
    "max_repetition_level": PhysicalType.INT32,
    "ndv": PhysicalType.INT64,
    "fpp": PhysicalType.DOUBLE,
    "distinct_count": PhysicalType.INT64,
    "value_count": PhysicalType.INT64,
    "null_count": PhysicalType.INT64,
    "bloom_filter": PhysicalType.BYTE_ARRAY,
}
_COLUMN_STRUCT = re.compile(r"^column_(0|[1-9][0-9]{0,5})$")


_FIXED_WIDTH = {PhysicalType.INT32: 4, PhysicalType.INT64: 8, PhysicalType.DOUBLE: 8}
_PLAIN = int(Encoding.PLAIN)


class _Leaf(NamedTuple):
    """One leaf of an index file: its physical type and where its one chunk lies."""

    physical_type: PhysicalType
    place: ChunkPlace


class _IndexReader:
    """Reads the one value of each leaf of an index file held in memory.

    The footer is read as any file's is: the schema by the package's footer decoder, the
    chunks' places by the C footer scanner
    (:meth:`~pybloom_async.parquet.FileMetaData.chunk_places`, every chunk checked against
    its schema leaf). One row, every column REQUIRED, checked
    at once; every field of the format present with its type, checked by
    :meth:`check_layout` once the version is known. Values are decoded on demand, each
    from its page after the page's header, sizes and CRC32 are checked.
    """

    def __init__(self, data: bytes, path: str) -> None:
        self.data = data
        self.path = path
        location = parse_footer_tail(data, len(data), path=path)  # checks both magics
        self.footer_start = location.metadata_offset
        footer = decode_file_metadata(location.metadata_bytes(data), path=path)
        groups = len(footer.row_groups)
        if footer.num_rows != 1 or groups != 1:
            raise self.error(
                f"holds {footer.num_rows} rows in {groups} row groups, not one row in one row group"
            )
        leaves = footer.schema.columns
        for leaf in leaves:
            if leaf.max_definition_level or leaf.max_repetition_level:
                raise self.error("has optional or repeated columns", column=leaf.path)
        (places,) = footer.chunk_places(range(len(leaves)))
        self.leaves: dict[tuple[str, ...], _Leaf] = {
            leaf.path_parts: _Leaf(leaf.physical_type, place)
            for leaf, place in zip(leaves, places, strict=True)
        }
        #: The ``column_<i>`` structs present.
        self.structs = {p[0] for p in self.leaves if len(p) == 2 and _COLUMN_STRUCT.match(p[0])}
        self.pages = PageHeaderReader(data, path=path)

    def check_layout(self) -> None:
        """Check that every field of this version's layout is there, with its type.

        Called once the version is known to be this module's (another version may
        have other fields, and deserves that message instead).
        """
        for name, ptype in _TOP_FIELDS.items():
            self._check_field((name,), ptype)
        for name, ptype in _LATER_TOP_FIELDS.items():
            if (name,) in self.leaves:
                self._check_field((name,), ptype)
        for struct_name in sorted(self.structs):
            for name, ptype in _COLUMN_FIELDS.items():
                self._check_field((struct_name, name), ptype)

    def _check_field(self, parts: tuple[str, ...], ptype: PhysicalType) -> None:
        leaf = self.leaves.get(parts)
        if leaf is None:
            raise self.error("a field is missing", column=".".join(parts))
        if leaf.physical_type is not ptype:
            raise self.error(
                f"field is {leaf.physical_type.name}, expected {ptype.name}",
                column=".".join(parts),
            )

    def error(self, message: str, *, column: str | None = None) -> ParquetFormatError:
        return ParquetFormatError(
            f"not a valid sidecar index: {message}", path=self.path, column=column
        )

    def value(self, parts: tuple[str, ...], ptype: PhysicalType) -> Any:
        """The leaf's single value (int, float or bytes), checked against its page CRC."""
        leaf = self.leaves.get(parts)
        if leaf is None or leaf.physical_type is not ptype:
            self._check_field(parts, ptype)  # raises
        assert leaf is not None
        place = leaf.place
        start = place.data_page_offset
        end = start + place.total_compressed_size
        if place.codec is not CompressionCodec.UNCOMPRESSED or place.dictionary_page_offset:
            raise self.error("field is compressed or dictionary-encoded", column=".".join(parts))
        if place.num_values != 1 or not 4 <= start < end <= self.footer_start:
            raise self.error(
                "field's data lies outside the file or holds several values",
                column=".".join(parts),
            )
        try:
            header = self.pages.read(start)
        except ParquetFormatError as exc:
            raise exc.with_context(column=".".join(parts)) from None
        size = header.compressed_page_size
        body_start = start + header.header_length
        if (
            header.type != DATA_PAGE
            or header.num_values != 1
            or header.encoding != _PLAIN
            or size is None
            or size != header.uncompressed_page_size
            or body_start + size != end
        ):
            raise self.error(
                "field is not one PLAIN value in one uncompressed page", column=".".join(parts)
            )
        body = self.data[body_start:end]
        if header.crc is None or (header.crc & 0xFFFFFFFF) != zlib.crc32(body):
            raise self.error(
                "page checksum mismatch (the index is damaged)", column=".".join(parts)
            )
        width = _FIXED_WIDTH.get(ptype)
        if width is not None:
            if size != width:
                raise self.error("field has the wrong width", column=".".join(parts))
            if ptype is PhysicalType.DOUBLE:
                return struct.unpack("<d", body)[0]
            return int.from_bytes(body, "little", signed=True)
        if size < 4 or int.from_bytes(body[:4], "little") != size - 4:
            raise self.error("field's byte length does not match its page", column=".".join(parts))
        return body[4:]

    def integer(self, *parts: str, minimum: int = 0) -> int:
        if len(parts) == 1 and parts[0] in _LATER_TOP_FIELDS:
            if parts not in self.leaves:
                return 0  # written before the field was
            ptype = _LATER_TOP_FIELDS[parts[0]]
        else:
            ptype = _TOP_FIELDS[parts[0]] if len(parts) == 1 else _COLUMN_FIELDS[parts[1]]
        value: int = self.value(parts, ptype)
        if value < minimum:
            raise self.error(f"field holds {value}, below {minimum}", column=".".join(parts))
        return value

    def text(self, *parts: str) -> str:
        raw: bytes = self.value(parts, PhysicalType.BYTE_ARRAY)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.error("field is not UTF-8", column=".".join(parts)) from None

    def binary(self, *parts: str) -> bytes:
        raw: bytes = self.value(parts, PhysicalType.BYTE_ARRAY)
        return raw

    def double(self, *parts: str) -> float:
        value: float = self.value(parts, PhysicalType.DOUBLE)
        return value


# Long because: the index's one fixed layout decoded field by field in file order; each check
# names the field it refuses (format.encode_index writes the same order).
def parse_index(
    data: bytes | bytearray | memoryview,
    *,
    path: str | None = None,
    max_filter_bytes: int = DEFAULT_MAX_BYTES,
) -> SidecarIndex:
    """Decode and validate the bytes of an index file (no pyarrow needed).

    Every field read is checked: the layout this module writes (one row,
    REQUIRED PLAIN columns in uncompressed pages, every field present with its
    type), each page's CRC32, the format name and version, the types, counts
    and each filter's header and size.

    Parameters
    ----------
    data:
        The whole index file.
    path:
        Its name, for error messages.
    max_filter_bytes:
        The largest filter accepted (its header is checked before the bitset
        is copied).

    Raises
    ------
    ParquetFormatError
        Not a sidecar index, a damaged or truncated one, or one of another
        version (the message says which).
    InvalidFilterError
        A filter's header or size is invalid.
    """
    shown = path or "<index>"
    r = _IndexReader(bytes(data), shown)
    fmt = r.text("format")
    if fmt != FORMAT_NAME:
        raise r.error(f"format is {fmt[:80]!r}, expected {FORMAT_NAME!r}")
    version = r.integer("format_version")
    if version != FORMAT_VERSION:
        raise ParquetFormatError(
            f"sidecar index version {version} is not supported (this library reads "
            f"version {FORMAT_VERSION}); rebuild the index",
            path=shown,
        )
    r.check_layout()
    num_columns = r.integer("num_columns")
    structs = r.structs
    # Compare counts first: num_columns is untrusted, the set below is only built when it
    # is no larger than what the file holds.
    if num_columns != len(structs) or structs != {f"column_{i}" for i in range(num_columns)}:
        raise r.error(f"num_columns is {num_columns} but the file has {len(structs)} columns")
    columns = []
    for i in range(num_columns):
        s = f"column_{i}"
        col_path = r.text(s, "path")
        try:
            ptype = PhysicalType[r.text(s, "physical_type")]
            logical = parse_logical(r.text(s, "logical_type"))
        except (KeyError, ValueError) as exc:
            raise r.error(f"unknown type ({exc})", column=col_path) from None
        type_length = r.integer(s, "type_length")
        desc = ColumnDescriptor(
            index=i,
            path_parts=tuple(col_path.split(".")),
            physical_type=ptype,
            type_length=type_length or None,
            max_repetition_level=r.integer(s, "max_repetition_level"),
            logical_type=logical,
        )
        if unsupported_reason(desc) is not None:
            raise r.error(
                f"column type cannot be indexed: {unsupported_reason(desc)}", column=col_path
            )
        fpp = r.double(s, "fpp")
        if not 0.0 < fpp < 1.0:
            raise r.error(f"fpp {fpp} is not in (0, 1)", column=col_path)
        try:
            bloom = SplitBlockBloomFilter.from_bytes(
                r.binary(s, "bloom_filter"), max_bytes=max_filter_bytes
            )
        except PyBloomError as exc:
            raise exc.with_context(path=shown, column=col_path) from None
        columns.append(
            IndexedColumn(
                descriptor=desc,
                ndv=r.integer(s, "ndv"),
                fpp=fpp,
                distinct_count=r.integer(s, "distinct_count"),
                value_count=r.integer(s, "value_count"),
                null_count=r.integer(s, "null_count", minimum=-1),
                filter=bloom,
            )
        )
    paths = [c.path for c in columns]
    if len(set(paths)) != len(paths):
        raise r.error("a column is indexed twice")
    return SidecarIndex(
        data_file=r.text("data_file"),
        file_size=r.integer("file_size"),
        file_mtime_ns=r.integer("file_mtime_ns"),
        file_etag=r.text("file_etag"),
        num_rows=r.integer("num_rows"),
        num_row_groups=r.integer("num_row_groups"),
        columns=tuple(columns),
        created_by=r.text("created_by"),
        format_version=version,
        file_inode=r.integer("file_inode"),
        file_ctime_ns=r.integer("file_ctime_ns"),
    )


async def read_index_bytes(reader: BloomReader, location: str, max_index_bytes: int) -> bytes:
    """The whole index object, in one request where the store allows it."""
    async with reader.open(location) as source:
        # Local: the size is known before reading, so nothing is wasted; a store: one request.
        return await source.read_whole(
            max_index_bytes,
            lambda size: too_large(size, max_index_bytes, location),
            one_request=not is_local(location),
            what="index",
        )


async def read_index_data(
    reader: BloomReader, data_location: str, max_index_bytes: int
) -> tuple[str, bytes]:
    """The index of a data file: its location and bytes, by its current name or else its old.

    The name of :func:`~pybloom_async.index.format.index_location` is read first; only
    when that object does not exist is the name earlier versions wrote
    (:func:`~pybloom_async.index.format.legacy_index_location`) read. When both exist the
    current one wins, stale or not.

    Raises
    ------
    SourceNotFoundError
        Neither exists (the error names the current location).
    ParquetFormatError
        The index is above ``max_index_bytes``.
    SourceError
        It could not be read.
    """
    location = index_location(data_location)
    try:
        return location, await read_index_bytes(reader, location, max_index_bytes)
    except SourceNotFoundError as exc:
        missing = exc
    legacy = legacy_index_location(data_location)
    try:
        return legacy, await read_index_bytes(reader, legacy, max_index_bytes)
    except SourceNotFoundError:
        raise missing from None


def too_large(size: int, limit: int, location: str) -> ParquetFormatError:
    return ParquetFormatError(
        f"sidecar index of {size} bytes is above the limit of {limit} (max_index_bytes)",
        path=location,
    )


async def read_index(
    data_location: str | os.PathLike[str] | FileInfo,
    *,
    options: StoreOptions | Mapping[str, Any] | None = None,
    stats: SourceStats | None = None,
    max_index_bytes: int = MAX_INDEX_BYTES,
) -> SidecarIndex:
    """Read and decode the sidecar index of one data file (one request).

    An index under the name earlier versions wrote is read when there is none under the
    current name (:func:`read_index_data`): a second request.

    Raises
    ------
    SourceNotFoundError
        The file has no index.
    ParquetFormatError, InvalidFilterError
        The index is damaged, of another version, or above ``max_index_bytes``.
    SourceError
        It could not be read.
    """
    limit = positive_int("max_index_bytes", max_index_bytes)
    reader = BloomReader(options=options, stats=stats, max_files=0)
    location, data = await read_index_data(reader, location_text(data_location), limit)
    return parse_index(data, path=location, max_filter_bytes=limit)
