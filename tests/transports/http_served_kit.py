"""A real gateway over HTTP on an ephemeral 127.0.0.1 port (uvicorn in a thread), serving the
demo estate plus a few tools that exercise streaming: what ``conftest``'s module fixtures serve,
importable by name from any test module (a module named ``conftest`` is not: another folder's
may be the one imported under that name)."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any

from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.registry import Registry
from toolkeeper.server import Gateway, ToolContext, ToolHandlers, build_gateway
from toolkeeper.transports import HttpConfig, RunningServer, create_asgi_app, serve_in_thread

__all__ = ["Gates", "Served", "start"]


@dataclass
class Gates:
    """Threading events the streaming tools wait on or set (test <-> server thread)."""

    release: threading.Event = field(default_factory=threading.Event)
    cancelled: threading.Event = field(default_factory=threading.Event)


@dataclass
class Served:
    server: RunningServer
    gateway: Gateway
    gates: Gates

    @property
    def url(self) -> str:
        return self.server.url


def _streaming_handlers(gates: Gates) -> ToolHandlers:
    handlers = ToolHandlers()

    @handlers.tool("test.wait")
    async def wait(arguments: dict[str, Any], ctx: ToolContext) -> str:
        await ctx.progress(0, None, "waiting")
        try:
            released = await asyncio.to_thread(gates.release.wait, 10)
        except asyncio.CancelledError:
            gates.cancelled.set()
            raise
        return "released" if released else "timed out"

    @handlers.tool("test.silent")
    async def silent(arguments: dict[str, Any]) -> str:
        released = await asyncio.to_thread(gates.release.wait, 10)
        return "released" if released else "timed out"

    return handlers


def _test_contract(name: str) -> Any:
    return spec_from_mapping({
        "name": name, "version": "1.0.0", "title": name, "description": f"{name} (tests)",
        "inputSchema": {"type": "object", "properties": {}}, "dataClassification": "public",
        "sideEffect": "read"})


def start(config: HttpConfig | None = None) -> tuple[Served, Any]:
    registry = Registry.open("memory:")
    install_demo(registry)
    for name in ("test.wait", "test.silent"):
        registry.publish(_test_contract(name))
    gates = Gates()
    handlers = demo_handlers()
    handlers.merge(_streaming_handlers(gates))
    gateway = build_gateway(registry, handlers)
    context = serve_in_thread(create_asgi_app(gateway.kernel, config))
    running = context.__enter__()
    return Served(running, gateway, gates), context
