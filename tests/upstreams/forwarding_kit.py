"""A gateway that forwards to upstreams, served over real HTTP on 127.0.0.1 (uvicorn in a
thread), built the way the integrator wires it: a memory registry holding the upstream tools'
contracts (published here from their descriptors; the importer is not under test), an
:class:`UpstreamTools` source over fixed bindings, and ``build_gateway(..., sources=[...])``.
The upstream connections are closed at the app's lifespan shutdown, in the server's own loop,
and any stdio process left is killed by its pid after."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolkeeper.contracts.spec import DataClassification, ToolSpec, spec_from_mapping
from toolkeeper.registry import Principal, Registry
from toolkeeper.server import ToolHandlers, build_gateway
from toolkeeper.transports import create_asgi_app, serve_in_thread
from toolkeeper.upstreams import UpstreamBinding, UpstreamDefinition
from toolkeeper.upstreams.connections import UpstreamConnections
from toolkeeper.upstreams.forwarding import UpstreamTools
from toolkeeper.upstreams.supervision import Supervision

SDK_SERVER = str(Path(__file__).resolve().parent / "sdk_upstream.py")
SDK_STDIO = (sys.executable, SDK_SERVER, "stdio")
OPEN = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class Imported:
    """One upstream tool as the test imports it: its exposed name and its descriptor's
    schemas."""

    upstream: str
    tool: str
    input_schema: Mapping[str, Any] | None = None
    output_schema: Mapping[str, Any] | None = None
    prefix: str = ""
    side_effect: str = "read"

    @property
    def exposed(self) -> str:
        return self.prefix + self.tool

    def contract(self) -> ToolSpec:
        data: dict[str, Any] = {
            "name": self.exposed, "version": "1.0.0", "title": self.exposed,
            "description": f"{self.upstream}'s {self.tool}",
            "inputSchema": dict(self.input_schema or OPEN),
            "dataClassification": "public", "sideEffect": self.side_effect}
        if self.output_schema is not None:
            data["outputSchema"] = dict(self.output_schema)
        return spec_from_mapping(data)

    def binding(self) -> UpstreamBinding:
        return UpstreamBinding(self.upstream, self.tool, self.exposed, "1.0.0",
                               digest="sha256:" + "0" * 64)


ECHO_INPUT = {"type": "object", "properties": {"text": {"type": "string"}},
              "required": ["text"]}
ECHO_OUTPUT = {"type": "object", "properties": {"result": {"type": "string"}},
               "required": ["result"]}


def sdk_tools(upstream: str, prefix: str = "") -> list[Imported]:
    """The SDK fixture's tools (``sdk_upstream.py``) as imported."""
    return [Imported(upstream, "echo", ECHO_INPUT, ECHO_OUTPUT, prefix),
            *(Imported(upstream, name, OPEN, None, prefix)
              for name in ("fails", "quota", "hang", "die", "pid", "confirm", "chatty")),
            Imported(upstream, "steps", {"type": "object", "properties": {
                "count": {"type": "integer"}}, "required": ["count"]}, None, prefix)]


class _ClosingApp:
    """The gateway's ASGI app, closing the upstream connections at lifespan shutdown."""

    def __init__(self, app: Any, connections: UpstreamConnections) -> None:
        self._app = app
        self._connections = connections
        self.config = app.config

    def begin_shutdown(self) -> None:
        self._app.begin_shutdown()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await self._app(scope, receive, send)
            return
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self._connections.aclose()
                await send({"type": "lifespan.shutdown.complete"})
                return


@dataclass
class Forwarder:
    url: str
    registry: Registry
    tools: UpstreamTools
    connections: UpstreamConnections

    def status(self, name: str) -> dict[str, Any]:
        return next(s for s in self.connections.status() if s["name"] == name)


class Clock:
    """A clock the test moves (the supervisor's backoff and cool-down run on it)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def by_token(tokens: Mapping[str, str]) -> Any:
    """A principal resolver: the bearer token names the credential (tenant ``acme``)."""
    def resolve(facts: Any) -> Principal:
        header = facts.headers.get("authorization") or ""
        credential = tokens.get(header.removeprefix("Bearer "))
        return Principal("acme", frozenset(), DataClassification.RESTRICTED,
                         credential=credential)
    return resolve


@contextmanager
def serving_forwarder(definitions: Sequence[UpstreamDefinition], imported: Sequence[Imported],
                      *, handlers: ToolHandlers | None = None,
                      supervision: Supervision | None = None, clock: Clock | None = None,
                      resolve_principal: Any = None,
                      native: Sequence[ToolSpec] = (),
                      on_change: Callable[[str], None] | None = None) -> Iterator[Forwarder]:
    registry = Registry.open("memory:")
    for spec in native:
        registry.publish(spec)
    for item in imported:
        registry.publish(item.contract())
    defined = {defn.name: defn for defn in definitions}
    bindings = [item.binding() for item in imported]
    connections = UpstreamConnections(defined, supervision=supervision, on_change=on_change,
                                      **({"clock": clock} if clock is not None else {}))
    tools = UpstreamTools(defined, lambda: bindings, connections)
    gateway = build_gateway(registry, handlers, sources=[tools],
                            resolve_principal=resolve_principal)
    app = _ClosingApp(create_asgi_app(gateway.kernel), connections)
    try:
        with serve_in_thread(app) as running:
            yield Forwarder(running.url, registry, tools, connections)
    finally:
        connections.kill()
