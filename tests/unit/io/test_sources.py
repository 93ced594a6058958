"""Tests for the byte sources, against real peers: files, moto S3, azurite, nginx.

The behaviour tests run once per kind of source (memory, local file, S3, Azure, HTTP) and
per anyio backend (asyncio, trio). Server kinds skip when their program is not installed.
"""

from __future__ import annotations

import os
import random
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from obstore.store import AzureStore, GCSStore, HTTPStore, S3Store
from support.descriptors import LISTS_DESCRIPTORS, fds_under

from pybloom_async.errors import InvalidArgumentError, SourceError, SourceNotFoundError
from pybloom_async.io.base import ByteSource, FileInfo, SourceStats
from pybloom_async.io.environment import environment_read_once
from pybloom_async.io.listing import list_parquet_files
from pybloom_async.io.local import LocalFileSource
from pybloom_async.io.memory import MemorySource
from pybloom_async.io.objects import ObjectStoreSource, open_source
from pybloom_async.io.store import StoreOptions, clear_store_cache

if TYPE_CHECKING:
    # Imported for annotations only: importing it for real before pytest registers it as a
    # plugin would stop pytest from rewriting its asserts.
    from support.servers import AzuriteServer, NginxServer, S3Server

# Registers the server fixtures for this module; harmless once conftest.py does it too.
DATA = random.Random(20240611).randbytes(200_000)


@dataclass
class Target:
    """One object of one kind of source, and how to open it."""

    kind: str
    location: str
    data: bytes
    options: dict[str, Any] = field(default_factory=dict)
    missing_location: str = ""
    overwrite: Callable[[bytes], object] | None = None

    def open(self, stats: SourceStats | None = None) -> ByteSource:
        if self.kind == "memory":
            return MemorySource(self.data, path=self.location, stats=stats)
        return open_source(self.location, stats=stats, **self.options)

    def open_missing(self) -> ByteSource:
        if self.kind == "memory":
            pytest.skip("a memory source always exists")
        return open_source(self.missing_location, **self.options)


KINDS = [
    "memory",
    "local",
    pytest.param("s3", marks=pytest.mark.servers),
    pytest.param("azure", marks=pytest.mark.servers),
    pytest.param("http", marks=pytest.mark.servers),
]

MakeTarget = Callable[[bytes], Target]


@pytest.fixture(params=KINDS)
def make_target(request: pytest.FixtureRequest, tmp_path: Path) -> MakeTarget:
    """Store bytes as a new file or object of the parametrized kind."""
    kind: str = request.param

    def make(data: bytes) -> Target:
        name = f"t-{uuid.uuid4().hex}.bin"
        if kind == "memory":
            return Target(kind, f"memory:{name}", data)
        if kind == "local":
            path = tmp_path / name
            path.write_bytes(data)
            return Target(
                kind,
                str(path),
                data,
                missing_location=str(tmp_path / "nope.bin"),
                overwrite=path.write_bytes,
            )
        server: S3Server | AzuriteServer | NginxServer = request.getfixturevalue(
            {"s3": "s3_server", "azure": "azurite_server", "http": "nginx_server"}[kind]
        )
        location = server.put(name, data)
        options = dict(server.options)
        # Every server here is local, so one retry is enough: it covers a pooled connection
        # the server closed (a reset on reuse), the one transient failure seen from them.
        options["max_retries"] = 1
        return Target(
            kind,
            location,
            data,
            options,
            missing_location=server.url("nope.bin"),
            overwrite=lambda new: _replace(server, name, new),
        )

    return make


def _replace(server: S3Server | AzuriteServer | NginxServer, name: str, data: bytes) -> None:
    """Replace an object, as a later writer would."""
    from support.servers import NginxServer  # registered as a plugin by now: no rewrite warning

    server.put(name, data)
    if isinstance(server, NginxServer):
        # nginx's ETag is mtime-in-seconds + size: a same-size rewrite within the same second
        # would keep it. A real replacement happens later; say so.
        path = server.root / name
        later = path.stat().st_mtime + 10
        os.utime(path, (later, later))


# --------------------------------------------------------------------------- every kind


@pytest.mark.anyio
async def test_size_and_identity(make_target: MakeTarget) -> None:
    target = make_target(DATA)
    stats = SourceStats()
    async with target.open(stats) as source:
        assert await source.size() == len(DATA)
        assert await source.size() == len(DATA)
        identity = await source.identity()
        assert identity.size == len(DATA) and identity.path == target.location
        if target.kind != "memory":
            assert identity.etag and identity.mtime is not None
    # One lookup, cached: the size is asked for three times.
    assert stats.metadata_requests == 1
    assert stats.requests == 0


@pytest.mark.anyio
async def test_read_range(make_target: MakeTarget) -> None:
    target = make_target(DATA)
    stats = SourceStats()
    async with target.open(stats) as source:
        for start, end in [(0, 1), (len(DATA) - 1, len(DATA)), (1234, 99_999), (0, len(DATA))]:
            assert await source.read_range(start, end) == DATA[start:end]
        assert await source.read_range(500, 500) == b""
    assert stats.requests == 4, "one request per non-empty range, none for an empty one"
    assert stats.bytes_read == 1 + 1 + (99_999 - 1234) + len(DATA)


@pytest.mark.anyio
async def test_read_many_ranges(make_target: MakeTarget) -> None:
    target = make_target(DATA)
    rng = random.Random(7)
    ranges = []
    for _ in range(40):
        start = rng.randrange(len(DATA))
        ranges.append((start, min(len(DATA), start + rng.randrange(0, 5000))))
    ranges += [(10, 10), (0, 3), (0, 3)]  # empty and duplicate ranges are fine
    stats = SourceStats()
    async with target.open(stats) as source:
        results = await source.read_ranges(ranges)
    assert results == [DATA[s:e] for s, e in ranges]
    nonempty = [(s, e) for s, e in ranges if e > s]
    assert stats.requests == len(nonempty)
    assert stats.bytes_read == sum(e - s for s, e in nonempty)


@pytest.mark.anyio
async def test_read_suffix(make_target: MakeTarget) -> None:
    target = make_target(DATA)
    stats = SourceStats()
    async with target.open(stats) as source:
        assert await source.read_suffix(1000) == DATA[-1000:]
        # The suffix read taught the size: no further lookup.
        assert await source.size() == len(DATA)
        assert await source.read_suffix(len(DATA) + 50) == DATA
        assert await source.read_suffix(0) == b""
    if target.kind in ("s3", "http"):
        # One GET with "Range: bytes=-1000" returns the bytes and the object size.
        assert stats.metadata_requests == 0
    else:
        # Azure has no suffix ranges; files and memory know their size from a stat.
        assert stats.metadata_requests == 1
    assert stats.requests == 2
    assert stats.bytes_read == 1000 + len(DATA)


@pytest.mark.anyio
async def test_empty_file(make_target: MakeTarget) -> None:
    target = make_target(b"")
    async with target.open() as source:
        assert await source.read_suffix(64) == b""
        assert await source.size() == 0
        assert await source.read_ranges([(0, 0)]) == [b""]
        with pytest.raises(SourceError, match="past the end"):
            await source.read_range(0, 1)


@pytest.mark.anyio
async def test_out_of_range_requests_nothing(make_target: MakeTarget) -> None:
    target = make_target(DATA)
    stats = SourceStats()
    async with target.open(stats) as source:
        await source.size()
        with pytest.raises(SourceError, match=r"range \[0, 200001\) runs past the end") as info:
            await source.read_range(0, len(DATA) + 1)
        assert target.location in str(info.value)
        with pytest.raises(SourceError, match="past the end"):
            await source.read_ranges([(0, 10), (len(DATA), len(DATA) + 1)])
        with pytest.raises(InvalidArgumentError, match="ends before it starts"):
            await source.read_range(5, 3)
        with pytest.raises(InvalidArgumentError, match="range start must be >= 0"):
            await source.read_range(-1, 3)
        with pytest.raises(InvalidArgumentError, match="must be an int"):
            await source.read_range(0, 2.5)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError, match="suffix length"):
            await source.read_suffix(-1)
    assert stats.requests == 0


@pytest.mark.anyio
async def test_not_found_names_the_path(make_target: MakeTarget) -> None:
    target = make_target(DATA)
    for read in ("size", "suffix", "range"):
        source = target.open_missing()
        with pytest.raises(SourceNotFoundError) as info:
            if read == "size":
                await source.size()
            elif read == "suffix":
                await source.read_suffix(100)
            else:
                await source.read_range(0, 10)
        assert target.missing_location in str(info.value)
        assert isinstance(info.value, OSError)
        await source.aclose()


@pytest.mark.anyio
async def test_concurrent_readers(make_target: MakeTarget) -> None:
    """Many tasks share one source; each gets its own bytes (pread has no shared offset)."""
    target = make_target(DATA)
    stats = SourceStats()
    results: dict[int, bytes] = {}
    async with target.open(stats) as source:

        async def reader(i: int) -> None:
            start = i * 3001
            results[i] = await source.read_range(start, start + 2500)

        async with anyio.create_task_group() as tg:
            for i in range(60):
                tg.start_soon(reader, i)
    assert all(results[i] == DATA[i * 3001 : i * 3001 + 2500] for i in range(60))
    assert stats.requests == 60


@pytest.mark.anyio
async def test_closed_source_refuses(make_target: MakeTarget) -> None:
    target = make_target(DATA)
    source = target.open()
    assert await source.read_range(0, 4) == DATA[:4]
    await source.aclose()
    await source.aclose()  # idempotent
    with pytest.raises(SourceError, match="closed"):
        await source.read_range(0, 4)


@pytest.mark.anyio
async def test_changed_object_is_detected(make_target: MakeTarget) -> None:
    """An object that shrinks after its size was learnt gives a clear short-read error."""
    target = make_target(DATA)
    if target.overwrite is None:
        pytest.skip("memory sources are immutable")
    async with target.open() as source:
        assert await source.size() == len(DATA)
        target.overwrite(DATA[:1000])
        with pytest.raises(SourceError) as info:
            await source.read_range(500, 5000)
    # Object stores refuse the read (If-Match on the first ETag); a local file returns the
    # shorter remainder, caught by the length check.
    expected = "returned 500 bytes" if target.kind == "local" else "object changed"
    assert expected in str(info.value)
    assert target.location in str(info.value)


@pytest.mark.anyio
async def test_replaced_object_is_not_mixed(make_target: MakeTarget) -> None:
    """Bytes of two versions are never mixed: reads are pinned to the first ETag seen."""
    target = make_target(DATA)
    if target.kind in ("memory", "local"):
        pytest.skip("only stores have ETags to pin reads to")
    assert target.overwrite is not None
    async with target.open() as source:
        assert await source.read_suffix(100) == DATA[-100:]
        target.overwrite(bytes(reversed(DATA)))  # same size, other content
        with pytest.raises(SourceError, match="object changed since it was first read"):
            await source.read_ranges([(0, 10), (20, 30)])
    async with target.open() as fresh:
        assert await fresh.read_range(0, 3) == bytes(reversed(DATA))[:3]


# --------------------------------------------------------------------------- HTTP, on the wire


@pytest.mark.servers
@pytest.mark.anyio
async def test_http_requests_on_the_wire(nginx_server: NginxServer) -> None:
    """nginx's access log shows exactly the requests the stats claim."""
    name = f"wire-{uuid.uuid4().hex}.bin"
    url = nginx_server.put(name, DATA)
    stats = SourceStats()
    async with open_source(url, stats=stats, max_retries=0) as source:
        assert await source.read_suffix(500) == DATA[-500:]
        await source.read_ranges([(0, 10), (100, 200), (len(DATA) - 1, len(DATA))])
    lines = nginx_server.requests_for(name, 4)
    # The footer costs one GET with a suffix range, and no HEAD.
    assert lines[0] == f'GET /{name} 206 "bytes=-500" 500'
    # obstore sends the three ranges concurrently, so their order in the log varies.
    assert sorted(lines[1:]) == sorted(
        [
            f'GET /{name} 206 "bytes=0-9" 10',
            f'GET /{name} 206 "bytes=100-199" 100',
            f'GET /{name} 206 "bytes=199999-199999" 1',
        ]
    )
    assert stats.requests == len(lines) == 4
    assert stats.metadata_requests == 0


@pytest.mark.servers
@pytest.mark.anyio
async def test_file_info_saves_the_head(nginx_server: NginxServer) -> None:
    name = f"info-{uuid.uuid4().hex}.bin"
    url = nginx_server.put(name, DATA)
    (info,) = await list_parquet_files(url)  # one HEAD: size and ETag
    assert isinstance(info, FileInfo) and info.size == len(DATA) and info.etag
    stats = SourceStats()
    async with open_source(info, stats=stats) as source:
        assert source.etag == info.etag
        assert await source.read_range(10, 20) == DATA[10:20]
    head, *reads = nginx_server.requests_for(name, 2)
    assert head.startswith(f"HEAD /{name} 200 ")
    assert reads == [f'GET /{name} 206 "bytes=10-19" 10']
    assert stats.metadata_requests == 0
    # A stale FileInfo (the file was replaced since the listing) is refused, not mixed.
    async with open_source(FileInfo(url, len(DATA), etag='"stale"')) as stale:
        with pytest.raises(SourceError, match="object changed"):
            await stale.read_range(10, 20)


# --------------------------------------------------------------------------- local specifics


@pytest.mark.anyio
async def test_local_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="is a directory") as info:
        await open_source(tmp_path).size()
    assert not isinstance(info.value, SourceNotFoundError)
    assert str(tmp_path) in str(info.value)


@pytest.mark.anyio
async def test_local_path_under_a_file_is_not_found(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x")
    with pytest.raises(SourceNotFoundError):
        await open_source(tmp_path / "f" / "g.parquet").size()


@pytest.mark.skipif(not LISTS_DESCRIPTORS, reason="needs /proc/self/fd")
@pytest.mark.anyio
async def test_local_lazy_open_keeps_one_descriptor(tmp_path: Path) -> None:
    """Tasks racing to open the file leave exactly one descriptor, closed by aclose()."""
    path = tmp_path / "race.bin"
    path.write_bytes(DATA)
    source = LocalFileSource(path)
    async with anyio.create_task_group() as tg:
        for i in range(20):
            tg.start_soon(source.read_range, i, i + 100)
    assert len(fds_under(path)) == 1
    await source.aclose()
    assert fds_under(path) == []


@pytest.mark.skipif(not LISTS_DESCRIPTORS, reason="needs /proc/self/fd")
@pytest.mark.anyio
async def test_local_close_during_reads(tmp_path: Path) -> None:
    """aclose() while reads run: each read gets its bytes or "closed", never a bad fd."""
    path = tmp_path / "close.bin"
    path.write_bytes(DATA)
    source = LocalFileSource(path)
    await source.size()
    outcomes: list[str] = []

    async def reader(i: int) -> None:
        try:
            data = await source.read_range(i * 1000, i * 1000 + 1000)
        except SourceError as exc:
            outcomes.append("closed" if "source is closed" in str(exc) else str(exc))
        else:
            outcomes.append("ok" if data == DATA[i * 1000 : i * 1000 + 1000] else "wrong")

    async with anyio.create_task_group() as tg:
        for i in range(100):
            tg.start_soon(reader, i)
        await anyio.sleep(0)
        await source.aclose()
    assert len(outcomes) == 100
    assert set(outcomes) <= {"ok", "closed"}, set(outcomes)
    assert fds_under(path) == []


@pytest.mark.anyio
async def test_file_url(tmp_path: Path) -> None:
    path = tmp_path / "a b.bin"
    path.write_bytes(DATA)
    source = open_source(path.as_uri())
    assert isinstance(source, LocalFileSource)
    async with source:
        assert await source.read_range(0, 5) == DATA[:5]


# --------------------------------------------------------------------------- listing

TREE = {
    "a.parquet": b"a",
    "b.PARQUET": b"bb",
    "notes.txt": b"x",
    "x.parquet.crc": b"x",
    "_SUCCESS": b"",
    "_metadata": b"x",
    ".hidden.parquet": b"x",
    "year=2024/c.parquet": b"ccc",
    "year=2024/month=1/d.parquet": b"dddd",
    "_temporary/0/e.parquet": b"x",
    ".spark-staging/f.parquet": b"x",
}
LISTED = ["a.parquet", "b.PARQUET", "year=2024/c.parquet", "year=2024/month=1/d.parquet"]


@pytest.mark.anyio
async def test_list_local(tmp_path: Path) -> None:
    for name, data in TREE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    stats = SourceStats()
    files = await list_parquet_files(tmp_path, stats=stats)
    assert [Path(f.path).relative_to(tmp_path).as_posix() for f in files] == LISTED
    assert [f.size for f in files] == [len(TREE[n]) for n in LISTED]
    assert all(f.etag for f in files)
    assert stats.metadata_requests == 1
    # A file named exactly is itself, whatever its name.
    (single,) = await list_parquet_files(str(tmp_path / "notes.txt"))
    assert single.path == str(tmp_path / "notes.txt") and single.size == 1
    # Listed files open without further ado.
    async with open_source(files[-1]) as source:
        assert await source.read_range(0, 4) == b"dddd"
    with pytest.raises(SourceNotFoundError, match="nope"):
        await list_parquet_files(tmp_path / "nope")
    # Without identities: the same files and sizes, no ETag or time held per file.
    bare = await list_parquet_files(tmp_path, identities=False)
    assert [(f.path, f.size) for f in bare] == [(f.path, f.size) for f in files]
    assert all(f.etag is None and f.mtime is None for f in bare)
    async with open_source(bare[-1]) as source:
        assert (await source.identity()).etag == files[-1].etag


@pytest.fixture(
    params=[
        pytest.param("s3_server", marks=pytest.mark.servers),
        pytest.param("azurite_server", marks=pytest.mark.servers),
    ]
)
def store_server(request: pytest.FixtureRequest) -> S3Server | AzuriteServer:
    server: S3Server | AzuriteServer = request.getfixturevalue(request.param)
    return server


@pytest.mark.anyio
async def test_list_object_prefix(store_server: S3Server | AzuriteServer) -> None:
    prefix = f"list-{uuid.uuid4().hex}"
    for name, data in TREE.items():
        store_server.put(f"{prefix}/{name}", data)
    store_server.put(f"{prefix}-sibling/z.parquet", b"z")  # shares the characters, not the segment
    options = store_server.options
    for location in (store_server.url(prefix), store_server.url(prefix + "/")):
        stats = SourceStats()
        files = await list_parquet_files(location, stats=stats, **options)
        assert [f.path for f in files] == [store_server.url(f"{prefix}/{n}") for n in LISTED]
        assert [f.size for f in files] == [len(TREE[n]) for n in LISTED]
        assert all(f.etag and f.mtime for f in files)
        # No trailing slash: a HEAD first (not found), then the listing.
        assert stats.metadata_requests == (2 if not location.endswith("/") else 1)
    # An object named exactly is itself; it opens with its listed size (no HEAD).
    (single,) = await list_parquet_files(store_server.url(f"{prefix}/notes.txt"), **options)
    assert single.size == 1
    stats = SourceStats()
    async with open_source(files[-1], stats=stats, **options) as source:
        assert await source.read_range(0, 4) == b"dddd"
    assert stats.metadata_requests == 0
    with pytest.raises(SourceNotFoundError, match="no objects under this prefix"):
        await list_parquet_files(store_server.url(f"{prefix}-missing"), **options)


@pytest.mark.servers
@pytest.mark.anyio
async def test_list_abfs_url_keeps_the_account(azurite_server: AzuriteServer) -> None:
    """abfs://container@account.dfs.core.windows.net/...: the account comes from the URL,
    and listed URLs keep that form so they reopen against the same account."""
    prefix = f"abfs-{uuid.uuid4().hex}"
    azurite_server.put(f"{prefix}/part-0.parquet", b"0123")
    options = {k: v for k, v in azurite_server.options.items() if k != "account_name"}
    authority = f"{azurite_server.container}@devstoreaccount1.dfs.core.windows.net"
    files = await list_parquet_files(f"abfs://{authority}/{prefix}/", **options)
    assert [f.path for f in files] == [f"abfs://{authority}/{prefix}/part-0.parquet"]
    async with open_source(files[0], **options) as source:
        assert await source.read_range(1, 3) == b"12"


@pytest.mark.servers
@pytest.mark.anyio
async def test_list_http_is_refused(nginx_server: NginxServer) -> None:
    nginx_server.put("dir/a.parquet", b"a")
    with pytest.raises(SourceError, match="cannot list"):
        await list_parquet_files(nginx_server.url("dir/"), max_retries=0)
    # Naming the file works: one HEAD.
    (info,) = await list_parquet_files(nginx_server.url("dir/a.parquet"), max_retries=0)
    assert info.size == 1


# --------------------------------------------------------------------------- store clients


@pytest.mark.servers
@pytest.mark.anyio
async def test_environment_configures_s3(
    s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no options, obstore's AWS_* variables apply, AWS_ALLOW_HTTP included."""
    url = s3_server.put(f"env-{uuid.uuid4().hex}.bin", DATA)
    for name in [k for k in os.environ if k.startswith("AWS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint)
    monkeypatch.setenv("AWS_REGION", s3_server.region)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key_id)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_access_key)
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    async with open_source(url, max_retries=0) as source:
        assert await source.read_range(5, 50) == DATA[5:50]
    # Without AWS_ALLOW_HTTP the plain-HTTP endpoint is refused, with the URL in the error.
    monkeypatch.delenv("AWS_ALLOW_HTTP")
    with pytest.raises(SourceError) as info:
        await open_source(url, max_retries=0).size()
    assert url in str(info.value)


def test_store_clients_are_shared() -> None:
    clear_store_cache()
    a = open_source("s3://bucket-a/x/1.parquet", region="eu-west-1", skip_signature=True)
    b = open_source("s3://bucket-a/y/2.parquet", region="eu-west-1", skip_signature=True)
    c = open_source("s3://bucket-a/x/1.parquet", region="eu-west-2", skip_signature=True)
    d = open_source("s3://bucket-b/x/1.parquet", region="eu-west-1", skip_signature=True)
    assert isinstance(a, ObjectStoreSource) and isinstance(b, ObjectStoreSource)
    assert isinstance(c, ObjectStoreSource) and isinstance(d, ObjectStoreSource)
    assert a.store is b.store
    assert a.store is not c.store and a.store is not d.store
    assert (a.key, b.key) == ("x/1.parquet", "y/2.parquet")
    clear_store_cache()
    again = open_source("s3://bucket-a/x/1.parquet", region="eu-west-1", skip_signature=True)
    assert isinstance(again, ObjectStoreSource) and again.store is not a.store


def test_environment_is_read_once_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Within a run the store variables are read at its first object: a variable changed
    mid-run keeps that run's client; the next run (outside) gets a client built anew."""
    clear_store_cache()
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    url = "s3://bucket-env/x/1.parquet"
    with environment_read_once():
        first = open_source(url, skip_signature=True)
        monkeypatch.setenv("AWS_REGION", "eu-west-2")
        same = open_source(url, skip_signature=True)
    after = open_source(url, skip_signature=True)
    assert isinstance(first, ObjectStoreSource) and isinstance(same, ObjectStoreSource)
    assert isinstance(after, ObjectStoreSource)
    assert same.store is first.store and after.store is not first.store
    clear_store_cache()


def test_s3_options_reach_the_store() -> None:
    source = open_source(
        "s3a://bkt/dir/file.parquet",
        endpoint="http://127.0.0.1:9",
        region="eu-central-1",
        access_key_id="AKID",
        secret_access_key="SECRET",
        timeout=12,
        max_retries=2,
        extra_config={"virtual_hosted_style_request": "false"},
    )
    assert isinstance(source, ObjectStoreSource) and isinstance(source.store, S3Store)
    assert source.key == "dir/file.parquet" and source.path == "s3a://bkt/dir/file.parquet"
    config = source.store.config
    assert config["bucket"] == "bkt"
    assert config["endpoint"] == "http://127.0.0.1:9"
    assert config["region"] == "eu-central-1"
    assert config["access_key_id"] == "AKID"
    client = source.store.client_options
    assert client is not None
    # obstore hands its client options back as strings.
    assert str(client["allow_http"]) == "true"  # inferred from the http:// endpoint
    assert str(client["timeout"]) == "12s"
    assert str(client["connect_timeout"]) == "5s"
    retry = source.store.retry_config
    assert retry is not None
    assert retry["max_retries"] == 2
    assert retry["retry_timeout"] == timedelta(seconds=60)


@pytest.mark.anyio
async def test_gcs_url_and_options(unused_tcp_port: int) -> None:
    """GCS cannot be served locally: check the URL parsing, the options, and that a
    connection failure comes back as SourceError naming the gs:// URL."""
    source = open_source(
        "gs://my-bucket/path/to/file.parquet",
        endpoint=f"http://127.0.0.1:{unused_tcp_port}",
        skip_signature=True,
        max_retries=0,
        connect_timeout=2,
    )
    assert isinstance(source, ObjectStoreSource) and isinstance(source.store, GCSStore)
    assert source.key == "path/to/file.parquet"
    config = source.store.config
    assert config["bucket"] == "my-bucket"
    assert config["base_url"] == f"http://127.0.0.1:{unused_tcp_port}"
    assert str(config["skip_signature"]).lower() == "true"
    with pytest.raises(SourceError) as info:
        await source.read_suffix(8)
    assert "gs://my-bucket/path/to/file.parquet" in str(info.value)
    assert not isinstance(info.value, SourceNotFoundError)


@pytest.fixture
def unused_tcp_port() -> int:
    """A port nothing listens on (bound and released; connections are refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize(
    ("url", "store_type", "key", "config"),
    [
        ("az://cont/a/b.parquet", AzureStore, "a/b.parquet", {"container_name": "cont"}),
        ("azure://cont/b.parquet", AzureStore, "b.parquet", {"container_name": "cont"}),
        (
            "abfss://cont@acct.dfs.core.windows.net/p/q.parquet",
            AzureStore,
            "p/q.parquet",
            {"container_name": "cont", "account_name": "acct"},
        ),
        ("s3://b/k%20x.parquet", S3Store, "k%20x.parquet", {"bucket": "b"}),
        ("s3://b/k?versionId=1", S3Store, "k?versionId=1", {"bucket": "b"}),
        ("gs://b/a#1/ü é+.parquet", GCSStore, "a#1/ü é+.parquet", {}),
        ("http://127.0.0.1:9/d/k%20x.parquet", HTTPStore, "d/k x.parquet", {}),
        ("https://example.org/k.parquet", HTTPStore, "k.parquet", {}),
    ],
)
def test_url_forms(url: str, store_type: type, key: str, config: dict[str, str]) -> None:
    source = (
        open_source(url, account_name="fallback")
        if store_type is AzureStore and "@" not in url
        else open_source(url)
    )
    assert isinstance(source, ObjectStoreSource)
    assert isinstance(source.store, store_type)
    assert source.key == key
    if config:
        store_config: dict[str, Any] = dict(source.store.config)  # type: ignore[union-attr]
        for name, value in config.items():
            assert store_config[name] == value


@pytest.mark.parametrize(
    ("location", "kwargs", "match"),
    [
        ("ftp://host/x.parquet", {}, "unsupported URL scheme 'ftp'"),
        ("s3://bucket", {}, "no object"),
        ("s3://bucket/", {}, "no object"),
        ("s3:///key", {}, "no bucket"),
        ("s3://b?k", {}, "query or fragment after its bucket"),
        ("http://h/k?versionId=1", {}, "query or fragment"),
        ("file://server/share/x", {}, "remote host"),
        ("s3://b/a/../x.parquet", {}, "'..' path segment"),
        ("s3://b/a//x.parquet", {}, "empty, '.' or '..' path segment"),
        ("az://c/./x.parquet", {}, "path segment"),
        ("http://h/a/%2E%2E/x", {}, "path segment"),
        ("", {}, "empty"),
        ("s3://b/k", {"colour": "blue"}, "unknown option"),
        ("az://c/k", {"region": "eu-west-1"}, "region do not apply to az URLs"),
        ("/tmp/x.parquet", {"endpoint": "http://h"}, "do not apply to local files"),
        ("http://h/x", {"access_key_id": "a"}, "do not apply to http URLs"),
        ("s3://b/k", {"timeout": "soon"}, "timeout must be a number"),
        ("s3://b/k", {"timeout": 0}, "timeout must be positive"),
        ("s3://b/k", {"max_retries": -1}, "max_retries"),
        ("s3://b/k", {"allow_http": "yes"}, "allow_http must be True"),
        ("s3://b/k", {"region": ""}, "non-empty string"),
        ("s3://b/k", {"extra_config": {"a": 1}}, "extra_config"),
        ("s3://b/k", {"extra_config": {"not_a_key": "1"}}, "cannot configure the s3 store"),
    ],
)
def test_bad_locations_and_options(location: str, kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        open_source(location, **kwargs)


def test_options_object_and_overrides() -> None:
    base = StoreOptions(region="eu-west-1", skip_signature=True)
    source = open_source("s3://b/k.parquet", options=base, region="us-west-2")
    assert isinstance(source, ObjectStoreSource) and isinstance(source.store, S3Store)
    assert source.store.config["region"] == "us-west-2"
    with pytest.raises(InvalidArgumentError, match="options must be StoreOptions"):
        open_source("s3://b/k", options={"region": "x"})  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="location must be a path or URL"):
        open_source(42)  # type: ignore[arg-type]


def test_stats_reset() -> None:
    stats = SourceStats()
    stats.add_reads(2, 10)
    stats.add_metadata()
    assert (stats.requests, stats.bytes_read, stats.metadata_requests) == (2, 10, 1)
    stats.reset()
    assert (stats.requests, stats.bytes_read, stats.metadata_requests) == (0, 0, 0)


@pytest.mark.anyio
async def test_read_whole_refuses_what_is_too_large_before_reading() -> None:
    """One bounded whole-object read for every caller (sidecar indexes, Paimon containers)."""

    def too_large(size: int) -> SourceError:
        return SourceError(f"{size} bytes is too much", path="m")

    stats = SourceStats()
    source = MemorySource(b"0123456789", path="m", stats=stats)
    with pytest.raises(SourceError, match="10 bytes is too much"):
        await source.read_whole(9, too_large)
    assert stats.requests == 0
    assert await source.read_whole(10, too_large) == b"0123456789"
    assert stats.requests == 1
    assert await source.read_whole(64, too_large, one_request=True) == b"0123456789"
    assert stats.requests == 2
    with pytest.raises(SourceError, match="10 bytes is too much"):
        await source.read_whole(9, too_large, one_request=True)


@pytest.mark.anyio
async def test_held_reads_are_the_same_bytes(make_target: MakeTarget) -> None:
    """read_ranges_held gives what read_ranges gives: a local file's large ranges as
    read-only views of kept buffers, everything else as bytes; a range past the end is
    refused, and a file cut short under a read is a short read, as for read_ranges."""
    target = make_target(DATA)
    ranges = [(0, 10), (5, 100_000), (100_000, 100_000), (150_000, len(DATA)), (0, len(DATA))]
    async with target.open() as source:
        plain = await source.read_ranges(ranges)
        held = await source.read_ranges_held(ranges)
        assert [bytes(h) for h in held] == plain == [DATA[s:e] for s, e in ranges]
        for (start, end), got in zip(ranges, held, strict=True):
            large = target.kind == "local" and end - start >= 64 << 10
            assert isinstance(got, memoryview if large else bytes), (start, end)
            if isinstance(got, memoryview):
                assert got.readonly
        with pytest.raises(SourceError, match="past the end"):
            await source.read_ranges_held([(0, len(DATA) + 1)])
        if target.overwrite is not None and target.kind == "local":
            target.overwrite(DATA[:100_000])
            with pytest.raises(SourceError, match="returned 20000 bytes"):
                await source.read_ranges_held([(80_000, 180_000)])


def test_a_held_read_keeps_its_buffer_while_a_view_lives(tmp_path: Path) -> None:
    """The kept buffer goes back only when the last view of it is gone: a slice outlives
    the read's own view, and buffers given back are reused with the right bytes."""
    import gc
    import threading

    from pybloom_async.io.local import read_held

    path = tmp_path / "f.bin"
    path.write_bytes(DATA)
    fd = os.open(path, os.O_RDONLY)
    try:
        lock = threading.Lock()
        part = read_held(fd, 1000, 150_000, lock)[10:20]
        gc.collect()
        for _ in range(20):  # more reads than the pool keeps: its buffers go round
            other = read_held(fd, 0, 100_000 + 1, lock)
            assert bytes(other) == DATA[:100_001]
            del other
        assert bytes(part) == DATA[1010:1020]
        assert read_held(fd, len(DATA) - 70_000, len(DATA) + 5, lock) == DATA[-70_000:]
    finally:
        os.close(fd)


def test_held_reads_of_many_ranges_take_one_native_call(tmp_path: Path) -> None:
    """read_held_ranges reads a file's large ranges in one call of the C core and the small
    ones as bytes: the bytes of each range in order, a range past the end cut short there,
    each buffer kept while its view lives; a read that fails raises OSError."""
    import threading

    from pybloom_async.io.local import read_held_ranges

    path = tmp_path / "f.bin"
    path.write_bytes(DATA)
    fd = os.open(path, os.O_RDONLY)
    lock = threading.Lock()
    ranges = [(0, 10), (5, 100_000), (100_000, 100_000), (120_000, 190_000), (130_000, 210_000)]
    try:
        got = read_held_ranges(fd, ranges, lock)
        assert [bytes(g) for g in got] == [DATA[s:e] for s, e in ranges]
        assert [isinstance(g, memoryview) for g in got] == [False, True, False, True, True]
        assert all(g.readonly for g in got if isinstance(g, memoryview))
        part = got[1][100:110]
        del got
        again = read_held_ranges(fd, [(0, 70_000), (1, 80_000)], lock)  # reuses the buffers
        assert bytes(part) == DATA[105:115]
        assert [bytes(g) for g in again] == [DATA[:70_000], DATA[1:80_000]]
    finally:
        os.close(fd)
    with pytest.raises(OSError):
        read_held_ranges(fd, [(0, 70_000), (1, 80_000)], lock)


@pytest.mark.anyio
async def test_a_blocking_local_source_reads_held_ranges_as_the_others(tmp_path: Path) -> None:
    """A blocking local source (an inline run's) gives read_ranges_held's bytes as every
    source does, and a file cut short under it is a short read."""
    from pybloom_async.io.local import BlockingLocalFileSource

    path = tmp_path / "f.bin"
    path.write_bytes(DATA)
    ranges = [(0, 10), (5, 100_000), (150_000, len(DATA)), (0, len(DATA))]
    async with BlockingLocalFileSource(str(path), stats=SourceStats()) as source:
        held = await source.read_ranges_held(ranges)
        assert [bytes(h) for h in held] == [DATA[s:e] for s, e in ranges]
        path.write_bytes(DATA[:100_000])
        with pytest.raises(SourceError, match="returned 20000 bytes"):
            await source.read_ranges_held([(0, 70_000), (80_000, 180_000)])
