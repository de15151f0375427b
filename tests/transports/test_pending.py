"""How the HTTP transport runs a handler (transports/pending.py), driven in-process through the
real ASGI app and gateway: eagerly in the request's task, resumed there after a suspension
(task identity and timeouts survive), cancelled when the client leaves."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.registry import Registry
from toolkeeper.server import Gateway, ToolHandlers, build_gateway
from toolkeeper.transports import HttpConfig, create_asgi_app

VERSION = "2026-07-28"
TOOLS = ("t.eager", "t.same_task", "t.timeout", "t.blocked")


def _contract(name: str) -> Any:
    return spec_from_mapping({
        "name": name, "version": "1.0.0", "title": name, "description": f"{name} (tests)",
        "inputSchema": {"type": "object", "properties": {}}, "dataClassification": "public",
        "sideEffect": "read"})


def _handlers(blocked: asyncio.Event) -> ToolHandlers:
    handlers = ToolHandlers()

    @handlers.tool("t.eager")
    async def eager(arguments: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True}

    @handlers.tool("t.same_task")
    async def same_task(arguments: dict[str, Any]) -> dict[str, Any]:
        before = asyncio.current_task()
        await asyncio.sleep(0)
        return {"same": asyncio.current_task() is before}

    @handlers.tool("t.timeout")
    async def timeout(arguments: dict[str, Any]) -> str:
        try:
            async with asyncio.timeout(0.01):
                await asyncio.Event().wait()
        except TimeoutError:
            return "handler timed out"
        return "not reached"

    @handlers.tool("t.blocked")
    async def blocked_tool(arguments: dict[str, Any]) -> str:
        blocked.set()
        await asyncio.Event().wait()
        return "not reached"

    return handlers


def _gateway(blocked: asyncio.Event) -> Gateway:
    registry = Registry.open("memory:")
    for name in TOOLS:
        registry.publish(_contract(name))
    return build_gateway(registry, _handlers(blocked))


def _scope(tool: str) -> dict[str, Any]:
    headers = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
               (b"accept", b"application/json, text/event-stream"),
               (b"mcp-protocol-version", VERSION.encode()), (b"mcp-method", b"tools/call"),
               (b"mcp-name", tool.encode())]
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
            "scheme": "http", "path": "/mcp", "raw_path": b"/mcp", "query_string": b"",
            "root_path": "", "headers": headers, "client": ("127.0.0.1", 5000),
            "server": ("127.0.0.1", 8000)}


def _body(tool: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": tool, "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()


class Exchange:
    """One in-memory request: the body, then whatever ``later`` yields (default: the client
    stays until the response is complete); every receive call and sent message is kept."""

    def __init__(self, tool: str, later: Callable[[], Awaitable[dict[str, Any]]] | None = None
                 ) -> None:
        self.tool = tool
        self.receives = 0
        self.sent: list[MutableMapping[str, Any]] = []
        self.done = asyncio.Event()
        self._later = later

    async def receive(self) -> MutableMapping[str, Any]:
        self.receives += 1
        if self.receives == 1:
            return {"type": "http.request", "body": _body(self.tool), "more_body": False}
        if self._later is not None:
            return await self._later()
        await self.done.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: MutableMapping[str, Any]) -> None:
        self.sent.append(message)
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            self.done.set()

    def result(self) -> dict[str, Any]:
        start, body = self.sent[0], self.sent[-1]
        assert start["status"] == 200
        value: dict[str, Any] = json.loads(body["body"])["result"]
        return value


async def _serve(exchange: Exchange, blocked: asyncio.Event | None = None) -> Gateway:
    blocked = blocked if blocked is not None else asyncio.Event()
    gateway = _gateway(blocked)
    app = create_asgi_app(gateway.kernel, HttpConfig(json_response=True, keepalive_s=0.05))
    async with asyncio.timeout(10):  # the app runs in this task, as a server would run it
        await app(_scope(exchange.tool), exchange.receive, exchange.send)
    return gateway


def test_a_handler_that_never_suspends_is_answered_without_watching_the_connection() -> None:
    exchange = Exchange("t.eager")
    asyncio.run(_serve(exchange))
    assert exchange.result()["structuredContent"] == {"ok": True}
    assert exchange.receives == 1  # only the body was read: no disconnect watcher ran


def test_a_handler_that_suspends_resumes_in_the_request_task() -> None:
    exchange = Exchange("t.same_task")
    asyncio.run(_serve(exchange))
    assert exchange.result()["structuredContent"] == {"same": True}


def test_a_timeout_entered_before_a_suspension_fires_inside_the_handler() -> None:
    exchange = Exchange("t.timeout")
    asyncio.run(_serve(exchange))
    result = exchange.result()
    assert result["isError"] is False
    assert result["content"][0]["text"] == "handler timed out"


def test_a_client_that_leaves_while_the_handler_waits_cancels_it_and_gets_nothing() -> None:
    async def scenario() -> tuple[Exchange, Gateway, int]:
        blocked = asyncio.Event()

        async def leave_once_blocked() -> dict[str, Any]:
            await blocked.wait()
            return {"type": "http.disconnect"}

        exchange = Exchange("t.blocked", leave_once_blocked)
        gateway = await _serve(exchange, blocked)
        task = asyncio.current_task()
        assert task is not None
        return exchange, gateway, task.cancelling()

    exchange, gateway, cancelling = asyncio.run(scenario())
    assert exchange.sent == []
    assert gateway.call_log.records[-1].outcome == "cancelled"  # type: ignore[attr-defined]
    assert cancelling == 0  # the request task carries on, not left half-cancelled


def test_a_request_cancelled_by_the_server_stays_cancelled() -> None:
    async def scenario() -> bool:
        blocked = asyncio.Event()
        exchange = Exchange("t.blocked")
        serving = asyncio.ensure_future(_serve(exchange, blocked))
        await asyncio.wait_for(blocked.wait(), 10)
        serving.cancel()  # e.g. the server shutting down: not a client disconnect
        try:
            await asyncio.wait_for(serving, 10)
        except asyncio.CancelledError:
            return True
        return False

    assert asyncio.run(scenario()) is True


def test_a_json_only_answer_watches_its_client_in_one_task_while_the_handler_waits() -> None:
    async def scenario() -> tuple[int, list[MutableMapping[str, Any]]]:
        blocked = asyncio.Event()
        exchange = Exchange("t.blocked")
        serving = asyncio.ensure_future(_serve(exchange, blocked))
        await asyncio.wait_for(blocked.wait(), 10)
        tasks = len(asyncio.all_tasks()) - 1  # this scenario's own task left out
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(serving, 10)
        return tasks, exchange.sent

    tasks, sent = asyncio.run(scenario())
    assert tasks == 2  # the request's task and its one watcher (no timer, no other task)
    assert sent == []


def test_a_receive_that_fails_while_a_json_only_handler_waits_counts_as_the_client_leaving(
        ) -> None:
    async def scenario() -> tuple[Exchange, Gateway]:
        blocked = asyncio.Event()

        async def fail_once_blocked() -> dict[str, Any]:
            await blocked.wait()
            raise OSError("connection reset")

        exchange = Exchange("t.blocked", fail_once_blocked)
        return exchange, await _serve(exchange, blocked)

    exchange, gateway = asyncio.run(scenario())
    assert exchange.sent == []
    assert gateway.call_log.records[-1].outcome == "cancelled"  # type: ignore[attr-defined]
