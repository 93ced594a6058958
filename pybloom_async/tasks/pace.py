"""Whether a run's files prove slow: the one rule for running them on more than one thread.

A warm local file's work (its footer, filters, probes: a few hundred microseconds of
Python) is done fastest by one thread: two threads only contend for the interpreter lock
(0.30 ms a file on one thread against 0.43 on two, `bench/RESULTS.md`). Files read from a
disk, or whose rows are decoded, take longer and let go of the lock while they wait or
decode: then more threads pay. A run's :class:`Pace` is told how long each file took and
says when the files have proved slow: three slow ones among the last eight. One or two (a
point lookup's file with rows, a filter's false positive), or a rare pause over a long run
of quick files, are not worth a thread. A run that knows its files ahead before timing
any (a sweep of their footers found large row groups to read) says so
(:meth:`Pace.expect`), and its files are spread from the first.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

#: A file is slow when its work took longer than this (wall time)...
SLOW_SECONDS = 0.002
#: ...and a run's files have proved slow at this many slow ones...
SLOW_FILES = 3
#: ...among its last this many.
RECENT_FILES = 8
_RECENT_MASK = (1 << RECENT_FILES) - 1


class Pace:
    """The pace of one run's files (see the module). Told from any thread: a lost update
    only delays the verdict by a file."""

    __slots__ = ("_recent", "slow")

    def __init__(self) -> None:
        self._recent = 0  # one bit per recent file, the newest lowest: 1 when it was slow
        self.slow = False

    def note(self, seconds: float) -> None:
        """One file's work took ``seconds``."""
        self._recent = ((self._recent << 1) | (seconds > SLOW_SECONDS)) & _RECENT_MASK
        if self._recent.bit_count() >= SLOW_FILES:
            self.slow = True

    def expect(self, files: int) -> None:
        """``files`` files ahead are known to be slow before any is timed (a sweep found
        their kept row groups too large to be quick): at :data:`SLOW_FILES` or more the
        run's files are slow from here, with none worked on one thread first."""
        if files >= SLOW_FILES:
            self.slow = True

    @contextlib.contextmanager
    def timing(self) -> Iterator[None]:
        """The block is one file's work: its time is noted, whether it ends or raises (an
        ``await`` inside included)."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.note(time.perf_counter() - started)

    def timed(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)``, its time noted."""
        with self.timing():
            return function(*args)
