"""Kit of the change-delivery tests: contracts, a listen over real HTTP (SSE frames as they arrive), and a
stdio loop in this process driven line by line (every wait bounded)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx

from sse_kit import sse_messages
from toolkeeper.contracts.spec import ToolSpec, spec_from_mapping
from toolkeeper.protocol import ServerKernel
from toolkeeper.registry import Registry
from toolkeeper.server import ToolHandlers, build_app
from toolkeeper.transports import HttpConfig, ServerThread, StdioServer
from toolkeeper.transports.session_stream import ChangeFeed

__all__ = ["ACCEPT_BOTH", "ENVELOPE", "LEGACY", "VERSION", "WAIT_S", "StdioPeer", "headers",
           "listen_body", "listening", "served", "sse_messages", "stdio_peer", "tool"]

VERSION = "2026-07-28"
LEGACY = "2025-11-25"
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": {}}
ACCEPT_BOTH = "application/json, text/event-stream"
WAIT_S = 5.0


def tool(name: str, version: str = "1.0.0", **extra: Any) -> ToolSpec:
    return spec_from_mapping({
        "name": name, "version": version, "title": name, "description": f"{name} (tests)",
        "inputSchema": {"type": "object", "properties": {}}, "dataClassification": "public",
        "sideEffect": "read", **extra})


def headers(method: str, accept: str = ACCEPT_BOTH) -> dict[str, str]:
    return {"Accept": accept, "Content-Type": "application/json",
            "MCP-Protocol-Version": VERSION, "Mcp-Method": method}


def listen_body(request_id: Any, **filters: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "subscriptions/listen",
                       "params": {"notifications": filters, "_meta": ENVELOPE}}).encode()


@contextmanager
def served(registry: Registry, handlers: ToolHandlers | None = None,
           config: HttpConfig | None = None, **options: Any) -> Iterator[tuple[str, ServerThread]]:
    app, _ = build_app(registry, handlers, http=config, **options)
    thread = ServerThread(app)
    running = thread.start()
    try:
        yield running.url, thread
    finally:
        thread.stop()


@contextmanager
def listening(client: httpx.Client, url: str, request_id: Any = 7, **filters: Any
              ) -> Iterator[tuple[httpx.Response, Iterator[dict[str, Any]]]]:
    with client.stream("POST", url, content=listen_body(request_id, **filters),
                       headers=headers("subscriptions/listen")) as response:
        yield response, sse_messages(response)


class StdioPeer:
    """The client end of an in-process stdio loop: ``send`` a message, ``receive`` the next
    line the server wrote (bounded), ``quiet`` to see that nothing arrives for a while."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    def send(self, message: dict[str, Any]) -> None:
        self.inbox.put_nowait(json.dumps(message).encode() + b"\n")

    async def receive(self) -> dict[str, Any]:
        async with asyncio.timeout(WAIT_S):
            return await self.outbox.get()

    async def quiet(self, seconds: float) -> bool:
        try:
            async with asyncio.timeout(seconds):
                await self.outbox.get()
        except TimeoutError:
            return True
        return False

    async def read_line(self) -> bytes | None:
        return await self.inbox.get()

    async def write(self, data: bytes) -> None:
        for line in data.splitlines():
            self.outbox.put_nowait(json.loads(line))


@asynccontextmanager
async def stdio_peer(kernel: ServerKernel, changes: ChangeFeed | None = None, *,
                     own_changes: bool = False) -> AsyncIterator[tuple[StdioPeer, StdioServer]]:
    """A stdio loop on ``kernel`` with its peer; end of input when the block is left
    (``own_changes``: the server owns the feed, as in a ``serve --stdio`` process)."""
    peer = StdioPeer()
    server = StdioServer(kernel, peer.read_line, peer.write, changes=changes, grace_s=1.0,
                         own_changes=own_changes)
    running = asyncio.ensure_future(server.run())
    try:
        yield peer, server
    finally:
        peer.inbox.put_nowait(None)
        async with asyncio.timeout(WAIT_S):
            await running
