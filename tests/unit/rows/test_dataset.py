"""pruned_dataset on local files: fragments, schemas, unreadable files, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pybloom_async import (
    EventLoopError,
    InvalidFilterError,
    ParquetFormatError,
    PredicateError,
    Rule,
    SchemaMismatchError,
    SourceError,
    prune_sync,
    pruned_dataset,
    pruned_dataset_sync,
)
from pybloom_async.errors import InvalidArgumentError
from pybloom_async.io.base import FileInfo, SourceStats, location_text

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

GROUP = 100


def _write(path: Path, table: Any) -> Path:
    pq.write_table(
        table,
        path,
        row_group_size=GROUP,
        bloom_filter_options={n: True for n in table.column_names},
    )
    return path


def _ids(path: Path, ids: list[int], id_type: Any = None, **extra: Any) -> Path:
    # Row groups of interleaved ids: statistics alone prune nothing, the filters do.
    table = pa.table(
        {
            "id": pa.array(ids, id_type or pa.int64()),
            "name": pa.array([f"n{i}" for i in ids]),
            **extra,
        }
    )
    return _write(path, table)


def _interleaved(start: int, n: int = 400) -> list[int]:
    groups = n // GROUP
    return [start + (i % GROUP) * groups + i // GROUP for i in range(n)]


def _fragments(ds: Any) -> dict[str, list[int] | None]:
    out: dict[str, list[int] | None] = {}
    for fragment in ds.get_fragments():
        # The row groups given when the fragment was made (None: the whole file).
        out[Path(fragment.path).name] = (
            sorted(rg.id for rg in fragment.row_groups) if fragment.row_groups else None
        )
    return out


def test_only_kept_row_groups_of_kept_files(tmp_path: Path) -> None:
    a = _ids(tmp_path / "a.parquet", _interleaved(0))
    _ids(tmp_path / "b.parquet", _interleaved(1000))
    verdicts = prune_sync(str(tmp_path), "id = 7")
    kept = [v.row_group for v in verdicts if v.kept]
    ds = pruned_dataset_sync(str(tmp_path), "id = 7")
    assert _fragments(ds) == {"a.parquet": kept}  # b.parquet: every row group pruned
    assert len(kept) < 4
    assert ds.to_table(filter=pa.compute.field("id") == 7).to_pylist() == [{"id": 7, "name": "n7"}]
    assert ds.schema == pa.schema([("id", pa.int64()), ("name", pa.string())])
    assert Path(next(iter(ds.get_fragments())).path) == a.resolve()


def test_files_are_pruned_by_the_lookups_per_file_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pruned_dataset prunes a file through a lookup's per-file step (rows.api.file_rows),
    as strictly as the run says: no copy of the step."""
    import pybloom_async.rows.api as rows_api
    import pybloom_async.rows.dataset as dataset

    _ids(tmp_path / "a.parquet", _interleaved(0))
    assert dataset.file_rows is rows_api.file_rows
    step = rows_api.kept_row_groups
    strict: list[bool] = []

    async def spy(*args: Any, **kwargs: Any) -> Any:
        strict.append(args[2])
        return await step(*args, **kwargs)

    monkeypatch.setattr(rows_api, "kept_row_groups", spy)
    kept = [v.row_group for v in prune_sync(str(tmp_path), "id = 7") if v.kept]
    assert _fragments(pruned_dataset_sync(str(tmp_path), "id = 7")) == {"a.parquet": kept}
    pruned_dataset_sync(str(tmp_path), "id = 7", on_error="raise")
    # Unreadable filters keep every row group, or (on_error="raise", strict) raise.
    assert strict == [False, True]


def test_everything_pruned_gives_an_empty_dataset_with_the_schema(tmp_path: Path) -> None:
    _ids(tmp_path / "a.parquet", _interleaved(0))
    ds = pruned_dataset_sync(str(tmp_path), "id = 5000")
    assert list(ds.get_fragments()) == []
    table = ds.to_table()
    assert table.num_rows == 0
    assert table.schema == pa.schema([("id", pa.int64()), ("name", pa.string())])


def test_mixed_schemas_promote_and_fill_nulls(tmp_path: Path) -> None:
    _ids(tmp_path / "a.parquet", _interleaved(0), pa.int32())
    _ids(tmp_path / "b.parquet", _interleaved(1000), extra=pa.array([1.5] * 400))
    ds = pruned_dataset_sync(str(tmp_path), "id IN (3, 1003)")
    assert ds.schema == pa.schema(
        [("id", pa.int64()), ("name", pa.string()), ("extra", pa.float64())]
    )
    got = ds.to_table(filter=pa.compute.field("id").isin([3, 1003])).sort_by("id")
    assert got.to_pylist() == [
        {"id": 3, "name": "n3", "extra": None},
        {"id": 1003, "name": "n1003", "extra": 1.5},
    ]


def test_schemas_that_do_not_unify_name_both_files(tmp_path: Path) -> None:
    _ids(tmp_path / "a.parquet", _interleaved(0), extra=pa.array(["x"] * 400))
    _ids(tmp_path / "b.parquet", _interleaved(1000), extra=pa.array([1] * 400))
    with pytest.raises(SchemaMismatchError, match=r"'extra' is string in .*a\.parquet and int64"):
        pruned_dataset_sync(str(tmp_path), "id = 3")


def test_unreadable_file_stays_whole_or_raises_with_strict(tmp_path: Path) -> None:
    _ids(tmp_path / "a.parquet", _interleaved(0))
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    ds = pruned_dataset_sync(str(tmp_path), "id = 7")
    by_name = {Path(f.path).name: f for f in ds.get_fragments()}
    assert sorted(by_name) == ["a.parquet", "bad.parquet"]
    assert len(by_name["a.parquet"].row_groups) < 4
    # Kept whole: the engine reads it, and says why it cannot.
    with pytest.raises(pa.ArrowInvalid, match=r"bad\.parquet"):
        ds.to_table()
    with pytest.raises(ParquetFormatError, match=r"bad\.parquet"):
        pruned_dataset_sync(str(tmp_path), "id = 7", on_error="raise")


def test_no_readable_file_is_an_error_naming_the_first(tmp_path: Path) -> None:
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(SourceError, match=r"no file could be read.*bad\.parquet"):
        pruned_dataset_sync(str(tmp_path), "id = 7")


@pytest.mark.parametrize(
    ("where", "error", "match"),
    [
        ("id = ", PredicateError, None),
        ("id = 'x'", PredicateError, None),
        ("nope = 3", PredicateError, "nope"),
    ],
)
def test_bad_where_raises_what_prune_raises(
    tmp_path: Path, where: str, error: type[Exception], match: str | None
) -> None:
    _ids(tmp_path / "a.parquet", _interleaved(0))
    with pytest.raises(error) as expected:
        prune_sync(str(tmp_path), where)
    with pytest.raises(error, match=match) as got:
        pruned_dataset_sync(str(tmp_path), where)
    assert type(got.value) is type(expected.value)
    if where != "nope = 3":  # the column check says the same with other words
        assert str(got.value) == str(expected.value)


def test_http_urls_are_refused_before_any_read() -> None:
    stats = SourceStats()
    with pytest.raises(InvalidArgumentError, match="no HTTP filesystem"):
        pruned_dataset_sync(["https://127.0.0.1:9/a.parquet"], "id = 1", stats=stats)
    assert stats.requests == 0


def test_bad_arguments(tmp_path: Path) -> None:
    _ids(tmp_path / "a.parquet", _interleaved(0))
    with pytest.raises(InvalidArgumentError, match="strict"):
        pruned_dataset_sync(str(tmp_path), "id = 1", strict="yes")
    with pytest.raises(InvalidArgumentError, match="concurrency"):
        pruned_dataset_sync(str(tmp_path), "id = 1", concurrency=0)


def test_file_infos_are_taken_as_listed(tmp_path: Path) -> None:
    a = _ids(tmp_path / "a.parquet", _interleaved(0))
    info = FileInfo(str(a), a.stat().st_size)
    ds = pruned_dataset_sync([info], "id = 7")
    assert ds.to_table(filter=pa.compute.field("id") == 7).num_rows == 1


def test_each_footer_is_read_once_by_pruning(tmp_path: Path) -> None:
    for i in range(3):
        _ids(tmp_path / f"{i}.parquet", _interleaved(1000 * i))
    alone = SourceStats()
    prune_sync(str(tmp_path), "id = 7", stats=alone, concurrency=8)
    stats = SourceStats()
    pruned_dataset_sync(str(tmp_path), "id = 7", stats=stats)
    assert stats.requests == alone.requests, (stats, alone)


@pytest.mark.anyio
async def test_async_and_the_sync_twin_refuses_a_running_loop(
    tmp_path: Path, anyio_backend: str
) -> None:
    _ids(tmp_path / "a.parquet", _interleaved(0))
    ds = await pruned_dataset(str(tmp_path), "id = 7")
    assert ds.to_table(filter=pa.compute.field("id") == 7).num_rows == 1
    with pytest.raises(EventLoopError, match="await pruned_dataset"):
        pruned_dataset_sync(str(tmp_path), "id = 7")


def test_a_damaged_filter_keeps_its_row_group(tmp_path: Path) -> None:
    path = _ids(tmp_path / "a.parquet", _interleaved(0))
    _damage_filter(path, 0, 1)
    # 'n5000' lies between the column's min and max: only the filters rule it out.
    verdicts = prune_sync(str(path), "name = 'n5000'")
    assert verdicts[0].kept and verdicts[0].rule == Rule.UNUSABLE_FILTER
    ds = pruned_dataset_sync(str(path), "name = 'n5000'")
    assert _fragments(ds) == {"a.parquet": [v.row_group for v in verdicts if v.kept]}
    with pytest.raises(InvalidFilterError):
        pruned_dataset_sync(str(path), "name = 'n5000'", on_error="raise")


def _damage_filter(path: Path, row_group: int, column: int) -> None:
    data = bytearray(path.read_bytes())
    meta = pq.read_metadata(path)
    offset = meta.row_group(row_group).column(column).to_dict().get("bloom_filter_offset")
    if offset is None:
        pytest.skip("pyarrow does not report the filter offset")
    data[offset : offset + 4] = b"\xff\xff\xff\xff"  # the header no longer decodes
    path.write_bytes(bytes(data))


def test_many_local_files_are_swept_and_pruned_as_strictly_as_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Local files are swept as a lookup's are: only those with a row group kept reach the
    per-file step; a damaged filter in a swept file keeps its row groups, or raises with
    on_error="raise"."""
    import pybloom_async.rows.dataset as dataset

    names = [f"{c}.parquet" for c in "abcdefgh"]
    for at, name in enumerate(names):  # every file's ids span the others': no statistics prune
        _ids(tmp_path / name, [i * len(names) + at for i in _interleaved(0)])
    step = dataset.file_rows
    stepped: list[str] = []

    async def spy(run: Any, location: Any, *args: Any, **kwargs: Any) -> Any:
        stepped.append(Path(location_text(location)).name)
        return await step(run, location, *args, **kwargs)

    monkeypatch.setattr(dataset, "file_rows", spy)
    where = "id = 459"  # 57 * 8 + 3: in d.parquet only
    kept = {}
    for v in prune_sync(str(tmp_path), where):
        if v.kept:
            kept.setdefault(Path(v.file).name, []).append(v.row_group)
    assert _fragments(pruned_dataset_sync(str(tmp_path), where)) == kept
    # The first file binds the pass; of the others, only those with a row group kept.
    assert stepped[0] == "a.parquet" and "d.parquet" in stepped and len(stepped) <= 3

    _damage_filter(tmp_path / "f.parquet", 1, 0)
    kept = {}
    for v in prune_sync(str(tmp_path), where):
        if v.kept:
            kept.setdefault(Path(v.file).name, []).append(v.row_group)
    assert 1 in kept["f.parquet"]
    assert _fragments(pruned_dataset_sync(str(tmp_path), where)) == kept
    with pytest.raises(InvalidFilterError, match=r"f\.parquet"):
        pruned_dataset_sync(str(tmp_path), where, on_error="raise")


@pytest.mark.parametrize("hive", [False, True])
def test_counts_are_the_kept_row_groups_rows(tmp_path: Path, hive: bool) -> None:
    """pyarrow's Dataset.count_rows takes a fragment's rows from its file's footer unless a
    filter names a stored column: the dataset counts only the rows of the row groups it
    keeps, as its scan reads them."""
    folder = tmp_path / "dt=2024-01-01" if hive else tmp_path
    folder.mkdir(exist_ok=True)
    table = pa.table({"id": pa.array(range(400), pa.int64()), "s": [f"s{i}" for i in range(400)]})
    pq.write_table(table, folder / "a.parquet", row_group_size=GROUP,
                   bloom_filter_options={"id": True})  # fmt: skip
    dataset = pruned_dataset_sync(str(tmp_path), "id = 150")
    assert dataset.to_table().num_rows == GROUP
    assert dataset.count_rows() == GROUP
    assert dataset.scanner(columns=["id"]).to_table().num_rows == GROUP
    assert len(list(dataset.get_fragments())) == 1  # (DataFusion reads them)
    assert dataset.scanner(columns=["s"]).to_table().num_rows == GROUP
    assert dataset.count_rows(filter=pa.compute.field("id") < 150) == 50
    if hive:
        assert dataset.to_table().column("dt").unique().to_pylist()[0].isoformat() == "2024-01-01"


def test_a_string_view_column_reads_and_counts(tmp_path: Path) -> None:
    """pyarrow cannot filter string_view batches: the count's test must not reach the
    dataset's scans (the engines read it as it is)."""
    strings = pa.array([f"s{i}" for i in range(400)]).cast(pa.string_view())
    table = pa.table({"id": pa.array(range(400), pa.int64()), "s": strings})
    pq.write_table(table, tmp_path / "v.parquet", row_group_size=GROUP,
                   bloom_filter_options={"id": True})  # fmt: skip
    dataset = pruned_dataset_sync(str(tmp_path / "v.parquet"), "id = 150")
    assert dataset.to_table().num_rows == dataset.count_rows() == GROUP
