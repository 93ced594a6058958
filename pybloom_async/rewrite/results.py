"""What adding filters did: to one file (:class:`AddFiltersResult`), to a table's files
(:class:`TableFiltersResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class ChunkFilter:
    """The filter written for one column chunk.

    ``num_values`` non-null values were hashed, ``ndv`` of them distinct (counted
    exactly, or estimated within a few percent when ``ndv_exact`` is False); the
    bitset of ``num_bytes`` was sized for ``sized_for`` values at ``fpp`` and is
    expected to answer ``expected_fpp`` of foreign probes "maybe" (the SBBF
    model at ``ndv``; above ``fpp`` when ``capped`` by ``max_bytes`` or when a
    smaller ``ndv`` was asked for). ``offset``/``length`` locate header + bitset.
    """

    row_group: int
    column: str
    num_values: int
    ndv: int
    ndv_exact: bool
    sized_for: int
    num_bytes: int
    offset: int
    length: int
    fpp: float
    expected_fpp: float
    capped: bool

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "row_group": self.row_group,
            "column": self.column,
            "num_values": self.num_values,
            "ndv": self.ndv,
            "ndv_exact": self.ndv_exact,
            "sized_for": self.sized_for,
            "num_bytes": self.num_bytes,
            "offset": self.offset,
            "length": self.length,
            "fpp": self.fpp,
            "expected_fpp": float(f"{self.expected_fpp:.4g}"),
            "capped": self.capped,
        }


@dataclass(frozen=True, slots=True)
class SkippedChunk:
    """A column (``row_group`` None: in every row group) or chunk that got no new filter."""

    column: str
    row_group: int | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"column": self.column, "row_group": self.row_group, "reason": self.reason}


@dataclass(frozen=True)
class AddFiltersResult:
    """What :func:`add_bloom_filters` did to one file.

    ``written`` is False when no chunk needed a filter and the file was left
    alone (``out`` not written either). ``bytes_before``/``bytes_after`` are the
    file sizes; ``filter_bytes`` the bytes of filters added (headers included).
    """

    path: str
    out: str
    written: bool
    bytes_before: int
    bytes_after: int
    filters: tuple[ChunkFilter, ...] = field(default_factory=tuple)
    skipped: tuple[SkippedChunk, ...] = field(default_factory=tuple)

    @property
    def filter_bytes(self) -> int:
        """Bytes of filters written, headers included."""
        return sum(f.length for f in self.filters)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "path": self.path,
            "out": self.out,
            "written": self.written,
            "bytes_before": self.bytes_before,
            "bytes_after": self.bytes_after,
            "filter_bytes": self.filter_bytes,
            "filters": [f.to_dict() for f in self.filters],
            "skipped": [s.to_dict() for s in self.skipped],
        }


@dataclass(frozen=True, slots=True)
class SkippedFile:
    """A live file of a table that was left as it is, and why."""

    path: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {"path": self.path, "reason": self.reason}


@dataclass(frozen=True)
class TableFiltersResult:
    """What :func:`add_bloom_filters` did to a Delta or Iceberg table.

    ``files`` are the files replaced, each as the old file's ``path`` and the new
    file's ``out`` (the old one stays on storage for the earlier versions);
    ``skipped`` the live files left as they are, with why. ``read_version`` is the
    Delta version or Iceberg snapshot id the files were read from, ``version`` the
    one the commit made (None: nothing needed a filter, nothing was committed).
    """

    kind: str  # "delta" or "iceberg"
    table: str
    read_version: int | None
    version: int | None
    files: tuple[AddFiltersResult, ...] = field(default_factory=tuple)
    skipped: tuple[SkippedFile, ...] = field(default_factory=tuple)

    @property
    def committed(self) -> bool:
        """Whether a commit was made."""
        return self.version is not None

    @property
    def filter_bytes(self) -> int:
        """Bytes of filters written, headers included, over all files."""
        return sum(f.filter_bytes for f in self.files)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "kind": self.kind,
            "table": self.table,
            "read_version": self.read_version,
            "version": self.version,
            "filter_bytes": self.filter_bytes,
            "files": [f.to_dict() for f in self.files],
            "skipped": [s.to_dict() for s in self.skipped],
        }
