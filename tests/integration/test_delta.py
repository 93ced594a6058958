"""Delta Lake tables (written by deltalake itself) as sources of prune and lookup."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.delta_logs import commit_deletion_vector
from support.descriptors import LISTS_DESCRIPTORS, fds_under

import pybloom_async as pba
from pybloom_async.errors import InvalidArgumentError, PredicateError, UnsupportedTypeError
from pybloom_async.io.base import SourceStats
from pybloom_async.io.store import StoreOptions
from pybloom_async.tables import resolve_table

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
deltalake = pytest.importorskip("deltalake")

ROWS = 400  # ids 0..399; p = 'a' for ids below 200, 'b' above; two files per partition


def _properties() -> Any:
    bloom = deltalake.BloomFilterProperties(set_bloom_filter_enabled=True, fpp=0.01, ndv=1000)
    column = deltalake.ColumnProperties(bloom_filter_properties=bloom)
    return deltalake.WriterProperties(column_properties={"id": column, "s": column})


def _chunk(start: int, stop: int) -> Any:
    ids = list(range(start, stop))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "s": [f"s{i}" for i in ids],
        "p": ["a" if i < ROWS // 2 else "b" for i in ids],
    })  # fmt: skip


def _write(path: Path, **configuration: str) -> Any:
    # Four appends: each partition gets two files with disjoint id ranges.
    for start in range(0, ROWS, ROWS // 4):
        deltalake.write_deltalake(
            path, _chunk(start, start + ROWS // 4), partition_by=["p"], mode="append",
            writer_properties=_properties(), configuration=configuration or None,
        )  # fmt: skip
    return deltalake.DeltaTable(path)


@pytest.fixture
def table(tmp_path: Path) -> Any:
    return _write(tmp_path / "t")


def _files(dt: Any) -> list[str]:
    return [str(f) for f in dt.file_uris()]


def _oracle(dt: Any, sql_where: str, columns: str = "id, s, p") -> list[dict[str, Any]]:
    """deltalake's own filtered scan (its DataFusion engine applies deletion vectors)."""
    query = deltalake.QueryBuilder().register("t", dt)
    rows = pa.table(query.execute(f"SELECT {columns} FROM t WHERE {sql_where}")).to_pylist()
    return sorted(rows, key=lambda r: (r.get("id"), r.get("s") or ""))


def _rows(table: Any) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: (r.get("id"), r.get("s") or ""))


def test_filters_are_written_and_used(table: Any) -> None:
    verdicts = pba.prune_sync(table, "id = 7")
    assert [v.kept for v in verdicts] == [True]  # stats leave one file, its filter admits 7
    verdicts = pba.prune_sync(table, "id IN (1001, 1002)")
    assert verdicts == []  # beyond every file's max: no footer read
    verdicts = pba.prune_sync(table, "s = 's5x'")  # inside every file's min/max
    assert len(verdicts) == 4 and not any(v.kept for v in verdicts)
    assert pba.Rule.BLOOM_FILTER in {v.rule for v in verdicts}  # ids 0..99: s0..s99


@pytest.mark.parametrize(
    ("where", "sql"),
    [
        ("id IN (3, 150, 250, 399, 1000)", "id IN (3, 150, 250, 399, 1000)"),
        ("p = 'b' AND s IN ('s3', 's301')", "p = 'b' AND s IN ('s3', 's301')"),
        ("p = 'a' OR id = 399", "p = 'a' OR id = 399"),
        ("s = 's42'", "s = 's42'"),
    ],
)
def test_lookup_equals_deltalakes_scan(table: Any, where: str, sql: str) -> None:
    assert _rows(pba.lookup_sync(table, where)) == _oracle(table, sql)


#: (predicate, its SQL for deltalake's own scan, files its first stage keeps: the ids are
#: 0..99 and 100..199 in partition a, 200..299 and 300..399 in b)
RANGES = [
    ("id < 50", "id < 50", 1),
    ("id >= 350 AND p = 'b'", "id >= 350 AND p = 'b'", 1),
    ("id BETWEEN 90 AND 110", "id BETWEEN 90 AND 110", 2),
    ("NOT id < 300", "NOT id < 300", 1),
    ("p > 'a'", "p > 'a'", 2),
    ("p != 'a' AND id <= 210", "p <> 'a' AND id <= 210", 1),
    ("NOT p = 'a' OR id = 7", "NOT p = 'a' OR id = 7", 3),
    ("id != 5", "id <> 5", 4),
    ("id NOT IN (1, 2, 3) AND id < 5", "id NOT IN (1, 2, 3) AND id < 5", 1),
    ("s >= 's39' AND s < 's4'", "s >= 's39' AND s < 's4'", 4),  # string statistics: kept
    ("NOT (p = 'a' OR id > 210)", "NOT (p = 'a' OR id > 210)", 1),
    ("p IS NOT NULL AND id BETWEEN 5 AND 3", "p IS NOT NULL AND id BETWEEN 5 AND 3", 0),
    # SQL: unknown for every row (DuckDB agrees); deltalake 1.6's engine returns p = 'b'.
    ("p NOT IN ('a', NULL)", "FALSE", 0),
    ("NOT p <=> 'a'", "NOT (p IS NOT DISTINCT FROM 'a')", 2),
    ("id > 399.5 OR id < -0.5", "id > 399.5 OR id < -0.5", 4),  # not integers: kept
]


@pytest.mark.parametrize(("where", "sql", "files"), RANGES, ids=[r[0] for r in RANGES])
def test_ranges_equal_deltalakes_scan(table: Any, where: str, sql: str, files: int) -> None:
    """Partition values compared exactly, integer statistics as bounds, then the rows."""
    assert _rows(pba.lookup_sync(table, where)) == _oracle(table, sql)
    assert len(resolve_table(table, pba.parse_predicate(where)).files) == files


def test_partition_column_in_where_and_columns(table: Any) -> None:
    got = pba.lookup_sync(table, "p = 'b' AND id = 301", columns=["p", "s"])
    assert got.to_pylist() == [{"p": "b", "s": "s301"}]
    assert got.schema.names == ["p", "s"]
    assert pba.lookup_sync(table, "p = 'b'", columns=["id"]).num_rows == ROWS // 2
    assert pba.lookup_sync(table, "p = 'c'").num_rows == 0


def test_partitions_and_statistics_touch_no_excluded_footer(table: Any, tmp_path: Path) -> None:
    stats = SourceStats()
    verdicts = pba.prune_sync(table, "p = 'a' AND id = 120", stats=stats)
    kept = {v.file for v in verdicts}
    assert len(kept) == 1 and "p=a" in next(iter(kept))  # partition b out, then id's range
    assert stats.requests == 1  # the one file's footer (its filter comes in the tail)
    # The excluded files are not even opened: damage them and nothing changes.
    for path in _files(table):
        if path not in kept:
            Path(path).write_bytes(b"not parquet")
    assert pba.prune_sync(table, "p = 'a' AND id = 120") == verdicts
    assert pba.lookup_sync(table, "p = 'a' AND id = 120").to_pylist() == [
        {"id": 120, "s": "s120", "p": "a"}
    ]


def test_removed_files_are_never_read(tmp_path: Path) -> None:
    dt = _write(tmp_path / "t")
    before = set(_files(dt))
    dt.delete("id = 5")  # rewrites the file that held it; the old one stays on disk
    dt = deltalake.DeltaTable(tmp_path / "t")
    removed = before - set(_files(dt))
    assert len(removed) == 1 and all(Path(p).exists() for p in removed)
    for path in removed:
        Path(path).write_bytes(b"damaged: a removed file is never read")
    verdicts = pba.prune_sync(dt, "id IN (5, 6)")
    assert {v.file for v in verdicts}.isdisjoint(removed)
    assert all(v.rule is not pba.Rule.UNREADABLE for v in verdicts)
    assert pba.lookup_sync(dt, "id IN (5, 6)").to_pylist() == [{"id": 6, "s": "s6", "p": "a"}]


def test_a_given_version(tmp_path: Path) -> None:
    dt = _write(tmp_path / "t")
    dt.delete("id = 5")
    old = deltalake.DeltaTable(tmp_path / "t", version=3)  # before the delete
    assert pba.lookup_sync(old, "id = 5").to_pylist() == [{"id": 5, "s": "s5", "p": "a"}]
    assert pba.lookup_sync(deltalake.DeltaTable(tmp_path / "t"), "id = 5").num_rows == 0


def test_deletion_vectors_are_applied(tmp_path: Path) -> None:
    dt = _write(tmp_path / "t", **{"delta.enableDeletionVectors": "true"})
    first = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
    holder = next(a["path"] for a in first if a["min.id"] == 0)
    commit_deletion_vector(tmp_path / "t", holder, [2, 5, 99])  # ids 2, 5, 99
    dt = deltalake.DeltaTable(tmp_path / "t")
    got = pba.lookup_sync(dt, "id IN (1, 2, 5, 6, 99, 100)")
    assert _rows(got) == _oracle(dt, "id IN (1, 2, 5, 6, 99, 100)")
    assert [r["id"] for r in _rows(got)] == [1, 6, 100]
    batches = []

    async def collect() -> None:
        async for b in pba.lookup_batches(dt, "id IN (2, 3)"):
            batches.append(b)

    import anyio

    anyio.run(collect)
    assert [r["id"] for b in batches for r in b.to_pylist()] == [3]


@pytest.mark.skipif(not LISTS_DESCRIPTORS, reason="counts /proc/self/fd")
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_table_stream_closed_early_closes_its_file(
    table: Any, tmp_path: Path, backend: str
) -> None:
    # Keys in two files: the consumer stops after the first file's rows; closing the stream
    # closes the file it had open (nothing left for the garbage collector to finish).
    async def first_then_close() -> tuple[int, list[str]]:
        stream = pba.lookup_batches(table, "id IN (3, 390)")
        first = await anext(stream)
        open_now = fds_under(tmp_path / "t")
        await stream.aclose()
        return first.num_rows, open_now

    rows, open_now = anyio.run(first_then_close, backend=backend)
    assert rows == 1
    assert open_now
    assert fds_under(tmp_path / "t") == []


def test_deletion_vectors_in_a_partition_that_needs_escaping(tmp_path: Path) -> None:
    data = pa.table({"id": pa.array(range(6), pa.int64()), "p": ["a b%"] * 3 + ["c"] * 3})
    deltalake.write_deltalake(
        tmp_path / "t", data, partition_by=["p"],
        configuration={"delta.enableDeletionVectors": "true"},
    )  # fmt: skip
    log = (tmp_path / "t" / "_delta_log" / f"{0:020d}.json").read_text().splitlines()
    adds = [json.loads(line)["add"]["path"] for line in log if '"add"' in line]
    commit_deletion_vector(tmp_path / "t", next(p for p in adds if p.startswith("p=a")), [1])
    dt = deltalake.DeltaTable(tmp_path / "t")
    got = pba.lookup_sync(dt, "id IN (0, 1, 2, 3)")
    assert _rows(got) == _oracle(dt, "id IN (0, 1, 2, 3)", "id, p")
    assert [r["id"] for r in _rows(got)] == [0, 2, 3]


def test_mistakes_are_errors(table: Any) -> None:
    with pytest.raises(PredicateError, match="no such column"):
        pba.prune_sync(table, "idd = 3")
    with pytest.raises(PredicateError, match="no such column"):
        pba.lookup_sync(table, "id = 3", columns=["nope"])
    with pytest.raises(PredicateError):
        pba.lookup_sync(table, "id = 'abc'")  # not an integer
    with pytest.raises(InvalidArgumentError, match="on_error"):
        pba.lookup_sync(table, "id = 3", on_error="skip")
    # The arguments are checked as for files, whatever the source.
    for bad, match in [
        ({"columns": "id"}, "list of column names"),
        ({"columns": ["id", "id"]}, "named twice"),
        ({"page_index": "yes"}, "page_index"),
        ({"max_fetch_bytes": 0}, "max_fetch_bytes"),
        ({"on_error": "ignore"}, "on_error"),
    ]:
        with pytest.raises(InvalidArgumentError, match=match):
            pba.lookup_sync(table, "id = 3", **bad)
        with pytest.raises(InvalidArgumentError, match=match):
            anyio.run(anext, pba.lookup_batches(table, "id = 3", **bad))
    with pytest.raises(InvalidArgumentError, match="partition column"):
        pba.prune_sync(table, "p = 'a' AND id = 3", on_error="raise")
    assert len(pba.prune_sync(table, "id = 3", on_error="raise")) == 1


def test_column_mapping_is_refused(tmp_path: Path) -> None:
    # Its files name columns by physical names: a lookup by logical names would find nothing.
    deltalake.write_deltalake(
        tmp_path / "m", _chunk(0, 10), configuration={
            "delta.columnMapping.mode": "name", "delta.minReaderVersion": "2",
            "delta.minWriterVersion": "5",
        },
    )  # fmt: skip
    dt = deltalake.DeltaTable(tmp_path / "m")
    with pytest.raises(UnsupportedTypeError, match="column mapping"):
        pba.lookup_sync(dt, "id = 3")
    with pytest.raises(UnsupportedTypeError, match="column mapping"):
        pba.prune_sync(dt, "id = 3")


def test_reader_features_not_read_here_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dt = _write(tmp_path / "t", **{"delta.enableDeletionVectors": "true"})
    import pybloom_async.tables.delta as delta

    monkeypatch.setattr(delta, "_READER_FEATURES", frozenset({"variantType"}))
    with pytest.raises(UnsupportedTypeError, match=r"reader feature.*deletionVectors"):
        pba.prune_sync(dt, "id = 3")


def test_first_stage_keeps_what_it_cannot_compare(table: Any) -> None:
    # A float literal for an integer column, a NULL probe: the first stage keeps every file.
    assert len(resolve_table(table, pba.parse_predicate("id = 3.0")).files) == 4
    assert len(resolve_table(table, pba.parse_predicate("id = NULL")).files) == 4
    assert len(resolve_table(table, pba.parse_predicate("p <=> NULL")).files) == 0
    assert len(resolve_table(table, pba.parse_predicate("id <=> NULL")).files) == 0


def test_on_s3_with_the_options_prune_takes(tmp_path: Path, s3_server: Any) -> None:
    uri = s3_server.url("delta/t")
    storage = {
        "aws_endpoint_url": s3_server.endpoint, "aws_region": s3_server.region,
        "aws_access_key_id": "testing", "aws_secret_access_key": "testing",
        "allow_http": "true", "aws_s3_allow_unsafe_rename": "true",
    }  # fmt: skip
    deltalake.write_deltalake(
        uri, _chunk(0, 100), partition_by=["p"], storage_options=storage,
        writer_properties=_properties(),
    )  # fmt: skip
    options = s3_server.options
    from pybloom_async.tables.delta import open_delta

    dt = open_delta(uri, None, StoreOptions(**options))
    verdicts = pba.prune_sync(dt, "id = 42", options=options)
    assert [v.kept for v in verdicts] == [True] and verdicts[0].file.startswith("s3://")
    assert pba.lookup_sync(dt, "id IN (42, 43)", options=options).to_pylist() == [
        {"id": 42, "s": "s42", "p": "a"},
        {"id": 43, "s": "s43", "p": "a"},
    ]


def _cli(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "pybloom-async"
    return subprocess.run(
        [str(script), *argv], capture_output=True, text=True, timeout=120,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def test_cli_delta(table: Any, tmp_path: Path) -> None:
    uri = str(tmp_path / "t")
    done = _cli("lookup", "--delta", uri, "--where", "id IN (7, 301)", "-f", "json")
    assert done.returncode == 0, done.stderr
    assert '"id": 7' in done.stdout and '"id": 301' in done.stdout
    assert done.stderr.startswith(f"2 rows returned from the table {uri}; ")
    done = _cli("prune", "--delta", uri, "--version", "0", "--where", "id = 7", "--summary")
    assert done.returncode == 0 and "1/1 row group kept" in done.stdout
    for argv in (
        ("prune", "--delta", uri, uri, "--where", "id = 7"),
        ("prune", "--where", "id = 7"),
        ("lookup", "--iceberg", "c.n.t", "--delta", uri, "--where", "id = 7"),
        ("lookup", str(tmp_path), "--version", "2", "--where", "id = 7"),
        ("lookup", "--delta", uri, "--version", "-1", "--where", "id = 7"),
        ("lookup", "--delta", uri, "--where", "idd = 7"),
    ):
        done = _cli(*argv)
        assert done.returncode == 2, (argv, done.stderr)
        assert done.stderr.count("\n") == 1 and "error:" in done.stderr
    done = _cli("lookup", "--delta", str(tmp_path / "none"), "--where", "id = 7")
    assert done.returncode == 2 and "cannot open the Delta table" in done.stderr


def test_missing_extra_is_one_clear_line(table: Any, tmp_path: Path) -> None:
    # deltalake made unimportable in the child: the command names the extra to install.
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['deltalake'] = None\n")
    env = {"PYTHONPATH": os.pathsep.join([str(blocker), os.environ.get("PYTHONPATH", "")])}
    done = _cli("lookup", "--delta", str(tmp_path / "t"), "--where", "id = 7", env=env)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "pybloom-async: error: deltalake is needed to read Delta tables: "
        "install pybloom-async[delta]"
    )


def test_pruned_dataset_of_the_table(table: Any) -> None:
    duckdb = pytest.importorskip("duckdb")
    where = "p = 'b' AND s IN ('s3', 's301', 's302')"
    dataset = pba.pruned_dataset_sync(table, where)
    assert len(list(dataset.get_fragments())) == 1  # partition a out, then one file's range
    assert "p" in dataset.schema.names  # a partition column, in no data file
    con = duckdb.connect()
    con.register("t", dataset)
    got = con.sql(f"SELECT id, s, p FROM t WHERE {where}").to_arrow_table()
    assert (
        _rows(got)
        == _oracle(table, where)
        == [
            {"id": 301, "s": "s301", "p": "b"},
            {"id": 302, "s": "s302", "p": "b"},
        ]
    )


@pytest.mark.parametrize("where", ["id = 100000", "p = 'z'", "id = 5", "p = 'b' AND id = 301"])
def test_pruned_dataset_has_the_tables_schema_whatever_is_kept(table: Any, where: str) -> None:
    """Statistics ruling out every file leave an empty dataset the engines still query."""
    duckdb = pytest.importorskip("duckdb")
    polars = pytest.importorskip("polars")
    dataset = pba.pruned_dataset_sync(table, where)
    assert dataset.schema == pa.schema(table.schema().to_arrow())  # the partition column too
    con = duckdb.connect()
    con.register("t", dataset)
    got = con.sql(f"SELECT id, s, p FROM t WHERE {where}").to_arrow_table()
    assert _rows(got) == _oracle(table, where)
    frame = polars.scan_pyarrow_dataset(dataset).select("id", "s", "p").collect()
    assert frame.columns == ["id", "s", "p"]


def test_a_struct_child_written_as_string_then_string_view(tmp_path: Path) -> None:
    """deltalake keeps the input's string in one append and writes string_view in another."""
    path = tmp_path / "t"
    for i, text in ((1, pa.string()), (2, pa.string_view())):
        child = pa.struct([("y", text)])
        data = pa.table({"id": pa.array([i], pa.int64()), "s": pa.array([{"y": f"v{i}"}], child)})
        deltalake.write_deltalake(path, data, mode="append")
    dt = deltalake.DeltaTable(path)
    assert len({str(pq.read_schema(f).field("s").type) for f in dt.file_uris()}) == 2
    assert pba.lookup_sync(dt, "s.y = 'v2'").to_pylist() == [{"id": 2, "s": {"y": "v2"}}]
    dataset = pba.pruned_dataset_sync(dt, "s.y IN ('v1', 'v2')")
    assert sorted(dataset.to_table().column("id").to_pylist()) == [1, 2]
    # The same files as plain files (copies: a table's folder is read as its table only).
    plain = tmp_path / "plain"
    plain.mkdir()
    files = [shutil.copy(f.removeprefix("file://"), plain) for f in dt.file_uris()]
    got = pba.lookup_sync(files, "s.y IN ('v1', 'v2')")
    assert sorted(got.column("id").to_pylist()) == [1, 2]
    assert got.schema.field("s").type == pa.struct([("y", pa.large_string())])


def test_pruned_dataset_refuses_deletion_vectors(tmp_path: Path) -> None:
    dt = _write(tmp_path / "t", **{"delta.enableDeletionVectors": "true"})
    first = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
    holder = next(a["path"] for a in first if a["min.id"] == 0)
    commit_deletion_vector(tmp_path / "t", holder, [2])
    dt = deltalake.DeltaTable(tmp_path / "t")
    with pytest.raises(UnsupportedTypeError, match="use lookup"):
        pba.pruned_dataset_sync(dt, "id IN (1, 2)")
    # A file without deleted rows is handed over as it is.
    dataset = pba.pruned_dataset_sync(dt, "id = 301")
    assert dataset.to_table(filter=pa.compute.field("id") == 301).num_rows == 1


def test_lake_index_at_the_table_root(table: Any) -> None:
    built = pba.build_lake_index_sync(table, ["id", "s"])
    assert built.files == len(_files(table))
    stats = SourceStats()
    verdicts = pba.prune_sync(table, "id = 301", use_index="lake", row_groups=False, stats=stats)
    # Statistics leave one file of partition b; the index, read at the table's root, keeps it.
    assert [v.kept for v in verdicts] == [True] and "p=b" in verdicts[0].file
    kept = pba.prune_sync(table, "s = 's301'", use_index="lake", row_groups=False)
    assert sum(v.kept for v in kept) <= 2 and any("p=b" in v.file and v.kept for v in kept)
    with pytest.raises(InvalidArgumentError, match="not a table"):
        pba.prune_sync(table, "id = 1", use_index="sidecar")
