"""The main job on an embedded default: `make demo` (``python -m pybloom_async.apps.demo``).

The headline on local files, no credentials, no network:

1. generate a small data lake with pyarrow, *without* Bloom filters (as most
   existing lakes are): random 63-bit user ids, so the min/max statistics of every
   row group span nearly the whole range and cannot rule a key out;
2. add filters on ``user_id`` and ``email`` to every file in place
   (:func:`pybloom_async.add_bloom_filters_sync`: data bytes unchanged, atomic);
3. ask for *the rows* of a key, of an ``IN`` list of keys and of a key in a time
   range, with :func:`pybloom_async.lookup_sync`, beside a plain pyarrow scan of the
   same files (which prunes by min/max statistics only): rows, requests, bytes and time;
4. build the lake index (one small file answering for every file) and ask again.

Every answer is checked against pyarrow's: the same rows, or the demo fails.
``--dir DIR`` keeps the lake in ``DIR`` (a new or empty folder, or one an earlier run
wrote: the demo marks its folder, and never touches a folder holding anything it did
not write); ``--json-out FILE`` also writes the figures as JSON (``bench/charts.py``
draws from them).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import add_bloom_filters_sync, build_lake_index_sync, col, lookup_sync, simd_backend
from ..io.base import SourceStats
from ..predicate import Predicate

FILES = 24
ROW_GROUPS = 4
ROWS_PER_GROUP = 10_000
COLUMNS = ["user_id", "email"]
#: The columns every answer has. A lookup with a lake index reads the footers of the files
#: the index rules out (their columns and types count for the answer's), not their filters.
RESULT_COLUMNS = ["user_id", "email", "ts", "amount"]
#: What the demo writes in a folder first, naming everything it writes there.
MARKER = ".pybloom-demo"
INDEX_FOLDER = "_bloom_index"
#: The first day of the lake: file ``f`` holds the events of day ``f``.
START = datetime.datetime(2026, 1, 1)
#: Runs timed per query and way (the median is shown); one more, not timed, warms up.
TIMED_RUNS = 3


def file_names(files: int = FILES) -> list[str]:
    """The data files the demo writes, in order."""
    return [f"part-{f:03d}.parquet" for f in range(files)]


def generate(folder: Path, files: int = FILES) -> tuple[np.ndarray, np.ndarray]:
    """Write the lake (no Bloom filters); returns every user id and event time, in order.

    Each file holds one day of events, in time order; ids are random 63-bit numbers.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(2026)
    per_file = ROW_GROUPS * ROWS_PER_GROUP
    ids = rng.integers(0, 2**63 - 1, size=files * per_file, dtype=np.int64)
    day_us = 86_400 * 1_000_000
    start_us = int(START.replace(tzinfo=datetime.timezone.utc).timestamp()) * 1_000_000
    offsets = np.sort(rng.integers(0, day_us, size=(files, per_file)), axis=1)
    times = (start_us + np.arange(files)[:, None] * day_us + offsets).reshape(-1)
    for f, name in enumerate(file_names(files)):
        part = slice(f * per_file, (f + 1) * per_file)
        chunk = ids[part]
        table = pa.table(
            {
                "user_id": pa.array(chunk),
                "email": pa.array([f"user{u % 10**9}@example.com" for u in chunk.tolist()]),
                "ts": pa.array(times[part], pa.timestamp("us")),
                "amount": pa.array(np.round(rng.random(per_file) * 100, 2)),
            }
        )
        pq.write_table(table, folder / name, row_group_size=ROWS_PER_GROUP)
    return ids, times


# --------------------------------------------------------------------------- the folder


def check_dir(folder: Path) -> str | None:
    """Why ``folder`` cannot hold the demo's lake, or None if it can.

    It can when it does not exist, is empty, or holds only what an earlier run wrote
    (named by that run's marker file, which the demo writes before anything else).
    """
    if not folder.exists():
        return None
    if not folder.is_dir():
        return f"--dir {folder}: not a folder"
    entries = sorted(p.name for p in folder.iterdir())
    if not entries:
        return None
    written = _marked(folder)
    if written is None:
        return (
            f"--dir {folder} holds files the demo did not write ({_some(entries)}); "
            "give a new or empty folder, or one an earlier demo run wrote"
        )
    others = [e for e in entries if e not in written and e != MARKER]
    if others:
        return (
            f"--dir {folder} holds files the demo did not write ({_some(others)}) beside an "
            "earlier run's lake; give a new or empty folder"
        )
    return None


def _some(names: Sequence[str]) -> str:
    more = len(names) - 1
    return names[0] + (f" and {more} more" if more else "")


def _marked(folder: Path) -> set[str] | None:
    """The names an earlier run wrote in ``folder`` (its marker), or None: no marker."""
    try:
        listed = json.loads((folder / MARKER).read_text())["written"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(listed, list) or not all(isinstance(n, str) for n in listed):
        return None
    return set(listed)


def prepare(folder: Path) -> None:
    """Make ``folder`` ready for a new lake (``check_dir`` said it may be used).

    Removes what an earlier run wrote, then writes the marker naming what this run
    writes, before writing it (an interrupted run's folder is then still the demo's).
    """
    folder.mkdir(parents=True, exist_ok=True)
    for name in sorted(_marked(folder) or ()):
        path = folder / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    written = [*file_names(), INDEX_FOLDER]
    (folder / MARKER).write_text(json.dumps({"written": written}) + "\n")


# --------------------------------------------------------------------------- measuring


def _counting_filesystem(counts: dict[str, int]) -> Any:
    """A local pyarrow filesystem that counts the reads (requests) and bytes it serves."""
    import pyarrow as pa
    import pyarrow.fs as pafs

    class CountingFile:
        def __init__(self, path: str) -> None:
            self._file = open(path, "rb")  # noqa: SIM115 (closed by pyarrow)
            self.closed = False

        def read(self, n: int = -1) -> bytes:
            data = self._file.read(n)
            counts["requests"] += 1
            counts["bytes_read"] += len(data)
            return data

        def seek(self, offset: int, whence: int = 0) -> int:
            return self._file.seek(offset, whence)

        def tell(self) -> int:
            return self._file.tell()

        def close(self) -> None:
            self.closed = True
            self._file.close()

        def readable(self) -> bool:
            return True

        def seekable(self) -> bool:
            return True

    class Handler(pafs.FileSystemHandler):  # type: ignore[misc]
        def __init__(self) -> None:
            self.local = pafs.LocalFileSystem()

        def get_type_name(self) -> str:
            return "counting-local"

        def normalize_path(self, path: str) -> str:
            return path

        def get_file_info(self, paths: list[str]) -> Any:
            return self.local.get_file_info(paths)

        def get_file_info_selector(self, selector: Any) -> Any:
            return self.local.get_file_info(selector)

        def open_input_file(self, path: str) -> Any:
            return pa.PythonFile(CountingFile(path), mode="r")

        def open_input_stream(self, path: str) -> Any:
            return self.open_input_file(path)

        def _read_only(self, *args: Any) -> Any:
            raise OSError("the demo's counting filesystem is read-only")

        create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = _read_only
        delete_file = move = copy_file = _read_only
        open_output_stream = open_append_stream = _read_only

    return pafs.PyFileSystem(Handler())


def _median_ms(func: Callable[[], object]) -> float:
    func()  # warm up: the page cache and imports, as for every way
    runs = []
    for _ in range(TIMED_RUNS):
        t0 = time.perf_counter()
        func()
        runs.append(time.perf_counter() - t0)
    return round(statistics.median(runs) * 1000, 1)


def pyarrow_scan(folder: Path, where: Any) -> tuple[Any, dict[str, Any]]:
    """A plain pyarrow dataset scan (min/max statistics only): rows and figures."""
    import pyarrow.dataset as pads

    counts = {"requests": 0, "bytes_read": 0}
    counted = pads.dataset(str(folder), format="parquet", filesystem=_counting_filesystem(counts))
    rows = counted.to_table(columns=RESULT_COLUMNS, filter=where)
    plain = pads.dataset(str(folder), format="parquet")
    ms = _median_ms(lambda: plain.to_table(columns=RESULT_COLUMNS, filter=where))
    return rows, {"how": "pyarrow scan", "rows": rows.num_rows, **counts, "ms": ms}


def pybloom_lookup(folder: Path, where: Predicate, how: str) -> tuple[Any, dict[str, Any]]:
    """:func:`lookup_sync` (which uses the lake index when there is one): rows and figures."""
    stats = SourceStats()
    rows = lookup_sync(str(folder), where, RESULT_COLUMNS, stats=stats)
    ms = _median_ms(lambda: lookup_sync(str(folder), where, RESULT_COLUMNS))
    return rows, {
        "how": how,
        "rows": rows.num_rows,
        "requests": stats.requests,
        "bytes_read": stats.bytes_read,
        "ms": ms,
    }


def same_rows(got: Any, expected: Any) -> bool:
    """Whether two tables hold the same rows, in any order."""
    if got.num_rows != expected.num_rows or set(got.column_names) != set(expected.column_names):
        return False
    names = sorted(expected.column_names)

    def rows(table: Any) -> list[tuple[Any, ...]]:
        return sorted(zip(*(table.column(n).to_pylist() for n in names), strict=True), key=repr)

    return rows(got) == rows(expected)


def _line(run: dict[str, Any], lake_bytes: int) -> str:
    share = 100 * run["bytes_read"] / lake_bytes
    return (
        f"     {run['how']:26} {run['rows']:5,} rows  {run['requests']:5,} reads  "
        f"{run['bytes_read']:12,} B ({share:5.1f}% of the lake)  {run['ms']:7.1f} ms"
    )


# --------------------------------------------------------------------------- the story


def queries(ids: np.ndarray, times: np.ndarray) -> list[tuple[str, Predicate, Any]]:
    """The three questions: (title, our predicate, pyarrow's expression)."""
    import pyarrow.compute as pc

    key = int(ids[123_456])
    rng = np.random.default_rng(7)
    keys = [int(ids[i]) for i in rng.choice(len(ids), size=20, replace=False).tolist()]
    # A key and a two-day window holding its event: the window alone keeps two files.
    day = 86_400 * 1_000_000
    at = int(times[123_456])
    low_us = at - at % day
    low = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=low_us)
    high = low + datetime.timedelta(days=2) - datetime.timedelta(microseconds=1)
    ts = pc.field("ts")
    return [
        ("one key", col("user_id") == key, pc.field("user_id") == key),
        ("an IN list of 20 keys", col("user_id").isin(keys), pc.field("user_id").isin(keys)),
        (
            "a key in a time range",
            (col("user_id") == key) & col("ts").between(low, high),
            (pc.field("user_id") == key) & (ts >= low) & (ts <= high),
        ),
    ]


def ask(
    folder: Path, asked: list[tuple[str, Predicate, Any]], lake_bytes: int, how: str
) -> list[dict[str, Any]] | None:
    """Each question through pyarrow and :func:`lookup_sync`; None if an answer differs."""
    out = []
    for title, where, expression in asked:
        print(f"   the rows for {title}: {where}")
        expected, plain = pyarrow_scan(folder, expression)
        got, ours = pybloom_lookup(folder, where, how)
        for run in (plain, ours):
            print(_line(run, lake_bytes))
        if not same_rows(got, expected):
            print(f"demo: error: lookup returned other rows than pyarrow for {where}",
                  file=sys.stderr)  # fmt: skip
            return None
        out.append({"title": title, "where": str(where), "runs": [plain, ours]})
    return out


# Long because: the story's four steps, each printed as it is done (the figures inline).
def run(folder: Path) -> tuple[int, dict[str, Any]]:
    """The four steps on ``folder``; returns the exit code and the figures."""
    figures: dict[str, Any] = {"lake": {}, "queries": []}
    t0 = time.perf_counter()
    ids, times = generate(folder)
    names = file_names()
    files = [folder / n for n in names]
    before = sum(p.stat().st_size for p in files)
    print(
        f"1. wrote {FILES} files x {ROW_GROUPS} row groups x {ROWS_PER_GROUP:,} rows with "
        f"pyarrow, no Bloom filters ({before:,} B), to {folder} "
        f"({time.perf_counter() - t0:.1f} s)"
    )
    t0 = time.perf_counter()
    results = [add_bloom_filters_sync(p, COLUMNS, fpp=0.01) for p in files]
    added = sum(r.filter_bytes for r in results)
    lake_bytes = sum(p.stat().st_size for p in files)
    print(
        f"2. added filters on {', '.join(COLUMNS)} to every row group, in place: "
        f"{added:,} B ({time.perf_counter() - t0:.1f} s)"
    )
    figures["lake"] = {
        "files": FILES,
        "row_groups": FILES * ROW_GROUPS,
        "rows": len(ids),
        "bytes": lake_bytes,
        "filter_bytes": added,
    }
    print("3. lookups, beside a plain pyarrow scan of the same files (median of 3 runs each):")
    asked = queries(ids, times)
    first = ask(folder, asked, lake_bytes, "lookup (in-file filters)")
    if first is None:
        return 1, figures
    t0 = time.perf_counter()
    built = build_lake_index_sync(str(folder), COLUMNS, fpp=0.001)
    if built.errors:
        file, why = next(iter(built.errors.items()))
        print(f"demo: error: the lake index left out {file}: {why}", file=sys.stderr)
        return 1, figures
    index_bytes = sum(Path(s).stat().st_size for s in built.segments)
    print(
        f"4. built the lake index on {', '.join(COLUMNS)} ({INDEX_FOLDER}/, "
        f"{index_bytes:,} B, {time.perf_counter() - t0:.1f} s); lookups use it on their own:"
    )
    figures["lake"]["index_bytes"] = index_bytes
    second = ask(folder, asked, lake_bytes, "lookup (lake index)")
    if second is None:
        return 1, figures
    for q, again in zip(first, second, strict=True):
        q["runs"].append(again["runs"][1])
    figures["queries"] = first
    point = first[0]["runs"]
    per_filter = added // (FILES * ROW_GROUPS * len(COLUMNS))
    print(
        "\nWhy: the ids are random, so every row group's min/max spans them all and a scan "
        "that prunes by statistics reads every file's key column. The filters rule a row "
        f"group out from its filter (about {per_filter:,} B a row group and column): for one "
        f"key, {point[1]['bytes_read']:,} B read where pyarrow reads "
        f"{point[0]['bytes_read']:,} B. The lake index rules whole files out from one small "
        f"file: {point[2]['requests']} reads (it holds a digest of each file's footer, which "
        "gives the result's columns and types and the kept file's byte ranges: no footer is "
        "read). Either way the rows are then read exactly: "
        "each answer above is pyarrow's, row for row. A range prunes by statistics, as "
        "pyarrow's scan does; a key AND a range, by both."
    )
    return 0, figures


def _arguments(argv: list[str] | None) -> tuple[argparse.Namespace, str | None]:
    """The arguments, and why they cannot be used (None: they can)."""
    parser = argparse.ArgumentParser(
        prog="python -m pybloom_async.apps.demo", description=(__doc__ or "").splitlines()[0]
    )
    parser.add_argument(
        "--dir", type=Path, help="write the lake here and keep it (default: a temp dir)"
    )
    parser.add_argument(
        "--json-out", type=Path, metavar="FILE", help="also write the figures here as JSON"
    )
    args = parser.parse_args(argv)
    problem = check_dir(args.dir) if args.dir is not None else None
    if args.json_out is not None and not args.json_out.parent.is_dir():
        problem = f"--json-out {args.json_out}: no folder {args.json_out.parent}"
    elif args.json_out is not None and args.json_out.is_dir():
        problem = f"--json-out {args.json_out}: a folder, not a file"
    if problem is None and args.dir is not None:
        try:
            prepare(args.dir)
        except OSError as exc:
            problem = f"--dir {args.dir}: cannot make the folder: {exc.strerror}"
    return args, problem


def _write_figures(path: Path, figures: dict[str, Any]) -> int:
    doc = {
        "kind": "demo",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "simd_backend": simd_backend(),
        },
        "load_average": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        **figures,
    }
    try:
        path.write_text(json.dumps(doc, indent=1) + "\n")
    except OSError as exc:
        print(f"demo: error: cannot write --json-out {path}: {exc.strerror}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the demo; returns the process exit code (2: bad arguments)."""
    args, problem = _arguments(argv)
    if problem:
        print(f"demo: error: {problem}", file=sys.stderr)
        return 2
    print(f"pybloom-async demo (SBBF kernels: {simd_backend()})")
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if args.dir is None:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="pybloom-demo-")))
        else:
            folder = args.dir
        code, figures = run(folder)
    print(f"\n(the whole demo: {time.perf_counter() - started:.1f} s)")
    if args.dir is None:
        print(
            "The lake was in a temporary folder, now deleted; to keep it, run "
            '`make demo DEMO_ARGS="--dir DIR"` (or `python -m pybloom_async.apps.demo --dir DIR`).'
        )
    else:
        print(
            f"The lake stays in {folder}; e.g. `pybloom-async lookup {shlex.quote(str(folder))} "
            "--where \"email = 'nobody@example.com'\"`."
        )
    if args.json_out is not None and code == 0:
        return _write_figures(args.json_out, figures)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
