"""Rows deleted outside a data file, applied to the rows a lookup decodes itself.

A table format deletes rows without rewriting their file:

* **Delta deletion vectors**: deltalake decodes them (``DeltaTable.deletion_vectors()``,
  :func:`pybloom_async.tables.delta.deletion_masks`) into a keep mask per file; rows
  past the mask's end are live.
* **Iceberg position deletes**: Parquet files of ``(file_path, pos)`` rows
  (:func:`position_deletes`), and deletion vectors, Puffin blobs of a Roaring bitmap
  per data file that pyiceberg decodes (:func:`vector_deletes`).
* **Iceberg equality deletes**: Parquet files of the equality columns' values
  (:func:`equality_deletes`); a data row is deleted when, for some delete row, every
  equality column equals the delete's value, a null matching a null (the spec's
  ``IS NULL`` for a null delete value).

A row's position is its ordinal in its file (0 for the first row of the first row
group): the reader of the rows passes each decoded row's position (a row group's first
row is the sum of the earlier row groups' row counts, from the footer; a page-index
read gives row ranges within the group). :meth:`FileDeletes.live` answers which of
those rows are live. Everything here is pure: the bytes of the delete files are read by
the caller (one whole read per delete file, shared by the data files it covers).

A delete file that cannot be read or understood is an error naming it, never rows
that may have been deleted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ParquetFormatError, UnsupportedTypeError

#: Delete files larger than this are refused before they are read whole (1 GiB).
MAX_DELETE_FILE_BYTES = 1 << 30


@dataclass(frozen=True)
class EqualityDeletes:
    """The rows one equality delete file deletes: its columns (dotted paths of the table's
    current schema) and their values, one row per delete (a ``pyarrow.Table``)."""

    columns: tuple[str, ...]
    keys: Any


@dataclass
class FileDeletes:
    """What deletes the rows of one data file (empty: none)."""

    keep: Any = None  # Delta: numpy bool array, True where the row is live
    positions: Any = None  # Iceberg: sorted, distinct deleted positions (numpy int64)
    equality: list[EqualityDeletes] = field(default_factory=list)

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns the equality deletes compare (read with the predicate's)."""
        return tuple(dict.fromkeys(c for e in self.equality for c in e.columns))

    def __bool__(self) -> bool:
        return self.keep is not None or self.positions is not None or bool(self.equality)

    def live(self, positions: Any, values: Callable[[str], Any] | None = None) -> Any:
        """A numpy bool array: which of the rows at ``positions`` (their ordinals in the
        file, numpy int64) are live.

        ``values(column)`` gives the decoded values of an equality column for those rows
        (a pyarrow array); needed only with equality deletes.
        """
        import numpy as np

        live = np.ones(len(positions), dtype=bool)
        if self.keep is not None and len(self.keep):
            inside = positions < len(self.keep)
            live[inside] &= self.keep[positions[inside]]
        if self.positions is not None and len(self.positions):
            live &= ~np.isin(positions, self.positions, assume_unique=False)
        if self.equality:
            assert values is not None, "equality deletes need the rows' values"
            for deletes in self.equality:
                live &= ~_equal_to_a_delete(deletes, values)
        return live


def _equal_to_a_delete(deletes: EqualityDeletes, values: Callable[[str], Any]) -> Any:
    """Per row: whether its values equal every column of some delete row."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    hit: Any = None
    columns = [values(c) for c in deletes.columns]
    for name, data in zip(deletes.columns, columns, strict=True):
        wanted = deletes.keys.column(name)
        try:
            if wanted.type != data.type:
                wanted = wanted.cast(data.type)
            found = pc.is_in(data, value_set=pc.unique(wanted), skip_nulls=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise UnsupportedTypeError(
                f"the equality deletes on {name!r} cannot be compared with the file's "
                f"{data.type} values: {exc}",
                column=name,
            ) from None
        mask = np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)
        hit = mask if hit is None else hit & mask
    assert hit is not None, "an equality delete compares at least one column"
    if len(deletes.columns) == 1 or not hit.any():
        return hit
    # Several columns: each matched some delete row; keep those whose tuple is one.
    tuples = set(zip(*(deletes.keys.column(c).to_pylist() for c in deletes.columns), strict=True))
    rows = np.flatnonzero(hit)
    picked = [c.take(pa.array(rows)).to_pylist() for c in columns]
    exact = np.array([t in tuples for t in zip(*picked, strict=True)], dtype=bool)
    hit[:] = False
    hit[rows[exact]] = True
    return hit


def _read_parquet(data: bytes, path: str, columns: Sequence[str] | None = None) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.read_table(pa.BufferReader(data), columns=columns, use_threads=False)
    except (OSError, pa.ArrowException) as exc:
        raise ParquetFormatError(f"the delete file cannot be read: {exc}", path=path) from None


def position_deletes(data: bytes, path: str) -> dict[str, Any]:
    """The positions a Parquet position delete file deletes, per data file.

    Keys are the data files' paths as ``file_path`` spells them (the manifests' spelling,
    per the spec); values are sorted numpy int64 arrays.

    Raises
    ------
    ParquetFormatError
        The file is not a position delete file (no ``file_path`` and ``pos``).
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    table = _read_parquet(data, path)
    if "file_path" not in table.column_names or "pos" not in table.column_names:
        raise ParquetFormatError(
            f"a position delete file has the columns file_path and pos, not "
            f"{', '.join(table.column_names)}",
            path=path,
        )
    paths = table.column("file_path")
    if pa.types.is_dictionary(paths.type):
        paths = paths.cast(paths.type.value_type)
    out = {}
    for target in pc.unique(paths).to_pylist():
        if target is None:
            raise ParquetFormatError("a position delete names no file (null file_path)", path=path)
        positions = table.column("pos").filter(pc.equal(paths, target))
        if positions.null_count:
            raise ParquetFormatError("a position delete has a null pos", path=path)
        out[target] = np.sort(np.asarray(positions.to_numpy(), dtype=np.int64))
    return out


def vector_deletes(data: bytes, path: str, decode: Callable[[bytes], Any]) -> dict[str, Any]:
    """The positions the deletion vectors of a Puffin file delete, per data file.

    ``decode(data)`` is the table library's decoder of the file's vectors (pyiceberg's
    ``deletion_vectors_from_puffin_file``): objects with ``referenced_data_file`` and
    ``to_vector()`` (the positions). Values are numpy int64 arrays.

    Raises
    ------
    ParquetFormatError
        The library cannot decode the file.
    """
    import numpy as np

    out: dict[str, Any] = {}
    try:
        for vector in decode(data):
            positions = np.asarray(vector.to_vector().to_numpy(), dtype=np.int64)
            target = str(vector.referenced_data_file)
            if target in out:
                positions = np.concatenate([out[target], positions])
            out[target] = positions
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ParquetFormatError(
            f"the deletion vector file cannot be decoded: {exc}", path=path
        ) from None
    return out


def equality_deletes(
    data: bytes, path: str, fields: Sequence[tuple[int, str, Any]]
) -> EqualityDeletes:
    """The delete rows of a Parquet equality delete file.

    ``fields`` are the file's equality fields: (field id, the column's dotted path in the
    table's current schema, its Arrow type there). A column is found by its field id
    (written by Iceberg writers), else by that path.

    Raises
    ------
    ParquetFormatError
        The file cannot be read, or lacks an equality column.
    UnsupportedTypeError
        A column's values cannot be read as the table's type.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if not fields:
        raise ParquetFormatError("the equality delete file names no equality field", path=path)
    table = _read_parquet(data, path)
    by_id = _field_ids(table.schema)
    columns = {}
    for field_id, name, arrow_type in fields:
        where = by_id.get(field_id) or tuple(name.split("."))
        try:
            values = table.column(where[0])
            for part in where[1:]:
                values = pc.struct_field(values, [values.type.get_field_index(part)])
        except (KeyError, pa.ArrowInvalid, pa.ArrowTypeError, IndexError):
            raise ParquetFormatError(
                f"the equality delete file has no column {name!r} (field id {field_id})",
                path=path,
            ) from None
        try:
            columns[name] = values.cast(arrow_type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
            raise UnsupportedTypeError(
                f"the equality deletes on {name!r} are not {arrow_type} values: {exc}",
                path=path,
                column=name,
            ) from None
    keys = pa.table(columns) if columns else pa.table({})
    return EqualityDeletes(tuple(columns), keys)


def _field_ids(schema: Any, prefix: tuple[str, ...] = ()) -> dict[int, tuple[str, ...]]:
    """Field id -> the path of names to it, from the Arrow fields' ``PARQUET:field_id``."""
    import pyarrow as pa

    out: dict[int, tuple[str, ...]] = {}
    for f in schema:
        raw = (f.metadata or {}).get(b"PARQUET:field_id")
        path = (*prefix, f.name)
        if raw is not None:
            try:
                out[int(raw)] = path
            except ValueError:
                pass
        if pa.types.is_struct(f.type):
            out.update(_field_ids(list(f.type), path))
    return out
