"""The stream paths on a request id reused while its call is in flight, and on a send that
finds the connection closed (ASGI 2.4: an OSError from ``send``). Each test failed before its
fix (the progress-send case was reworded: a handler that returns at once after its progress
send failed completed, "ok"; one still waiting is cancelled). Everything runs in-process: the
stdio loop over an in-memory line source, the ASGI app over ``receive``/``send`` callables.
(Validation and version-bound cases of the same kind are in ``tests/contracts/test_validate.py``
and ``tests/registry/test_guard.py``.)
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

import pytest
from stream_kit import (
    BOUND_S,
    VERSION,
    LazyAwaitables,
    Lines,
    Message,
    asgi_scope,
    demo_gateway,
    outcomes,
    tool_call,
)

from toolkeeper.server import Gateway, ToolContext
from toolkeeper.transports import HttpConfig, create_asgi_app


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
    lazy = LazyAwaitables()

    async def scenario() -> tuple[Gateway, Lines]:
        gateway = demo_gateway({"t.hang": _hang, "t.lazy": lazy.handler()})
        lines, run = await _stdio_with_first_in_flight(gateway, tool_call("t.lazy", 1))
        await _finish(lines, run)
        return gateway, lines

    try:
        gateway, lines = asyncio.run(scenario())
        states = lazy.states()
    finally:
        lazy.close()
    assert [a.get("error", {}).get("code") for a in lines.answers(1)] == [-32600]
    assert None not in [outcome for _, outcome in outcomes(gateway)]  # every row completed
    assert states in ([], [inspect.CORO_CLOSED])


# --- finding 2: OSError from send (ASGI 2.4: the connection closed) outside the keepalive ---


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
        sent = await _exchange(app, asgi_scope("POST", list(_BASE)), json.dumps(init).encode())
        session = dict(sent[0]["headers"])[b"mcp-session-id"]
        legacy = [(b"mcp-session-id", session), (b"mcp-protocol-version", b"2025-11-25")]
        await _exchange(app, asgi_scope("POST", [*_BASE, *legacy]), json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())

        async def closed_after_start(message: Message) -> None:
            if message["type"] != "http.response.start":
                raise OSError("connection closed")

        get = [(b"host", b"127.0.0.1:8000"), (b"accept", b"text/event-stream"), *legacy]
        await _exchange(app, asgi_scope("GET", get), None, closed_after_start)
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
        await _exchange(app, asgi_scope("POST", headers), json.dumps(call).encode(), closed)
        return gateway

    with caplog.at_level(logging.ERROR):
        gateway = asyncio.run(scenario())
    gc.collect()
    assert outcomes(gateway) == [("t.chatty", "cancelled" if then == "waits" else "ok")]
    assert _transport_faults(caplog) == []
