"""A lake index that belongs to a table: a Puffin statistics file registered in the Iceberg
snapshot (found with no listing), a versioned index under the Delta table's root."""

from __future__ import annotations

import json
import shutil
import warnings
import zlib
from pathlib import Path
from typing import Any

import pytest

import pybloom_async as pba
from pybloom_async.errors import PyBloomError
from pybloom_async.io.base import SourceStats
from pybloom_async.lake.format import TRAILER
from pybloom_async.lake.tables import BLOB_TYPE, STATS_PREFIX

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pyiceberg")
from pyiceberg.table.puffin import PuffinFile  # noqa: E402
from support.iceberg_catalog import sql_catalog  # noqa: E402
from support.iceberg_deletes import commit_delete_files, position_delete_file  # noqa: E402

FILES = 8
ROWS = 500  # per file: ids f*ROWS .. f*ROWS + ROWS - 1, shuffled, 2 row groups


def _chunk(f: int) -> Any:
    import random

    ids = list(range(f * ROWS, f * ROWS + ROWS))
    random.Random(f).shuffle(ids)  # every file spans its range: statistics cannot help
    return pa.table({
        "id": pa.array(ids, pa.int64()), "s": pa.array([f"s{i}" for i in ids], pa.string()),
    })  # fmt: skip


@pytest.fixture
def iceberg(tmp_path: Path) -> Any:
    """Files written by pyarrow with filters (in a folder of their own), added by pyiceberg.

    Every file's ids interleave with the others' (``id % FILES`` is not the file), so the
    manifests' bounds keep every file and the index decides."""
    catalog = sql_catalog(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    uris = []
    for f in range(FILES):
        table = _chunk(f)
        spread = pa.table({
            "id": pa.array([i * FILES + f for i in range(ROWS)], pa.int64()),
            "s": table.column("s"),
        })  # fmt: skip
        path = data / f"part-{f}.parquet"
        pq.write_table(spread, path, row_group_size=ROWS // 2,
                       bloom_filter_options={"id": True})  # fmt: skip
        uris.append(path.as_uri())
    tbl = catalog.create_table("ns.t", schema=pq.read_schema(data / "part-0.parquet"))
    tbl.add_files(uris)
    return catalog.load_table("ns.t")


def _stats_file(tbl: Any) -> Any:
    (found,) = [s for s in tbl.metadata.statistics if STATS_PREFIX in s.statistics_path]
    return found


def test_iceberg_index_is_a_puffin_file_registered_in_the_snapshot(
    iceberg: Any, tmp_path: Path
) -> None:
    built = pba.build_lake_index_sync(iceberg, ["id"])
    assert built.files == FILES and len(built.segments) == 1
    stats = _stats_file(iceberg)
    assert stats.snapshot_id == iceberg.current_snapshot().snapshot_id
    assert stats.statistics_path == built.segments[0]
    assert "/metadata/" in stats.statistics_path
    assert stats.blob_metadata == []  # pyiceberg 0.12 cannot load a type it does not know
    # The table still loads, in pyiceberg and in a fresh catalog.
    again = sql_catalog(tmp_path).load_table("ns.t")
    assert _stats_file(again).statistics_path == stats.statistics_path
    # A Puffin file by the spec: pyiceberg's own reader lists our blob and its properties.
    raw = Path(stats.statistics_path.removeprefix("file://")).read_bytes()
    assert len(raw) == stats.file_size_in_bytes
    puffin = PuffinFile(raw)
    (blob,) = puffin.footer.blobs
    assert blob.type == BLOB_TYPE and blob.snapshot_id == stats.snapshot_id
    assert blob.properties["columns"] == "id" and blob.properties["files"] == str(FILES)
    assert blob.fields == [iceberg.schema().find_field("id").field_id]
    assert len(raw) - stats.file_footer_size_in_bytes == blob.offset + blob.length
    # The blob is a lake index segment; its directory records the snapshot it covers.
    segment = puffin.get_blob_payload(blob)
    offset, length, _, _, _, _ = TRAILER.unpack(segment[-TRAILER.size :])
    directory = json.loads(zlib.decompress(segment[offset : offset + length]))
    assert directory["table"] == {"format": "iceberg", "snapshot-id": stats.snapshot_id}
    assert [f[0] for f in directory["files"]] == sorted(
        t.file.file_path for t in iceberg.scan().plan_files()
    )


def test_iceberg_index_is_found_with_no_listing(
    iceberg: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pba.build_lake_index_sync(iceberg, ["id"])

    def no_listing(*args: Any) -> Any:
        raise AssertionError("the index of an Iceberg table is found with no listing")

    import pybloom_async.lake.prune
    import pybloom_async.lake.segments

    for module in (pybloom_async.lake.prune, pybloom_async.lake.segments):
        monkeypatch.setattr(module, "listed_segments", no_listing)
    monkeypatch.setattr(pybloom_async.lake.segments, "list_segments", no_listing)
    key = 3 * FILES + 5  # in part-5 only
    stats = SourceStats()
    verdicts = pba.prune_sync(iceberg, f"id = {key}", use_index="lake", row_groups=False,
                              stats=stats)  # fmt: skip
    kept = [v.file for v in verdicts if v.kept]
    assert len(verdicts) == FILES, verdicts
    assert len(kept) <= 2 and any("part-5" in f for f in kept), verdicts[0].reason
    assert {v.rule for v in verdicts if not v.kept} == {pba.Rule.LAKE_INDEX}
    # One read of the Puffin file's end (footer and directory), one of the stripe.
    assert stats.requests == 2
    stats = SourceStats()
    pba.prune_sync(iceberg, f"id = {key}", use_index="lake", stats=stats)
    assert stats.requests == 1 + len(kept) + 1  # and each kept file's footer and filter


def test_lookup_on_an_iceberg_table_uses_its_index(iceberg: Any) -> None:
    key = 3 * FILES + 5
    before, after = SourceStats(), SourceStats()
    want = pba.lookup_sync(iceberg, f"id IN ({key}, 100000)", stats=before)
    pba.build_lake_index_sync(iceberg, ["id"])
    got = pba.lookup_sync(iceberg, f"id IN ({key}, 100000)", stats=after)
    assert got.to_pylist() == want.to_pylist() and got.column("id").to_pylist() == [key]
    assert got.to_pylist() == iceberg.scan(row_filter=f"id = {key}").to_arrow().to_pylist()
    # Without the index every file's footer is read; with it: the Puffin file's end, the
    # stripes, then the one file kept: its footer and its rows.
    assert before.requests >= FILES
    assert after.requests <= 2 + 2 + 2


def test_files_after_the_indexed_snapshot_go_through_their_filters(
    iceberg: Any, tmp_path: Path
) -> None:
    pba.build_lake_index_sync(iceberg, ["id"])
    indexed = iceberg.current_snapshot().snapshot_id
    iceberg.append(pa.table({"id": pa.array([7, 10**6], pa.int64()), "s": ["new7", "new"]}))
    iceberg = iceberg.refresh()
    assert iceberg.current_snapshot().snapshot_id != indexed
    got = pba.lookup_sync(iceberg, "id IN (7, 1000000)")
    expected = iceberg.scan(row_filter="id IN (7, 1000000)").to_arrow()
    assert sorted(got.column("s").to_pylist()) == sorted(expected.column("s").to_pylist())
    assert len(got) == 3  # id 7 of part-7, and both new rows
    verdicts = pba.prune_sync(iceberg, "id = 1000000", use_index="lake", row_groups=False)
    new = [v for v in verdicts if v.rule is pba.Rule.NO_INDEX]
    assert len(new) == 1 and new[0].kept and "not in the lake index" in new[0].reason
    # A file the table no longer holds is never reported, though the index names it.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        iceberg.delete("id = 13")  # rewrites part-5 (13 = 1 * FILES + 5)
    iceberg = iceberg.refresh()
    live = {t.file.file_path for t in iceberg.scan().plan_files()}
    verdicts = pba.prune_sync(iceberg, "id IN (13, 21)", use_index="lake", row_groups=False)
    assert {v.file for v in verdicts} <= live
    assert pba.lookup_sync(iceberg, "id IN (13, 21)").column("id").to_pylist() == [21]


def test_a_snapshots_other_statistics_are_kept(iceberg: Any) -> None:
    from pyiceberg.table.statistics import BlobMetadata, StatisticsFile

    from pybloom_async.lake.puffin import PuffinBlob, encode_puffin

    snapshot = iceberg.current_snapshot()
    theirs = PuffinBlob("apache-datasketches-theta-v1", (1,), snapshot.snapshot_id,
                        snapshot.sequence_number, properties={"ndv": "4000"},
                        payload=b"sketch bytes")  # fmt: skip
    data, footer, _ = encode_puffin([theirs], {"created-by": "another engine"})
    path = iceberg.location_provider().new_metadata_location("theirs.stats")
    with iceberg.io.new_output(path).create() as out:
        out.write(data)
    listed = BlobMetadata.model_validate({
        "type": theirs.type, "snapshot-id": snapshot.snapshot_id,
        "sequence-number": snapshot.sequence_number, "fields": [1], "properties": {"ndv": "4000"},
    })  # fmt: skip
    with iceberg.update_statistics() as update:
        update.set_statistics(StatisticsFile.model_validate({
            "snapshot-id": snapshot.snapshot_id, "statistics-path": path,
            "file-size-in-bytes": len(data), "file-footer-size-in-bytes": footer,
            "blob-metadata": [listed],
        }))  # fmt: skip
    pba.build_lake_index_sync(iceberg, ["id"])
    ours = _stats_file(iceberg)
    assert [b.type for b in ours.blob_metadata] == ["apache-datasketches-theta-v1"]
    puffin = PuffinFile(Path(ours.statistics_path.removeprefix("file://")).read_bytes())
    assert [b.type for b in puffin.footer.blobs] == ["apache-datasketches-theta-v1", BLOB_TYPE]
    assert puffin.get_blob_payload(puffin.footer.blobs[0]) == b"sketch bytes"
    assert dict(puffin.footer.blobs[0].properties) == {"ndv": "4000"}
    # A second build replaces ours, keeping theirs once.
    pba.build_lake_index_sync(iceberg, ["id", "s"])
    again = _stats_file(iceberg)
    puffin = PuffinFile(Path(again.statistics_path.removeprefix("file://")).read_bytes())
    assert [b.type for b in puffin.footer.blobs] == ["apache-datasketches-theta-v1", BLOB_TYPE]
    assert len(iceberg.metadata.statistics) == 1


def test_a_damaged_index_keeps_every_file(iceberg: Any) -> None:
    pba.build_lake_index_sync(iceberg, ["id"])
    path = Path(_stats_file(iceberg).statistics_path.removeprefix("file://"))
    data = bytearray(path.read_bytes())
    data[-100] ^= 0xFF  # inside the footer's JSON
    path.write_bytes(bytes(data))
    verdicts = pba.prune_sync(iceberg, "id = 3", use_index="lake", row_groups=False)
    assert all(v.kept and v.rule is pba.Rule.NO_INDEX for v in verdicts)
    assert "unreadable" in verdicts[0].reason
    assert pba.lookup_sync(iceberg, "id = 3").column("id").to_pylist() == [3]
    with pytest.raises(PyBloomError):
        pba.prune_sync(iceberg, "id = 3", use_index="lake", on_error="raise")
    # Only a required index fails a run that raises on its own errors: by default (auto)
    # the index is an aid, and the files' own filters answer.
    assert pba.lookup_sync(iceberg, "id = 3", on_error="raise").column("id").to_pylist() == [3]
    with pytest.raises(PyBloomError):
        pba.lookup_sync(iceberg, "id = 3", use_index="lake", on_error="raise")


def test_index_and_deletes_together(iceberg: Any, tmp_path: Path) -> None:
    pba.build_lake_index_sync(iceberg, ["id"])
    target = next(t.file.file_path for t in iceberg.scan().plan_files() if "part-5" in
                  t.file.file_path)  # fmt: skip
    iceberg = commit_delete_files(iceberg, [position_delete_file(tmp_path / "d.parquet",
                                                                 [(target, 3)])])  # fmt: skip
    # Row 3 of part-5 holds id 3 * FILES + 5; the delete's snapshot is a child of the
    # indexed one, whose index still answers.
    got = pba.lookup_sync(iceberg, f"id IN ({3 * FILES + 5}, {4 * FILES + 5})")
    assert got.column("id").to_pylist() == [4 * FILES + 5]
    assert (
        got.to_pylist()
        == iceberg.scan(row_filter=f"id IN ({3 * FILES + 5}, {4 * FILES + 5})")
        .to_arrow()
        .to_pylist()
    )


# ---- Delta ----------------------------------------------------------------------------


def _delta(path: Path) -> Any:
    bloom = deltalake.BloomFilterProperties(set_bloom_filter_enabled=True, fpp=0.01, ndv=ROWS)
    props = deltalake.WriterProperties(
        column_properties={"id": deltalake.ColumnProperties(bloom_filter_properties=bloom)}
    )
    for f in range(FILES):
        spread = pa.table({"id": pa.array([i * FILES + f for i in range(ROWS)], pa.int64())})
        deltalake.write_deltalake(path, spread, mode="append", writer_properties=props)
    return deltalake.DeltaTable(path)


def test_delta_index_records_its_version_and_newer_files_use_their_filters(
    tmp_path: Path,
) -> None:
    dt = _delta(tmp_path / "t")
    pba.build_lake_index_sync(dt, ["id"])
    (segment,) = (tmp_path / "t" / "_bloom_index" / "_lake.v1").iterdir()
    raw = segment.read_bytes()
    offset, length, _, _, _, _ = TRAILER.unpack(raw[-TRAILER.size :])
    directory = json.loads(zlib.decompress(raw[offset : offset + length]))
    assert directory["table"] == {"format": "delta", "version": dt.version()}
    key = 3 * FILES + 5
    verdicts = pba.prune_sync(dt, f"id = {key}", use_index="lake", row_groups=False)
    assert sum(v.kept for v in verdicts) <= 2
    # A newer version: an appended file (in-file filters), a file rewritten by a delete
    # (the old one is never reported).
    deltalake.write_deltalake(tmp_path / "t", pa.table({"id": pa.array([key], pa.int64())}),
                              mode="append")  # fmt: skip
    dt = deltalake.DeltaTable(tmp_path / "t")
    dt.delete(f"id = {4 * FILES + 5}")
    dt = deltalake.DeltaTable(tmp_path / "t")
    live = {str(Path(u)) for u in dt.file_uris()}
    verdicts = pba.prune_sync(dt, f"id = {key}", use_index="lake", row_groups=False)
    assert {str(Path(v.file)) for v in verdicts} <= live
    assert {v.rule for v in verdicts if v.kept} >= {pba.Rule.NO_INDEX}
    got = pba.lookup_sync(dt, f"id IN ({key}, {4 * FILES + 5})")
    assert got.column("id").to_pylist() == [key, key]


def test_a_copied_table_keeps_its_index(tmp_path: Path) -> None:
    """Table files are never rewritten under their name: an index entry is for a file of
    the same name and size, whatever its inode (a copy of the table uses the index)."""
    _delta(tmp_path / "t")
    pba.build_lake_index_sync(deltalake.DeltaTable(tmp_path / "t"), ["id"])
    shutil.copytree(tmp_path / "t", tmp_path / "copy")
    dt = deltalake.DeltaTable(tmp_path / "copy")
    verdicts = pba.prune_sync(dt, "id = 13", use_index="lake", row_groups=False)
    assert pba.Rule.LAKE_INDEX in {v.rule for v in verdicts}
    assert pba.Rule.STALE_INDEX not in {v.rule for v in verdicts}
    stats = SourceStats()
    assert pba.lookup_sync(dt, "id = 13", stats=stats).column("id").to_pylist() == [13]
    assert stats.requests <= 1 + 1 + 2 + 2  # directory, stripe, and the kept files


@pytest.fixture
def footer_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths whose footer a reader reads from the file."""
    from pybloom_async.read.reader import BloomReader

    seen: list[str] = []
    original = BloomReader._read_footer

    async def counted(self: BloomReader, source: Any) -> Any:
        seen.append(source.path)
        return await original(self, source)

    monkeypatch.setattr(BloomReader, "_read_footer", counted)
    return seen


def test_table_lookups_take_the_kept_files_footers_from_the_digest(
    iceberg: Any, tmp_path: Path, footer_reads: list[str]
) -> None:
    """Iceberg (its Puffin file) and Delta (its segments): no footer of an indexed file is
    read, a file added after the index is read with its own."""
    key = 3 * FILES + 5
    want = pba.lookup_sync(iceberg, f"id IN ({key}, 100000)")
    pba.build_lake_index_sync(iceberg, ["id"])
    footer_reads.clear()
    assert pba.lookup_sync(iceberg, f"id IN ({key}, 100000)").equals(want)
    assert footer_reads == []
    dt = _delta(tmp_path / "t")
    want = pba.lookup_sync(dt, f"id = {key}")
    pba.build_lake_index_sync(dt, ["id"])
    footer_reads.clear()
    assert pba.lookup_sync(dt, f"id = {key}").equals(want) and want.num_rows == 1
    assert footer_reads == []
    deltalake.write_deltalake(tmp_path / "t", pa.table({"id": pa.array([key], pa.int64())}),
                              mode="append")  # fmt: skip
    dt = deltalake.DeltaTable(tmp_path / "t")
    footer_reads.clear()
    assert pba.lookup_sync(dt, f"id = {key}").column("id").to_pylist() == [key, key]
    assert len(footer_reads) == 1  # the file appended after the index


def test_a_table_of_no_live_file_needs_no_index(tmp_path: Path, iceberg: Any) -> None:
    """Every row deleted: building the index writes nothing (there is no file), and a run
    that asks for the index answers with nothing to prune instead of "no lake index"."""
    dt = _delta(tmp_path / "t")
    dt.delete()
    dt = deltalake.DeltaTable(tmp_path / "t")
    iceberg.delete("id >= 0")
    for table in (dt, iceberg):
        built = pba.build_lake_index_sync(table, ["id"])
        assert (built.files, built.segments) == (0, [])
        assert pba.prune_sync(table, "id = 5", use_index="lake") == []
        assert pba.lookup_sync(table, "id = 5", use_index="lake").num_rows == 0
