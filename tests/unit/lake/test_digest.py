"""The footer digest: lookups read no footer of the files a fresh lake index covers."""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pybloom_async import build_lake_index_sync, compact_lake_index_sync, lookup_sync
from pybloom_async.errors import SchemaMismatchError
from pybloom_async.lake.format import LAKE_DIR, TRAILER, decode_directory, decode_trailer
from pybloom_async.read.reader import BloomReader
from pybloom_async.rows.api import LookupPlan, plan_lookup

ROWS = 300


def _write(path: Path, ids: np.ndarray[Any, Any], row_group_size: int = ROWS) -> None:
    table = pa.table({"id": pa.array(ids, pa.int64()), "s": [f"k{v}" for v in ids.tolist()]})
    pq.write_table(
        table, path, row_group_size=row_group_size, bloom_filter_options={"id": {"ndv": ROWS}}
    )


@pytest.fixture
def lake(tmp_path: Path) -> tuple[Path, list[np.ndarray[Any, Any]]]:
    rng = np.random.default_rng(5)
    root = tmp_path / "lake"
    (root / "part=1").mkdir(parents=True)
    keys = []
    for i in range(12):
        ids = rng.integers(0, 10**15, ROWS)
        _write(root / f"{'part=1/' if i % 3 == 0 else ''}f{i:02}.parquet", ids)
        keys.append(ids)
    return root, keys


@pytest.fixture
def footer_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The paths whose footer a reader reads from the file."""
    seen: list[str] = []
    original = BloomReader._read_footer

    async def counted(self: BloomReader, source: Any) -> Any:
        seen.append(source.path)
        return await original(self, source)

    monkeypatch.setattr(BloomReader, "_read_footer", counted)
    yield seen


def plan_lookup_sync(root: str, where: str) -> LookupPlan:
    async def plan() -> LookupPlan:
        return await plan_lookup(root, where)

    return anyio.run(plan)


def _segment(root: Path) -> Path:
    (found,) = sorted((root / LAKE_DIR).glob("*.pbl"))
    return found


def _decoded(data: bytes) -> Any:
    offset, length, crc = decode_trailer(data, len(data), "seg")
    return decode_directory(data[offset : offset + length], crc, offset, "seg")


def as_version_1(data: bytes) -> bytes:
    """The segment as format version 1 wrote it: no digest section, no ``digest`` key."""
    offset, length, _ = decode_trailer(data, len(data), "seg")
    doc = json.loads(zlib.decompress(data[offset : offset + length]))
    digest = _decoded(data).digest
    spans = [] if digest is None else [*filter(None, digest.files), *digest.schemas]
    start = min((a for a, _ in spans), default=offset)
    doc.pop("digest", None)
    doc["version"] = 1
    packed = zlib.compress(json.dumps(doc).encode())
    magic = data[-8:]
    return data[:start] + packed + TRAILER.pack(start, len(packed), zlib.crc32(packed), 1, 0, magic)


def test_a_lookup_reads_no_footer_of_the_files_the_index_covers(
    lake: Any, footer_reads: list[str]
) -> None:
    root, keys = lake
    key = int(keys[4][7])
    without = lookup_sync(str(root), f"id = {key}")
    absent = lookup_sync(str(root), "id = 5")
    built = build_lake_index_sync(str(root), ["id"])
    assert built.files == 12
    footer_reads.clear()
    got = lookup_sync(str(root), f"id = {key}")
    assert got.equals(without) and got.num_rows == 1
    assert lookup_sync(str(root), "id = 5").equals(absent)
    assert lookup_sync(str(root), f"id IN ({key}, 5)", columns=["s"]).column("s").to_pylist() == [
        f"k{key}"
    ]
    assert footer_reads == []
    plan = plan_lookup_sync(str(root), f"id = {key}")
    assert [len(p.kept) for p in plan.files] == [1]
    assert footer_reads == []


def test_the_answers_columns_come_from_the_digests_schemas(
    tmp_path: Path, footer_reads: list[str]
) -> None:
    """Files of several schemas: promotions and conflicts as without the index."""
    ints = pa.array([1, 2], pa.int64())
    a = {"id": ints, "x": pa.array([1, 2], pa.int32())}
    pq.write_table(pa.table(a), tmp_path / "a.parquet")
    b = {"id": pa.array([3], pa.int64()), "x": pa.array([5], pa.int64()), "y": ["b"]}
    pq.write_table(pa.table(b), tmp_path / "b.parquet")
    pq.write_table(pa.table({"z": [1.5], "id": pa.array([4], pa.int64())}), tmp_path / "c.parquet")
    pq.write_table(pa.table({"id": pa.array([9], pa.int64()), "y": ["d"]}), tmp_path / "d.parquet")
    cases = [("id = 1", None), ("id = 4", None), ("id = 99", None), ("id = 3", ["z", "x"])]
    before = [lookup_sync(str(tmp_path), w, columns=c) for w, c in cases]
    build_lake_index_sync(str(tmp_path), ["id"])
    footer_reads.clear()
    after = [lookup_sync(str(tmp_path), w, columns=c) for w, c in cases]
    assert footer_reads == []
    for x, y in zip(before, after, strict=True):
        assert x.schema == y.schema and x.equals(y)
    assert after[0].column_names == ["id", "x", "y", "z"]
    # A type that does not unify, in a file the index rules out: refused as without it.
    e = {"id": pa.array([7], pa.int64()), "x": ["text"]}
    pq.write_table(pa.table(e), tmp_path / "e.parquet")
    with pytest.raises(SchemaMismatchError) as without:
        lookup_sync(str(tmp_path), "id = 1")
    build_lake_index_sync(str(tmp_path), ["id"], files=[str(tmp_path / "e.parquet")])
    footer_reads.clear()
    with pytest.raises(SchemaMismatchError) as with_index:
        lookup_sync(str(tmp_path), "id = 1")
    assert str(with_index.value) == str(without.value)
    assert footer_reads == []


def test_a_segment_of_format_version_1_is_read_with_the_footers(
    lake: Any, footer_reads: list[str]
) -> None:
    root, keys = lake
    key = int(keys[9][0])
    without = lookup_sync(str(root), f"id = {key}")
    build_lake_index_sync(str(root), ["id"])
    segment = _segment(root)
    segment.write_bytes(as_version_1(segment.read_bytes()))
    assert _decoded(segment.read_bytes()).digest is None
    footer_reads.clear()
    assert lookup_sync(str(root), f"id = {key}").equals(without)
    assert len(footer_reads) == 12  # the file kept, and the ruled-out ones for the schema


def test_a_stale_file_is_read_with_its_own_footer(lake: Any, footer_reads: list[str]) -> None:
    root, _ = lake
    build_lake_index_sync(str(root), ["id"])
    replaced = root / "f05.parquet"
    _write(replaced, np.arange(100, 100 + ROWS))  # after the index: stale
    footer_reads.clear()
    got = lookup_sync(str(root), "id = 150")
    assert got.to_pylist() == [{"id": 150, "s": "k150", "part": None}]
    assert [Path(p).name for p in footer_reads] == ["f05.parquet"]


def test_a_damaged_record_is_not_used(lake: Any, footer_reads: list[str]) -> None:
    """A file's record or a schema's record that fails its CRC: those footers are read."""
    root, keys = lake
    key = int(keys[1][2])
    without = lookup_sync(str(root), f"id = {key}")
    build_lake_index_sync(str(root), ["id"])
    segment = _segment(root)
    data = bytearray(segment.read_bytes())
    seg = _decoded(bytes(data))
    names = [f.name for f in seg.files]
    span = seg.digest.files[names.index("f01.parquet")]
    data[span[0] + 3] ^= 0x40
    segment.write_bytes(bytes(data))
    footer_reads.clear()
    assert lookup_sync(str(root), f"id = {key}").equals(without)
    assert [Path(p).name for p in footer_reads] == ["f01.parquet"]
    (schema,) = seg.digest.schemas
    data[span[0] + 3] ^= 0x40
    data[schema[0] + 3] ^= 0x40
    segment.write_bytes(bytes(data))
    footer_reads.clear()
    assert lookup_sync(str(root), f"id = {key}").equals(without)
    assert len(footer_reads) == 11  # the ruled-out files, for their schema


def test_compaction_keeps_the_digest(lake: Any, footer_reads: list[str]) -> None:
    root, keys = lake
    paths = sorted(str(p) for p in root.rglob("*.parquet"))
    build_lake_index_sync(str(root), ["id"], files=paths[:5], size_classes=False)
    build_lake_index_sync(str(root), ["id"], files=paths[5:], size_classes=False)
    build_lake_index_sync(str(root), ["id"], files=paths[:2], size_classes=False)
    done = compact_lake_index_sync(str(root))
    assert len(done.merged) == 3 and len(done.written) == 1
    seg = _decoded(_segment(root).read_bytes())
    assert seg.digest is not None and len(seg.digest.schemas) == 3  # one per segment merged
    footer_reads.clear()
    for i in (0, 6, 11):
        key = int(keys[i][3])
        assert lookup_sync(str(root), f"id = {key}").column("id").to_pylist() == [key]
    assert footer_reads == []


def test_files_of_several_row_groups_are_pruned_by_their_filters(
    tmp_path: Path, footer_reads: list[str]
) -> None:
    ids = [np.arange(i * 4000, (i + 1) * 4000) for i in range(3)]
    for i, values in enumerate(ids):
        _write(tmp_path / f"g{i}.parquet", values, row_group_size=1000)
    build_lake_index_sync(str(tmp_path), ["id"])
    footer_reads.clear()
    plan = plan_lookup_sync(str(tmp_path), "id = 5500")
    assert [(Path(p.path).name, p.kept) for p in plan.files] == [("g1.parquet", [1])]
    assert lookup_sync(str(tmp_path), "id = 5500").column("s").to_pylist() == ["k5500"]
    assert footer_reads == []


def test_duckdb_files(tmp_path: Path, footer_reads: list[str]) -> None:
    duckdb = pytest.importorskip("duckdb")
    con = duckdb.connect()
    for i in range(4):
        con.execute(
            f"COPY (SELECT range::BIGINT AS id, 'v' || range AS s, range % 7 AS m "
            f"FROM range({i * 1000}, {(i + 1) * 1000})) TO '{tmp_path / f'd{i}.parquet'}' "
            "(FORMAT parquet)"
        )
    cases = ["id = 2500", "id = 99999", "id IN (10, 3999)"]
    before = [lookup_sync(str(tmp_path), w) for w in cases]
    build_lake_index_sync(str(tmp_path), ["id"])
    footer_reads.clear()
    after = [lookup_sync(str(tmp_path), w) for w in cases]
    assert footer_reads == []
    for x, y in zip(before, after, strict=True):
        assert x.equals(y)
    assert [t.num_rows for t in after] == [1, 0, 2]


def test_a_warm_reader_keeps_the_parsed_index(
    lake: Any, footer_reads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its segments, their digests and decoded footers, checked by each segment's version;
    a listing kept for max_age: a segment written since is seen after it, one removed
    since costs its files their index, never a row."""
    from pybloom_async.lake import segments

    root, keys = lake
    reads: list[str] = []
    original = segments.read_segment

    async def counted(reader: Any, location: str) -> Any:
        reads.append(location)
        return await original(reader, location)

    monkeypatch.setattr(segments, "read_segment", counted)
    build_lake_index_sync(str(root), ["id"])
    reader = BloomReader()
    footer_reads.clear()
    for i in (2, 8, 2):
        key = int(keys[i][5])
        assert lookup_sync(str(root), f"id = {key}", reader=reader).column("id").to_pylist() == [
            key
        ]
    assert len(reads) == 1 and footer_reads == []
    # A file replaced and indexed again: a new segment, not seen while the listing is kept;
    # the file is stale in the old one, so read with its own footer.
    _write(root / "f02.parquet", np.arange(7, 7 + ROWS))
    build_lake_index_sync(str(root), ["id"], files=[str(root / "f02.parquet")])
    footer_reads.clear()
    assert lookup_sync(str(root), "id = 20", reader=reader).column("s").to_pylist() == ["k20"]
    assert [Path(p).name for p in footer_reads] == ["f02.parquet"]
    fresh = BloomReader(max_age=0)
    footer_reads.clear()
    assert lookup_sync(str(root), "id = 20", reader=fresh).column("s").to_pylist() == ["k20"]
    assert footer_reads == []
    # Compacted: the kept listing names segments removed since; their files are read as
    # files in no segment are.
    compact_lake_index_sync(str(root))
    key = int(keys[8][5])
    assert lookup_sync(str(root), f"id = {key}", reader=reader).column("id").to_pylist() == [key]
    assert lookup_sync(str(root), "id = 20", reader=fresh).column("s").to_pylist() == ["k20"]
