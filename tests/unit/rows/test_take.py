"""Rows taken from whole column chunks by the C decoder: the same values and types as
pyarrow's decode of the chunk followed by a take, on files of every layout the decoder
reads, on the parquet-testing corpus, and a refusal (pyarrow then decodes) for the rest."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.corpus import too_large_to_decode
from support.damage import damaged, paged_file

from pybloom_async import read_footer_sync
from pybloom_async._native import ffi, lib
from pybloom_async.read.ranges import HeldBytes
from pybloom_async.rows import take
from pybloom_async.rows.plan import describe
from pybloom_async.rows.take import open_chunk, take_columns, take_many, takeable

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture(autouse=True, params=[True, False], ids=["c-reader", "page-walk"])
def native(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Every test with the C chunk reader first, then with the page walk alone."""
    monkeypatch.setattr(take, "NATIVE_CHUNKS", request.param)
    return bool(request.param)


def _read_natively(path: Path) -> int:
    """Every takeable chunk of the file read by the C chunk reader itself: its count."""
    footer = read_footer_sync(str(path))
    plan = describe(str(path), footer, list(range(len(footer.metadata.row_groups))))
    held = HeldBytes([(0, path.read_bytes())])
    read = 0
    for group in plan.kept:
        rows = np.arange(plan.metadata.row_groups[group].num_rows)
        for name in plan.arrow_schema.names:
            column = takeable(plan, name)
            if column is None:
                continue
            chunk = open_chunk(plan, held, group, column.desc)
            assert chunk is not None and chunk.take(rows) is not None, (path, group, name)
            read += 1
    return read


def _same(got: Any, want: Any) -> bool:
    """Equal values and type; floats compared by their bits (NaN equals NaN)."""
    if got.type != want.type:
        return False
    if pa.types.is_floating(got.type):
        bits = pa.int32() if got.type.bit_width == 32 else pa.int64()
        got, want = got.view(bits), want.view(bits)
    return bool(got.equals(want))


def _selections(n: int, rng: Any) -> list[Any]:
    picks = [np.arange(n), np.array([0]), np.array([n - 1]), np.zeros(0, dtype=np.int64)]
    picks.append(np.sort(rng.choice(n, size=min(n, 7), replace=False)))
    picks.append(np.arange(0, n, 3))
    return [p for p in picks if not len(p) or p[-1] < n]


def _compare(path: Path | str, seed: int = 0) -> tuple[int, int]:
    """Every row group's takeable columns against pyarrow's: (taken, refused) counts."""
    rng = np.random.default_rng(seed)
    footer = read_footer_sync(str(path))
    plan = describe(str(path), footer, list(range(len(footer.metadata.row_groups))))
    held = HeldBytes([(0, Path(path).read_bytes())])
    pf = pq.ParquetFile(path)
    names = list(plan.arrow_schema.names)
    taken = refused = 0
    many: dict[str, list[Any]] = {name: [] for name in names}  # per row group: (rows, want)
    for group in plan.kept:
        n = plan.metadata.row_groups[group].num_rows
        decoded = {}
        for name in names:
            try:
                column = pf.read_row_group(group, columns=[name])[name].combine_chunks()
            except (OSError, pa.ArrowException):
                continue  # a damaged chunk: the pages read here may be whole
            if len(column) == n:
                decoded[name] = column
        for rows in _selections(n, rng):
            got = take_columns(plan, held, group, names, rows)
            for name, column in decoded.items():
                if name not in got:
                    refused += takeable(plan, name) is not None
                    continue
                want = column.take(pa.array(rows, pa.int64()))
                got[name].validate()
                try:
                    want.validate(full=True)
                except pa.ArrowInvalid:
                    pass  # invalid UTF-8 a damaged page holds: pyarrow's reading holds it too
                else:
                    got[name].validate(full=True)
                assert _same(got[name], want), (path, group, name, rows[:5])
                taken += 1
        picked = np.sort(rng.choice(n, size=min(n, 5), replace=False)) if n else np.arange(0)
        for name in names:
            if name in decoded:
                many[name].append((group, picked, decoded[name].take(pa.array(picked, pa.int64()))))
    _compare_many(plan, held, many)
    return taken, refused


def _compare_many(plan: Any, held: HeldBytes, many: dict[str, list[Any]]) -> None:
    """Each column taken from every row group at once (take_many) is the row groups' values
    in turn, where the C reader reads them all."""
    for name, parts in many.items():
        if not parts:
            continue
        groups, rows, wants = zip(*parts, strict=True)
        counts = np.array([len(r) for r in rows], dtype=np.uint64)
        every = np.concatenate([np.asarray(r, dtype=np.int64) for r in rows])
        got = take_many(plan, held, groups, every, counts, [name])
        if got is None:
            assert not take.NATIVE_CHUNKS or not all(
                _read_by_c(plan, held, g, name, r) for g, r in zip(groups, rows, strict=True)
            ), (plan.path, name)
            continue
        got[name].validate()
        want = pa.concat_arrays([w.cast(got[name].type) for w in wants])
        try:
            want.validate(full=True)
        except pa.ArrowInvalid:
            continue  # invalid UTF-8 in a damaged page (as in _compare)
        got[name].validate(full=True)
        assert _same(got[name], want), (plan.path, name)


def _read_by_c(plan: Any, held: HeldBytes, group: int, name: str, rows: Any) -> bool:
    """Whether the C chunk reader takes ``rows`` of one chunk."""
    column = takeable(plan, name)
    chunk = open_chunk(plan, held, group, column.desc) if column is not None else None
    return chunk is not None and chunk.take(rows) is not None


def _table(n: int, nulls: bool) -> Any:
    rng = np.random.default_rng(n)
    valid = rng.random(n) > 0.3 if nulls else np.ones(n, dtype=bool)
    mask = ~valid
    ints = rng.integers(-(2**40), 2**40, n)
    small = rng.integers(0, 50, n)  # few values: dictionaries stay
    base = datetime.datetime(2026, 1, 1)
    return pa.table(
        {
            "i8": pa.array(small.astype(np.int8), mask=mask),
            "i16": pa.array(ints.astype(np.int16), mask=mask),
            "i32": pa.array(ints.astype(np.int32), mask=mask),
            "i64": pa.array(ints, mask=mask),
            "u8": pa.array(small.astype(np.uint8), mask=mask),
            "u16": pa.array(ints.astype(np.uint16), mask=mask),
            "u32": pa.array(ints.astype(np.uint32), mask=mask),
            "u64": pa.array(ints.astype(np.uint64), mask=mask),
            "f32": pa.array(np.where(small == 3, np.nan, ints / 7).astype(np.float32), mask=mask),
            "f64": pa.array(np.where(small == 4, -0.0, ints / 3), mask=mask),
            "d": pa.array([datetime.date(2026, 1, 1 + int(s) % 28) for s in small], mask=mask),
            "ts_ms": pa.array(
                [base + datetime.timedelta(seconds=int(s)) for s in small],
                pa.timestamp("ms"),
                mask=mask,
            ),
            "ts_us": pa.array(ints % 10**15, pa.timestamp("us", tz="UTC"), mask=mask),
            "ts_ns": pa.array(ints, pa.timestamp("ns"), mask=mask),
            "ts_s": pa.array(small, pa.timestamp("s"), mask=mask),
            "s": pa.array(
                [f"value-{int(i)}" * (int(i) % 3) for i in small * ints % 997], mask=mask
            ),
            "few": pa.array([f"country-{int(s)}" for s in small], mask=mask),
            "b": pa.array([bytes([int(s)]) * int(s) for s in small], pa.binary(), mask=mask),
            "ls": pa.array([str(int(i)) for i in ints], pa.large_string(), mask=mask),
            "req": pa.array(ints),  # required where the table has no nulls
        }
    )


@pytest.mark.parametrize("nulls", [False, True])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("compression", ["none", "snappy", "zstd", "gzip", "lz4", "brotli"])
def test_taken_rows_equal_pyarrows(
    tmp_path: Path, nulls: bool, version: str, compression: str, native: bool
) -> None:
    table = _table(3_000, nulls)
    schema = table.schema.set(
        table.schema.get_field_index("req"), pa.field("req", pa.int64(), nullable=False)
    )
    table = table.cast(schema)
    for i, options in enumerate(
        [
            {},
            {"use_dictionary": False},
            {"data_page_size": 512},  # many pages: those without a wanted row not read
            {"dictionary_pagesize_limit": 256, "data_page_size": 512},  # dictionary, then PLAIN
        ]
    ):
        path = tmp_path / f"t{i}.parquet"
        pq.write_table(
            table,
            path,
            row_group_size=1_000,
            data_page_version=version,
            compression=compression,
            **options,
        )
        taken, refused = _compare(path, seed=i)
        assert taken > 0 and refused == 0, (options, taken, refused)
        if native:  # and the C reader read them (its codecs are built in: make setup)
            assert _read_natively(path) > 0


def test_columns_it_does_not_read_are_left_to_pyarrow(tmp_path: Path) -> None:
    table = pa.table(
        {
            "dec": pa.array([1, 2, 3], pa.decimal128(10, 2)),
            "nested": pa.array([[1], [], None], pa.list_(pa.int64())),
            "flag": [True, False, None],
            "fixed": pa.array([b"ab", b"cd", b"ef"], pa.binary(2)),
            "dict": pa.array(["a", "b", "a"]).dictionary_encode(),
            "delta": pa.array([1, 2, 3], pa.int64()),
            "ok": pa.array([1, 2, 3], pa.int64()),
        }
    )
    path = tmp_path / "a.parquet"
    pq.write_table(
        table, path, use_dictionary=["dict"], column_encoding={"delta": "DELTA_BINARY_PACKED"}
    )
    footer = read_footer_sync(str(path))
    plan = describe(str(path), footer, [0])
    held = HeldBytes([(0, path.read_bytes())])
    got = take_columns(plan, held, 0, table.column_names, np.array([0, 2]))
    assert sorted(got) == ["ok"]
    assert got["ok"].to_pylist() == [1, 3]
    # Bytes not fetched: nothing is taken (and nothing is read).
    assert take_columns(plan, HeldBytes(), 0, ["ok"], np.array([0])) == {}


def test_a_damaged_page_is_refused_never_misread(tmp_path: Path) -> None:
    """Every byte of a chunk's pages changed in turn: each read gives pyarrow's values or
    leaves the column to pyarrow."""
    path = tmp_path / "a.parquet"
    data = paged_file(path, "v", "s")
    broken = tmp_path / "b.parquet"
    for _at, _value, bad in damaged(path, data):
        broken.write_bytes(bad)
        _compare(broken)


def test_the_corpus(parquet_testing: Path) -> None:
    taken = 0
    for path in sorted(parquet_testing.rglob("*.parquet")):
        try:
            read_footer_sync(str(path))
            md = pq.ParquetFile(path).metadata
        except Exception:
            continue
        if too_large_to_decode(md):
            continue  # a gigabyte of strings: as read here as the generated files
        try:
            taken += _compare(path)[0]
        except Exception as exc:
            if "pyarrow cannot read" in str(exc) or "does not match schema" in str(exc):
                continue
            raise
    assert taken > 100


def test_the_c_calls_check_their_arguments() -> None:
    refs = np.zeros(2, dtype=np.int64)
    out = ffi.from_buffer("int64_t[]", refs)

    def take(
        levels: bytes | None, values: bytes, n: int, count: int, width: int, rows: list[int]
    ) -> int:
        wanted = np.array(rows, dtype=np.uint32)
        return int(
            lib.pba_take_refs(
                ffi.NULL if levels is None else levels,
                0 if levels is None else len(levels),
                values,
                len(values),
                n,
                count,
                width,
                ffi.from_buffer("uint32_t[]", wanted),
                len(wanted),
                out,
            )
        )

    eight = bytes(range(16))
    assert take(None, eight, 2, 0, 8, [0, 1]) == 0 and refs.tolist() == [0, 8]
    assert take(None, eight, 2, 0, 8, [1, 1]) == lib.PBA_TAKE_ERR_ARG  # not ascending
    assert take(None, eight, 2, 0, 8, [2]) == lib.PBA_TAKE_ERR_ARG  # past the page
    assert take(None, eight, 3, 0, 8, [2]) == lib.PBA_TAKE_ERR_TRUNCATED
    # Levels: an RLE run of 2 ones (header 4, value 1), then the values.
    assert take(b"\x04\x01", eight, 2, 0, 8, [1]) == 0 and refs[0] == 8
    assert take(b"\x04\x02", eight, 2, 0, 8, [1]) == lib.PBA_TAKE_ERR_MALFORMED  # level 2
    assert take(b"\x04", eight, 2, 0, 8, [1]) == lib.PBA_TAKE_ERR_TRUNCATED
    assert take(b"\x03", eight, 8, 0, 8, [7]) == lib.PBA_TAKE_ERR_TRUNCATED  # packed, no bytes
    # Dictionary indices: bit width 2, a bit-packed group of 8: 3, 0, 1, 2, ...
    indices = bytes([2, 0x03, 0b10_01_00_11, 0])
    assert take(None, indices, 4, 4, 0, [0, 3]) == 0 and refs.tolist() == [3, 2]
    assert take(None, indices, 4, 3, 0, [0]) == lib.PBA_TAKE_ERR_MALFORMED  # 3 >= 3 entries
    assert take(None, bytes([33]), 1, 4, 0, [0]) == lib.PBA_TAKE_ERR_MALFORMED  # width 33
    # Byte arrays: a length past the bytes is truncated, never read.
    arrays = (3).to_bytes(4, "little") + b"abc" + (9).to_bytes(4, "little") + b"x"
    assert take(None, arrays, 2, 0, 0, [0]) == 0 and refs[0] == 0
    assert take(None, arrays, 2, 0, 0, [1]) == lib.PBA_TAKE_ERR_TRUNCATED
    offsets = np.zeros(3, dtype=np.int64)
    status = lib.pba_byte_array_offsets(
        arrays, len(arrays), 2, ffi.from_buffer("int64_t[]", offsets)
    )
    assert status == lib.PBA_TAKE_ERR_TRUNCATED
    room = bytearray(2)
    refs[:] = [0, -1]
    status = lib.pba_gather_byte_arrays(
        arrays, len(arrays), out, 2, ffi.from_buffer("int64_t[]", offsets), ffi.from_buffer(room), 2
    )
    assert status == lib.PBA_TAKE_ERR_CAPACITY


def _runs(rows: Any) -> list[tuple[int, int]]:
    """Ascending row numbers as ``[start, end)`` runs."""
    runs: list[tuple[int, int]] = []
    for row in rows.tolist():
        if runs and runs[-1][1] == row:
            runs[-1] = (runs[-1][0], row + 1)
        else:
            runs.append((row, row + 1))
    return runs


@pytest.mark.parametrize("nulls", [False, True])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
@pytest.mark.parametrize("compression", ["none", "snappy", "zstd"])
def test_rows_taken_from_chosen_pages_equal_pyarrows(
    tmp_path: Path, nulls: bool, version: str, compression: str, native: bool
) -> None:
    """A row group read by page (its offset index): each column's chosen pages are read
    as a chunk of just those pages, and the rows taken there are pyarrow's, whether the
    pages need the dictionary, come after its fallback to PLAIN, or hold NULLs."""
    from pybloom_async.rows.pages import held_reader, pages_for_rows

    path = tmp_path / "paged.parquet"
    pq.write_table(
        _table(3_000, nulls),
        path,
        row_group_size=1_500,
        write_page_index=True,
        data_page_size=512,
        dictionary_pagesize_limit=2_048,
        data_page_version=version,
        compression=compression,
    )
    footer = read_footer_sync(str(path))
    plan = describe(str(path), footer, [0, 1], page_index=True)
    assert plan.page_index is not None
    held = HeldBytes([(0, path.read_bytes())])
    names = [name for name in plan.arrow_schema.names if takeable(plan, name) is not None]
    pf = pq.ParquetFile(path)
    rng = np.random.default_rng(7)
    for group in plan.kept:
        want = pf.read_row_group(group, columns=names)
        for rows in _selections(want.num_rows, rng):
            if not len(rows):
                continue
            pages = pages_for_rows(
                plan.page_index, group, names, _runs(rows), plan.schema, held_reader(held), "t"
            )
            got = take.take_paged(plan, held, pages, rows)
            assert set(got) == (set(names) if native else set())
            for name, array in got.items():
                expected = want.column(name).take(pa.array(rows)).combine_chunks()
                assert _same(array, expected), (group, name, rows[:5])
            if len(rows) == 1:  # one page of each column read, of many
                assert all(len(spans) == 1 for _, _, spans in pages.columns.values())


def test_a_row_outside_the_chosen_pages_leaves_its_column_to_pyarrow(
    tmp_path: Path, native: bool
) -> None:
    from pybloom_async.rows.pages import held_reader, pages_for_rows

    path = tmp_path / "paged.parquet"
    pq.write_table(_table(3_000, True), path, write_page_index=True, data_page_size=512)
    footer = read_footer_sync(str(path))
    plan = describe(str(path), footer, [0], page_index=True)
    assert plan.page_index is not None
    held = HeldBytes([(0, path.read_bytes())])
    pages = pages_for_rows(
        plan.page_index, 0, ["i64", "s"], [(0, 1)], plan.schema, held_reader(held), "t"
    )
    assert take.take_paged(plan, held, pages, np.array([0, 2_999])) == {}
    found = take.take_paged(plan, held, pages, np.array([0]))
    assert set(found) == ({"i64", "s"} if native else set())


def test_chosen_pages_of_many_row_groups_are_taken_in_one_call(
    tmp_path: Path, native: bool
) -> None:
    """take_paged_many: each column of several row groups read by page (one of them whole,
    its pages not chosen: None), in one C call per column, gives pyarrow's rows of every
    row group in turn."""
    from pybloom_async.rows.pages import held_reader, pages_for_rows

    path = tmp_path / "paged.parquet"
    pq.write_table(
        _table(4_000, True), path, row_group_size=1_000, write_page_index=True, data_page_size=512
    )
    footer = read_footer_sync(str(path))
    plan = describe(str(path), footer, [0, 1, 2, 3], page_index=True)
    assert plan.page_index is not None
    held = HeldBytes([(0, path.read_bytes())])
    names = [name for name in plan.arrow_schema.names if takeable(plan, name) is not None]
    rng = np.random.default_rng(3)
    groups = [0, 1, 2, 3]
    rows = [np.sort(rng.choice(1_000, size=k, replace=False)) for k in (5, 30, 1, 40)]
    selections: list[Any] = [
        pages_for_rows(plan.page_index, g, names, _runs(r), plan.schema, held_reader(held), "t")
        for g, r in zip(groups, rows, strict=True)
    ]
    selections[1] = None  # read whole
    stacked_rows, counts = take.stacked(rows)
    got = take.take_paged_many(plan, held, groups, selections, stacked_rows, counts, names)
    if not native:
        assert got is None
        return
    assert got is not None and set(got) == set(names)
    pf = pq.ParquetFile(path)
    for name in names:
        want = pa.concat_arrays(
            [
                pf.read_row_group(g, columns=[name]).column(0).take(pa.array(r)).combine_chunks()
                for g, r in zip(groups, rows, strict=True)
            ]
        )
        assert _same(got[name], want), name


def test_a_paged_table_takes_what_c_reads_and_decodes_the_rest(tmp_path: Path) -> None:
    """paged_table: the selected rows of every column, in the selection's order, equal
    pyarrow's; a decimal and a boolean (not read in C) come from pyarrow's decode."""
    import decimal

    from pybloom_async.rows.pages import held_reader, pages_for_rows

    n = 3_000
    table = pa.table(
        {
            "id": pa.array(range(n), pa.int64()),
            "dec": pa.array([decimal.Decimal(i).scaleb(-2) for i in range(n)], pa.decimal128(9, 2)),
            "flag": pa.array([i % 3 == 0 for i in range(n)]),
            "s": pa.array([f"s{i}" for i in range(n)]),
        }
    )
    path = tmp_path / "mixed.parquet"
    pq.write_table(table, path, write_page_index=True, data_page_size=512)
    footer = read_footer_sync(str(path))
    plan = describe(str(path), footer, [0], page_index=True)
    assert plan.page_index is not None
    held = HeldBytes([(0, path.read_bytes())])
    runs = [(10, 20), (1_500, 1_501), (2_990, 3_000)]
    names = ["s", "dec", "flag", "id"]
    selected = pages_for_rows(plan.page_index, 0, names, runs, plan.schema, held_reader(held), "t")
    got = take.paged_table(plan, held, selected)
    rows = pa.array([r for a, b in runs for r in range(a, b)])
    assert got.column_names == names
    assert got.equals(table.select(names).take(rows))


def test_pages_whose_rows_are_not_their_offset_indexs_are_refused(
    tmp_path: Path, native: bool
) -> None:
    """Rows are placed among the chosen pages by the offset index, and read by the page
    headers: a page whose header holds other rows than its index entry (here two entries
    moved five rows, the total kept) is read by neither the C reader nor pyarrow's
    decode, which raises WholeChunks (the row group is then read whole)."""
    from pybloom_async.rows.pages import GroupPages, WholeChunks, held_reader, pages_for_rows

    path = tmp_path / "paged.parquet"
    pq.write_table(
        _table(3_000, True), path, row_group_size=3_000, write_page_index=True, data_page_size=512
    )
    footer = read_footer_sync(str(path))
    plan = describe(str(path), footer, [0], page_index=True)
    assert plan.page_index is not None
    held = HeldBytes([(0, path.read_bytes())])
    every = [(0, 3_000)]
    pages = pages_for_rows(plan.page_index, 0, ["i64"], every, plan.schema, held_reader(held), "t")
    chunk, dictionary, spans = pages.columns["i64"]
    assert len(spans) > 2
    first, second = spans[0], spans[1]
    moved = [
        first._replace(end_row=first.end_row - 5),
        second._replace(first_row=second.first_row - 5),
        *spans[2:],
    ]
    lying = GroupPages(0, every, {"i64": (chunk, dictionary, moved)})
    rows = np.arange(3_000)
    assert take.take_paged(plan, held, lying, rows) == {}
    with pytest.raises(WholeChunks, match="offset index"):
        take.paged_table(plan, held, lying)
    assert set(take.take_paged(plan, held, pages, rows)) == ({"i64"} if native else set())
    none = GroupPages(0, [], {"i64": (chunk, dictionary, [])})  # no page chosen: not read
    assert take.take_paged(plan, held, none, np.zeros(0, dtype=np.int64)) == {}
