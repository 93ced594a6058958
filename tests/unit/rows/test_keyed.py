"""Rows found by key in the key column's pages (``rows/keyed.py``, ``pba_match_rows``): the
same rows as pyarrow's decode of the whole column, found without it, and the pages whose
dictionary holds no key not even decompressed."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.corpus import too_large_to_decode
from support.damage import damaged, paged_file

from pybloom_async import lookup_sync
from pybloom_async._native import ffi, lib
from pybloom_async.rows import decode, keyed, page_walk, take
from pybloom_async.rows.keyed import Keys

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

N = 2_000


@pytest.fixture(autouse=True, params=[True, False], ids=["c-reader", "page-walk"])
def native(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Every test with the C chunk reader first, then with the page walk alone."""
    monkeypatch.setattr(take, "NATIVE_CHUNKS", request.param)
    return bool(request.param)


def _table(nulls: bool) -> Any:
    rng = np.random.default_rng(7)
    valid = rng.random(N) > 0.25 if nulls else np.ones(N, dtype=bool)
    mask = ~valid
    ints = rng.integers(-(2**40), 2**40, N)
    small = rng.integers(0, 40, N)  # few values: dictionaries stay, keys repeat
    base = datetime.datetime(2026, 1, 1)
    return pa.table(
        {
            "i32": pa.array(small.astype(np.int32) - 20, mask=mask),
            "i64": pa.array(ints, mask=mask),
            "u32": pa.array((small * 100_000_000).astype(np.uint32), mask=mask),
            "u64": pa.array(ints.astype(np.uint64), mask=mask),
            "i8": pa.array(small.astype(np.int8), mask=mask),
            "f64": pa.array(np.where(small == 4, -0.0, small / 2), mask=mask),
            "d": pa.array([datetime.date(2026, 1, 1 + int(s) % 28) for s in small], mask=mask),
            "ts": pa.array(
                [base + datetime.timedelta(seconds=int(s)) for s in small],
                pa.timestamp("us"),
                mask=mask,
            ),
            "s": pa.array([f"k{int(s)}" * (int(s) % 3) for s in small], mask=mask),
            "b": pa.array([bytes([int(s)]) * int(s) for s in small], pa.binary(), mask=mask),
            "ls": pa.array([str(int(i)) for i in ints], pa.large_string(), mask=mask),
        }
    )


def _queries(table: Any) -> list[str]:
    def some(name: str, k: int) -> list[Any]:
        values = [v for v in table[name].to_pylist() if v is not None]
        return values[:: max(1, len(values) // k)][:k]

    i64 = some("i64", 5)
    s = some("s", 3)
    return [
        "i32 = -3",
        "i32 IN (-20, 0, 19, 5000)",
        f"i64 = {i64[0]}",
        f"i64 IN ({', '.join(map(str, i64))}, 7)",
        f"i64 IN ({i64[1]}, NULL)",
        "u32 IN (100000000, 3900000000)",
        f"u64 = {some('u64', 1)[0]}",
        "d = '2026-01-05'",
        "ts IN ('2026-01-01 00:00:03', '2026-01-01 00:00:39')",
        f"s IN ({', '.join(repr(v) for v in s)}, 'nope')",
        "s = ''",
        "b = X'0505050505'",
        f"ls = '{some('ls', 1)[0]}'",
        # The key leaf first, the rest of the predicate on the rows it finds.
        "i32 IN (-3, 4) AND s != 'k23'",
        "i32 = 5 AND d BETWEEN '2026-01-01' AND '2026-01-20'",
        "i32 = 5 AND f64 = 12.5",
        "i32 = 5 AND (s = 'k25k25' OR s IS NULL)",
        "i32 = 1000",  # a key in no row
        "i8 = 3",  # not found by key: narrower than its column's values
        "f64 = 0.0",  # nor floats (-0.0 is another byte string)
        "i32 = 3 OR s = 'k1'",  # nor an OR
    ]


def _without_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decode, "key_of", lambda *args: None)


@pytest.mark.parametrize("nulls", [False, True])
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"use_dictionary": False},
        {"data_page_version": "2.0", "compression": "zstd"},
        {"data_page_size": 512, "compression": "gzip"},
        # The dictionary grows past its limit: later pages PLAIN.
        {"dictionary_pagesize_limit": 256, "data_page_size": 256},
    ],
)
@pytest.mark.parametrize("at_once", [True, False], ids=["row-groups-at-once", "one-by-one"])
def test_rows_found_by_key_are_those_a_full_decode_finds(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    nulls: bool,
    options: dict[str, Any],
    at_once: bool,
) -> None:
    table = _table(nulls)
    path = str(tmp_path / "a.parquet")
    pq.write_table(table, path, row_group_size=700, **options)
    queries = _queries(table)
    searched: list[int] = []  # per row group searched by key: whether it was read so
    real, real_many = decode.key_rows, decode.key_rows_many

    def key_rows(plan: Any, held: Any, group: int, keys: Any) -> Any:
        found = real(plan, held, group, keys)
        searched.append(found is not None)
        return found

    def key_rows_many(plan: Any, held: Any, groups: Any, keys: Any) -> Any:
        found = real_many(plan, held, groups, keys) if at_once else None
        searched.extend([True] * len(groups) if found is not None else [])
        return found

    monkeypatch.setattr(decode, "key_rows", key_rows)
    monkeypatch.setattr(decode, "key_rows_many", key_rows_many)
    found = {q: lookup_sync(path, q) for q in queries}
    assert sum(searched) > len(queries)  # each found by key, but the last four
    _without_keys(monkeypatch)
    for q in queries:
        want = lookup_sync(path, q)
        assert found[q].equals(want), q
    assert any(found[q].num_rows for q in queries)


def test_the_key_column_is_not_decoded_and_pages_without_a_key_not_decompressed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: bool
) -> None:
    path = str(tmp_path / "a.parquet")
    # Row i holds (i % 4) * 10,000 + i // 4: every row group spans nearly every id.
    ids = np.arange(40_000, dtype=np.int64).reshape(4, 10_000).T.ravel()
    table = pa.table({"id": ids, "s": [f"v{i}" for i in ids]})
    pq.write_table(table, path, row_group_size=10_000)
    decoded: list[Any] = []
    real = pq.ParquetFile.read_row_groups

    def spy(self: Any, groups: Any, *args: Any, **kwargs: Any) -> Any:
        decoded.append(groups)
        return real(self, groups, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", spy)
    pages: list[int] = []  # the leaf of each data page decompressed by the walk
    real_of = page_walk.Page.of

    def of(header: Any, page: Any, codec: int, desc: Any, dictionary: Any) -> Any:
        pages.append(desc.index)
        return real_of(header, page, codec, desc, dictionary)

    monkeypatch.setattr(page_walk.Page, "of", of)
    opened: list[tuple[int, Any]] = []  # the C reader's chunks, by leaf
    real_open = take.open_chunk
    read: list[tuple[int, int]] = []  # the leaf and pages read of each C call on many chunks
    real_opens = take.open_chunks

    def open_chunk(plan: Any, held: Any, group: int, desc: Any) -> Any:
        chunk = real_open(plan, held, group, desc)
        opened.append((desc.index, chunk))
        return chunk

    def open_chunks(plan: Any, held: Any, groups: Any, desc: Any) -> Any:
        chunks = real_opens(plan, held, groups, desc)
        if chunks is not None:
            close = chunks.close

            def counted() -> None:
                read.append((desc.index, chunks.pages_read))
                close()

            chunks.close = counted
        opened.append((desc.index, chunks))
        return chunks

    monkeypatch.setattr(take, "open_chunk", open_chunk)
    monkeypatch.setattr(keyed, "open_chunk", open_chunk)
    monkeypatch.setattr(take, "open_chunks", open_chunks)
    monkeypatch.setattr(keyed, "open_chunks", open_chunks)
    # No filters, statistics that keep every row group for 15,000 (in row group 2): the
    # dictionaries of row groups 0 and 1 rule them out.
    got = lookup_sync(path, "id IN (15000, 39999)")
    assert got.to_pylist() == [{"id": 15000, "s": "v15000"}, {"id": 39999, "s": "v39999"}]
    assert decoded == []
    # The key chunk's data pages of the two row groups with a key, and the other column's
    # pages that hold the rows: nothing of the two row groups without one.
    if native:  # the row groups read at once: one C call per column
        assert pages == [] and all(chunk is not None for _, chunk in opened)
        assert sorted(leaf for leaf, _ in opened) == [0, 1]
        pages = [leaf for leaf, count in read for _ in range(count)]
    else:
        assert all(chunk is None for _, chunk in opened)
    assert pages.count(0) == 2 and pages.count(1) == 2


def _keys(values: list[Any], width: int) -> Keys:
    raws = [
        v if isinstance(v, bytes) else int(v).to_bytes(width, "little", signed=True) for v in values
    ]
    return Keys.of("c", raws, width)


def _match(values: bytes, num_values: int, keys: Keys, levels: bytes | None = None) -> Any:
    found = ffi.new("size_t *")
    rows = np.zeros(max(num_values, 1), dtype=np.uint32)
    status = lib.pba_match_rows(
        ffi.NULL if levels is None else levels,
        0 if levels is None else len(levels),
        values,
        len(values),
        num_values,
        0,
        ffi.NULL,
        keys.struct(),
        ffi.from_buffer("uint32_t[]", rows),
        num_values,
        found,
    )
    return status, rows[: found[0]].tolist()


def test_the_matcher_finds_plain_values_and_refuses_what_does_not_read() -> None:
    ints = np.array([5, -1, 7, 5, 2**40], dtype=np.int64)
    keys = _keys([5, 2**40, 99], 8)
    assert _match(ints.tobytes(), 5, keys) == (0, [0, 3, 4])
    int32s = np.array([-1, 3, -1], dtype=np.int32)
    assert _match(int32s.tobytes(), 3, _keys([-1], 4)) == (0, [0, 2])
    # Levels: 1, 0, 1, 1 (bit-packed, one group): the NULL row holds no value.
    assert _match(ints[[0, 1, 4]].tobytes(), 4, keys, bytes([0x03, 0b1101])) == (0, [0, 3])
    assert _match(ints[:2].tobytes(), 3, keys)[0] == lib.PBA_TAKE_ERR_TRUNCATED
    arrays = b"".join(len(v).to_bytes(4, "little") + v for v in [b"ab", b"", b"abc", b"ab"])
    assert _match(arrays, 4, _keys([b"ab", b""], 0)) == (0, [0, 1, 3])
    assert _match(arrays, 4, _keys([b"a", b"abcd"], 0)) == (0, [])
    assert _match(arrays[:-1], 4, _keys([b"ab"], 0))[0] == lib.PBA_TAKE_ERR_TRUNCATED
    assert _match(ints.tobytes(), 5, keys, bytes([0x02, 0x02]))[0] == lib.PBA_TAKE_ERR_MALFORMED


def test_the_matcher_reads_dictionary_indices() -> None:
    found = ffi.new("size_t *")
    rows = np.zeros(8, dtype=np.uint32)
    wanted = np.array([0, 1, 0], dtype=np.uint8)
    # Bit width 2; an RLE run of 3 x index 1, then one bit-packed group: 0, 2, 1, 1, ...
    indices = bytes([2, 0x06, 0x01, 0x03, 0b01_01_10_00, 0, 0])
    status = lib.pba_match_rows(
        ffi.NULL, 0, indices, len(indices), 7, 3, ffi.from_buffer("uint8_t[]", wanted),
        ffi.NULL, ffi.from_buffer("uint32_t[]", rows), 8, found,
    )  # fmt: skip
    assert status == 0 and rows[: found[0]].tolist() == [0, 1, 2, 5, 6]
    status = lib.pba_match_rows(
        ffi.NULL, 0, indices, len(indices), 7, 2, ffi.from_buffer("uint8_t[]", wanted),
        ffi.NULL, ffi.from_buffer("uint32_t[]", rows), 8, found,
    )  # fmt: skip
    assert status == lib.PBA_TAKE_ERR_MALFORMED  # index 2 of a 2-entry dictionary
    status = lib.pba_match_rows(
        ffi.NULL, 0, indices, len(indices), 7, 3, ffi.from_buffer("uint8_t[]", wanted),
        ffi.NULL, ffi.from_buffer("uint32_t[]", rows), 2, found,
    )  # fmt: skip
    assert status == lib.PBA_TAKE_ERR_CAPACITY and found[0] == 5


@pytest.mark.parametrize("width", [0, 4, 8])
def test_the_keys_filter_rules_nothing_in_that_is_a_key(width: int) -> None:
    rng = np.random.default_rng(width)
    if width:
        info = np.iinfo(np.int32 if width == 4 else np.int64)
        values = rng.integers(info.min, info.max, 5_000, dtype=np.int64)
        keys = _keys(values[:3_000].tolist(), width)
        data = values.astype(np.int32 if width == 4 else np.int64).tobytes()
    else:
        words = [rng.bytes(int(n)) for n in rng.integers(0, 20, 5_000)]
        keys = _keys(words[:3_000], 0)
        data = b"".join(len(w).to_bytes(4, "little") + w for w in words)
        values = np.array([hash(w) for w in words])
    status, rows = _match(data, 5_000, keys)
    assert status == 0
    is_key = np.isin(values, values[:3_000])
    assert rows == np.flatnonzero(is_key).tolist()


def _lookup_or_error(path: str, where: str) -> Any:
    """The rows, or the error's kind (only the package's errors are allowed)."""
    from pybloom_async import PyBloomError

    try:
        return lookup_sync(path, where)
    except PyBloomError as exc:
        return type(exc)


def test_a_damaged_page_gives_the_full_decode_rows_or_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every byte of the key chunk and the next's start changed in turn: the rows found by
    key are those the full decode finds, or one of the two reports the damage (a page whose
    dictionary holds no key is not read, where the full decode may still trip on it)."""
    path = tmp_path / "a.parquet"
    data = paged_file(path, "k", "s")
    queries = ["k = 3", "k IN (1, 12, 40)", "s = 'k2' AND k IN (2, 9)"]
    broken = tmp_path / "b.parquet"
    found: dict[tuple[int, int], list[Any]] = {}
    for at, value, bad in damaged(path, data):
        broken.write_bytes(bad)
        found[at, value] = [_lookup_or_error(str(broken), q) for q in queries]
    agreed = 0
    with monkeypatch.context() as m:
        _without_keys(m)
        for at, value, bad in damaged(path, data):
            broken.write_bytes(bad)
            for q, mine in zip(queries, found[at, value], strict=True):
                full = _lookup_or_error(str(broken), q)
                if isinstance(mine, type) or isinstance(full, type):
                    continue  # the damage reported by one of them
                assert mine.equals(full), (at, value, q)
                agreed += 1
    assert agreed > len(found)


def test_the_corpus_keys(parquet_testing: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every flat integer or string column of the parquet-testing files, looked up by a few
    of its own values: the rows found by key are the full decode's."""
    from pybloom_async import col

    compared = 0
    for path in sorted(parquet_testing.rglob("*.parquet")):
        try:
            pf = pq.ParquetFile(path)
            if pf.metadata.num_rows > 200_000:
                continue
            if too_large_to_decode(pf.metadata):
                continue
            first = pf.read_row_group(0) if pf.metadata.num_row_groups else None
        except Exception:
            continue
        if first is None:
            continue
        for field in first.schema:
            t = field.type
            if not (pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_binary(t)):
                continue
            values = [v for v in first[field.name].to_pylist()[:50] if v is not None][:3]
            if not values or "." in field.name or '"' in field.name:
                continue
            where = col(field.name).isin(values)
            mine = _lookup_or_error(str(path), where)
            with monkeypatch.context() as m:
                _without_keys(m)
                full = _lookup_or_error(str(path), where)
            if isinstance(mine, type) or isinstance(full, type):
                assert mine == full, (path, where)
                continue
            assert mine.equals(full), (path, where)
            compared += 1
    assert compared > 20


@pytest.mark.parametrize(
    ("where", "evaluated"),
    [
        ("i64 IN ({v}, 2)", False),  # plain integers alone: the rows matched are the answer
        ("i32 = -3", False),
        ("i32 <=> -3", False),
        ("i64 IN ({v}, NULL)", True),  # a NULL literal: not plain integers
        ("u32 = 100000000", True),  # an annotated column
        ("ts = '2026-01-01 00:00:03'", True),
        ("s = 'k2k2'", True),
        ("i32 = -3 AND s != 'k23'", True),  # more than the key's leaf
    ],
)
def test_the_predicate_is_evaluated_unless_the_key_answers_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: bool, where: str, evaluated: bool
) -> None:
    table = _table(nulls=True)
    path = str(tmp_path / "a.parquet")
    pq.write_table(table, path, row_group_size=700)
    # A key the file holds (a file without one is answered before any evaluation).
    where = where.format(v=next(v for v in table.column("i64").to_pylist() if v is not None))
    calls: list[int] = []
    real = decode.matched_rows

    def matched_rows(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(decode, "matched_rows", matched_rows)
    found = lookup_sync(path, where)
    assert found.num_rows
    assert bool(calls) is evaluated
    _without_keys(monkeypatch)
    assert found.equals(lookup_sync(path, where))


@pytest.mark.parametrize("key", [3, 4], ids=["absent", "present"])
def test_a_leaf_inside_a_struct_beside_the_key_reads_as_pyarrow_reads_it(
    tmp_path: Path, key: int
) -> None:
    # The predicate reads ``s.x`` and the answer asks only the key: pyarrow reads that leaf
    # as ``s`` with only ``x``; found by key or not, the answer is the full decode's.
    path = tmp_path / "nested.parquet"
    s = pa.StructArray.from_arrays(
        [pa.array([10, 20, 30, 40], pa.int64()), pa.array(["a", "b", "c", "d"])], names=["x", "y"]
    )
    pq.write_table(pa.table({"k": pa.array([0, 2, 4, 6], pa.int64()), "s": s}), path)
    got = lookup_sync([str(path)], f"k IN ({key}, 5) AND s.x > 0", columns=["k"])
    assert got.column_names == ["k"]
    assert got.to_pylist() == ([{"k": 4}] if key == 4 else [])
