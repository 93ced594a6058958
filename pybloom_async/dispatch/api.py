"""``prune`` and ``prune_sync`` over every index: in-file filters, sidecar or lake index.

``use_index=None`` is :func:`pybloom_async.pruning.api.prune` unchanged;
``"sidecar"`` is :func:`pybloom_async.index.prune.prune_with_index`;
``"lake"`` is :func:`pybloom_async.lake.prune.prune_with_lake_index`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio

from ..checks import same_arguments_as
from ..errors import InvalidArgumentError
from ..index.prune import prune_with_index
from ..io.base import FileInfo, SourceStats
from ..io.store import StoreOptions
from ..lake.prune import prune_with_lake_index
from ..predicate import Predicate, as_predicate
from ..pruning.api import prune as prune_in_files
from ..pruning.api import prune_sync as prune_in_files_sync
from ..pruning.runner import FileStream
from ..pruning.verdicts import Verdict
from ..read.blocking import run_in_new_loop
from ..read.fetch import ReaderConfig
from ..read.reader import BloomReader
from ..tables import TableSource, files_only_columns, resolve_table, table_kind, table_root

__all__ = ["INDEX_KINDS", "prune", "prune_sync"]

#: The values ``use_index`` accepts.
INDEX_KINDS = (None, "sidecar", "lake")


# Long because: the docstring documents every parameter (28 lines); the code is 34.
async def prune(
    paths: (
        str
        | os.PathLike[str]
        | Sequence[str | os.PathLike[str] | FileInfo]
        | FileStream
        | TableSource
    ),
    where: Predicate | str,
    *,
    use_index: str | None = None,
    row_groups: bool = True,
    strict: bool = False,
    concurrency: int | None = None,
    options: StoreOptions | Mapping[str, Any] | None = None,
    stats: SourceStats | None = None,
    config: ReaderConfig | None = None,
    reader: BloomReader | None = None,
    progress: Callable[[int, int], None] | None = None,
    require_columns: bool = True,
    on_file: Callable[[list[Verdict]], None] | None = None,
    files: Sequence[str | FileInfo] | None = None,
) -> list[Verdict]:
    """Decide which row groups (or files) may hold rows matching ``where``.

    Parameters
    ----------
    paths, where, strict, concurrency, options, stats, config, reader, progress,
    require_columns, on_file:
        As for :func:`pybloom_async.pruning.api.prune`. A Delta or Iceberg
        table as ``paths`` goes without an index, or with the lake index built
        at the table's root (its live files, after the table's own partition
        and statistics pruning, are what the index is asked about).
    use_index:
        None: the files' own filters. ``"sidecar"``: each file's sidecar index
        first (:func:`pybloom_async.prune_with_index`). ``"lake"``: the lake index
        under ``paths`` (one directory or prefix) first.
    row_groups:
        With an index: False stops at file verdicts (``row_group`` None).
        Without one, only True is meaningful.
    files:
        With ``use_index="lake"``: the lake's files, instead of listing
        ``paths`` (which is then only the lake's root).

    Raises
    ------
    InvalidArgumentError
        An unknown ``use_index``, or ``row_groups=False`` without an index.
    PredicateError, PyBloomError
        As the pruner chosen.
    """
    if use_index not in INDEX_KINDS:
        raise InvalidArgumentError(
            f"use_index must be None, 'sidecar' or 'lake', not {use_index!r}"
        )
    kwargs: dict[str, Any] = dict(
        strict=strict, concurrency=concurrency, options=options, stats=stats, config=config,
        reader=reader, progress=progress, require_columns=require_columns, on_file=on_file,
    )  # fmt: skip
    if use_index is None:
        if not row_groups:
            raise InvalidArgumentError("row_groups=False needs an index (use_index)")
        return await prune_in_files(paths, where, **kwargs)
    if files is not None and use_index != "lake":
        raise InvalidArgumentError("files= goes with use_index='lake'")
    if table_kind(paths) is not None:
        if use_index != "lake":
            raise InvalidArgumentError(
                f"use_index={use_index!r} reads an index beside each file: give paths, "
                "not a table (or use_index='lake' with the lake index at the table's root)"
            )
        predicate = as_predicate(where)
        table = await anyio.to_thread.run_sync(resolve_table, paths, predicate, options)
        files_only_columns(table, predicate, strict)
        kwargs["require_columns"] = False  # the table's schema was checked
        return await prune_with_lake_index(
            table_root(table), predicate, row_groups=row_groups, files=table.files, **kwargs
        )
    if use_index == "sidecar":
        return await prune_with_index(paths, where, row_groups=row_groups, **kwargs)
    if not isinstance(paths, (str, os.PathLike)):
        raise InvalidArgumentError(
            "use_index='lake' needs the lake's root: one directory or object-store prefix"
        )
    return await prune_with_lake_index(paths, where, row_groups=row_groups, files=files, **kwargs)


@same_arguments_as(prune)
def prune_sync(*args: Any, **kwargs: Any) -> list[Verdict]:
    """:func:`prune` for scripts: runs its own event loop (not from inside one).

    Without an index this is :func:`pybloom_async.pruning.api.prune_sync`
    (which reads local files without an event loop).

    Raises
    ------
    EventLoopError
        With an index, called from a thread that runs an event loop.
    """
    if kwargs.get("use_index") is None and kwargs.get("row_groups", True):
        kwargs.pop("use_index", None)
        kwargs.pop("row_groups", None)
        return prune_in_files_sync(*args, **kwargs)
    return run_in_new_loop(lambda: prune(*args, **kwargs), caller="prune_sync", instead="prune")
