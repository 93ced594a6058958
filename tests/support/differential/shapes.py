"""Wider lake shapes: hive folders with a key met twice, escaped as pyarrow escapes them and
with their types given; columns that later partitions gained; one column written by pyarrow
and by DuckDB (which stores it another way).

Each is drawn from a generator of its own (seeded from the case's seed), after the rest of
the case: the cases of seeds that draw none of them stay as they were.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pybloom_async.predicate import And, IsNull, Or, Predicate, col

from . import gates
from .kinds import KINDS, leaves
from .spec import Case, ColumnData, FileSpec

#: The partition type given (``partitioning={key: type}``) for each kind of folder values.
GIVEN_TYPE = {"int": "int64", "date": "date32", "timestamp": "timestamp[us]", "text": "string",
              "mixed": "string"}  # fmt: skip
#: One column written by both writers: the kind pyarrow writes, the kind DuckDB is handed
#: (DuckDB stores a fixed_size_binary as BLOB, a zoned timestamp as UTC, so a lake of both
#: writers has the column as two types of one Parquet kind, or as FIXED vs BYTE_ARRAY).
MIXED_WRITERS = (
    ("fixed16", "fixed16"), ("ts_us_berlin", "ts_us_berlin"), ("int64", "int32"),
    ("fixed4", "binary"), ("ts_us_paris", "ts_us_paris"), ("time_ms", "time_ms"),
)  # fmt: skip


def evolved(rng: random.Random, files: Sequence[FileSpec]) -> tuple[FileSpec, ...]:
    """Each column from a file on: the files before it lack it (at least one column kept)."""
    names = list(dict.fromkeys(c.name for f in files for c in f.columns))
    since = {name: rng.randrange(len(files)) for name in names}
    if names:
        since[names[0]] = 0
    out = []
    for i, spec in enumerate(files):
        kept = tuple(c for c in spec.columns if since[c.name] <= i) or spec.columns[:1]
        out.append(replace(spec, columns=kept) if spec.columns else spec)
    return tuple(out)


# ---- hive folders ---------------------------------------------------------------------------


def widen_hive(
    case: Case, keys: Sequence[str], kinds: dict[str, str], values: dict[str, tuple[str, ...]]
) -> Case:
    """A hive case made wider: folder names escaped as pyarrow writes them, a key met twice
    on a path (an inner value the outer one overrides), the partition types given, and
    columns that later partitions gained, asked for where the folders leave only files
    without them (``c IS NULL AND key = ...``)."""
    rng = random.Random(case.seed * 7919 + 41)
    escape = "uri" if rng.random() < 0.3 else "hive"
    repeat = rng.random() < 0.35
    files = []
    for spec in case.files:
        folder = spec.folder
        if folder and repeat and rng.random() < 0.6:
            key = rng.choice([k for k, _ in folder])
            again = None if rng.random() < 0.1 else rng.choice(values[kinds[key]])
            folder = (*folder, (key, again))  # outermost first: the first value wins
        files.append(replace(spec, folder=folder, escape=escape))
    case = replace(case, files=tuple(files))
    if rng.random() < 0.4:
        typed = tuple((k, GIVEN_TYPE[kinds[k]]) for k in keys)
        case = replace(case, lookup=replace(case.lookup, partitioning=typed))
    data = [f for f in case.files if f.layout != "garbage"]
    if len(data) > 1 and rng.random() < 0.3:
        case = _later_partitions(rng, case, kinds)
    return case


def _later_partitions(rng: random.Random, case: Case, kinds: dict[str, str]) -> Case:
    """Columns added file after file, and a predicate on one of them where a partition leaf
    leaves a file that lacks it."""
    readable = [i for i, f in enumerate(case.files) if f.layout != "garbage"]
    evolved_files = evolved(rng, [case.files[i] for i in readable])
    files = list(case.files)
    for i, spec in zip(readable, evolved_files, strict=True):
        files[i] = spec
    case = replace(case, files=tuple(files))
    everywhere = set.intersection(*({c.name for c in case.files[i].columns} for i in readable))
    late = sorted({c.name for i in readable for c in case.files[i].columns} - everywhere)
    lacking = [
        case.files[i] for i in readable
        if case.files[i].folder and any(v is not None for _, v in case.files[i].folder)
    ]  # fmt: skip
    if not late or not lacking:
        return case
    name = rng.choice(late)
    kind = next(c.kind for i in readable for c in case.files[i].columns if c.name == name)
    without = [f for f in lacking if all(c.name != name for c in f.columns)]
    if not without:
        return case
    spec = rng.choice(without)
    inner = dict(reversed(spec.folder))  # the outermost value of each key
    keys = sorted(k for k, v in inner.items() if v is not None)
    if not keys:  # every key's outermost value is NULL (a repeated key's inner one is not)
        return case
    key = rng.choice(keys)
    value = inner[key]
    assert value is not None
    literal: Any = int(value) if kinds.get(key) == "int" and value.lstrip("-").isdigit() else value
    leaf: Predicate = And.of(IsNull(rng.choice(leaves(name, KINDS[kind]))), col(key) == literal)
    roll = rng.random()
    predicate = leaf if roll < 0.5 else (And.of if roll < 0.8 else Or.of)(leaf, case.predicate)
    lookup = case.lookup
    if lookup.columns is not None and rng.random() < 0.5:
        lookup = replace(lookup, columns=tuple(dict.fromkeys([*lookup.columns, name])))
    return replace(case, predicate=predicate, lookup=lookup, shape="hive_evolving")


# ---- mixed writers ------------------------------------------------------------------------------


def mix_writers(case: Case) -> Case:
    """Now and then a column the lake's pyarrow and DuckDB files both write, each its way,
    and a leaf on it joined to the predicate."""
    rng = random.Random(case.seed * 7919 + 47)
    data = [i for i, f in enumerate(case.files) if f.layout == "data"]
    int96 = any(f.option("use_deprecated_int96_timestamps") for f in case.files)
    if len(data) < 2 or int96 or rng.random() >= 0.15:
        return case
    files = list(case.files)
    if not any(files[i].writer == "duckdb" for i in data):
        i = rng.choice(data)
        rows = files[i].num_rows
        options = {"ROW_GROUP_SIZE": max(1, rows // 2), "COMPRESSION": "snappy"}
        kept = tuple(c for c in files[i].columns if "duckdb" in KINDS[c.kind].writers)
        if not kept:
            return case  # DuckDB writes none of its columns
        files[i] = replace(files[i], writer="duckdb", options=tuple(sorted(options.items())),
                           columns=kept)  # fmt: skip
    if all(files[i].writer == "duckdb" for i in data):
        i = rng.choice(data)
        files[i] = replace(files[i], writer="pyarrow", options=(("row_group_size", 64),))
    arrow_kind, duck_kind = rng.choice(MIXED_WRITERS)
    pool = KINDS[arrow_kind].pool(rng, 4) or KINDS[arrow_kind].pool(rng, 8)
    if duck_kind != arrow_kind:  # int32 and binary: values both kinds hold
        pool = KINDS[duck_kind].pool(rng, 4) if duck_kind == "int32" else pool
    name = "mw"
    for i in data:
        kind = duck_kind if files[i].writer == "duckdb" else arrow_kind
        values = tuple(None if rng.random() < 0.2 else rng.choice(pool) for _ in
                       range(files[i].num_rows))  # fmt: skip
        files[i] = replace(files[i], columns=(*files[i].columns, ColumnData(name, kind, values)))
    leaf: Predicate
    stored = rng.choice(pool)
    if rng.random() < 0.2:
        leaf = IsNull(name)
    else:
        leaf = col(name) == KINDS[arrow_kind].literal(rng, stored)
    combine = And.of if rng.random() < 0.6 else Or.of
    predicate = leaf if rng.random() < 0.4 else combine(leaf, case.predicate)
    case = replace(case, files=tuple(files), predicate=predicate)
    present = {c.name for f in case.files if f.layout != "garbage" for c in f.columns}
    if case.index and any(c.split(".")[0] not in present for c in case.index.columns):
        case = replace(case, index=None, checks=gates.LAKE_CHECKS)  # an indexed column is gone
    return case


__all__ = ["GIVEN_TYPE", "MIXED_WRITERS", "evolved", "mix_writers", "widen_hive"]
