"""How many bytes the first read of a file asks for: the adaptive suffix.

Files from one writer put their footer and Bloom filters at a similar distance from the
end (Spark about 86 KB, pyarrow and DuckDB right before the footer). A
:class:`SuffixLearner` records, for each file read, how far from the end the first byte
the reader needed lies (the first filter, or the footer when the filters are further
away than ``maximum``), and proposes for the next file a suffix that covers most of the
recent files: a high percentile of the recent distances plus a margin, clamped to
``[start, maximum]``. So after the first file of a run (or over the life of a
:class:`~pybloom_async.read.reader.BloomReader`) a file costs one request.

Pure: no I/O, no clock; one event loop drives it, so plain state is enough.
"""

from __future__ import annotations

from collections import deque

from ..checks import integer

__all__ = ["SuffixLearner"]

#: Distances kept: enough to see a run's usual layout, few enough to follow a change.
WINDOW = 64
#: Share of the recent files the proposal covers (the odd file farther away costs a
#: second request, not a larger read for every file).
PERCENTILE = 0.9
#: Room above the learned distance: files from one writer differ by a few KiB.
MARGIN_MIN = 4 * 1024
MARGIN_SHARE = 8  # 1/8 of the distance
#: Proposals are rounded up to this.
ROUND = 4 * 1024


class SuffixLearner:
    """Learns the suffix size that brings a file's footer and filters in one read.

    Parameters
    ----------
    start:
        Size proposed before anything is learned.
    maximum:
        No proposal is larger.
    window:
        Recent distances considered.
    """

    def __init__(self, start: int, maximum: int, *, window: int = WINDOW) -> None:
        self.start = integer("start", start, minimum=8)
        self.maximum = integer("maximum", maximum, minimum=self.start)
        self._seen: deque[int] = deque(maxlen=integer("window", window, minimum=1))

    @property
    def learned(self) -> bool:
        """Whether a file has been observed."""
        return bool(self._seen)

    def observe(self, file_size: int, needed_from: int, footer_start: int) -> None:
        """Record one file: the first byte the reader needed and the footer's first byte.

        A first needed byte farther from the end than ``maximum`` cannot be covered by
        one suffix read; the footer's distance is recorded instead, so such files do not
        make every later read larger for nothing.
        """
        needed = file_size - max(0, min(needed_from, footer_start))
        if needed > self.maximum:
            needed = file_size - max(0, footer_start)
        self._seen.append(max(0, needed))

    def propose(self, file_size: int | None = None) -> int:
        """The suffix size to read next (never above ``file_size`` when it is known)."""
        size = self.start
        if self._seen:
            ordered = sorted(self._seen)
            distance = ordered[min(len(ordered) - 1, int(PERCENTILE * len(ordered)))]
            wanted = distance + max(MARGIN_MIN, distance // MARGIN_SHARE)
            wanted = -(-wanted // ROUND) * ROUND
            size = min(self.maximum, max(self.start, wanted))
        if file_size is not None:
            size = min(size, max(8, file_size))
        return size
