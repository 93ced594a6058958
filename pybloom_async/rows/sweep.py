"""A run's local files pruned whole in a tight loop, ahead of the per-file step.

The per-file step (:func:`.api.file_rows`) takes each file through the run's lane, its
opened file and its pass: tens of microseconds of Python a file, most of a point lookup's
time over a few hundred files of which one holds the key. Once the run's file pass is bound
(:mod:`pybloom_async.pruning.file_pass`: learnt from a file read the usual way), a file it
prunes whole needs none of that. :meth:`Sweep.over` takes the files one after another, each in
one C call, and makes the plans of those pruned whole as the per-file step makes them
(:func:`.pruned.passed_file`). A file with a row group kept, or key/value metadata not the
reference's, goes on to the per-file step with the footer and row groups its call found (it
is not read or pruned again); one the call cannot decide goes on as it is.

:func:`each_file` runs a run's files so: the first through the per-file step (which binds
the pass), the rest swept, then the per-file step over what the sweep left, the results in
file order and the progress counted over every file.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import PyBloomError
from ..io.base import FileInfo, location_text
from ..pruning.partitions import PartitionPredicate
from ..read.fetch import Footer
from ..read.run import Run
from ..tasks.loops import inline, stop_point, to_worker
from ..tasks.workers import for_each

if TYPE_CHECKING:
    from .plan import FilePlan

Location = str | FileInfo
T = TypeVar("T")

#: Files swept between two checks for a cancelled caller.
STOP_EVERY = 32
#: Files swept per worker-thread call when the run is on the event loop (a few ms each).
LOOP_PART = 128


class Sweep:
    """A run's sweep of its local files (see the module): what it found, the plans of the
    files pruned whole by their place in the files swept, and the footer and kept row
    groups of the files with rows to read, by path (taken once: :meth:`passed`).
    ``kept``: the files to read (the others are left alone); ``footers``: those a lake
    index gave (read the usual way)."""

    __slots__ = ("_footers", "_kept", "_parts", "_passed", "_run", "plans")

    def __init__(
        self,
        run: Run,
        parts: PartitionPredicate,
        kept: Collection[str],
        footers: Mapping[str, Footer],
    ) -> None:
        self._run, self._parts, self._kept, self._footers = run, parts, kept, footers
        self.plans: dict[int, FilePlan] = {}
        self._passed: dict[str, tuple[Footer, list[int]]] = {}

    def passed(self, path: str) -> tuple[Footer, list[int]] | None:
        """The footer and kept row groups the sweep found for ``path`` (None: not swept),
        handed out once."""
        return self._passed.pop(path, None)

    def over(
        self,
        files: Sequence[Location],
        progress: Callable[[int], None] | None = None,
        start: int = 0,
    ) -> Sweep:
        """``files`` swept, each decided by the run's bound file pass, its plan kept at its
        place plus ``start``; ``progress`` is told the plans made so far after each.
        Blocking: a worker thread's, or the run's own when it runs inline."""
        from .plan import FilePlan, rows_of  # pyarrow's: imported once rows are read
        from .pruned import passed_file

        run, parts, kept, footers = self._run, self._parts, self._kept, self._footers
        stats = run.reader.stats
        for at, location in enumerate(files):
            if at % STOP_EVERY == 0:
                stop_point()
            path = location_text(location)
            if path not in kept or path in footers:
                continue
            try:
                compiled = parts.decide(location).compiled
                passes = None if compiled is None else compiled.file_pass(run, path)
                if passes is None or not passes.asking:
                    continue
                found = passed_file(passes, location, path, stats, rows_of(parts, location))
            except PyBloomError:
                continue  # the per-file step meets it again, in its place, and names the file
            if isinstance(found, FilePlan):
                self.plans[start + at] = found
                if progress is not None:
                    progress(len(self.plans))
            elif found is not None:
                self._passed[path] = found
        return self


async def each_file(
    run: Run,
    files: Sequence[Location],
    one: Callable[[Location], Awaitable[T]],
    pruned: Callable[[FilePlan], T],
    progress: Callable[[int, int], None] | None,
    sweep: Sweep | None,
) -> list[T]:
    """``one`` over ``files``, in order, as :func:`~pybloom_async.tasks.workers.for_each`
    runs it; with ``sweep`` (see the module), the files after the first are swept first
    and ``one`` runs over those left. A plan swept is given as ``pruned(plan)``.
    ``progress`` is told ``(done, len(files))`` after each file."""
    if sweep is None or len(files) < 2:
        return await for_each(files, one, run.limit, progress, batches=run.batches)
    total = len(files)
    head = await for_each(files[:1], one, run.limit, None, batches=run.batches)
    told = [0]

    def tell(done: int) -> None:
        while progress is not None and told[0] < done:
            told[0] += 1
            progress(told[0], total)

    tell(1)
    later = files[1:]
    if inline():  # in this thread: told after each file as the sweep goes
        ticks = (lambda n: tell(1 + n)) if progress is not None else None
        sweep.over(later, ticks)
    else:
        # A worker thread's, in parts: the caller's cancellation is seen between them, and
        # the progress told after each (here, file after file).
        for start in range(0, len(later), LOOP_PART):
            await to_worker(sweep.over, later[start : start + LOOP_PART], None, start)
            tell(1 + len(sweep.plans))
    plans = sweep.plans
    done = 1 + len(plans)
    tell(done)
    left = [f for at, f in enumerate(later) if at not in plans]
    report = None if progress is None else _after(progress, done, total)
    rest = iter(await for_each(left, one, run.limit, report, batches=run.batches))
    return head + [pruned(plans[at]) if at in plans else next(rest) for at in range(len(files) - 1)]


def _after(progress: Callable[[int, int], None], before: int, total: int) -> Any:
    return lambda done, _: progress(before + done, total)
