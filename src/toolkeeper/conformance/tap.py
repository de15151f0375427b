"""The recording tap: a small HTTP forwarder on 127.0.0.1 between a reverse proxy and the origin
that records what the proxy forwarded and what the origin answered (the origin view of SPEC
5.5), byte for byte, and passes both on unchanged.

It reads the origin's whole answer before passing it on (the view needs it whole), so it hides a
proxy's own buffering of an SSE stream from the client; the detectors here do not judge
streaming. Records hold raw messages, secrets included: they live in memory only and are
redacted into views by :func:`~toolkeeper.conformance.evidence.build_exchange` before anything
is written.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Final
from urllib.parse import urlsplit

from toolkeeper.conformance.evidence import Headers, RawRequest, RawResponse
from toolkeeper.errors import ConformanceError

__all__ = ["TAP_DEADLINE_S", "TAP_MAX_BODY", "RecordingTap", "TapRecord", "Truncation"]

_HOP_BY_HOP: Final = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer",
    "transfer-encoding", "upgrade", "content-length"})
"""Headers that belong to one connection (RFC 9110 7.6.1), not to the message; the tap sets
``Content-Length`` itself."""
_MAX_BODY: Final = 16 * 1024 * 1024
TAP_MAX_BODY: Final = _MAX_BODY
"""The most bytes of an origin body the tap reads; beyond it the tap notes a truncation."""
_TIMEOUT_S: Final = 30.0
TAP_DEADLINE_S: Final = 60.0
"""The whole forward's deadline (connect to last body byte): an origin that trickles bytes
would keep a per-read timeout from ever firing."""
_CHUNK: Final = 64 * 1024

Truncation = tuple[int, int | None]
"""An origin body the tap cut: the bytes it read (at most its bound + 1, so "more than the
bound" without reading on) and the length the origin declared (None: not declared)."""

TapRecord = tuple[RawRequest, RawResponse]
"""What the proxy forwarded, and what the origin answered."""


def _read_chunked(stream: object) -> bytes:
    read = stream.readline  # type: ignore[attr-defined]  # the handler's rfile
    data = bytearray()
    while True:
        size = int(read(1024).split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while read(1024).strip():  # trailers, up to the blank line
                pass
            return bytes(data)
        data += stream.read(size + 2)[:size]  # type: ignore[attr-defined]
        if len(data) > _MAX_BODY:
            raise ValueError("request body too large")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _TapServer

    def log_message(self, format: str, *args: object) -> None:
        """Silent: the records are the evidence; a request line may carry secrets."""

    def _forward(self) -> None:
        headers: Headers = tuple((n.lower(), v) for n, v in self.headers.items())
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            body = _read_chunked(self.rfile)
        else:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(min(length, _MAX_BODY)) if length > 0 else b""
        forwarded = RawRequest(self.command, self.path, headers, body)
        try:
            answered = self.server.tap.send_to_origin(forwarded)
        except OSError as exc:
            # Not recorded: the origin answered nothing, so there is no origin view.
            self.server.tap.unreachable(type(exc).__name__)
            answered = RawResponse(502, (("content-type", "text/plain"),),
                                   b"tap: origin unreachable")
        else:
            self.server.tap.record(forwarded, answered)
        self.send_response_only(answered.status)
        for name, value in answered.headers:
            if name not in _HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("content-length", str(len(answered.body)))
        self.end_headers()
        self.wfile.write(answered.body)

    do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = do_OPTIONS = _forward


class _TapServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, tap: RecordingTap) -> None:
        self.tap = tap
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: object, client_address: object) -> None:
        """Silent (the base prints a traceback): a connection the proxy dropped or a request
        the tap cannot frame is not recorded, and its absence is the evidence."""


class RecordingTap:
    """Forward everything it receives to ``origin_url``'s host (keeping the request path) and
    record each exchange; use as a context manager (it serves on a thread until the block
    ends). :attr:`url` is where the proxy should send its traffic."""

    def __init__(self, origin_url: str, *, max_body: int = TAP_MAX_BODY,
                 deadline_s: float = TAP_DEADLINE_S) -> None:
        parts = urlsplit(origin_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConformanceError("the origin must be an http(s) URL",
                                   code="conformance.origin_url")
        self._origin = parts
        self._lock = threading.Lock()
        self._records: list[TapRecord] = []
        self._unreachable: list[str] = []
        self._truncations: list[Truncation] = []
        self._max_body = max_body
        self._deadline_s = deadline_s
        self._server: _TapServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "the tap is not serving"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> RecordingTap:
        self._server = _TapServer(self)
        self._thread = threading.Thread(target=self._server.serve_forever, name="recording-tap",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=_TIMEOUT_S)

    def records(self) -> list[TapRecord]:
        """Every exchange recorded so far, in the order the origin answered them."""
        with self._lock:
            return list(self._records)

    def record(self, forwarded: RawRequest, answered: RawResponse) -> None:
        with self._lock:
            self._records.append((forwarded, answered))

    def unreachable(self, error: str) -> None:
        """Note that a forwarded request could not reach the origin (``error``: the kind)."""
        with self._lock:
            self._unreachable.append(error)

    def failures(self) -> list[str]:
        """The kind of each error that kept a forwarded request from the origin, in order."""
        with self._lock:
            return list(self._unreachable)

    def truncations(self) -> list[Truncation]:
        """Each origin body the tap cut at its bound, in order."""
        with self._lock:
            return list(self._truncations)

    def send_to_origin(self, request: RawRequest) -> RawResponse:
        """``request`` sent to the origin with its headers as they came (bar hop-by-hop ones);
        the origin's answer, its body cut at the tap's bound (noted in :meth:`truncations`);
        OSError when the origin cannot be reached or the whole forward outlives the deadline
        (TimeoutError)."""
        origin = self._origin
        connection_type = (http.client.HTTPSConnection if origin.scheme == "https"
                           else http.client.HTTPConnection)
        connection = connection_type(origin.hostname or "", origin.port, timeout=_TIMEOUT_S)
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            sock = connection.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)  # wakes a blocked read with EOF

        timer = threading.Timer(self._deadline_s, expire)
        timer.daemon = True
        timer.start()
        try:
            return self._exchange(connection, request, expired)
        except (OSError, http.client.HTTPException):
            if expired.is_set():
                raise TimeoutError("the origin outlived the forward's deadline") from None
            raise
        finally:
            timer.cancel()
            connection.close()

    def _exchange(self, connection: http.client.HTTPConnection, request: RawRequest,
                  expired: threading.Event) -> RawResponse:
        connection.putrequest(request.method, request.path, skip_host=True,
                              skip_accept_encoding=True)
        for name, value in request.headers:
            if name not in _HOP_BY_HOP:
                connection.putheader(name, value)
        connection.putheader("content-length", str(len(request.body)))
        connection.endheaders(request.body)
        response = connection.getresponse()
        body = bytearray()
        while len(body) <= self._max_body:
            chunk = response.read1(min(_CHUNK, self._max_body + 1 - len(body)))
            if not chunk:
                break
            body += chunk
        if expired.is_set():
            raise TimeoutError("the origin outlived the forward's deadline")
        if len(body) > self._max_body:
            declared = response.getheader("content-length")
            with self._lock:
                self._truncations.append(
                    (len(body), int(declared) if declared and declared.isdigit() else None))
            del body[self._max_body:]
        headers = tuple((n.lower(), v) for n, v in response.getheaders())
        return RawResponse(response.status, headers, bytes(body))
