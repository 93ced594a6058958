"""Column values of existing files hashed as their writer hashed them.

The module under test is ``pybloom_async.read.columns``.

The oracle is Arrow C++: pyarrow writes a file with its own Bloom filters, and a
filter we build from our hashes of the same chunk, at the same size, must be
bit-for-bit the filter pyarrow wrote. That proves the logical -> physical mapping
for every type, nulls and nesting included.
"""

from __future__ import annotations

import datetime
import decimal
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from pybloom_async import SplitBlockBloomFilter
from pybloom_async.errors import ParquetFormatError, UnsupportedTypeError
from pybloom_async.parquet.logical import LogicalKind, LogicalType
from pybloom_async.parquet.schema import ColumnDescriptor
from pybloom_async.read.columns import ColumnReader, column_hashes, unsupported_reason
from pybloom_async.read.run import read_bloom_filters, read_footer
from pybloom_async.types import PhysicalType

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

ROWS = 3000
ROW_GROUP = 1000


def _table() -> Any:
    rng = np.random.default_rng(7)
    n = ROWS

    def sometimes_null(values: list[Any], every: int) -> list[Any]:
        return [None if i % every == 0 else v for i, v in enumerate(values)]

    return pa.table(
        {
            "i8": pa.array(rng.integers(-128, 128, n), pa.int8()),
            "i16": pa.array(
                sometimes_null(rng.integers(-(2**15), 2**15, n).tolist(), 9), pa.int16()
            ),
            "u8": pa.array(rng.integers(0, 256, n), pa.uint8()),
            "u16": pa.array(rng.integers(0, 2**16, n), pa.uint16()),
            "u32": pa.array(rng.integers(0, 2**32, n, dtype=np.uint64), pa.uint32()),
            "u64": pa.array(rng.integers(0, 2**63, n, dtype=np.uint64) * 2 + 1, pa.uint64()),
            "i32": pa.array(rng.integers(-(2**31), 2**31, n), pa.int32()),
            "i64": pa.array(
                sometimes_null(rng.integers(-(2**62), 2**62, n).tolist(), 4), pa.int64()
            ),
            "f32": pa.array(rng.standard_normal(n).astype(np.float32)),
            "f64": pa.array(np.concatenate([[0.0, -0.0], rng.standard_normal(n - 2)])),
            "s": pa.array(sometimes_null([f"key-{i}-é" for i in range(n)], 7)),
            "b": pa.array([bytes(rng.integers(0, 256, i % 13, dtype=np.uint8)) for i in range(n)]),
            "d": pa.array(rng.integers(-30000, 30000, n).astype("int32"), pa.int32()).cast(
                pa.date32()
            ),
            "ts_us": pa.array(rng.integers(-(2**50), 2**50, n), pa.int64()).cast(
                pa.timestamp("us", tz="UTC")
            ),
            "ts_ms": pa.array(rng.integers(0, 2**40, n), pa.int64()).cast(pa.timestamp("ms")),
            "ts_ns": pa.array(rng.integers(0, 2**62, n), pa.int64()).cast(pa.timestamp("ns")),
            "t_ms": pa.array(rng.integers(0, 86_400_000, n).astype("int32"), pa.int32()).cast(
                pa.time32("ms")
            ),
            "t_us": pa.array(rng.integers(0, 86_400_000_000, n), pa.int64()).cast(pa.time64("us")),
            "dec9": pa.array(
                [decimal.Decimal(int(x)).scaleb(-2) for x in rng.integers(-(10**8), 10**8, n)],
                pa.decimal128(9, 2),
            ),
            "dec18": pa.array(
                [decimal.Decimal(int(x)).scaleb(-3) for x in rng.integers(-(10**17), 10**17, n)],
                pa.decimal128(18, 3),
            ),
            "dec30": pa.array(
                [
                    decimal.Decimal(int(x) * 10**9).scaleb(-5)
                    for x in rng.integers(-(10**17), 10**17, n)
                ],
                pa.decimal128(30, 5),
            ),
            "dec50": pa.array(
                [
                    decimal.Decimal(int(x) * 10**20).scaleb(-4)
                    for x in rng.integers(-(10**17), 10**17, n)
                ],
                pa.decimal256(50, 4),
            ),
            "fsb": pa.array(
                [bytes(rng.integers(0, 256, 5, dtype=np.uint8)) for _ in range(n)], pa.binary(5)
            ),
            "f16": pa.array(rng.standard_normal(n).astype(np.float16), pa.float16()),
            "dict": pa.array([f"cat{i % 11}" for i in range(n)]).dictionary_encode(),
            "st": pa.array([{"a": i, "b": f"x{i}"} if i % 5 else None for i in range(n)]),
            "li": pa.array(
                [[i, i + 1] if i % 3 else ([] if i % 2 else None) for i in range(n)],
                pa.list_(pa.int64()),
            ),
            "mp": pa.array(
                [[(f"k{i % 50}", i)] if i % 4 else None for i in range(n)],
                pa.map_(pa.string(), pa.int64()),
            ),
        }
    )


@pytest.fixture(scope="module")
def arrow_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pyarrow file with Arrow C++'s own filter on every leaf (small decimals as ints)."""
    path = tmp_path_factory.mktemp("columns") / "all_types.parquet"
    table = _table()
    probe = pa.BufferOutputStream()
    pq.write_table(table.slice(0, 1), probe)
    leaves = pq.read_metadata(pa.BufferReader(probe.getvalue())).schema
    names = [leaves.column(i).path for i in range(len(leaves))]
    pq.write_table(
        table,
        path,
        row_group_size=ROW_GROUP,
        bloom_filter_options={n: {"ndv": ROWS, "fpp": 0.01} for n in names},
        store_decimal_as_integer=True,
    )
    return path


def test_hashes_rebuild_arrow_filters_bit_for_bit(arrow_file: Path) -> None:
    footer = anyio.run(read_footer, arrow_file)
    filters = anyio.run(read_bloom_filters, arrow_file)
    reader = ColumnReader(arrow_file)
    checked = set()
    for rg in range(len(footer.row_groups)):
        for column in footer.schema:
            theirs = filters[(rg, column.path)]
            assert theirs.ok, (column.path, theirs.reason)
            assert theirs.filter is not None
            ours = SplitBlockBloomFilter(theirs.filter.num_bytes)
            hashes = reader.hashes(rg, column)
            ours.insert_hashes(hashes)
            assert bytes(ours.bitset) == bytes(theirs.filter.bitset), column.path
            checked.add((column.path, column.physical_type))
    kinds = {pt for _, pt in checked}
    assert kinds == {
        PhysicalType.INT32,
        PhysicalType.INT64,
        PhysicalType.FLOAT,
        PhysicalType.DOUBLE,
        PhysicalType.BYTE_ARRAY,
        PhysicalType.FIXED_LEN_BYTE_ARRAY,
    }
    assert {"st.a", "st.b", "li.list.element", "mp.key_value.key", "mp.key_value.value"} <= {
        p for p, _ in checked
    }


@pytest.mark.parametrize("as_integer", [False, True], ids=["decimal-fixed", "decimal-int"])
def test_an_empty_file_of_every_type_hashes_to_nothing(tmp_path: Path, as_integer: bool) -> None:
    """A file of no rows (one empty row group), dictionary-encoded columns too."""
    table = _table().slice(0, 0)
    for name in list(table.column_names):
        column = table.column(name)
        if not pa.types.is_nested(column.type) and not pa.types.is_dictionary(column.type):
            try:
                encoded = column.dictionary_encode()
            except pa.ArrowNotImplementedError:
                continue
            table = table.append_column(f"{name}_dict", encoded)
    path = tmp_path / "empty.parquet"
    pq.write_table(table, path, store_decimal_as_integer=as_integer)
    meta = anyio.run(read_footer, path).metadata
    assert [rg.num_rows for rg in meta.row_groups] == [0]
    reader = ColumnReader(path)
    hashed = 0
    for desc in meta.schema.columns:
        if unsupported_reason(desc) is not None:
            continue
        assert reader.hashes(0, desc).size == 0, desc.path
        hashed += 1
    assert hashed >= 2 * 20


def test_values_pyarrow_cannot_turn_back_are_a_format_error_naming_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"x": [1, 2]}), path)
    desc = anyio.run(read_footer, path).metadata.schema.column("x")

    def fails(values: Any, column: ColumnDescriptor) -> Any:
        raise pa.ArrowInvalid("cannot construct ChunkedArray from empty vector")

    monkeypatch.setattr("pybloom_async.read.columns.column_hashes", fails)
    with pytest.raises(ParquetFormatError, match="cannot read the values: ArrowInvalid") as info:
        ColumnReader(path).hashes(0, desc)
    assert (info.value.path, info.value.row_group, info.value.column) == (str(path), 0, "x")


def test_nulls_and_empty_lists_are_not_hashed(arrow_file: Path) -> None:
    footer = anyio.run(read_footer, arrow_file)
    reader = ColumnReader(arrow_file)
    schema = footer.schema
    rows = _table().slice(0, ROW_GROUP)
    assert len(reader.hashes(0, schema.column("i64"))) == ROW_GROUP - rows["i64"].null_count
    assert len(reader.hashes(0, schema.column("st.a"))) == ROW_GROUP - rows["st"].null_count
    flat = pa.compute.list_flatten(rows["li"])
    assert len(reader.hashes(0, schema.column("li.list.element"))) == len(flat)


def test_int96_timestamps_match_the_stored_bytes(tmp_path: Path) -> None:
    stamps = [
        datetime.datetime(1970, 1, 1),
        datetime.datetime(1969, 12, 31, 23, 59, 59, 999999),
        datetime.datetime(2024, 2, 29, 12, 30, 1, 123456),
        datetime.datetime(1700, 6, 1),
        None,
    ]
    path = tmp_path / "int96.parquet"
    pq.write_table(
        pa.table({"ts": pa.array(stamps, pa.timestamp("us"))}),
        path,
        use_deprecated_int96_timestamps=True,
    )
    footer = anyio.run(read_footer, path)
    column = footer.schema.column("ts")
    assert column.physical_type is PhysicalType.INT96
    hashes = ColumnReader(path).hashes(0, column)
    # The INT96 bytes of each instant: nanoseconds of the day, then the Julian day.
    expected = []
    for ts in stamps:
        if ts is None:
            continue
        delta = ts - datetime.datetime(1970, 1, 1)
        days = delta.days
        nanos = (delta.seconds * 1_000_000 + delta.microseconds) * 1000
        raw = nanos.to_bytes(8, "little") + (days + 2_440_588).to_bytes(4, "little")
        from pybloom_async import xxh64

        expected.append(xxh64(raw))
    assert hashes.tolist() == expected


def test_int96_outside_the_nanosecond_range_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "far.parquet"
    far = pa.array([datetime.datetime(3000, 1, 1)], pa.timestamp("us"))
    pq.write_table(pa.table({"ts": far}), path, use_deprecated_int96_timestamps=True)
    footer = anyio.run(read_footer, path)
    with pytest.raises(UnsupportedTypeError, match=r"1677\.\.2262") as info:
        ColumnReader(path).hashes(0, footer.schema.column("ts"))
    assert info.value.column == "ts"
    assert info.value.row_group == 0


@pytest.mark.parametrize(
    ("column", "needle"),
    [
        (ColumnDescriptor.of("BOOLEAN"), "BOOLEAN"),
        (
            ColumnDescriptor.of(
                "FIXED_LEN_BYTE_ARRAY", LogicalType(LogicalKind.INTERVAL), type_length=12
            ),
            "INTERVAL",
        ),
        (ColumnDescriptor.of("BYTE_ARRAY", LogicalType.decimal(40, 2)), "BYTE_ARRAY decimals"),
        (ColumnDescriptor.of("INT64", LogicalType(LogicalKind.UNRECOGNIZED)), "newer"),
        (ColumnDescriptor.of("FIXED_LEN_BYTE_ARRAY"), "type length"),
    ],
)
def test_unsupported_columns_are_refused_with_a_reason(
    column: ColumnDescriptor, needle: str
) -> None:
    reason = unsupported_reason(column)
    assert reason is not None and needle in reason
    with pytest.raises(UnsupportedTypeError, match=needle):
        column_hashes(pa.array([1]), column)


def test_supported_columns_have_no_reason() -> None:
    for pt in ("INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY"):
        assert unsupported_reason(ColumnDescriptor.of(pt)) is None
    assert unsupported_reason(ColumnDescriptor.of("FIXED_LEN_BYTE_ARRAY", type_length=16)) is None


def test_an_arrow_type_that_does_not_fit_is_refused() -> None:
    with pytest.raises(UnsupportedTypeError, match="cannot be turned back"):
        column_hashes(pa.array(["a"]), ColumnDescriptor.of("INT64"))
    with pytest.raises(UnsupportedTypeError, match="cannot be turned back"):
        column_hashes(pa.array([1.5]), ColumnDescriptor.of("FLOAT"))


def test_timestamps_are_hashed_in_the_column_unit() -> None:
    column = ColumnDescriptor.of("INT64", LogicalType.timestamp(_unit("MILLIS"), True))
    values = pa.array([1_000, 2_000], pa.int64()).cast(pa.timestamp("us"))
    ours = column_hashes(values, column)
    from pybloom_async import hash_values

    assert ours.tolist() == hash_values([1, 2], "INT64").tolist()
    inexact = pa.array([1_001], pa.int64()).cast(pa.timestamp("us"))
    with pytest.raises(UnsupportedTypeError, match="exactly"):
        column_hashes(inexact, column)


def _unit(name: str) -> Any:
    from pybloom_async.parquet.logical import TimeUnit

    return TimeUnit[name]


def test_unreadable_file_is_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "junk.parquet"
    path.write_bytes(b"PAR1" + b"\0" * 50 + b"PAR1")
    with pytest.raises(ParquetFormatError, match="pyarrow cannot open") as info:
        ColumnReader(path)
    assert info.value.path == str(path)


def test_bytes_source_reads_like_a_path(arrow_file: Path) -> None:
    footer = anyio.run(read_footer, arrow_file)
    column = footer.schema.column("s")
    from_path = ColumnReader(arrow_file).hashes(1, column)
    from_bytes = ColumnReader(arrow_file.read_bytes()).hashes(1, column)
    assert from_path.tolist() == from_bytes.tolist()
    assert ColumnReader(arrow_file).num_row_groups == ROWS // ROW_GROUP
