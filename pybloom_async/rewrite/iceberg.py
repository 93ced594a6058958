"""Filters added to an Iceberg table's files by one pyiceberg overwrite.

pyiceberg 0.12 writes no Bloom filters, and replaces given data files through its
transaction API: ``table.transaction().update_snapshot().overwrite()`` takes
``delete_data_file`` (the old ``DataFile``) and ``append_data_file`` (the new one),
and ``commit_transaction`` makes one snapshot of them (operation ``overwrite``:
pyiceberg offers no ``replace`` snapshot for rewrites). The new ``DataFile`` is the
old one with its path and ``file_size_in_bytes`` changed: partition, record count,
column sizes, value, null and NaN counts, bounds and split offsets (the row groups
start where they did) are carried over as the manifests had them.

pyiceberg retries a commit that a concurrent one overtook and validates it first:
files it deletes must still be live, no delete file may have been added for them,
and, at the default ``serializable`` isolation, no data file may have been added
meanwhile. A conflict fails the commit (``ValidationException`` or
``CommitFailedException``).

Left as they are (reported): files with delete files (they name the file by its
path, or apply by sequence number: the copy would bring deleted rows back), files
written under an earlier partition spec (pyiceberg writes added files under the
current spec only) and files not in Parquet. Refused: format version 3 tables (a
copy would get new row ids).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..errors import UnsupportedTypeError
from ..tables import import_extra
from ..tables.iceberg import data_location, manifest_location
from .add_filters import FilterSpec
from .results import AddFiltersResult, SkippedFile
from .table_plan import Candidate, TablePlan, check_names, commit_conflict, sibling

#: The snapshot summary property holding the run's id.
MARKER = "pybloom-async.add-filters"


def _name(table: Any) -> str:
    name = table.name()
    return ".".join(name) if isinstance(name, tuple) else str(name)


def plan(table: Any, spec: FilterSpec) -> TablePlan:
    """The live data files of the current snapshot that may get filters; blocking.

    Raises
    ------
    UnsupportedTypeError
        A format version 3 table.
    InvalidArgumentError
        A column is not in the table.
    """
    name = _name(table)
    if table.format_version >= 3:
        raise UnsupportedTypeError(
            f"the Iceberg table {name} has format version {table.format_version}: its files' "
            "copies would get new row ids (row lineage), which pyiceberg cannot carry over"
        )
    check_names(spec.names, [f.name for f in table.schema().fields], (), name)
    snapshot = table.current_snapshot()
    out = TablePlan("iceberg", name, None if snapshot is None else int(snapshot.snapshot_id))
    if snapshot is None:
        return out
    current = table.metadata.default_spec_id
    for task in table.scan(snapshot_id=snapshot.snapshot_id).plan_files():
        data = task.file
        path = str(data.file_path)
        kind = getattr(data.file_format, "name", str(data.file_format))
        if kind != "PARQUET":
            out.skipped.append(SkippedFile(path, f"a {kind} file, not Parquet"))
        elif task.delete_files:
            out.skipped.append(
                SkippedFile(
                    path, f"rows of it are deleted by {len(task.delete_files)} delete file(s), "
                    "which would not apply to a copy",
                )
            )  # fmt: skip
        elif data.spec_id != current:
            out.skipped.append(
                SkippedFile(
                    path, f"written under partition spec {data.spec_id}; pyiceberg adds files "
                    f"under the current one ({current}) only",
                )
            )  # fmt: skip
        else:
            location = data_location(path)  # the file pyiceberg reads, as a location we open
            out.candidates.append(Candidate(location, sibling(location), data))
    return out


def _copy(manifest: Any, old: Any, path: str, size: int, version: int) -> Any:
    """The old ``DataFile`` at ``path`` with ``size`` bytes; every other field kept."""
    fields = {f.name: getattr(old, f.name) for f in manifest.DATA_FILE_TYPE[version].fields}
    fields.update(file_path=path, file_size_in_bytes=size)
    new = manifest.DataFile.from_args(_table_format_version=version, **fields)
    new.spec_id = old.spec_id
    return new


def commit(
    table: Any, plan: TablePlan, done: Sequence[tuple[Candidate, AddFiltersResult]], marker: str
) -> None:
    """One overwrite snapshot: each old file deleted, its copy appended; blocking.

    Raises
    ------
    CommitConflictError
        pyiceberg refused the commit (a conflicting concurrent commit).
    """
    manifest = import_extra("pyiceberg.manifest", "iceberg", "commit to Iceberg tables")
    exceptions = import_extra("pyiceberg.exceptions", "iceberg", "commit to Iceberg tables")
    transaction = table.transaction()
    overwrite = transaction.update_snapshot(snapshot_properties={MARKER: marker}).overwrite()
    for candidate, result in done:
        overwrite.delete_data_file(candidate.entry)
        overwrite.append_data_file(
            _copy(manifest, candidate.entry, manifest_location(candidate.target),
                  result.bytes_after, table.format_version)
        )  # fmt: skip
    try:
        overwrite.commit()
        transaction.commit_transaction()
    except (exceptions.CommitFailedException, exceptions.ValidationException) as exc:
        raise commit_conflict(plan, exc) from None


def find_commit(
    table: Any, plan: TablePlan, done: Sequence[tuple[Candidate, AddFiltersResult]], marker: str
) -> int | None:
    """The snapshot this run committed (None: none); blocking (a catalog read at most)."""

    def search() -> int | None:
        for snapshot in table.metadata.snapshots:
            summary = snapshot.summary
            if summary is not None and summary.get(MARKER) == marker:
                return int(snapshot.snapshot_id)
        return None

    found = search()
    if found is None:
        table.refresh()
        found = search()
    return found
