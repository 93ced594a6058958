"""The lake index segment: block-major bitsets per column, a directory, a CRC per section.

The layout is documented in ``docs/lake-index.md`` (the reference); in short::

    magic       8 bytes  b"PBLAKE1\\n"
    sections    per indexed column, B stripes; stripe b is block b of file 0 .. N-1
                (N * 32 bytes) followed by the CRC-32 of those bytes (4 bytes, LE)
    digest      (version 2) per file, then per distinct schema, a record: the footer's
                FileMetaData bytes zlib-compressed, then their CRC-32 (4 bytes, LE)
    directory   zlib-compressed UTF-8 JSON (files, columns, offsets, the records' lengths)
    trailer     28 bytes: directory offset u64, directory length u32, directory CRC-32 u32,
                format version u16, flags u16 (0), magic b"PBLAKE1\\n"

One suffix read returns the trailer and (usually) the directory and the schema records;
one ranged read of ``N * 32 + 4`` bytes returns a stripe and its CRC; the digest records
of the files a lookup reads come in one more (merged) read.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..checks import path_text
from ..errors import ParquetFormatError, PyBloomError
from ..parquet import ColumnDescriptor
from ..parquet.logical import logical_text, parse_logical
from ..types import PhysicalType
from ..version import __version__

FORMAT_NAME = "pybloom-async lake index"
#: The version written: 2 adds the footer digest (version 1 segments are still read).
FORMAT_VERSION = 2
READ_VERSIONS = (1, 2)
#: A digest record inflates to at most this (a larger footer is left out of the digest).
MAX_RECORD_BYTES = 64 * 1024 * 1024
MAGIC = b"PBLAKE1\n"
#: Where the segments of a lake rooted at ``root`` live: ``<root>/_bloom_index/_lake.v1/``.
LAKE_DIR = "_bloom_index/_lake.v1"
TRAILER = struct.Struct("<QIIHH8s")
#: Directories larger than this (compressed or not) are refused before any allocation.
MAX_DIRECTORY_BYTES = 256 * 1024 * 1024
_CRC = struct.Struct("<I")


def lake_dir(root: str | os.PathLike[str]) -> str:
    """The folder (or prefix) holding the lake index of the files under ``root``."""
    text = path_text("root", root)
    return text.rstrip("/") + "/" + LAKE_DIR + "/"


class LakeFile(NamedTuple):
    """One data file of a segment's directory, as it was when indexed.

    A named tuple: a directory of 100,000 files makes 100,000 of them.
    """

    name: str  # relative to the lake's root, "/"-separated
    size: int
    etag: str | None
    mtime_ns: int | None
    num_rows: int | None
    inode: int | None = None  # local files; None on object stores, or not recorded
    ctime_ns: int | None = None


@dataclass(frozen=True)
class LakeColumn:
    """One indexed column of a segment: its type, block count, sizing and section."""

    descriptor: ColumnDescriptor
    num_blocks: int
    ndv: int
    fpp: float
    offset: int  # of stripe 0 in the segment
    #: Files whose blocks hold nothing for this column (it is missing from them, or of
    #: another type there): never pruned through this column.
    uncovered: frozenset[int]
    #: Files folded from their in-file filters (the others were built from values).
    folded: frozenset[int] = frozenset()

    @property
    def path(self) -> str:
        """The dotted column path."""
        return self.descriptor.path

    def stripe_range(self, block: int, num_files: int) -> tuple[int, int]:
        """``[start, end)`` of stripe ``block`` and its CRC in the segment."""
        width = num_files * 32 + _CRC.size
        start = self.offset + block * width
        return start, start + width


@dataclass(frozen=True)
class Digest:
    """Where a segment's footer digest lies: each file's record (``[start, end)`` in the
    segment; None: not recorded) and schema number, and each distinct schema's record."""

    files: tuple[tuple[int, int] | None, ...]
    schema_of: tuple[int | None, ...]
    schemas: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class DigestRecords:
    """What :func:`encode_segment` writes as the digest: per file its record
    (:func:`digest_record`) and schema number, or None; the distinct schemas' records."""

    files: Sequence[tuple[bytes, int] | None]
    schemas: Sequence[bytes]


def digest_record(metadata: bytes | memoryview) -> bytes:
    """A digest record: a footer's FileMetaData bytes compressed, then their CRC-32."""
    packed = zlib.compress(bytes(metadata), 6)
    return packed + _CRC.pack(zlib.crc32(packed))


def record_metadata(record: bytes, path: str) -> bytes:
    """The FileMetaData bytes of a digest record, its CRC checked.

    Raises
    ------
    ParquetFormatError
        The record fails its CRC, or does not inflate within :data:`MAX_RECORD_BYTES`.
    """
    if not stripe_crc_ok(record):
        raise ParquetFormatError("a lake index digest record fails its CRC", path=path)
    try:
        inflater = zlib.decompressobj()
        raw = inflater.decompress(record[: -_CRC.size], MAX_RECORD_BYTES)
    except zlib.error as exc:
        raise ParquetFormatError(
            f"a lake index digest record is unreadable: {exc}", path=path
        ) from None
    if inflater.unconsumed_tail or not inflater.eof:
        raise ParquetFormatError("a lake index digest record is truncated or too large", path=path)
    return raw


@dataclass(frozen=True)
class Segment:
    """A decoded segment directory (the bitsets stay in the object)."""

    files: tuple[LakeFile, ...]
    columns: tuple[LakeColumn, ...]
    created_by: str = f"pybloom-async {__version__}"
    #: A table's index: what it covers (``{"format": "delta", "version": 12}``,
    #: ``{"format": "iceberg", "snapshot-id": ...}``); None for a plain lake.
    table: Mapping[str, Any] | None = None
    #: The footer digest (format version 2); None: the files' footers are read.
    digest: Digest | None = None

    def column(self, path: str) -> LakeColumn | None:
        """The indexed column of this dotted path, or None."""
        for c in self.columns:
            if c.path == path:
                return c
        return None


def encode_segment(
    files: Sequence[LakeFile],
    columns: Sequence[tuple[LakeColumn, bytes | bytearray | memoryview]],
    table: Mapping[str, Any] | None = None,
    digest: DigestRecords | None = None,
) -> bytes:
    """The segment object: ``columns`` pairs each column with its block-major bitset;
    ``table``: what a table's index covers (recorded in the directory); ``digest``: the
    files' footers (None: a segment whose readers read the footers).

    The columns' ``offset`` is ignored and recomputed. Raises ValueError when a
    bitset is not ``num_blocks * len(files) * 32`` bytes, or the digest does not list
    every file or names a schema it lacks.
    """
    n = len(files)
    parts: list[bytes | memoryview] = [MAGIC]
    at = len(MAGIC)
    described = []
    for col, bits in columns:
        view = memoryview(bits).cast("B")
        stripe = n * 32
        if len(view) != col.num_blocks * stripe:
            raise ValueError(f"{col.path}: bitset of {len(view)} bytes for {n} files")
        described.append(_column_json(col, at))
        for b in range(col.num_blocks):
            piece = view[b * stripe : (b + 1) * stripe]
            parts.append(piece)
            parts.append(_CRC.pack(zlib.crc32(piece)))
        at += col.num_blocks * (stripe + _CRC.size)
    described_digest = None
    if digest is not None:
        if len(digest.files) != n:
            raise ValueError(f"a digest of {len(digest.files)} files for {n}")
        listed: list[list[int] | None] = []
        for item in digest.files:
            if item is None:
                listed.append(None)
                continue
            record, schema = item
            if not 0 <= schema < len(digest.schemas):
                raise ValueError(f"schema {schema} is not in the digest")
            parts.append(record)
            listed.append([len(record), schema])
        parts.extend(digest.schemas)
        described_digest = {"files": listed, "schemas": [len(r) for r in digest.schemas]}
        at += sum(len(r) for r, _ in filter(None, digest.files)) + sum(map(len, digest.schemas))
    directory = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "created_by": f"pybloom-async {__version__}",
        "files": [[f.name, f.size, f.etag, f.mtime_ns, f.num_rows] for f in files],
        "columns": described,
    }
    if table is not None:
        directory["table"] = dict(table)
    if described_digest is not None:
        directory["digest"] = described_digest
    if any(f.inode is not None for f in files):
        # A key of its own: readers that predate it read "files" as they always did.
        directory["local_files"] = [
            None if f.inode is None else [f.inode, f.ctime_ns] for f in files
        ]
    packed = zlib.compress(json.dumps(directory, separators=(",", ":")).encode(), 6)
    parts.append(packed)
    parts.append(TRAILER.pack(at, len(packed), zlib.crc32(packed), FORMAT_VERSION, 0, MAGIC))
    return b"".join(parts)


def _column_json(col: LakeColumn, offset: int) -> dict[str, Any]:
    d = col.descriptor
    return {
        "path": d.path_parts,
        "physical_type": d.physical_type.name,
        "type_length": d.type_length,
        "logical_type": logical_text(d.logical_type, d.path),
        "max_repetition_level": d.max_repetition_level,
        "num_blocks": col.num_blocks,
        "ndv": col.ndv,
        "fpp": col.fpp,
        "offset": offset,
        "uncovered": sorted(col.uncovered),
        "folded": sorted(col.folded),
    }


def decode_trailer(tail: bytes, object_size: int, path: str) -> tuple[int, int, int]:
    """``(directory offset, length, crc)`` from the last bytes of a segment, checked.

    Raises
    ------
    ParquetFormatError
        Not a segment, an unknown version, or offsets outside the object.
    """
    if len(tail) < TRAILER.size:
        raise ParquetFormatError("too short for a lake index segment", path=path)
    offset, length, crc, version, _flags, magic = TRAILER.unpack(tail[-TRAILER.size :])
    if magic != MAGIC:
        raise ParquetFormatError("not a lake index segment (bad magic)", path=path)
    if version not in READ_VERSIONS:
        raise ParquetFormatError(f"lake index version {version} is not supported", path=path)
    if length > MAX_DIRECTORY_BYTES:
        raise ParquetFormatError(
            f"directory of {length} bytes is above the limit of {MAX_DIRECTORY_BYTES}", path=path
        )
    if offset < len(MAGIC) or offset + length + TRAILER.size != object_size:
        raise ParquetFormatError("directory offsets do not fit the segment", path=path)
    return offset, length, crc


def stripe_crc_ok(piece: bytes) -> bool:
    """Whether a stripe read with its trailing CRC-32 is intact."""
    if len(piece) < _CRC.size:
        return False
    (want,) = _CRC.unpack(piece[-_CRC.size :])
    return bool(zlib.crc32(piece[: -_CRC.size]) == want)


def decode_directory(packed: bytes, crc: int, data_offset: int, path: str) -> Segment:
    """The directory of a segment from its compressed bytes, every field checked.

    ``data_offset`` is where the directory starts: every column's stripes must end there.

    Raises
    ------
    ParquetFormatError
        A CRC mismatch, bad compression or JSON, a field missing or of the wrong type.
    """
    if zlib.crc32(packed) != crc:
        raise ParquetFormatError("lake index directory fails its CRC", path=path)
    try:
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, MAX_DIRECTORY_BYTES)
        if inflater.unconsumed_tail:
            raise ParquetFormatError("lake index directory is too large", path=path)
        doc = json.loads(raw)
    except (zlib.error, ValueError) as exc:
        raise ParquetFormatError(f"lake index directory is unreadable: {exc}", path=path) from None
    try:
        return _segment_of(doc, data_offset, path)
    except PyBloomError:
        raise
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise ParquetFormatError(
            f"lake index directory is malformed: {type(exc).__name__}: {exc}", path=path
        ) from None


def _int(value: Any, minimum: int = 0) -> int:
    if type(value) is not int or value < minimum:
        raise ValueError(f"expected an integer >= {minimum}, got {value!r}")
    return value


def _opt(value: Any, kind: type) -> Any:
    if value is not None and type(value) is not kind:
        raise ValueError(f"expected {kind.__name__} or null, got {value!r}")
    return value


def _segment_of(doc: Any, data_offset: int, path: str) -> Segment:
    written = doc.get("version")
    if doc.get("format") != FORMAT_NAME or written not in READ_VERSIONS:
        raise ParquetFormatError("not a version 1 or 2 lake index directory", path=path)
    files = []
    for entry in doc["files"]:
        name, size, etag, mtime, rows = entry
        if type(name) is not str or not name:
            raise ValueError(f"bad file name {name!r}")
        files.append(LakeFile(name, _int(size), _opt(etag, str), _opt(mtime, int), _opt(rows, int)))
    n = len(files)
    local = doc.get("local_files")
    if local is not None:
        if type(local) is not list or len(local) != n:
            raise ValueError("local_files does not list every file")
        for i, version in enumerate(local):
            if version is not None:
                inode, ctime = version
                files[i] = files[i]._replace(inode=_int(inode), ctime_ns=_int(ctime))
    columns = []
    at = len(MAGIC)
    for i, c in enumerate(doc["columns"]):
        parts = tuple(c["path"])
        if not parts or not all(type(p) is str for p in parts):
            raise ValueError(f"bad column path {parts!r}")
        ptype = PhysicalType[c["physical_type"]]
        type_length = _opt(c["type_length"], int)
        desc = ColumnDescriptor(
            index=i,
            path_parts=parts,
            physical_type=ptype,
            type_length=type_length,
            max_repetition_level=_int(c["max_repetition_level"]),
            logical_type=parse_logical(c["logical_type"]),
        )
        blocks = _int(c["num_blocks"], 1)
        if blocks & (blocks - 1) or blocks > 1 << 22:
            raise ValueError(f"num_blocks {blocks} is not a power of two up to 2**22")
        offset = _int(c["offset"])
        if offset != at:
            raise ValueError(f"column {desc.path} starts at {offset}, expected {at}")
        at += blocks * (n * 32 + _CRC.size)
        uncovered = frozenset(_int(x) for x in c["uncovered"])
        folded = frozenset(_int(x) for x in c["folded"])
        if any(x >= n for x in uncovered | folded):
            raise ValueError("a file number is out of range")
        fpp = c["fpp"]
        if type(fpp) is not float or not 0.0 < fpp < 1.0:
            raise ValueError(f"bad fpp {fpp!r}")
        columns.append(LakeColumn(desc, blocks, _int(c["ndv"]), fpp, offset, uncovered, folded))
    described = doc.get("digest") if written >= 2 else None
    digest = None
    if described is not None:
        digest, at = _digest_of(described, n, at)
    if at != data_offset:
        raise ParquetFormatError(
            f"the sections end at {at}, the directory starts at {data_offset}", path=path
        )
    table = doc.get("table")
    if table is not None and not (
        isinstance(table, dict)
        and all(type(k) is str and type(v) in (str, int) for k, v in table.items())
    ):
        raise ValueError(f"bad table {table!r}")
    created_by = str(doc.get("created_by", ""))
    return Segment(tuple(files), tuple(columns), created_by, table, digest)


def _digest_of(described: Any, n: int, start: int) -> tuple[Digest, int]:
    """The digest's records placed from ``start`` (where the sections end): the files',
    then the schemas'; and where they end."""
    listed, schema_lengths = described["files"], described["schemas"]
    if type(listed) is not list or len(listed) != n or type(schema_lengths) is not list:
        raise ValueError("the digest does not list every file")
    at = start
    files: list[tuple[int, int] | None] = []
    schema_of: list[int | None] = []
    for item in listed:
        if item is None:
            files.append(None)
            schema_of.append(None)
            continue
        length, schema = item
        _int(length, _CRC.size + 1)
        if _int(schema) >= len(schema_lengths):
            raise ValueError(f"digest schema {schema} is out of range")
        files.append((at, at + length))
        schema_of.append(schema)
        at += length
    schemas = []
    for length in schema_lengths:
        _int(length, _CRC.size + 1)
        schemas.append((at, at + length))
        at += length
    return Digest(tuple(files), tuple(schema_of), tuple(schemas)), at
