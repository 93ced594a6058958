"""Row groups ruled out by their dictionaries, before their rows are decoded.

A Bloom filter keeps a row group by false positive about once in a hundred probes, so an
``IN`` list of 100 keys keeps most row groups that hold none of them. When every data page
of a column chunk is dictionary-encoded, its dictionary page holds every value the chunk
has, exactly: a row group whose dictionary holds none of an equality's values has no row
where the equality is TRUE (parquet-java's ``DictionaryFilter`` prunes the same way).

The dictionary is the first page of the chunk, so it is among the bytes already fetched to
decode the predicate's columns: checking it costs its decompression and one hash per
entry, no request. Its entries are hashed as the Bloom filter's writer hashed them (XXH64
of the PLAIN bytes) and compared with the hashes of the equality's literals, every encoding
of each (the run's leaves: :meth:`~pybloom_async.pruning.api.CompiledPredicate.leaf`): a
value present always matches one, so no row group with a match is ruled out. Two
different values of equal hash keep the row group: it is then decoded as before.

A dictionary is read only where it costs much less than the rows: one with more entries than
:data:`MAX_DICTIONARY_SHARE` of its chunk's values (a column of mostly distinct values: a
key) is not read, and its row group is decoded as before. There the check would cost about
what the decode costs, and a row group it keeps would pay both (an ``IN`` list of 1,000 keys
keeps most row groups by a true match: measured, the check made that lookup 1.5x slower).

Only what is certain is used: a chunk whose page encodings are not recorded as all
dictionary-encoded, of a physical type not read here (INT96, BOOLEAN), of a
repeated column, with a codec pyarrow cannot decompress, or whose dictionary page does not
read back as the footer says, keeps its row group. So does every comparison but a plain
equality (``=``, ``<=>`` of a value, ``IN``), and any predicate the normal form's AND and OR
do not let the equalities decide (:func:`~pybloom_async.pruning.evaluate.combine`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..core.hashing import hash_plain_byte_arrays, hash_values
from ..errors import PyBloomError
from ..parquet import ColumnChunk
from ..parquet.elements import (
    DATA_PAGES,
    DICTIONARY_ENCODINGS,
    Encoding,
    PageType,
)
from ..parquet.pages import read_page_header
from ..parquet.schema import ColumnDescriptor
from ..predicate import Predicate, normal_form
from ..pruning.api import CompiledPredicate
from ..pruning.bounds import Outcome
from ..pruning.evaluate import combine, leaves_of
from ..pruning.leaves import Leaf, leaf_column
from ..pruning.verdicts import Rule
from ..read.ranges import HeldBytes
from ..types import PhysicalType
from .page_walk import decompressed, decompressible
from .plan import FilePlan, Job, chunk_range, rows_where

#: How each fixed-width physical type read here is hashed: its PLAIN bytes as they are,
#: read as integers of their width (a float's bits, -0.0 and NaN's payload included, as the
#: writer hashed them), or FIXED_LEN_BYTE_ARRAY's as bytes.
_WIDTHS: dict[PhysicalType, tuple[np.dtype[Any], PhysicalType]] = {
    PhysicalType.INT32: (np.dtype("<i4"), PhysicalType.INT32),
    PhysicalType.INT64: (np.dtype("<i8"), PhysicalType.INT64),
    PhysicalType.FLOAT: (np.dtype("<i4"), PhysicalType.INT32),
    PhysicalType.DOUBLE: (np.dtype("<i8"), PhysicalType.INT64),
}

#: A dictionary larger than this, uncompressed, is not read here (its row group is decoded).
MAX_DICTIONARY_BYTES = 64 << 20
#: A dictionary of more entries than this share of its chunk's values is not read (see
#: above): its row group is decoded without it.
MAX_DICTIONARY_SHARE = 0.5
#: A dictionary page's header comes within this many bytes of the chunk's start.
_HEADER_BYTES = 1024
#: A leaf the dictionary does not decide, and one no row of the row group makes TRUE.
_KEPT = Outcome(False, Rule.MAY_MATCH, "")
_OUT = Outcome(True, Rule.MAY_MATCH, "")


def dictionary_kept(plan: FilePlan, job: Job, held: HeldBytes, groups: Sequence[int]) -> list[int]:
    """``groups`` (in order) less those whose dictionaries show that no row can match.

    ``held``: the fetched bytes the predicate's columns are decoded from (a chunk whose
    bytes are not all held keeps its row group). Never raises for what the bytes hold:
    a dictionary that cannot be read keeps its row group, and decoding it says why.
    """
    where = rows_where(plan, job)
    if where is None or job.compiled is None:
        return list(groups)
    normal = normal_form(where)
    leaves = _equalities(normal, plan, job.compiled)
    if not leaves:
        return list(groups)
    kept = []
    for group in groups:
        cache: dict[int, Any] = {}

        def decide(p: Predicate, group: int = group, cache: dict[int, Any] = cache) -> Outcome:
            leaf = leaves.get(id(p))
            if leaf is None or leaf.desc is None:
                return _KEPT
            index = leaf.desc.index
            if index not in cache:
                cache[index] = _dictionary_hashes(plan, held, group, leaf.desc)
            hashes = cache[index]
            if hashes is None or _any_in(leaf.hashes, hashes):
                return _KEPT
            return _OUT

        if not combine(normal, decide, (Rule.MAY_MATCH,)).excluded:
            kept.append(group)
    return kept


def _equalities(normal: Predicate, plan: FilePlan, compiled: CompiledPredicate) -> dict[int, Leaf]:
    """The plain equalities of ``normal`` over columns the dictionary can decide, by ``id``
    (the run's leaves, from ``compiled``)."""
    found: dict[int, Leaf] = {}
    schema = plan.schema
    for p in leaves_of(normal):
        column = leaf_column(p)
        if column not in schema:
            continue
        desc = schema.column(column)
        if _width(desc) is None or desc.max_repetition_level != 0:
            continue
        try:
            leaf = compiled.leaf(p, desc)
        except PyBloomError:
            continue  # the row decode reports a literal of the wrong type
        if leaf.needs_filter:
            found[id(p)] = leaf
    return found


def _width(desc: ColumnDescriptor) -> tuple[np.dtype[Any], PhysicalType] | None:
    """numpy's type of one PLAIN value of the column, and the type it is hashed as
    (BYTE_ARRAY: bytes, each with its length; None: not read here)."""
    if desc.physical_type is PhysicalType.BYTE_ARRAY:
        return np.dtype("u1"), PhysicalType.BYTE_ARRAY
    if desc.physical_type is PhysicalType.FIXED_LEN_BYTE_ARRAY:
        width = desc.type_length
        if width is None or width <= 0:
            return None
        return np.dtype(f"V{width}"), PhysicalType.FIXED_LEN_BYTE_ARRAY
    return _WIDTHS.get(desc.physical_type)


def all_dictionary(chunk: ColumnChunk) -> bool:
    """Whether the footer records every data page of the chunk as dictionary-encoded."""
    stats = chunk.encoding_stats
    if stats:
        data = [s for s in stats if s.page_type in DATA_PAGES and s.count > 0]
        return all(s.encoding in DICTIONARY_ENCODINGS for s in data)
    # No page statistics: only the old writers' list, whose PLAIN_DICTIONARY (not PLAIN)
    # names the dictionary page, says so; with PLAIN listed a data page may be PLAIN.
    encodings = set(chunk.encodings)
    plain = {Encoding.PLAIN_DICTIONARY, Encoding.RLE, Encoding.BIT_PACKED}
    return Encoding.PLAIN_DICTIONARY in encodings and encodings <= plain


def _dictionary_hashes(plan: FilePlan, held: HeldBytes, group: int, desc: ColumnDescriptor) -> Any:
    """The hashes of every value of the chunk's dictionary (None: not known exactly, or not
    worth reading: see :data:`MAX_DICTIONARY_SHARE`)."""
    chunk = plan.chunk(group, desc.index)
    width = _width(desc)
    codec = chunk.codec
    if width is None or not all_dictionary(chunk):
        return None
    if not decompressible(codec):
        return None
    try:
        start, end = chunk_range(plan, group, desc.index)
        head = held.view(start, min(end, start + _HEADER_BYTES))
        if head is None:  # the chunk's start is not held, so neither is the whole chunk
            return None
        header = read_page_header(head, path=plan.path, column=desc.path)
    except PyBloomError:
        return None
    size, raw_size = header.compressed_page_size, header.uncompressed_page_size
    if header.type != PageType.DICTIONARY_PAGE or size is None or raw_size is None:
        return None
    entries = header.num_values
    if entries is None or entries > MAX_DICTIONARY_SHARE * chunk.num_values:
        return None  # mostly distinct values: checking costs about what decoding does
    body = start + header.header_length
    if not 0 <= size <= end - body or not 0 <= raw_size <= chunk.total_uncompressed_size:
        return None
    if raw_size > MAX_DICTIONARY_BYTES:
        return None
    dtype, hashed_as = width
    if raw_size % dtype.itemsize:
        return None
    page = held.view(body, body + size)
    data = None if page is None else decompressed(page, raw_size, codec)
    if data is None:
        return None
    if hashed_as is PhysicalType.BYTE_ARRAY:
        try:
            return hash_plain_byte_arrays(data)
        except PyBloomError:
            return None  # a length runs past the page: the decode says what is wrong
    return hash_values(np.frombuffer(data, dtype=dtype), hashed_as, desc.type_length)


def _any_in(probes: Any, hashes: Any) -> bool:
    """Whether any of ``probes`` (few) is among ``hashes`` (a dictionary's: many)."""
    if not len(probes) or not len(hashes):
        return False
    if len(probes) <= 16:
        return any(bool((hashes == h).any()) for h in probes.tolist())
    ordered = np.sort(probes)
    at = np.searchsorted(ordered, hashes)
    np.minimum(at, len(ordered) - 1, out=at)
    return bool((ordered[at] == hashes).any())
