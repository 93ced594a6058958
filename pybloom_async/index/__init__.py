"""File-level sidecar Bloom filter indexes: format, build and prune."""

from __future__ import annotations

from .build import IndexBuild, IndexStaleError, build_index, build_index_sync
from .format import (
    FORMAT_NAME,
    FORMAT_VERSION,
    INDEX_DIR,
    MAX_INDEX_BYTES,
    IndexedColumn,
    SidecarIndex,
    encode_index,
    index_location,
)
from .parse import parse_index, read_index
from .prune import prune_with_index, prune_with_index_sync

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "INDEX_DIR",
    "MAX_INDEX_BYTES",
    "IndexBuild",
    "IndexStaleError",
    "IndexedColumn",
    "SidecarIndex",
    "build_index",
    "build_index_sync",
    "encode_index",
    "index_location",
    "parse_index",
    "prune_with_index",
    "prune_with_index_sync",
    "read_index",
]
