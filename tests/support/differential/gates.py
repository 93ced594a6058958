"""Known product bugs, one switch each: what the generator steers clear of while they are open.

The bounded run in the suite uses :data:`KNOWN_BUGS`; as each fix merges, its line in
:data:`KNOWN` is deleted (the one switch: its gate in ``GATES`` then never runs, and its
strict-xfail test in tests/property/ goes away) and the run covers that ground again. A
known bug's gate may also be opened for one run: ``PYBLOOM_DIFF_KNOWN_BUGS``
(``run_long.py --look-for-known``). Nothing here weakens a comparison:
each gate changes what a case *is* (a file layout, a literal, which calls it makes), and
the case records the gates it went through (``Case.gated``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterator
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction
from typing import Any

from pybloom_async.predicate import (
    COMPARISONS,
    And,
    Between,
    Compare,
    Comparison,
    Eq,
    In,
    IsNotNull,
    IsNull,
    Not,
    NotIn,
    Or,
    Predicate,
)

from .kinds import KINDS, leaf_kind
from .spec import Case, FileSpec

#: name -> the bug, as it shows. Delete a line as its fix merges.
KNOWN: dict[str, str] = {}


def _from_environment() -> frozenset[str]:
    """``PYBLOOM_DIFF_KNOWN_BUGS``: ``none`` (look for every bug), or names to steer clear of
    (comma-separated); unset: all of :data:`KNOWN`."""
    raw = os.environ.get("PYBLOOM_DIFF_KNOWN_BUGS")
    if raw is None:
        return frozenset(KNOWN)
    names = frozenset(n.strip() for n in raw.split(",") if n.strip() and n.strip() != "none")
    unknown = names - set(KNOWN)
    if unknown:
        raise ValueError(f"PYBLOOM_DIFF_KNOWN_BUGS names unknown bugs: {sorted(unknown)}")
    return names


KNOWN_BUGS: frozenset[str] = _from_environment()


#: Column names the text form reads as keywords.
KEYWORDS = frozenset({"in", "null", "and", "or", "nan", "true", "false", "inf"})


def _map_files(case: Case, fn: Callable[[FileSpec], FileSpec]) -> Case:
    """``fn`` applied to every file of the case, the index plan's too."""
    index = case.index
    if index is not None:
        index = replace(
            index,
            replacement=fn(index.replacement) if index.replacement else None,
            added=fn(index.added) if index.added else None,
        )
    return replace(case, files=tuple(fn(f) for f in case.files), index=index)


def _rename(case: Case, names: dict[str, str]) -> Case:
    """The case with columns renamed (files, predicate, projection, indexed columns)."""

    def path(p: str) -> str:
        head, _, tail = p.partition(".")
        return names.get(head, head) + ("." + tail if tail else "")

    def file(f: FileSpec) -> FileSpec:
        columns = tuple(replace(c, name=names.get(c.name, c.name)) for c in f.columns)
        options = dict(f.options)
        if options.get("bloom_filter_options"):
            options["bloom_filter_options"] = {
                path(k): v for k, v in options["bloom_filter_options"].items()
            }
        return replace(f, columns=columns, options=tuple(sorted(options.items())))

    case = _map_files(case, file)
    predicate = map_columns(case.predicate, path)
    lookup = case.lookup
    if lookup.columns is not None:
        lookup = replace(lookup, columns=tuple(path(c) for c in lookup.columns))
    index = case.index
    if index is not None:
        index = replace(index, columns=tuple(path(c) for c in index.columns))
    return replace(case, predicate=predicate, lookup=lookup, index=index)


def map_columns(p: Predicate, fn: Callable[[str], str]) -> Predicate:
    """``p`` with each column path ``c`` replaced by ``fn(c)``."""
    if isinstance(p, (And, Or)):
        return type(p)(tuple(map_columns(c, fn) for c in p.children))
    if isinstance(p, Not):
        return Not(map_columns(p.child, fn))
    if isinstance(p, COMPARISONS):
        return replace(p, column=fn(p.column))
    raise NotImplementedError(type(p).__name__)


# ---- predicates ---------------------------------------------------------------------------------


def leaves_of(p: Predicate) -> Iterator[Comparison]:
    """Every comparison of the tree (under AND, OR and NOT)."""
    if isinstance(p, COMPARISONS):
        yield p
    for child in (p.child,) if isinstance(p, Not) else getattr(p, "children", ()):
        yield from leaves_of(child)


def literals_of(leaf: Predicate) -> tuple[Any, ...]:
    """The literals of one comparison."""
    if isinstance(leaf, (In, NotIn)):
        return leaf.values
    if isinstance(leaf, Between):
        return (leaf.low, leaf.high)
    if isinstance(leaf, (IsNotNull, IsNull)):
        return ()
    assert isinstance(leaf, (Eq, Compare))
    return (leaf.value,)


def map_literals(p: Predicate, fn: Callable[[str, Any], Any]) -> Predicate:
    """``p`` with each literal ``v`` of column ``c`` replaced by ``fn(c, v)``."""
    if isinstance(p, (And, Or)):
        return type(p)(tuple(map_literals(c, fn) for c in p.children))
    if isinstance(p, Not):
        return Not(map_literals(p.child, fn))
    if isinstance(p, (IsNotNull, IsNull)):
        return p
    if isinstance(p, (Eq, Compare)):
        return replace(p, value=fn(p.column, p.value))
    if isinstance(p, (In, NotIn)):
        return replace(p, values=tuple(fn(p.column, v) for v in p.values))
    if isinstance(p, Between):
        return replace(p, low=fn(p.column, p.low), high=fn(p.column, p.high))
    raise NotImplementedError(type(p).__name__)


_MAX = {"float16": 65504.0, "float32": 3.4028234663852886e38, "float64": 1.7976931348623157e308}


def _beyond(value: object, kinds: set[str]) -> bool:
    """A finite number that rounds to an infinity in one of the float ``kinds``."""
    if isinstance(value, bool) or not isinstance(value, (float, Decimal)):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    if isinstance(value, Decimal) and not value.is_finite():
        return False
    magnitude = abs(Fraction(value))  # exact, for a Decimal as for a float
    return any(k in _MAX and magnitude > Fraction(_MAX[k]) for k in kinds)


def _leaf_kinds(case: Case) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for f in case.files:
        for c in f.columns:
            kind = KINDS[c.kind]
            paths = [f"{c.name}.{child}" for child, _ in kind.children] or [c.name]
            for path in paths:
                found.setdefault(path, set()).add(leaf_kind(kind, path).name)
    return found


def _has_in_null(p: Predicate) -> bool:
    return any(isinstance(leaf, In) and None in leaf.values for leaf in leaves_of(p))


# ---- the steering -------------------------------------------------------------------------------

LOOKUP_CHECKS = frozenset({"lookup_sync", "lookup_async", "lookup_batches", "lookup_text",
                           "lake_lookup", "table_lookup"})  # fmt: skip
TEXT_CHECKS = frozenset({"prune_text", "lookup_text", "text_round_trip"})
LAKE_CHECKS = frozenset({
    "prune", "prune_async", "prune_text", "lookup_sync", "lookup_async", "lookup_batches",
    "lookup_text", "dataset_pyarrow", "dataset_duckdb", "text_round_trip",
})  # fmt: skip
LAKE_INDEX_CHECKS = frozenset({"lake", "lake_lookup", "lake_lookup_same"})


def _without(case: Case, checks: frozenset[str]) -> tuple[Case, bool]:
    """The case without ``checks`` (and whether it had any of them)."""
    return replace(case, checks=case.checks - checks), bool(case.checks & checks)


def _keyword_column(case: Case) -> tuple[Case, bool]:
    keywords = {c.name for f in case.files for c in f.columns if c.name.lower() in KEYWORDS}
    return (_rename(case, {k: f"{k}_col" for k in keywords}), True) if keywords else (case, False)


def _struct_child_promotion(case: Case) -> tuple[Case, bool]:
    kinds = {(c.name, c.kind) for f in case.files for c in f.columns}
    mixed = {name for name, kind in kinds if kind == "struct64" and (name, "struct") in kinds}

    def narrow(f: FileSpec) -> FileSpec:
        columns = tuple(replace(c, kind="struct") if c.name in mixed else c for c in f.columns)
        return replace(f, columns=columns)

    return (_map_files(case, narrow), True) if mixed else (case, False)


def _respelled_path(case: Case) -> tuple[Case, bool]:
    applies = case.sources == "respelled"
    return (replace(case, sources="list"), True) if applies else (case, False)


def _stale_same_stat(case: Case) -> tuple[Case, bool]:
    if case.index is None or case.index.state != "replaced_same_stat":
        return case, False
    return replace(case, index=replace(case.index, state="replaced")), True


def _in_null_page_index(case: Case) -> tuple[Case, bool]:
    if not case.lookup.page_index or not _has_in_null(case.predicate):
        return case, False
    return replace(case, lookup=replace(case.lookup, page_index=False)), True


def _zero_row_lookup(case: Case) -> tuple[Case, bool]:
    if not any(f.layout == "zero_rows" for f in case.files):
        return case, False
    return _without(case, LOOKUP_CHECKS)


def _text_out_of_range(case: Case) -> tuple[Case, bool]:
    """An out-of-range Decimal becomes 1.5 (it raises in both forms); an out-of-range float
    keeps its col() form, without the text form's checks."""
    kinds = _leaf_kinds(case)
    beyond = [
        v for leaf in leaves_of(case.predicate) for v in literals_of(leaf)
        if _beyond(v, kinds.get(leaf.column, set()))
    ]  # fmt: skip
    if not beyond:
        return case, False

    def fix(column: str, v: Any) -> Any:
        out = isinstance(v, Decimal) and _beyond(v, kinds.get(column, set()))
        return Decimal("1.5") if out else v

    case = replace(case, predicate=map_literals(case.predicate, fix))
    return _without(case, TEXT_CHECKS)[0], True


def _uuid_lookup(case: Case) -> tuple[Case, bool]:
    kinds = _leaf_kinds(case)
    if not any("uuid" in kinds.get(leaf.column, set()) for leaf in leaves_of(case.predicate)):
        return case, False
    return _without(case, LOOKUP_CHECKS)


def _lake_lookup_default_columns(case: Case) -> tuple[Case, bool]:
    if case.lookup.columns is not None:
        return case, False
    return _without(case, frozenset({"lake_lookup"}))


def _lake_lookup_column_check(case: Case) -> tuple[Case, bool]:
    columns = [*(leaf.column for leaf in leaves_of(case.predicate)), *(case.lookup.columns or ())]
    if all(_everywhere(case, c) for c in columns):
        return case, False
    return _without(case, frozenset({"lake_lookup"}))


def _struct_view_promotion(case: Case) -> tuple[Case, bool]:
    if case.family != "delta" or not any(KINDS[c.kind].children for c in case.files[0].columns):
        return case, False
    return _without(case, frozenset({"table_dataset"}))


def _empty_files(case: Case) -> list[FileSpec]:
    files = _lake_after_index(case)
    return [f for f in files if f.layout in ("zero_rows", "zero_row_groups")]


def _lake_zero_row_groups(case: Case) -> tuple[Case, bool]:
    if case.index is None or not any(f.layout == "zero_row_groups" for f in _empty_files(case)):
        return case, False
    return _without(case, LAKE_INDEX_CHECKS)


def _lake_build_zero_row(case: Case) -> tuple[Case, bool]:
    """An index over a 0-row file's decimal or dictionary column: sidecar and lake alike."""
    if case.index is None:
        return case, False
    indexed = {c.split(".")[0] for c in case.index.columns}
    risky = [
        c for f in _empty_files(case) for c in f.columns
        if c.name in indexed and (c.kind.startswith("dec") or c.kind == "string_dict")
    ]  # fmt: skip
    return _without(case, LAKE_INDEX_CHECKS | {"sidecar"}) if risky else (case, False)


def _hive_repeated_key(case: Case) -> tuple[Case, bool]:
    """A key met twice on a path: the inner value dropped."""
    if not any(_repeated(f.folder) for f in case.files):
        return case, False
    return _map_files(case, lambda f: replace(f, folder=_outermost(f.folder))), True


def _repeated(folder: tuple[tuple[str, str | None], ...]) -> bool:
    return len({k for k, _ in folder}) < len(folder)


def _outermost(folder: tuple[tuple[str, str | None], ...]) -> tuple[tuple[str, str | None], ...]:
    return tuple(kv for j, kv in enumerate(folder) if all(k != kv[0] for k, _ in folder[:j]))


def _prune_typed_file_above_folders(case: Case) -> tuple[Case, bool]:
    """Partition types given and a file above the folders: prune not asked."""
    typed = case.lookup.partitioning is not None and case.sources in ("dir", "dir_and_file")
    above = any(not f.folder and f.layout != "garbage" for f in case.files)
    if not typed or not above or not any(f.folder for f in case.files):
        return case, False
    return _without(case, frozenset({"prune", "prune_async", "prune_text"}))


def _folder_split(case: Case) -> tuple[list[FileSpec], list[FileSpec]] | None:
    """A listed hive lake's Parquet files: those its folders leave, those they rule out
    (None: not listed from its directory, or a literal not of a partition column's type)."""
    from .folders import folder_types, ruled_out_by_folder
    from .oracle import LiteralTypeError

    if case.sources not in ("dir", "dir_and_file") or not any(f.folder for f in case.files):
        return None
    files = [f for f in case.files if f.layout != "garbage"]
    given = dict(case.lookup.partitioning) if case.lookup.partitioning is not None else None
    types = folder_types((f.folder for f in case.files), given)
    read: list[FileSpec] = []
    out: list[FileSpec] = []
    try:
        for f in files:
            ruled = bool(f.folder) and ruled_out_by_folder(case.predicate, f.folder, types)
            (out if ruled else read).append(f)
    except LiteralTypeError:
        return None
    return read, out


def _column_in_later_partitions(case: Case) -> tuple[Case, bool]:
    """A column (of the predicate, or asked) that only files the folders rule out have."""
    split = _folder_split(case)
    if split is None or not split[0] or not split[1]:
        return case, False
    read, out = split
    names = [*(leaf.column.split(".")[0] for leaf in leaves_of(case.predicate)),
             *(case.lookup.columns or ())]  # fmt: skip
    partition = {k for f in case.files for k, _ in f.folder}
    later = [
        n for n in names
        if n not in partition and not any(c.name == n for f in read for c in f.columns)
        and any(c.name == n for f in out for c in f.columns)
    ]  # fmt: skip
    return _without(case, LAKE_CHECKS - {"text_round_trip"}) if later else (case, False)


def _empty_answer_schema(case: Case) -> tuple[Case, bool]:
    """Folders that rule out every file: an empty lookup or dataset."""
    split = _folder_split(case)
    if split is None or split[0] or not split[1]:
        return case, False
    return _without(case, LOOKUP_CHECKS | {"dataset_pyarrow", "dataset_duckdb"})


def _mixed_writers(case: Case) -> tuple[Case, bool]:
    """A DuckDB file with a column that some file has in a type DuckDB stores another way:
    the column left out of it (as the generator does by default)."""

    files = _lake_after_index(case)
    odd = {c.name for f in files for c in f.columns if "duckdb" not in KINDS[c.kind].writers}

    def plain(f: FileSpec) -> FileSpec:
        if f.writer != "duckdb":
            return f
        kept = tuple(c for c in f.columns if c.name not in odd)
        if kept or not f.columns:
            return replace(f, columns=kept)
        return replace(f, writer="pyarrow", options=(("row_group_size", 64),))  # none left

    changed = _map_files(case, plain)
    return changed, changed.files != case.files


def _lake_index_columns(case: Case) -> tuple[Case, bool]:
    """A lake index with ``columns=`` over a column whose type may differ between files (its
    kinds differ, or both writers wrote it)."""
    if case.lookup.columns is None or "lake_lookup_same" not in case.checks:
        return case, False
    kinds: dict[str, set[str]] = {}
    for f in _lake_after_index(case):
        for c in f.columns:  # DuckDB reads back some kinds as others (decimal64: decimal128)
            kinds.setdefault(c.name, set()).add(f"{c.kind}@{f.writer}")
    if not any(len(k) > 1 for k in kinds.values()):
        return case, False
    return _without(case, frozenset({"lake_lookup_same"}))


def _iceberg_field_id(case: Case) -> tuple[Case, bool]:
    """An Iceberg column renamed, or dropped and re-added: neither step taken."""
    plan = case.table
    if plan is None or not {"rename", "drop_readd"} & set(plan.evolve):
        return case, False
    renamed = plan.evolved[0]
    evolve = tuple(s for s in plan.evolve if s not in ("rename", "drop_readd"))
    plan = replace(plan, evolve=evolve, evolved=("", ""))

    def back(path: str) -> str:
        head, dot, tail = path.partition(".")
        return f"{renamed}{dot}{tail}" if renamed and head == f"{renamed}_r" else path

    return replace(case, table=plan, predicate=map_columns(case.predicate, back)), True


def _iceberg_float_promotion(case: Case) -> tuple[Case, bool]:
    """An Iceberg float promoted to double: left a float."""
    plan = case.table
    if plan is None or "promote_float" not in plan.evolve:
        return case, False
    evolve = tuple(s for s in plan.evolve if s != "promote_float")
    return replace(case, table=replace(plan, evolve=evolve)), True


def _table_folder_as_path(case: Case) -> tuple[Case, bool]:
    """A Delta or Iceberg table's folder given as a plain path: not asked."""
    return _without(case, frozenset({"table_folder"}))


def _checked_at_run_time(case: Case) -> tuple[Case, bool]:
    return case, False  # see skip_table_dataset


#: Each known bug's gate: the case steered clear of it, and whether it had to be.
GATES: dict[str, Callable[[Case], tuple[Case, bool]]] = {
    "keyword_column": _keyword_column,
    "struct_child_promotion": _struct_child_promotion,
    "respelled_path": _respelled_path,
    "stale_same_stat": _stale_same_stat,
    "in_null_page_index": _in_null_page_index,
    "zero_row_lookup": _zero_row_lookup,
    "text_out_of_range": _text_out_of_range,
    "uuid_lookup": _uuid_lookup,
    "lake_lookup_default_columns": _lake_lookup_default_columns,
    "lake_lookup_column_check": _lake_lookup_column_check,
    "struct_view_promotion": _struct_view_promotion,
    "lake_zero_row_groups": _lake_zero_row_groups,
    "lake_build_zero_row": _lake_build_zero_row,
    "table_dataset_empty": _checked_at_run_time,
    "mixed-writers": _mixed_writers,  # before the folders' gates: it takes columns out
    "hive-repeated-key": _hive_repeated_key,
    "prune-typed-file-above-folders": _prune_typed_file_above_folders,
    "column-in-later-partitions": _column_in_later_partitions,
    "empty-answer-schema": _empty_answer_schema,
    "lake-index-columns": _lake_index_columns,
    "iceberg-field-id": _iceberg_field_id,
    "iceberg-float-promotion": _iceberg_float_promotion,
    "table-folder-as-path": _table_folder_as_path,
}
assert set(KNOWN) <= set(GATES), "every known bug needs its gate"


def steer(case: Case, known: frozenset[str]) -> Case:
    """The case with each known bug's ground left out (recorded in ``gated``)."""
    gated: list[str] = []
    for name, gate in GATES.items():
        if name in known:
            case, applied = gate(case)
            if applied:
                gated.append(name)
    return replace(case, gated=tuple(gated))


def _everywhere(case: Case, path: str) -> bool:
    """Every Parquet file of the lake (before and after its change) has the leaf."""
    name = path.split(".")[0]
    return all(
        any(c.name == name for c in f.columns)
        for f in _lake_after_index(case) if f.layout != "garbage"
    )  # fmt: skip


def _lake_after_index(case: Case) -> list[Any]:
    files = list(case.files)
    if case.index is not None and case.index.added is not None:
        files.append(case.index.added)
    return files


def skip_table_dataset(known: frozenset[str], matches: int) -> bool:
    """While an empty table dataset loses its columns, only datasets with matches are checked."""
    return "table_dataset_empty" in known and matches == 0


__all__ = [
    "KEYWORDS",
    "KNOWN",
    "KNOWN_BUGS",
    "leaves_of",
    "literals_of",
    "map_columns",
    "map_literals",
    "skip_table_dataset",
    "steer",
]  # fmt: skip
