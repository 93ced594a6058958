"""One compiled predicate per run: each leaf is built once per column descriptor, whatever
reads it (the lake index, a sidecar index, row-group statistics and filters, a page index,
a dictionary, partition values) and however many files share the descriptor."""

from __future__ import annotations

import dataclasses
import gc
import weakref
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pybloom_async import build_index_sync, build_lake_index_sync, lookup_sync, prune_sync
from pybloom_async.parquet.schema import ColumnDescriptor, Repetition
from pybloom_async.predicate import parse_predicate
from pybloom_async.pruning import leaves as leaves_module
from pybloom_async.pruning.api import CompiledPredicate
from pybloom_async.types import PhysicalType

ROWS = 400
FILES = 6


def _write(path: Path, ids: np.ndarray[Any, Any]) -> None:
    table = pa.table({"id": pa.array(ids, pa.int64()), "s": [f"k{v % 50}" for v in ids.tolist()]})
    pq.write_table(
        table,
        path,
        row_group_size=ROWS // 4,
        data_page_size=256,  # several pages per row group: the page index selects among them
        write_page_index=True,
        bloom_filter_options={"id": {"ndv": ROWS, "fpp": 0.01}},
    )


@pytest.fixture
def lake(tmp_path: Path) -> tuple[Path, list[int]]:
    """Files (some below hive folders) with filters, page indexes and dictionaries (``s``);
    returns the root and one id of each file."""
    root = tmp_path / "lake"
    ids = []
    for i in range(FILES):
        folder = root / f"part={i % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        values = np.arange(i * ROWS, (i + 1) * ROWS, dtype=np.int64)
        _write(folder / f"f{i}.parquet", values)
        ids.append(int(values[7]))
    return root, ids


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[tuple[str, Any]]]:
    """Each leaf built, by its text and its column's path and type (a leaf is built
    wherever a ``Leaf`` with a column is made; the columns of the files, of a sidecar index
    and of the lake index differ in their levels, not in what a literal is there)."""
    seen: Counter[tuple[str, Any]] = Counter()
    original = leaves_module.Leaf.__init__

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        desc = self.desc
        if desc is not None:
            kind = (desc.path, desc.physical_type, desc.type_length, desc.logical_type)
            seen[(self.label, kind)] += 1

    monkeypatch.setattr(leaves_module.Leaf, "__init__", counted)
    yield seen


def _twice(seen: Counter[tuple[str, Any]]) -> list[tuple[str, str, int]]:
    return [(label, kind[0], n) for (label, kind), n in seen.items() if n > 1]


def test_a_lookup_over_a_lake_index_builds_each_leaf_once(
    lake: tuple[Path, list[int]], builds: Counter[tuple[str, Any]]
) -> None:
    root, ids = lake
    build_lake_index_sync(str(root), ["id"])
    where = f"id IN ({ids[0]}, {ids[4]}, NULL) AND s IN ('k7', 'k8') AND id >= 0"
    builds.clear()
    table = lookup_sync(str(root), where)
    assert sorted(table.column("id").to_pylist()) == sorted([ids[0], ids[4]])
    assert builds, "no leaf built"
    assert _twice(builds) == []


def test_a_prune_through_sidecar_indexes_and_partitions_builds_each_leaf_once(
    lake: tuple[Path, list[int]], builds: Counter[tuple[str, Any]]
) -> None:
    root, ids = lake
    files = sorted(str(p) for p in root.rglob("*.parquet"))
    build_index_sync(files, ["id", "s"])
    where = f"id = {ids[1]} AND s IN ('k7', 'k8') AND part BETWEEN 1 AND 2"
    builds.clear()
    verdicts = prune_sync(str(root), where, use_index="sidecar")
    assert any(v.kept and v.file.endswith("f1.parquet") for v in verdicts)
    assert builds, "no leaf built"
    assert _twice(builds) == []


def test_a_prune_of_many_files_builds_each_leaf_once(
    lake: tuple[Path, list[int]], builds: Counter[tuple[str, Any]]
) -> None:
    root, ids = lake
    where = f"(id = {ids[2]} OR id < 5) AND NOT part BETWEEN 1 AND 1 AND s != 'k1'"
    verdicts = prune_sync(str(root), where)
    assert any(v.kept and v.file.endswith("f2.parquet") for v in verdicts)
    assert builds, "no leaf built"
    assert _twice(builds) == []


def test_leaves_are_shared_by_descriptors_of_one_type_and_go_with_their_predicate() -> None:
    compiled = CompiledPredicate("x IN (1, 2, 3) AND y BETWEEN 1 AND 5")
    here = ColumnDescriptor.of(PhysicalType.INT64, path="x")
    there = dataclasses.replace(here, index=3, repetition=Repetition.OPTIONAL)
    p = compiled.leaves[0]
    first, second = compiled.leaf(p, here), compiled.leaf(p, there)
    assert (first.desc, second.desc) == (here, there)
    assert second.hashes is first.hashes  # encoded and hashed once for the type
    assert compiled.leaf(p, there) is second
    # A leaf made for one file (a lookup's IN list cut by its filters) is not held by the
    # run once the file is done with it.
    for _ in range(3):
        own = parse_predicate("x IN (1, 2)")
        built = weakref.ref(compiled.leaf(own, here, "rows"))
        del own
        gc.collect()
        assert built() is None
