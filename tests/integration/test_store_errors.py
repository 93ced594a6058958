"""Object-store failures say what happened: no credentials, or no connection; never "no such file".

Without credentials, obstore's clients fall back to the cloud's instance metadata service
(AWS IMDS, the GCE metadata server, Azure managed identity) and report that request's
failure. Here every metadata endpoint is pointed at a closed port on 127.0.0.1
(``AWS_METADATA_ENDPOINT``, ``GCE_METADATA_HOST``/``_ROOT``/``_IP``,
``AZURE_MSI_ENDPOINT``), so the fallback fails at once and no request leaves the
machine. An endpoint on a closed loopback port is "cannot connect to http://127.0.0.1:PORT".
The CLI is run as users run it, in a subprocess with the same environment.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.servers import S3Server, free_port

from pybloom_async import Rule, SourceError, prune_sync, read_footer
from pybloom_async.errors import SourceNotFoundError
from pybloom_async.io.listing import list_parquet_files
from pybloom_async.io.store import StoreOptions, clear_store_cache

# Environment variables that could give a store credentials or an endpoint.
_CLOUD_PREFIXES = ("AWS_", "GOOGLE_", "GCE_", "AZURE_")


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on."""
    return free_port()


@pytest.fixture
def no_credentials(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, closed_port: int
) -> Iterator[dict[str, str]]:
    """An environment without any cloud credentials; the metadata services unreachable.

    Yields the environment for subprocesses (the CLI); the test process gets it too.
    """
    for name in list(os.environ):
        if name.startswith(_CLOUD_PREFIXES):
            monkeypatch.delenv(name)
    home = tmp_path / "home"  # no ~/.aws, no gcloud application-default credentials
    home.mkdir()
    metadata = f"127.0.0.1:{closed_port}"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AWS_METADATA_ENDPOINT", f"http://{metadata}")
    for name in ("GCE_METADATA_HOST", "GCE_METADATA_ROOT", "GCE_METADATA_IP"):
        monkeypatch.setenv(name, metadata)
    monkeypatch.setenv("AZURE_MSI_ENDPOINT", f"http://{metadata}/metadata/identity/oauth2/token")
    clear_store_cache()
    yield dict(os.environ)
    clear_store_cache()


def _cli(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pybloom_async.apps.cli", *argv],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip


def _footer_error(url: str, **options: Any) -> SourceError:
    with pytest.raises(SourceError) as info:
        anyio.run(lambda: read_footer(url, options={"max_retries": 0, **options}))
    return info.value


def _data_file(tmp_path: Path) -> bytes:
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"id": pa.array(range(100), pa.int64())}), path)
    return path.read_bytes()


# --------------------------------------------------------------------------- no credentials


@pytest.mark.servers
def test_s3_without_credentials_says_so(
    s3_server: S3Server, no_credentials: dict[str, str], tmp_path: Path
) -> None:
    url = s3_server.put("store-errors/d.parquet", _data_file(tmp_path))
    where = {"endpoint": s3_server.endpoint, "region": s3_server.region, "allow_http": True}
    err = _footer_error(url, **where)
    text = str(err)
    assert text.startswith("no AWS credentials found: set AWS_ACCESS_KEY_ID"), text
    assert "--skip-signature" in text and url in text
    assert "latest/api/token" not in text and "no such file" not in text
    assert not isinstance(err, SourceNotFoundError)

    (verdict,) = prune_sync(url, "id = 1", options={**where, "max_retries": 0})
    assert verdict.kept and verdict.rule is Rule.UNREADABLE
    assert "no AWS credentials found" in verdict.reason

    common = ["--endpoint", s3_server.endpoint, "--region", s3_server.region, "--allow-http",
              "--max-retries", "0"]  # fmt: skip
    for argv in (["prune", url, "--where", "id = 1", "--strict"], ["inspect", url]):
        proc = _cli(no_credentials, *argv, *common)
        assert proc.returncode != 0, proc.stdout
        assert "no AWS credentials found" in proc.stderr, proc.stderr
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    # The advice works: with the variables set, the same command reads the file.
    env = {**no_credentials, "AWS_ACCESS_KEY_ID": s3_server.access_key_id,
           "AWS_SECRET_ACCESS_KEY": s3_server.secret_access_key}  # fmt: skip
    proc = _cli(env, "prune", url, "--where", "id = 1", "--json", "--strict", *common)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["rule"] == "no_filter", proc.stdout


@pytest.mark.parametrize(
    ("url", "options", "cloud"),
    [
        ("gs://bucket/d.parquet", {}, "no Google Cloud credentials found: set "),
        ("az://container/d.parquet", {"account_name": "acct"}, "no Azure credentials found: set "),
    ],
)
def test_gcs_and_azure_without_credentials_say_so(
    no_credentials: dict[str, str], closed_port: int, url: str, options: dict[str, Any],
    cloud: str,
) -> None:  # fmt: skip
    # The credentials are looked for before the endpoint is contacted.
    text = str(_footer_error(url, endpoint=f"http://127.0.0.1:{closed_port}", **options))
    assert text.startswith(cloud), text
    assert "--skip-signature" in text and "no such file" not in text


# --------------------------------------------------------------------------- no connection


@pytest.mark.parametrize(
    ("url", "options"),
    [
        ("s3://bucket/d.parquet", {"access_key_id": "a", "secret_access_key": "b",
                                   "region": "us-east-1"}),
        ("s3://bucket/d.parquet", {"skip_signature": True, "region": "us-east-1"}),
        ("gs://bucket/d.parquet", {"skip_signature": True}),
        ("az://container/d.parquet", {"skip_signature": True, "account_name": "acct"}),
    ],
)  # fmt: skip
def test_a_closed_endpoint_is_cannot_connect(
    no_credentials: dict[str, str], closed_port: int, url: str, options: dict[str, Any]
) -> None:
    endpoint = f"http://127.0.0.1:{closed_port}"
    err = _footer_error(url, endpoint=endpoint, **options)
    assert f"cannot connect to {endpoint}: Connection refused" in str(err), str(err)
    assert not isinstance(err, SourceNotFoundError) and "no such file" not in str(err)


def test_a_closed_http_server_is_cannot_connect(closed_port: int) -> None:
    endpoint = f"http://127.0.0.1:{closed_port}"
    err = _footer_error(f"{endpoint}/d.parquet")
    assert f"cannot connect to {endpoint}" in str(err), str(err)

    async def listing() -> None:
        await list_parquet_files(f"{endpoint}/dir/", max_retries=0)

    # Not "plain HTTP servers cannot list": nothing answered at all.
    with pytest.raises(SourceError, match=f"listing: cannot connect to {endpoint}"):
        anyio.run(listing)


def test_cli_closed_endpoint(no_credentials: dict[str, str], closed_port: int) -> None:
    endpoint = f"http://127.0.0.1:{closed_port}"
    url = "s3://bucket/d.parquet"
    common = ["--endpoint", endpoint, "--skip-signature", "--max-retries", "0"]
    for argv in (
        ["prune", url, "--where", "id = 1", "--strict"],
        ["prune", "s3://bucket/dir/", "--where", "id = 1"],
        ["inspect", url],
        ["probe", url, "--column", "id", "--value", "1"],
    ):
        proc = _cli(no_credentials, *argv, *common)
        assert proc.returncode != 0, (argv, proc.stdout)
        assert f"cannot connect to {endpoint}" in proc.stderr, (argv, proc.stderr)
        assert "no such file" not in proc.stderr
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    # Without --strict the file is kept as unreadable, and the reason says why.
    proc = _cli(no_credentials, "prune", url, "--where", "id = 1", "--json", *common)
    (row,) = json.loads(proc.stdout)
    assert row["kept"] is True and row["rule"] == "unreadable"
    assert f"cannot connect to {endpoint}" in row["reason"]


# --------------------------------------------------------------------------- the cause kept


def test_a_stall_says_it_timed_out(silent_endpoint: str) -> None:
    options = {"endpoint": silent_endpoint, "skip_signature": True, "region": "us-east-1",
               "timeout": 1}  # fmt: skip
    text = str(_footer_error("s3://bucket/d.parquet", **options))
    assert "timed out" in text, text
    assert text.count("\n") == 0 and "Debug source" not in text


@pytest.mark.servers
def test_a_refused_listing_names_the_cause_however_long_the_url(s3_server: S3Server) -> None:
    # A long prefix, percent-escaped in the request's URL: the cause comes after it.
    prefix = "s3://no-such-bucket-here/events%3A" + "x" * 200 + "/"
    options = {"endpoint": s3_server.endpoint, "region": s3_server.region, "allow_http": True,
               "access_key_id": "a", "secret_access_key": "b", "max_retries": 0}  # fmt: skip
    with pytest.raises(SourceError) as info:
        anyio.run(lambda: list_parquet_files(prefix, **options))
    text = str(info.value)
    assert "NoSuchBucket" in text and "The specified bucket does not exist" in text, text
    assert "<Error>" not in text and text.count("\n") == 0 and len(text) < 600
    env = {**os.environ, "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"}
    proc = _cli(env, "prune", prefix, "--where", "id = 1", "--endpoint", s3_server.endpoint,
                "--region", s3_server.region, "--max-retries", "0")  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    line = proc.stderr.strip()
    assert line.count("\n") == 0 and "NoSuchBucket" in line, line
    assert line.endswith(": NoSuchBucket: The specified bucket does not exist"), line


# --------------------------------------------------------------------------- a bounded wait

#: Options against the silent server: attempts of 3 s, one retry (a bound of 6.1 s).
STALL_OPTIONS = StoreOptions(timeout=3, max_retries=1)
#: What a subprocess adds to its run: start-up, imports (pyarrow), two runs at once.
START_UP = 5.0


def _timed(env: dict[str, str], argv: list[str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.monotonic()
    proc = _cli(env, *argv)
    return time.monotonic() - start, proc


def test_every_command_fails_within_one_requests_time(
    silent_endpoint: str, no_credentials: dict[str, str]
) -> None:
    """A store that accepts and never answers: each command fails within the documented
    time of one request (attempts of --timeout, --max-retries retries, the backoff)."""
    bound = STALL_OPTIONS.max_request_seconds()
    assert bound == pytest.approx(6.1)
    common = ["--endpoint", silent_endpoint, "--skip-signature", "--region", "us-east-1",
              "--timeout", "3", "--max-retries", "1"]  # fmt: skip
    file, prefix = "s3://bucket/d/f.parquet", "s3://bucket/d/"
    runs = {
        "prune": ["prune", file, "--where", "id = 1"],
        "prune prefix": ["prune", prefix, "--where", "id = 1"],
        "lookup": ["lookup", file, "--where", "id = 1", "-f", "json"],
        "probe": ["probe", file, "-c", "id", "--value", "1"],
        "inspect": ["inspect", file],
        "index build": ["index", "build", file, "-c", "id"],
        "add-filters": ["add-filters", file, "-c", "id", "--out", "s3://bucket/d/g.parquet"],
        "lake-index build": ["lake-index", "build", prefix, "-c", "id"],
        "lake-index compact": ["lake-index", "compact", prefix],
    }
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        timed = pool.map(lambda argv: _timed(no_credentials, [*argv, *common]), runs.values())
        done = dict(zip(runs, timed, strict=True))
    for name, (elapsed, proc) in done.items():
        assert proc.returncode in (1, 3), (name, proc.returncode, proc.stderr)
        assert "timed out" in proc.stderr, (name, proc.stderr)
        assert elapsed < bound + START_UP, (name, elapsed, proc.stderr)
