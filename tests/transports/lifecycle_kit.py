"""Kit of the HTTP lifecycle hunt: a real gateway under uvicorn on 127.0.0.1 (a thread), with
tools that hang, chatter or count, raw-socket helpers (one request or several pipelined on one
connection) and bounded waits. Every wait is bounded by ``BOUND_S``."""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.registry import Registry
from toolkeeper.server import Gateway, ToolContext, ToolHandlers, build_gateway
from toolkeeper.transports import HttpConfig, RunningServer, create_asgi_app, serve_in_thread
from toolkeeper.transports.http import StreamableHTTPApp

__all__ = [
    "ACCEPT",
    "BOUND_S",
    "VERSION",
    "Conn",
    "Live",
    "Probe",
    "call_body",
    "contract",
    "legacy_call_body",
    "legacy_head",
    "legacy_init_body",
    "legacy_session",
    "listen_request",
    "live_server",
    "modern_call_head",
    "process_handlers",
    "sse_messages",
    "wait_until",
    "write_estate",
]

VERSION: Final = "2026-07-28"
ACCEPT: Final = "application/json, text/event-stream"
BOUND_S: Final = 5.0
META: Final[dict[str, Any]] = {"io.modelcontextprotocol/protocolVersion": VERSION,
                               "io.modelcontextprotocol/clientCapabilities": {}}


@dataclass
class Probe:
    """What the test tools saw (set from the server thread)."""

    release: threading.Event = field(default_factory=threading.Event)
    started: threading.Event = field(default_factory=threading.Event)
    cancelled: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    emitted: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, where: list[Any], value: Any) -> None:
        with self.lock:
            where.append(value)


def _contract_mapping(name: str) -> dict[str, Any]:
    return {"name": name, "version": "1.0.0", "title": name, "description": f"{name} (lifecycle)",
            "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
            "dataClassification": "public", "sideEffect": "read"}


def contract(name: str) -> Any:
    return spec_from_mapping(_contract_mapping(name))


def _handlers(probe: Probe) -> ToolHandlers:
    handlers = ToolHandlers()

    @handlers.tool("t.hang")
    async def hang(arguments: dict[str, Any], ctx: ToolContext) -> str:
        """Reports progress once (when asked), then waits until released (polling a threading
        event without a worker thread)."""
        await ctx.progress(0, None, "waiting")
        probe.started.set()
        try:
            async with asyncio.timeout(BOUND_S * 2):
                while not probe.release.is_set():
                    await asyncio.sleep(0.005)
        except asyncio.CancelledError:
            probe.note(probe.cancelled, "t.hang")
            raise
        probe.note(probe.finished, "t.hang")
        return "released"

    @handlers.tool("t.chatty")
    async def chatty(arguments: dict[str, Any], ctx: ToolContext) -> str:
        """``n`` progress notifications, each carrying a 1 KiB message, as fast as sent."""
        probe.started.set()
        count = int(arguments.get("n", 10))
        try:
            for number in range(count):
                await ctx.progress(number, count, "x" * 1024)
                probe.note(probe.emitted, number)
        except asyncio.CancelledError:
            probe.note(probe.cancelled, "t.chatty")
            raise
        probe.note(probe.finished, "t.chatty")
        return "done"

    @handlers.tool("t.tasks")
    async def tasks(arguments: dict[str, Any]) -> dict[str, Any]:
        """The server loop's live tasks (other than this request's) and armed timers."""
        loop = asyncio.get_running_loop()
        timers = [h for h in getattr(loop, "_scheduled", []) if not h.cancelled()]
        return {"tasks": len(asyncio.all_tasks()) - 1, "timers": len(timers)}

    @handlers.tool("t.echo")
    def echo(arguments: dict[str, Any]) -> str:
        return "ok"

    return handlers


@dataclass
class Live:
    server: RunningServer
    gateway: Gateway
    app: StreamableHTTPApp
    probe: Probe

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def address(self) -> tuple[str, int]:
        return self.server.host, self.server.port

    def outcomes(self) -> list[tuple[str, str | None]]:
        return [(r.tool, r.outcome) for r in self.gateway.call_log.records]  # type: ignore[attr-defined]


@contextmanager
def live_server(config: HttpConfig | None = None, **options: Any) -> Iterator[Live]:
    """``options``: for :func:`~toolkeeper.server.build_gateway` (a session table, say)."""
    registry = Registry.open("memory:")
    install_demo(registry)
    for name in ("t.hang", "t.chatty", "t.echo", "t.tasks"):
        registry.publish(contract(name))
    probe = Probe()
    handlers = demo_handlers()
    handlers.merge(_handlers(probe))
    gateway = build_gateway(registry, handlers, **options)
    app = create_asgi_app(gateway.kernel, config, changes=gateway.changes)
    try:
        with serve_in_thread(app) as running:
            yield Live(running, gateway, app, probe)
    finally:
        probe.release.set()


def call_body(name: str, request_id: Any = 1, *, arguments: dict[str, Any] | None = None,
              **meta: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments or {},
                                  "_meta": {**META, **meta}}}).encode()


def legacy_init_body(request_id: Any = 1) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "hunt", "version": "1"}}}).encode()


def modern_call_head(name: str, port: int, *, length: int | None, method: str = "POST",
                     path: str = "/mcp", extra: str = "") -> bytes:
    """The head of a modern ``tools/call`` request (``length`` None: no Content-Length)."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", f"Accept: {ACCEPT}",
             "Content-Type: application/json", f"MCP-Protocol-Version: {VERSION}",
             "Mcp-Method: tools/call", f"Mcp-Name: {name}"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n" + extra + "\r\n").encode()


class Conn:
    """A raw HTTP/1.1 client connection to the server (bytes in, responses parsed out)."""

    def __init__(self, port: int, data: bytes = b"", *, timeout: float = BOUND_S) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buffer = b""
        if data:
            self.sock.sendall(data)

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def close(self) -> None:
        self.sock.close()

    def abort(self) -> None:
        """Close with a reset (SO_LINGER 0), as a client that crashed."""
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.sock.close()

    def _more(self, end: float) -> None:
        self.sock.settimeout(max(0.01, end - time.monotonic()))
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError(self.buffer)
        self.buffer += chunk

    def closed_by_server(self, seconds: float = BOUND_S) -> bool:
        """Whether the server closes the connection within ``seconds`` (data read is kept)."""
        end = time.monotonic() + seconds
        try:
            while time.monotonic() < end:
                self._more(end)
        except EOFError:
            return True
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
        return False

    def head(self, *, deadline: float | None = None) -> tuple[int, dict[str, str]]:
        end = deadline if deadline is not None else time.monotonic() + BOUND_S
        while b"\r\n\r\n" not in self.buffer:
            self._more(end)
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        headers: dict[str, str] = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return int(status_line.split()[1]), headers

    def chunk(self, *, deadline: float | None = None) -> bytes | None:
        """The next chunk of a chunked body (None: the last, empty one)."""
        end = deadline if deadline is not None else time.monotonic() + BOUND_S
        while b"\r\n" not in self.buffer:
            self._more(end)
        size_line, rest = self.buffer.split(b"\r\n", 1)
        size = int(size_line.split(b";")[0], 16)
        self.buffer = rest
        while len(self.buffer) < size + 2:
            self._more(end)
        data, self.buffer = self.buffer[:size], self.buffer[size + 2:]
        return data if size else None

    def response(self, *, head_only: bool = False, deadline: float | None = None
                 ) -> tuple[int, dict[str, str], bytes]:
        """One HTTP/1.1 response (Content-Length or chunked body); header names lowercased."""
        end = deadline if deadline is not None else time.monotonic() + BOUND_S
        status, headers = self.head(deadline=end)
        if head_only or 100 <= status < 200 or status in (204, 304):
            return status, headers, b""
        body = bytearray()
        if "content-length" in headers:
            size = int(headers["content-length"])
            while len(self.buffer) < size:
                self._more(end)
            body[:], self.buffer = self.buffer[:size], self.buffer[size:]
        elif headers.get("transfer-encoding") == "chunked":
            while (data := self.chunk(deadline=end)) is not None:
                body += data
        return status, headers, bytes(body)


def wait_until(predicate: Callable[[], bool], seconds: float = BOUND_S) -> bool:
    """Poll ``predicate`` (cheap, side-effect free) until true or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def process_handlers() -> ToolHandlers:
    """The handlers a ``toolkeeper serve`` subprocess loads (``--handlers this_file:...``):
    ``t.hang`` reports progress once when asked, then waits (at most 30 s) for cancellation."""
    handlers = ToolHandlers()

    @handlers.tool("t.hang")
    async def hang(arguments: dict[str, Any], ctx: ToolContext) -> str:
        await ctx.progress(0, None, "waiting")
        await asyncio.sleep(30)
        return "woke"

    return handlers


def legacy_head(port: int, session_id: str | None = None, *, method: str = "POST",
                length: int | None = None, accept: str = ACCEPT, extra: str = "") -> bytes:
    """The head of a legacy-era request (with the session's headers when ``session_id``)."""
    lines = [f"{method} /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}", f"Accept: {accept}",
             "Content-Type: application/json"]
    if session_id is not None:
        lines += [f"Mcp-Session-Id: {session_id}", "MCP-Protocol-Version: 2025-11-25"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n" + extra + "\r\n").encode()


def legacy_session(port: int) -> str:
    """A live legacy session (initialize, then notifications/initialized): its id."""
    body = legacy_init_body()
    conn = Conn(port, legacy_head(port, length=len(body)) + body)
    try:
        status, headers, _ = conn.response()
        assert status == 200
        session_id = headers["mcp-session-id"]
    finally:
        conn.close()
    done = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    conn = Conn(port, legacy_head(port, session_id, length=len(done)) + done)
    try:
        assert conn.response()[0] == 202
    finally:
        conn.close()
    return session_id


def legacy_call_body(name: str, request_id: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": name, "arguments": {}}}).encode()


def listen_request(port: int, request_id: Any) -> bytes:
    """A whole modern ``subscriptions/listen`` request (head and body)."""
    body = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "subscriptions/listen",
                       "params": {"_meta": META,
                                  "notifications": {"toolsListChanged": True}}}).encode()
    head = "\r\n".join([
        "POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{port}", f"Accept: {ACCEPT}",
        "Content-Type: application/json", f"MCP-Protocol-Version: {VERSION}",
        "Mcp-Method: subscriptions/listen", f"Content-Length: {len(body)}"])
    return (head + "\r\n\r\n").encode() + body


def sse_messages(data: bytes) -> list[dict[str, Any]]:
    """The JSON-RPC messages of SSE frames (comments skipped), checking the frame format."""
    out = []
    for frame in data.split(b"\r\n\r\n"):
        if not frame or frame.startswith(b":"):
            continue
        lines = frame.split(b"\r\n")
        if lines[0].startswith(b"id: "):
            lines = lines[1:]  # a resumable legacy stream's event id
        if lines[-1] == b"data: ":
            continue  # its priming event
        event, payload = lines
        assert event == b"event: message"
        assert payload.startswith(b"data: ")
        out.append(json.loads(payload[len(b"data: "):]))
    return out


def write_estate(directory: Any) -> None:
    """The contracts of :func:`process_handlers`, as files for ``--estate``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "t.hang.json").write_text(json.dumps(_contract_mapping("t.hang")))
