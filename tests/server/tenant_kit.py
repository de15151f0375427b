"""Test kit for the tenant-isolation tests: a multi-tenant estate, a bearer-token principal
resolver, and drivers that speak both eras to a gateway in process and over real HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from gateway_kit import contract

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import DataClassification
from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol import (
    CLIENT_CAPABILITIES_KEY,
    PROTOCOL_VERSION_KEY,
    HeaderView,
    Pending,
    Reply,
    ServerKernel,
    TransportFacts,
    decode_message,
)
from toolkeeper.registry import Principal, Registry
from toolkeeper.server import (
    CallRecord,
    Gateway,
    InMemoryCallLog,
    ToolHandlers,
    build_app,
    build_gateway,
)
from toolkeeper.transports import serve_in_thread

__all__ = [
    "MODERN", "TOKENS", "UNAUTHORIZED", "BearerResolver", "HttpPeer", "StreamPeer", "estate",
    "gateway", "http_gateway", "modern_headers", "recording_handlers", "records",
]

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
UNAUTHORIZED = -32001
"""The deployer's refusal code (implementation-defined range)."""

_C = DataClassification
TOKENS: dict[str, tuple[str, frozenset[str], DataClassification]] = {
    "acme-admin": ("acme", frozenset({"vault.admin"}), _C.RESTRICTED),
    "acme-admin-twin": ("acme", frozenset({"vault.admin"}), _C.RESTRICTED),
    "acme-basic": ("acme", frozenset(), _C.INTERNAL),
    "globex": ("globex", frozenset({"vault.admin"}), _C.CONFIDENTIAL),
}

OPEN = {"type": "object", "properties": {"a": {"type": "integer"}}}


def estate(registry: Registry, *, without: frozenset[str] = frozenset()) -> Registry:
    """The estate. Entries of ``without`` ("ledger", "shared@2", "vault@2", "secret", ...)
    are left out: the control estate in which those tools or versions truly do not exist.

    * ``ledger`` (tenant acme only): 1.0.0 retired, 1.1.0 deprecated (successor 2.0.0),
      2.0.0 current;
    * ``shared``: 1.0.0 for every tenant; 2.0.0 globex only, retired; 2.0.1 globex only;
    * ``vault``: 1.0.0 for all; 2.0.0 needs scope vault.admin, retired; 2.0.1 needs it;
    * ``secret``: confidential (invisible at internal clearance);
    * ``top``: restricted (only the acme admin sees it).
    """
    def has(key: str) -> bool:
        return key not in without and key.split("@")[0] not in without

    acme = {"tenants": ["acme"]}
    if has("ledger"):
        for version in ("1.0.0", "1.1.0"):
            registry.publish(contract("ledger", version, OPEN, **acme))
        registry.publish(contract("ledger", "2.0.0", {**OPEN, "required": ["a"]}, **acme))
        registry.retire("ledger", Version.parse("1.0.0"))
        registry.deprecate("ledger", Version.parse("1.1.0"), message="use 2.0.0",
                           successor=Version.parse("2.0.0"))
    registry.publish(contract("shared", "1.0.0", OPEN))
    if has("shared@2"):
        registry.publish(contract("shared", "2.0.0", OPEN, tenants=["globex"]))
        registry.publish(contract("shared", "2.0.1", OPEN, tenants=["globex"]))
        registry.retire("shared", Version.parse("2.0.0"))
    registry.publish(contract("vault", "1.0.0", OPEN))
    if has("vault@2"):
        registry.publish(contract("vault", "2.0.0", OPEN, requiredScopes=["vault.admin"]))
        registry.publish(contract("vault", "2.0.1", OPEN, requiredScopes=["vault.admin"]))
        registry.retire("vault", Version.parse("2.0.0"))
    if has("secret"):
        registry.publish(contract("secret", "1.0.0", OPEN, dataClassification="confidential"))
    if has("top"):
        registry.publish(contract("top", "1.0.0", OPEN, dataClassification="restricted"))
    return registry


def recording_handlers() -> ToolHandlers:
    """Every tool answers with the version it ran under and the caller's tenant."""
    handlers = ToolHandlers()
    for name in ("ledger", "shared", "vault", "secret", "top"):
        handlers.bind(name, lambda arguments, ctx: {
            "ran": str(ctx.version), "tenant": ctx.principal.tenant})
    return handlers


class BearerResolver:
    """``Authorization: Bearer <token>`` -> a principal of :data:`TOKENS`; a new Principal
    object per request unless ``cached``. Anything else is refused with -32001."""

    def __init__(self, *, cached: bool = False) -> None:
        self.calls = 0
        self._cached = cached
        self._objects: dict[str, Principal] = {}

    def __call__(self, facts: TransportFacts) -> Principal:
        self.calls += 1
        header = facts.headers.get("authorization") or ""
        token = header.removeprefix("Bearer ")
        row = TOKENS.get(token)
        if row is None:
            raise JsonRpcError(UNAUTHORIZED, "Unauthorized", {"reason": "unknown_token"})
        if self._cached:
            return self._objects.setdefault(token, Principal(*row, credential=token))
        return Principal(*row, credential=token)


def gateway(*, without: frozenset[str] = frozenset(),
            resolver: Callable[[TransportFacts], Any] | None = None, **options: Any
            ) -> Gateway:
    registry = estate(Registry.open("memory:"), without=without)
    return build_gateway(registry, recording_handlers(),
                         resolve_principal=resolver if resolver is not None
                         else BearerResolver(), **options)


def modern_meta(**extra: Any) -> dict[str, Any]:
    return {PROTOCOL_VERSION_KEY: MODERN, CLIENT_CAPABILITIES_KEY: {}, **extra}


def _params(method: str, name: str | None, arguments: Any, version: Any,
            modern: bool) -> dict[str, Any]:
    params: dict[str, Any] = {}
    meta: dict[str, Any] = {}
    if name is not None:
        params["name"] = name
        params["arguments"] = arguments if arguments is not None else {"a": 1}
    if version is not None:
        meta["schemaVersion"] = version
    if modern:
        params["_meta"] = modern_meta(**meta)
    elif meta:
        params["_meta"] = meta
    return params


class StreamPeer:
    """One in-process stream connection (stdio-like) whose facts carry a bearer token."""

    def __init__(self, kernel: ServerKernel, token: str | None, *, legacy: bool) -> None:
        pairs = [] if token is None else [("authorization", f"Bearer {token}")]
        self.kernel = kernel
        self.legacy = legacy
        self.conn = kernel.open_stream(TransportFacts("stdio", HeaderView(pairs)))
        self._next = 0
        if legacy:
            self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": LEGACY, "capabilities": {},
                "clientInfo": {"name": "hunt", "version": "1"}}})
            self.kernel.handle_stream_message(
                self.conn, {"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> bytes:
        outcome = self.kernel.handle_stream_message(self.conn, message)
        if isinstance(outcome, Pending):
            async def emit(note: dict[str, Any]) -> None:
                return None
            outcome = asyncio.run(outcome.complete(emit))
        assert isinstance(outcome, Reply), outcome
        return outcome.body

    def request(self, method: str, name: str | None = None, arguments: Any = None,
                version: Any = None) -> bytes:
        self._next += 1
        return self.send({"jsonrpc": "2.0", "id": self._next, "method": method,
                          "params": _params(method, name, arguments, version,
                                            not self.legacy)})

    def decoded(self, method: str, name: str | None = None, arguments: Any = None,
                version: Any = None) -> dict[str, Any]:
        out: dict[str, Any] = decode_message(self.request(method, name, arguments, version))
        return out


def modern_headers(method: str, name: str | None, token: str | None) -> dict[str, str]:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": MODERN, "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return headers


@dataclass
class HttpPeer:
    """A client of a gateway served over real HTTP on 127.0.0.1."""

    url: str
    http: httpx.Client
    token: str | None
    legacy: bool
    session: str | None = None
    _next: int = field(default=0)

    def headers(self, method: str, name: str | None = None) -> dict[str, str]:
        if not self.legacy:
            return modern_headers(method, name, self.token)
        headers = {"content-type": "application/json",
                   "accept": "application/json, text/event-stream"}
        if self.token is not None:
            headers["authorization"] = f"Bearer {self.token}"
        if self.session is not None:
            headers["mcp-session-id"] = self.session
        return headers

    def initialize(self) -> httpx.Response:
        response = self.http.post(self.url, headers=self.headers("initialize"), json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": LEGACY, "capabilities": {},
                "clientInfo": {"name": "hunt", "version": "1"}}})
        if response.status_code == 200 and "mcp-session-id" in response.headers:
            self.session = response.headers["mcp-session-id"]
            done = self.http.post(self.url, headers=self.headers("x"), json={
                "jsonrpc": "2.0", "method": "notifications/initialized"})
            assert done.status_code == 202, done.text
        return response

    def post(self, method: str, name: str | None = None, arguments: Any = None,
             version: Any = None) -> httpx.Response:
        self._next += 1
        body = {"jsonrpc": "2.0", "id": self._next, "method": method,
                "params": _params(method, name, arguments, version, not self.legacy)}
        return self.http.post(self.url, headers=self.headers(method, name), json=body)


@contextmanager
def http_gateway(**options: Any) -> Iterator[tuple[str, Gateway]]:
    """A gateway over the estate, served on an ephemeral 127.0.0.1 port for the block."""
    without = options.pop("without", frozenset())
    resolver = options.pop("resolver", None)
    registry = estate(Registry.open("memory:"), without=without)
    app, built = build_app(registry, recording_handlers(),
                           resolve_principal=resolver if resolver is not None
                           else BearerResolver(), **options)
    with serve_in_thread(app) as running:
        yield running.url, built


def records(built: Gateway) -> tuple[CallRecord, ...]:
    """The gateway's call log records (the kit's gateways keep an in-memory log)."""
    log = built.call_log
    assert isinstance(log, InMemoryCallLog)
    return log.records
