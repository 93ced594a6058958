"""Adding Bloom filters to existing files: ``add_bloom_filters`` and ``pybloom-async add-filters``.

What the tests show:

* pyarrow files written without filters (every type pyarrow writes, nested struct and
  list leaves, INT96) and a DuckDB file of PLAIN chunks get a filter per chunk; the
  bytes before the old footer are unchanged; pyarrow, DuckDB (and Spark, marker
  ``spark``) read the same rows from the new file as from the old one.
* Our filters are bit-identical to the ones pyarrow writes for the same data with the
  same options; Spark's (parquet-java) filters, rebuilt with ``replace=True``, are
  bit-identical once folded to the same size (a halved SBBF is the fold of the larger one).
* Zero false negatives, exhaustively: every distinct stored value of every chunk, encoded
  by the library's probe-side conversion (independent of the write-side conversion in
  ``columns.py``) and, for INT96, by a hand-written encoder hashed with the ``xxhash``
  package, is in its chunk's filter.
* DuckDB's ``parquet_bloom_probe`` and our ``probe`` agree on every tested value,
  present and absent, and DuckDB does exclude row groups by our filters; Spark with a
  pushed-down equality filter scans fewer rows than before, by its own scan metrics.
* Reports: skipped columns with reasons, already-filtered chunks, typos naming the
  available columns, encrypted files refused, ``out=``, object stores (moto), a source
  changing under the run, the async wrapper and the command line.
* Atomicity (marker ``slow``): the command killed with SIGKILL at random moments leaves the
  original byte-identical (or, in place, the complete new file) and never a partial file
  under the final name; only hidden ``.name.*.tmp`` files can be left behind.
"""

from __future__ import annotations

import datetime as dt
import decimal
import inspect
import io
import itertools
import json
import math
import random
import shutil
import signal
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.writers import (
    DUCKDB_COLUMNS,
    DUCKDB_ROW_GROUP,
    DUCKDB_ROWS,
    PYARROW_FILES,
    PYARROW_ROW_GROUP,
    SPARK_NDV,
    WrittenFiles,
    _pyarrow_table,
    filter_locations,
)

from pybloom_async import BloomReader, PhysicalType, Rule, probe_sync
from pybloom_async.apps.cli import main
from pybloom_async.core.filter import SplitBlockBloomFilter
from pybloom_async.core.hashing import hash_values
from pybloom_async.errors import (
    EncryptedFileError,
    InvalidArgumentError,
    SourceError,
)
from pybloom_async.parquet import ColumnDescriptor
from pybloom_async.rewrite.add_filters import (
    AddFiltersResult,
    add_bloom_filters,
    add_bloom_filters_async,
    add_bloom_filters_sync,
)
from pybloom_async.values import NeverPrunes, Probe, encode_value

xxhash = pytest.importorskip("xxhash")


# --------------------------------------------------------------------------- helpers


def footer_start(data: bytes) -> int:
    return len(data) - 8 - struct.unpack("<I", data[-8:-4])[0]


def filter_blobs(path: Path) -> dict[tuple[int, str], bytes]:
    """Header + bitset of every chunk's filter, located by pyarrow's reading of the footer."""
    data = path.read_bytes()
    return {
        (loc.row_group, loc.column): data[loc.offset : loc.offset + loc.length]
        for loc in filter_locations(path)
        if loc.offset is not None and loc.length is not None
    }


def bitset(blob: bytes) -> bytes:
    return SplitBlockBloomFilter.from_bytes(blob).bitset.tobytes()


def fold_to(bits: bytes, size: int) -> bytes:
    """Halve an SBBF bitset down to ``size`` bytes: block j := block 2j | block 2j+1.

    Halving the block count sends every hash's block index i to i // 2 (the index is
    ``(hash >> 32) * blocks >> 32``), so the fold of a filter equals the filter built
    at the smaller size from the same values.
    """
    words = np.frombuffer(bits, dtype="<u4").reshape(-1, 8)
    while words.shape[0] * 32 > size:
        words = words[0::2] | words[1::2]
    return words.tobytes()


def normalised(value: Any) -> Any:
    """A value with floats replaced by their bits, so NaN equals itself (and -0.0 != 0.0)."""
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    if isinstance(value, dict):
        return {k: normalised(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalised(v) for v in value]
    return value


def rows(table: pa.Table) -> tuple[Any, list[Any]]:
    """A table's schema and rows, comparable with ==."""
    return table.schema, normalised(table.to_pylist())


def duckdb_rows(path: Path, order_by: str | None = None) -> tuple[Any, list[Any]]:
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    try:
        order = f" ORDER BY {order_by}" if order_by else ""
        table = con.sql(f"SELECT * FROM read_parquet('{path}'){order}").to_arrow_table()
    finally:
        con.close()
    return rows(table)


def leaf_of(value: Any, parts: Sequence[str]) -> list[Any]:
    """The leaf values under ``parts`` of one row's value (struct fields, list elements)."""
    if value is None:
        return []
    if not parts:
        return [value]
    if isinstance(value, dict):
        return leaf_of(value.get(parts[0]), parts[1:])
    if isinstance(value, list) and parts[0] == "list" and parts[1:2] == ("element",):
        return [leaf for item in value for leaf in leaf_of(item, parts[2:])]
    raise AssertionError(f"cannot walk {parts} in {value!r}")


def chunk_values(path: Path, desc: ColumnDescriptor, rg: int) -> list[Any]:
    """Distinct non-null values of one chunk, read by pyarrow (the truth)."""
    parquet = pq.ParquetFile(path, arrow_extensions_enabled=True)
    top = desc.path_parts[0]
    rows = parquet.read_row_group(rg, columns=[top]).column(0).to_pylist()
    found: dict[Any, Any] = {}
    for row in rows:
        for value in leaf_of(row, desc.path_parts[1:]):
            key = struct.pack("<d", value) if isinstance(value, float) else (type(value), value)
            found.setdefault(key, value)
    return list(found.values())


async def _footer_and_filters(path: Path) -> Any:
    return await BloomReader(max_files=0).footer_and_filters(str(path), None)


def assert_no_false_negatives(path: Path, columns: set[str] | None = None) -> int:
    """Every distinct stored value of every filtered chunk is in the chunk's filter.

    Values are encoded by ``encode_value`` (the probe side); INT96 values are also
    encoded by hand and hashed with the ``xxhash`` package. ``columns``: only these.
    Returns the number of values checked.
    """
    footer, filters = anyio.run(_footer_and_filters, path)
    checked = 0
    for (rg, column), read in sorted(filters.items()):
        if read.filter is None or (columns is not None and column not in columns):
            continue
        desc = footer.metadata.schema.column(column)
        values = chunk_values(path, desc, rg)
        alternatives: list[bytes] = []
        owners: list[int] = []
        for j, value in enumerate(values):
            encoded = encode_value(value, desc)
            if isinstance(encoded, NeverPrunes):
                assert isinstance(value, float) and math.isnan(value), (column, value)
                continue
            assert isinstance(encoded, Probe), (path.name, column, value, encoded)
            alternatives.extend(encoded.alternatives)
            owners.extend([j] * len(encoded.alternatives))
        hits = read.filter.check_hashes(hash_values(alternatives, PhysicalType.BYTE_ARRAY))
        found = np.zeros(len(values), dtype=np.bool_)
        np.logical_or.at(found, np.asarray(owners, dtype=np.intp), hits)
        missed = [v for j, v in enumerate(values) if not found[j] and not _is_nan(v)]
        assert not missed, f"{path.name} rg {rg} {column}: not in its filter: {missed[:5]}"
        if desc.physical_type is PhysicalType.INT96:
            raw = [xxhash.xxh64_intdigest(int96_bytes(v)) for v in values]
            assert read.filter.check_hashes(np.asarray(raw, dtype=np.uint64)).all()
        checked += len(values)
    return checked


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def int96_bytes(value: dt.datetime) -> bytes:
    """INT96 as Spark and Impala store it: nanoseconds of the day, then the Julian day."""
    if value.tzinfo is not None:
        value = value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    epoch = dt.datetime(1970, 1, 1)
    delta = value - epoch
    days = delta.days
    nanos = (delta.seconds * 1_000_000 + delta.microseconds) * 1000
    return struct.pack("<qI", nanos, days + 2_440_588)


# --------------------------------------------------------------------------- pyarrow files


NESTED_ROWS = 4_000
NESTED_ROW_GROUP = 1_000


def nested_table() -> pa.Table:
    """Struct and list leaves, a map, and timestamps written as INT96 (whole seconds)."""
    n = NESTED_ROWS
    ids = np.arange(n)
    base = dt.datetime(2001, 2, 3, 4, 5, 6)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "st": pa.array(
                [
                    None if i % 13 == 0 else {"a": int(i * 7919 % 100_003), "b": f"b{i % 700}"}
                    for i in ids
                ],
                pa.struct([("a", pa.int64()), ("b", pa.string())]),
            ),
            "l": pa.array(
                [None if i % 11 == 0 else [int(i), int(i) * 3 + 1] for i in ids],
                pa.list_(pa.int32()),
            ),
            "ts96": pa.array(
                [None if i % 17 == 0 else base + dt.timedelta(seconds=int(i) * 977) for i in ids],
                pa.timestamp("ns"),
            ),
        }
    )


@dataclass(frozen=True)
class Added:
    """An original file, the same table written by pyarrow with filters, and our result."""

    original: Path
    reference: Path  # pyarrow's own filters, same options
    result_path: Path
    result: AddFiltersResult


def _write_pair(table: pa.Table, root: Path, name: str, **kwargs: Any) -> tuple[Path, Path]:
    plain = root / "plain" / name
    reference = root / "reference" / name
    plain.parent.mkdir(exist_ok=True)
    reference.parent.mkdir(exist_ok=True)
    pq.write_table(table, plain, **kwargs)
    options = {
        c: {"ndv": kwargs["row_group_size"], "fpp": 0.01}
        for c in _leaf_paths(plain)
        if pq.ParquetFile(plain).schema_arrow.field(c.split(".")[0]).type != pa.bool_()
    }
    pq.write_table(table, reference, bloom_filter_options=options, **kwargs)
    return plain, reference


def _leaf_paths(path: Path) -> list[str]:
    metadata = pq.ParquetFile(path).metadata
    return [metadata.schema.column(i).path for i in range(metadata.num_columns)]


@pytest.fixture(scope="module")
def arrow_added(tmp_path_factory: pytest.TempPathFactory) -> list[Added]:
    """pyarrow files without filters, and filters added to every column of copies."""
    root = tmp_path_factory.mktemp("arrow-add")
    pairs = []
    for part in range(PYARROW_FILES):
        pairs.append(
            _write_pair(
                _pyarrow_table(part), root, f"part-{part}.parquet",
                row_group_size=PYARROW_ROW_GROUP, store_decimal_as_integer=True,
            )
        )  # fmt: skip
    pairs.append(
        _write_pair(
            nested_table(), root, "nested.parquet",
            row_group_size=NESTED_ROW_GROUP, use_deprecated_int96_timestamps=True,
        )
    )  # fmt: skip
    added = []
    for plain, reference in pairs:
        assert not filter_blobs(plain)
        work = root / "added" / plain.name
        work.parent.mkdir(exist_ok=True)
        shutil.copyfile(plain, work)
        rows = pq.ParquetFile(plain).metadata.row_group(0).num_rows
        columns = pq.ParquetFile(plain).schema_arrow.names
        result = add_bloom_filters_sync(work, columns, ndv=rows, fpp=0.01)
        added.append(Added(plain, reference, work, result))
    return added


def test_bytes_before_the_footer_are_unchanged(arrow_added: list[Added]) -> None:
    for item in arrow_added:
        old = item.original.read_bytes()
        new = item.result_path.read_bytes()
        start = footer_start(old)
        assert new[:start] == old[:start]
        assert new[-4:] == b"PAR1"
        assert item.result.written and item.result.bytes_before == len(old)
        assert item.result.bytes_after == len(new)
        # Filters sit between the old data and the new footer, back to back.
        offsets = sorted((f.offset, f.length) for f in item.result.filters)
        assert offsets[0][0] == start
        for (a, alen), (b, _) in itertools.pairwise(offsets):
            assert a + alen == b
        assert offsets[-1][0] + offsets[-1][1] == footer_start(new)


def test_pyarrow_and_duckdb_read_the_same_rows(arrow_added: list[Added]) -> None:
    for item in arrow_added:
        old = pq.read_table(item.original)
        new = pq.read_table(item.result_path)
        assert rows(new) == rows(old)
        assert duckdb_rows(item.result_path, "id") == duckdb_rows(item.original, "id")


def test_filters_equal_pyarrows(arrow_added: list[Added]) -> None:
    """Bit-identical to pyarrow's own filters for the same data and options, every chunk."""
    compared = 0
    for item in arrow_added:
        ours = filter_blobs(item.result_path)
        theirs = filter_blobs(item.reference)
        assert set(ours) == set(theirs), set(ours) ^ set(theirs)
        for key, blob in theirs.items():
            assert ours[key] == blob, (item.original.name, key, len(ours[key]), len(blob))
            compared += 1
    assert compared > 200


def test_the_report(arrow_added: list[Added]) -> None:
    item = arrow_added[0]
    result = item.result
    groups = pq.ParquetFile(item.original).metadata.num_row_groups
    assert [s.to_dict() for s in result.skipped] == [
        {
            "column": "c_bool",
            "row_group": None,
            "reason": "BOOLEAN columns get no Bloom filter (two values: min/max statistics do "
            "better)",
        }
    ]
    leaves = [p for p in _leaf_paths(item.original) if p != "c_bool"]
    assert len(result.filters) == groups * len(leaves)
    for f in result.filters:
        assert f.fpp == 0.01 and not f.capped
        assert f.sized_for == min(f.ndv, PYARROW_ROW_GROUP) and f.ndv <= f.num_values
        assert f.expected_fpp <= 0.0125, f
        assert f.length == f.num_bytes + len(SplitBlockBloomFilter(f.num_bytes).header_bytes())
    as_json = json.loads(json.dumps(result.to_dict()))
    assert as_json["filter_bytes"] == sum(f.length for f in result.filters)
    assert as_json["bytes_after"] - as_json["bytes_before"] > as_json["filter_bytes"]


def test_no_false_negatives_pyarrow(arrow_added: list[Added]) -> None:
    checked = sum(assert_no_false_negatives(item.result_path) for item in arrow_added)
    assert checked > 100_000


def test_absent_values_are_excluded(arrow_added: list[Added]) -> None:
    """The filters do their job: absent ids and strings are excluded from most row groups."""
    path = arrow_added[0].result_path
    present = pq.read_table(path, columns=["c_int64"]).column(0).to_pylist()
    absent = [v + 1 for v in present[:300] if v + 1 not in set(present)]
    results = probe_sync(path, "c_int64", absent)
    assert all(r.rule in (Rule.BLOOM_FILTER, Rule.STATISTICS, Rule.MAY_MATCH) for r in results)
    excluded = sum(r.excluded for r in results)
    assert excluded >= 0.95 * len(results)
    nested = arrow_added[-1].result_path
    results = probe_sync(nested, "st.b", ["b1", "nope", "b699"])
    kept = {(r.value, r.row_group) for r in results if not r.excluded}
    assert {("b1", g) for g in range(4)} <= kept and all(v != "nope" for v, _ in kept)


def test_nested_and_int96_columns(arrow_added: list[Added]) -> None:
    item = arrow_added[-1]
    columns = {f.column for f in item.result.filters}
    assert columns == {"id", "st.a", "st.b", "l.list.element", "ts96"}
    assert not item.result.skipped
    meta = pq.ParquetFile(item.result_path).metadata
    types = {meta.schema.column(i).path: meta.schema.column(i).physical_type for i in range(5)}
    assert types["ts96"] == "INT96"


def test_replace_rebuilds_identical_filters(arrow_added: list[Added], tmp_path: Path) -> None:
    """Files with filters: skipped by default; replace=True writes the same filters again."""
    reference = arrow_added[0].reference
    copy = tmp_path / reference.name
    shutil.copyfile(reference, copy)
    before = copy.read_bytes()
    result = add_bloom_filters_sync(copy, ["c_int64", "c_string"])
    assert not result.written and copy.read_bytes() == before
    assert {(s.column, s.row_group) for s in result.skipped} == {
        ("c_int64", None),
        ("c_string", None),
    }
    assert all("already has a Bloom filter" in s.reason for s in result.skipped)
    result = add_bloom_filters_sync(
        copy, ["c_int64", "c_string"], replace=True, ndv=PYARROW_ROW_GROUP
    )
    assert result.written and len(result.filters) == 8
    old, new = filter_blobs(reference), filter_blobs(copy)
    for f in result.filters:
        assert new[(f.row_group, f.column)] == old[(f.row_group, f.column)]
    assert copy.read_bytes()[: footer_start(before)] == before[: footer_start(before)]


# --------------------------------------------------------------------------- DuckDB


def write_duckdb_plain(path: Path) -> None:
    """DuckDB's columns with dictionaries off: every chunk PLAIN, so DuckDB writes no filter."""
    duckdb = pytest.importorskip("duckdb")
    select = ",\n".join(f"{expr} AS {name}" for name, expr in DUCKDB_COLUMNS.items())
    con = duckdb.connect()
    try:
        con.execute(
            f"COPY (SELECT {select} FROM range({DUCKDB_ROWS}) t(i) ORDER BY i) TO '{path}' "
            f"(FORMAT parquet, ROW_GROUP_SIZE {DUCKDB_ROW_GROUP}, DICTIONARY_SIZE_LIMIT 0)"
        )
    finally:
        con.close()


@pytest.fixture(scope="module")
def duck_added(tmp_path_factory: pytest.TempPathFactory) -> Added:
    root = tmp_path_factory.mktemp("duck-add")
    original = root / "duck.parquet"
    write_duckdb_plain(original)
    meta = pq.ParquetFile(original).metadata
    for rg in range(meta.num_row_groups):
        for ci in range(meta.num_columns):
            chunk = meta.row_group(rg).column(ci)
            assert chunk.to_dict()["bloom_filter_offset"] is None
            assert "PLAIN_DICTIONARY" not in chunk.encodings and "RLE_DICTIONARY" not in (
                chunk.encodings
            )
    work = root / "added" / "duck.parquet"
    work.parent.mkdir()
    shutil.copyfile(original, work)
    result = add_bloom_filters_sync(work, list(DUCKDB_COLUMNS))
    return Added(original, original, work, result)


def test_duckdb_file(duck_added: Added) -> None:
    old = duck_added.original.read_bytes()
    new = duck_added.result_path.read_bytes()
    assert new[: footer_start(old)] == old[: footer_start(old)]
    assert duckdb_rows(duck_added.result_path, "id") == duckdb_rows(duck_added.original, "id")
    assert rows(pq.read_table(duck_added.result_path)) == rows(pq.read_table(duck_added.original))
    assert [s.column for s in duck_added.result.skipped] == ["c_bool"]
    assert {f.column for f in duck_added.result.filters} == set(DUCKDB_COLUMNS) - {"c_bool"}
    assert assert_no_false_negatives(duck_added.result_path) > 30_000


def duckdb_types(path: Path) -> dict[str, str]:
    import duckdb

    con = duckdb.connect()
    try:
        rows = con.execute(f"DESCRIBE SELECT * FROM read_parquet('{path}')").fetchall()
    finally:
        con.close()
    return {r[0]: r[1] for r in rows}


def neighbour(value: Any) -> Any:
    """A value next to ``value`` of the same type (often absent from the data)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return None if not math.isfinite(value) else value + 0.125
    if isinstance(value, decimal.Decimal):
        return value + decimal.Decimal(1).scaleb(int(value.as_tuple().exponent))
    if isinstance(value, str):
        return value + "~"
    if isinstance(value, bytes):
        return value + b"\x01"
    if isinstance(value, dt.datetime):
        return value + dt.timedelta(microseconds=1)
    if isinstance(value, dt.date):
        return value + dt.timedelta(days=1)
    if isinstance(value, dt.time):
        return (
            dt.datetime.combine(dt.date(2000, 1, 1), value) + dt.timedelta(microseconds=1)
        ).time()
    if isinstance(value, uuid.UUID):
        return uuid.UUID(int=value.int ^ 1)
    raise AssertionError(f"no neighbour for {value!r}")


# DuckDB 2.0 answers "not excluded" for every value on these columns' filters (it does not
# probe them), as test_interop.py found for the writers' own filters.
DUCKDB_NEVER_EXCLUDES = {
    "c_dec38": "DuckDB does not probe FIXED_LEN_BYTE_ARRAY decimal filters",
}


def test_duckdb_probe_agrees(duck_added: Added) -> None:
    """DuckDB's parquet_bloom_probe and our probe, on present and absent values."""
    import duckdb

    path = duck_added.result_path
    types = duckdb_types(path)
    footer, _ = anyio.run(_footer_and_filters, path)
    groups = len(footer.metadata.row_groups)
    rng = random.Random(5)
    con = duckdb.connect()
    compared = duck_excluded = 0
    never_seen: dict[str, int] = {}
    try:
        for column in DUCKDB_COLUMNS:
            if column == "c_bool":
                continue
            desc = footer.metadata.schema.column(column)
            truth = [chunk_values(path, desc, rg) for rg in range(groups)]
            present = [v for g in truth for v in rng.sample(g, min(6, len(g)))]
            absent = [n for n in map(neighbour, present) if n is not None]
            values = present + absent
            ours = probe_sync(path, column, values)
            assert len(ours) == groups * len(values)
            for j, value in enumerate(values):
                try:
                    duck = con.execute(
                        "SELECT row_group_id, bloom_filter_excludes FROM "
                        f"parquet_bloom_probe(?, ?, CAST(? AS {types[column]})) ORDER BY 1",
                        [str(path), column, value],
                    ).fetchall()
                except duckdb.ConversionException:
                    assert j >= len(present), (column, value)  # a neighbour out of range
                    continue
                assert [r[0] for r in duck] == list(range(groups))
                for rg in range(groups):
                    mine = ours[rg * len(values) + j]
                    assert mine.row_group == rg and mine.value is value
                    holds = any(_same(value, v) for v in truth[rg])
                    where = f"rg {rg} {column}={value!r}: ours {mine.reason}, duckdb {duck[rg]}"
                    assert not (holds and (mine.excluded or duck[rg][1])), where
                    if column in DUCKDB_NEVER_EXCLUDES:
                        assert not duck[rg][1], f"DuckDB now probes: {where}"
                        never_seen[column] = never_seen.get(column, 0) + mine.excluded
                        continue
                    if mine.rule not in (Rule.BLOOM_FILTER, Rule.MAY_MATCH):
                        # Statistics or the type decided before any filter (DuckDB's probe
                        # asks the filter only), or the value has no exact encoding.
                        continue
                    assert bool(duck[rg][1]) == mine.excluded, where
                    compared += 1
                    duck_excluded += bool(duck[rg][1])
    finally:
        con.close()
    assert compared > 1000 and duck_excluded > 300
    assert set(never_seen) == set(DUCKDB_NEVER_EXCLUDES) and all(never_seen.values())


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    return type(a) is type(b) and a == b


# --------------------------------------------------------------------------- errors, options


def test_unknown_column_names_the_available_ones(arrow_added: list[Added]) -> None:
    path = arrow_added[-1].original
    with pytest.raises(InvalidArgumentError, match=r"no such column; the file has: id, st\.a"):
        add_bloom_filters_sync(path, "id,nope")
    with pytest.raises(InvalidArgumentError, match="no columns given"):
        add_bloom_filters_sync(path, " , ")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"fpp": 0.0}, "fpp must be"),
        ({"fpp": 1.5}, "fpp must be"),
        ({"ndv": 0}, "ndv must be a positive int"),
        ({"ndv": 2.5}, "ndv must be a positive int"),
        ({"max_bytes": 16}, "max_bytes must be"),
    ],
)
def test_bad_options(arrow_added: list[Added], kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        add_bloom_filters_sync(arrow_added[-1].original, "id", **kwargs)


def test_group_names_and_max_bytes(arrow_added: list[Added], tmp_path: Path) -> None:
    out = tmp_path / "o.parquet"
    original = arrow_added[-1].original
    before = original.read_bytes()
    result = add_bloom_filters_sync(original, ["st"], out=out, max_bytes=64)
    assert original.read_bytes() == before  # out= leaves the source alone
    assert {f.column for f in result.filters} == {"st.a", "st.b"}
    assert all(f.num_bytes == 64 and f.capped and f.expected_fpp > 0.01 for f in result.filters)
    assert result.out == str(out) and out.stat().st_size == result.bytes_after
    assert_no_false_negatives(out)


# Distinct counts around the 128 KiB / 256 KiB boundary at fpp 0.01 (108,306 values take
# 131,072 bytes, 108,307 take 262,144), and far from it.
LARGE_CHUNK_CASES = [40_000, 108_306, 108_307, 150_000, 200_000]


def test_large_chunks_fold_to_pyarrows_size(tmp_path: Path) -> None:
    """Chunks of 220,000 values: built large and folded, or counted exactly near a boundary.

    pyarrow sizes these from an estimate too: right at a size boundary its choice varies with
    the data (108,306 distinct values get 128 or 256 KiB depending on the values). Away from
    boundaries both pick the same size and the filters are bit-identical; at the boundary
    they are identical once folded to the same size.
    """
    rows = 220_000
    rng = np.random.default_rng(4)
    columns = {}
    for distinct in LARGE_CHUNK_CASES:
        pool = rng.integers(-(2**62), 2**62, distinct)
        values = np.concatenate([pool, pool[rng.integers(0, distinct, rows - distinct)]])
        columns[f"d{distinct}"] = pa.array(rng.permutation(values))
    table = pa.table(columns)
    plain, reference = tmp_path / "plain.parquet", tmp_path / "reference.parquet"
    pq.write_table(table, plain, row_group_size=rows, use_dictionary=False)
    options = {name: {"ndv": rows, "fpp": 0.01} for name in columns}
    pq.write_table(
        table, reference, row_group_size=rows, use_dictionary=False, bloom_filter_options=options
    )
    result = add_bloom_filters_sync(plain, list(columns), max_bytes=1 << 20)
    ours, theirs = filter_blobs(plain), filter_blobs(reference)
    by_column = {f.column: f for f in result.filters}
    for distinct in LARGE_CHUNK_CASES:
        f = by_column[f"d{distinct}"]
        a, b = bitset(ours[(0, f.column)]), bitset(theirs[(0, f.column)])
        if len(a) != len(b):
            assert abs(distinct - 108_307) < 200, (distinct, len(a), len(b))
        else:
            assert ours[(0, f.column)] == theirs[(0, f.column)], (distinct, f)
        size = min(len(a), len(b))
        assert fold_to(a, size) == fold_to(b, size), (distinct, f)
        if f.ndv_exact:
            assert f.ndv == distinct
        else:
            assert abs(f.ndv - distinct) <= 0.01 * distinct, f
    # Right at the boundary the estimate cannot decide: the count is exact there.
    assert by_column["d108306"].ndv_exact and by_column["d108307"].ndv_exact
    assert not by_column["d40000"].ndv_exact and not by_column["d150000"].ndv_exact
    assert (by_column["d108306"].num_bytes, by_column["d108307"].num_bytes) == (1 << 17, 1 << 18)
    assert_no_false_negatives(plain)


def test_empty_and_all_null_chunks(tmp_path: Path) -> None:
    path = tmp_path / "nulls.parquet"
    table = pa.table({"x": pa.array([None] * 100 + list(range(100)), pa.int64())})
    pq.write_table(table, path, row_group_size=100)
    result = add_bloom_filters_sync(path, "x")
    first, second = result.filters
    assert (first.num_values, first.ndv, first.num_bytes) == (0, 0, 32)
    assert (second.num_values, second.ndv) == (100, 100)
    results = probe_sync(path, "x", [5])
    assert [r.excluded for r in results] == [True, False]


def test_a_file_of_no_rows_gets_empty_filters(tmp_path: Path) -> None:
    """Dictionary-encoded and decimal columns of an empty pyarrow file (no chunk to read)."""
    path = tmp_path / "empty.parquet"
    table = pa.table(
        {
            "s": pa.array([], pa.string()).dictionary_encode(),
            "dec": pa.array([], pa.decimal128(10, 2)),
            "big": pa.array([], pa.decimal256(40, 2)),
        }
    )
    pq.write_table(table, path)
    result = add_bloom_filters_sync(path, ["s", "dec", "big"])
    assert result.written and not result.skipped
    assert [(f.column, f.num_values, f.num_bytes) for f in result.filters] == [
        ("s", 0, 32),
        ("dec", 0, 32),
        ("big", 0, 32),
    ]
    assert pq.read_table(path).equals(table)


def test_encrypted_files_are_refused(parquet_testing: Path, tmp_path: Path) -> None:
    data = parquet_testing / "data"
    for name in (
        "uniform_encryption.parquet.encrypted",
        "encrypt_columns_plaintext_footer.parquet.encrypted",
    ):
        copy = tmp_path / name
        shutil.copyfile(data / name, copy)
        with pytest.raises(EncryptedFileError):
            add_bloom_filters_sync(copy, "double_field")
        assert copy.read_bytes() == (data / name).read_bytes()


def test_a_source_changing_during_the_run_is_not_replaced(
    arrow_added: list[Added], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "changing.parquet"
    shutil.copyfile(arrow_added[-1].original, path)
    from pybloom_async.read import columns

    real = columns.ColumnReader.hashes

    def hashes_then_touch(self: Any, row_group: int, column: ColumnDescriptor) -> Any:
        if row_group == 1:
            with path.open("ab") as f:
                f.write(b"another writer")
        return real(self, row_group, column)

    monkeypatch.setattr(columns.ColumnReader, "hashes", hashes_then_touch)
    with pytest.raises(SourceError, match="changed while filters were added"):
        add_bloom_filters_sync(path, "id")
    assert path.read_bytes().endswith(b"another writer")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["changing.parquet"]  # no temp left


@pytest.mark.anyio
async def test_add_bloom_filters_is_the_coroutine_function(
    arrow_added: list[Added], tmp_path: Path
) -> None:
    assert inspect.iscoroutinefunction(add_bloom_filters)
    original = arrow_added[-1].original
    out, sync_out = tmp_path / "async.parquet", tmp_path / "sync.parquet"
    result = await add_bloom_filters(original, "id", out=out)
    assert result.written and len(result.filters) == 4
    # The blocking twin (from a worker thread: no loop runs there) writes the same file.
    await anyio.to_thread.run_sync(lambda: add_bloom_filters_sync(original, "id", out=sync_out))
    assert out.read_bytes() == sync_out.read_bytes()


@pytest.mark.anyio
async def test_the_old_async_name_warns_and_still_works(
    arrow_added: list[Added], tmp_path: Path
) -> None:
    """``add_bloom_filters_async`` is kept for one release, naming its replacement."""
    out = tmp_path / "old.parquet"
    message = r"add_bloom_filters_async\(\) is deprecated: await add_bloom_filters\(\) instead"
    with pytest.warns(DeprecationWarning, match=message) as record:
        result = await add_bloom_filters_async(arrow_added[-1].original, "id", out=out)
    assert result.written and len(result.filters) == 4
    assert [w.filename for w in record] == [__file__]  # the warning points at the caller


@pytest.mark.servers
def test_object_store(s3_server: Any, arrow_added: list[Added]) -> None:
    """s3:// in place: read whole, one PUT; the result probes over S3 like a local file."""
    import obstore
    from obstore.store import S3Store

    original = arrow_added[-1].original.read_bytes()
    url = s3_server.put("add/nested.parquet", original)
    result = add_bloom_filters_sync(url, ["id", "st.b"], options=s3_server.options)
    assert result.written and result.out == url and len(result.filters) == 8
    store = S3Store(
        s3_server.bucket, endpoint=s3_server.endpoint, region=s3_server.region,
        access_key_id=s3_server.access_key_id, secret_access_key=s3_server.secret_access_key,
        client_options={"allow_http": True},
    )  # fmt: skip
    new = bytes(obstore.get(store, "add/nested.parquet").bytes())
    assert new[: footer_start(original)] == original[: footer_start(original)]
    assert len(new) == result.bytes_after
    results = probe_sync(url, "st.b", ["b1", "nope"], options=s3_server.options)
    assert [r.excluded for r in results if r.value == "b1"] == [False] * 4
    assert all(r.excluded for r in results if r.value == "nope")


@pytest.mark.servers
@pytest.mark.anyio
async def test_async_object_store_runs_on_the_callers_loop(
    s3_server: Any, arrow_added: list[Added], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The object is read on the caller's loop: no worker thread starts a loop of its own."""
    import threading

    started: list[threading.Thread] = []
    real_run = anyio.run

    def recording_run(*args: Any, **kwargs: Any) -> Any:
        started.append(threading.current_thread())
        return real_run(*args, **kwargs)

    monkeypatch.setattr(anyio, "run", recording_run)
    url = s3_server.put("add/async.parquet", arrow_added[-1].original.read_bytes())
    result = await add_bloom_filters(url, ["id"], options=s3_server.options)
    assert result.written and result.out == url and len(result.filters) == 4
    assert started == []


# --------------------------------------------------------------------------- command line


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


def test_cli_json_and_text(arrow_added: list[Added], tmp_path: Path) -> None:
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    shutil.copyfile(arrow_added[-1].original, a)
    shutil.copyfile(arrow_added[-1].original, b)
    code, out = run_cli("add-filters", str(a), str(b), "--columns", "id,st.b", "--json")
    assert code == 0
    rows = json.loads(out)
    assert [r["path"] for r in rows] == [str(a), str(b)]
    assert all(len(r["filters"]) == 8 and r["written"] for r in rows)
    code, out = run_cli("add-filters", str(a), "--columns", "id,l", "--fpp", "0.001")
    assert code == 0
    # l.list.element: about 1,820 distinct values per row group at fpp 0.001 take 4 KiB each
    # (bits per value -8 / ln(1 - 0.001^(1/8)) = 14.4), plus a 16-byte header.
    assert out.splitlines() == [
        f"{a}: 4 filters added, {4 * (4096 + 16):,} bytes; "
        f"{rows[0]['bytes_after']:,} -> {a.stat().st_size:,} bytes",
        "  skipped id: already has a Bloom filter; replace=True (--replace) rebuilds it",
    ]


def test_cli_expands_directories(arrow_added: list[Added], tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    (lake / "_bloom_index").mkdir(parents=True)
    for name in ("a.parquet", "b.parquet", "_hidden.parquet", "_bloom_index/c.parquet"):
        shutil.copyfile(arrow_added[-1].original, lake / name)
    hidden = (lake / "_hidden.parquet").read_bytes()
    code, out = run_cli("add-filters", str(lake), "--columns", "st.b", "--json")
    assert code == 0
    assert sorted(Path(r["path"]).name for r in json.loads(out)) == ["a.parquet", "b.parquet"]
    assert (lake / "_hidden.parquet").read_bytes() == hidden
    code, _ = run_cli("add-filters", str(lake), "--columns", "st.b", "--out", "x.parquet")
    assert code == 2


def test_cli_errors(arrow_added: list[Added], tmp_path: Path) -> None:
    path = str(arrow_added[-1].original)
    nope = "no leaf column with this path; the file has: id, st.a"
    for argv, message in [
        (["add-filters", path, "--columns", "nope"], nope),
        (["add-filters", path, path, "--columns", "id", "--out", "x"], "--out takes a single PATH"),
        (["add-filters", path, "--columns", "id", "--fpp", "2"], "fpp must be between 0 and 1"),
    ]:
        proc = subprocess.run(
            [sys.executable, "-m", "pybloom_async.apps.cli", *argv],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert proc.returncode == 2, proc.stderr
        assert proc.stdout == ""
        assert len(proc.stderr.splitlines()) == 1 and message in proc.stderr, proc.stderr


# --------------------------------------------------------------------------- Spark


@pytest.fixture(scope="module")
def spark_keys_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, pa.Table]:
    """Random keys (no dictionary, so only a Bloom filter can skip a row group)."""
    root = tmp_path_factory.mktemp("spark-keys")
    rng = np.random.default_rng(11)
    n = 40_000
    table = pa.table(
        {
            "k": pa.array(rng.integers(-(2**62), 2**62, n)),
            "s": pa.array([f"user-{v:x}" for v in rng.integers(0, 2**40, n)]),
            "d": pa.array(rng.normal(size=n)),
        }
    )
    before = root / "before" / "x.parquet"
    after = root / "after" / "x.parquet"
    before.parent.mkdir()
    after.parent.mkdir()
    pq.write_table(table, before, row_group_size=5_000, use_dictionary=False)
    shutil.copyfile(before, after)
    add_bloom_filters_sync(after, ["k", "s"])
    return before, after, table


def scan_rows(spark: Any, path: Path, where: str) -> tuple[int, int]:
    """(matching rows, rows the Parquet scan produced) by Spark's own scan metric."""
    frame = spark.read.parquet(str(path.parent)).filter(where)
    matches = len(frame.collect())
    plan = frame._jdf.queryExecution().executedPlan()
    leaves = plan.collectLeaves()
    scanned = [
        int(leaves.apply(i).metrics().apply("numOutputRows").value())
        for i in range(leaves.size())
        if leaves.apply(i).metrics().contains("numOutputRows")
    ]
    assert len(scanned) == 1, plan.toString()
    return matches, scanned[0]


@pytest.mark.spark
def test_spark_reads_the_same_rows_and_skips_row_groups(
    spark_session: Any, spark_keys_file: tuple[Path, Path, pa.Table]
) -> None:
    before, after, table = spark_keys_file
    old = spark_session.read.parquet(str(before.parent))
    new = spark_session.read.parquet(str(after.parent))
    assert new.count() == old.count() == table.num_rows
    assert new.exceptAll(old).count() == 0 and old.exceptAll(new).count() == 0
    keys = table.column("k").to_pylist()
    strings = table.column("s").to_pylist()
    for where in (f"k = {keys[123]}", f"k = {keys[33_333]}", f"s = '{strings[7_777]}'"):
        matches_before, scanned_before = scan_rows(spark_session, before, where)
        matches_after, scanned_after = scan_rows(spark_session, after, where)
        assert matches_before == matches_after >= 1
        assert scanned_before == table.num_rows  # statistics cannot skip random keys
        assert scanned_after <= 10_000 and scanned_after < scanned_before, where


# Columns Spark 4 refuses to read (its error names), left out of its comparison.
SPARK_UNREADABLE = {
    "c_float16": "Illegal Parquet type: FIXED_LEN_BYTE_ARRAY (FLOAT16)",
    "c_dec60": "Decimal precision 60 exceeds max precision 38",
    "c_ts_ns_utc": "Illegal Parquet type: INT64 (TIMESTAMP(NANOS,true))",
    "c_time_us": "The data type TIME is not supported",
    "c_time": "The data type TIME is not supported",
    "c_uuid": "Illegal Parquet type: FIXED_LEN_BYTE_ARRAY (UUID)",
}


@pytest.mark.spark
def test_spark_reads_pyarrow_and_duckdb_results(
    spark_session: Any, arrow_added: list[Added], duck_added: Added, tmp_path: Path
) -> None:
    """Spark reads the same rows before and after, on the columns it can read at all.

    Spark infers a file's schema from all its columns and refuses the file if one is of a
    type it does not read (``SPARK_UNREADABLE``), so it is given the schema of the others,
    taken from an empty pyarrow-written file with just those columns.
    """
    compared = 0
    for item in [*arrow_added, duck_added]:
        names = pq.ParquetFile(item.original).schema_arrow.names
        readable = [n for n in names if n not in SPARK_UNREADABLE]
        donor = tmp_path / f"schema-of-{item.original.name}"
        empty = pq.read_table(item.original, columns=readable).slice(0, 0)
        meta = pq.ParquetFile(item.original).metadata
        int96 = any(c.physical_type == "INT96" for c in meta.schema)
        pq.write_table(
            empty, donor, store_decimal_as_integer=True, use_deprecated_int96_timestamps=int96
        )
        schema = spark_session.read.parquet(str(donor)).schema
        old = spark_session.read.schema(schema).parquet(str(item.original))
        new = spark_session.read.schema(schema).parquet(str(item.result_path))
        assert new.count() == old.count() == pq.ParquetFile(item.original).metadata.num_rows
        assert new.exceptAll(old).count() == 0 and old.exceptAll(new).count() == 0
        compared += len(readable)
    assert compared > 40


@pytest.mark.spark
def test_spark_filters_rebuilt_equal_parquet_javas(
    spark_files: WrittenFiles, tmp_path: Path
) -> None:
    """Spark's files: ``replace=True`` rebuilds every filter; after folding to the same size,
    ours and parquet-java's are bit-identical (INT96 included); c_ts96, which parquet-java
    left without a filter, gets one with no false negatives."""
    compared = 0
    for path in spark_files.files:
        copy = tmp_path / path.name
        shutil.copyfile(path, copy)
        columns = pq.ParquetFile(path).schema_arrow.names
        result = add_bloom_filters_sync(copy, columns, replace=True, ndv=SPARK_NDV)
        assert {s.column for s in result.skipped} == {"c_bool"} & set(columns)
        theirs = filter_blobs(path)
        ours = filter_blobs(copy)
        for key, blob in theirs.items():
            if key[1] in spark_files.empty_filters:
                continue
            a, b = bitset(ours[key]), bitset(blob)
            size = min(len(a), len(b))
            assert fold_to(a, size) == fold_to(b, size), (path.name, key, len(a), len(b))
            compared += 1
        if "c_ts96" in columns:
            assert {f.column for f in result.filters} >= {"c_ts96", "c_ts96_plain"}
        assert assert_no_false_negatives(copy, {f.column for f in result.filters}) > 1000
    assert compared > 300


# --------------------------------------------------------------------------- atomicity


KILLS = 30


@pytest.mark.slow
def test_killed_runs_leave_the_original_or_the_complete_result(tmp_path: Path) -> None:
    """SIGKILL at random moments of `add-filters`, in place and with --out."""
    rng = np.random.default_rng(2)
    n = 400_000
    table = pa.table(
        {"k": pa.array(rng.integers(0, 2**62, n)), "s": pa.array([f"s{v}" for v in range(n)])}
    )
    source = tmp_path / "source.parquet"
    pq.write_table(table, source, row_group_size=50_000)
    original = source.read_bytes()
    expected_path = tmp_path / "expected.parquet"
    command = [sys.executable, "-m", "pybloom_async.apps.cli", "add-filters", "--columns", "k,s"]
    # One uninterrupted run: its output, and when its temporary file appears and goes.
    started = time.perf_counter()
    proc = subprocess.Popen([*command, str(source), "--out", str(expected_path)])
    write_start = None
    while proc.poll() is None:
        if write_start is None and any(p.name.endswith(".tmp") for p in tmp_path.iterdir()):
            write_start = time.perf_counter() - started
        time.sleep(0.002)
    full = time.perf_counter() - started
    assert proc.returncode == 0 and write_start is not None
    expected = expected_path.read_bytes()
    work = tmp_path / "work"
    work.mkdir()
    outcomes: dict[str, int] = {}
    leftovers = 0
    for i in range(KILLS):
        target = work / "data.parquet"
        out = work / "out.parquet"
        target.write_bytes(original)
        in_place = i % 2 == 0
        argv = [*command, str(target)] + ([] if in_place else ["--out", str(out)])
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Most kills come once the temporary file appears, after delays spread evenly over
        # the uninterrupted run's write (timed from the file, not from the start, they land
        # while it is written however loaded the machine); the last few let the run finish.
        early = KILLS - 6
        if i < early:
            seen = time.perf_counter()
            while proc.poll() is None and time.perf_counter() - seen < 60:
                if any(p.name.endswith(".tmp") for p in work.iterdir()):
                    break
                time.sleep(0.001)
            time.sleep((full - write_start) * i / (early - 1))
        else:
            time.sleep(3 * full)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        finished = proc.returncode == 0
        data = target.read_bytes()
        if in_place:
            assert data in (original, expected), f"run {i}: partial file under the final name"
            outcome = "new" if data == expected else "original"
        else:
            assert data == original, f"run {i}: the source changed"
            if out.exists():
                assert out.read_bytes() == expected, f"run {i}: partial --out file"
            outcome = "out written" if out.exists() else "no out"
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        names = {p.name for p in work.iterdir()} - {"data.parquet", "out.parquet"}
        for name in names:
            assert name.startswith((".data.parquet.", ".out.parquet.")) and name.endswith(".tmp")
        if finished:
            assert not names  # a completed run removes nothing it should keep, leaves nothing
        leftovers += len(names)
        for p in work.iterdir():
            p.unlink()
    print(f"outcomes {outcomes}; hidden temporary files left by killed runs: {leftovers}")
    # Kills landed before the rename (some mid-write, leaving a temporary file: SIGKILL
    # cannot be cleaned up after) and runs completed, in both modes.
    assert set(outcomes) == {"original", "new", "no out", "out written"}, outcomes
    assert leftovers > 0
