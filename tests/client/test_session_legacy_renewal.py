"""A legacy HTTP session the server has forgotten (reaped when idle, deleted, evicted) is
answered 404; the 2025-11-25 transport says the client MUST then start a new session
(``initialize`` without a session id). The client does so once and sends the request again
(a 404 means the request was never dispatched, so even a write runs once); a server that
forgets the new session at once too is an error, not a loop. Driven in process."""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import pytest

from toolkeeper.client import ClientError, Target, connect
from toolkeeper.transports.asgi_io import read_body

ECHO = {"name": "echo", "inputSchema": {"type": "object"}}


class LegacyServer:
    """A 2025-11-25 HTTP server with a session table; ``forget()`` drops every session, and
    with ``forget_always`` each is dropped once ``notifications/initialized`` made it ready."""

    def __init__(self, *, forget_always: bool = False) -> None:
        self.sessions: set[str] = set()
        self.methods: list[tuple[str, str | None]] = []
        self.forget_always = forget_always
        self._ids = itertools.count(1)

    def forget(self) -> None:
        self.sessions.clear()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(receive, 1 << 20)
        headers = dict(scope["headers"])
        sid = headers.get(b"mcp-session-id", b"").decode() or None
        if scope["method"] == "DELETE":
            await _answer(send, 200, None)
            return
        message = json.loads(body)
        method, rid = message.get("method"), message.get("id")
        self.methods.append((method, sid))
        if method == "initialize":
            new = f"s-{next(self._ids)}"
            self.sessions.add(new)
            await _answer(send, 200, {"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "legacy", "version": "1"}}}, new)
            return
        if sid not in self.sessions:
            await _answer(send, 404, {"jsonrpc": "2.0", "id": None, "error": {
                "code": -32600, "message": "Session not found"}})
            return
        if rid is None:
            if self.forget_always:  # every session is gone as soon as it is ready
                self.forget()
            await _answer(send, 202, None)
        elif method == "tools/list":
            await _answer(send, 200, {"jsonrpc": "2.0", "id": rid, "result": {"tools": [ECHO]}})
        else:
            await _answer(send, 200, {"jsonrpc": "2.0", "id": rid, "result": {
                "content": [{"type": "text", "text": "ran"}], "isError": False}})


async def _answer(send: Any, status: int, body: Any, session: str | None = None) -> None:
    data = b"" if body is None else json.dumps(body).encode()
    headers = [(b"content-type", b"application/json")] if body is not None else []
    if session is not None:
        headers.append((b"mcp-session-id", session.encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def test_a_forgotten_session_is_renewed_once_and_the_request_sent_again() -> None:
    server = LegacyServer()

    async def run() -> tuple[list[str], Any, str | None]:
        async with await connect(Target.from_asgi(server), era="legacy") as session:
            server.forget()
            listed = await session.list_tools()
            server.forget()
            reply = await session.call_tool("echo", {})
            return [t["name"] for t in listed.tools], reply.result, session.session_id

    names, result, sid = asyncio.run(run())
    assert names == ["echo"] and result["content"][0]["text"] == "ran"
    assert sid == "s-3"
    calls = [m for m in server.methods if m[0] == "tools/call"]
    assert calls == [("tools/call", "s-2"), ("tools/call", "s-3")]
    assert [m for m, _ in server.methods].count("initialize") == 3
    assert ("notifications/initialized", "s-3") in server.methods


def test_a_session_forgotten_again_at_once_is_an_error_not_a_loop() -> None:
    server = LegacyServer(forget_always=True)

    async def run() -> None:
        async with await connect(Target.from_asgi(server), era="legacy") as session:
            await session.list_tools()

    with pytest.raises(ClientError) as caught:
        asyncio.run(run())
    assert caught.value.code == "client.session_lost"
    assert [m for m, _ in server.methods].count("initialize") == 2
