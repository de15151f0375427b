"""Helpers of the tests of a legacy handler's requests to its client (asks) over the
in-process HTTP app: a session declaring capabilities, a call whose handler asks, the requests
written on its stream, a response POSTed back, the call's answer."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from bounds_kit import exchange, legacy_scope
from stream_kit import BOUND_S, INITIALIZED, Client, demo_gateway, tool_call

from toolkeeper.errors import AskError
from toolkeeper.server import Gateway, ToolContext
from toolkeeper.transports import HttpConfig, StreamableHTTPApp, create_asgi_app

__all__ = ["ELICITING", "SCHEMA", "answer_of", "elicit", "elicit_twice", "make_app",
           "messages", "requests", "respond", "session", "start"]

SCHEMA = {"type": "object", "properties": {"name": {"type": "string"}}}
ELICITING = {"elicitation": {}}


async def elicit(arguments: dict[str, Any], ctx: ToolContext) -> str:
    """Asks once; what it got, or the AskError's code and data."""
    try:
        answer = await ctx.elicit("Your name?", SCHEMA)
    except AskError as exc:
        return json.dumps({"code": exc.code, "data": exc.data})
    return json.dumps(dict(answer))


async def elicit_twice(arguments: dict[str, Any], ctx: ToolContext) -> str:
    outcomes = await asyncio.gather(ctx.elicit("One?", SCHEMA), ctx.elicit("Two?", SCHEMA),
                                    return_exceptions=True)
    return json.dumps(sorted(o.code if isinstance(o, AskError) else "answered"
                             for o in outcomes))


def make_app(**config: Any) -> tuple[StreamableHTTPApp, Gateway]:
    gateway = demo_gateway({"t.elicit": elicit, "t.twice": elicit_twice})
    return create_asgi_app(gateway.kernel, HttpConfig(**config), changes=gateway.changes), gateway


async def session(app: StreamableHTTPApp, capabilities: dict[str, Any]) -> str:
    message = {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities,
        "clientInfo": {"name": "t", "version": "1"}}}
    answer = await exchange(app, legacy_scope("POST"), json.dumps(message).encode())
    session_id: str = dict(answer.sent[0]["headers"])[b"mcp-session-id"].decode()
    await exchange(app, legacy_scope("POST", session_id), json.dumps(INITIALIZED).encode())
    return session_id


def messages(client: Client) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an SSE response so far (the priming event skipped)."""
    return [json.loads(line[6:]) for line in client.body().decode().split("\r\n")
            if line.startswith("data: ") and line != "data: "]


async def requests(client: Client, count: int) -> list[dict[str, Any]]:
    """The first ``count`` requests the server wrote on ``client``'s stream."""
    async with asyncio.timeout(BOUND_S):
        while True:
            found = [m for m in messages(client) if "method" in m and "id" in m]
            if len(found) >= count:
                return found
            client.changed.clear()
            await client.changed.wait()


async def start(app: StreamableHTTPApp, session_id: str, tool: str = "t.elicit"
                 ) -> tuple[Client, asyncio.Task[None]]:
    client = Client(json.dumps(tool_call(tool, 1, era="legacy")).encode())
    task = asyncio.ensure_future(app(legacy_scope("POST", session_id), client.inbox.get,
                                     client.send))
    return client, task


async def respond(app: StreamableHTTPApp, session_id: str, message: dict[str, Any]) -> int:
    answer = await exchange(app, legacy_scope("POST", session_id), json.dumps(message).encode())
    status: int = answer.sent[0]["status"]
    return status


async def answer_of(client: Client, task: asyncio.Task[None]) -> Any:
    await asyncio.wait_for(task, BOUND_S)
    final = messages(client)[-1]
    assert final["id"] == 1
    return json.loads(final["result"]["content"][0]["text"])
