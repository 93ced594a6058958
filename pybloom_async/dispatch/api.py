"""``prune`` and ``prune_sync`` over every index: in-file filters, sidecar or lake index.

``use_index=None`` is :func:`pybloom_async.pruning.api.prune` unchanged;
``"sidecar"`` is :func:`pybloom_async.index.prune.prune_with_index`;
``"lake"`` is :func:`pybloom_async.lake.prune.prune_with_lake_index`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ..errors import InvalidArgumentError
from ..index.prune import prune_with_index
from ..io.base import FileInfo
from ..lake.prune import prune_with_lake_index
from ..predicate import Predicate
from ..pruning.api import prune as prune_in_files
from ..pruning.api import prune_sync as prune_in_files_sync
from ..pruning.verdicts import Verdict
from ..read.blocking import run_in_new_loop

__all__ = ["INDEX_KINDS", "prune", "prune_sync"]

#: The values ``use_index`` accepts.
INDEX_KINDS = (None, "sidecar", "lake")


async def prune(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo],
    where: Predicate | str,
    *,
    use_index: str | None = None,
    row_groups: bool = True,
    **kwargs: Any,
) -> list[Verdict]:
    """Decide which row groups (or files) may hold rows matching ``where``.

    Parameters
    ----------
    paths, where, **kwargs:
        As for :func:`pybloom_async.pruning.api.prune` (``strict``,
        ``concurrency``, ``options``, ``stats``, ``config``, ``reader``,
        ``progress``, ``require_columns``, ``on_file``).
    use_index:
        None: the files' own filters. ``"sidecar"``: each file's sidecar index
        first (:func:`pybloom_async.prune_with_index`). ``"lake"``: the lake index
        under ``paths`` (one directory or prefix) first.
    row_groups:
        With an index: False stops at file verdicts (``row_group`` None).
        Without one, only True is meaningful.

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
    if use_index is None:
        if not row_groups:
            raise InvalidArgumentError("row_groups=False needs an index (use_index)")
        return await prune_in_files(paths, where, **kwargs)
    if use_index == "sidecar":
        return await prune_with_index(paths, where, row_groups=row_groups, **kwargs)
    if not isinstance(paths, (str, os.PathLike)):
        raise InvalidArgumentError(
            "use_index='lake' needs the lake's root: one directory or object-store prefix"
        )
    return await prune_with_lake_index(paths, where, row_groups=row_groups, **kwargs)


def prune_sync(
    paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str] | FileInfo],
    where: Predicate | str,
    *,
    use_index: str | None = None,
    row_groups: bool = True,
    **kwargs: Any,
) -> list[Verdict]:
    """:func:`prune` for scripts: runs its own event loop (not from inside one).

    Without an index this is :func:`pybloom_async.pruning.api.prune_sync`
    (which reads local files without an event loop).

    Raises
    ------
    EventLoopError
        With an index, called from a thread that runs an event loop.
    """
    if use_index is None and row_groups:
        return prune_in_files_sync(paths, where, **kwargs)
    return run_in_new_loop(
        lambda: prune(paths, where, use_index=use_index, row_groups=row_groups, **kwargs),
        caller="prune_sync",
        instead="prune",
    )
