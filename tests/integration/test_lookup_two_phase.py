"""Only the bytes that can match: the predicate's columns first, the others where a row does.

A lake of random keys with a large ``payload`` column: an ``IN`` list keeps many row groups
(filters' false positives) but few hold a key. Measured with ``SourceStats`` against the
one-request read (the threshold raised past every file), rows equal to pyarrow's own
filtering; locally and on S3 (moto).
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from pybloom_async import SourceStats, col, lookup_batches, lookup_sync, prune_sync
from pybloom_async.read.fetch import ReaderConfig
from pybloom_async.read.plan import PlanConfig
from pybloom_async.rows import fetch

pa = pytest.importorskip("pyarrow")
pc = pytest.importorskip("pyarrow.compute")
pq = pytest.importorskip("pyarrow.parquet")

#: No hole read over: the bytes counted are the ranges asked for. A fixed first read: the
#: adaptive one depends on which files finish first, and the tests subtract a prune's
#: footer bytes from a lookup's.
EXACT = ReaderConfig(plan=PlanConfig(max_hole_bytes=0), footer_read_bytes=256 * 1024)
FILES, GROUPS, ROWS = 6, 4, 2000


def _payload(ids: Any) -> Any:
    """~105 bytes of text per row, a function of the id (it does not compress)."""
    return pa.array([(f"{i:x}" * 64)[:40] + os.urandom(32).hex() for i in ids.to_pylist()])


def _write(root: Path, page_index: bool, **options: Any) -> list[Path]:
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    paths = []
    for f in range(FILES):
        ids = list(range(2 * f, 2 * FILES * GROUPS * ROWS, 2 * FILES))  # even: odd are absent
        rng.shuffle(ids)  # random in every row group: min/max prune nothing
        id_array = pa.array(ids, pa.int64())
        table = pa.table(
            {
                "id": id_array,
                "score": pc.cast(pc.multiply(id_array, 7), pa.int32()),
                "payload": _payload(id_array),
                "tags": pa.array([{"a": i % 5} for i in ids]),  # nested: whole chunks
            }
        )
        path = root / f"part-{f}.parquet"
        pq.write_table(
            table,
            path,
            row_group_size=ROWS,
            write_page_index=page_index,
            use_dictionary=["score"],
            bloom_filter_options={"id": {"ndv": ROWS, "fpp": 0.2}},
            **options,
        )
        paths.append(path)
    return paths


def _oracle(paths: list[Path], keys: list[int], columns: list[str]) -> list[dict[str, Any]]:
    table = pa.concat_tables([pq.read_table(p) for p in paths])
    rows = table.filter(pc.is_in(table["id"], pa.array(keys))).select(columns).to_pylist()
    return sorted(rows, key=lambda r: r["id"])


class _Rounds:
    """Data requests the fetch makes (each one ``read_ranges`` call: one round trip)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = fetch._fetch

        async def counting(source: Any, job: Any, wanted: Any, held: Any, *rest: Any) -> Any:
            more = await real(source, job, wanted, held, *rest)
            self.count += more is not held  # held as it was: nothing was fetched
            return more

        monkeypatch.setattr(fetch, "_fetch", counting)


def _lookup(source: Any, keys: list[int], columns: list[str], one_phase: bool = False,
            **kwargs: Any) -> tuple[list[dict[str, Any]], SourceStats]:  # fmt: skip
    stats = SourceStats()
    saved = fetch.TWO_PHASE_MIN_BYTES
    fetch.TWO_PHASE_MIN_BYTES = 1 << 62 if one_phase else 0
    try:
        got = lookup_sync(source, col("id").isin(keys), columns, stats=stats, **kwargs)
    finally:
        fetch.TWO_PHASE_MIN_BYTES = saved
    return sorted(got.to_pylist(), key=lambda r: r["id"]), stats


@pytest.fixture(scope="module")
def lakes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Path]]:
    root = tmp_path_factory.mktemp("two_phase")
    return {
        "no_index": _write(root / "no_index", page_index=False),
        "pages": _write(root / "pages", page_index=True, data_page_size=8 * 1024),
    }


@pytest.mark.parametrize("lake", ["no_index", "pages"])
def test_the_other_columns_are_read_only_where_a_row_matches(
    lakes: dict[str, list[Path]], lake: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = lakes[lake]
    rng = random.Random(3)
    keys = [2 * k for k in rng.sample(range(FILES * GROUPS * ROWS), 4)]
    keys += [2 * k + 1 for k in rng.sample(range(FILES * GROUPS * ROWS), 30)]  # absent
    columns = ["id", "score", "payload", "tags"]
    want = _oracle(paths, keys, columns)
    assert len(want) == 4
    source = str(paths[0].parent)
    pruning = SourceStats()
    verdicts = prune_sync(source, col("id").isin(keys), stats=pruning, config=EXACT)
    kept = [(v.file, v.row_group) for v in verdicts if v.kept]
    assert len(kept) > 4  # false positives: row groups kept that hold no key
    rounds = _Rounds(monkeypatch)
    two, two_stats = _lookup(source, keys, columns, config=EXACT)
    two_rounds, rounds.count = rounds.count, 0
    one, one_stats = _lookup(source, keys, columns, one_phase=True, config=EXACT)
    assert two == want and one == want
    # Two data requests per file with a key, one per file with only false positives (it
    # has no second phase), where one phase reads each once; far fewer bytes.
    files = {f for f, _ in kept}
    with_key = {os.path.basename(f) for f in files if any(
        k // 2 % FILES == int(f[-9]) for k in keys if k % 2 == 0)}  # fmt: skip
    assert rounds.count == len(files)
    assert two_rounds == len(files) + len(with_key)
    data = two_stats.bytes_read - pruning.bytes_read  # the footers and filters aside
    assert data < (one_stats.bytes_read - pruning.bytes_read) / 2, (two_stats, one_stats)
    if lake == "pages":  # the payload's pages, not its chunks: fewer bytes still
        _, no_pages = _lookup(source, keys, columns, config=EXACT, page_index=False)
        assert two_stats.bytes_read < no_pages.bytes_read


def test_a_point_lookup_with_little_data_stays_one_request(
    lakes: dict[str, list[Path]],
) -> None:
    """The threshold: kept data below it is read in one request per file, as before."""
    source = str(lakes["no_index"][0].parent)
    key = 2 * (4 * FILES + 1)
    pruning = SourceStats()
    verdicts = prune_sync(source, col("id") == key, stats=pruning)
    files = {v.file for v in verdicts if v.kept}
    stats = SourceStats()
    got = lookup_sync(source, col("id") == key, ["id", "score"], stats=stats)
    assert got.to_pylist() == [{"id": key, "score": 7 * key}]
    assert stats.requests == pruning.requests + len(files)


def test_a_local_file_takes_two_phases_from_a_sixteenth_of_the_threshold(
    lakes: dict[str, list[Path]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kept payload of about 210 KB a row group: below the threshold, above a sixteenth of
    it. A local file read for a few keys reads its key column first (a second request is
    a system call), and the payload only where a row matches: fewer bytes than in one
    request. For more keys (most kept row groups then hold one) it reads in one request."""
    paths = lakes["no_index"]
    source = str(paths[0].parent)
    few = [2 * (4 * FILES + 1)]
    many = [2 * (k * FILES + 1) for k in range(fetch.LOCAL_FEW_KEYS + 1)]
    columns = ["id", "payload"]

    def read(keys: list[int]) -> tuple[list[Any], SourceStats]:
        stats = SourceStats()
        got = lookup_sync(source, col("id").isin(keys), columns, stats=stats, config=EXACT)
        return sorted(got.to_pylist(), key=lambda r: r["id"]), stats

    (few_rows, few_stats), (many_rows, many_stats) = read(few), read(many)
    monkeypatch.setattr(fetch, "TWO_PHASE_MIN_BYTES", 1 << 62)
    (few_one, few_one_stats), (many_one, many_one_stats) = read(few), read(many)
    assert few_rows == few_one == _oracle(paths, few, columns)
    assert many_rows == many_one == _oracle(paths, many, columns)
    assert few_stats.bytes_read < few_one_stats.bytes_read, (few_stats, few_one_stats)
    assert many_stats == many_one_stats


def test_every_row_group_with_a_match_and_a_small_fetch_limit(
    lakes: dict[str, list[Path]],
) -> None:
    """max_fetch_bytes of 1: one row group per request, in both phases; the same rows."""
    paths = lakes["pages"]
    keys = list(range(0, 2 * FILES * GROUPS * ROWS, 997))
    columns = ["payload", "id"]
    got, _ = _lookup(str(paths[0].parent), keys, columns, max_fetch_bytes=1)
    assert got == _oracle(paths, keys, columns)


@pytest.mark.servers
def test_s3_requests_and_bytes(
    lakes: dict[str, list[Path]], s3_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On S3 the same: the payload of row groups without a key is never downloaded."""
    paths = lakes["pages"]
    prefix = f"two-phase-{os.getpid()}/"
    for path in paths:
        s3_server.put(prefix + path.name, path.read_bytes())
    url = s3_server.url(prefix)
    rng = random.Random(5)
    keys = [2 * k for k in rng.sample(range(FILES * GROUPS * ROWS), 3)]
    keys += [2 * k + 1 for k in rng.sample(range(FILES * GROUPS * ROWS), 30)]  # absent
    columns = ["id", "payload", "score"]
    want = _oracle(paths, keys, columns)
    options = s3_server.options
    pruning = SourceStats()
    verdicts = prune_sync(url, col("id").isin(keys), options=options, stats=pruning, config=EXACT)
    kept_files = {v.file for v in verdicts if v.kept}
    with_key = {
        f for f in kept_files if any(k // 2 % FILES == int(f[-9]) for k in keys if k % 2 == 0)
    }
    rounds = _Rounds(monkeypatch)
    two, two_stats = _lookup(url, keys, columns, options=options, config=EXACT)
    assert rounds.count == len(kept_files) + len(with_key)
    one, one_stats = _lookup(url, keys, columns, one_phase=True, options=options, config=EXACT)
    assert two == want and one == want
    data = two_stats.bytes_read - pruning.bytes_read  # the footers and filters aside
    assert data < (one_stats.bytes_read - pruning.bytes_read) / 2, (two_stats, one_stats)
    # The payload of the row groups with a key only, through its pages
    payload = 0
    for path in paths:
        md = pq.read_metadata(path)
        for g in range(md.num_row_groups):
            payload += md.row_group(g).column(2).total_compressed_size
    assert data < payload / 4


def _write_all_kept(path: Path) -> Any:
    """A file whose every row group holds keys of an ``IN`` list, its predicate columns
    first and a payload after them (the shape that read the data area twice)."""
    rng = np.random.default_rng(3)
    n = 60_000
    table = pa.table({
        "user_id": rng.integers(0, 50, n),
        "country": pa.array(rng.choice(["DE", "FR", "US", "GB"], n)),
        "v": rng.random(n),
        "s": pa.array([f"payload-{i}" for i in range(n)]),
    })  # fmt: skip
    pq.write_table(table, path, row_group_size=6_000)
    return table


WHERE_ALL_KEPT = col("user_id").isin(list(range(44))) & (col("country") != "DE")


def _expected(table: Any) -> list[dict[str, Any]]:
    keep = pc.and_(pc.is_in(table["user_id"], pa.array(range(44))),
                   pc.not_equal(table["country"], "DE"))  # fmt: skip
    return table.filter(keep).to_pylist()


@pytest.mark.parametrize("phases", ["one", "two"])
def test_a_lookup_keeping_every_row_group_reads_each_byte_once(tmp_path: Path, phases: str) -> None:
    """Every byte at most once: phase one's bytes serve phase two, and no merged range
    fetches a byte already held (the lookup read 1.9x the file before)."""
    path = tmp_path / "all_kept.parquet"
    table = _write_all_kept(path)
    stats = SourceStats()
    saved = fetch.TWO_PHASE_MIN_BYTES
    fetch.TWO_PHASE_MIN_BYTES = 0 if phases == "two" else 1 << 62
    try:
        got = lookup_sync(str(path), WHERE_ALL_KEPT, stats=stats, page_index=False)
    finally:
        fetch.TWO_PHASE_MIN_BYTES = saved
    assert got.to_pylist() == _expected(table)
    assert stats.bytes_read <= 1.1 * path.stat().st_size, stats


@pytest.mark.parametrize("one_phase", [True, False])
def test_a_local_lookup_reads_no_column_it_was_not_asked_for(
    tmp_path: Path, one_phase: bool
) -> None:
    """A local file's ranges are merged only where they touch: the chunks of a column not
    asked for, between two that are, are never read over (a hole of up to 1 MiB was)."""
    path = tmp_path / "between.parquet"
    n, group = 8_000, 2_000
    ids = np.random.default_rng(5).permutation(n) * 2
    table = pa.table({"id": ids, "blob": _payload(pa.array(ids)), "v": ids * 0.5})
    pq.write_table(table, path, row_group_size=group, compression="none",
                   bloom_filter_options={"id": {"ndv": group, "fpp": 0.01}})  # fmt: skip
    keys = [int(ids[g * group]) for g in range(n // group)]  # one in every row group
    footer = SourceStats()
    prune_sync(str(path), col("id").isin(keys), stats=footer)
    got, stats = _lookup(str(path), keys, ["id", "v"], one_phase=one_phase)
    assert got == sorted(table.filter(pc.is_in(table["id"], pa.array(keys)))
                         .select(["id", "v"]).to_pylist(), key=lambda r: r["id"])  # fmt: skip
    meta = pq.read_metadata(path)
    asked = sum(meta.row_group(g).column(c).total_compressed_size
                for g in range(meta.num_row_groups) for c in (0, 2))  # fmt: skip
    assert stats.bytes_read - footer.bytes_read <= asked, (stats, footer, asked)


@pytest.mark.servers
def test_s3_a_lookup_keeping_every_row_group_reads_each_byte_once(
    tmp_path: Path, s3_server: Any
) -> None:
    path = tmp_path / "all_kept.parquet"
    table = _write_all_kept(path)
    key = f"all-kept-{os.getpid()}/f.parquet"
    s3_server.put(key, path.read_bytes())
    stats = SourceStats()
    got = lookup_sync(s3_server.url(key), WHERE_ALL_KEPT, stats=stats,
                      options=s3_server.options)  # fmt: skip
    assert got.to_pylist() == _expected(table)
    assert stats.bytes_read <= 1.1 * path.stat().st_size, stats


def test_streamed_batches_of_a_projection_that_skips_a_column(tmp_path: Path) -> None:
    """Phase two decodes the other columns from their own chunks only: pyarrow must not
    coalesce them over a column never fetched (c1 lies between c0 and c3, unread)."""
    path = tmp_path / "skip.parquet"
    table = pa.table({
        "c0": pa.array([b"\x01" * 16] * 3, pa.binary(16)),
        "c1": pa.array([b"\x02" * 16] * 3, pa.binary(16)),
        "c2": pa.array([1, 2, 3], pa.int64()),
        "c3": pa.array([7, 8, 9], pa.int64()),
    })  # fmt: skip
    pq.write_table(table, path)
    saved = fetch.TWO_PHASE_MIN_BYTES
    fetch.TWO_PHASE_MIN_BYTES = 0
    try:

        async def batches() -> list[Any]:
            found = lookup_batches(str(path), "c2 > 1", columns=["c2", "c0", "c3"])
            return [b async for b in found]

        got = pa.Table.from_batches(anyio.run(batches))
    finally:
        fetch.TWO_PHASE_MIN_BYTES = saved
    assert got.to_pylist() == [
        {"c2": 2, "c0": b"\x01" * 16, "c3": 8},
        {"c2": 3, "c0": b"\x01" * 16, "c3": 9},
    ]


@pytest.mark.parametrize("two_phases", [True, False])
def test_chunks_of_an_early_parquet_mr_writer(parquet_testing: Path, two_phases: bool) -> None:
    """parquet-mr before 1.2.9 left the dictionary page header out of a chunk's size (the
    file says "parquet-mr", no version): pyarrow reads 100 bytes more of each chunk, and
    those are fetched too (the lookup failed: "bytes ... were not fetched")."""
    path = parquet_testing / "data" / "nation.dict-malformed.parquet"
    saved = fetch.TWO_PHASE_MIN_BYTES
    fetch.TWO_PHASE_MIN_BYTES = 0 if two_phases else 1 << 62
    try:
        got = lookup_sync(str(path), col("nation_key") == 3, page_index=False)
    finally:
        fetch.TWO_PHASE_MIN_BYTES = saved
    want = pq.read_table(path).filter(pc.equal(pq.read_table(path)["nation_key"], 3))
    assert got.to_pylist() == want.to_pylist() and got.num_rows == 1
