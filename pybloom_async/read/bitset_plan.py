"""Round 2 of the filter reads: headers resolved, the bitsets still to fetch."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple

from ..errors import InvalidArgumentError
from .plan import BLOCK_BYTES, FilterStatus, PlanConfig, PlannedFilter, ReadPlan
from .ranges import BufferLike, ByteRange, K, Piece, Span, attach_buffers, merge_checked


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
    bitset: Span | None = None


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
        attach_buffers(self.fetches, fetched, out)
        return out


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

    def locate(self, need: ByteRange) -> Span:
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
        return Span(need, tuple(pieces))


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


def _unusable(
    entry: PlannedFilter[K],
    reason: str,
    header_len: int | None = None,
    num_bytes: int | None = None,
) -> ResolvedFilter[K]:
    """The planned filter, UNUSABLE for ``reason`` (its header read, or not decoded)."""
    status = FilterStatus.UNUSABLE
    return ResolvedFilter(
        entry.key, entry.offset, entry.length, status, reason, header_len, num_bytes
    )


def _inside_read(entry: PlannedFilter[Any], bitset: ByteRange, held: set[ByteRange]) -> Span | None:
    """The bitset's location when the one buffer its header came from holds it all, else None.

    The usual case (a known length, or a guess long enough): no other buffer needs to be
    searched, and one piece means :meth:`Span.view` copies nothing.
    """
    assert entry.read is not None
    pieces = entry.read.pieces
    if len(pieces) != 1:
        return None
    buffer = pieces[0].buffer
    if buffer.start <= bitset.start and bitset.end <= buffer.end and buffer in held:
        return Span(bitset, (Piece(buffer, bitset.start, bitset.end),))
    return None


# Long because: one pass over the resolved headers that shares its state (coverage of the reads
# done, ranges still to fetch, the status of each filter), as plan_filter_reads does.
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
    outcomes: list[ResolvedFilter[K] | tuple[int, int, ByteRange, Span | None]] = []
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
            outcomes.append(_unusable(entry, f"bloom filter header: {header}"))
            continue
        if not isinstance(header, tuple) or len(header) != 2:
            raise InvalidArgumentError(
                f"header for filter {entry.key!r} must be a HeaderInfo or a "
                f"(header_len, num_bytes) pair, a reason string or None, not {header!r}"
            )
        header_len, num_bytes = header
        checked = _check_header(entry, header_len, num_bytes, plan.footer_start, plan.config)
        if isinstance(checked, str):
            outcomes.append(_unusable(entry, checked, header_len, num_bytes))
            continue
        located = _inside_read(entry, checked, held)
        if located is None:
            if coverage is None:
                coverage = _Coverage()
                coverage.add_round(plan.fetches)
                coverage.add_round((plan.tail,))
            missing.extend(coverage.missing(checked))
        outcomes.append((header_len, num_bytes, checked, located))

    fetches = tuple(merge_checked(missing, plan.config.max_hole_bytes, plan.config.max_range_bytes))
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
