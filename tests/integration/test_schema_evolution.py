"""One schema rule at every door: the result's columns are the union over the files read.

Three files written over time: ``2024-01`` has ``id`` (int32), ``2024-02`` adds ``email``,
``2024-03`` widens ``id`` to int64 and adds ``score``. ``lookup``, ``lookup_batches``,
``pruned_dataset`` and the command line give the same columns, types and rows.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from pybloom_async import (
    SchemaMismatchError,
    SourceStats,
    lookup_batches,
    lookup_sync,
    pruned_dataset_sync,
)

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

UNION = pa.schema([("id", pa.int64()), ("email", pa.string()), ("score", pa.float64())])


@pytest.fixture
def evo(tmp_path: Path) -> Path:
    root = tmp_path / "evo"
    root.mkdir()
    blooms = {"id": True}
    pq.write_table(
        pa.table({"id": pa.array([1, 2, 3, 4], pa.int32())}),
        root / "2024-01.parquet",
        bloom_filter_options=blooms,
    )
    pq.write_table(
        pa.table({"id": pa.array([4, 5], pa.int32()), "email": ["d@x", "e@x"]}),
        root / "2024-02.parquet",
        bloom_filter_options=blooms,
    )
    pq.write_table(
        pa.table(
            {
                "id": pa.array([4, 6], pa.int64()),
                "score": [0.5, 1.5],
                "email": ["d2@x", None],
            }
        ),
        root / "2024-03.parquet",
        bloom_filter_options=blooms,
    )
    return root


EXPECTED = [
    {"id": 4, "email": None, "score": None},
    {"id": 4, "email": "d@x", "score": None},
    {"id": 4, "email": "d2@x", "score": 0.5},
]


def _batches(source: str, where: str, **kwargs: Any) -> Any:
    async def collect() -> list[Any]:
        return [b async for b in lookup_batches(source, where, **kwargs)]

    batches = anyio.run(collect)
    return pa.Table.from_batches(batches) if batches else None


def test_lookup_gives_the_union_of_the_columns_in_first_seen_order(evo: Path) -> None:
    got = lookup_sync(str(evo), "id = 4")
    assert got.schema == UNION
    assert got.to_pylist() == EXPECTED


def test_every_door_agrees(evo: Path) -> None:
    where = "id = 4"
    table = lookup_sync(str(evo), where)
    batches = _batches(str(evo), where)
    assert batches.schema == table.schema and batches.to_pylist() == table.to_pylist()
    dataset = pruned_dataset_sync(str(evo), where)
    assert dataset.schema == UNION
    scanned = dataset.to_table(filter=pa.compute.field("id") == 4)
    assert sorted(scanned.to_pylist(), key=repr) == sorted(EXPECTED, key=repr)
    out = subprocess.run(
        [sys.executable, "-m", "pybloom_async.apps.cli", "lookup", str(evo), "-w", where,
         "--format", "json", "--quiet"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert json.loads(out.stdout) == EXPECTED


def test_a_file_pruned_whole_still_gives_its_columns(evo: Path) -> None:
    """``id = 1`` is only in the first file; the columns are still every file's."""
    got = lookup_sync(str(evo), "id = 1")
    assert got.schema == UNION
    assert got.to_pylist() == [{"id": 1, "email": None, "score": None}]
    none = lookup_sync(str(evo), "id = 99")
    assert none.schema == UNION and none.num_rows == 0
    assert _batches(str(evo), "id = 99") is None


def test_columns_given_are_kept_as_asked(evo: Path) -> None:
    got = lookup_sync(str(evo), "id = 4", columns=["score", "id"])
    assert got.column_names == ["score", "id"]
    assert got.column("score").to_pylist() == [None, None, 0.5]


def test_a_conflict_names_both_files_and_the_column(evo: Path) -> None:
    pq.write_table(pa.table({"id": [7], "score": ["high"]}), evo / "2024-04.parquet")
    with pytest.raises(SchemaMismatchError) as raised:
        lookup_sync(str(evo), "id = 4")
    text = str(raised.value)
    assert "'score'" in text and "2024-03.parquet" in text and "2024-04.parquet" in text
    with pytest.raises(SchemaMismatchError, match=r"2024-04\.parquet"):
        pruned_dataset_sync(str(evo), "id = 4")


def test_a_file_pruned_whole_never_reaches_pyarrow_for_a_schema_met_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pyarrow decodes a footer for its rows, or for a schema not met before; files pruned
    whole that share a schema with another file cost no pyarrow decode."""
    import pybloom_async.rows.plan as plan

    for i in range(6):
        pq.write_table(
            pa.table({"id": pa.array(range(100 * i, 100 * i + 100), pa.int64())}),
            tmp_path / f"f{i}.parquet",
            bloom_filter_options={"id": True},
        )
    calls: list[str] = []
    real = plan.pq.read_metadata

    def counting(where: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append("read_metadata")
        return real(where, *args, **kwargs)

    monkeypatch.setattr(plan.pq, "read_metadata", counting)
    plan._ARROW_SCHEMAS.clear()
    stats = SourceStats()
    got = lookup_sync(str(tmp_path), "id = 250", stats=stats)
    assert got.to_pylist() == [{"id": 250}]
    # f2 holds the key (its rows: one decode); the schema of the other five is f2's or
    # the first file's: at most one more decode.
    assert len(calls) <= 2, calls
