"""Which index serves a run: the one policy of ``prune``, ``lookup``, ``pruned_dataset``,
the command line and Spark (documented in ``docs/lake-index.md``, "Which index serves a
run").

``use_index`` takes four values:

* ``"auto"`` (the default everywhere): when the run's input is one directory or prefix
  (or a Delta or Iceberg table), the lake index under it serves the files it covers and
  finds fresh; the other files use their own filters. A lake without an index is read as
  without this option. Sidecar indexes are never read unasked (a request per file).
* ``"lake"``: the same, but the lake index must be there: with none, a one-line
  :class:`~pybloom_async.errors.InvalidArgumentError`, not a read of every footer.
* ``"sidecar"``: each file's sidecar index first (``prune`` only).
* ``"none"`` (or None): the files' own filters only; no index is listed or read.

Freshness is the lake index's own rule (:func:`pybloom_async.lake.prune.stale_reason`), the
same for every entry point: an entry serves a file while the file's identity matches it.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import InvalidArgumentError, SourceError
from ..io.base import FileInfo
from ..io.files import expand_paths
from ..lake.digest import LakeFiles, lake_lookup_files
from ..lake.prune import lake_segments_at
from ..lake.segments import listed_segments
from ..lake.tables import table_lake_files
from ..pruning.api import CompiledPredicate
from ..pruning.partitions import PartitionPredicate
from ..read.reader import BloomReader
from ..read.run import Run
from ..tables import TableFiles
from ..tasks.workers import gather

IndexChoice = Literal["auto", "lake", "sidecar", "none"]

#: The values ``use_index`` (and the command line's ``--index``) accepts; None is "none".
INDEX_CHOICES: tuple[IndexChoice, ...] = ("auto", "lake", "sidecar", "none")


def index_choice(
    value: object, *, booleans: bool = False, sidecar: bool = True, name: str = "use_index"
) -> IndexChoice:
    """``value`` as one of :data:`INDEX_CHOICES` (None: ``"none"``).

    ``booleans``: True and False are taken in their older meaning (Spark's
    ``prune_on_spark(use_index=True)``): True the sidecar indexes, False none.
    ``sidecar``: False where the entry point reads no sidecar index (lookups, datasets).

    Raises
    ------
    InvalidArgumentError
        Any other value, or ``"sidecar"`` where it does not apply (named).
    """
    if value is None:
        return "none"
    if isinstance(value, bool):
        if booleans:
            return "sidecar" if value else "none"
    elif isinstance(value, str) and value in INDEX_CHOICES:
        if value == "sidecar" and not sidecar:
            raise InvalidArgumentError(
                f"{name}='sidecar' applies to prune only: sidecar indexes answer for files, "
                "not rows; use 'auto', 'lake' or 'none'",
                value=value,
            )
        return value
    raise InvalidArgumentError(
        f"{name} must be one of 'auto', 'lake', 'sidecar', 'none' (or None), not {value!r}",
        value=value,
    )


def lake_root(sources: Any) -> str | None:
    """The one directory or prefix a lake index may lie under (None: ``sources`` is a list,
    a file or a stream, which no lake index answers for)."""
    if not isinstance(sources, (str, os.PathLike)):
        return None
    root = os.fspath(sources)
    return None if root.lower().endswith(".parquet") else root


def lake_root_for(choice: IndexChoice, sources: Any) -> str | None:
    """The root whose lake index may serve a run over ``sources`` under ``choice`` (None:
    none may: ``"sidecar"`` or ``"none"``, or ``sources`` is not one directory or prefix).

    Raises
    ------
    InvalidArgumentError
        ``"lake"`` and ``sources`` is not one directory or prefix.
    """
    root = lake_root(sources) if choice in ("auto", "lake") else None
    if choice == "lake" and root is None:
        raise no_lake_index(None)
    return root


async def lake_segments_for(
    choice: IndexChoice, sources: Any, reader: BloomReader
) -> list[FileInfo]:
    """The lake index segments that serve a run over ``sources`` under ``choice`` ([] where
    none does). One listing, which callers run beside the listing of the files; none while
    the reader kept one younger than its ``max_age``.

    Raises
    ------
    InvalidArgumentError
        ``"lake"`` and no lake index under ``sources`` (or ``sources`` is not one
        directory or prefix).
    SourceError
        ``"lake"`` and the index folder cannot be listed.
    """
    if choice not in ("auto", "lake"):
        return []
    root = lake_root(sources)
    if root is None or choice == "auto":
        # "auto": an index folder that cannot be listed counts as none.
        return [] if root is None else await lake_segments_at(root, reader)
    found = await listed_segments(root, reader, kept=True)
    if not found:
        raise no_lake_index(root)
    return found


@dataclass(frozen=True)
class Listed:
    """What :func:`listed_files` found: the files listed less those their partition values
    rule out; the lake index segments that serve them; and how to have every file listed,
    those the partition folders ruled out too (a folder the listing skipped is listed
    then)."""

    files: list[str | FileInfo]
    segments: list[FileInfo]
    every: Callable[[], Awaitable[list[str | FileInfo]]]


async def listed_files(
    choice: IndexChoice,
    run: Run,
    sources: Any,
    parts: PartitionPredicate,
    unreadable: list[SourceError] | None = None,
) -> Listed:
    """The files of a run over ``sources`` and the lake index segments that serve them
    under ``choice``, listed at once (one round trip); the partition columns' types settled
    from every file listed. ``unreadable``: a folder or prefix that cannot be listed is
    added to it, not raised.

    Raises
    ------
    SourceError
        A folder or prefix cannot be listed (without ``unreadable``).
    InvalidArgumentError
        ``"lake"`` and no lake index serves ``sources``.
    PredicateError
        A literal is not a value of its partition column's type.
    """
    reader = run.reader
    folders = parts.folder_filter()

    async def listing() -> list[str | FileInfo]:
        return await expand_paths(sources, reader, unreadable=unreadable, folders=folders)

    async def segments() -> list[FileInfo]:
        return await lake_segments_for(choice, sources, reader)

    found, lake = await gather(lambda step: step(), [(listing,), (segments,)])
    parts.settle(found)  # the partition columns' types: from every file listed
    # A literal not of its partition column's type is an error even where the folders
    # leave no file to decide (the listing skipped them all), as prune finds at its end.
    parts.check_literals()
    listed: list[str | FileInfo] = found

    async def every() -> list[str | FileInfo]:
        if folders is None:
            return listed
        return await expand_paths(sources, reader, unreadable=[])

    return Listed(parts.kept_list(found), lake, every)


async def lake_files_for(
    choice: IndexChoice,
    run: Run,
    sources: Any,
    files: Sequence[str | FileInfo],
    compiled: CompiledPredicate,
    segments: Sequence[FileInfo],
) -> LakeFiles:
    """``files`` (a run's over ``sources``) less those the lake index rules out, with what
    its digest gives of them; ``segments`` as :func:`lake_segments_for` listed them (none:
    every file, nothing read). Under ``"lake"``, with the run's ``strict``, a file changed
    since the index was built, or a damaged segment, raises; otherwise it is left to its
    own filters.

    Raises
    ------
    IndexStaleError, PyBloomError
        ``"lake"`` and ``strict``: as said above.
    """
    root = lake_root(sources) or ""
    return await lake_lookup_files(run, root, files, compiled, segments, choice == "lake")


def no_lake_index(root: str | None) -> InvalidArgumentError:
    """The one-line error of ``use_index="lake"`` where no lake index is found."""
    if root is None:
        return InvalidArgumentError(
            "use_index='lake' needs the lake's root: one directory or object-store prefix"
        )
    return InvalidArgumentError(
        "use_index='lake' but there is no lake index under it (build one with "
        "build_lake_index, or use 'auto')",
        path=root,
    )


async def table_files_for(
    choice: IndexChoice, run: Run, table: TableFiles, compiled: CompiledPredicate
) -> LakeFiles:
    """A Delta or Iceberg table's live files less those the lake index that belongs to it
    rules out under ``choice`` (``"none"``: every one, no index read), with what its digest
    gives of them.

    Raises
    ------
    InvalidArgumentError
        ``"lake"`` and the table has no lake index.
    """
    if choice == "none":
        return LakeFiles(list(table.files))
    return await table_lake_files(run, table, compiled, required=choice == "lake")
