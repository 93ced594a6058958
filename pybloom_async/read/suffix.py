"""How many bytes the first read of a file asks for: the adaptive suffix.

Files from one writer put their footer and Bloom filters at a similar distance from the
end (Spark about 86 KB, pyarrow and DuckDB right before the footer). A
:class:`SuffixLearner` records, for each file read, how far from the end the first byte
the reader needed lies (the first filter, or the footer when the filters are further
away than ``maximum``), and proposes for the next file a suffix that covers most of the
recent files: a high percentile of the recent distances plus a margin, clamped to
``[floor, maximum]``.

Before anything is learned it proposes ``start``, a size that covers the usual layouts
(measured: ``bench/RESULTS.md``, "Adaptive suffix"), so that a run's first files, read
all at once, cost one request each too: nothing ever waits for the learning. Files
started after the first ones complete read what was learned, usually less.

Pure: no I/O, no clock. The proposal is computed when a file is recorded, not when
one is asked for (a file's read costs a field read). Readers shared between threads
record under a lock.
"""

from __future__ import annotations

import threading
from collections import deque

from ..checks import integer

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
    floor:
        No learned proposal is smaller (default: ``start``).
    window:
        Recent distances considered.
    """

    def __init__(
        self, start: int, maximum: int, *, floor: int | None = None, window: int = WINDOW
    ) -> None:
        self.start = integer("start", start, minimum=8)
        self.maximum = integer("maximum", maximum, minimum=self.start)
        given = self.start if floor is None else floor
        self.floor = integer("floor", given, minimum=8, maximum=self.maximum)
        self._seen: deque[int] = deque(maxlen=integer("window", window, minimum=1))
        self._proposal = self.start
        self._lock = threading.Lock()

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
        with self._lock:
            self._seen.append(max(0, needed))
            ordered = sorted(self._seen)
        distance = ordered[min(len(ordered) - 1, int(PERCENTILE * len(ordered)))]
        wanted = distance + max(MARGIN_MIN, distance // MARGIN_SHARE)
        wanted = -(-wanted // ROUND) * ROUND
        self._proposal = min(self.maximum, max(self.floor, wanted))

    def propose(self, file_size: int | None = None) -> int:
        """The suffix size to read next (never above ``file_size`` when it is known)."""
        size = self._proposal
        if file_size is not None:
            size = min(size, max(8, file_size))
        return size
