"""Iceberg delete files written with pyarrow and committed through pyiceberg, for tests.

pyiceberg 0.12 writes no delete files (its deletes rewrite data files) and its manifest
writer writes data manifests only, so tests make them here: position delete files
(``file_path``, ``pos``) and equality delete files (the equality columns, with their
field ids), written by pyarrow as the Iceberg spec lays them out, then committed as a
new snapshot whose manifest list holds the snapshot's manifests and one delete
manifest (content ``deletes``) listing the new files. The snapshot, its sequence
number and the table metadata are pyiceberg's own (its transaction commits them).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestWriterV2,
)
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Operation
from pyiceberg.table.update.snapshot import _FastAppendFiles
from pyiceberg.typedef import Record

#: The reserved field ids of a position delete file's columns (the Iceberg spec).
FILE_PATH_ID = 2147483546
POS_ID = 2147483545


class _DeleteManifestWriter(ManifestWriterV2):
    """pyiceberg's v2 manifest writer, for a manifest of delete files."""

    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


class _AddDeletes(_FastAppendFiles):
    """A snapshot that adds delete files: the parent's manifests and one delete manifest."""

    def _manifests(self) -> list[ManifestFile]:
        spec = self._transaction.table_metadata.spec()
        writer = _DeleteManifestWriter(
            spec, self.schema(), self.new_manifest_output(), self._snapshot_id, self._compression
        )
        with writer:
            for delete in self._added_data_files:
                writer.add(
                    ManifestEntry.from_args(
                        status=ManifestEntryStatus.ADDED,
                        snapshot_id=self._snapshot_id,
                        sequence_number=None,
                        file_sequence_number=None,
                        data_file=delete,
                    )
                )
        return [writer.to_manifest_file(), *self._existing_manifests()]


def commit_delete_files(table: Table, deletes: Sequence[DataFile]) -> Table:
    """Commit a snapshot adding ``deletes``; returns the table reloaded."""
    with table.transaction() as tx:
        producer = _AddDeletes(operation=Operation.DELETE, transaction=tx, io=table.io)
        for delete in deletes:
            producer.append_data_file(delete)
        producer.commit()
    return table.refresh()


def _with_id(field: pa.Field, field_id: int) -> pa.Field:
    return field.with_metadata({b"PARQUET:field_id": str(field_id).encode()})


def position_delete_file(
    path: Path, rows: Sequence[tuple[str, int]], partition: Record | None = None,
    uri: str | None = None,
) -> DataFile:  # fmt: skip
    """A position delete file of ``(data file path, position)`` rows, sorted as the spec asks,
    written at ``path``; ``uri``: where the table will find it (default: ``path``)."""
    rows = sorted(rows)
    schema = pa.schema([
        _with_id(pa.field("file_path", pa.string(), nullable=False), FILE_PATH_ID),
        _with_id(pa.field("pos", pa.int64(), nullable=False), POS_ID),
    ])  # fmt: skip
    data = pa.table(
        {"file_path": [r[0] for r in rows], "pos": pa.array([r[1] for r in rows], pa.int64())},
        schema=schema,
    )
    pq.write_table(data, path)
    bounds = {}
    targets = {r[0] for r in rows}
    if len(targets) == 1:
        # One data file: its path as the bounds of file_path, as Iceberg's writers set them
        # (a reader then applies the file to that data file only).
        bounds = {FILE_PATH_ID: next(iter(targets)).encode()}
    return DataFile.from_args(
        content=DataFileContent.POSITION_DELETES, file_path=uri or path.as_uri(),
        file_format=FileFormat.PARQUET, partition=partition or Record(),
        record_count=len(rows), file_size_in_bytes=path.stat().st_size,
        lower_bounds=bounds or None, upper_bounds=bounds or None,
    )  # fmt: skip


def equality_delete_file(
    path: Path, table: Table, columns: dict[str, list[Any]], partition: Record | None = None
) -> DataFile:
    """An equality delete file: one row per delete, the columns named by their table names
    (their field ids written), typed as the table's schema."""
    schema = table.schema()
    arrow = schema.as_arrow()
    fields, ids = [], []
    for name in columns:
        field_id = schema.find_field(name).field_id
        ids.append(field_id)
        fields.append(_with_id(arrow.field(name), field_id))
    data = pa.table(columns, schema=pa.schema(fields))
    pq.write_table(data, path)
    return DataFile.from_args(
        content=DataFileContent.EQUALITY_DELETES, file_path=path.as_uri(),
        file_format=FileFormat.PARQUET, partition=partition or Record(),
        record_count=data.num_rows, file_size_in_bytes=path.stat().st_size, equality_ids=ids,
    )  # fmt: skip


__all__ = ["commit_delete_files", "equality_delete_file", "position_delete_file"]
