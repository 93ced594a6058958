"""A small uncompressed file and every one-byte damage of its first column chunks: for the
tests that read pages by our own C code (``rows/take.py``, ``rows/keyed.py``) beside
pyarrow's decode of the same damaged bytes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path


def paged_file(path: Path, first: str, second: str) -> bytes:
    """Write a 200-row file of an int64 column ``first`` (NULL every fifth row, 13 values)
    and a string column ``second`` (7 values), uncompressed, and return its bytes."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table(
        {
            first: pa.array([None if i % 5 == 0 else i % 13 for i in range(200)], pa.int64()),
            second: [f"k{i % 7}" for i in range(200)],
        }
    )
    pq.write_table(table, path, compression="none")
    return path.read_bytes()


def damaged(path: Path, data: bytes) -> Iterator[tuple[int, int, bytes]]:
    """Each byte from the file's first chunk to 60 bytes into its second column's pages,
    set to 0xFF and then with its lowest bit flipped: ``(offset, value, bytes)``."""
    import pyarrow.parquet as pq

    end = pq.ParquetFile(path).metadata.row_group(0).column(1).data_page_offset + 60
    for at in range(4, end):
        for value in (0xFF, data[at] ^ 0x01):
            out = bytearray(data)
            out[at] = value
            yield at, value, bytes(out)
