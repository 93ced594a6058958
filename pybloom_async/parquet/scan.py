"""The footer scanner: what pruning reads of a footer, for a few columns, in one C call.

:func:`.decode.decode_file_metadata` builds the typed model of a footer; its column chunks
(one Python object per chunk, every row group) are most of a small footer's decode. Pruning
reads of them only the chunks of the predicate's columns: their statistics, value counts
and where their Bloom filters lie. :func:`scan_records` reads exactly that with the C
scanner (``csrc/footer/footer.c``), the GIL released, into records the C evaluator reads
in place, and :meth:`ChunkRecords.scanned` makes the Python objects of the wanted chunks
only; :func:`scan_footer` is the same scan, raising what the scanner refused.

The scanner checks every chunk of the footer as the Python decoder does (meta_data present,
not encrypted, path and type those of the schema leaf at its position, num_values not
negative, one chunk per leaf) and reads the bytes as thrift's decoder reads them, so that
where it accepts a footer its values are the decoder's (``tests/unit/parquet/test_scan.py``
compares them on every file of the corpus). Where it refuses one (:func:`scan_records`:
None), the caller asks the decoder (:meth:`.metadata.FileMetaData.chunks_of` does), which
names the field at fault.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Sequence
from typing import Any, NamedTuple

from .._native import check, ffi, lib
from ..errors import PyBloomError
from .elements import Statistics
from .passes import UNSET, Unset
from .schema import Schema

# The presence bits of a chunk's fields (pba_footer_chunk.present).
_FC_TYPE = lib.PBA_FC_TYPE
_FC_CODEC = lib.PBA_FC_CODEC
_FC_BLOOM_FILTER_LENGTH = lib.PBA_FC_BLOOM_FILTER_LENGTH
_FC_OFFSET_INDEX_LENGTH = lib.PBA_FC_OFFSET_INDEX_LENGTH
_FC_COLUMN_INDEX_LENGTH = lib.PBA_FC_COLUMN_INDEX_LENGTH
_FC_NUM_VALUES = lib.PBA_FC_NUM_VALUES
_FC_TOTAL_COMPRESSED_SIZE = lib.PBA_FC_TOTAL_COMPRESSED_SIZE
_FC_DATA_PAGE_OFFSET = lib.PBA_FC_DATA_PAGE_OFFSET
_FC_DICTIONARY_PAGE_OFFSET = lib.PBA_FC_DICTIONARY_PAGE_OFFSET
_FC_BLOOM_FILTER_OFFSET = lib.PBA_FC_BLOOM_FILTER_OFFSET
_FC_OFFSET_INDEX_OFFSET = lib.PBA_FC_OFFSET_INDEX_OFFSET
_FC_COLUMN_INDEX_OFFSET = lib.PBA_FC_COLUMN_INDEX_OFFSET
_FC_TOTAL_UNCOMPRESSED_SIZE = lib.PBA_FC_TOTAL_UNCOMPRESSED_SIZE
_FC_ENCODINGS = lib.PBA_FC_ENCODINGS
_FC_FILE_PATH = lib.PBA_FC_FILE_PATH
#: What a chunk's bytes are found by, and the fields the decoder requires with them: the
#: rows read a chunk whose record holds these, and no file path, from the record alone.
_FC_PLACE = (
    _FC_CODEC
    | _FC_TOTAL_COMPRESSED_SIZE
    | _FC_TOTAL_UNCOMPRESSED_SIZE
    | _FC_DATA_PAGE_OFFSET
    | _FC_ENCODINGS
)


#: A placed chunk's codec number, data page offset, dictionary page offset (None: none),
#: compressed and uncompressed sizes and value count.
RawPlace = tuple[int, int, "int | None", int, int, int]


def _place_of(c: tuple[int, ...]) -> RawPlace:
    dictionary = c[9] if c[0] & _FC_DICTIONARY_PAGE_OFFSET else None
    return c[2], c[8], dictionary, c[7], c[26], c[6]


class ScannedChunk:
    """One wanted column chunk as the scanner read it; a field the footer lacks is None.

    The fields are made from the scanner's record when read (pruning reads a few).
    """

    __slots__ = ("_c", "_data", "_statistics")

    def __init__(self, record: tuple[int, ...], data: bytes) -> None:
        self._c = record
        self._data = data
        self._statistics: Statistics | Unset | None = UNSET

    @property
    def physical_type(self) -> int | None:
        c = self._c
        return c[1] if c[0] & _FC_TYPE else None

    @property
    def codec(self) -> int | None:
        c = self._c
        return c[2] if c[0] & _FC_CODEC else None

    @property
    def bloom_filter_length(self) -> int | None:
        c = self._c
        return c[3] if c[0] & _FC_BLOOM_FILTER_LENGTH else None

    @property
    def offset_index_length(self) -> int | None:
        c = self._c
        return c[4] if c[0] & _FC_OFFSET_INDEX_LENGTH else None

    @property
    def column_index_length(self) -> int | None:
        c = self._c
        return c[5] if c[0] & _FC_COLUMN_INDEX_LENGTH else None

    @property
    def num_values(self) -> int | None:
        c = self._c
        return c[6] if c[0] & _FC_NUM_VALUES else None

    @property
    def total_compressed_size(self) -> int | None:
        c = self._c
        return c[7] if c[0] & _FC_TOTAL_COMPRESSED_SIZE else None

    @property
    def data_page_offset(self) -> int | None:
        c = self._c
        return c[8] if c[0] & _FC_DATA_PAGE_OFFSET else None

    @property
    def dictionary_page_offset(self) -> int | None:
        c = self._c
        return c[9] if c[0] & _FC_DICTIONARY_PAGE_OFFSET else None

    @property
    def bloom_filter_offset(self) -> int | None:
        c = self._c
        return c[10] if c[0] & _FC_BLOOM_FILTER_OFFSET else None

    @property
    def offset_index_offset(self) -> int | None:
        c = self._c
        return c[11] if c[0] & _FC_OFFSET_INDEX_OFFSET else None

    @property
    def column_index_offset(self) -> int | None:
        c = self._c
        return c[12] if c[0] & _FC_COLUMN_INDEX_OFFSET else None

    @property
    def total_uncompressed_size(self) -> int | None:
        c = self._c
        return c[26] if c[0] & _FC_TOTAL_UNCOMPRESSED_SIZE else None

    @property
    def has_encodings(self) -> bool:
        """Whether the footer lists the chunk's encodings (a field the decoder requires)."""
        return bool(self._c[0] & _FC_ENCODINGS)

    @property
    def has_file_path(self) -> bool:
        """Whether the footer names a file holding the chunk's data."""
        return bool(self._c[0] & _FC_FILE_PATH)

    @property
    def placed(self) -> bool:
        """Whether the record alone places the chunk's bytes in this file: its codec,
        sizes, data page offset and encodings recorded, and no file path."""
        return bool(self._c[0] & (_FC_PLACE | _FC_FILE_PATH) == _FC_PLACE)

    def place(self) -> RawPlace:
        """A :attr:`placed` chunk's place, read at once (:data:`RawPlace`)."""
        return _place_of(self._c)

    @property
    def statistics(self) -> Statistics | None:
        """Built as the decoder builds it: only the fields found (so they compare equal)."""
        found = self._statistics
        if isinstance(found, Unset):
            found = self._statistics = self._make_statistics()
        return found

    def _make_statistics(self) -> Statistics | None:
        c = self._c
        plan = _STAT_PLANS.get(c[0])
        if plan is None:
            plan = _stat_plan(c[0])
        if not plan:
            return None if not c[0] & _STATISTICS else Statistics()
        data = self._data
        fields: dict[str, Any] = {}
        for name, at, kind in plan:
            if kind == _BYTES:
                start = c[at]
                fields[name] = data[start : start + c[at + 1]]
            else:
                fields[name] = c[at] if kind == _INT else bool(c[at])
        return Statistics(**fields)

    def __repr__(self) -> str:
        names = ("physical_type", "num_values", "statistics", "bloom_filter_offset")
        return f"ScannedChunk({', '.join(f'{n}={getattr(self, n)!r}' for n in names)}, ...)"


class FooterScan(NamedTuple):
    """What :func:`scan_footer` read: per row group its row count (None: absent) and its
    wanted chunks (in the order of ``wanted``); the schema's elements and leaves counted."""

    num_rows: tuple[int | None, ...]
    chunks: tuple[tuple[ScannedChunk, ...], ...]
    schema_elements: int
    schema_leaves: int
    #: Where the schema's bytes lie, ``(offset, length)``.
    schema_span: tuple[int, int] = (0, 0)
    #: Whether the head holds every field the decoder requires (``pba_footer_scan``).
    head_complete: bool = False


class ScanLeaves:
    """A schema's leaves as the scanner takes them (kept per schema: built once): their
    count, physical types, and paths (``paths``, ``paths_len`` bytes, split at
    ``offsets``), as ``pba_footer_scan`` names them."""

    __slots__ = ("count", "offsets", "paths", "paths_len", "types")

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
        self.paths_len = len(blob)
        self.offsets = ffi.new("uint64_t[]", offsets)

    def fill(self, scan: Any) -> None:
        """Set a ``pba_footer_scan``'s leaves to these (the arrays stay this object's)."""
        scan.leaf_types = self.types
        scan.leaf_paths = self.paths
        scan.leaf_paths_len = self.paths_len
        scan.leaf_path_offsets = self.offsets
        scan.n_leaves = self.count


#: Leaves kept per schema fingerprint (schemas the decoder shares between footers).
_MAX_KEPT = 256
_kept: dict[int, ScanLeaves] = {}
_kept_lock = threading.Lock()


def scan_leaves(schema: Schema, raw_paths: Sequence[Sequence[bytes]]) -> ScanLeaves:
    """The leaves of ``schema`` (whose leaf paths are ``raw_paths``) as the scanner
    takes them, made once per schema the decoder shares."""
    key = schema.fingerprint
    found = _kept.get(key) if key is not None else None
    if found is None:
        found = ScanLeaves(schema, raw_paths)
        if key is not None:
            with _kept_lock:
                if len(_kept) >= _MAX_KEPT:
                    _kept.clear()
                _kept[key] = found
    return found


#: pba_footer_chunk as the C compiler lays it out (no padding: checked below), unpacked in
#: one call per chunk: reading a cffi struct's fields one by one costs ten times as much.
_CHUNK = struct.Struct("=I5i10q8Q2iq")
assert _CHUNK.size == ffi.sizeof("pba_footer_chunk"), "pba_footer_chunk layout changed"
# The statistics' fields: (presence bit, name, position in the record of the number, or of
# the offset followed by the length).
_STAT_BYTES = (
    (lib.PBA_FC_MAX, "max", 16),
    (lib.PBA_FC_MIN, "min", 18),
    (lib.PBA_FC_MAX_VALUE, "max_value", 20),
    (lib.PBA_FC_MIN_VALUE, "min_value", 22),
)
_STAT_NUMBERS = (
    (lib.PBA_FC_NULL_COUNT, "null_count", 13),
    (lib.PBA_FC_DISTINCT_COUNT, "distinct_count", 14),
    (lib.PBA_FC_NAN_COUNT, "nan_count", 15),
    (lib.PBA_FC_IS_MAX_VALUE_EXACT, "is_max_value_exact", 24),
    (lib.PBA_FC_IS_MIN_VALUE_EXACT, "is_min_value_exact", 25),
)
_STATISTICS = lib.PBA_FC_STATISTICS
_EXACT = lib.PBA_FC_IS_MAX_VALUE_EXACT | lib.PBA_FC_IS_MIN_VALUE_EXACT
_BYTES, _INT, _BOOL = 0, 1, 2
#: Per presence mask, the statistics' fields to read: (name, position, kind); empty when
#: the chunk has no statistics (few masks occur: one per writer's habits).
_STAT_PLANS: dict[int, tuple[tuple[str, int, int], ...]] = {}


def _stat_plan(present: int) -> tuple[tuple[str, int, int], ...]:
    plan: list[tuple[str, int, int]] = []
    if present & _STATISTICS:
        plan += [(name, at, _BYTES) for bit, name, at in _STAT_BYTES if present & bit]
        plan += [
            (name, at, _BOOL if bit & _EXACT else _INT)
            for bit, name, at in _STAT_NUMBERS
            if present & bit
        ]
    if len(_STAT_PLANS) < 4096:
        _STAT_PLANS[present] = tuple(plan)
    return tuple(plan)


#: pba_footer_group: num_rows, has_num_rows, num_columns.
_GROUP = struct.Struct("=qii")
assert _GROUP.size == ffi.sizeof("pba_footer_group"), "pba_footer_group layout changed"


class _Scratch:
    """A thread's scan arguments and output arrays, kept between scans (making them costs
    more than a small footer's scan); arrays above _KEEP_BYTES are not kept."""

    __slots__ = (
        "chunks",
        "chunks_cap",
        "groups",
        "groups_cap",
        "leaves",
        "scan",
        "wanted",
        "wanted_cap",
    )

    def __init__(self) -> None:
        self.scan = ffi.new("pba_footer_scan *")
        self.leaves: ScanLeaves | None = None
        self.wanted: Any = None
        self.wanted_cap = 0
        self.groups: Any = None
        self.chunks: Any = None
        self.groups_cap = 0
        self.chunks_cap = 0


class _PerThread(threading.local):
    def __init__(self) -> None:
        self.scratch = _Scratch()


_KEEP_BYTES = 1 << 20
_per_thread = _PerThread()


def _run(data: bytes, leaves: ScanLeaves, wanted: Sequence[int], groups: int) -> tuple[Any, ...]:
    """One scan with this thread's arguments and arrays (made larger when the footer holds
    more row groups than ``groups``): the scan struct, the status, the output arrays."""
    mine = _per_thread.scratch
    scan = mine.scan
    if mine.leaves is not leaves:
        mine.leaves = leaves
        leaves.fill(scan)
    width = len(wanted)
    if width > mine.wanted_cap:
        mine.wanted = scan.wanted = ffi.new("uint32_t[]", width)
        mine.wanted_cap = width
    for k, leaf in enumerate(wanted):
        mine.wanted[k] = leaf
    scan.n_wanted = width
    buf = ffi.from_buffer(data)
    while True:
        cap = max(groups, 1)
        if cap > mine.groups_cap or cap * width > mine.chunks_cap:
            out_groups = ffi.new("pba_footer_group[]", cap)
            out_chunks = ffi.new("pba_footer_chunk[]", max(cap * width, 1))
            if cap * max(width, 1) * _CHUNK.size <= _KEEP_BYTES:
                mine.groups, mine.chunks = out_groups, out_chunks
                mine.groups_cap, mine.chunks_cap = cap, max(cap * width, 1)
        else:
            out_groups, out_chunks = mine.groups, mine.chunks
        scan.groups, scan.chunks = out_groups, out_chunks
        scan.groups_cap = cap
        rc = lib.pba_footer_scan_run(buf, len(data), scan)
        if rc != lib.PBA_FOOTER_ERR_CAPACITY or scan.n_groups <= groups:
            return scan, rc, out_groups, out_chunks
        groups = scan.n_groups


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
        bytes (:func:`.schema_build.schema_from_elements`): every chunk is checked against them.
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
    scan, rc, out_groups, out_chunks = _run(data, scan_leaves(schema, raw_paths), wanted, groups)
    if rc != lib.PBA_FOOTER_OK:
        group, column = scan.fail_group, scan.fail_column
        where: dict[str, Any] = {}
        if 0 <= column < len(schema.columns):
            where = {"row_group": group, "column": schema.columns[column].path}
        try:
            check(rc, "malformed footer (FileMetaData)")
        except PyBloomError as exc:
            raise exc.with_context(path=path, **where) from None
    width = len(wanted)
    n = scan.n_groups
    num_rows = tuple(
        rows if has else None
        for rows, has, _ in _GROUP.iter_unpack(ffi.buffer(out_groups, n * _GROUP.size))
    )
    chunks = _grouped(ffi.buffer(out_chunks, n * width * _CHUNK.size), data, n, width)
    return FooterScan(
        num_rows,
        chunks,
        scan.schema_elements,
        scan.schema_leaves,
        (int(scan.schema_off), int(scan.schema_len)),
        bool(scan.head_complete),
    )


def _grouped(records: Any, data: bytes, n: int, width: int) -> tuple[tuple[ScannedChunk, ...], ...]:
    """The chunk records (``n * width`` of them, row group after row group) as the Python
    objects of each row group's wanted chunks."""
    made = [ScannedChunk(c, data) for c in _CHUNK.iter_unpack(records)]
    return tuple(tuple(made[g * width : (g + 1) * width]) for g in range(n))


class ChunkRecords(NamedTuple):
    """The scanner's records of some leaves' chunks, left in C memory for native code.

    ``chunks`` holds ``n_groups * width`` ``pba_footer_chunk`` records (row group ``g``'s
    k-th wanted chunk at ``g * width + k``) as bytes (``ffi.from_buffer`` reads them in
    place), whose byte strings are offsets into ``data``: kept with the footer, so a cached
    footer is not scanned again, and pickled with it (a Spark task's footer).
    """

    data: bytes
    chunks: bytes
    n_groups: int
    width: int

    def scanned(self) -> tuple[tuple[ScannedChunk, ...], ...]:
        """Per row group, its wanted chunks as Python objects (what :func:`scan_footer`
        gives)."""
        return _grouped(self.chunks, self.data, self.n_groups, self.width)

    def picked(self, places: Sequence[int]) -> ChunkRecords:
        """The records of some of the wanted chunks, by their places among them (distinct,
        ascending): the records a scan of those leaves alone gives."""
        size = _CHUNK.size
        chunks = self.chunks
        width = self.width
        own = b"".join(
            chunks[(g * width + k) * size : (g * width + k + 1) * size]
            for g in range(self.n_groups)
            for k in places
        )
        return ChunkRecords(self.data, own, self.n_groups, len(places))

    def places(self) -> list[RawPlace | None]:
        """Each wanted chunk's place (None where its record alone does not place it), row
        group after row group, with no chunk object made."""
        placed = _FC_PLACE | _FC_FILE_PATH
        return [
            _place_of(c) if c[0] & placed == _FC_PLACE else None
            for c in _CHUNK.iter_unpack(self.chunks)
        ]

    def record(self, group: int, place: int) -> ScannedChunk:
        """Row group ``group``'s wanted chunk at ``place`` among them, alone."""
        at = (group * self.width + place) * _CHUNK.size
        return ScannedChunk(_CHUNK.unpack_from(self.chunks, at), self.data)

    def offset_indexed(self, group: int) -> bool:
        """Whether a wanted chunk of row group ``group`` records where its offset index lies
        (:attr:`ScannedChunk.offset_index_offset`), with no chunk object made."""
        size = _CHUNK.size * self.width
        records = self.chunks[group * size : (group + 1) * size]
        return any(c[0] & _FC_OFFSET_INDEX_OFFSET for c in _CHUNK.iter_unpack(records))

    def filter_offsets(self) -> list[int]:
        """Where each wanted chunk's Bloom filter starts, for those the footer records."""
        return [c[10] for c in _CHUNK.iter_unpack(self.chunks) if c[0] & _FC_BLOOM_FILTER_OFFSET]


def scan_records(
    data: bytes,
    schema: Schema,
    raw_paths: Sequence[Sequence[bytes]],
    wanted: Sequence[int],
    num_rows: Sequence[int],
) -> ChunkRecords | None:
    """Scan as :func:`scan_footer` does, keeping the records in C memory; None when the
    scanner refuses the footer or reads it otherwise than the decoder's first pass did (its
    leaf count or row counts, ``num_rows``): then :func:`scan_footer`'s caller decides."""
    scan, rc, out_groups, out_chunks = _run(
        data, scan_leaves(schema, raw_paths), wanted, len(num_rows)
    )
    if rc != lib.PBA_FOOTER_OK or scan.schema_leaves != len(schema.columns):
        return None
    n = scan.n_groups
    if n != len(num_rows):
        return None
    for (rows, has, _), expected in zip(
        _GROUP.iter_unpack(ffi.buffer(out_groups, n * _GROUP.size)), num_rows, strict=True
    ):
        if not has or rows != expected:
            return None
    own = ffi.buffer(out_chunks, n * len(wanted) * _CHUNK.size)[:]
    return ChunkRecords(data, own, n, len(wanted))


def head_spans(
    data: bytes, schema: Schema, raw_paths: Sequence[Sequence[bytes]], groups: int
) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """Where the schema's bytes (FileMetaData's ``schema`` list) and the key/value
    metadata's lie in ``data``, each as ``(offset, length)`` (``(0, 0)``: no key/value
    metadata); None when the scanner refuses the footer."""
    scan, rc, _, _ = _run(data, scan_leaves(schema, raw_paths), (), groups)
    if rc != lib.PBA_FOOTER_OK or not scan.schema_len:
        return None
    return (
        (int(scan.schema_off), int(scan.schema_len)),
        (int(scan.key_values_off), int(scan.key_values_len)),
    )


def schema_span(data: bytes) -> tuple[int, int] | None:
    """Where the footer ``data`` holds its schema (FileMetaData's ``schema`` list), as
    ``(offset, length)``; None when it holds none or the scanner refuses it. Equal bytes
    there are equal schemas; nothing else of the footer is read (``pba_footer_schema_span``)."""
    off = ffi.new("uint64_t[2]")
    rc = lib.pba_footer_schema_span(data, len(data), off, off + 1)
    if rc != lib.PBA_FOOTER_OK or not off[1]:
        return None
    return int(off[0]), int(off[1])
