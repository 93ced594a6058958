"""A failing case, cut down and printed as a standalone script.

``shrink`` drops files, rows, columns, writer settings and predicate parts while the same
check still fails; ``reproduction`` writes the result as Python that needs only pyarrow
(and DuckDB for DuckDB-written files) and pybloom-async.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from pybloom_async.predicate import And, In, Not, NotIn, Or, Predicate

from .checks import Failure, run_case
from .kinds import KINDS
from .spec import Case, FileSpec

# ---- shrinking --------------------------------------------------------------------------------


def rerun(case: Case, check: str, known: frozenset[str]) -> list[Failure]:
    """Run only what ``check`` needs, in a fresh directory."""
    work = Path(tempfile.mkdtemp(prefix="pybloom-diff-"))
    try:
        return run_case(case, work, only=_checks_for(check), known=known)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _fails(case: Case, check: str, known: frozenset[str]) -> bool:
    try:
        return any(f.check == check for f in rerun(case, check, known))
    except Exception:  # a shrunk case the harness cannot run is not smaller
        return False


def _checks_for(check: str) -> set[str]:
    """The checks to run to see ``check``'s failure again (a build runs with its index)."""
    if check == "sidecar_build":
        return {"sidecar"}
    if check.startswith("lake_build"):
        return {"lake"}
    return {check}


def _predicates(p: Predicate) -> Iterator[Predicate]:
    """Smaller predicates than ``p``: a child of AND/OR, NOT's operand, an IN or NOT IN list
    one value shorter."""
    if isinstance(p, Not):
        yield p.child
        for smaller in _predicates(p.child):
            yield Not(smaller)
    if isinstance(p, NotIn) and len(p.values) > 1:
        for i in range(len(p.values)):
            yield NotIn(p.column, p.values[:i] + p.values[i + 1 :])
    if isinstance(p, (And, Or)):
        yield from p.children
        for i, child in enumerate(p.children):
            for smaller in _predicates(child):
                parts = list(p.children)
                parts[i] = smaller
                yield type(p).of(*parts)
    if isinstance(p, In) and len(p.values) > 1:
        for i in range(len(p.values)):
            yield In(p.column, p.values[:i] + p.values[i + 1 :])


def _simpler(case: Case, check: str) -> Iterator[Case]:
    """The same case with fewer moving parts: no index, plain sources, default lookup."""
    if case.index is not None and not check.startswith(("sidecar", "lake")):
        yield replace(case, index=None)
    if case.sources != "list":
        yield replace(case, sources="list")
    if case.lookup.max_fetch_bytes is not None:
        yield replace(case, lookup=replace(case.lookup, max_fetch_bytes=None))


def _files(case: Case) -> Iterator[Case]:
    files = case.files
    for i in range(len(files)):
        if len(files) > 1 and (case.index is None or i != case.index.target):
            target = case.index.target if case.index else 0
            index = replace(case.index, target=target - (i < target)) if case.index else None
            yield replace(case, files=(*files[:i], *files[i + 1 :]), index=index)
    for i, spec in enumerate(files):
        n = spec.num_rows
        if n > 1:
            for keep in (list(range(n // 2)), list(range(n // 2, n)), list(range(n - 1))):
                smaller = _fit(spec.with_rows(keep))
                yield replace(case, files=(*files[:i], smaller, *files[i + 1 :]))
        for j in range(len(spec.columns)):
            if len(spec.columns) > 1:
                columns = spec.columns[:j] + spec.columns[j + 1 :]
                smaller = _fit(replace(spec, columns=columns))
                yield replace(case, files=(*files[:i], smaller, *files[i + 1 :]))
        for key, _ in spec.options:
            if key not in ("row_group_size", "ROW_GROUP_SIZE"):
                options = tuple(o for o in spec.options if o[0] != key)
                smaller = replace(spec, options=options)
                yield replace(case, files=(*files[:i], smaller, *files[i + 1 :]))


def _fit(spec: FileSpec) -> FileSpec:
    """Bloom filter options only for the columns the file still has."""
    options = dict(spec.options)
    blooms = options.get("bloom_filter_options")
    if blooms:
        names = {c.name for c in spec.columns}
        options["bloom_filter_options"] = {
            k: v for k, v in blooms.items() if k.split(".")[0] in names
        }
    return replace(spec, options=tuple(sorted(options.items())))


def _candidates(case: Case, check: str) -> Iterator[Case]:
    yield from _simpler(case, check)
    for p in _predicates(case.predicate):
        yield replace(case, predicate=p)
    yield from _files(case)


def shrink(case: Case, failure: Failure, known: frozenset[str], budget_s: float = 60.0) -> Case:
    """The smallest case found (greedy, within ``budget_s``) on which ``failure.check`` fails."""
    deadline = time.monotonic() + budget_s
    improved = True
    while improved and time.monotonic() < deadline:
        improved = False
        for smaller in _candidates(case, failure.check):
            if time.monotonic() > deadline:
                break
            if _fails(smaller, failure.check, known):
                case, improved = smaller, True
                break
    return case


# ---- printing ---------------------------------------------------------------------------------


def _array_code(kind_name: str, values: tuple[Any, ...]) -> str:
    kind = KINDS[kind_name]
    t = kind.arrow
    listed = repr(list(values))
    name = type(t).__name__
    if kind.children:
        fields = ", ".join(
            f"({c!r}, {_array_code(k, tuple(None if v is None else v[c] for v in values))})"
            for c, k in kind.children
        )
        mask = repr([v is None for v in values])
        return (f"pa.StructArray.from_arrays([a for _, a in [{fields}]], "
                f"names={[c for c, _ in kind.children]!r}, mask=pa.array({mask}))")  # fmt: skip
    type_code = _type_code(t)
    if name == "DictionaryType":
        return f"pa.array({listed}, {_type_code(t.value_type)}).dictionary_encode()"
    if kind_name.startswith(("ts_", "time_ns", "time_us")):
        return f"pa.array({listed}, pa.int64()).cast({type_code})"
    if kind_name in ("time_ms", "date32"):
        return f"pa.array({listed}, pa.int32()).cast({type_code})"
    if kind_name == "date64":
        ms = [None if v is None else v * 86_400_000 for v in values]
        return f"pa.array({ms!r}, pa.int64()).cast({type_code})"
    if kind_name == "float16":
        return f"pa.array({listed}, pa.float32()).cast(pa.float16())"
    return f"pa.array({listed}, {type_code})"


def _type_code(t: Any) -> str:
    import pyarrow as pa

    simple = {
        pa.int8(): "pa.int8()", pa.int16(): "pa.int16()", pa.int32(): "pa.int32()",
        pa.int64(): "pa.int64()", pa.uint8(): "pa.uint8()", pa.uint16(): "pa.uint16()",
        pa.uint32(): "pa.uint32()", pa.uint64(): "pa.uint64()", pa.float32(): "pa.float32()",
        pa.float64(): "pa.float64()", pa.string(): "pa.string()",
        pa.large_string(): "pa.large_string()",
        pa.string_view(): "pa.string_view()", pa.binary(): "pa.binary()",
        pa.large_binary(): "pa.large_binary()", pa.bool_(): "pa.bool_()",
        pa.date32(): "pa.date32()",
        pa.date64(): "pa.date64()",
    }  # fmt: skip
    if t in simple:
        return simple[t]
    if pa.types.is_fixed_size_binary(t) and not isinstance(t, pa.ExtensionType):
        return f"pa.binary({t.byte_width})"
    if isinstance(t, pa.ExtensionType) and t.extension_name == "arrow.uuid":
        return "pa.uuid()"
    if pa.types.is_decimal(t):
        return f"pa.decimal{t.bit_width}({t.precision}, {t.scale})"
    if pa.types.is_timestamp(t):
        return f"pa.timestamp({t.unit!r}, tz={t.tz!r})"
    if pa.types.is_time32(t):
        return f"pa.time32({t.unit!r})"
    if pa.types.is_time64(t):
        return f"pa.time64({t.unit!r})"
    return repr(t)


def _write_code(spec: FileSpec, target: str | None = None) -> list[str]:
    name = target or f"d / {spec.relative!r}"
    folder = [f"({name}).parent.mkdir(parents=True, exist_ok=True)"] if spec.folder else []
    if spec.layout == "garbage":
        return [*folder, f"({name}).write_bytes(b'PAR1 this is not a Parquet file at all PAR1')"]
    columns = ",\n    ".join(f"{c.name!r}: {_array_code(c.kind, c.values)}" for c in spec.columns)
    lines = [*folder, f"t = pa.table({{\n    {columns},\n}})"]
    options = dict(spec.options)
    if spec.writer == "pyarrow":
        kwargs = "".join(f", {k}={v!r}" for k, v in options.items())
        lines.append(f"pq.write_table(t, {name}{kwargs})")
    else:
        size = options.get("ROW_GROUP_SIZE", 1)
        extra = "".join(
            f", {k} {v!r}" if isinstance(v, str) else f", {k} {v}" for k, v in options.items()
        )
        lines += [
            "con = duckdb.connect(); con.execute('SET threads = 1')",
            "batches = t.to_batches(max_chunksize=" + str(size) + ")",
            "con.register('t', pa.Table.from_batches(batches, schema=t.schema) if batches else t)",
            f"con.execute(f\"COPY (SELECT * FROM t) TO '{{{name}}}' (FORMAT parquet{extra})\")",
        ]
    return lines


def _sources_code(case: Case) -> str:
    names = [f"str(d / {s.relative!r})" for s in case.files]
    if case.sources == "dir":
        return "sources = str(d)"
    if case.sources == "dir_and_file":
        return f"sources = [str(d), {names[-1]}]"
    if case.sources == "respelled":
        return f"sources = [{', '.join(names)}, str(d) + '//' + {case.files[0].name!r}]"
    return f"sources = [{', '.join(names)}]"


def _change_code(case: Case) -> list[str]:
    plan = case.index
    assert plan is not None
    target = f"d / {case.files[plan.target].name!r}" if case.files else "None"
    if plan.state.startswith("replaced") and plan.replacement is not None:
        lines = [f"before = ({target}).stat()"]
        lines += _write_code(plan.replacement, "d.parent / 'staged.parquet'")
        if plan.state == "replaced_same_stat":
            lines += [
                "# the same size (zeros before the footer), a new inode, the old mtime: cp -p",
                "data = (d.parent / 'staged.parquet').read_bytes()",
                "footer = int.from_bytes(data[-8:-4], 'little'); start = len(data) - 8 - footer",
                "pad = max(0, before.st_size - len(data))",
                "padded = data[:start] + bytes(pad) + data[start:]",
                "(d.parent / 'staged.parquet').write_bytes(padded)",
                f"os.replace(d.parent / 'staged.parquet', {target})",
                f"os.utime({target}, ns=(before.st_atime_ns, before.st_mtime_ns))",
            ]
        else:
            lines += [f"os.replace(d.parent / 'staged.parquet', {target})",
                      f"os.utime({target}, ns=(before.st_mtime_ns + 2 * 10**9,) * 2)"]  # fmt: skip
        return lines
    if plan.state == "added" and plan.added is not None:
        return _write_code(plan.added)
    if plan.state == "removed":
        return [f"({target}).unlink()"]
    return []


def _call_code(case: Case, check: str) -> list[str]:
    args = case.lookup
    kwargs = f"page_index={args.page_index}"
    if args.columns is not None:
        kwargs += f", columns={list(args.columns)!r}"
    if args.max_fetch_bytes is not None:
        kwargs += f", max_fetch_bytes={args.max_fetch_bytes}"
    if args.partitioning is not None:
        kwargs += f", partitioning={dict(args.partitioning)!r}"
    given = "" if args.partitioning is None else f", partitioning={dict(args.partitioning)!r}"
    where = "text" if check.endswith("_text") else "where"
    if args.two_phase is not None and check.startswith(("lookup", "lake_lookup")):
        forced = "0" if args.two_phase else "1 << 62"
        plain = replace(case, lookup=replace(args, two_phase=None))
        forcing = (f"import pybloom_async.rows.fetch as fetch; fetch.TWO_PHASE_MIN_BYTES = {forced}"
                   "  # the two-phase fetch forced")  # fmt: skip
        return [forcing, *_call_code(plain, check)]
    if check.startswith("prune") or check == "prune_async":
        return [f"print([v for v in pba.prune_sync(sources, {where}{given}) if not v.kept])"]
    if check.startswith("lookup"):
        return [f"print(pba.lookup_sync(sources, {where}, {kwargs}).to_pylist())"]
    if check.startswith("dataset"):
        return [f"ds = pba.pruned_dataset_sync(sources, where{given})",
                "print(ds.schema, ds.to_table().to_pylist())"]  # fmt: skip
    if check == "text_round_trip":
        return ["print(pba.parse_predicate(text))"]
    plan = case.index
    if plan is None:
        return [f"# table case: {case.table!r}"]
    columns = list(plan.columns)
    lines = []
    if check.startswith("sidecar"):
        lines.append(f"print(pba.build_index_sync(sources, {columns!r}))")
    else:
        for mode in plan.lake_modes:
            lines.append(f"print(pba.build_lake_index_sync(str(d), {columns!r}, mode={mode!r}))")
    lines += _change_code(case)
    if check == "sidecar":
        lines.append(f"print([v for v in pba.prune_sync(sources, where, use_index='sidecar', "
                     f"row_groups={plan.sidecar_row_groups}) if not v.kept])")  # fmt: skip
    elif check == "lake":
        lines.append(f"print([v for v in pba.prune_sync(str(d), where, use_index='lake', "
                     f"row_groups={plan.lake_row_groups}) if not v.kept])")  # fmt: skip
    elif check == "lake_lookup":
        lines.append(f"print(pba.lookup_sync(str(d), where, {kwargs}).to_pylist())")
    elif check == "lake_lookup_same":
        lines += [f"with_index = pba.lookup_sync(str(d), where, {kwargs})",
                  "os.rename(d / '_bloom_index', d.parent / 'aside')  # the indexes moved out",
                  f"without = pba.lookup_sync(str(d), where, {kwargs})",
                  "print(with_index.schema, without.schema, with_index == without)"]  # fmt: skip
    return lines


def reproduction(case: Case, failure: Failure, known: frozenset[str]) -> str:
    """The case as a script: write the files, make the failing call, print what came back."""
    lines = [
        f"# seed {case.seed} ({case.family})",
        f"# known bugs steered clear of: {sorted(known) or 'none'}",
        f"# failing check: {failure.check}",
        "import datetime, math, os, tempfile",
        "from decimal import Decimal",
        "from pathlib import Path",
        "from uuid import UUID",
        "import pyarrow as pa, pyarrow.parquet as pq",
        "import pybloom_async as pba",
        "from pybloom_async.predicate import (And, Between, Compare, Eq, In, IsNotNull, "
        "IsNull, Not, NotIn, Or)",
        "from pybloom_async.predicate import TextLiteral",
        "nan, inf = math.nan, math.inf",
    ]
    if any(f.writer == "duckdb" for f in case.files):
        lines.append("import duckdb")
    lines.append("d = Path(tempfile.mkdtemp()) / 'lake'; d.mkdir()")
    for spec in case.files:
        lines += _write_code(spec)
    lines.append(f"where = {case.predicate!r}")
    lines.append(f"text = {case.predicate.to_text()!r}")
    lines.append(_sources_code(case))
    lines += _call_code(case, failure.check)
    lines.append("# expected vs got:\n# " + str(failure).replace("\n", "\n# "))
    return "\n".join(lines)


def describe(case: Case) -> str:
    """A one-paragraph summary of a case (files, writers, layouts, predicate)."""
    parts = [
        f"seed {case.seed} ({case.family}, {case.shape}, sources={case.sources}, "
        f"gated={list(case.gated)}, two_phase={case.lookup.two_phase})"
    ]
    if case.lookup.partitioning is not None:
        parts.append(f"  partitioning={dict(case.lookup.partitioning)}")
    for spec in case.files:
        kinds = ", ".join(f"{c.name}:{c.kind}" for c in spec.columns)
        parts.append(
            f"  {spec.relative} [{spec.layout}, {spec.writer}, {spec.num_rows} rows] {kinds} "
            f"{dict(spec.options)}"
        )
    parts.append(f"  where: {case.predicate.to_text()}")
    if case.index:
        parts.append(
            f"  index: {case.index.state} on {list(case.index.columns)} "
            f"modes {case.index.lake_modes}"
        )
    if case.table:
        parts.append(f"  table: {case.table}")
    return "\n".join(parts)


__all__ = ["describe", "reproduction", "rerun", "shrink"]
