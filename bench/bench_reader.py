"""Reader benchmarks (issue 3): pruning over S3 with latency, footer decode, local probes.

Six sections, each selectable with ``--sections`` (all but ``scaling`` and ``cpu`` by
default):

``s3``
    200 Spark files (10 row groups, filters on ``id`` and ``email``; see
    ``gen_spark_files.py``) in a moto_server bucket on 127.0.0.1, reached through
    ``latency_proxy.py`` (20 ms each way by default, TCP handshake modelled; a fresh proxy
    process per run, so every run starts with no open connection). Two readers answer
    ``id IN (...) OR email IN (...)`` for the whole prefix, at several concurrencies:

    * **ours**: ``pybloom_async.pruning.api(prefix, where, options=..., concurrency=N, stats=...)``;
    * **naive**: the I/O pattern of the usual readers, written here with the same tools
      (obstore's sync API in worker threads bounded by a ``CapacityLimiter(N)``): LIST, then
      per file the last 8 bytes, then the footer, then every needed filter on its own (one
      read of header + bitset when ``bloom_filter_length`` is known, else a 20-byte header
      read, arrow-rs's ``SBBF_HEADER_SIZE_ESTIMATE``, then the bitset). It decodes footers
      with ``pybloom_async.parquet.decode_file_metadata`` and probes with
      ``SplitBlockBloomFilter``, so only the I/O pattern differs. It is the generous
      version of the pattern: the filter reads of one file run concurrently (arrow-rs and
      parquet-java read them one after another while iterating row groups).

    Both answers are checked: every row group holding a probed key is kept by both, and
    the readers keep the same row groups (ours may prune more by min/max statistics;
    that difference is reported).

    moto_server (werkzeug) closes the connection after every response; S3 does not. The
    proxy therefore runs in its HTTP keep-alive mode by default (``--proxy-mode``): client
    connections stay open and pay the modelled handshake once, as against S3. The proxy
    also counts the HTTP requests it relays ("on wire"), a check on the readers' counters.

    moto_server is one Python process and costs about 2 ms of CPU per request, which on two
    cores dominates wall time at 20 ms. So the table also shows: the same runs through a
    0 ms proxy (``--baseline``, on by default: the CPU floor), the CPU seconds used by this
    process, moto_server and the proxy in each run, and latency-bound runs at the top
    concurrency with a long delay (``--rtt-probe-delay-ms``, 200 ms each way), where wall
    time in RTTs approaches the round trips on the critical path.
    ``--ours-config k=v,...`` passes other ``ReaderConfig`` fields to ours (e.g.
    ``footer_read_bytes=262144``); ``--ours-variant NAME:k=v,...`` adds another reader of
    ours with other fields, run beside the default everywhere (e.g.
    ``suffix256k:footer_read_bytes=262144``: one request per file for these files, whose
    filters lie 86 KB from the end); ``--readers ours`` skips the slow naive runs.

``scaling``
    Requests and wall time against the number of files (``--file-counts``, default 25, 50,
    100, 200): ours (defaults) and naive, as in ``s3``, on the first N files under a prefix
    of their own, at ``--delay-ms`` and the top ``--concurrency``.

``cpu``
    Client CPU per file (``getrusage`` of this process; moto is another process), ours with
    the default config straight to moto_server, concurrency 64: footer + filters (the
    ``s3`` predicate) and footer only (``seq = -1``: statistics decide, no filter probed),
    with the requests per file. moto_server closes every connection after its response, so
    each request also pays a new connection; ``--cpu-keepalive`` goes through a zero-delay
    proxy (another process) that keeps the client's connections open, as S3 does.

``footer``
    The 200 footers, as bytes in memory, decoded by ``decode_file_metadata`` and by pyarrow,
    median per footer. pyarrow is timed two ways: ``pyarrow._parquet._reconstruct_filemetadata``
    (what unpickling a FileMetaData calls: thrift decode of exactly the footer bytes, nothing
    else) and the public ``pq.read_metadata(pa.BufferReader(whole_file))`` (also locates the
    footer; the buffer is zero-copy), the target's reference. pyarrow decodes into C++ structs
    and makes Python objects on access; ours decodes the schema and row counts (and checks the
    whole footer is well-formed) at once and the column chunks on first access. So both are
    also timed with that access: decode, then read every chunk's filter offset, length and
    statistics (what pruning reads). ``lazy=False`` decodes every part at once. The C
    decoder's passes alone are shown too (private API).

``local``
    One local file (10 row groups), 100 values of ``id`` (50 present, 50 absent), cold: a
    fresh reader per run (the OS page cache is warm after the first run). Ours end to end
    (``prune_sync(path, col("id").isin(values))``, which reads a local file in the calling
    thread without an event loop; the same through ``anyio.run(prune(...))``, the event loop
    and worker threads; and ``probe_sync(path, "id", values)``,
    which answers per value and row group like DuckDB) against DuckDB's
    ``parquet_bloom_probe(path, 'id', value)``, one query per value (the function takes only
    literal parameters), on a fresh in-memory DuckDB connection per run.

``inlist``
    ``prune_sync(100 local files = 1000 row groups, col("id").isin(100,000 keys))``; the
    predicate is built before the clock starts (its build time is reported apart).

Every timed loop is bounded in count (``--runs``) and time (``--budget-s`` per section and
``--run-timeout`` per S3 run). Output: a table per section, then one machine-readable line
per figure, ``bench=reader section=... key=value ...``; ``--json-out FILE`` also writes
them all as JSON, with the machine, date and load (``bench/record.py``).

Run::

    .venv/bin/python bench/gen_spark_files.py          # once; cached in bench/data/spark200/
    .venv/bin/python bench/bench_reader.py [--sections s3,footer,local,inlist]
        [--concurrency 16,64,256] [--runs 3] [--delay-ms 20] [--no-baseline] [--quick]
        [--readers naive,ours] [--ours-config io_threads=256] [--rtt-probe-delay-ms 200]
        [--ours-variant suffix256k:footer_read_bytes=262144]
        [--proxy-mode keepalive|tcp] [--no-handshake] [--file-counts 25,50,100,200]
        [--json-out bench/results/reader.json]
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import http.client
import importlib.metadata
import inspect
import os
import platform
import random
import re
import resource
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import duckdb
import numpy as np
import obstore
import pyarrow as pa
import pyarrow._parquet as pa_parquet_internal
import pyarrow.parquet as pq
from gen_spark_files import DEFAULT_OUT, ROW_GROUPS_PER_FILE, ensure_data
from latency_proxy import start_subprocess
from obstore.store import S3Store
from record import Recorder, cpu_model, load_average

from pybloom_async import SplitBlockBloomFilter, col, decode_header, simd_backend
from pybloom_async.io.base import SourceStats
from pybloom_async.io.store import clear_store_cache
from pybloom_async.parquet import THRIFT_DECODER, decode_file_metadata, parse_footer_tail
from pybloom_async.parquet.decode import decode_file_metadata_with
from pybloom_async.predicate import Predicate

T = TypeVar("T")

BUCKET = "bench-data"
PREFIX = "spark200/"
REGION = "us-east-1"
ACCESS_KEY = "testing"  # moto's documented dummy credentials; moto does not check them
SECRET_KEY = "testing"
# arrow-rs (parquet/src/bloom_filter/mod.rs) reads this much to get a header whose length
# is unknown, then the bitset: the two-read pattern of filters without bloom_filter_length.
HEADER_GUESS = 20
SERVER_START_TIMEOUT = 60.0
SERVER_STOP_TIMEOUT = 10.0


# --------------------------------------------------------------------------- the API under test


def _import_ours() -> tuple[Any, Any, Any] | None:
    """``(prune, prune_sync, probe_sync)`` from the package, or None if not there yet."""
    try:
        from pybloom_async import prune, prune_sync
    except ImportError:
        return None
    probe_sync: Any = None
    try:
        from pybloom_async import probe_sync
    except ImportError:
        pass
    return prune, prune_sync, probe_sync


# --------------------------------------------------------------------------- reporting


# Every figure emitted, for --json-out (bench/record.py).
RECORDS: list[dict[str, object]] = []


def emit(section: str, **fields: object) -> None:
    """One machine-readable line (and one record for ``--json-out``)."""
    RECORDS.append({"section": section, **fields})
    parts = [f"bench=reader section={section}"]
    for key, value in fields.items():
        if isinstance(value, float):
            value = f"{value:.4g}"
        parts.append(f"{key}={value}")
    print(" ".join(parts), flush=True)


def slug(label: str) -> str:
    """A label as one token for the machine-readable lines."""
    return re.sub(r"[^A-Za-z0-9_.]+", "_", label).strip("_")


def machine_line() -> None:
    versions = {
        name: importlib.metadata.version(name)
        for name in ("pyarrow", "duckdb", "obstore", "moto", "anyio", "thrift")
    }
    print(
        f"# {cpu_model()}, {os.cpu_count()} cores, load average {load_average()}; "
        f"Python {platform.python_version()}; SBBF backend {simd_backend()}; "
        + ", ".join(f"{k} {v}" for k, v in versions.items()),
        flush=True,
    )
    emit(
        "machine",
        cpu=repr(cpu_model()),
        cores=os.cpu_count(),
        loadavg=repr(load_average()),
        python=platform.python_version(),
        backend=simd_backend(),
        **versions,
    )


def bounded_samples(
    fn: Callable[[], object], runs: int, budget_s: float, *, min_runs: int = 3
) -> list[float]:
    """Seconds per call of ``fn``: ``runs`` calls, fewer once ``budget_s`` is spent."""
    samples: list[float] = []
    deadline = time.monotonic() + budget_s
    for i in range(runs):
        if i >= min_runs and time.monotonic() > deadline:
            break
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return samples


def ms(seconds: float) -> float:
    return seconds * 1e3


# --------------------------------------------------------------------------- probe keys


@dataclass(frozen=True)
class Keys:
    """Probe values: some read from the files (with where they live), some absent."""

    present_ids: list[int]
    present_emails: list[str]
    absent_ids: list[int]
    absent_emails: list[str]
    holders: frozenset[tuple[int, int]]  # (file index, row group) holding a present key

    @property
    def ids(self) -> list[int]:
        return self.present_ids + self.absent_ids

    @property
    def emails(self) -> list[str]:
        return self.present_emails + self.absent_emails


def sample_keys(files: Sequence[Path], n_present: int, n_absent: int, seed: int) -> Keys:
    """``n_present`` ids and emails read from random row groups, plus absent ones."""
    rng = random.Random(seed)
    ids: list[int] = []
    emails: list[str] = []
    holders: set[tuple[int, int]] = set()
    for column, sink in (("id", ids), ("email", emails)):
        for _ in range(n_present):
            fi = rng.randrange(len(files))
            rg = rng.randrange(ROW_GROUPS_PER_FILE)
            table = pq.ParquetFile(files[fi]).read_row_group(rg, columns=[column])
            sink.append(table.column(0)[rng.randrange(table.num_rows)].as_py())
            holders.add((fi, rg))
    # Random 64-bit ids: the chance that one of them is among the 4 M written is ~2e-13.
    absent_ids = [rng.randrange(-(2**63), 2**63) for _ in range(n_absent)]
    absent_emails = [f"absent-{rng.getrandbits(64):016x}@example.com" for _ in range(n_absent)]
    return Keys(ids, emails, absent_ids, absent_emails, frozenset(holders))


def where_of(keys: Keys) -> Predicate:
    return col("id").isin(keys.ids) | col("email").isin(keys.emails)


# --------------------------------------------------------------------------- moto_server


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a process so far (Linux /proc), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            # The command name (field 2) may hold spaces; count fields after its ')'.
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def moto_options(endpoint: str) -> dict[str, Any]:
    """The store options of a run against the local moto server (or a proxy before it)."""
    return {
        "endpoint": endpoint,
        "region": REGION,
        "access_key_id": ACCESS_KEY,
        "secret_access_key": SECRET_KEY,
        "allow_http": True,
    }


@contextlib.contextmanager
def moto_server() -> Iterator[tuple[str, int]]:
    """A moto_server on 127.0.0.1 with bucket ``BUCKET``; yields its endpoint and pid."""
    program = Path(sys.executable).parent / "moto_server"
    if not program.exists():
        raise SystemExit(f"{program} not found: pip install 'moto[server]'")
    port = free_port()
    popen = subprocess.Popen(
        [str(program), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while True:
            if popen.poll() is not None:
                raise RuntimeError(f"moto_server exited with status {popen.returncode}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                try:
                    conn.request("PUT", f"/{BUCKET}")
                    response = conn.getresponse()
                    response.read()
                finally:
                    conn.close()
                if response.status not in (200, 409):
                    raise RuntimeError(f"moto refused the bucket: {response.status}")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("moto_server did not start in time") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}", popen.pid
    finally:
        if popen.poll() is None:
            popen.terminate()
            try:
                popen.wait(SERVER_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait(SERVER_STOP_TIMEOUT)
        # It led its own session: this reaches only what it started.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(popen.pid, signal.SIGKILL)


def s3_store(endpoint: str) -> S3Store:
    return S3Store(
        BUCKET,
        endpoint=endpoint,
        region=REGION,
        access_key_id=ACCESS_KEY,
        secret_access_key=SECRET_KEY,
        client_options={"allow_http": True, "timeout": "60s"},
    )


def upload(endpoint: str, files: Sequence[Path], prefix: str = PREFIX) -> list[str]:
    """Put the files under ``prefix`` (8 threads); returns their keys."""
    store = s3_store(endpoint)
    keys = [prefix + p.name for p in files]

    def put(item: tuple[str, Path]) -> None:
        obstore.put(store, item[0], item[1].read_bytes())

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(put, zip(keys, files, strict=True)))
    return keys


# --------------------------------------------------------------------------- the naive reader


@dataclass
class Counters:
    requests: int = 0
    bytes_read: int = 0
    metadata_requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)


async def gather(calls: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """Await the calls concurrently; results in order (the first failure propagates)."""
    results: list[Any] = [None] * len(calls)

    async def one(i: int) -> None:
        results[i] = await calls[i]()

    async with anyio.create_task_group() as tg:
        for i in range(len(calls)):
            tg.start_soon(one, i)
    return results


class NaivePruner:
    """Per file: last 8 bytes, footer, then one read per filter (two if its length is unknown).

    Every request is a blocking obstore call in a worker thread; at most ``concurrency`` run
    at once. ``terms`` maps a column to its values; a row group is kept when any column's
    filter may hold any of its values (an OR of IN lists), or when a filter is missing.
    """

    def __init__(self, store: S3Store, concurrency: int, terms: dict[str, list[Any]]) -> None:
        self.store = store
        self.limiter = anyio.CapacityLimiter(concurrency)
        self.terms = terms
        self.counters = Counters()

    async def _io(self, fn: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args), limiter=self.limiter)

    def _get_range(self, key: str, start: int, end: int) -> bytes:
        data = bytes(obstore.get_range(self.store, key, start=start, end=end))
        with self.counters.lock:
            self.counters.requests += 1
            self.counters.bytes_read += len(data)
        return data

    def _list(self, prefix: str) -> list[tuple[str, int]]:
        found: list[tuple[str, int]] = []
        # obstore yields the listing in chunks of up to 1000, S3's page size: one per request.
        for chunk in obstore.list(self.store, prefix, chunk_size=1000):
            with self.counters.lock:
                self.counters.metadata_requests += 1
            found.extend((meta["path"], meta["size"]) for meta in chunk)
        return sorted(k for k in found if k[0].endswith(".parquet"))

    async def _read_filter(
        self, key: str, size: int, offset: int | None, length: int | None
    ) -> SplitBlockBloomFilter | None:
        if offset is None:
            return None
        if length:
            data = await self._io(self._get_range, key, offset, offset + length)
            return SplitBlockBloomFilter.from_bytes(data)
        head = await self._io(self._get_range, key, offset, min(offset + HEADER_GUESS, size))
        header_len, num_bytes = decode_header(head)
        start = offset + header_len
        bitset = await self._io(self._get_range, key, start, start + num_bytes)
        return SplitBlockBloomFilter.from_bitset(bitset)

    async def prune_file(self, key: str, size: int) -> list[tuple[str, int, bool]]:
        url = f"s3://{BUCKET}/{key}"
        tail = await self._io(self._get_range, key, size - 8, size)
        location = parse_footer_tail(tail, size, path=url)
        footer = await self._io(
            self._get_range, key, location.metadata_offset, location.metadata_end
        )
        meta = decode_file_metadata(footer, path=url)
        wanted = []
        for rg in meta.row_groups:
            for name in self.terms:
                chunk = rg.columns[meta.schema.column(name).index]
                wanted.append((rg.index, name, chunk))
        filters = await gather(
            [
                functools.partial(
                    self._read_filter, key, size, c.bloom_filter_offset, c.bloom_filter_length
                )
                for _, _, c in wanted
            ]
        )
        kept = {rg.index: False for rg in meta.row_groups}
        for (rg_index, name, chunk), filt in zip(wanted, filters, strict=True):
            if filt is None or filt.check_many(self.terms[name], chunk.physical_type).any():
                kept[rg_index] = True
        return [(url, rg_index, k) for rg_index, k in kept.items()]

    async def prune(self, prefix: str) -> list[tuple[str, int, bool]]:
        files = await self._io(self._list, prefix)
        per_file = await gather([functools.partial(self.prune_file, k, s) for k, s in files])
        return [v for verdicts in per_file for v in verdicts]


# --------------------------------------------------------------------------- section: s3


@dataclass
class S3Run:
    wall_s: float
    requests: int
    metadata_requests: int
    bytes_read: int
    kept: frozenset[tuple[str, int]]
    total: int
    connections: int | None = None  # client connections the proxy accepted
    wire_requests: int | None = None  # HTTP requests the proxy saw (keep-alive mode)
    client_cpu_s: float = 0.0  # CPU of this process (all its threads) during the run
    server_cpu_s: float | None = None  # CPU of moto_server during the run
    proxy_cpu_s: float | None = None  # CPU of the proxy process (its whole life)


def _proxy_counter(output: str, name: str) -> int | None:
    found = re.search(rf"\b{name}=(\d+)", output)
    return int(found.group(1)) if found else None


def run_naive(
    endpoint: str, concurrency: int, keys: Keys, timeout: float, prefix: str = PREFIX
) -> S3Run:
    pruner = NaivePruner(s3_store(endpoint), concurrency, {"id": keys.ids, "email": keys.emails})

    async def go() -> tuple[float, list[tuple[str, int, bool]]]:
        with anyio.fail_after(timeout):
            t0 = time.perf_counter()
            verdicts = await pruner.prune(prefix)
            return time.perf_counter() - t0, verdicts

    wall, verdicts = anyio.run(go)
    c = pruner.counters
    kept = frozenset((f, rg) for f, rg, k in verdicts if k)
    return S3Run(wall, c.requests, c.metadata_requests, c.bytes_read, kept, len(verdicts))


def run_ours(
    prune: Any,
    endpoint: str,
    concurrency: int,
    keys: Keys,
    timeout: float,
    config: Any,
    prefix: str = PREFIX,
) -> S3Run:
    options = moto_options(endpoint)
    stats = SourceStats()
    where = where_of(keys)
    extra = {"config": config} if config is not None else {}
    clear_store_cache()  # a fresh client: no connection survives from an earlier run

    async def go() -> tuple[float, list[Any]]:
        with anyio.fail_after(timeout):
            t0 = time.perf_counter()
            verdicts = await prune(
                f"s3://{BUCKET}/{prefix}",
                where,
                options=options,
                concurrency=concurrency,
                stats=stats,
                **extra,
            )
            return time.perf_counter() - t0, verdicts

    wall, verdicts = anyio.run(go)
    clear_store_cache()
    kept = frozenset((v.file, v.row_group) for v in verdicts if v.kept)
    return S3Run(
        wall, stats.requests, stats.metadata_requests, stats.bytes_read, kept, len(verdicts)
    )


def check_answers(name: str, run: S3Run, keys: Keys, file_keys: Sequence[str]) -> None:
    """Every row group holding a probed key must be kept; 10 verdicts per file expected.

    ``file_keys`` are the keys of the first files of the data set (all of them, or the
    first N of the scaling section).
    """
    expected_total = len(file_keys) * ROW_GROUPS_PER_FILE
    if run.total != expected_total:
        raise RuntimeError(f"{name}: {run.total} verdicts, expected {expected_total}")
    for fi, rg in keys.holders:
        if fi >= len(file_keys):
            continue
        if (f"s3://{BUCKET}/{file_keys[fi]}", rg) not in run.kept:
            raise RuntimeError(f"{name}: FALSE NEGATIVE, pruned {file_keys[fi]} rg {rg}")


def section_s3(args: argparse.Namespace, files: Sequence[Path], keys: Keys) -> None:
    ours = _import_ours()
    readers: dict[str, Callable[[str, int], S3Run]] = {
        "naive": lambda endpoint, c: run_naive(endpoint, c, keys, args.run_timeout)
    }
    variant_labels: list[str] = []
    if ours is None:
        print(
            "# ours: pybloom_async.pruning.api is not available yet; running the naive reader only"
        )
    else:
        prune = ours[0]
        config = reader_config(prune, **args.ours_config) if args.ours_config else None
        if args.ours_config and config is None:
            raise SystemExit("--ours-config: this prune() takes no ReaderConfig")
        readers["ours"] = lambda endpoint, c: run_ours(
            prune, endpoint, c, keys, args.run_timeout, config
        )
        for name, fields in args.ours_variants:
            # Ours with other ReaderConfig fields, run beside the default everywhere.
            variant = reader_config(prune, **{**args.ours_config, **fields})
            if variant is None:
                raise SystemExit("--ours-variant: this prune() takes no ReaderConfig")
            readers[name] = functools.partial(_run_variant, prune, keys, args.run_timeout, variant)
            variant_labels.append(name)
    delays = [args.delay_ms] + ([0.0] if args.baseline and args.delay_ms else [])
    print(
        f"\n## s3: {len(files)} files x {ROW_GROUPS_PER_FILE} row groups in moto_server through "
        f"the latency proxy; where: id IN ({len(keys.ids)}) OR email IN ({len(keys.emails)}); "
        f"{args.runs} runs, median; proxy mode {args.proxy_mode}, handshake "
        f"{'charged' if args.handshake else 'not charged'}"
    )
    print(f"# load average {load_average()}")
    rows: list[tuple[float, int, str, list[S3Run]]] = []
    with moto_server() as (endpoint, server_pid):
        t0 = time.monotonic()
        file_keys = upload(endpoint, files)
        print(f"# uploaded {len(file_keys)} files in {time.monotonic() - t0:.1f} s")
        target = endpoint.removeprefix("http://")

        def one(label: str, delay_ms: float, concurrency: int) -> S3Run:
            proxy = start_subprocess(
                target,
                delay=delay_ms / 1000,
                handshake=args.handshake,
                http_keepalive=args.proxy_mode == "keepalive",
            )
            server_cpu = process_cpu_s(server_pid)
            client_cpu = time.process_time()
            try:
                run = readers[label](proxy.endpoint, concurrency)
            finally:
                proxy_output = proxy.stop()
            run.client_cpu_s = time.process_time() - client_cpu
            server_cpu_after = process_cpu_s(server_pid)
            if server_cpu is not None and server_cpu_after is not None:
                run.server_cpu_s = server_cpu_after - server_cpu
            proxy_cpu = re.search(r"\bcpu_s=([0-9.]+)", proxy_output)
            run.proxy_cpu_s = float(proxy_cpu.group(1)) if proxy_cpu else None
            run.connections = _proxy_counter(proxy_output, "connections")
            if args.proxy_mode == "keepalive":
                run.wire_requests = _proxy_counter(proxy_output, "requests")
                counted = run.requests + run.metadata_requests
                if run.wire_requests != counted:
                    print(
                        f"# note: {label} counted {counted} requests, the proxy saw "
                        f"{run.wire_requests} (retries, or HEAD/LIST not counted)"
                    )
            check_answers(label, run, keys, file_keys)
            return run

        def measure(labels: Sequence[str], delay_ms: float, concurrency: int) -> None:
            per_label: dict[str, list[S3Run]] = {label: [] for label in labels}
            for i in range(args.runs):
                if i >= 1 and time.monotonic() > deadline:
                    break
                for label in labels:  # interleaved, so drift hits all alike
                    per_label[label].append(one(label, delay_ms, concurrency))
            for label in labels:
                rows.append((delay_ms, concurrency, label, per_label[label]))
                report_s3(delay_ms, concurrency, label, per_label[label])
            if "naive" in per_label:
                for label in per_label:
                    if label.startswith("ours"):
                        report_ratio(
                            delay_ms, concurrency, label, per_label["naive"], per_label[label]
                        )

        # Warm-up (discarded): imports, thread pools, moto's first requests; checks answers.
        main_labels = [label for label in ("naive", "ours") if label in readers]
        main_labels = [label for label in main_labels if label in args.readers]
        main_labels += variant_labels
        if not main_labels:
            raise SystemExit(f"--readers {','.join(args.readers)}: nothing to run")
        warm = {label: one(label, 0.0, args.concurrency[0]) for label in main_labels}
        if "ours" in warm and "naive" in warm:
            extra_ours = warm["ours"].kept - warm["naive"].kept
            if extra_ours:
                raise RuntimeError(
                    f"ours keeps {len(extra_ours)} row groups the naive reader prunes "
                    f"with the same filters, e.g. {sorted(extra_ours)[:3]}"
                )
            print(
                f"# answers agree: naive keeps {len(warm['naive'].kept)} row groups, ours "
                f"{len(warm['ours'].kept)} (the difference: pruned by statistics)"
            )
        else:
            for label, run in warm.items():
                print(f"# {label} keeps {len(run.kept)} of {run.total} row groups")

        deadline = time.monotonic() + args.budget_s
        for delay_ms in delays:
            for concurrency in args.concurrency:
                measure(main_labels, delay_ms, concurrency)
        if args.rtt_probe_delay_ms:
            # Latency-bound: with a long RTT, moto's CPU per request (~2 ms, one process)
            # weighs little against the round trips, so wall / RTT approaches the number of
            # round trips on the critical path.
            print(
                f"# latency-bound runs: one-way delay {args.rtt_probe_delay_ms:.0f} ms, "
                f"concurrency {max(args.concurrency)}"
            )
            measure(main_labels, args.rtt_probe_delay_ms, max(args.concurrency))
    print(f"# load average {load_average()}")
    print_s3_table(rows)


def _run_variant(
    prune: Any, keys: Keys, timeout: float, config: Any, endpoint: str, concurrency: int
) -> S3Run:
    return run_ours(prune, endpoint, concurrency, keys, timeout, config)


def reader_config(prune: Any, **fields: Any) -> Any:
    """``ReaderConfig(**fields)`` if ``prune`` takes a ``config``, else None."""
    try:
        from pybloom_async.read.fetch import ReaderConfig
    except ImportError:
        return None
    if "config" not in inspect.signature(prune).parameters:
        return None
    return ReaderConfig(**fields)


def _median(values: Sequence[float]) -> float:
    return statistics.median(values)


def _opt_median(values: Sequence[float | None]) -> float | str:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else "n/a"


def report_s3(delay_ms: float, concurrency: int, impl: str, runs: Sequence[S3Run]) -> None:
    wall = _median([r.wall_s for r in runs])
    rtt_s = 2 * delay_ms / 1000
    conns = [r.connections for r in runs if r.connections is not None]
    wire = [r.wire_requests for r in runs if r.wire_requests is not None]
    emit(
        "s3",
        impl=slug(impl),
        delay_ms=delay_ms,
        concurrency=concurrency,
        runs=len(runs),
        wall_ms=ms(wall),
        wall_ms_min=ms(min(r.wall_s for r in runs)),
        wall_ms_max=ms(max(r.wall_s for r in runs)),
        rtts=(wall / rtt_s) if rtt_s else "n/a",
        requests=_median([r.requests for r in runs]),
        metadata_requests=_median([r.metadata_requests for r in runs]),
        bytes=_median([r.bytes_read for r in runs]),
        connections=_median(conns) if conns else "n/a",
        wire_requests=_median(wire) if wire else "n/a",
        client_cpu_s=_median([r.client_cpu_s for r in runs]),
        requests_per_file=_median([r.requests for r in runs]) * ROW_GROUPS_PER_FILE / runs[0].total,
        client_cpu_ms_per_file=ms(_median([r.client_cpu_s for r in runs]))
        * ROW_GROUPS_PER_FILE
        / runs[0].total,
        server_cpu_s=_opt_median([r.server_cpu_s for r in runs]),
        proxy_cpu_s=_opt_median([r.proxy_cpu_s for r in runs]),
        kept=len(runs[0].kept),
    )


def report_ratio(
    delay_ms: float,
    concurrency: int,
    label: str,
    naive: Sequence[S3Run],
    ours: Sequence[S3Run],
) -> None:
    def total(r: S3Run) -> int:
        return r.requests + r.metadata_requests

    emit(
        "s3_ratio",
        impl=slug(label),
        delay_ms=delay_ms,
        concurrency=concurrency,
        requests_x=_median([total(r) for r in naive]) / _median([total(r) for r in ours]),
        wall_x=_median([r.wall_s for r in naive]) / _median([r.wall_s for r in ours]),
        bytes_x=_median([r.bytes_read for r in naive]) / _median([r.bytes_read for r in ours]),
    )


def _cell(value: float | str, fmt: str) -> str:
    return format(value, fmt) if isinstance(value, float) else value


def print_s3_table(rows: Sequence[tuple[float, int, str, list[S3Run]]]) -> None:
    """Medians per configuration; RTTs = wall / RTT, and (wall - wall at 0 ms) / RTT."""
    floor = {(c, impl): _median([r.wall_s for r in runs]) for d, c, impl, runs in rows if not d}
    print(
        f"\n{'delay':>6} {'conc':>5} {'reader':<16} {'wall ms':>8} {'RTTs':>6} {'-0ms':>6} "
        f"{'requests':>8} {'on wire':>7} {'MB read':>7} {'conns':>5} {'kept':>4} "
        f"{'CPU s: client':>13} {'moto':>5} {'proxy':>5}"
    )
    for delay_ms, concurrency, impl, runs in rows:
        wall = _median([r.wall_s for r in runs])
        rtt = 2 * delay_ms / 1000
        rtts = f"{wall / rtt:.1f}" if rtt else "-"
        base = floor.get((concurrency, impl))
        excess = f"{(wall - base) / rtt:.1f}" if rtt and base is not None else "-"
        conns = _opt_median([r.connections for r in runs])
        wire = _opt_median([r.wire_requests for r in runs])
        print(
            f"{delay_ms:>4.0f}ms {concurrency:>5} {impl:<16} {ms(wall):>8.0f} "
            f"{rtts:>6} {excess:>6} "
            f"{_median([r.requests + r.metadata_requests for r in runs]):>8.0f} "
            f"{_cell(wire, '.0f'):>7} "
            f"{_median([r.bytes_read for r in runs]) / 1e6:>7.2f} "
            f"{_cell(conns, '.0f'):>5} {len(runs[0].kept):>4} "
            f"{_median([r.client_cpu_s for r in runs]):>13.2f} "
            f"{_cell(_opt_median([r.server_cpu_s for r in runs]), '.2f'):>5} "
            f"{_cell(_opt_median([r.proxy_cpu_s for r in runs]), '.2f'):>5}"
        )


# --------------------------------------------------------------------------- section: scaling


def section_scaling(args: argparse.Namespace, files: Sequence[Path], keys: Keys) -> None:
    """Requests and wall time against the number of files: ours and naive, same prefixes.

    For each N of ``--file-counts``, the first N files go under a prefix of their own
    (``scaleN/``), and both readers prune it at ``--delay-ms`` and the top concurrency,
    each run through a fresh proxy (no warm connection), interleaved, ``--runs`` times.
    """
    ours = _import_ours()
    if ours is None:
        print("# ours: pybloom_async.pruning.api is not available yet; no scaling section")
        return
    prune = ours[0]
    concurrency = max(args.concurrency)
    counts = sorted(n for n in args.file_counts if 0 < n <= len(files))
    print(
        f"\n## scaling: the first {', '.join(map(str, counts))} files on S3 (moto) through the "
        f"latency proxy, {args.delay_ms:.0f} ms each way, concurrency {concurrency}; "
        f"{args.runs} runs, median; load average {load_average()}"
    )
    readers: dict[str, Callable[[str, int, str], S3Run]] = {
        "naive": lambda endpoint, c, prefix: run_naive(endpoint, c, keys, args.run_timeout, prefix),
        "ours": lambda endpoint, c, prefix: run_ours(
            prune, endpoint, c, keys, args.run_timeout, None, prefix
        ),
    }
    print(f"{'files':>6} {'reader':<6} {'wall ms':>8} {'requests':>8} {'MB read':>7} {'kept':>5}")
    with moto_server() as (endpoint, _server_pid):
        target = endpoint.removeprefix("http://")
        for n in counts:
            prefix = f"scale{n}/"
            file_keys = upload(endpoint, files[:n], prefix)
            runs: dict[str, list[S3Run]] = {label: [] for label in readers}
            for _ in range(args.runs + 1):  # the first round warms up and is dropped
                for label, reader in readers.items():
                    proxy = start_subprocess(
                        target,
                        delay=args.delay_ms / 1000,
                        handshake=args.handshake,
                        http_keepalive=args.proxy_mode == "keepalive",
                    )
                    try:
                        run = reader(proxy.endpoint, concurrency, prefix)
                    finally:
                        proxy.stop()
                    check_answers(label, run, keys, file_keys)
                    runs[label].append(run)
            for label, label_runs in runs.items():
                measured = label_runs[1:]
                wall = _median([r.wall_s for r in measured])
                requests = _median([r.requests + r.metadata_requests for r in measured])
                nbytes = _median([r.bytes_read for r in measured])
                print(
                    f"{n:>6} {label:<6} {ms(wall):>8.0f} {requests:>8.0f} "
                    f"{nbytes / 1e6:>7.2f} {len(measured[0].kept):>5}"
                )
                emit(
                    "scaling",
                    impl=label,
                    files=n,
                    delay_ms=args.delay_ms,
                    concurrency=concurrency,
                    runs=len(measured),
                    wall_ms=ms(wall),
                    wall_ms_min=ms(min(r.wall_s for r in measured)),
                    wall_ms_max=ms(max(r.wall_s for r in measured)),
                    requests=requests,
                    bytes=nbytes,
                    kept=len(measured[0].kept),
                )
    print(f"# load average {load_average()}")


# --------------------------------------------------------------------------- section: cpu


def rusage_cpu_s() -> float:
    """User + system CPU seconds of this process, all its threads (moto and the proxy are
    other processes, so this is the client alone)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def write_small_lake(root: Path, n: int) -> list[Path]:
    """``n`` small files of two row groups of 50 random int64 ids (a filter on ``id``) and a
    column ``seq`` (the file's number): statistics cannot prune ``id``, but do ``seq``."""
    root.mkdir(parents=True, exist_ok=True)

    def write(i: int) -> Path:
        path = root / f"part-{i:05d}.parquet"
        if not path.exists():
            ids = np.random.default_rng(i).integers(-(2**62), 2**62, 100, dtype=np.int64)
            table = pa.table({"id": ids, "seq": pa.array([i] * 100, pa.int64())})
            pq.write_table(table, path, row_group_size=50, bloom_filter_options={"id": {"ndv": 50}})
        return path

    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(write, range(n)))


def section_cpu(args: argparse.Namespace, files: Sequence[Path], keys: Keys) -> None:
    """Client CPU per file, ours with the default config, straight to moto_server (no proxy).

    Two paths: footer + filters (``where_of(keys)``: random keys, every row group needs
    its filters) and footer only (``seq = -1``: the statistics of every row group decide,
    no filter is probed). The first run warms up and is dropped; the store client is kept
    between runs, as in a service. With ``--cpu-lake N``, the same on N small files
    (``write_small_lake``) too, with ``id IN (8 random keys)``.
    """
    ours = _import_ours()
    if ours is None:
        print("# ours: not available; no cpu section")
        return
    prune = ours[0]
    paths = {"filters": where_of(keys), "footer": col("seq") == -1}
    cpu_prefix(args, prune, files, PREFIX, paths)
    if args.cpu_lake:
        lake = write_small_lake(args.data.parent / f"small{args.cpu_lake}", args.cpu_lake)
        rng = random.Random(args.seed)
        lake_paths = {
            "filters": col("id").isin([rng.randrange(-(2**62), 2**62) for _ in range(8)]),
            "footer": col("seq") == -1,
        }
        cpu_prefix(args, prune, lake, f"small{args.cpu_lake}/", lake_paths, row_groups=2)


def cpu_prefix(
    args: argparse.Namespace,
    prune: Any,
    files: Sequence[Path],
    prefix: str,
    paths: dict[str, Predicate],
    row_groups: int = ROW_GROUPS_PER_FILE,
) -> None:
    concurrency = 64
    link = "keepalive" if args.cpu_keepalive else "moto"
    via = (
        "through a zero-delay keep-alive proxy (connections reused, as against S3)"
        if args.cpu_keepalive
        else "no proxy (moto closes every connection)"
    )
    print(
        f"\n## cpu: client CPU per file (getrusage of this process), {len(files)} files on "
        f"moto_server ({prefix}), {via}, concurrency {concurrency}, {args.runs} runs after "
        f"a warm-up; load average {load_average()}"
    )
    with contextlib.ExitStack() as stack:
        endpoint, _server_pid = stack.enter_context(moto_server())
        t0 = time.monotonic()
        upload(endpoint, files, prefix)
        print(f"# uploaded {len(files)} files in {time.monotonic() - t0:.1f} s")
        if args.cpu_keepalive:
            # moto_server (werkzeug) closes each connection after its response, so every
            # request would also pay a new connection in the client; the proxy is another
            # process, so its CPU is not counted here.
            proxy = start_subprocess(
                endpoint.removeprefix("http://"), delay=0.0, handshake=False, http_keepalive=True
            )
            stack.callback(proxy.stop)
            endpoint = proxy.endpoint
        print(
            f"{'path':<8} {'CPU ms/file':>11} {'min':>6} {'max':>6} {'requests/file':>13} "
            f"{'wall ms':>8}"
        )
        options = moto_options(endpoint)
        for label, where in paths.items():
            per_file: list[float] = []
            requests: list[float] = []
            walls: list[float] = []
            for i in range(max(args.runs, 3) + 1):
                stats = SourceStats()
                gc.collect()
                cpu0, t0 = rusage_cpu_s(), time.perf_counter()
                verdicts = anyio.run(
                    functools.partial(
                        prune,
                        f"s3://{BUCKET}/{prefix}",
                        where,
                        options=options,
                        concurrency=concurrency,
                        stats=stats,
                    )
                )
                cpu, wall = rusage_cpu_s() - cpu0, time.perf_counter() - t0
                if len(verdicts) != len(files) * row_groups:
                    raise RuntimeError(f"cpu {label}: {len(verdicts)} verdicts")
                if i == 0:
                    continue
                per_file.append(cpu / len(files))
                requests.append(stats.requests / len(files))
                walls.append(wall)
            print(
                f"{label:<8} {ms(_median(per_file)):>11.3f} {ms(min(per_file)):>6.3f} "
                f"{ms(max(per_file)):>6.3f} {_median(requests):>13.2f} {ms(_median(walls)):>8.0f}"
            )
            emit(
                "cpu",
                prefix=prefix,
                path=label,
                link=link,
                files=len(files),
                concurrency=concurrency,
                runs=len(per_file),
                cpu_ms_per_file=ms(_median(per_file)),
                cpu_ms_per_file_min=ms(min(per_file)),
                cpu_ms_per_file_max=ms(max(per_file)),
                requests_per_file=_median(requests),
                wall_ms=ms(_median(walls)),
            )
    clear_store_cache()
    print(f"# load average {load_average()}")


# --------------------------------------------------------------------------- section: footer


def footer_bytes(data: bytes) -> bytes:
    location = parse_footer_tail(memoryview(data)[-8:], len(data))
    return data[location.metadata_offset : location.metadata_end]


def _thrift_passes(footers: Sequence[bytes]) -> dict[str, Callable[[int], object]]:
    """The C decoder's passes of ``decode_file_metadata`` alone, to show where time goes."""
    try:
        from pybloom_async.parquet import passes, thrift, thrift_specs

        def one_pass(args: Any) -> Callable[[int], object]:
            def decode(i: int) -> object:
                raw = thrift_specs.FileMetaData()
                thrift.decode_struct(
                    footers[i], raw, args, what="footer", path=None,
                    decoder=thrift.THRIFT_DECODER,
                )  # fmt: skip
                return raw

            decode(0)
            return decode

        return {
            "(ours: C decoder, first pass only)": one_pass(passes.HEAD_PASS),
            "(ours: C decoder, chunks pass only)": one_pass(passes.CHUNKS_PASS),
        }
    except (ImportError, AttributeError, TypeError):  # a reshaped decoder: no breakdown
        return {}


def _read_filter_fields(md: Any) -> None:
    """What pruning reads of every column chunk: filter offset and length, statistics."""
    for rg in md.row_groups:
        for chunk in rg.columns:
            _ = (chunk.bloom_filter_offset, chunk.bloom_filter_length, chunk.statistics)


def _read_filter_fields_pyarrow(md: Any) -> None:
    for i in range(md.num_row_groups):
        rg = md.row_group(i)
        for j in range(rg.num_columns):
            chunk = rg.column(j)
            _ = (chunk.bloom_filter_offset, chunk.bloom_filter_length, chunk.statistics)


def section_footer(args: argparse.Namespace, files: Sequence[Path]) -> None:
    whole = [p.read_bytes() for p in files]
    footers = [footer_bytes(d) for d in whole]
    # Buffers made outside the clock: only the decode is timed.
    footer_bufs = [pa.py_buffer(f) for f in footers]
    whole_bufs = [pa.py_buffer(d) for d in whole]
    # Same answers first (row groups, rows, filter offsets), so the timings compare like work.
    for fb, buf in zip(footers, footer_bufs, strict=True):
        ours = decode_file_metadata(fb)
        theirs = pa_parquet_internal._reconstruct_filemetadata(buf)
        assert ours.num_rows == theirs.num_rows
        assert len(ours.row_groups) == theirs.num_row_groups
        for rg in ours.row_groups:
            for j, chunk in enumerate(rg.columns):
                assert chunk.bloom_filter_offset == (
                    theirs.row_group(rg.index).column(j).bloom_filter_offset
                )

    impls: dict[str, Callable[[int], object]] = {
        OURS_DECODE: lambda i: decode_file_metadata(footers[i]),
        "pybloom_async, lazy=False (all parts)": lambda i: decode_file_metadata(
            footers[i], lazy=False
        ),
        "pybloom_async, its schema decoded afresh (not shared)": lambda i: (
            decode_file_metadata_with(
                footers[i], None, THRIFT_DECODER, lazy=True, share_schemas=False
            )
        ),
        PYARROW_READ_METADATA: lambda i: pq.read_metadata(pa.BufferReader(whole_bufs[i])),
        "pyarrow._reconstruct_filemetadata": lambda i: (
            pa_parquet_internal._reconstruct_filemetadata(footer_bufs[i])
        ),
        OURS_DECODE + " + filter fields": lambda i: _read_filter_fields(
            decode_file_metadata(footers[i])
        ),
        PYARROW_READ_METADATA + " + filter fields": lambda i: _read_filter_fields_pyarrow(
            pq.read_metadata(pa.BufferReader(whole_bufs[i]))
        ),
    }
    impls.update(_thrift_passes(footers))
    samples: dict[str, list[float]] = {name: [] for name in impls}
    deadline = time.monotonic() + args.budget_s
    perf = time.perf_counter_ns
    for rnd in range(args.footer_rounds):
        if rnd >= 3 and time.monotonic() > deadline:
            break
        for name, fn in impls.items():  # interleaved rounds
            sink = samples[name]
            for i in range(len(footers)):
                t0 = perf()
                fn(i)
                sink.append((perf() - t0) / 1e3)
    sizes = sorted(len(f) for f in footers)
    print(
        f"\n## footer decode: {len(footers)} Spark footers ({sizes[len(sizes) // 2]} bytes "
        f"median, {ROW_GROUPS_PER_FILE} row groups x 3 columns), "
        f"{len(samples[PYARROW_READ_METADATA]) // len(footers)} rounds; "
        f"load average {load_average()}"
    )
    medians = {name: _median(s) for name, s in samples.items()}
    reference = medians[PYARROW_READ_METADATA]
    print(
        f"{'decoder':<58} {'median us/footer':>17} {'p10':>8} {'p90':>8} "
        f"{'vs pq.read_metadata':>20}"
    )
    for name, s in samples.items():
        q = statistics.quantiles(s, n=10)
        print(
            f"{name:<58} {medians[name]:>17.1f} {q[0]:>8.1f} {q[-1]:>8.1f} "
            f"{medians[name] / reference:>19.2f}x"
        )
        emit("footer", impl=slug(name), us_per_footer=medians[name], p10=q[0], p90=q[-1])
    emit(
        "footer_ratio",
        ours_vs_read_metadata=medians[OURS_DECODE] / reference,
        target=1.5,
        with_filter_fields=medians[OURS_DECODE + " + filter fields"]
        / medians[PYARROW_READ_METADATA + " + filter fields"],
    )


OURS_DECODE = "pybloom_async.decode_file_metadata"
PYARROW_READ_METADATA = "pq.read_metadata(BufferReader(file))"


# --------------------------------------------------------------------------- section: local


def section_local(args: argparse.Namespace, files: Sequence[Path]) -> None:
    path = str(files[0])
    rng = random.Random(args.seed + 1)
    ids_by_rg = [
        pq.ParquetFile(path).read_row_group(rg, columns=["id"]).column(0).to_pylist()
        for rg in range(ROW_GROUPS_PER_FILE)
    ]
    present = [v for rg_ids in ids_by_rg for v in rng.sample(rg_ids, 5)]
    absent = [rng.randrange(-(2**63), 2**63) for _ in range(50)]
    values = present + absent
    rng.shuffle(values)
    print(
        f"\n## one local file, cold: {ROW_GROUPS_PER_FILE} row groups, 100 id values "
        f"(50 present, 50 absent); OS page cache warm; load average {load_average()}"
    )

    def duckdb_run(per_value: list[float]) -> dict[tuple[int, int], bool]:
        con = duckdb.connect()  # fresh in-memory database: no metadata cache
        answers: dict[tuple[int, int], bool] = {}
        try:
            perf = time.perf_counter
            for v in values:
                t0 = perf()
                rows = con.execute(
                    "SELECT row_group_id, bloom_filter_excludes "
                    "FROM parquet_bloom_probe(?, 'id', ?)",
                    [path, v],
                ).fetchall()
                per_value.append(perf() - t0)
                for rg, excludes in rows:
                    answers[(v, rg)] = bool(excludes)
        finally:
            con.close()
        return answers

    results: dict[str, list[float]] = {}
    per_value: list[float] = []
    duck_totals: list[float] = []
    duck_answers: dict[tuple[int, int], bool] = {}
    for _ in range(args.local_runs):
        chunk: list[float] = []
        duck_answers = duckdb_run(chunk)
        per_value.extend(chunk)
        duck_totals.append(sum(chunk))
    results["duckdb parquet_bloom_probe x100"] = duck_totals

    ours = _import_ours()
    if ours is None:
        print("# ours: pybloom_async.prune_sync is not available yet")
    else:
        _, prune_sync, probe_sync = ours
        where = col("id").isin(values)
        verdicts = prune_sync(path, where)
        home = {v: rg for rg, rg_ids in enumerate(ids_by_rg) for v in set(rg_ids) & set(present)}
        for v, rg in home.items():
            if duck_answers[(v, rg)]:
                raise RuntimeError(f"duckdb excluded value {v} from row group {rg}, which holds it")
        kept = {vd.row_group for vd in verdicts if vd.kept}
        holders = set(home.values())
        if not holders <= kept:
            raise RuntimeError(f"ours pruned row groups {sorted(holders - kept)} holding keys")
        results["ours prune_sync(isin 100)"] = bounded_samples(
            lambda: prune_sync(path, where), args.local_runs, args.budget_s
        )
        prune_async = ours[0]
        # The same call through the event loop and worker threads (what prune_sync did
        # before it read local files in the calling thread).
        results["ours anyio.run(prune(isin 100))"] = bounded_samples(
            lambda: anyio.run(lambda: prune_async(path, where)), args.local_runs, args.budget_s
        )
        if probe_sync is not None:
            mine = {(r.value, r.row_group): r.excluded for r in probe_sync(path, "id", values)}
            disagree = [k for k, ex in duck_answers.items() if mine.get(k) != ex]
            print(
                f"# probe_sync vs duckdb: {len(duck_answers) - len(disagree)} of "
                f"{len(duck_answers)} (value, row group) answers agree"
            )
            results["ours probe_sync(100 values)"] = bounded_samples(
                lambda: probe_sync(path, "id", values), args.local_runs, args.budget_s
            )

    if ours is not None:
        stage_breakdown(path, col("id").isin(values), args.local_runs)

    print(f"{'implementation':<34} {'median ms, 100 values':>22} {'ms per value':>13}")
    for name, samples in results.items():
        med = _median(samples)
        print(f"{name:<34} {ms(med):>22.2f} {ms(med) / 100:>13.4f}")
        emit(
            "local",
            impl=slug(name),
            runs=len(samples),
            ms_total=ms(med),
            ms_per_value=ms(med) / 100,
        )
    print(f"{'duckdb, one query (median of all)':<34} {'':>22} {ms(_median(per_value)):>13.4f}")
    emit(
        "local",
        impl="duckdb_per_query",
        samples=len(per_value),
        ms_per_value=ms(_median(per_value)),
    )


def stage_breakdown(path: str, where: Predicate, runs: int) -> None:
    """Where one cold ``prune_sync`` spends its time, stage by stage (perf counters in place).

    The stages are timed by wrapping the functions that do them (private API: this is a
    profile, not a figure to compare across versions); each wrapper costs ~0.3 us, so the
    stages add up to a little more than the un-instrumented call. Medians per call.
    """
    # The modules, not the package's functions of the same names.
    prune_mod = importlib.import_module("pybloom_async.pruning.api")
    leaves_mod = importlib.import_module("pybloom_async.pruning.leaves")
    reader_mod = importlib.import_module("pybloom_async.read.reader")
    fetch_mod = importlib.import_module("pybloom_async.read.fetch")
    spent: dict[str, float] = {}
    depth = [0]

    def timed(owner: Any, name: str, label: str, *, is_async: bool = False) -> None:
        fn = getattr(owner, name)
        if is_async:

            async def wrapper_async(*a: Any, **k: Any) -> Any:
                t0 = time.perf_counter()
                try:
                    return await fn(*a, **k)
                finally:
                    spent[label] = spent.get(label, 0.0) + time.perf_counter() - t0

            setattr(owner, name, wrapper_async)
            return

        def wrapper(*a: Any, **k: Any) -> Any:
            depth[0] += 1
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                depth[0] -= 1
                if depth[0] == 0 or label != "evaluate (both rounds)":
                    spent[label] = spent.get(label, 0.0) + time.perf_counter() - t0

        setattr(owner, name, wrapper)

    saved = {
        (owner, name): getattr(owner, name)
        for owner, name in (
            (reader_mod.BloomReader, "footer"),
            (reader_mod, "read_filters_from"),
            (fetch_mod, "plan_filter_reads"),
            (fetch_mod, "plan_bitset_reads"),
            (fetch_mod, "decode_header"),
            (SplitBlockBloomFilter, "from_bitset"),
            (leaves_mod, "_build_leaf"),
            (prune_mod, "evaluate"),
        )
    }
    try:
        timed(reader_mod.BloomReader, "footer", "footer (open, suffix read, decode)", is_async=True)
        timed(reader_mod, "read_filters_from", "filters: all", is_async=True)
        timed(fetch_mod, "plan_filter_reads", "filters: plan round 1")
        timed(fetch_mod, "plan_bitset_reads", "filters: plan round 2")
        timed(fetch_mod, "decode_header", "filters: decode_header")
        timed(SplitBlockBloomFilter, "from_bitset", "filters: from_bitset")
        timed(leaves_mod, "_build_leaf", "IN list encoded and hashed")
        timed(prune_mod, "evaluate", "evaluate (both rounds)")
        samples: dict[str, list[float]] = {}
        totals = []
        for i in range(runs + 10):
            spent.clear()
            t0 = time.perf_counter()
            prune_mod.prune_sync(path, where)
            if i < 10:
                continue  # warm-up
            totals.append(time.perf_counter() - t0)
            for label, seconds in spent.items():
                samples.setdefault(label, []).append(seconds)
    finally:
        for (owner, name), fn in saved.items():
            setattr(owner, name, fn)
    print(f"# where one instrumented prune_sync spends its time ({runs} runs, median us):")
    for label, values in samples.items():
        us = statistics.median(values) * 1e6
        print(f"#   {label:<36} {us:8.1f}")
        emit("local_stage", stage=slug(label), us=us)
    print(f"#   {'total (instrumented)':<36} {statistics.median(totals) * 1e6:8.1f}")


# --------------------------------------------------------------------------- section: inlist


def section_inlist(args: argparse.Namespace, files: Sequence[Path]) -> None:
    ours = _import_ours()
    paths = [str(p) for p in files[:100]]
    rng = np.random.default_rng(args.seed + 2)
    all_ids = np.concatenate([pq.read_table(p, columns=["id"]).column(0).to_numpy() for p in paths])
    present = rng.choice(all_ids, size=args.inlist_keys // 2, replace=False)
    absent = rng.integers(-(2**63), 2**63 - 1, size=args.inlist_keys - len(present), dtype=np.int64)
    keys = [int(k) for k in np.concatenate([present, absent])]
    print(
        f"\n## IN list: {len(keys):,} id keys ({len(present):,} present) against "
        f"{len(paths)} local files x {ROW_GROUPS_PER_FILE} row groups; "
        f"load average {load_average()}"
    )
    if ours is None:
        print("# ours: pybloom_async.prune_sync is not available yet")
        return
    _, prune_sync, _ = ours
    t0 = time.perf_counter()
    where = col("id").isin(keys)
    build = time.perf_counter() - t0
    verdicts = prune_sync(paths, where)
    kept = sum(v.kept for v in verdicts)
    samples = bounded_samples(lambda: prune_sync(paths, where), args.inlist_runs, args.budget_s)
    med = _median(samples)
    print(
        f"prune_sync: median {ms(med):.0f} ms over {len(samples)} runs "
        f"(min {ms(min(samples)):.0f}, max {ms(max(samples)):.0f}); "
        f"{kept} of {len(verdicts)} row groups kept; "
        f"col('id').isin(keys) built in {ms(build):.0f} ms (not timed)"
    )
    emit(
        "inlist",
        keys=len(keys),
        row_groups=len(verdicts),
        runs=len(samples),
        ms=ms(med),
        ms_min=ms(min(samples)),
        kept=kept,
        build_ms=ms(build),
        target_ms=1000,
    )


# --------------------------------------------------------------------------- main


def _int_list(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _config_fields(text: str) -> dict[str, int]:
    fields = {}
    for item in text.split(","):
        if item:
            name, _, value = item.partition("=")
            fields[name.strip()] = int(value)
    return fields


def _variant(text: str) -> tuple[str, dict[str, int]]:
    name, sep, fields = text.partition(":")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME:k=v,..., got {text!r}")
    return f"ours {name}", _config_fields(fields)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", default="s3,footer,local,inlist")
    parser.add_argument("--data", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--concurrency", type=_int_list, default=[16, 64, 256])
    parser.add_argument("--runs", type=int, default=3, help="S3 runs per configuration")
    parser.add_argument(
        "--readers",
        type=lambda text: [x for x in text.split(",") if x],
        default=["naive", "ours"],
        help="S3 readers to run (naive, ours)",
    )
    parser.add_argument("--delay-ms", type=float, default=20.0, help="proxy one-way delay")
    parser.add_argument(
        "--no-baseline", dest="baseline", action="store_false", help="skip the 0 ms runs"
    )
    parser.add_argument(
        "--proxy-mode",
        choices=["keepalive", "tcp"],
        default="keepalive",
        help="keepalive: client connections stay open as against S3 (moto closes each one); "
        "tcp: plain byte relay, every request on a new connection",
    )
    parser.add_argument(
        "--no-handshake",
        dest="handshake",
        action="store_false",
        help="do not charge the TCP handshake's round trip on new connections",
    )
    parser.add_argument(
        "--ours-config",
        type=_config_fields,
        default={},
        help="ReaderConfig fields for ours, e.g. io_threads=256,footer_read_bytes=262144 "
        "(default: its defaults)",
    )
    parser.add_argument(
        "--ours-variant",
        dest="ours_variants",
        type=_variant,
        action="append",
        default=[],
        help="NAME:k=v,... another reader of ours with these ReaderConfig fields, run beside "
        "the default at every delay and concurrency (repeatable), e.g. "
        "suffix256k:footer_read_bytes=262144",
    )
    parser.add_argument(
        "--rtt-probe-delay-ms",
        type=float,
        default=200.0,
        help="one-way delay of the latency-bound runs at the top concurrency (0: skip them)",
    )
    parser.add_argument("--run-timeout", type=float, default=300.0, help="seconds per S3 run")
    parser.add_argument("--budget-s", type=float, default=600.0, help="seconds per section")
    parser.add_argument(
        "--cpu-keepalive",
        action="store_true",
        help="cpu section: reach moto through a zero-delay proxy that keeps the client's "
        "connections open (as S3 does; moto closes each one)",
    )
    parser.add_argument(
        "--cpu-lake",
        type=int,
        default=0,
        help="cpu section: also N small generated files (e.g. 10000; written once under "
        "the data folder's parent)",
    )
    parser.add_argument("--footer-rounds", type=int, default=20)
    parser.add_argument("--local-runs", type=int, default=50)
    parser.add_argument("--inlist-keys", type=int, default=100_000)
    parser.add_argument("--inlist-runs", type=int, default=7)
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument(
        "--file-counts",
        type=_int_list,
        default=[25, 50, 100, 200],
        help="numbers of files of the scaling section",
    )
    parser.add_argument("--quick", action="store_true", help="1 S3 run, fewer rounds")
    parser.add_argument(
        "--json-out", type=Path, help="also write every figure here as JSON (bench/record.py)"
    )
    args = parser.parse_args()
    settings = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    recorder = Recorder("reader", **settings)
    if args.quick:
        args.runs, args.footer_rounds, args.local_runs, args.inlist_runs = 1, 5, 10, 3
    sections = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = set(sections) - {"s3", "scaling", "cpu", "footer", "local", "inlist"}
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")

    machine_line()
    files = ensure_data(args.data)
    gc.collect()
    if "footer" in sections:
        section_footer(args, files)
    if "local" in sections:
        section_local(args, files)
    if "inlist" in sections:
        section_inlist(args, files)
    keys = sample_keys(files, n_present=4, n_absent=4, seed=args.seed)
    if "s3" in sections:
        section_s3(args, files, keys)
    if "scaling" in sections:
        section_scaling(args, files, keys)
    if "cpu" in sections:
        section_cpu(args, files, keys)
    print(f"\n# done; load average {load_average()}")
    if args.json_out:
        print(f"# wrote {recorder.write(args.json_out, RECORDS)}")


if __name__ == "__main__":
    main()
