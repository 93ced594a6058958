"""Every entry point against the oracle, on one written lake.

``run_case`` writes the case's files, reads them whole for the oracle, then runs the case's
checks (``CHECKS``, one function each, so a shrinker can rerun a single one) and returns the
failures: a wrong answer, or an exception where the documentation promises a result.
"""

from __future__ import annotations

import contextlib
import os
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa

import pybloom_async as pba
from pybloom_async.predicate import Predicate, parse_predicate
from pybloom_async.rows import fetch

from . import gates, sql
from .lake import Lake, expected_error, open_lake
from .oracle import (
    FileFacts,
    LiteralTypeError,
    canonical_rows,
    columns_of,
    evaluate,
    expected_rows,
)
from .spec import Case
from .write import write_lake


@dataclass(frozen=True)
class Failure:
    """One wrong answer: which check, a one-line summary, expected against got."""

    check: str
    summary: str
    detail: str = ""

    def __str__(self) -> str:
        return f"[{self.check}] {self.summary}" + (f"\n{self.detail}" if self.detail else "")


# ---- the text form ---------------------------------------------------------------------------


def wanted_columns(case: Case) -> list[str]:
    """The predicate's columns and the columns asked (they decide which footers count)."""
    return [*columns_of(case.predicate), *(case.lookup.columns or ())]


def partitioning_of(case: Case) -> dict[str, Any]:
    """The ``partitioning=`` keyword of the case's calls (none: the default, inferred)."""
    given = case.lookup.partitioning
    return {} if given is None else {"partitioning": dict(given)}


def text_value(value: Any) -> Any:
    """What a literal means once written by ``Predicate.to_text`` and read back: a double as
    its shortest decimal text (which a float column reads as its nearest value), the rest
    unchanged (dates, times, UUIDs and strings read as quoted text, bytes as X'..')."""
    if isinstance(value, float) and value == value and value not in (float("inf"), float("-inf")):
        return Decimal(repr(value))
    return value


def text_predicate(p: Predicate) -> Predicate:
    return gates.map_literals(p, lambda _c, v: text_value(v))


@contextlib.contextmanager
def two_phase(choice: bool | None) -> Iterator[None]:
    """The rows' two-phase fetch forced on (True) or off (False), or left as it is."""
    if choice is None:
        yield
        return
    saved = fetch.TWO_PHASE_MIN_BYTES
    fetch.TWO_PHASE_MIN_BYTES = 0 if choice else 1 << 62
    try:
        yield
    finally:
        fetch.TWO_PHASE_MIN_BYTES = saved


# ---- comparisons ------------------------------------------------------------------------------


def show_rows(counter: Counter[tuple[Any, ...]], limit: int = 6) -> str:
    rows = sorted(counter.elements(), key=repr)[:limit]
    more = f" (+{sum(counter.values()) - limit} more)" if sum(counter.values()) > limit else ""
    return ", ".join(map(repr, rows)) + more


def compare_rows(
    check: str,
    got: Counter[tuple[Any, ...]],
    expected: Counter[tuple[Any, ...]],
    names: Sequence[str],
) -> list[Failure]:
    if got == expected:
        return []
    missing, extra = expected - got, got - expected
    detail = (
        f"columns {list(names)}: expected {sum(expected.values())} rows, got {sum(got.values())}"
    )
    if missing:
        detail += f"\n  missing: {show_rows(missing)}"
    if extra:
        detail += f"\n  extra: {show_rows(extra)}"
    return [Failure(check, "rows differ from the oracle's", detail)]


def failure_of(check: str, exc: BaseException) -> Failure:
    frames = traceback.extract_tb(exc.__traceback__)
    where = next((f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames)
                  if "pybloom_async" in f.filename), "")  # fmt: skip
    return Failure(
        check, f"raised {type(exc).__name__}: {exc}"[:400], f"at {where}" if where else ""
    )


def _group_counts(facts: FileFacts, predicate: Predicate) -> list[int]:
    mask = evaluate(predicate, facts)
    counts = [0] * len(facts.row_group_rows)
    for rg, hit in zip(facts.row_groups_of_rows(), mask, strict=True):
        counts[rg] += hit
    return counts


def verify_verdicts(
    check: str, verdicts: Sequence[pba.Verdict], lake: Lake, predicate: Predicate
) -> list[Failure]:
    """No pruned row group (or file) holds a matching row; every file answered for."""
    problems: list[str] = []
    counts: dict[str, list[int]] = {}
    mistyped: set[str] = set()  # a literal not of its column's type in this file
    for path, f in lake.facts.items():
        try:
            counts[path] = _group_counts(f, predicate)
        except LiteralTypeError:
            mistyped.add(path)
    seen: dict[str, list[pba.Verdict]] = {}
    ruled_out = lake.ruled_out  # never opened: no verdict (a verdict would be no error)
    for v in verdicts:
        path = os.path.normpath(v.file)
        if path not in lake.facts and path not in lake.garbage:
            problems.append(f"a verdict for a file not in the lake: {v.file}")
            continue
        seen.setdefault(path, []).append(v)
        if path in lake.garbage:
            if not v.kept:
                problems.append(f"the unreadable {v.file} pruned: rule={v.rule} {v.reason}")
            continue
        facts = lake.facts[path]
        if path in mistyped:
            # No error (an index pass: see prune_on), so its footer must not have been read:
            # the index answered for the whole file (the docs: a file an index rules out,
            # or keeps without its row groups, is not opened; its column types unknown).
            if v.row_group is not None:
                problems.append(f"{v.file}: a literal not of its column's type, yet no error "
                                f"({v.rule}: {v.reason})")  # fmt: skip
            continue
        if v.rule is pba.Rule.UNREADABLE:
            problems.append(f"a valid file reported unreadable: {v.file}: {v.reason}")
        if v.kept:
            continue
        if v.row_group is None:
            if sum(counts[path]):
                problems.append(f"{v.file} pruned whole ({v.rule}: {v.reason}) but holds "
                                f"{sum(counts[path])} matching rows")  # fmt: skip
        elif not 0 <= v.row_group < len(counts[path]):
            problems.append(f"{v.file}: verdict for row group {v.row_group} of {len(counts[path])}")
        elif counts[path][v.row_group]:
            problems.append(f"{v.file} row group {v.row_group} pruned ({v.rule}: {v.reason}) "
                            f"but holds {counts[path][v.row_group]} matching rows")  # fmt: skip
        in_range = v.row_group is not None and 0 <= v.row_group < len(counts[path])
        if in_range and v.num_rows != facts.row_group_rows[v.row_group]:  # type: ignore[index]
            problems.append(f"{v.file} row group {v.row_group}: num_rows {v.num_rows}, "
                            f"the footer says {facts.row_group_rows[v.row_group]}")  # type: ignore[index]  # fmt: skip
    for path in lake.unreadable:
        if path not in seen:
            problems.append(f"the unreadable file {path} got no verdict (silently dropped)")
    for path, facts in lake.facts.items():
        if path in mistyped:
            continue
        mine = seen.get(path, [])
        groups = sorted(v.row_group for v in mine if v.row_group is not None)
        whole = [v for v in mine if v.row_group is None]
        if path in ruled_out and not mine:
            if sum(counts[path]):
                problems.append(f"{path} got no verdict but holds matching rows")
            continue
        if facts.row_group_rows and not mine:
            problems.append(f"{path} ({len(facts.row_group_rows)} row groups) got no verdict")
        elif len(whole) > 1:
            problems.append(f"{path}: {len(whole)} file verdicts")
        elif not whole and groups != list(range(len(facts.row_group_rows))):
            problems.append(f"{path}: verdicts for row groups {groups} of "
                            f"{len(facts.row_group_rows)}")  # fmt: skip
    return [Failure(check, problems[0], "\n".join(problems[1:6]))] if problems else []


# ---- entry points ---------------------------------------------------------------------------


@dataclass
class Context:
    """What every check reads: the case and the lake as written."""

    case: Case
    lake: Lake


def _run(case: Case, make: Callable[[], Any]) -> Any:
    async def main() -> Any:
        return await make()

    return anyio.run(main, backend=case.lookup.backend)


def _expect_error(check: str, expected: str, call: Callable[[], Any]) -> list[Failure]:
    try:
        got = call()
    except pba.PredicateError:
        return []
    except Exception as exc:  # the wrong error is the finding
        return [failure_of(check, exc)]
    return [Failure(check, f"expected {expected}, got an answer", repr(got)[:300])]


def prune_on(
    ctx: Context, check: str, lake: Lake, where: Predicate | str, **kwargs: Any
) -> list[Failure]:
    predicate = (
        ctx.case.predicate if isinstance(where, Predicate) else text_predicate(ctx.case.predicate)
    )
    expected = expected_error(ctx.case, lake, predicate)
    asynchronous = kwargs.pop("asynchronous", False)
    kwargs.update(partitioning_of(ctx.case))
    sources = lake.sources

    def call() -> list[pba.Verdict]:
        if asynchronous:
            return _run(ctx.case, lambda: pba.prune(sources, where, **kwargs))  # type: ignore[no-any-return]
        return pba.prune_sync(sources, where, **kwargs)

    # The lake index's pass reads every file it rules out as its digest says (the files'
    # schemas): its answer or error is the one without it. A sidecar pass, or the lake
    # index's file verdicts alone, read no file they rule out: they may answer instead.
    index = kwargs.get("use_index")
    if expected and (not index or (index == "lake" and kwargs.get("row_groups", True))):
        return _expect_error(check, expected, call)
    try:
        verdicts = call()
    except pba.PredicateError as exc:
        if expected:
            return []
        return [failure_of(check, exc)]
    except Exception as exc:
        return [failure_of(check, exc)]
    return verify_verdicts(check, verdicts, lake, predicate)


def check_prune(ctx: Context) -> list[Failure]:
    return prune_on(ctx, "prune", ctx.lake, ctx.case.predicate)


def check_prune_async(ctx: Context) -> list[Failure]:
    return prune_on(ctx, "prune_async", ctx.lake, ctx.case.predicate, asynchronous=True)


def check_prune_text(ctx: Context) -> list[Failure]:
    return prune_on(ctx, "prune_text", ctx.lake, ctx.case.predicate.to_text())


def check_text_round_trip(ctx: Context) -> list[Failure]:
    text = ctx.case.predicate.to_text()
    try:
        parsed = parse_predicate(text)
        again = parse_predicate(parsed.to_text())
    except Exception as exc:
        return [Failure("text_round_trip", f"to_text() does not parse: {exc}", f"text: {text}")]
    if again.to_text() != parsed.to_text():
        return [Failure("text_round_trip", "the text form's predicate changes once rendered again",
                        f"text: {text}\nparsed: {parsed!r}\nagain: {again!r}")]  # fmt: skip
    return []


def _lookup_names(ctx: Context, lake: Lake) -> list[str]:
    """The columns asked, or by default every top-level column of the files read, in the
    order first seen, then the partition columns (the one schema rule of lookup and
    pruned_dataset)."""
    if ctx.case.lookup.columns is not None:
        return list(ctx.case.lookup.columns)
    return lake.names(wanted_columns(ctx.case))


def lookup_on(ctx: Context, check: str, lake: Lake, mode: str, text: bool = False) -> list[Failure]:
    case = ctx.case
    where: Predicate | str = case.predicate.to_text() if text else case.predicate
    predicate = text_predicate(case.predicate) if text else case.predicate
    args = case.lookup
    kwargs: dict[str, Any] = {"page_index": args.page_index, **partitioning_of(case)}
    if args.columns is not None:
        kwargs["columns"] = list(args.columns)
    if args.max_fetch_bytes is not None:
        kwargs["max_fetch_bytes"] = args.max_fetch_bytes
    failures: list[Failure] = []
    skipped: list[pba.PyBloomError] = []
    if lake.garbage:
        kwargs["on_error"] = "skip"
        kwargs["skipped"] = skipped
    names = _lookup_names(ctx, lake)
    expected_err = expected_error(case, lake, predicate)
    # A projected column no file has; with no file read, the footers of those the folders
    # ruled out count as read (expected_error says the same of the predicate's columns).
    if (lake.readable or lake.listed) and any(
        n not in lake.folder_types and all(n not in f.top_level for f in lake.listed) for n in names
    ):
        expected_err = "PredicateError"

    def call() -> pa.Table:
        with two_phase(args.two_phase):
            return _call()

    def _call() -> pa.Table:
        if mode == "sync":
            return pba.lookup_sync(lake.sources, where, **kwargs)
        if mode == "async":
            return _run(case, lambda: pba.lookup(lake.sources, where, **kwargs))

        async def collect() -> list[pa.RecordBatch]:
            return [b async for b in pba.lookup_batches(lake.sources, where, **kwargs)]

        batches = _run(case, collect)
        if not batches:
            return pa.table({n: pa.array([], pa.null()) for n in names})
        return pa.Table.from_batches(batches)

    if expected_err:
        return _expect_error(check, expected_err, call)
    try:
        got = call()
    except Exception as exc:
        return [failure_of(check, exc)]
    if got.column_names != names:
        failures.append(Failure(check, "result columns differ",
                                f"expected {names}, got {got.column_names}"))  # fmt: skip
    expected = expected_rows(predicate, lake.readable, names)
    failures += compare_rows(check, canonical_rows(got, names), expected, names)
    if lake.unreadable:
        named = {os.path.normpath(getattr(e, "path", None) or "") for e in skipped}
        for path in lake.unreadable:
            if path not in named:
                failures.append(Failure(check, f"the unreadable {path} is not in skipped",
                                        f"skipped: {[str(e) for e in skipped]}"))  # fmt: skip
        if mode == "sync":
            raising = {k: v for k, v in kwargs.items() if k not in ("on_error", "skipped")}
            try:
                pba.lookup_sync(lake.sources, where, **raising)
                failures.append(
                    Failure(check, "on_error='raise' returned rows over an unreadable file")
                )
            except pba.PyBloomError as exc:
                if not any(Path(p).name in str(exc) for p in lake.unreadable):
                    failures.append(Failure(check, f"the error does not name the file: {exc}"))
    return failures


def check_lookup_sync(ctx: Context) -> list[Failure]:
    return lookup_on(ctx, "lookup_sync", ctx.lake, "sync")


def check_lookup_async(ctx: Context) -> list[Failure]:
    return lookup_on(ctx, "lookup_async", ctx.lake, "async")


def check_lookup_batches(ctx: Context) -> list[Failure]:
    return lookup_on(ctx, "lookup_batches", ctx.lake, "batches")


def check_lookup_text(ctx: Context) -> list[Failure]:
    return lookup_on(ctx, "lookup_text", ctx.lake, "sync", text=True)


# ---- pruned_dataset -----------------------------------------------------------------------------


def _engine_rows(ds: Any, engine: str) -> tuple[pa.Table, list[str]]:
    names = list(ds.schema.names)
    if engine == "pyarrow":
        return ds.to_table(), names
    import duckdb

    con = duckdb.connect()
    try:
        con.register("t", ds)
        select = ", ".join(sql.quote(n) for n in names) or "*"
        table = con.sql(f"SELECT {select} FROM t").to_arrow_table()
        return uuids_as_bytes(table, ds.schema), names
    finally:
        con.close()


def uuids_as_bytes(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """DuckDB hands UUID columns back as text: their 16 bytes, as the dataset holds them."""
    import uuid

    for i, name in enumerate(table.column_names):
        wanted = schema.field(name).type if schema.get_field_index(name) >= 0 else None
        uuid_type = (
            isinstance(wanted, pa.BaseExtensionType) and wanted.extension_name == "arrow.uuid"
        )
        if uuid_type and pa.types.is_string(table.column(i).type):
            raw = [None if v is None else uuid.UUID(v).bytes for v in table.column(i).to_pylist()]
            table = table.set_column(i, name, pa.array(raw, pa.binary(16)))
    return table


def _duckdb_blind(t: pa.DataType) -> bool:
    """Types DuckDB cannot scan from Arrow (not the product's matter)."""
    if pa.types.is_float16(t) or (pa.types.is_decimal(t) and t.bit_width == 256):
        return True
    if pa.types.is_struct(t):
        return any(_duckdb_blind(f.type) for f in t)
    return False


def _dataset(ctx: Context, check: str, engine: str) -> list[Failure]:
    case, lake = ctx.case, ctx.lake
    expected_err = expected_error(case, lake, case.predicate)

    def call() -> Any:
        return pba.pruned_dataset_sync(lake.sources, case.predicate, **partitioning_of(case))

    if expected_err:
        return _expect_error(check, expected_err, call)
    if lake.unreadable and not lake.readable:
        return _no_file_read(check, lake, call)
    try:
        ds = call()
    except Exception as exc:
        return [failure_of(check, exc)]
    failures = []
    union = lake.names(columns_of(case.predicate))  # no columns are asked of a dataset
    if sorted(ds.schema.names) != sorted(union):
        failures.append(Failure(check, "the dataset's columns are not the files' columns",
                                f"expected {union}, got {ds.schema.names}"))  # fmt: skip
    if lake.unreadable:
        files = {os.path.normpath(f) for f in ds.files}
        for path in lake.unreadable:
            if path not in files:
                failures.append(Failure(check, f"the unreadable {path} is left out of the dataset"))
        return failures  # the engine cannot scan a file that is not Parquet
    if engine == "duckdb" and any(_duckdb_blind(f.type) for f in ds.schema):
        return failures  # DuckDB cannot register the dataset: float16, decimal256
    try:
        table, names = _engine_rows(ds, engine)
    except Exception as exc:
        return [*failures, failure_of(check, exc)]
    rows = canonical_rows(table, names)
    matches = expected_rows(case.predicate, lake.readable, names)
    everything: Counter[tuple[Any, ...]] = Counter()
    for f in lake.readable:
        everything.update(canonical_rows(f.table, names))
    lost = matches - rows
    if lost:
        failures.append(Failure(check, "matching rows are missing from the dataset",
                                f"columns {names}\n  missing: {show_rows(lost)}"))  # fmt: skip
    invented = rows - everything
    if invented:
        failures.append(Failure(check, "the dataset has rows the files do not",
                                f"columns {names}\n  extra: {show_rows(invented)}"))  # fmt: skip
    if engine == "duckdb":
        failures += _duckdb_where(ctx, ds, names, matches)
    return failures


def _no_file_read(check: str, lake: Lake, call: Callable[[], Any]) -> list[Failure]:
    """Every file left (after its folders) is unreadable: the documented SourceError ("no
    file at all can be read": no schema to give the engine), naming one of them."""
    try:
        got = call()
    except pba.SourceError as exc:
        if any(Path(p).name in str(exc) for p in lake.unreadable):
            return []
        return [Failure(check, f"the error does not name an unreadable file: {exc}")]
    except Exception as exc:
        return [failure_of(check, exc)]
    return [Failure(check, "no file can be read, yet a dataset came back", repr(got)[:300])]


def _duckdb_where(
    ctx: Context, ds: Any, names: list[str], matches: Counter[tuple[Any, ...]]
) -> list[Failure]:
    """DuckDB's own WHERE over the dataset, where its SQL means what the oracle means."""
    domains = {c: next((f.domains[c] for f in ctx.lake.readable if f.has(c)), None)
               for c in columns_of(ctx.case.predicate)}  # fmt: skip
    where = sql.where(ctx.case.predicate, domains)
    if where is None or any(c.split(".")[0] not in names for c in domains):
        return []
    import duckdb

    con = duckdb.connect()
    try:
        con.register("t", ds)
        select = ", ".join(sql.quote(n) for n in names)
        got = uuids_as_bytes(
            con.sql(f"SELECT {select} FROM t WHERE {where}").to_arrow_table(), ds.schema
        )
    except duckdb.Error:
        return []  # DuckDB refuses the literal (e.g. beyond the column's DECIMAL): its matter
    finally:
        con.close()
    return compare_rows("dataset_duckdb", canonical_rows(got, names), matches, names)


def check_dataset_pyarrow(ctx: Context) -> list[Failure]:
    return _dataset(ctx, "dataset_pyarrow", "pyarrow")


def check_dataset_duckdb(ctx: Context) -> list[Failure]:
    return _dataset(ctx, "dataset_duckdb", "duckdb")


CHECKS: dict[str, Callable[[Context], list[Failure]]] = {
    "prune": check_prune,
    "prune_async": check_prune_async,
    "prune_text": check_prune_text,
    "text_round_trip": check_text_round_trip,
    "lookup_sync": check_lookup_sync,
    "lookup_async": check_lookup_async,
    "lookup_batches": check_lookup_batches,
    "lookup_text": check_lookup_text,
    "dataset_pyarrow": check_dataset_pyarrow,
    "dataset_duckdb": check_dataset_duckdb,
}


def run_case(
    case: Case, workdir: Path, only: set[str] | None = None, known: frozenset[str] | None = None
) -> list[Failure]:
    """Write the case under ``workdir`` (empty), run its checks (or ``only`` those)."""
    from .index_checks import run_index_checks
    from .table_checks import run_table_checks

    known = gates.KNOWN_BUGS if known is None else known
    checks = set(case.checks) if only is None else set(case.checks) & only
    if case.table is not None:
        return run_table_checks(case, workdir, checks, known)
    root = workdir / "lake"
    paths = write_lake(case, root)
    ctx = Context(case, open_lake(case, root, paths))
    failures: list[Failure] = []
    for name, check in CHECKS.items():
        if name in checks:
            failures += check(ctx)
    if case.index is not None and checks & {"sidecar", "lake", "lake_lookup"}:
        failures += run_index_checks(ctx, paths, checks)
    return failures
