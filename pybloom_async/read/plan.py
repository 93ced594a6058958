"""Pure read planning for Bloom filters: which byte ranges to fetch, and where each filter lies.

No I/O happens here. The reader hands in what it knows about a file (its size, where the
footer starts, the suffix it has already read) and the filters it wants; it gets back
immutable plans: the byte ranges to fetch, sorted and disjoint, and for every wanted filter
either the bytes that will hold it or the reason it is absent or unusable.

Reading a filter takes one or two rounds:

1. :func:`plan_filter_reads`: a filter whose ``bloom_filter_length`` is known is read
   exactly; one without a length gets a *guess* range (``PlanConfig.guess_bytes`` from its
   offset, clipped to the footer). Ranges already inside the tail are served from it; the
   others are merged with their neighbours (:func:`merge_ranges`).
2. :func:`plan_bitset_reads`: once the reader has decoded each ``BloomFilterHeader`` from
   the bytes of round 1, this computes the bitset's exact extent, checks it again, and
   plans a second fetch only for bitset bytes that no earlier buffer holds.

Every offset and size comes from an untrusted footer or header, so each is checked against
``[4, footer_start)`` and the configured limits *before* it is planned: a bad value makes
that one filter unusable (the row group is then kept, never pruned), and nothing outside
the file's filter area or above a limit is ever fetched or allocated.

Buffers are keyed by the :class:`ByteRange` they were fetched for; :meth:`Span.view`
slices them with ``memoryview`` so a filter held by one buffer is never copied."""

from __future__ import annotations

import enum
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Generic

from ..checks import integer
from ..errors import InvalidArgumentError, ParquetFormatError
from .ranges import (
    BufferLike,
    ByteRange,
    K,
    KiB,
    MiB,
    Piece,
    Span,
    attach_buffers,
    merge_checked,
)

#: A Parquet file starts (and ends) with the 4-byte magic ``PAR1``; no filter starts inside it.
MAGIC_BYTES = 4
#: An SBBF block is eight 32-bit words (Parquet BloomFilter.md, "Split Block Bloom Filter").
BLOCK_BYTES = 32
#: Smallest compact-thrift ``BloomFilterHeader`` with its four required fields: numBytes
#: (field header + 1-byte zigzag varint for sizes <= 63) = 2 B, then algorithm, hash and
#: compression, each a struct holding one empty struct (4 B each), then the stop byte:
#: 2 + 3 * 4 + 1 = 15 B, the figure docs/architecture.md ("Reference behaviour") gives for
#: numBytes <= 63.
MIN_HEADER_BYTES = 15
#: The smallest serialized filter: a minimal header and one block.
MIN_FILTER_BYTES = MIN_HEADER_BYTES + BLOCK_BYTES


@dataclass(frozen=True)
class PlanConfig:
    """Limits and tuning for read planning.

    Parameters
    ----------
    max_hole_bytes:
        Largest gap of unwanted bytes between two ranges that may be read over to save a
        request. 1 MiB: an object-store request costs tens of milliseconds before the first
        byte, about the time to transfer 1 MiB at ~100 MB/s, so reading a smaller hole is
        cheaper than a second request. It is also the coalesce default of Rust's
        ``object_store`` and of obstore's ``get_ranges``.
    max_range_bytes:
        Largest merged range. 16 MiB: AWS's S3 performance guidelines name 8-16 MB as the
        typical byte-range request size; the cap bounds the memory a single response pins
        and keeps several requests in flight. A single filter larger than this is still
        read, on its own.
    guess_bytes:
        How much to read for a filter whose ``bloom_filter_length`` is unknown: 256 KiB
        (docs/architecture.md, "Reads") holds the header and the bitset of filters up to
        about 200k distinct values at 1% FPP; larger bitsets need a second read.
    max_filter_bytes:
        Largest bitset (``numBytes``) accepted: 128 MiB, the upper bound of Parquet's
        reference implementations. Bigger filters are unusable and never fetched.
    max_header_bytes:
        Largest ``BloomFilterHeader`` accepted. Today's headers are 15-18 B
        (docs/architecture.md, "Reference behaviour");
        1 KiB leaves room for optional fields a later format version may add while still
        bounding what is read for a header.

    Raises
    ------
    InvalidArgumentError
        A value is not an int, is out of range, or ``guess_bytes < max_header_bytes`` (a
        guess must always hold a whole header, or a valid filter would be reported as
        damaged).
    """

    max_hole_bytes: int = 1 * MiB
    max_range_bytes: int = 16 * MiB
    guess_bytes: int = 256 * KiB
    max_filter_bytes: int = 128 * MiB
    max_header_bytes: int = 1 * KiB

    def __post_init__(self) -> None:
        # Stored as checked (plain ints); a guess must hold a whole header.
        for name, minimum in (
            ("max_hole_bytes", 0),
            ("max_range_bytes", 1),
            ("max_filter_bytes", BLOCK_BYTES),
            ("max_header_bytes", MIN_HEADER_BYTES),
            ("guess_bytes", self.max_header_bytes),
        ):
            object.__setattr__(self, name, integer(name, getattr(self, name), minimum=minimum))

    def hole_bytes(self, local: bool) -> int:
        """The largest hole read over between two ranges of a source: ``max_hole_bytes``
        for a store; none for a local file, whose read is a system call: copying a hole
        (other columns' chunks or filters) costs more than a second call."""
        return 0 if local else self.max_hole_bytes

    @property
    def max_serialized_bytes(self) -> int:
        """Largest ``bloom_filter_length`` accepted: a header plus a bitset at their limits."""
        return self.max_header_bytes + self.max_filter_bytes


DEFAULT_PLAN_CONFIG = PlanConfig()


class FilterStatus(enum.Enum):
    """What the plan knows about one wanted filter."""

    #: The column chunk has no filter (offset missing, 0 or negative); not an error.
    ABSENT = "absent"
    #: The filter's offset, length or header is invalid; ``reason`` says why.
    UNUSABLE = "unusable"
    #: Round 1: bytes to decode the header from are located (:attr:`PlannedFilter.read`).
    PLANNED = "planned"
    #: Round 2: the bitset is located (:attr:`ResolvedFilter.bitset`).
    READY = "ready"


@dataclass(frozen=True)
class PlannedFilter(Generic[K]):
    """Round-1 outcome for one wanted filter.

    ``read`` (status PLANNED only) locates the bytes the header is decoded from: the whole
    serialized filter when its length is known, else the guess range.
    """

    key: K
    offset: int | None
    length: int | None
    status: FilterStatus
    reason: str | None = None
    read: Span | None = None

    @property
    def guessed(self) -> bool:
        """True when the filter's length is unknown and ``read`` is a guess."""
        return self.status is FilterStatus.PLANNED and self.length is None


@dataclass(frozen=True)
class ReadPlan(Generic[K]):
    """Round-1 plan: ranges to fetch and, per wanted filter, where its header bytes lie.

    ``filters`` is in the order the filters were wanted.
    """

    file_size: int
    footer_start: int
    tail: ByteRange
    fetches: tuple[ByteRange, ...]
    filters: tuple[PlannedFilter[K], ...]
    config: PlanConfig

    def buffers(
        self, fetched: Sequence[BufferLike], tail: BufferLike
    ) -> dict[ByteRange, BufferLike]:
        """Key the fetched bytes (in ``fetches`` order) and the tail by their ranges.

        Raises
        ------
        InvalidArgumentError
            The number of buffers does not match ``fetches``.
        SourceError
            A buffer's length differs from its range (a short read).
        """
        out: dict[ByteRange, BufferLike] = {}
        attach_buffers((self.tail,), (tail,), out)
        attach_buffers(self.fetches, fetched, out)
        return out


def _unusable(key: K, offset: int | None, length: int | None, reason: str) -> PlannedFilter[K]:
    return PlannedFilter(key, offset, length, FilterStatus.UNUSABLE, reason)


def _check_geometry(file_size: int, footer_start: int, tail_start: int) -> None:
    integer("file_size", file_size, minimum=0)
    integer("footer_start", footer_start)  # its range is a format check below
    integer("tail_start", tail_start, minimum=0)
    # "PAR1" + footer + 4-byte footer length + "PAR1": 12 bytes at least.
    if file_size < 2 * MAGIC_BYTES + 4:
        raise ParquetFormatError(f"a file of {file_size} bytes is too small to be Parquet")
    # footer_start is derived from the untrusted footer length in the last 8 bytes.
    if not MAGIC_BYTES <= footer_start <= file_size - 8:
        raise ParquetFormatError(
            f"footer start {footer_start} lies outside [4, {file_size - 8}] "
            f"for a file of {file_size} bytes"
        )
    if tail_start > file_size:
        raise InvalidArgumentError(f"tail_start {tail_start} is past the file size {file_size}")


def _require_optional_int(name: str, value: object, key: object) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise InvalidArgumentError(
            f"{name} must be an int or None, not {type(value).__name__} (filter {key!r})"
        )


def _classify(
    key: K, offset: object, length: object, footer_start: int, config: PlanConfig
) -> PlannedFilter[K] | ByteRange | int:
    """Check one filter's footer fields: a final outcome, an exact range, or a guess offset."""
    # type() first: this runs for every wanted filter, and footer values are plain ints.
    if not (offset is None or type(offset) is int):
        _require_optional_int("bloom_filter_offset", offset, key)
    if not (length is None or type(length) is int):
        _require_optional_int("bloom_filter_length", length, key)
    assert offset is None or isinstance(offset, int)
    assert length is None or isinstance(length, int)
    if offset is None or offset <= 0:
        return PlannedFilter(key, offset, length, FilterStatus.ABSENT, "no bloom filter")
    if offset < MAGIC_BYTES:
        return _unusable(key, offset, length, f"offset {offset} lies inside the leading magic")
    if offset >= footer_start:
        return _unusable(
            key, offset, length, f"offset {offset} is at or past the footer start {footer_start}"
        )
    if length is None:
        if offset + MIN_FILTER_BYTES > footer_start:
            return _unusable(
                key,
                offset,
                length,
                f"offset {offset} leaves {footer_start - offset} bytes before the footer, "
                f"fewer than the smallest filter ({MIN_FILTER_BYTES} bytes)",
            )
        return offset
    if length <= 0:
        return _unusable(key, offset, length, f"length {length} is not positive")
    if length < MIN_FILTER_BYTES:
        return _unusable(
            key,
            offset,
            length,
            f"length {length} cannot hold a header and one {BLOCK_BYTES}-byte block "
            f"(minimum {MIN_FILTER_BYTES})",
        )
    if length > config.max_serialized_bytes:
        return _unusable(
            key,
            offset,
            length,
            f"length {length} is above the limit of {config.max_serialized_bytes} bytes "
            f"(max_filter_bytes {config.max_filter_bytes} + max_header_bytes "
            f"{config.max_header_bytes})",
        )
    if offset + length > footer_start:
        return _unusable(
            key,
            offset,
            length,
            f"offset {offset} + length {length} = {offset + length} runs past the footer "
            f"start {footer_start}",
        )
    return ByteRange(offset, offset + length)


# Long because: one pass over the wanted filters that shares its state (tail coverage, pending
# ranges, the status of each filter); split into helpers, each would take and return all of it.
def plan_filter_reads(
    wanted: Iterable[tuple[K, int | None, int | None]],
    *,
    file_size: int,
    footer_start: int,
    tail_start: int,
    config: PlanConfig = DEFAULT_PLAN_CONFIG,
) -> ReadPlan[K]:
    """Plan round 1: the ranges to fetch so every wanted filter's header can be decoded.

    Parameters
    ----------
    wanted:
        ``(key, bloom_filter_offset, bloom_filter_length)`` per filter, as read from the
        footer; ``key`` is opaque (e.g. ``(row_group, column)``) and handed back. A missing,
        zero or negative offset means "no filter"; a missing length means "guess".
    file_size:
        Size of the file in bytes.
    footer_start:
        Offset of the thrift FileMetaData (``file_size - 8 - footer_len``); filters must end
        at or before it.
    tail_start:
        Start of the suffix ``[tail_start, file_size)`` the reader already holds.
    config:
        Limits and merge tuning.

    Raises
    ------
    ParquetFormatError
        ``file_size`` or ``footer_start`` cannot belong to a Parquet file.
    InvalidArgumentError
        An argument has the wrong type or ``tail_start`` is past the end. Bad filter offsets
        and lengths are *not* errors: they give UNUSABLE entries with a reason.
    """
    _check_geometry(file_size, footer_start, tail_start)
    tail = ByteRange(tail_start, file_size)

    # Per wanted filter: key, offset, length and what _classify made of them: a final
    # outcome (PlannedFilter), an exact range (ByteRange) or a guess offset (int).
    classified: list[tuple[K, int | None, int | None, PlannedFilter[K] | ByteRange | int]] = []
    # Where each filter to read starts. A guess stops at the next one: filters do not
    # overlap, so bytes beyond it belong to that filter (fetched anyway) and need not be
    # read twice. It keeps at least max_header_bytes so the header always decodes; a bitset
    # running further is fetched in round 2. Without this, packed guesses would chain into
    # one range above max_range_bytes.
    start_set: set[int] = set()
    max_serialized = config.max_serialized_bytes
    for item in wanted:
        try:
            key, offset, length = item
        except (TypeError, ValueError):
            raise InvalidArgumentError(
                f"wanted filter {item!r} is not a (key, offset, length) triple"
            ) from None
        # The common case inline: what _classify accepts as an exact range, tested the same
        # way (offset >= 4 and offset + length <= footer_start imply offset < footer_start);
        # anything else gets its full treatment and reason there.
        if (
            type(offset) is int
            and type(length) is int
            and offset >= MAGIC_BYTES
            and MIN_FILTER_BYTES <= length <= max_serialized
            and offset + length <= footer_start
        ):
            outcome: PlannedFilter[K] | ByteRange | int = ByteRange(offset, offset + length)
            start_set.add(offset)
        else:
            outcome = _classify(key, offset, length, footer_start, config)
            if isinstance(outcome, ByteRange):
                start_set.add(outcome.start)
            elif not isinstance(outcome, PlannedFilter):
                start_set.add(outcome)
        classified.append((key, offset, length, outcome))
    starts = sorted(start_set)

    def guess_range(offset: int) -> ByteRange:
        end = min(offset + config.guess_bytes, footer_start)
        index = bisect_right(starts, offset)
        if index < len(starts):
            end = min(end, max(starts[index], offset + config.max_header_bytes))
        return ByteRange(offset, end)

    # The bytes each filter needs (None: not read), and whether the tail already holds them.
    needs: list[ByteRange | None] = []
    in_tail: list[bool] = []
    outside: list[ByteRange] = []
    tail_start_, tail_end = tail
    for *_, outcome in classified:
        if isinstance(outcome, PlannedFilter):
            needs.append(None)
            in_tail.append(False)
            continue
        wanted_range = outcome if isinstance(outcome, ByteRange) else guess_range(outcome)
        inside = tail_start_ <= wanted_range.start and wanted_range.end <= tail_end
        if not inside:
            outside.append(wanted_range)
        needs.append(wanted_range)
        in_tail.append(inside)

    fetches = tuple(merge_checked(outside, config.max_hole_bytes, config.max_range_bytes))
    fetch_starts = [f.start for f in fetches]

    filters: list[PlannedFilter[K]] = []
    planned = FilterStatus.PLANNED
    for (key, offset, length, outcome), need, inside in zip(
        classified, needs, in_tail, strict=True
    ):
        if need is None:
            assert isinstance(outcome, PlannedFilter)
            filters.append(outcome)
            continue
        # merge_ranges guarantees exactly one fetch contains each input range.
        buffer = tail if inside else fetches[bisect_right(fetch_starts, need.start) - 1]
        location = Span(need, (Piece(buffer, need[0], need[1]),))
        filters.append(PlannedFilter(key, offset, length, planned, None, location))

    return ReadPlan(file_size, footer_start, tail, fetches, tuple(filters), config)
