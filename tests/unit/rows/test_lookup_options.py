"""LookupOptions: the row-reading knobs as one object, or as keyword arguments written once;
every lookup entry point takes it, and a knob given both ways is refused in one line."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import anyio
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pybloom_async as pba
from pybloom_async import InvalidArgumentError, LookupOptions
from pybloom_async.rows.api import plan_lookup


@pytest.fixture
def hive(tmp_path: Path) -> Path:
    for day in (1, 2):
        folder = tmp_path / f"dt={day}"
        folder.mkdir()
        table = pa.table({"id": pa.array(range(day * 10, day * 10 + 10), pa.int64())})
        pq.write_table(table, folder / "part.parquet", row_group_size=5)
    return tmp_path


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"max_fetch_bytes": 0}, "max_fetch_bytes"),
        ({"max_fetch_bytes": "1"}, "max_fetch_bytes"),
        ({"page_index": "no"}, "page_index must be True or False"),
        ({"partitioning": "maybe"}, "partitioning must be"),
        ({"use_index": "sidecar"}, "applies to prune only"),
        ({"use_index": "fast"}, "use_index must be one of"),
    ],
)
def test_bad_field_is_one_line(fields: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message) as info:
        LookupOptions(**fields)  # type: ignore[arg-type]
    assert "\n" not in str(info.value)


def test_fields_are_normal_and_frozen() -> None:
    options = LookupOptions(use_index=None)  # type: ignore[arg-type]
    assert options.use_index == "none"
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.page_index = False  # type: ignore[misc]


def test_each_entry_point_takes_it(hive: Path) -> None:
    plain = LookupOptions(partitioning=None, page_index=False, max_fetch_bytes=1)
    got = pba.lookup_sync(str(hive), "id = 12", lookup=plain)
    assert got.column_names == ["id"] and got.column("id").to_pylist() == [12]
    # The same knobs as keyword arguments give the same answer.
    assert got.equals(
        pba.lookup_sync(
            str(hive), "id = 12", partitioning=None, page_index=False, max_fetch_bytes=1
        )
    )
    assert pba.lookup_sync(str(hive), "id = 12").column_names == ["id", "dt"]

    async def batches() -> list[pa.RecordBatch]:
        return [b async for b in pba.lookup_batches(str(hive), "id >= 18", lookup=plain)]

    found = anyio.run(batches)
    assert all(b.schema.names == ["id"] for b in found)
    assert sorted(v for b in found for v in b.column(0).to_pylist()) == [
        18,
        19,
        20,
        21,
        22,
        23,
        24,
        25,
        26,
        27,
        28,
        29,
    ]

    async def plan() -> object:
        return await plan_lookup(str(hive), "id = 12", lookup=plain)

    planned = anyio.run(plan)
    assert planned.job.names == ["id"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["page_index", "max_fetch_bytes", "partitioning", "use_index"])
def test_a_knob_given_twice_is_refused(hive: Path, name: str) -> None:
    value = dataclasses.replace(LookupOptions(), **{name: getattr(LookupOptions(), name)})
    keyword = {name: getattr(value, name)}
    with pytest.raises(InvalidArgumentError, match=f"got {name} twice") as info:
        pba.lookup_sync(str(hive), "id = 12", lookup=value, **keyword)
    assert "\n" not in str(info.value)

    async def batches() -> None:
        async for _ in pba.lookup_batches(str(hive), "id = 12", lookup=value, **keyword):
            pass

    with pytest.raises(InvalidArgumentError, match=f"lookup_batches\\(\\) got {name} twice"):
        anyio.run(batches)


def test_not_an_options_object_nor_a_keyword(hive: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="lookup must be a LookupOptions"):
        pba.lookup_sync(str(hive), "id = 12", lookup={"page_index": False})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unexpected keyword argument 'page_indexes'"):
        pba.lookup_sync(str(hive), "id = 12", page_indexes=False)  # type: ignore[call-arg]
