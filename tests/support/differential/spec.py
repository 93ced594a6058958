"""What one differential case is: a lake (files as data), a predicate, the calls to make.

Everything is plain data, so a case can be shrunk (files, rows and predicate dropped while
the failure stays) and printed as a standalone reproduction.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from pybloom_async.predicate import Predicate


@dataclass(frozen=True)
class ColumnData:
    """One column of one file: its kind (see ``kinds.KINDS``) and its stored values."""

    name: str
    kind: str
    values: tuple[Any, ...]


@dataclass(frozen=True)
class FileSpec:
    """One file of the lake.

    ``layout``: ``data`` (rows, any number of row groups), ``zero_rows`` (pyarrow: one row
    group of 0 rows), ``zero_row_groups`` (DuckDB's COPY of an empty result: no row group),
    ``garbage`` (not Parquet: must be reported, never dropped). ``options`` are the
    writer's own keyword arguments (pyarrow ``write_table``) or COPY options (DuckDB).
    """

    name: str
    layout: str
    writer: str
    options: tuple[tuple[str, Any], ...]
    columns: tuple[ColumnData, ...]
    #: Hive partition folders the file lies below, outermost first: ``((key, value or
    #: None), ...)``; None is ``__HIVE_DEFAULT_PARTITION__``.
    folder: tuple[tuple[str, str | None], ...] = ()
    #: How its folder names are escaped: ``hive`` (as Hive and Spark do) or ``uri`` (as
    #: pyarrow's ``write_to_dataset`` does).
    escape: str = "hive"

    @property
    def relative(self) -> str:
        """Where the file lies below the lake's root (its folders escaped by its writer)."""
        from .write import folder_name

        names = (folder_name(k, v, self.escape) for k, v in self.folder)
        return "/".join([*names, self.name])

    @property
    def num_rows(self) -> int:
        return len(self.columns[0].values) if self.columns else 0

    def option(self, key: str, default: Any = None) -> Any:
        return dict(self.options).get(key, default)

    def with_rows(self, keep: list[int]) -> FileSpec:
        columns = tuple(replace(c, values=tuple(c.values[i] for i in keep)) for c in self.columns)
        return replace(self, columns=columns)


@dataclass(frozen=True)
class LookupArgs:
    """How lookup is called: projection, page index, fetch limit, anyio backend."""

    columns: tuple[str, ...] | None = None
    page_index: bool = True
    max_fetch_bytes: int | None = None
    backend: str = "asyncio"
    #: The rows' two-phase fetch: None as the product decides, True always, False never.
    two_phase: bool | None = None
    #: Partition types given (``partitioning={key: type}``); None: inferred (``"hive"``).
    partitioning: tuple[tuple[str, str], ...] | None = None


@dataclass(frozen=True)
class IndexPlan:
    """Indexes built on the lake, then the lake changed, then pruned through them.

    ``state``: ``fresh``; ``replaced`` (file ``target`` rewritten with ``replacement``
    after indexing: new inode; its mtime moves on); ``replaced_same_stat`` (the same, with
    the old size and mtime carried over, as ``cp -p`` of a same-size file does);
    ``added`` (``added`` written after indexing); ``removed`` (``target`` deleted).
    """

    state: str
    columns: tuple[str, ...]
    lake_modes: tuple[str, ...] = ("values",)
    target: int = 0
    replacement: FileSpec | None = None
    added: FileSpec | None = None
    sidecar_row_groups: bool = True
    lake_row_groups: bool = True


@dataclass(frozen=True)
class TablePlan:
    """A Delta or Iceberg table made of the lake's files (one schema).

    ``partition_by``: a Delta partition column. ``delete``: ``None``, ``rewrite`` (the
    library's own delete, which rewrites files), ``vector`` (Delta deletion vectors
    committed for the rows ``deleted_rows`` of the first file, in every data file of the
    table's first version that holds them), ``position`` or ``equality`` (an Iceberg
    position delete file for those rows, or an equality delete file of their ids, written
    by pyarrow and committed through pyiceberg).

    Delta only: ``compact`` (deltalake's ``optimize.compact()`` after the deletes: the live
    files replaced, the old ones left on storage as tombstones) and ``back`` (the table
    loaded that many versions before its latest, as time travel reads it; at most back to
    its first).
    """

    format: str
    partition_by: str | None = None
    delete: str | None = None
    deleted_rows: tuple[int, ...] = ()
    delete_value: Any = None
    compact: bool = False
    back: int = 0
    #: Iceberg only: the schema's steps between the first half of the appends and the rest
    #: (see ``evolution.STEPS``), and the columns renamed and dropped then re-added ('': none).
    evolve: tuple[str, ...] = ()
    evolved: tuple[str, str] = ("", "")


@dataclass(frozen=True)
class Case:
    """One generated case. ``sources`` says how the files are named to the entry points:
    ``list`` (each path once), ``dir`` (the directory), ``dir_and_file`` (the directory and
    one of its files again), ``respelled`` (a path twice, once as ``d//name``). ``shape``:
    ``flat``, ``hive`` (files below ``key=value`` folders, named through the directory)
    or ``evolving`` (columns added file after file)."""

    seed: int
    family: str
    files: tuple[FileSpec, ...]
    predicate: Predicate
    sources: str = "list"
    lookup: LookupArgs = LookupArgs()
    checks: frozenset[str] = frozenset()
    index: IndexPlan | None = None
    table: TablePlan | None = None
    gated: tuple[str, ...] = field(default=())
    shape: str = "flat"

    def with_files(self, files: tuple[FileSpec, ...]) -> Case:
        return replace(self, files=files)


__all__ = ["Case", "ColumnData", "FileSpec", "IndexPlan", "LookupArgs", "TablePlan"]
