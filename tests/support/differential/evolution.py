"""Iceberg tables whose schema evolved by field id, against pyiceberg's own scan.

An Iceberg case may draw (from a generator of its own: other seeds' cases stay as they were)
a schema evolution: the first files appended through pyiceberg (which writes field ids),
then ``update_schema`` steps, then the other files appended in the new schema:

* ``rename``: a column renamed (its old files keep the old name; the id decides);
* ``drop_readd``: a column dropped, then one of the same name and type added (a new id:
  the old files' values are not its values, they read as NULL);
* ``promote_float``: ``ev_f`` float -> double (the old files store FLOAT; the scan gives
  their values as doubles, 0.1f as 0.10000000149011612);
* ``promote_int``: ``ev_i`` int -> long.

The predicate speaks of the table's current schema, with a leaf on each evolved column.
"""

from __future__ import annotations

import random
import struct
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from pybloom_async.predicate import And, In, IsNull, Or, Predicate, col

from . import gates
from .kinds import KINDS, leaves
from .spec import Case, ColumnData, FileSpec
from .write import arrow_table

STEPS = ("rename", "drop_readd", "promote_float", "promote_int")
#: The checks of an evolved table (prune's own check reads files by name: not here).
EVOLVED_CHECKS = frozenset({"table_lookup", "table_dataset", "table_folder"})


def shortest_float32(value: float) -> float:
    """The double of the shortest decimal that reads back as the float32 ``value`` (0.1f:
    0.1), the literal a user types for it."""
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if struct.unpack("<f", struct.pack("<f", float(text)))[0] == value:
            return float(text)
    return value


def evolve(case: Case) -> Case:
    """Now and then an Iceberg case's table evolves (see the module's docstring)."""
    plan = case.table
    if case.family != "iceberg" or plan is None:
        return case
    rng = random.Random(case.seed * 7919 + 53)
    if rng.random() >= 0.35 or len(case.files) < 2:
        return case
    steps = tuple(s for s in STEPS if rng.random() < 0.6) or (rng.choice(STEPS),)
    files = []
    for spec in case.files:
        floats = tuple(None if rng.random() < 0.15 else _float32(rng) for _ in range(spec.num_rows))
        ints = tuple(None if rng.random() < 0.15 else rng.randint(-50, 50)
                     for _ in range(spec.num_rows))  # fmt: skip
        extra = (ColumnData("ev_f", "float32", floats), ColumnData("ev_i", "int32", ints))
        files.append(replace(spec, columns=(*spec.columns, *extra)))
    others = [c.name for c in files[0].columns if c.name not in ("id", "ev_f", "ev_i")]
    renamed = rng.choice(others) if others and "rename" in steps else None
    readded = rng.choice([o for o in others if o != renamed] or [None])
    readded = readded if "drop_readd" in steps else None
    plan = replace(plan, delete=None, deleted_rows=(), evolve=steps,
                   evolved=(renamed or "", readded or ""))  # fmt: skip
    case = replace(case, files=tuple(files), table=plan, checks=EVOLVED_CHECKS)
    predicate = gates.map_columns(case.predicate, lambda c: _renamed(c, renamed))
    leaves_: list[Predicate] = []
    later = [v for f in files[len(files) // 2 :] for v in _column(f, "ev_f") if v is not None]
    early = [v for f in files[: len(files) // 2] for v in _column(f, "ev_f") if v is not None]
    if "promote_float" in steps and early:
        literal = shortest_float32(rng.choice(early))
        op = rng.choice(["=", ">", "<=", "!=", "IN"])
        leaves_.append(
            col("ev_f").isin([literal, rng.choice(later or early)]) if op == "IN"
            else {"=": col("ev_f") == literal, ">": col("ev_f") > literal,
                  "<=": col("ev_f") <= literal, "!=": col("ev_f") != literal}[op]
        )  # fmt: skip
    if "promote_int" in steps:
        ints = [v for f in files for v in _column(f, "ev_i") if v is not None] or [0]
        leaves_.append(col("ev_i") == rng.choice(ints))
    for name in (renamed, readded):
        if name is None:
            continue
        kind = next(c.kind for c in files[0].columns if c.name == name)
        path = _renamed(rng.choice(leaves(name, KINDS[kind])), renamed)
        values = [v for f in files for v in _column(f, name) if v is not None]
        if KINDS[kind].children or not values or rng.random() < 0.3:
            leaves_.append(IsNull(path) if rng.random() < 0.6 else ~IsNull(path))
        else:
            leaves_.append(In(path, tuple(KINDS[kind].literal(rng, rng.choice(values))
                                          for _ in range(2))))  # fmt: skip
    if leaves_:
        joined = Or.of(*leaves_) if len(leaves_) > 1 else leaves_[0]
        predicate = joined if rng.random() < 0.7 else And.of(joined, predicate)
    return replace(case, predicate=predicate)


def _float32(rng: random.Random) -> float:
    value = rng.choice([0.1, 0.2, 0.3, 1.1, 2.5, -0.7, 1e-3, 3.3, 100.01])
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def _column(spec: FileSpec, name: str) -> tuple[Any, ...]:
    return next((c.values for c in spec.columns if c.name == name), ())


def _renamed(path: str, renamed: str | None) -> str:
    head, dot, tail = path.partition(".")
    return f"{head}_r{dot}{tail}" if renamed and head == renamed else path


def make_evolved_iceberg(case: Case, root: Path) -> Any:
    """The table: the first half of the files appended, the schema evolved, the rest
    appended in the new schema."""
    from pyiceberg.types import DoubleType, LongType

    from support.iceberg_catalog import sql_catalog

    plan = case.table
    assert plan is not None
    renamed, readded = (name or None for name in plan.evolved)
    catalog = sql_catalog(root, "diff", "warehouse")
    first = arrow_table(case.files[0])
    table = catalog.create_table("ns.t", schema=first.schema)
    half = len(case.files) // 2
    for spec in case.files[:half]:
        table.append(arrow_table(spec))
    if readded is not None:
        with table.update_schema() as update:
            update.delete_column(readded)
        table = catalog.load_table("ns.t")
        kind = next(c.kind for c in case.files[0].columns if c.name == readded)
        with table.update_schema() as update:
            update.union_by_name(pa.schema([pa.field(readded, KINDS[kind].arrow)]))
        table = catalog.load_table("ns.t")
    with table.update_schema() as update:
        if renamed is not None:
            update.rename_column(renamed, f"{renamed}_r")
        if "promote_float" in plan.evolve:
            update.update_column("ev_f", DoubleType())
        if "promote_int" in plan.evolve:
            update.update_column("ev_i", LongType())
    table = catalog.load_table("ns.t")
    schema = table.schema().as_arrow()
    for spec in case.files[half:]:
        data = arrow_table(spec)
        if renamed is not None:
            data = data.rename_columns([f"{n}_r" if n == renamed else n for n in data.column_names])
        table.append(data.select(schema.names).cast(schema))
    return catalog.load_table("ns.t")


__all__ = ["EVOLVED_CHECKS", "STEPS", "evolve", "make_evolved_iceberg", "shortest_float32"]
