"""One file's footer and Bloom filters read from a byte source: the reader's configuration and
results.
"""

from __future__ import annotations

import bisect
import enum
import os
import struct
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from ..checks import integer, positive_int
from ..core.filter import SplitBlockBloomFilter
from ..core.sizes import decode_header
from ..errors import InvalidArgumentError, ParquetFormatError, PyBloomError
from ..io.base import ByteSource
from ..io.identity import SourceIdentity
from ..parquet import (
    FileMetaData,
    FooterBounds,
    RowGroup,
    Schema,
    parse_footer_tail,
)
from ..parquet.decode import decode_file_metadata_with
from ..parquet.tail import MAGIC, check_leading_magic
from ..parquet.thrift import THRIFT_DECODER
from .bitset_plan import plan_bitset_reads
from .plan import (
    BLOCK_BYTES,
    DEFAULT_PLAN_CONFIG,
    MAGIC_BYTES,
    MIN_FILTER_BYTES,
    FilterStatus,
    PlanConfig,
    plan_filter_reads,
)
from .ranges import merge_ranges

#: A local file's first read, with the adaptive suffix: most footers fit, and a second read
#: for a larger one costs microseconds (measured in ``bench/RESULTS.md``).
LOCAL_SUFFIX_BYTES = 16 * 1024


@dataclass(frozen=True)
class ReaderConfig:
    """Limits and tuning of the reader.

    Parameters
    ----------
    footer_read_bytes:
        Size of the speculative suffix read that fetches the footer, or ``None``
        (the default) for an adaptive size: on object stores a
        :class:`~pybloom_async.read.reader.BloomReader` learns from the files it
        has read how far from the end their footer and filters start
        (:class:`~pybloom_async.read.suffix.SuffixLearner`) and reads that much,
        so a file costs one request; local files read :data:`LOCAL_SUFFIX_BYTES`
        (16 KiB: a second ``pread`` costs a microsecond, copying 64 KiB four). A
        number turns adaptation off: every file reads exactly that.
    adaptive_start:
        The adaptive suffix before anything is learned (256 KiB: it covers the
        filters and footer of the usual Spark, pyarrow and DuckDB files, so the
        files a run starts at once cost one request each; measured in
        ``bench/RESULTS.md``).
    min_suffix_bytes:
        The adaptive suffix never shrinks below this (64 KiB: most footers fit).
    max_suffix_bytes:
        The adaptive suffix never grows above this (1 MiB).
    max_footer_bytes:
        A footer claiming more than this is refused before it is fetched.
    plan:
        The planner's limits: merge hole and size, guess size, filter size
        limit (:class:`pybloom_async.read.plan.PlanConfig`).
    concurrency:
        Files read at once by the multi-file functions.
    local_threads:
        Local files worked on at once, each in one worker-thread call (default: the
        CPUs, between 2 and 4). The work is mostly Python, which one thread runs at a
        time: more threads only contend for the interpreter (measured in
        ``bench/RESULTS.md``: 64 at once cost twice the CPU of 2). Raise it for files on
        a slow disk or a network file system, whose reads then overlap.
    io_threads:
        Worker threads for blocking I/O (local ``pread``, obstore's sync API):
        the cap on requests in flight, so it should not be below the number of
        files read at once times the reads per file.
    """

    footer_read_bytes: int | None = None
    adaptive_start: int = 256 * 1024
    min_suffix_bytes: int = 64 * 1024
    max_suffix_bytes: int = 1024 * 1024
    max_footer_bytes: int = 64 * 1024 * 1024
    plan: PlanConfig = DEFAULT_PLAN_CONFIG
    concurrency: int = 64
    local_threads: int | None = None
    io_threads: int = 256

    def __post_init__(self) -> None:
        # Stored as checked (plain ints). The footer's 8-byte trailer (length + magic)
        # must fit the first read.
        if self.footer_read_bytes is not None:
            footer_read = integer("footer_read_bytes", self.footer_read_bytes, minimum=8)
            object.__setattr__(self, "footer_read_bytes", footer_read)
        smallest = integer("min_suffix_bytes", self.min_suffix_bytes, minimum=8)
        object.__setattr__(self, "min_suffix_bytes", smallest)
        start = integer("adaptive_start", self.adaptive_start, minimum=smallest)
        object.__setattr__(self, "adaptive_start", start)
        largest = integer("max_suffix_bytes", self.max_suffix_bytes, minimum=start)
        object.__setattr__(self, "max_suffix_bytes", largest)
        for name in ("max_footer_bytes", "concurrency", "io_threads"):
            object.__setattr__(self, name, positive_int(name, getattr(self, name)))
        if self.local_threads is None:
            object.__setattr__(self, "local_threads", min(4, max(2, os.cpu_count() or 1)))
        else:
            object.__setattr__(
                self, "local_threads", positive_int("local_threads", self.local_threads)
            )
        if not isinstance(self.plan, PlanConfig):
            raise InvalidArgumentError(
                f"plan must be a PlanConfig, not {type(self.plan).__name__}", value=self.plan
            )

    @property
    def adaptive(self) -> bool:
        """Whether the suffix size is learned (``footer_read_bytes`` is ``None``)."""
        return self.footer_read_bytes is None

    @property
    def first_suffix_bytes(self) -> int:
        """The suffix read of a local file: fixed, or :data:`LOCAL_SUFFIX_BYTES` when
        adaptive."""
        return LOCAL_SUFFIX_BYTES if self.footer_read_bytes is None else self.footer_read_bytes


DEFAULT_READER_CONFIG = ReaderConfig()


@dataclass(frozen=True, repr=False)
class Footer:
    """A decoded footer and the bytes read to get it (reused for filters in the tail)."""

    path: str
    metadata: FileMetaData
    location: FooterBounds
    tail: bytes
    identity: SourceIdentity

    def __repr__(self) -> str:
        # Short: the tail alone is tens of KiB, the metadata one entry per column chunk.
        meta = self.metadata
        return (
            f"Footer(path={self.path!r}, file_size={self.file_size}, num_rows={meta.num_rows}, "
            f"row_groups={len(meta.row_groups)}, columns={len(meta.schema.columns)})"
        )

    @property
    def file_size(self) -> int:
        """Size of the file in bytes."""
        return self.location.file_size

    @property
    def tail_start(self) -> int:
        """Offset of the first byte of :attr:`tail`."""
        return self.location.file_size - len(self.tail)

    @property
    def row_groups(self) -> tuple[RowGroup, ...]:
        """The row groups (shortcut for ``metadata.row_groups``)."""
        return self.metadata.row_groups

    @property
    def schema(self) -> Schema:
        """The schema (shortcut for ``metadata.schema``)."""
        return self.metadata.schema


class FilterState(enum.Enum):
    """Outcome of reading one column chunk's filter."""

    #: The filter was read and validated.
    OK = "ok"
    #: The column chunk has no filter.
    ABSENT = "absent"
    #: The filter's offset, length or header is invalid (``reason`` says why).
    UNUSABLE = "unusable"


@dataclass(frozen=True)
class BloomFilterRead:
    """One column chunk's filter: the filter, or why there is none."""

    row_group: int
    column: str
    state: FilterState
    filter: SplitBlockBloomFilter | None = None
    reason: str | None = None
    offset: int | None = None
    length: int | None = None
    header_len: int | None = None

    @property
    def ok(self) -> bool:
        """Whether a usable filter was read."""
        return self.state is FilterState.OK


FilterKey = tuple[int, str]


async def read_footer_from(
    source: ByteSource, config: ReaderConfig, suffix_bytes: int | None = None, *, reach: int = 0
) -> Footer:
    """Read and decode the footer with one suffix read of ``suffix_bytes`` (default
    :attr:`ReaderConfig.first_suffix_bytes`), and a second only for a larger footer.

    That second read also covers ``reach`` bytes before the footer, where writers put
    the filters, so that they need no third read.
    """
    path = source.path
    size = config.first_suffix_bytes if suffix_bytes is None else suffix_bytes
    tail = await source.read_suffix(size)
    file_size = await source.size()
    location = parse_footer_tail(tail, file_size, path=path)
    missing = location.missing_range(len(tail))
    if missing is not None:
        if location.metadata_length > config.max_footer_bytes:
            raise ParquetFormatError(
                f"footer of {location.metadata_length} bytes is above the limit of "
                f"{config.max_footer_bytes} (ReaderConfig.max_footer_bytes)",
                path=path,
            )
        missing = (max(0, missing[0] - reach), missing[1])
        head = await source.read_range(*missing)
        tail = head + tail
        if missing[0] == 0:
            check_leading_magic(tail[:4], path=path)
    # When the file is longer than what was read, its leading magic is not
    # checked: that would cost a request. The trailing magic, the footer
    # length, a strict thrift decode and the validation of every offset
    # against the file still stand between a damaged file and a wrong answer.
    # Lazy: the column chunks a caller needs are read by the footer scanner
    # (FileMetaData.chunks_of), the rest only if some caller reads them.
    identity = await source.identity()
    return _decoded(path, tail, location, identity)


def _decoded(path: str, tail: bytes, location: FooterBounds, identity: SourceIdentity) -> Footer:
    metadata = decode_file_metadata_with(
        location.metadata_bytes(tail), path, THRIFT_DECODER, lazy=True, with_key_values=True
    )
    return Footer(path, metadata, location, bytes(tail), identity)


def footer_from_tail(tail: bytes, identity: SourceIdentity) -> Footer:
    """The footer of the file ``identity`` names from its last bytes read elsewhere (by
    native code: :mod:`pybloom_async.pruning.file_pass`), reaching back to the footer's
    start at least, decoded and checked as :func:`read_footer_from` decodes them.

    Raises
    ------
    ParquetFormatError, EncryptedFileError
        The bytes are not a file's end with a footer, or the footer does not decode.
    """
    location = parse_footer_tail(tail, identity.size, path=identity.path)
    if location.missing_range(len(tail)) is not None:
        raise InvalidArgumentError("the bytes do not reach back to the footer's start")
    return _decoded(identity.path, tail, location, identity)


def footer_from_metadata(metadata: bytes, identity: SourceIdentity) -> Footer:
    """The footer of the file ``identity`` names from its FileMetaData bytes kept elsewhere
    (a lake index's digest), decoded and checked as a footer read from the file is; its
    :attr:`Footer.tail` is the file's last bytes from the FileMetaData on.

    Raises
    ------
    ParquetFormatError
        The bytes do not decode, or do not fit a file of that size.
    """
    path = identity.path
    tail = bytes(metadata) + struct.pack("<I", len(metadata)) + MAGIC
    location = parse_footer_tail(tail, identity.size, path=path)
    return _decoded(path, tail, location, identity)


def first_needed_byte(footer: Footer) -> int:
    """Offset of the first filter or footer byte: what a suffix read should have covered.

    Offsets outside the data are ignored (their filters are unusable anyway).
    """
    first = footer.location.metadata_offset
    meta = footer.metadata
    every = range(len(meta.schema.columns))
    # The scanner's records of every leaf: kept (when small), they serve pruning's sets of
    # leaves with no second scan.
    records = meta.chunk_records(every)
    if records is not None:
        offsets: Iterable[int | None] = records.filter_offsets()
    else:
        offsets = (c.bloom_filter_offset for g in meta.chunks_of(every) for c in g.columns.values())
    for offset in offsets:
        if offset is not None and 0 <= offset < first:
            first = offset
    return first


def wanted_filters(
    footer: Footer, columns: Collection[str] | None, row_groups: Collection[int] | None
) -> list[tuple[FilterKey, int | None, int | None]]:
    meta = footer.metadata
    if columns is not None:
        indexes = [meta.schema.column(c).index for c in columns]  # ColumnNotFoundError if unknown
    else:
        indexes = list(range(len(meta.schema.columns)))
    n = len(meta.row_groups)
    if row_groups is None:
        groups: Iterable[int] = range(n)
    else:
        groups = sorted(set(row_groups))
        for g in groups:
            if isinstance(g, bool) or not isinstance(g, int) or not 0 <= g < n:
                raise InvalidArgumentError(
                    f"row group {g!r} does not exist (the file has {n})", path=footer.path
                )
    paths = [(i, meta.schema.columns[i].path) for i in indexes]
    wanted = []
    # Every chunk is checked as soon as one is read, whichever are read (none without groups).
    scanned = meta.chunks_of(indexes) if groups else ()
    for g in groups:
        chunks = scanned[g].columns
        for i, path in paths:
            chunk = chunks[i]
            wanted.append(((g, path), chunk.bloom_filter_offset, chunk.bloom_filter_length))
    return wanted


def _exact(
    footer: Footer, wanted: list[tuple[FilterKey, int | None, int | None]], config: PlanConfig
) -> bool:
    """Whether every wanted filter has a length and lies where a filter may (the usual case)."""
    lowest = MAGIC_BYTES
    footer_start = footer.location.metadata_offset
    max_serialized = config.max_serialized_bytes
    return all(
        type(offset) is int
        and type(length) is int
        and lowest <= offset
        and offset + length <= footer_start
        and MIN_FILTER_BYTES <= length <= max_serialized
        for _, offset, length in wanted
    )


def filters_from_pieces(
    wanted: list[tuple[FilterKey, int | None, int | None]],
    pieces: list[tuple[int, bytes]],
    config: PlanConfig,
) -> dict[FilterKey, BloomFilterRead] | None:
    """The wanted filters straight from bytes already read, or None to plan the reads.

    The usual case: every filter has its length (checked by :func:`_exact`) and lies in
    one of ``pieces`` (``(start, bytes)``, sorted by start: the tail, or ranges read for
    exactly these filters), its header decodes and agrees with that length. The plan's two
    rounds then have nothing left to decide, and skipping them costs a tenth of the CPU per
    filter. Any filter outside that case (outside the pieces, any doubt about its header)
    answers None, and the planned reads give every outcome with its reason; so this path
    only ever answers what they would.
    """
    max_bytes = config.max_filter_bytes
    max_header = config.max_header_bytes
    starts = [start for start, _ in pieces]
    views = [memoryview(data) for _, data in pieces]
    out: dict[FilterKey, BloomFilterRead] = {}
    for key, offset, length in wanted:
        assert offset is not None and length is not None
        i = bisect.bisect_right(starts, offset) - 1
        if i < 0:
            return None
        start = offset - starts[i]
        view = views[i]
        if start + length > len(view):
            return None
        piece = view[start : start + length]
        try:
            header_len, num_bytes = decode_header(piece, max_bytes=max_bytes)
        except PyBloomError:
            return None
        if (
            header_len > max_header
            or header_len + num_bytes != length
            or num_bytes < BLOCK_BYTES
            or num_bytes % BLOCK_BYTES
        ):
            return None
        try:
            # A view of the bytes read, not a copy (they are kept while the filter is).
            bloom = SplitBlockBloomFilter.view_of(
                pieces[i][1], start + header_len, num_bytes, max_bytes=max_bytes
            )
        except PyBloomError:
            return None
        (g, column) = key
        out[key] = BloomFilterRead(
            g, column, FilterState.OK, bloom, None, offset, length, header_len
        )
    return out


async def read_filters_from(
    source: ByteSource,
    footer: Footer,
    wanted: list[tuple[FilterKey, int | None, int | None]],
    config: ReaderConfig,
) -> dict[FilterKey, BloomFilterRead]:
    plan_config = config.plan
    if _exact(footer, wanted, plan_config):
        # Every filter's place is known: the tail holds them, or one merged read does.
        tail_start = footer.tail_start
        outside = [
            (offset, offset + length)
            for _, offset, length in wanted
            if offset is not None and length is not None and offset < tail_start
        ]
        pieces: list[tuple[int, bytes]] = []
        if outside:
            hole = plan_config.hole_bytes(source.local)
            merged = merge_ranges(outside, hole, plan_config.max_range_bytes)
            data = await source.read_ranges([(r.start, r.end) for r in merged])
            pieces = [(r.start, d) for r, d in zip(merged, data, strict=True)]
        pieces.append((tail_start, footer.tail))
        found = filters_from_pieces(wanted, pieces, plan_config)
        if found is not None:
            return found
    max_bytes = plan_config.max_filter_bytes
    plan = plan_filter_reads(
        wanted,
        file_size=footer.file_size,
        footer_start=footer.location.metadata_offset,
        tail_start=footer.tail_start,
        config=plan_config,
    )
    fetched = await source.read_ranges([(r.start, r.end) for r in plan.fetches])
    buffers = plan.buffers(fetched, footer.tail)
    headers: list[tuple[int, int] | str | None] = []
    for entry in plan.filters:
        if entry.status is not FilterStatus.PLANNED:
            headers.append(None)
            continue
        assert entry.read is not None
        try:
            headers.append(decode_header(entry.read.view(buffers), max_bytes=max_bytes))
        except PyBloomError as exc:
            headers.append(f"bad Bloom filter header at offset {entry.offset}: {exc.message}")
    bitsets = plan_bitset_reads(plan, headers)
    if bitsets.fetches:  # usually none: the first round read every bitset whole
        fetched2 = await source.read_ranges([(r.start, r.end) for r in bitsets.fetches])
        buffers = bitsets.buffers(fetched2, buffers)
    out: dict[FilterKey, BloomFilterRead] = {}
    for r in bitsets.filters:
        (g, column) = r.key
        if r.status is FilterStatus.READY:
            assert r.bitset is not None
            try:
                bloom = SplitBlockBloomFilter.from_bitset(
                    r.bitset.view(buffers), max_bytes=max_bytes
                )
            except PyBloomError as exc:  # defence in depth: the plan checked the size
                out[r.key] = BloomFilterRead(
                    g, column, FilterState.UNUSABLE, None, exc.message, r.offset, r.length
                )
                continue
            out[r.key] = BloomFilterRead(
                g, column, FilterState.OK, bloom, None, r.offset, r.length, r.header_len
            )
        elif r.status is FilterStatus.ABSENT:
            out[r.key] = BloomFilterRead(g, column, FilterState.ABSENT, None, "no Bloom filter")
        else:
            out[r.key] = BloomFilterRead(
                g, column, FilterState.UNUSABLE, None, r.reason, r.offset, r.length
            )
    return out
