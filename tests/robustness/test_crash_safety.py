"""Crash safety of sidecar-index writes: SIGKILL at random moments of ``index build``.

Each run indexes a small lake in a subprocess and is killed after a delay spread
over the whole run. Afterwards every data file must be byte-identical, every index
under its final name must be complete (byte-equal to the index of an uninterrupted
run, which is deterministic), and anything else left behind must be a hidden
temporary file. (``add-filters`` has the same test in ``test_add_filters.py``.)
"""

from __future__ import annotations

import dataclasses
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pybloom_async.index.format import INDEX_DIR, SidecarIndex, index_location
from pybloom_async.index.parse import parse_index

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

KILLS = 30
FILES = 6


def _lake(root: Path) -> dict[Path, bytes]:
    rng = np.random.default_rng(5)
    root.mkdir()
    originals = {}
    for f in range(FILES):
        n = 60_000
        table = pa.table(
            {
                "k": pa.array(rng.integers(0, 2**62, n)),
                "s": pa.array([f"user-{v:x}" for v in rng.integers(0, 2**40, n)]),
            }
        )
        path = root / f"part-{f}.parquet"
        pq.write_table(table, path, row_group_size=20_000)
        originals[path] = path.read_bytes()
    return originals


def _same_file(index: SidecarIndex) -> SidecarIndex:
    return dataclasses.replace(index, file_inode=0, file_ctime_ns=0)


@pytest.mark.slow
def test_killed_index_builds_leave_data_intact_and_no_partial_index(tmp_path: Path) -> None:
    pristine = tmp_path / "pristine"
    originals = _lake(pristine)
    command = [sys.executable, "-m", "pybloom_async.apps.cli", "index", "build", "--columns", "k,s"]
    # One uninterrupted run: the expected indexes, and how long a run takes.
    reference = tmp_path / "reference"
    shutil.copytree(pristine, reference)
    started = time.perf_counter()
    proc = subprocess.Popen([*command, str(reference)], stdout=subprocess.DEVNULL)
    first_write = None
    while proc.poll() is None:
        if first_write is None and (reference / INDEX_DIR).exists():
            first_write = time.perf_counter() - started
        time.sleep(0.002)
    full = time.perf_counter() - started
    assert proc.returncode == 0 and first_write is not None
    expected = {
        name: Path(index_location(str(reference / name))).read_bytes()
        for name in (p.name for p in originals)
    }
    for data in expected.values():
        parse_index(data)  # complete and valid
    outcomes = {"indexes complete": 0, "indexes partly written": 0, "no index yet": 0}
    leftovers = 0
    for i in range(KILLS):
        work = tmp_path / f"run-{i}"
        shutil.copytree(pristine, work)
        proc = subprocess.Popen(
            [*command, str(work)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        # A few kills before any index exists, most spread over the writes, and the last
        # runs are let finish (a loaded machine may run slower than the reference run).
        if i < KILLS - 3:
            low = 0.8 * first_write if i >= 3 else 0.2 * first_write
            time.sleep(low + (1.1 * full - low) * (i + 0.5) / (KILLS - 3))
            proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=300)
        for path, data in originals.items():
            assert (work / path.name).read_bytes() == data, f"run {i}: {path.name} changed"
        written = 0
        index_dir = work / INDEX_DIR
        names = sorted(p.name for p in index_dir.iterdir()) if index_dir.exists() else []
        for name in names:
            if name.startswith(".") and name.endswith(".tmp"):
                leftovers += 1  # a hidden temporary of a write SIGKILL interrupted
                continue
            data_name = name.removesuffix(".index.v1.pbi")
            assert data_name in expected, f"run {i}: unexpected file {name}"
            # Complete and valid, and the reference's but for the copy's own inode and
            # change time (each copy of the lake is a new file).
            found = _same_file(parse_index((index_dir / name).read_bytes()))
            assert found == _same_file(parse_index(expected[data_name])), (
                f"run {i}: partial index under the final name {name}"
            )
            written += 1
        if written == FILES:
            outcomes["indexes complete"] += 1
        elif written:
            outcomes["indexes partly written"] += 1
        else:
            outcomes["no index yet"] += 1
        shutil.rmtree(work)
    print(f"outcomes {outcomes}; hidden temporary files left by killed runs: {leftovers}")
    # The kills landed before, during and after the writes.
    assert outcomes["no index yet"] and outcomes["indexes complete"], outcomes
