"""The seeded generator: ``generate_case(seed)`` gives the same case on every machine.

Tables drive it, so a new operator, layout or writer setting is one row:

* ``OPERATORS``, ``COMBINERS`` and ``NEGATION``: the predicate forms (the oracle's
  ``truth`` has the semantics of each; a new operator adds a row here and a rule there);
* ``LAYOUTS``: what a file is (rows, no rows, no row group, not Parquet);
* ``SOURCES``: how the files are named to the entry points;
* ``INDEX_STATES``: what happens to the lake after its indexes are built.

Known product bugs are avoided only through :data:`gates.KNOWN_BUGS`, one switch each, by
changing what is generated, never the comparison.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from pybloom_async.predicate import And, In, Not, Or, Predicate, col

from . import gates
from .evolution import evolve
from .kinds import KINDS, Kind, leaf_kind, leaves, round_float
from .shapes import evolved, mix_writers, widen_hive
from .spec import Case, ColumnData, FileSpec, IndexPlan, LookupArgs, TablePlan

Pick = Callable[[random.Random], Any]

# ---- tables ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Operator:
    """One predicate form over a column: ``build(rng, column, pick)`` makes it, ``pick``
    draws a literal for the column."""

    name: str
    weight: float
    build: Callable[[random.Random, str, Pick], Predicate]


def _values(rng: random.Random, pick: Pick) -> list[Any]:
    return [pick(rng) for _ in range(rng.randint(1, 5))]


OPERATORS: tuple[Operator, ...] = (
    Operator("=", 4, lambda rng, c, pick: col(c) == pick(rng)),
    Operator("<=>", 2, lambda rng, c, pick: col(c).eq_null_safe(pick(rng))),
    Operator("IN", 3, lambda rng, c, pick: col(c).isin(_values(rng, pick))),
    Operator("!=", 1.5, lambda rng, c, pick: col(c) != pick(rng)),
    Operator("<", 1, lambda rng, c, pick: col(c) < pick(rng)),
    Operator("<=", 1, lambda rng, c, pick: col(c) <= pick(rng)),
    Operator(">", 1, lambda rng, c, pick: col(c) > pick(rng)),
    Operator(">=", 1, lambda rng, c, pick: col(c) >= pick(rng)),
    Operator("BETWEEN", 1.5, lambda rng, c, pick: col(c).between(pick(rng), pick(rng))),
    Operator("NOT IN", 1.5, lambda rng, c, pick: ~col(c).isin(_values(rng, pick))),
    Operator("IS NULL", 0.5, lambda rng, c, pick: col(c).is_null()),
    Operator("IS NOT NULL", 0.5, lambda rng, c, pick: col(c).is_not_null()),
)
COMBINERS: tuple[tuple[str, float, Callable[..., Predicate]], ...] = (
    ("AND", 1, And.of),
    ("OR", 1, Or.of),
)
#: The chance that a node (a leaf or an AND/OR) comes under a NOT.
NEGATION = 0.15
#: layout -> weight (a lake of several files draws one per file).
LAYOUTS = {"data": 0.82, "zero_rows": 0.07, "zero_row_groups": 0.07, "garbage": 0.04}
#: The lake's shape: files side by side; below hive partition folders (``key=value``); or
#: columns added file after file (a schema that evolves). Drawn from a second generator of
#: the seed, after the rest of the case: a flat case is the one the seed always gave.
SHAPES = {"flat": 0.7, "hive": 0.18, "evolving": 0.12}
#: The values a partition key's folders take, by what they infer to (every value listed
#: decides: int64, date32, timestamp[us], else string).
PARTITION_VALUES: dict[str, tuple[str, ...]] = {
    "int": ("0", "7", "-3", "2026", "12"),
    "date": ("2026-11-01", "2026-11-02", "1999-12-31"),
    "timestamp": ("2026-11-01 10:00:00", "2026-11-02T11:30:00.5"),
    "text": ("DE", "a b", "x=y", "a/b", "ü", "", "100%", "12", "ünï %2F"),
    "mixed": ("7", "2026-11-01", "DE", "007"),
}
SOURCES = {"list": 0.45, "dir": 0.3, "dir_and_file": 0.1, "respelled": 0.15}
INDEX_STATES = {
    "fresh": 0.3, "replaced": 0.2, "replaced_same_stat": 0.2, "added": 0.15, "removed": 0.15,
}  # fmt: skip
FAMILIES = {"lake": 0.84, "delta": 0.08, "iceberg": 0.08}
#: Every check a lake case can run (a table case runs ``TABLE_CHECKS``).
LAKE_CHECKS = gates.LAKE_CHECKS
INDEX_CHECKS = frozenset({"sidecar", "lake", "lake_lookup", "lake_lookup_same"})
TABLE_CHECKS = frozenset(
    {"table_prune", "table_lookup", "table_dataset", "table_lake", "table_folder"}
)
#: Kinds a Delta table may be partitioned by.
PARTITION_KINDS = frozenset(
    {"int8", "int16", "int32", "int64", "string", "large_string", "date32", "bool"}
)
#: Column names that need quoting in the text form, and SQL words.
ODD_NAMES = ("a b", "x-y", "Ünï", "it's", "`tick`")
KEYWORD_NAMES = ("in", "null", "and", "nan", "true")


def choose(rng: random.Random, weights: dict[str, float]) -> str:
    names = list(weights)
    return rng.choices(names, weights=[weights[n] for n in names])[0]


# ---- columns and values ------------------------------------------------------------------------

#: Kinds a lake column may take per file, narrowest first (values come from the first).
GROUPS: dict[str, tuple[str, ...]] = {
    "sint": ("int8", "int16", "int32", "int64", "int64_dict"),
    "float": ("float32", "float64"),
    "dec": ("dec9", "dec18"),
    "text": ("string", "large_string", "string_view", "string_dict"),
    "bin": ("binary", "large_binary"),
    "struct": ("struct", "struct64"),
}


@dataclass(frozen=True)
class LakeColumn:
    """A column of the lake: per-file kinds (``variants``), the pool its values come from."""

    name: str
    variants: tuple[str, ...]
    pool: dict[str, list[Any]]  # leaf path (or the name) -> stored values
    null_share: float

    @property
    def base(self) -> Kind:
        return KINDS[self.variants[0]]


def _variants(rng: random.Random, kind: Kind, allowed: Callable[[str], bool]) -> tuple[str, ...]:
    group = GROUPS.get(kind.group, ())
    if not group or rng.random() < 0.75:
        return (kind.name,)
    others = [k for k in group if k != kind.name and allowed(k)]
    chosen = {kind.name, *rng.sample(others, min(len(others), rng.randint(1, 2)))}
    return tuple(k for k in group if k in chosen)  # narrowest first


def _pool(rng: random.Random, kind: Kind, size: int) -> list[Any]:
    values = kind.pool(rng, size)
    return values or kind.pool(rng, max(size, 2))


def _lake_column(
    rng: random.Random, name: str, kind: Kind, allowed: Callable[[str], bool]
) -> LakeColumn:
    variants = _variants(rng, kind, allowed)
    narrow = KINDS[variants[0]]
    size = rng.choice([1, 2, 4, 8, 30])
    pool: dict[str, list[Any]] = {}
    if narrow.children:
        for child, child_kind in narrow.children:
            pool[f"{name}.{child}"] = _pool(rng, KINDS[child_kind], size)
    else:
        pool[name] = _pool(rng, narrow, size)
        if "float32" in variants:
            pool[name] = [round_float(v, "f") for v in pool[name]]
    null_share = rng.choice([0.0, 0.0, 0.1, 0.3, 1.0])
    return LakeColumn(name, variants, pool, null_share)


def _value(rng: random.Random, column: LakeColumn) -> Any:
    if rng.random() < column.null_share:
        return None
    kind = column.base
    if kind.children:
        return {
            child: None
            if rng.random() < 0.15
            else rng.choice(column.pool[f"{column.name}.{child}"])
            for child, _ in kind.children
        }
    return rng.choice(column.pool[column.name])


# ---- files -----------------------------------------------------------------------------------


def _pyarrow_options(
    rng: random.Random, columns: Sequence[ColumnData], rows: int, int96: bool
) -> dict[str, Any]:
    groups = rng.randint(1, 5)
    options: dict[str, Any] = {"row_group_size": max(1, math.ceil(rows / groups))}
    bloomable = [
        path for c in columns for path in leaves(c.name, KINDS[c.kind])
        if leaf_kind(KINDS[c.kind], path).bloom
    ]  # fmt: skip
    if bloomable and rng.random() < 0.8:
        chosen = [p for p in bloomable if rng.random() < 0.8]
        options["bloom_filter_options"] = {
            p: {
                "ndv": rng.choice([1, 4, 16, 100, 1000]),
                "fpp": rng.choice([0.5, 0.1, 0.01, 0.001]),
            }
            for p in chosen
        }
    if rng.random() < 0.5:
        options["write_page_index"] = True
    if rng.random() < 0.4:
        options["data_page_size"] = rng.choice([64, 256, 1024])
        options["write_batch_size"] = rng.choice([1, 4, 16, 64])
    if rng.random() < 0.3:
        options["use_dictionary"] = False
    if rng.random() < 0.15:
        options["write_statistics"] = False
    options["compression"] = rng.choice(["NONE", "SNAPPY", "ZSTD"])
    if rng.random() < 0.5:
        options["store_decimal_as_integer"] = True
    if int96:  # a lake-wide choice: INT96 reads back as timestamp[ns], another type
        options["use_deprecated_int96_timestamps"] = True
    if rng.random() < 0.3:
        options["data_page_version"] = "2.0"
    return options


def _duckdb_options(rng: random.Random, rows: int) -> dict[str, Any]:
    groups = rng.randint(1, 4)
    options: dict[str, Any] = {"ROW_GROUP_SIZE": max(1, math.ceil(rows / groups))}
    options["COMPRESSION"] = rng.choice(["uncompressed", "snappy", "zstd"])
    if rng.random() < 0.3:
        options["BLOOM_FILTER_FALSE_POSITIVE_RATIO"] = rng.choice([0.5, 0.1, 0.01])
    # No PARQUET_VERSION V2: DuckDB 2.0's V2 files use DELTA_BINARY_PACKED pages that pyarrow
    # 26 cannot decode ("InitBlock EOF", e.g. UINTEGER, BIGINT in a struct): the oracle (and
    # any pyarrow reader, the product's lookup too) cannot read them; not the product's matter.
    return options


def _file(
    rng: random.Random, name: str, layout: str, lake: Sequence[LakeColumn], writer: str,
    table: bool = False, int96: bool = False,
) -> FileSpec:  # fmt: skip
    if layout == "garbage":
        return FileSpec(name, layout, "none", (), ())
    if not any(writer in KINDS[k].writers for c in lake for k in c.variants):
        writer = "pyarrow"
        layout = "zero_rows" if layout == "zero_row_groups" else layout
    rows = 0 if layout != "data" else rng.choice([1, 3, 10, 40, 100, 250])
    columns: list[ColumnData] = []
    for i, column in enumerate(lake):
        kinds = [k for k in column.variants if writer in KINDS[k].writers]
        last_chance = not columns and i == len(lake) - 1
        if not kinds or (not table and not last_chance and rng.random() < 0.08):
            continue  # this file lacks the column
        values = tuple(_value(rng, column) for _ in range(rows))
        columns.append(ColumnData(column.name, rng.choice(kinds), values))
    if not columns:  # the writer takes none of the kinds the last column can have
        layout = "zero_rows" if layout == "zero_row_groups" else layout
        return _file(rng, name, layout, lake, "pyarrow", table, int96)
    if rows > 1 and rng.random() < 0.4:
        key = rng.randrange(len(columns))
        order = sorted(range(rows), key=lambda i: _sort_key(columns[key].values[i]))
        columns = [replace(c, values=tuple(c.values[i] for i in order)) for c in columns]
    if writer == "duckdb":
        options = _duckdb_options(rng, rows)
    else:
        options = _pyarrow_options(rng, columns, rows, int96 and not table)
    return FileSpec(name, layout, writer, tuple(sorted(options.items())), tuple(columns))


def _numbered(spec: FileSpec, index: int) -> FileSpec:
    """A table's file with its ``id`` column numbering its rows across the table."""
    columns = tuple(
        replace(c, values=tuple(index * 1000 + j for j in range(len(c.values))))
        if c.name == "id" else c
        for c in spec.columns
    )  # fmt: skip
    return replace(spec, columns=columns)


def _sort_key(value: Any) -> tuple[int, str]:
    return (0, "") if value is None else (1, repr(value))


# ---- literals and predicates --------------------------------------------------------------------


def _picker(column: LakeColumn, path: str) -> Pick:
    kind = leaf_kind(column.base, path)
    pool = column.pool.get(path, [])
    floats = kind.name.startswith("float")

    def pick(rng: random.Random) -> Any:
        roll = rng.random()
        if roll < 0.1:
            return None
        if floats and roll < 0.2:
            return rng.choice([0.0, -0.0, math.nan, Decimal("-0.0"), math.inf])
        if pool and roll < 0.65:
            return kind.literal(rng, rng.choice(pool))
        extra = list(kind.absent(rng)) + list(kind.edges)
        if extra:
            return rng.choice(extra)
        return kind.literal(rng, rng.choice(pool)) if pool else None

    return pick


def random_predicate(rng: random.Random, pickers: dict[str, Pick], depth: int = 0) -> Predicate:
    """A tree of at most three levels of AND/OR over OPERATORS' leaves, some under NOT."""
    if depth < 2 and rng.random() < (0.45 if depth == 0 else 0.25):
        _, _, combine = rng.choices(COMBINERS, weights=[c[1] for c in COMBINERS])[0]
        children = [random_predicate(rng, pickers, depth + 1) for _ in range(rng.randint(2, 3))]
        node = combine(*children)
    else:
        column = rng.choice(sorted(pickers))
        op = rng.choices(OPERATORS, weights=[o.weight for o in OPERATORS])[0]
        node = op.build(rng, column, pickers[column])
    return Not(node) if rng.random() < NEGATION else node


# ---- cases -----------------------------------------------------------------------------------


def _lake_columns(rng: random.Random, family: str) -> list[LakeColumn]:
    def allowed(kind: str) -> bool:
        return family == "lake" or family in KINDS[kind].tables

    candidates = sorted(k for k in KINDS if allowed(k) and KINDS[k].drawn)
    columns: list[LakeColumn] = []
    used: set[str] = set()
    for i in range(rng.randint(1, 5)):
        name = f"c{i}"
        roll = rng.random()
        if family == "lake" and roll < 0.05:
            name = rng.choice(ODD_NAMES)
        elif family == "lake" and roll < 0.08:
            name = rng.choice(KEYWORD_NAMES)
        if name in used:
            name = f"c{i}"
        used.add(name)
        kind = KINDS[rng.choice(candidates)]
        columns.append(
            _lake_column(rng, name, kind, allowed if family == "lake" else (lambda k: False))
        )
    if family != "lake":
        columns.insert(0, LakeColumn("id", ("int64",), {"id": list(range(6000))}, 0.0))
    return columns


def generate_case(
    seed: int, family: str | None = None, known: frozenset[str] | None = None
) -> Case:
    """The case of ``seed`` (``family``: ``lake``, ``delta`` or ``iceberg``; drawn when None).

    ``known``: the known-bug classes to steer clear of (default :data:`gates.KNOWN_BUGS`).
    """
    rng = random.Random(seed)
    drawn = choose(rng, FAMILIES)
    family = family or drawn
    lake = _lake_columns(rng, family)
    int96 = family == "lake" and rng.random() < 0.08  # every file (DuckDB writes no INT96)
    files = []
    for i in range(rng.randint(1, 6)):
        layout = choose(rng, LAYOUTS) if family == "lake" else "data"
        if (family == "lake" and layout == "zero_row_groups" and not int96) or (
            family == "lake" and layout == "data" and rng.random() < 0.25 and not int96
        ):
            writer = "duckdb"
        else:
            writer = "pyarrow"
            layout = "zero_rows" if layout == "zero_row_groups" else layout
        files.append(_file(rng, f"part-{i}.parquet", layout, lake, writer, family != "lake", int96))
    if all(f.layout == "garbage" for f in files):
        files[0] = _file(rng, files[0].name, "data", lake, "pyarrow", int96=int96)
    if family != "lake":
        files = [_numbered(f, i) for i, f in enumerate(files)]
    present = {c.name for f in files for c in f.columns}
    pickers = {
        path: _picker(column, path)
        for column in lake if column.name in present
        for path in leaves(column.name, column.base)
    }  # fmt: skip
    predicate = random_predicate(rng, pickers)
    readable = [f for f in files if f.layout != "garbage"]
    names = sorted({c.name for f in readable for c in f.columns})
    columns = None
    if rng.random() < 0.4:
        columns = tuple(rng.sample(names, rng.randint(1, len(names))))
    lookup = LookupArgs(
        columns=columns,
        page_index=rng.random() < 0.7,
        max_fetch_bytes=rng.choice([None, None, 1, 4096]),
        backend=rng.choice(["asyncio", "trio"]),
    )
    case = Case(
        seed=seed,
        family=family,
        files=tuple(files),
        predicate=predicate,
        sources=choose(rng, SOURCES) if family == "lake" else "list",
        lookup=lookup,
    )
    if family == "lake":
        case = replace(case, checks=LAKE_CHECKS, index=_index_plan(rng, case, lake))
        if case.index is not None:
            case = replace(case, checks=case.checks | INDEX_CHECKS)
        case = _shaped(case, random.Random(seed * 7919 + 11))
    else:
        case = replace(case, checks=TABLE_CHECKS, table=_table_plan(rng, family, case))
        case = evolve(_aimed_at_deletes(seed, case))
        # Drawn from a generator of its own: the table's lookups in one or two phases.
        two = random.Random(seed * 7919 + 23).choice([None, True, False])
        case = replace(case, lookup=replace(case.lookup, two_phase=two))
    return gates.steer(case, gates.KNOWN_BUGS if known is None else known)


def _aimed_at_deletes(seed: int, case: Case) -> Case:
    """A table case with deletes asks, more often than not, for the deleted rows' ids too
    (and a live one's), so the deletes decide rows.

    Drawn from a generator of its own: the cases of other seeds stay as they were.
    """
    plan = case.table
    if plan is None or plan.delete is None or not plan.deleted_rows:
        return case
    rng = random.Random(seed * 7919 + 17)
    if rng.random() >= 0.6:
        return case
    ids = case.files[0].columns[0].values
    wanted = [ids[i] for i in plan.deleted_rows]
    live = [v for i, v in enumerate(ids) if i not in plan.deleted_rows]
    if live:
        wanted.append(rng.choice(live))
    return replace(case, predicate=Or((case.predicate, In("id", tuple(wanted)))))


def _shaped(case: Case, rng: random.Random) -> Case:
    """The lake given its shape (see ``SHAPES``); two_phase drawn too; now and then a
    column both writers write, each its way (``shapes.mix_writers``)."""
    lookup = replace(case.lookup, two_phase=rng.choice([None, None, True, False]))
    case = mix_writers(replace(case, lookup=lookup))
    shape = choose(rng, SHAPES)
    if shape == "evolving" and len(case.files) > 1:
        case = replace(case, files=evolved(rng, case.files), shape="evolving")
        present = {c.name for f in case.files if f.layout != "garbage" for c in f.columns}
        if case.index and any(c.split(".")[0] not in present for c in case.index.columns):
            case = replace(case, index=None, checks=LAKE_CHECKS)  # an indexed column is gone
        return case
    if shape == "hive":
        return _hive(rng, case)
    return case


def _hive(rng: random.Random, case: Case) -> Case:
    """Files below ``key=value`` folders (a few above them), named through the directory,
    and the predicate joined to leaves on the partition columns."""
    # A column of the files may be a partition column too (the folder's value wins): one
    # of integers or text, whose literals read the same in the partition column's type.
    alike = {"sint": "int", "text": "text"}
    groups = {c.name: alike.get(KINDS[c.kind].group) for f in case.files for c in f.columns}
    shadowable = sorted(name for name, kind in groups.items() if kind is not None)
    keys = [f"p{i}" for i in range(rng.randint(1, 2))]
    kinds = {key: choose(rng, {k: 1.0 for k in PARTITION_VALUES}) for key in keys}
    shadowed = bool(shadowable) and rng.random() < 0.2
    if shadowed:
        name = rng.choice(shadowable)
        del kinds[keys[0]]
        keys[0] = name
        kinds[name] = str(groups[name])
    files = []
    for spec in case.files:
        if not shadowed and rng.random() < 0.1:
            files.append(spec)  # above the folders: NULL there
            continue
        folder = tuple(
            (k, None if rng.random() < 0.1 else rng.choice(PARTITION_VALUES[kinds[k]]))
            for k in keys
        )
        files.append(replace(spec, folder=folder))
    predicate = case.predicate
    for key in keys:
        if rng.random() < 0.75:
            leaf = _partition_leaf(rng, key, kinds[key])
            combine = And.of if rng.random() < 0.7 else Or.of
            predicate = leaf if rng.random() < 0.1 else combine(leaf, predicate)
    case = replace(
        case, files=tuple(files), predicate=predicate, sources="dir", index=None,
        checks=LAKE_CHECKS, shape="hive",
    )  # fmt: skip
    return widen_hive(case, keys, kinds, PARTITION_VALUES)


def _partition_leaf(rng: random.Random, key: str, kind: str) -> Predicate:
    values = PARTITION_VALUES[kind]

    def literal() -> Any:
        roll = rng.random()
        if roll < 0.1:
            return None
        text = rng.choice(values) if roll < 0.85 else rng.choice(["absent", "2030-01-01", "99"])
        if kind == "int" and text.lstrip("-").isdigit():
            return int(text)  # an int64 column: ints ('absent' is the literal not of its type)
        return text

    op = rng.choices(OPERATORS, weights=[o.weight for o in OPERATORS])[0]
    return op.build(rng, key, lambda _rng: literal())


def _index_plan(rng: random.Random, case: Case, lake: Sequence[LakeColumn]) -> IndexPlan | None:
    from .oracle import columns_of

    present = {c.name for f in case.files if f.layout != "garbage" for c in f.columns}
    wanted = [c for c in columns_of(case.predicate) if _indexable(c, lake, present)]
    others = [p for c in lake for p in leaves(c.name, c.base) if _indexable(p, lake, present)]
    if others and rng.random() < 0.3:
        wanted.append(rng.choice(others))
    if not wanted:
        return None
    state = choose(rng, INDEX_STATES)
    data = [i for i, f in enumerate(case.files) if f.layout == "data"]
    target = rng.choice(data) if data else 0
    modes = rng.choice([("values",), ("filters",), ("values", "filters"), ("filters", "values")])
    plan = IndexPlan(
        state=state, columns=tuple(dict.fromkeys(wanted)), lake_modes=modes, target=target,
        sidecar_row_groups=rng.random() < 0.7, lake_row_groups=rng.random() < 0.7,
    )  # fmt: skip
    if state.startswith("replaced") and data:
        # The same schema and options as the old file, other rows of the same count.
        old = case.files[target]
        columns = []
        for c in old.columns:
            column = next(lc for lc in lake if lc.name == c.name)
            columns.append(replace(c, values=tuple(_value(rng, column) for _ in c.values)))
        plan = replace(plan, replacement=replace(old, columns=tuple(columns)))
    elif state.startswith("replaced"):
        plan = replace(plan, state="fresh")
    if state == "added":
        int96 = any(f.option("use_deprecated_int96_timestamps") for f in case.files)
        plan = replace(
            plan, added=_file(rng, "zz-added.parquet", "data", lake, "pyarrow", int96=int96)
        )
    return plan


def _indexable(path: str, lake: Sequence[LakeColumn], present: set[str]) -> bool:
    name = path.split(".", 1)[0]
    if name not in present:
        return False
    for column in lake:
        if column.name == name:
            return all(leaf_kind(KINDS[k], path).indexable for k in column.variants)
    return False


def _table_plan(rng: random.Random, family: str, case: Case) -> TablePlan:
    if family == "delta":
        # Partition values Delta keeps as text and reads back exactly (deltalake cannot read
        # back a negative decimal partition value: "-84.-2697").
        names = [
            c.name for c in case.files[0].columns if c.name != "id" and c.kind in PARTITION_KINDS
        ]
        partition = rng.choice(names) if names and rng.random() < 0.4 else None
        delete = rng.choice([None, None, "rewrite", "vector"])
    else:
        partition = None
        delete = rng.choice([None, None, "rewrite", "position", "equality"])
    rows = case.files[0].num_rows
    deleted = tuple(sorted(rng.sample(range(rows), min(rows, rng.randint(1, 3))))) if rows else ()
    plan = TablePlan(family, partition_by=partition, delete=delete if deleted else None,
                     deleted_rows=deleted)  # fmt: skip
    return _delta_versions(case.seed, plan, len(case.files)) if family == "delta" else plan


def _delta_versions(seed: int, plan: TablePlan, appends: int) -> TablePlan:
    """A Delta table's later commits: compacted (after its deletes) or not, and the version
    it is read at (the latest, or one or two before it).

    Drawn from a generator of its own: the cases of other seeds stay as they were.
    """
    rng = random.Random(seed * 7919 + 29)
    compact = rng.random() < 0.3
    commits = appends + (plan.delete is not None) + compact
    back = rng.choice([1, 1, 2]) if rng.random() < 0.3 else 0
    return replace(plan, compact=compact, back=min(back, commits - 1))


__all__ = [
    "COMBINERS",
    "INDEX_STATES",
    "LAYOUTS",
    "NEGATION",
    "OPERATORS",
    "PARTITION_VALUES",
    "SHAPES",
    "SOURCES",
    "Operator",
    "generate_case",
    "random_predicate",
]
