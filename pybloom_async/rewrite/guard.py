"""Plain paths inside a Delta or Iceberg table are refused: its files change only by a commit.

A table's log (Delta) or manifests (Iceberg) record each data file's size, and a
reader trusts them: a file rewritten in place, longer by its new filters, makes
the table unreadable ("Parquet magic bytes not found in footer"). So before a
plain path is rewritten, every folder from the file up to the root is looked at:

* a folder holding ``_delta_log/`` is a Delta table;
* a folder whose ``metadata/`` holds a ``*.metadata.json`` is an Iceberg table
  when the file lies under its ``data/`` (where Iceberg writers put data files);
  a folder given itself is one when it also has ``data/``.

Locally that is a few ``stat`` calls per folder. On an object store each folder
costs one LIST of ``<folder>/_delta_log/`` (and one of ``<folder>/metadata/``
for the parents of a ``data/`` folder); a :class:`TableGuard` remembers each
folder's answer for the run, so files of one folder cost nothing more. The
command line checks every file it will rewrite before the first one is
touched, and shares its guard with the calls it makes (:func:`shared_guard`).
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import obstore

from ..errors import InvalidArgumentError
from ..io.address import Address, parse_address
from ..io.base import map_errors
from ..io.store import StoreOptions, cached_store

__all__ = ["TableFolder", "TableGuard", "guard_for", "shared_guard"]

DELTA_LOG = "_delta_log"
ICEBERG_METADATA = "metadata"
ICEBERG_DATA = "data"
# Folders looked up at once on an object store (one LIST each).
_STORE_LOOKUPS = 16


@dataclass(frozen=True)
class TableFolder:
    """A folder that is a table's root: ``kind`` is ``"delta"`` or ``"iceberg"``."""

    kind: str
    root: str

    def refusal(self) -> str:
        """The one-line error for a plain path inside this table."""
        if self.kind == "delta":
            return (
                f"this lies in the Delta table {self.root} (it has {DELTA_LOG}/), whose log "
                "records each file's size: rewritten in place, the table breaks; use --delta "
                f"{self.root} (Python: pass a deltalake.DeltaTable) to add filters by a commit"
            )
        return (
            f"this lies in the Iceberg table at {self.root} ({ICEBERG_METADATA}/*.metadata.json), "
            "whose manifests record each file's size: rewritten in place, the table breaks; use "
            "--iceberg CATALOG.NAMESPACE.TABLE (Python: pass the pyiceberg Table) to add filters "
            "by a commit"
        )


@dataclass(frozen=True)
class _Folder:
    """One folder to look at: its address and whether a file lies under its ``data/``."""

    kind: str  # "file" or a store kind
    display: str  # the folder as the user would name it
    path: str  # local path, or the key without a trailing "/" ("" for the bucket's root)
    base: Address | None  # the store address the folder belongs to (None: local)
    below_data: bool


def _local_folders(path: str, given_folder: bool) -> Iterator[_Folder]:
    current = os.path.abspath(path)
    child = ICEBERG_DATA if given_folder else None
    if not given_folder:
        child, current = os.path.basename(current), os.path.dirname(current)
    while True:
        yield _Folder("file", current, current, None, child == ICEBERG_DATA)
        parent = os.path.dirname(current)
        if parent == current:
            return
        child, current = os.path.basename(current), parent


def _store_folders(loc: Address) -> Iterator[_Folder]:
    parts = urllib.parse.urlsplit(loc.display)
    base = f"{parts.scheme}://{parts.netloc}"
    segments = [s for s in loc.key.split("/") if s]
    for depth in range(len(segments) - 1, -1, -1):
        key = "/".join(segments[:depth])
        display = f"{base}/{key}" if key else base
        yield _Folder(loc.kind, display, key, loc, segments[depth] == ICEBERG_DATA)


class TableGuard:
    """Finds the table a plain path lies in; remembers each folder's answer.

    Blocking (``stat`` calls, or LISTs through obstore's sync API): async callers run
    it in a worker thread.
    """

    def __init__(self, options: StoreOptions | None = None) -> None:
        self.options = options or StoreOptions()
        self._delta: dict[tuple[str, str, str], bool] = {}
        self._iceberg: dict[tuple[str, str, str], bool] = {}

    def table_of(self, location: str, *, folder: bool = False) -> TableFolder | None:
        """The table ``location`` lies in, if any.

        ``folder``: ``location`` is a folder whose own files would be rewritten (a
        local directory is taken as one whatever ``folder`` says).
        """
        loc = parse_address(location)
        if loc.kind == "http":
            return None  # read-only: nothing is rewritten there
        if loc.kind == "file":
            given_folder = folder or os.path.isdir(loc.path)
            folders: Iterable[_Folder] = _local_folders(loc.path, given_folder)
        else:
            folders = _store_folders(loc)
        for f in folders:
            found = self._look(f)
            if found is not None:
                return found
        return None

    def check(self, location: str, *, folder: bool = False) -> None:
        """Refuse a plain path that lies in a table.

        Raises
        ------
        InvalidArgumentError
            ``location`` lies in a Delta or Iceberg table (the message names the table
            form to use).
        SourceError
            A listing of an object store failed.
        """
        found = self.table_of(location, folder=folder)
        if found is not None:
            raise InvalidArgumentError(found.refusal(), path=location)

    def check_all(self, locations: Iterable[str]) -> None:
        """:meth:`check` for many files; an object store's folders are looked up concurrently."""
        listed = list(locations)
        folders: dict[tuple[str, str, str, bool], _Folder] = {}
        for location in listed:
            loc = parse_address(location)
            if loc.kind not in ("file", "http"):
                for f in _store_folders(loc):
                    folders.setdefault((f.kind, f.display, f.path, f.below_data), f)
        if folders:
            with ThreadPoolExecutor(_STORE_LOOKUPS, thread_name_prefix="pybloom-guard") as pool:
                list(pool.map(self._look, folders.values()))  # answers remembered
        for location in listed:
            self.check(location)

    def _look(self, f: _Folder) -> TableFolder | None:
        key = (f.kind, f.display, f.path)
        delta = self._delta.get(key)
        if delta is None:
            delta = self._delta[key] = self._has_delta_log(f)
        if delta:
            return TableFolder("delta", f.display)
        if not f.below_data:
            return None
        iceberg = self._iceberg.get(key)
        if iceberg is None:
            iceberg = self._iceberg[key] = self._has_iceberg_metadata(f)
        return TableFolder("iceberg", f.display) if iceberg else None

    def _has_delta_log(self, f: _Folder) -> bool:
        if f.base is None:
            return os.path.isdir(os.path.join(f.path, DELTA_LOG))
        return any(True for _ in self._first_page(f, DELTA_LOG, 1))

    def _has_iceberg_metadata(self, f: _Folder) -> bool:
        if f.base is None:
            try:
                with os.scandir(os.path.join(f.path, ICEBERG_METADATA)) as entries:
                    found = any(e.name.endswith(".metadata.json") for e in entries)
            except OSError:
                return False
            return found and os.path.isdir(os.path.join(f.path, ICEBERG_DATA))
        # Version files (00001-<uuid>.metadata.json, v1.metadata.json) sort among the
        # first keys: one page of the listing tells.
        return any(k.endswith(".metadata.json") for k in self._first_page(f, ICEBERG_METADATA))

    def _first_page(self, f: _Folder, name: str, size: int = 1000) -> list[str]:
        """The keys of the first page of ``<folder>/<name>/``: one LIST request."""
        assert f.base is not None
        prefix = f"{f.path}/{name}/" if f.path else f"{name}/"
        with map_errors(f"{f.display}/{name}/", "listing"):
            store = cached_store(f.base, self.options)
            page: Sequence[Mapping[str, Any]] = next(
                iter(obstore.list(store, prefix, chunk_size=size)), []
            )
        return [str(meta["path"]) for meta in page]


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
