"""Real local peers for source and reader tests: moto_server (S3), azurite (Azure Blob), nginx.

Each fixture starts its server on 127.0.0.1 at a free port, waits (bounded) until it answers
HTTP, and stops it at the end of the session. A server whose program is not installed makes
its tests skip with the reason; the Makefile installs them for CI:

* ``moto_server``: ``pip install 'moto[server]'`` (found beside the running Python first);
* ``azurite-blob``: ``npm install --prefix .cache/npm azurite`` (or ``PYBLOOM_ASYNC_AZURITE``);
* ``nginx``: ``apt-get install nginx-light`` (or ``PYBLOOM_ASYNC_NGINX``).

Registered by the root conftest (``pytest_plugins``). Each server object carries ``options``: the
keyword options ``pybloom_async.io.objects.open_source`` takes to reach it.
"""

from __future__ import annotations

import base64
import contextlib
import email.utils
import hashlib
import hmac
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import obstore
import pytest
from obstore.store import AzureStore, S3Store

REPO = Path(__file__).resolve().parents[2]
READY_TIMEOUT = 60.0  # seconds; azurite on a loaded 2-core runner takes several
STOP_TIMEOUT = 10.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def find_program(name: str, env_var: str, *candidates: Path) -> str | None:
    """The program from ``env_var``, then the candidates, then PATH (and sbin dirs)."""
    explicit = os.environ.get(env_var)
    if explicit:
        return explicit if Path(explicit).exists() else None
    for candidate in candidates:
        if candidate.exists():
            return str(candidate)
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/local/sbin"])
    return shutil.which(name, path=search)


@dataclass
class Process:
    """A server process started by a fixture, with its combined output in ``log``."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the process, and any children left in its session, within a bounded time."""
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(STOP_TIMEOUT)
        # The process led its own session (start_new_session): its id is the group id, so
        # this reaches only what this fixture started (nginx workers, node children).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, signal.SIGKILL)


def start(name: str, argv: list[str], workdir: Path, port: int, probe: str = "/") -> Process:
    """Start ``argv`` and wait until an HTTP GET of ``probe`` on ``port`` gets any answer."""
    log = workdir / f"{name}.out"
    with log.open("wb") as out:
        popen = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=workdir,
            start_new_session=True,
        )
    process = Process(name, popen, log)
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        if popen.poll() is not None:
            raise RuntimeError(
                f"{name} exited with status {popen.returncode} during start-up:\n{process.output()}"
            )
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            try:
                conn.request("GET", probe)
                conn.getresponse().read()
            finally:
                conn.close()
            return process
        except OSError:
            pass
        if time.monotonic() > deadline:
            process.stop()
            raise RuntimeError(
                f"{name} did not answer on 127.0.0.1:{port} within {READY_TIMEOUT:.0f} s:\n"
                f"{process.output()}"
            )
        time.sleep(0.1)


# --------------------------------------------------------------------------- S3 (moto)


def table_guard_lists(location: str) -> int:
    """The LISTs a run makes to find a Delta or Iceberg table above an object-store
    ``location``: one per folder above it, the bucket's root included (a prefix's own folder
    is seen by its listing; files of one folder share the folders' answers)."""
    rest = location.split("://", 1)[1]
    key = rest.split("/", 1)[1] if "/" in rest else ""
    if not key:
        return 0
    return key.count("/") + (0 if key.endswith("/") else 1)


@dataclass
class S3Server:
    """A moto S3 endpoint with one bucket; credentials are accepted, not checked."""

    endpoint: str
    bucket: str = "pybloom-test"
    region: str = "us-east-1"
    access_key_id: str = "testing"
    secret_access_key: str = "testing"  # moto's documented dummy; not checked
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.options = {
            "endpoint": self.endpoint,
            "region": self.region,
            "access_key_id": self.access_key_id,
            "secret_access_key": self.secret_access_key,
            "allow_http": True,
        }
        self._store = S3Store(
            self.bucket,
            endpoint=self.endpoint,
            region=self.region,
            access_key_id=self.access_key_id,
            secret_access_key=self.secret_access_key,
            client_options={"allow_http": True},
        )

    def create_bucket(self) -> None:
        host, port = self.endpoint.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        try:
            conn.request("PUT", f"/{self.bucket}")
            response = conn.getresponse()
            body = response.read()
        finally:
            conn.close()
        if response.status not in (200, 409):
            raise RuntimeError(f"moto refused to create the bucket: {response.status} {body!r}")

    def put(self, key: str, data: bytes) -> str:
        """Store ``data`` at ``key``; returns its ``s3://`` URL."""
        obstore.put(self._store, key, data)
        return self.url(key)

    def url(self, key: str = "") -> str:
        return f"s3://{self.bucket}/{key}"


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """A moto_server on 127.0.0.1 with an empty bucket ``pybloom-test``."""
    program = find_program(
        "moto_server", "PYBLOOM_ASYNC_MOTO_SERVER", Path(sys.executable).parent / "moto_server"
    )
    if program is None:
        pytest.skip("moto_server not found (pip install 'moto[server]')")
    workdir = tmp_path_factory.mktemp("moto")
    port = free_port()
    process = start("moto_server", [program, "-H", "127.0.0.1", "-p", str(port)], workdir, port)
    try:
        server = S3Server(endpoint=f"http://127.0.0.1:{port}")
        server.create_bucket()
        yield server
    finally:
        process.stop()


# --------------------------------------------------------------------------- Azure (azurite)

# Azurite's fixed development account (documented in Azurite's README; not a secret).
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


@dataclass
class AzuriteServer:
    """An azurite blob service with one container, reached with the development account."""

    port: int
    container: str = "pybloom-test"
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/{AZURITE_ACCOUNT}"

    def __post_init__(self) -> None:
        self.options = {
            "endpoint": self.endpoint,
            "account_name": AZURITE_ACCOUNT,
            "account_key": AZURITE_KEY,
            "allow_http": True,
        }
        self._store = AzureStore(
            self.container,
            account_name=AZURITE_ACCOUNT,
            account_key=AZURITE_KEY,
            endpoint=self.endpoint,
            client_options={"allow_http": True},
        )

    def create_container(self) -> None:
        """Create the container with a SharedKey-signed REST call (obstore cannot)."""
        date = email.utils.formatdate(usegmt=True)
        version = "2021-08-06"
        # String-to-sign of the Blob service's Shared Key scheme: the verb, eleven standard
        # headers (all empty here; Content-Length is empty when zero), the x-ms-* headers,
        # then the canonical resource (path-style URL: the account appears twice).
        resource = f"/{AZURITE_ACCOUNT}/{AZURITE_ACCOUNT}/{self.container}\nrestype:container"
        headers = [f"x-ms-date:{date}", f"x-ms-version:{version}"]
        string_to_sign = "\n".join(["PUT", *([""] * 11), *headers, resource])
        signature = base64.b64encode(
            hmac.new(
                base64.b64decode(AZURITE_KEY), string_to_sign.encode(), hashlib.sha256
            ).digest()
        ).decode()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request(
                "PUT",
                f"/{AZURITE_ACCOUNT}/{self.container}?restype=container",
                headers={
                    "x-ms-date": date,
                    "x-ms-version": version,
                    "Content-Length": "0",
                    "Authorization": f"SharedKey {AZURITE_ACCOUNT}:{signature}",
                },
            )
            response = conn.getresponse()
            body = response.read()
        finally:
            conn.close()
        if response.status not in (201, 409):
            raise RuntimeError(f"azurite refused the container: {response.status} {body!r}")

    def put(self, key: str, data: bytes) -> str:
        """Store ``data`` at ``key``; returns its ``az://`` URL."""
        obstore.put(self._store, key, data)
        return self.url(key)

    def url(self, key: str = "") -> str:
        return f"az://{self.container}/{key}"


@pytest.fixture(scope="session")
def azurite_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AzuriteServer]:
    """Azurite's blob service on 127.0.0.1, in memory, with an empty container."""
    program = find_program(
        "azurite-blob",
        "PYBLOOM_ASYNC_AZURITE",
        REPO / ".cache" / "npm" / "node_modules" / ".bin" / "azurite-blob",
    )
    if program is None:
        pytest.skip("azurite-blob not found (npm install --prefix .cache/npm azurite)")
    if shutil.which("node") is None:
        pytest.skip("node not found; azurite needs Node.js")
    workdir = tmp_path_factory.mktemp("azurite")
    port = free_port()
    argv = [
        program,
        "--blobHost",
        "127.0.0.1",
        "--blobPort",
        str(port),
        "--inMemoryPersistence",
        "--skipApiVersionCheck",
        "--loose",
        "--silent",
        "--disableTelemetry",
    ]
    process = start("azurite", argv, workdir, port, probe=f"/{AZURITE_ACCOUNT}?comp=list")
    try:
        server = AzuriteServer(port=port)
        server.create_container()
        yield server
    finally:
        process.stop()


# --------------------------------------------------------------------------- HTTP (nginx)

# worker_connections: a suite's store clients each keep idle connections to this server, and
# nginx, out of connections, closes idle keep-alive ones; a test reading with max_retries=0
# then saw its pooled connection reset (64 were too few under the ASan pass).
NGINX_CONF = """\
{user}
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    log_format ranges '$request_method $uri $status "$http_range" $body_bytes_sent';
    client_body_temp_path {work}/client_body;
    proxy_temp_path {work}/proxy;
    fastcgi_temp_path {work}/fastcgi;
    uwsgi_temp_path {work}/uwsgi;
    scgi_temp_path {work}/scgi;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        access_log {work}/access.log ranges;
        location / {{ }}
    }}
}}
"""


@dataclass
class NginxServer:
    """nginx serving ``root`` with byte ranges; ``requests_for()`` reads its access log."""

    port: int
    root: Path
    access_log: Path
    options: dict[str, Any] = field(default_factory=dict)

    def put(self, name: str, data: bytes) -> str:
        """Write ``data`` to ``root/name``; returns its ``http://`` URL."""
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return self.url(name)

    def url(self, name: str = "") -> str:
        return f"http://127.0.0.1:{self.port}/{name}"

    def requests_for(self, name: str, count: int, settle: float = 0.1) -> list[str]:
        """The access-log lines for ``/name``: ``METHOD URI STATUS "RANGE" BYTES``.

        nginx logs a request after it has sent the response, so a client can see its answer
        before the line is written. This waits (up to 10 s) until ``count`` lines are there,
        then ``settle`` seconds more so that a surplus line shows up and fails the caller.
        """
        deadline = time.monotonic() + 10.0
        while True:
            lines = self._lines_for(name)
            if len(lines) >= count or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        time.sleep(settle)
        return self._lines_for(name)

    def _lines_for(self, name: str) -> list[str]:
        if not self.access_log.exists():
            return []
        return [line for line in self.access_log.read_text().splitlines() if f" /{name} " in line]


@pytest.fixture(scope="session")
def nginx_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NginxServer]:
    """nginx on 127.0.0.1 serving a temporary directory (Range requests are built in)."""
    program = find_program("nginx", "PYBLOOM_ASYNC_NGINX")
    if program is None:
        pytest.skip("nginx not found (apt-get install nginx-light)")
    work = tmp_path_factory.mktemp("nginx")
    root = work / "www"
    root.mkdir()
    port = free_port()
    # As root, nginx workers would switch to 'nobody' and could not read the 0700 temp dir.
    user = "user root;" if hasattr(os, "geteuid") and os.geteuid() == 0 else ""
    conf = work / "nginx.conf"
    conf.write_text(NGINX_CONF.format(user=user, work=work, root=root, port=port))
    argv = [program, "-p", str(work), "-e", str(work / "error.log"), "-c", str(conf)]
    argv += ["-g", "daemon off;"]
    process = start("nginx", argv, work, port)
    try:
        yield NginxServer(port=port, root=root, access_log=work / "access.log")
    finally:
        process.stop()


# --------------------------------------------------------------------------- a silent server


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """``http://127.0.0.1:PORT`` of a TCP server that accepts connections and never answers.

    A stalled store, as a reader meets it: every request gets a connection and then
    waits until its own timeout. The connections are held until the test ends.
    """
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    listener.settimeout(0.2)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)

    thread = threading.Thread(target=accept, name="silent-endpoint", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        listener.close()
        for conn in held:
            conn.close()
