"""Review of today's fuzz fixes (``git diff fa46714 -- src``): what is still reachable.

Each test is a finding written as the behaviour the code documents; each failed before its fix
(the progress-send case was reworded: a handler that returns at once after its progress send
failed completed, "ok"; one still waiting is cancelled). Everything runs in-process:
the stdio loop over an in-memory line source, the ASGI app over ``receive``/``send`` callables.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import json
import logging
import math
from collections.abc import Awaitable, Callable, Coroutine, MutableMapping
from typing import Any, Final

import pytest

from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.contracts.validate import compile_schema
from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.errors import PublishRefusedError, ToolkeeperError
from toolkeeper.registry import Registry
from toolkeeper.server import Gateway, ToolContext, build_gateway
from toolkeeper.transports import HttpConfig, StdioServer, create_asgi_app

VERSION: Final = "2026-07-28"
META: Final[dict[str, Any]] = {"io.modelcontextprotocol/protocolVersion": VERSION,
                               "io.modelcontextprotocol/clientCapabilities": {}}
BOUND_S: Final = 2.0

Message = MutableMapping[str, Any]


# --- kit (as tests/transports/test_stream_fuzz_findings.py) ---------------------------------


def _contract(name: str) -> Any:
    return spec_from_mapping({
        "name": name, "version": "1.0.0", "title": name, "description": f"{name} (review)",
        "inputSchema": {"type": "object", "properties": {}}, "dataClassification": "public",
        "sideEffect": "read"})


def demo_gateway(extra: dict[str, Callable[..., Any]] | None = None) -> Gateway:
    registry = Registry.open("memory:")
    install_demo(registry)
    handlers = demo_handlers()
    for name, function in (extra or {}).items():
        registry.publish(_contract(name))
        handlers.bind(name, function)
    return build_gateway(registry, handlers)


def tool_call(name: str, request_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": name, "arguments": {}, "_meta": dict(META)}}


def outcomes(gateway: Gateway) -> list[tuple[str, str | None]]:
    return [(r.tool, r.outcome) for r in gateway.call_log.records]  # type: ignore[attr-defined]


class Lines:
    """An in-memory stdio peer: lines queued for the server, lines it wrote back."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.out: list[dict[str, Any]] = []
        self.wrote = asyncio.Event()

    async def write(self, data: bytes) -> None:
        self.out.append(json.loads(data))
        self.wrote.set()

    def put(self, *messages: dict[str, Any] | None) -> None:
        for message in messages:
            self.queue.put_nowait(None if message is None
                                  else json.dumps(message).encode() + b"\n")

    def server(self, gateway: Gateway) -> StdioServer:
        return StdioServer(gateway.kernel, self.queue.get, self.write)

    def answers(self, request_id: Any) -> list[dict[str, Any]]:
        return [m for m in self.out if "method" not in m and m.get("id") == request_id]


async def _hang(arguments: dict[str, Any]) -> str:
    await asyncio.Event().wait()
    return "never"


async def _stdio_with_first_in_flight(gateway: Gateway, second: dict[str, Any]
                                      ) -> tuple[Lines, asyncio.Future[None]]:
    """Request 1 to ``t.hang`` (running), then ``second`` (reusing id 1) read and answered."""
    lines = Lines()
    run = asyncio.ensure_future(lines.server(gateway).run())
    lines.put(tool_call("t.hang", 1), second)
    await asyncio.wait_for(lines.wrote.wait(), BOUND_S)
    return lines, run


async def _finish(lines: Lines, run: asyncio.Future[None]) -> None:
    lines.put({"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": 1}}, None)
    await asyncio.wait_for(run, BOUND_S)


# --- finding 1: the reused-id refusal comes after the kernel has already run the call -------

def test_stdio_refuses_a_reused_in_flight_id_before_an_inline_handler_runs() -> None:
    ran: list[str] = []

    def plain(arguments: dict[str, Any]) -> str:
        ran.append("plain")
        return "plain ran"

    async def scenario() -> tuple[Gateway, Lines]:
        gateway = demo_gateway({"t.hang": _hang, "t.plain": plain})
        lines, run = await _stdio_with_first_in_flight(gateway, tool_call("t.plain", 1))
        await _finish(lines, run)
        return gateway, lines

    gateway, lines = asyncio.run(scenario())
    assert [a.get("error", {}).get("code") for a in lines.answers(1)] == [-32600]
    assert ran == []
    assert outcomes(gateway) == [("t.hang", "cancelled")]  # only the dispatched call


def test_stdio_a_reused_id_leaves_no_open_call_log_row_and_no_unawaited_awaitable() -> None:
    made: list[Coroutine[Any, Any, str]] = []

    async def later() -> str:
        return "late"

    def lazy(arguments: dict[str, Any]) -> Awaitable[str]:  # a plain function, an awaitable
        made.append(later())
        return made[-1]

    async def scenario() -> tuple[Gateway, Lines]:
        gateway = demo_gateway({"t.hang": _hang, "t.lazy": lazy})
        lines, run = await _stdio_with_first_in_flight(gateway, tool_call("t.lazy", 1))
        await _finish(lines, run)
        return gateway, lines

    try:
        gateway, lines = asyncio.run(scenario())
        states = [inspect.getcoroutinestate(c) for c in made]
    finally:
        for coroutine in made:  # keep the unawaited coroutine from warning in a later test
            coroutine.close()
    assert [a.get("error", {}).get("code") for a in lines.answers(1)] == [-32600]
    assert None not in [outcome for _, outcome in outcomes(gateway)]  # every row completed
    assert states in ([], [inspect.CORO_CLOSED])


# --- finding 2: OSError from send (ASGI 2.4: the connection closed) outside the keepalive ---


def _scope(method: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": method, "scheme": "http", "path": "/mcp", "raw_path": b"/mcp",
            "query_string": b"", "root_path": "", "headers": headers,
            "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000)}


_BASE: Final = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
                (b"accept", b"application/json, text/event-stream")]


async def _exchange(app: Any, scope: dict[str, Any], body: bytes | None,
                    send: Callable[[Message], Awaitable[None]] | None = None
                    ) -> list[Message]:
    sent: list[Message] = []
    inbox: asyncio.Queue[Message] = asyncio.Queue()
    if body is not None:
        inbox.put_nowait({"type": "http.request", "body": body, "more_body": False})

    async def record(message: Message) -> None:
        sent.append(message)

    await asyncio.wait_for(app(scope, inbox.get, send or record), BOUND_S)
    return sent


def _transport_faults(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_legacy_get_stream_whose_keepalive_finds_the_connection_closed_ends_quietly(
        caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        gateway = demo_gateway()
        app = create_asgi_app(gateway.kernel, HttpConfig(keepalive_s=0.01),
                              changes=gateway.changes)
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "review", "version": "1"}}}
        sent = await _exchange(app, _scope("POST", list(_BASE)), json.dumps(init).encode())
        session = dict(sent[0]["headers"])[b"mcp-session-id"]
        legacy = [(b"mcp-session-id", session), (b"mcp-protocol-version", b"2025-11-25")]
        await _exchange(app, _scope("POST", [*_BASE, *legacy]), json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())

        async def closed_after_start(message: Message) -> None:
            if message["type"] != "http.response.start":
                raise OSError("connection closed")

        get = [(b"host", b"127.0.0.1:8000"), (b"accept", b"text/event-stream"), *legacy]
        await _exchange(app, _scope("GET", get), None, closed_after_start)
        gateway.changes.close()

    with caplog.at_level(logging.ERROR):
        asyncio.run(scenario())
    assert _transport_faults(caplog) == []


@pytest.mark.parametrize("then", ["waits", "returns"])
def test_a_progress_send_that_finds_the_connection_closed_is_a_disconnect_not_a_tool_failure(
        then: str, caplog: pytest.LogCaptureFixture) -> None:
    # A handler still waiting when its progress send failed is cancelled (the client left); one
    # that returns at once completed ("ok"). Neither is a tool failure or a transport fault.
    async def chatty(arguments: dict[str, Any], ctx: ToolContext) -> str:
        await ctx.progress(1, 2)
        if then == "waits":
            await asyncio.Event().wait()
        return "done"

    async def scenario() -> Gateway:
        gateway = demo_gateway({"t.chatty": chatty})
        app = create_asgi_app(gateway.kernel, HttpConfig(keepalive_s=30),
                              changes=gateway.changes)

        async def closed(message: Message) -> None:
            raise OSError("connection closed")

        call = tool_call("t.chatty", 1)
        call["params"]["_meta"]["progressToken"] = "p"
        headers = [*_BASE, (b"mcp-protocol-version", VERSION.encode()),
                   (b"mcp-method", b"tools/call"), (b"mcp-name", b"t.chatty")]
        await _exchange(app, _scope("POST", headers), json.dumps(call).encode(), closed)
        return gateway

    with caplog.at_level(logging.ERROR):
        gateway = asyncio.run(scenario())
    gc.collect()
    assert outcomes(gateway) == [("t.chatty", "cancelled" if then == "waits" else "ok")]
    assert _transport_faults(caplog) == []


# --- finding 3: the non-finite guard is inverted under `not` ---------------------------------

@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
def test_a_non_finite_float_never_satisfies_a_negated_numeric_bound(value: float) -> None:
    compiled = compile_schema({"type": "object", "properties": {"n": {"not": {"minimum": 0}}}})
    assert not compiled.is_valid({"n": value})
    assert compiled.errors({"n": value}) != []


# --- finding 4: errors() raises where is_valid answers ---------------------------------------

def test_errors_of_arguments_holding_a_lone_surrogate_are_issues_not_an_exception() -> None:
    compiled = compile_schema({"type": "object", "properties": {"a": {"type": "integer"}}})
    arguments = json.loads('{"a": "\\ud800"}')
    assert compiled.is_valid(arguments) is False
    try:
        issues = compiled.errors(arguments)
    except ToolkeeperError:
        return  # a stable code is fine too
    assert [issue.path for issue in issues] == ["$.a"]


# --- finding 5: the 4,300-digit bound leaves no room for a bump ------------------------------

def _big_contract(version: str, required: bool) -> Any:
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "string"}}}
    if required:
        schema["required"] = ["a"]
    return spec_from_mapping({
        "name": "t.big", "version": version, "title": "t", "description": "big (review)",
        "inputSchema": schema, "dataClassification": "public", "sideEffect": "read"})


def test_a_refused_publish_after_a_version_at_the_digit_bound_is_a_publish_refusal() -> None:
    nines = "9" * 4300
    registry = Registry.open("memory:")
    registry.publish(_big_contract(f"{nines}.0.0", required=False))
    with pytest.raises(PublishRefusedError) as caught:
        registry.publish(_big_contract(f"{nines}.1.0", required=True))  # MAJOR, needs a bump
    assert caught.value.code.startswith("publish.")
