"""Page indexes: the hardened decoders, page selection, and one-column files of pages.

Files come from pyarrow (``write_page_index=True``); damaged indexes are written with the
package's own thrift specs. Selections are checked against the rows each page holds.
"""

from __future__ import annotations

import io
import itertools
import math
import random
import struct
from typing import Any

import pytest
from support.predicates import truth
from support.ranges import CASES as RANGE_CASES
from support.ranges import FLOATS as RANGE_FLOATS
from support.ranges import groups_column, literals_of, negation, predicates, value_of
from thrift.protocol.TCompactProtocol import TCompactProtocol
from thrift.transport.TTransport import TMemoryBuffer

from pybloom_async.errors import ParquetFormatError
from pybloom_async.parquet import decode_file_metadata
from pybloom_async.parquet import page_specs as page_wire
from pybloom_async.parquet import thrift_specs as wire
from pybloom_async.parquet.page_index import (
    MAX_INDEX_BYTES,
    ChunkLayout,
    chunk_layout,
    decode_column_index,
    decode_offset_index,
    dictionary_pages,
    single_column_file,
)
from pybloom_async.predicate import Predicate, col
from pybloom_async.pruning.api import CompiledPredicate
from pybloom_async.read.ranges import HeldBytes
from pybloom_async.rows.pages import (
    FilePageIndex,
    GroupPages,
    WholeChunks,
    decode_group,
    file_page_index,
    held_reader,
    pages_for_rows,
    select_group,
)

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _encode(obj: Any) -> bytes:
    buffer = TMemoryBuffer()
    obj.write(TCompactProtocol(buffer))
    return bytes(buffer.getvalue())


def _write(table: Any, **kwargs: Any) -> bytes:
    out = io.BytesIO()
    options = {"write_page_index": True, "data_page_size": 256, "write_batch_size": 50}
    pq.write_table(table, out, **(options | kwargs))
    return out.getvalue()


def _metadata(data: bytes) -> tuple[bytes, int]:
    (length,) = struct.unpack("<I", data[-8:-4])
    start = len(data) - 8 - length
    return data[start:-8], start


class File:
    """A file in memory with its page index decoded."""

    def __init__(self, table: Any, **kwargs: Any) -> None:
        self.data = _write(table, **kwargs)
        metadata, start = _metadata(self.data)
        decoded = decode_file_metadata(metadata)
        self.schema = decoded.schema
        index = file_page_index(decoded, start, self.data, 0, [0], "mem")
        assert index is not None
        self.index: FilePageIndex = index
        self.arrow_schema = pq.read_schema(pa.BufferReader(self.data))
        self.table = table

    def read(self, start: int, end: int) -> bytes:
        return self.data[start:end]

    def select(self, where: Predicate, names: list[str] | None = None) -> GroupPages:
        names = names or list(self.table.column_names)
        compiled = CompiledPredicate(where)
        return select_group(
            self.index, 0, compiled.predicate, self.schema, names, self.read, "mem", compiled
        )

    def rows(self, where: Predicate, names: list[str] | None = None) -> Any:
        chosen = self.select(where, names)
        return decode_group(chosen, self.index, self.arrow_schema, self.schema, self.read)


def _covered(selection: GroupPages) -> set[int]:
    return {r for start, end in selection.rows for r in range(start, end)}


N = 2000
SORTED = pa.table(
    {"id": pa.array(range(N), pa.int64()), "v": pa.array([i * 0.5 for i in range(N)])}
)


# ---- decoders ---------------------------------------------------------------------------


def test_offset_index_of_a_pyarrow_file_is_its_pages() -> None:
    f = File(SORTED, use_dictionary=False)
    chunk = f.index.groups[0][0]
    assert chunk.offset_index is not None and chunk.column_index is not None
    pages = decode_offset_index(f.read(*chunk.offset_index), chunk, N)
    assert len(pages) > 10
    assert pages[0].first_row == 0 and pages[-1].end_row == N
    assert all(a.end_row == b.first_row for a, b in itertools.pairwise(pages))
    index = decode_column_index(f.read(*chunk.column_index), len(pages))
    for page, low, high in zip(pages, index.min_values, index.max_values, strict=True):
        assert struct.unpack("<q", low)[0] == page.first_row
        assert struct.unpack("<q", high)[0] == page.end_row - 1


def _offsets(*locations: tuple[int | None, int | None, int | None]) -> bytes:
    return _encode(
        page_wire.OffsetIndex(
            page_locations=[
                page_wire.PageLocation(offset=o, compressed_page_size=s, first_row_index=r)
                for o, s, r in locations
            ]
        )
    )


CHUNK = ChunkLayout(100, 1000, None, None, None)


@pytest.mark.parametrize(
    ("locations", "why"),
    [
        ([], "no page"),
        ([(100, 50, 1)], "first row is not 0"),
        ([(50, 50, 0)], "starts before the chunk"),
        ([(100, 950, 0)], "ends after the chunk"),
        ([(100, 0, 0)], "empty page"),
        ([(100, 50, 0), (140, 50, 10)], "overlaps the previous page"),
        ([(100, 50, 0), (200, 50, 0)], "rows do not rise"),
        ([(100, 50, 0), (200, 50, 500)], "first row past the row group"),
        ([(100, None, 0)], "a field missing"),
    ],
)
def test_offset_index_inconsistent_with_its_chunk_is_refused(
    locations: list[tuple[int | None, int | None, int | None]], why: str
) -> None:
    with pytest.raises(ParquetFormatError):
        decode_offset_index(_offsets(*locations), CHUNK, 500, path="f.parquet")


def test_offset_index_garbage_is_a_format_error() -> None:
    with pytest.raises(ParquetFormatError, match=r"f\.parquet"):
        decode_offset_index(b"\x19\xfc\xff\xff\xff\x0f", CHUNK, 10, path="f.parquet")


def test_column_index_lists_must_have_one_entry_per_page() -> None:
    good = page_wire.ColumnIndex(
        null_pages=[False, True], min_values=[b"a", b""], max_values=[b"b", b""], boundary_order=0
    )
    decoded = decode_column_index(_encode(good), 2)
    assert decoded.null_pages == (False, True) and decoded.null_counts is None
    with pytest.raises(ParquetFormatError, match="3 page"):
        decode_column_index(_encode(good), 3)
    good.null_counts = [0]
    with pytest.raises(ParquetFormatError):
        decode_column_index(_encode(good), 2)


def _footer_with_index(offset: int, length: int) -> bytes:
    meta = wire.ColumnMetaData(
        type=2,
        encodings=[0],
        path_in_schema=[b"id"],
        codec=0,
        num_values=1,
        total_uncompressed_size=10,
        total_compressed_size=10,
        data_page_offset=4,
    )
    chunk = wire.ColumnChunk(
        file_offset=4, meta_data=meta, offset_index_offset=offset, offset_index_length=length
    )
    return _encode(
        wire.FileMetaData(
            version=1,
            schema=[
                wire.SchemaElement(name=b"s", num_children=1),
                wire.SchemaElement(name=b"id", type=2, repetition_type=0),
            ],
            num_rows=1,
            row_groups=[wire.RowGroup(columns=[chunk], total_byte_size=10, num_rows=1)],
        )
    )


def _layout(offset: int, length: int, data_end: int) -> Any:
    chunk = decode_file_metadata(_footer_with_index(offset, length)).row_groups[0].columns[0]
    return chunk_layout(chunk, data_end)


def test_footer_index_places_are_checked_against_the_file() -> None:
    assert _layout(20, 30, 100).offset_index == (20, 50)
    with pytest.raises(ParquetFormatError, match="outside"):
        _layout(90, 30, 100)
    with pytest.raises(ParquetFormatError, match="outside"):
        _layout(2, 30, 100)
    with pytest.raises(ParquetFormatError, match="outside"):
        _layout(20, MAX_INDEX_BYTES + 1, 2**40)


def test_footer_index_places_are_the_scanners_and_the_decoders() -> None:
    """A page index's places are read from the footer's chunks: as the footer scanner
    reads them, and as the decoder does where the scanner refuses a footer."""
    f = File(SORTED, use_dictionary=False)
    metadata, start = _metadata(f.data)
    scanned = decode_file_metadata(metadata)
    decoded = decode_file_metadata(metadata)
    decoded.load()  # every chunk decoded: the scanner's records are not used
    for md in (scanned, decoded):
        index = file_page_index(md, start, f.data, 0, [0], "mem")
        assert index is not None
        assert [c[:4] for c in index.groups[0]] == [c[:4] for c in f.index.groups[0]]
        assert all(c.offset_index and c.column_index for c in index.groups[0])


def test_a_file_without_page_index_has_none() -> None:
    metadata, start = _metadata(_write(SORTED, write_page_index=False))
    assert file_page_index(decode_file_metadata(metadata), start, b"", 0, [0], "f") is None


# ---- selection --------------------------------------------------------------------------


def test_a_present_key_selects_its_page_only() -> None:
    f = File(SORTED, use_dictionary=False)
    chosen = f.select(col("id") == 1234)
    assert 1234 in _covered(chosen)
    assert len(_covered(chosen)) < N // 10
    for _, _, pages in chosen.columns.values():
        assert len(pages) <= 2
    got = f.rows(col("id") == 1234)
    assert 1234 in got.column("id").to_pylist()


def test_rows_known_choose_exactly_the_pages_that_hold_them() -> None:
    """pages_for_rows: for runs of rows anywhere (one row, runs across page edges, the
    first and last rows), each column's chosen pages are those holding one of them."""
    f = File(SORTED, use_dictionary=False)
    rng = random.Random(3)
    for _ in range(200):
        starts = sorted(rng.sample(range(N), rng.randint(1, 12)))
        runs: list[tuple[int, int]] = []
        for start in starts:
            end = min(N, start + rng.choice([1, 1, 2, 7, 60, 300]))
            if runs and start <= runs[-1][1]:
                runs[-1] = (runs[-1][0], max(runs[-1][1], end))
            else:
                runs.append((start, end))
        chosen = pages_for_rows(f.index, 0, ["id", "v"], runs, f.schema, f.read, "mem")
        for name, (chunk, _, pages) in chosen.columns.items():
            every = decode_offset_index(f.read(*chunk.offset_index), chunk, N)
            want = [p for p in every if any(a < p.end_row and p.first_row < b for a, b in runs)]
            assert list(pages) == want, (name, runs)


def test_rows_in_every_page_are_left_to_whole_chunks_when_asked() -> None:
    """pages_for_rows(partial=True): WholeChunks when every page of every column holds a
    row (the whole chunks are the same bytes), the pages chosen when some are left out."""
    f = File(SORTED, use_dictionary=False)
    every = [(0, N)]
    assert len(pages_for_rows(f.index, 0, ["id"], every, f.schema, f.read, "mem").columns) == 1
    with pytest.raises(WholeChunks):
        pages_for_rows(f.index, 0, ["id", "v"], every, f.schema, f.read, "mem", partial=True)
    some = pages_for_rows(f.index, 0, ["id", "v"], [(5, 6)], f.schema, f.read, "mem", partial=True)
    assert all(len(pages) == 1 for _, _, pages in some.columns.values())


def test_and_intersects_or_joins() -> None:
    f = File(SORTED, use_dictionary=False)
    low, high = col("id") == 10, col("id") == 1990
    assert _covered(f.select(low & high)) == set()
    assert _covered(f.select(low | high)) == _covered(f.select(low)) | _covered(f.select(high))


def test_absent_keys_select_nothing() -> None:
    f = File(SORTED, use_dictionary=False)
    assert f.select(col("id").isin([-1, 10**6])).rows == []
    chosen = f.select(col("id") == -1)
    assert all(pages == [] for _, _, pages in chosen.columns.values())


def test_shuffled_ids_select_every_page_whose_bounds_hold_the_key() -> None:
    import random

    ids = list(range(N))
    random.Random(5).shuffle(ids)
    f = File(pa.table({"id": pa.array(ids, pa.int64())}), use_dictionary=False)
    for key in (0, 777, 1999):
        try:
            covered = _covered(f.select(col("id") == key))
        except WholeChunks:  # every page's bounds hold it: the chunks are read whole
            covered = set(range(N))
        assert ids.index(key) in covered


def test_null_probes_use_the_null_counts() -> None:
    values = [None if 500 <= i < 700 else i for i in range(N)]
    f = File(pa.table({"x": pa.array(values, pa.int64())}), use_dictionary=False)
    covered = _covered(f.select(col("x").eq_null_safe(None)))
    assert set(range(500, 700)) <= covered
    assert len(covered) < N // 2
    assert _covered(f.select(col("x") == 600)) == set()  # pages of nulls only hold no 600
    nulls = _covered(f.select(col("x").is_null()))
    assert set(range(500, 700)) <= nulls and len(nulls) < N // 2


def test_pages_with_unordered_bounds_are_always_kept() -> None:
    # INT96 (no usable order) and NaN bounds: every page.
    values = [math.nan if i % 100 == 0 else float(i) for i in range(N)]
    f = File(pa.table({"f": pa.array(values)}), use_dictionary=False)
    assert 1550 in _covered(f.select(col("f") == 1550.0))
    ts = pa.array([i * 10**9 for i in range(N)], pa.timestamp("ns"))
    f96 = File(pa.table({"t": ts}), use_dictionary=False, use_deprecated_int96_timestamps=True)
    with pytest.raises(WholeChunks, match="every page"):
        f96.select(col("t").isin([ts[3].as_py()]))


def test_strings_and_decimals_compare_as_their_logical_order() -> None:
    import decimal

    words = [f"w{i:05d}" for i in range(N)]
    money = [decimal.Decimal(i - 1000).scaleb(-2) for i in range(N)]
    table = pa.table({"s": pa.array(words), "m": pa.array(money, pa.decimal128(9, 2))})
    f = File(table, use_dictionary=False)
    assert 1500 in _covered(f.select(col("s") == "w01500"))
    assert len(_covered(f.select(col("s") == "w01500"))) < N // 5
    assert 3 in _covered(f.select(col("m") == decimal.Decimal("-9.97")))
    assert len(_covered(f.select(col("m") == decimal.Decimal("-9.97")))) < N // 5


def test_a_value_the_column_cannot_hold_selects_nothing() -> None:
    f = File(pa.table({"b": pa.array(range(100), pa.int8())}), use_dictionary=False)
    assert f.select(col("b") == 300).rows == []


def test_nested_columns_are_not_served() -> None:
    table = pa.table({"id": pa.array(range(10)), "xs": pa.array([[i] for i in range(10)])})
    f = File(table)
    with pytest.raises(WholeChunks):
        f.select(col("id") == 3)


def test_pages_after_the_dictionary_fallback_need_no_dictionary() -> None:
    # A dictionary of at most 1 KiB: the chunk falls back to plain after a few pages.
    words = pa.array([f"word-{i:06d}" for i in range(N)])
    f = File(pa.table({"s": words}), dictionary_pagesize_limit=1024)
    chunk = f.index.groups[0][0]
    encoded = dictionary_pages(chunk.meta)
    assert encoded is not None and encoded >= 1
    late, early = f.select(col("s") == "word-001900"), f.select(col("s") == "word-000001")
    assert late.columns["s"][1] is None and early.columns["s"][1] is not None
    for where in (col("s") == "word-001900", col("s") == "word-000001"):
        assert where.value in f.rows(where).column("s").to_pylist()  # type: ignore[attr-defined]


# ---- one-column files -------------------------------------------------------------------


def test_selected_rows_decode_exactly() -> None:
    f = File(SORTED, use_dictionary=["v"], data_page_version="2.0", compression="zstd")
    where = col("id").isin([5, 777, 1999])
    got = f.rows(where)
    covered = sorted(_covered(f.select(where)))
    assert got.column("id").to_pylist() == covered
    assert got.column("v").to_pylist() == [i * 0.5 for i in covered]


def test_single_column_file_round_trips() -> None:
    f = File(SORTED, use_dictionary=False)
    chunk = f.index.groups[0][1]
    assert chunk.offset_index is not None
    pages = decode_offset_index(f.read(*chunk.offset_index), chunk, N)
    element = f.index.metadata.schema_elements()[2]
    assert element.name == b"v"
    meta = wire.ColumnMetaData(
        type=int(chunk.meta.physical_type),
        encodings=[int(e) for e in chunk.meta.encodings],
        path_in_schema=[element.name],
        codec=int(chunk.meta.codec),
    )
    chosen = pages[2:4]
    data = single_column_file(
        element,
        meta,
        b"",
        [f.read(p.offset, p.offset + p.size) for p in chosen],
        chosen[-1].end_row - chosen[0].first_row,
    )
    got = pq.read_table(pa.BufferReader(data)).column(0).to_pylist()
    assert got == [i * 0.5 for i in range(chosen[0].first_row, chosen[-1].end_row)]


def test_held_reader_refuses_bytes_not_fetched() -> None:
    read = held_reader(HeldBytes([(10, b"abcdef"), (100, b"xyz"), (16, b"gh")]))
    assert read(12, 15) == b"cde" and read(100, 103) == b"xyz"
    assert read(14, 18) == b"efgh"  # across two adjacent pieces
    with pytest.raises(WholeChunks):
        read(14, 20)
    with pytest.raises(WholeChunks):
        read(0, 2)


# ---- ranges, negations and null tests at the pages' boundaries ----------------------------

#: Types whose page bounds are taken as they are (a byte string's maximum may be a
#: truncated prefix, so its successor bounds the page: not exact at the maximum).
_BYTE_CASES = {"string", "binary", "fixed", "uuid"}


@pytest.mark.parametrize("name", sorted(RANGE_CASES))
def test_ranges_select_exactly_the_pages_that_hold_a_match(name: str) -> None:
    """Pages of two values and a NULL (and one of NULLs): a comparison, its NOT, NOT
    BETWEEN and the null tests select exactly the pages where a row makes them TRUE
    (floats also those where a NaN could; byte strings those up to their max's
    successor); BETWEEN at least those."""
    column, groups = groups_column(name)
    f = File(pa.table({"x": column}), use_dictionary=False, max_rows_per_page=3)
    chunk = f.index.groups[0][0]
    assert chunk.offset_index is not None
    assert len(decode_offset_index(f.read(*chunk.offset_index), chunk, len(column))) == len(groups)
    rows = column.to_pylist()
    check = value_of(name)
    narrowed = 0
    for where, exact in predicates(literals_of(name)):
        true_pages = {i // 3 for i, x in enumerate(rows) if truth(where, {"x": x}, check) is True}
        try:
            covered = {r // 3 for r in _covered(f.select(where))}
        except WholeChunks:
            covered = set(range(len(groups)))
        assert true_pages <= covered, where  # never a page that holds a match left out
        if exact and name not in _BYTE_CASES and not (name in RANGE_FLOATS and negation(where)):
            assert covered == true_pages, where
        narrowed += len(covered) < len(groups)
    assert narrowed > 0
