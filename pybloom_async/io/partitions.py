"""Hive partition folders as the listing meets them: ``key=value`` folder names, as pairs.

A lake written by Spark, Hive, DuckDB (``PARTITION_BY``) or pyarrow (``partition_cols``)
keeps some columns in its folder names, not in its files::

    lake/dt=2026-11-01/country=DE/part-0.parquet

A folder name ``key=value`` below the directory or prefix that was listed gives the files
under it the column ``key`` with that value (:func:`folder_pair`): key and value are
URL-unescaped as Hive and Spark escape them (``%2F`` is ``/``, ``%3D`` is ``=``, ``%20``
a space, UTF-8 bytes as ``%C3%BC``), ``__HIVE_DEFAULT_PARTITION__`` is NULL, and an empty
value is the empty string. A folder name split at its first ``=``; a name without one,
or with an empty key, is a plain folder. A key met again deeper keeps its outermost value
(:func:`pairs_of`). Files named directly (not listed) have no partition folders.

The listing (``io/listing.py``) reads the pairs as it lists, to give each file its own
and to skip the folders a predicate rules out (:data:`FolderFilter`), so they are read
here, below it. What the values mean as columns, their types given or inferred, is
``pruning/partition_types.py``; which folders and files a predicate rules out,
``pruning/partitions.py``.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .base import FileInfo

#: The folder value Hive and Spark write for NULL.
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"

#: A file's partition folders, outermost first: ``((key, value or None), ...)``.
Pairs = tuple[tuple[str, "str | None"], ...]

#: Asked of each ``key=value`` folder (with those above it) before it is listed: False
#: skips it and everything below it.
FolderFilter = Callable[[Pairs], bool]


@dataclass(frozen=True, slots=True)
class PartitionedFile(FileInfo):
    """A listed file that lies below ``key=value`` folders: its ``partition`` pairs."""

    partition: Pairs = ()


def partition_of(location: object) -> Pairs:
    """The partition folders of a listed file (none for a file named directly)."""
    return location.partition if isinstance(location, PartitionedFile) else ()


def folder_pair(name: str) -> tuple[str, str | None] | None:
    """``key=value`` as ``(key, value)``, unescaped (None for a plain folder name).

    The value is None for ``__HIVE_DEFAULT_PARTITION__`` (NULL).
    """
    key, eq, value = name.partition("=")
    if not eq or not key:
        return None
    key = urllib.parse.unquote(key)
    if not key:
        return None
    return key, None if value == HIVE_NULL else urllib.parse.unquote(value)


def pairs_of(folders: Sequence[str]) -> Pairs:
    """The ``key=value`` pairs of a file's folders below the root, outermost first.

    A key met again deeper (``a=1/a=2/``) keeps its outermost value, as DuckDB and pyarrow
    read it: a folder's value holds for everything below it, so a folder the predicate
    rules out holds no file that can match, whatever lies deeper.
    """
    found: dict[str, str | None] = {}
    for name in folders:
        pair = folder_pair(name)
        if pair is not None:
            found.setdefault(pair[0], pair[1])
    return tuple(found.items())


class PairCache:
    """Pairs per folder, so the files of one folder share one tuple (a listing's memory)."""

    def __init__(self) -> None:
        self._known: dict[str, Pairs] = {}

    def get(self, folder: str, sep: str) -> Pairs:
        found = self._known.get(folder)
        if found is None:
            if len(self._known) >= 4096:
                self._known.clear()
            found = self._known[folder] = pairs_of(folder.split(sep)) if folder else ()
        return found
