"""PySpark integration: writer options, pruning and index builds on the executors."""

from __future__ import annotations

from .jobs import (
    build_index_on_spark,
    index_build_schema,
    prune_on_spark,
    read_surviving,
    surviving_files,
    verdict_schema,
)
from .writer_options import DEFAULT_WRITER_MAX_BYTES, bloom_writer_options, writer_filter_bytes

__all__ = [
    "DEFAULT_WRITER_MAX_BYTES",
    "bloom_writer_options",
    "build_index_on_spark",
    "index_build_schema",
    "prune_on_spark",
    "read_surviving",
    "surviving_files",
    "verdict_schema",
    "writer_filter_bytes",
]
