"""Other engines read a lake the same before and after every index built in it.

What the library writes into a user's lake (sidecar indexes, the lake index and its
compaction, filters added to the files) must stay out of what DuckDB, Polars, pyarrow
and Spark read there by their usual globs and defaults:

* DuckDB ``read_parquet('lake/**/*.parquet', hive_partitioning=true)`` and
  ``read_parquet('lake/')``;
* Polars ``scan_parquet('lake/**/*.parquet')``; Polars' scan of the folder itself
  (``scan_parquet('lake/')``) takes every file under it and refuses a folder holding a
  file that is not ``.parquet`` (its message says to use a glob): it may refuse, never
  answer other rows;
* pyarrow ``ds.dataset('lake/', partitioning="hive")`` and ``pq.read_table('lake/')``;
* Spark ``spark.read.parquet('lake/')`` (``spark`` marker).

Each engine's rows after each build equal its rows before any; the files the builds add
are all inside ``_bloom_index/`` folders and none ends in ``.parquet``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pybloom_async import (
    add_bloom_filters_sync,
    build_index_sync,
    build_lake_index_sync,
    compact_lake_index_sync,
    prune_sync,
)

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
ds = pytest.importorskip("pyarrow.dataset")
duckdb = pytest.importorskip("duckdb")
pl = pytest.importorskip("polars")

Rows = list[tuple[Any, ...]]
DAYS = ("2024-01-01", "2024-01-02")
FILES_PER_DAY = 3
ROWS_PER_FILE = 40


def write_lake(root: Path) -> list[Path]:
    """A hive-partitioned lake: ``dt=<day>/part-<i>.parquet`` with ``id`` and ``name``."""
    files = []
    n = 0
    for day in DAYS:
        folder = root / f"dt={day}"
        folder.mkdir(parents=True)
        for i in range(FILES_PER_DAY):
            ids = list(range(n, n + ROWS_PER_FILE))
            n += ROWS_PER_FILE
            table = pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{v}" for v in ids]})
            path = folder / f"part-{i}.parquet"
            pq.write_table(table, path, row_group_size=ROWS_PER_FILE // 2)
            files.append(path)
    return files


def _sorted(rows: Any) -> Rows:
    return sorted((int(i), str(s), str(d)) for i, s, d in rows)


def duckdb_glob(root: Path) -> Rows:
    sql = f"SELECT id, name, dt FROM read_parquet('{root}/**/*.parquet', hive_partitioning=true)"
    return _sorted(duckdb.connect().execute(sql).fetchall())


def duckdb_count(root: Path) -> Rows:
    """The issue's first sight: ``count(*)`` read an index as one row more."""
    sql = f"SELECT count(*) FROM read_parquet('{root}/**/*.parquet', hive_partitioning=true)"
    return [tuple(r) for r in duckdb.connect().execute(sql).fetchall()]


def duckdb_folder(root: Path) -> Rows:
    sql = f"SELECT id, name, dt FROM read_parquet('{root}/', hive_partitioning=true)"
    return _sorted(duckdb.connect().execute(sql).fetchall())


def polars_glob(root: Path) -> Rows:
    frame = pl.scan_parquet(f"{root}/**/*.parquet", hive_partitioning=True)
    frame = frame.select("id", "name", "dt").collect()
    return _sorted(frame.iter_rows())


def polars_folder(root: Path) -> Rows:
    frame = pl.scan_parquet(f"{root}/").select("id", "name", "dt").collect()
    return _sorted(frame.iter_rows())


def _table_rows(table: Any) -> Rows:
    return _sorted((r["id"], r["name"], r["dt"]) for r in table.to_pylist())


def pyarrow_dataset(root: Path) -> Rows:
    return _table_rows(ds.dataset(str(root), format="parquet", partitioning="hive").to_table())


def pyarrow_read_table(root: Path) -> Rows:
    return _table_rows(pq.read_table(str(root)))


ENGINES: dict[str, Callable[[Path], Rows]] = {
    "duckdb lake/**/*.parquet": duckdb_glob,
    "duckdb count(*) lake/**/*.parquet": duckdb_count,
    "duckdb lake/": duckdb_folder,
    "polars lake/**/*.parquet": polars_glob,
    "polars lake/": polars_folder,
    "pyarrow dataset": pyarrow_dataset,
    "pyarrow read_table": pyarrow_read_table,
}
#: Engines that may refuse a folder holding other files (with this in the message).
REFUSALS = {"polars lake/": "different file extensions"}


def read_everywhere(root: Path) -> dict[str, Rows | str]:
    out: dict[str, Rows | str] = {}
    for name, read in ENGINES.items():
        try:
            out[name] = read(root)
        except Exception as exc:  # an engine's failure is an answer to compare
            out[name] = f"{type(exc).__name__}: {exc}"
    return out


def files_under(root: Path) -> set[str]:
    return {
        os.path.relpath(os.path.join(d, f), root) for d, _, names in os.walk(root) for f in names
    }


def check_same(root: Path, before: dict[str, Rows | str], data: set[str], step: str) -> None:
    after = read_everywhere(root)
    for engine, rows in after.items():
        if rows == before[engine]:
            continue
        refusal = REFUSALS.get(engine)
        if refusal is not None and isinstance(rows, str) and refusal in rows:
            continue  # a loud refusal, never other rows
        shown = rows if isinstance(rows, str) else f"{len(rows)} rows"
        assert rows == before[engine], f"after {step}, {engine} reads {shown}"
    added = files_under(root) - data
    assert added, f"{step} wrote nothing"
    for rel in sorted(added):
        parts = Path(rel).parts
        assert "_bloom_index" in parts[:-1], f"{step}: {rel} lies outside _bloom_index/"
        assert not rel.lower().endswith(".parquet"), f"{step}: {rel} ends in .parquet"


def test_engines_read_the_same_rows_after_each_build(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    files = write_lake(root)
    data = files_under(root)
    before = read_everywhere(root)
    expected = _sorted(
        (i, f"n{i}", DAYS[i // (FILES_PER_DAY * ROWS_PER_FILE)])
        for i in range(len(DAYS) * FILES_PER_DAY * ROWS_PER_FILE)
    )
    assert before == {
        **dict.fromkeys(ENGINES, expected),
        "duckdb count(*) lake/**/*.parquet": [(len(expected),)],
    }

    assert all(b.error is None for b in build_index_sync(str(root), ["id", "name"]))
    check_same(root, before, data, "index build")
    data = files_under(root)
    # The indexes serve under their name: only the file holding id 5 is kept.
    verdicts = prune_sync(str(root), "id = 5", use_index="sidecar", row_groups=False)
    kept = [os.path.relpath(v.file, root) for v in verdicts if v.kept]
    assert kept == [os.path.join("dt=2024-01-01", "part-0.parquet")]

    first = build_lake_index_sync(str(root), ["id"], size_classes=False)
    assert not first.errors
    check_same(root, before, data, "the lake index")
    data = files_under(root)
    second = build_lake_index_sync(str(root), ["id"], size_classes=False)
    assert not second.errors
    check_same(root, before, data, "a second lake index segment")
    data = files_under(root)

    compaction = compact_lake_index_sync(str(root))
    assert compaction.written and len(compaction.merged) == 2, compaction
    check_same(root, before, data, "compaction")
    data = files_under(root)
    for path in files:
        result = add_bloom_filters_sync(str(path), ["name"])
        assert result.written, path
    assert files_under(root) == data  # the files rewritten in place, nothing beside them
    after_filters = read_everywhere(root)
    assert {e: r for e, r in after_filters.items() if e not in REFUSALS} == {
        e: r for e, r in before.items() if e not in REFUSALS
    }


@pytest.mark.spark
def test_spark_reads_the_same_rows_after_each_build(spark_session: Any, tmp_path: Path) -> None:
    root = tmp_path / "lake"
    write_lake(root)

    def spark_rows() -> Rows:
        frame = spark_session.read.parquet(str(root))
        return _sorted((r["id"], r["name"], r["dt"]) for r in frame.collect())

    before = spark_rows()
    assert len(before) == len(DAYS) * FILES_PER_DAY * ROWS_PER_FILE
    build_index_sync(str(root), ["id", "name"])
    assert spark_rows() == before
    build_lake_index_sync(str(root), ["id"])
    build_lake_index_sync(str(root), ["name"])
    assert spark_rows() == before
    compact_lake_index_sync(str(root))
    assert spark_rows() == before
