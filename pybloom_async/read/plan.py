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

Buffers are keyed by the :class:`ByteRange` they were fetched for; :meth:`Location.view`
slices them with ``memoryview`` so a filter held by one buffer is never copied.
"""

from __future__ import annotations

import enum
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeAlias, TypeVar

from ..checks import integer
from ..errors import InvalidArgumentError, ParquetFormatError, SourceError

__all__ = [
    "BLOCK_BYTES",
    "DEFAULT_PLAN_CONFIG",
    "MAGIC_BYTES",
    "MIN_FILTER_BYTES",
    "MIN_HEADER_BYTES",
    "BitsetPlan",
    "BufferLike",
    "ByteRange",
    "FilterStatus",
    "HeaderInfo",
    "Location",
    "Piece",
    "PlanConfig",
    "PlannedFilter",
    "ReadPlan",
    "ResolvedFilter",
    "merge_ranges",
    "plan_bitset_reads",
    "plan_filter_reads",
]

K = TypeVar("K")

#: Any object the reader may hold fetched bytes in; all support the buffer protocol.
BufferLike: TypeAlias = bytes | bytearray | memoryview

KiB = 1024
MiB = 1024 * KiB

#: A Parquet file starts (and ends) with the 4-byte magic ``PAR1``; no filter starts inside it.
MAGIC_BYTES = 4
#: An SBBF block is eight 32-bit words (Parquet BloomFilter.md, "Split Block Bloom Filter").
BLOCK_BYTES = 32
#: Smallest compact-thrift ``BloomFilterHeader`` with its four required fields: numBytes
#: (field header + 1-byte zigzag varint for sizes <= 63) = 2 B, then algorithm, hash and
#: compression, each a struct holding one empty struct (4 B each), then the stop byte:
#: 2 + 3 * 4 + 1 = 15 B, the figure DESIGN.md gives for numBytes <= 63.
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
        (DESIGN.md) holds the header and the bitset of filters up to about 200k distinct
        values at 1% FPP; larger bitsets need a second read.
    max_filter_bytes:
        Largest bitset (``numBytes``) accepted: 128 MiB, the upper bound of Parquet's
        reference implementations. Bigger filters are unusable and never fetched.
    max_header_bytes:
        Largest ``BloomFilterHeader`` accepted. Today's headers are 15-18 B (DESIGN.md);
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

    @property
    def max_serialized_bytes(self) -> int:
        """Largest ``bloom_filter_length`` accepted: a header plus a bitset at their limits."""
        return self.max_header_bytes + self.max_filter_bytes


DEFAULT_PLAN_CONFIG = PlanConfig()


class ByteRange(NamedTuple):
    """A half-open byte range ``[start, end)`` of a file."""

    start: int
    end: int

    @property
    def length(self) -> int:
        """Number of bytes in the range."""
        return self.end - self.start

    def contains(self, other: ByteRange) -> bool:
        """Whether ``other`` lies entirely inside this range."""
        return self.start <= other.start and other.end <= self.end

    def __str__(self) -> str:
        return f"[{self.start}, {self.end})"


def merge_ranges(
    ranges: Iterable[tuple[int, int]], max_hole: int, max_size: int
) -> list[ByteRange]:
    """Coalesce byte ranges into fewer, larger ones; sorted, disjoint, covering every input.

    Overlapping inputs are always joined first (a byte must be fetched once, and each input
    must lie in exactly one output). The resulting pieces are then merged left to right
    while the hole between them is at most ``max_hole`` and the merged range stays within
    ``max_size``; so an output larger than ``max_size`` is always a run of overlapping
    inputs without holes, typically one oversized input standing alone. Empty inputs are
    dropped.

    Parameters
    ----------
    ranges:
        ``(start, end)`` pairs, end exclusive, in any order.
    max_hole:
        Largest gap (bytes not asked for) that may be read over; 0 merges only touching
        ranges.
    max_size:
        Largest merged range.

    Raises
    ------
    InvalidArgumentError
        A range is not a pair of ints with ``0 <= start <= end``, or a limit is invalid.
    """
    max_hole = integer("max_hole", max_hole, minimum=0)
    max_size = integer("max_size", max_size, minimum=1)
    cleaned: list[tuple[int, int]] = []
    for item in ranges:
        try:
            start, end = item
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"range {item!r} is not a (start, end) pair") from None
        for value in (start, end):
            if not isinstance(value, int) or isinstance(value, bool):
                raise InvalidArgumentError(f"range {item!r} holds a non-int bound")
        if start < 0 or end < start:
            raise InvalidArgumentError(f"range {item!r} must satisfy 0 <= start <= end")
        if end > start:
            cleaned.append((start, end))
    return _merge_checked(cleaned, max_hole, max_size)


def _merge_checked(
    ranges: Iterable[tuple[int, int]], max_hole: int, max_size: int
) -> list[ByteRange]:
    """:func:`merge_ranges` for ranges the planner made: int bounds, ``0 <= start < end``.

    The planner's ranges come out of ``_classify`` and ``_check_header``, which checked
    every bound read from the file; only the caller-supplied ones of the public function
    need its argument checks.
    """
    # Pass 1: union overlapping ranges. Touching ranges (end == next start) stay apart here
    # so that pass 2 may still split them at the size limit.
    atoms: list[list[int]] = []
    for start, end in sorted(ranges):
        if atoms and start < atoms[-1][1]:
            atoms[-1][1] = max(atoms[-1][1], end)
        else:
            atoms.append([start, end])

    # Pass 2: greedy left-to-right merge under the hole and size limits.
    merged: list[ByteRange] = []
    for start, end in atoms:
        if merged:
            last = merged[-1]
            if start - last.end <= max_hole and end - last.start <= max_size:
                merged[-1] = ByteRange(last.start, end)
                continue
        merged.append(ByteRange(start, end))
    return merged


class Piece(NamedTuple):
    """A run of file bytes ``[start, end)`` held by the buffer fetched for ``buffer``."""

    buffer: ByteRange
    start: int
    end: int

    @property
    def buffer_slice(self) -> slice:
        """Where the run lies inside its buffer."""
        return slice(self.start - self.buffer.start, self.end - self.buffer.start)


class Location(NamedTuple):
    """Where the bytes of one file range will be found: one or more pieces, in file order."""

    range: ByteRange
    pieces: tuple[Piece, ...]

    @property
    def zero_copy(self) -> bool:
        """True when one buffer holds the whole range, so :meth:`view` copies nothing."""
        return len(self.pieces) == 1

    def view(self, buffers: Mapping[ByteRange, BufferLike]) -> memoryview:
        """Return the range's bytes as a read-only view into the fetched buffers.

        A range held by one buffer is a slice of it, without a copy. A range split across
        buffers (a bitset whose start came with the guess and whose rest came in round 2)
        is joined into one new buffer of ``range.length`` bytes; that size was checked
        against the limits when the plan was made.

        Parameters
        ----------
        buffers:
            The fetched bytes keyed by the range they were fetched for, as built by
            :meth:`ReadPlan.buffers` and :meth:`BitsetPlan.buffers`.

        Raises
        ------
        InvalidArgumentError
            A buffer the location needs is missing or has the wrong length.
        """
        if len(self.pieces) == 1:
            buffer, start, end = self.pieces[0]
            return _buffer_view(buffers, buffer)[start - buffer.start : end - buffer.start]
        joined = bytearray(self.range.length)
        for piece in self.pieces:
            source = _buffer_view(buffers, piece.buffer)[piece.buffer_slice]
            joined[piece.start - self.range.start : piece.end - self.range.start] = source
        return memoryview(joined).toreadonly()


def _buffer_view(buffers: Mapping[ByteRange, BufferLike], key: ByteRange) -> memoryview:
    try:
        data = buffers[key]
    except KeyError:
        raise InvalidArgumentError(f"no buffer was given for the fetched range {key}") from None
    view = memoryview(data)
    if view.ndim != 1 or view.format not in ("B", "b", "c"):
        view = view.cast("B")
    if view.nbytes != key.end - key.start:
        raise InvalidArgumentError(
            f"buffer for range {key} holds {view.nbytes} bytes, expected {key.length}"
        )
    return view if view.readonly else view.toreadonly()


def _attach(
    ranges: Sequence[ByteRange], data: Sequence[BufferLike], into: dict[ByteRange, BufferLike]
) -> None:
    if len(data) != len(ranges):
        raise InvalidArgumentError(f"got {len(data)} buffers for {len(ranges)} fetched ranges")
    for key, buf in zip(ranges, data, strict=True):
        size = memoryview(buf).nbytes
        if size != key.length:
            # A source that returns fewer bytes than asked (truncated or replaced object)
            # must not be sliced as if it were whole.
            raise SourceError(f"read of range {key} returned {size} bytes, expected {key.length}")
        into[key] = buf


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
    read: Location | None = None

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
        _attach((self.tail,), (tail,), out)
        _attach(self.fetches, fetched, out)
        return out


class HeaderInfo(NamedTuple):
    """What the reader decoded from a filter's ``BloomFilterHeader``.

    ``header_len`` is the number of bytes the thrift header took, ``num_bytes`` its
    ``numBytes`` field (the bitset size), both as decoded: they are checked here. The
    ``(header_len, num_bytes)`` pair returned by ``filter.decode_header`` is accepted as is.
    """

    header_len: int
    num_bytes: int


@dataclass(frozen=True)
class ResolvedFilter(Generic[K]):
    """Round-2 outcome for one wanted filter; ``bitset`` is set when status is READY."""

    key: K
    offset: int | None
    length: int | None
    status: FilterStatus
    reason: str | None = None
    header_len: int | None = None
    num_bytes: int | None = None
    bitset: Location | None = None


@dataclass(frozen=True)
class BitsetPlan(Generic[K]):
    """Round-2 plan: extra ranges to fetch (often none) and where every bitset lies."""

    fetches: tuple[ByteRange, ...]
    filters: tuple[ResolvedFilter[K], ...]

    def buffers(
        self, fetched: Sequence[BufferLike], previous: Mapping[ByteRange, BufferLike]
    ) -> dict[ByteRange, BufferLike]:
        """Add the round-2 bytes (in ``fetches`` order) to the round-1 buffers.

        Raises
        ------
        InvalidArgumentError
            The number of buffers does not match ``fetches``.
        SourceError
            A buffer's length differs from its range (a short read).
        """
        out = dict(previous)
        _attach(self.fetches, fetched, out)
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

    fetches = tuple(_merge_checked(outside, config.max_hole_bytes, config.max_range_bytes))
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
        location = Location(need, (Piece(buffer, need[0], need[1]),))
        filters.append(PlannedFilter(key, offset, length, planned, None, location))

    return ReadPlan(file_size, footer_start, tail, fetches, tuple(filters), config)


class _Coverage:
    """The file ranges held in buffers, in rounds; ranges within one round are disjoint."""

    def __init__(self) -> None:
        # Per round: the ranges' starts, their ends, the ranges (sorted by start).
        self._rounds: list[tuple[list[int], list[int], list[ByteRange]]] = []

    def add_round(self, ranges: Iterable[ByteRange]) -> None:
        ordered = sorted(ranges)
        self._rounds.append(([r.start for r in ordered], [r.end for r in ordered], ordered))

    def _best(self, pos: int) -> ByteRange | None:
        """The buffer holding ``pos`` that reaches furthest, so a range needs fewest pieces."""
        best: ByteRange | None = None
        best_end = pos
        for starts, ends, ranges in self._rounds:
            index = bisect_right(starts, pos) - 1
            if index >= 0 and ends[index] > best_end:
                best = ranges[index]
                best_end = ends[index]
        return best

    def _next_start(self, pos: int) -> int | None:
        nearest: int | None = None
        for starts, _ends, _ranges in self._rounds:
            index = bisect_right(starts, pos)
            if index < len(starts) and (nearest is None or starts[index] < nearest):
                nearest = starts[index]
        return nearest

    def missing(self, need: ByteRange) -> list[ByteRange]:
        """Sub-ranges of ``need`` that no buffer holds."""
        gaps: list[ByteRange] = []
        pos = need.start
        while pos < need.end:
            best = self._best(pos)
            if best is not None:
                pos = min(best.end, need.end)
                continue
            nxt = self._next_start(pos)
            end = need.end if nxt is None else min(nxt, need.end)
            gaps.append(ByteRange(pos, end))
            pos = end
        return gaps

    def locate(self, need: ByteRange) -> Location:
        """The pieces holding ``need``; every byte must already be covered."""
        pieces: list[Piece] = []
        pos = need.start
        while pos < need.end:
            best = self._best(pos)
            if best is None:  # pragma: no cover - plan_bitset_reads fetches every gap first
                raise AssertionError(f"byte {pos} of {need} is in no buffer")
            end = min(best.end, need.end)
            pieces.append(Piece(best, pos, end))
            pos = end
        return Location(need, tuple(pieces))


def _check_header(
    entry: PlannedFilter[K], header_len: int, num_bytes: int, footer_start: int, config: PlanConfig
) -> str | ByteRange:
    """Check a decoded header against the footer and limits: the bitset range or a reason."""
    assert entry.offset is not None and entry.read is not None
    if type(header_len) is not int or type(num_bytes) is not int:  # plain ints: one test
        for name, value in (("header_len", header_len), ("num_bytes", num_bytes)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise InvalidArgumentError(
                    f"HeaderInfo.{name} must be an int, not {type(value).__name__} "
                    f"(filter {entry.key!r})"
                )
    if header_len <= 0 or header_len > entry.read.range.length:
        # The decoder cannot have consumed bytes it was not given: a bug, not bad data.
        raise InvalidArgumentError(
            f"header_len {header_len} is outside the {entry.read.range.length} bytes the "
            f"header was decoded from (filter {entry.key!r})"
        )
    if header_len > config.max_header_bytes:
        return f"header of {header_len} bytes is above the limit of {config.max_header_bytes}"
    if num_bytes < BLOCK_BYTES or num_bytes % BLOCK_BYTES:
        return f"numBytes {num_bytes} is not a positive multiple of the {BLOCK_BYTES}-byte block"
    if num_bytes > config.max_filter_bytes:
        return f"numBytes {num_bytes} is above the limit of {config.max_filter_bytes} bytes"
    end = entry.offset + header_len + num_bytes
    if entry.length is not None and header_len + num_bytes != entry.length:
        return (
            f"header ({header_len} bytes) + numBytes {num_bytes} = {header_len + num_bytes} "
            f"does not match bloom_filter_length {entry.length}"
        )
    if end > footer_start:
        return (
            f"bitset ends at {end} (offset {entry.offset} + header {header_len} + numBytes "
            f"{num_bytes}), past the footer start {footer_start}"
        )
    return ByteRange(entry.offset + header_len, end)


def _inside_read(
    entry: PlannedFilter[Any], bitset: ByteRange, held: set[ByteRange]
) -> Location | None:
    """The bitset's location when the one buffer its header came from holds it all, else None.

    The usual case (a known length, or a guess long enough): no other buffer needs to be
    searched, and one piece means :meth:`Location.view` copies nothing.
    """
    assert entry.read is not None
    pieces = entry.read.pieces
    if len(pieces) != 1:
        return None
    buffer = pieces[0].buffer
    if buffer.start <= bitset.start and bitset.end <= buffer.end and buffer in held:
        return Location(bitset, (Piece(buffer, bitset.start, bitset.end),))
    return None


def plan_bitset_reads(
    plan: ReadPlan[K], headers: Sequence[HeaderInfo | tuple[int, int] | str | None]
) -> BitsetPlan[K]:
    """Plan round 2: check each decoded header and fetch only the bitset bytes not yet held.

    Parameters
    ----------
    plan:
        The round-1 plan whose buffers the headers were decoded from.
    headers:
        One entry per ``plan.filters``: a :class:`HeaderInfo` (or the ``(header_len,
        num_bytes)`` pair ``filter.decode_header`` returns) for a PLANNED filter whose
        header decoded; a reason string for one whose header did not (the filter becomes
        UNUSABLE); ``None`` for filters that were not PLANNED.

    Raises
    ------
    InvalidArgumentError
        ``headers`` does not match ``plan.filters``, or a HeaderInfo is impossible for the
        bytes it was decoded from (a decoder bug). Headers that are merely invalid make
        their filter UNUSABLE instead.
    """
    if len(headers) != len(plan.filters):
        raise InvalidArgumentError(
            f"got {len(headers)} headers for {len(plan.filters)} planned filters"
        )
    # Buffers already held; a coverage index over them is built only when a bitset is not
    # inside the buffer its header came from.
    held = {*plan.fetches, plan.tail}
    coverage: _Coverage | None = None

    # Per filter: its final outcome, or (header, bitset range, location if already known).
    outcomes: list[ResolvedFilter[K] | tuple[int, int, ByteRange, Location | None]] = []
    missing: list[ByteRange] = []
    planned = FilterStatus.PLANNED
    for entry, header in zip(plan.filters, headers, strict=True):
        if entry.status is not planned:
            if header is not None:
                raise InvalidArgumentError(
                    f"filter {entry.key!r} is {entry.status.value}; its header must be None"
                )
            outcomes.append(
                ResolvedFilter(entry.key, entry.offset, entry.length, entry.status, entry.reason)
            )
            continue
        if header is None:
            raise InvalidArgumentError(f"filter {entry.key!r} was planned but got no header")
        if isinstance(header, str):
            outcomes.append(
                ResolvedFilter(
                    entry.key,
                    entry.offset,
                    entry.length,
                    FilterStatus.UNUSABLE,
                    f"bloom filter header: {header}",
                )
            )
            continue
        if not isinstance(header, tuple) or len(header) != 2:
            raise InvalidArgumentError(
                f"header for filter {entry.key!r} must be a HeaderInfo or a "
                f"(header_len, num_bytes) pair, a reason string or None, not {header!r}"
            )
        header_len, num_bytes = header
        checked = _check_header(entry, header_len, num_bytes, plan.footer_start, plan.config)
        if isinstance(checked, str):
            outcomes.append(
                ResolvedFilter(
                    entry.key,
                    entry.offset,
                    entry.length,
                    FilterStatus.UNUSABLE,
                    checked,
                    header_len,
                    num_bytes,
                )
            )
            continue
        located = _inside_read(entry, checked, held)
        if located is None:
            if coverage is None:
                coverage = _Coverage()
                coverage.add_round(plan.fetches)
                coverage.add_round((plan.tail,))
            missing.extend(coverage.missing(checked))
        outcomes.append((header_len, num_bytes, checked, located))

    fetches = tuple(
        _merge_checked(missing, plan.config.max_hole_bytes, plan.config.max_range_bytes)
    )
    if coverage is not None:
        coverage.add_round(fetches)

    resolved: list[ResolvedFilter[K]] = []
    ready = FilterStatus.READY
    for entry, outcome in zip(plan.filters, outcomes, strict=True):
        if isinstance(outcome, ResolvedFilter):
            resolved.append(outcome)
            continue
        header_len, num_bytes, bitset, located = outcome
        if located is None:
            assert coverage is not None
            located = coverage.locate(bitset)
        resolved.append(
            ResolvedFilter(
                entry.key, entry.offset, entry.length, ready, None, header_len, num_bytes, located
            )
        )
    return BitsetPlan(fetches, tuple(resolved))
