"""Building and pruning with the lake index: no false negatives, whatever the index's state."""

from __future__ import annotations

import decimal
import json
import os
import shutil
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.replacing import HOWS, replace_keeping_time, same_size_files

from pybloom_async import (
    Rule,
    SplitBlockBloomFilter,
    build_lake_index_sync,
    col,
    compact_lake_index_sync,
    lookup_sync,
    prune_sync,
)
from pybloom_async.errors import InvalidArgumentError, PredicateError, PyBloomError
from pybloom_async.io.base import SourceStats
from pybloom_async.lake.format import (
    LAKE_DIR,
    MAGIC,
    TRAILER,
    decode_directory,
    decode_trailer,
)
from pybloom_async.pruning.api import prune_sync as prune_in_files_sync
from pybloom_async.read import columns as columns_module

ROWS = 2000


def _write(path: Path, ids: np.ndarray[Any, Any], row_group_size: int = ROWS) -> None:
    table = pa.table({"id": pa.array(ids, pa.int64()), "s": [f"k{v}" for v in ids.tolist()]})
    options = {"id": {"ndv": ROWS, "fpp": 0.01}, "s": {"ndv": ROWS, "fpp": 0.01}}
    pq.write_table(table, path, row_group_size=row_group_size, bloom_filter_options=options)


@pytest.fixture
def lake(tmp_path: Path) -> tuple[Path, list[np.ndarray[Any, Any]]]:
    rng = np.random.default_rng(11)
    root = tmp_path / "lake"
    (root / "part=1").mkdir(parents=True)
    keys = []
    for i in range(24):
        ids = rng.integers(0, 10**15, ROWS)
        sub = "part=1/" if i % 3 == 0 else ""
        _write(root / f"{sub}f{i:02}.parquet", ids)
        keys.append(ids)
    return root, keys


def _kept(root: Path, where: Any, **kw: Any) -> set[str]:
    verdicts = prune_sync(str(root), where, use_index="lake", row_groups=False, **kw)
    return {os.path.basename(v.file) for v in verdicts if v.kept}


def _segments(root: Path) -> list[Path]:
    return sorted((root / LAKE_DIR).glob("*.pbl"))


@pytest.mark.parametrize("mode", ["values", "filters"])
def test_no_false_negative_and_most_files_pruned(lake: Any, mode: str) -> None:
    root, keys = lake
    built = build_lake_index_sync(str(root), ["id", "s"], mode=mode)
    assert built.files == 24 and not built.errors
    if mode == "filters":
        assert len(built.folded) == 24 and not built.from_values
    rng = np.random.default_rng(3)
    pruned = 0
    for _ in range(40):
        f = int(rng.integers(0, 24))
        key = int(keys[f][int(rng.integers(0, ROWS))])
        kept = _kept(root, col("id") == key)
        assert f"f{f:02}.parquet" in kept
        assert f"f{f:02}.parquet" in _kept(root, f"s = 'k{key}'")
        pruned += 24 - len(kept)
    assert pruned > 40 * 20
    absent = _kept(root, col("id").isin([-1, -2, -3]))
    assert len(absent) <= 2


def test_folding_gives_the_bits_values_give(lake: Any) -> None:
    root, _ = lake
    build_lake_index_sync(str(root), ["id", "s"], mode="values", ndv=ROWS)
    build_lake_index_sync(str(root), ["id", "s"], mode="filters", ndv=ROWS)
    a, b = (p.read_bytes() for p in _segments(root))
    end_a = decode_trailer(a, len(a), "a")[0]
    end_b = decode_trailer(b, len(b), "b")[0]
    assert end_a == end_b and a[:end_a] == b[:end_b]


def test_small_row_group_filters_are_built_from_values(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    root.mkdir()
    rng = np.random.default_rng(1)
    ids = rng.integers(0, 10**15, ROWS)
    _write(root / "a.parquet", ids)
    _write(root / "b.parquet", rng.integers(0, 10**15, ROWS), row_group_size=ROWS // 4)
    built = build_lake_index_sync(str(root), ["id"], mode="filters", size_classes=False)
    assert [os.path.basename(p) for p in built.folded] == ["a.parquet"]
    assert list(map(os.path.basename, built.from_values)) == ["b.parquet"]
    assert "fewer than" in next(iter(built.from_values.values()))
    assert "a.parquet" in _kept(root, col("id") == int(ids[7]))


def test_stale_and_unindexed_files_are_kept_and_go_through_their_filters(lake: Any) -> None:
    root, _keys = lake
    build_lake_index_sync(str(root), ["id"])
    new_ids = np.arange(5, 5 + ROWS)
    _write(root / "f05.parquet", new_ids)  # rewritten: other size and time
    _write(root / "zz_new.parquet", new_ids)  # not in the index
    verdicts = prune_sync(str(root), col("id") == 77, use_index="lake", row_groups=False)
    rules = {os.path.basename(v.file): v for v in verdicts}
    assert rules["f05.parquet"].kept and rules["f05.parquet"].rule is Rule.STALE_INDEX
    assert "stale" in rules["f05.parquet"].reason
    assert rules["zz_new.parquet"].kept and rules["zz_new.parquet"].rule is Rule.NO_INDEX
    full = prune_sync(str(root), col("id") == 77, use_index="lake")
    by_file = {os.path.basename(v.file): v for v in full if v.row_group is not None}
    assert by_file["f05.parquet"].kept and by_file["zz_new.parquet"].kept
    assert by_file["f05.parquet"].rule is Rule.MAY_MATCH


def test_same_size_rewrite_is_stale_by_its_time(lake: Any) -> None:
    root, _keys = lake
    build_lake_index_sync(str(root), ["id"])
    path = root / "f01.parquet"
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    verdicts = prune_sync(str(root), col("id") == -5, use_index="lake", row_groups=False)
    (v,) = [v for v in verdicts if v.file.endswith("f01.parquet")]
    assert v.kept and v.rule is Rule.STALE_INDEX


@pytest.mark.parametrize("mode", ["values", "filters"])
def test_a_file_of_no_rows_is_indexed_with_the_others(tmp_path: Path, mode: str) -> None:
    """Empty dictionary-encoded and decimal columns: pyarrow gives no chunk to read."""
    root = tmp_path / "lake"
    root.mkdir()
    empty = pa.table(
        {"s": pa.array([], pa.string()).dictionary_encode(), "d": pa.array([], pa.decimal128(9, 2))}
    )
    pq.write_table(empty, root / "empty.parquet")
    d = pa.array([decimal.Decimal("1.00"), decimal.Decimal("2.00")], pa.decimal128(9, 2))
    full = pa.table({"s": ["a", "b"], "d": d})
    pq.write_table(full, root / "full.parquet", bloom_filter_options={"s": True, "d": True})
    built = build_lake_index_sync(str(root), ["s", "d"], mode=mode)
    assert built.files == 2 and not built.errors
    assert _kept(root, "s = 'a'") == {"full.parquet"}
    assert _kept(root, "d = 2.00") == {"full.parquet"}
    assert lookup_sync(str(root), "s = 'b'").column("s").to_pylist() == ["b"]


@pytest.mark.parametrize("mode", ["values", "filters"])
def test_a_file_of_no_row_groups_is_kept_whole(tmp_path: Path, mode: str) -> None:
    """DuckDB's COPY of an empty result writes no row group at all."""
    duckdb = pytest.importorskip("duckdb")
    root = tmp_path / "lake"
    root.mkdir()
    con = duckdb.connect()
    try:
        con.execute(f"COPY (SELECT 1::BIGINT AS id WHERE false) TO '{root / 'empty.parquet'}'")
        con.execute(f"COPY (SELECT range AS id FROM range(100)) TO '{root / 'full.parquet'}'")
    finally:
        con.close()
    assert pq.read_metadata(root / "empty.parquet").num_row_groups == 0
    assert not build_lake_index_sync(str(root), ["id"], mode=mode).errors
    for where in ("id IN (5, NULL)", "id <=> NULL", "id = 5 OR id <=> NULL", "id = 5"):
        verdicts = prune_sync(str(root), where, use_index="lake")
        full = [v for v in verdicts if v.file.endswith("full.parquet")]
        assert full == prune_in_files_sync(str(root / "full.parquet"), where), where
        (empty,) = [v for v in verdicts if v.file.endswith("empty.parquet")]
        assert empty.row_group is None, where  # its file verdict: no row group to prune
        assert lookup_sync(str(root), where).num_rows == (1 if "5" in where else 0), where


def test_a_file_whose_values_cannot_be_read_is_an_error_of_its_own(
    lake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pyarrow failing on one file's values: that file is not indexed, the others are."""
    root, keys = lake
    first = int(keys[7][0])
    real = columns_module.column_hashes

    def column_hashes(values: Any, column: Any) -> Any:
        if values[0].as_py() == first:  # f07.parquet
            raise pa.ArrowInvalid("cannot construct ChunkedArray from empty vector")
        return real(values, column)

    monkeypatch.setattr(columns_module, "column_hashes", column_hashes)
    built = build_lake_index_sync(str(root), ["id"])
    assert built.files == 23 and list(map(os.path.basename, built.errors)) == ["f07.parquet"]
    assert "cannot read the values: ArrowInvalid" in next(iter(built.errors.values()))
    assert "f07.parquet" in _kept(root, col("id") == first)


@pytest.mark.parametrize("how", HOWS)
def test_a_file_replaced_at_the_same_size_and_time_is_stale(tmp_path: Path, how: str) -> None:
    """cp -p, rsync -t and tar x carry the time over: the inode or change time tells."""
    root = tmp_path / "lake"
    root.mkdir()
    data, new = same_size_files(root)
    new = new.rename(tmp_path / "new.parquet")  # outside the lake
    build_lake_index_sync(str(root), ["id"])
    assert _kept(root, col("id") == 1005) == set()  # the index rules the file out
    replace_keeping_time(data, new, how)
    verdicts = prune_sync(str(root), col("id") == 1005, use_index="lake", row_groups=False)
    assert [(v.kept, v.rule) for v in verdicts] == [(True, Rule.STALE_INDEX)]
    assert [v.kept for v in prune_sync(str(root), col("id") == 1005, use_index="lake")] == [True]
    assert lookup_sync(str(root), col("id") == 1005).column("id").to_pylist() == [1005]


def _without_local_versions(segment: Path) -> None:
    """The segment as written before the inode and change time were recorded."""
    data = segment.read_bytes()
    offset, length, _ = decode_trailer(data, len(data), "s")
    doc = json.loads(zlib.decompress(data[offset : offset + length]))
    del doc["local_files"]
    packed = zlib.compress(json.dumps(doc).encode())
    trailer = TRAILER.pack(offset, len(packed), zlib.crc32(packed), 1, 0, MAGIC)
    segment.write_bytes(data[:offset] + packed + trailer)


def test_a_segment_without_local_versions_is_stale_for_local_files(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    root.mkdir()
    same_size_files(root)
    build_lake_index_sync(str(root), ["id"])
    assert _kept(root, col("id") == 5000) == set()
    (segment,) = _segments(root)
    _without_local_versions(segment)
    verdicts = prune_sync(str(root), col("id") == 5000, use_index="lake", row_groups=False)
    assert {(v.kept, v.rule) for v in verdicts} == {(True, Rule.STALE_INDEX)}
    assert all("older version" in v.reason for v in verdicts)


def test_a_damaged_stripe_keeps_every_file_of_its_segment(lake: Any) -> None:
    root, _keys = lake
    build_lake_index_sync(str(root), ["id"])
    (seg,) = _segments(root)
    data = bytearray(seg.read_bytes())
    offset = decode_trailer(bytes(data), len(data), "s")[0]
    data[8:offset] = bytes(offset - 8)  # every stripe and its CRC zeroed: the CRCs fail
    seg.write_bytes(bytes(data))
    verdicts = prune_sync(str(root), col("id") == -5, use_index="lake", row_groups=False)
    assert len(verdicts) == 24
    assert all(v.kept and "fails its CRC" in v.reason for v in verdicts)
    assert all(v.rule is Rule.NO_INDEX for v in verdicts)


def test_an_unreadable_segment_keeps_its_files_with_a_reason(lake: Any) -> None:
    root, _keys = lake
    build_lake_index_sync(str(root), ["id"])
    (seg,) = _segments(root)
    seg.write_bytes(seg.read_bytes()[:-3] + b"xyz")
    verdicts = prune_sync(str(root), col("id") == -5, use_index="lake", row_groups=False)
    assert all(v.kept and v.rule is Rule.NO_INDEX for v in verdicts)
    assert "unreadable segments" in verdicts[0].reason and "magic" in verdicts[0].reason


def test_segments_then_compaction_answer_alike(lake: Any) -> None:
    root, keys = lake
    files = sorted(str(p) for p in root.rglob("*.parquet"))
    build_lake_index_sync(str(root), ["id"], files=files[:10])
    build_lake_index_sync(str(root), ["id"], files=files[10:])
    assert len(_segments(root)) == 2
    probes = [col("id") == int(keys[i][i]) for i in range(24)] + [col("id") == -9]
    before = [_kept(root, p) for p in probes]
    assert all(f"f{i:02}.parquet" in before[i] for i in range(24))
    done = compact_lake_index_sync(str(root))
    assert len(done.merged) == 2 and len(done.written) == 1
    assert len(_segments(root)) == 1
    assert [_kept(root, p) for p in probes] == before
    stats = SourceStats()
    _kept(root, probes[0], stats=stats)
    assert stats.requests == 2  # the directory, then one stripe


def test_size_classes_write_one_segment_each(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    root.mkdir()
    rng = np.random.default_rng(2)
    big, small = rng.integers(0, 10**15, 40_000), rng.integers(0, 10**15, 100)
    pq.write_table(pa.table({"id": big}), root / "big.parquet")
    pq.write_table(pa.table({"id": small}), root / "small.parquet")
    built = build_lake_index_sync(str(root), ["id"])
    assert len(built.segments) == 2
    blocks = []
    for seg in _segments(root):
        data = seg.read_bytes()
        offset, length, crc = decode_trailer(data, len(data), "s")
        blocks.append(decode_directory(data[offset : offset + length], crc, offset, "s"))
    assert sorted(s.columns[0].num_blocks for s in blocks) == [4, 2048]
    assert sorted(s.columns[0].ndv for s in blocks) == [100, 40_000]
    assert "small.parquet" in _kept(root, col("id") == int(small[3]))
    assert "big.parquet" in _kept(root, col("id") == int(big[3]))


def test_per_file_false_positive_rate_is_a_per_file_filters(tmp_path: Path) -> None:
    """Same bits as each file's own filter of that size: the same answers, in the expected band."""
    root = tmp_path / "lake"
    root.mkdir()
    rng = np.random.default_rng(9)
    values = [rng.integers(0, 2**62, 1000) for _ in range(30)]
    for i, v in enumerate(values):
        pq.write_table(pa.table({"id": v}), root / f"f{i:02}.parquet")
    build_lake_index_sync(str(root), ["id"], ndv=1000, fpp=0.05)
    probes = rng.integers(2**62, 2**63 - 1, 400).tolist()
    seen = 0
    for key in probes:
        kept = _kept(root, col("id") == key)
        seen += len(kept)
        from pybloom_async import hash_values

        h = hash_values([key], "INT64")
        for i, v in enumerate(values):
            own = SplitBlockBloomFilter.for_ndv(1000, 0.05)
            own.insert(v, "INT64")
            assert (f"f{i:02}.parquet" in kept) == bool(own.check_hashes(h)[0])
    expected = SplitBlockBloomFilter.for_ndv(1000, 0.05)
    expected.insert(values[0], "INT64")
    rate = seen / (400 * 30)
    assert 0.5 * expected.estimated_fpp(1000) <= rate <= 1.5 * expected.estimated_fpp(1000)


def test_use_index_none_is_prune_unchanged_and_bad_arguments_are_errors(lake: Any) -> None:
    root, keys = lake
    where = col("id") == int(keys[2][5])
    assert prune_sync(str(root), where) == prune_in_files_sync(str(root), where)
    with pytest.raises(InvalidArgumentError, match="use_index"):
        prune_sync(str(root), where, use_index="lakes")
    with pytest.raises(InvalidArgumentError, match="needs an index"):
        prune_sync(str(root), where, row_groups=False, use_index="none")
    with pytest.raises(InvalidArgumentError, match="needs an index"):
        prune_sync([str(root)], where, row_groups=False)
    with pytest.raises(InvalidArgumentError, match="root"):
        prune_sync([str(root)], where, use_index="lake")
    build_lake_index_sync(str(root), ["id"])
    with pytest.raises(PredicateError):
        prune_sync(str(root), "id = 'not a number'", use_index="lake")


def test_no_index_at_all_keeps_every_file(lake: Any) -> None:
    """By default a lake without an index keeps every file; a lake index forced (``"lake"``)
    and missing is an error in one line, not a read of every footer."""
    root, _keys = lake
    verdicts = prune_sync(str(root), col("id") == 1, row_groups=False)
    assert len(verdicts) == 24 and all(v.kept and v.rule is Rule.NO_INDEX for v in verdicts)
    stats = SourceStats()
    with pytest.raises(InvalidArgumentError, match="no lake index under it") as raised:
        prune_sync(str(root), col("id") == 1, use_index="lake", stats=stats)
    assert "\n" not in str(raised.value) and stats.requests == 0


def test_every_physical_type(pyarrow_files: Any, tmp_path: Path) -> None:
    root = tmp_path / "lake"
    shutil.copytree(pyarrow_files.root, root)
    table = pq.read_table(pyarrow_files.files[0])
    columns = [
        c for c in table.column_names
        if c not in ("c_float16", "c_bool")  # no Python half float; BOOLEAN: below
    ]  # fmt: skip
    with pytest.raises(PredicateError, match="BOOLEAN"):
        build_lake_index_sync(str(root), ["c_bool"])
    built = build_lake_index_sync(str(root), columns)
    assert not built.errors, built.errors
    name = os.path.basename(pyarrow_files.files[0])
    for c in columns:
        for row in (1, 17, 2_345):
            value = table[c][row].as_py()
            if value is None:
                continue
            assert name in _kept(root, col(c) == value), (c, value)


def test_lookup_reads_only_the_footers_of_the_files_the_lake_index_rules_out(lake: Any) -> None:
    """Their footers count for the result's schema, with the columns given or not (one read
    each, nothing more): the index spares their filters and their rows."""
    from pybloom_async import lookup_sync

    root, keys = lake
    key = int(keys[7][11])
    columns = ["id"]
    before = SourceStats()
    rows_before = lookup_sync(str(root), col("id") == key, columns, stats=before)
    build_lake_index_sync(str(root), ["id"])
    after = SourceStats()
    rows_after = lookup_sync(str(root), col("id") == key, columns, stats=after)
    assert rows_after.to_pylist() == rows_before.to_pylist()
    assert rows_after.column("id").to_pylist() == [key]
    ruled_out = len(list(root.rglob("*.parquet"))) - 1
    assert after.requests <= 6 + ruled_out  # one footer read each
    default = SourceStats()
    assert lookup_sync(str(root), col("id") == key, stats=default).num_rows == 1
    assert default.requests == after.requests


def test_lookups_default_columns_are_every_files_with_the_index(tmp_path: Path) -> None:
    """Every file's columns, even those of the files the lake index rules out."""
    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int64())}), tmp_path / "a.parquet")
    b = pa.table({"id": pa.array([7], pa.int64()), "extra": ["x"]})
    pq.write_table(b, tmp_path / "b.parquet")
    without = lookup_sync(str(tmp_path), "id = 7")
    build_lake_index_sync(str(tmp_path), ["id"])
    assert [v.kept for v in prune_sync(str(tmp_path), "id = 7", use_index="lake")] == [
        False,
        True,
    ]
    stats = SourceStats()
    got = lookup_sync(str(tmp_path), "id = 7", stats=stats)
    assert got.equals(without) and got.column_names == ["id", "extra"]
    assert lookup_sync(str(tmp_path), "id = 99").schema == without.schema  # every file ruled out
    # With the columns given too: the types of the files it rules out count.
    given = SourceStats()
    lookup_sync(str(tmp_path), "id = 7", columns=["id", "extra"], stats=given)
    assert given.requests == stats.requests
    late = pa.table({"id": pa.array([1], pa.int64()), "late": [1.5]})
    pq.write_table(late, tmp_path / "c.parquet")  # not in the index: read as the index says
    got = lookup_sync(str(tmp_path), "id = 1")
    assert got.column_names == ["id", "extra", "late"]
    assert got.to_pylist() == [
        {"id": 1, "extra": None, "late": None},
        {"id": 1, "extra": None, "late": 1.5},
    ]


def test_a_column_only_files_the_index_rules_out_have_gives_no_row(tmp_path: Path) -> None:
    """Not 'no file read has this column': the same answer as without the index."""
    a = pa.table({"id": pa.array([1, 2], pa.int64()), "x": pa.array([10, 20], pa.int64())})
    pq.write_table(a, tmp_path / "a.parquet")
    pq.write_table(pa.table({"id": pa.array([3], pa.int64())}), tmp_path / "b.parquet")
    cases = [("x = 99", None), ("id = 3", ["x"]), ("id = 3 OR x = 99", ["id", "x"])]
    before = [lookup_sync(str(tmp_path), where, columns=columns) for where, columns in cases]
    build_lake_index_sync(str(tmp_path), ["x", "id"])
    after = [lookup_sync(str(tmp_path), where, columns=columns) for where, columns in cases]
    assert [t.num_rows for t in after] == [0, 1, 1]
    assert all(x.equals(y) for x, y in zip(before, after, strict=True))
    with pytest.raises(PredicateError, match="no file read has this column"):
        lookup_sync(str(tmp_path), "xx = 99")  # a column no file has is still a mistake
    with pytest.raises(PredicateError, match="no file read has the column"):
        lookup_sync(str(tmp_path), "id = 3", columns=["xx"])


def test_build_from_filters_reads_footers_and_filters_only(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    root.mkdir()
    rng = np.random.default_rng(12)
    rows = 50_000
    for i in range(3):
        table = {"id": rng.integers(0, 2**62, rows)} | {
            f"p{j}": rng.integers(0, 2**62, rows) for j in range(8)
        }
        pq.write_table(
            pa.table(table), root / f"f{i}.parquet",
            bloom_filter_options={"id": {"ndv": rows, "fpp": 0.01}},
        )  # fmt: skip
    total = sum(p.stat().st_size for p in root.glob("*.parquet"))
    stats = SourceStats()
    built = build_lake_index_sync(str(root), ["id"], mode="filters", stats=stats)
    assert len(built.folded) == 3
    # Each file: a 16 KiB footer read and its 64 KiB filter, against 3.6 MB of data.
    assert stats.bytes_read < 0.025 * total


def test_names_relative_to_the_root() -> None:
    from pybloom_async.lake.segments import relative_name, relative_names

    paths = [
        "/r/lake/a.parquet",
        "/r/lake/x/../b.parquet",
        "/r/other/c.parquet",
        "/r/lake/d/e.parquet",
    ]
    assert relative_names("/r/lake/", paths) == [relative_name("/r/lake", p) for p in paths]
    assert relative_names("/r/lake", paths) == ["a.parquet", "b.parquet", None, "d/e.parquet"]
    urls = ["s3://b/lake/a.parquet", "s3://b/lakes/a.parquet"]
    assert relative_names("s3://b/lake/", urls) == ["a.parquet", None]


def test_a_table_file_list_replaces_the_listing(lake: Any) -> None:
    root, keys = lake
    build_lake_index_sync(str(root), ["id"])
    chosen = [str(root / "f01.parquet"), str(root / "part=1" / "f03.parquet")]
    stats = SourceStats()
    verdicts = prune_sync(
        str(root), col("id") == int(keys[3][4]), use_index="lake", row_groups=False,
        files=chosen, stats=stats,
    )  # fmt: skip
    assert [v.file for v in verdicts] == chosen
    assert [v.kept for v in verdicts] == [False, True]


def test_files_without_a_column_are_kept_for_it_and_pruned_by_the_others(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    root.mkdir()
    rng = np.random.default_rng(13)
    ids = [rng.integers(0, 10**15, 300) for _ in range(4)]
    for i, v in enumerate(ids):
        table = {"id": v} | ({"s": [f"k{x}" for x in v.tolist()]} if i < 2 else {})
        pq.write_table(pa.table(table), root / f"f{i}.parquet")
    build_lake_index_sync(str(root), ["id", "s"], size_classes=False)
    verdicts = prune_sync(str(root), "s = 'nope'", use_index="lake", row_groups=False)
    rules = {os.path.basename(v.file): v.rule for v in verdicts}
    assert rules == {
        "f0.parquet": Rule.LAKE_INDEX, "f1.parquet": Rule.LAKE_INDEX,
        "f2.parquet": Rule.NO_INDEX, "f3.parquet": Rule.NO_INDEX,
    }  # fmt: skip
    kept = _kept(root, f"id = {int(ids[3][5])} AND s = 'nope'")
    assert "f3.parquet" in kept and not kept & {"f0.parquet", "f1.parquet"}
    assert "f0.parquet" in _kept(root, (col("id") == int(ids[0][1])) | (col("s") == "zz"))


def test_lookup_reads_every_file_when_the_index_folder_cannot_be_listed(lake: Any) -> None:
    from pybloom_async import lookup_sync

    root, keys = lake
    (root / "_bloom_index").mkdir()
    (root / LAKE_DIR).write_bytes(b"not a folder")
    key = int(keys[2][3])
    assert lookup_sync(str(root), col("id") == key).column("id").to_pylist() == [key]


def test_an_index_folder_that_cannot_be_listed_keeps_every_file(lake: Any) -> None:
    root, _keys = lake
    (root / "_bloom_index").mkdir()
    (root / LAKE_DIR).write_bytes(b"not a folder")
    verdicts = prune_sync(str(root), col("id") == 1, row_groups=False)
    assert len(verdicts) == 24 and all(v.kept and v.rule is Rule.NO_INDEX for v in verdicts)
    # Forced, the index must be there: its folder's listing error is the answer.
    with pytest.raises(PyBloomError, match="listing the lake index"):
        prune_sync(str(root), col("id") == 1, use_index="lake")


@pytest.mark.parametrize("row_groups", [True, False])
def test_a_literal_the_index_types_refuse_is_an_error_only_for_files_still_as_indexed(
    tmp_path: Path, row_groups: bool
) -> None:
    """A literal not of a column's type as a segment has it (a zoned timestamp against an
    INT96 column) is the error of the files the segment describes: raised while one is as
    indexed, not once they are removed (an empty lake answers nothing) or replaced by files
    whose own type takes it (their footers decide)."""
    root = tmp_path / "lake"
    root.mkdir()
    ts = pa.array([1_700_000_000_000_000_000], pa.int64()).cast(pa.timestamp("ns", tz="UTC"))
    table = pa.table({"id": pa.array([1], pa.int64()), "ts": ts})
    pq.write_table(table, root / "a.parquet", use_deprecated_int96_timestamps=True)
    build_lake_index_sync(str(root), ["ts", "id"])
    where = "ts >= '2029-03-03T05:56:44-05:30'"
    with pytest.raises(PredicateError, match="UTC flag"):
        prune_sync(str(root), where, use_index="lake", row_groups=row_groups)
    pq.write_table(table, root / "a.parquet")  # INT64 with a UTC flag: the zone has a place
    got = prune_sync(str(root), where, use_index="lake", row_groups=row_groups)
    assert len(got) == 1
    if row_groups:  # its own statistics: its one value lies before the bound
        assert not got[0].kept
    else:
        assert got[0].kept and got[0].rule is Rule.STALE_INDEX
    os.unlink(root / "a.parquet")
    assert prune_sync(str(root), where, use_index="lake", row_groups=row_groups) == []
    assert lookup_sync(str(root), where, use_index="lake").num_rows == 0
