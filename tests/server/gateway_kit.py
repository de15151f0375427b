"""Test kit for the gateway: a registry with a versioned estate, and drivers that speak each
era to the kernel in-process (no transport), settling Pending outcomes and keeping emits."""

from __future__ import annotations

import asyncio
from typing import Any

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import ToolSpec, spec_from_mapping
from toolkeeper.protocol import (
    CLIENT_CAPABILITIES_KEY,
    PROTOCOL_VERSION_KEY,
    Accepted,
    Outcome,
    Pending,
    Reply,
    ServerKernel,
    StreamConnection,
    decode_message,
)
from toolkeeper.registry import Principal, Registry
from toolkeeper.server import Gateway, ToolHandlers, build_gateway, fixed_principal

OPEN = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


def contract(name: str, version: str, schema: dict[str, Any], **fields: Any) -> ToolSpec:
    data: dict[str, Any] = {
        "name": name, "version": version, "title": name.title(),
        "description": f"The {name} tool.", "inputSchema": schema,
        "dataClassification": "internal", "sideEffect": "read", **fields}
    return spec_from_mapping(data)


def calc_estate(registry: Registry) -> None:
    """``calc``: 1.0.0 retired, 1.1.0 deprecated (successor 2.0.0), 1.2.0 active, 2.0.0 current;
    open schemas (no additionalProperties). ``vault``: 1.0.0 for everyone, 2.0.0 needs scope
    ``vault.admin``. ``secret``: confidential, invisible to an internal clearance."""
    props = {"a": {"type": "integer"}}
    registry.publish(contract("calc", "1.0.0", {"type": "object", "properties": dict(props),
                                                "required": ["a"]}))
    props["b"] = {"type": "integer"}
    registry.publish(contract("calc", "1.1.0", {"type": "object", "properties": dict(props),
                                                "required": ["a"]}))
    props["c"] = {"type": "string"}
    registry.publish(contract("calc", "1.2.0", {"type": "object", "properties": dict(props),
                                                "required": ["a"]}))
    registry.publish(contract("calc", "2.0.0", {"type": "object", "properties": dict(props),
                                                "required": ["a", "b"]}))
    registry.retire("calc", Version.parse("1.0.0"))
    registry.deprecate("calc", Version.parse("1.1.0"), message="use 2.0.0",
                       successor=Version.parse("2.0.0"))
    registry.publish(contract("vault", "1.0.0", OPEN))
    registry.publish(contract("vault", "2.0.0", OPEN, requiredScopes=["vault.admin"]))
    registry.publish(contract("secret", "1.0.0", OPEN, dataClassification="confidential"))


def echo_handlers() -> ToolHandlers:
    handlers = ToolHandlers()
    for name in ("calc", "vault", "secret"):
        handlers.bind(name, lambda arguments, ctx: {"echo": arguments,
                                                    "ran": str(ctx.version)},
                      inline=True)  # quick; settled() steps calls without an event loop
    return handlers


USER = Principal("acme", frozenset({"payments.read"}), Principal.parse(
    "x", [], "internal").clearance)


class ListsEverything:
    """A :class:`~toolkeeper.server.runnable.CanRun` that says every version can run: for the
    listing tests, which publish tools of every name (a call to one without a handler answers
    the "no handler" result)."""

    revision = 0

    def can_run(self, name: str, version: Version) -> bool:
        return True


def gateway_for(registry: Registry, handlers: ToolHandlers | None = None,
                principal: Principal | None = None, **options: Any) -> Gateway:
    options.setdefault("runs", ListsEverything())
    return build_gateway(registry, handlers if handlers is not None else echo_handlers(),
                         resolve_principal=fixed_principal(principal or USER), **options)


def settled(outcome: Outcome) -> dict[str, Any]:
    """The decoded reply of an outcome whose handler finishes without suspending (a Pending is
    stepped once, with notifications dropped)."""
    if isinstance(outcome, Pending):
        async def emit(message: dict[str, Any]) -> None:
            return None
        run = outcome.complete(emit)
        try:
            run.send(None)
        except StopIteration as stop:
            outcome = stop.value
        else:  # pragma: no cover - a handler that suspends is a broken test
            run.close()
            raise AssertionError("a handler suspended")
    assert isinstance(outcome, Reply), outcome
    message: dict[str, Any] = decode_message(outcome.body)
    return message


def meta(**extra: Any) -> dict[str, Any]:
    return {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: {}, **extra}


class Driver:
    """Speaks one era to a kernel over an in-memory stream connection."""

    def __init__(self, kernel: ServerKernel, *, legacy: bool = False,
                 capabilities: dict[str, Any] | None = None,
                 legacy_version: str = "2025-11-25") -> None:
        self.kernel = kernel
        self.conn: StreamConnection = kernel.open_stream()
        self.legacy = legacy
        self.capabilities = capabilities or {}
        self.emitted: list[dict[str, Any]] = []
        self._next = 0
        if legacy:
            init = self.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                "protocolVersion": legacy_version, "capabilities": self.capabilities,
                "clientInfo": {"name": "kit", "version": "1"}}})
            assert "result" in init, init
            assert self.outcome({"jsonrpc": "2.0", "method": "notifications/initialized"}) \
                == Accepted()

    async def _emit(self, message: dict[str, Any]) -> None:
        self.emitted.append(message)

    def outcome(self, message: Any) -> Reply | Accepted:
        outcome: Outcome = self.kernel.handle_stream_message(self.conn, message)
        if isinstance(outcome, Pending):
            return asyncio.run(outcome.complete(self._emit))
        return outcome

    def send(self, message: Any) -> dict[str, Any]:
        reply = self.outcome(message)
        assert isinstance(reply, Reply), reply
        decoded = decode_message(reply.body)  # as the peer sees it (tools/list is spliced raw)
        assert isinstance(decoded, dict)
        return decoded

    def request(self, method: str, **params: Any) -> dict[str, Any]:
        self._next += 1
        extra_meta = params.pop("_meta", {})
        if self.legacy:
            if extra_meta:
                params["_meta"] = extra_meta
        else:
            params["_meta"] = meta(**extra_meta)
            params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = self.capabilities
        return self.send({"jsonrpc": "2.0", "id": self._next, "method": method,
                          "params": params})

    def call(self, name: str, arguments: Any = None, *, version: Any = None,
             **meta_extra: Any) -> dict[str, Any]:
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        if version is not None:
            meta_extra["schemaVersion"] = version
        if meta_extra:
            params["_meta"] = meta_extra
        return self.request("tools/call", **params)

    def tools(self) -> list[dict[str, Any]]:
        result = self.request("tools/list")["result"]
        tools = result["tools"]
        assert isinstance(tools, list)
        return tools
