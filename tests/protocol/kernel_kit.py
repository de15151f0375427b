"""Test kit: a protocol kernel over a tiny method table (no registry, no server layer) and
helpers that build modern and legacy messages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolkeeper.protocol import (
    CLIENT_CAPABILITIES_KEY,
    PROTOCOL_VERSION_KEY,
    Accepted,
    CacheHint,
    Call,
    Deferred,
    Emit,
    HeaderView,
    Method,
    MethodTable,
    Outcome,
    Pending,
    Reply,
    ServerIdentity,
    ServerKernel,
    TransportFacts,
    decode_message,
    notification_message,
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"region": {"type": "string", "x-mcp-header": "Region"},
                   "count": {"type": "integer", "x-mcp-header": "Count"}},
}


def _list(call: Call) -> dict[str, Any]:
    return {"tools": [{"name": "echo", "inputSchema": SCHEMA}]}


def _call(call: Call) -> Any:
    if call.params.get("name") == "boom":
        raise RuntimeError("secret detail /etc/passwd")
    if call.params.get("name") == "slow":
        async def run(emit: Emit) -> dict[str, Any]:
            if call.progress_token is not None:
                await emit(notification_message("notifications/progress", {
                    "progressToken": call.progress_token, "progress": 1}))
            return {"content": [], "echo": call.params.get("arguments")}
        return Deferred(run)
    return {"content": [{"type": "text", "text": "ok"}],
            "seen": {"era": call.era.value, "version": call.protocol_version,
                     "logLevel": call.log_level, "caps": dict(call.client_capabilities)}}


def build_kernel() -> ServerKernel:
    table = MethodTable([
        Method("tools/list", _list, cache=CacheHint(5, "private")),
        Method("tools/call", _call, header_schema=lambda call: SCHEMA),
    ])
    return ServerKernel(table, identity=ServerIdentity("test-server", "9.9.9"),
                        capabilities={"tools": {"listChanged": False}})


def envelope(version: str = "2026-07-28", **extra: Any) -> dict[str, Any]:
    return {PROTOCOL_VERSION_KEY: version, CLIENT_CAPABILITIES_KEY: {}, **extra}


def modern(method: str, request_id: Any = 1, *, meta: dict[str, Any] | None = None,
           **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method,
            "params": {**params, "_meta": envelope() if meta is None else meta}}


def modern_headers(method: str, name: str | None = None, version: str = "2026-07-28",
                   **extra: str) -> dict[str, str]:
    out = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    if name is not None:
        out["Mcp-Name"] = name
    out.update({k.replace("_", "-"): v for k, v in extra.items()})
    return out


def facts(headers: dict[str, str] | list[tuple[str, str]] | None = None) -> TransportFacts:
    pairs = list(headers.items()) if isinstance(headers, dict) else list(headers or [])
    return TransportFacts("http", HeaderView.from_pairs(pairs))


def initialize(request_id: Any = 1, version: str = "2025-11-25", **params: Any
               ) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}, **params}}


async def _no_emit(message: dict[str, Any]) -> None:
    raise AssertionError("nothing should be emitted")


def settle(outcome: Outcome, emit: Emit = _no_emit) -> Reply | Accepted:
    """Run a Pending to completion (in a fresh loop) so tests see a Reply."""
    if isinstance(outcome, Pending):
        import asyncio

        return asyncio.run(outcome.complete(emit))
    return outcome


def body(outcome: Outcome) -> dict[str, Any]:
    reply = settle(outcome)
    assert isinstance(reply, Reply), reply
    value = decode_message(reply.body)
    assert isinstance(value, dict)
    return value


Settle = Callable[[Outcome], Reply | Accepted]
