"""Object keys with any characters S3 allows: listed, read and named back like any other.

A key is everything after the bucket, character for character: ``#``, ``?``, ``%``,
spaces, ``+`` and non-ASCII letters are part of it, as the store's own listing returns
them; a listed file's URL opens the same object again.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.servers import S3Server

import pybloom_async as pba
from pybloom_async.io.listing import list_parquet_files
from pybloom_async.io.objects import open_source

pytestmark = pytest.mark.servers

#: Names S3 accepts and its listing returns as they are; each is one file of the lake.
NAMES = [
    "a#b", "q?x=1", "p%41", "pct%2F", "sp ace", "pl+us", "ü é", "semi;colon", "x=a%3A00/f",
    "plain",
]  # fmt: skip


def _file(i: int) -> bytes:
    buf = io.BytesIO()
    ids = pa.array(range(i * 10, i * 10 + 10), pa.int64())
    pq.write_table(pa.table({"id": ids}), buf, bloom_filter_options={"id": True})
    return buf.getvalue()


@pytest.fixture
def lake(s3_server: S3Server) -> tuple[S3Server, str]:
    """A prefix holding one file per name of NAMES (file i holds ids 10i .. 10i+9)."""
    prefix = f"keys-{uuid.uuid4().hex[:8]}/"
    for i, name in enumerate(NAMES):
        s3_server.put(f"{prefix}{name}.parquet", _file(i))
    return s3_server, s3_server.url(prefix)


@pytest.mark.anyio
async def test_listed_urls_open_the_same_objects(lake: tuple[S3Server, str]) -> None:
    server, root = lake
    listed = await list_parquet_files(root, **server.options)
    assert sorted(f.path.removeprefix(root) for f in listed) == sorted(
        f"{n}.parquet" for n in NAMES
    )
    for info in listed:
        # By its URL alone (no size known): the key must be the one listed.
        async with open_source(info.path, **server.options) as source:
            assert await source.size() == info.size
            assert (await source.read_range(0, 4)) == b"PAR1"


def test_prune_and_lookup_read_every_key(lake: tuple[S3Server, str]) -> None:
    server, root = lake
    verdicts = pba.prune_sync(root, "id IN (3, 25, 91)", options=server.options)
    assert not [v for v in verdicts if v.rule.value == "unreadable"]
    kept = {v.file.removeprefix(root) for v in verdicts if v.kept}
    assert kept == {f"{NAMES[0]}.parquet", f"{NAMES[2]}.parquet", f"{NAMES[9]}.parquet"}
    rows = pba.lookup_sync(root, "id IN (3, 25, 91)", options=server.options)
    assert sorted(rows.column("id").to_pylist()) == [3, 25, 91]
    # Each file by its own URL too.
    for i, name in enumerate(NAMES):
        url = f"{root}{name}.parquet"
        got = pba.lookup_sync(url, f"id = {i * 10 + 7}", options=server.options)
        assert got.column("id").to_pylist() == [i * 10 + 7], name


def _cli(server: S3Server, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": server.access_key_id,
        "AWS_SECRET_ACCESS_KEY": server.secret_access_key,
        "AWS_REGION": server.region,
    }
    return subprocess.run(
        [sys.executable, "-m", "pybloom_async.apps.cli", *argv, "--endpoint", server.endpoint],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip


def test_cli_reads_every_key(lake: tuple[S3Server, str]) -> None:
    server, root = lake
    proc = _cli(server, "prune", root, "--where", "id IN (3, 25, 91)", "--json")
    assert proc.returncode == 0, proc.stderr
    rows: list[dict[str, Any]] = json.loads(proc.stdout)
    assert len({r["file"] for r in rows}) == len(NAMES)
    assert {r["file"].removeprefix(root) for r in rows if r["kept"]} == {
        f"{NAMES[0]}.parquet", f"{NAMES[2]}.parquet", f"{NAMES[9]}.parquet"
    }  # fmt: skip
    proc = _cli(server, "lookup", root, "--where", "id IN (3, 25, 91)", "-f", "json", "-q")
    assert proc.returncode == 0, proc.stderr
    assert sorted(r["id"] for r in json.loads(proc.stdout)) == [3, 25, 91]
    # A listed URL, given back as an input, names the same file.
    for i, name in enumerate(NAMES):
        url = f"{root}{name}.parquet"
        proc = _cli(server, "lookup", url, "--where", f"id = {i * 10 + 1}", "-f", "json", "-q")
        assert proc.returncode == 0, (name, proc.stderr)
        assert json.loads(proc.stdout) == [{"id": i * 10 + 1}], name


def test_a_missing_key_is_one_unreadable_file_among_the_others(
    lake: tuple[S3Server, str],
) -> None:
    server, root = lake
    missing = f"{root}gone#1.parquet"
    proc = _cli(server, "prune", missing, root, "--where", "id = 3", "--json")
    assert proc.returncode == 3, proc.stderr
    rows = json.loads(proc.stdout)
    unreadable = [r for r in rows if r["rule"] == "unreadable"]
    assert [r["file"] for r in unreadable] == [missing]
    assert len({r["file"] for r in rows}) == len(NAMES) + 1
