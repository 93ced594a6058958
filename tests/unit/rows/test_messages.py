"""Errors of lookups and pruned datasets name the right file and every file's columns."""

from __future__ import annotations

from pathlib import Path

import pytest

import pybloom_async as pba
from pybloom_async.errors import PredicateError, SourceError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _two_files(folder: Path) -> list[str]:
    """Two files whose columns differ: ``id, a`` and ``id, b``."""
    folder.mkdir()
    paths = []
    for other in ("a", "b"):
        path = folder / f"{other}.parquet"
        table = pa.table({"id": pa.array([1, 2], pa.int64()), other: ["x", "y"]})
        pq.write_table(table, path, bloom_filter_options={"id": True})
        paths.append(str(path))
    return paths


def test_a_missing_column_lists_every_files_columns(tmp_path: Path) -> None:
    """The error listed the first file's columns only (``id, a``): ``b`` is a column too."""
    paths = _two_files(tmp_path / "t")
    with pytest.raises(PredicateError) as info:
        pba.lookup_sync(paths, "zz = 1")
    assert "the 2 files have: id, a, b" in str(info.value)
    assert info.value.column == "zz"
    with pytest.raises(PredicateError) as info:
        pba.lookup_sync(paths, "id = 1", columns=["id", "zz"])
    assert "'zz'" in str(info.value) and "the 2 files have: id, a, b" in str(info.value)
    with pytest.raises(PredicateError, match="the 2 files have: id, a, b"):
        pba.pruned_dataset_sync(paths, "zz = 1")
    with pytest.raises(PredicateError, match=r"; the file has: id, a \(column 'zz'\)"):
        pba.lookup_sync(paths[:1], "zz = 1")


def test_a_literal_of_the_wrong_type_names_no_lake_index_segment(tmp_path: Path) -> None:
    """A literal that is no value of its column was reported "(file …/seg-….pbl, …)": the
    lake index's segment named as if it were the file at fault."""
    paths = _two_files(tmp_path / "t")
    pba.build_lake_index_sync(str(tmp_path / "t"), columns=["id"])
    for call in (
        lambda: pba.lookup_sync(str(tmp_path / "t"), "id = 'x'"),
        lambda: pba.prune_sync(str(tmp_path / "t"), "id = 'x'", use_index="lake"),
    ):
        with pytest.raises(PredicateError) as info:
            call()
        assert "is not a value of this column" in str(info.value)
        assert ".pbl" not in str(info.value) and info.value.column == "id"
    # Without the lake index: the file whose column it is.
    with pytest.raises(PredicateError, match=r"\(file .*a\.parquet, column 'id'\)"):
        pba.lookup_sync(paths[:1], "id = 'x'")


def test_a_dataset_of_unreadable_files_names_the_first_once(tmp_path: Path) -> None:
    """ "(file …)" was printed twice: in the first file's reason and after it."""
    folder = tmp_path / "junk"
    folder.mkdir()
    for name in ("p0", "p1"):
        (folder / f"{name}.parquet").write_bytes(b"junk" * 10)
    with pytest.raises(SourceError) as info:
        pba.pruned_dataset_sync(str(folder), "id = 5")
    message = str(info.value)
    assert message.count("(file ") == 1 and message.endswith(f"(file {folder / 'p0.parquet'})")
    assert "no file could be read" in message and "not a Parquet file" in message
    assert info.value.path == str(folder / "p0.parquet")
