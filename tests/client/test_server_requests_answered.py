"""A request the server sends on a call's response stream or on the standalone GET stream
is answered as on stdio: ``ping`` with ``{}``, anything else (the client declares no
capability) -32601. Legacy HTTP: a POST of the response on the same session, so a server that
waits for it goes on; modern HTTP: no answer (the era has no server-to-client requests, and no
session to route one to)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
from wire_server_kit import start

from toolkeeper.client import ClientTimeouts, Target, connect
from toolkeeper.client.asgi_transport import StreamingASGITransport
from toolkeeper.client.http_transport import HttpTransport
from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.protocol.client_requests import server_request_answer
from toolkeeper.registry import Registry
from toolkeeper.server import ToolContext, ToolHandlers, build_app
from toolkeeper.transports.asgi_io import read_body

FAST = ClientTimeouts(probe_s=2.0, request_s=20.0, close_s=2.0)
PING = {"jsonrpc": "2.0", "id": 7, "method": "ping"}


def test_ping_gets_an_empty_result_and_any_other_request_minus_32601() -> None:
    assert server_request_answer(PING) == {"jsonrpc": "2.0", "id": 7, "result": {}}
    refused = server_request_answer({"jsonrpc": "2.0", "id": "r", "method": "roots/list"})
    assert refused["id"] == "r"
    assert refused["error"]["code"] == -32601
    assert refused["error"]["data"] == "roots/list"
    assert server_request_answer({"id": 1, "method": ["x"]})["error"]["code"] == -32601


def test_a_legacy_server_asking_mid_call_gets_its_answers_and_the_call_completes(
        tmp_path: Path) -> None:
    async def run() -> dict[str, Any]:
        async with await connect(Target.from_url(url), era="legacy", timeouts=FAST) as session:
            reply = await session.call_tool("echo", {"text": "hi"})
        assert reply.result is not None
        answers: dict[str, Any] = json.loads(reply.result["content"][0]["text"])
        return answers

    with start("legacy-asks", tmp_path) as (url, _):
        answers = asyncio.run(run())
    assert answers["ping-1"] == {}
    assert answers["ask-2"]["code"] == -32601
    assert answers["ask-2"]["data"] == "elicitation/create"


class _Asking:
    """An ASGI app answering every POST with SSE: ``PING``, then the response; records the
    POSTs it gets."""

    def __init__(self) -> None:
        self.posts: list[Any] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(receive, 1 << 20)
        message = json.loads(body)
        self.posts.append(message)
        if "method" not in message:
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        for sent in (PING, {"jsonrpc": "2.0", "id": message["id"], "result": {}}):
            await send({"type": "http.response.body", "more_body": True,
                        "body": f"event: message\ndata: {json.dumps(sent)}\n\n".encode()})
        await send({"type": "http.response.body", "body": b""})


async def _exchange(headers: dict[str, str]) -> list[Any]:
    app = _Asking()
    transport = HttpTransport("http://127.0.0.1/mcp", httpx.AsyncClient(
        transport=StreamingASGITransport(app)))
    try:
        exchange = await transport.exchange(
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers, timeout=10.0,
            max_bytes=1 << 20)
    finally:
        await transport.aclose()
    assert exchange.messages[-1]["id"] == 1
    return app.posts


def test_a_legacy_request_on_a_response_stream_is_answered_on_the_same_session() -> None:
    headers = {"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": "s-1"}
    posts = asyncio.run(_exchange(headers))
    assert posts[1:] == [{"jsonrpc": "2.0", "id": 7, "result": {}}]


def test_a_modern_request_on_a_response_stream_is_not_answered() -> None:
    posts = asyncio.run(_exchange({"MCP-Protocol-Version": "2026-07-28",
                                   "Mcp-Method": "tools/list"}))
    assert [p.get("method") for p in posts] == ["tools/list"]


class _AskingOnGet:
    """An ASGI app whose standalone GET stream sends ``PING`` then a list_changed
    notification; it records the POSTs it gets (the client's answers)."""

    def __init__(self) -> None:
        self.posts: list[Any] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(receive, 1 << 20)
        if scope["method"] == "POST":
            self.posts.append(json.loads(body))
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        changed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        for sent in (PING, changed):
            await send({"type": "http.response.body", "more_body": True,
                        "body": f"event: message\ndata: {json.dumps(sent)}\n\n".encode()})
        await send({"type": "http.response.body", "body": b""})


def test_a_legacy_request_on_the_standalone_get_stream_is_answered_on_the_same_session(
        ) -> None:
    async def run() -> tuple[list[Any], list[Any]]:
        app = _AskingOnGet()
        transport = HttpTransport("http://127.0.0.1/mcp", httpx.AsyncClient(
            transport=StreamingASGITransport(app)))
        headers = {"MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": "s-1"}
        try:
            async with asyncio.timeout(10.0):
                events = [event async for event in transport.stream(None, headers,
                                                                     max_bytes=1 << 20)]
        finally:
            await transport.aclose()
        return events, app.posts

    events, posts = asyncio.run(run())
    assert posts == [{"jsonrpc": "2.0", "id": 7, "result": {}}]
    assert {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"} in events


async def _ask_name(arguments: dict[str, Any], ctx: ToolContext) -> str:
    answer = await ctx.elicit("Your name?", {"type": "object",
                                             "properties": {"name": {"type": "string"}}})
    return str(answer)


def test_the_gateway_refuses_a_legacy_elicit_up_front_to_a_client_without_the_capability(
        ) -> None:
    registry = Registry.open("memory:")
    registry.publish(spec_from_mapping({
        "name": "ask.name", "version": "1.0.0", "title": "ask", "description": "asks (tests)",
        "inputSchema": {"type": "object", "properties": {}}, "dataClassification": "public",
        "sideEffect": "read"}))
    handlers = ToolHandlers()
    handlers.bind("ask.name", _ask_name)
    app, _ = build_app(registry, handlers)

    async def run() -> Any:
        async with await connect(Target.from_asgi(app), era="legacy",
                                 timeouts=FAST) as session:
            async with asyncio.timeout(FAST.request_s / 2):  # refused, not waited out
                return await session.call_tool("ask.name", {})

    reply = asyncio.run(run())
    assert reply.result is None
    assert reply.error["code"] == -32602
    assert reply.error["data"]["requiredCapabilities"] == {"elicitation": {}}
