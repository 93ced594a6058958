"""The schema and the plan of a ``pybloom`` read from one read of each footer.

Spark asks the data source for its schema when the DataFrame is made (``schema()``, in a
Python worker of the driver), pickles the data source, and hands that object to the worker
that plans each query (``reader(schema)``, then ``partitions()``). So ``schema()`` plans
the read too, from the footers it reads for the schema (:func:`plan_source`), and the plan
travels on the data source (:class:`SourcePlan`); ``partitions()`` takes it when the files
are still the ones it was made from (:func:`still_current`: the files listed again, each
one's version compared with the version read: a ``stat`` of a local file, the listing's
ETag of an object; no footer read), and plans again otherwise (a file added, removed or
replaced, a filter of Spark's taken, a schema given).

With the ``where`` option the plan is :func:`pybloom_async.rows.api.plan_lookup`'s, the
schema with it: the columns are the local lookup's (``docs/guides/lookups.md``, "Schemas
across files"): the files the ``key=value`` folders rule out are not opened, unless the
files read cannot say what the answer is made of (``rows/footers.py``), and those a lake
index rules out are not read (their schemas come from the index's digest, or their footers
are read for the schema only); their versions, taken before the index is consulted, are
kept with the plan, so that ``partitions()`` takes it with no request while none of them
changed. Without it every file is read (:func:`.scan.scan_files`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from ..errors import PyBloomError
from ..io.base import FileInfo, SourceStats, location_text
from ..io.files import expand_paths
from ..io.identity import SourceIdentity
from ..lake.prune import file_identities
from ..predicate import Predicate
from ..pruning.api import CompiledPredicate
from ..pruning.partitions import PartitionPredicate
from ..read.run import Run, RunOptions, open_run
from ..rows.plan import Job, partition_fields
from ..rows.schema import result_schema
from ..tasks.workers import for_each
from .scan import (
    NO_PREDICATE,
    FileRead,
    ReadSettings,
    int96_columns,
    no_schema,
    planned_lookup,
    scan_files,
    scan_job,
)

Sources = str | Sequence[str | FileInfo]


@dataclass(frozen=True)
class SourcePlan:
    """A read planned with its schema: the rows' Arrow schema (by the lookup's rule) and its
    INT96 columns, the predicate it was planned for, the files to read (kept row groups),
    the job they share (shaped to ``schema``), and the files it was made of: the version of
    each one (whose footer was read, or taken before a lake index ruled it out), and those
    the driver could not read (read whole by their tasks)."""

    schema: pa.Schema
    int96: frozenset[str]
    where: Predicate | None
    reads: tuple[FileRead, ...]
    job: Job
    versions: dict[str, SourceIdentity]
    unread: frozenset[str]


async def plan_source(
    sources: Sources,
    where: Predicate | None,
    settings: ReadSettings,
    stats: SourceStats | None = None,
) -> SourcePlan:
    """The schema and the plan of a read, each footer read once (see the module).

    Raises
    ------
    InvalidArgumentError
        No file can be read: there is no schema to give.
    PredicateError
        A literal is not a value of its column's type, or a column of ``where`` is in
        none of the files.
    SchemaMismatchError
        Two files' types do not unify, or a folder's value is not of the type given.
    PyBloomError
        With ``strict``, the first file the driver cannot read (named).
    """
    run = settings.run(stats)
    if where is None:
        found, parts, merging = await scan_files(sources, settings, run)
        plans = [r.plan for r in found if r.plan is not None]
        if not plans:
            raise no_schema(sources, len(found))
        schema, _ = result_schema(plans, None, partition_fields(parts) if parts else ())
        job = scan_job(schema, settings, parts, merging)
        reads = [r for r in found if r.plan is None or r.plan.kept]
        unread = frozenset(r.path for r in found if r.plan is None)
        versions = {p.path: p.identity for p in plans}
    else:
        # The files' versions before they are planned: those a lake index rules out are
        # not read, and the plan holds while they stay at this version (taken before the
        # index is consulted: a file replaced meanwhile differs from it, and is planned
        # again by the next query).
        compiled = CompiledPredicate(where)  # once for the plan: its listing and its files
        before = await _versions(sources, compiled, settings, run)
        planned, skipped = await planned_lookup(sources, compiled, settings, run)
        plans = planned.files
        job, schema = planned.job, planned.job.schema
        folders = {f.name for f in job.folders}
        if all(f.name in folders for f in schema):  # no footer could be read
            raise no_schema(sources, len(skipped), skipped[0] if skipped else None)
        reads = [FileRead(p.location, p) for p in plans if p.kept]
        unread = frozenset(e.path for e in skipped if e.path)
        versions = {path: v for path, v in before.items() if path not in unread}
        versions.update({p.path: p.identity for p in plans})
    return SourcePlan(schema, int96_columns(plans), where, tuple(reads), job, versions, unread)


async def _listed(
    sources: Sources, compiled: CompiledPredicate, settings: ReadSettings, run: Run
) -> dict[str, str | FileInfo]:
    """The files a plan for the predicate ``compiled`` is made of, by path: those listed
    that their ``key=value`` folders keep (no footer read)."""
    partitioning = settings.folders()
    parts = PartitionPredicate(compiled, partitioning)
    listed = await expand_paths(sources, run.reader, unreadable=[], folders=parts.folder_filter())
    parts.settle(listed)
    return {location_text(f): f for f in parts.kept_list(listed)}


async def _versions(
    sources: Sources, compiled: CompiledPredicate, settings: ReadSettings, options: RunOptions
) -> dict[str, SourceIdentity]:
    """The version of each file a plan for the predicate ``compiled`` is made of now, where
    known (a ``stat`` of a local file, the listing's of an object)."""
    async with open_run(options) as run:
        listed = await _listed(sources, compiled, settings, run)
        found = await file_identities(list(listed.values()), run.reader.stats)
    return {path: v for path, v in zip(listed, found, strict=True) if v is not None}


async def still_current(
    plan: SourcePlan, sources: Sources, settings: ReadSettings, stats: SourceStats | None = None
) -> bool:
    """Whether ``plan`` is the plan of the files now: the same files listed (those their
    folders keep), each at the version read (no footer read: a ``stat`` of a local file,
    the listing's ETag of an object, a HEAD of an object named directly)."""
    async with open_run(settings.run(stats)) as run:
        where = plan.where if plan.where is not None else NO_PREDICATE
        now = await _listed(sources, CompiledPredicate(where), settings, run)
        if set(now) != set(plan.versions) | plan.unread:
            return False

        paths = list(plan.versions)
        found = await file_identities([now[p] for p in paths], run.reader.stats)

        async def same(item: tuple[str, SourceIdentity | None]) -> bool:
            path, identity = item
            try:
                if identity is None:  # an object named directly: its HEAD
                    identity = await run.reader.identity(now[path])
                return same_version(plan.versions[path], identity)
            except PyBloomError:
                return False

        return all(await for_each(list(zip(paths, found, strict=True)), same, run.limit))


def same_version(read: SourceIdentity, now: SourceIdentity) -> bool:
    """Whether the file is ``now`` the version whose footer was ``read``: the same size and
    ETag (a local file's is made of its inode, modification and change times and size:
    :func:`~pybloom_async.io.identity.local_identity`), or without one, the same size and
    modification time."""
    if read.size != now.size:
        return False
    if read.etag and now.etag:
        return read.etag == now.etag
    return read.mtime is not None and read.mtime == now.mtime
