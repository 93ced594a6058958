"""pybloom-async: Parquet Split Block Bloom Filters, from C to async object stores.

The C core (AVX2 and portable kernels, chosen at load time) implements the
Parquet spec's SBBF bit for bit; this package wraps it for numpy and pyarrow
inputs and reads filters out of Parquet files to prune row groups.

What is public is ``__all__``, every name of it documented in the API reference;
``tests/unit/test_public_api.py`` checks that nothing else is public by accident.
"""

# No ``from __future__ import annotations`` here: it would bind a public name, and the
# facade annotates nothing. logging is imported under a private name for the same reason.
import logging as _logging

from .core.filter import SplitBlockBloomFilter
from .core.hashing import hash_values, simd_backend, xxh64
from .core.sizes import DEFAULT_MAX_BYTES, MIN_BYTES, decode_header, optimal_num_bytes
from .errors import (
    ColumnNotFoundError,
    CommitConflictError,
    EncryptedFileError,
    EventLoopError,
    FilterSizeError,
    FilterTooLargeError,
    IndexStaleError,
    InvalidArgumentError,
    InvalidFilterError,
    MissingDependencyError,
    PaimonIndexError,
    ParquetFormatError,
    PredicateError,
    PyBloomError,
    SchemaMismatchError,
    SourceError,
    SourceNotFoundError,
    UnsupportedTypeError,
    ValueEncodingError,
)
from .exports import publish as _publish
from .index.build import IndexBuild, build_index, build_index_sync
from .index.format import index_location
from .index.prune import prune_with_index, prune_with_index_sync
from .index_policy.api import prune, prune_sync
from .io.base import SourceStats
from .io.store import StoreOptions
from .lake.build import LakeBuild, build_lake_index, build_lake_index_sync
from .lake.compact import LakeCompaction, compact_lake_index, compact_lake_index_sync
from .paimon.container import (
    PaimonFileIndex,
    is_paimon_file_index,
    parse_paimon_file_index,
    read_paimon_file_index,
    write_paimon_file_index,
)
from .paimon.files import prune_paimon, prune_paimon_sync
from .paimon.filter import BloomFilter64
from .paimon.prune import paimon_may_contain, paimon_prune
from .paimon.values import paimon_hash
from .predicate import (
    And,
    Between,
    Compare,
    Eq,
    In,
    IsNotNull,
    IsNull,
    Not,
    NotIn,
    Or,
    Predicate,
    col,
    parse_predicate,
)
from .pruning.api import probe, probe_sync
from .pruning.verdicts import ProbeResult, Rule, Verdict
from .read.fetch import BloomFilterRead, FilterState, Footer, ReaderConfig
from .read.reader import BloomReader
from .read.run import (
    RunOptions,
    read_bloom_filters,
    read_bloom_filters_sync,
    read_footer,
    read_footer_sync,
)
from .rewrite.add_filters import (
    add_bloom_filters,
    add_bloom_filters_async,
    add_bloom_filters_sync,
)
from .rewrite.results import AddFiltersResult, TableFiltersResult
from .rows import (
    LookupOptions,
    lookup,
    lookup_batches,
    lookup_sync,
    pruned_dataset,
    pruned_dataset_sync,
)
from .types import PhysicalType
from .version import __version__

# A library logs, the application decides where to (the logging HOWTO's rule for libraries).
_logging.getLogger(__name__).addHandler(_logging.NullHandler())

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MIN_BYTES",
    "AddFiltersResult",
    "And",
    "Between",
    "BloomFilter64",
    "BloomFilterRead",
    "BloomReader",
    "ColumnNotFoundError",
    "CommitConflictError",
    "Compare",
    "EncryptedFileError",
    "Eq",
    "EventLoopError",
    "FilterSizeError",
    "FilterState",
    "FilterTooLargeError",
    "Footer",
    "In",
    "IndexBuild",
    "IndexStaleError",
    "InvalidArgumentError",
    "InvalidFilterError",
    "IsNotNull",
    "IsNull",
    "LakeBuild",
    "LakeCompaction",
    "LookupOptions",
    "MissingDependencyError",
    "Not",
    "NotIn",
    "Or",
    "PaimonFileIndex",
    "PaimonIndexError",
    "ParquetFormatError",
    "PhysicalType",
    "Predicate",
    "PredicateError",
    "ProbeResult",
    "PyBloomError",
    "ReaderConfig",
    "Rule",
    "RunOptions",
    "SchemaMismatchError",
    "SourceError",
    "SourceNotFoundError",
    "SourceStats",
    "SplitBlockBloomFilter",
    "StoreOptions",
    "TableFiltersResult",
    "UnsupportedTypeError",
    "ValueEncodingError",
    "Verdict",
    "__version__",
    "add_bloom_filters",
    "add_bloom_filters_async",
    "add_bloom_filters_sync",
    "build_index",
    "build_index_sync",
    "build_lake_index",
    "build_lake_index_sync",
    "col",
    "compact_lake_index",
    "compact_lake_index_sync",
    "decode_header",
    "hash_values",
    "index_location",
    "is_paimon_file_index",
    "lookup",
    "lookup_batches",
    "lookup_sync",
    "optimal_num_bytes",
    "paimon_hash",
    "paimon_may_contain",
    "paimon_prune",
    "parse_paimon_file_index",
    "parse_predicate",
    "probe",
    "probe_sync",
    "prune",
    "prune_paimon",
    "prune_paimon_sync",
    "prune_sync",
    "prune_with_index",
    "prune_with_index_sync",
    "pruned_dataset",
    "pruned_dataset_sync",
    "read_bloom_filters",
    "read_bloom_filters_sync",
    "read_footer",
    "read_footer_sync",
    "read_paimon_file_index",
    "simd_backend",
    "write_paimon_file_index",
    "xxh64",
]

# Each class and function is pickled, shown and documented as pybloom_async.<name>.
_publish(globals(), __all__, __name__)
