"""The kit of the resource-bound tests: a demo gateway whose call log is small (so its own,
documented bound of 100,000 records does not hide another structure's growth), one-shot
in-process ASGI exchanges, legacy-session helpers and a tracemalloc measure of what a batch
of requests leaves behind."""

from __future__ import annotations

import asyncio
import gc
import json
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any, Final

from stream_kit import BOUND_S, INIT, INITIALIZED, Client, asgi_scope, demo_gateway

from toolkeeper.server import Gateway, InMemoryCallLog
from toolkeeper.transports import HttpConfig, StreamableHTTPApp, create_asgi_app

__all__ = [
    "LEGACY_ACCEPT",
    "Scope",
    "app_for",
    "exchange",
    "growth",
    "initialize",
    "legacy_scope",
    "small_log_gateway",
]

Scope = dict[str, Any]
LEGACY_ACCEPT: Final = b"application/json, text/event-stream"


def small_log_gateway(extra: dict[str, Callable[..., Any]] | None = None,
                      **options: Any) -> Gateway:
    """The demo estate plus one public, argument-less tool per ``extra`` handler, with a call
    log of 16 records."""
    return demo_gateway(extra, call_log=InMemoryCallLog(max_records=16), **options)


def app_for(gateway: Gateway, keepalive_s: float = 30.0) -> StreamableHTTPApp:
    return create_asgi_app(gateway.kernel, HttpConfig(keepalive_s=keepalive_s),
                           changes=gateway.changes)


async def exchange(app: StreamableHTTPApp, scope: Scope, body: bytes) -> Client:
    """One complete request; the client leaves once the app has returned."""
    client = Client(body)
    await asyncio.wait_for(app(scope, client.inbox.get, client.send), BOUND_S)
    client.leave()
    return client


def legacy_scope(method: str, session_id: str | None = None,
                 accept: bytes = LEGACY_ACCEPT) -> Scope:
    headers = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
               (b"accept", accept)]
    if session_id is not None:
        headers += [(b"mcp-session-id", session_id.encode()),
                    (b"mcp-protocol-version", b"2025-11-25")]
    return asgi_scope(method, headers)


async def initialize(app: StreamableHTTPApp, client_info: dict[str, Any] | None = None) -> str:
    """A live legacy session (initialize, then notifications/initialized): its id."""
    message = json.loads(json.dumps(INIT))
    if client_info is not None:
        message["params"]["clientInfo"] = client_info
    answer = await exchange(app, legacy_scope("POST"), json.dumps(message).encode())
    session_id: str = dict(answer.sent[0]["headers"])[b"mcp-session-id"].decode()
    done = await exchange(app, legacy_scope("POST", session_id),
                          json.dumps(INITIALIZED).encode())
    assert done.sent[0]["status"] == 202
    return session_id


async def growth(first: Callable[[], Awaitable[None]],
                 second: Callable[[], Awaitable[None]]) -> int:
    """Bytes the traced heap grew by while ``second`` ran, after ``first`` (both traced, a
    full collection after each). ``first`` brings every count-bounded structure to its bound,
    so an entry ``second`` makes in one replaces an entry ``first`` made (freed: the heap does
    not grow) and only what is kept per request, or kept bigger than before, shows."""
    gc.collect()
    tracemalloc.start()
    try:
        await first()
        gc.collect()
        before, _ = tracemalloc.get_traced_memory()
        await second()
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return after - before
