"""Reading the matching rows of one file: its kept chunks (or pages) fetched in merged
requests, decoded by pyarrow, the predicate evaluated on the data.

The plan (:mod:`.plan`) says what to read; :mod:`.decode` decodes and matches what is read,
and :mod:`.two_phase` does a two-phase read's work on each row group between its requests.
Each byte is fetched at most once per batch of row groups: the footer's tail, phase one's
bytes and every fallback read serve what follows (:class:`~pybloom_async.read.ranges.HeldBytes`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from contextlib import aclosing
from typing import Any

import pyarrow as pa

from ..errors import FILE_FAILURES, PyBloomError, SourceError
from ..io.base import ByteSource
from ..io.objects import ObjectStoreSource
from ..read.ranges import HeldBytes, plan_reads
from ..read.reader import BloomReader
from ..tasks.loops import to_worker
from ..tasks.pace import Pace
from ..tasks.workers import for_each, gather
from .decode import (
    ReadColumns,
    decode_batches,
    decode_pages_of,
    decode_row_groups,
    format_error,
    keys_of,
    named_failure,
    read_columns_of,
    where_columns,
)
from .dictionary import dictionary_kept
from .keyed import few_keys
from .pages import (
    GroupPages,
    WholeChunks,
    held_reader,
    index_ranges,
    select_group,
)
from .plan import (
    Fetched,
    FileMatch,
    FilePlan,
    Job,
    chunk_range,
    file_match,
    rows_where,
)
from .two_phase import (
    Hit,
    first_rows,
    hit_batches,
    many_other_rows,
    other_rows,
    whole_first_rows,
)

#: A file's rows are read in two phases (its predicate's columns first, the others for the
#: matching rows only) when the kept row groups' other columns come to this many bytes or
#: more (1 MiB): below it, one request per file (no round trip added to a point lookup
#: whose kept data is small). Measured in bench/RESULTS.md ("Only the bytes that can match").
TWO_PHASE_MIN_BYTES = 1 << 20
#: A local file's threshold for a lookup of at most :data:`LOCAL_FEW_KEYS` keys is a
#: sixteenth of it (64 KiB): there a second request is a system call, and each byte read is
#: copied out of the page cache, so that a row group kept by a filter's false positive (most
#: of such a lookup's) costs its predicate's columns only. With more keys most kept row
#: groups hold one, and a second phase costs more than it saves (an ``IN`` list of 1,000 on
#: the 200-file lake took 15% longer).
LOCAL_SHIFT = 4
LOCAL_FEW_KEYS = 8


def _fetch_groups(
    plan: FilePlan, leaves: Sequence[int], max_fetch_bytes: int
) -> Iterator[list[int]]:
    """The kept row groups in runs whose chunks together stay within ``max_fetch_bytes``."""
    run: list[int] = []
    size = 0
    for group in plan.kept:
        need = sum(e - s for s, e in (chunk_range(plan, group, leaf) for leaf in leaves))
        if run and size + need > max_fetch_bytes:
            yield run
            run, size = [], 0
        run.append(group)
        size += need
    if run:
        yield run


async def _fetch(
    source: ByteSource,
    job: Job,
    wanted: Sequence[tuple[int, int]],
    held: HeldBytes,
    keep_out: Sequence[tuple[int, int]] = (),
) -> HeldBytes:
    """``held`` and the bytes of ``wanted`` it lacks, fetched in one request of merged
    ranges: a byte held is never fetched again, and no hole holding a byte of ``keep_out``
    is read over (:func:`~pybloom_async.read.ranges.plan_reads`); a local file's ranges are
    merged only where they touch (:meth:`~pybloom_async.read.plan.PlanConfig.hole_bytes`)."""
    config = job.merging
    hole = config.hole_bytes(source.local)
    ranges = plan_reads(wanted, held.ranges(), keep_out, hole, config.max_range_bytes)
    if not ranges:
        return held
    data = await source.read_ranges_held([(r.start, r.end) for r in ranges])
    return held.plus((r.start, d) for r, d in zip(ranges, data, strict=True))


async def _pinned(source: ByteSource, plan: FilePlan) -> None:
    """Reads of ``source`` come from the version whose footer was read.

    A local file's identity comes free with its opening; a store pins its reads to the
    ETag instead (a replaced object then fails its reads rather than mixing versions).

    Raises
    ------
    SourceError
        The local file changed after its footer was read.
    """
    if isinstance(source, ObjectStoreSource):
        source.assume_identity(plan.identity)
    elif await source.identity() != plan.identity:
        raise SourceError("the file changed after its footer was read", path=plan.path)


async def _select_pages(
    source: ByteSource,
    plan: FilePlan,
    job: Job,
    names: list[str],
    read: list[int],
    held_only: bool = False,
) -> dict[int, GroupPages] | None:
    """Per kept row group its page selection of the columns ``names``; groups missing read
    whole chunks. The index bytes the footer's tail lacks are fetched (one request), or
    with ``held_only`` not: then None (no selection without a request)."""
    index = plan.page_index
    where = rows_where(plan, job)
    compiled = job.compiled
    if not job.page_index or index is None or where is None or compiled is None:
        return {}
    schema = plan.schema
    predicate = [schema.column(c).index for c in where_columns(plan, job) if c in schema]
    missing = index_ranges(index, plan.kept, read, predicate)
    if missing and held_only:
        return None
    held = await _fetch(source, job, missing, plan.held)

    def select() -> dict[int, GroupPages]:
        found: dict[int, GroupPages] = {}
        serve = held_reader(held)
        for group in plan.kept:
            try:
                found[group] = select_group(
                    index, group, where, schema, names, serve, plan.path, compiled
                )
            except WholeChunks:
                pass  # this group reads whole chunks
        return found

    return await to_worker(select)


async def file_tables(source: ByteSource, plan: FilePlan, job: Job) -> AsyncGenerator[Any, None]:
    """The matching rows of one file, in tables of a run of kept row groups each (in order;
    a run without a match may give an empty one), read from ``source``: the file as it was
    when its footer was read.

    When the kept row groups' other columns (not the predicate's) come to
    :data:`TWO_PHASE_MIN_BYTES` or more (a sixteenth of it for a local file and a lookup of
    a few keys: :data:`LOCAL_SHIFT`), the predicate's columns are fetched first, and
    the others only for the row groups, and through the offset index only for the pages,
    that hold a matching row (:func:`_in_two_phases`); else everything comes in one
    request (:func:`_in_one_phase`).

    Raises
    ------
    SourceError
        The file changed since its footer was read, or cannot be read.
    ParquetFormatError
        A row group cannot be decoded (naming it).
    """
    await _pinned(source, plan)
    table_file = await job.table_file(plan) if job.table_file is not None else None
    columns = read_columns_of(plan, job, table_file)
    match = file_match(plan, job, table_file)
    phases = _in_two_phases if _two_phases(plan, job, columns, source.local) else _in_one_phase
    async with aclosing(phases(source, plan, job, columns, match)) as tables:
        async for table in tables:
            yield table


async def planned_file_tables(
    reader: BloomReader, plan: FilePlan, job: Job
) -> AsyncGenerator[Any, None]:
    """:func:`file_tables` of a file planned earlier, opened now by ``reader`` and read
    from the version its plan was made from: the per-file step of every streamed read
    (``lookup_batches``, a table's streamed lookup, the command line's). At most one
    run of row groups is in memory; the file is closed when the stream is.

    Raises
    ------
    SourceError
        The file changed since it was planned, or cannot be read.
    ParquetFormatError
        A row group cannot be decoded (naming it).
    """
    async with (
        reader.opened(plan.location) as file,
        aclosing(file_tables(file.source, plan, job)) as tables,
    ):
        async for table in tables:
            yield table


#: Files whose rows :func:`planned_tables` reads at once, in file order (each waits in memory
#: until the files before it are given): at most this many...
READ_AHEAD_FILES = 16
#: ... whose kept row groups come to at most this many bytes (as their footers give them,
#: uncompressed); a file above it is read alone, streamed.
READ_AHEAD_BYTES = 256 << 20


def read_ahead(plans: Sequence[FilePlan], files: int) -> list[list[FilePlan]]:
    """The planned files with rows to read, in order, in parts read at once: at most
    ``files`` each, and :data:`READ_AHEAD_BYTES`."""
    parts: list[list[FilePlan]] = []
    size = 0
    for plan in plans:
        if not plan.kept:
            continue
        groups = plan.metadata.row_groups
        need = sum(groups[g].total_byte_size for g in plan.kept)
        if not parts or len(parts[-1]) >= files or size + need > READ_AHEAD_BYTES:
            parts.append([])
            size = 0
        parts[-1].append(plan)
        size += need
    return parts


async def planned_tables(
    reader: BloomReader,
    plans: Sequence[FilePlan],
    job: Job,
    failed: Callable[[FilePlan, PyBloomError], None] | None,
    ahead: bool = True,
) -> AsyncGenerator[Any, None]:
    """The matching rows of planned files (:func:`planned_file_tables`), in file order: the
    one read of a streamed answer's files (``lookup_batches``, the command line's lookup).

    With ``ahead``, files are read several at once (:func:`read_ahead`): a store's round
    trips overlap, and a local lake's files use the reader's threads (inline, no event
    loop, they spread over them once they prove slow, as :func:`for_each` spreads any
    files' work); each file's tables are held until the files before it are given. A
    part of one file (``ahead`` False, or a file above :data:`READ_AHEAD_BYTES`) is
    streamed: a run of its row groups at a time, and nothing is read past where the
    consumer stops.

    A file that fails (``SourceError``, ``ParquetFormatError``) is handed to ``failed`` in
    its place, after the tables of the files before it (a streamed file: after the tables
    it gave); with ``failed`` None it is raised, naming the file.
    """

    def fail(plan: FilePlan, exc: PyBloomError) -> None:
        if failed is None:
            raise exc.with_context(path=plan.path) from None
        failed(plan, exc)

    async def whole(plan: FilePlan) -> list[Any] | PyBloomError:
        try:
            async with aclosing(planned_file_tables(reader, plan, job)) as tables:
                return [table async for table in tables]
        except FILE_FAILURES as exc:
            return exc

    pace = Pace()  # one for the parts: files that proved slow spread from the next part's first
    for part in read_ahead(plans, READ_AHEAD_FILES if ahead else 1):
        if len(part) == 1:
            try:
                async with aclosing(planned_file_tables(reader, part[0], job)) as stream:
                    async for table in stream:
                        yield table
            except FILE_FAILURES as exc:
                fail(part[0], exc)
            continue
        found = await for_each(part, whole, len(part), pace=pace)
        for plan, tables in zip(part, found, strict=True):
            if isinstance(tables, PyBloomError):
                fail(plan, tables)
                continue
            for table in tables:
                yield table


def _two_phases(plan: FilePlan, job: Job, columns: ReadColumns, local: bool) -> bool:
    """Whether the other columns are worth a second request (see :func:`file_tables`) of
    a ``local`` file or an object."""
    where = rows_where(plan, job)
    if where is None or not columns.first or not columns.rest_leaves:
        return False
    other = 0
    for group in plan.kept:
        for leaf in columns.rest_leaves:
            start, end = chunk_range(plan, group, leaf)
            other += end - start
    few = local and few_keys(where, LOCAL_FEW_KEYS)
    return other >= (TWO_PHASE_MIN_BYTES >> LOCAL_SHIFT if few else TWO_PHASE_MIN_BYTES)


async def _in_one_phase(
    source: ByteSource, plan: FilePlan, job: Job, columns: ReadColumns, match: FileMatch
) -> AsyncGenerator[Any, None]:
    """Every column read of the kept row groups (or their pages) in one request per
    ``max_fetch_bytes``; the other columns decoded only where a row matches."""
    leaf_indexes = columns.leaves
    selected = await _select_pages(source, plan, job, columns.names, leaf_indexes) or {}
    for groups in _fetch_groups(plan, leaf_indexes, job.max_fetch_bytes):
        wanted = []
        for g in groups:
            pages = selected.get(g)
            if pages is not None:
                wanted.extend(pages.ranges())
            else:
                wanted.extend(chunk_range(plan, g, leaf) for leaf in leaf_indexes)
        held = await _fetch(source, job, wanted, plan.held)
        fetched = Fetched(plan, held)
        whole: list[int] = []  # row groups read as whole chunks, decoded together
        for group in groups:
            pages = selected.get(group)
            if pages is None:
                whole.append(group)
                continue
            if whole:
                async with aclosing(_decoded(fetched, whole, columns, job, match)) as runs:
                    async for table in runs:
                        yield table
                whole = []
            if not pages.rows:
                continue  # no page may hold a match
            try:
                yield await to_worker(decode_pages_of, pages, plan, job, match, held)
            except WholeChunks:  # the pages did not decode as indexed: whole chunks
                chunks = [chunk_range(plan, group, x) for x in leaf_indexes]
                group_held = Fetched(plan, await _fetch(source, job, chunks, held))
                yield await _decoded_run(group_held, [group], columns, job, match)
            except (PyBloomError, OSError, pa.ArrowException) as exc:
                raise format_error(exc, plan, group) from None
        if whole:
            async with aclosing(_decoded(fetched, whole, columns, job, match)) as runs:
                async for table in runs:
                    yield table


async def _decoded(
    fetched: Fetched, groups: list[int], columns: ReadColumns, job: Job, match: FileMatch
) -> AsyncGenerator[Any, None]:
    """:func:`~.decode.decode_row_groups` in a worker, a bounded run of row groups at a time
    (:func:`~.decode.decode_batches`), less those their dictionaries rule out (their bytes
    are ``fetched``); an error names the row group that fails (each decoded alone to find
    it)."""
    plan = fetched.plan
    if keys_of(plan, job, match) is None:  # found by key, the dictionaries are read then
        groups = await to_worker(dictionary_kept, plan, job, fetched.held, groups)
    for run in decode_batches(plan, groups, columns.leaves):
        yield await _decoded_run(fetched, run, columns, job, match)


async def _decoded_run(
    fetched: Fetched, groups: list[int], columns: ReadColumns, job: Job, match: FileMatch
) -> Any:
    def decode(run: list[int]) -> Any:
        return decode_row_groups(fetched, run, columns, job, match)

    return await to_worker(named_failure, decode, fetched.plan, groups)


# ---- two phases ------------------------------------------------------------------------


async def _in_two_phases(
    source: ByteSource, plan: FilePlan, job: Job, columns: ReadColumns, match: FileMatch
) -> AsyncGenerator[Any, None]:
    """The predicate's columns of every kept row group first, decoded and matched; then
    the other columns only of the row groups with a match, and where the offset index says
    so only of the pages that hold a matching row.

    Phase one reads the pages of the predicate's columns that may match when the footer's
    tail holds the page index (no request for it); else their whole chunks, with the other
    columns' offset indexes in the same request: two requests per file either way. Row
    groups decode in worker threads at once (pyarrow releases the GIL), but for a local
    file, whose work is one thread already.
    """
    index = plan.page_index if job.page_index else None
    read = columns.first_leaves + columns.rest_leaves
    selected = await _select_pages(source, plan, job, columns.first, read, held_only=True)
    # What every batch starts from: the bytes the footer's tail held (data and page index),
    # and (when they were not there) the other columns' offset indexes, fetched with batch one.
    index_held = plan.held
    wanted_index: list[tuple[int, int]] = []
    if selected is None:  # the index is not in the tail: whole chunks, and the offset indexes
        selected = {}
        wanted_index = index_ranges(index, plan.kept, columns.rest_leaves, []) if index else []
    # Phase one never reads over the other columns' chunks: phase two may not want them.
    others = [chunk_range(plan, g, leaf) for g in plan.kept for leaf in columns.rest_leaves]
    for groups in _fetch_groups(plan, columns.first_leaves, job.max_fetch_bytes):
        groups = [g for g in groups if g not in selected or selected[g].rows]
        wanted = list(wanted_index)
        for g in groups:
            pages = selected.get(g)
            if pages is not None:
                wanted.extend(pages.ranges())
            else:
                wanted.extend(chunk_range(plan, g, leaf) for leaf in columns.first_leaves)
        held = await _fetch(source, job, wanted, index_held, others)
        if wanted_index:  # later batches keep the offset indexes, not this batch's data
            index_held = index_held.plus((a, held.read(a, b) or b"") for a, b in wanted_index)
            wanted_index = []
        hits = await _phase_one(source, plan, job, columns, match, groups, selected, held)
        for batch in hit_batches(plan, job, columns, hits, held_reader(held)):
            # Phase two: only the bytes phase one did not bring (each byte fetched once).
            held = await _fetch(source, job, [r for _, ranges in batch for r in ranges], held)
            batch_hits = [hit for hit, _ in batch]
            table = await to_worker(many_other_rows, batch_hits, plan, job, columns, held)
            if table is not None:
                yield table
                continue
            for hit, _ in batch:
                try:
                    yield await to_worker(other_rows, hit, plan, job, columns, held)
                except WholeChunks:  # the pages did not decode as indexed: whole chunks
                    hit.pages = None
                    ranges = [chunk_range(plan, hit.group, x) for x in columns.rest_leaves]
                    whole = await _fetch(source, job, ranges, held)
                    yield await to_worker(other_rows, hit, plan, job, columns, whole)


async def _phase_one(
    source: ByteSource,
    plan: FilePlan,
    job: Job,
    columns: ReadColumns,
    match: FileMatch,
    groups: Sequence[int],
    selected: dict[int, GroupPages],
    held: HeldBytes,
) -> list[Hit]:
    """The row groups of one batch with a match, decoded at once; a row group whose pages
    do not decode as indexed is read again from its whole chunks (the bytes not held)."""

    async def one(group: int) -> list[Hit]:
        try:
            pages = selected[group]
            hit = await to_worker(first_rows, pages, held, plan, group, columns, job, match)
            return [] if hit is None else [hit]
        except WholeChunks:
            ranges = [chunk_range(plan, group, leaf) for leaf in columns.first_leaves]
            whole = await _fetch(source, job, ranges, held)
            return await to_worker(
                whole_first_rows, Fetched(plan, whole), [group], columns, job, match
            )

    paged = [g for g in groups if g in selected]
    whole = [g for g in groups if g not in selected]
    found = [hit for hits in await gather(one, [(g,) for g in paged]) for hit in hits]
    # The row groups read as whole chunks, less those their dictionaries rule out: decoded
    # together, a bounded run at a time.
    if keys_of(plan, job, match) is None:  # found by key, the dictionaries are read then
        whole = await to_worker(dictionary_kept, plan, job, held, whole)
    fetched = Fetched(plan, held)
    for run in decode_batches(plan, whole, columns.first_leaves):
        found += await to_worker(whole_first_rows, fetched, run, columns, job, match)
    return sorted(found, key=lambda hit: hit.group)
