"""Pruning through a faulty object store: the right verdicts, or a clear error naming the file.

Six Parquet files (two with 64 KiB filters outside the 64 KiB footer read, one of them
without ``bloom_filter_length``, so that a file costs one to three ranged GETs) are
uploaded to moto's S3 endpoint and pruned through :class:`fault_proxy.FaultProxy`, a
proxy of our own that spoils requests on the way: error statuses in bursts, connection
resets and truncated bodies, stalls longer than the request timeout, wrong Content-Range
headers, short bodies, 200 answers to ranged GETs.
Timeouts and retries are set explicitly (``StoreOptions``: 1 s per request, 3 retries with
backoff from 100 ms, no retry after 10 s).

For every scenario, every file gets either exactly the verdicts of a run without faults,
or one kept verdict with rule ``unreadable`` whose reason names the file; no row group
holding a probed key is ever pruned; transient faults are absorbed by retries (every file
exact), persistent ones make every file unreadable (and ``strict=True`` raises a
SourceError naming it). Wrong ranges and short bodies are caught before a byte is used:
obstore compares the Content-Range with the range asked for, and the source compares the
length it got with the length it asked for.

Run as a script (``.venv/bin/python tests/robustness/test_faults.py``) to print the table of counts
that the README's "Reliability" section shows.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

if __name__ == "__main__":  # run as a script: the tests folder holds the support package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.fault_proxy import Fault, FaultProxy

from pybloom_async import Predicate, Rule, SourceError, Verdict, col, prune_sync
from pybloom_async.io.base import SourceStats

pytestmark = pytest.mark.servers

PREFIX = "faults/"
GROUP = 1000
BIG_GROUP = 40_000
#: Per request: 1 s, then up to 3 retries (backoff 100 ms, doubling), none after 10 s.
OPTIONS = {"timeout": 1.0, "connect_timeout": 1.0, "max_retries": 3, "retry_timeout": 10.0}
#: Persistent faults: fewer retries so that a test of them stays short.
FAIL_FAST = {**OPTIONS, "max_retries": 1}


@dataclass(frozen=True)
class Scenario:
    """One fault configuration and the outcome it must have."""

    name: str
    faults: tuple[Fault, ...]
    #: "exact": every file gets the fault-free verdicts; "unreadable": every file is kept
    #: as unreadable; "either": each file is one or the other.
    expect: str
    options: dict[str, Any] = field(default_factory=lambda: dict(OPTIONS))


def _scenarios() -> list[Scenario]:
    def f(kind: str, times: int | None = 3, **kw: Any) -> Fault:
        return Fault(kind, times=times, **kw)

    return [
        Scenario("HTTP 500 x3", (f("status", status=500),), "exact"),
        Scenario("HTTP 503 SlowDown x3", (f("status", status=503),), "exact"),
        Scenario(
            "HTTP 429 x3 (Retry-After: 1)", (f("status", status=429, retry_after="1"),), "exact"
        ),
        Scenario(
            "LIST answered 503 x2",
            (f("status", 2, status=503, ranged=None, listing=True),),
            "exact",
        ),
        Scenario("reset mid-body x3", (f("reset"),), "exact"),
        Scenario("truncated body x3", (f("truncate"),), "exact"),
        Scenario("stall 3 s > 1 s timeout x2", (f("stall", 2, seconds=3),), "exact"),
        Scenario("stall mid-body x2", (f("stall_body", 2, seconds=3),), "exact"),
        Scenario(
            "mixed burst: 500, reset, stall",
            (f("status", 2, status=500), f("reset", 2), f("stall", 1, seconds=3)),
            "exact",
        ),
        Scenario("wrong Content-Range x1", (f("wrong_range", 1),), "either"),
        Scenario("other bytes, truthful Content-Range x1", (f("shifted", 1, shift=32),), "either"),
        Scenario("short body, consistent headers x1", (f("short_body", 1),), "either"),
        Scenario("200 instead of 206 x1", (f("ignore_range", 1),), "either"),
        Scenario(
            "HTTP 500 on every read",
            (f("status", None, status=500),),
            "unreadable",
            dict(FAIL_FAST),
        ),
        Scenario("reset on every read", (f("reset", None),), "unreadable", dict(FAIL_FAST)),
        Scenario(
            "stall on every read", (f("stall", None, seconds=3),), "unreadable", dict(FAIL_FAST)
        ),
        Scenario("wrong Content-Range on every read", (f("wrong_range", None),), "unreadable"),
        Scenario("other bytes on every read", (f("shifted", None, shift=32),), "unreadable"),
        Scenario("short body on every read", (f("short_body", None),), "unreadable"),
    ]


SCENARIOS = _scenarios()


# --------------------------------------------------------------------------- data


@dataclass
class Lake:
    """The files on the S3 endpoint, what a fault-free run says, and what must be kept."""

    urls: list[str]
    where: Predicate
    truth: dict[str, list[Verdict]]
    must_keep: set[tuple[str, int]]
    baseline_requests: int


def write_files(root: Path) -> list[tuple[str, bytes, list[set[int]]]]:
    """Six files: (name, bytes, ids per row group).

    Files 0-3 are small: their filters come with the footer read. Files 4 and 5 have
    64 KiB filters, so they need ranged reads before the footer: file 4 knows their
    lengths (one merged read), file 5 does not (``bloom_filter_length`` stripped: guess
    reads).
    """
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from support.writers import strip_bloom_filter_lengths

    out = []
    for i in range(6):
        # pyarrow sizes a filter for at most the values of its row group: big filters
        # need big row groups.
        group = BIG_GROUP if i >= 4 else GROUP
        ids = np.arange(3 * group, dtype=np.int64) * 7 + i * 1_000_000
        table = pa.table({"id": ids, "email": [f"u{v}@example.org" for v in ids.tolist()]})
        path = root / f"part-{i}.parquet"
        pq.write_table(
            table,
            path,
            row_group_size=group,
            bloom_filter_options={"id": {"ndv": group, "fpp": 0.01}, "email": True},
        )
        data = path.read_bytes()
        if i == 5:
            data = strip_bloom_filter_lengths(data)
        groups = [set(ids[g * group : (g + 1) * group].tolist()) for g in range(3)]
        out.append((path.name, data, groups))
    return out


def probed_ids() -> list[int]:
    # Present: file 0 group 1, file 3 group 2, file 4 group 0, file 5 group 1; others absent.
    present = [7 * 1500, 3_000_000 + 7 * 2500, 4_000_000 + 7 * 3, 5_000_000 + 7 * 40_001]
    return [*present, 5, 123_456_789, 7 * 1500 + 1, 4_000_000 + 7 * 90_000 + 3]


@pytest.fixture(scope="module")
def lake(s3_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Lake:
    pytest.importorskip("pyarrow")
    return build_lake(s3_server, tmp_path_factory.mktemp("faults"))


def build_lake(s3: Any, root: Path) -> Lake:
    """Upload the files and prune them once without faults (the truth)."""
    files = write_files(root)
    urls = [s3.put(PREFIX + name, data) for name, data, _ in files]
    where = col("id").isin(probed_ids())
    must_keep = {
        (url, g)
        for url, (_, _, groups) in zip(urls, files, strict=True)
        for g, ids in enumerate(groups)
        if ids & set(probed_ids())
    }
    stats = SourceStats()
    verdicts = prune_sync([s3.url(PREFIX)], where, options=dict(s3.options, **OPTIONS), stats=stats)
    truth: dict[str, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        truth[v.file].append(v)
    assert sorted(truth) == sorted(urls)
    assert all(v.row_group is not None for v in verdicts)
    assert any(not v.kept for v in verdicts), "the probe must prune something to be a test"
    for url, g in must_keep:
        assert truth[url][g].kept
    baseline = stats.requests + stats.metadata_requests
    return Lake(urls, where, dict(truth), must_keep, baseline)


@pytest.fixture(scope="module")
def proxy(s3_server: Any) -> Iterator[FaultProxy]:
    with FaultProxy(s3_server.endpoint) as running:
        yield running


# --------------------------------------------------------------------------- running


@dataclass
class Outcome:
    """What one scenario did: counts and the files it left unreadable."""

    scenario: Scenario
    faults_fired: int
    proxy_requests: int
    logical_requests: int
    retries: int
    unreadable: list[str]
    exact: list[str]
    reasons: list[str]


def run_scenario(scenario: Scenario, lake: Lake, proxy: FaultProxy, s3: Any) -> Outcome:
    """Prune through the proxy with the scenario's faults; check and count the outcome."""
    options = dict(s3.options, endpoint=proxy.endpoint, **scenario.options)
    stats = SourceStats()
    with proxy.faults_applied(scenario.faults) as faults:
        verdicts = prune_sync([s3.url(PREFIX)], lake.where, options=options, stats=stats)
        counts = proxy.counts()
        fired = sum(f.fired for f in faults)
    by_file: dict[str, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        by_file[v.file].append(v)
    unreadable, exact, reasons = [], [], []
    for url in lake.urls:
        got = by_file.get(url)
        assert got, f"{scenario.name}: no verdict for {url}"
        if len(got) == 1 and got[0].row_group is None:
            v = got[0]
            assert v.kept and v.rule is Rule.UNREADABLE, v
            assert url in v.reason, (
                f"{scenario.name}: the reason does not name the file: {v.reason}"
            )
            unreadable.append(url)
            reasons.append(v.reason)
        else:
            assert got == lake.truth[url], f"{scenario.name}: verdicts of {url} differ"
            exact.append(url)
    for url, g in lake.must_keep:
        kept = [v.kept for v in by_file[url] if v.row_group in (g, None)]
        assert kept == [True], f"{scenario.name}: row group {g} of {url} holds a key but was pruned"
    if scenario.expect == "exact":
        assert not unreadable, (
            f"{scenario.name}: a transient fault made files unreadable: {reasons}"
        )
    elif scenario.expect == "unreadable":
        assert not exact, f"{scenario.name}: a persistent fault went unnoticed for {exact}"
    assert fired > 0, f"{scenario.name}: no fault fired; the scenario tests nothing"
    logical = stats.requests + stats.metadata_requests
    return Outcome(
        scenario,
        fired,
        counts["requests"],
        logical,
        counts["retries"],
        unreadable,
        exact,
        reasons,
    )


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_fault_scenario(scenario: Scenario, lake: Lake, proxy: FaultProxy, s3_server: Any) -> None:
    outcome = run_scenario(scenario, lake, proxy, s3_server)
    if scenario.expect == "exact":
        # Every spoiled request was retried, and the retries were all the extra requests.
        assert outcome.retries == outcome.faults_fired > 0
        assert outcome.proxy_requests == outcome.logical_requests + outcome.retries


PERSISTENT = [s for s in SCENARIOS if s.expect == "unreadable"]


@pytest.mark.parametrize("scenario", PERSISTENT[:4], ids=[s.name for s in PERSISTENT[:4]])
def test_strict_mode_raises_naming_the_file(
    scenario: Scenario, lake: Lake, proxy: FaultProxy, s3_server: Any
) -> None:
    options = dict(s3_server.options, endpoint=proxy.endpoint, **scenario.options)
    with proxy.faults_applied(scenario.faults), pytest.raises(SourceError) as info:
        prune_sync([s3_server.url(PREFIX)], lake.where, options=options, on_error="raise")
    assert info.value.path in lake.urls
    assert info.value.path is not None and info.value.path in str(info.value)


def test_proxy_without_faults_changes_nothing(
    lake: Lake, proxy: FaultProxy, s3_server: Any
) -> None:
    """The proxy itself is transparent: same verdicts, same number of requests."""
    options = dict(s3_server.options, endpoint=proxy.endpoint, **OPTIONS)
    with proxy.faults_applied([]):
        verdicts = prune_sync([s3_server.url(PREFIX)], lake.where, options=options)
        counts = proxy.counts()
    assert verdicts == [v for url in sorted(lake.truth) for v in lake.truth[url]]
    assert counts["requests"] == lake.baseline_requests
    assert counts["retries"] == 0


# --------------------------------------------------------------------------- the table


def table(outcomes: Sequence[Outcome]) -> str:
    """The README table: one row per scenario."""
    lines = [
        "| scenario | faults injected | requests seen | retries | outcome |",
        "|---|---:|---:|---:|---|",
    ]
    for o in outcomes:
        if not o.unreadable:
            result = f"all {len(o.exact)} files: exact verdicts"
        elif not o.exact:
            result = f"all {len(o.unreadable)} files kept, `unreadable`, error names the file"
        else:
            result = (
                f"{len(o.exact)} files exact, {len(o.unreadable)} kept as `unreadable` "
                "(error names the file)"
            )
        lines.append(
            f"| {o.scenario.name} | {o.faults_fired} | {o.proxy_requests} | "
            f"{o.retries} | {result} |"
        )
    return "\n".join(lines)


def main() -> None:
    """Start moto and the proxy, run every scenario, print the table and sample reasons."""
    import tempfile

    from support.servers import S3Server, find_program, free_port, start

    program = find_program(
        "moto_server", "PYBLOOM_ASYNC_MOTO_SERVER", Path(sys.executable).parent / "moto_server"
    )
    if program is None:
        raise SystemExit("moto_server not found (pip install 'moto[server]')")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        port = free_port()
        process = start("moto_server", [program, "-H", "127.0.0.1", "-p", str(port)], work, port)
        try:
            s3 = S3Server(endpoint=f"http://127.0.0.1:{port}")
            s3.create_bucket()
            lake = build_lake(s3, work)
            print(f"{len(lake.urls)} files, {lake.baseline_requests} requests without faults")
            outcomes = []
            with FaultProxy(s3.endpoint) as proxy:
                for scenario in SCENARIOS:
                    outcomes.append(run_scenario(scenario, lake, proxy, s3))
            print(table(outcomes))
            for o in outcomes:
                if o.reasons:
                    print(f"- {o.scenario.name}: {o.reasons[0]}")
        finally:
            process.stop()


if __name__ == "__main__":
    main()
