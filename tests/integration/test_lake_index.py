"""The lake index on a real S3 peer (moto) and through the console script."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

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
        # The data listing, then: the segment listing, its directory, one stripe.
        assert stats.metadata_requests == 2
        assert stats.requests + stats.metadata_requests - 1 <= 3
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
