"""Sidecar and lake indexes: built on the lake, the lake changed, then pruned through them.

A file replaced, added or removed after indexing must be answered for by its own content:
an index that no longer describes a file may never prune it. A valid file that holds every
indexed column must get its index (the docs: every type but BOOLEAN can be indexed).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

import pybloom_async as pba

from .checks import Context, Failure, Lake, failure_of, lookup_on, open_lake, prune_on
from .write import change_lake


def _holds_all(lake: Lake, path: str, columns: Sequence[str]) -> bool:
    """The file is valid Parquet and has every indexed column (leaf or top-level name)."""
    facts = lake.facts.get(os.path.normpath(path))
    return facts is not None and all(facts.has(c) or c in facts.top_level for c in columns)


def _refusals(
    check: str, lake: Lake, refused: Iterable[tuple[str, str]], columns: Sequence[str]
) -> list[Failure]:
    return [
        Failure(check, f"no index for a valid file: {error}", path)
        for path, error in refused
        if _holds_all(lake, path, columns)
    ]


def _build(ctx: Context, checks: set[str]) -> tuple[list[Failure], bool, bool]:
    """Build the sidecar and lake indexes the checks need; the failures, and which built."""
    lake, plan = ctx.lake, ctx.case.index
    assert plan is not None
    columns = list(plan.columns)
    failures: list[Failure] = []
    sidecar = "sidecar" in checks
    if sidecar:
        try:
            builds = pba.build_index_sync(lake.sources, columns)
            refused = [(b.file, b.error) for b in builds if b.error is not None]
            failures += _refusals("sidecar_build", lake, refused, columns)
        except Exception as exc:
            failures.append(failure_of("sidecar_build", exc))
            sidecar = False
    lake_index = bool(checks & {"lake", "lake_lookup"})
    for mode in plan.lake_modes if lake_index else ():
        try:
            built = pba.build_lake_index_sync(str(lake.root), columns, mode=mode)
        except Exception as exc:
            failures.append(failure_of(f"lake_build_{mode}", exc))
            return failures, sidecar, False
        failures += _refusals(f"lake_build_{mode}", lake, built.errors.items(), columns)
    return failures, sidecar, lake_index


def run_index_checks(ctx: Context, paths: Sequence[Path], checks: set[str]) -> list[Failure]:
    """Build the indexes, change the lake as planned, then prune and look up through them."""
    case = ctx.case
    plan = case.index
    assert plan is not None
    failures, sidecar, lake_index = _build(ctx, checks)
    now = change_lake(case, ctx.lake.root, paths)
    if sidecar:
        after = open_lake(case, ctx.lake.root, now)
        failures += prune_on(
            ctx, "sidecar", after, case.predicate, use_index="sidecar",
            row_groups=plan.sidecar_row_groups,
        )  # fmt: skip
    # The lake index is read at the lake's root: the entry points get the directory.
    listed = open_lake(replace(case, sources="dir"), ctx.lake.root, now)
    if lake_index and "lake" in checks:
        failures += prune_on(
            ctx, "lake", listed, case.predicate, use_index="lake",
            row_groups=plan.lake_row_groups,
        )  # fmt: skip
    if lake_index and "lake_lookup" in checks:
        failures += lookup_on(ctx, "lake_lookup", listed, "sync")
    return failures
