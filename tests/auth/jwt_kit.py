"""Test kit for JWT and the 401 path: keys, token minting, settings values, a small estate and
a gateway served over real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from toolkeeper.auth import build_resolver, default_resource, metadata_documents
from toolkeeper.config.model import AuthSettings, JwtIssuerSettings, StdioPrincipalSettings
from toolkeeper.contracts import spec_from_mapping
from toolkeeper.registry import Registry
from toolkeeper.server import ToolHandlers, build_gateway
from toolkeeper.transports import HttpConfig, create_asgi_app, serve_in_thread

ISSUER = "https://idp.test"
RESOURCE = "https://gw.test/mcp"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ACCEPT = "application/json, text/event-stream"
SECRET = b"an-hs256-shared-secret-of-32-bytes-or-more!"


# The configuration's own settings types, with this kit's defaults (one issuer, JWT on).
Stdio = StdioPrincipalSettings


def Issuer(**fields: Any) -> JwtIssuerSettings:
    return JwtIssuerSettings(**{"issuer": ISSUER, **fields})


def Auth(**fields: Any) -> AuthSettings:
    return AuthSettings(**{"methods": ("jwt",), "resource": RESOURCE,
                           "authorization_servers": (ISSUER,),
                           "scopes_supported": ("vault.admin",), **fields})


def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def public_pem(private: Any) -> bytes:
    pem: bytes = private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return pem


def jwk_of(private: Any, kid: str, alg: str | None = None) -> dict[str, Any]:
    algorithm = {rsa.RSAPrivateKey: jwt.algorithms.RSAAlgorithm,
                 ec.EllipticCurvePrivateKey: jwt.algorithms.ECAlgorithm,
                 ed25519.Ed25519PrivateKey: jwt.algorithms.OKPAlgorithm}
    for kind, family in algorithm.items():
        if isinstance(private, kind):
            out: dict[str, Any] = json.loads(family.to_jwk(private.public_key()))  # type: ignore[attr-defined]
            out["kid"] = kid
            if alg is not None:
                out["alg"] = alg
            return out
    raise TypeError(private)


def write_jwks(path: Path, *keys: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"keys": list(keys)}))
    return path


def claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    out: dict[str, Any] = {"iss": ISSUER, "aud": RESOURCE, "sub": "agent-1", "tenant": "acme",
                           "scope": "vault.admin", "clearance": "restricted",
                           "iat": now, "exp": now + 600}
    out.update(overrides)
    return {k: v for k, v in out.items() if v is not None}


def mint(key: Any, algorithm: str = "RS256", kid: str | None = "k1", **overrides: Any) -> str:
    headers = {} if kid is None else {"kid": kid}
    return jwt.encode(claims(**overrides), key, algorithm=algorithm, headers=headers)


def unsigned(**overrides: Any) -> str:
    """An ``alg: none`` token (PyJWT will not make one with a key)."""
    import base64

    def part(value: dict[str, Any]) -> str:
        raw = json.dumps(value, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    return f"{part({'alg': 'none', 'typ': 'JWT', 'kid': 'k1'})}.{part(claims(**overrides))}."


def hs256_with(secret: bytes, **overrides: Any) -> str:
    """An HS256 token signed with ``secret`` as the HMAC key (bypassing PyJWT's refusal of
    PEM-looking secrets, as an attacker's tool would)."""
    import base64
    import hashlib
    import hmac

    def b64(raw: bytes) -> str:
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    head = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "k1"}).encode())
    body = b64(json.dumps(claims(**overrides)).encode())
    signature = hmac.new(secret, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(signature)}"


def estate(registry: Registry, names: Sequence[str] = ("ledger", "vault", "secret")) -> Registry:
    """``ledger``: acme only; ``vault``: needs scope vault.admin; ``secret``: confidential."""
    fields: dict[str, dict[str, Any]] = {
        "ledger": {"tenants": ["acme"]},
        "vault": {"requiredScopes": ["vault.admin"]},
        "secret": {"dataClassification": "confidential"},
        "open": {},
    }
    for name in names:
        registry.publish(spec_from_mapping({
            "name": name, "version": "1.0.0", "title": name.title(),
            "description": f"The {name} tool.", "sideEffect": "read",
            "dataClassification": "internal",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}},
            **fields.get(name, {})}))
    return registry


def handlers(names: Sequence[str] = ("ledger", "vault", "secret", "open")) -> ToolHandlers:
    out = ToolHandlers()
    for name in names:
        out.bind(name, lambda arguments, ctx: {"tenant": ctx.principal.tenant})
    return out


@contextmanager
def served(auth: Auth, registry: Registry | None = None, **gateway_options: Any
           ) -> Iterator[str]:
    """The gateway with ``auth`` (and ``build_gateway`` options) over real HTTP on 127.0.0.1;
    yields the endpoint URL."""
    registry = registry if registry is not None else estate(Registry.open("memory:"))
    resource = auth.resource or default_resource("127.0.0.1", 8000, "/mcp")
    resolver = build_resolver(auth, registry, resource=resource)
    gateway = build_gateway(registry, handlers(), resolve_principal=resolver, **gateway_options)
    config = HttpConfig(documents=metadata_documents(auth, resource, "/mcp"))
    with serve_in_thread(create_asgi_app(gateway.kernel, config)) as running:
        yield running.url


def modern(client: httpx.Client, url: str, method: str, token: str | None,
           name: str | None = None, request_id: int = 1) -> httpx.Response:
    headers = {"accept": ACCEPT, "content-type": "application/json",
               "mcp-protocol-version": MODERN, "mcp-method": method}
    params: dict[str, Any] = {"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                                        "io.modelcontextprotocol/clientCapabilities": {}}}
    if name is not None:
        headers["mcp-name"] = name
        params.update(name=name, arguments={"a": 1})
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return client.post(url, content=json.dumps(body), headers=headers)


def legacy_initialize(client: httpx.Client, url: str, token: str | None) -> httpx.Response:
    headers = {"accept": ACCEPT, "content-type": "application/json"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    return client.post(url, content=json.dumps(body), headers=headers)


def signed_raw(key: Any, payload: str, algorithm: str = "RS256", kid: str = "k1") -> str:
    """A token whose payload is ``payload`` verbatim (JSON text PyJWT would never write:
    duplicate members, a string ``exp``, ``1e400``), properly signed with ``key``."""
    return jwt.api_jws.PyJWS().encode(payload.encode(), key, algorithm=algorithm,
                                      headers={"kid": kid, "typ": "JWT"})


def raw_claims(**overrides: Any) -> str:
    """:func:`claims` as JSON text, with each override's value spliced in as JSON text (so
    ``exp='"123"'`` is a string and ``exp="1e400"`` a literal)."""
    base = claims()
    for name in overrides:
        base.pop(name, None)
    text = json.dumps(base)[:-1]
    extra = "".join(f', "{name}": {value}' for name, value in overrides.items())
    return text + extra + "}"
