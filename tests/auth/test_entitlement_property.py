"""Acceptance 2, as a property: over random estates, principals and tokens, no tool is listed
or callable beyond the principal's entitlement (SPEC 2.3: tenant, scopes, clearance), and a
refused token reaches no tool at all (401), in both eras."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import jwt
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jwt_kit import LEGACY, MODERN, SECRET, Auth, Issuer, claims, handlers

from toolkeeper.auth import build_resolver
from toolkeeper.contracts import spec_from_mapping
from toolkeeper.protocol import Pending, Reply, ServerKernel
from toolkeeper.registry import Registry
from toolkeeper.server import build_gateway

LEVELS = ["public", "internal", "confidential", "restricted"]
TENANTS = ["acme", "globex", "initech"]
SCOPES = ["a", "b", "c"]
NAMES = ["ledger", "vault", "secret", "open"]

tool = st.fixed_dictionaries({
    "tenants": st.lists(st.sampled_from(TENANTS), unique=True, max_size=2),
    "scopes": st.lists(st.sampled_from(SCOPES), unique=True, max_size=2),
    "level": st.sampled_from(LEVELS),
})
estates = st.dictionaries(st.sampled_from(NAMES), tool, min_size=1)
principals = st.fixed_dictionaries({
    "tenant": st.sampled_from(TENANTS),
    "scope": st.lists(st.sampled_from(SCOPES), unique=True).map(" ".join),
    "clearance": st.sampled_from(LEVELS),
})
# How the token is spoiled (None: a valid token).
spoilers = st.sampled_from([None, None, None, "expired", "audience", "issuer", "signature",
                            "none", "garbage"])


def _entitled(spec: dict[str, Any], principal: dict[str, Any]) -> bool:
    return ((not spec["tenants"] or principal["tenant"] in spec["tenants"])
            and set(spec["scopes"]) <= set(principal["scope"].split())
            and LEVELS.index(spec["level"]) <= LEVELS.index(principal["clearance"]))


def _kernel(estate: dict[str, dict[str, Any]], secret_file: str) -> ServerKernel:
    registry = Registry.open("memory:")
    for name, spec in estate.items():
        fields: dict[str, Any] = {"dataClassification": spec["level"]}
        if spec["tenants"]:
            fields["tenants"] = spec["tenants"]
        if spec["scopes"]:
            fields["requiredScopes"] = spec["scopes"]
        registry.publish(spec_from_mapping({
            "name": name, "version": "1.0.0", "title": name, "description": name,
            "sideEffect": "read", "inputSchema": {"type": "object"}, **fields}))
    auth = Auth(jwt_issuers=(Issuer(secret_file=secret_file, algorithms=("HS256",)),))
    return build_gateway(registry, handlers(NAMES),
                         resolve_principal=build_resolver(auth, registry)).kernel


def _token(principal: dict[str, Any], spoiler: str | None) -> str:
    overrides: dict[str, Any] = dict(principal)
    key = SECRET
    if spoiler == "expired":
        overrides["exp"] = 1_000_000
    elif spoiler == "audience":
        overrides["aud"] = "https://elsewhere.test/mcp"
    elif spoiler == "issuer":
        overrides["iss"] = "https://evil.test"
    elif spoiler == "signature":
        key = b"another-secret-of-at-least-32-bytes!!"
    elif spoiler == "garbage":
        return "eyJhbGciOi.garbage"
    token = jwt.encode(claims(**overrides), key, algorithm="HS256")
    if spoiler == "none":
        head = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0"  # {"alg":"none","typ":"JWT"}
        token = f"{head}.{token.split('.')[1]}."
    return token


def _send(kernel: ServerKernel, token: str, body: dict[str, Any],
          extra: list[tuple[bytes, bytes]]) -> tuple[int, dict[str, Any]]:
    pairs = [(b"content-type", b"application/json"),
             (b"accept", b"application/json, text/event-stream"),
             (b"authorization", f"Bearer {token}".encode()), *extra]
    outcome = kernel.handle_asgi(json.dumps(body).encode(), pairs)
    if isinstance(outcome, Pending):
        async def emit(message: dict[str, Any]) -> None:
            return None
        outcome = asyncio.run(outcome.complete(emit))
    assert isinstance(outcome, Reply)
    decoded: dict[str, Any] = json.loads(outcome.body)
    return outcome.status, decoded


def _modern(kernel: ServerKernel, token: str, method: str, name: str | None = None
            ) -> tuple[int, dict[str, Any]]:
    params: dict[str, Any] = {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                        "io.modelcontextprotocol/clientCapabilities": {}}}
    extra = [(b"mcp-protocol-version", MODERN.encode()), (b"mcp-method", method.encode())]
    if name is not None:
        params.update(name=name, arguments={})
        extra.append((b"mcp-name", name.encode()))
    return _send(kernel, token, {"jsonrpc": "2.0", "id": 1, "method": method,
                                 "params": params}, extra)


def _legacy_initialize(kernel: ServerKernel, token: str) -> int:
    return _send(kernel, token, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "p", "version": "1"}}}, [])[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(estate=estates, principal=principals, spoiler=spoilers)
def test_no_tool_is_visible_or_callable_beyond_entitlement(
        tmp_path_factory: Any, estate: dict[str, dict[str, Any]], principal: dict[str, Any],
        spoiler: str | None) -> None:
    secret = tmp_path_factory.mktemp("s") / "secret"
    secret.write_bytes(SECRET)
    kernel = _kernel(estate, str(secret))
    token = _token(principal, spoiler)
    entitled = sorted(name for name, spec in estate.items() if _entitled(spec, principal))
    status, listed = _modern(kernel, token, "tools/list")
    if spoiler is not None:
        assert (status, listed) == (401, {"error": "invalid_token",
                                          "error_description": "Authentication required"})
        for name in NAMES:
            assert _modern(kernel, token, "tools/call", name)[0] == 401
        assert _legacy_initialize(kernel, token) == 401
        return
    assert sorted(t["name"] for t in listed["result"]["tools"]) == entitled
    for name in NAMES:
        status, answer = _modern(kernel, token, "tools/call", name)
        if name in entitled:
            assert answer["result"]["structuredContent"] == {"tenant": principal["tenant"]}
        else:
            assert answer["error"]["code"] == -32602, answer
