"""A fault-injecting HTTP/1.1 proxy on 127.0.0.1, for object-store fault tests.

It sits in front of an HTTP object store (moto's S3 endpoint here): clients use the proxy's
``endpoint`` instead of the store's, the proxy forwards each request and relays the answer,
except where a :class:`Fault` says otherwise. A fault matches requests by method and by
whether they carry a ``Range`` header or a query (S3 LIST), and fires for its first
``times`` matches (or for all of them). Kinds:

``status``       answer with an error status (500, 503, 429...) and an S3-style XML body
                 instead of forwarding; the connection stays open.
``reset``        send the headers and part of the body, then reset the connection (RST).
``truncate``     send the headers and part of the body, then close normally (FIN): the
                 body is shorter than its Content-Length.
``stall``        accept the request and answer nothing for ``seconds``, then close.
``stall_body``   send the headers and part of the body, then stall.
``wrong_range``  relay the right bytes under a Content-Range shifted by ``shift``.
``shifted``      answer with other bytes of the object (the requested range moved by
                 ``shift``), labelled truthfully with their own Content-Range.
``short_body``   answer with the first part of the body only, with a Content-Length and a
                 Content-Range that agree with that shorter body.
``ignore_range`` answer a ranged GET as a server without range support does: 200 and the
                 whole object.

Every request is logged (:class:`Exchange`) so tests can count requests, retries and the
faults that fired. Plain threads (one per client connection): a stall blocks only its own
connection, and :meth:`FaultProxy.stop` wakes every stalled thread.
"""

from __future__ import annotations

import http.client
import re
import socket
import socketserver
import struct
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = ["KINDS", "Exchange", "Fault", "FaultProxy"]

KINDS = (
    "status",
    "reset",
    "truncate",
    "stall",
    "stall_body",
    "wrong_range",
    "shifted",
    "short_body",
    "ignore_range",
)
_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
}
_RANGE_RE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")
_REQUEST_RANGE_RE = re.compile(r"bytes=(\d*)-(\d*)")
_ERROR_CODES = {500: "InternalError", 503: "SlowDown", 429: "TooManyRequests"}


@dataclass
class Fault:
    """One kind of fault and the requests it applies to.

    Parameters
    ----------
    kind:
        One of ``KINDS`` (see the module docstring).
    times:
        How many matching requests it spoils; None: all of them.
    status:
        The status of a ``status`` fault.
    retry_after:
        A ``Retry-After`` header for ``status`` faults (seconds), if any.
    seconds:
        How long ``stall`` and ``stall_body`` stay silent.
    keep:
        The fraction of the body sent before ``reset``, ``truncate``, ``stall_body`` and
        ``short_body`` cut it.
    shift:
        Bytes by which ``wrong_range`` and ``shifted`` move the range.
    methods:
        HTTP methods it applies to.
    ranged:
        True: only requests with a Range header; False: only those without; None: both.
    listing:
        True: only requests with a query string (S3 LIST); False: only those without.
    """

    kind: str
    times: int | None = 1
    status: int = 503
    retry_after: str | None = None
    seconds: float = 5.0
    keep: float = 0.5
    shift: int = 1
    methods: tuple[str, ...] = ("GET",)
    ranged: bool | None = True
    listing: bool = False
    fired: int = 0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown fault kind {self.kind!r}; expected one of {KINDS}")

    def matches(self, method: str, has_range: bool, has_query: bool) -> bool:
        """Whether this fault applies to a request (ignoring how often it has fired)."""
        if method not in self.methods or has_query != self.listing:
            return False
        return self.ranged is None or self.ranged == has_range


@dataclass(frozen=True)
class Exchange:
    """One request the proxy saw, and what it did with it."""

    method: str
    target: str
    range: str | None
    fault: str | None
    status: int | None


@dataclass
class _Request:
    method: str
    target: str
    version: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None


class FaultProxy:
    """The proxy: start it, point clients at :attr:`endpoint`, set faults, read the log.

    Parameters
    ----------
    upstream:
        ``http://host:port`` of the real store.
    """

    def __init__(self, upstream: str) -> None:
        host, port = upstream.removeprefix("http://").rstrip("/").split(":")
        self.upstream = (host, int(port))
        self.faults: list[Fault] = []
        self.log: list[Exchange] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: socketserver.ThreadingTCPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()

    # ---- lifecycle ------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:<port>`` of the running proxy."""
        assert self._server is not None, "the proxy is not running"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FaultProxy:
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                proxy._serve(self.request)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True
            # The default backlog (5) drops connections under bursts of concurrent reads.
            request_queue_size = 256

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="fault-proxy", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting, wake stalled threads and close every client connection."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        with self._lock:
            for conn in list(self._connections):
                try:
                    conn.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- faults and the log ---------------------------------------------------------

    @contextmanager
    def faults_applied(self, faults: Sequence[Fault]) -> Iterator[list[Fault]]:
        """Apply ``faults`` (and a fresh log) for the duration of the block."""
        with self._lock:
            self.faults = list(faults)
            self.log = []
        try:
            yield self.faults
        finally:
            with self._lock:
                self.faults = []

    def counts(self) -> dict[str, int]:
        """Requests seen, faults fired by kind, and retries.

        A retry is a spoiled request that the client followed with another request for
        the same object (obstore resumes a broken body with a narrower range, so ranges
        are not compared).
        """
        with self._lock:
            log = list(self.log)
        retries = sum(
            1
            for i, e in enumerate(log)
            if e.fault and any((r.method, r.target) == (e.method, e.target) for r in log[i + 1 :])
        )
        out = {"requests": len(log), "retries": retries}
        for kind, n in Counter(e.fault for e in log if e.fault).items():
            out[f"fault:{kind}"] = n
        return out

    def _pick(self, request: _Request) -> Fault | None:
        has_range = request.header("range") is not None
        has_query = "?" in request.target
        with self._lock:
            for fault in self.faults:
                if fault.matches(request.method, has_range, has_query) and (
                    fault.times is None or fault.fired < fault.times
                ):
                    fault.fired += 1
                    return fault
        return None

    def _record(self, request: _Request, fault: Fault | None, status: int | None) -> None:
        with self._lock:
            self.log.append(
                Exchange(
                    request.method,
                    request.target,
                    request.header("range"),
                    fault.kind if fault else None,
                    status,
                )
            )

    # ---- serving ----------------------------------------------------------------------

    def _serve(self, conn: socket.socket) -> None:
        with self._lock:
            self._connections.add(conn)
        reader = conn.makefile("rb")
        try:
            while not self._stopping.is_set():
                request = _read_request(reader)
                if request is None:
                    return
                if not self._answer(conn, request):
                    return
        except OSError:
            return
        finally:
            with self._lock:
                self._connections.discard(conn)
            reader.close()
            try:
                conn.close()
            except OSError:
                pass

    def _answer(self, conn: socket.socket, request: _Request) -> bool:
        """Answer one request; False when the connection must end."""
        fault = self._pick(request)
        if fault is not None and fault.kind == "status":
            code = _ERROR_CODES.get(fault.status, "InternalError")
            body = (
                f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
                f"<Message>injected by the fault proxy</Message></Error>"
            ).encode()
            headers = [("Content-Type", "application/xml")]
            if fault.retry_after is not None:
                headers.append(("Retry-After", fault.retry_after))
            # Logged before the answer goes out: the client may act on it at once.
            self._record(request, fault, fault.status)
            _send(conn, fault.status, headers, body, len(body))
            return True
        if fault is not None and fault.kind == "stall":
            self._record(request, fault, None)
            self._stopping.wait(fault.seconds)
            return False

        shift = fault.shift if fault is not None and fault.kind == "shifted" else 0
        if fault is not None and fault.kind == "ignore_range":
            request.headers = [(k, v) for k, v in request.headers if k.lower() != "range"]
        status, headers, body = self._forward(request, shift)
        declared = len(body)
        if request.method == "HEAD":
            declared = int(_get(headers, "content-length") or 0)
        if fault is None or status >= 300:
            self._record(request, None, status)
            _send(conn, status, headers, body, declared)
            return True

        cut = int(len(body) * fault.keep)
        self._record(request, fault, status)
        if fault.kind == "wrong_range":
            headers = _shift_content_range(headers, fault.shift)
            _send(conn, status, headers, body, declared)
            return True
        if fault.kind == "ignore_range":
            _send(conn, status, headers, body, declared)
            return True
        if fault.kind == "shifted":
            wanted = _suffix_length(request.header("range"))
            if wanted is not None:
                # A suffix request was widened by ``shift``: keep its first bytes, which
                # end ``shift`` bytes before the object does, and label them so.
                body = body[:wanted]
                headers = _shorten_content_range(headers, len(body))
            _send(conn, status, headers, body, len(body))
            return True
        if fault.kind == "short_body":
            headers = _shorten_content_range(headers, cut)
            _send(conn, status, headers, body[:cut], cut)
            return True
        # reset, truncate, stall_body: headers promise the whole body, part of it comes.
        _send(conn, status, headers, body[:cut], declared)
        if fault.kind == "stall_body":
            self._stopping.wait(fault.seconds)
        elif fault.kind == "reset":
            # SO_LINGER with a zero timeout: close() sends RST instead of FIN.
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        return False

    def _forward(self, request: _Request, shift: int) -> tuple[int, list[tuple[str, str]], bytes]:
        headers = [(k, v) for k, v in request.headers if k.lower() not in _HOP_BY_HOP]
        if shift:
            headers = [
                (k, _shift_request_range(v, shift) if k.lower() == "range" else v)
                for k, v in headers
            ]
        upstream = http.client.HTTPConnection(*self.upstream, timeout=30)
        try:
            upstream.putrequest(request.method, request.target, skip_host=True,
                                skip_accept_encoding=True)  # fmt: skip
            for key, value in headers:
                upstream.putheader(key, value)
            upstream.endheaders(request.body or None)
            response = upstream.getresponse()
            body = response.read()
            out = [(k, v) for k, v in response.getheaders() if k.lower() not in _HOP_BY_HOP]
            return response.status, out, body
        finally:
            upstream.close()


def _read_request(reader: Any) -> _Request | None:
    line = reader.readline(65537)
    if not line or not line.strip():
        return None
    method, target, version = line.decode("latin-1").rstrip("\r\n").split(" ", 2)
    headers: list[tuple[str, str]] = []
    while True:
        raw = reader.readline(65537)
        if raw in (b"\r\n", b"\n", b""):
            break
        key, _, value = raw.decode("latin-1").partition(":")
        headers.append((key.strip(), value.strip()))
    length = next((int(v) for k, v in headers if k.lower() == "content-length"), 0)
    body = reader.read(length) if length else b""
    return _Request(method, target, version, headers, body)


def _get(headers: list[tuple[str, str]], name: str) -> str | None:
    return next((v for k, v in headers if k.lower() == name), None)


def _send(
    conn: socket.socket, status: int, headers: list[tuple[str, str]], body: bytes, declared: int
) -> None:
    reason = http.client.responses.get(status, "Unknown")
    lines = [f"HTTP/1.1 {status} {reason}"]
    lines += [f"{k}: {v}" for k, v in headers if k.lower() != "content-length"]
    lines += [f"Content-Length: {declared}", "Connection: keep-alive", "", ""]
    conn.sendall("\r\n".join(lines).encode("latin-1") + body)


def _shift_content_range(headers: list[tuple[str, str]], shift: int) -> list[tuple[str, str]]:
    out = []
    for key, value in headers:
        match = _RANGE_RE.fullmatch(value) if key.lower() == "content-range" else None
        if match:
            start, end = int(match.group(1)) + shift, int(match.group(2)) + shift
            value = f"bytes {start}-{end}/{match.group(3)}"
        out.append((key, value))
    return out


def _shorten_content_range(headers: list[tuple[str, str]], length: int) -> list[tuple[str, str]]:
    out = []
    for key, value in headers:
        match = _RANGE_RE.fullmatch(value) if key.lower() == "content-range" else None
        if match:
            start = int(match.group(1))
            value = f"bytes {start}-{start + max(length, 1) - 1}/{match.group(3)}"
        out.append((key, value))
    return out


def _suffix_length(value: str | None) -> int | None:
    match = _REQUEST_RANGE_RE.fullmatch((value or "").strip())
    if not match or match.group(1) or not match.group(2):
        return None
    return int(match.group(2))


def _shift_request_range(value: str, shift: int) -> str:
    match = _REQUEST_RANGE_RE.fullmatch(value.strip())
    if not match:
        return value
    if not match.group(1):  # a suffix "bytes=-N": ask for N + shift, see _answer
        return f"bytes=-{int(match.group(2) or 0) + shift}"
    start = max(0, int(match.group(1)) + shift)
    end = match.group(2)
    return f"bytes={start}-{int(end) + shift if end else ''}"
