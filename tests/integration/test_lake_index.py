"""The lake index on a real S3 peer (moto) and through the console script."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.servers import table_guard_lists

from pybloom_async import build_lake_index_sync, col, prune_sync
from pybloom_async.io.base import SourceStats

FILES = 1000


def _parquet(ids: np.ndarray[Any, Any]) -> bytes:
    sink = io.BytesIO()
    table = pa.table({"id": pa.array(ids, pa.int64())})
    pq.write_table(table, sink, bloom_filter_options={"id": {"ndv": len(ids), "fpp": 0.01}})
    return sink.getvalue()


@pytest.fixture(scope="module")
def s3_lake(s3_server: Any) -> tuple[str, list[np.ndarray[Any, Any]]]:
    rng = np.random.default_rng(4)
    keys = []
    for i in range(FILES):
        ids = rng.integers(0, 2**62, 64)
        s3_server.put(f"lake1000/part-{i:04}.parquet", _parquet(ids))
        keys.append(ids)
    root = s3_server.url("lake1000/")
    built = build_lake_index_sync(root, ["id"], mode="filters", options=s3_server.options)
    assert built.files == FILES and len(built.folded) == FILES and not built.errors
    return root, keys


@pytest.mark.slow
@pytest.mark.servers
def test_one_key_over_1000_files_needs_three_requests_after_the_listing(
    s3_lake: Any, s3_server: Any
) -> None:
    root, keys = s3_lake
    for f in (0, 517, 999):
        stats = SourceStats()
        verdicts = prune_sync(
            root, col("id") == int(keys[f][9]), use_index="lake", row_groups=False,
            options=s3_server.options, stats=stats,
        )  # fmt: skip
        kept = [v.file for v in verdicts if v.kept]
        assert root + f"part-{f:04}.parquet" in kept
        assert len(kept) <= 30
        # The data listing (and the LISTs that look for a table above it), then: the
        # segment listing, its directory, one stripe.
        guard = table_guard_lists(root)
        assert stats.metadata_requests == 2 + guard
        assert stats.requests + stats.metadata_requests - 1 - guard <= 3
        assert stats.bytes_read <= 64 * 1024 + FILES * 32 + 4


@pytest.mark.slow
@pytest.mark.servers
def test_a_stale_object_on_s3_is_kept(s3_lake: Any, s3_server: Any) -> None:
    root, keys = s3_lake
    s3_server.put("lake1000/part-0003.parquet", _parquet(np.arange(64)))  # new ETag and size
    try:
        verdicts = prune_sync(
            root, col("id") == 5, use_index="lake", options=s3_server.options,
        )  # fmt: skip
        by_file = {v.file: v for v in verdicts}
        assert by_file[root + "part-0003.parquet"].kept
    finally:
        s3_server.put("lake1000/part-0003.parquet", _parquet(keys[3]))


SCRIPT = [sys.executable, "-m", "pybloom_async.apps.cli"]


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SCRIPT, *argv], capture_output=True, text=True, timeout=120, check=False
    )


def test_cli_build_compact_and_errors(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    root.mkdir()
    for i in range(3):
        (root / f"f{i}.parquet").write_bytes(_parquet(np.arange(i * 100, i * 100 + 100)))
    done = _cli("lake-index", "build", str(root), "--columns", "id", "--from-filters", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["files"] == 3
    done = _cli("lake-index", "build", str(root), "--columns", "id")
    assert done.returncode == 0 and "3 files indexed" in done.stdout
    done = _cli("lake-index", "compact", str(root))
    assert done.returncode == 0 and "2 segments merged into 1 segment" in done.stdout
    kept = prune_sync(str(root), "id = 150", use_index="lake", row_groups=False)
    assert [v.file.endswith("f1.parquet") for v in kept if v.kept] == [True]
    done = _cli("prune", str(root), "--lake-index", "--where", "id = 150", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [r["file"].endswith("f1.parquet") for r in rows if r["kept"]] == [True]
    assert {r["rule"] for r in rows if not r["kept"]} == {"lake_index"}
    done = _cli("prune", str(root), "--lake-index", "--where", "id = 150", "--summary")
    assert done.returncode == 0 and "lake index: 2/3 files skipped" in done.stdout, done.stdout
    for argv, code, message in [
        (["lake-index", "build", str(root), "--columns", "nope"], 2, "cannot index 'nope'"),
        (["lake-index", "build", str(root), "--columns", "id", "--fpp", "2"], 2, "fpp"),
        (["lake-index", "build", str(root)], 2, "give the columns"),
        (["lake-index", "compact", str(tmp_path / "none")], 2, "no lake index"),
        (["lake-index", "build", str(tmp_path / "none"), "-c", "id"], 2, "none"),
        (["prune", str(root), str(root), "--lake-index", "--where", "id = 1"], 2, "one PATH"),
        (["prune", str(root), "--lake-index", "--where", "id = 'x'"], 2, "'x'"),
    ]:
        done = _cli(*argv)
        assert done.returncode == code, (argv, done.stderr)
        assert message in done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    (root / "broken.parquet").write_bytes(b"not parquet")
    done = _cli("lake-index", "build", str(root), "--columns", "id")
    assert done.returncode == 3, done.stderr
    assert "broken.parquet" in done.stdout and "broken.parquet" in done.stderr


def test_cli_says_once_why_small_row_group_filters_are_not_folded(tmp_path: Path) -> None:
    """pyarrow sizes each row group's filter for its rows: 4 row groups of 6,000 ids get
    filters of 256 blocks, and a file filter for 24,000 ids needs 1,024 at fpp 0.01."""
    root = tmp_path / "lake"
    root.mkdir()
    for i in range(6):
        ids = pa.array(range(i * 24_000, (i + 1) * 24_000), pa.int64())
        pq.write_table(pa.table({"id": ids}), root / f"f{i}.parquet", row_group_size=6_000,
                       bloom_filter_options={"id": True})  # fmt: skip
    done = _cli("lake-index", "build", str(root), "--columns", "id", "--from-filters")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith("6 files indexed, 0 folded from their filters")
    why = [line for line in lines if "256 blocks" in line]
    assert len(why) == 1, done.stdout  # said once, not once per file
    assert why[0].startswith("  6 files built from their values instead of folded (")
    assert "fewer than the 1024 a file filter needs here for fpp 0.01" in why[0]
    assert "never more" in why[0] and "too full" in why[0]
    rate = re.fullmatch(
        r"  id: false-positive rate ([\d.e-]+) on average, ([\d.e-]+) at most \(target 0.01\)",
        lines[-1],
    )
    assert rate is not None, done.stdout
    assert 0.002 < float(rate[1]) <= float(rate[2]) < 0.015
    built = json.loads(
        _cli("lake-index", "build", str(root), "-c", "id", "--from-filters", "--json").stdout
    )
    assert set(built["fpp"]["id"]) == {"mean", "max"} and len(built["from_values"]) == 6


def test_cli_compact_says_why_segments_are_left(tmp_path: Path) -> None:
    root = tmp_path / "lake"
    root.mkdir()
    for i in range(3):
        table = pa.table({"id": pa.array(range(i * 100, i * 100 + 100), pa.int64()),
                          "n": pa.array(range(100), pa.int64())})  # fmt: skip
        pq.write_table(table, root / f"f{i}.parquet")
    assert _cli("lake-index", "build", str(root), "-c", "id").returncode == 0
    assert _cli("lake-index", "build", str(root), "-c", "id,n").returncode == 0
    done = _cli("lake-index", "compact", str(root))
    # Different columns never merge: said, with both segments named, and exit 3.
    assert done.returncode == 3, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("0 segments merged into 0 segments, 2 left as they are")
    assert len(lines) == 3 and all(line.startswith("  left ") for line in lines[1:])
    assert "it indexes id; other segments index id, n: only segments of the same columns" in (
        lines[1] + lines[2]
    )
    assert "2/2 segments cannot be merged (they index other columns): " in done.stderr
    assert json.loads(_cli("lake-index", "compact", str(root), "--json").stdout)["other_columns"]
    # One segment per size class is as compact as it gets: said, exit 0.
    other = tmp_path / "other"
    other.mkdir()
    small = pa.table({"id": pa.array(range(10), pa.int64())})
    large = pa.table({"id": pa.array(range(100_000), pa.int64())})
    pq.write_table(small, other / "small.parquet")
    pq.write_table(large, other / "large.parquet")
    assert _cli("lake-index", "build", str(other), "-c", "id").returncode == 0
    done = _cli("lake-index", "compact", str(other))
    assert done.returncode == 0, done.stderr
    assert "0 segments merged into 0 segments, 2 left as they are" in done.stdout
    assert done.stdout.count("the only segment of its size class: id (") == 2
