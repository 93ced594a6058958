"""One index policy for every entry point (``pybloom_async.index_policy``): by default the
lake index under one directory serves ``prune``, lookups, ``pruned_dataset``, the command
line and Spark's plan; ``"none"`` reads no index; ``"lake"`` without one is an error in one
line; and the rows are the same with the index as without it."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pybloom_async as pba
from pybloom_async import Rule, SourceStats, build_lake_index_sync, col
from pybloom_async.apps.cli import main
from pybloom_async.errors import InvalidArgumentError

ROWS = 500
FILES = 8


def _write(path: Path, ids: np.ndarray[Any, Any]) -> None:
    table = pa.table({"id": pa.array(ids, pa.int64()), "s": [f"k{v}" for v in ids.tolist()]})
    options = {"id": {"ndv": ROWS, "fpp": 0.01}}
    pq.write_table(table, path, row_group_size=ROWS // 2, bloom_filter_options=options)


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    """Eight files of disjoint random ids, each with filters, and a lake index on ``id``."""
    root = tmp_path / "lake"
    root.mkdir()
    rng = np.random.default_rng(7)
    for i in range(FILES):
        _write(root / f"f{i}.parquet", rng.integers(0, 10**12, ROWS) * FILES + i)
    build_lake_index_sync(str(root), ["id"])
    return root


def _a_key(root: Path, file: int) -> int:
    return int(pq.read_table(root / f"f{file}.parquet").column("id")[3].as_py())


def _no_index_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any listing of the lake index fails the test."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the lake index was listed")

    import pybloom_async.lake.prune as lake_prune

    monkeypatch.setattr(lake_prune, "listed_segments", refuse)
    try:
        import pybloom_async.index_policy.choice as choice
    except ImportError:  # before the policy had its module
        return
    monkeypatch.setattr(choice, "listed_segments", refuse)


def test_prune_uses_the_lake_index_by_default(lake: Path) -> None:
    key = _a_key(lake, 5)
    by_default, none = SourceStats(), SourceStats()
    verdicts = pba.prune_sync(str(lake), col("id") == key, stats=by_default)
    files_only = pba.prune_sync(str(lake), col("id") == key, use_index="none", stats=none)
    ruled_out = [v for v in verdicts if v.rule is Rule.LAKE_INDEX]
    # The files the index rules out: one verdict each, on the whole file, with its rows.
    assert ruled_out and all(v.row_group is None and not v.kept for v in ruled_out)
    assert all(v.num_rows == ROWS for v in ruled_out)
    assert by_default.requests < none.requests, (by_default, none)
    # The kept row groups are the same either way: the file holding the key's.
    kept = sorted((os.path.basename(v.file), v.row_group) for v in verdicts if v.kept)
    assert kept == sorted((os.path.basename(v.file), v.row_group) for v in files_only if v.kept)
    assert {f for f, _ in kept} == {"f5.parquet"}


def test_pruned_dataset_uses_the_lake_index(lake: Path) -> None:
    key = _a_key(lake, 2)
    by_default, none = SourceStats(), SourceStats()
    dataset = pba.pruned_dataset_sync(str(lake), col("id") == key, stats=by_default)
    whole = pba.pruned_dataset_sync(str(lake), col("id") == key, use_index="none", stats=none)
    files = {os.path.basename(f.path) for f in dataset.get_fragments()}
    assert files == {"f2.parquet"}
    assert by_default.requests < none.requests, (by_default, none)
    # The schema is the same, and so are the rows an engine reads from it.
    assert dataset.schema == whole.schema
    assert dataset.to_table().equals(whole.to_table())


def test_none_reads_no_index(lake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = _a_key(lake, 1)
    expected = pq.read_table(lake / "f1.parquet").filter(pa.compute.field("id") == key)
    _no_index_read(monkeypatch)
    assert pba.lookup_sync(str(lake), col("id") == key, use_index="none").equals(expected)
    assert pba.lookup_sync(str(lake), col("id") == key, use_index=None).equals(expected)
    verdicts = pba.prune_sync(str(lake), col("id") == key, use_index="none")
    assert all(v.rule is not Rule.LAKE_INDEX for v in verdicts)
    dataset = pba.pruned_dataset_sync(str(lake), col("id") == key, use_index="none")
    assert dataset.to_table().filter(pa.compute.field("id") == key).equals(expected)
    with pytest.raises(AssertionError, match="listed"):
        pba.lookup_sync(str(lake), col("id") == key)  # "auto" does list it


@pytest.mark.parametrize("entry", ["prune", "lookup", "pruned_dataset"])
def test_lake_without_an_index_is_one_line(tmp_path: Path, entry: str) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    _write(root / "a.parquet", np.arange(ROWS))
    call = getattr(pba, f"{entry}_sync")
    stats = SourceStats()
    with pytest.raises(InvalidArgumentError, match="no lake index under it") as raised:
        call(str(root), "id = 3", use_index="lake", stats=stats)
    assert "\n" not in str(raised.value) and str(root) in str(raised.value)
    assert stats.requests == 0  # no footer read
    call(str(root), "id = 3")  # by default, through the files' own filters


def test_bad_choices_are_one_line_errors(lake: Path) -> None:
    for bad in ("lakes", True, 1):
        with pytest.raises(InvalidArgumentError, match="use_index must be one of"):
            pba.lookup_sync(str(lake), "id = 1", use_index=bad)
    with pytest.raises(InvalidArgumentError, match="applies to prune only"):
        pba.lookup_sync(str(lake), "id = 1", use_index="sidecar")
    with pytest.raises(InvalidArgumentError, match="applies to prune only"):
        pba.pruned_dataset_sync(str(lake), "id = 1", use_index="sidecar")
    # Spark's older booleans, where they are accepted.
    from pybloom_async.index_policy.choice import index_choice

    assert index_choice(True, booleans=True) == "sidecar"
    assert index_choice(False, booleans=True) == "none"


def test_rows_are_the_same_with_and_without_the_index(lake: Path) -> None:
    """Present keys, an absent one, a range and a file replaced after the build (stale: read
    through its own filters): the lake index changes what is read, never the rows."""
    _write(lake / "f3.parquet", np.arange(ROWS) * FILES + 3)  # stale in the index now
    keys = [_a_key(lake, 0), _a_key(lake, 6), 11, 3 + FILES * 7]
    wheres: list[Any] = [col("id").isin(keys), col("id") == -1, "id < 100 OR s = 'k11'"]
    for where in wheres:
        rows = pba.lookup_sync(str(lake), where)
        assert rows.equals(pba.lookup_sync(str(lake), where, use_index="none")), where
        forced = pba.lookup_sync(str(lake), where, use_index="lake")
        assert forced.equals(rows), where
    stale = pba.prune_sync(str(lake), col("id") == 3 + FILES * 7)
    assert any(v.kept and v.file.endswith("f3.parquet") for v in stale)


def _cli(*argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    code = main(list(argv), out)
    return code, json.loads(out.getvalue()) if out.getvalue() else {}


def test_cli_index_option(lake: Path) -> None:
    where = f"id = {_a_key(lake, 4)}"
    base = ("prune", str(lake), "--where", where, "--summary", "--json")
    code, auto = _cli(*base)
    assert code == 0
    code, none = _cli(*base, "--index", "none")
    assert code == 0
    assert auto["requests"] < none["requests"], (auto, none)
    assert auto["sidecar_index"]["files_skipped"] == FILES - 1 and "sidecar_index" not in none
    code, lake_kind = _cli(*base, "--index", "lake")
    code_old, lake_old = _cli(*base, "--lake-index")
    assert code == code_old == 0 and lake_kind == lake_old == auto
    assert main(["prune", str(lake), "--where", where, "--index", "lake", "--use-index"]) == 2
    code, rows = _cli("lookup", str(lake), "--where", where, "--format", "json", "--index", "none")
    assert code == 0
    code, rows_auto = _cli("lookup", str(lake), "--where", where, "--format", "json")
    assert rows == rows_auto and len(rows) == 1


def test_partition_folders_and_the_lake_index_together(tmp_path: Path) -> None:
    """key=value folders are decided first (the files they rule out get no verdict, as
    without the index); the index then rules out the others it can; rows and kept row
    groups are those of the files' own filters."""
    root = tmp_path / "hive"
    rng = np.random.default_rng(5)
    for day in ("2026-01-01", "2026-01-02"):
        (root / f"dt={day}").mkdir(parents=True)
        for i in range(3):
            _write(root / f"dt={day}" / f"f{i}.parquet", rng.integers(0, 10**12, ROWS))
    build_lake_index_sync(str(root), ["id"])
    key = int(pq.read_table(root / "dt=2026-01-02" / "f1.parquet").column("id")[9].as_py())
    for where in (f"dt = '2026-01-02' AND id = {key}", f"dt = '2026-01-01' OR id = {key}"):
        auto = pba.prune_sync(str(root), where)
        none = pba.prune_sync(str(root), where, use_index="none")
        kept = sorted((v.file, v.row_group) for v in auto if v.kept)
        assert kept == sorted((v.file, v.row_group) for v in none if v.kept), where
        assert {v.file for v in auto} == {v.file for v in none}, where
        rows = pba.lookup_sync(str(root), where)
        assert rows.equals(pba.lookup_sync(str(root), where, use_index="none")), where
    assert any(v.rule is Rule.LAKE_INDEX for v in pba.prune_sync(str(root), f"id = {key}"))


def _raises_or_answer(call: Any) -> str:
    try:
        call()
    except pba.PredicateError as exc:
        return f"PredicateError: {str(exc).split(';')[0]}"  # (files counted may differ)
    return "answer"


@pytest.mark.parametrize(
    "where",
    [
        "id = -1 AND s = 5",  # the index rules out every file: s is typed by their schemas
        "id = -1 AND s > 5",
        "id = -1 AND nosuch = 5",  # and they hold the columns
        "id = -1 OR nosuch = 5",
    ],
)
def test_a_mistake_is_an_error_whichever_files_the_index_rules_out(lake: Path, where: str) -> None:
    """The files the lake index rules out count as read (their schemas from its digest):
    a literal typed wrong, or a column no file has, is the error it is without the index,
    at every door, never an empty answer."""

    async def batches() -> None:
        async for _ in pba.lookup_batches(str(lake), where):
            pass

    calls = {
        "prune": lambda **kw: pba.prune_sync(str(lake), where, **kw),
        "lookup": lambda **kw: pba.lookup_sync(str(lake), where, **kw),
        "pruned_dataset": lambda **kw: pba.pruned_dataset_sync(str(lake), where, **kw),
    }
    for name, call in calls.items():
        without = _raises_or_answer(lambda: call(use_index="none"))  # noqa: B023
        assert without.startswith("PredicateError"), (name, without)
        for choice in ("auto", "lake"):
            assert _raises_or_answer(lambda: call(use_index=choice)) == without, (name, choice)  # noqa: B023
    # File verdicts alone read no file: the digest's schemas of every file check them.
    verdicts_only = _raises_or_answer(lambda: pba.prune_sync(str(lake), where, row_groups=False))
    assert verdicts_only == _raises_or_answer(lambda: calls["prune"](use_index="none"))
    with pytest.raises(pba.PredicateError):
        anyio.run(batches)
    code = main(["lookup", str(lake), "--where", where, "--format", "json"], io.StringIO())
    assert code == 2


def test_folders_that_rule_out_every_file_leave_the_checks_to_the_index_run(
    tmp_path: Path,
) -> None:
    """With a lake index, as without: where the folders rule out every file, a literal
    typed wrong or a column in no file is still an error (the footers of the files ruled
    out are read for it), and typed right the answer is empty."""
    root = tmp_path / "hive"
    for day in ("2026-01-01", "2026-01-02"):
        (root / f"dt={day}").mkdir(parents=True)
        _write(root / f"dt={day}" / "f.parquet", np.arange(ROWS) * FILES)
    build_lake_index_sync(str(root), ["id"])
    for where in ("dt = '2026-02-01' AND id = 'abc'", "dt = '2026-02-01' AND nosuch = 1"):
        for choice in ("auto", "lake", "none"):
            with pytest.raises(pba.PredicateError):
                pba.prune_sync(str(root), where, use_index=choice)
            with pytest.raises(pba.PredicateError):
                pba.lookup_sync(str(root), where, use_index=choice)
    for choice in ("auto", "lake", "none"):
        assert pba.prune_sync(str(root), "dt = '2026-02-01' AND id = 8", use_index=choice) == []
