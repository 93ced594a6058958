"""``prune`` and ``prune_sync`` over every index: in-file filters, sidecar or lake index.

``use_index=None`` is :func:`pybloom_async.pruning.api.prune` unchanged;
``"sidecar"`` is :func:`pybloom_async.index.prune.prune_with_index`;
``"lake"`` is :func:`pybloom_async.lake.prune.prune_with_lake_index`.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgumentError
from ..index.prune import prune_with_index
from ..io.base import FileInfo
from ..io.files import FileStream, few_local_files
from ..lake.prune import prune_with_lake_index
from ..lake.tables import prune_table_with_lake_index
from ..predicate import Predicate, as_predicate
from ..pruning.api import prune as prune_in_files
from ..pruning.verdicts import Verdict
from ..read.run import RunOptions, run_options
from ..tables import TableSource, files_only_columns, resolve_table, table_kind
from ..tasks.loops import sync_twin, to_worker

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..read.run import RunKeywords

__all__ = ["prune", "prune_sync"]

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
    run: RunOptions | None = None,
    require_columns: bool = True,
    on_file: Callable[[list[Verdict]], None] | None = None,
    files: Sequence[str | FileInfo] | None = None,
    partitioning: Any = "hive",
    **keywords: Unpack[RunKeywords],
) -> list[Verdict]:
    """Decide which row groups (or files) may hold rows matching ``where``.

    Parameters
    ----------
    paths, where, run, require_columns, on_file, partitioning, **keywords:
        As for :func:`pybloom_async.pruning.api.prune` (``run`` and the keywords are
        the run's options, :class:`~pybloom_async.RunOptions`; ``partitioning``:
        ``key=value`` folders as columns, decided per file before it is read; the
        index passes do not read them yet: with ``use_index``, a predicate on a
        partition column finds no such column). A Delta or Iceberg
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
    opts = run_options(run, keywords, "prune")
    if use_index is None:
        if not row_groups:
            raise InvalidArgumentError("row_groups=False needs an index (use_index)")
        return await prune_in_files(
            paths,
            where,
            run=opts,
            require_columns=require_columns,
            on_file=on_file,
            partitioning=partitioning,
        )
    if files is not None and use_index != "lake":
        raise InvalidArgumentError("files= goes with use_index='lake'")
    if table_kind(paths) is not None:
        if use_index != "lake":
            raise InvalidArgumentError(
                f"use_index={use_index!r} reads an index beside each file: give paths, "
                "not a table (or use_index='lake' with the lake index at the table's root)"
            )
        predicate = as_predicate(where)
        table = await to_worker(resolve_table, paths, predicate, opts.options)
        files_only_columns(table, predicate, opts.strict)
        # The index that belongs to the table (its schema was checked: no column check).
        return await prune_table_with_lake_index(
            table, predicate, run=opts, row_groups=row_groups, on_file=on_file
        )
    if use_index == "sidecar":
        return await prune_with_index(
            paths,
            where,
            run=opts,
            row_groups=row_groups,
            require_columns=require_columns,
            on_file=on_file,
        )
    if not isinstance(paths, (str, os.PathLike)):
        raise InvalidArgumentError(
            "use_index='lake' needs the lake's root: one directory or object-store prefix"
        )
    return await prune_with_lake_index(
        paths,
        where,
        run=opts,
        row_groups=row_groups,
        files=files,
        require_columns=require_columns,
        on_file=on_file,
    )


def _inline_allowed(bound: inspect.BoundArguments) -> bool:
    """The in-file pruning of a few local files runs inline; an index pass needs a loop."""
    args = bound.arguments
    return (
        args.get("use_index") is None
        and args.get("row_groups", True) is True
        and few_local_files("paths")(bound)
    )


#: ``prune`` for scripts; without an index, a few local files are read in the calling
#: thread with no event loop (``tasks.loops``).
prune_sync = sync_twin(prune, inline_when=_inline_allowed)
