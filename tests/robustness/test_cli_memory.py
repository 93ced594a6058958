"""The command line's memory over 20,000 files: the verdicts are written as they come.

``prune DIR --summary``, ``prune DIR --json`` and ``prune DIR --use-index --summary`` run
through the console script (``python -m pybloom_async.apps.cli``) over 200 and over
20,000 small files, each run in a fresh process; the peak RSS of the child
(its VmHWM, read by the process itself as it ends) may grow by at most
``GROWTH_BUDGET`` from the small run to the large one. The files are hard links to
one file written by pyarrow (each is its own path, so each is read), and so are their
sidecar indexes (built for the first file, stale for the others: those files then go
through the row-group pass too, the longest path).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pybloom_async.index.build import build_index_sync
from pybloom_async.index.format import index_location

pytestmark = pytest.mark.slow

FEW = 200
MANY = 20_000
#: Peak RSS growth allowed from FEW to MANY files (measured: 2.0 to 3.3 MiB; before the
#: names waiting to be read were one string, 3.2 to 3.5; before the files were read as
#: they are listed, 8.1 / 8.1 / 12.3 MiB, and before the verdicts were streamed, 33 to 40
#: MiB). No list of files, set of paths or verdict per file is held: what still grows is
#: the names of the one directory being listed (sorted, ~20 bytes each, and a list of
#: them while they are sorted) and the allocator's pools. ``--use-index`` grew 4.6 to 5.3
#: MiB while its two passes each read ``concurrency`` files at once: twice the worker
#: threads, whose stacks were most of it (index/prune.py, ``_Passes``).
GROWTH_BUDGET = 5 * 1024 * 1024

#: The console script's module run as ``__main__``, as ``python -m`` runs it, then the
#: process's peak RSS (VmHWM) written to the file named by argv[1]. Measured inside: a
#: child's ``ru_maxrss`` starts from the parent's peak (the pytest process's, here).
SCRIPT = [
    sys.executable,
    "-c",
    "import runpy, sys\n"
    "out = sys.argv.pop(1)\n"
    "try:\n"
    "    runpy.run_module('pybloom_async.apps.cli', run_name='__main__', alter_sys=True)\n"
    "finally:\n"
    "    with open('/proc/self/status') as f, open(out, 'w') as o:\n"
    "        o.write(next(l for l in f if l.startswith('VmHWM:')).split()[1])\n",
]


def make_lake(root: Path, n: int, model: Path) -> Path:
    """``n`` hard links to ``model`` and to its sidecar index, in ``root``."""
    root.mkdir()
    model_index = Path(index_location(str(model)))
    (root / "_bloom_index").mkdir()
    for i in range(n):
        name = f"part-{i:05d}.parquet"
        os.link(model, root / name)
        os.link(model_index, index_location(str(root / name)))
    return root


@pytest.fixture(scope="module")
def lakes(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    base = tmp_path_factory.mktemp("cli_memory")
    model = base / "model" / "part.parquet"
    model.parent.mkdir()
    ids = pa.array(range(100), pa.int64())
    pq.write_table(
        pa.table({"id": ids}),
        model,
        row_group_size=50,
        bloom_filter_options={"id": {"ndv": 50, "fpp": 0.01}},
    )
    build_index_sync(str(model), ["id"])
    return {n: make_lake(base / f"lake{n}", n, model) for n in (FEW, MANY)}


def peak_rss(argv: list[str], report: Path) -> int:
    """Run the console script; its peak RSS in bytes (its exit code checked)."""
    proc = subprocess.run(
        [*SCRIPT, str(report), *argv],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return int(report.read_text()) * 1024  # kB


@pytest.mark.parametrize(
    "options",
    [["--summary"], ["--json"], ["--use-index", "--summary"]],
    ids=["summary", "json", "use-index"],
)
def test_rss_growth_from_200_to_20000_files(
    lakes: dict[int, Path], options: list[str], tmp_path: Path
) -> None:
    if os.environ.get("PYBLOOM_ASYNC_EXPECT_NATIVE"):
        # `make asan`: ASan's allocator quarantines freed memory, so RSS grows with any work.
        pytest.skip("RSS is not a measure of live memory under ASan's quarantine")
    few, many = (
        peak_rss(["prune", str(lakes[n]), "--where", "id IN (5, 1000)", *options], tmp_path / "hwm")
        for n in (FEW, MANY)
    )
    print(f"prune {' '.join(options)}: {few / 2**20:.1f} MiB -> {many / 2**20:.1f} MiB")
    assert many - few < GROWTH_BUDGET, (few, many)
