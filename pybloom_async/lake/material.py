"""What a lake index build gathers of each file (its columns' filters or hashes) and what
its steps share: the material :mod:`pybloom_async.lake.build` (and the Spark build)
decide and encode segments from."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import numpy as np

from ..core.filter import SplitBlockBloomFilter
from ..io.base import FileInfo
from ..io.identity import SourceIdentity
from ..parquet import ColumnDescriptor
from ..read.reader import BloomReader
from ..tables import TableFiles


@dataclass
class ColumnMaterial:
    """One column of one file: its descriptor and either its filters or its hashes.

    ``bloom``: the file's filter at its segment's size, when it was built elsewhere (a
    Spark executor); ``hashes`` is then None when it was folded, empty when not.
    """

    desc: ColumnDescriptor
    want_blocks: int
    ndv: int = 0  # distinct values B is sized for (given, counted or estimated)
    filters: list[SplitBlockBloomFilter] | None = None  # every row group's, all usable
    min_blocks: int = 0
    hashes: np.ndarray[Any, Any] | None = None
    fold_problem: str | None = None
    bloom: SplitBlockBloomFilter | None = None

    def summary(self) -> ColumnMaterial:
        """This column without its material (its kind kept, as empty): what the decisions
        of a build read (sizes, whether it folds)."""
        return dataclasses.replace(
            self,
            filters=None if self.filters is None else [],
            hashes=None if self.hashes is None else np.empty(0, dtype=np.uint64),
        )


@dataclass
class FileMaterial:
    location: str | FileInfo
    path: str
    name: str
    identity: SourceIdentity
    num_rows: int
    columns: dict[str, ColumnMaterial | str]  # column -> material, or why it is uncovered
    #: Its footer's digest record and schema key (``lake/digest.py``); None: not recorded.
    digest: tuple[bytes, Hashable | None] | None = None

    @property
    def want(self) -> int:
        wants = [c.want_blocks for c in self.columns.values() if isinstance(c, ColumnMaterial)]
        return max(wants, default=1)

    def summary(self) -> FileMaterial:
        """This file without its columns' material (see :meth:`ColumnMaterial.summary`)."""
        columns = {
            name: c.summary() if isinstance(c, ColumnMaterial) else c
            for name, c in self.columns.items()
        }
        return dataclasses.replace(self, columns=columns)


@dataclass
class BuildContext:
    root: str
    reader: BloomReader
    columns: tuple[str, ...]
    fpp: float
    ndv: int | Mapping[str, int] | None
    mode: str
    cpu: anyio.CapacityLimiter
    strict: bool
    table: TableFiles | None = None  # a table's index: its files named and versioned so
