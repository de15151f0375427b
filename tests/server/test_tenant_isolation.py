"""Tenant isolation through the whole gateway with a header-based principal resolver (SPEC 2.3,
3.3, 3.4, invariant 3 of 3.6; mcp-wire 10 session ownership): what each principal sees and
may call, that a tool it may not see answers exactly like one that does not exist (byte for
byte, every pinned version too), that caches never serve one principal's route or view to
another, and that a refusing or broken resolver never yields a 500 or exception text."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from gateway_kit import Driver
from tenant_kit import (
    UNAUTHORIZED,
    BearerResolver,
    HttpPeer,
    StreamPeer,
    gateway,
    http_gateway,
    modern_headers,
    records,
)

from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol import TransportFacts
from toolkeeper.registry import Principal, Registry
from toolkeeper.server import build_gateway

ERAS = [pytest.param(False, id="modern"), pytest.param(True, id="legacy")]

# (caller, tool, what the control estate leaves out so that the tool/versions truly do not
# exist, versions to pin: None = no version declared)
HIDDEN: list[Any] = [
    pytest.param("globex", "ledger", "ledger", id="other-tenant-tool"),
    pytest.param("acme-basic", "secret", "secret", id="above-clearance"),
    pytest.param("acme-basic", "top", "top", id="restricted"),
    pytest.param("acme-admin", "shared", "shared@2", id="other-tenant-versions"),
    pytest.param("acme-basic", "vault", "vault@2", id="missing-scope-versions"),
]
PINS = [None, "1.0.0", "1.1.0", "1.2.0", "2.0.0", "2.0.1", "3.0.0", "9.9.9", "2.0.0+b1", "not-semver",
        "01.0.0"]


@pytest.mark.parametrize("legacy", ERAS)
def test_each_principal_lists_exactly_the_tools_its_tenant_scopes_and_clearance_allow(
        legacy: bool) -> None:
    kernel = gateway().kernel
    names = {token: [t["name"] for t in StreamPeer(kernel, token, legacy=legacy)
                     .decoded("tools/list")["result"]["tools"]]
             for token in ("acme-admin", "acme-basic", "globex")}
    assert names == {"acme-admin": ["ledger", "secret", "shared", "top", "vault"],
                     "acme-basic": ["ledger", "shared", "vault"],
                     "globex": ["secret", "shared", "vault"]}


@pytest.mark.parametrize("legacy", ERAS)
@pytest.mark.parametrize(("token", "tool", "control"), HIDDEN)
def test_a_hidden_tool_answers_every_pin_byte_for_byte_like_a_tool_that_does_not_exist(
        legacy: bool, token: str, tool: str, control: str) -> None:
    real = gateway().kernel
    absent = gateway(without=frozenset({control})).kernel
    for version in PINS:
        got = StreamPeer(real, token, legacy=legacy).request("tools/call", tool, version=version)
        want = StreamPeer(absent, token, legacy=legacy).request("tools/call", tool,
                                                                version=version)
        assert got == want, (version, got, want)


@pytest.mark.parametrize("legacy", ERAS)
@pytest.mark.parametrize(("token", "tool", "control"), HIDDEN)
def test_over_http_a_hidden_tool_answers_every_pin_like_a_tool_that_does_not_exist(
        legacy: bool, token: str, tool: str, control: str) -> None:
    with http_gateway() as (real, _), http_gateway(without=frozenset({control})) as (
            absent, _), httpx.Client(timeout=10) as http:
        peers = [HttpPeer(url, http, token, legacy) for url in (real, absent)]
        if legacy:
            for peer in peers:
                assert peer.initialize().status_code == 200
        for version in PINS:
            got, want = (peer.post("tools/call", tool, version=version) for peer in peers)
            assert (got.status_code, got.content, got.headers.get("content-type")) == (
                want.status_code, want.content, want.headers.get("content-type")), version


@pytest.mark.parametrize("legacy", ERAS)
def test_a_pinned_call_runs_only_under_a_version_the_caller_may_see(legacy: bool) -> None:
    kernel = gateway().kernel
    admin = StreamPeer(kernel, "acme-admin", legacy=legacy)
    globex = StreamPeer(kernel, "globex", legacy=legacy)
    assert admin.decoded("tools/call", "vault", version="2.0.0")["error"]["data"][
        "reason"] == "schema_version_retired"
    assert StreamPeer(kernel, "acme-basic", legacy=legacy).decoded(
        "tools/call", "vault", version="2.0.0")["error"]["data"]["reason"] \
        == "schema_version_unknown"
    assert globex.decoded("tools/call", "shared", version="2.0.0")["error"]["data"][
        "reason"] == "schema_version_retired"
    assert admin.decoded("tools/call", "shared", version="2.0.0")["error"]["data"] == {
        "reason": "schema_version_unknown", "tool": "shared", "requestedVersion": "2.0.0",
        "currentVersion": "1.0.0", "action": "relist"}
    deprecated = admin.decoded("tools/call", "ledger", version="1.1.0")["result"]
    assert deprecated["structuredContent"] == {"ran": "1.1.0", "tenant": "acme"}
    assert deprecated["_meta"]["successor"] == "2.0.0"


def _migration_estate(with_successor: bool) -> Any:
    from gateway_kit import contract
    from tenant_kit import OPEN, recording_handlers

    from toolkeeper.contracts.semver import Version
    from toolkeeper.registry import Registry
    from toolkeeper.server import build_gateway
    registry = Registry.open("memory:")
    registry.publish(contract("shared", "1.0.0", OPEN))
    if with_successor:
        registry.publish(contract("shared", "2.0.0", OPEN, tenants=["globex"]))
    registry.deprecate("shared", Version.parse("1.0.0"), message="migrate",
                       successor=Version.parse("2.0.0") if with_successor else None)
    return build_gateway(registry, recording_handlers(), resolve_principal=BearerResolver())


@pytest.mark.parametrize("legacy", ERAS)
def test_a_pinned_deprecated_version_never_names_a_successor_of_another_tenant(
        legacy: bool) -> None:
    real, absent = _migration_estate(True).kernel, _migration_estate(False).kernel
    for version in (None, "1.0.0", "2.0.0", "3.0.0"):
        for method in ("tools/call", "tools/list"):
            got = StreamPeer(real, "acme-admin", legacy=legacy).request(
                method, "shared" if method == "tools/call" else None, version=version)
            want = StreamPeer(absent, "acme-admin", legacy=legacy).request(
                method, "shared" if method == "tools/call" else None, version=version)
            assert got == want, (method, version, got, want)
    pinned = StreamPeer(real, "globex", legacy=legacy).decoded("tools/call", "shared",
                                                               version="1.0.0")
    assert pinned["result"]["_meta"]["successor"] == "2.0.0"


# --- caches -----------------------------------------------------------------------------------

@pytest.mark.parametrize("cached", [False, True], ids=["fresh-objects", "same-objects"])
@pytest.mark.parametrize("legacy", ERAS)
def test_interleaved_principals_never_get_each_others_cached_route_or_view(
        legacy: bool, cached: bool) -> None:
    built = gateway(resolver=BearerResolver(cached=cached))
    peers = {token: StreamPeer(built.kernel, token, legacy=legacy)
             for token in ("acme-admin", "acme-basic", "globex", "acme-admin-twin")}
    served: dict[str, dict[str, str | None]] = {
              "acme-admin": {"vault": "2.0.1", "shared": "1.0.0", "ledger": "2.0.0"},
              "acme-admin-twin": {"vault": "2.0.1", "shared": "1.0.0", "ledger": "2.0.0"},
              "acme-basic": {"vault": "1.0.0", "shared": "1.0.0", "ledger": "2.0.0"},
              "globex": {"vault": "2.0.1", "shared": "2.0.1", "ledger": None}}
    for _ in range(3):
        for token, peer in peers.items():
            for tool, version in served[token].items():
                for pin in (None, version):
                    reply = peer.decoded("tools/call", tool, version=pin)
                    if version is None:
                        assert reply["error"]["message"] == f"Unknown tool: {tool}"
                        continue
                    assert reply["result"]["structuredContent"] == {
                        "ran": version, "tenant": TOKEN_TENANT[token]}, (token, tool, pin)
                    assert reply["result"]["_meta"]["schemaVersion"] == version
            listed = [t["name"] for t in peer.decoded("tools/list")["result"]["tools"]]
            assert ("top" in listed) is token.startswith("acme-admin")
            assert ("ledger" in listed) is token.startswith("acme")


TOKEN_TENANT = {"acme-admin": "acme", "acme-admin-twin": "acme", "acme-basic": "acme",
                "globex": "globex"}


@pytest.mark.parametrize("legacy", ERAS)
def test_over_http_interleaved_principals_each_run_their_own_served_version(
        legacy: bool) -> None:
    served = {"acme-admin": ("2.0.1", "1.0.0"), "acme-basic": ("1.0.0", "1.0.0"),
              "globex": ("2.0.1", "2.0.1"), "acme-admin-twin": ("2.0.1", "1.0.0")}
    with http_gateway(resolver=BearerResolver(cached=True)) as (url, built), \
            httpx.Client(timeout=10) as http:
        peers = {token: HttpPeer(url, http, token, legacy) for token in served}
        if legacy:
            for peer in peers.values():
                assert peer.initialize().status_code == 200
        for _ in range(2):
            for token, (vault, shared) in served.items():
                for tool, version in (("vault", vault), ("shared", shared)):
                    for pin in (None, version):
                        body = peers[token].post("tools/call", tool, version=pin).json()
                        assert body["result"]["structuredContent"] == {
                            "ran": version, "tenant": TOKEN_TENANT[token]}, (token, tool, pin)
        assert {r.principal for r in records(built)} == {"acme", "globex"}


def test_the_call_log_names_the_tenant_of_each_caller_whatever_was_cached_before() -> None:
    built = gateway(resolver=BearerResolver(cached=True))
    for token in ("acme-admin", "globex", "acme-basic", "globex"):
        StreamPeer(built.kernel, token, legacy=False).decoded("tools/call", "shared")
    assert [(r.principal, r.version) for r in records(built)] == [
        ("acme", "1.0.0"), ("globex", "2.0.1"), ("acme", "1.0.0"), ("globex", "2.0.1")]


def test_a_registry_change_re_judges_a_cached_route_for_the_principal_it_was_cached_for() -> None:
    from toolkeeper.contracts.semver import Version
    built = gateway(resolver=BearerResolver(cached=True))
    peer = StreamPeer(built.kernel, "globex", legacy=False)
    assert peer.decoded("tools/call", "shared")["result"]["_meta"]["schemaVersion"] == "2.0.1"
    built.registry.retire("shared", Version.parse("2.0.1"))
    assert peer.decoded("tools/call", "shared")["result"]["_meta"]["schemaVersion"] == "1.0.0"
    assert peer.decoded("tools/call", "shared", version="2.0.1")["error"]["data"][
        "reason"] == "schema_version_retired"


# --- legacy sessions over HTTP ----------------------------------------------------------------

@pytest.fixture
def served() -> Iterator[tuple[str, httpx.Client]]:
    with http_gateway() as (url, _), httpx.Client(timeout=10) as http:
        yield url, http


def test_a_legacy_session_of_one_tenant_is_not_found_with_another_tenants_credential(
        served: tuple[str, httpx.Client]) -> None:
    url, http = served
    acme = HttpPeer(url, http, "acme-admin", legacy=True)
    assert acme.initialize().status_code == 200
    thief = HttpPeer(url, http, "globex", legacy=True, session=acme.session)
    for response in (thief.post("tools/list"), thief.post("tools/call", "ledger"),
                     thief.post("ping")):
        assert response.status_code == 404
        assert response.json()["error"]["code"] == -32600
    # A request whose credential the resolver refuses gets that refusal before any session is
    # looked up (it learns nothing about the session), and never a result.
    anonymous = HttpPeer(url, http, None, legacy=True, session=acme.session)
    refused = anonymous.post("tools/list")
    assert "result" not in refused.json() and refused.json()["error"]["code"] == UNAUTHORIZED
    stream = http.get(url, headers=thief.headers("GET"))
    assert stream.status_code == 404
    assert http.delete(url, headers=thief.headers("DELETE")).status_code == 404
    assert acme.post("tools/list").status_code == 200  # still alive for its owner


def test_a_legacy_session_is_not_found_with_another_credential_of_the_same_tenant(
        served: tuple[str, httpx.Client]) -> None:
    url, http = served
    admin = HttpPeer(url, http, "acme-admin", legacy=True)
    assert admin.initialize().status_code == 200
    basic = HttpPeer(url, http, "acme-basic", legacy=True, session=admin.session)
    assert http.delete(url, headers=basic.headers("DELETE")).status_code == 404
    # the same tenant, scopes and clearance under another credential: still not the owner
    twin = HttpPeer(url, http, "acme-admin-twin", legacy=True, session=admin.session)
    for response in (twin.post("tools/list"), twin.post("ping")):
        assert (response.status_code, response.json()["error"]["code"]) == (404, -32600)
    assert http.get(url, headers=twin.headers("GET")).status_code == 404
    assert http.delete(url, headers=twin.headers("DELETE")).status_code == 404
    assert admin.post("tools/list").status_code == 200  # still alive for its owner


def test_legacy_initialize_with_a_refused_credential_is_refused(
        served: tuple[str, httpx.Client]) -> None:
    url, http = served
    for token in (None, "forged"):
        response = HttpPeer(url, http, token, legacy=True).initialize()
        assert "mcp-session-id" not in response.headers
        assert response.json()["error"]["code"] == UNAUTHORIZED


def test_a_session_opened_without_a_valid_credential_is_not_found_with_a_valid_one(
        served: tuple[str, httpx.Client]) -> None:
    url, http = served
    anonymous = HttpPeer(url, http, "forged", legacy=True)
    refused = anonymous.initialize()
    # No session is opened without a credential the resolver accepts, so none can be used
    # with another one.
    assert (refused.status_code, "mcp-session-id" in refused.headers) == (200, False)
    assert refused.json()["error"]["code"] == UNAUTHORIZED
    assert anonymous.session is None


def test_refused_initialize_requests_never_evict_an_authenticated_session() -> None:
    from toolkeeper.protocol import SessionTable
    with http_gateway(sessions=SessionTable(max_sessions=4)) as (url, _), \
            httpx.Client(timeout=10) as http:
        acme = HttpPeer(url, http, "acme-admin", legacy=True)
        assert acme.initialize().status_code == 200
        for _ in range(4):
            HttpPeer(url, http, None, legacy=True).initialize()
        assert acme.post("tools/list").status_code == 200


# --- resolvers that refuse, break or misbehave ------------------------------------------------

class Boom(RuntimeError):
    pass


def _raising(facts: TransportFacts) -> Principal:
    raise Boom("resolver secret: db password hunter2")


def _not_a_principal(facts: TransportFacts) -> Any:
    return {"tenant": "acme", "scopes": [], "clearance": "restricted"}


def _none(facts: TransportFacts) -> Any:
    return None


@pytest.mark.parametrize("legacy", ERAS)
def test_a_refusing_resolver_refuses_every_method_with_its_own_error_and_nothing_runs(
        legacy: bool) -> None:
    built = gateway()
    peer = StreamPeer(built.kernel, "forged", legacy=legacy)
    methods = ["tools/list", "tools/call"] + ([] if legacy else ["server/discover"])
    for method in methods:
        error = peer.decoded(method, "shared" if method == "tools/call" else None)["error"]
        assert error == {"code": UNAUTHORIZED, "message": "Unauthorized",
                         "data": {"reason": "unknown_token"}}
    assert records(built) == ()


@pytest.mark.parametrize("resolver", [_raising, _not_a_principal, _none],
                         ids=["raises", "dict", "none"])
@pytest.mark.parametrize("legacy", ERAS)
def test_a_broken_resolver_is_a_generic_internal_error_over_http_never_a_500(
        legacy: bool, resolver: Any, caplog: pytest.LogCaptureFixture) -> None:
    with http_gateway(resolver=resolver) as (url, built), httpx.Client(timeout=10) as http:
        peer = HttpPeer(url, http, "acme-admin", legacy=legacy)
        if legacy:
            opened = peer.initialize()
            assert b"hunter2" not in opened.content and b"Boom" not in opened.content
            if peer.session is None:  # it raised, at initialize already: no session
                assert (opened.status_code, opened.json()["error"]) == (
                    200, {"code": -32603, "message": "Internal error"})
                peer.session = "0" * 32  # a made-up one: the ownership check asks it too
        for method, name in (("tools/list", None), ("tools/call", "shared"),
                             ("tools/call", "nosuch")):
            response = peer.post(method, name)
            assert response.status_code in (200, 404), response.text
            if response.status_code == 200:
                assert response.json()["error"] == {"code": -32603,
                                                    "message": "Internal error"}
            assert b"hunter2" not in response.content and b"Boom" not in response.content
        assert records(built) == ()


@pytest.mark.parametrize("legacy", ERAS)
def test_a_refusing_resolver_over_http_keeps_its_code_and_leaks_no_session(
        legacy: bool) -> None:
    with http_gateway() as (url, _), httpx.Client(timeout=10) as http:
        peer = HttpPeer(url, http, None, legacy=legacy)
        if legacy:  # the refusal comes before any session is looked up
            peer.session = "0" * 32
            response = peer.post("tools/list")
            assert (response.status_code, response.json()["error"]["code"]) == (200, UNAUTHORIZED)
            assert "mcp-session-id" not in response.headers
            return
        for method, name in (("tools/list", None), ("tools/call", "ledger"),
                             ("server/discover", None)):
            response = peer.post(method, name)
            assert response.json()["error"]["code"] == UNAUTHORIZED
            assert response.status_code == 200


def test_a_modern_listen_stream_is_refused_for_an_unknown_credential() -> None:
    with http_gateway() as (url, _), httpx.Client(timeout=10) as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
            "notifications": {"toolsListChanged": True},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}}
        response = http.post(url, headers=modern_headers("subscriptions/listen", None,
                                                         "forged"), json=body)
        assert response.json()["error"]["code"] == UNAUTHORIZED


def test_an_async_resolver_is_refused_when_the_gateway_is_built() -> None:
    async def resolver(facts: Any) -> Principal:
        raise AssertionError("never called")

    with Registry.open("memory:") as registry, pytest.raises(TypeError):
        build_gateway(registry, resolve_principal=resolver)


def test_a_resolver_error_with_a_malformed_code_is_the_generic_internal_error() -> None:
    def resolver(facts: Any) -> Principal:
        raise JsonRpcError("nope", "leaky detail")  # type: ignore[arg-type]  # the author's bug

    with Registry.open("memory:") as registry:
        gateway = build_gateway(registry, resolve_principal=resolver)
        answer = Driver(gateway.kernel).request("tools/list")
    assert answer["error"] == {"code": -32603, "message": "Internal error"}
