"""The footer's tail serves a file's rows only while the file is read: a plan keeps the
data bytes the tail holds when asked (rows read right after), never otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from pybloom_async import read_footer_sync
from pybloom_async.rows.plan import chunk_range, describe

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _small(path: Path) -> Path:
    table = pa.table({"id": pa.array(range(600), pa.int64()), "s": [f"v{i}" for i in range(600)]})
    pq.write_table(table, path, row_group_size=200)
    return path


def test_a_plan_for_rows_read_now_holds_the_tails_data(tmp_path: Path) -> None:
    path = _small(tmp_path / "f.parquet")
    footer = read_footer_sync(str(path))
    assert footer.tail_start == 0  # the whole small file came with the footer's read
    plan = describe(str(path), footer, [0, 2], tail=True)
    data = path.read_bytes()
    for group in (0, 2):
        for leaf in (0, 1):
            start, end = chunk_range(plan, group, leaf)
            assert plan.held.read(start, end) == data[start:end]
    # The tail's data is kept whole, in one piece (a pruned row group's bytes too: cutting
    # it to the kept chunks cost more than the copy), and never the footer.
    metadata = footer.location.metadata_offset
    assert plan.held.ranges() == [(0, metadata)]
    assert plan.held.read(0, metadata) == data[:metadata]


def test_a_plan_kept_for_later_holds_no_data(tmp_path: Path) -> None:
    """Plans made for later (streamed batches, datasets) would hold a tail per file."""
    path = _small(tmp_path / "f.parquet")
    footer = read_footer_sync(str(path))
    plan = describe(str(path), footer, [0, 1, 2])
    assert plan.held.ranges() == []


def test_a_lookup_holds_no_footer_model_of_a_file_whose_rows_were_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lookup holds every file's plan to its end (the result is shaped from them): a file
    read keeps its schemas there, not its footer's model, bytes or pyarrow's decode."""
    import pybloom_async.rows.schema as rows_schema
    from pybloom_async import col, lookup_sync

    for i in range(3):
        _small(tmp_path / f"f{i}.parquet")
    shaped: list[object] = []
    real = rows_schema.conform_file

    def conform_file(tables: object, plan: object, *args: object) -> object:
        shaped.append(plan)
        return real(tables, plan, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(rows_schema, "conform_file", conform_file)
    out = lookup_sync(str(tmp_path), col("id").isin([5, 250, 599]))
    assert sorted(out.column("id").to_pylist()) == [5, 5, 5, 250, 250, 250, 599, 599, 599]
    assert len(shaped) == 3
    for plan in shaped:
        assert plan.kept  # type: ignore[attr-defined]
        assert plan.footer_metadata is None and plan.footer_bytes is None  # type: ignore[attr-defined]
        assert plan.chunks_made == {} and plan.held.ranges() == []  # type: ignore[attr-defined]
        assert plan.arrow_schema is not None  # type: ignore[attr-defined]
