"""A row group's rows whose key is one of a few values, found in the key column's pages.

A lookup by key (``id = 7``, ``id IN (...)``, either ANDed with more) keeps row groups
whose filters may hold a key; pyarrow would decode the whole key column of each to find
the row or two that hold it. Here the C matcher (``pba_match_rows``, ``csrc/rows/take.c``)
reads the key column's pages instead and gives the rows whose stored value is one of the
keys': the values are compared as the column stores them (PLAIN), or, in a dictionary-
encoded page, its indices with the dictionary entries that are keys. A page whose
dictionary holds none of the keys is not even decompressed.

These rows are candidates, not answers: every row where the key leaf holds is among them
(its literals' stored encodings are those pruning probes, and equal values of these types
are equal bytes), and the predicate is then evaluated on them by :mod:`.match` as on any
decoded rows, so the answer and its semantics are the same as a full decode's.

What is matched: a flat INT32 or INT64 column read as integers of its own width, dates or
timestamps, or a BYTE_ARRAY column read as strings or binaries (:func:`.take.takeable`).
Floats are not (0.0 and -0.0 are equal values of different bytes), nor narrower integers
nor decimals. A chunk not read here (:class:`.take.Refused`) is left to pyarrow.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa

from .._native import ffi, lib
from ..errors import PyBloomError
from ..parquet import ColumnDescriptor
from ..parquet.elements import DICTIONARY_ENCODINGS
from ..predicate import And, Eq, In, IsNull, Predicate
from ..read.ranges import HeldBytes
from ..types import PhysicalType
from .chunk import Chunk, Chunks
from .match import Leaves, plain_ints
from .page_walk import ChunkPages, Page, Refused, chunk_pages
from .plan import FilePlan
from .take import open_chunk, open_chunks, takeable

#: The Arrow types (as pyarrow reads the column) whose values are their stored bytes.
_INT_WIDTHS = {PhysicalType.INT32: 4, PhysicalType.INT64: 8}


@dataclass(frozen=True)
class Keys:
    """A key leaf's values as its column stores them, in the C matcher's form (``pba_keys``,
    with its filter of the keys' bits filled)."""

    column: str
    width: int
    count: int
    ints: Any
    data: Any
    offsets: Any
    filter: Any
    bits: int
    #: A row matched holds the leaf (plain integers, each literal its own stored value):
    #: when the leaf is the whole predicate, the rows matched are the answer.
    exact: bool = False

    @classmethod
    def of(cls, column: str, stored: Sequence[bytes], width: int, exact: bool = False) -> Keys:
        if width:
            ints = sorted({int.from_bytes(raw, "little", signed=True) for raw in stored})
            count = len(ints)
            data, offsets = np.zeros(1, dtype=np.uint8), np.zeros(1, np.int64)
            int_keys = np.array(ints or [0], dtype=np.int64)
        else:
            values = sorted(set(stored))
            count = len(values)
            offsets = np.zeros(count + 1, dtype=np.int64)
            offsets[1:] = np.cumsum([len(v) for v in values])
            data = np.frombuffer(b"".join(values) or b"\0", dtype=np.uint8)
            int_keys = np.zeros(1, np.int64)
        # About 64 bits a key (at least 1,024): a value that is no key passes 1 time in 64.
        bits = min(max(10, (64 * count).bit_length()), 24)
        words = np.zeros(1 << (bits - 6), np.uint64)
        keys = cls(column, width, count, int_keys, data, offsets, words, bits, exact)
        struct = keys.struct(with_filter=False)
        if lib.pba_keys_filter(struct, ffi.from_buffer("uint64_t[]", keys.filter), bits) != 0:
            raise Refused
        return keys

    def struct(self, with_filter: bool = True) -> Any:
        """The ``pba_keys`` of these keys (valid while this object lives)."""
        keys = ffi.new("pba_keys *")
        keys.width = self.width
        keys.ints = ffi.from_buffer("int64_t[]", self.ints)
        keys.bytes = ffi.from_buffer("uint8_t[]", self.data)
        keys.offsets = ffi.from_buffer("int64_t[]", self.offsets)
        keys.n = self.count
        if with_filter:
            keys.filter = ffi.from_buffer("uint64_t[]", self.filter)
            keys.filter_bits = self.bits
        return keys


def _key_leaves(where: Predicate) -> Iterator[tuple[Eq | In, tuple[Any, ...]]]:
    """The conjuncts of ``where`` (in normal form) rows may be matched on, with their
    values: equalities and IN lists."""
    for leaf in where.children if isinstance(where, And) else (where,):
        if isinstance(leaf, In):
            yield leaf, leaf.values
        elif isinstance(leaf, Eq) and not isinstance(leaf, IsNull):
            yield leaf, (leaf.value,)


def few_keys(where: Predicate | None, most: int) -> bool:
    """Whether ``where`` (in normal form) is ANDed with an equality or IN list of at most
    ``most`` values: a lookup of a few keys, whose kept row groups, over many, hold a key
    in a few and a filter's false positive in the rest."""
    return where is not None and any(len(values) <= most for _, values in _key_leaves(where))


def answered_by_key(where: Predicate | None, keys: Keys) -> bool:
    """Whether the rows ``keys`` match are those where ``where`` is TRUE: it is the keys'
    own leaf alone, and they are exact (a NULL is never matched)."""
    return (
        keys.exact
        and isinstance(where, (In, Eq))
        and not isinstance(where, IsNull)
        and where.column == keys.column
    )


def matched_by_key(plan: FilePlan, where: Predicate) -> bool:
    """Whether the file's rows are first matched on a key (:func:`key_of`), judged by the
    columns alone: a conjunct's literals not as the column stores them leave it to the
    full decode after all, which gives the same rows."""
    return any(_matched_width(plan, leaf.column) is not None for leaf, _ in _key_leaves(where))


def key_of(plan: FilePlan, where: Predicate, leaves: Leaves) -> Keys | None:
    """The keys rows are first matched on: of the conjuncts of ``where`` (in normal form),
    the equality or IN list with the fewest values over a column matched here (None:
    none is)."""
    best: Keys | None = None
    for leaf, values in _key_leaves(where):
        if best is not None and len(values) >= best.count:
            continue
        width = _matched_width(plan, leaf.column)
        if width is None:
            continue
        desc = plan.schema.column(leaf.column)
        arrow_type = plan.arrow_schema.field(leaf.column).type
        make = partial(_keys, leaves, leaf, values, desc, arrow_type, width)
        keys = leaves.cached(leaf, desc, arrow_type, -2, make)  # once per run
        if keys is not None:
            best = keys
    return best


def _keys(
    leaves: Leaves,
    leaf: Eq | In,
    values: tuple[Any, ...],
    desc: ColumnDescriptor,
    arrow_type: pa.DataType,
    width: int,
) -> Keys | None:
    """The keys of ``leaf`` for :func:`key_of` (None: its literals are not all as the column
    stores its values, and the full decode finds its rows)."""
    stored = leaves.stored(leaf, values, desc, arrow_type)
    if width and any(len(raw) != width for raw in stored):
        return None
    exact = width != 0 and plain_ints(values, desc) is not None
    return Keys.of(leaf.column, stored, width, exact)


def _matched_width(plan: FilePlan, column: str) -> int | None:
    """The PLAIN width of ``column``'s values (0: byte arrays) if its rows are matched here."""
    found = takeable(plan, column)
    if found is None:
        return None
    physical = found.desc.physical_type
    if physical is PhysicalType.BYTE_ARRAY:
        return 0
    width = _INT_WIDTHS.get(physical)
    if width is None or found.arrow_type.bit_width != 8 * width:
        return None
    return width


def key_rows(
    plan: FilePlan, held: HeldBytes, group: int, keys: Keys
) -> tuple[Any, ChunkPages | Chunk] | None:
    """The rows of row group ``group`` whose key is one of ``keys`` (ascending row numbers,
    numpy int64), and the key chunk as read (its pages that hold them decompressed): by the
    C chunk reader, or else its pages walked; None when the chunk is not read here (pyarrow
    decodes it)."""
    desc = plan.schema.column(keys.column)
    native = open_chunk(plan, held, group, desc)
    rows = native.match(keys.struct()) if native is not None else None
    if native is not None and rows is not None:
        return rows, native
    try:
        chunk = chunk_pages(plan, held, group, desc)
        return _matched(chunk, keys), chunk
    except (Refused, PyBloomError, pa.ArrowException, OSError):
        return None


def key_rows_many(
    plan: FilePlan, held: HeldBytes, groups: Sequence[int], keys: Keys
) -> tuple[Any, Any, Chunks] | None:
    """:func:`key_rows` of many row groups in one C call: their rows whose key is one of
    ``keys`` (each row group's in turn, ascending, numpy int64), how many are each row
    group's (numpy uint64), and the key chunks as read, open (the caller closes them);
    None when a chunk is not read so (:func:`key_rows` then reads them one by one)."""
    chunks = open_chunks(plan, held, groups, plan.schema.column(keys.column))
    if chunks is None:
        return None
    found = chunks.match(keys.struct())
    if found is None:
        chunks.close()
        return None
    return found[0], found[1], chunks


def _matched(chunk: ChunkPages, keys: Keys) -> Any:
    struct = keys.struct()
    wanted: Any = None  # which dictionary entries are keys (read when a page needs it)
    any_key = False
    found = []
    for page in chunk.pages:
        if page.encoding in DICTIONARY_ENCODINGS:
            if chunk.dictionary is None:
                raise Refused
            if wanted is None:
                data, count, _ = chunk.dictionary.read()
                entries = _rows_of(None, data, count, 0, None, struct)
                wanted = np.zeros(count, dtype=np.uint8)
                wanted[entries] = 1
                any_key = len(entries) > 0
            if not any_key:
                continue  # no key is in the dictionary: none is in its pages
        parsed = chunk.read(page)
        found.append(_page_rows(parsed, page.values, wanted, struct) + page.row)
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


def _page_rows(page: Page, values: int, wanted: Any, struct: Any) -> Any:
    if page.dictionary is not None:
        return _rows_of(page.levels, page.values, values, len(wanted), wanted, struct)
    return _rows_of(page.levels, page.values, values, 0, None, struct)


def _rows_of(
    levels: memoryview | None,
    values: memoryview,
    num_values: int,
    dictionary_count: int,
    wanted: Any,
    struct: Any,
) -> Any:
    """``pba_match_rows`` on one page: its wanted rows (numpy int64)."""
    rows = np.empty(num_values, dtype=np.uint32)
    found = ffi.new("size_t *")
    status = lib.pba_match_rows(
        ffi.NULL if levels is None else ffi.from_buffer("uint8_t[]", levels),
        0 if levels is None else len(levels),
        ffi.from_buffer("uint8_t[]", values),
        len(values),
        num_values,
        dictionary_count,
        ffi.NULL if wanted is None else ffi.from_buffer("uint8_t[]", wanted),
        struct,
        ffi.from_buffer("uint32_t[]", rows),
        num_values,
        found,
    )
    if status != 0:
        raise Refused
    return rows[: found[0]].astype(np.int64)
