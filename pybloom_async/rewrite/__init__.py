"""Adding Bloom filters to existing Parquet files, and to a table's files by a commit."""

from __future__ import annotations

from .add_filters import (
    DEFAULT_ADD_MAX_BYTES,
    AddFiltersResult,
    ChunkFilter,
    SkippedChunk,
    TableFiltersResult,
    add_bloom_filters,
    add_bloom_filters_async,
    add_bloom_filters_sync,
)

__all__ = [
    "DEFAULT_ADD_MAX_BYTES",
    "AddFiltersResult",
    "ChunkFilter",
    "SkippedChunk",
    "TableFiltersResult",
    "add_bloom_filters",
    "add_bloom_filters_async",
    "add_bloom_filters_sync",
]
