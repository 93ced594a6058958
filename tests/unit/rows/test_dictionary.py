"""Row groups ruled out by their dictionaries before their rows are decoded: the same rows,
fewer row groups decoded, and nothing ruled out that the dictionary does not prove."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pybloom_async import ParquetFormatError, lookup_sync
from pybloom_async.rows import decode, dictionary

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The row groups whose predicate columns were decoded, with the rows never found by
    key (which reads the dictionaries itself: ``test_keyed.py``)."""
    seen: list[int] = []
    real = decode.match_row_groups

    def spy(fetched: Any, groups: Any, *args: Any) -> Any:
        seen.extend(groups)
        return real(fetched, groups, *args)

    monkeypatch.setattr(decode, "match_row_groups", spy)
    monkeypatch.setattr(decode, "key_of", lambda *args: None)
    return seen


#: Each value written this many times in a row: a dictionary then holds a third of its
#: chunk's values, and is read (one of mostly distinct values is not).
REPEAT = 3


def _interleaved(n: int, groups: int) -> list[int]:
    """Values whose row groups' min/max all overlap: statistics rule nothing out."""
    values = [(i % groups) * 1_000 + i // groups for i in range(n)] + [0, 10**6]
    return [v for v in values for _ in range(REPEAT)]


def _write(path: Path, columns: dict[str, Any], rows: int = 100 * REPEAT, **kwargs: Any) -> None:
    pq.write_table(pa.table(columns), path, row_group_size=rows, **kwargs)


def test_an_absent_key_decodes_no_row_group_when_there_is_no_filter(
    tmp_path: Path, decoded: list[int]
) -> None:
    """No filter, statistics that overlap: before, every row group was decoded."""
    ids = _interleaved(398, 4)
    _write(tmp_path / "a.parquet", {"id": pa.array(ids, pa.int64()), "s": [str(i) for i in ids]})
    assert lookup_sync(str(tmp_path / "a.parquet"), "id IN (500, 1500, 2500)").num_rows == 0
    assert decoded == []
    got = lookup_sync(str(tmp_path / "a.parquet"), "id IN (2062, 2500)")
    assert got.to_pylist() == [{"id": 2062, "s": "2062"}] * REPEAT
    assert decoded == [2]  # only the row group whose dictionary holds 2062 (row 250)


def test_the_rows_are_the_same_with_and_without_dictionaries(tmp_path: Path) -> None:
    ints = _interleaved(398, 4)
    values = [float(v) for v in ints]
    values[5] = -0.0
    values[397] = float("nan")  # a row no query below matches (NaN is not equal to NaN)
    table = {
        "i32": pa.array(ints, pa.int32()),
        "f64": pa.array(values, pa.float64()),
        "f32": pa.array(values, pa.float32()),
        "fixed": pa.array([v.to_bytes(4, "little") for v in ints], pa.binary(4)),
        "s": [str(i // REPEAT) for i in range(400 * REPEAT)],
        "b": pa.array([None if i % 7 == 0 else f"k{v}".encode() for i, v in enumerate(ints)]),
    }
    _write(tmp_path / "dict.parquet", table)
    _write(tmp_path / "plain.parquet", table, use_dictionary=False)
    for where in [
        "f64 = 0.0",
        "f64 = -0.0",
        "f32 IN (0.0, 1001.0, 77.5)",
        "i32 IN (1003, 3004) AND s != '9'",
        "i32 = 2001 OR f64 = 3002.0",
        "NOT (i32 != 1003)",
        "f64 IN (2500.0) OR s = '17'",
        "fixed = X'eb030000'",
        "i32 = 1003 AND f64 IS NOT NULL",
        "b IN (X'6b32303632', X'6b31303031', X'00')",
        "s = '17' OR b = X'6b33303035'",
        "b = X'6b31303033' OR b IS NULL",
    ]:
        with_dictionaries = lookup_sync(str(tmp_path / "dict.parquet"), where)
        plain = lookup_sync(str(tmp_path / "plain.parquet"), where)
        assert with_dictionaries.to_pylist() == plain.to_pylist(), where
        assert with_dictionaries.num_rows > 0, where


def test_a_chunk_whose_pages_fell_back_to_plain_keeps_its_row_groups(
    tmp_path: Path, decoded: list[int]
) -> None:
    """The writer's dictionary grew too large: later pages are PLAIN, and their values are
    in no dictionary."""
    ids = list(range(20_000))
    _write(
        tmp_path / "a.parquet",
        {"id": pa.array(ids, pa.int64())},
        rows=20_000,
        dictionary_pagesize_limit=1024,
        data_page_size=1024,
    )
    md = pq.ParquetFile(tmp_path / "a.parquet").metadata.row_group(0).column(0)
    assert "PLAIN" in md.encodings and md.has_dictionary_page
    assert lookup_sync(str(tmp_path / "a.parquet"), "id = 19999").num_rows == 1
    assert decoded == [0]


def test_strings_are_decided_and_other_comparisons_are_not(
    tmp_path: Path, decoded: list[int]
) -> None:
    ids = _interleaved(398, 4)
    _write(tmp_path / "a.parquet", {"id": pa.array(ids, pa.int64()), "s": [str(i) for i in ids]})
    assert lookup_sync(str(tmp_path / "a.parquet"), "s IN ('1003x', '', 'zz')").num_rows == 0
    assert decoded == []
    assert lookup_sync(str(tmp_path / "a.parquet"), "s = '2062'").num_rows == REPEAT
    assert decoded == [2]
    decoded.clear()
    assert lookup_sync(str(tmp_path / "a.parquet"), "id != 1003 AND id = 7777").num_rows == 0
    assert decoded == []  # the equality alone rules every row group out
    got = lookup_sync(str(tmp_path / "a.parquet"), "id != 1003 OR id = 7777")
    assert got.num_rows == 399 * REPEAT
    assert sorted(decoded) == [0, 1, 2, 3]
    decoded.clear()
    assert lookup_sync(str(tmp_path / "a.parquet"), "s > '2062' AND s < '2063'").num_rows == 0
    assert decoded  # a range: the dictionary does not decide it


def test_encodings_without_page_statistics() -> None:
    """Old writers' lists: only PLAIN_DICTIONARY with RLE or BIT_PACKED is certain."""

    class Chunk:
        encoding_stats = None

        def __init__(self, encodings: tuple[int, ...]) -> None:
            self.encodings = encodings

    assert dictionary.all_dictionary(Chunk((2, 3, 4)))  # type: ignore[arg-type]
    assert not dictionary.all_dictionary(Chunk((0, 3, 8)))  # type: ignore[arg-type]
    assert not dictionary.all_dictionary(Chunk((0, 2, 3)))  # type: ignore[arg-type]
    assert not dictionary.all_dictionary(Chunk((3,)))  # type: ignore[arg-type]


def test_a_dictionary_of_mostly_distinct_values_is_not_read(
    tmp_path: Path, decoded: list[int]
) -> None:
    """A key column's dictionary holds about all its chunk's bytes: checking it would cost
    what decoding costs, so the row groups the filters keep are decoded without it."""
    ids = [v for v in _interleaved(398, 4)[::REPEAT]]
    _write(tmp_path / "a.parquet", {"id": pa.array(ids, pa.int64())}, rows=100)
    md = pq.ParquetFile(tmp_path / "a.parquet").metadata.row_group(0).column(0)
    assert md.has_dictionary_page
    assert lookup_sync(str(tmp_path / "a.parquet"), "id IN (500, 1500, 2500)").num_rows == 0
    assert decoded == [0, 1, 2, 3]
    decoded.clear()
    _write(tmp_path / "b.parquet", {"id": pa.array(_interleaved(398, 4), pa.int64())})
    assert lookup_sync(str(tmp_path / "b.parquet"), "id IN (500, 1500, 2500)").num_rows == 0
    assert decoded == []  # each value thrice: its dictionary is a third of the chunk


def test_a_damaged_dictionary_keeps_its_row_group(tmp_path: Path, decoded: list[int]) -> None:
    """A dictionary page whose header does not read is not trusted: its row group is
    decoded, and the decode says what is wrong."""
    path = tmp_path / "a.parquet"
    _write(path, {"id": pa.array(range(0, 200, 2), pa.int64())}, compression="snappy")
    start = pq.ParquetFile(path).metadata.row_group(0).column(0).dictionary_page_offset
    data = bytearray(path.read_bytes())
    data[start : start + 3] = b"\xff\xff\xff"
    path.write_bytes(bytes(data))
    with pytest.raises(ParquetFormatError, match="row group 0"):
        lookup_sync(str(path), "id = 51", on_error="raise")
    assert decoded == [0]


def test_a_dictionary_that_does_not_decompress_keeps_its_row_group(
    tmp_path: Path, decoded: list[int]
) -> None:
    """The header reads, the compressed bytes after it do not: the row group is decoded,
    and the decode says what is wrong."""
    path = tmp_path / "a.parquet"
    ids = _interleaved(98, 1)
    _write(path, {"id": pa.array(ids, pa.int64())}, compression="snappy")
    column = pq.ParquetFile(path).metadata.row_group(0).column(0)
    start, end = column.dictionary_page_offset, column.data_page_offset
    data = bytearray(path.read_bytes())
    middle = (start + end) // 2  # inside the dictionary page's compressed bytes
    data[middle : middle + 6] = b"\xff" * 6
    path.write_bytes(bytes(data))
    with pytest.raises(ParquetFormatError, match="row group 0"):
        lookup_sync(str(path), "id = 51", on_error="raise")
    assert decoded == [0]


def test_plain_byte_arrays_are_hashed_as_a_writer_hashes_them() -> None:
    from pybloom_async.core.hashing import hash_plain_byte_arrays, hash_values
    from pybloom_async.errors import ValueEncodingError

    values = [b"", b"a", b"user-17", bytes(range(200))]
    run = b"".join(len(v).to_bytes(4, "little") + v for v in values)
    assert hash_plain_byte_arrays(run).tolist() == hash_values(values, "BYTE_ARRAY").tolist()
    assert hash_plain_byte_arrays(b"").tolist() == []
    for cut in (run[:-1], run + b"\x01\x00"):
        with pytest.raises(ValueEncodingError):
            hash_plain_byte_arrays(cut)
