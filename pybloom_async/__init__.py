"""pybloom-async: Parquet Split Block Bloom Filters, from C to async object stores.

The C core (AVX2 and portable kernels, chosen at load time) implements the
Parquet spec's SBBF bit for bit; this package wraps it for numpy and pyarrow
inputs and reads filters out of Parquet files to prune row groups.
"""

from __future__ import annotations

from .errors import (
    EncryptedFileError,
    FilterSizeError,
    FilterTooLargeError,
    InvalidFilterError,
    PaimonIndexError,
    ParquetFormatError,
    PredicateError,
    PyBloomError,
    SourceError,
    SourceNotFoundError,
    UnsupportedTypeError,
    ValueEncodingError,
)
from .filter import (
    DEFAULT_MAX_BYTES,
    MIN_BYTES,
    SplitBlockBloomFilter,
    decode_header,
    optimal_num_bytes,
)
from .hashing import hash_values, simd_backend, xxh64
from .types import PhysicalType

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MIN_BYTES",
    "EncryptedFileError",
    "FilterSizeError",
    "FilterTooLargeError",
    "InvalidFilterError",
    "PaimonIndexError",
    "ParquetFormatError",
    "PhysicalType",
    "PredicateError",
    "PyBloomError",
    "SourceError",
    "SourceNotFoundError",
    "SplitBlockBloomFilter",
    "UnsupportedTypeError",
    "ValueEncodingError",
    "__version__",
    "decode_header",
    "hash_values",
    "optimal_num_bytes",
    "simd_backend",
    "xxh64",
]
