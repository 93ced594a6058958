"""Hive partition folders: names, types, the user's partitioning; listing with a folder filter."""

from __future__ import annotations

import datetime as dt
import os
from decimal import Decimal
from pathlib import Path

import pytest

from pybloom_async.errors import InvalidArgumentError, SchemaMismatchError
from pybloom_async.io.listing import list_parquet_files
from pybloom_async.io.partitions import PartitionedFile, folder_pair, pairs_of
from pybloom_async.pruning.partition_types import (
    Partitioning,
    PartitionType,
    infer_type,
    partition_type,
    typed_value,
)


@pytest.mark.parametrize(
    ("name", "pair"),
    [
        ("dt=2026-11-01", ("dt", "2026-11-01")),
        ("c=a%20b", ("c", "a b")),
        ("c=a b", ("c", "a b")),  # Spark leaves spaces as they are
        ("c=x%3Dy", ("c", "x=y")),
        ("c=x=y", ("c", "x=y")),  # split at the first '='
        ("c=a%2Fb", ("c", "a/b")),
        ("c=%C3%BC", ("c", "ü")),
        ("c=ü", ("c", "ü")),
        ("c=100%25", ("c", "100%")),
        ("c=", ("c", "")),
        ("c=__HIVE_DEFAULT_PARTITION__", ("c", None)),
        ("my%20key=1", ("my key", "1")),
        ("plain", None),
        ("=1", None),
        ("%2F=1", ("/", "1")),
    ],
)
def test_folder_names(name: str, pair: tuple[str, str | None] | None) -> None:
    assert folder_pair(name) == pair


def test_a_key_met_twice_keeps_the_outermost_value() -> None:
    """As DuckDB and pyarrow read ``a=1/b=2/a=3/``: the first value, in its place."""
    assert pairs_of(["a=1", "plain", "b=2", "a=3"]) == (("a", "1"), ("b", "2"))


@pytest.mark.parametrize(
    ("values", "name"),
    [
        (["1", "-2", "0"], "int64"),
        (["9223372036854775807"], "int64"),
        (["9223372036854775808"], "string"),
        (["01"], "string"),
        (["+1"], "string"),
        (["1.5"], "string"),
        (["2026-02-28", "1999-12-31"], "date32"),
        (["2026-02-30"], "string"),
        (["2026-11-01 10:00:00", "2026-11-01T10:00:00.123456"], "timestamp[us]"),
        (["2026-11-01 10:00:00.1234567"], "string"),
        (["2026-11-01", "1"], "string"),
        ([None, "7"], "int64"),
        ([None], "string"),
        ([], "string"),
        ([""], "string"),
    ],
)
def test_inference(values: list[str | None], name: str) -> None:
    assert infer_type(values).name == name


def test_partitioning_specs() -> None:
    assert Partitioning.of(None) is None and Partitioning.of(False) is None
    assert Partitioning.of("hive") == Partitioning() == Partitioning.of(True)
    given = Partitioning.of({"dt": "date", "n": "int32"})
    assert given is not None and given.types == {
        "dt": PartitionType("date32"),
        "n": PartitionType("int32"),
    }
    assert given.keys_of((("dt", "x"), ("other", "y"))) == (("dt", "x"),)
    for bad in ("Hive", 3, {"dt": "datetime"}, {"": "int64"}, {"d": object()}):
        with pytest.raises(InvalidArgumentError):
            Partitioning.of(bad)


def test_pyarrow_types_and_schemas() -> None:
    pa = pytest.importorskip("pyarrow")
    schema = pa.schema(
        [("a", pa.int16()), ("b", pa.timestamp("ns", tz="UTC")), ("c", pa.decimal128(10, 2))]
    )
    spec = Partitioning.of(schema)
    assert spec is not None and spec.types is not None
    assert [t.arrow() for t in spec.types.values()] == list(schema.types)
    with pytest.raises(InvalidArgumentError, match="not a partition column type"):
        partition_type(pa.list_(pa.int32()))


@pytest.mark.parametrize(
    ("kind", "text", "value"),
    [
        ("int8", "-128", -128),
        ("uint8", "255", 255),
        ("bool", "True", True),
        ("float64", "1.5", 1.5),
        ("date32", "2026-11-01", dt.date(2026, 11, 1)),
        ("timestamp[us]", "2026-11-01 10:00:00", dt.datetime(2026, 11, 1, 10)),
        (
            "timestamp[ms, tz=UTC]",
            "2026-11-01 10:00:00",
            dt.datetime(2026, 11, 1, 10, tzinfo=dt.timezone.utc),
        ),
        ("decimal128(10, 2)", "3.25", Decimal("3.25")),
        ("string", " x ", " x "),
    ],
)
def test_typed_values(kind: str, text: str, value: object) -> None:
    assert typed_value("k", text, PartitionType(kind), "f") == value
    assert typed_value("k", None, PartitionType(kind), "f") is None


@pytest.mark.parametrize(("kind", "text"), [("int8", "128"), ("uint8", "-1"), ("bool", "yes"),
                                            ("date32", "2026-13-01"), ("int64", "DE")])  # fmt: skip
def test_a_value_not_of_its_type(kind: str, text: str) -> None:
    with pytest.raises(SchemaMismatchError, match=f"'{text}' of 'k' is not a {kind}"):
        typed_value("k", text, PartitionType(kind), "f.parquet")


def _lake(root: Path) -> None:
    for folder in ("dt=1/c=a", "dt=1/c=b", "dt=2/c=a", "plain/dt=3", ".hidden=1", "_x=1"):
        (root / folder).mkdir(parents=True)
        (root / folder / "p.parquet").write_bytes(b"")
    (root / "top.parquet").write_bytes(b"")


@pytest.mark.anyio
async def test_listing_gives_the_pairs_and_skips_folders(tmp_path: Path) -> None:
    _lake(tmp_path)
    files = await list_parquet_files(str(tmp_path))
    pairs = {os.path.relpath(f.path, tmp_path): getattr(f, "partition", ()) for f in files}
    assert pairs == {
        "top.parquet": (),
        os.path.join("dt=1", "c=a", "p.parquet"): (("dt", "1"), ("c", "a")),
        os.path.join("dt=1", "c=b", "p.parquet"): (("dt", "1"), ("c", "b")),
        os.path.join("dt=2", "c=a", "p.parquet"): (("dt", "2"), ("c", "a")),
        os.path.join("plain", "dt=3", "p.parquet"): (("dt", "3"),),
    }
    same_folder = [f for f in files if "dt=1" in f.path]
    assert isinstance(same_folder[0], PartitionedFile)
    asked: list[tuple[tuple[str, str | None], ...]] = []

    def keep(pairs: tuple[tuple[str, str | None], ...]) -> bool:
        asked.append(pairs)
        return dict(pairs).get("c", "a") == "a" and dict(pairs).get("dt") != "2"

    kept = await list_parquet_files(str(tmp_path), folders=keep)
    assert sorted(os.path.relpath(f.path, tmp_path) for f in kept) == [
        os.path.join("dt=1", "c=a", "p.parquet"),
        os.path.join("plain", "dt=3", "p.parquet"),
        "top.parquet",
    ]
    assert (("dt", "2"),) in asked and (("dt", "2"), ("c", "a")) not in asked  # not entered
