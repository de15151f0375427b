"""Kit of the SDK-as-peer tests: a gateway with a few ``hunt.*`` tools (a blocking tool whose release
and cancellation the test observes, every content type, every log level, a capability-gated
tool), served over real HTTP on 127.0.0.1 (uvicorn in a thread) or over the stdio loop driven
in-process through an ``mcp`` client ``Transport`` (the SDK's own line framing and parsing)."""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from toolkeeper.contracts.spec import ToolSpec, spec_from_mapping
from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.protocol import LOG_LEVELS, ServerKernel
from toolkeeper.registry import Registry
from toolkeeper.server import (
    Gateway,
    ToolContext,
    ToolHandlers,
    ToolResult,
    audio,
    build_app,
    build_gateway,
    embedded_resource,
    image,
    resource_link,
    text,
)
from toolkeeper.server.changes import ChangeHub, ChangeStream
from toolkeeper.transports import HttpConfig, ServerThread, StdioServer

__all__ = ["ARRAY_OUTPUT", "CLI_PROBE", "HEADER_SCHEMA", "HUNT_TOOLS", "PNG", "WAV", "Probe", "SignallingHub",
           "cli_handlers", "hunt_contract", "hunt_contract_file", "hunt_gateway", "hunt_handlers",
           "hunt_only_handlers", "hunt_registry", "serve_http", "stdio_transport"]

PNG = b"\x89PNG\r\n\x1a\n hunt"
WAV = b"RIFF\x00\x00\x00\x00WAVE hunt"
WAIT_S = 5.0


@dataclass
class Probe:
    """What the blocking tool reports to the test thread, and how the test releases it."""

    started: threading.Event = field(default_factory=threading.Event)
    cancelled: threading.Event = field(default_factory=threading.Event)
    _release: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = field(default_factory=list)

    async def block(self) -> str:
        event = asyncio.Event()
        entry = (asyncio.get_running_loop(), event)
        self._release.append(entry)
        self.started.set()
        try:
            async with asyncio.timeout(WAIT_S):
                await event.wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        finally:
            self._release.remove(entry)
        return "released"

    def release_all(self) -> None:
        for loop, event in list(self._release):
            if not loop.is_closed():
                loop.call_soon_threadsafe(event.set)


def hunt_contract(name: str, *, input_schema: dict[str, Any] | None = None,
                  output_schema: dict[str, Any] | None = None) -> ToolSpec:
    return spec_from_mapping(hunt_contract_file(name, input_schema=input_schema,
                                                output_schema=output_schema))


def hunt_contract_file(name: str, *, input_schema: dict[str, Any] | None = None,
                       output_schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """A hunt tool's contract as a contract file holds it."""
    data: dict[str, Any] = {
        "name": name, "version": "1.0.0", "title": name, "description": f"{name} (hunt)",
        "inputSchema": input_schema or {"type": "object", "properties": {}},
        "dataClassification": "public", "sideEffect": "read"}
    if output_schema is not None:
        data["outputSchema"] = output_schema
    return data


def _every_content(arguments: dict[str, Any]) -> ToolResult:
    return ToolResult((
        text("plain", annotations={"audience": ["user"], "priority": 0.5}),
        image(PNG, "image/png", annotations={"audience": ["assistant"]}),
        audio(WAV, "audio/wav"),
        embedded_resource("hunt://text", text="embedded", mime_type="text/plain"),
        embedded_resource("hunt://blob", blob=b"\x00\x01", mime_type="application/octet-stream"),
        resource_link("hunt://link", "link", title="A link", description="linked",
                      mime_type="text/plain", size=12),
    ), {"kinds": 6, "nested": {"ok": True}})


async def _every_level(arguments: dict[str, Any], ctx: ToolContext) -> str:
    for level in LOG_LEVELS:
        await ctx.log(level, {"level": level}, logger="hunt")
    return "logged"


async def _nan_progress(arguments: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.progress(math.nan, math.inf, "not a number")  # a handler bug
    return "after nan"


async def _progress_steps(arguments: dict[str, Any], ctx: ToolContext) -> str:
    for step in range(1, 6):
        await ctx.progress(step, 5, f"step {step}")
    return "stepped"


def _array(arguments: dict[str, Any]) -> ToolResult:
    return ToolResult((text("[1,2]"),), [1, 2])


HEADER_SCHEMA: dict[str, Any] = {"type": "object", "required": ["region"], "properties": {
    "region": {"type": "string", "x-mcp-header": "Region"},
    "count": {"type": "integer", "x-mcp-header": "Count"},
    "flag": {"type": "boolean", "x-mcp-header": "Flag"},
    "nested": {"type": "object", "properties": {"deep": {"type": "string",
                                                         "x-mcp-header": "Deep"}}}}}
"""Arguments mirrored into ``Mcp-Param-*`` headers (``hunt.headers`` echoes its arguments)."""

ARRAY_OUTPUT: dict[str, Any] = {"type": "array", "items": {"type": "integer"}}


def hunt_only_handlers(probe: Probe) -> ToolHandlers:
    """Handlers of the hunt tools alone."""
    handlers = ToolHandlers()

    async def block(arguments: dict[str, Any], ctx: ToolContext) -> str:
        return await probe.block()

    async def block_after_progress(arguments: dict[str, Any], ctx: ToolContext) -> str:
        await ctx.progress(1, None, "started")  # commits an HTTP response to SSE
        return await probe.block()

    def announce(arguments: dict[str, Any], ctx: ToolContext) -> str:
        ctx.notify_tools_changed()
        return "announced"

    handlers.bind("hunt.block", block)
    handlers.bind("hunt.block_sse", block_after_progress)
    handlers.bind("hunt.announce", announce)
    handlers.bind("hunt.content", _every_content)
    handlers.bind("hunt.levels", _every_level)
    handlers.bind("hunt.steps", _progress_steps)
    handlers.bind("hunt.nan", _nan_progress)
    handlers.bind("hunt.headers", lambda arguments: {"seen": arguments})
    handlers.bind("hunt.sampling", lambda arguments: "sampled", requires={"sampling": {}})
    handlers.bind("hunt.array", _array)
    handlers.bind("hunt.array_typed", _array)  # published by a test, with an array outputSchema
    handlers.bind("hunt.scalar", lambda arguments: ToolResult((text("7"),), 7))
    return handlers


def hunt_handlers(probe: Probe) -> ToolHandlers:
    """The demo handlers and the hunt handlers."""
    handlers = demo_handlers()
    handlers.merge(hunt_only_handlers(probe))
    return handlers


CLI_PROBE = Probe()


def cli_handlers() -> ToolHandlers:
    """For ``toolkeeper serve --handlers <this file>:cli_handlers``: the hunt tools, plus
    ``hunt.was_cancelled`` that says (waiting up to 3 s) whether a blocked call was cancelled."""
    handlers = hunt_only_handlers(CLI_PROBE)

    async def was_cancelled(arguments: dict[str, Any]) -> dict[str, Any]:
        seen = await asyncio.to_thread(CLI_PROBE.cancelled.wait, 3.0)
        return {"started": CLI_PROBE.started.is_set(), "cancelled": seen}

    handlers.bind("hunt.was_cancelled", was_cancelled)
    return handlers


class SignallingHub(ChangeHub):
    """A change hub that says when a stream opens and leaves (so a test publishes only after
    a client's stream is open)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.opened = threading.Event()
        self.left = threading.Event()

    def open(self) -> ChangeStream:
        stream = super().open()
        self.opened.set()
        return stream

    def discard(self, stream: ChangeStream) -> None:
        super().discard(stream)
        self.left.set()


HUNT_TOOLS = ("hunt.announce", "hunt.array", "hunt.block", "hunt.block_sse", "hunt.content",
              "hunt.levels", "hunt.nan", "hunt.sampling", "hunt.scalar", "hunt.steps")


def hunt_registry(*extra: ToolSpec) -> Registry:
    """The demo estate, the hunt tools and ``extra``, in an in-memory registry."""
    registry = Registry.open("memory:")
    install_demo(registry)
    for spec in (*map(hunt_contract, HUNT_TOOLS), *extra):
        registry.publish(spec)
    return registry


def hunt_gateway(probe: Probe, *extra: ToolSpec, **options: Any) -> tuple[Registry, Gateway]:
    registry = hunt_registry(*extra)
    return registry, build_gateway(registry, hunt_handlers(probe), **options)


@contextmanager
def serve_http(probe: Probe, *extra: ToolSpec, config: HttpConfig | None = None
               ) -> Iterator[tuple[str, Gateway]]:
    """The hunt gateway on an ephemeral 127.0.0.1 port; its change hub a SignallingHub."""
    registry = hunt_registry(*extra)
    app, gateway = build_app(registry, hunt_handlers(probe), http=config,
                             changes=SignallingHub.for_registry(registry))
    thread = ServerThread(app)
    running = thread.start()
    try:
        yield running.url, gateway
    finally:
        probe.release_all()
        thread.stop()
        registry.close()


@asynccontextmanager
async def stdio_transport(kernel: ServerKernel, wire: list[bytes] | None = None
                          ) -> AsyncIterator[
        tuple[anyio.abc.ObjectReceiveStream[SessionMessage | Exception],
              anyio.abc.ObjectSendStream[SessionMessage]]]:
    """An ``mcp`` client Transport onto toolkeeper's stdio loop in this process: the client's
    messages are framed exactly as ``mcp.client.stdio`` frames them (one JSON line each) and
    the server's lines parsed as it parses them. ``wire`` collects the server's raw lines."""
    to_client_send, to_client = anyio.create_memory_object_stream[SessionMessage | Exception](64)
    from_client, from_client_recv = anyio.create_memory_object_stream[SessionMessage](64)

    async def read_line() -> bytes | None:
        try:
            message = await from_client_recv.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            return None
        return message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"

    async def write(data: bytes) -> None:
        if wire is not None:
            wire.append(data)
        for line in data.decode().split("\n")[:-1]:  # as mcp.client.stdio splits (not splitlines)
            try:
                parsed: SessionMessage | Exception = SessionMessage(
                    types.jsonrpc_message_adapter.validate_json(line, by_name=False))
            except ValueError as exc:
                parsed = exc
            await to_client_send.send(parsed)

    server = StdioServer(kernel, read_line, write)
    done = anyio.Event()

    async def run() -> None:
        await server.run()
        done.set()

    streams = (to_client_send, to_client, from_client, from_client_recv)
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(run)
            try:
                yield to_client, from_client
            finally:
                from_client.close()  # end of input: the loop finishes its in-flight requests
                with anyio.move_on_after(WAIT_S, shield=True):
                    await done.wait()
                group.cancel_scope.cancel()
    finally:
        for stream in streams:
            stream.close()
