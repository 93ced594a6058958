"""The public entry points: argument checks, the optional pyarrow, the blocking twins.

* Every concurrency, limit, size and rate is checked where it enters, before any I/O,
  with one message form: ``"<name> must be <requirement> (value <given>)"``.
* Without pyarrow, ``add-filters`` and ``index build`` say which extra to install (run
  through the real console script, with pyarrow made unimportable in the child).
* The ``*_sync`` functions refuse to run inside an event loop and name the coroutine to
  await; ``probe`` takes one value as well as a list; ``read_footer`` has a blocking twin;
  a Footer's repr is short.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pybloom_async
from pybloom_async import (
    BloomReader,
    EventLoopError,
    Footer,
    MissingDependencyError,
    ReaderConfig,
    Rule,
    SourceNotFoundError,
    add_bloom_filters_sync,
    build_index_sync,
    optimal_num_bytes,
    probe,
    probe_sync,
    prune,
    prune_paimon_sync,
    prune_sync,
    prune_with_index_sync,
    read_footer,
    read_footer_sync,
)
from pybloom_async.errors import InvalidArgumentError, ValueEncodingError
from pybloom_async.index.parse import read_index
from pybloom_async.io.store import StoreOptions
from pybloom_async.read.columns import ColumnReader
from pybloom_async.read.plan import PlanConfig

REPO = Path(__file__).resolve().parents[2]
# "<name> must be <requirement> (value <given>)", the one form of every argument error
# (other context, such as the column, comes before the value).
MESSAGE = re.compile(r"^[a-z_ ]+ must be .+ \((.+, )?value .+\)$")


@pytest.fixture
def data_file(tmp_path: Path) -> Path:
    path = tmp_path / "d.parquet"
    table = pa.table({"id": pa.array(range(0, 2000, 2), pa.int64()),
                      "name": pa.array([f"n{i}" for i in range(1000)])})  # fmt: skip
    pq.write_table(table, path, row_group_size=250, bloom_filter_options={"id": True, "name": True})
    return path


# --------------------------------------------------------------------------- arguments


def test_prune_paimon_refuses_concurrency_below_one(tmp_path: Path) -> None:
    files = [str(tmp_path / "data-1.orc")]
    for bad in (0, -1, True, 2.0, "4"):
        with pytest.raises(InvalidArgumentError, match="concurrency must be") as info:
            prune_paimon_sync(files, "id = 1", {"id": "BIGINT"}, concurrency=bad)
        assert MESSAGE.match(str(info.value)), str(info.value)
    # Within range: one verdict per file (no index: kept), never a None.
    (verdict,) = prune_paimon_sync(files, "id = 1", {"id": "BIGINT"}, concurrency=1)
    assert verdict.kept and verdict.rule is Rule.NO_FILTER


BAD_CALLS: list[tuple[str, Callable[[str], Any]]] = [
    ("concurrency", lambda d: prune_sync(d, "id = 1", concurrency=0)),
    ("concurrency", lambda d: prune_sync(d, "id = 1", concurrency=True)),
    ("concurrency", lambda d: prune_with_index_sync(d, "id = 1", concurrency=-2)),
    ("max_index_bytes", lambda d: prune_with_index_sync(d, "id = 1", max_index_bytes=0)),
    ("concurrency", lambda d: build_index_sync(d, ["id"], concurrency=0)),
    ("max_index_bytes", lambda d: build_index_sync(d, ["id"], max_index_bytes=0)),
    ("max_object_bytes", lambda d: build_index_sync(d, ["id"], max_object_bytes=1.5)),
    ("fpp", lambda d: build_index_sync(d, ["id"], fpp=1.0)),
    ("ndv", lambda d: build_index_sync(d, ["id"], ndv=-1)),
    ("max_index_bytes", lambda d: anyio.run(lambda: read_index(d + "/x", max_index_bytes=0))),
    ("concurrency", lambda d: ReaderConfig(concurrency=0)),
    ("io_threads", lambda d: ReaderConfig(io_threads=-1)),
    ("footer_read_bytes", lambda d: ReaderConfig(footer_read_bytes=4)),
    ("max_footer_bytes", lambda d: ReaderConfig(max_footer_bytes=None)),  # type: ignore[arg-type]
    ("max_files", lambda d: BloomReader(max_files=-1)),
    ("max_filter_bytes", lambda d: BloomReader(max_filter_bytes=-1)),
    ("max_age", lambda d: BloomReader(max_age=-1)),
    ("max_age", lambda d: BloomReader(max_age=math.nan)),
    ("max_range_bytes", lambda d: PlanConfig(max_range_bytes=0)),
    ("timeout", lambda d: StoreOptions(timeout=0)),
    ("max_retries", lambda d: StoreOptions(max_retries=101)),
]


@pytest.mark.parametrize(("name", "call"), BAD_CALLS, ids=[f"{n}-{i}" for i, (n, _) in
                                                          enumerate(BAD_CALLS)])  # fmt: skip
def test_bad_limits_are_refused_before_any_io(
    tmp_path: Path, name: str, call: Callable[[str], Any]
) -> None:
    # The directory does not exist: a check made after listing would say "no such file".
    missing = str(tmp_path / "no-such-dir")
    with pytest.raises(InvalidArgumentError) as info:
        call(missing)
    text = str(info.value)
    assert text.startswith(f"{name} must be ") and MESSAGE.match(text), text


def test_numpy_integers_are_taken_as_ints(data_file: Path) -> None:
    config = ReaderConfig(concurrency=np.int64(2), io_threads=np.int32(8))
    assert type(config.concurrency) is int and type(config.io_threads) is int
    options = StoreOptions(max_retries=np.int64(3), timeout=np.float32(2.5))
    assert type(options.max_retries) is int and options.timeout == 2.5
    assert type(PlanConfig(guess_bytes=np.int64(4096)).guess_bytes) is int
    verdicts = prune_sync(data_file, "id = 2", config=config, concurrency=np.int64(1))
    assert [v.kept for v in verdicts] == [True, False, False, False]


def test_prune_checks_concurrency_before_listing(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-such-dir")
    with pytest.raises(SourceNotFoundError):
        prune_sync(missing, "id = 1")
    with pytest.raises(InvalidArgumentError, match=r"concurrency must be a positive int \(value 0"):
        anyio.run(lambda: prune(missing, "id = 1", concurrency=0))


def test_other_entry_points_use_the_same_form(data_file: Path) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        BloomReader(config="fast")  # type: ignore[arg-type]
    assert "config must be a ReaderConfig" in str(info.value)
    with pytest.raises(InvalidArgumentError) as info:
        add_bloom_filters_sync(data_file, ["id"], fpp=2)
    assert str(info.value) == "fpp must be between 0 and 1, exclusive (value 2)"
    with pytest.raises(InvalidArgumentError) as info:
        add_bloom_filters_sync(data_file, ["id"], max_bytes=16)
    assert str(info.value).startswith("max_bytes must be between 32 and ")
    # The core keeps its documented error classes, with the same form.
    with pytest.raises(ValueEncodingError, match=r"^ndv must be >= 0 \(value -1\)$"):
        optimal_num_bytes(-1)
    with pytest.raises(ValueEncodingError, match=r"^fpp must be a float \(value '0.1'\)$"):
        optimal_num_bytes(10, "0.1")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- pyarrow


def _without_pyarrow(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The console script, in a child where ``import pyarrow`` fails as when it is absent."""
    shim = tmp_path / "shim"
    shim.mkdir(exist_ok=True)
    (shim / "sitecustomize.py").write_text(
        "import sys\nsys.modules['pyarrow'] = None  # ModuleNotFoundError on import\n"
    )
    env = {"PYTHONPATH": f"{shim}:{REPO}", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    # Under `make asan` the child loads the sanitised core: it needs the preloaded runtimes.
    sanitizers = ("LD_PRELOAD", "ASAN_OPTIONS", "UBSAN_OPTIONS")
    env.update({name: os.environ[name] for name in sanitizers if name in os.environ})
    return subprocess.run(
        [sys.executable, "-m", "pybloom_async.apps.cli", *argv],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "purpose"),
    [
        (["add-filters", "{file}", "--columns", "id", "--out", "{out}"], "add Bloom filters"),
        (["index", "build", "{file}", "--columns", "id"], "build sidecar indexes"),
    ],
)
def test_cli_without_pyarrow_names_the_extra(tmp_path: Path, argv: list[str], purpose: str) -> None:
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"id": pa.array(range(100), pa.int64())}), path)
    out = tmp_path / "out.parquet"
    args = [a.format(file=path, out=out) for a in argv]
    proc = _without_pyarrow(tmp_path, *args)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert proc.stderr == (
        f"pybloom-async: error: pyarrow is needed to {purpose}: install pybloom-async[arrow]\n"
    )
    assert not out.exists() and not (tmp_path / "_bloom_index").exists()
    # Pruning does not need pyarrow.
    proc = _without_pyarrow(tmp_path, "prune", str(path), "--where", "id = 1", "--json")
    assert proc.returncode == 0, proc.stderr


def test_library_without_pyarrow(monkeypatch: pytest.MonkeyPatch, data_file: Path) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(MissingDependencyError, match=r"install pybloom-async\[arrow\]") as info:
        add_bloom_filters_sync(data_file, ["id"], out=data_file.with_name("o.parquet"))
    assert isinstance(info.value, ImportError)
    with pytest.raises(MissingDependencyError, match="to read column values"):
        ColumnReader(data_file)


# --------------------------------------------------------------------------- sync twins


@pytest.mark.anyio
async def test_sync_functions_inside_an_event_loop_say_await(
    data_file: Path, tmp_path: Path, anyio_backend: str
) -> None:
    path = str(data_file)
    calls: list[tuple[str, Callable[[], Any]]] = [
        ("prune", lambda: prune_sync(path, "id = 2")),  # one local file: no loop needed
        ("prune", lambda: prune_sync(str(tmp_path), "id = 2")),
        ("probe", lambda: probe_sync(path, "id", [2])),
        ("read_footer", lambda: read_footer_sync(path)),
        ("prune_paimon", lambda: prune_paimon_sync([path], "id = 2", {"id": "BIGINT"})),
        ("build_index", lambda: build_index_sync(path, ["id"])),
        ("prune_with_index", lambda: prune_with_index_sync(path, "id = 2")),
        ("add_bloom_filters", lambda: add_bloom_filters_sync(path, ["id"])),
        (
            "add_bloom_filters",
            lambda: add_bloom_filters_sync(
                "s3://b/d.parquet", "id", options={"skip_signature": True}
            ),
        ),
    ]
    before = data_file.read_bytes()
    for name, call in calls:
        with pytest.raises(EventLoopError) as info:
            call()
        text = str(info.value)
        assert f"{name}_sync() cannot run inside a running event loop ({anyio_backend};" in text
        assert f"use `await {name}(...)` instead" in text
        assert isinstance(info.value, RuntimeError)
    assert not (tmp_path / "_bloom_index").exists()
    assert data_file.read_bytes() == before
    # A worker thread runs no loop: there the blocking functions work.
    verdicts = await anyio.to_thread.run_sync(lambda: prune_sync(str(tmp_path), "id = 2"))
    assert [v.kept for v in verdicts] == [True, False, False, False]


def test_probe_takes_one_value(data_file: Path) -> None:
    one = probe_sync(data_file, "id", 2)
    assert [(r.row_group, r.value, r.excluded) for r in one] == [
        (0, 2, False), (1, 2, True), (2, 2, True), (3, 2, True),
    ]  # fmt: skip
    assert one == probe_sync(data_file, "id", [2])
    # A str is one value, not its characters.
    text = probe_sync(data_file, "name", "n1")
    assert {r.value for r in text} == {"n1"} and len(text) == 4
    assert not text[0].excluded
    assert anyio.run(lambda: probe(data_file, "name", b"n1"))[0].value == b"n1"


def test_read_footer_sync(data_file: Path) -> None:
    assert "read_footer_sync" in pybloom_async.__all__
    footer = read_footer_sync(data_file)
    assert isinstance(footer, Footer)
    assert footer.metadata == anyio.run(lambda: read_footer(data_file)).metadata
    assert footer.file_size == data_file.stat().st_size
    with pytest.raises(SourceNotFoundError):
        read_footer_sync(data_file.with_name("missing.parquet"))


def test_footer_repr_is_short(data_file: Path) -> None:
    footer = read_footer_sync(data_file)
    text = repr(footer)
    assert text == (
        f"Footer(path={str(data_file)!r}, file_size={footer.file_size}, num_rows=1000, "
        "row_groups=4, columns=2)"
    )
