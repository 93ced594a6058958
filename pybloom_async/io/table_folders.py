"""Delta and Iceberg tables found under plain paths: their files are no plain files.

Only a table's log (Delta) or manifests (Iceberg) say which of its files are live:
a delete or an update leaves the files it replaced on disk until a vacuum, and a
reader trusts the sizes they record. Read as plain files, a table's folder brings
back the rows the table deleted; rewritten in place, a file breaks the table. So a
plain path is refused when it lies in a table, or when its listing holds one:

* a folder holding ``_delta_log/`` is a Delta table;
* a folder whose ``metadata/`` holds a ``*.metadata.json`` is an Iceberg table:
  looked for in a folder given or listed itself (its data files may lie elsewhere,
  added from another place), and above a file that lies under a ``data/`` folder
  (where Iceberg writers put data files).

Locally that is a few ``stat`` calls per folder above a path; a listing sees the
folders below it anyway (:meth:`TableGuard.walked`). On an object store each folder
above a path costs one LIST of ``<folder>/_delta_log/`` (and one of
``<folder>/metadata/`` for the parents of a ``data/`` folder), looked up at once; a
listing below a prefix sees a table's ``_delta_log/`` keys among its own, in key
order (:class:`PrefixTables`), and lists ``<folder>/_delta_log/`` only for a folder
whose first keys sort before it. A :class:`TableGuard` remembers each folder's
answer for the run, so files of one folder cost nothing more.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import obstore

from ..errors import InvalidArgumentError
from .address import Address, parse_address
from .base import SourceStats
from .failures import map_errors
from .store import StoreOptions, cached_store

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

    def refusal(self, inside: bool = True) -> str:
        """The one-line error for a plain path in this table (``inside``) or holding it."""
        verb = "lies in" if inside else "holds"
        if self.kind == "delta":
            return (
                f"this {verb} the Delta table {self.root} (it has {DELTA_LOG}/): read as plain "
                "files, its folder gives back the rows the table deleted; read the table with "
                f"--delta {self.root} (Python: pass deltalake.DeltaTable('{self.root}'))"
            )
        return (
            f"this {verb} the Iceberg table at {self.root} ({ICEBERG_METADATA}/*.metadata.json): "
            "read as plain files, its folder gives back the rows the table deleted; read the "
            "table with --iceberg CATALOG.NAMESPACE.TABLE (Python: pass the pyiceberg Table)"
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


def _store_folder(loc: Address, key: str, below_data: bool) -> _Folder:
    parts = urllib.parse.urlsplit(loc.display)
    base = f"{parts.scheme}://{parts.netloc}"
    return _Folder(loc.kind, f"{base}/{key}" if key else base, key, loc, below_data)


def _store_folders(loc: Address) -> Iterator[_Folder]:
    """The folders above the object or prefix ``loc`` names (not the prefix itself)."""
    segments = [s for s in loc.key.split("/") if s]
    for depth in range(len(segments) - 1, -1, -1):
        yield _store_folder(loc, "/".join(segments[:depth]), segments[depth] == ICEBERG_DATA)


def _local_iceberg_metadata(folder: str) -> bool:
    metadata = os.path.join(folder, ICEBERG_METADATA)
    if not os.path.isdir(metadata):  # a stat: most folders have none
        return False
    try:
        with os.scandir(metadata) as entries:
            return any(e.name.endswith(".metadata.json") for e in entries)
    except OSError:
        return False


class TableGuard:
    """Finds the table a plain path lies in; remembers each folder's answer.

    Blocking (``stat`` calls, or LISTs through obstore's sync API): async callers run
    it in a worker thread. :meth:`refusal` is the error's text (a subclass may say
    more of what it would have done).
    """

    def __init__(
        self, options: StoreOptions | None = None, stats: SourceStats | None = None
    ) -> None:
        self.options = options or StoreOptions()
        self.stats = stats  # its LISTs are counted there (metadata requests), if given
        self._delta: dict[tuple[str, str, str], bool] = {}
        self._iceberg: dict[tuple[str, str, str], bool] = {}
        # A local file's answer is its folder's: (folder, given as or named a data/ folder).
        self._local: dict[tuple[str, bool], TableFolder | None] = {}

    def refusal(self, found: TableFolder, inside: bool) -> str:
        """The error's text for a path in the table ``found`` (``inside``) or holding it."""
        return found.refusal(inside)

    def table_of(self, location: str, *, folder: bool = False) -> TableFolder | None:
        """The table ``location`` lies in, if any (an object store's folders looked up at once).

        ``folder``: ``location`` is a folder whose own files would be read (a local
        directory is taken as one whatever ``folder`` says). An object-store prefix
        itself is not looked at: its listing sees what it holds (:class:`PrefixTables`).
        """
        try:
            loc = parse_address(location)
        except InvalidArgumentError:
            return None  # no table there: reading it says what is wrong
        if loc.kind == "http":
            return None  # no table is written over plain HTTP
        if loc.kind != "file":
            folders = list(_store_folders(loc))
            self._prefetch(folders)
            return self._first(folders)
        given_folder = folder or os.path.isdir(loc.path)
        path = os.path.abspath(loc.path)
        named_data = os.path.basename(path) == ICEBERG_DATA  # a folder's data/ (see _Folder)
        key = (path if given_folder else os.path.dirname(path), given_folder or named_data)
        if key not in self._local:
            self._local[key] = self._first(_local_folders(path, given_folder))
        return self._local[key]

    def _first(self, folders: Iterable[_Folder]) -> TableFolder | None:
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
            raise InvalidArgumentError(self.refusal(found, True), path=location)

    def check_all(self, locations: Iterable[str]) -> None:
        """:meth:`check` for many files; an object store's folders are looked up concurrently."""
        listed = list(locations)
        folders: list[_Folder] = []
        for location in listed:
            try:
                loc = parse_address(location)
            except InvalidArgumentError:
                continue  # see table_of
            if loc.kind not in ("file", "http"):
                folders.extend(_store_folders(loc))
        self._prefetch(folders)
        for location in listed:
            self.check(location)

    def walked(self, folder: str, delta_log: bool, subfolders: Collection[str], given: str) -> None:
        """Refuse a local folder a listing walks into, from what its listing saw in it.

        ``delta_log``: it has ``_delta_log/``; ``subfolders``: its other folders.

        Raises
        ------
        InvalidArgumentError
            The folder is a table's root (the message names ``given``, the path listed).
        """
        found = None
        if delta_log:
            found = TableFolder("delta", folder)
        elif ICEBERG_METADATA in subfolders and _local_iceberg_metadata(folder):
            found = TableFolder("iceberg", folder)
        if found is not None:
            inside = os.path.abspath(given) == os.path.abspath(folder)
            raise InvalidArgumentError(self.refusal(found, inside), path=given)

    def _prefetch(self, folders: Sequence[_Folder]) -> None:
        """Look up an object store's folders at once: their answers are remembered."""
        new = {(f.kind, f.display, f.path, f.below_data): f for f in folders}
        todo = [f for f in new.values() if (f.kind, f.display, f.path) not in self._delta]
        if len(todo) > 1:
            with ThreadPoolExecutor(_STORE_LOOKUPS, thread_name_prefix="pybloom-guard") as pool:
                list(pool.map(self._look, todo))

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
            return _local_iceberg_metadata(f.path)
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
        if self.stats is not None:
            self.stats.add_metadata()
        return [str(meta["path"]) for meta in page]


class PrefixTables:
    """The tables below an object-store prefix, found from the keys its listing gives.

    Keys come in key order, so a folder's ``_delta_log/`` keys come before every key
    of it that sorts after ``_delta_log/`` (``part-...``, lowercase partition
    folders): those files are told by the keys already seen. For a folder whose file
    sorts before it (``P=a/``, ``2024/``) its ``_delta_log/`` is listed (one LIST,
    once per folder); so is the ``metadata/`` of a folder with a file below its
    ``data/`` (which sorts before ``metadata/``).
    """

    def __init__(self, guard: TableGuard, loc: Address, prefix: str) -> None:
        self.guard = guard
        self.loc = loc
        self.prefix = prefix  # the key of the prefix, without a trailing "/"
        self.delta: dict[str, bool] = {}  # folder below the prefix -> is a Delta table
        self.clear: set[str] = set()  # folders whose files lie in no table

    def see(self, parts: list[str], listed: bool) -> None:
        """Note one key (its segments below the prefix); refuse a file listed in a table.

        Raises
        ------
        InvalidArgumentError
            ``listed`` (the listing gives the file) and the file lies in a table.
        SourceError
            Listing a folder failed.
        """
        if DELTA_LOG in parts[:-1]:
            self.delta["/".join(parts[: parts.index(DELTA_LOG)])] = True
        if not listed:
            return
        parent = "/".join(parts[:-1])
        if parent in self.clear:
            return
        for i in range(len(parts)):
            folder = "/".join(parts[:i])
            delta = self.delta.get(folder)
            if delta is None:
                # The log's keys would have come before this one: none came.
                passed = "/".join(parts[i:]) > DELTA_LOG + "/"
                delta = self.delta[folder] = not passed and self._looked(folder, False, "delta")
            if delta or (
                parts[i] == ICEBERG_DATA and i < len(parts) - 1 and self._looked(folder, True)
            ):
                self._refuse(folder, "delta" if delta else "iceberg")
        self.clear.add(parent)

    def _key(self, folder: str) -> str:
        return "/".join(k for k in (self.prefix, folder) if k)

    def _looked(self, folder: str, below_data: bool, kind: str = "iceberg") -> bool:
        found = self.guard._look(_store_folder(self.loc, self._key(folder), below_data))
        return found is not None and found.kind == kind

    def _refuse(self, folder: str, kind: str) -> None:
        found = TableFolder(kind, _store_folder(self.loc, self._key(folder), False).display)
        given = self.loc.display
        inside = not folder
        raise InvalidArgumentError(self.guard.refusal(found, inside), path=given)
