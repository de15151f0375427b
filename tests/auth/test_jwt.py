"""JWT bearer tokens: every refusal is a 401 with the challenge and nothing about the estate;
accepted tokens map their claims to a principal; keys are pinned per type; JWKS files and
URLs are read, cached and refreshed within bounds; verification is cached per token."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from jwt_kit import (
    ISSUER,
    RESOURCE,
    SECRET,
    Auth,
    Issuer,
    claims,
    hs256_with,
    jwk_of,
    legacy_initialize,
    mint,
    modern,
    public_pem,
    rsa_key,
    served,
    unsigned,
    write_jwks,
)

from toolkeeper.auth import build_jwt, metadata_url
from toolkeeper.auth.jwks import JwksSource
from toolkeeper.auth.jwt import IssuerVerifier, JwtAuthenticator
from toolkeeper.errors import AuthenticationError, ConfigError

KEY = rsa_key()
OTHER = rsa_key()
CHALLENGE = f'Bearer error="invalid_token", resource_metadata="{metadata_url(RESOURCE)}"'
BODY = {"error": "invalid_token", "error_description": "Authentication required"}


@pytest.fixture(scope="module")
def jwks_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_jwks(tmp_path_factory.mktemp("jwks") / "jwks.json", jwk_of(KEY, "k1", "RS256"))


@pytest.fixture(scope="module")
def gateway_url(jwks_file: Path) -> Iterator[str]:
    with served(Auth(jwt_issuers=(Issuer(jwks_file=str(jwks_file)),))) as url:
        yield url


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as http:
        yield http


def _forged(**overrides: Any) -> str:
    """A token with an RS256 header, any claims (PyJWT will not encode a non-string ``iss``)
    and a signature that is not one."""
    import base64

    def part(value: dict[str, Any]) -> str:
        raw = json.dumps(value, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    return f"{part({'alg': 'RS256', 'typ': 'JWT', 'kid': 'k1'})}.{part(claims(**overrides))}.AAAA"


REFUSED: dict[str, Any] = {
    "expired": lambda: mint(KEY, exp=int(time.time()) - 3600),
    "not_yet_valid": lambda: mint(KEY, nbf=int(time.time()) + 3600),
    "wrong_issuer": lambda: mint(KEY, iss="https://evil.test"),
    "wrong_audience": lambda: mint(KEY, aud="https://other.test/mcp"),
    "bad_signature": lambda: mint(OTHER),
    "alg_none": lambda: unsigned(),
    "hs256_with_rsa_public_pem": lambda: hs256_with(public_pem(KEY)),
    "unknown_kid": lambda: mint(KEY, kid="k9"),
    "malformed": lambda: "not.a.jwt",
    "no_exp": lambda: mint(KEY, exp=None),
    "no_tenant": lambda: mint(KEY, tenant=None),
    "unknown_clearance": lambda: mint(KEY, clearance="secret-ish"),
    # An issuer claim that is not a string (unhashable, or a lookalike) is a bad issuer, signed
    # or not: a TypeError here once let a forged token past the 401.
    "iss_list": lambda: _forged(iss=[ISSUER]),
    "iss_object": lambda: _forged(iss={"iss": ISSUER}),
    "iss_number": lambda: _forged(iss=7),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_refused_token_gets_401_with_the_challenge_and_nothing_about_tools(
        gateway_url: str, client: httpx.Client, case: str) -> None:
    token = REFUSED[case]()
    for response in (modern(client, gateway_url, "tools/list", token),
                     modern(client, gateway_url, "tools/call", token, "ledger"),
                     legacy_initialize(client, gateway_url, token)):
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == CHALLENGE
        assert response.json() == BODY
        assert "mcp-session-id" not in response.headers


def test_without_a_token_every_method_gets_401_without_an_error_code(
        gateway_url: str, client: httpx.Client) -> None:
    bare = f'Bearer resource_metadata="{metadata_url(RESOURCE)}"'
    responses = [modern(client, gateway_url, "tools/list", None),
                 legacy_initialize(client, gateway_url, None),
                 client.get(gateway_url, headers={"accept": "text/event-stream",
                                                  "mcp-session-id": "0" * 32}),
                 client.delete(gateway_url, headers={"mcp-session-id": "0" * 32}),
                 client.get(gateway_url)]
    for response in responses:
        assert (response.status_code, response.headers["www-authenticate"]) == (401, bare)
        assert response.json() == BODY


@pytest.mark.parametrize("header", ["Basic abc", "Bearer", "Bearer a b", "Token x", "bearer"])
def test_a_malformed_authorization_header_is_401_invalid_token(
        gateway_url: str, client: httpx.Client, header: str) -> None:
    response = client.post(gateway_url, content=b"{}", headers={
        "authorization": header, "content-type": "application/json",
        "accept": "application/json, text/event-stream"})
    assert (response.status_code, response.headers["www-authenticate"]) == (401, CHALLENGE)


@pytest.mark.parametrize("method", ["tools/list", "tools/call"])
def test_two_authorization_headers_are_401_even_when_both_are_valid(
        gateway_url: str, client: httpx.Client, method: str) -> None:
    valid = modern(client, gateway_url, method, mint(KEY), "ledger")
    assert valid.status_code == 200
    request = valid.request
    headers = [(k, v) for k, v in request.headers.multi_items() if k != "content-length"]
    headers.append(("authorization", f"Bearer {mint(KEY, sub='someone-else')}"))
    response = client.post(gateway_url, content=request.content, headers=headers)
    assert (response.status_code, response.headers["www-authenticate"]) == (401, CHALLENGE)
    assert response.json() == BODY


def test_a_valid_token_sees_its_entitled_tools_in_both_eras_and_the_scheme_in_any_case(
        gateway_url: str, client: httpx.Client) -> None:
    basic = mint(KEY, scope="", clearance="internal", sub="basic")
    listed = modern(client, gateway_url, "tools/list", basic).json()["result"]["tools"]
    assert [tool["name"] for tool in listed] == ["ledger"]
    admin = mint(KEY, scope=["vault.admin"], clearance="confidential", sub="admin")
    response = client.post(gateway_url, content=json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}}), headers={
        "authorization": f"bEaReR {admin}", "content-type": "application/json",
        "accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/list"})
    assert [t["name"] for t in response.json()["result"]["tools"]] == ["ledger", "secret", "vault"]
    called = modern(client, gateway_url, "tools/call", basic, "ledger").json()
    assert called["result"]["structuredContent"] == {"tenant": "acme"}
    initialized = legacy_initialize(client, gateway_url, basic)
    assert initialized.status_code == 200 and initialized.headers["mcp-session-id"]


def test_a_repeated_token_is_verified_once_and_afresh_after_its_expiry() -> None:
    now = [time.time()]
    authenticator = build_jwt([_pem_issuer()], RESOURCE, clock=lambda: now[0])
    token = mint(KEY)
    principal = authenticator.authenticate(token)
    assert principal.credential == f"{ISSUER}#agent-1"
    assert authenticator.authenticate(token) is principal  # the cached verdict, no new check
    now[0] += 3600  # past exp + leeway by the cache's clock: verified afresh
    assert authenticator.authenticate(token) is not principal


_PEM: dict[str, Path] = {}


def _pem_issuer(tmp: Path | None = None) -> Issuer:
    if "rsa" not in _PEM:
        import tempfile
        path = Path(tempfile.mkdtemp()) / "rsa.pem"
        path.write_bytes(public_pem(KEY))
        _PEM["rsa"] = path
    return Issuer(public_key_file=str(_PEM["rsa"]))


@pytest.mark.parametrize(("algorithm", "make"), [
    ("ES256", lambda: ec.generate_private_key(ec.SECP256R1())),
    ("EdDSA", lambda: ed25519.Ed25519PrivateKey.generate()),
])
def test_es256_and_eddsa_verify_from_pem_and_refuse_another_algorithm(
        tmp_path: Path, algorithm: str, make: Any) -> None:
    private = make()
    (tmp_path / "k.pem").write_bytes(public_pem(private))
    issuer = Issuer(public_key_file=str(tmp_path / "k.pem"), algorithms=(algorithm,))
    authenticator = build_jwt([issuer], RESOURCE)
    assert authenticator.authenticate(mint(private, algorithm)).tenant == "acme"
    with pytest.raises(AuthenticationError) as caught:
        authenticator.authenticate(mint(KEY, "RS256"))
    assert caught.value.reason == "bad_signature"


def test_hs256_verifies_with_its_secret_file_only(tmp_path: Path) -> None:
    (tmp_path / "secret").write_bytes(SECRET + b"\n")
    authenticator = build_jwt([Issuer(secret_file=str(tmp_path / "secret"),
                                      algorithms=("HS256",))], RESOURCE)
    assert authenticator.authenticate(mint(SECRET, "HS256")).scopes == {"vault.admin"}
    with pytest.raises(AuthenticationError):
        authenticator.authenticate(mint(b"x" * 40, "HS256"))


@pytest.mark.parametrize("secret", [b"", b"k", b"x" * 31 + b"\n"], ids=["empty", "1", "31"])
def test_an_hs256_secret_shorter_than_32_bytes_is_refused_at_build(
        tmp_path: Path, secret: bytes) -> None:
    (tmp_path / "secret").write_bytes(secret)
    with pytest.raises(ConfigError) as caught:
        build_jwt([Issuer(secret_file=str(tmp_path / "secret"), algorithms=("HS256",))],
                  RESOURCE)
    assert (caught.value.code, caught.value.data["key"]) == (
        "config.key_file", "auth.jwt.issuers[0].secret_file")


def test_an_rsa_key_configured_for_hs256_is_refused_at_build(tmp_path: Path) -> None:
    (tmp_path / "rsa.pem").write_bytes(public_pem(KEY))
    with pytest.raises(ConfigError) as caught:
        build_jwt([Issuer(public_key_file=str(tmp_path / "rsa.pem"), algorithms=("HS256",))],
                  RESOURCE)
    assert caught.value.data["key"] == "auth.jwt.issuers[0].algorithms"


@pytest.mark.parametrize(("issuer", "key"), [
    (Issuer(public_key_file="/nonexistent.pem"), "auth.jwt.issuers[0].public_key_file"),
    (Issuer(jwks_file="/nonexistent.json"), "auth.jwt.issuers[0].jwks_file"),
    (Issuer(), "auth.jwt.issuers[0]"),
    (Issuer(algorithms=("none",), jwks_file="x"), "auth.jwt.issuers[0].algorithms"),
])
def test_a_bad_issuer_configuration_names_its_key(issuer: Issuer, key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build_jwt([issuer], RESOURCE)
    assert caught.value.data["key"] == key


def test_an_unknown_kid_asks_for_one_early_reread_per_interval_and_never_reads_itself(
        tmp_path: Path) -> None:
    path = write_jwks(tmp_path / "jwks.json", jwk_of(KEY, "k1"))
    now = [0.0]
    source = JwksSource(path.read_bytes, frozenset({"RS256"}), 60, clock=lambda: now[0])
    assert source.reads == 1  # the first read happens when the source is built
    for _ in range(5):
        with pytest.raises(AuthenticationError):
            source.key("k2")
    assert (source.reads, source.refresh_wanted) == (1, True)  # verification never reads
    source.refresh_now()  # what the background thread does when asked
    assert (source.reads, source.refresh_wanted) == (2, False)
    write_jwks(path, jwk_of(KEY, "k1"), jwk_of(OTHER, "k2"))
    with pytest.raises(AuthenticationError):
        source.key("k2")
    assert not source.refresh_wanted  # already looked early this interval
    now[0] = 61.0
    with pytest.raises(AuthenticationError):
        source.key("k2")
    assert source.refresh_wanted
    source.refresh_now()
    assert source.key("k2").algorithms == {"RS256"}
    path.write_text("not json")
    source.refresh_now()
    assert source.key("k2") is not None  # a failed read keeps the last good keys


class _SignallingSource(JwksSource):
    """A JWKS source that says when each read has finished (its keys swapped in or kept)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.refreshed = threading.Event()
        super().__init__(*args, **kwargs)

    def refresh_now(self) -> None:
        super().refresh_now()
        self.refreshed.set()


def test_a_stalled_jwks_read_does_not_hold_up_verification(tmp_path: Path) -> None:
    document = json.dumps({"keys": [jwk_of(KEY, "k1")]}).encode()
    gate, stalled, returned = threading.Event(), threading.Event(), threading.Event()
    documents = [document]

    def load() -> bytes:
        if len(documents) > 1:
            stalled.set()
            gate.wait(60)  # a JWKS server that answers only when the test lets it
            returned.set()
        return documents[-1]
    source = _SignallingSource(load, frozenset({"RS256"}), 1)
    source.refreshed.clear()
    authenticator = JwtAuthenticator([IssuerVerifier(Issuer(), source, RESOURCE)])
    documents.append(json.dumps({"keys": [jwk_of(KEY, "k1"), jwk_of(OTHER, "k2")]}).encode())
    source.start()
    try:
        for token in (mint(OTHER, kid="k2"), mint(KEY, kid="k9")):
            with pytest.raises(AuthenticationError) as caught:
                authenticator.authenticate(token)
            assert caught.value.reason == "unknown_key"
            assert not returned.is_set()  # answered while the read it asked for is stalled
        assert stalled.wait(30)  # the read runs, off the request
        assert authenticator.authenticate(mint(KEY, sub="during")).tenant == "acme"
        assert not returned.is_set()
    finally:
        gate.set()
    assert source.refreshed.wait(30)  # the background read finished (the test reads nothing)
    assert authenticator.authenticate(mint(OTHER, kid="k2")).tenant == "acme"


def test_a_jwks_url_unreadable_at_start_refuses_its_tokens_until_a_read_succeeds() -> None:
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    authenticator = build_jwt([Issuer(jwks_url=f"http://127.0.0.1:{port}/jwks")], RESOURCE)
    with pytest.raises(AuthenticationError) as caught:
        authenticator.authenticate(mint(KEY))
    assert caught.value.reason == "unknown_key"
    documents = [b"", json.dumps({"keys": [jwk_of(KEY, "k1")]}).encode()]
    source = JwksSource(lambda: documents[0], frozenset({"RS256"}), 300)
    assert not source.loaded and source.reads == 1
    documents.pop(0)
    source.refresh_now()  # the retry the background thread makes
    assert source.loaded and source.key("k1").algorithms == {"RS256"}


def test_a_cached_verdict_is_dropped_when_its_key_leaves_the_set(tmp_path: Path) -> None:
    path = write_jwks(tmp_path / "jwks.json", jwk_of(KEY, "k1"), jwk_of(OTHER, "k2"))
    source = JwksSource(path.read_bytes, frozenset({"RS256"}), 60)
    authenticator = JwtAuthenticator([IssuerVerifier(Issuer(), source, RESOURCE)])
    token = mint(KEY)
    assert authenticator.authenticate(token).tenant == "acme"
    write_jwks(path, jwk_of(OTHER, "k2"))  # k1 removed (compromised, say)
    source.refresh_now()
    with pytest.raises(AuthenticationError) as caught:
        authenticator.authenticate(token)
    assert caught.value.reason == "unknown_key"
    assert authenticator.authenticate(mint(OTHER, kid="k2")).tenant == "acme"


def test_two_issuers_never_share_a_credential(tmp_path: Path) -> None:
    (tmp_path / "rsa.pem").write_bytes(public_pem(KEY))
    pem = str(tmp_path / "rsa.pem")
    authenticator = build_jwt([Issuer(issuer="https://a", public_key_file=pem),
                               Issuer(issuer="https://a#x", public_key_file=pem)], RESOURCE)
    first = authenticator.authenticate(mint(KEY, iss="https://a", sub="x#y"))
    second = authenticator.authenticate(mint(KEY, iss="https://a#x", sub="y"))
    assert first.credential != second.credential
    assert first.credential == "https://a#x#y"
    assert second.credential == "https://a%23x#y"


class _JwksHandler(BaseHTTPRequestHandler):
    document: bytes = b""
    hits = 0
    asked = threading.Condition()  # notified as each read arrives

    def do_GET(self) -> None:
        with self.asked:
            type(self).hits += 1
            self.asked.notify_all()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(self.document)))
        self.end_headers()
        self.wfile.write(self.document)

    def log_message(self, format: str, *args: Any) -> None:
        return None


def test_a_jwks_url_is_fetched_cached_and_refreshed_for_a_rotated_key() -> None:
    _JwksHandler.document = json.dumps({"keys": [jwk_of(KEY, "k1")]}).encode()
    server = HTTPServer(("127.0.0.1", 0), _JwksHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/jwks"
        authenticator = build_jwt([Issuer(jwks_url=url, jwks_refresh_s=1)], RESOURCE)
        assert authenticator.authenticate(mint(KEY)).tenant == "acme"
        assert authenticator.authenticate(mint(KEY, sub="other")).tenant == "acme"
        assert _JwksHandler.hits == 1
        _JwksHandler.document = json.dumps({"keys": [jwk_of(OTHER, "k2")]}).encode()
        with pytest.raises(AuthenticationError) as caught:  # asks for an early read
            authenticator.authenticate(mint(OTHER, kid="k2"))
        assert caught.value.reason == "unknown_key"
        # The background thread reads one at a time: a third read arriving means the second
        # (the rotated set) has been taken in.
        with _JwksHandler.asked:
            assert _JwksHandler.asked.wait_for(lambda: _JwksHandler.hits >= 3, timeout=30)
        principal = authenticator.authenticate(mint(OTHER, kid="k2"))
        assert principal.tenant == "acme"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_claims_map_to_the_principal_with_list_scopes_and_least_clearance_by_default(
        tmp_path: Path) -> None:
    issuer = replace(_pem_issuer(), tenant_claim="org", scopes_claim="scp",
                     clearance_claim="level")
    authenticator = build_jwt([issuer], RESOURCE)
    principal = authenticator.authenticate(mint(KEY, org="globex", scp=["a", "b"],
                                                tenant=None, scope=None, clearance=None))
    assert (principal.tenant, principal.scopes, principal.clearance.value,
            principal.credential) == ("globex", {"a", "b"}, "public", f"{ISSUER}#agent-1")


def test_a_forged_token_is_refused_before_any_method_that_needs_no_principal(
        jwks_file: Path, client: httpx.Client) -> None:
    # A stateless legacy gateway serves initialize and ping without a session; a refused
    # credential must still get 401 for them, and for a notification.
    forged = {"authorization": f"Bearer {_forged(iss=[ISSUER])}",
              "content-type": "application/json", "accept": "application/json, text/event-stream"}
    with served(Auth(jwt_issuers=(Issuer(jwks_file=str(jwks_file)),)),
                legacy_sessions="stateless") as url:
        for body in ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                         "protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "x", "version": "1"}}},
                     {"jsonrpc": "2.0", "id": 2, "method": "ping"},
                     {"jsonrpc": "2.0", "method": "notifications/initialized"}):
            response = client.post(url, json=body, headers=forged)
            assert (response.status_code, response.json()) == (401, BODY), body
