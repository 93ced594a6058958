"""Apache Paimon's file index and its 64-bit Bloom filter."""

from __future__ import annotations

from .container import (
    BLOOM_FILTER_INDEX_TYPE,
    FILE_INDEX_MAGIC,
    FILE_INDEX_VERSION,
    PaimonFileIndex,
    PaimonIndexColumn,
    PaimonIndexEntry,
    is_paimon_file_index,
    paimon_bloom_filter_settings,
    paimon_index_file_name,
    parse_paimon_file_index,
    read_paimon_file_index,
    write_paimon_file_index,
)
from .filter import DEFAULT_FPP, DEFAULT_ITEMS, BloomFilter64
from .prune import paimon_may_contain, paimon_prune
from .values import paimon_hash

__all__ = [
    "BLOOM_FILTER_INDEX_TYPE",
    "DEFAULT_FPP",
    "DEFAULT_ITEMS",
    "FILE_INDEX_MAGIC",
    "FILE_INDEX_VERSION",
    "BloomFilter64",
    "PaimonFileIndex",
    "PaimonIndexColumn",
    "PaimonIndexEntry",
    "is_paimon_file_index",
    "paimon_bloom_filter_settings",
    "paimon_hash",
    "paimon_index_file_name",
    "paimon_may_contain",
    "paimon_prune",
    "parse_paimon_file_index",
    "read_paimon_file_index",
    "write_paimon_file_index",
]
