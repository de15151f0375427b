"""Development tokens: a JWT signed with a key this process holds for a configured issuer,
carrying what the gateway's strict checks require (:mod:`toolkeeper.auth.jwt`).

An issuer has a *local key* when its ``secret_file`` is set (HS256, the gateway verifies with
the same secret) or its ``private_key_file`` is (a PEM private key: RSA signs RS256, P-256
ES256, Ed25519/Ed448 EdDSA; the gateway never reads it and verifies with the issuer's
``public_key_file``, ``jwks_file`` or ``jwks_url``). The private key's public half must be the
``public_key_file``'s key, or a key of the ``jwks_file`` (whose ``kid`` the token names); a
``jwks_url`` is not fetched, and the token names the ``kid`` given, if any. The algorithm is
the one the key's type signs, and the issuer must accept it.

The claims: ``iss``, ``sub``, ``aud`` (the issuer's audience, else the gateway's resource
URL), ``iat``, ``nbf``, ``exp`` (``iat`` plus a lifetime no longer than the issuer's
``max_token_lifetime_s``), ``jti``, and the issuer's tenant, scopes (space-separated) and
clearance claims. The tenant must be one the issuer may name (``tenants``) and the
principal must parse (:meth:`~toolkeeper.registry.Principal.parse`).

Refusals are :class:`~toolkeeper.errors.ToolkeeperError` with a stable code:
``token.no_local_key`` (no secret or private key, or none fits the issuer's algorithms),
``token.key_unreadable`` (the file cannot be read, or is not a PEM private key),
``token.key_mismatch`` (its public half is not a key the gateway verifies with),
``token.lifetime_too_long``, ``token.tenant_not_allowed``, and the principal's own codes.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    PublicFormat,
    load_pem_private_key,
    load_pem_public_key,
)
from jwt import PyJWK

from toolkeeper.auth.jwks import MIN_SECRET_BYTES
from toolkeeper.auth.settings import JwtIssuerSettingsLike
from toolkeeper.errors import ToolkeeperError
from toolkeeper.registry import Principal

__all__ = ["DevToken", "SigningKey", "mint_dev_token", "signing_key"]

_NO_KEY: Final = "token.no_local_key"


@dataclass(frozen=True, slots=True)
class SigningKey:
    """The key a development token is signed with, its algorithm and the ``kid`` named."""

    key: Any
    algorithm: str
    kid: str | None


@dataclass(frozen=True, slots=True)
class DevToken:
    """A minted token and what it carries."""

    token: str
    header: dict[str, Any]
    claims: dict[str, Any]


def _private_algorithm(key: Any) -> str | None:
    if isinstance(key, rsa.RSAPrivateKey):
        return "RS256"
    if isinstance(key, ec.EllipticCurvePrivateKey):
        return "ES256" if isinstance(key.curve, ec.SECP256R1) else None
    if isinstance(key, ed25519.Ed25519PrivateKey | ed448.Ed448PrivateKey):
        return "EdDSA"
    return None


def _spki(public_key: Any) -> bytes:
    data: bytes = public_key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    return data


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError:
        raise ToolkeeperError(f"the issuer's {what} cannot be read", code="token.key_unreadable",
                              data={"key": what}) from None


def _jwks_kid(path: str, public: bytes) -> str | None:
    """The ``kid`` of the JWKS file's key that is ``public`` (SPKI DER)."""
    try:
        document = json.loads(_read(path, "jwks_file"))
        entries = document["keys"]
    except (ValueError, KeyError, TypeError):
        raise ToolkeeperError("the issuer's jwks_file is not a JWKS", code="token.key_unreadable",
                              data={"key": "jwks_file"}) from None
    for entry in entries if isinstance(entries, list) else []:
        try:
            candidate = PyJWK(entry).key
        except Exception:
            continue
        if not isinstance(candidate, bytes) and _spki(candidate) == public:
            kid = entry.get("kid")
            return kid if isinstance(kid, str) else None
    raise ToolkeeperError("the private key is not a key of the issuer's jwks_file",
                          code="token.key_mismatch", data={"key": "private_key_file"})


def _asymmetric(issuer: JwtIssuerSettingsLike, path: str, kid: str | None) -> SigningKey:
    try:
        key = load_pem_private_key(_read(path, "private_key_file"), password=None)
    except (ValueError, TypeError):
        raise ToolkeeperError("the issuer's private_key_file is not an unencrypted PEM "
                              "private key", code="token.key_unreadable",
                              data={"key": "private_key_file"}) from None
    algorithm = _private_algorithm(key)
    if algorithm is None or algorithm not in issuer.algorithms:
        raise ToolkeeperError(f"the private key signs {algorithm or 'no supported algorithm'}, "
                              f"which the issuer does not accept", code=_NO_KEY,
                              data={"algorithms": sorted(issuer.algorithms)})
    public = _spki(key.public_key())
    if issuer.public_key_file:
        try:
            verifying = load_pem_public_key(_read(issuer.public_key_file, "public_key_file"))
        except ValueError:
            raise ToolkeeperError("the issuer's public_key_file is not a PEM public key",
                                  code="token.key_unreadable",
                                  data={"key": "public_key_file"}) from None
        if _spki(verifying) != public:
            raise ToolkeeperError("the private key is not the issuer's public_key_file's",
                                  code="token.key_mismatch", data={"key": "private_key_file"})
    elif issuer.jwks_file:
        kid = _jwks_kid(issuer.jwks_file, public) if kid is None else kid
    return SigningKey(key, algorithm, kid)


def signing_key(issuer: JwtIssuerSettingsLike, *, kid: str | None = None) -> SigningKey:
    """The local key of ``issuer`` (module docstring)."""
    private = getattr(issuer, "private_key_file", "")
    if private:
        return _asymmetric(issuer, private, kid)
    if issuer.secret_file and "HS256" in issuer.algorithms:
        secret = _read(issuer.secret_file, "secret_file").strip()
        if len(secret) < MIN_SECRET_BYTES:
            raise ToolkeeperError(f"an HS256 secret needs at least {MIN_SECRET_BYTES} bytes",
                                  code="token.key_unreadable", data={"key": "secret_file"})
        return SigningKey(secret, "HS256", kid)
    raise ToolkeeperError(f"issuer {issuer.issuer!r} has no local key to sign with "
                          "(set its private_key_file, or an HS256 secret_file)", code=_NO_KEY,
                          data={"issuer": issuer.issuer})


def mint_dev_token(issuer: JwtIssuerSettingsLike, *, audience: str, tenant: str,
                   scopes: tuple[str, ...], clearance: str, subject: str, lifetime_s: int,
                   max_lifetime_s: int, now: int, kid: str | None = None) -> DevToken:
    """A token of ``issuer`` for the principal given, signed with its local key."""
    own = getattr(issuer, "max_token_lifetime_s", None)
    longest = int(own) if own is not None else max_lifetime_s
    if lifetime_s > longest:
        raise ToolkeeperError(f"a lifetime of {lifetime_s} s exceeds the issuer's "
                              f"max_token_lifetime_s ({longest} s)",
                              code="token.lifetime_too_long",
                              data={"lifetime_s": lifetime_s, "max_token_lifetime_s": longest})
    allowed = getattr(issuer, "tenants", None)
    if allowed is not None and tenant not in allowed:
        raise ToolkeeperError(f"issuer {issuer.issuer!r} may not name tenant {tenant!r}",
                              code="token.tenant_not_allowed",
                              data={"tenant": tenant, "tenants": list(allowed)})
    Principal.parse(tenant, scopes, clearance)  # the gateway's own check of the claims
    key = signing_key(issuer, kid=kid)
    claims: dict[str, Any] = {
        "iss": issuer.issuer, "sub": subject, "aud": audience, "iat": now, "nbf": now,
        "exp": now + lifetime_s, "jti": secrets.token_hex(16),
        issuer.tenant_claim: tenant, issuer.scopes_claim: " ".join(scopes),
        issuer.clearance_claim: clearance,
    }
    header: dict[str, Any] = {"alg": key.algorithm, "typ": "JWT"}
    if key.kid is not None:
        header["kid"] = key.kid
    token = jwt.encode(claims, key.key, algorithm=key.algorithm,
                       headers={"kid": key.kid} if key.kid is not None else None)
    return DevToken(token, header, claims)
