"""JWT bearer tokens verified with configured keys (PyJWT; RFC 7519, RFC 8725, RFC 8707).

A token is accepted when its ``iss`` is a configured issuer, its header's ``alg`` is one of
that issuer's algorithms *and* the one its key type verifies (:mod:`toolkeeper.auth.jwks`;
``none`` never is), its signature verifies, its ``aud`` holds the issuer's audience (by default
the gateway's resource URL, RFC 8707), and ``exp`` (required) and ``nbf`` hold within
``leeway_s``. The payload is read strictly (:mod:`toolkeeper.auth.jwt_claims`: a member
named twice, or a time claim that is not a JSON number, is refused), and a token whose
lifetime (``exp - iat``, else ``exp - now``) exceeds ``max_token_lifetime_s`` (the issuer's,
else ``auth.jwt.max_token_lifetime_s``, default 24 h) is refused. An issuer configured with
``tenants`` may name only those (``tenant_not_allowed``); one without the list may name any
tenant. Its claims map to a :class:`~toolkeeper.registry.Principal`: tenant from
``tenant_claim``, scopes from ``scopes_claim`` (a space-separated string, or a list of
strings), clearance from ``clearance_claim`` (absent: ``public``, the least), credential
``iss#sub`` (``sub`` required) with ``%`` and ``#`` in ``iss`` percent-encoded, so the first
``#`` always ends the issuer and two issuers' subjects never share a credential (it keys
session ownership and rate limits).

Verification is cached per token until its ``exp`` (plus the leeway it was accepted with), in
a bounded table that drops its oldest entry when full: a repeated token costs a dictionary
lookup, a clock read and a look at the issuer's key set generation, not a signature check;
a verdict reached under an older key set (a key since removed from a JWKS) is verified
afresh. Refusals are
:class:`~toolkeeper.errors.AuthenticationError` with one reason per PyJWT failure
(:data:`_REASONS`, a table).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import jwt

from toolkeeper.auth.jwks import JwksSource, KeySource, StaticKeys, fetch_url
from toolkeeper.auth.jwt_claims import (
    DEFAULT_MAX_LIFETIME_S,
    DuplicateClaimError,
    StrictJWT,
    TimeClaimError,
    lifetime_exceeded,
)
from toolkeeper.auth.settings import JwtIssuerSettingsLike
from toolkeeper.errors import AuthenticationError, ConfigError, PrincipalError
from toolkeeper.registry import Principal

__all__ = ["SUPPORTED_ALGORITHMS", "IssuerVerifier", "JwtAuthenticator", "build_jwt"]

SUPPORTED_ALGORITHMS: Final = frozenset({"HS256", "RS256", "ES256", "EdDSA"})
_CACHE_SIZE: Final = 4096
_JWT: Final = StrictJWT()
_log = logging.getLogger("toolkeeper.auth")

_REASONS: Final[tuple[tuple[type[Exception], str], ...]] = (
    (DuplicateClaimError, "duplicate_claim"),
    (TimeClaimError, "bad_time_claim"),
    (jwt.ExpiredSignatureError, "expired"),
    (jwt.ImmatureSignatureError, "not_yet_valid"),
    (jwt.InvalidIssuerError, "bad_issuer"),
    (jwt.InvalidAudienceError, "bad_audience"),
    (jwt.InvalidSignatureError, "bad_signature"),
    (jwt.InvalidAlgorithmError, "bad_signature"),
    (jwt.MissingRequiredClaimError, "bad_claims"),
    (jwt.InvalidTokenError, "malformed"),
)
"""PyJWT's failure -> the refusal's reason; the first row the exception is an instance of
wins (subclasses first: InvalidSignatureError is a DecodeError, all are InvalidTokenError)."""


def _reason(exc: Exception) -> str:
    for kind, reason in _REASONS:
        if isinstance(exc, kind):
            return reason
    return "malformed"


class IssuerVerifier:
    """One ``[[auth.jwt.issuers]]``: its keys, audience, leeway and claim mapping."""

    def __init__(self, settings: JwtIssuerSettingsLike, keys: KeySource, audience: str, *,
                 max_lifetime_s: int = DEFAULT_MAX_LIFETIME_S) -> None:
        self.issuer = settings.issuer
        self.audience = audience
        self.algorithms = frozenset(settings.algorithms)
        self.leeway_s = max(0, int(settings.leeway_s))
        own = getattr(settings, "max_token_lifetime_s", None)
        self.max_lifetime_s = int(own) if own is not None else max_lifetime_s
        named = getattr(settings, "tenants", None)
        self.tenants = None if named is None else frozenset(named)
        """The tenants this issuer may name; None: any."""
        self._keys = keys
        self._claims = (settings.tenant_claim, settings.scopes_claim, settings.clearance_claim)
        self._credential_prefix = self.issuer.replace("%", "%25").replace("#", "%23")

    @property
    def keys(self) -> KeySource:
        """Where this issuer's keys come from (its ``generation`` dates cached verdicts)."""
        return self._keys

    def verify(self, token: str, algorithm: str, kid: str | None, *, now: float | None = None
               ) -> tuple[Principal, float]:
        """The principal and the epoch second until which the verdict holds (``now``: the
        clock the lifetime is measured by when the token has no ``iat``)."""
        if algorithm not in self.algorithms:
            raise AuthenticationError("bad_signature")
        key = self._keys.key(kid)
        if algorithm not in key.algorithms:  # pinned by key type: the token cannot choose
            raise AuthenticationError("bad_signature")
        try:
            claims = _JWT.decode(token, key.key, algorithms=[algorithm],
                                 audience=self.audience, issuer=self.issuer,
                                 leeway=self.leeway_s,
                                 options={"require": ["exp", "iss", "aud", "sub"]})
        except jwt.PyJWTError as exc:
            raise AuthenticationError(_reason(exc)) from None
        if lifetime_exceeded(claims, self.max_lifetime_s,
                             now=time.time() if now is None else now, leeway_s=self.leeway_s):
            raise AuthenticationError("lifetime_too_long", credential=self._credential(claims))
        return self._principal(claims), float(claims["exp"]) + self.leeway_s

    def _credential(self, claims: Mapping[str, Any]) -> str | None:
        """The credential id of verified ``claims`` (``iss#sub``), for the refusal log."""
        sub = claims.get("sub")
        return f"{self._credential_prefix}#{sub}" if isinstance(sub, str) and sub else None

    def _principal(self, claims: Mapping[str, Any]) -> Principal:
        tenant_claim, scopes_claim, clearance_claim = self._claims
        scopes = claims.get(scopes_claim, ())
        if isinstance(scopes, str):
            scopes = scopes.split()
        clearance = claims.get(clearance_claim, "public")
        sub, tenant = claims.get("sub"), claims.get(tenant_claim)
        if (not isinstance(scopes, list | tuple) or not isinstance(clearance, str)
                or not isinstance(sub, str) or not sub or not isinstance(tenant, str)):
            raise AuthenticationError("bad_claims")
        if self.tenants is not None and tenant not in self.tenants:
            raise AuthenticationError("tenant_not_allowed", credential=self._credential(claims))
        try:
            return Principal.parse(tenant, scopes, clearance,
                                   credential=f"{self._credential_prefix}#{sub}")
        except PrincipalError:
            raise AuthenticationError("bad_claims") from None


class JwtAuthenticator:
    """Tokens of any configured issuer to principals, cached per token (module docstring)."""

    def __init__(self, issuers: Sequence[IssuerVerifier], *,
                 clock: Callable[[], float] = time.time, cache_size: int = _CACHE_SIZE) -> None:
        self._issuers = {issuer.issuer: issuer for issuer in issuers}
        self._clock = clock
        self._cache_size = max(1, cache_size)
        # token -> (principal, valid until, the issuer's key source, its generation then)
        self._cache: dict[str, tuple[Principal, float, KeySource, int]] = {}

    def authenticate(self, token: str) -> Principal:
        cached = self._cache.get(token)
        if cached is not None:
            if self._clock() < cached[1] and cached[2].generation == cached[3]:
                return cached[0]
            self._cache.pop(token, None)
        issuer, algorithm, kid = self._issuer_of(token)
        generation = issuer.keys.generation  # before the keys are read: a change moves it
        principal, until = issuer.verify(token, algorithm, kid, now=self._clock())
        cache = self._cache
        if len(cache) >= self._cache_size:
            cache.pop(next(iter(cache), ""), None)  # the oldest entry
        cache[token] = (principal, until, issuer.keys, generation)
        return principal

    def _issuer_of(self, token: str) -> tuple[IssuerVerifier, str, str | None]:
        try:
            header = jwt.get_unverified_header(token)
            # PyJWT's own reading, only to find the issuer: the strict one runs in verify,
            # after the signature, so a signed token is refused for what is wrong with it.
            claims = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            raise AuthenticationError("malformed") from None
        algorithm, kid = header.get("alg"), header.get("kid")
        if not isinstance(algorithm, str) or algorithm not in SUPPORTED_ALGORITHMS:
            raise AuthenticationError("bad_signature")  # alg none, or one never configured
        named = claims.get("iss")
        issuer = self._issuers.get(named) if isinstance(named, str) else None
        if issuer is None:
            raise AuthenticationError("bad_issuer")
        return issuer, algorithm, kid if isinstance(kid, str) else None


def build_jwt(issuers: Sequence[JwtIssuerSettingsLike], resource: str, *,
              clock: Callable[[], float] = time.time,
              max_lifetime_s: int = DEFAULT_MAX_LIFETIME_S) -> JwtAuthenticator:
    """The authenticator for ``[[auth.jwt.issuers]]`` (keys read now; a bad one is a
    :class:`~toolkeeper.errors.ConfigError` naming its dotted key). ``max_lifetime_s``: the
    longest lifetime of a token of an issuer that sets none of its own. With more than one
    issuer, each that names no ``tenants`` is said once in the log (WARNING): it may name any
    tenant, another issuer's too."""
    verifiers = []
    for index, settings in enumerate(issuers):
        where = f"auth.jwt.issuers[{index}]"
        allowed = frozenset(settings.algorithms)
        unknown = allowed - SUPPORTED_ALGORITHMS
        if unknown or not allowed:
            raise ConfigError(f"algorithms must be a non-empty subset of "
                              f"{sorted(SUPPORTED_ALGORITHMS)}", code="config.algorithm",
                              data={"key": f"{where}.algorithms"})
        audience = settings.audience or resource
        if not audience:
            raise ConfigError("no audience: set it, or auth.resource", code="config.audience",
                              data={"key": f"{where}.audience"})
        tenants = getattr(settings, "tenants", None)
        if tenants is not None and not tenants:
            raise ConfigError("tenants names no tenant (omit it to allow any)",
                              code="config.bad_value", data={"key": f"{where}.tenants"})
        if tenants is None and len(issuers) > 1:
            _log.warning("%s.tenants is not set: its tokens may name any tenant", where)
        verifiers.append(IssuerVerifier(settings, _key_source(settings, allowed, where),
                                        audience, max_lifetime_s=max_lifetime_s))
    return JwtAuthenticator(verifiers, clock=clock)


def _key_source(settings: JwtIssuerSettingsLike, allowed: frozenset[str], where: str
                ) -> KeySource:
    sources = [name for name in ("secret_file", "public_key_file", "jwks_file", "jwks_url")
               if getattr(settings, name)]
    if len(sources) != 1:
        raise ConfigError("exactly one of secret_file, public_key_file, jwks_file, jwks_url",
                          code="config.key_source", data={"key": where})
    if settings.secret_file:
        return StaticKeys.from_secret_file(settings.secret_file, allowed, where)
    if settings.public_key_file:
        return StaticKeys.from_pem_file(settings.public_key_file, allowed, where)
    if settings.jwks_file:
        path = settings.jwks_file
        try:
            _read_file(path)
        except OSError:
            raise ConfigError("the key file cannot be read", code="config.key_file",
                              data={"key": f"{where}.jwks_file"}) from None
        source = JwksSource(lambda: _read_file(path), allowed, settings.jwks_refresh_s,
                            name=f"{where}.jwks_file")
    else:
        source = JwksSource(fetch_url(settings.jwks_url), allowed, settings.jwks_refresh_s,
                            name=f"{where}.jwks_url")
    source.start()
    return source


def _read_file(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()
