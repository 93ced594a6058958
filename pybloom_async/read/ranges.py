"""Byte ranges: merging requests, and pieces of fetched buffers addressed across them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple, TypeAlias, TypeVar

from ..checks import integer
from ..errors import InvalidArgumentError, SourceError

__all__ = [
    "BufferLike",
    "ByteRange",
    "Piece",
    "Span",
    "merge_ranges",
]

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
