"""Apache Iceberg tables (SQL catalog on SQLite, committed by pyiceberg) as sources."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

import pybloom_async as pba
from pybloom_async.errors import PredicateError, UnsupportedTypeError
from pybloom_async.io.base import SourceStats
from pybloom_async.tables import resolve_table

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("pyiceberg")
from pyiceberg.expressions import In as IcebergIn  # noqa: E402
from pyiceberg.partitioning import PartitionField, PartitionSpec  # noqa: E402
from pyiceberg.schema import Schema  # noqa: E402
from pyiceberg.transforms import IdentityTransform  # noqa: E402
from pyiceberg.types import (  # noqa: E402
    BinaryType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
)
from support.iceberg_catalog import sql_catalog  # noqa: E402

ROWS = 400


def _chunk(start: int, stop: int) -> Any:
    ids = list(range(start, stop))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "s": pa.array([f"s{i}" for i in ids], pa.string()),
        "p": pa.array(["a" if i < ROWS // 2 else "b" for i in ids], pa.string()),
    })  # fmt: skip


SCHEMA = Schema(
    NestedField(1, "id", LongType(), required=False),
    NestedField(2, "s", StringType(), required=False),
    NestedField(3, "p", StringType(), required=False),
)
SPEC = PartitionSpec(PartitionField(3, 1000, IdentityTransform(), "p"))


@pytest.fixture
def table(tmp_path: Path) -> Any:
    """Files with filters written by pyarrow, committed by pyiceberg's add_files."""
    catalog = sql_catalog(tmp_path)
    tbl = catalog.create_table("ns.t", schema=SCHEMA, partition_spec=SPEC)
    data = tmp_path / "data"
    data.mkdir()
    paths = []
    for start in range(0, ROWS, ROWS // 4):
        path = data / f"part-{start}.parquet"
        pq.write_table(_chunk(start, start + ROWS // 4), path,
                       bloom_filter_options={"id": True, "s": True})  # fmt: skip
        paths.append(path.as_uri())
    tbl.add_files(paths)
    return catalog.load_table("ns.t")


def _rows(table: Any) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: (r["id"], r["s"]))


def test_manifests_prune_first_then_filters(table: Any) -> None:
    stats = SourceStats()
    verdicts = pba.prune_sync(table, "p = 'a' AND id = 120", stats=stats)
    assert len({v.file for v in verdicts}) == 1 and "part-100" in verdicts[0].file
    assert stats.requests == 1  # only the file the manifests keep is opened
    assert pba.prune_sync(table, "id IN (1001, 1002)") == []
    verdicts = pba.prune_sync(table, "s = 's5x'")
    assert pba.Rule.BLOOM_FILTER in {v.rule for v in verdicts}
    assert not any(v.kept for v in verdicts)


@pytest.mark.parametrize(
    ("where", "expression"),
    [
        ("id IN (3, 150, 250, 399, 1000)", IcebergIn("id", {3, 150, 250, 399, 1000})),
        ("p = 'b' AND s IN ('s3', 's301')", "p = 'b' AND s IN ('s3', 's301')"),
        ("p = 'a' OR id = 399", "p = 'a' OR id = 399"),
    ],
)
def test_lookup_equals_pyicebergs_scan(table: Any, where: str, expression: Any) -> None:
    expected = _rows(table.scan(row_filter=expression).to_arrow())
    assert _rows(pba.lookup_sync(table, where)) == expected
    assert expected


#: (predicate, pyiceberg's own row filter, files its manifests keep: the ids are 0..99,
#: 100..199 in partition a, 200..299 and 300..399 in b)
RANGES = [
    ("id < 50", "id < 50", 1),
    ("id >= 350 AND p = 'b'", "id >= 350 AND p = 'b'", 1),
    ("id BETWEEN 90 AND 110", "id >= 90 AND id <= 110", 2),
    ("NOT id < 300", "id >= 300", 1),
    ("p > 'a'", "p > 'a'", 2),
    ("p != 'a' AND id <= 210", "p != 'a' AND id <= 210", 1),
    ("id NOT IN (1, 2, 3) AND id < 5", "id NOT IN (1, 2, 3) AND id < 5", 1),
    ("NOT (p = 'a' OR id > 210)", "p != 'a' AND id <= 210", 1),
    ("id BETWEEN 5 AND 3", "id >= 5 AND id <= 3", 0),
    ("NOT id BETWEEN 1 AND 398", "id < 1 OR id > 398", 2),
    ("NOT id <=> 3 AND id < 5", "(id IS NULL OR id != 3) AND id < 5", 1),
    ("id IS NOT NULL AND id > 2.5 AND id < 4", "id > 2 AND id < 4", 1),  # 2.5: not certain
]


@pytest.mark.parametrize(("where", "expression", "files"), RANGES, ids=[r[0] for r in RANGES])
def test_ranges_equal_pyicebergs_scan(table: Any, where: str, expression: str, files: int) -> None:
    expected = _rows(table.scan(row_filter=expression).to_arrow())
    assert _rows(pba.lookup_sync(table, where)) == expected
    assert len(resolve_table(table, pba.parse_predicate(where)).files) == files


def test_deleted_rows_and_replaced_files_are_never_read(table: Any, tmp_path: Path) -> None:
    before = {t.file.file_path for t in table.scan().plan_files()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # merge-on-read falls back to copy-on-write
        table.delete("id = 5")
    after = {t.file.file_path for t in table.scan().plan_files()}
    replaced = before - after
    assert replaced
    for uri in replaced:
        path = Path(uri.removeprefix("file://"))
        assert path.exists()
        path.write_bytes(b"damaged: a replaced file is never read")
    verdicts = pba.prune_sync(table, "id IN (5, 6)")
    assert {v.file for v in verdicts}.isdisjoint(replaced)
    assert pba.lookup_sync(table, "id IN (5, 6)").to_pylist() == [{"id": 6, "s": "s6", "p": "a"}]


def test_written_by_pyiceberg_itself(tmp_path: Path) -> None:
    catalog = sql_catalog(tmp_path)
    properties = {"write.parquet.bloom-filter-enabled.column.id": "true"}
    tbl = catalog.create_table("ns.w", schema=SCHEMA, properties=properties)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyiceberg 0.12 says it writes no filters yet
        tbl.append(_chunk(0, 100))
        tbl.append(_chunk(100, 200))
    verdicts = pba.prune_sync(tbl, "id = 150")
    assert len(verdicts) == 1  # the manifests' bounds leave one file
    got = pba.lookup_sync(tbl, "id IN (42, 150)", columns=["s"])
    assert sorted(r["s"] for r in got.to_pylist()) == ["s150", "s42"]


def test_types_are_pyicebergs_scans(tmp_path: Path) -> None:
    """Strings, binaries, lists, maps and structs come back typed as pyiceberg's own scan
    types them (the lookup gave large_string, large_binary and large_list, with field ids),
    an empty answer and a pruned dataset too."""
    schema = Schema(
        NestedField(1, "id", LongType(), required=False),
        NestedField(2, "s", StringType(), required=False),
        NestedField(3, "b", BinaryType(), required=False),
        NestedField(4, "l", ListType(5, StringType(), element_required=False), required=False),
        NestedField(6, "m", MapType(7, StringType(), 8, BinaryType(), value_required=False),
                    required=False),
        NestedField(9, "st", StructType(NestedField(10, "a", StringType(), required=False)),
                    required=False),
    )  # fmt: skip
    tbl = sql_catalog(tmp_path).create_table("ns.types", schema=schema)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyiceberg 0.12 says it writes no filters yet
        tbl.append(pa.table({
            "id": pa.array([1, 2], pa.int64()), "s": ["a", "b"], "b": [b"x", b"y"],
            "l": [["q"], ["r"]], "st": [{"a": "z"}, None],
            "m": pa.array([[("k", b"v")], []], pa.map_(pa.string(), pa.binary())),
        }))  # fmt: skip
    expected = tbl.scan().to_arrow().schema
    assert pa.types.is_string(expected.field("s").type)
    for where in ("id = 1", "id = 7"):
        assert pba.lookup_sync(tbl, where).schema.equals(expected, check_metadata=True)
    assert pba.pruned_dataset_sync(tbl, "id = 1").schema.equals(expected, check_metadata=True)


def test_mistakes_are_errors(table: Any) -> None:
    with pytest.raises(PredicateError, match="no such column"):
        pba.prune_sync(table, "idd = 3")
    with pytest.raises(PredicateError):
        pba.lookup_sync(table, "id = 'abc'")


def _cli(home: Path, *argv: str, blocked: bool = False) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ, "HOME": str(home),
        "PYICEBERG_CATALOG__TEST__TYPE": "sql",
        "PYICEBERG_CATALOG__TEST__URI": f"sqlite:///{home / 'catalog.db'}",
        "PYICEBERG_CATALOG__TEST__WAREHOUSE": (home / "wh").as_uri(),
    }  # fmt: skip
    if blocked:  # pyiceberg made unimportable in the child
        blocker = home / "block"
        blocker.mkdir(exist_ok=True)
        (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['pyiceberg'] = None\n")
        env["PYTHONPATH"] = os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")])
    script = Path(sys.executable).parent / "pybloom-async"
    return subprocess.run(
        [str(script), *argv], capture_output=True, text=True, timeout=120, env=env
    )


def test_cli_iceberg(table: Any, tmp_path: Path) -> None:
    done = _cli(tmp_path, "lookup", "--iceberg", "test.ns.t", "--where", "id IN (7, 301)",
                "-f", "json", "-q")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert '"id": 7' in done.stdout and '"id": 301' in done.stdout
    done = _cli(tmp_path, "prune", "--iceberg", "test.ns.t", "--where", "id = 7", "--summary")
    assert done.returncode == 0 and "1/1 row group kept" in done.stdout, done.stderr
    done = _cli(tmp_path, "prune", "--iceberg", "test.ns.nope", "--where", "id = 7")
    assert done.returncode == 2 and "cannot load the Iceberg table" in done.stderr
    done = _cli(tmp_path, "prune", "--iceberg", "test", "--where", "id = 7")
    assert done.returncode == 2 and "CATALOG.NAMESPACE.TABLE" in done.stderr
    done = _cli(tmp_path, "lookup", "--iceberg", "test.ns.t", "--where", "id = 7", blocked=True)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "pybloom-async: error: pyiceberg is needed to read Iceberg tables: "
        "install pybloom-async[iceberg]"
    )


def test_cli_iceberg_empty_answer_resolves_the_table_once(
    table: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty answer's schema came from a second lookup of the table (its manifests
    read again): it comes from the first."""
    import pyiceberg.catalog
    from pyiceberg.utils.config import Config

    import pybloom_async.rows.tables
    from pybloom_async.apps.cli import main

    for key, value in {
        "TYPE": "sql", "URI": f"sqlite:///{tmp_path / 'catalog.db'}",
        "WAREHOUSE": (tmp_path / "wh").as_uri(),
    }.items():  # fmt: skip
        monkeypatch.setenv(f"PYICEBERG_CATALOG__TEST__{key}", value)
    # pyiceberg reads its environment once, when first imported: read it again.
    monkeypatch.setattr(pyiceberg.catalog, "_ENV_CONFIG", Config())
    resolved: list[object] = []
    resolve = pybloom_async.rows.tables.resolve_table

    def counted(*args: Any, **kwargs: Any) -> Any:
        resolved.append(args[0])
        return resolve(*args, **kwargs)

    monkeypatch.setattr(pybloom_async.rows.tables, "resolve_table", counted)
    out = tmp_path / "rows.parquet"
    argv = ["lookup", "--iceberg", "test.ns.t", "-w", "id = 100000", "-f", "parquet"]
    assert main([*argv, "--out", str(out), "-q"]) == 0
    assert len(resolved) == 1
    got = pq.read_table(out)
    assert got.num_rows == 0 and got.schema == table.scan().to_arrow().schema


def test_pruned_dataset_of_the_table(table: Any) -> None:
    polars = pytest.importorskip("polars")
    dataset = pba.pruned_dataset_sync(table, "p = 'a' AND id IN (120, 121)")
    assert len(list(dataset.get_fragments())) == 1  # the manifests keep one file
    got = polars.scan_pyarrow_dataset(dataset).filter(polars.col("id").is_in([120, 121]))
    expected = _rows(table.scan(row_filter="p = 'a' AND id IN (120, 121)").to_arrow())
    assert sorted(got.collect().to_dicts(), key=lambda r: r["id"]) == expected


@pytest.mark.parametrize("where", ["id = 100000", "p = 'z'", "p = 'a' AND id IN (120, 121)"])
def test_pruned_dataset_has_the_tables_schema_whatever_is_kept(table: Any, where: str) -> None:
    """Statistics ruling out every file leave an empty dataset the engines still query."""
    duckdb = pytest.importorskip("duckdb")
    polars = pytest.importorskip("polars")
    dataset = pba.pruned_dataset_sync(table, where)
    assert dataset.schema.equals(table.scan().to_arrow().schema, check_metadata=True)
    con = duckdb.connect()
    con.register("t", dataset)
    got = con.sql(f"SELECT id, s, p FROM t WHERE {where}").to_arrow_table()
    assert _rows(got) == _rows(table.scan(row_filter=where).to_arrow())
    frame = polars.scan_pyarrow_dataset(dataset).select("id", "s", "p").collect()
    assert frame.columns == ["id", "s", "p"]


def test_pruned_dataset_refuses_files_with_deletes(table: Any, tmp_path: Path) -> None:
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    from pybloom_async.pruning.api import CompiledPredicate
    from pybloom_async.pruning.partitions import PartitionPredicate
    from pybloom_async.read.run import open_run
    from pybloom_async.rows.dataset import dataset_from_files

    files = resolve_table(table, pba.parse_predicate("id = 1"))
    (data_path,) = [f.path for f in files.files]
    delete_file = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES, file_path=(tmp_path / "d.parquet").as_uri(),
        file_format=FileFormat.PARQUET, partition=Record(), record_count=1,
        file_size_in_bytes=1,
    )  # fmt: skip
    files.tasks[data_path].delete_files.add(delete_file)

    async def build() -> Any:
        async with open_run() as run:
            parts = PartitionPredicate(CompiledPredicate("id = 1"), None)
            return await dataset_from_files(run, files.files, parts, table=files)

    import anyio

    with pytest.raises(UnsupportedTypeError, match="use lookup"):
        anyio.run(build)
