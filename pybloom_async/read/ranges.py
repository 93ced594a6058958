"""Byte ranges: merging requests, and pieces of fetched buffers addressed across them."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple, TypeAlias, TypeVar

from ..checks import integer
from ..errors import InvalidArgumentError, SourceError

K = TypeVar("K")

#: Any object the reader may hold fetched bytes in; all support the buffer protocol.
BufferLike: TypeAlias = bytes | bytearray | memoryview

KiB = 1024
MiB = 1024 * KiB


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
    return merge_checked(cleaned, max_hole, max_size)


def merge_checked(
    ranges: Iterable[tuple[int, int]],
    max_hole: int,
    max_size: int,
    barriers: Sequence[tuple[int, int]] = (),
) -> list[ByteRange]:
    """:func:`merge_ranges` for ranges the planner made: int bounds, ``0 <= start < end``.

    The planner's ranges come out of ``_classify`` and ``_check_header``, which checked
    every bound read from the file; only the caller-supplied ones of the public function
    need its argument checks. A hole that holds any byte of ``barriers`` (sorted, disjoint
    ``(start, end)`` pairs) is never read over, whatever its size.
    """
    barrier_ends = [end for _, end in barriers]

    def crosses_barrier(start: int, end: int) -> bool:
        i = bisect.bisect_right(barrier_ends, start)
        return i < len(barriers) and barriers[i][0] < end

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
            if (
                start - last.end <= max_hole
                and end - last.start <= max_size
                and not (barriers and crosses_barrier(last.end, start))
            ):
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


class Span(NamedTuple):
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
            return buffer_view(buffers, buffer)[start - buffer.start : end - buffer.start]
        joined = bytearray(self.range.length)
        for piece in self.pieces:
            source = buffer_view(buffers, piece.buffer)[piece.buffer_slice]
            joined[piece.start - self.range.start : piece.end - self.range.start] = source
        return memoryview(joined).toreadonly()


def buffer_view(buffers: Mapping[ByteRange, BufferLike], key: ByteRange) -> memoryview:
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


def attach_buffers(
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


def _union(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, disjoint ranges covering the same bytes (touching ones joined)."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(r for r in ranges if r[1] > r[0]):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _subtract(
    ranges: Iterable[tuple[int, int]], held: Sequence[tuple[int, int]]
) -> list[tuple[int, int]]:
    """The bytes of ``ranges`` that ``held`` (sorted, disjoint) does not cover."""
    ends = [end for _, end in held]
    out: list[tuple[int, int]] = []
    for start, end in _union(ranges):
        i = bisect.bisect_right(ends, start)
        while start < end and i < len(held) and held[i][0] < end:
            if held[i][0] > start:
                out.append((start, held[i][0]))
            start = max(start, held[i][1])
            i += 1
        if start < end:
            out.append((start, end))
    return out


def plan_reads(
    wanted: Iterable[tuple[int, int]],
    held: Iterable[tuple[int, int]],
    keep_out: Iterable[tuple[int, int]],
    max_hole: int,
    max_size: int,
) -> list[ByteRange]:
    """The requests that bring the bytes of ``wanted`` not already ``held``, each byte once.

    The missing bytes are merged as :func:`merge_ranges` merges (holes up to ``max_hole``,
    ranges up to ``max_size``), but a hole is never read over where it holds a byte already
    held (it would be fetched twice) or a byte of ``keep_out`` (bytes a later phase may not
    need: the other columns' chunks while the predicate's are read first).
    """
    have = _union(held)
    missing = _subtract(wanted, have)
    barriers = _union([*have, *keep_out])
    return merge_checked(missing, max_hole, max_size, barriers)


class HeldBytes:
    """Bytes of one file fetched so far, as sorted ``(start, data)`` pieces: reads of any
    range they cover (across adjacent or overlapping pieces too), and the ranges covered.

    A value: :meth:`plus` makes a new one, so a decode in a worker thread reading one is
    never disturbed by a later fetch.
    """

    __slots__ = ("_pieces", "_starts")

    def __init__(self, pieces: Iterable[tuple[int, BufferLike]] = ()) -> None:
        # Kept disjoint: a piece's bytes another one already holds are trimmed off (views,
        # no copy), so a read walks forward from one place.
        disjoint: list[tuple[int, BufferLike]] = []
        covered = 0
        for start, data in sorted(pieces, key=lambda p: (p[0], -len(p[1]))):
            end = start + len(data)
            if end <= max(start, covered):
                continue
            if start < covered:
                data, start = memoryview(data)[covered - start :], covered
            disjoint.append((start, data))
            covered = end
        self._pieces = tuple(disjoint)
        self._starts = [start for start, _ in disjoint]

    def plus(self, pieces: Iterable[tuple[int, BufferLike]]) -> HeldBytes:
        """These bytes and ``pieces`` (overlapping bytes are the same file bytes)."""
        return HeldBytes((*self._pieces, *pieces))

    def ranges(self) -> list[tuple[int, int]]:
        """The ``(start, end)`` of each piece held."""
        return [(start, start + len(data)) for start, data in self._pieces]

    def view(self, start: int, end: int) -> memoryview | None:
        """The bytes ``[start, end)`` as a view of the piece that holds them all (no copy),
        or of a copy when they span pieces; None when any of them is not held."""
        i, whole = self._piece(start, end)
        if whole is not None:
            return whole
        found = self._joined(i, start, end)
        return None if found is None else memoryview(found)

    def read(self, start: int, end: int) -> bytes | None:
        """The bytes ``[start, end)``, or None when any of them is not held."""
        i, whole = self._piece(start, end)
        if whole is not None:
            return bytes(whole)
        return self._joined(i, start, end)

    def _piece(self, start: int, end: int) -> tuple[int, memoryview | None]:
        """The index of the piece where ``start`` would lie, and a view of ``[start, end)``
        when that piece holds it all (else None)."""
        pieces = self._pieces
        i = max(0, bisect.bisect_right(self._starts, start) - 1)
        if i < len(pieces):
            base, data = pieces[i]
            if base <= start and end <= base + len(data):
                return i, memoryview(data)[start - base : end - base]
        return i, None

    def _joined(self, i: int, start: int, end: int) -> bytes | None:
        """``[start, end)`` copied from the pieces from ``i`` on (None: not all held)."""
        pieces = self._pieces
        out = bytearray()
        at = start
        while at < end and i < len(pieces):
            base, data = pieces[i]
            if base > at:
                break
            stop = base + len(data)
            if stop > at:
                n = min(end, stop) - at
                out += memoryview(data)[at - base : at - base + n]
                at += n
            i += 1
        return bytes(out) if at >= end else None


#: No bytes held (a value: shared by every plan that holds none).
NO_BYTES = HeldBytes()
