"""The in-process kit of the stream-path tests: the demo gateway with extra tools, request
builders for both eras, an in-memory stdio peer (:class:`Lines`), an in-process HTTP exchange
(:class:`Client`) and bounded waits."""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping
from typing import Any, Final

from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.registry import Registry
from toolkeeper.server import Gateway, build_gateway
from toolkeeper.transports import StdioServer

VERSION: Final = "2026-07-28"
META: Final[dict[str, Any]] = {"io.modelcontextprotocol/protocolVersion": VERSION,
                               "io.modelcontextprotocol/clientCapabilities": {}}
INIT: Final[dict[str, Any]] = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {},
    "clientInfo": {"name": "fuzz", "version": "1"}}}
INITIALIZED: Final[dict[str, Any]] = {"jsonrpc": "2.0", "method": "notifications/initialized"}
BOUND_S: Final = 2.0
"""The bound on every wait for something that should happen at once."""

Message = MutableMapping[str, Any]


def contract(name: str) -> Any:
    return spec_from_mapping({
        "name": name, "version": "1.0.0", "title": name, "description": f"{name} (fuzz)",
        "inputSchema": {"type": "object", "properties": {}}, "dataClassification": "public",
        "sideEffect": "read"})


def demo_gateway(extra: dict[str, Callable[..., Any]] | None = None, *, inline: bool = False,
                 **options: Any) -> Gateway:
    """The demo estate plus one public, argument-less tool per ``extra`` handler, bound
    ``inline`` when asked (``options``: for :func:`~toolkeeper.server.build_gateway`)."""
    registry = Registry.open("memory:")
    install_demo(registry)
    handlers = demo_handlers()
    for name, function in (extra or {}).items():
        registry.publish(contract(name))
        handlers.bind(name, function, inline=inline)
    return build_gateway(registry, handlers, **options)


def tool_call(name: str, request_id: int, era: str = "modern", **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": {}}
    if era == "modern":
        params["_meta"] = {**META, **meta}
    elif meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def tools_list(request_id: int, era: str = "modern") -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}
    if era == "modern":
        message["params"] = {"_meta": dict(META)}
    return message


def listen(request_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "subscriptions/listen",
            "params": {"_meta": dict(META), "notifications": {"toolsListChanged": True}}}


def cancel(request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": request_id}}


class Lines:
    """An in-memory stdio peer: lines queued for the server, lines it wrote back."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.out: list[dict[str, Any]] = []
        self.wrote = asyncio.Event()

    async def write(self, data: bytes) -> None:
        self.out.append(json.loads(data))
        self.wrote.set()

    def put(self, *messages: dict[str, Any] | bytes | None) -> None:
        for message in messages:
            self.queue.put_nowait(message if message is None or isinstance(message, bytes)
                                  else json.dumps(message).encode() + b"\n")

    def server(self, gateway: Gateway) -> StdioServer:
        """The stdio server as ``toolkeeper serve --stdio`` builds it (with the change hub)."""
        return StdioServer(gateway.kernel, self.queue.get, self.write, changes=gateway.changes)

    def answers(self, request_id: Any) -> list[dict[str, Any]]:
        return [m for m in self.out if "method" not in m and m.get("id") == request_id]


def outcomes(gateway: Gateway) -> list[tuple[str, str | None]]:
    return [(r.tool, r.outcome) for r in gateway.call_log.records]  # type: ignore[attr-defined]


def others() -> set[asyncio.Task[Any]]:
    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}


def asgi_scope(method: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": method, "scheme": "http", "path": "/mcp", "raw_path": b"/mcp",
            "query_string": b"", "root_path": "", "headers": headers,
            "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000)}


def modern_post(method: str, name: str | None = None) -> dict[str, Any]:
    headers = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
               (b"accept", b"application/json, text/event-stream"),
               (b"mcp-protocol-version", VERSION.encode()), (b"mcp-method", method.encode())]
    if name is not None:
        headers.append((b"mcp-name", name.encode()))
    return asgi_scope("POST", headers)


class Client:
    """One in-process HTTP exchange: ``inbox`` feeds ``receive``; ``sent`` keeps each message
    the app sent (``send`` may be replaced to model a server's behaviour)."""

    def __init__(self, body: bytes | None) -> None:
        self.inbox: asyncio.Queue[Message] = asyncio.Queue()
        if body is not None:  # else the test queues the request messages itself
            self.inbox.put_nowait({"type": "http.request", "body": body, "more_body": False})
        self.sent: list[Message] = []
        self.changed = asyncio.Event()

    async def send(self, message: Message) -> None:
        self.sent.append(message)
        self.changed.set()

    async def wait_for_sent(self, count: int) -> None:
        async with asyncio.timeout(BOUND_S):
            while len(self.sent) < count:
                self.changed.clear()
                await self.changed.wait()

    def leave(self) -> None:
        self.inbox.put_nowait({"type": "http.disconnect"})

    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.sent[1:])


async def bounded(task: asyncio.Future[Any], seconds: float = BOUND_S) -> bool:
    """Whether ``task`` finished within ``seconds`` (it keeps running if not)."""
    done, _ = await asyncio.wait({task}, timeout=seconds)
    return task in done


async def _later() -> str:
    await asyncio.sleep(0)  # suspends once: a cancellation can land here
    return "late"


class LazyAwaitables:
    """A plain handler (run inline) that hands back a fresh coroutine instead of a result, and
    every coroutine it made, so a test can see whether each was awaited and close the rest."""

    def __init__(self) -> None:
        self.made: list[Coroutine[Any, Any, str]] = []

    def handler(self) -> Callable[[dict[str, Any]], Awaitable[str]]:
        def lazy(arguments: dict[str, Any]) -> Awaitable[str]:  # a plain function, an awaitable
            self.made.append(_later())
            return self.made[-1]
        return lazy

    def states(self) -> list[str]:
        return [inspect.getcoroutinestate(c) for c in self.made]

    def close(self) -> None:
        """Close what was never awaited (it would warn in a later test)."""
        for coroutine in self.made:
            coroutine.close()


Pairs = list[tuple[bytes, bytes]]
Sent = list[MutableMapping[str, Any]]


async def _sent_by(app: Any, pairs: Pairs, body: bytes, method: str, bound_s: float) -> Sent:
    inbound: list[MutableMapping[str, Any]] = [
        {"type": "http.request", "body": body, "more_body": False}]
    done = asyncio.Event()
    sent: Sent = []

    async def receive() -> MutableMapping[str, Any]:
        if inbound:
            return inbound.pop(0)
        await done.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            done.set()

    async with asyncio.timeout(bound_s):
        await app(asgi_scope(method, pairs), receive, send)
    return sent


def sent_by(app: Any, pairs: Pairs, body: bytes, method: str = "POST", *,
            bound_s: float = 5.0) -> Sent:
    """Every ASGI message the app sent for one request (the client stays until the response
    ends, then leaves), within ``bound_s`` seconds."""
    return asyncio.run(_sent_by(app, pairs, body, method, bound_s))


def status(sent: Sent) -> int:
    value: int = sent[0]["status"]
    return value


def body_of(sent: Sent) -> bytes:
    return b"".join(m.get("body", b"") for m in sent[1:])
