"""Acceptance 2, as a property: over random estates, principals and tokens, no tool is listed
or callable beyond the principal's entitlement (SPEC 2.3: tenant, scopes, clearance), and a
refused token reaches no tool at all (401), in both eras.

The estate holds imported upstream tools too (issue 22: entitlement applies to them exactly
as to native ones): a generated upstream definition (its tenants, scopes and classification,
and per-tool overrides of each) imported through the governance path
(:meth:`~toolkeeper.upstreams.governance.Upstreams.apply_listing` of the hand-written legacy
upstream's listing) and served by forwarding to that upstream, running on 127.0.0.1."""

from __future__ import annotations

import asyncio
import importlib.util
import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jwt_kit import LEGACY, MODERN, SECRET, Auth, Issuer, claims, handlers

from toolkeeper.auth import build_resolver
from toolkeeper.contracts import spec_from_mapping
from toolkeeper.contracts.spec import DataClassification
from toolkeeper.protocol import Pending, Reply, ServerKernel
from toolkeeper.registry import Registry
from toolkeeper.server import build_gateway
from toolkeeper.transports import serve_in_thread
from toolkeeper.upstreams import ToolOverride, UpstreamDefinition
from toolkeeper.upstreams.connections import UpstreamConnections
from toolkeeper.upstreams.forwarding import UpstreamTools
from toolkeeper.upstreams.governance import Upstreams


def _load_raw_upstream() -> Any:
    """tests/upstreams/raw_upstream.py by its path (that directory is kept off sys.path: its
    conftest would shadow others')."""
    path = Path(__file__).resolve().parent.parent / "upstreams" / "raw_upstream.py"
    spec = importlib.util.spec_from_file_location("raw_upstream", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


raw_upstream = _load_raw_upstream()

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
# The imported tools: the raw upstream's tools that answer (exposed as "up." + name), with
# the upstream definition's metadata and an override of some of it per tool.
IMPORTED = {"future": "from the future", "whoami": raw_upstream.SESSION_PREFIX}
PREFIX = "up."
override = st.fixed_dictionaries({
    "tenants": st.none() | st.lists(st.sampled_from(TENANTS), unique=True, max_size=2),
    "scopes": st.none() | st.lists(st.sampled_from(SCOPES), unique=True, max_size=2),
    "level": st.none() | st.sampled_from(LEVELS),
})
upstream_definitions = st.fixed_dictionaries({
    "defaults": tool, "overrides": st.dictionaries(st.sampled_from(sorted(IMPORTED)), override),
})
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


def _effective(upstream: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each imported tool's entitlement fields as the definition and its override give them
    (the test's own reading of issue 22's rule: an override's field, else the upstream's)."""
    out = {}
    for name in IMPORTED:
        given = upstream["overrides"].get(name, {})
        out[PREFIX + name] = {key: value if (value := given.get(key)) is not None
                              else upstream["defaults"][key]
                              for key in ("tenants", "scopes", "level")}
    return out


@pytest.fixture(scope="module")
def raw_url() -> Iterator[str]:
    with serve_in_thread(raw_upstream.RawUpstream()) as running:
        yield running.url


def _definition(upstream: dict[str, Any], url: str) -> UpstreamDefinition:
    defaults = upstream["defaults"]
    return UpstreamDefinition(
        "up", url=url, prefix=PREFIX, era="legacy", call_timeout_s=10,
        classification=DataClassification(defaults["level"]),
        tenants=tuple(defaults["tenants"]), scopes=tuple(defaults["scopes"]),
        tools={name: ToolOverride(
            classification=None if o["level"] is None else DataClassification(o["level"]),
            tenants=None if o["tenants"] is None else tuple(o["tenants"]),
            scopes=None if o["scopes"] is None else tuple(o["scopes"]))
            for name, o in upstream["overrides"].items()})


def _kernel(estate: dict[str, dict[str, Any]], secret_file: str,
            defn: UpstreamDefinition) -> tuple[ServerKernel, UpstreamConnections]:
    registry = Registry.open("memory:")
    upstreams = Upstreams(registry)
    upstreams.add(defn, origin="config", actor="test")
    listed = [tool for tool in raw_upstream.TOOLS if tool["name"] in IMPORTED]
    report = upstreams.apply_listing(defn.name, listed, actor="test")
    assert [(o.tool, o.action) for o in report.tools] == [
        (name, "imported") for name in sorted(IMPORTED)]
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
    definitions = {defn.name: defn}
    connections = UpstreamConnections(definitions)
    forwarded = UpstreamTools(definitions, upstreams.bindings, connections)
    return build_gateway(registry, handlers(NAMES), sources=[forwarded],
                         resolve_principal=build_resolver(auth, registry)).kernel, connections


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


Run = Callable[[Awaitable[Any]], Any]
"""Runs a coroutine on the example's one event loop (its upstream sessions live there)."""


def _send(kernel: ServerKernel, token: str, body: dict[str, Any],
          extra: list[tuple[bytes, bytes]], run: Run) -> tuple[int, dict[str, Any]]:
    pairs = [(b"content-type", b"application/json"),
             (b"accept", b"application/json, text/event-stream"),
             (b"authorization", f"Bearer {token}".encode()), *extra]
    outcome = kernel.handle_asgi(json.dumps(body).encode(), pairs)
    if isinstance(outcome, Pending):
        async def emit(message: dict[str, Any]) -> None:
            return None
        outcome = run(outcome.complete(emit))
    assert isinstance(outcome, Reply)
    decoded: dict[str, Any] = json.loads(outcome.body)
    return outcome.status, decoded


def _modern(kernel: ServerKernel, token: str, run: Run, method: str, name: str | None = None
            ) -> tuple[int, dict[str, Any]]:
    params: dict[str, Any] = {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                        "io.modelcontextprotocol/clientCapabilities": {}}}
    extra = [(b"mcp-protocol-version", MODERN.encode()), (b"mcp-method", method.encode())]
    if name is not None:
        params.update(name=name, arguments={})
        extra.append((b"mcp-name", name.encode()))
    return _send(kernel, token, {"jsonrpc": "2.0", "id": 1, "method": method,
                                 "params": params}, extra, run)


def _legacy_initialize(kernel: ServerKernel, token: str, run: Run) -> int:
    return _send(kernel, token, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {},
        "clientInfo": {"name": "p", "version": "1"}}}, [], run)[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(estate=estates, upstream=upstream_definitions, principal=principals, spoiler=spoilers)
def test_no_tool_is_visible_or_callable_beyond_entitlement(
        tmp_path_factory: Any, raw_url: str, estate: dict[str, dict[str, Any]],
        upstream: dict[str, Any], principal: dict[str, Any], spoiler: str | None) -> None:
    secret = tmp_path_factory.mktemp("s") / "secret"
    secret.write_bytes(SECRET)
    kernel, connections = _kernel(estate, str(secret), _definition(upstream, raw_url))
    loop = asyncio.new_event_loop()
    try:
        _check(kernel, loop.run_until_complete, {**estate, **_effective(upstream)},
               principal, spoiler)
    finally:
        loop.run_until_complete(connections.aclose())
        loop.close()


def _check(kernel: ServerKernel, run: Run, estate: dict[str, dict[str, Any]],
           principal: dict[str, Any], spoiler: str | None) -> None:
    token = _token(principal, spoiler)
    entitled = sorted(name for name, spec in estate.items() if _entitled(spec, principal))
    status, listed = _modern(kernel, token, run, "tools/list")
    names = [*NAMES, *(PREFIX + name for name in IMPORTED)]
    if spoiler is not None:
        assert (status, listed) == (401, {"error": "invalid_token",
                                          "error_description": "Authentication required"})
        for name in names:
            assert _modern(kernel, token, run, "tools/call", name)[0] == 401
        assert _legacy_initialize(kernel, token, run) == 401
        return
    assert sorted(t["name"] for t in listed["result"]["tools"]) == entitled
    for name in names:
        status, answer = _modern(kernel, token, run, "tools/call", name)
        if name not in entitled:
            assert answer["error"]["code"] == -32602, answer
        elif name.startswith(PREFIX):  # forwarded, and the upstream's own answer came back
            result = answer["result"]
            assert result["isError"] is False, answer
            assert result["content"][0]["text"].startswith(IMPORTED[name[len(PREFIX):]])
        else:
            assert answer["result"]["structuredContent"] == {"tenant": principal["tenant"]}
