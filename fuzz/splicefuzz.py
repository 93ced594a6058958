"""The add-filters footer rewrite under fuzzing: its output always decodes and keeps every field.

Input layout: 8 bytes choose Bloom filter locations (which chunks, which offsets and
lengths), the rest is a FileMetaData. Properties checked by :func:`check_splice`:

* only ParquetFormatError (EncryptedFileError included) comes out, naming the file;
* a footer the full decoder accepts is always spliceable unless it is encrypted, repeats
  a field (ambiguous to rewrite) or names a chunk without meta_data; and
  the result decodes too;
* every field of the result equals the input's, except fields 14/15 of the chosen
  chunks, which hold exactly the chosen locations (fields we do not model are covered by
  the byte-for-byte checks in ``tests/unit/parquet/test_splice.py``);
* splicing the same locations again changes nothing, and an empty mapping returns the
  input unchanged.
"""

from __future__ import annotations

import struct
from typing import Any

FUZZ_PATH = "fuzz.parquet"


def _chunk_view(meta: Any) -> list[list[tuple[Any, ...]]]:
    """Every chunk's modeled fields but the two the splice may set, plus the file fields."""
    from .targets import _CHUNK_FIELDS

    fields = [n for n in _CHUNK_FIELDS if n not in ("bloom_filter_offset", "bloom_filter_length")]
    out = []
    for group in meta.row_groups:
        row = []
        for chunk in group.columns:
            stats = chunk.statistics
            row.append(
                (
                    *(getattr(chunk, n) for n in fields),
                    None if stats is None else tuple(sorted(vars(stats).items())),
                )
            )
        out.append(row)
    return out


def check_splice(data: bytes) -> None:
    """Splice fuzzer-chosen locations into fuzzer-made footer bytes; check the properties."""
    from pybloom_async.errors import EncryptedFileError, ParquetFormatError
    from pybloom_async.parquet.decode import decode_file_metadata_with
    from pybloom_async.parquet.splice import splice_bloom_filter_locations

    if len(data) < 8:
        return
    pick, offset, length = struct.unpack_from("<HIH", data)
    footer = data[8:]
    try:
        before = decode_file_metadata_with(footer, FUZZ_PATH, "fastbinary")
    except ParquetFormatError:
        before = None
    locations: dict[tuple[int, int], tuple[int, int]] = {}
    if before is not None:
        for g, group in enumerate(before.row_groups):
            for c in range(len(group.columns)):
                if (pick >> ((g * 3 + c) % 16)) & 1:
                    locations[(g, c)] = (4 + offset + 97 * c, 32 + length)
    try:
        unchanged = splice_bloom_filter_locations(footer, {}, path=FUZZ_PATH)
        out = splice_bloom_filter_locations(footer, locations, path=FUZZ_PATH)
    except EncryptedFileError as exc:
        assert FUZZ_PATH in str(exc), str(exc)
        return
    except ParquetFormatError as exc:
        assert FUZZ_PATH in str(exc), str(exc)
        # What the full decoder reads, the splicer must take, with two exceptions: a chunk
        # without meta_data cannot take a location, and a field that appears twice (thrift
        # decoders keep the last copy) is ambiguous to rewrite, so the splicer refuses it.
        allowed = ("meta_data", "appears twice")
        assert before is None or any(a in str(exc) for a in allowed), f"refused: {exc}"
        return
    assert unchanged == footer, "an empty splice changed the footer"
    assert splice_bloom_filter_locations(out, locations, path=FUZZ_PATH) == out, (
        "splicing the same locations twice is not idempotent"
    )
    if before is None:
        return  # the splicer may walk footers the model refuses; nothing more to compare
    after = decode_file_metadata_with(out, FUZZ_PATH, "fastbinary")
    assert _chunk_view(after) == _chunk_view(before), "a field other than 14/15 changed"
    assert after.num_rows == before.num_rows and after.schema == before.schema
    assert after.key_value_metadata == before.key_value_metadata
    for g, group in enumerate(after.row_groups):
        for c, chunk in enumerate(group.columns):
            old = before.row_groups[g].columns[c]
            want = locations.get((g, c), (old.bloom_filter_offset, old.bloom_filter_length))
            assert (chunk.bloom_filter_offset, chunk.bloom_filter_length) == want, (g, c)
