"""Sidecar and lake indexes: built on the lake, the lake changed, then pruned through them.

A file replaced, added or removed after indexing must be answered for by its own content:
an index that no longer describes a file may never prune it. A valid file that holds every
indexed column must get its index (the docs: every type but BOOLEAN can be indexed).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pybloom_async as pba

from .checks import Context, Failure, Lake, failure_of, lookup_on, open_lake, prune_on, two_phase
from .oracle import canonical_rows
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
    lake_index = bool(checks & {"lake", "lake_lookup", "lake_lookup_same"})
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
    before = set(os.listdir(ctx.lake.root))
    failures, sidecar, lake_index = _build(ctx, checks)
    built = sorted(set(os.listdir(ctx.lake.root)) - before)  # the indexes' own entries
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
    if lake_index and "lake_lookup_same" in checks:
        failures += _same_without_index(ctx, listed, built)
    return failures


def _dataset_schema(ctx: Context, lake: Lake) -> Any:
    """pruned_dataset's columns and types, or the error it raised (the index must change
    neither: the files it rules out count for the schema, as in a lookup)."""
    try:
        got = pba.pruned_dataset_sync(lake.sources, ctx.case.predicate)
    except pba.PyBloomError as exc:
        return type(exc).__name__
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"[:200]
    return [(f.name, str(f.type)) for f in got.schema]


def _answer(ctx: Context, lake: Lake) -> tuple[Any, Any, str | None, Any]:
    """lookup's columns and types, its rows, or the error it raised; pruned_dataset's."""
    args = ctx.case.lookup
    kwargs: dict[str, Any] = {"page_index": args.page_index}
    if args.columns is not None:
        kwargs["columns"] = list(args.columns)
    if lake.garbage:
        kwargs["on_error"] = "skip"
    try:
        with two_phase(args.two_phase):
            got = pba.lookup_sync(lake.sources, ctx.case.predicate, **kwargs)
    except pba.PyBloomError as exc:
        return None, None, type(exc).__name__, _dataset_schema(ctx, lake)
    except Exception as exc:
        return None, None, f"{type(exc).__name__}: {exc}"[:200], _dataset_schema(ctx, lake)
    schema = [(f.name, str(f.type)) for f in got.schema]
    return schema, canonical_rows(got, got.column_names), None, _dataset_schema(ctx, lake)


def _same_without_index(ctx: Context, lake: Lake, built: Sequence[str]) -> list[Failure]:
    """The index never changes the answer: lookup through the lake index gives the columns,
    types, rows and error of lookup with the indexes moved out of the lake."""
    with_index = _answer(ctx, lake)
    aside = lake.root.parent / "indexes-aside"
    aside.mkdir(exist_ok=True)
    for name in built:
        shutil.move(lake.root / name, aside / name)
    try:
        without = _answer(ctx, lake)
    finally:
        for name in built:
            shutil.move(aside / name, lake.root / name)
    if with_index == without:
        return []
    labels = ("columns and types", "rows", "error", "pruned_dataset's schema")
    what = next(label for label, a, b in zip(labels, with_index, without, strict=True) if a != b)
    pairs = zip(labels, with_index, without, strict=True)
    detail = "\n".join(
        f"  {label}: with the index {str(a)[:300]}, without {str(b)[:300]}"
        for label, a, b in pairs if a != b
    )  # fmt: skip
    return [Failure("lake_lookup_same", f"the lake index changes the answer's {what}", detail)]
