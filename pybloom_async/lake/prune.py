"""Pruning whole files by the lake index, then the row groups of the files it keeps.

Per segment: one suffix read for the directory, then one ranged read per
distinct stripe the predicate's keys probe (all concurrent). A file keeps its
in-file pruning when the index cannot speak for it: not in any segment, stale
(size, ETag or modification time differ), its segment damaged, or a predicate
column not covered.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import asynccontextmanager
from typing import Any, NamedTuple

from ..errors import (
    IndexStaleError,
    PredicateError,
    PyBloomError,
    SourceError,
)
from ..io.address import parse_address
from ..io.base import FileInfo, SourceStats, location_text
from ..io.identity import SourceIdentity, stat_identity, version_change
from ..pruning.api import CompiledPredicate, prune_file
from ..pruning.partitions import PartitionPredicate, check_once_decided
from ..pruning.verdicts import Rule, Verdict
from ..read.reader import BloomReader
from ..read.run import Run, RunOptions, open_run
from ..tasks.loops import to_worker
from ..tasks.workers import for_each, gather
from .format import LakeFile
from .probe import SegmentState, prepare_probes, probe_segment, segment_outcomes
from .segments import LoadedSegment, kept_or_loaded, listed_segments, relative_names


class IndexEntry(NamedTuple):
    """The directory entry that decided a file: its segment, its number there, and the
    file's version now (the entry's, as the stale check found)."""

    loaded: LoadedSegment
    number: int
    identity: SourceIdentity


def stale_reason(entry: LakeFile, now: SourceIdentity) -> str | None:
    """Why a data file no longer matches its directory entry (None: it does)."""
    return version_change(
        now,
        size=entry.size,
        etag=entry.etag,
        mtime=entry.mtime_ns,
        inode=entry.inode,
        ctime=entry.ctime_ns,
    )


def _stat_all(paths: Sequence[str]) -> list[SourceIdentity | None]:
    out: list[SourceIdentity | None] = []
    for path in paths:
        try:
            out.append(stat_identity(path))
        except OSError:
            out.append(None)  # gone or unreadable: kept, and its own read says why
    return out


async def file_identities(
    files: Sequence[str | FileInfo], stats: SourceStats
) -> list[SourceIdentity | None]:
    """Each file's version: local files by a stat, objects from the listing; None: unknown.

    The stats run in one worker thread, not one task per file: with 100,000 files,
    tasks cost seconds where the stats cost milliseconds.
    """
    out: list[SourceIdentity | None] = [None] * len(files)
    local: list[tuple[int, str]] = []
    for i, f in enumerate(files):
        loc = parse_address(location_text(f))
        if loc.kind == "file":  # a listing's entry lacks the inode and change time
            local.append((i, loc.path))
        elif isinstance(f, FileInfo) and (f.etag is not None or f.mtime is not None):
            out[i] = SourceIdentity(f.path, f.size, f.etag, f.mtime)
        # else named by URL without a listing: unknown, so kept
    if local:
        found = await to_worker(_stat_all, [p for _, p in local])
        stats.add_metadata(len(local))
        for (i, _), identity in zip(local, found, strict=True):
            out[i] = identity
    return out


def _current_entry(
    states: Sequence[SegmentState],
    candidates: list[tuple[int, int]],
    now: SourceIdentity | None,
    immutable: bool = False,
) -> tuple[tuple[int, int], str | None]:
    """The newest entry that matches the file's version, else the newest and why it is stale."""
    if now is None:
        return candidates[-1], "its version is unknown"
    check = _immutable_stale if immutable else stale_reason
    if len(candidates) == 1:  # the usual case, without the loop
        s_no, f_no = candidates[0]
        return candidates[0], check(states[s_no].loaded.segment.files[f_no], now)
    newest_reason = None
    for s_no, f_no in reversed(candidates):
        reason = check(states[s_no].loaded.segment.files[f_no], now)
        if reason is None:
            return (s_no, f_no), None
        newest_reason = newest_reason or reason
    return candidates[-1], newest_reason


def _immutable_stale(entry: LakeFile, now: SourceIdentity) -> str | None:
    """A table's data file is never rewritten under its name: its size alone says whether
    the entry is for it."""
    if entry.size != now.size:
        return f"file size is {now.size}, the index was built for {entry.size}"
    return None


async def _file_verdicts(
    names: Sequence[str | None],
    files: Sequence[str | FileInfo],
    states: Sequence[SegmentState],
    damaged: Sequence[str],
    compiled: CompiledPredicate,
    reader: BloomReader,
    strict: bool,
    immutable: bool = False,
    entries: list[IndexEntry | None] | None = None,
) -> list[Verdict]:
    """One file-level verdict per listed file, in order; ``names``: each file's name in the
    directories (None: outside the index). ``immutable``: a table's files (listed by the
    table with their sizes), compared by size alone, with no stat. ``entries``, if given,
    gets per file the entry that decided it (None: the index did not speak for it)."""
    sink = entries
    entries_of: dict[str, list[tuple[int, int]]] = {}
    for s_no, state in enumerate(states):  # oldest first
        for f_no, entry in enumerate(state.loaded.segment.files):
            entries_of.setdefault(entry.name, []).append((s_no, f_no))
    paths = [location_text(loc) for loc in files]
    identities: list[SourceIdentity | None]
    if immutable:
        identities = [
            SourceIdentity(f.path, f.size, None, None) if isinstance(f, FileInfo) else None
            for f in files
        ]
    else:
        identities = await file_identities(files, reader.stats)
    missing_why = "not in the lake index" + (
        f" (unreadable segments: {'; '.join(damaged)[:300]})" if damaged else ""
    )
    normal, leaves = compiled.normal, compiled.leaves
    decided = [
        None if state.refused is not None else segment_outcomes(normal, state, leaves)
        for state in states
    ]
    out = []
    for path, name, now in zip(paths, names, identities, strict=True):
        if sink is not None:
            sink.append(None)
        candidates = entries_of.get(name, []) if name is not None else []
        if not candidates:
            out.append(Verdict(path, None, None, True, missing_why, Rule.NO_INDEX))
            continue
        found, stale = _current_entry(states, candidates, now, immutable)
        state = states[found[0]]
        entry = state.loaded.segment.files[found[1]]
        if stale is not None:
            if strict:
                raise IndexStaleError(f"lake index is stale: {stale}", path=path)
            out.append(Verdict(path, None, None, True, f"stale lake index: {stale}",
                               Rule.STALE_INDEX))  # fmt: skip
            continue
        if state.damaged is not None:
            out.append(Verdict(path, None, entry.num_rows, True,
                               f"lake index {state.damaged}", Rule.NO_INDEX))  # fmt: skip
            continue
        if state.refused is not None:  # the file is as the segment describes it
            raise state.refused
        found_outcomes = decided[found[0]]
        assert found_outcomes is not None
        outcomes, inverse = found_outcomes
        o = outcomes[inverse[found[1]]]
        out.append(Verdict(path, None, entry.num_rows, not o.excluded, o.reason, o.rule))
        if sink is not None and now is not None:
            sink[-1] = IndexEntry(state.loaded, found[1], now)
    return out


async def verdicts_from_segments(
    run: Run,
    files: Sequence[str | FileInfo],
    names: Sequence[str | None],
    loaded: Sequence[LoadedSegment | str],
    compiled: CompiledPredicate,
    *,
    immutable: bool = False,
    entries: list[IndexEntry | None] | None = None,
) -> list[Verdict]:
    """The file verdicts of ``files`` from the segments already loaded (a lake's, or a
    table's), no row group pruned.

    ``names`` are the files' names in the segments' directories (None: not indexed);
    ``loaded`` the segments, or why one could not be read (its files are then kept);
    ``compiled`` the run's predicate, whose leaves the segments and the files share.
    The stripes the predicate's keys probe are read (one ranged read each, at once), and each
    file is decided (:func:`row_group_verdicts` then prunes the kept files' row groups by
    their own filters). ``immutable``: a table's files, compared by size alone. ``entries``, if
    given, gets per file the entry that decided it, fresh (None: the index did not).

    Raises
    ------
    PyBloomError
        With ``strict`` (a run option), a damaged segment or a stale entry.
    PredicateError
        A literal is not a value of its column's type.
    """
    rdr, strict = run.reader, run.strict
    states = [SegmentState(x) for x in loaded if isinstance(x, LoadedSegment)]
    damaged = [x for x in loaded if isinstance(x, str)]
    wanted: list[dict[tuple[int, int], list[int]]] = []
    for state in states:
        try:
            wanted.append(prepare_probes(state, compiled))
        except PredicateError as exc:  # raised for a file still as the segment describes it
            state.refused = exc
            wanted.append({})
    await gather(probe_segment, [(rdr, s, w) for s, w in zip(states, wanted, strict=True)])
    for state in states:
        if strict and state.damaged is not None:
            raise PyBloomError(f"lake index {state.damaged}", path=state.loaded.location)
    decided = await _file_verdicts(
        names, files, states, damaged, compiled, rdr, strict, immutable, entries
    )
    if run.progress is not None:
        run.progress(len(decided), len(decided))
    return decided


async def row_group_verdicts(
    run: Run,
    found: Sequence[str | FileInfo],
    decided: Sequence[Verdict],
    compiled: CompiledPredicate,
    require_columns: bool,
    partitions: PartitionPredicate | None = None,
    known: int = 0,
) -> list[Verdict]:
    """The kept files' row-group verdicts in place of their file verdicts, in file order.

    A kept file without row groups keeps its file verdict, as in the sidecar-index pass.
    ``partitions``: the files' ``key=value`` folders (settled), whose values decide their
    leaves first, as in the in-file pass; where they rule out every file, their checks
    still stand (``PartitionPredicate.look_in_ruled_out``). Whether a predicate column
    exists is checked only when every file was read or is ``known``: the number of files
    the index ruled out whose schemas counted as read (``PartitionPredicate.count_as_read``,
    from the index's digest).
    """
    kept = [loc for loc, v in zip(found, decided, strict=True) if v.kept]

    def one(location: str | FileInfo) -> Awaitable[list[Verdict]]:
        if partitions is None:
            return prune_file(run, location, compiled)
        return partitions.prune_file(run, location, prune_file)

    per_file = iter(await for_each(kept, one, run.limit) if kept else ())
    every = require_columns and len(kept) + known == len(found)
    await check_once_decided(run, compiled, partitions, every)
    out: list[Verdict] = []
    for v in decided:
        out.extend((next(per_file) or [v]) if v.kept else [v])
    return out


async def lake_segments_at(sources: Any, reader: BloomReader) -> list[FileInfo]:
    """The lake index segments under ``sources`` ([] when there are none or cannot be).

    Only when ``sources`` is one directory or prefix (not a file); an index folder
    that cannot be listed counts as none: every file is then read, as without one.
    Costs one listing, which callers run beside the listing of the files; none while the
    reader kept one younger than its ``max_age``.
    """
    if not isinstance(sources, (str, os.PathLike)):
        return []
    root = os.fspath(sources)
    if root.lower().endswith(".parquet"):
        return []
    try:
        return await listed_segments(root, reader, kept=True)
    except SourceError:
        return []


async def verdicts_at(
    run: Run,
    root: str | os.PathLike[str],
    files: Sequence[str | FileInfo],
    compiled: CompiledPredicate,
    segments: Sequence[FileInfo],
    entries: list[IndexEntry | None] | None = None,
) -> list[Verdict]:
    """The file verdicts of ``files`` from the lake index under ``root`` (its ``segments``,
    as listed), with no row group pruned: the index pass every entry point shares
    (``index_policy/``). The segments the reader kept are used with no request while they
    are the version listed; ``run.strict`` raises on a stale entry or a damaged segment.
    ``entries`` as for :func:`verdicts_from_segments`."""
    rdr = run.reader
    loaded = await gather(kept_or_loaded, [(rdr, listed) for listed in segments])
    names = relative_names(os.fspath(root), [location_text(f) for f in files])
    return await verdicts_from_segments(run, files, names, loaded, compiled, entries=entries)


@asynccontextmanager
async def index_pass_run(run: Run, required: bool) -> AsyncIterator[Run]:
    """The run an index pass reads the lake index with: ``run`` itself where the index is
    required (``use_index="lake"``: with ``strict``, a stale entry or a damaged segment
    raises); else the same reader in a run without ``strict``, where the index only saves
    reads and its own errors leave the files to their filters (docs/lake-index.md, "Which
    index serves a run")."""
    if required:
        yield run
    else:
        async with open_run(RunOptions(reader=run.reader)) as quiet:
            yield quiet
