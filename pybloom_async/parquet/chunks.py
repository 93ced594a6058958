"""The column chunks of a footer: each chunk's metadata (ColumnChunk), some chunks of one row
group (GroupChunks), and the table of every row group's chunks, decoded and validated, or
scanned for a few leaves, on first use (ChunkTable)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from ..errors import ParquetFormatError
from ..types import PhysicalType
from . import thrift_specs as wire
from .elements import (
    CODECS,
    ENCODINGS,
    PAGE_TYPES,
    PageEncodingStats,
    Statistics,
)
from .footer_bytes import FooterBytes
from .passes import CHUNKS_PASS, check_chunk, check_chunk_count
from .scan import (
    ChunkRecords,
    RawPlace,
    ScanLeaves,
    ScannedChunk,
    head_spans,
    scan_leaves,
    scan_records,
)
from .schema import ColumnDescriptor, Schema
from .thrift import lenient_text

if TYPE_CHECKING:
    from .metadata import RowGroup


class ChunkPlace(NamedTuple):
    """Where a column chunk's pages lie and how they are stored (:attr:`ColumnChunk.place`)."""

    codec: int  # a CompressionCodec member, or the raw number if unknown
    data_page_offset: int
    dictionary_page_offset: int | None
    total_compressed_size: int
    total_uncompressed_size: int
    num_values: int

    @classmethod
    def of(cls, raw: RawPlace) -> ChunkPlace:
        """The place of the scanner's record (:meth:`ScannedChunk.place`), its codec named."""
        codec, data, dictionary, compressed, uncompressed, values = raw
        return cls(CODECS.get(codec, codec), data, dictionary, compressed, uncompressed, values)


class ColumnChunk:
    """One column of one row group, with what the planner needs to fetch its filter.

    ``bloom_filter_offset``/``bloom_filter_length`` are passed through as found
    (``None`` when absent); the planner range-checks them. Read-only: every
    attribute comes from the decoded footer and was validated before this
    object was made. The attributes pruning does not need (codec, encodings,
    page offsets and sizes, encoding statistics, file path and offset) are
    decoded for all chunks of the file the first time one of them is read, but
    for a chunk's codec, place and sizes where the footer scanner's record holds
    them.
    """

    __slots__ = ("_column", "_md", "_placed", "_row_group", "_source")

    def __init__(
        self,
        row_group: int,
        column: ColumnDescriptor,
        md: wire.ColumnMetaData | ScannedChunk,
        source: FooterBytes,
    ) -> None:
        self._row_group = row_group
        self._column = column
        self._md = md
        self._source = source
        #: The scanner's record when it alone places the chunk's bytes (see the details).
        self._placed = md if isinstance(md, ScannedChunk) and md.placed else None

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
        return self._md.statistics  # built as the Statistics class (CHUNKS_PASS, or the scan)

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

    # ---- details, decoded on first use (see FooterBytes.details); a chunk's place, codec
    # and sizes come from the scanner's record when it holds them (see ScannedChunk.placed):
    # the rows of a file then need no detail decoded

    def _details(self) -> wire.ColumnChunk:
        return self._source.details()[self._row_group][self._column.index]

    def _details_md(self) -> wire.ColumnMetaData:
        md = self._details().meta_data
        assert md is not None  # checked when the details were decoded
        return md

    @property
    def codec(self) -> int:
        """A CompressionCodec member, or the raw number if unknown."""
        placed = self._placed
        codec = placed.codec if placed is not None else self._details_md().codec
        assert codec is not None  # checked
        return CODECS.get(codec, codec)

    @property
    def place(self) -> ChunkPlace:
        """The codec, page offsets, sizes and value count at once: what reading the chunk's
        pages needs (one read of the scanner's record where it holds them)."""
        placed = self._placed
        if placed is not None:
            return ChunkPlace.of(placed.place())
        return ChunkPlace(
            self.codec,
            self.data_page_offset,
            self.dictionary_page_offset,
            self.total_compressed_size,
            self.total_uncompressed_size,
            self.num_values,
        )

    @property
    def encodings(self) -> tuple[int, ...]:
        """Encoding members (raw numbers if unknown)."""
        return tuple(ENCODINGS.get(e, e) for e in self._details_md().encodings or ())

    @property
    def data_page_offset(self) -> int:
        """Offset of the chunk's first data page."""
        placed = self._placed
        if placed is not None:
            return placed.data_page_offset  # type: ignore[return-value]  # placed holds it
        return self._details_md().data_page_offset  # type: ignore[return-value]  # checked

    @property
    def dictionary_page_offset(self) -> int | None:
        """Offset of the dictionary page, if any."""
        placed = self._placed
        if placed is not None:
            return placed.dictionary_page_offset
        return self._details_md().dictionary_page_offset

    @property
    def index_page_offset(self) -> int | None:
        """Offset of the index page (no writer uses it), if any."""
        return self._details_md().index_page_offset

    @property
    def total_compressed_size(self) -> int:
        """Bytes of the chunk's pages as stored."""
        placed = self._placed
        if placed is not None:
            return placed.total_compressed_size  # type: ignore[return-value]  # placed holds it
        return self._details_md().total_compressed_size  # type: ignore[return-value]  # checked

    @property
    def total_uncompressed_size(self) -> int:
        """Bytes of the chunk's pages uncompressed."""
        placed = self._placed
        if placed is not None:
            return placed.total_uncompressed_size  # type: ignore[return-value]  # placed holds it
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
                page_type=PAGE_TYPES.get(s.page_type, s.page_type),  # type: ignore[arg-type]
                encoding=ENCODINGS.get(s.encoding, s.encoding),  # type: ignore[arg-type]
                count=s.count,  # type: ignore[arg-type]
            )
            for s in raw
        )

    @property
    def file_path(self) -> str | None:
        """The file holding the chunk's data when not this one (rare)."""
        if self._placed is not None:
            return None
        return lenient_text(self._details().file_path)

    @property
    def file_offset(self) -> int:
        """The deprecated ``file_offset`` (0 when the writer omitted it)."""
        # parquet.thrift gives file_offset a default of 0; some writers omit it.
        offset = self._details().file_offset
        return offset if offset is not None else 0

    @property
    def offset_index_offset(self) -> int | None:
        """Where the chunk's OffsetIndex (the page index's page places) lies, if recorded."""
        return self._index_place("offset_index_offset")

    @property
    def offset_index_length(self) -> int | None:
        """The OffsetIndex's length in bytes, if recorded."""
        return self._index_place("offset_index_length")

    @property
    def column_index_offset(self) -> int | None:
        """Where the chunk's ColumnIndex (each page's bounds) lies, if recorded."""
        return self._index_place("column_index_offset")

    @property
    def column_index_length(self) -> int | None:
        """The ColumnIndex's length in bytes, if recorded."""
        return self._index_place("column_index_length")

    def _index_place(self, name: str) -> int | None:
        """A ColumnChunk field placing the page index: the scanner's record holds it where
        it read the chunk (no details decoded), else the details do."""
        md = self._md
        found: int | None = getattr(md if isinstance(md, ScannedChunk) else self._details(), name)
        return found

    @property
    def has_offset_index(self) -> bool:
        """Whether the writer recorded an offset index (the page index) for the chunk."""
        return self.offset_index_offset is not None

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


class GroupChunks:
    """Some column chunks of one row group, by leaf index (:meth:`FileMetaData.chunks_of`)."""

    __slots__ = ("columns", "index", "num_rows")

    def __init__(self, index: int, num_rows: int, columns: Mapping[int, ColumnChunk]) -> None:
        self.index = index  #: position of the row group in the file
        self.num_rows = num_rows  #: rows in the row group
        self.columns = columns  #: the chunks read, by leaf index

    def __repr__(self) -> str:
        leaves = list(self.columns)
        return f"GroupChunks(index={self.index}, num_rows={self.num_rows}, leaves={leaves})"


# The column chunks, like the other lazily decoded parts (footer_bytes.py), hold no
# reference back to the objects that use them.


class ChunkTable:
    """The column chunks of every row group, decoded and validated on first use."""

    __slots__ = ("_chunks", "_raw", "raw_paths", "schema", "source")

    def __init__(
        self,
        source: FooterBytes,
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

    def some(
        self,
        indexes: tuple[int, ...],
        groups: tuple[RowGroup, ...],
        records: ChunkRecords | None = None,
    ) -> tuple[GroupChunks, ...]:
        """The chunks of the leaves ``indexes``: from the scanner's ``records`` of them
        when given, else scanned, unless decoded already or refused by the scanner (then
        the decoder raises why, or reads them)."""
        decoded = self._chunks
        if decoded is None and self._raw is None:
            scanned = self._scanned(indexes, groups, records)
            if scanned is not None:
                return scanned
        decoded = self.get()
        return tuple(
            GroupChunks(g.index, g.num_rows, {i: decoded[g.index][i] for i in indexes})
            for g in groups
        )

    @property
    def decoded(self) -> bool:
        """Whether the chunks are decoded (or read by the decoder's first pass): they, not
        the scanner's records, then serve."""
        return self._chunks is not None or self._raw is not None

    def one(self, records: ChunkRecords, group: RowGroup, leaf: int) -> ColumnChunk:
        """Leaf ``leaf``'s chunk in row group ``group`` from the scanner's ``records`` of every
        leaf (what :meth:`some` makes of it, made alone)."""
        scanned = records.record(group.index, leaf)
        return ColumnChunk(group.index, self.schema.columns[leaf], scanned, self.source)

    def records(
        self, indexes: tuple[int, ...], groups: tuple[RowGroup, ...]
    ) -> ChunkRecords | None:
        """The scanner's records of the leaves ``indexes`` (see :func:`.scan.scan_records`),
        or None when the scanner does not read this footer as the decoder does."""
        source = self.source
        return scan_records(
            source.data, self.schema, self.raw_paths, indexes, [g.num_rows for g in groups]
        )

    def leaves(self) -> ScanLeaves:
        """The schema's leaves as the C scanner takes them."""
        return scan_leaves(self.schema, self.raw_paths)

    def head_spans(self, groups: int) -> tuple[tuple[int, int], tuple[int, int]] | None:
        """Where the schema's and the key/value metadata's bytes lie in the footer (see
        :func:`.scan.head_spans`)."""
        return head_spans(self.source.data, self.schema, self.raw_paths, groups)

    def _scanned(
        self,
        indexes: tuple[int, ...],
        groups: tuple[RowGroup, ...],
        records: ChunkRecords | None = None,
    ) -> tuple[GroupChunks, ...] | None:
        if records is None:
            records = self.records(indexes, groups)
        if records is None:
            return None  # refused, or read differently from the decoder's first pass: it decides
        source = self.source
        columns = self.schema.columns
        out = []
        for group, chunks in zip(groups, records.scanned(), strict=True):
            made = {
                i: ColumnChunk(group.index, columns[i], c, source)
                for i, c in zip(indexes, chunks, strict=True)
            }
            out.append(GroupChunks(group.index, group.num_rows, made))
        return tuple(out)

    def _decode(self) -> tuple[tuple[ColumnChunk, ...], ...]:
        source = self.source
        path = source.path
        columns = self.schema.columns
        raw_paths = self.raw_paths
        raw = self._raw
        groups = source.groups(source.decode(CHUNKS_PASS)) if raw is None else raw
        out = []
        for index, group in enumerate(groups):
            chunks = group.columns
            if chunks is None:
                raise ParquetFormatError(
                    f"required field RowGroup.columns is missing (row group {index})", path=path
                )
            check_chunk_count(chunks, len(columns), index, path)
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
                    check_chunk(chunk, index, column, path)  # raises, or accepts the path
                made.append(ColumnChunk(index, column, md, source))  # type: ignore[arg-type]
            out.append(tuple(made))
        return tuple(out)
