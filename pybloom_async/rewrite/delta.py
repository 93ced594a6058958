"""Filters added to a Delta table's files by one deltalake write transaction.

deltalake 1.6 commits file actions given by the caller:
``DeltaTable.create_write_transaction(actions, mode="append", ...)`` with
``deltalake.transaction.RemoveAction`` and ``AddAction``. One version removes each
old file and adds its copy with the new size, the same partition values and the
same statistics, ``dataChange`` false (the rows did not change, as a compaction
writes it). deltalake checks the commit against the versions committed since the
table was read: one that removed or replaced files (a delete, an update, an
overwrite, a compaction, another add-filters) makes it fail
(``CommitFailedError``); blind appends do not conflict and ours lands after them.

An add action is rebuilt from what deltalake reads (``get_add_actions``): the
partition values as the log's text, the statistics as its JSON. Before anything
is written, the rebuilt actions are committed to a scratch table in a temporary
folder (``create_table_with_add_actions``) and read back: a file whose path,
partition values or statistics do not come back as deltalake read them from the
table's log is left as it is and reported. The path matters most: a remove names
its file as deltalake spells it, and a log written by another engine may spell a
path differently, which would leave the old file live beside its copy. A
statistic that cannot be written back exactly (a NaN bound) is left out, which
only makes readers skip less. After the commit the table's latest version is read
again and every replaced file must be gone from it.

Left as they are (reported): files with a deletion vector (``AddAction`` carries
none, so their deleted rows would come back) and files outside the table's folder
(shallow clones). Refused: tables with row tracking (``AddAction`` carries no
``baseRowId``) and, as for every read here, column mapping.
"""

from __future__ import annotations

import datetime
import decimal
import json
import math
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import unquote

from ..checks import require_pyarrow
from ..errors import SourceError, UnsupportedTypeError
from ..tables import import_extra, resolve_table
from ..tables.delta import files_with_deletion_vectors, reopen
from .add_filters import FilterSpec
from .results import AddFiltersResult, SkippedFile
from .table_plan import Candidate, TablePlan, check_names, commit_conflict, sibling

#: The commitInfo key holding the run's id: how a commit's outcome is found in the history.
MARKER = "pybloomAsyncAddFilters"


@dataclass(frozen=True)
class _Entry:
    """A live file as deltalake reads it, and the actions that replace it."""

    rel: str  # relative to the root, decoded (as deltalake's actions take a path)
    log_path: str  # as the log spells it
    size: int
    partition_values: dict[str, str | None]
    stats: str
    read: Mapping[str, Any]  # the row of get_add_actions(flatten=False)
    new_rel: str = ""


# ---- values as the log writes them ----------------------------------------------------


def _iso(value: datetime.datetime, sep: str) -> str:
    spec = "milliseconds" if value.microsecond % 1000 == 0 else "microseconds"
    return value.isoformat(sep=sep, timespec=spec)


def _stat_json(value: Any) -> str | None:
    """A statistic as Delta's stats JSON holds it; None: left out (it cannot be exact)."""
    if value is None or isinstance(value, bytes):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return json.dumps(value) if math.isfinite(value) else None
    if isinstance(value, decimal.Decimal):
        return format(value, "f") if value.is_finite() else None
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:  # timestamp_ntz
            return json.dumps(_iso(value, " "))
        utc = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return json.dumps(_iso(utc, "T") + "Z")
    if isinstance(value, datetime.date):
        return json.dumps(value.isoformat())
    if isinstance(value, Mapping):
        members = [
            f"{json.dumps(str(k), ensure_ascii=False)}:{text}"
            for k, v in value.items()
            if (text := _stat_json(v)) is not None
        ]
        return "{" + ",".join(members) + "}" if members else None
    return None


def _stats(read: Mapping[str, Any]) -> str:
    """The stats JSON of an add action, from the statistics deltalake read."""
    parts = []
    if read.get("num_records") is not None:
        parts.append(f'"numRecords":{int(read["num_records"])}')
    for key, name in (("min", "minValues"), ("max", "maxValues"), ("null_count", "nullCount")):
        text = _stat_json(read.get(key))
        if text is not None:
            parts.append(f'"{name}":{text}')
    return "{" + ",".join(parts) + "}"


def _partition_text(value: Any) -> str | None:
    """A partition value as the log's text (None: null).

    Raises
    ------
    ValueError
        A value of a kind the log's text form is not certain for here (binary).
    """
    if value is None:
        return None
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, datetime.datetime):
        moment: datetime.datetime = value
        if moment.tzinfo is not None:
            moment = moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return moment.isoformat(sep=" ", timespec="microseconds")
    if isinstance(value, datetime.date):
        return value.isoformat()
    raise ValueError(f"a partition value of type {type(value).__name__}")


def _kept(read: Any, back: Any) -> bool:
    """Whether statistics read back say nothing the original ones do not (None: left out)."""
    if isinstance(read, Mapping) and isinstance(back, Mapping):
        return all(_kept(read.get(k), v) for k, v in back.items())
    return back is None or (read == back and type(read) is type(back))


# ---- the plan ---------------------------------------------------------------------------


def plan(table: Any, spec: FilterSpec) -> TablePlan:
    """The live files of the table's loaded version that may get filters; blocking.

    Raises
    ------
    UnsupportedTypeError
        The table's protocol needs what deltalake's actions cannot carry (row
        tracking), or what pybloom-async does not read (column mapping).
    InvalidArgumentError
        A column is not in the table, or is a partition column.
    """
    pa = require_pyarrow("add filters to Delta tables")
    files = resolve_table(table, None, spec.options)
    if "rowTracking" in (table.protocol().writer_features or ()):
        raise UnsupportedTypeError(
            f"the Delta table {files.name} tracks row ids (rowTracking), which deltalake's "
            "AddAction cannot carry: its files are left as they are"
        )
    check_names(spec.names, files.top_level, files.partition_columns, files.name)
    located = {rel: path for path, rel in files.relative.items()}
    vectors = set(files_with_deletion_vectors(files, set(files.relative)))
    out = TablePlan("delta", files.name, int(table.version()))
    out.partition_columns = files.partition_columns
    entries: dict[str, _Entry] = {}
    for read in pa.table(table.get_add_actions(flatten=False)).to_pylist():
        log_path = str(read["path"])
        rel = unquote(log_path)
        path = located.get(rel, rel)
        if "://" in rel or os.path.isabs(rel):
            out.skipped.append(SkippedFile(path, "outside the table's folder (a shallow clone)"))
        elif path in vectors:
            out.skipped.append(
                SkippedFile(
                    path, "has a deletion vector, which deltalake's AddAction cannot carry: "
                    "its copy would bring the deleted rows back",
                )
            )  # fmt: skip
        else:
            try:
                values = {c: _partition_text(v) for c, v in (read.get("partition") or {}).items()}
            except ValueError as exc:
                out.skipped.append(SkippedFile(path, f"{exc} cannot be written back exactly"))
                continue
            entries[path] = _Entry(
                rel, log_path, int(read["size_bytes"]), values, _stats(read), read
            )
    problems = _read_back(table, list(entries.values()), files.partition_columns)
    for path, entry in entries.items():
        if entry.log_path in problems:
            out.skipped.append(SkippedFile(path, problems[entry.log_path]))
            continue
        target = sibling(path)
        out.candidates.append(
            Candidate(path, target, replace(entry, new_rel=_new_rel(entry, target)))
        )
    return out


def _new_rel(entry: _Entry, target: str) -> str:
    folder, slash, _ = entry.rel.rpartition("/")
    return f"{folder}{slash}{target.rpartition('/')[2]}"


def _read_back(table: Any, entries: Sequence[_Entry], partitions: Sequence[str]) -> dict[str, str]:
    """What deltalake reads back differently from the table's log, by log path (see module)."""
    if not entries:
        return {}
    import pyarrow as pa

    deltalake = import_extra("deltalake", "delta", "add filters to Delta tables")
    transaction = import_extra("deltalake.transaction", "delta", "add filters to Delta tables")
    adds = [
        transaction.AddAction(e.rel, e.size, e.partition_values, 0, False, e.stats) for e in entries
    ]
    with tempfile.TemporaryDirectory(prefix="pybloom-async-delta-check-") as folder:
        try:
            transaction.create_table_with_add_actions(
                folder, table.schema(), adds, mode="error", partition_by=list(partitions),
                configuration=table.metadata().configuration,
            )  # fmt: skip
            back = pa.table(deltalake.DeltaTable(folder).get_add_actions(flatten=False))
        except Exception as exc:  # deltalake's own errors
            raise UnsupportedTypeError(
                f"deltalake cannot read back the add actions rebuilt for the table "
                f"{table.table_uri}: {str(exc).strip().splitlines()[0]}"
            ) from None
    rows = {str(row["path"]): row for row in back.to_pylist()}
    problems = {}
    for e in entries:
        row = rows.get(e.log_path)
        if row is None:
            problems[e.log_path] = (
                "deltalake spells its path differently from the table's log, so a remove "
                "would not name it"
            )
        elif row.get("partition") != e.read.get("partition"):
            problems[e.log_path] = "its partition values do not read back as the log has them"
        elif row.get("num_records") != e.read.get("num_records") or not all(
            _kept(e.read.get(k), row.get(k)) for k in ("min", "max", "null_count")
        ):
            problems[e.log_path] = "its statistics do not read back as the log has them"
    return problems


# ---- the commit -------------------------------------------------------------------------


def commit(
    table: Any, plan: TablePlan, done: Sequence[tuple[Candidate, AddFiltersResult]], marker: str
) -> None:
    """One version: each old file removed, its copy added; blocking.

    Raises
    ------
    CommitConflictError
        deltalake refused the commit (a conflicting concurrent commit).
    """
    transaction = import_extra("deltalake.transaction", "delta", "commit to Delta tables")
    exceptions = import_extra("deltalake.exceptions", "delta", "commit to Delta tables")
    now = int(time.time() * 1000)
    actions: list[Any] = []
    for candidate, result in done:
        e: _Entry = candidate.entry
        actions.append(transaction.RemoveAction(e.rel, False, now, e.size, e.partition_values))
        actions.append(
            transaction.AddAction(
                e.new_rel, result.bytes_after, e.partition_values, now, False, e.stats
            )
        )
    try:
        table.create_write_transaction(
            actions, "append", table.schema(), partition_by=list(plan.partition_columns),
            commit_properties=transaction.CommitProperties(custom_metadata={MARKER: marker}),
        )  # fmt: skip
    except exceptions.CommitFailedError as exc:
        raise commit_conflict(plan, exc) from None


def find_commit(
    table: Any, plan: TablePlan, done: Sequence[tuple[Candidate, AddFiltersResult]], marker: str
) -> int | None:
    """The version this run committed (None: none), its old files checked gone; blocking.

    Raises
    ------
    SourceError
        The table cannot be read; or deltalake committed the adds but left an old
        file live (then one more version removes the copies again).
    """
    latest = reopen(table)
    since = int(latest.version()) - (plan.read_version or 0)
    history = latest.history(since) if since > 0 else []
    version = next((int(h["version"]) for h in history if h.get(MARKER) == marker), None)
    if version is None:
        return None
    import pyarrow as pa

    live = {unquote(str(p)) for p in pa.table(latest.get_add_actions()).column("path").to_pylist()}
    stale = [(c, r) for c, r in done if c.entry.rel in live]
    if stale:
        _undo(latest, plan, stale, marker)
        raise SourceError(
            f"deltalake committed version {version} but left {len(stale)} replaced file(s) "
            f"live; version {version + 1} removes their copies again, so the table reads as "
            "before",
            path=stale[0][0].path,
        )
    return version


def _undo(
    latest: Any, plan: TablePlan, stale: Sequence[tuple[Candidate, AddFiltersResult]], marker: str
) -> None:
    transaction = import_extra("deltalake.transaction", "delta", "commit to Delta tables")
    now = int(time.time() * 1000)
    actions = [
        transaction.RemoveAction(
            c.entry.new_rel, False, now, r.bytes_after, c.entry.partition_values
        )
        for c, r in stale
    ]
    latest.create_write_transaction(
        actions, "append", latest.schema(), partition_by=list(plan.partition_columns),
        commit_properties=transaction.CommitProperties(custom_metadata={MARKER: marker + ".undo"}),
    )  # fmt: skip
