"""lookup through page indexes: the same rows as a whole-file oracle, fewer bytes.

* Exactness against a brute-force oracle (pyarrow reads the whole file, Python filters
  the rows) on random data: sorted and shuffled ids, strings, dates, decimals, floats,
  booleans, nulls; many page sizes; dictionary and plain encodings; data pages v1 and v2;
  =, IN, <=> and AND/OR; ranges, BETWEEN, !=, NOT IN, IS [NOT] NULL and NOT against SQL's
  three-valued truth; with the page index on and off.
* Every Arrow type decodes from its pages alone as from the whole chunk.
* Reads: a present key reads a small part of the chunks (local and S3 on moto); the index
  is served from the footer's tail when it lies there; a damaged index, or pages that do
  not decode as indexed, fall back to whole chunks.
* Files written by Spark (parquet-java writes column indexes by default), marked ``spark``.
"""

from __future__ import annotations

import datetime as dt
import decimal
import os
import random
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.predicates import ALL_FORMS, random_predicate, truth

from pybloom_async import Predicate, col, lookup, lookup_sync, parse_predicate, prune_sync
from pybloom_async.errors import InvalidArgumentError
from pybloom_async.io.base import SourceStats
from pybloom_async.parquet import decode_file_metadata
from pybloom_async.predicate import And, Eq, In, Or
from pybloom_async.read.fetch import ReaderConfig
from pybloom_async.read.plan import PlanConfig
from pybloom_async.rows import fetch

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

ROWS = 3000
COLUMNS = ["id", "s", "d", "dec", "f", "flag", "n"]
#: No hole read over: the bytes counted are the pages chosen.
EXACT = ReaderConfig(plan=PlanConfig(max_hole_bytes=0))
#: A footer read that brings no data bytes (a small file's tail holds its data, which the
#: rows' reads then use: no bytes left to compare).
SHORT_TAIL = ReaderConfig(footer_read_bytes=64, plan=PlanConfig(max_hole_bytes=0))


def _table(rng: random.Random, sorted_ids: bool) -> Any:
    ids = list(range(0, 3 * ROWS, 3))
    if not sorted_ids:
        rng.shuffle(ids)

    def maybe(make: Callable[[], Any], rate: float = 0.1) -> Any:
        return None if rng.random() < rate else make()

    day = dt.date(2020, 1, 1)

    def date() -> dt.date:
        return day + dt.timedelta(days=rng.randrange(900))

    def money() -> decimal.Decimal:
        return decimal.Decimal(rng.randrange(-9999, 9999)).scaleb(-2)

    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "s": pa.array([maybe(lambda: f"name-{rng.randrange(400):04d}") for _ in ids]),
            "d": pa.array([maybe(date) for _ in ids]),
            "dec": pa.array(
                [
                    maybe(lambda: decimal.Decimal(rng.randrange(-9999, 9999)).scaleb(-2))
                    for _ in ids
                ],
                pa.decimal128(9, 2),
            ),
            "f": pa.array([maybe(lambda: rng.choice([0.5, -0.0, 1.25, 3.0])) for _ in ids]),
            "flag": pa.array([maybe(lambda: rng.random() < 0.5) for _ in ids]),
            # Mostly nulls: pages of nulls only.
            "n": pa.array([maybe(lambda: rng.randrange(50), 0.97) for _ in ids], pa.int32()),
        }
    )


def _literals(rng: random.Random, table: Any, column: str) -> list[Any]:
    present = [v for v in table.column(column).to_pylist() if v is not None]
    # A NULL among the literals: IN (..., NULL) matches the other values' rows.
    out = [*rng.sample(present, min(3, len(present))), None]
    extra: dict[str, list[Any]] = {
        "id": [1, -5, 10**9],
        "s": ["absent", "name-9999"],
        "d": [dt.date(1999, 1, 1)],
        "dec": [decimal.Decimal("0.07"), decimal.Decimal("1000.00")],
        "f": [0.0, 2.0],
        "flag": [True],
        "n": [77],
    }
    return out + extra[column]


def _random_predicate(rng: random.Random, table: Any) -> Predicate:
    return random_predicate(
        rng, COLUMNS, lambda r, column: _literals(r, table, column), null_share=0.35
    )


def _holds(p: Predicate, row: dict[str, Any]) -> bool:
    if isinstance(p, Eq):
        data = row[p.column]
        if p.value is None:
            return p.null_safe and data is None
        return data is not None and bool(data == p.value)
    if isinstance(p, In):
        return any(_holds(Eq(p.column, v), row) for v in p.values)
    if isinstance(p, And):
        return all(_holds(c, row) for c in p.children)
    assert isinstance(p, Or)
    return any(_holds(c, row) for c in p.children)


def _oracle(path: Path, where: Predicate) -> list[dict[str, Any]]:
    return [r for r in pq.read_table(path).to_pylist() if _holds(where, r)]


WRITERS = [
    # (page size bytes, dictionary, data page version, compression, sorted ids)
    (256, True, "1.0", "snappy", True),
    (512, False, "2.0", "none", False),
    (1024, True, "2.0", "zstd", False),
    (2048, False, "1.0", "snappy", True),
    (700, ["s", "dec"], "1.0", "gzip", False),
    (64 * 1024, True, "1.0", "snappy", True),  # one page per chunk
]


@pytest.fixture(scope="module", params=range(len(WRITERS)), ids=lambda i: f"writer{i}")
def written(request: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    page, dictionary, version, codec, sorted_ids = WRITERS[request.param]
    table = _table(random.Random(request.param), sorted_ids)
    path = tmp_path_factory.mktemp("pages") / f"w{request.param}.parquet"
    pq.write_table(
        table,
        path,
        row_group_size=1000,
        write_page_index=True,
        data_page_size=page,
        write_batch_size=64,
        use_dictionary=dictionary,
        data_page_version=version,
        compression=codec,
        bloom_filter_options={"id": True},
    )
    return path, table


def _rows(table: Any) -> list[dict[str, Any]]:
    return [dict(r) for r in table.to_pylist()]


@pytest.mark.anyio
async def test_random_predicates_match_the_oracle(
    written: tuple[Path, Any], anyio_backend: str
) -> None:
    path, table = written
    rng = random.Random(hash(path.name) % 1000 + (0 if anyio_backend == "asyncio" else 1))
    for _ in range(40):
        where = _random_predicate(rng, table)
        got = await lookup(str(path), where)
        assert _rows(got) == _oracle(path, where), where
        whole = await lookup(str(path), where, page_index=False)
        assert got.equals(whole), where


#: Literals at, between and beyond each column's values, for ranges.
_RANGE_EXTRA: dict[str, list[Any]] = {
    "id": [0, 2, 3 * ROWS, 3 * ROWS - 3, 4500.5, -(2**70)],
    "s": ["", "name-0200", "name-", "name-0399", "name-04", "o"],
    "d": [dt.date(2020, 1, 1), dt.date(2022, 6, 19), dt.date(2020, 5, 5)],
    "dec": [decimal.Decimal("-99.99"), decimal.Decimal("0.005"), 0, decimal.Decimal("99.98")],
    "f": [0.5, 0.0, 1.0, 3.0, -1.0],
    "flag": [False, True],
    "n": [0, 49, 25, 25.5],
}


@pytest.mark.anyio
async def test_ranges_and_negations_match_the_oracle(
    written: tuple[Path, Any], anyio_backend: str
) -> None:
    """Pages chosen for ranges and negations keep every row whose predicate is TRUE.

    The predicates change from run to run (the seed is the file name's ``hash``, which
    ``PYTHONHASHSEED`` varies): a failure names its seed and predicate, to replay."""
    path, table = written
    rows = table.to_pylist()
    seed = hash(path.name) % 1000 + (10 if anyio_backend == "asyncio" else 11)
    rng = random.Random(seed)

    def literals(r: random.Random, column: str) -> list[Any]:
        return _literals(r, table, column) + _RANGE_EXTRA[column]

    for _ in range(40):
        where = random_predicate(rng, COLUMNS, literals, forms=ALL_FORMS)
        try:
            got = await lookup(str(path), where)
            whole = await lookup(str(path), where, page_index=False)
        except Exception as exc:
            raise AssertionError(f"seed {seed}, {where}: {exc!r}") from exc
        want = [r for r in rows if truth(where, r, lambda c, v: v) is True]
        assert _rows(got) == want, (seed, where)
        assert got.equals(whole), (seed, where)


@pytest.mark.parametrize(
    "where",
    [
        "id IN (5, NULL)",
        col("id").isin([5, None]),
        "id IN (NULL, 5, 2)",
        "id IN (5, NULL) OR id = 1",
        "id IN (5, NULL) AND id IN (5, 6)",
        "(id IN (NULL, 5) OR n <=> NULL) AND id IN (2, 5)",
        "id <=> 5 OR n IN (NULL, 40)",
        "n <=> NULL",
        "id IN (NULL)",
    ],
    ids=str,
)
def test_a_null_in_an_in_list_keeps_the_pages_of_its_other_values(
    tmp_path: Path, where: str | Predicate
) -> None:
    path = tmp_path / "nulls.parquet"
    table = pa.table(
        {
            "id": pa.array([1, 2, 3, 4, 5, 6], pa.int64()),
            "n": pa.array([10, None, 20, 30, None, 40], pa.int64()),
        }
    )
    pq.write_table(table, path, write_page_index=True, data_page_size=1, write_batch_size=1)
    predicate = where if isinstance(where, Predicate) else parse_predicate(where)
    expected = _oracle(path, predicate)
    assert _rows(lookup_sync(str(path), where)) == expected
    assert _rows(lookup_sync(str(path), where, page_index=False)) == expected


def test_every_present_id_is_found_reading_few_pages(written: tuple[Path, Any]) -> None:
    path, table = written
    ids = table.column("id").to_pylist()
    for value in random.Random(3).sample(ids, 15):
        assert _rows(lookup_sync(str(path), col("id") == value, config=EXACT))[0]["id"] == value


def _bytes(
    path: Path, where: Predicate, config: ReaderConfig = EXACT, **kwargs: Any
) -> tuple[Any, SourceStats]:
    """The rows, and the reads beyond pruning's own (footer, filters)."""
    pruning, stats = SourceStats(), SourceStats()
    prune_sync(str(path), where, stats=pruning, config=config)
    rows = lookup_sync(str(path), where, stats=stats, config=config, **kwargs)
    stats.requests -= pruning.requests
    stats.bytes_read -= pruning.bytes_read
    return rows, stats


def _write_plain(path: Path, rows: int = 60_000, **kwargs: Any) -> Path:
    ids = list(range(rows))
    table = pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([i * 0.5 for i in ids])})
    options = {"row_group_size": rows, "data_page_size": 4096, "use_dictionary": False}
    pq.write_table(table, path, write_page_index=True, **(options | kwargs))
    return path


def test_a_present_key_reads_a_few_pages_not_whole_chunks(tmp_path: Path) -> None:
    path = _write_plain(tmp_path / "plain.parquet")
    on, with_pages = _bytes(path, col("id") == 31_337)
    off, whole = _bytes(path, col("id") == 31_337, page_index=False)
    assert _rows(on) == _rows(off) == [{"id": 31_337, "v": 31_337 * 0.5}]
    # Two chunks of ~480 KB each against a page of each and the page index.
    assert with_pages.bytes_read * 10 < whole.bytes_read, (with_pages, whole)


def test_an_absent_key_inside_the_row_group_fetches_no_page(tmp_path: Path) -> None:
    ids = [i * 2 for i in range(40_000)]
    path = tmp_path / "even.parquet"
    pq.write_table(
        pa.table({"id": pa.array(ids, pa.int64())}),
        path,
        write_page_index=True,
        data_page_size=4096,
        use_dictionary=False,
    )
    got, stats = _bytes(path, col("id") == 1001)  # between pages' bounds, or inside one
    _, whole = _bytes(path, col("id") == 1001, page_index=False)
    assert got.num_rows == 0
    assert stats.bytes_read * 10 < whole.bytes_read


@pytest.fixture
def as_a_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """The local file merged as a store's ranges are (over holes up to 1 MiB), where a
    local read merges only touching ranges: its requests count as a store's round trips."""
    monkeypatch.setattr(PlanConfig, "hole_bytes", lambda self, local: self.max_hole_bytes)


@pytest.mark.usefixtures("as_a_store")
def test_index_in_the_footer_tail_costs_no_extra_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A store's plan reads over holes up to 1 MiB: the pages come in one request (in one
    # phase: a local file's other columns of 160 KB would take a second).
    monkeypatch.setattr(fetch, "TWO_PHASE_MIN_BYTES", 1 << 62)
    path = _write_plain(tmp_path / "small.parquet", rows=20_000)
    _, on = _bytes(path, col("id") == 7, ReaderConfig())
    _, off = _bytes(path, col("id") == 7, ReaderConfig(), page_index=False)
    assert on.requests == off.requests == 1, (on, off)


@pytest.mark.usefixtures("as_a_store")
def test_index_beyond_the_tail_is_one_more_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fetch, "TWO_PHASE_MIN_BYTES", 1 << 62)  # as above: one phase
    path = _write_plain(tmp_path / "small.parquet", rows=20_000)
    small_tail = ReaderConfig(footer_read_bytes=1024)
    a, on = _bytes(path, col("id") == 7, small_tail)
    b, off = _bytes(path, col("id") == 7, small_tail, page_index=False)
    assert a.equals(b)
    assert on.requests == off.requests + 1 == 2, (on, off)


def _damage_offset_indexes(path: Path) -> None:
    data = bytearray(path.read_bytes())
    (length,) = struct.unpack("<I", data[-8:-4])
    start = len(data) - 8 - length
    for group in decode_file_metadata(bytes(data[start:-8])).row_groups:
        for chunk in group.columns:
            lo, length = chunk.offset_index_offset, chunk.offset_index_length
            assert lo is not None and length is not None and lo + length <= start
            data[lo : lo + length] = b"\xff" * length
    path.write_bytes(bytes(data))


def test_a_damaged_page_index_reads_whole_chunks(tmp_path: Path) -> None:
    path = _write_plain(tmp_path / "damaged.parquet")
    _damage_offset_indexes(path)
    got, stats = _bytes(path, col("id").isin([5, 59_999]))
    assert [r["id"] for r in _rows(got)] == [5, 59_999]
    _, whole = _bytes(path, col("id").isin([5, 59_999]), page_index=False)
    assert stats.bytes_read >= whole.bytes_read  # nothing was skipped


def test_nested_columns_read_whole_chunks_and_stay_exact(tmp_path: Path) -> None:
    ids = list(range(5000))
    table = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "st": pa.array([{"x": i % 7, "y": str(i)} for i in ids]),
            "xs": pa.array([[i, i + 1] for i in ids]),
        }
    )
    path = tmp_path / "nested.parquet"
    pq.write_table(table, path, write_page_index=True, data_page_size=512)
    where = col("id").isin([3, 4000]) | (col("st.x") == 6) & (col("id") == 13)
    got = lookup_sync(str(path), where)
    expected = [r for r in table.to_pylist() if r["id"] in (3, 4000, 13)]
    assert _rows(got) == expected


def test_projection_reads_only_its_pages(tmp_path: Path) -> None:
    path = _write_plain(tmp_path / "proj.parquet")
    got = lookup_sync(str(path), col("id") == 100, ["v"], config=EXACT)
    assert _rows(got) == [{"v": 50.0}]


def test_page_index_must_be_a_bool(tmp_path: Path) -> None:
    path = _write_plain(tmp_path / "p.parquet", rows=100)
    with pytest.raises(InvalidArgumentError, match="page_index"):
        lookup_sync(str(path), col("id") == 1, page_index="yes")


@pytest.mark.spark
def test_spark_files_match_the_oracle(spark_session: Any, tmp_path: Path) -> None:
    rng = random.Random(11)
    rows = [
        (i, f"user-{rng.randrange(10**6)}", rng.randrange(100) if rng.random() > 0.1 else None)
        for i in sorted(rng.sample(range(10**6), 20_000))
    ]
    frame = spark_session.createDataFrame(rows, "id long, s string, k int").coalesce(1)
    out = tmp_path / "spark"
    (
        frame.write.option("parquet.page.size", "4096")
        .option("parquet.page.row.count.limit", "500")
        .option("parquet.block.size", str(256 * 1024))
        .parquet(str(out))
    )
    files = sorted(out.glob("*.parquet"))
    assert files
    written = pq.ParquetFile(files[0]).metadata.row_group(0).column(0)
    assert written.has_column_index and written.has_offset_index
    for value in [rows[0][0], rows[12_345][0], -1]:
        for where in (col("id") == value, col("k").isin([3, 4]) & (col("id") == value)):
            got = lookup_sync([str(f) for f in files], where)
            expected = [r for f in files for r in _oracle(f, where)]
            assert sorted(_rows(got), key=str) == sorted(expected, key=str), where
    # Sorted ids: a present key reads a few pages of the kept row group.
    (path,) = [f for f in files if rows[12_345][0] in pq.read_table(f).column("id").to_pylist()]
    _, with_pages = _bytes(path, col("id") == rows[12_345][0])
    _, whole = _bytes(path, col("id") == rows[12_345][0], page_index=False)
    assert with_pages.bytes_read * 3 < whole.bytes_read, (with_pages, whole)


def _metadata(path: Path) -> tuple[bytes, int]:
    data = path.read_bytes()
    (length,) = struct.unpack("<I", data[-8:-4])
    start = len(data) - 8 - length
    return data[start:-8], start


def _claim_plain_pages(path: Path) -> None:
    """Rewrite the footer so that every chunk's encoding statistics claim plain pages only."""
    from thrift.protocol.TCompactProtocol import TCompactProtocol
    from thrift.transport.TTransport import TMemoryBuffer

    from pybloom_async.parquet import thrift_specs as wire
    from pybloom_async.parquet.thrift import decode_struct

    data = path.read_bytes()
    metadata, start = _metadata(path)
    meta = wire.FileMetaData()
    args = [wire.FileMetaData, wire.FileMetaData.thrift_spec]
    decode_struct(metadata, meta, args, what="footer", path=None, decoder="python")
    for group in meta.row_groups:
        for chunk in group.columns:
            chunk.meta_data.encoding_stats = [
                wire.PageEncodingStats(page_type=0, encoding=0, count=9)
            ]
    buffer = TMemoryBuffer()
    meta.write(TCompactProtocol(buffer))
    footer = buffer.getvalue()
    path.write_bytes(data[:start] + footer + struct.pack("<I", len(footer)) + b"PAR1")


def test_pages_that_need_a_dictionary_never_read_wrongly(tmp_path: Path) -> None:
    # Encoding statistics that wrongly say no page uses the dictionary: the pages chosen do
    # not decode without it, and the row group is read again as whole chunks (only their
    # bytes the pages did not bring).
    path = tmp_path / "dict.parquet"
    words = [f"w{i % 50:03d}" for i in range(20_000)]
    table = pa.table({"id": pa.array(range(20_000), pa.int64()), "s": pa.array(words)})
    pq.write_table(table, path, write_page_index=True, data_page_size=1024)
    _claim_plain_pages(path)
    got, with_pages = _bytes(path, col("id") == 17_777, SHORT_TAIL)
    assert _rows(got) == [{"id": 17_777, "s": "w027"}]
    _, whole = _bytes(path, col("id") == 17_777, SHORT_TAIL, page_index=False)
    assert with_pages.requests > whole.requests  # the second read, of whole chunks


def test_pages_that_need_a_dictionary_in_a_two_phase_read(tmp_path: Path) -> None:
    # The same, where the other columns come to more than TWO_PHASE_MIN_BYTES: the predicate
    # columns' pages fail in phase one, and that row group's whole chunks are decoded.
    path = tmp_path / "dict.parquet"
    n = 20_000
    rng = random.Random(3)
    words = [f"w{i % 50:03d}" for i in range(n)]
    blob = [rng.randbytes(40).hex() for _ in range(n)]  # 1.6 MB, incompressible
    table = pa.table({"id": pa.array(range(n), pa.int64()), "s": words, "blob": blob})
    pq.write_table(table, path, write_page_index=True, data_page_size=1024)
    _claim_plain_pages(path)
    whole_file = ReaderConfig(footer_read_bytes=path.stat().st_size)  # the index in the tail
    where = (col("id") == 17_777) & (col("s") == "w027")
    got = lookup_sync(str(path), where, config=whole_file)
    assert _rows(got) == [{"id": 17_777, "s": "w027", "blob": blob[17_777]}]


_T0 = dt.datetime(2024, 3, 1, 12, 0, 0)
#: Arrow types whose pages are decoded from one-column files: the Arrow schema each file
#: stores must give back the column's type exactly.
PAGE_TYPES: dict[str, tuple[Any, list[Any], dict[str, Any]]] = {
    "uint32": (pa.uint32(), [0, 7, 2**31, 2**32 - 1], {}),
    "uint64": (pa.uint64(), [0, 2**63, 2**64 - 1], {}),
    "large_string": (pa.large_string(), ["a", "bb", ""], {}),
    "fixed_size_binary": (pa.binary(3), [b"abc", b"\x00\x01\x02"], {}),
    "timestamp_ns_tz": (
        pa.timestamp("ns", tz="Europe/Paris"),
        [_T0.replace(tzinfo=dt.timezone.utc), _T0.replace(tzinfo=dt.timezone.utc)],
        {},
    ),
    "int96": (
        pa.timestamp("ns"),
        [_T0, _T0 + dt.timedelta(seconds=1, microseconds=7)],
        {"use_deprecated_int96_timestamps": True},
    ),
    "time64": (pa.time64("us"), [dt.time(1, 2, 3, 4), dt.time(23, 59)], {}),
    "date64": (pa.date64(), [dt.date(2024, 1, 1), dt.date(1969, 12, 31)], {}),
    "decimal_big": (pa.decimal128(30, 4), [decimal.Decimal("1234567890123.1234")], {}),
    "dictionary": (pa.dictionary(pa.int32(), pa.string()), ["x", "y"], {}),
    "string_view": (pa.string_view(), ["a", "long enough to be out of line"], {}),
    "duration": (pa.duration("ms"), [dt.timedelta(seconds=3), dt.timedelta(0)], {}),
    "float16": (pa.float16(), [0.5, -2.0], {}),
}


@pytest.mark.parametrize("name", list(PAGE_TYPES))
def test_every_type_decodes_from_its_pages(tmp_path: Path, name: str) -> None:
    arrow_type, values, kwargs = PAGE_TYPES[name]
    rows = 3000
    data = [values[i % len(values)] if i % 7 else None for i in range(rows)]
    if name == "dictionary":
        array = pa.array(data, pa.string()).dictionary_encode()
    elif name == "float16":
        array = pa.array(data, pa.float32()).cast(pa.float16())
    else:
        array = pa.array(data, arrow_type)
    path = tmp_path / f"{name}.parquet"
    table = pa.table({"i": pa.array(range(rows), pa.int64()), "x": array})
    options = {"write_page_index": True, "data_page_size": 512, "write_batch_size": 64}
    pq.write_table(table, path, row_group_size=1500, **(options | kwargs))
    where = col("i").isin([3, 1777, 2999])
    got, with_pages = _bytes(path, where, SHORT_TAIL)
    whole, without = _bytes(path, where, SHORT_TAIL, page_index=False)
    assert got.equals(whole), (got, whole)
    assert got.column("i").to_pylist() == [3, 1777, 2999]
    assert with_pages.bytes_read < without.bytes_read  # pages, not whole chunks


@pytest.mark.servers
def test_s3_reads_only_the_pages(tmp_path: Path, s3_server: Any) -> None:
    path = _write_plain(tmp_path / "s3.parquet")
    key = f"pages-{os.getpid()}/s3.parquet"
    s3_server.put(key, path.read_bytes())
    url = s3_server.url(key)
    where = col("id") == 31_337
    on, off = SourceStats(), SourceStats()
    # A fixed 64 KiB suffix (not the adaptive first read, 256 KiB): the bytes compared are
    # then mostly the data read, pages against whole chunks.
    config = ReaderConfig(footer_read_bytes=64 * 1024, plan=PlanConfig(max_hole_bytes=0))
    store = {"options": s3_server.options, "config": config}
    got = lookup_sync(url, where, stats=on, **store)
    whole = lookup_sync(url, where, stats=off, page_index=False, **store)
    assert got.equals(whole) and got.num_rows == 1
    # The index lies in the footer's tail; a page of each column instead of both chunks.
    assert on.requests == off.requests + 1, (on, off)
    assert on.bytes_read * 5 < off.bytes_read, (on, off)


def test_cli_reads_pages_unless_told_not_to(tmp_path: Path) -> None:
    import json
    import re
    import subprocess
    import sys

    path = _write_plain(tmp_path / "cli.parquet")
    script = [sys.executable, "-m", "pybloom_async.apps.cli", "lookup", str(path)]
    args = ["--where", "id = 31337", "--format", "json"]
    runs = [
        subprocess.run(
            [*script, *args, *extra], capture_output=True, text=True, timeout=120, check=False
        )
        for extra in ([], ["--no-page-index"])
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout) == [{"id": 31337, "v": 15668.5}]
    read = [int(re.findall(r"([\d,]+) bytes read", r.stderr)[0].replace(",", "")) for r in runs]
    assert read[0] < read[1], read


def test_hits_read_by_page_and_whole_are_taken_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Phase two of row groups whose matches lie in every page (their other columns read
    whole) and of one whose match lies in one page (that page read): one batch, taken
    together, the oracle's rows, and fewer bytes than whole chunks."""
    path = tmp_path / "mixed.parquet"
    n = 40_000
    rng = random.Random(5)
    blob = [rng.randbytes(24).hex() for _ in range(n)]  # 1.9 MB, incompressible
    table = pa.table({"id": pa.array(range(n), pa.int64()), "blob": blob})
    pq.write_table(
        table,
        path,
        row_group_size=10_000,
        write_page_index=True,
        data_page_size=64 << 10,
        use_dictionary=["id"],  # the blob's pages hold its values
    )
    keys = [*range(0, 10_000, 500), 10_005, 25_000, 25_001, 39_999]
    where = col("id").isin(keys)

    def one_by_one(*args: Any) -> Any:
        raise AssertionError("phase two read its row groups one by one")

    monkeypatch.setattr(fetch, "other_rows", one_by_one)
    got, with_pages = _bytes(path, where, SHORT_TAIL)
    assert _rows(got) == [{"id": k, "blob": blob[k]} for k in keys]
    off, whole = _bytes(path, where, SHORT_TAIL, page_index=False)
    assert _rows(off) == _rows(got)
    # Row groups 1-3 read one or two of the blob's ~8 pages, not its 480 KB chunks.
    assert with_pages.bytes_read + 900_000 < whole.bytes_read, (with_pages, whole)


def test_rows_matched_beside_a_key_read_their_other_columns_by_page(tmp_path: Path) -> None:
    """A key with more of the predicate beside it (phase one evaluates the rest on the
    key's rows): phase two reads the few rows' pages, by row numbers that stay integers,
    pyarrow decoding the decimals from theirs, and gives the oracle's rows."""
    path = tmp_path / "shuffled.parquet"
    n = 20_000
    rng = random.Random(9)
    ids = list(range(n))
    rng.shuffle(ids)
    table = pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "v": [float(i % 97) for i in range(n)],
            "dec": pa.array(
                [decimal.Decimal(i % 500).scaleb(-2) for i in range(n)], pa.decimal128(9, 2)
            ),
            "blob": [rng.randbytes(40).hex() for _ in range(n)],  # 1.6 MB: two phases
        }
    )
    pq.write_table(
        table, path, write_page_index=True, data_page_size=16 << 10, use_dictionary=["id", "v"]
    )
    where = (col("v") == 3.0) & (col("id") < 300)
    got = lookup_sync(str(path), where)
    want = [r for r in table.to_pylist() if r["v"] == 3.0 and r["id"] < 300]
    assert want and _rows(got) == want
    assert got.equals(lookup_sync(str(path), where, page_index=False))


def test_phase_two_reads_a_chunk_below_the_hole_size_whole(tmp_path: Path) -> None:
    """Phase two reads an other column's chunk by page only when it holds at least the
    reader's ``max_hole_bytes``: below it, the gaps between chosen pages would be read over
    anyway and the whole chunk costs less to read."""
    path = tmp_path / "blobs.parquet"
    n = 40_000
    rng = random.Random(4)
    a = [rng.randbytes(36).hex() for _ in range(n)]
    b = [rng.randbytes(36).hex() for _ in range(n)]
    table = pa.table({"id": pa.array(range(n), pa.int64()), "a": a, "b": b})
    pq.write_table(
        table,
        path,
        row_group_size=10_000,
        write_page_index=True,
        data_page_size=16 << 10,
        use_dictionary=["id"],
    )
    chunks = pq.ParquetFile(path).metadata.row_group(1)
    sizes = [chunks.column(i).total_compressed_size for i in (1, 2)]
    assert all(600_000 < size < 1 << 20 for size in sizes)  # two phases, each below 1 MiB
    where = col("id") == 10_005
    default = ReaderConfig(footer_read_bytes=64)
    small_holes = ReaderConfig(footer_read_bytes=64, plan=PlanConfig(max_hole_bytes=16 << 10))
    whole_rows, whole = _bytes(path, where, default)
    paged_rows, paged = _bytes(path, where, small_holes)
    want = [{"id": 10_005, "a": a[10_005], "b": b[10_005]}]
    assert _rows(whole_rows) == _rows(paged_rows) == want
    assert whole.bytes_read > sum(sizes) > 5 * paged.bytes_read, (whole, paged)
