"""The typed footer model: FileMetaData and its row groups, decoded lazily (the column chunks:
:mod:`.chunks`).

How a footer is located and decoded (pure functions over bytes; no I/O):

A Parquet file ends with ``<FileMetaData> <4-byte little-endian length> PAR1``
and starts with ``PAR1``. The async reader fetches a suffix of the file and
calls :func:`.tail.parse_footer_tail` to find the FileMetaData; when the suffix does
not reach back far enough, :meth:`FooterBounds.missing_range` says which
bytes to fetch. :func:`.decode.decode_file_metadata` then turns the thrift
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

from collections.abc import Iterable, Sequence

from . import thrift_specs as wire
from .chunks import ChunkPlace, ChunkTable, ColumnChunk, GroupChunks
from .elements import (
    KeyValue,
)
from .footer_bytes import FooterBytes
from .scan import ChunkRecords, ScanLeaves
from .schema import Schema
from .thrift import lenient_text


class RowGroup:
    """One row group: its size and its column chunks in schema-leaf order.

    The column chunks of all row groups are decoded and validated together, the
    first time any row group's :attr:`columns` is read (see
    :func:`decode_file_metadata`).
    """

    __slots__ = ("_chunks", "_head", "_index")

    def __init__(self, index: int, head: wire.RowGroup, chunks: ChunkTable) -> None:
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


#: Sets of leaves whose chunks a footer keeps (:meth:`FileMetaData.chunks_of`).
_MAX_CHUNK_SETS = 8
#: The scanner's records a footer keeps for a set of leaves, at most (bytes): a wide file's
#: records of every leaf are made and let go.
_KEPT_RECORDS_BYTES = 64 * 1024


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
        "_records",
        "_row_groups",
        "_scans",
        "_schema",
        "_source",
        "_version",
    )

    def __init__(
        self,
        source: FooterBytes,
        head: wire.FileMetaData,
        schema: Schema,
        raw_paths: list[list[bytes]],
        with_chunks: bool,
    ) -> None:
        self._source = source
        self._version: int = head.version  # type: ignore[assignment]  # checked by the caller
        self._num_rows: int = head.num_rows  # type: ignore[assignment]  # checked by the caller
        self._schema = schema
        self._created_by = lenient_text(head.created_by)
        raw = head.row_groups if with_chunks else None
        chunks = self._chunks = ChunkTable(source, schema, raw_paths, raw)
        self._row_groups = tuple(
            RowGroup(index, group, chunks) for index, group in enumerate(head.row_groups or ())
        )
        self._scans: dict[tuple[int, ...], tuple[GroupChunks, ...]] = {}
        self._records: dict[tuple[int, ...], ChunkRecords | None] = {}

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

    def schema_elements(self) -> list[wire.SchemaElement]:
        """The schema's elements as the footer's thrift holds them, in footer order,
        decoded on each call (what :func:`.page_index.single_column_file` copies)."""
        return self._source.schema_elements()

    def column_chunks(self, path: str | Sequence[str]) -> tuple[ColumnChunk, ...]:
        """The chunks of one column, one per row group.

        Raises
        ------
        ColumnNotFoundError
            No such column, or the dotted path is ambiguous.
        ParquetFormatError, EncryptedFileError
            The footer's column chunks are invalid (found on first access).
        """
        index = self.schema.column(path).index
        return tuple(group[index] for group in self._chunks.get())

    def chunks_of(self, indexes: Iterable[int]) -> tuple[GroupChunks, ...]:
        """The chunks of the leaves ``indexes`` in every row group: what pruning reads.

        Unless :attr:`RowGroup.columns` was read already, the C footer scanner
        (:mod:`.scan`) reads them without decoding the others; they are equal to those
        of :attr:`RowGroup.columns`, and every chunk of the footer is checked all the same.
        A footer the scanner refuses is decoded, and raises as :attr:`RowGroup.columns`.

        Raises
        ------
        ParquetFormatError, EncryptedFileError
            The footer's column chunks are invalid.
        """
        key = tuple(sorted(set(indexes)))
        found = self._scans.get(key)
        if found is None:
            if len(self._scans) >= _MAX_CHUNK_SETS:
                self._scans.clear()
            kept = self._records_kept(key)
            found = self._scans[key] = self._chunks.some(key, self._row_groups, kept)
        return found

    def chunk(self, group: int, leaf: int) -> ColumnChunk:
        """Leaf ``leaf``'s chunk in row group ``group``, as :meth:`chunks_of` gives it: made
        alone from the scanner's records of every leaf where they are kept (small footers),
        so that a file read for a few columns makes no object for the others' chunks.

        Raises
        ------
        ParquetFormatError, EncryptedFileError
            The footer's column chunks are invalid.
        """
        records = self._every_records()
        if records is not None:
            return self._chunks.one(records, self._row_groups[group], leaf)
        return self.chunks_of(range(len(self._schema.columns)))[group].columns[leaf]

    def offset_indexed(self, group: int) -> bool:
        """Whether a chunk of row group ``group`` records where its offset index (the page
        index) lies: from the scanner's records where they are kept, no chunk object made."""
        records = self._every_records()
        if records is not None:
            return records.offset_indexed(group)
        chunks = self.chunks_of(range(len(self._schema.columns)))[group].columns.values()
        return any(c.has_offset_index for c in chunks)

    def _every_records(self) -> ChunkRecords | None:
        """The scanner's records of every leaf when they are kept (see :meth:`chunk_records`)
        and no chunk object of every leaf is made yet; None otherwise: then
        :meth:`chunks_of` serves (its objects are kept, a large footer scanned once)."""
        every = tuple(range(len(self._schema.columns)))
        if every in self._scans or self._chunks.decoded:
            return None
        records = self.chunk_records(every)
        return records if every in self._records else None

    def chunk_places(self, indexes: Sequence[int]) -> list[list[ChunkPlace]]:
        """The places (:attr:`ColumnChunk.place`) of the leaves ``indexes`` (distinct,
        ascending) in every row group: from the C scanner's records, with no chunk object
        made, where they place the chunks; from the chunks (:meth:`chunks_of`) otherwise.

        Raises
        ------
        ParquetFormatError, EncryptedFileError
            The footer's column chunks are invalid.
        """
        key = tuple(indexes)
        records = self.chunk_records(key)
        raw = (
            records.places() if records is not None else [None] * (len(self._row_groups) * len(key))
        )
        chunks: tuple[GroupChunks, ...] | None = None
        out = []
        for g in range(len(self._row_groups)):
            row = []
            for k, leaf in enumerate(key):
                found = raw[g * len(key) + k]
                if found is None:
                    if chunks is None:
                        chunks = self.chunks_of(key)
                    row.append(chunks[g].columns[leaf].place)
                else:
                    row.append(ChunkPlace.of(found))
            out.append(row)
        return out

    def chunk_records(self, indexes: Sequence[int]) -> ChunkRecords | None:
        """The chunks of the leaves ``indexes`` (distinct, ascending) as the C scanner's
        records, for native code; None when the scanner does not read this footer as the
        decoder does (:meth:`chunks_of` then says why, or reads it). Those of every leaf,
        once scanned and small, serve any other set of leaves with no second scan."""
        key = tuple(indexes)
        found = self._records_kept(key)
        if found is None and key not in self._records:
            found = self._chunks.records(key, self._row_groups)
            if found is None or len(found.chunks) <= _KEPT_RECORDS_BYTES:
                if len(self._records) >= _MAX_CHUNK_SETS:
                    self._records.clear()
                self._records[key] = found
        return found

    def _records_kept(self, key: tuple[int, ...]) -> ChunkRecords | None:
        """The records of the leaves ``key`` kept already, or picked from those of every
        leaf kept already; None: none are."""
        if key in self._records:
            return self._records[key]
        every = self._records.get(tuple(range(len(self._schema.columns))))
        return None if every is None else every.picked(key)

    def scan_leaves(self) -> ScanLeaves:
        """The schema's leaves as the C footer scanner takes them (made once per schema)."""
        return self._chunks.leaves()

    def head_spans(self) -> tuple[tuple[int, int], tuple[int, int]] | None:
        """Where the schema's bytes (the FileMetaData's ``schema`` list) and the key/value
        metadata's lie in the footer's bytes, each as ``(offset, length)``: what tells
        another footer of the same schema without decoding it; None when the C scanner
        refuses the footer."""
        return self._chunks.head_spans(len(self._row_groups))

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
