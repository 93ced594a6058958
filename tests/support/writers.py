"""Parquet files with Bloom filters written by other engines: Spark, pyarrow and DuckDB.

Session fixtures write each engine's files once per test session into a temporary
directory; the root conftest registers them (``pytest_plugins``).

* ``spark_files``: PySpark (parquet-java 1.17), one SparkSession per test session
  (``spark_session``). Two part files of 20k rows sorted by ``id`` (about 18 row groups
  each), every type Spark writes, filters requested on every column; plus a small file with
  INT96 timestamps (Spark's default ``outputTimestampType``).
* ``pyarrow_files``: ``pyarrow.parquet.write_table(bloom_filter_options=...)`` (Arrow C++),
  two files, with decimals of every storage width, unsigned integers, float16, UUID,
  large and view strings, fixed-size binary, time and timestamps in three units.
* ``duckdb_files``: ``COPY ... (FORMAT parquet)``; DuckDB writes a filter only for chunks
  it dictionary-encodes, so most columns hold 100 distinct values per row group.

Row groups hold different values (each generator derives every value from the row id and
sorts by it), so a filter that works excludes most values of other row groups, and a test
that checks exclusions can fail.

What each engine does with the request is recorded as data (``WrittenFiles.unfiltered``),
checked against the files' footers by ``tests/integration/test_interop.py``:

* parquet-java writes an *empty* filter for BOOLEAN columns (``write(boolean)`` never
  updates it), recorded in ``WrittenFiles.empty_filters``.
* parquet-java writes no filter for a chunk whose data pages are all dictionary-encoded
  (``ParquetFileWriter.writeColumnChunk``: "write bloom filter if one of data pages is not
  dictionary encoded"). That is why Spark's default INT96 timestamps get none: parquet-java
  keeps INT96 dictionary-encoded. With the dictionary turned off for the column, INT96 gets
  a filter like any other.
* pyarrow refuses a filter on BOOLEAN ("BloomFilterBuilder does not support boolean type"),
  and sizes each filter for the chunk's actual distinct count, not the requested NDV
  (47-byte filters for a handful of values).
* DuckDB writes filters only for dictionary-encoded chunks; it never dictionary-encodes
  BOOLEAN or FIXED_LEN_BYTE_ARRAY decimals.
* All three set ``bloom_filter_length``. :func:`strip_bloom_filter_lengths` derives a copy
  without it, for the reader's guess-then-fetch path.

Test modules import helpers from here before pytest loads it as a plugin, too late for
assertion rewriting, hence: PYTEST_DONT_REWRITE.
"""

from __future__ import annotations

import decimal
import importlib.util
import os
import shutil
import struct
import sys
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from thrift.protocol.TCompactProtocol import TCompactProtocol
from thrift.Thrift import TType
from thrift.transport.TTransport import TMemoryBuffer

# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class WrittenFiles:
    """Files one engine wrote, under ``root``.

    ``files`` are the Parquet files (data files only; Spark also leaves ``_SUCCESS`` and
    ``.crc`` files under ``root``). ``prune_files`` share one schema: the ones predicate
    tests run over. ``unfiltered`` maps a column to why the engine wrote no filter for it
    (a column absent from the map has a filter in every row group of every file holding it).
    ``empty_filters`` maps a column to why its filters, though present, are empty.
    """

    engine: str
    root: Path
    files: tuple[Path, ...]
    prune_files: tuple[Path, ...]
    unfiltered: Mapping[str, str] = field(default_factory=dict)
    # Columns whose filters are present but hold nothing, and why (a writer bug).
    empty_filters: Mapping[str, str] = field(default_factory=dict)
    # Two columns of ``prune_files`` with filters, for AND/OR predicate tests.
    key_columns: tuple[str, str] = ("", "")


@dataclass(frozen=True)
class FilterLocation:
    """Where the footer says one column chunk's filter is (length may be absent)."""

    row_group: int
    column: str
    offset: int | None
    length: int | None


def filter_locations(path: Path) -> list[FilterLocation]:
    """Every column chunk's ``bloom_filter_offset`` / ``bloom_filter_length``, via pyarrow."""
    import pyarrow.parquet as pq

    metadata = pq.ParquetFile(path).metadata
    found: list[FilterLocation] = []
    for rg in range(metadata.num_row_groups):
        group = metadata.row_group(rg)
        for index in range(group.num_columns):
            chunk = group.column(index).to_dict()
            found.append(
                FilterLocation(
                    rg,
                    chunk["path_in_schema"],
                    chunk["bloom_filter_offset"],
                    chunk["bloom_filter_length"],
                )
            )
    return found


def filter_header(path: Path, offset: int) -> tuple[int, int]:
    """(header length, bitset length) of the filter at ``offset``, decoded with thrift.

    ``BloomFilterHeader`` (parquet.thrift): field 1 ``numBytes`` (i32); the others are
    skipped. Independent of the library's own decoder.
    """
    with path.open("rb") as f:
        f.seek(offset)
        data = f.read(1024)
    buffer = TMemoryBuffer(data)
    protocol = TCompactProtocol(buffer)
    num_bytes = None
    protocol.readStructBegin()
    while True:
        _, ttype, fid = protocol.readFieldBegin()
        if ttype == TType.STOP:
            break
        if fid == 1 and ttype == TType.I32:
            num_bytes = protocol.readI32()
        else:
            protocol.skip(ttype)
        protocol.readFieldEnd()
    protocol.readStructEnd()
    assert num_bytes is not None, f"no numBytes in the header at {offset} of {path}"
    return buffer._buffer.tell(), num_bytes


# --------------------------------------------------------------------------- Spark

SPARK_ROWS = 20_000
SPARK_INT96_ROWS = 1_000
# Per-chunk NDV for parquet-java's filter sizing. A row group holds ~600 rows, so 1000 at
# the default FPP (0.01) gives 2 KiB bitsets; the default (1 MiB per filter) would make
# the files mostly filter.
SPARK_NDV = 1_000

# One expression per column, all derived from the row id. Row groups hold id ranges, so
# they hold different values; hashes spread the keys like real ids.
SPARK_COLUMNS: dict[str, str] = {
    "id": "id",
    "c_byte": "cast(floor(id / 80) * 3 % 256 - 128 as byte)",
    "c_short": "cast(id * 3 - 30000 as short)",
    "c_int": "hash(id)",
    "c_long": "xxhash64(id, 1)",
    # 0.0 and -0.0 land in different row groups (and files): probing one must keep both.
    "c_float": (
        "case when id = 10 then cast('0.0' as float) when id = 15000 then cast('-0.0' as float)"
        " when id = 20 then cast('NaN' as float) when id = 30 then cast('Infinity' as float)"
        " when id = 40 then cast('-Infinity' as float) when id % 11 = 0 then null"
        " else cast(id / 4d as float) end"
    ),
    "c_double": (
        "case when id = 11 then cast('0.0' as double) when id = 15001 then cast('-0.0' as double)"
        " when id = 21 then cast('NaN' as double) when id = 31 then cast('Infinity' as double)"
        " when id = 41 then cast('-Infinity' as double) else id / 3d end"
    ),
    "c_string": (
        "case when id = 12 then '' when id = 13 then 'ünïcødé' when id = 14 then '日本語'"
        " when id = 15 then '🦆🚀' when id = 12345 then 'it''s' when id % 7 = 0 then null"
        " else concat('k', cast(id as string)) end"
    ),
    "c_binary": "unhex(substr(sha2(cast(id as string), 256), 1, 2 * (id % 20)))",
    "c_bool": "id < 10000",
    "c_dec9": "cast((xxhash64(id, 2) % 10000000) / 100 as decimal(9,2))",
    "c_dec18": "cast((xxhash64(id, 3) % 100000000000000) / 10000 as decimal(18,4))",
    "c_dec38": (
        "cast(concat(cast(xxhash64(id, 4) as string), '.',"
        " lpad(cast(abs(xxhash64(id, 5) % 10000000000) as string), 10, '0'))"
        " as decimal(38,10))"
    ),
    "c_date": "date_add(date'1950-01-01', cast(id * 2 as int))",
    "c_ts": "timestamp_micros(1600000000000000 + id * 1234567)",
    "c_nullable_int": "case when id % 5 = 0 then null else cast(id * 13 as int) end",
    # Low cardinality: parquet-java keeps it dictionary-encoded and so writes no filter.
    "c_dict": "concat('cat', cast(floor(id / 3000) as string))",
}
SPARK_UNFILTERED = {
    "c_dict": "parquet-java writes no filter for a fully dictionary-encoded chunk",
}
SPARK_EMPTY_FILTERS = {
    # parquet-java 1.17 ColumnWriterBase.write(boolean, ...) updates the statistics but
    # never the Bloom filter, so every BOOLEAN filter is all zeros: probing one would
    # exclude row groups holding the value. Readers must not trust them.
    "c_bool": "parquet-java never inserts BOOLEAN values into the filter it writes",
}
SPARK_INT96_COLUMNS: dict[str, str] = {
    "id": "id",
    # Spark's default timestamp type; parquet-java keeps it dictionary-encoded: no filter.
    "c_ts96": "timestamp_micros(1600000000000000 + id * 1234567)",
    # The same with the dictionary turned off for the column: parquet-java writes a filter.
    "c_ts96_plain": "timestamp_micros(1700000000000000 + id * 7654321)",
}
SPARK_INT96_UNFILTERED = {
    "c_ts96": "Spark's default INT96 chunk is fully dictionary-encoded: parquet-java writes "
    "no filter",
}

LOG4J2_PROPERTIES = """\
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _java_available() -> bool:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").exists():
        return True
    return shutil.which("java") is not None


@pytest.fixture(scope="session")
def spark_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One local SparkSession for the whole test session: local[2], UTC, UI off, quiet."""
    if importlib.util.find_spec("pyspark") is None:
        pytest.skip("pyspark is not installed")
    if not _java_available():
        pytest.skip("no Java runtime (java on PATH or JAVA_HOME) for PySpark")
    from pyspark.sql import SparkSession

    # Python workers run PYSPARK_PYTHON (default: "python3" on PATH, which may lack this
    # package): our interpreter, unless the caller chose one.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work = tmp_path_factory.mktemp("spark-session")
    log4j = work / "log4j2.properties"
    log4j.write_text(LOG4J2_PROPERTIES)
    java_options = f"-Dlog4j2.configurationFile={log4j.as_uri()} -Duser.timezone=UTC"
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("pybloom-async-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.driver.extraJavaOptions", java_options)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.local.dir", str(work / "local"))
        .config("spark.sql.warehouse.dir", str(work / "warehouse"))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        yield spark
    finally:
        spark.stop()


def _spark_write(
    spark: Any,
    columns: Mapping[str, str],
    rows: int,
    partitions: int,
    out: Path,
    *,
    no_dictionary: tuple[str, ...] = (),
) -> None:
    frame = (
        spark.range(rows)
        .selectExpr(*(f"{expr} as {name}" for name, expr in columns.items()))
        .repartitionByRange(partitions, "id")
        .sortWithinPartitions("id")
    )
    # Hadoop options: small row groups (block size), a filter for every column with an
    # NDV that sizes it for one row group; per-column dictionary switch.
    writer = frame.write.mode("overwrite").option("parquet.block.size", str(64 * 1024))
    for name in columns:
        writer = writer.option(f"parquet.bloom.filter.enabled#{name}", "true")
        writer = writer.option(f"parquet.bloom.filter.expected.ndv#{name}", str(SPARK_NDV))
    for name in no_dictionary:
        writer = writer.option(f"parquet.enable.dictionary#{name}", "false")
    writer.parquet(str(out))


def write_spark(spark: Any, root: Path) -> WrittenFiles:
    """Write Spark's files: ``root/main/`` (two part files), ``root/int96/`` (one small file)."""
    # c_byte: 80 rows per value means few distinct values per row group; left alone,
    # parquet-java would dictionary-encode it and drop its filter (like c_dict).
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    _spark_write(spark, SPARK_COLUMNS, SPARK_ROWS, 2, root / "main", no_dictionary=("c_byte",))
    spark.conf.set("spark.sql.parquet.outputTimestampType", "INT96")
    try:
        _spark_write(
            spark,
            SPARK_INT96_COLUMNS,
            SPARK_INT96_ROWS,
            1,
            root / "int96",
            no_dictionary=("c_ts96_plain",),
        )
    finally:
        spark.conf.unset("spark.sql.parquet.outputTimestampType")
    main = tuple(sorted((root / "main").glob("part-*.parquet")))
    int96 = tuple(sorted((root / "int96").glob("part-*.parquet")))
    assert len(main) == 2 and len(int96) == 1, (main, int96)
    return WrittenFiles(
        engine="spark",
        root=root,
        files=main + int96,
        prune_files=main,
        unfiltered={**SPARK_UNFILTERED, **SPARK_INT96_UNFILTERED},
        empty_filters=SPARK_EMPTY_FILTERS,
        key_columns=("c_long", "c_string"),
    )


@pytest.fixture(scope="session")
def spark_files(spark_session: Any, tmp_path_factory: pytest.TempPathFactory) -> WrittenFiles:
    """Spark's files (see :func:`write_spark`), written once per session."""
    return write_spark(spark_session, tmp_path_factory.mktemp("spark"))


# --------------------------------------------------------------------------- pyarrow

PYARROW_FILES = 2
PYARROW_ROWS = 6_000  # per file
PYARROW_ROW_GROUP = 1_500
PYARROW_UNFILTERED = {
    "c_bool": "pyarrow refuses Bloom filters on BOOLEAN ('BloomFilterBuilder does not "
    "support boolean type')",
}


def _pyarrow_table(part: int) -> Any:
    import numpy as np
    import pyarrow as pa

    ids = np.arange(part * PYARROW_ROWS, (part + 1) * PYARROW_ROWS, dtype=np.int64)
    n = len(ids)
    # splitmix64 of the id: spread keys, fixed for every run.
    mixed = ids.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    mixed = (mixed ^ (mixed >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    mixed = (mixed ^ (mixed >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    mixed = mixed ^ (mixed >> np.uint64(31))
    signed = mixed.view(np.int64)

    floats = (ids / 4).astype(np.float64)
    specials = {5: 0.0, 4_500: -0.0, 7: float("nan"), 9: float("inf"), 11: float("-inf")}
    strings: list[str | None] = [f"s{i}" for i in ids]
    specials_s = {3: "", 4: "ünïcødé", 1_600: "日本語", 3_100: "🦆🚀", 4_600: "it's"}
    for offset, number in specials.items():
        floats[offset] = number
    for offset, text in specials_s.items():
        strings[offset] = text
    for offset in range(0, n, 9):
        if offset not in specials_s:
            strings[offset] = None

    def decimals(scale: int, digits: int) -> list[decimal.Decimal]:
        limit = 10**digits
        # v * v spreads the unscaled values over all ``digits`` digits (v < 2**64).
        return [
            # From text: exact, where arithmetic would round to the context's 28 digits.
            decimal.Decimal(f"{(v * v * 31 + v) % limit - limit // 2}e-{scale}")
            for v in mixed.tolist()
        ]

    base_ms = 1_600_000_000_000
    columns: dict[str, Any] = {
        "id": pa.array(ids),
        "c_int8": pa.array(((ids // 40) * 3 % 256 - 128).astype(np.int8)),
        "c_int16": pa.array((ids * 5 - 30_000).astype(np.int16)),
        "c_int32": pa.array(signed.astype(np.int32)),
        "c_int64": pa.array(signed),
        "c_uint32": pa.array((mixed >> np.uint64(32)).astype(np.uint32)),
        # Values above 2**63: the stored INT64 is negative.
        "c_uint64": pa.array(mixed),
        "c_float16": pa.array((ids % 2048).astype(np.float16)),
        "c_float32": pa.array(floats.astype(np.float32)),
        "c_float64": pa.array(floats / 3),
        "c_string": pa.array(strings, pa.string()),
        "c_large_string": pa.array([f"L{v}" for v in signed.tolist()], pa.large_string()),
        "c_string_view": pa.array([f"V{i}" for i in ids], pa.string_view()),
        "c_binary": pa.array(
            [
                struct.pack("<q", v)[: 1 + i % 8]
                for i, v in zip(ids.tolist(), signed.tolist(), strict=True)
            ],
            pa.binary(),
        ),
        "c_fixed": pa.array([struct.pack("<q", v)[:6] for v in signed.tolist()], pa.binary(6)),
        # Storage: INT32 (precision <= 9), INT64 (<= 18), FIXED_LEN_BYTE_ARRAY beyond, with
        # store_decimal_as_integer; without it pyarrow writes FLBA for every precision.
        "c_dec32": pa.array(decimals(2, 5), pa.decimal32(5, 2)),
        "c_dec9": pa.array(decimals(2, 9), pa.decimal128(9, 2)),
        "c_dec18": pa.array(decimals(4, 18), pa.decimal128(18, 4)),
        "c_dec20": pa.array(decimals(3, 20), pa.decimal128(20, 3)),
        "c_dec38": pa.array(decimals(10, 38), pa.decimal128(38, 10)),
        "c_dec60": pa.array(decimals(5, 40), pa.decimal256(60, 5)),
        "c_date": pa.array((ids * 2 - 10_000).astype(np.int32), pa.date32()),
        "c_ts_us_utc": pa.array(base_ms * 1000 + ids * 1_234_567, pa.timestamp("us", "UTC")),
        "c_ts_ms": pa.array(base_ms + ids * 1_001, pa.timestamp("ms")),
        # Whole microseconds, so datetime.datetime can name every stored value.
        "c_ts_ns_utc": pa.array((base_ms * 1000 + ids * 7) * 1000, pa.timestamp("ns", "UTC")),
        "c_time_us": pa.array(ids * 1_000_003 % 86_400_000_000, pa.time64("us")),
        "c_uuid": pa.array(
            [
                uuid.UUID(int=int(v) << 64 | int(i)).bytes
                for i, v in zip(ids.tolist(), mixed.tolist(), strict=True)
            ],
            pa.uuid(),
        ),
        "c_bool": pa.array(ids % (2 * PYARROW_ROW_GROUP) < PYARROW_ROW_GROUP),
        # Few distinct values per chunk: pyarrow still writes a (small) filter.
        "c_dict": pa.array([f"d{i // 1000}" for i in ids]).dictionary_encode(),
        "c_nullable": pa.array([None if i % 4 == 0 else int(i) * 3 for i in ids], pa.int32()),
    }
    return pa.table(columns)


def write_pyarrow(root: Path) -> WrittenFiles:
    """Write pyarrow's files: ``root/part-{0,1}.parquet``, 4 row groups each."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = []
    for part in range(PYARROW_FILES):
        table = _pyarrow_table(part)
        assert isinstance(table, pa.Table)
        options = {
            name: {"ndv": PYARROW_ROW_GROUP, "fpp": 0.01}
            for name in table.column_names
            if name not in PYARROW_UNFILTERED
        }
        path = root / f"part-{part}.parquet"
        pq.write_table(
            table,
            path,
            row_group_size=PYARROW_ROW_GROUP,
            bloom_filter_options=options,
            store_decimal_as_integer=True,
        )
        files.append(path)
    return WrittenFiles(
        engine="pyarrow",
        root=root,
        files=tuple(files),
        prune_files=tuple(files),
        unfiltered=PYARROW_UNFILTERED,
        key_columns=("c_int64", "c_string"),
    )


@pytest.fixture(scope="session")
def pyarrow_files(tmp_path_factory: pytest.TempPathFactory) -> WrittenFiles:
    """pyarrow's files (see :func:`write_pyarrow`), written once per session."""
    pytest.importorskip("pyarrow")
    return write_pyarrow(tmp_path_factory.mktemp("pyarrow"))


# --------------------------------------------------------------------------- DuckDB

DUCKDB_ROWS = 10_240
DUCKDB_ROW_GROUP = 2_048
# v: 100 distinct values per row group (step 3, so v + 1 is absent), disjoint between row
# groups (g = row group).
_G = f"(i // {DUCKDB_ROW_GROUP})"
_V = f"({_G} * 1000 + (i % 100) * 3)"
DUCKDB_COLUMNS: dict[str, str] = {
    "id": "i",
    "c_tinyint": f"({_G} * 50 + (i % 25) * 2 - 125)::TINYINT",
    "c_smallint": f"({_V} * 7 - 3000)::SMALLINT",
    "c_integer": f"({_V} * 100003 - 200000000)::INTEGER",
    "c_bigint": f"({_V} * 1000000007 - 99999999999)::BIGINT",
    "c_utinyint": f"({_G} * 50 + (i % 25) * 2)::UTINYINT",
    "c_uinteger": f"({_V} * 700001)::UINTEGER",
    "c_ubigint": f"({_V}::UBIGINT * 1000000007 + 10000000000000000000)",
    # 0.0 in row group 0, -0.0 in row group 3, NaN and infinities.
    "c_float": (
        f"CASE WHEN i = 5 THEN '0.0'::FLOAT WHEN i = 3 * {DUCKDB_ROW_GROUP} + 5 THEN '-0.0'::FLOAT"
        f" WHEN i = 6 THEN 'nan'::FLOAT WHEN i = 7 THEN 'inf'::FLOAT"
        f" WHEN i = 8 THEN '-inf'::FLOAT ELSE ({_V} / 4 + 1)::FLOAT END"
    ),
    "c_double": (
        f"CASE WHEN i = 5 THEN '0.0'::DOUBLE WHEN i = 3 * {DUCKDB_ROW_GROUP} + 5"
        f" THEN '-0.0'::DOUBLE WHEN i = 6 THEN 'nan'::DOUBLE ELSE ({_V} / 3 + 1)::DOUBLE END"
    ),
    "c_varchar": (
        f"CASE WHEN i = 9 THEN '' WHEN i = 10 THEN 'ünïcødé' WHEN i = {DUCKDB_ROW_GROUP} + 11"
        f" THEN '日本語' WHEN i = 12 THEN '🦆🚀' WHEN i = 13 THEN 'it''s'"
        f" ELSE 'v' || {_V} END"
    ),
    "c_blob": f"('b' || {_V})::BLOB",
    "c_dec4": f"({_V} / 100)::DECIMAL(4,2)",
    "c_dec9": f"({_V} / 100 - 3)::DECIMAL(9,2)",
    "c_dec18": f"({_V} * 12345.6789 - 99)::DECIMAL(18,4)",
    "c_dec38": f"({_V} / 1000)::DECIMAL(38,10)",
    "c_date": f"DATE '2000-01-01' + {_V}::INTEGER",
    "c_ts": f"TIMESTAMP '2020-01-01' + to_microseconds({_V} * 1234567)",
    "c_tstz": f"TIMESTAMPTZ '2020-01-01 00:00:00+00' + to_microseconds({_V} * 7654321)",
    "c_time": f"TIME '00:00:00' + to_microseconds({_V} * 1000003)",
    "c_uuid": f"('00000000-0000-4000-8000-' || lpad({_V}::VARCHAR, 12, '0'))::UUID",
    "c_bool": f"(i // {DUCKDB_ROW_GROUP}) % 2 = 0",
    "c_nullable": f"CASE WHEN i % 3 = 0 THEN NULL ELSE {_V} END",
    # Unique per row: DuckDB does not dictionary-encode it, so it gets no filter.
    "c_unique": "i * 7919",
}
DUCKDB_UNFILTERED = {
    "id": "unique per row: not dictionary-encoded, and DuckDB filters only dictionary chunks",
    "c_unique": "unique per row: not dictionary-encoded, and DuckDB filters only dictionary chunks",
    "c_dec38": "DuckDB does not dictionary-encode FIXED_LEN_BYTE_ARRAY decimals: no filter",
    "c_bool": "DuckDB does not dictionary-encode BOOLEAN: no filter",
}


def write_duckdb(root: Path) -> WrittenFiles:
    """Write DuckDB's file: ``root/duck.parquet``, 5 row groups of 2048 rows."""
    import duckdb

    path = root / "duck.parquet"
    select = ",\n".join(f"{expr} AS {name}" for name, expr in DUCKDB_COLUMNS.items())
    con = duckdb.connect()
    try:
        con.execute(
            f"COPY (SELECT {select} FROM range({DUCKDB_ROWS}) t(i) ORDER BY i) "
            f"TO '{path}' (FORMAT parquet, ROW_GROUP_SIZE {DUCKDB_ROW_GROUP})"
        )
    finally:
        con.close()
    return WrittenFiles(
        engine="duckdb",
        root=root,
        files=(path,),
        prune_files=(path,),
        unfiltered=DUCKDB_UNFILTERED,
        key_columns=("c_bigint", "c_varchar"),
    )


@pytest.fixture(scope="session")
def duckdb_files(tmp_path_factory: pytest.TempPathFactory) -> WrittenFiles:
    """DuckDB's file (see :func:`write_duckdb`), written once per session."""
    pytest.importorskip("duckdb")
    return write_duckdb(tmp_path_factory.mktemp("duckdb"))


# --------------------------------------------------------------------------- no lengths

BIG_ROWS = 60_000


def write_without_lengths(written: WrittenFiles, root: Path) -> WrittenFiles:
    """Copies of ``written``'s files with ``bloom_filter_length`` stripped from the footers."""
    copies = []
    for path in written.files:
        copy = root / path.relative_to(written.root)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(strip_bloom_filter_lengths(path.read_bytes()))
        copies.append(copy)
    mapping = dict(zip(written.files, copies, strict=True))
    return WrittenFiles(
        engine=f"{written.engine}-no-length",
        root=root,
        files=tuple(copies),
        prune_files=tuple(mapping[p] for p in written.prune_files),
        unfiltered=written.unfiltered,
        key_columns=written.key_columns,
    )


def write_big_filter(root: Path) -> WrittenFiles:
    """One row group, one INT64 column whose filter (512 KiB) outgrows a 256 KiB guess read.

    Written without ``bloom_filter_length``: a reader must read the header to learn the
    size, and fetch the rest of the bitset in a second read.
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    keys = np.random.default_rng(7).integers(-(2**63), 2**63 - 1, BIG_ROWS, dtype=np.int64)
    path = root / "with-length" / "big.parquet"
    path.parent.mkdir(parents=True)
    # fpp 1e-6 needs ~41 bits per value (the sizing formula of docs/architecture.md):
    # 60k values take 306 KB, rounded up to a 512 KiB bitset.
    pq.write_table(
        pa.table({"key": pa.array(keys)}),
        path,
        row_group_size=BIG_ROWS,
        bloom_filter_options={"key": {"ndv": BIG_ROWS, "fpp": 1e-6}},
    )
    with_length = WrittenFiles(
        engine="big", root=path.parent, files=(path,), prune_files=(path,),
        key_columns=("key", "key"),
    )  # fmt: skip
    return write_without_lengths(with_length, root / "no-length")


@pytest.fixture(scope="session")
def pyarrow_no_length_files(
    pyarrow_files: WrittenFiles, tmp_path_factory: pytest.TempPathFactory
) -> WrittenFiles:
    """pyarrow's files with ``bloom_filter_length`` stripped (see :func:`write_without_lengths`)."""
    return write_without_lengths(pyarrow_files, tmp_path_factory.mktemp("pyarrow-no-length"))


@pytest.fixture(scope="session")
def big_filter_files(tmp_path_factory: pytest.TempPathFactory) -> WrittenFiles:
    """One file whose only filter is larger than the reader's guess read, without length."""
    pytest.importorskip("pyarrow")
    return write_big_filter(tmp_path_factory.mktemp("big-filter"))


# --------------------------------------------------------------------------- footer surgery

# Thrift field ids from parquet.thrift: FileMetaData.row_groups = 4, RowGroup.columns = 1,
# ColumnChunk.meta_data = 3, ColumnMetaData.bloom_filter_length = 15.
_PATH_TO_COLUMN_META = (4, 1, 3)
_BLOOM_FILTER_LENGTH = 15


def _copy_value(
    src: TCompactProtocol, dst: TCompactProtocol, ttype: int, path: tuple[int, ...]
) -> None:
    if ttype == TType.STRUCT:
        _copy_struct(src, dst, path)
    elif ttype == TType.LIST or ttype == TType.SET:
        etype, size = src.readListBegin()
        dst.writeListBegin(etype, size)
        for _ in range(size):
            _copy_value(src, dst, etype, path)
        dst.writeListEnd()
        src.readListEnd()
    elif ttype == TType.MAP:
        ktype, vtype, size = src.readMapBegin()
        dst.writeMapBegin(ktype, vtype, size)
        for _ in range(size):
            _copy_value(src, dst, ktype, ())
            _copy_value(src, dst, vtype, ())
        dst.writeMapEnd()
        src.readMapEnd()
    else:
        read, write = _SCALARS[ttype]
        getattr(dst, write)(getattr(src, read)())


_SCALARS: dict[int, tuple[str, str]] = {
    TType.BOOL: ("readBool", "writeBool"),
    TType.BYTE: ("readByte", "writeByte"),
    TType.I16: ("readI16", "writeI16"),
    TType.I32: ("readI32", "writeI32"),
    TType.I64: ("readI64", "writeI64"),
    TType.DOUBLE: ("readDouble", "writeDouble"),
    TType.STRING: ("readBinary", "writeBinary"),
}


def _copy_struct(src: TCompactProtocol, dst: TCompactProtocol, path: tuple[int, ...]) -> None:
    src.readStructBegin()
    dst.writeStructBegin("s")
    while True:
        _, ttype, fid = src.readFieldBegin()
        if ttype == TType.STOP:
            break
        child = (*path, fid)
        if path == _PATH_TO_COLUMN_META and fid == _BLOOM_FILTER_LENGTH:
            src.skip(ttype)
        else:
            dst.writeFieldBegin("f", ttype, fid)
            # Only the path down to ColumnMetaData matters; deeper structs copy unchanged.
            _copy_value(
                src, dst, ttype, child if _PATH_TO_COLUMN_META[: len(child)] == child else (-1,)
            )
            dst.writeFieldEnd()
        src.readFieldEnd()
    dst.writeFieldStop()
    dst.writeStructEnd()
    src.readStructEnd()


def strip_bloom_filter_lengths(data: bytes) -> bytes:
    """The same Parquet file with ``bloom_filter_length`` removed from every column chunk.

    Data pages and filters stay where they were; only the footer is re-encoded (thrift
    compact, field by field), so a reader must find each filter's size from its header,
    as for files written before parquet-format 2.10.
    """
    if data[-4:] != b"PAR1":
        raise ValueError("not a Parquet file")
    length = struct.unpack("<I", data[-8:-4])[0]
    start = len(data) - 8 - length
    src = TCompactProtocol(TMemoryBuffer(data[start:-8]))
    out = TMemoryBuffer()
    _copy_struct(src, TCompactProtocol(out), ())
    footer = bytes(out.getvalue())
    return data[:start] + footer + struct.pack("<I", len(footer)) + b"PAR1"
