"""Footers read for the result's schema only: files a lake index or partition folders rule out.

The result's columns and types must not depend on which files hold matching rows
(``docs/guides/lookups.md``, "Schemas across files"):

* the files a lake index rules out count as read: their footers are read beside the other
  files' work (one read each; no filter, no data), whether ``columns`` is given or not, so
  that the types are promoted, and conflicting ones refused, as without the index; where
  the index holds a digest of its files' footers, their schemas come from it (no read);
* the files their partition folders rule out are never opened, unless the files read cannot
  say what the answer is made of: when every file was ruled out (the answer would have the
  partition columns only), or a column asked or in the predicate is in none of the files
  read and is no partition column (it may be in a file of another partition: it then reads
  as NULL, as a column a file lacks, and is an error only when no file of the lake has it).
  Then the footers of all of them are read (a folder the listing skipped is listed for
  them), and count as read: the literals on a column no file read has are typed by the
  first of them (in the listing's order) that has it, as ``prune`` types them.

A footer that cannot be read is left out: it holds no row of the answer. A plan whose rows
were read is held for the schema alone too, its footer's model dropped (:func:`rows_read`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from ..errors import PyBloomError
from ..io.base import FileInfo, location_text
from ..predicate import Predicate, iter_leaves
from ..pruning.partitions import PartitionPredicate
from ..read.fetch import Footer
from ..read.reader import OpenedFile
from ..read.run import Run
from ..tasks.workers import for_each

if TYPE_CHECKING:
    from .plan import FilePlan


Location = str | FileInfo


async def footer_plan(
    run: Run, location: Location, parts: PartitionPredicate, schema: Footer | None = None
) -> FilePlan | None:
    """A file read for the result's schema only: its footer, no row group kept (None:
    unreadable; it holds no row of the answer, and a column it alone has stays unknown).
    ``schema``: a footer of its schema from a lake index's digest (then nothing is read)."""
    from .plan import describe, rows_of

    try:
        if schema is not None:
            return describe(location, schema, [], rows=rows_of(parts, location))
        footer = await run.with_file(location, OpenedFile.footer)
        return describe(location, footer, [], rows=rows_of(parts, location))
    except PyBloomError:
        return None
    finally:
        if schema is None:
            run.done(location)


async def index_ruled_out_plan(
    run: Run, location: Location, parts: PartitionPredicate, schema: Footer | None = None
) -> FilePlan | None:
    """:func:`footer_plan` of a file the lake index ruled out, which counts as read: its
    schema types the predicate's literals as a file read would
    (:meth:`~pybloom_async.pruning.partitions.PartitionPredicate.count_as_read`).

    Raises
    ------
    PredicateError
        A literal is not a value of its column's type in this file.
    """
    plan = await footer_plan(run, location, parts, schema)
    if plan is not None:
        parts.count_as_read(location_text(location), plan.schema)
    return plan


def schema_kinds(
    listed: Sequence[Location],
    read: set[str],
    schemas: Mapping[str, Footer],
    parts: PartitionPredicate,
) -> list[Location]:
    """``listed`` less each ruled-out file whose schema the lake index's digest gives
    (``schemas``) alike to an earlier one's: the same schema record and the same partition
    columns, so the same columns in the result. The result's schema takes each kind once,
    in the listing's order, so that a lookup over many files the index rules out costs one
    plan per kind of file, not one per file. ``read``: the paths of the files read."""
    seen: set[tuple[int, tuple[str, ...]]] = set()
    out: list[Location] = []
    for location in listed:
        path = location_text(location)
        footer = None if path in read else schemas.get(path)
        if footer is not None:
            # The digest's record of a schema is one decoded footer shared by its files.
            kind = (id(footer.metadata), tuple(key for key, _ in parts.pairs(location)))
            if kind in seen:
                continue
            seen.add(kind)
        out.append(location)
    return out


def progress_with(
    progress: Callable[[int, int], None] | None, alike: int
) -> Callable[[int, int], None] | None:
    """``progress`` for a pass over the files :func:`schema_kinds` left: the ``alike``
    files it took no plan of count as done from the start, so the run still counts every
    file listed."""
    if progress is None or not alike:
        return progress
    report = progress
    return lambda done, total: report(done + alike, total + alike)


def _wanting(
    plans: Sequence[FilePlan],
    columns: Sequence[str] | None,
    where: Predicate | None,
    folders: Sequence[str],
) -> bool:
    """Whether the files read leave the answer's columns unknown: none was read, or a column
    asked or in the predicate is in none of them, nor a partition column (``folders``: every
    file has those, NULL where no folder gives one)."""
    from .plan import columns_of, has_column
    from .schema import column_kinds

    if not plans:
        return True
    names = {str(f.name) for plan in column_kinds(plans) for f in columns_of(plan)}
    names.update(folders)
    if columns is not None and any(c not in names for c in columns):
        return True
    leaves = dict.fromkeys(leaf.column for leaf in iter_leaves(where)) if where is not None else {}
    return any(c not in names and not any(has_column(p, c) for p in plans) for c in leaves)


async def with_ruled_out(
    run: Run,
    plans: Sequence[FilePlan],
    every: Callable[[], Awaitable[Sequence[Location]]],
    parts: PartitionPredicate,
    columns: Sequence[str] | None,
    where: Predicate | None,
) -> list[FilePlan]:
    """``plans`` (of the files read), and where the files read leave the answer's columns
    unknown (see the module), the footers of the files the partition folders ruled out
    (of ``every`` file listed), in the listing's order.

    Raises
    ------
    PredicateError
        A literal on a column no file read has is not a value of its type in the first
        of those footers that has it.
    """
    from .plan import has_column

    if not parts.active or not _wanting(plans, columns, where, parts.partition_columns()):
        return list(plans)
    listed = await every()
    unread = parts.ruled_out_of(listed)
    if not unread:
        return list(plans)
    found = await for_each(
        unread, lambda f: footer_plan(run, f, parts), run.limit, batches=run.batches
    )
    # A literal on a column no file read has is typed by the first of these that has it.
    missing = [c for c in parts.columns if not any(has_column(plan, c) for plan in plans)]
    parts.type_by_ruled_out(missing, [(p.path, p.schema) for p in found if p is not None])
    by_path = {location_text(p.location): p for p in plans}
    by_path.update({location_text(p.location): p for p in found if p is not None})
    ordered = [by_path.pop(p) for p in dict.fromkeys(map(location_text, listed)) if p in by_path]
    return ordered + list(by_path.values())


def rows_read(plan: FilePlan) -> None:
    """A file's rows read, by a plan made for that read: the footer's model and pyarrow's
    decode go now. The lookup holds every file's plan to its end (the result is shaped
    from their schemas), and a footer's model held that long is thousands of objects the
    garbage collector then walks in its full collections, one lookup of many files in two."""
    plan.footer_metadata = None
    plan.chunks_made = {}
    plan.decoded_by_pyarrow = None
    plan.footer_bytes = None
    plan.page_index = None
    plan.chunk_ranges = {}
