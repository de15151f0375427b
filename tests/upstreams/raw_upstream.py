"""A legacy-era (2025-11-25) Streamable HTTP MCP server written by hand as a bare ASGI app, for
what the SDK servers cannot send: results with fields no schema knows (``futureHint``), reserved
``_meta`` keys, and garbage. It records what each request carried (method, Authorization,
Mcp-Session-Id, X-Api-Key, every header) in :attr:`RawUpstream.seen`. Tools:

* ``future``: a result with ``futureHint``, ``structuredContent`` and ``_meta`` holding a
  reserved ``io.modelcontextprotocol/`` key and an ordinary one;
* ``whoami``: the request's ``Mcp-Session-Id`` as text;
* ``garbage``: an HTTP 200 ``application/json`` body that is not JSON;
* ``failing``: an ``isError`` result with ``structuredContent``;
* ``hang``: never answers; sets :attr:`RawUpstream.hanging` when the call arrives and returns
  when the client goes away. A ``notifications/cancelled`` is kept in
  :attr:`RawUpstream.cancelled` and sets :attr:`RawUpstream.cancel_heard`.
"""

from __future__ import annotations

import itertools
import json
import threading
from typing import Any

SESSION_PREFIX = "raw-session-"

TOOLS: list[dict[str, Any]] = [
    {"name": name, "description": f"the raw fixture's {name}",
     "inputSchema": {"type": "object", "properties": {}}}
    for name in ("future", "whoami", "garbage", "failing", "hang")]


class RawUpstream:
    """The ASGI app; thread-safe records of every request."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._sessions = itertools.count(1)
        self.hanging = threading.Event()
        self.cancelled: list[Any] = []
        self.cancel_heard = threading.Event()

    def calls(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(s) for s in self.seen if s["method"] == "tools/call"]

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        if scope["method"] != "POST":
            await _respond(send, 405 if scope["method"] == "GET" else 200, b"", {})
            return
        request = json.loads(body)
        with self._lock:
            self.seen.append({"method": request.get("method"),
                              "authorization": headers.get("authorization"),
                              "apiKey": headers.get("x-api-key"),
                              "session": headers.get("mcp-session-id"),
                              "tool": (request.get("params") or {}).get("name"),
                              "meta": (request.get("params") or {}).get("_meta"),
                              "headers": headers})
        if "id" not in request:
            if request.get("method") == "notifications/cancelled":
                with self._lock:
                    self.cancelled.append(request.get("params"))
                self.cancel_heard.set()
            await _respond(send, 202, b"", {})
            return
        extra: dict[str, str] = {}
        method = request["method"]
        if method == "initialize":
            extra["mcp-session-id"] = f"{SESSION_PREFIX}{next(self._sessions)}"
            result: Any = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                           "serverInfo": {"name": "raw-fixture", "version": "0.0.1"}}
        elif method == "tools/list":
            result = {"tools": TOOLS}
        elif method == "tools/call":
            name = request["params"]["name"]
            if name == "hang":
                self.hanging.set()
                while (await receive())["type"] != "http.disconnect":
                    pass
                return
            if name == "garbage":
                await _respond(send, 200, b"{this is not json",
                               {"content-type": "application/json"})
                return
            result = _call(name, headers.get("mcp-session-id"))
        else:
            result = {}
        answer = {"jsonrpc": "2.0", "id": request["id"], "result": result}
        await _respond(send, 200, json.dumps(answer).encode(),
                       {"content-type": "application/json", **extra})


def _call(name: str, session: str | None) -> dict[str, Any]:
    if name == "future":
        return {"content": [{"type": "text", "text": "from the future"}],
                "structuredContent": {"answer": 42}, "isError": False,
                "futureHint": {"kind": "additive", "level": 3},
                "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t-1"},
                          "example.com/trace": "abc"}}
    if name == "whoami":
        return {"content": [{"type": "text", "text": str(session)}], "isError": False}
    if name == "failing":
        return {"content": [{"type": "text", "text": "the upstream's own failure"}],
                "structuredContent": {"why": "upstream"}, "isError": True}
    return {"content": [{"type": "text", "text": f"unknown tool {name}"}], "isError": True}


async def _respond(send: Any, status: int, body: bytes, headers: dict[str, str]) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(k.encode(), v.encode()) for k, v in headers.items()]})
    await send({"type": "http.response.body", "body": body})
