"""What the corpus tests leave undecoded: a file a row group of which unpacks to more than
:data:`MAX_DECODED_BYTES`.

parquet-testing's ``large_string_map.brotli.parquet`` is 4,325 bytes that unpack to 2 GiB,
which pyarrow refuses after about 15 s a read; the tests that compare rows with pyarrow's
skip it (its footer is still checked where a test reads footers only).
"""

from __future__ import annotations

from typing import Any

#: The most a row group may unpack to (uncompressed, every column) for its rows to be
#: decoded by a corpus test (64 MiB).
MAX_DECODED_BYTES = 64 << 20


def too_large_to_decode(metadata: Any) -> bool:
    """Whether a row group of the file (pyarrow's ``FileMetaData``) unpacks to more than
    :data:`MAX_DECODED_BYTES`."""
    groups = range(metadata.num_row_groups)
    return any(metadata.row_group(g).total_byte_size > MAX_DECODED_BYTES for g in groups)
