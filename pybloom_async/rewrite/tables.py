"""Filters added to a Delta or Iceberg table's files by a commit of the table's own library.

A table's log (Delta) or manifests (Iceberg) record each data file's size, so its
files are never rewritten in place. Given a ``deltalake.DeltaTable`` or a
``pyiceberg`` ``Table``, :func:`~pybloom_async.rewrite.add_filters.add_bloom_filters`:

1. lists the table's live files through its library (files it has removed are
   never touched); files the library cannot replace exactly are left as they are
   and reported (Delta: a deletion vector; Iceberg: delete files, an earlier
   partition spec), see :mod:`.delta` and :mod:`.iceberg`;
2. writes, for each live file that lacks a requested filter (all of them with
   ``replace``), a new file next to it, in the same folder under a new name
   (``<stem>.bf-<16 hex>.parquet``): the old file byte for byte up to its footer,
   then the filters, then the spliced footer (:mod:`.add_filters`);
3. commits one transaction that replaces those old files with the new ones.

The earlier versions (Delta) and snapshots (Iceberg) still read the old files,
which stay on storage: removing them is the table's own maintenance (Delta
``VACUUM``, Iceberg snapshot expiry and orphan-file removal), left to the user.

A concurrent commit that conflicts makes the library refuse ours
(:class:`~pybloom_async.errors.CommitConflictError`): the new files are removed
and the table is as it was. Whatever the error, the table's history is read for
this run's marker before anything is removed: new files of a commit that did land
are never deleted, and when the outcome cannot be read they are left in place and
the error says so.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import secrets
from collections.abc import Sequence
from typing import Any, Protocol

import anyio
import obstore

from ..errors import InvalidArgumentError, SourceError
from ..io.address import parse_address
from ..io.failures import map_errors
from ..io.store import StoreOptions, cached_store
from ..tables import table_kind
from ..tasks.loops import to_worker
from . import delta, iceberg
from .add_filters import FilterSpec
from .results import AddFiltersResult, SkippedFile, TableFiltersResult
from .source import fetch_remote, open_local
from .table_plan import Candidate, TablePlan

log = logging.getLogger(__name__)


class _Backend(Protocol):
    """What the Delta and Iceberg modules provide (each is one)."""

    def plan(self, table: Any, spec: FilterSpec) -> TablePlan: ...

    def commit(
        self,
        table: Any,
        plan: TablePlan,
        done: Sequence[tuple[Candidate, AddFiltersResult]],
        marker: str,
    ) -> None: ...

    def find_commit(
        self,
        table: Any,
        plan: TablePlan,
        done: Sequence[tuple[Candidate, AddFiltersResult]],
        marker: str,
    ) -> int | None: ...


def _backend(table: Any) -> _Backend:
    kind = table_kind(table)
    if kind == "delta":
        return delta
    if kind == "iceberg":
        return iceberg
    raise InvalidArgumentError(f"not a Delta or Iceberg table: {type(table).__name__}")


def remove_files(locations: Sequence[str], options: StoreOptions | None) -> list[str]:
    """Remove files written by a run that did not commit; returns the ones that remain."""
    left = []
    for location in locations:
        loc = parse_address(location)
        try:
            with map_errors(loc.display, "removing"):
                if loc.kind == "file":
                    os.remove(loc.path)
                else:
                    obstore.delete(cached_store(loc, options or StoreOptions()), loc.key)
        except SourceError as exc:
            log.warning("a file written for a commit that was not made remains: %s", exc)
            left.append(location)
    return left


def _why(result: AddFiltersResult) -> str:
    reasons = sorted({s.reason for s in result.skipped})
    return "nothing to add: " + ("; ".join(reasons) if reasons else "no column chunk")


class _Run:
    """One table's run: the plan, the files written, the commit and its outcome."""

    def __init__(self, table: Any, spec: FilterSpec) -> None:
        self.table = table
        self.spec = spec
        self.backend = _backend(table)
        self.plan = TablePlan("", "", None)
        self.done: list[tuple[Candidate, AddFiltersResult]] = []
        self.skipped: list[SkippedFile] = []
        # "writing", then "committing" while the library commits, then "committed" or
        # "refused" (known not committed); files are removed in "writing" and "refused" only.
        self.state = "writing"

    def make_plan(self) -> TablePlan:
        self.plan = self.backend.plan(self.table, self.spec)
        self.skipped = list(self.plan.skipped)
        return self.plan

    def keep(self, candidate: Candidate, result: AddFiltersResult) -> None:
        if result.written:
            # Named as the table names it (the source may have been opened by a local path).
            self.done.append((candidate, dataclasses.replace(result, path=candidate.path)))
        else:
            self.skipped.append(SkippedFile(candidate.path, _why(result)))

    def commit(self) -> int | None:
        """Commit the files written (None: there are none); blocking."""
        if not self.done:
            return None
        marker = secrets.token_hex(16)
        self.state = "committing"
        try:
            self.backend.commit(self.table, self.plan, self.done, marker)
        except BaseException as exc:
            version = self._outcome(marker, exc)
            if version is None:
                self.state = "refused"
                raise
            self.state = "committed"  # it landed all the same
            if not isinstance(exc, Exception):
                raise  # an interruption goes on; the files stay with the commit
        else:
            version = self._outcome(marker, None)
            if version is None:
                raise SourceError(
                    "the commit returned but this run's marker is not in the table's "
                    "history; the new files are left in place",
                    path=self.plan.name,
                )
        self.state = "committed"
        return version

    def _outcome(self, marker: str, error: BaseException | None) -> int | None:
        try:
            return self.backend.find_commit(self.table, self.plan, self.done, marker)
        except Exception as exc:
            if error is None:
                raise
            raise SourceError(
                f"the commit failed ({error}) and whether it landed cannot be read ({exc}); "
                f"the {len(self.done)} new file(s) are left in place, next to the old ones",
                path=self.plan.name,
            ) from error

    def abandon(self) -> None:
        """After a failure: remove the files written, unless a commit may hold them."""
        if self.state in ("writing", "refused"):
            remove_files([c.target for c, _ in self.done], self.spec.options)
        elif self.state == "committing":
            log.warning(
                "interrupted while committing to %s: its %d new file(s) are left in place",
                self.plan.name, len(self.done),
            )  # fmt: skip

    def result(self, version: int | None) -> TableFiltersResult:
        return TableFiltersResult(
            self.plan.kind, self.plan.name, self.plan.read_version, version,
            tuple(r for _, r in self.done), tuple(self.skipped),
        )  # fmt: skip


async def add_filters_to_table(table: Any, spec: FilterSpec) -> TableFiltersResult:
    """Filters added to the table's live files, committed as one transaction.

    The blocking work runs in worker threads; object-store files are read on the
    caller's event loop, as for single files.

    Raises
    ------
    CommitConflictError
        A concurrent commit conflicts; the new files were removed.
    """
    run = _Run(table, spec)
    plan = await to_worker(run.make_plan)
    try:
        for candidate in plan.candidates:
            loc = parse_address(candidate.path)
            if loc.kind == "file":
                source = await to_worker(open_local, loc.path)
            else:
                source = await fetch_remote(candidate.path, spec.options)
            rewrite = functools.partial(spec.rewrite, source, candidate.target, absent_ok=True)
            try:
                run.keep(candidate, await to_worker(rewrite))
            finally:
                source.close()  # the thread is done: run_sync waits for it, even when cancelled
        version = await to_worker(run.commit)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await to_worker(run.abandon)
        raise
    return run.result(version)
