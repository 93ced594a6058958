"""A run's local files pruned in one C call each (pruning/file_pass.py, csrc/footer/pass.c).

The verdicts are those of the usual path, word for word, on files of several schemas,
on footers longer than the first read, and on files that are not what the bound schema's
first file was (gone, a folder, cut short, not Parquet); the reads are counted as the
usual path counts them; the C call refuses bad arguments. The evaluators' agreement on
every statistic and filter edge is tests/unit/pruning/test_native_equalities.py's, whose
runs take their later files through the file pass.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pybloom_async as pba
import pybloom_async.pruning.api as prune_api
from pybloom_async._native import ffi, lib
from pybloom_async.pruning import file_pass
from pybloom_async.pruning.file_pass import FilePass


class Spy:
    """FilePass.verdicts (a prune's), FilePass.decide and FilePass.sweep (a lookup's),
    counting the files answered (no usual path after them) and the most misses a run
    had."""

    def __init__(self) -> None:
        self.decided = 0
        self.misses = 0

    def count(self, passes: FilePass, answered: bool) -> None:
        self.decided += answered
        self.misses = max(self.misses, passes.misses)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Iterator[Spy]:
    found = Spy()
    real_verdicts, real_decide, real_sweep = FilePass.verdicts, FilePass.decide, FilePass.sweep

    def verdicts(passes: FilePass, *args: Any) -> Any:
        got = real_verdicts(passes, *args)
        found.count(passes, got is not None)
        return got

    def decide(passes: FilePass, *args: Any, **kwargs: Any) -> Any:
        got = real_decide(passes, *args, **kwargs)
        found.count(passes, got is not None and got.tail is None)
        return got

    def sweep(passes: FilePass, *args: Any) -> Any:
        got, n = real_sweep(passes, *args)
        for one in got:
            found.count(passes, one is not None and one.tail is None)
        return got, n

    monkeypatch.setattr(FilePass, "verdicts", verdicts)
    monkeypatch.setattr(FilePass, "decide", decide)
    monkeypatch.setattr(FilePass, "sweep", sweep)
    yield found


async def _python_only(*args: Any) -> None:
    return None


def _run(paths: Any, where: Any, **kwargs: Any) -> Any:
    stats = pba.SourceStats()
    try:
        found: Any = [v.to_dict() for v in pba.prune_sync(paths, where, stats=stats, **kwargs)]
    except pba.PyBloomError as exc:
        found = (type(exc).__name__, str(exc))
    return found, (stats.requests, stats.bytes_read, stats.metadata_requests)


def usual(monkeypatch: pytest.MonkeyPatch, paths: Any, where: Any, **kwargs: Any) -> Any:
    """The run's verdicts with the file pass, asserted equal to the usual path's (which
    never binds a schema: the C evaluator of equalities is off)."""
    got = _run(paths, where, **kwargs)
    with monkeypatch.context() as m:
        m.setattr(prune_api, "decide_natively", _python_only)
        expected = _run(paths, where, **kwargs)
    assert got[0] == expected[0], f"{where}: the file pass and the usual path disagree"
    return got[0]


def _write(path: Path, ids: range, other: str = "name", groups: int = 2) -> str:
    table = pa.table({"id": pa.array(list(ids), pa.int64()), other: [f"v{i}" for i in ids]})
    pq.write_table(
        table,
        path,
        row_group_size=max(1, len(ids) // groups),
        bloom_filter_options={"id": {"ndv": len(ids), "fpp": 0.01}},
    )
    return str(path)


def test_files_of_two_schemas(tmp_path: Path, spy: Spy, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = [
        _write(tmp_path / f"f{i}.parquet", range(i * 100, i * 100 + 100), ("a", "b")[i % 2])
        for i in range(8)
    ]
    for where in (
        pba.col("id") == 250,
        pba.col("id") == -1,
        pba.col("id").isin([5, 555, 10_000]),
        (pba.col("id") == 5) | (pba.col("id") == 705),
        (pba.col("id") == 5) & (pba.col("a") == "v5"),  # "a": an equality on both schemas'
    ):
        got = usual(monkeypatch, paths, where, require_columns=False)
        assert len(got) == 16
    assert spy.decided >= 6 * 5


def test_counts_the_reads_as_the_usual_path(
    tmp_path: Path, spy: Spy, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = [_write(tmp_path / f"f{i}.parquet", range(i * 50, i * 50 + 50)) for i in range(5)]
    got = _run(paths, pba.col("id") == 120)
    with monkeypatch.context() as m:
        m.setattr(prune_api, "decide_natively", _python_only)
        expected = _run(paths, pba.col("id") == 120)
    assert got == expected
    assert got[1][2] == 5  # one opening per file
    assert spy.decided == 4


def test_a_footer_longer_than_the_first_read(
    tmp_path: Path, spy: Spy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The footer's start is read in a second read, as the reader reads it."""
    paths = [_write(tmp_path / f"f{i}.parquet", range(i * 50, i * 50 + 50)) for i in range(4)]
    config = pba.ReaderConfig(footer_read_bytes=64)
    got = usual(monkeypatch, paths, pba.col("id") == 70, config=config)
    assert [v["kept"] for v in got] == [False, False, True, False, False, False, False, False]
    assert spy.decided == 3


def test_unusual_files_go_the_usual_way(
    tmp_path: Path, spy: Spy, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _write(tmp_path / "a.parquet", range(100))
    data = Path(first).read_bytes()
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(data[: len(data) - 10])
    pare = tmp_path / "pare.parquet"
    pare.write_bytes(data[:-4] + b"PARE")
    empty = tmp_path / "empty.parquet"
    empty.write_bytes(b"")
    short = tmp_path / "short.parquet"
    short.write_bytes(data[-20:])
    folder = tmp_path / "folder.parquet"
    folder.mkdir()
    gone = str(tmp_path / "gone.parquet")
    same = _write(tmp_path / "b.parquet", range(100))
    paths = [first, str(cut), str(pare), str(empty), str(short), str(folder), gone, same]
    got = usual(monkeypatch, paths, pba.col("id") == 7, on_error="skip")
    unreadable = [v for v in got if v["row_group"] is None]
    assert len(unreadable) == 6, unreadable
    assert spy.decided == 1  # the last file only


def test_a_run_of_unbound_schemas_stops_asking(
    tmp_path: Path, spy: Spy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every file of its own schema: each is read the usual way, and once the misses pass
    the allowance the C side is not asked again."""
    paths = [
        _write(tmp_path / f"f{i}.parquet", range(i * 10, i * 10 + 10), f"c{i}") for i in range(30)
    ]
    usual(monkeypatch, paths, pba.col("id") == 3)
    assert spy.decided == 0
    assert spy.misses <= file_pass.MISSES_ALLOWED + 1


def test_the_c_call_refuses_bad_arguments(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.parquet", range(10))
    width = 2
    scratch = ffi.new("pba_pass_scratch *")
    keep = [
        ffi.new("uint8_t[]", 4096),
        ffi.new("pba_footer_group[]", 4),
        ffi.new("pba_footer_chunk[]", 4 * width),
        ffi.new("pba_eq_outcome[]", 4 * width),
        ffi.new("pba_probe[]", 4 * width),
        ffi.new("int32_t[]", 4 * width),
    ]
    scratch.suffix = scratch.tail_cap = 4096
    scratch.max_footer_bytes = scratch.max_serialized = 1 << 20
    scratch.max_filter_bytes = scratch.max_header_bytes = 1 << 20
    scratch.groups_cap, scratch.width = 4, width
    (scratch.tail, scratch.groups, scratch.chunks, scratch.outcomes, scratch.probes) = keep[:5]
    scratch.answers = keep[5]
    num_rows = ffi.new("int64_t[]", 4)
    codes = ffi.new("uint8_t[]", 4 * width)
    res = ffi.new("pba_pass_result *")
    name = os.fsencode(path)

    # No binding: the file is read and its schema is unknown.
    assert lib.pba_file_pass(name, ffi.NULL, 0, scratch, num_rows, codes, res) == lib.PBA_OK
    assert res.status == lib.PBA_PASS_UNBOUND and res.requests == 1
    # A missing file, a folder: handed back, with the reason.
    for where, err in ((tmp_path / "none.parquet", True), (tmp_path, False)):
        rc = lib.pba_file_pass(os.fsencode(str(where)), ffi.NULL, 0, scratch, num_rows, codes, res)
        assert rc == lib.PBA_OK
        assert (res.status, res.why) == (lib.PBA_PASS_ASIDE, lib.PBA_WHY_OPEN)
        assert bool(res.err) == err

    hashes = ffi.new("uint64_t[]", [1])
    hash_list = ffi.new("uint64_t *[]", [hashes])
    n_hashes = ffi.new("size_t[]", [1])
    key = ffi.new("uint8_t[]", 8)
    offsets = ffi.new("uint64_t[]", [0, 8])
    eq = ffi.new("pba_eq_leaf[]", 1)
    eq[0].kind, eq[0].width, eq[0].n_keys = lib.PBA_KEY_INT, 8, 1
    eq[0].keys, eq[0].key_offsets = key, offsets
    schema = ffi.new("uint8_t[]", b"x")
    binding = ffi.new("pba_pass_binding[]", 1)
    b = binding[0]
    b.schema, b.schema_len = schema, 1
    b.leaves, b.n_eq, b.hashes, b.n_hashes = eq, 1, hash_list, n_hashes
    b.scan.n_wanted = 1

    def rc_with(steps: list[tuple[int, int]]) -> int:
        program = ffi.new("pba_pass_step[]", max(len(steps), 1))
        for k, (op, arg) in enumerate(steps):
            program[k].op, program[k].arg = op, arg
        b.steps, b.n_steps = program, len(steps)
        return int(lib.pba_file_pass(name, binding, 1, scratch, num_rows, codes, res))

    leaf, keep_step = (lib.PBA_PASS_LEAF, 0), (lib.PBA_PASS_KEEP, 0)
    assert rc_with([leaf]) == lib.PBA_OK  # the schema "x" is not the file's: unbound
    assert res.status == lib.PBA_PASS_UNBOUND
    assert rc_with([leaf, keep_step, (lib.PBA_PASS_AND, 2)]) == lib.PBA_OK
    for steps in (
        [],  # no outcome
        [leaf, keep_step],  # two outcomes left
        [leaf, (lib.PBA_PASS_AND, 2)],  # pops more than pushed
        [leaf, (lib.PBA_PASS_OR, 0)],  # no arity
        [(lib.PBA_PASS_LEAF, 1)],  # no such leaf
        [(99, 0)],  # no such step
        [leaf] * (lib.PBA_PASS_MAX_STEPS + 1),
    ):
        assert rc_with(steps) == lib.PBA_ERR_ARG, steps
    assert rc_with([leaf]) == lib.PBA_OK
    b.scan.n_wanted = width + 1  # wider than the scratch
    assert rc_with([leaf]) == lib.PBA_ERR_ARG
    b.scan.n_wanted = 1
    n_hashes[0] = 2  # not one hash per key
    assert rc_with([leaf]) == lib.PBA_ERR_ARG
    n_hashes[0] = 1
    assert lib.pba_file_pass(ffi.NULL, binding, 1, scratch, num_rows, codes, res) == (
        lib.PBA_ERR_ARG
    )
    scratch.tail_cap = 100  # smaller than the first read
    assert rc_with([leaf]) == lib.PBA_ERR_ARG
    scratch.tail_cap = 4096

    # Many files in one call: they stop at the first not pruned whole (here the first,
    # unbound), which is left in the result; names must hold as many terminated paths.
    pruned = ffi.new("pba_pass_pruned[]", 2)
    done = ffi.new("size_t *")

    def files_rc(names: bytes, n: int) -> int:
        return int(
            lib.pba_file_pass_files(
                names, len(names), n, binding, 1, scratch, num_rows, codes, res, pruned, done
            )
        )

    program = ffi.new("pba_pass_step[]", 1)  # kept alive while the binding points to it
    program[0].op, program[0].arg = leaf
    b.steps, b.n_steps = program, 1
    assert files_rc(name + b"\0" + name + b"\0", 2) == lib.PBA_OK
    assert (done[0], res.status) == (0, lib.PBA_PASS_UNBOUND)
    assert files_rc(b"", 0) == lib.PBA_OK and done[0] == 0
    assert files_rc(name + b"\0", 2) == lib.PBA_ERR_ARG  # one path short
    # (one path, its NUL outside the length given: not terminated)
    assert lib.pba_file_pass_files(
        name + b"\0", len(name), 1, binding, 1, scratch, num_rows, codes, res, pruned, done
    ) == (lib.PBA_ERR_ARG)
    assert lib.pba_file_pass_files(
        name + b"\0", len(name) + 1, 1, binding, 1, scratch, num_rows, codes, res, ffi.NULL, done
    ) == (lib.PBA_ERR_ARG)


def test_lookups_take_pruned_files_through_the_pass(
    tmp_path: Path, spy: Spy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows, their schema and the result's columns are the usual path's: files pruned whole
    by the pass, files with rows read from the footer it read, a file whose key/value
    metadata differs from the bound file's (its Arrow schema is its own)."""
    paths = [
        _write(tmp_path / f"f{i}.parquet", range(i * 100, i * 100 + 100), ("a", "b")[i % 2])
        for i in range(6)
    ]
    other = pa.table({"id": pa.array([1000, 1001], pa.int64()), "a": ["x", "y"]})
    other = other.replace_schema_metadata({"note": "not the bound file's"})
    pq.write_table(other, tmp_path / "g.parquet", bloom_filter_options={"id": {"ndv": 2}})
    paths.append(str(tmp_path / "g.parquet"))
    for where in (
        pba.col("id") == 250,
        pba.col("id") == 1001,
        pba.col("id").isin([5, 555, 1000]),
        pba.col("id") == -1,
    ):
        got = pba.lookup_sync(paths, where)
        with monkeypatch.context() as m:
            m.setattr(prune_api, "decide_natively", _python_only)
            expected = pba.lookup_sync(paths, where)
        assert got.equals(expected) and got.schema == expected.schema, where
    assert spy.decided >= 4 * 3


def test_file_urls_go_through_the_pass_as_their_paths_do(
    tmp_path: Path, spy: Spy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``file://`` URLs (escapes decoded: a space and a ``%`` in the folder's name) are
    pruned by the pass, with the verdicts, reads and rows of their plain paths; the
    verdicts name each file as the caller spelled it."""
    folder = tmp_path / "a b%c"
    folder.mkdir()
    paths = [_write(folder / f"f{i}.parquet", range(i * 100, i * 100 + 100)) for i in range(5)]
    urls = [Path(p).as_uri() for p in paths]
    assert "%20" in urls[0] and "%25" in urls[0]
    for where in (pba.col("id") == 250, pba.col("id").isin([5, 455]), pba.col("id") == -1):
        before = spy.decided
        by_url, url_reads = _run(urls, where)
        assert spy.decided - before >= 3, where
        by_path, path_reads = _run(paths, where)
        assert url_reads == path_reads
        assert [v["file"] for v in by_url] == [u for u in urls for _ in range(2)]
        unnamed = [{k: v for k, v in d.items() if k != "file"} for d in by_url]
        assert unnamed == [{k: v for k, v in d.items() if k != "file"} for d in by_path]
        assert usual(monkeypatch, urls, where) == by_url
        rows = pba.lookup_sync(urls, where)
        assert rows.equals(pba.lookup_sync(paths, where)), where


@pytest.mark.parametrize(
    ("where", "holds"),
    [
        ((pba.col("id") >= 250) & (pba.col("id") < 260), lambda i: 250 <= i < 260),
        ((pba.col("id") == 250) | (pba.col("id") == 1450), lambda i: i in (250, 1450)),
        ((pba.col("id") == 250) & (pba.col("id") <= 900), lambda i: i == 250),
        ((pba.col("id") == 250) | (pba.col("id") > 1490), lambda i: i == 250 or i > 1490),
        ((pba.col("id") == 250) & (pba.col("name") == "v250"), lambda i: i == 250),
        (
            pba.col("id").isin([5, 905, 1234]) & (pba.col("id") != 905),
            lambda i: i in (5, 1234),
        ),
    ],
    ids=["range", "or-keys", "key-and-range", "key-or-range", "key-and-string", "negation"],
)
def test_files_pruned_whole_in_c_are_those_python_prunes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: Any, holds: Any
) -> None:
    """The files the C side finds pruned whole, many in one call (their row groups'
    codes through the binding's exclusions and steps), are those the usual path prunes:
    the same rows, from a lake of many files."""
    paths = [
        _write(tmp_path / f"f{i:02d}.parquet", range(i * 100, i * 100 + 100)) for i in range(15)
    ]
    got = pba.lookup_sync(paths, where)
    with monkeypatch.context() as m:
        m.setattr(prune_api, "decide_natively", _python_only)
        expected = pba.lookup_sync(paths, where)
    assert got.equals(expected) and got.schema == expected.schema
    assert got.column("id").to_pylist() == [i for i in range(1500) if holds(i)]


def _pass_reads(paths: list[str], where: Any) -> tuple[float, float]:
    """The requests and bytes a file after the first costs a prune: the first file is
    pruned the usual way (it binds the pass), the others each in one C call."""
    one = _run(paths[:1], where)[1]
    every = _run(paths, where)[1]
    n = len(paths) - 1
    return (every[0] - one[0]) / n, (every[1] - one[1]) / n


def test_the_first_read_takes_the_footer_alone_beside_large_filters(
    tmp_path: Path, spy: Spy
) -> None:
    """Filters beyond the reader's suffix are probed block by block, so the first read
    takes the footer and a margin, not the whole suffix (copied for nothing)."""
    # Every file's statistics span the key, which none holds: their filters are probed.
    paths = [_write(tmp_path / f"f{i}.parquet", range(0, 40_000, 2)) for i in range(4)]
    requests, nbytes = _pass_reads(paths, pba.col("id") == 20_001)
    assert spy.decided == 3
    assert nbytes < 4096, nbytes  # a footer of about 1 KiB, and a header and block per filter
    assert requests >= 3  # the footer, then each filter apart


def test_the_first_read_takes_the_filters_within_the_suffix(tmp_path: Path, spy: Spy) -> None:
    """Small filters right before the footer come in the footer's read, one read a file,
    and it reaches no further back than they do (the files are larger than the suffix)."""
    ids = list(range(0, 6000, 2))
    table = pa.table({"id": pa.array(ids, pa.int64()), "blob": [os.urandom(16) for _ in ids]})
    paths = []
    for i in range(4):
        path = tmp_path / f"f{i}.parquet"
        pq.write_table(table, path, row_group_size=1500, bloom_filter_options={"id": {}})
        assert path.stat().st_size > pba.ReaderConfig().first_suffix_bytes
        paths.append(str(path))
    requests, nbytes = _pass_reads(paths, pba.col("id") == 51)
    assert spy.decided == 3
    assert requests == 1 and nbytes < pba.ReaderConfig().first_suffix_bytes


def test_a_warm_reader_binds_a_later_runs_pass_from_its_kept_footers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader keeps the footers its runs' passes were bound from, by folder: a later
    lookup over the folder binds its pass from them at once, and its first file is pruned
    in C too (no file the usual way), with the same rows. A literal its column cannot
    hold is still an error naming a file; another folder's lookup learns its own."""
    lake = tmp_path / "lake"
    lake.mkdir()
    for i in range(6):
        _write(lake / f"f{i}.parquet", range(i * 100, i * 100 + 100))
    usual: list[int] = []
    real = prune_api.decide_natively

    async def counted(*args: Any) -> Any:
        usual.append(1)
        return await real(*args)

    monkeypatch.setattr(prune_api, "decide_natively", counted)
    reader = pba.BloomReader()
    first = pba.lookup_sync(str(lake), pba.col("id") == 250, reader=reader)
    assert usual, "the first run's first file binds the pass the usual way"
    usual.clear()
    for key in (250, 5, 599, 1000):
        got = pba.lookup_sync(str(lake), pba.col("id") == key, reader=reader)
        assert got.column("id").to_pylist() == ([key] if key < 600 else [])
    assert not usual, "a later run's files all go through the pass"
    assert first.column("id").to_pylist() == [250]
    with pytest.raises(pba.PredicateError) as caught:
        pba.lookup_sync(str(lake), pba.col("id") == "not a number", reader=reader)
    assert caught.value.path is not None and caught.value.path.startswith(str(lake))
    other = tmp_path / "other"
    other.mkdir()
    for i in range(3):
        _write(other / f"g{i}.parquet", range(i * 10, i * 10 + 10), "label")
    got = pba.lookup_sync(str(other), pba.col("id") == 15, reader=reader)
    assert got.column("id").to_pylist() == [15] and usual, "another folder: its own binding"
