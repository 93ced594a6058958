"""The footer scanner: what pruning reads of a footer, for a few columns, in one C call.

:func:`.decode.decode_file_metadata` builds the typed model of a footer; its column chunks
(one Python object per chunk, every row group) are most of a small footer's decode. Pruning
reads of them only the chunks of the predicate's columns: their statistics, value counts
and where their Bloom filters lie. :func:`scan_footer` reads exactly that with the C
scanner (``csrc/footer/footer.c``), the GIL released, and makes the Python objects of
the wanted chunks only.

The scanner checks every chunk of the footer as the Python decoder does (meta_data present,
not encrypted, path and type those of the schema leaf at its position, num_values not
negative, one chunk per leaf) and reads the bytes as thrift's decoder reads them, so that
where it accepts a footer its values are the decoder's (``tests/unit/parquet/test_scan.py``
compares them on every file of the corpus). Where it refuses one, the caller may ask the
decoder (:meth:`.metadata.FileMetaData.chunks_of` does), which names the field at fault.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._native import check, ffi, lib
from ..errors import PyBloomError
from .elements import Statistics
from .schema import Schema

__all__ = ["FooterScan", "ScannedChunk", "scan_footer"]


@dataclass(frozen=True, slots=True)
class ScannedChunk:
    """One wanted column chunk as the scanner read it (None: not in the footer)."""

    physical_type: int | None
    num_values: int | None
    statistics: Statistics | None
    bloom_filter_offset: int | None
    bloom_filter_length: int | None
    codec: int | None
    total_compressed_size: int | None
    data_page_offset: int | None
    dictionary_page_offset: int | None
    offset_index_offset: int | None
    offset_index_length: int | None
    column_index_offset: int | None
    column_index_length: int | None


@dataclass(frozen=True, slots=True)
class FooterScan:
    """What :func:`scan_footer` read: per row group its row count (None: absent) and its
    wanted chunks (in the order of ``wanted``); the schema's elements and leaves counted."""

    num_rows: tuple[int | None, ...]
    chunks: tuple[tuple[ScannedChunk, ...], ...]
    schema_elements: int
    schema_leaves: int


class _Leaves:
    """A schema's leaves as the scanner takes them (kept per schema: built once)."""

    __slots__ = ("count", "offsets", "paths", "types")

    def __init__(self, schema: Schema, raw_paths: Sequence[Sequence[bytes]]) -> None:
        blob = bytearray()
        offsets = [0]
        for names in raw_paths:
            for name in names:
                blob += len(name).to_bytes(4, "little")
                blob += name
            offsets.append(len(blob))
        self.count = len(schema.columns)
        self.types = ffi.new("int32_t[]", [int(c.physical_type) for c in schema.columns] or [0])
        self.paths = ffi.new("uint8_t[]", bytes(blob) or b"\0")
        self.offsets = ffi.new("uint64_t[]", offsets)


#: Leaves kept per schema fingerprint (schemas the decoder shares between footers).
_MAX_KEPT = 256
_kept: dict[int, _Leaves] = {}
_kept_lock = threading.Lock()


def _leaves_of(schema: Schema, raw_paths: Sequence[Sequence[bytes]]) -> _Leaves:
    key = schema.fingerprint
    found = _kept.get(key) if key is not None else None
    if found is None:
        found = _Leaves(schema, raw_paths)
        if key is not None:
            with _kept_lock:
                if len(_kept) >= _MAX_KEPT:
                    _kept.clear()
                _kept[key] = found
    return found


_PRESENT = [
    (lib.PBA_FC_MAX, "max", "max_off", "max_len"),
    (lib.PBA_FC_MIN, "min", "min_off", "min_len"),
    (lib.PBA_FC_MAX_VALUE, "max_value", "max_value_off", "max_value_len"),
    (lib.PBA_FC_MIN_VALUE, "min_value", "min_value_off", "min_value_len"),
]
_NUMBERS = [
    (lib.PBA_FC_NULL_COUNT, "null_count"),
    (lib.PBA_FC_DISTINCT_COUNT, "distinct_count"),
    (lib.PBA_FC_NAN_COUNT, "nan_count"),
]


def _statistics(c: Any, data: bytes) -> Statistics | None:
    present = c.present
    if not present & lib.PBA_FC_STATISTICS:
        return None
    # Only the fields found are given, as the decoder builds the class (they compare equal).
    fields: dict[str, Any] = {}
    for bit, name, off, length in _PRESENT:
        if present & bit:
            start = getattr(c, off)
            fields[name] = data[start : start + getattr(c, length)]
    for bit, name in _NUMBERS:
        if present & bit:
            fields[name] = getattr(c, name)
    if present & lib.PBA_FC_IS_MAX_VALUE_EXACT:
        fields["is_max_value_exact"] = bool(c.is_max_value_exact)
    if present & lib.PBA_FC_IS_MIN_VALUE_EXACT:
        fields["is_min_value_exact"] = bool(c.is_min_value_exact)
    return Statistics(**fields)


def _chunk(c: Any, data: bytes) -> ScannedChunk:
    p = c.present

    def opt(bit: int, value: int) -> int | None:
        return value if p & bit else None

    return ScannedChunk(
        physical_type=opt(lib.PBA_FC_TYPE, c.physical_type),
        num_values=opt(lib.PBA_FC_NUM_VALUES, c.num_values),
        statistics=_statistics(c, data),
        bloom_filter_offset=opt(lib.PBA_FC_BLOOM_FILTER_OFFSET, c.bloom_filter_offset),
        bloom_filter_length=opt(lib.PBA_FC_BLOOM_FILTER_LENGTH, c.bloom_filter_length),
        codec=opt(lib.PBA_FC_CODEC, c.codec),
        total_compressed_size=opt(lib.PBA_FC_TOTAL_COMPRESSED_SIZE, c.total_compressed_size),
        data_page_offset=opt(lib.PBA_FC_DATA_PAGE_OFFSET, c.data_page_offset),
        dictionary_page_offset=opt(lib.PBA_FC_DICTIONARY_PAGE_OFFSET, c.dictionary_page_offset),
        offset_index_offset=opt(lib.PBA_FC_OFFSET_INDEX_OFFSET, c.offset_index_offset),
        offset_index_length=opt(lib.PBA_FC_OFFSET_INDEX_LENGTH, c.offset_index_length),
        column_index_offset=opt(lib.PBA_FC_COLUMN_INDEX_OFFSET, c.column_index_offset),
        column_index_length=opt(lib.PBA_FC_COLUMN_INDEX_LENGTH, c.column_index_length),
    )


def scan_footer(
    data: bytes,
    schema: Schema,
    raw_paths: Sequence[Sequence[bytes]],
    wanted: Sequence[int],
    *,
    groups: int = 0,
    path: str | None = None,
) -> FooterScan:
    """Scan the FileMetaData ``data`` for the chunks of the leaves ``wanted``.

    Parameters
    ----------
    data:
        Exactly the FileMetaData bytes (trailing bytes after its end are ignored).
    schema, raw_paths:
        The footer's schema as the decoder built it, and each leaf's path as the raw name
        bytes (:func:`.schema.schema_from_elements`): every chunk is checked against them.
    wanted:
        Leaf indexes, distinct and ascending.
    groups:
        The row groups expected (room is made for as many; more cost a second call).
    path:
        The file's name, for errors.

    Raises
    ------
    ParquetFormatError
        The scanner refused the footer (the decoder says more precisely why); the row
        group and column index of the chunk at fault, when it was a chunk's.
    EncryptedFileError
        The file or one of its chunks is encrypted.
    """
    leaves = _leaves_of(schema, raw_paths)
    want = list(wanted)
    scan = ffi.new("pba_footer_scan *")
    scan.leaf_types = leaves.types
    scan.leaf_paths = leaves.paths
    scan.leaf_paths_len = len(leaves.paths)
    scan.leaf_path_offsets = leaves.offsets
    scan.n_leaves = leaves.count
    wanted_c = ffi.new("uint32_t[]", want or [0])
    scan.wanted = wanted_c
    scan.n_wanted = len(want)
    for _ in range(2):
        cap = max(groups, 1)
        out_groups = ffi.new("pba_footer_group[]", cap)
        out_chunks = ffi.new("pba_footer_chunk[]", cap * max(len(want), 1))
        scan.groups = out_groups
        scan.chunks = out_chunks
        scan.groups_cap = cap
        rc = lib.pba_footer_scan_run(ffi.from_buffer(data), len(data), scan)
        if rc != lib.PBA_FOOTER_ERR_CAPACITY:
            break
        groups = scan.n_groups
    try:
        check(rc, "malformed footer (FileMetaData)")
    except PyBloomError as exc:
        group, column = scan.fail_group, scan.fail_column
        where: dict[str, Any] = {}
        if 0 <= column < len(schema.columns):
            where = {"row_group": group, "column": schema.columns[column].path}
        raise exc.with_context(path=path, **where) from None
    n = scan.n_groups
    width = len(want)
    num_rows = tuple(
        out_groups[g].num_rows if out_groups[g].has_num_rows else None for g in range(n)
    )
    chunks = tuple(
        tuple(_chunk(out_chunks[g * width + k], data) for k in range(width)) for g in range(n)
    )
    return FooterScan(num_rows, chunks, scan.schema_elements, scan.schema_leaves)
