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

:func:`each_file` runs a run's files so: the first pruned the usual way (which binds the
pass), the rest swept, and the per-file step over what the sweep left and the first file,
the results in file order and the progress counted over every file. Inline, the sweep goes
a part at a time and the files each part leaves are read while it sweeps the next; on an
event loop it sweeps every file first.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import PyBloomError
from ..io.base import FileInfo, location_text
from ..pruning.file_pass import FilePass
from ..pruning.partitions import PartitionPredicate
from ..read.fetch import Footer
from ..read.reader import OpenedFile
from ..read.run import Run
from ..tasks.loops import inline, stop_point, to_worker
from ..tasks.workers import for_each

if TYPE_CHECKING:
    from .plan import FilePlan, RowsOf

Location = str | FileInfo
T = TypeVar("T")

#: Files swept between two checks for a cancelled caller.
STOP_EVERY = 32
#: Files swept per worker-thread call when the run is on the event loop (a few ms each).
LOOP_PART = 128
#: A file the sweep passes on with kept row groups of this much data or more (2 MiB,
#: uncompressed, every column) is known to be slow: reading its rows takes a lane
#: milliseconds. A run with a few of them ahead spreads its files over its threads from
#: the first (:meth:`~pybloom_async.tasks.pace.Pace.expect`).
SLOW_KEPT_BYTES = 2 << 20


class Sweep:
    """A run's sweep of its local files (see the module): what it found, the plans of the
    files pruned whole by their place in the files swept, and the footer and kept row
    groups of the files with rows to read, by path (taken once: :meth:`passed`).
    ``kept``: the files to read (the others are left alone); ``footers``: those a lake
    index gave (read the usual way); ``strict``: the first file is pruned so (see
    :meth:`first`), for row groups handed to an engine (:func:`.api.file_rows`)."""

    __slots__ = (
        "_arrow_schemas",
        "_footers",
        "_kept",
        "_made",
        "_parts",
        "_passed",
        "_run",
        "_strict",
        "plans",
        "slow_files",
    )

    def __init__(
        self,
        run: Run,
        parts: PartitionPredicate,
        kept: Collection[str],
        footers: Mapping[str, Footer],
        strict: bool = False,
    ) -> None:
        self._run, self._parts, self._kept, self._footers = run, parts, kept, footers
        self._strict = strict
        self.plans: dict[int, FilePlan] = {}
        self._passed: dict[str, tuple[Footer, list[int]]] = {}
        self._arrow_schemas: dict[int, Any] = {}  # of the pass's references, by id
        # What a file's partition folders make of the predicate and its rows: the same for
        # every file of the same folders' values, in every part swept.
        self._made: dict[Any, tuple[FilePass | None, RowsOf | None] | None] = {}
        #: The files passed on whose kept row groups hold :data:`SLOW_KEPT_BYTES` or more.
        self.slow_files = 0

    def passed(self, path: str) -> tuple[Footer, list[int]] | None:
        """The footer and kept row groups the sweep found for ``path`` (None: not swept),
        handed out once."""
        return self._passed.pop(path, None)

    async def first(self, location: Location) -> int | None:
        """Ahead of the sweep, the run's first file: 1 when it is pruned here, the usual way
        (which binds the run's file pass), its footer and kept row groups kept as for a file
        the sweep passes on (its rows are then read beside the others', not alone before the
        sweep); 0 when the pass is bound already (a warm reader's: the sweep takes the first
        file too). None where it is not swept so (a lake index gave its footer, it is not to
        be read, its partition values leave no pass) or could not be pruned: the per-file
        step takes it first, and says what is wrong."""
        from .api import kept_row_groups

        path = location_text(location)
        if path not in self._kept or path in self._footers:
            return None
        run = self._run
        try:
            compiled = self._parts.decide(location).compiled
            passes = None if compiled is None else compiled.file_pass(run, path)
            if passes is None:
                return None
            if passes.asking:
                return 0

            strict = self._strict

            async def pruned(file: OpenedFile) -> tuple[Footer, list[int]]:
                return await kept_row_groups(file, compiled, strict)

            footer, kept = await run.with_file(location, pruned)
        except PyBloomError:
            return None
        finally:
            run.done(location)
        self._passed[path] = (footer, kept)
        self._count_slow(footer, kept)
        return 1

    def _count_slow(self, footer: Footer, kept: list[int]) -> None:
        groups = footer.metadata.row_groups
        if sum(groups[g].total_byte_size for g in kept) >= SLOW_KEPT_BYTES:
            self.slow_files += 1

    def over(
        self,
        files: Sequence[Location],
        progress: Callable[[int], None] | None = None,
        start: int = 0,
    ) -> Sweep:
        """``files`` swept, each decided by the run's bound file pass, its plan kept at its
        place plus ``start``; ``progress`` is told the plans made so far after each.
        Blocking: a worker thread's, or the run's own when it runs inline.

        The files are taken in parts of :data:`STOP_EVERY`, and within a part the files of
        one pass (those whose partition folders leave the predicate alike) in C calls of
        many files each (:meth:`FilePass.sweep`)."""
        from .plan import rows_of  # pyarrow's: imported once rows are read

        parts, kept, footers = self._parts, self._kept, self._footers
        made = self._made
        for first in range(0, len(files), STOP_EVERY):
            stop_point()
            batch: list[tuple[int, Location, str, RowsOf | None]] = []
            passes: FilePass | None = None
            for at in range(first, min(first + STOP_EVERY, len(files))):
                location = files[at]
                path = location_text(location)
                if path not in kept or path in footers:
                    continue
                pairs = parts.pairs(location)
                found = made.get(pairs, _UNMADE)
                if found is _UNMADE:
                    try:
                        compiled = parts.decide(location).compiled
                        here = None if compiled is None else compiled.file_pass(self._run, path)
                        found = made[pairs] = (here, rows_of(parts, location))
                    except PyBloomError:
                        # the per-file step meets it again, in its place, and names the file
                        found = made[pairs] = None
                if found is None or found[0] is None:
                    continue
                if found[0] is not passes:
                    if passes is not None and batch:
                        self._swept(passes, batch, start, progress)
                    batch, passes = [], found[0]
                batch.append((at, location, path, found[1]))
            if passes is not None and batch:
                self._swept(passes, batch, start, progress)
        return self

    def _swept(
        self,
        passes: FilePass,
        batch: list[tuple[int, Location, str, RowsOf | None]],
        start: int,
        progress: Callable[[int], None] | None,
    ) -> None:
        """The files of ``batch`` (each with its place, path and partition rows), of one
        pass, decided in as few C calls as it takes (:meth:`FilePass.sweep`; again after a
        path it does not ask about)."""
        from .plan import FilePlan
        from .pruned import planned

        stats = self._run.reader.stats
        schemas = self._arrow_schemas
        taken = 0
        while taken < len(batch) and passes.asking:
            found, n = passes.sweep([path for _, _, path, _ in batch[taken:]], stats)
            if not n:
                return
            for (at, location, path, rows), outcome in zip(batch[taken:], found, strict=False):
                plan = planned(outcome, location, rows, schemas)
                if isinstance(plan, FilePlan):
                    self.plans[start + at] = plan
                    if progress is not None:
                        progress(len(self.plans))
                elif plan is not None:
                    self._passed[path] = plan
                    self._count_slow(*plan)
            taken += n


#: Not made yet (a cached value may be None).
_UNMADE: Any = object()


async def each_file(
    run: Run,
    files: Sequence[Location],
    one: Callable[[Location], Awaitable[T]],
    pruned: Callable[[FilePlan], T],
    progress: Callable[[int, int], None] | None,
    sweep: Sweep | None,
) -> list[T]:
    """``one`` over ``files``, in order, as :func:`~pybloom_async.tasks.workers.for_each`
    runs it; with ``sweep`` (see the module), the first file is pruned first
    (:meth:`Sweep.first`: it binds the pass), the others swept, and ``one`` runs over the
    files left, the first among them (else it goes through ``one`` alone before the
    sweep). A plan swept is given as ``pruned(plan)``. ``progress`` is told
    ``(done, len(files))`` after each file."""
    if sweep is None or len(files) < 2:
        return await for_each(files, one, run.limit, progress, batches=run.batches, pace=run.pace)
    total = len(files)
    told = [0]

    def tell(done: int) -> None:
        while progress is not None and told[0] < done:
            told[0] += 1
            progress(told[0], total)

    head: list[T] = []
    since = await sweep.first(files[0])  # the first place of ``later`` to sweep
    if since is not None:
        later, before = files, 0  # the first file is read with the others
    else:
        head = await for_each(files[:1], one, run.limit, None, batches=run.batches, pace=run.pace)
        later, before, since = files[1:], 1, 0
        tell(1)
    if inline():  # in this thread, a part at a time, while other threads read what it left
        return head + await _pipelined(run, sweep, later, since, before, one, pruned, tell)
    else:
        # A worker thread's, in parts: the caller's cancellation is seen between them, and
        # the progress told after each (here, file after file).
        for start in range(since, len(later), LOOP_PART):
            await to_worker(sweep.over, later[start : start + LOOP_PART], None, start)
            tell(before + len(sweep.plans))
    plans = sweep.plans
    done = before + len(plans)
    tell(done)
    left = [f for at, f in enumerate(later) if at not in plans]
    report = None if progress is None else _after(progress, done, total)
    run.pace.expect(sweep.slow_files)
    found = await for_each(left, one, run.limit, report, batches=run.batches, pace=run.pace)
    rest = iter(found)
    return head + [pruned(plans[at]) if at in plans else next(rest) for at in range(len(later))]


#: Files swept inline before the files they leave are handed on (see :func:`_pipelined`): the
#: first part; each next one twice the last, up to :data:`LOOP_PART`, or that at once after a
#: part that leaves no file (a part's C calls cost a lake pruned almost whole more than the
#: reads they let start sooner).
INLINE_PART = 8


async def _pipelined(
    run: Run,
    sweep: Sweep,
    later: Sequence[Location],
    since: int,
    before: int,
    one: Callable[[Location], Awaitable[T]],
    pruned: Callable[[FilePlan], T],
    tell: Callable[[int], None],
) -> list[T]:
    """:func:`each_file`'s files from ``later[since:]`` swept inline a part at a time
    (:data:`INLINE_PART` files, then twice as many each time; after a part that leaves no
    file, :data:`LOOP_PART`), each part's files left handed on as soon as it is swept: while
    the run's other threads read the rows of one part's files, this thread sweeps the next
    (the sweep of a lake whose files all hold rows no longer runs alone ahead of them).
    Results in the order of ``later``; ``tell`` is given the files done so far, swept ones
    included."""
    worked = [0]

    async def left() -> AsyncGenerator[Location, None]:
        # The files swept ahead (:meth:`Sweep.first`) come first, once the first part is
        # swept: the pace the sweep finds is known before any file is read.
        ahead = list(later[:since])
        start, part = since, INLINE_PART
        while start < len(later):
            end = min(start + part, len(later))
            sweep.over(later[start:end], None, start)
            tell(before + len(sweep.plans) + worked[0])
            run.pace.expect(sweep.slow_files)
            for location in ahead:
                yield location
            ahead = []
            handed = False
            for at in range(start, end):
                if at not in sweep.plans:
                    handed = True
                    yield later[at]
            # A part that left no file to read (a point lookup's, most): no reads to start
            # sooner, the rest goes in the largest parts.
            start, part = end, min(2 * part, LOOP_PART) if handed else LOOP_PART
        for location in ahead:
            yield location

    def report(done: int, _taken: int) -> None:
        worked[0] = done
        tell(before + len(sweep.plans) + done)

    found = await for_each(left(), one, run.limit, report, batches=run.batches, pace=run.pace)
    plans = sweep.plans
    rest = iter(found)
    return [pruned(plans[at]) if at in plans else next(rest) for at in range(len(later))]


def _after(progress: Callable[[int, int], None], before: int, total: int) -> Any:
    return lambda done, _: progress(before + done, total)
