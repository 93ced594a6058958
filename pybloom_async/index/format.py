"""File-level sidecar Bloom filter indexes: one small Parquet file per data file.

In-file filters answer per row group and cost a footer read per file. A
sidecar index answers per *file* from one small object read in one request:
for ``dir/name.parquet`` it is ``dir/_bloom_index/name.parquet.index.v1.pbi``. Other
engines must not take it for data: the leading ``_`` hides the folder from Spark, Hive,
pyarrow's datasets and our own listings, and the name does not end in ``.parquet``, so
the usual globs (DuckDB's and Polars' ``lake/**/*.parquet``) do not take it either.
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
    format_version   int32    1 (also in the file name: .index.v1.pbi)
    created_by       string   "pybloom-async <version>"
    data_file        string   the data file's base name
    file_size        int64    the data file's size in bytes when indexed
    file_mtime_ns    int64    its modification time in ns since the epoch
                              (local: st_mtime_ns; object stores: Last-Modified; 0: unknown)
    file_etag        string   its ETag on an object store ("" for local files)
    file_inode       int64    its inode number (local files; 0 on object stores)
    file_ctime_ns    int64    its status change time in ns, st_ctime_ns (local files;
                              0 on object stores)
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

Staleness: the index records the data file's size, modification time, inode
and change time (local) or ETag (object stores). Pruning compares them with the
file as it is now (a ``stat``; on object stores the listing's entry, or one HEAD
for a file named by URL); any difference keeps the file
(:attr:`Rule.STALE_INDEX`). Size and time alone would trust a file replaced at
the same size with its time carried over (``cp -p``, ``rsync -t``, ``tar x``):
it is a new inode, or a new change time when written in place
(:func:`pybloom_async.io.identity.version_change`). ``file_inode`` and
``file_ctime_ns`` came after the first indexes of version 1 were written:
readers that predate them ignore them, and an index without them is stale for a
local file (rebuild it) and still used on object stores. A missing or
unreadable index, or a predicate column the index lacks, keeps the file too
(:attr:`Rule.NO_INDEX`). There are no false negatives.

Earlier names: versions before this one named the same file
``dir/_bloom_index/name.parquet.index.v1.parquet`` (:func:`legacy_index_location`),
which ``lake/**/*.parquet`` globs read as data. Readers look for the current name first
and read the earlier one only when the current one does not exist: when both exist the
current one is used, stale or not. :func:`~pybloom_async.index.build.build_index`
removes the earlier name once the current one is written; renaming the file is enough
too (the bytes are the same)."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import Any

from ..checks import path_text, require_pyarrow
from ..core.filter import SplitBlockBloomFilter
from ..errors import InvalidArgumentError
from ..io.address import parse_address
from ..parquet import ColumnDescriptor
from ..parquet.logical import logical_text
from ..version import __version__

#: The folder, next to the data files, that holds their indexes.
INDEX_DIR = "_bloom_index"
#: The value of the index's ``format`` column.
FORMAT_NAME = "pybloom-async sidecar index"
#: The index layout this module writes and reads.
FORMAT_VERSION = 1
#: The end of an index's name: not ``.parquet``, so that no glob for data files takes it.
INDEX_SUFFIX = f".index.v{FORMAT_VERSION}.pbi"
#: The end of the name earlier versions gave the same file (still read, see the module doc).
LEGACY_INDEX_SUFFIX = f".index.v{FORMAT_VERSION}.parquet"
#: Indexes larger than this are neither written nor read (a filter for 50 M
#: distinct values at 1% takes 64 MiB); raise it with ``max_index_bytes``.
MAX_INDEX_BYTES = 64 * 1024 * 1024


# ---- locations ----------------------------------------------------------------------


def index_location(data_location: str | os.PathLike[str]) -> str:
    """Where the sidecar index of a data file lives.

    ``dir/name.parquet`` -> ``dir/_bloom_index/name.parquet.index.v1.pbi``,
    for local paths and object-store URLs alike.

    Raises
    ------
    InvalidArgumentError
        The location names a directory or prefix, not a file.
    """
    return _located(data_location, INDEX_SUFFIX)


def legacy_index_location(data_location: str | os.PathLike[str]) -> str:
    """Where earlier versions wrote the sidecar index of a data file (still read).

    ``dir/name.parquet`` -> ``dir/_bloom_index/name.parquet.index.v1.parquet``: the
    current name (:func:`index_location`) is used first, this one only when that one
    does not exist.

    Raises
    ------
    InvalidArgumentError
        The location names a directory or prefix, not a file.
    """
    return _located(data_location, LEGACY_INDEX_SUFFIX)


def _located(data_location: str | os.PathLike[str], suffix: str) -> str:
    text = path_text("data_location", data_location)
    if not text:
        raise InvalidArgumentError("data_location is empty: it names no file")
    if "://" in text:
        head, sep, name = text.rpartition("/")
        if not name or "://" not in head + sep or (head + sep).endswith("://"):
            raise InvalidArgumentError("not a file URL: it names no object", path=text)
        return f"{head}/{INDEX_DIR}/{name}{suffix}"
    head, name = os.path.split(text)
    if not name:
        raise InvalidArgumentError("not a file path: it ends with a separator", path=text)
    return os.path.join(head, INDEX_DIR, name + suffix)


def base_name(location: str) -> str:
    if "://" in location:
        return location.rpartition("/")[2]
    return os.path.basename(location)


def local_path(location: str) -> str:
    """The file-system path of a local path or ``file://`` URL."""
    return parse_address(location).path


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
    file_inode: int = 0  # 0: not recorded (object stores, or an index written before)
    file_ctime_ns: int = 0

    def column(self, path: str) -> IndexedColumn | None:
        """The indexed column with this dotted path, or None."""
        for c in self.columns:
            if c.path == path:
                return c
        return None


# ---- writing ----------------------------------------------------------------------------


# Long because: the index layout written in one place, field by field in file order (parse.py
# reads the same order back).
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
        req("file_inode", pa.int64()),
        req("file_ctime_ns", pa.int64()),
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
        index.file_inode,
        index.file_ctime_ns,
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
            logical_text(d.logical_type, d.path),
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
