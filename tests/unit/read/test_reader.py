"""The async reader and the pruner on real files, damaged files and request counts."""

from __future__ import annotations

import itertools
import os
import struct
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from thrift.protocol import fastbinary
from thrift.protocol.TCompactProtocol import TCompactProtocol
from thrift.transport.TTransport import TMemoryBuffer

from pybloom_async import (
    BloomReader,
    FilterState,
    InvalidFilterError,
    PyBloomError,
    ReaderConfig,
    Rule,
    col,
    lookup_sync,
    probe,
    probe_sync,
    prune,
    prune_sync,
    pruned_dataset_sync,
    read_bloom_filters,
    read_footer,
    read_footer_sync,
)
from pybloom_async.io.base import SourceStats
from pybloom_async.parquet import thrift_specs as wire

WORDS = ["Hello", "This is", "a", "test", "How", "are you", "doing ", "today",
         "the quick", "brown fox", "jumps", "over", "the lazy", "dog"]  # fmt: skip
ABSENT = ["b", "c", "d", "doing"]


# ---- parquet-testing ------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["data_index_bloom_encoding_stats.parquet", "data_index_bloom_encoding_with_length.parquet"],
)
def test_parquet_testing_bloom_files(parquet_testing: Path, name: str) -> None:
    path = parquet_testing / "data" / name
    for word in WORDS:
        (v,) = prune_sync(path, col("String") == word)
        assert v.kept, word
    for word in ABSENT:
        (v,) = prune_sync(path, col("String") == word)
        assert not v.kept and v.rule is Rule.BLOOM_FILTER, word
    results = probe_sync(path, "String", WORDS + ABSENT)
    assert [r.excluded for r in results] == [False] * len(WORDS) + [True] * len(ABSENT)
    (v,) = prune_sync(path, col("String").isin(ABSENT))
    assert not v.kept
    (v,) = prune_sync(path, col("String").isin([*ABSENT, "dog"]))
    assert v.kept


def test_every_parquet_testing_file_prunes_or_keeps_with_a_reason(parquet_testing: Path) -> None:
    files = sorted((parquet_testing / "data").glob("*.parquet")) + sorted(
        (parquet_testing / "bad_data").glob("*.parquet")
    )
    assert files
    for path in files:
        verdicts = prune_sync(path, "no_such_column = 1 OR id = 1", require_columns=False)
        assert verdicts, path
        for v in verdicts:
            assert v.kept or v.rule in (Rule.BLOOM_FILTER, Rule.STATISTICS, Rule.TYPE, Rule.NULLS)
            assert v.reason
        try:
            prune_sync(path, "no_such_column = 1", on_error="raise")
        except PyBloomError:
            pass


# ---- files we write ------------------------------------------------------------------


def write_table(path: Path, rows: int = 4000, row_group_size: int = 1000) -> pa.Table:
    rng = np.random.default_rng(5)
    ids = rng.permutation(rows * 10)[:rows].astype(np.int64)
    table = pa.table(
        {
            "id": pa.array(ids),
            "email": pa.array([f"user{i}@example.com" for i in ids]),
            "score": pa.array(rng.random(rows)),
        }
    )
    pq.write_table(
        table,
        path,
        row_group_size=row_group_size,
        bloom_filter_options={"id": {"ndv": row_group_size, "fpp": 0.01}, "email": True},
    )
    return table


@pytest.fixture
def table_file(tmp_path: Path) -> tuple[Path, pa.Table]:
    path = tmp_path / "t.parquet"
    return path, write_table(path)


def test_no_false_negatives_and_absent_keys_pruned(table_file: tuple[Path, pa.Table]) -> None:
    path, table = table_file
    pf = pq.ParquetFile(path)
    for g in range(pf.num_row_groups):
        ids = pf.read_row_group(g, columns=["id"]).column("id").to_pylist()
        for i in ids[:200]:
            verdicts = prune_sync(path, col("id") == i)
            assert verdicts[g].kept, (g, i)
    # Keys far outside every range are ruled out by statistics; keys inside by filters.
    all_ids = set(table.column("id").to_pylist())
    absent = [i for i in range(40_000) if i not in all_ids][:300]
    verdicts = prune_sync(path, col("id").isin(absent))
    assert sum(v.kept for v in verdicts) <= 1
    assert {v.rule for v in verdicts if not v.kept} <= {Rule.BLOOM_FILTER, Rule.STATISTICS}
    (v0, *_) = prune_sync(path, col("id") == 10**9)
    assert v0.rule is Rule.STATISTICS
    (v0, *_) = prune_sync(path, col("id") == 2**40)
    assert not v0.kept


def test_and_or_across_columns(table_file: tuple[Path, pa.Table]) -> None:
    path, table = table_file
    first_id = table.column("id")[0].as_py()
    email = f"user{first_id}@example.com"
    verdicts = prune_sync(path, (col("id") == first_id) & (col("email") == email))
    assert verdicts[0].kept
    assert sum(v.kept for v in verdicts) <= 2
    verdicts = prune_sync(path, (col("id") == first_id) & (col("email") == "nobody@x"))
    assert not verdicts[0].kept
    verdicts = prune_sync(path, f"id = {first_id} OR email = 'nobody@x'")
    assert verdicts[0].kept
    # A column without a filter never prunes on its own.
    verdicts = prune_sync(path, col("score") == 0.5)
    assert all(v.kept for v in verdicts)
    assert {v.rule for v in verdicts} <= {Rule.NO_FILTER, Rule.STATISTICS}


def test_request_counts(tmp_path: Path) -> None:
    path = tmp_path / "big.parquet"
    table = write_table(path, rows=8_000, row_group_size=2_000)
    key = col("id") == table.column("id")[0].as_py()  # inside every row group's min/max
    stats = SourceStats()
    verdicts = prune_sync(path, key, stats=stats, config=ReaderConfig(footer_read_bytes=65536))
    assert all(v.rule in (Rule.BLOOM_FILTER, Rule.MAY_MATCH) for v in verdicts)
    # Filters right before the footer, inside a 64 KiB suffix: one read.
    assert stats.requests == 1
    stats = SourceStats()
    small = ReaderConfig(footer_read_bytes=4096)
    # A caller's reader reads the filters whole (and keeps them): the suffix, then each
    # filter of the wanted column outside it: a local read is a system call, so the holes
    # between them (the other column's filters) are not copied.
    prune_sync(path, key, reader=BloomReader(config=small, stats=stats))
    footer = read_footer_sync(path, config=small)
    ranges = sorted(
        (c.bloom_filter_offset, c.bloom_filter_offset + c.bloom_filter_length)
        for c in footer.metadata.column_chunks("id")
    )
    outside = [r for r in ranges if r[0] < footer.tail_start]  # not in the 4 KiB suffix
    separate = 1 + sum(a[1] != b[0] for a, b in itertools.pairwise(outside))
    assert len(outside) > 1 and separate > 1 and stats.requests == 1 + separate
    # The run's own reader probes them where they lie: each small filter in one read of
    # its own (at most 16 KiB), none of the holes.
    stats = SourceStats()
    prune_sync(path, key, stats=stats, config=small)
    assert all(end - start <= 16384 for start, end in outside)
    assert stats.requests == 1 + len(outside)
    assert stats.bytes_read == 4096 + sum(end - start for start, end in outside)


# ---- damaged files -------------------------------------------------------------------


def split(data: bytes) -> tuple[bytes, bytes]:
    (n,) = struct.unpack("<I", data[-8:-4])
    return data[: len(data) - 8 - n], data[len(data) - 8 - n : -8]


def decode(footer: bytes) -> Any:
    meta = wire.FileMetaData()
    fastbinary.decode_compact(
        meta,
        TCompactProtocol(TMemoryBuffer(footer)),
        [wire.FileMetaData, wire.FileMetaData.thrift_spec],
    )
    return meta


def encode(meta: Any) -> bytes:
    return bytes(
        fastbinary.encode_compact(meta, [wire.FileMetaData, wire.FileMetaData.thrift_spec])
    )


def rewrite(data: bytes, mutate: Callable[[Any], None]) -> bytes:
    body, footer = split(data)
    meta = decode(footer)
    mutate(meta)
    new = encode(meta)
    return body + new + struct.pack("<I", len(new)) + b"PAR1"


def chunk_meta(meta: Any, g: int = 0, c: int = 0) -> Any:
    return meta.row_groups[g].columns[c].meta_data


@pytest.fixture
def good(tmp_path: Path) -> bytes:
    path = tmp_path / "g.parquet"
    write_table(path, rows=2000, row_group_size=1000)
    return path.read_bytes()


def filters_of(tmp_path: Path, data: bytes, **kw: Any) -> dict[Any, Any]:
    path = tmp_path / "damaged.parquet"
    path.write_bytes(data)
    return anyio.run(lambda: read_bloom_filters(path, ["id"], **kw))


def test_offset_zero_means_no_filter(tmp_path: Path, good: bytes) -> None:
    def mutate(meta: Any) -> None:
        chunk_meta(meta).bloom_filter_offset = 0

    got = filters_of(tmp_path, rewrite(good, mutate))
    assert got[(0, "id")].state is FilterState.ABSENT
    assert got[(1, "id")].state is FilterState.OK


@pytest.mark.parametrize(
    ("name", "mutate", "match"),
    [
        ("length past EOF", lambda m: setattr(chunk_meta(m), "bloom_filter_length", 10**6), "past"),
        (
            "length above limit",
            lambda m: setattr(chunk_meta(m), "bloom_filter_length", 10**9),
            "limit",
        ),
        ("offset into footer", lambda m: setattr(chunk_meta(m), "bloom_filter_offset", None), None),
        ("negative length", lambda m: setattr(chunk_meta(m), "bloom_filter_length", -5), "length"),
    ],
)
def test_bad_offsets_and_lengths(
    tmp_path: Path, good: bytes, name: str, mutate: Callable[[Any], None], match: str | None
) -> None:
    got = filters_of(tmp_path, rewrite(good, mutate))
    read = got[(0, "id")]
    if match is None:
        assert read.state is FilterState.ABSENT
    else:
        assert read.state is FilterState.UNUSABLE and read.reason and match in read.reason, name


def test_offset_into_the_footer(tmp_path: Path, good: bytes) -> None:
    body, _ = split(good)

    def mutate(meta: Any) -> None:
        chunk_meta(meta).bloom_filter_offset = len(body) + 2
        chunk_meta(meta).bloom_filter_length = None

    got = filters_of(tmp_path, rewrite(good, mutate))
    assert got[(0, "id")].state is FilterState.UNUSABLE


def header_for(num_bytes: int) -> bytes:
    """A complete BLOCK/XXHASH/UNCOMPRESSED header announcing ``num_bytes``."""
    z = num_bytes << 1
    varint = bytearray()
    while z >= 0x80:
        varint.append(z & 0x7F | 0x80)
        z >>= 7
    varint.append(z)
    return b"\x15" + bytes(varint) + b"\x1c\x1c\x00\x00" * 3 + b"\x00"


def patch_header(data: bytes, meta_of: Callable[[Any], Any], new_header: bytes) -> bytes:
    _, footer = split(data)
    cm = meta_of(decode(footer))
    off = cm.bloom_filter_offset
    out = bytearray(data)
    out[off : off + len(new_header)] = new_header
    return bytes(out)


def test_garbage_header_and_patched_num_bytes(tmp_path: Path, good: bytes) -> None:
    got = filters_of(tmp_path, patch_header(good, chunk_meta, b"\xff" * 16))
    assert got[(0, "id")].state is FilterState.UNUSABLE
    assert "header" in (got[(0, "id")].reason or "")
    got = filters_of(tmp_path, patch_header(good, chunk_meta, header_for(1000)))
    assert got[(0, "id")].state is FilterState.UNUSABLE
    assert "power of two" in (got[(0, "id")].reason or "")
    # A legal numBytes that disagrees with bloom_filter_length.
    got = filters_of(tmp_path, patch_header(good, chunk_meta, header_for(64)))
    read = got[(0, "id")]
    assert read.state is FilterState.UNUSABLE and "length" in (read.reason or "")


def test_huge_num_bytes_without_length_is_refused_before_reading(
    tmp_path: Path, good: bytes
) -> None:
    def drop_length(meta: Any) -> None:
        for rg in meta.row_groups:
            for c in rg.columns:
                c.meta_data.bloom_filter_length = None

    data = rewrite(good, drop_length)
    data = patch_header(data, chunk_meta, header_for(1 << 30))
    stats = SourceStats()
    got = filters_of(tmp_path, data, stats=stats)
    read = got[(0, "id")]
    assert read.state is FilterState.UNUSABLE
    assert "limit" in (read.reason or "")
    assert stats.bytes_read < 200_000  # nothing near 1 GiB was read or allocated
    assert got[(1, "id")].state is FilterState.OK


def test_pruning_keeps_row_groups_with_damaged_filters(tmp_path: Path, good: bytes) -> None:
    path = tmp_path / "d.parquet"
    path.write_bytes(patch_header(good, chunk_meta, b"\xff" * 16))
    ids = pq.ParquetFile(path).read_row_group(0, columns=["id"]).column("id").to_pylist()
    present = set(ids)
    # Inside row group 0's min/max but not in it: only the (damaged) filter could exclude it.
    absent = next(i for i in range(min(ids), max(ids)) if i not in present)
    verdicts = prune_sync(path, col("id") == absent)
    assert verdicts[0].kept and verdicts[0].rule is Rule.UNUSABLE_FILTER
    assert "unusable" in verdicts[0].reason
    verdicts = prune_sync(path, col("id") == ids[1])
    assert verdicts[0].kept
    with pytest.raises(InvalidFilterError, match="unusable"):
        prune_sync(path, col("id").isin([absent]), on_error="raise")


@pytest.mark.parametrize(
    ("name", "damage", "match"),
    [
        ("truncated", lambda d: d[: len(d) // 2], "magic|footer"),
        ("bad magic", lambda d: d[:-4] + b"XXXX", "magic"),
        (
            "footer length past file",
            lambda d: d[:-8] + struct.pack("<I", 10**8) + b"PAR1",
            "footer",
        ),
        ("tiny", lambda d: b"PAR1", "small"),
        ("encrypted", lambda d: d[:-4] + b"PARE", "encrypted"),
        (
            "garbage footer",
            lambda d: d[:-1000] + b"\x00" * 992 + d[-8:],
            "malformed|missing|footer",
        ),
    ],
)
def test_unreadable_files_are_kept_with_a_reason(
    tmp_path: Path, good: bytes, name: str, damage: Callable[[bytes], bytes], match: str
) -> None:
    path = tmp_path / "bad.parquet"
    path.write_bytes(damage(good))
    (v,) = prune_sync(path, col("id") == 1)
    assert v.kept and v.rule is Rule.UNREADABLE and v.row_group is None
    with pytest.raises(PyBloomError, match=match):
        prune_sync(path, col("id") == 1, on_error="raise")


# ---- async behaviour, caching ----------------------------------------------------------


@pytest.mark.anyio
async def test_reader_on_every_backend(table_file: tuple[Path, pa.Table]) -> None:
    path, table = table_file
    footer = await read_footer(path)
    assert footer.metadata.num_rows == table.num_rows
    filters = await read_bloom_filters(path, ["email"])
    assert len(filters) == footer.metadata.row_groups.__len__()
    assert all(f.state is FilterState.OK for f in filters.values())
    verdicts = await prune([path, path], col("email") == "nobody")
    assert len(verdicts) == len(filters)  # a file named twice is read once


@pytest.mark.anyio
async def test_cache_saves_requests_and_notices_rewrites(tmp_path: Path) -> None:
    path = tmp_path / "c.parquet"
    write_table(path)
    stats = SourceStats()
    reader = BloomReader(stats=stats, max_age=3600)
    # A null test beside the key: the file pass (which reads a local file again from the
    # page cache in C, bound from the footer a reader kept) does not take it, the cache does.
    await prune(path, (col("id") == 1) | col("id").is_null(), reader=reader)
    first = stats.requests
    assert first >= 1
    await prune(path, (col("id") == 2) | col("id").is_null(), reader=reader)
    assert stats.requests == first  # footer and filters from the cache
    # Rewritten under the same name: a reader checking every time sees it.
    checking = BloomReader(stats=stats, max_age=0)
    await prune(path, col("id") == 1, reader=checking)
    before = stats.requests
    write_table(path, rows=100, row_group_size=50)
    verdicts = await prune(path, col("id") == 1, reader=checking)
    assert stats.requests > before
    assert len(verdicts) == 2


@pytest.mark.anyio
async def test_cache_notices_a_rewrite_at_the_same_size_and_time(tmp_path: Path) -> None:
    """A file written in place at the same size, its time set back (cp -p): not the same."""
    path, other = tmp_path / "c.parquet", tmp_path / "other.parquet"
    for target, first in ((path, 0), (other, 1000)):
        table = pa.table({"id": pa.array(range(first, first + 100), pa.int64())})
        options = {"use_dictionary": False, "compression": "none"}
        pq.write_table(table, target, bloom_filter_options={"id": True}, **options)
    assert path.stat().st_size == other.stat().st_size
    checking = BloomReader(max_age=0)
    assert [v.kept for v in await prune(path, col("id") == 1005, reader=checking)] == [False]
    st = path.stat()
    path.write_bytes(other.read_bytes())
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_ino, path.stat().st_mtime_ns) == (st.st_ino, st.st_mtime_ns)
    assert [v.kept for v in await prune(path, col("id") == 1005, reader=checking)] == [True]


def test_boolean_filters_are_never_trusted(tmp_path: Path) -> None:
    """parquet-java writes all-zero filters for BOOLEAN columns; they must not prune."""
    from pybloom_async import SplitBlockBloomFilter

    path = tmp_path / "b.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}), path,
                   bloom_filter_options={"id": True})  # fmt: skip
    data = path.read_bytes()
    # Point a BOOLEAN column's metadata at the id filter after making it empty:
    # the shape Spark writes. Simplest faithful model: an all-zero filter that
    # a BOOLEAN chunk owns.
    empty = SplitBlockBloomFilter(32)
    assert not empty.check(True, "BOOLEAN")  # what a naive reader would conclude

    def make_bool(meta: Any) -> None:
        meta.schema[1].type = 0  # BOOLEAN
        cm = chunk_meta(meta)
        cm.type = 0
        cm.statistics = None

    path.write_bytes(rewrite(data, make_bool))
    verdicts = prune_sync(path, col("id") == True)  # noqa: E712
    assert verdicts[0].kept
    assert "BOOLEAN" in verdicts[0].reason or verdicts[0].rule is not Rule.BLOOM_FILTER


def test_long_in_lists_match_the_general_path(table_file: tuple[Path, pa.Table]) -> None:
    """IN lists of plain ints and strings are encoded vectorised: same verdicts as one by one."""
    from pybloom_async import Or
    from pybloom_async.predicate import Eq

    path, table = table_file
    ids = table.column("id").to_pylist()
    rng = np.random.default_rng(11)
    probe_ids = [*rng.choice(ids[:1000], 40).tolist(), *rng.integers(0, 50_000, 60).tolist(),
                 2**63 + 5, -(2**70)]  # fmt: skip
    probe_emails = [f"user{i}@example.com" for i in probe_ids[:100]] + ["", "ü"]
    for column, values in (("id", probe_ids), ("email", probe_emails)):
        fast = prune_sync(path, col(column).isin(values))
        slow = prune_sync(path, Or(tuple(Eq(column, v) for v in values)))
        assert [v.kept for v in fast] == [v.kept for v in slow], column
        assert fast[0].kept  # row group 0 holds 40 of the ids
    # Absent keys only: excluded everywhere by the vectorised path too.
    absent = [i for i in range(0, 400_000, 7) if i not in set(ids)][:500]
    fast = prune_sync(path, col("id").isin(absent))
    slow = prune_sync(path, Or(tuple(Eq("id", v) for v in absent)))
    assert [v.kept for v in fast] == [v.kept for v in slow]
    assert sum(v.kept for v in fast) < len(fast)


def test_long_int32_in_lists_with_duplicates_and_values_out_of_range(tmp_path: Path) -> None:
    """The vectorised path on an INT32 column: values outside the type are refused (numpy
    must not wrap them around), duplicates collapse; the verdicts and reasons are those of
    the value-by-value path."""
    from pybloom_async import Or
    from pybloom_async.predicate import Eq

    path = tmp_path / "i32.parquet"
    values = np.arange(0, 40_000, 10, dtype=np.int32)
    pq.write_table(
        pa.table({"k": pa.array(values)}),
        path,
        row_group_size=1000,
        bloom_filter_options={"k": {"ndv": 1000, "fpp": 0.01}},
    )
    present = [int(v) for v in values[::97]]
    outside = [2**31, 2**32 + present[0], -(2**31) - 1, 2**40]
    absent = [v + 5 for v in present]
    probes = [*present, *present[:10], *outside, *absent]
    assert len(probes) >= 64
    fast = prune_sync(path, col("k").isin(probes))
    slow = prune_sync(path, Or(tuple(Eq("k", v) for v in probes)))
    assert [v.kept for v in fast] == [v.kept for v in slow]
    assert all(v.kept for v in fast)  # every row group holds a present value
    # Long lists are deduplicated and sorted by numpy, short ones in Python: alike.
    long = prune_sync(path, col("k").isin(probes * 15))
    assert len(probes) * 15 > 1000
    assert [v.kept for v in long] == [v.kept for v in fast]
    subset = [*present[:20], *absent[:40], *outside] * 30
    short, many = (
        prune_sync(path, col("k").isin(subset[:70])),
        prune_sync(path, col("k").isin(subset)),
    )
    assert [(v.kept, v.rule) for v in short] == [(v.kept, v.rule) for v in many]
    # Only values outside the type: ruled out by the type, with the first of them named.
    (first, *_) = prune_sync(path, col("k").isin(outside * 20))
    assert not first.kept and first.rule is Rule.TYPE
    assert "2147483648: outside the column's range" in first.reason


# ---- the blocking path of the *_sync functions -------------------------------------------


def _async_prune(path: Any, where: Any, **kw: Any) -> Any:
    return anyio.run(lambda: prune(path, where, **kw))


def _outcome(run: Callable[[], Any]) -> Any:
    """What a call gives: its verdicts as tuples, or its error's type and text."""
    try:
        result = run()
    except PyBloomError as exc:
        return (type(exc).__name__, str(exc))
    return [tuple(v.to_dict().values()) for v in result]


def _damaged_variants(good: bytes) -> dict[str, bytes]:
    body, _ = split(good)

    def drop_lengths(meta: Any) -> None:
        for rg in meta.row_groups:
            for c in rg.columns:
                c.meta_data.bloom_filter_length = None

    def into_footer(meta: Any) -> None:
        chunk_meta(meta).bloom_filter_offset = len(body) + 2
        chunk_meta(meta).bloom_filter_length = None

    return {
        "good": good,
        "offset 0": rewrite(good, lambda m: setattr(chunk_meta(m), "bloom_filter_offset", 0)),
        "length past EOF": rewrite(
            good, lambda m: setattr(chunk_meta(m), "bloom_filter_length", 10**6)
        ),
        "negative length": rewrite(
            good, lambda m: setattr(chunk_meta(m), "bloom_filter_length", -5)
        ),
        "offset into footer": rewrite(good, into_footer),
        "no lengths": rewrite(good, drop_lengths),
        "garbage header": patch_header(good, chunk_meta, b"\xff" * 16),
        "numBytes not a power of two": patch_header(good, chunk_meta, header_for(1000)),
        "numBytes vs length": patch_header(good, chunk_meta, header_for(64)),
        "huge numBytes, no length": patch_header(
            rewrite(good, drop_lengths), chunk_meta, header_for(1 << 30)
        ),
        "chunk type": rewrite(good, lambda m: setattr(chunk_meta(m), "type", 1)),
        "truncated": good[: len(good) // 2],
        "bad magic": good[:-4] + b"XXXX",
        "footer length past file": good[:-8] + struct.pack("<I", 10**8) + b"PAR1",
        "tiny": b"PAR1",
        "encrypted": good[:-4] + b"PARE",
        "garbage footer": good[:-1000] + b"\x00" * 992 + good[-8:],
    }


def test_blocking_path_gives_the_async_verdicts(
    tmp_path: Path, good: bytes, parquet_testing: Path
) -> None:
    """prune_sync reads local files without a loop; every answer, error and count agrees."""
    ids = pq.read_table(pa.BufferReader(good), columns=["id"]).column(0).to_pylist()
    emails = [f"user{i}@example.com" for i in ids[:3]]
    ours = [
        col("id") == ids[5],
        col("id").isin([*ids[:50], *range(-300, -100)]),
        (col("id") == ids[1]) | (col("email").isin([*emails, "nobody"])),
        col("email") == "nobody",
        "score = 0.5 AND id IN (1, 2, 3)",
        "missing = 1",
    ]
    cases: list[tuple[Path, Any]] = []
    for name, data in _damaged_variants(good).items():
        path = tmp_path / f"{name.replace(' ', '_')}.parquet"
        path.write_bytes(data)
        cases += [(path, where) for where in ours]
    corpus = sorted((parquet_testing / "data").glob("*.parquet")) + sorted(
        (parquet_testing / "bad_data").glob("*.parquet")
    )
    cases += [(p, "no_such_column = 1 OR id = 1 OR String = 'Hello'") for p in corpus]
    assert len(cases) > 150
    for path, where in cases:
        for strict in (False, True):
            blocking_stats, async_stats = SourceStats(), SourceStats()
            blocking = _outcome(
                partial(
                    prune_sync,
                    path,
                    where,
                    on_error="raise" if strict else "skip",
                    stats=blocking_stats,
                )
            )
            in_loop = _outcome(
                partial(
                    _async_prune,
                    path,
                    where,
                    on_error="raise" if strict else "skip",
                    stats=async_stats,
                )
            )
            assert blocking == in_loop, (path.name, where, strict)
            # The same reads; the blocking reader opens each file once, not once per call.
            assert (blocking_stats.requests, blocking_stats.bytes_read) == (
                async_stats.requests,
                async_stats.bytes_read,
            ), (path.name, where, strict)
            assert blocking_stats.metadata_requests <= async_stats.metadata_requests
    # Several files at once, and probes.
    paths = [p for p, _ in cases[:: len(ours)]][:5]
    assert _outcome(lambda: prune_sync(paths, ours[2])) == _outcome(
        lambda: _async_prune(paths, ours[2])
    )
    values = [ids[0], -1, "x", None]
    for path in paths:
        blocking = _outcome(partial(probe_sync, path, "id", values))
        in_loop = _outcome(partial(anyio.run, partial(probe, path, "id", values)))
        assert blocking == in_loop, path.name


def test_inline_path_is_taken_only_for_local_paths(tmp_path: Path) -> None:
    from pybloom_async.io.base import FileInfo
    from pybloom_async.io.files import local_paths

    path = tmp_path / "t.parquet"
    write_table(path, rows=100, row_group_size=50)
    assert local_paths(path)
    assert local_paths([path, str(path)] * 500)  # any number of them
    assert local_paths(str(tmp_path / "missing.parquet"))  # kept, unread
    assert local_paths(str(tmp_path))  # a folder, listed in this thread
    assert not local_paths([])
    assert not local_paths([path, "s3://bucket/x.parquet"])
    assert not local_paths("file:///tmp/x.parquet")
    assert not local_paths(FileInfo(str(path), 10))


class _Suspend:
    """An awaitable that suspends once, as waiting for I/O in an event loop does."""

    def __await__(self) -> Any:
        yield


def test_run_blocking_refuses_a_coroutine_that_suspends() -> None:
    from pybloom_async.tasks.loops import run_blocking

    async def done() -> int:
        return 7

    finished = []

    async def suspends() -> None:
        try:
            await _Suspend()
        finally:
            finished.append(True)

    assert run_blocking(done()) == 7
    with pytest.raises(RuntimeError, match="tried to suspend"):
        run_blocking(suspends())
    assert finished == [True]  # closed, its cleanup ran


def test_sync_functions_start_no_event_loop_for_local_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    loops = importlib.import_module("pybloom_async.tasks.loops")

    path = tmp_path / "t.parquet"
    table = write_table(path, rows=200, row_group_size=100)
    expected = _async_prune(path, col("id") == table.column("id")[0].as_py())

    def no_loop(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an event loop was started")

    def no_thread(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a worker thread was used")

    monkeypatch.setattr(loops.anyio, "run", no_loop)
    monkeypatch.setattr(loops, "in_thread", no_thread)
    got = prune_sync([path, path], col("id") == table.column("id")[0].as_py())
    assert got == expected  # a file named twice is read once, as by prune
    assert len(probe_sync(path, "id", [1, 2])) == 4
    # A folder is listed in this thread too, and a lookup reads its rows there.
    assert prune_sync(tmp_path, col("id") == table.column("id")[0].as_py()) == expected
    assert lookup_sync(tmp_path, col("id") == table.column("id")[0].as_py()).num_rows == 1
    dataset = pruned_dataset_sync(tmp_path, col("id") == table.column("id")[0].as_py())
    assert [f.row_groups[0].id for f in dataset.get_fragments()] == [0]
    with pytest.raises(AssertionError, match="event loop"):
        prune_sync("s3://bucket/t.parquet", col("id") == 1)  # an object store: in a loop


def test_inline_reads_local_files_only() -> None:
    from pybloom_async.errors import InvalidArgumentError
    from pybloom_async.tasks.loops import run_inline

    async def open_store() -> None:
        BloomReader().open("s3://bucket/key.parquet")

    with pytest.raises(InvalidArgumentError, match="calling thread"):
        run_inline(open_store)


def test_inline_source_opens_a_file_once_and_closes_it(tmp_path: Path) -> None:
    import os

    from pybloom_async.io.local import BlockingLocalFileSource
    from pybloom_async.tasks.loops import run_inline

    path = tmp_path / "t.parquet"
    write_table(path, rows=200, row_group_size=100)
    stats = SourceStats()
    reader = BloomReader(stats=stats)
    seen: list[int] = []

    async def both() -> tuple[Any, Any]:
        async with reader.opened(path) as file:
            assert isinstance(file.source, BlockingLocalFileSource)
            footer = await file.footer()
            filters = await file.filters(["id"])
            seen.append(await file.source._descriptor())
            return footer, filters

    footer, filters = run_inline(both)
    assert len(filters) == len(footer.row_groups) == 2
    assert stats.metadata_requests == 1  # one open (and fstat) for both
    with pytest.raises(OSError):
        os.fstat(seen[0])  # closed with the file


def test_forget_needs_no_source(table_file: tuple[Path, pa.Table]) -> None:
    """forget finds the cache key without opening a source: a local file is forgotten
    by a reader configured for a store, and the next read fetches it again."""
    from pybloom_async.errors import InvalidArgumentError

    path, _ = table_file
    reader = BloomReader(options={"region": "us-east-1"})
    with pytest.raises(InvalidArgumentError, match="do not apply to local files"):
        reader.open(path)
    cached = BloomReader(max_age=3600)
    anyio.run(cached.footer, path)
    cached.forget(path)  # the same key, spelt as a string
    cached.stats.reset()
    anyio.run(cached.footer, str(path))
    assert cached.stats.requests == 1
    reader.forget(path)
    reader.forget("s3://bucket/never-read.parquet")


# ---- filters already in the tail ------------------------------------------------------


def test_filters_in_the_tail_are_read_without_a_plan(
    tmp_path: Path, good: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Filters with their length inside the suffix already read: no planning, no request."""
    import pybloom_async.read.fetch as fetch

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the reads were planned")

    monkeypatch.setattr(fetch, "plan_filter_reads", refuse)
    stats = SourceStats()
    got = filters_of(tmp_path, good, config=ReaderConfig(footer_read_bytes=len(good)), stats=stats)
    assert [r.state for r in got.values()] == [FilterState.OK, FilterState.OK]
    assert stats.requests == 1


def _drop_lengths(meta: Any) -> None:
    for rg in meta.row_groups:
        for c in rg.columns:
            c.meta_data.bloom_filter_length = None


def _set(field: str, value: Any) -> Callable[[bytes], bytes]:
    return lambda data: rewrite(data, lambda m: setattr(chunk_meta(m), field, value))


TAIL_CASES: dict[str, Callable[[bytes], bytes]] = {
    "intact": lambda data: data,
    "garbage header": lambda data: patch_header(data, chunk_meta, b"\xff" * 16),
    "numBytes not a power of two": lambda data: patch_header(data, chunk_meta, header_for(1000)),
    "numBytes against the length": lambda data: patch_header(data, chunk_meta, header_for(64)),
    "length past the end": _set("bloom_filter_length", 10**6),
    "length above the limit": _set("bloom_filter_length", 10**9),
    "length too small": _set("bloom_filter_length", 20),
    "negative length": _set("bloom_filter_length", -5),
    "offset zero": _set("bloom_filter_offset", 0),
    "offset in the magic": _set("bloom_filter_offset", 2),
    "no lengths": lambda data: rewrite(data, _drop_lengths),
}


@pytest.mark.parametrize("suffix", ["whole file", "footer only"])
@pytest.mark.parametrize("case", list(TAIL_CASES))
def test_the_fast_paths_answer_what_the_planned_reads_do(
    tmp_path: Path, good: bytes, monkeypatch: pytest.MonkeyPatch, case: str, suffix: str
) -> None:
    """Filters served from the tail, or from one merged read of their known ranges, give
    exactly the outcomes (and reasons) of the planned reads."""
    import pybloom_async.read.fetch as fetch

    data = TAIL_CASES[case](good)
    footer_bytes = int.from_bytes(data[-8:-4], "little") + 8
    config = ReaderConfig(footer_read_bytes=len(data) if suffix == "whole file" else footer_bytes)

    def summary(found: dict[Any, Any]) -> dict[Any, Any]:
        return {
            key: (r.state, r.reason, r.offset, r.length, r.header_len,
                  None if r.filter is None else r.filter.to_bytes())
            for key, r in found.items()
        }  # fmt: skip

    fast = summary(filters_of(tmp_path, data, config=config))
    monkeypatch.setattr(fetch, "filters_from_pieces", lambda *args: None)
    planned = summary(filters_of(tmp_path, data, config=config))
    assert fast == planned
    assert (fast[(0, "id")][0] is FilterState.OK) is (case in ("intact", "no lengths"))


@pytest.mark.anyio
async def test_prune_opens_each_file_once_for_footer_and_filters(tmp_path: Path) -> None:
    # The footer comes before the choice of filters, but both come through one source:
    # a second open would find the store client (and, on a caller's reader with
    # max_age=0, check the file's identity) again.
    paths = [tmp_path / f"{i}.parquet" for i in range(3)]
    ids = {i for p in paths for i in write_table(p, rows=400, row_group_size=100)["id"].to_pylist()}
    absent = [i for i in range(min(ids), max(ids)) if i not in ids][:50]
    opened: list[str] = []

    class Counting(BloomReader):
        def open(self, location: Any) -> Any:
            opened.append(str(location))
            return super().open(location)

    reader = Counting(max_age=0)
    verdicts = await prune(paths, col("id").isin(absent), reader=reader)
    assert Rule.BLOOM_FILTER in {v.rule for v in verdicts}  # the filters were read
    # Each file opened once at most; those after the first of their schema are pruned in
    # one C call each (pruning/file_pass.py), not through the reader.
    assert opened and len(opened) == len(set(opened)) <= len(paths)
    assert set(opened) <= set(map(str, paths))
    # The reader's cache is filled as before: footer and filters come with no I/O.
    stats = reader.stats.requests
    footer, filters = await reader.footer_and_filters(opened[0], ["id"])
    assert reader.stats.requests == stats and len(filters) == len(footer.metadata.row_groups)


@pytest.mark.anyio
async def test_identity_of_a_local_path_fails_as_opening_it_does(tmp_path: Path) -> None:
    # A file's identity is a stat: its failures are said as the I/O boundary says every
    # other (io.failures.map_errors), naming the file, never as a raw foreign exception.
    from pybloom_async.errors import InvalidArgumentError, SourceNotFoundError

    plain = tmp_path / "plain.parquet"
    plain.write_bytes(b"PAR1")
    reader = BloomReader()
    for missing in (tmp_path / "gone.parquet", plain / "under-a-file.parquet"):
        with pytest.raises(SourceNotFoundError, match="no such file") as found:
            await reader.identity(str(missing))
        assert found.value.path == str(missing)
    with pytest.raises(InvalidArgumentError, match="null byte") as bad:
        await reader.identity(str(tmp_path / "a\x00b.parquet"))
    assert bad.value.path is not None and "a\x00b.parquet" in bad.value.path
