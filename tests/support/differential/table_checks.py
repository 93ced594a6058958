"""Delta and Iceberg tables made of a case's data: prune, lookup and pruned_dataset on the
table object against the table library's own scan.

Delta tables are written by ``deltalake.write_deltalake`` (one append per file of the case,
its writer settings carried over as ``WriterProperties``), optionally partitioned, then
rows are deleted by the library (files rewritten) or by deletion vectors (deltalake reads
them but does not write them: committed by ``support.delta_logs``), then maybe compacted by
deltalake; the table is read at its latest version or, by time travel, an older one. The
oracle is deltalake's own scan (``QueryBuilder``) of the version read. Iceberg tables
get files written by pyarrow with the case's settings, registered with ``add_files`` in a
SQLite catalog, then rows deleted by the library (files rewritten), by a position delete
file or by an equality delete file on ``id`` (committed through pyiceberg). The oracle is
the library's own full scan (deletes applied), filtered by our evaluator; pyiceberg 0.12
refuses equality deletes, so there it is the scan of the snapshot before them less the
rows whose ``id`` they delete (every ``id`` of a table case is distinct).
"""

from __future__ import annotations

import os
import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq

import pybloom_async as pba

from . import gates
from .checks import Failure, compare_rows, failure_of, show_rows, two_phase
from .evolution import make_evolved_iceberg
from .kinds import KINDS
from .oracle import FileFacts, canonical_rows, columns_of, evaluate, expected_rows, facts_of
from .spec import Case, FileSpec
from .write import arrow_table, write_file


def _path(uri: str) -> str:
    return os.path.normpath(uri.removeprefix("file://"))


def _delta_properties(spec: FileSpec) -> Any:
    import deltalake

    options = dict(spec.options)
    columns = {}
    for name, setting in (options.get("bloom_filter_options") or {}).items():
        bloom = deltalake.BloomFilterProperties(True, fpp=setting["fpp"], ndv=setting["ndv"])
        columns[name] = deltalake.ColumnProperties(bloom_filter_properties=bloom)
    for c in spec.columns:
        if c.name not in columns:
            columns[c.name] = deltalake.ColumnProperties()
    for props in columns.values():
        if options.get("use_dictionary") is False:
            props.dictionary_enabled = False
        if options.get("write_statistics") is False:
            props.statistics_enabled = "NONE"
    return deltalake.WriterProperties(
        max_row_group_size=options.get("row_group_size"),
        write_batch_size=options.get("write_batch_size"),
        data_page_size_limit=options.get("data_page_size"),
        compression={"NONE": "UNCOMPRESSED"}.get(options["compression"], options["compression"]),
        column_properties=columns,
    )


def make_delta(case: Case, root: Path) -> Any:
    import deltalake

    from support.delta_logs import commit_deletion_vectors

    plan = case.table
    assert plan is not None
    location = root / "delta"
    config = {"delta.enableDeletionVectors": "true"} if plan.delete == "vector" else None
    for spec in case.files:
        deltalake.write_deltalake(
            location, arrow_table(spec), mode="append", configuration=config,
            partition_by=[plan.partition_by] if plan.partition_by else None,
            writer_properties=_delta_properties(spec),
        )  # fmt: skip
    dt = deltalake.DeltaTable(location)
    ids = [case.files[0].columns[0].values[i] for i in plan.deleted_rows]
    if plan.delete == "rewrite":
        dt.delete(f"id IN ({', '.join(map(str, ids))})")
    elif plan.delete == "vector":
        # The first file's rows lie in the first version's files (one per partition value).
        first = deltalake.DeltaTable(location, version=0)
        vectors = {}
        for action in pa.table(first.get_add_actions(flatten=True)).to_pylist():
            held = pq.read_table(location / unquote(action["path"]), columns=["id"])
            positions = [i for i, v in enumerate(held.column("id").to_pylist()) if v in ids]
            if positions:
                vectors[action["path"]] = positions
        if vectors:
            commit_deletion_vectors(location, vectors)
    if plan.compact:
        deltalake.DeltaTable(location).optimize.compact()
    latest = deltalake.DeltaTable(location).version()  # a compaction may commit nothing
    return deltalake.DeltaTable(location, version=max(0, latest - plan.back))


def make_iceberg(case: Case, root: Path) -> Any:
    from support.iceberg_catalog import sql_catalog

    catalog = sql_catalog(root, "diff", "warehouse")
    data = root / "data"
    data.mkdir()
    uris = []
    for spec in case.files:
        path = data / spec.name
        write_file(spec, path)
        uris.append(path.as_uri())
    schema = pq.read_schema(data / case.files[0].name).remove_metadata()
    table = catalog.create_table("ns.t", schema=schema)
    table.add_files(uris)
    table = catalog.load_table("ns.t")
    plan = case.table
    assert plan is not None
    ids = [case.files[0].columns[0].values[i] for i in plan.deleted_rows]
    if plan.delete == "rewrite":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table.delete(f"id IN ({', '.join(map(str, ids))})")
        table = catalog.load_table("ns.t")
    elif plan.delete == "position" and plan.deleted_rows:
        from support.iceberg_deletes import commit_delete_files, position_delete_file

        first = uris[0]
        rows = [(first, i) for i in plan.deleted_rows]
        table = commit_delete_files(table, [position_delete_file(root / "pos.parquet", rows)])
    elif plan.delete == "equality" and ids:
        from support.iceberg_deletes import commit_delete_files, equality_delete_file

        keys = {"id": pa.array(ids, table.schema().as_arrow().field("id").type)}
        table = commit_delete_files(table, [equality_delete_file(root / "eq.parquet", table, keys)])
    return table


def _before_equality_deletes(table: Any) -> Any:
    """The snapshot an equality delete was committed on (pyiceberg scans that one)."""
    return table.current_snapshot().parent_snapshot_id


def _scan(case: Case, table: Any) -> pa.Table:
    """Every live row, as the table's own library reads it (deletes applied)."""
    if case.family == "delta":
        import deltalake

        query = deltalake.QueryBuilder().register("t", table)
        return pa.table(query.execute("SELECT * FROM t"))
    plan = case.table
    if plan is not None and plan.delete == "equality" and plan.deleted_rows:
        import pyarrow.compute as pc

        before = table.scan(snapshot_id=_before_equality_deletes(table)).to_arrow()
        ids = [case.files[0].columns[0].values[i] for i in plan.deleted_rows]
        return before.filter(pc.invert(pc.is_in(before.column("id"), pa.array(ids))))
    return table.scan().to_arrow()


def _live_files(case: Case, table: Any) -> dict[str, dict[str, Any]]:
    """Live data file -> its partition values (Delta: the library's live files, the values
    from its log)."""
    if case.family == "delta":
        actions = pa.table(table.get_add_actions(flatten=True)).to_pylist()
        root = _path(table.table_uri)
        logged = _logged_partition_values(Path(root))
        return {
            os.path.normpath(os.path.join(root, unquote(a["path"]))): logged[unquote(a["path"])]
            for a in actions
        }
    plan = case.table
    snapshot = None
    if plan is not None and plan.delete == "equality" and plan.deleted_rows:
        snapshot = _before_equality_deletes(table)  # the same data files
    return {_path(t.file.file_path): {} for t in table.scan(snapshot_id=snapshot).plan_files()}


def _logged_partition_values(root: Path) -> dict[str, dict[str, Any]]:
    """Data file (as the log names it) -> its partition values as the log writes them
    (strings; None: null), from the commits' add actions: a string ``''`` stays ``''``, as
    deltalake reads it back (``get_add_actions`` gives None for it). The tables here are
    far below deltalake's checkpoint interval, so every add is in a commit file."""
    import json

    log = root / "_delta_log"
    assert not list(log.glob("*.checkpoint*.parquet")), "a checkpoint: read it too"
    out = {}
    for commit in sorted(log.glob("*.json")):
        for line in commit.read_text().splitlines():
            add = json.loads(line).get("add")
            if add is not None:
                out[unquote(add["path"])] = dict(add.get("partitionValues") or {})
    return out


def _physical(
    path: str, partitions: dict[str, Any], schema: pa.Schema, columns: Sequence[str]
) -> FileFacts:
    """A data file's rows (deleted ones too), its partition values as columns."""
    pf = pq.ParquetFile(path)
    table = pf.read()
    for name, value in partitions.items():
        field = schema.field(name)
        typed = (
            pa.array([value], pa.string()).cast(field.type)
            if value is not None
            else pa.nulls(1, field.type)
        )
        table = table.append_column(
            field,
            pa.repeat(typed[0], table.num_rows) if table.num_rows else pa.array([], field.type),
        )
    rows = [pf.metadata.row_group(i).num_rows for i in range(pf.metadata.num_row_groups)]
    return facts_of(table, path, rows, columns)


def run_table_checks(
    case: Case, workdir: Path, checks: set[str], known: frozenset[str]
) -> list[Failure]:
    """Make the table, then prune, lookup and pruned_dataset on it against its own scan."""
    plan = case.table
    assert plan is not None
    try:
        if plan.format == "delta":
            table = make_delta(case, workdir)
        else:
            table = (make_evolved_iceberg if plan.evolve else make_iceberg)(case, workdir)
    except Exception as exc:  # the table library refused the data: reported, not the product's
        return [Failure("table_setup", f"{type(exc).__name__}: {exc}"[:300])]
    scanned = _scan(case, table)
    columns = columns_of(case.predicate)
    live = facts_of(scanned, "<table>", [scanned.num_rows], columns)
    names = scanned.column_names
    failures: list[Failure] = []
    if "table_prune" in checks:
        failures += _table_prune(case, table, scanned.schema, "table_prune")
    if "table_lookup" in checks:
        failures += _table_lookup(case, table, live, names)
    if "table_dataset" in checks and not gates.skip_table_dataset(
        known, sum(evaluate(case.predicate, live))
    ):
        deletes = plan.delete in ("vector", "position", "equality")
        failures += _table_dataset(case, table, live, names, deletes)
    indexable = [c for c in columns if c.split(".")[0] != plan.partition_by and _indexable(case, c)]
    if "table_lake" in checks and indexable:
        try:
            pba.build_lake_index_sync(table, indexable)
        except Exception as exc:
            return [*failures, failure_of("table_lake", exc)]
        failures += _table_prune(case, table, scanned.schema, "table_lake", use_index="lake")
    if "table_folder" in checks and not plan.back:  # the folder reads as the latest version
        failures += _table_folder(case, table, live, names)
    return failures


def _refused_by_id(case: Case, exc: Exception) -> bool:
    """The documented refusal of an Iceberg query where a kept file predates a change to a
    column (renamed, dropped and its name reused, float promoted to double): one line
    naming the column (docs/guides/tables.md, Iceberg schema evolution)."""
    plan = case.table
    if plan is None or not plan.evolve:
        return False
    renamed, readded = plan.evolved
    columns = {"ev_f"} if "promote_float" in plan.evolve else set()
    columns |= {f"{renamed}_r", renamed} - {"_r", ""} | ({readded} - {""})
    text = str(exc)
    named = any(f"'{c}" in text for c in columns)
    return named and ("Iceberg" in text or "field id" in text)


def _refusal(exc: Exception, folder: str) -> bool:
    """The documented refusal: it names the table's folder and the form to use."""
    text = str(exc)
    named = folder in text or Path(folder).name in text
    return named and any(form in text.lower() for form in ("delta", "iceberg"))


def _table_folder(case: Case, table: Any, live: FileFacts, names: list[str]) -> list[Failure]:
    """A table's folder given as a plain path to lookup, prune and pruned_dataset: the
    table's own answer, or a PyBloomError naming the table and the form to use; never the
    rows of the plain files below it (deleted, rewritten or older ones)."""
    folder = _path(table.table_uri if case.family == "delta" else table.location())
    expected = expected_rows(case.predicate, [live], names)
    everything = Counter(canonical_rows(live.table, names))
    calls = {
        "lookup": lambda: pba.lookup_sync(folder, case.predicate),
        "prune": lambda: pba.prune_sync(folder, case.predicate),
        "pruned_dataset": lambda: pba.pruned_dataset_sync(folder, case.predicate),
    }
    failures: list[Failure] = []
    for entry, call in calls.items():
        try:
            got = call()
        except pba.PyBloomError as exc:
            if not _refusal(exc, folder):
                failures.append(Failure("table_folder", f"{entry}(table folder) raised without "
                                        f"naming the table and the form to use: "
                                        f"{type(exc).__name__}: {exc}"[:300]))  # fmt: skip
            continue
        except Exception as exc:
            failures.append(failure_of("table_folder", exc))
            continue
        problem = ""
        if entry == "lookup":
            rows = canonical_rows(got, names)
            if rows != expected:
                missing, extra = show_rows(expected - rows), show_rows(rows - expected)
                problem = (f"expected {sum(expected.values())} rows, got {sum(rows.values())}; "
                           f"missing {missing}; extra {extra}")  # fmt: skip
        elif entry == "prune":
            held = set(_live_files(case, table))
            strange = sorted({_path(v.file) for v in got} - held)
            if strange:
                problem = f"verdicts for files the table does not hold: {strange[:3]}"
        else:
            rows = canonical_rows(got.to_table(), names)
            if expected - rows or rows - everything:
                problem = (f"missing {show_rows(expected - rows)}; rows the table does not hold: "
                           f"{show_rows(rows - everything)}")  # fmt: skip
        if problem:
            failures.append(Failure("table_folder", f"{entry}(table folder) does not give the "
                                    "table's answer", problem))  # fmt: skip
    return failures


def _indexable(case: Case, path: str) -> bool:
    name = path.split(".")[0]
    kind = next((KINDS[c.kind] for c in case.files[0].columns if c.name == name), None)
    return kind is not None and (bool(kind.children) or kind.indexable)


def _table_lookup(case: Case, table: Any, live: FileFacts, names: list[str]) -> list[Failure]:
    """lookup on the table: the scan's rows where the predicate holds, every table column
    (in any order: the docs do not say which)."""
    try:
        with two_phase(case.lookup.two_phase):
            got = pba.lookup_sync(table, case.predicate)
    except pba.UnsupportedTypeError as exc:
        return [] if _refused_by_id(case, exc) else [failure_of("table_lookup", exc)]
    except Exception as exc:
        return [failure_of("table_lookup", exc)]
    failures = []
    if sorted(got.column_names) != sorted(names):
        failures.append(Failure("table_lookup", "result columns differ",
                                f"expected {names}, got {got.column_names}"))  # fmt: skip
    expected = expected_rows(case.predicate, [live], names)
    return failures + compare_rows("table_lookup", canonical_rows(got, names), expected, names)


def _table_prune(
    case: Case, table: Any, schema: pa.Schema, check: str, **kwargs: Any
) -> list[Failure]:
    """No pruned row group of a live file holds a matching row (deleted rows count: pruning
    cannot know them); a live file holding one gets verdicts; no verdict for another file."""
    try:
        verdicts = pba.prune_sync(table, case.predicate, **kwargs)
    except Exception as exc:
        return [failure_of(check, exc)]
    live = _live_files(case, table)
    columns = columns_of(case.predicate)
    physical = {path: _physical(path, parts, schema, columns) for path, parts in live.items()}
    problems = []
    answered = set()
    for v in verdicts:
        path = _path(v.file)
        if path not in live:
            problems.append(f"a verdict for a file the table does not hold: {v.file}")
            continue
        answered.add(path)
        if v.kept:
            continue
        facts = physical[path]
        mask = evaluate(case.predicate, facts)
        groups = facts.row_groups_of_rows()
        hits = sum(m and v.row_group in (None, g) for g, m in zip(groups, mask, strict=True))
        if hits:
            problems.append(f"{v.file} row group {v.row_group} pruned ({v.rule}: {v.reason}) "
                            f"but holds {hits} matching rows")  # fmt: skip
    vectors = case.table is not None and case.table.delete in ("vector", "position", "equality")
    for path, facts in physical.items():
        # A file whose matching rows a delete removed may be left out.
        if path not in answered and not vectors and any(evaluate(case.predicate, facts)):
            problems.append(f"{path} holds matching rows and got no verdict")
    return [Failure(check, problems[0], "\n".join(problems[1:6]))] if problems else []


def _table_dataset(
    case: Case, table: Any, live: FileFacts, names: list[str], deletes: bool
) -> list[Failure]:
    """pruned_dataset on the table: the table's columns, every matching live row."""
    try:
        ds = pba.pruned_dataset_sync(table, case.predicate)
    except pba.UnsupportedTypeError as exc:
        if deletes and "lookup" in str(exc):
            return []  # a kept file with deleted rows is refused, as documented
        if _refused_by_id(case, exc):
            return []
        return [failure_of("table_dataset", exc)]
    except Exception as exc:
        return [failure_of("table_dataset", exc)]
    failures = []
    if sorted(ds.schema.names) != sorted(names):
        failures.append(Failure("table_dataset", "the dataset's columns are not the table's",
                                f"expected {names}, got {ds.schema.names}"))  # fmt: skip
    try:
        rows = canonical_rows(ds.to_table(), names)
    except Exception as exc:
        return [*failures, failure_of("table_dataset", exc)]
    lost = expected_rows(case.predicate, [live], names) - rows
    if lost:
        failures.append(Failure("table_dataset", "matching rows are missing from the dataset",
                                f"missing: {show_rows(lost)}"))  # fmt: skip
    return failures


__all__ = ["run_table_checks"]
