"""Plain paths inside a Delta or Iceberg table are refused: its files change only by a commit.

A table's log (Delta) or manifests (Iceberg) record each data file's size, and a
reader trusts them: a file rewritten in place, longer by its new filters, makes
the table unreadable ("Parquet magic bytes not found in footer"). So before a
plain path is rewritten, every folder from the file up to the root is looked at,
by the one detection every plain path goes through (:mod:`pybloom_async.io.table_folders`,
which says what a table's folder is and what a look costs); only the message
differs: it says what rewriting would do. The command line checks every file it
will rewrite before the first one is touched, and shares its guard with the calls
it makes (:func:`shared_guard`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from ..io import table_folders
from ..io.store import StoreOptions
from ..io.table_folders import DELTA_LOG, TableFolder


class TableGuard(table_folders.TableGuard):
    """:class:`pybloom_async.io.table_folders.TableGuard` saying what rewriting would do."""

    def refusal(self, found: TableFolder, inside: bool) -> str:
        """The one-line error for a plain path to rewrite in the table ``found``."""
        verb = "lies in" if inside else "holds"
        if found.kind == "delta":
            return (
                f"this {verb} the Delta table {found.root} (it has {DELTA_LOG}/), whose log "
                "records each file's size: rewritten in place, the table breaks; use --delta "
                f"{found.root} (Python: pass a deltalake.DeltaTable) to add filters by a commit"
            )
        return (
            f"this {verb} the Iceberg table at {found.root} (metadata/*.metadata.json), "
            "whose manifests record each file's size: rewritten in place, the table breaks; use "
            "--iceberg CATALOG.NAMESPACE.TABLE (Python: pass the pyiceberg Table) to add filters "
            "by a commit"
        )


_ACTIVE: ContextVar[TableGuard | None] = ContextVar("pybloom_async_table_guard", default=None)


def guard_for(options: StoreOptions | None) -> TableGuard:
    """The guard of the run in progress (see :func:`shared_guard`), or a new one."""
    active = _ACTIVE.get()
    return active if active is not None else TableGuard(options)


@contextmanager
def shared_guard(guard: TableGuard) -> Iterator[TableGuard]:
    """Make ``guard`` the one :func:`guard_for` gives inside the block (a run of many calls)."""
    token = _ACTIVE.set(guard)
    try:
        yield guard
    finally:
        _ACTIVE.reset(token)
