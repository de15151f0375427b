"""Test kit for real-HTTP tests: MCP headers and bodies, and an SSE reader."""

from __future__ import annotations

import json
from typing import Any

import httpx

VERSION = "2026-07-28"
ACCEPT = "application/json, text/event-stream"


def envelope(**extra: Any) -> dict[str, Any]:
    return {"io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {}, **extra}


def modern_body(method: str, request_id: Any = 1, *, meta: dict[str, Any] | None = None,
                **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method,
            "params": {**params, "_meta": envelope() if meta is None else meta}}


def modern_headers(method: str, name: str | None = None, **extra: str) -> dict[str, str]:
    out = {"Accept": ACCEPT, "Content-Type": "application/json",
           "MCP-Protocol-Version": VERSION, "Mcp-Method": method}
    if name is not None:
        out["Mcp-Name"] = name
    out.update(extra)
    return out


def legacy_headers(session_id: str | None = None, **extra: str) -> dict[str, str]:
    out = {"Accept": ACCEPT, "Content-Type": "application/json"}
    if session_id is not None:
        out["Mcp-Session-Id"] = session_id
        out["MCP-Protocol-Version"] = "2025-11-25"
    out.update(extra)
    return out


def post(client: httpx.Client, url: str, body: Any,
         headers: dict[str, str] | list[tuple[str, str]]) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return client.post(url, content=content, headers=headers)


def sse_events(text: str) -> list[dict[str, Any]]:
    """The JSON-RPC messages of an SSE body, checking the exact frame format (an ``id:`` line
    may lead a frame of a resumable legacy stream; its priming event carries no message)."""
    frames = [f for f in text.split("\r\n\r\n") if f]
    out = []
    for frame in frames:
        if frame.startswith(":"):
            continue
        lines = frame.split("\r\n")
        if lines[0].startswith("id: "):
            lines = lines[1:]
        if lines[-1] == "data: ":
            continue  # the priming event
        event, data = lines
        assert event == "event: message"
        assert data.startswith("data: ")
        out.append(json.loads(data[len("data: "):]))
    return out


def error_code(response: httpx.Response) -> int:
    assert response.headers["content-type"] == "application/json"
    code = response.json()["error"]["code"]
    assert isinstance(code, int)
    return code
