"""File-level sidecar Bloom filter indexes: format, build and prune."""

from __future__ import annotations

from .build import (
    FORMAT_NAME,
    FORMAT_VERSION,
    INDEX_DIR,
    MAX_INDEX_BYTES,
    IndexBuild,
    IndexedColumn,
    IndexStaleError,
    SidecarIndex,
    build_index,
    build_index_sync,
    encode_index,
    index_location,
    parse_index,
    prune_with_index,
    prune_with_index_sync,
    read_index,
)

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
