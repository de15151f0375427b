"""Kit for the soak hunt: an in-process gateway (demo estate plus a ``soak.echo`` family that
the test changes under load) served by uvicorn on 127.0.0.1, a registry timeline, the
gateway's bounded tables read by ``len()``, and a capture of every warning the server logs.

Every wait is bounded (client read timeouts, ``Event.wait`` with a timeout)."""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import ToolSpec, spec_from_mapping, spec_to_mapping
from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.protocol import Era
from toolkeeper.registry import Registry
from toolkeeper.server import Gateway, ToolContext, ToolHandlers, build_gateway
from toolkeeper.transports import HttpConfig, RunningServer, create_asgi_app, serve_in_thread
from toolkeeper.transports.http import StreamableHTTPApp

__all__ = ["FAMILY", "LogCapture", "Soak", "Timeline", "family_spec", "sizes", "soak_server",
           "sse"]

FAMILY = "soak.echo"
_LOOPS: list[asyncio.AbstractEventLoop] = []


def family_spec(minor: int) -> ToolSpec:
    """``soak.echo`` 1.<minor>.0: ``n`` (integer, required) plus optional ``p1..p<minor>``."""
    properties: dict[str, Any] = {"n": {"type": "integer"}}
    for k in range(1, minor + 1):
        properties[f"p{k}"] = {"type": "string"}
    return spec_from_mapping(copy.deepcopy({
        "name": FAMILY, "version": f"1.{minor}.0", "title": "Soak echo",
        "description": "Echoes n (soak tests)",
        "inputSchema": {"type": "object", "properties": properties, "required": ["n"]},
        "dataClassification": "public", "sideEffect": "read"}))


def _probe_spec(name: str = "soak.probe") -> ToolSpec:
    data = spec_to_mapping(family_spec(0), lifecycle=False)
    data = copy.deepcopy(data)
    data["name"] = name
    data["version"] = "1.0.0"
    return spec_from_mapping(data)


def _handlers() -> ToolHandlers:
    handlers = demo_handlers()

    @handlers.tool(FAMILY)
    async def echo(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        return {"n": arguments["n"]}

    @handlers.tool("soak.slow")
    async def slow(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        await ctx.progress(0, None, "started")
        try:  # a long call: ends when its client leaves or is cancelled (bounded anyway)
            async with asyncio.timeout(10):
                await asyncio.Event().wait()
        except TimeoutError:
            pass
        return {"n": arguments["n"]}

    @handlers.tool("soak.probe")
    async def probe(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        if loop not in _LOOPS:
            _LOOPS.append(loop)
        return {"n": len(asyncio.all_tasks(loop))}

    return handlers


class LogCapture(logging.Handler):
    """Every record at WARNING or above from the server's loggers."""

    NAMES = ("toolkeeper", "uvicorn", "uvicorn.error", "asyncio")

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []
        self._lock2 = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._lock2:
            self.records.append(record)

    def lines(self) -> list[str]:
        with self._lock2:
            return [f"{r.name} {r.levelname} {r.getMessage()} {r.exc_info!r}"
                    for r in self.records]


@dataclass
class Timeline:
    """When each change to ``soak.echo`` began and returned (``time.monotonic()``), by
    version string and kind (publish, deprecate, retire)."""

    begun: dict[tuple[str, str], float] = field(default_factory=dict)
    returned: dict[tuple[str, str], float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def began(self, kind: str, version: str) -> None:
        with self.lock:
            self.begun[(kind, version)] = time.monotonic()

    def ended(self, kind: str, version: str) -> None:
        with self.lock:
            self.returned[(kind, version)] = time.monotonic()

    def begun_before(self, kind: str, version: str, at: float) -> bool:
        with self.lock:
            when = self.begun.get((kind, version))
        return when is not None and when < at

    def returned_before(self, kind: str, version: str, at: float) -> bool:
        with self.lock:
            when = self.returned.get((kind, version))
        return when is not None and when < at

    def newest_published_before(self, at: float) -> int:
        """The highest minor whose publish had returned at ``at`` (0: the first version)."""
        with self.lock:
            done = [Version.parse(v).minor for (kind, v), when in self.returned.items()
                    if kind == "publish" and when < at]
        return max(done, default=0)


@dataclass
class Soak:
    server: RunningServer
    gateway: Gateway
    app: StreamableHTTPApp
    registry: Registry
    log: LogCapture
    timeline: Timeline

    @property
    def url(self) -> str:
        return self.server.url


@contextmanager
def soak_server(config: HttpConfig | None = None) -> Iterator[Soak]:
    registry = Registry.open("memory:")
    install_demo(registry)
    registry.publish(family_spec(0))
    registry.publish(_probe_spec())
    registry.publish(_probe_spec("soak.slow"))
    gateway = build_gateway(registry, _handlers())
    app = create_asgi_app(gateway.kernel, config or HttpConfig(keepalive_s=0.5),
                          changes=gateway.changes)
    capture = LogCapture()
    loggers = [logging.getLogger(name) for name in LogCapture.NAMES]
    for logger in loggers:
        logger.addHandler(capture)
    try:
        with serve_in_thread(app) as running:
            yield Soak(running, gateway, app, registry, capture, Timeline())
    finally:
        for logger in loggers:
            logger.removeHandler(capture)
        registry.close()


def sizes(soak: Soak) -> dict[str, int]:
    """The length of every table the gateway keeps (in process)."""
    gateway = soak.gateway
    method = gateway.kernel.methods.lookup("tools/call", Era.MODERN)
    assert method is not None
    calls: Any = method.handler
    routes = calls._routes
    recent = routes._recent
    out = {
        "sessions": len(gateway.kernel.sessions),
        "call_log": len(gateway.call_log),  # type: ignore[arg-type]
        "views": len(gateway.views._views),
        "routes": len(routes._routes),
        "routes_recent": 0 if recent is None else len(recent[3]),
        "compiled": len(routes._compiled),
        "registry_views": len(soak.registry._views),
        "hub_streams": len(gateway.changes),
        "in_flight": len(soak.app._legacy.in_flight),
        "registry_subscribers": len(soak.registry._subscribers),
    }
    streams = soak.app._session_streams
    if streams is not None:
        for name in ("_streams", "_open", "_by_session"):
            table = getattr(streams, name, None)
            if table is not None:
                out[f"session_streams{name}"] = len(table)
    return out


def loop_tasks() -> int:
    """The number of asyncio tasks on the server loop (after a ``soak.probe`` call)."""
    assert _LOOPS, "call soak.probe first"
    loop = _LOOPS[-1]
    result: list[int] = []
    done = threading.Event()

    def count() -> None:
        result.append(len(asyncio.all_tasks(loop)))
        done.set()

    loop.call_soon_threadsafe(count)
    assert done.wait(5)
    return result[0]


def sse(body: bytes) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a complete SSE body (comments and the priming event of a
    resumable legacy stream, an id with empty data, skipped)."""
    out = []
    for frame in body.split(b"\r\n\r\n"):
        if not frame or frame.startswith(b":"):
            continue
        lines = frame.split(b"\r\n")
        data = [line[5:].strip() for line in lines if line.startswith(b"data:")]
        assert data, frame
        if data == [b""]:
            assert lines[0].startswith(b"id: "), frame  # only the priming event is empty
            continue
        out.append(json.loads(b"".join(data)))
    return out
