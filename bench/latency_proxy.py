"""A TCP proxy on 127.0.0.1 that adds a fixed one-way delay, to stand in for a WAN link.

The benchmark machine has no ``tc netem``, so round trips to an object store are simulated
here: every chunk of bytes read from one side is written to the other side ``delay`` seconds
after it was received (default 20 ms each way, so one request/response costs a 40 ms round
trip). Chunks of one direction keep their order, and a burst of chunks is pipelined: each
one waits ``delay`` from its own arrival, not from the previous delivery, so the link has
latency but no bandwidth limit.

A new connection also pays the TCP handshake a real link would: a client's connect() on
loopback returns at once, but on a real link its first byte reaches the server 1.5 round
trips after the SYN. The proxy accepts at once and holds the client's first bytes until
``accept + 2 * delay`` (when the SYN-ACK would have arrived), then adds the one-way delay,
so a request on a fresh connection costs 2 round trips and one on a reused connection 1
(``handshake=False`` turns this off). TLS is not modelled (the target speaks plain HTTP).

``http_keepalive=True`` (``--http-keepalive``) is for targets that close the connection
after every response, as moto_server does (werkzeug's development server disables HTTP/1.1
keep-alive), when the link to model is one to a real object store, which keeps connections
open. The proxy then speaks HTTP/1.1 to the client: it splits the client's stream into
requests (``Content-Length`` bodies; chunked request bodies are refused), sends each one,
after the delay, on a fresh loopback connection to the target with ``Connection: close``,
reads the response by its framing, drops the target's ``Connection`` header (adding a
``Content-Length`` when the response had no framing), and returns it after the delay on the
client's connection, which stays open. So the client pays the handshake once per
connection, as against S3, and the request count and timing are otherwise unchanged.

Use it in-process (``with LatencyProxy(...) as proxy``: a background thread runs its own
event loop), as a subprocess (:func:`start_subprocess`, preferred when the code under test
is CPU-bound Python: the proxy then does not compete for the benchmark's GIL), or from
the command line::

    .venv/bin/python bench/latency_proxy.py --target 127.0.0.1:5000 [--port 0] [--delay-ms 20]
        [--no-handshake] [--http-keepalive]

which prints ``listening 127.0.0.1:<port>`` once it accepts connections and runs until
SIGINT/SIGTERM, then prints its counters (``connections=... requests=... cpu_s=...``, the
last being the CPU time the proxy process used).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

CHUNK = 64 * 1024
# Chunks held per direction before the proxy stops reading (backpressure to the sender).
QUEUE_CHUNKS = 256
# HTTP mode: the largest request head and body accepted (the benchmark sends GET, HEAD, LIST).
MAX_HEAD = 64 * 1024
MAX_BODY = 64 * 1024 * 1024
START_TIMEOUT = 10.0
STOP_TIMEOUT = 10.0

_CONTENT_LENGTH = re.compile(rb"^content-length:\s*(\d+)\s*$", re.IGNORECASE | re.MULTILINE)
_CHUNKED = re.compile(rb"^transfer-encoding:.*chunked", re.IGNORECASE | re.MULTILINE)
_CONNECTION = re.compile(rb"^connection:[^\r\n]*\r\n", re.IGNORECASE | re.MULTILINE)


@dataclass
class ProxyStats:
    """Counters of one proxy: client connections accepted, HTTP requests, bytes each way."""

    connections: int = 0
    requests: int = 0  # HTTP mode only
    bytes_up: int = 0  # client -> target
    bytes_down: int = 0  # target -> client


def _parse_target(target: str) -> tuple[str, int]:
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"target must be host:port, got {target!r}")
    return host or "127.0.0.1", int(port)


async def _sleep_until(due: float) -> None:
    wait = due - asyncio.get_running_loop().time()
    if wait > 0:
        await asyncio.sleep(wait)


def _with_connection_close(head: bytes) -> bytes:
    """The request head with its Connection header replaced by ``Connection: close``."""
    head = _CONNECTION.sub(b"", head)
    return head[:-2] + b"Connection: close\r\n\r\n"


async def _read_response(reader: asyncio.StreamReader, request_head: bytes) -> bytes:
    """Read one response, framed by its headers; returns it reframed for a kept-open client.

    Reading by the framing rather than to EOF matters: werkzeug closes its side about 10 ms
    after the last byte, which would add 10 ms to every request. The ``Connection`` header
    is dropped; a response framed only by EOF gets a ``Content-Length``. Interim (1xx)
    responses are not expected (nothing sends ``Expect: 100-continue`` through the proxy).
    """
    head = await reader.readuntil(b"\r\n\r\n")
    parts = head.split(b" ", 2)
    status = parts[1] if len(parts) > 1 else b""
    head = _CONNECTION.sub(b"", head[:-2])
    if request_head.startswith(b"HEAD ") or status in (b"204", b"304"):
        return head + b"\r\n"
    length = _CONTENT_LENGTH.search(head)
    if length:
        return head + b"\r\n" + await reader.readexactly(int(length.group(1)))
    if _CHUNKED.search(head):
        # Pass the chunks on unchanged: size line, data, CRLF; size 0, trailers, CRLF.
        pieces = [head, b"\r\n"]
        while True:
            line = await reader.readuntil(b"\r\n")
            pieces.append(line)
            size = int(line.split(b";", 1)[0].strip(), 16)
            if size == 0:
                while True:
                    trailer = await reader.readuntil(b"\r\n")
                    pieces.append(trailer)
                    if trailer == b"\r\n":
                        return b"".join(pieces)
            pieces.append(await reader.readexactly(size + 2))
    body = await reader.read()  # framed by EOF only
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


class _Proxy:
    """The asyncio part: one server; per connection two delayed pumps, or an HTTP loop."""

    def __init__(
        self,
        target: tuple[str, int],
        delay: float,
        handshake: bool,
        http_keepalive: bool,
        stats: ProxyStats,
    ) -> None:
        if delay < 0:
            raise ValueError(f"delay must be >= 0, got {delay}")
        self.target = target
        self.delay = delay
        self.handshake = handshake
        self.http_keepalive = http_keepalive
        self.stats = stats
        self.connections: set[asyncio.Task[None]] = set()

    async def handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.connections.add(task)
        self.stats.connections += 1
        accepted = asyncio.get_running_loop().time()
        # Client bytes cannot have left before the handshake's SYN-ACK came back.
        not_before = accepted + 2 * self.delay if self.handshake else accepted
        try:
            if self.http_keepalive:
                await self._http_session(client_r, client_w, not_before)
            else:
                await self._tcp_session(client_r, client_w, not_before, accepted)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass  # a peer reset or sent garbage: drop the connection, as a router would
        except asyncio.CancelledError:
            # stop() cancels open connections. Returning normally ends this top-level task:
            # asyncio's start_server callback would log a cancelled handler as an error.
            pass
        finally:
            client_w.close()
            self.connections.discard(task)

    # ---- plain TCP: two pumps -------------------------------------------------------

    async def _tcp_session(
        self,
        client_r: asyncio.StreamReader,
        client_w: asyncio.StreamWriter,
        not_before: float,
        accepted: float,
    ) -> None:
        target_r, target_w = await asyncio.open_connection(*self.target)
        try:
            pumps = [
                asyncio.ensure_future(self._pump(client_r, target_w, not_before, up=True)),
                asyncio.ensure_future(self._pump(target_r, client_w, accepted, up=False)),
            ]
            try:
                await asyncio.wait(pumps, return_when=asyncio.FIRST_EXCEPTION)
            finally:
                for pump in pumps:
                    pump.cancel()
                await asyncio.gather(*pumps, return_exceptions=True)
        finally:
            target_w.close()

    async def _pump(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        not_before: float,
        *,
        up: bool,
    ) -> None:
        """Copy reader -> writer, each chunk ``delay`` after it arrived, in order."""
        loop = asyncio.get_running_loop()
        # b"" is end of stream, None a reset (passed on as one after the delay, too).
        queue: asyncio.Queue[tuple[float, bytes | None]] = asyncio.Queue(QUEUE_CHUNKS)

        async def receive() -> None:
            while True:
                data: bytes | None
                try:
                    data = await reader.read(CHUNK)
                except OSError:
                    data = None
                # Arrival times only grow, so due times do too: order is kept.
                await queue.put((max(loop.time(), not_before) + self.delay, data))
                if not data:
                    return

        async def deliver() -> None:
            while True:
                due, data = await queue.get()
                await _sleep_until(due)
                if data is None:
                    raise ConnectionResetError("peer reset the connection")
                if not data:
                    # Pass the half-close on; HTTP clients rarely rely on it, but be exact.
                    if writer.can_write_eof():
                        with contextlib.suppress(OSError):
                            writer.write_eof()
                    return
                if up:
                    self.stats.bytes_up += len(data)
                else:
                    self.stats.bytes_down += len(data)
                writer.write(data)
                await writer.drain()

        receiver = asyncio.ensure_future(receive())
        try:
            await deliver()
        finally:
            receiver.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await receiver

    # ---- HTTP/1.1 keep-alive towards the client ----------------------------------------

    async def _http_session(
        self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter, not_before: float
    ) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                head = await client_r.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                return  # the client closed its connection between requests
            arrived = loop.time()
            if len(head) > MAX_HEAD:
                raise ValueError("request head too large")
            if _CHUNKED.search(head):
                raise ValueError("chunked request bodies are not supported")
            length = _CONTENT_LENGTH.search(head)
            size = int(length.group(1)) if length else 0
            if size > MAX_BODY:
                raise ValueError("request body too large")
            body = await client_r.readexactly(size) if size else b""
            request = _with_connection_close(head) + body
            await _sleep_until(max(arrived, not_before) + self.delay)
            target_r, target_w = await asyncio.open_connection(*self.target)
            try:
                target_w.write(request)
                await target_w.drain()
                reply = await _read_response(target_r, head)
            finally:
                target_w.close()
            received = loop.time()
            self.stats.requests += 1
            self.stats.bytes_up += len(request)
            self.stats.bytes_down += len(reply)
            await _sleep_until(received + self.delay)
            client_w.write(reply)
            await client_w.drain()


class LatencyProxy:
    """A delaying proxy run by a background thread's event loop.

    Parameters
    ----------
    target:
        ``host:port`` to forward to.
    delay:
        One-way delay in seconds added to every chunk, both directions.
    port:
        Port to listen on, on 127.0.0.1; 0 picks a free one (see :attr:`port` after start).
    handshake:
        Model the TCP handshake's extra round trip on new connections.
    http_keepalive:
        Keep client connections open although the target closes its own after every
        response (see the module doc).
    """

    def __init__(
        self,
        target: str,
        *,
        delay: float = 0.020,
        port: int = 0,
        handshake: bool = True,
        http_keepalive: bool = False,
    ) -> None:
        self.stats = ProxyStats()
        self._proxy = _Proxy(_parse_target(target), delay, handshake, http_keepalive, self.stats)
        self._requested_port = port
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:<port>``: where clients should connect."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LatencyProxy:
        """Start listening; returns once connections are accepted.

        Raises
        ------
        RuntimeError
            The proxy did not start within a bounded time, or failed to bind.
        """
        self._thread = threading.Thread(target=self._run, name="latency-proxy", daemon=True)
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT):
            raise RuntimeError("latency proxy did not start in time")
        if self._error is not None:
            raise RuntimeError(f"latency proxy failed to start: {self._error}")
        return self

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported to start() or lost at stop(): never silent
            self._error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        server = await asyncio.start_server(
            self._proxy.handle, "127.0.0.1", self._requested_port, backlog=1024
        )
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
            server.close()
            for task in list(self._proxy.connections):
                task.cancel()
            await asyncio.gather(*self._proxy.connections, return_exceptions=True)

    def stop(self) -> None:
        """Stop listening, drop open connections, and join the thread (bounded)."""
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):  # loop already closed
                self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT)
            if self._thread.is_alive():
                raise RuntimeError("latency proxy thread did not stop in time")
            self._thread = None

    def __enter__(self) -> LatencyProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ProxyProcess:
    """A proxy running as a child process (see :func:`start_subprocess`)."""

    def __init__(self, popen: subprocess.Popen[str], port: int) -> None:
        self.popen = popen
        self.port = port

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:<port>``: where clients should connect."""
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> str:
        """Stop the child (SIGTERM, then SIGKILL after a bounded wait); returns its output."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(STOP_TIMEOUT)
        assert self.popen.stdout is not None
        return self.popen.stdout.read()

    def __enter__(self) -> ProxyProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_subprocess(
    target: str,
    *,
    delay: float = 0.020,
    port: int = 0,
    handshake: bool = True,
    http_keepalive: bool = False,
) -> ProxyProcess:
    """Run the proxy in a child Python process; returns once it listens.

    Raises
    ------
    RuntimeError
        The child exited or did not report its port within a bounded time.
    """
    argv = [sys.executable, __file__, "--target", target, "--port", str(port)]
    argv += ["--delay-ms", repr(delay * 1000)]
    if not handshake:
        argv.append("--no-handshake")
    if http_keepalive:
        argv.append("--http-keepalive")
    popen = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True
    )
    assert popen.stdout is not None
    found: list[int] = []

    def read_port() -> None:
        assert popen.stdout is not None
        line = popen.stdout.readline()
        if line.startswith("listening "):
            found.append(int(line.rsplit(":", 1)[1]))

    reader = threading.Thread(target=read_port, daemon=True)
    reader.start()
    reader.join(START_TIMEOUT)
    if not found:
        popen.kill()
        popen.wait(STOP_TIMEOUT)
        raise RuntimeError(f"latency proxy process did not start: {popen.stdout.read()}")
    return ProxyProcess(popen, found[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="host:port to forward to")
    parser.add_argument("--port", type=int, default=0, help="listen port on 127.0.0.1 (0: free)")
    parser.add_argument("--delay-ms", type=float, default=20.0, help="one-way delay (ms)")
    parser.add_argument("--no-handshake", action="store_true", help="no extra RTT on connect")
    parser.add_argument(
        "--http-keepalive", action="store_true", help="keep client HTTP connections open"
    )
    args = parser.parse_args()
    proxy = LatencyProxy(
        args.target,
        delay=args.delay_ms / 1000,
        port=args.port,
        handshake=not args.no_handshake,
        http_keepalive=args.http_keepalive,
    )
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    proxy.start()
    print(f"listening 127.0.0.1:{proxy.port}", flush=True)
    started = time.monotonic()
    while not done.wait(1.0):
        pass
    proxy.stop()
    fields = " ".join(f"{k}={v}" for k, v in dataclasses.asdict(proxy.stats).items())
    print(
        f"stopped after {time.monotonic() - started:.1f} s: {fields} "
        f"cpu_s={time.process_time():.3f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
