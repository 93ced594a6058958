"""File-level sidecar Bloom filter indexes: one small Parquet file per data file.

In-file filters answer per row group and cost a footer read per file. A
sidecar index answers per *file* from one small object read in one request:
for ``dir/name.parquet`` it is ``dir/_bloom_index/name.parquet.index.v1.parquet``
(the leading ``_`` hides the folder from Spark, Hive and our own listings).
Build them with :func:`build_index` (or ``pybloom-async index build``) and
prune with :func:`prune_with_index` (or ``pybloom-async prune --use-index``).

The index file
--------------
A one-row, uncompressed Parquet file written by pyarrow: every column
REQUIRED (no definition or repetition levels), PLAIN, no dictionary, data
page v1 with a CRC32 checksum, no statistics, no Arrow schema. Any Parquet
reader can open it; :func:`parse_index` decodes it without pyarrow and
refuses anything else. Its columns::

    format           string   "pybloom-async sidecar index"
    format_version   int32    1 (also in the file name: .index.v1.parquet)
    created_by       string   "pybloom-async <version>"
    data_file        string   the data file's base name
    file_size        int64    the data file's size in bytes when indexed
    file_mtime_ns    int64    its modification time in ns since the epoch
                              (local: st_mtime_ns; object stores: Last-Modified; 0: unknown)
    file_etag        string   its ETag on an object store ("" for local files)
    num_rows         int64    rows of the data file
    num_row_groups   int32    row groups of the data file
    num_columns      int32    how many column_<i> structs follow
    column_0 .. column_<n-1>  struct, one per indexed column:
        path                  string  dotted column path ("user.id")
        physical_type         string  INT32, INT64, INT96, FLOAT, DOUBLE, BYTE_ARRAY,
                                      FIXED_LEN_BYTE_ARRAY
        type_length           int32   FIXED_LEN_BYTE_ARRAY width, else 0
        logical_type          string  "" or STRING, DATE, UUID, DECIMAL(9,2),
                                      INTEGER(8,true), TIMESTAMP(MICROS,true), ...
        max_repetition_level  int32   0 for a column outside any list
        ndv                   int64   distinct values the filter was sized for
        fpp                   double  false-positive rate it was sized for
        distinct_count        int64   distinct hashes of the file's values (exact)
        value_count           int64   non-null values inserted
        null_count            int64   rows whose value is null (-1: unknown, repeated column)
        bloom_filter          binary  Parquet BloomFilterHeader + bitset
                                      (SplitBlockBloomFilter.to_bytes())

The type fields are enough to encode a probe value exactly (the same
conversions as in-file pruning) without reading the data file's footer.
Nulls are not inserted; ``null_count`` answers ``col <=> NULL``.

Sizing: each filter is sized by the Parquet spec's rule
(:meth:`SplitBlockBloomFilter.for_ndv`) for ``ndv`` values at ``fpp``: the
``ndv`` given, or else the exact number of distinct hashes of the column's
non-null values in the whole file (so a file's filter is as small as its data
allows). Supported: every physical type but BOOLEAN
(:func:`pybloom_async.read.columns.unsupported_reason`), INT96 timestamps included.

Staleness: the index records the data file's size and modification time
(local) or ETag (object stores). Pruning compares them with the file as it is
now (a ``stat``; on object stores the listing's entry, or one HEAD for a file
named by URL); any difference keeps the file (:attr:`Rule.STALE_INDEX`). A
missing or unreadable index, or a predicate column the index lacks, keeps the
file too (:attr:`Rule.NO_INDEX`). There are no false negatives.
"""

from __future__ import annotations

import datetime as dt
import io
import os
import re
import struct
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
import numpy as np

from ..checks import integer, positive_int, probability, require_pyarrow
from ..core.filter import DEFAULT_MAX_BYTES, SplitBlockBloomFilter
from ..errors import (
    IndexStaleError,
    InvalidArgumentError,
    ParquetFormatError,
    PredicateError,
    PyBloomError,
    SourceError,
    SourceNotFoundError,
    UnsupportedTypeError,
)
from ..io.address import parse_address
from ..io.base import FileInfo, SourceIdentity, SourceStats
from ..io.sinks import is_local, write_atomic
from ..io.store import StoreOptions
from ..parquet import (
    DATA_PAGE,
    ColumnDescriptor,
    CompressionCodec,
    Encoding,
    FileMetaData,
    FlatColumn,
    LogicalKind,
    LogicalType,
    PageHeaderReader,
    TimeUnit,
    decode_file_metadata,
    decode_flat_footer,
    parse_footer_tail,
)
from ..predicate import And, Eq, In, Or, Predicate, as_predicate
from ..pruning.api import prune as _prune_row_groups
from ..pruning.leaves import Leaf, LeafCache, build_leaf
from ..pruning.runner import expand_paths, files_at_once, for_each
from ..pruning.verdicts import Rule, Verdict
from ..read.columns import ColumnReader, unsupported_reason
from ..read.reader import BloomReader, ReaderConfig, run_in_new_loop
from ..types import PhysicalType

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "INDEX_DIR",
    "MAX_INDEX_BYTES",
    "IndexBuild",
    "IndexStaleError",
    "IndexedColumn",
    "SidecarIndex",
    "build_index",
    "build_index_sync",
    "encode_index",
    "index_location",
    "parse_index",
    "prune_with_index",
    "prune_with_index_sync",
    "read_index",
]

#: The folder, next to the data files, that holds their indexes.
INDEX_DIR = "_bloom_index"
#: The value of the index's ``format`` column.
FORMAT_NAME = "pybloom-async sidecar index"
#: The index layout this module writes and reads.
FORMAT_VERSION = 1
INDEX_SUFFIX = f".index.v{FORMAT_VERSION}.parquet"
#: Indexes larger than this are neither written nor read (a filter for 50 M
#: distinct values at 1% takes 64 MiB); raise it with ``max_index_bytes``.
MAX_INDEX_BYTES = 64 * 1024 * 1024
#: Object-store data files are read whole into memory to be indexed; larger
#: ones are refused (``max_object_bytes``).
MAX_OBJECT_BYTES = 4 * 1024 * 1024 * 1024

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


# ---- locations ----------------------------------------------------------------------


def index_location(data_location: str | os.PathLike[str]) -> str:
    """Where the sidecar index of a data file lives.

    ``dir/name.parquet`` -> ``dir/_bloom_index/name.parquet.index.v1.parquet``,
    for local paths and object-store URLs alike.

    Raises
    ------
    InvalidArgumentError
        The location names a directory or prefix, not a file.
    """
    text = os.fspath(data_location)
    if "://" in text:
        head, sep, name = text.rpartition("/")
        if not name or "://" not in head + sep or (head + sep).endswith("://"):
            raise InvalidArgumentError("not a file URL: it names no object", path=text)
        return f"{head}/{INDEX_DIR}/{name}{INDEX_SUFFIX}"
    head, name = os.path.split(text)
    if not name:
        raise InvalidArgumentError("not a file path: it ends with a separator", path=text)
    return os.path.join(head, INDEX_DIR, name + INDEX_SUFFIX)


def _base_name(location: str) -> str:
    if "://" in location:
        return location.rpartition("/")[2]
    return os.path.basename(location)


def _location_text(location: str | os.PathLike[str] | FileInfo) -> str:
    return location.path if isinstance(location, FileInfo) else os.fspath(location)


def _local_path(location: str) -> str:
    """The file-system path of a local path or ``file://`` URL."""
    return parse_address(location).path


# ---- logical types as text ------------------------------------------------------------

_SIMPLE_KINDS = {
    k.value: k
    for k in (
        LogicalKind.STRING,
        LogicalKind.ENUM,
        LogicalKind.JSON,
        LogicalKind.BSON,
        LogicalKind.UUID,
        LogicalKind.DATE,
        LogicalKind.FLOAT16,
        LogicalKind.UNKNOWN,
    )
}
_PARAM_RE = re.compile(r"^(DECIMAL|INTEGER|TIME|TIMESTAMP)\(([A-Z0-9]+),(-?[0-9a-z]+)\)$")


def _logical_text(lt: LogicalType | None, path: str) -> str:
    if lt is None:
        return ""
    kind = lt.kind
    if kind.value in _SIMPLE_KINDS:
        return kind.value
    if kind is LogicalKind.DECIMAL and lt.precision is not None and lt.scale is not None:
        return f"DECIMAL({lt.precision},{lt.scale})"
    if kind is LogicalKind.INTEGER and lt.bit_width is not None and lt.is_signed is not None:
        return f"INTEGER({lt.bit_width},{str(lt.is_signed).lower()})"
    if (
        kind in (LogicalKind.TIME, LogicalKind.TIMESTAMP)
        and lt.unit is not None
        and lt.is_adjusted_to_utc is not None
    ):
        return f"{kind.value}({lt.unit.name},{str(lt.is_adjusted_to_utc).lower()})"
    raise UnsupportedTypeError(f"logical type {lt} cannot be recorded in an index", column=path)


def _parse_logical(text: str) -> LogicalType | None:
    """The inverse of :func:`_logical_text`; ValueError for anything else."""
    if not text:
        return None
    if text in _SIMPLE_KINDS:
        return LogicalType(_SIMPLE_KINDS[text])
    m = _PARAM_RE.match(text)
    if m is None:
        raise ValueError(f"unknown logical type {text!r}")
    name, first, second = m.groups()
    if name == "DECIMAL":
        precision, scale = int(first), int(second)
        if not (0 < precision <= 1000 and 0 <= scale <= precision):
            raise ValueError(f"invalid decimal {text!r}")
        return LogicalType.decimal(precision, scale)
    if second not in ("true", "false"):
        raise ValueError(f"invalid flag in {text!r}")
    flag = second == "true"
    if name == "INTEGER":
        width = int(first)
        if width not in (8, 16, 32, 64):
            raise ValueError(f"invalid integer width in {text!r}")
        return LogicalType.integer(width, flag)
    if first not in TimeUnit.__members__:
        raise ValueError(f"invalid time unit in {text!r}")
    unit = TimeUnit[first]
    return LogicalType.time(unit, flag) if name == "TIME" else LogicalType.timestamp(unit, flag)


# ---- the index, in memory -----------------------------------------------------------------


@dataclass(frozen=True)
class IndexedColumn:
    """One column of a sidecar index: its type, counts and whole-file filter."""

    descriptor: ColumnDescriptor
    ndv: int
    fpp: float
    distinct_count: int
    value_count: int
    null_count: int  # -1: unknown (a column inside a list)
    filter: SplitBlockBloomFilter

    @property
    def path(self) -> str:
        """The dotted column path."""
        return self.descriptor.path


@dataclass(frozen=True)
class SidecarIndex:
    """A decoded sidecar index (see the module docstring for the file layout)."""

    data_file: str
    file_size: int
    file_mtime_ns: int
    file_etag: str
    num_rows: int
    num_row_groups: int
    columns: tuple[IndexedColumn, ...]
    created_by: str = ""
    format_version: int = FORMAT_VERSION

    def column(self, path: str) -> IndexedColumn | None:
        """The indexed column with this dotted path, or None."""
        for c in self.columns:
            if c.path == path:
                return c
        return None


# ---- writing ----------------------------------------------------------------------------


def encode_index(index: SidecarIndex) -> bytes:
    """The bytes of the index file for ``index`` (pyarrow writes them).

    Deterministic: the same index gives the same bytes, wherever it is built.

    Raises
    ------
    UnsupportedTypeError
        A column's logical type cannot be recorded.
    """
    pa = require_pyarrow("write sidecar indexes")
    pq = pa.parquet

    from .. import __version__

    def req(name: str, type_: Any) -> Any:
        return pa.field(name, type_, nullable=False)

    fields = [
        req("format", pa.string()),
        req("format_version", pa.int32()),
        req("created_by", pa.string()),
        req("data_file", pa.string()),
        req("file_size", pa.int64()),
        req("file_mtime_ns", pa.int64()),
        req("file_etag", pa.string()),
        req("num_rows", pa.int64()),
        req("num_row_groups", pa.int32()),
        req("num_columns", pa.int32()),
    ]
    values: list[Any] = [
        FORMAT_NAME,
        index.format_version,
        index.created_by or f"pybloom-async {__version__}",
        index.data_file,
        index.file_size,
        index.file_mtime_ns,
        index.file_etag,
        index.num_rows,
        index.num_row_groups,
        len(index.columns),
    ]
    arrays = [pa.array([v], f.type) for f, v in zip(fields, values, strict=True)]
    column_fields = [
        req("path", pa.string()),
        req("physical_type", pa.string()),
        req("type_length", pa.int32()),
        req("logical_type", pa.string()),
        req("max_repetition_level", pa.int32()),
        req("ndv", pa.int64()),
        req("fpp", pa.float64()),
        req("distinct_count", pa.int64()),
        req("value_count", pa.int64()),
        req("null_count", pa.int64()),
        req("bloom_filter", pa.binary()),
    ]
    for i, c in enumerate(index.columns):
        d = c.descriptor
        row = [
            d.path,
            d.physical_type.name,
            d.type_length or 0,
            _logical_text(d.logical_type, d.path),
            d.max_repetition_level,
            c.ndv,
            c.fpp,
            c.distinct_count,
            c.value_count,
            c.null_count,
            c.filter.to_bytes(),
        ]
        children = [pa.array([v], f.type) for f, v in zip(column_fields, row, strict=True)]
        struct_type = pa.struct(column_fields)
        fields.append(req(f"column_{i}", struct_type))
        arrays.append(pa.StructArray.from_arrays(children, fields=column_fields))
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    out = io.BytesIO()
    pq.write_table(
        table,
        out,
        compression="none",
        use_dictionary=False,
        write_statistics=False,
        write_page_checksum=True,
        store_schema=False,
        data_page_version="1.0",
        write_page_index=False,
    )
    return out.getvalue()


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
_UNCOMPRESSED = int(CompressionCodec.UNCOMPRESSED)
_PLAIN = int(Encoding.PLAIN)


class _IndexReader:
    """Reads the one value of each leaf of an index file held in memory.

    The footer is read by :func:`~pybloom_async.parquet.decode_flat_footer` (the leaves and
    their chunks, checked, without the typed model a data file's footer gets): one row,
    every column REQUIRED, checked at once; every field of the format present with its type,
    checked by :meth:`check_layout` once the version is known. Values are decoded on demand,
    each from its page after the page's header, sizes and CRC32 are checked.
    """

    def __init__(self, data: bytes, path: str) -> None:
        self.data = data
        self.path = path
        location = parse_footer_tail(data, len(data), path=path)  # checks both magics
        self.footer_start = location.metadata_offset
        footer = decode_flat_footer(location.metadata_bytes(data), path=path)
        if footer.num_rows != 1 or footer.num_row_groups != 1:
            raise self.error(
                f"holds {footer.num_rows} rows in {footer.num_row_groups} row groups, "
                "not one row in one row group"
            )
        self.leaves: dict[tuple[str, ...], FlatColumn] = {}
        for leaf in footer.columns:
            if not leaf.required:
                raise self.error("has optional or repeated columns", column=".".join(leaf.path))
            self.leaves[leaf.path] = leaf
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
        start = leaf.data_page_offset
        end = start + leaf.total_compressed_size
        if leaf.codec != _UNCOMPRESSED or leaf.dictionary_page_offset:
            raise self.error("field is compressed or dictionary-encoded", column=".".join(parts))
        if leaf.num_values != 1 or not 4 <= start < end <= self.footer_start:
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
            logical = _parse_logical(r.text(s, "logical_type"))
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
    )


async def _read_index_bytes(reader: BloomReader, location: str, max_index_bytes: int) -> bytes:
    """The whole index object, in one request where the store allows it."""
    async with reader.open(location) as source:
        if is_local(location):
            size = await source.size()  # local: known before reading, so nothing is wasted
            if size > max_index_bytes:
                raise _too_large(size, max_index_bytes, location)
            return await source.read_range(0, size)
        data = await source.read_suffix(max_index_bytes)
        size = await source.size()  # learned by the suffix read: no request
        if size > max_index_bytes:
            raise _too_large(size, max_index_bytes, location)
        if len(data) != size:
            raise SourceError(f"read {len(data)} bytes of a {size}-byte index", path=location)
        return data


def _too_large(size: int, limit: int, location: str) -> ParquetFormatError:
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
    location = index_location(_location_text(data_location))
    data = await _read_index_bytes(reader, location, limit)
    return parse_index(data, path=location, max_filter_bytes=limit)


# ---- building -------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexBuild:
    """The outcome of indexing one data file.

    ``error`` is None when the index was written; otherwise it says why not
    (and nothing was written for that file).
    """

    file: str
    index: str
    columns: tuple[str, ...]
    num_rows: int | None
    index_bytes: int | None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "file": self.file,
            "index": self.index,
            "columns": list(self.columns),
            "num_rows": self.num_rows,
            "index_bytes": self.index_bytes,
            "error": self.error,
        }


def _ns(mtime: dt.datetime | None) -> int:
    if mtime is None:
        return 0
    if mtime.tzinfo is None:
        mtime = mtime.replace(tzinfo=dt.timezone.utc)
    delta = mtime - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000


@dataclass(frozen=True)
class _Identity:
    """What the index records of the data file's version."""

    size: int
    mtime_ns: int
    etag: str


def _stat_identity(path: str) -> tuple[_Identity, int]:
    st = os.stat(path)
    return _Identity(st.st_size, st.st_mtime_ns, ""), st.st_ino


def _store_identity(identity: SourceIdentity) -> _Identity:
    return _Identity(identity.size, _ns(identity.mtime), identity.etag or "")


def _resolve_columns(
    meta: FileMetaData, columns: Sequence[str], path: str
) -> list[ColumnDescriptor]:
    out = []
    for name in columns:
        try:
            desc = meta.schema.column(name)
        except PredicateError as exc:
            raise exc.with_context(path=path) from None
        reason = unsupported_reason(desc)
        if reason is not None:
            raise UnsupportedTypeError(f"cannot index: {reason}", path=path, column=name)
        out.append(desc)
    return out


def _ndv_for(ndv: int | Mapping[str, int] | None, column: str) -> int | None:
    value = ndv.get(column) if isinstance(ndv, Mapping) else ndv
    if value is None:
        return None
    return integer("ndv", value, minimum=0, column=column)


def _index_file(
    source: str | bytes,
    meta: FileMetaData,
    descs: Sequence[ColumnDescriptor],
    identity: _Identity,
    data_file: str,
    fpp: float,
    ndv: int | Mapping[str, int] | None,
    path: str,
) -> SidecarIndex:
    """:func:`_hash_file`, with pyarrow's own failures mapped to ParquetFormatError."""
    try:
        return _hash_file(source, meta, descs, identity, data_file, fpp, ndv, path)
    except PyBloomError:
        raise
    except (ArithmeticError, LookupError, TypeError, ValueError, OSError) as exc:
        # pyarrow raises ArrowException subclasses of these (ArrowInvalid is a ValueError).
        raise ParquetFormatError(
            f"cannot read the values: {type(exc).__name__}: {exc}", path=path
        ) from exc


def _hash_file(
    source: str | bytes,
    meta: FileMetaData,
    descs: Sequence[ColumnDescriptor],
    identity: _Identity,
    data_file: str,
    fpp: float,
    ndv: int | Mapping[str, int] | None,
    path: str,
) -> SidecarIndex:
    """Hash every column over the whole file and build the filters (CPU: a worker thread)."""
    reader = ColumnReader(source)
    if reader.num_row_groups != len(meta.row_groups):
        raise ParquetFormatError(
            f"pyarrow sees {reader.num_row_groups} row groups, the footer {len(meta.row_groups)}",
            path=path,
        )
    columns: list[IndexedColumn] = []
    for desc in descs:
        uniques = []
        value_count = 0
        nulls = 0
        for rg in meta.row_groups:
            hashes = reader.hashes(rg.index, desc)
            if desc.max_repetition_level == 0 and len(hashes) > rg.num_rows:
                raise ParquetFormatError(
                    f"{len(hashes)} values in a row group of {rg.num_rows} rows",
                    path=path,
                    row_group=rg.index,
                    column=desc.path,
                )
            value_count += len(hashes)
            nulls += rg.num_rows - len(hashes)
            uniques.append(np.unique(hashes))
        distinct = np.unique(np.concatenate(uniques)) if uniques else np.empty(0, dtype=np.uint64)
        wanted = _ndv_for(ndv, desc.path)
        size_for = len(distinct) if wanted is None else wanted
        bloom = SplitBlockBloomFilter.for_ndv(size_for, fpp)
        bloom.insert_hashes(distinct)
        columns.append(
            IndexedColumn(
                descriptor=ColumnDescriptor(
                    index=len(columns),
                    path_parts=desc.path_parts,
                    physical_type=desc.physical_type,
                    type_length=desc.type_length,
                    max_repetition_level=desc.max_repetition_level,
                    logical_type=desc.logical_type,
                ),
                ndv=size_for,
                fpp=fpp,
                distinct_count=len(distinct),
                value_count=value_count,
                null_count=nulls if desc.max_repetition_level == 0 else -1,
                filter=bloom,
            )
        )
    return SidecarIndex(
        data_file=data_file,
        file_size=identity.size,
        file_mtime_ns=identity.mtime_ns,
        file_etag=identity.etag,
        num_rows=meta.num_rows,
        num_row_groups=len(meta.row_groups),
        columns=tuple(columns),
    )


def _footer_of(data: bytes, path: str) -> FileMetaData:
    location = parse_footer_tail(data, len(data), path=path)
    return decode_file_metadata(location.metadata_bytes(data), path=path, lazy=False)


@dataclass
class _BuildContext:
    reader: BloomReader
    columns: tuple[str, ...]
    fpp: float
    ndv: int | Mapping[str, int] | None
    cpu: anyio.CapacityLimiter
    max_index_bytes: int
    max_object_bytes: int
    strict: bool


async def _build_one(ctx: _BuildContext, location: str | FileInfo) -> IndexBuild:
    path = _location_text(location)
    index_path = index_location(path)
    try:
        data_file = _base_name(path)
        if is_local(path):
            local = _local_path(path)
            before, inode = await anyio.to_thread.run_sync(_stat_identity, local)
            ctx.reader.stats.add_metadata()
            meta = (await ctx.reader.footer(location)).metadata
            index = await anyio.to_thread.run_sync(
                _index_file, local, meta, _resolve_columns(meta, ctx.columns, path), before,
                data_file, ctx.fpp, ctx.ndv, path, limiter=ctx.cpu,
            )  # fmt: skip
            after, inode_after = await anyio.to_thread.run_sync(_stat_identity, local)
            ctx.reader.stats.add_metadata()
            if after != before or inode_after != inode:
                raise SourceError("the file changed while it was being indexed", path=path)
            if meta.num_rows != index.num_rows or before.size != index.file_size:
                raise SourceError("the file changed while it was being indexed", path=path)
        else:
            async with ctx.reader.open(location) as source:
                if isinstance(location, FileInfo) and location.size > ctx.max_object_bytes:
                    raise _object_too_large(location.size, ctx.max_object_bytes, path)
                data = await source.read_suffix(ctx.max_object_bytes)
                identity = await source.identity()
            if identity.size > ctx.max_object_bytes:
                raise _object_too_large(identity.size, ctx.max_object_bytes, path)
            meta = await anyio.to_thread.run_sync(_footer_of, data, path, limiter=ctx.cpu)
            index = await anyio.to_thread.run_sync(
                _index_file, data, meta, _resolve_columns(meta, ctx.columns, path),
                _store_identity(identity), data_file, ctx.fpp, ctx.ndv, path, limiter=ctx.cpu,
            )  # fmt: skip
        payload = await anyio.to_thread.run_sync(encode_index, index, limiter=ctx.cpu)
        if len(payload) > ctx.max_index_bytes:
            raise _too_large(len(payload), ctx.max_index_bytes, index_path)
        await anyio.to_thread.run_sync(_write_index, index_path, payload, ctx.reader.options)
        return IndexBuild(path, index_path, ctx.columns, index.num_rows, len(payload))
    except PyBloomError as exc:
        if ctx.strict:
            raise exc.with_context(path=path) from None
        return IndexBuild(path, index_path, ctx.columns, None, None, str(exc))


def _object_too_large(size: int, limit: int, path: str) -> SourceError:
    return SourceError(
        f"object of {size} bytes is above the limit of {limit} for indexing in memory "
        "(max_object_bytes)",
        path=path,
    )


def _write_index(location: str, payload: bytes, options: StoreOptions | None) -> None:
    if is_local(location):
        local = _local_path(location)
        try:
            os.makedirs(os.path.dirname(local) or ".", exist_ok=True)
        except OSError as exc:
            raise SourceError(f"cannot create the index folder: {exc}", path=location) from exc
    write_atomic(location, payload, options=options)


def _unique(files: Sequence[str | FileInfo]) -> list[str | FileInfo]:
    """Files in order, each path once."""
    seen: set[str] = set()
    out = []
    for f in files:
        key = _location_text(f)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


async def build_index(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo],
    columns: Sequence[str],
    *,
    fpp: float = 0.01,
    ndv: int | Mapping[str, int] | None = None,
    options: StoreOptions | Mapping[str, Any] | None = None,
    stats: SourceStats | None = None,
    concurrency: int | None = None,
    strict: bool = False,
    max_index_bytes: int = MAX_INDEX_BYTES,
    max_object_bytes: int = MAX_OBJECT_BYTES,
    progress: Callable[[int, int], None] | None = None,
) -> list[IndexBuild]:
    """Build (or replace) the sidecar index of every data file.

    Local files are read by path; object-store files are read whole into
    memory in one request. Values are hashed with
    :class:`pybloom_async.read.columns.ColumnReader` (as a writer hashes the
    physical type; nulls skipped) and one filter per column is built over the
    whole file, sized for ``ndv`` or the file's exact distinct count. Each
    index is written atomically (temporary file + fsync + rename locally, one
    PUT on object stores).

    Parameters
    ----------
    paths:
        Files, directories or object-store prefixes (expanded as by
        :func:`pybloom_async.pruning.api`; ``_bloom_index/`` is skipped).
    columns:
        Dotted paths of the columns to index.
    fpp:
        Target false-positive rate of each filter.
    ndv:
        Distinct values to size every filter for (an int, or per column); by
        default the exact distinct count of each file's column.
    options, stats:
        Object-store options and request counters.
    concurrency:
        Files indexed at once (default: the number of CPUs, at least 2).
    strict:
        Raise the first error instead of reporting it in the file's result.
    max_index_bytes, max_object_bytes:
        Limits on an index's size and on an object read into memory.
    progress:
        Called as ``progress(done, total)`` after each file.

    Returns
    -------
    list of IndexBuild
        In file order; ``error`` says why a file got no index.

    Raises
    ------
    InvalidArgumentError
        No columns, or an invalid ``fpp``, ``ndv``, ``concurrency`` or limit.
    MissingDependencyError
        pyarrow (the ``arrow`` extra) is not installed.
    PyBloomError
        With ``strict=True``: the first file that could not be indexed.
    """
    if isinstance(columns, str):
        columns = [columns]
    wanted = tuple(dict.fromkeys(columns))
    if not wanted or not all(isinstance(c, str) and c for c in wanted):
        raise InvalidArgumentError("columns must name at least one column")
    cpus = os.cpu_count() or 1
    limit = positive_int("concurrency", max(2, cpus) if concurrency is None else concurrency)
    if isinstance(ndv, Mapping):
        for name in ndv:
            _ndv_for(ndv, name)
    elif ndv is not None:
        integer("ndv", ndv, minimum=0)
    reader = BloomReader(options=options, stats=stats, max_files=0)
    ctx = _BuildContext(
        reader=reader,
        columns=wanted,
        fpp=probability("fpp", fpp),
        ndv=ndv,
        cpu=anyio.CapacityLimiter(cpus),
        max_index_bytes=positive_int("max_index_bytes", max_index_bytes),
        max_object_bytes=positive_int("max_object_bytes", max_object_bytes),
        strict=strict,
    )
    require_pyarrow("build sidecar indexes")  # before any file is listed or read
    files = _unique(await expand_paths(paths, reader))
    results: list[IndexBuild] = await for_each(
        files, lambda loc: _build_one(ctx, loc), limit, progress
    )
    return results


def build_index_sync(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo],
    columns: Sequence[str],
    **kwargs: Any,
) -> list[IndexBuild]:
    """:func:`build_index` for scripts: runs its own event loop (not from inside one).

    Raises
    ------
    EventLoopError
        Called from a thread that runs an event loop: use ``await build_index(...)`` there.
    """
    return run_in_new_loop(
        lambda: build_index(paths, columns, **kwargs),
        caller="build_index_sync",
        instead="build_index",
    )


# ---- pruning ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Outcome:
    excluded: bool
    rule: Rule
    reason: str


def _eval_leaf(leaf: Leaf | None, column: str, entry: IndexedColumn | None) -> _Outcome:
    if entry is None or leaf is None:
        return _Outcome(False, Rule.NO_INDEX, f"{column} is not in the sidecar index")
    if leaf.null_probe:
        known = entry.null_count >= 0 and entry.descriptor.max_repetition_level == 0
        if leaf.null_safe and known and entry.null_count == 0:
            return _Outcome(True, Rule.SIDECAR_INDEX, f"{column} has no nulls (sidecar index)")
        if leaf.null_safe and known:
            return _Outcome(
                False, Rule.MAY_MATCH, f"{column} has {entry.null_count} nulls (sidecar index)"
            )
        return _Outcome(False, Rule.NEVER_PRUNES, f"{leaf.label}: NULL probes never prune")
    if leaf.never_prunes is not None:
        return _Outcome(False, Rule.NEVER_PRUNES, leaf.never_prunes)
    if not leaf.keys:
        why = "; ".join(leaf.cannot) or "no value"
        return _Outcome(True, Rule.SIDECAR_INDEX, f"{column} cannot hold {why}")
    if entry.filter.count_hashes(leaf.hashes) == 0:
        return _Outcome(True, Rule.SIDECAR_INDEX, f"{leaf.label}: excluded by the sidecar index")
    return _Outcome(False, Rule.MAY_MATCH, f"{leaf.label}: the sidecar index may contain it")


def _evaluate(p: Predicate, index: SidecarIndex, cache: LeafCache) -> _Outcome:
    if isinstance(p, (Eq, In)):
        entry = index.column(p.column)
        leaf = None
        if entry is not None:
            key = (id(p), entry.descriptor)
            leaf = cache.get(key)
            if leaf is None:
                leaf = cache[key] = build_leaf(p, entry.descriptor)
        return _eval_leaf(leaf, p.column, entry)
    if isinstance(p, And):
        kept = []
        for child in p.children:
            out = _evaluate(child, index, cache)
            if out.excluded:
                return out
            kept.append(out)
        rule = next(
            (r for r in (Rule.NO_INDEX, Rule.NEVER_PRUNES) if any(o.rule is r for o in kept)),
            Rule.MAY_MATCH,
        )
        return _Outcome(False, rule, _join(o.reason for o in kept))
    if isinstance(p, Or):
        outs = []
        for child in p.children:
            out = _evaluate(child, index, cache)
            if not out.excluded:
                return out
            outs.append(out)
        return _Outcome(True, Rule.SIDECAR_INDEX, _join(o.reason for o in outs))
    raise PredicateError(f"unsupported predicate {type(p).__name__}")


def _join(reasons: Any) -> str:
    seen: list[str] = []
    for r in reasons:
        if r and r not in seen:
            seen.append(r)
    text = "; ".join(seen)
    return text if len(text) <= 400 else text[:397] + "..."


def _stale_reason(index: SidecarIndex, now: _Identity, name: str) -> str | None:
    if index.data_file != name:
        return f"the index was built for {index.data_file[:200]!r}"
    if index.file_size != now.size:
        return f"file size is {now.size}, the index was built for {index.file_size}"
    if index.file_etag and now.etag:
        if index.file_etag != now.etag:
            return f"ETag is {now.etag}, the index was built for {index.file_etag}"
        return None
    if index.file_mtime_ns and now.mtime_ns:
        if index.file_mtime_ns != now.mtime_ns:
            return (
                f"modification time is {now.mtime_ns} ns, the index was built for "
                f"{index.file_mtime_ns} ns"
            )
        return None
    return "the file's version cannot be compared (no ETag or modification time)"


async def _current_identity(reader: BloomReader, location: str | FileInfo) -> _Identity:
    path = _location_text(location)
    if is_local(path):
        local = _local_path(path)
        try:
            identity, _ = await anyio.to_thread.run_sync(_stat_identity, local)
        except FileNotFoundError as exc:
            raise SourceNotFoundError("no such file", path=path) from exc
        except OSError as exc:
            raise SourceError(f"stat failed: {exc}", path=path) from exc
        reader.stats.add_metadata()
        return identity
    if isinstance(location, FileInfo):
        return _store_identity(SourceIdentity(path, location.size, location.etag, location.mtime))
    async with reader.open(location) as source:
        return _store_identity(await source.identity())  # one HEAD, counted


@dataclass
class _PruneContext:
    reader: BloomReader
    where: Predicate
    strict: bool
    max_index_bytes: int
    cache: LeafCache


async def _decide_file(ctx: _PruneContext, location: str | FileInfo) -> Verdict:
    path = _location_text(location)
    index_path = index_location(path)
    got: dict[str, Any] = {}

    async def fetch_index() -> None:
        try:
            got["data"] = await _read_index_bytes(ctx.reader, index_path, ctx.max_index_bytes)
        except PyBloomError as exc:
            got["index_error"] = exc

    async def fetch_identity() -> None:
        try:
            got["identity"] = await _current_identity(ctx.reader, location)
        except PyBloomError as exc:
            got["file_error"] = exc

    async with anyio.create_task_group() as tg:  # both at once: one round trip
        tg.start_soon(fetch_index)
        tg.start_soon(fetch_identity)
    try:
        if "file_error" in got:
            exc: PyBloomError = got["file_error"]
            if ctx.strict:
                raise exc
            return Verdict(path, None, None, True, f"file not pruned: {exc}", Rule.UNREADABLE)
        if "index_error" in got:
            raise got["index_error"]
        index = parse_index(got["data"], path=index_path, max_filter_bytes=ctx.max_index_bytes)
    except SourceNotFoundError as exc:
        if ctx.strict:
            raise exc.with_context(path=path) from None
        return Verdict(path, None, None, True, f"no sidecar index: {exc}", Rule.NO_INDEX)
    except PyBloomError as exc:
        if ctx.strict:
            raise exc.with_context(path=path) from None
        return Verdict(path, None, None, True, f"unusable sidecar index: {exc}", Rule.NO_INDEX)
    stale = _stale_reason(index, got["identity"], _base_name(path))
    if stale is not None:
        if ctx.strict:
            raise IndexStaleError(f"sidecar index is stale: {stale}", path=path)
        return Verdict(path, None, None, True, f"stale sidecar index: {stale}", Rule.STALE_INDEX)
    try:
        out = _evaluate(ctx.where, index, ctx.cache)
    except PredicateError as exc:  # a literal that is not of its column's type
        raise exc.with_context(path=path) from None
    return Verdict(path, None, index.num_rows, not out.excluded, out.reason, out.rule)


async def prune_with_index(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo],
    where: Predicate | str,
    *,
    options: StoreOptions | Mapping[str, Any] | None = None,
    stats: SourceStats | None = None,
    concurrency: int | None = None,
    strict: bool = False,
    progress: Callable[[int, int], None] | None = None,
    row_groups: bool = True,
    max_index_bytes: int = MAX_INDEX_BYTES,
    config: ReaderConfig | None = None,
    reader: BloomReader | None = None,
    index_verdicts: list[Verdict] | None = None,
    require_columns: bool = True,
) -> list[Verdict]:
    """Decide which files (then row groups) may hold matching rows, from sidecar indexes.

    The indexes of all files are read concurrently, one request each, and
    checked against the data file's current size and modification time or
    ETag. Each file gets a file-level verdict (``row_group`` None,
    ``num_rows`` the file's rows): pruned by the index
    (:attr:`Rule.SIDECAR_INDEX`), or kept: the index admits a value
    (``MAY_MATCH``), a NULL/NaN probe (``NEVER_PRUNES``), no usable index or a
    predicate column not indexed (``NO_INDEX``), or a stale index
    (``STALE_INDEX``). With ``row_groups=True`` the kept files then go through
    :func:`pybloom_async.pruning.api` (in-file filters and statistics), and their
    row-group verdicts replace the file verdict.

    Parameters
    ----------
    paths:
        Files, directories or object-store prefixes (listed entries carry the
        size and ETag, so no HEAD is needed; files named by URL cost one HEAD).
    where:
        A predicate or its text form: ``=``, ``IN``, ``<=>`` (``<=> NULL`` keeps
        files with nulls and prunes files without), AND, OR.
    options, stats, concurrency, config, reader:
        As for :func:`pybloom_async.pruning.api`.
    strict:
        Raise on a missing, damaged, stale or oversized index (and on what
        :func:`prune` raises for) instead of keeping the file.
    progress:
        Called as ``progress(done, total)`` after each file of each pass.
    row_groups:
        Also prune the row groups of the files the indexes keep.
    max_index_bytes:
        Indexes larger than this are not read (the file is kept).
    index_verdicts:
        If given, the file-level verdicts of the index pass are appended to it
        (for reports: how many files the indexes pruned, were stale or missing).
    require_columns:
        As for :func:`pybloom_async.pruning.api`: checked by the row-group pass, and
        only when the indexes ruled out no file (the footer of a file they rule
        out is not read, so its columns are unknown).

    Returns
    -------
    list of Verdict
        In file order; row-group order within a file.

    Raises
    ------
    PredicateError
        ``where`` is malformed, a literal is not a value of its column's type
        (naming the file), or no file has a column of ``where`` (see
        ``require_columns``).
    PyBloomError
        With ``strict=True``, the first problem met.
    """
    predicate = as_predicate(where)
    rdr = reader or BloomReader(
        config=config or ReaderConfig(), options=options, stats=stats, max_files=1 << 20
    )
    limit = files_at_once(concurrency, rdr.config)
    ctx = _PruneContext(
        reader=rdr,
        where=predicate,
        strict=strict,
        max_index_bytes=positive_int("max_index_bytes", max_index_bytes),
        cache={},
    )
    try:
        files = _unique(await expand_paths(paths, rdr))
        decided: list[Verdict] = await for_each(
            files, lambda loc: _decide_file(ctx, loc), limit, progress
        )
        if index_verdicts is not None:
            index_verdicts.extend(decided)
        if not row_groups:
            return decided
        kept = [loc for loc, v in zip(files, decided, strict=True) if v.kept]
        by_file: dict[str, list[Verdict]] = {}
        if kept:
            # A file the index pruned had its footer unread: its columns are unknown.
            every_file = require_columns and len(kept) == len(files)
            for v in await _prune_row_groups(
                kept,
                predicate,
                strict=strict,
                concurrency=limit,
                reader=rdr,
                progress=progress,
                require_columns=every_file,
            ):
                by_file.setdefault(v.file, []).append(v)
    finally:
        if reader is None:
            rdr.clear()
    out: list[Verdict] = []
    for v in decided:
        out.extend(by_file.get(v.file, [v]) if v.kept else [v])
    return out


def prune_with_index_sync(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo],
    where: Predicate | str,
    **kwargs: Any,
) -> list[Verdict]:
    """:func:`prune_with_index` for scripts: runs its own event loop (not from inside one).

    Raises
    ------
    EventLoopError
        Called from a thread that runs an event loop: use ``await prune_with_index(...)``
        there.
    """
    return run_in_new_loop(
        lambda: prune_with_index(paths, where, **kwargs),
        caller="prune_with_index_sync",
        instead="prune_with_index",
    )
