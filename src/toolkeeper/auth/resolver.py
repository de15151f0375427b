"""Who is calling, from the request's bearer credential.

How A wires me: ``resource = auth.resource or default_resource(host, port, path)``; then
``build_resolver(auth, registry, resource=resource)`` is the gateway's ``resolve_principal``
(``build_gateway(..., resolve_principal=...)``) and
``metadata_documents(auth, resource, path)`` is the HTTP app's ``HttpConfig.documents``. For
stdio, ``stdio_principal(auth, registry)`` is the resolver. A bad key file or algorithm list
is a :class:`~toolkeeper.errors.ConfigError` naming its dotted key, raised by the build.

``Authorization: Bearer <token>`` (the scheme in any case, RFC 9110 11.1) is the only place
a credential is read (``bearer_methods_supported: ["header"]``): a token starting ``tk_`` is
an API key when ``keys`` is among ``auth.methods``
(:class:`~toolkeeper.auth.keys.KeyAuthenticator`), anything else a JWT when ``jwt`` is. With
no method configured the resolver is the anonymous :class:`~toolkeeper.server.LocalPrincipal`.
More than one ``Authorization`` header is ``malformed``, whatever they hold. A missing,
malformed, expired or unverifiable credential is an
:class:`~toolkeeper.errors.AuthenticationError` carrying the challenge that points at the
protected-resource metadata; the HTTP transport answers it 401. Each refusal is also told to
the callback :meth:`BearerResolver.observe_refusals` set (the gateway's refusal log): its
reason, the credential id when the credential was identified, and the era the request's
``MCP-Protocol-Version`` header names (None without one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from toolkeeper.auth.jwt import JwtAuthenticator, build_jwt
from toolkeeper.auth.keys import KEY_PREFIX, KeyAuthenticator, key_authenticator
from toolkeeper.auth.metadata import challenges
from toolkeeper.auth.settings import AuthSettingsLike
from toolkeeper.errors import AuthenticationError, ConfigError
from toolkeeper.observability.metrics import observe_auth_refusal
from toolkeeper.protocol import TransportFacts
from toolkeeper.protocol.versions import era_of
from toolkeeper.registry import Principal, Registry
from toolkeeper.server import LocalPrincipal, PrincipalResolver, fixed_principal

__all__ = ["METHODS", "BearerResolver", "RefusalObserver", "build_resolver", "stdio_principal"]

RefusalObserver = Callable[[str, "str | None", "str | None"], None]
"""Told of a refused credential: its reason, the credential id (None: not identified) and
the request's era (``modern``, ``legacy``, None: not known)."""

METHODS: Final = frozenset({"keys", "jwt"})
"""The values of ``auth.methods``."""


class BearerResolver:
    """``Authorization: Bearer`` -> a principal, by API key or JWT (module docstring)."""

    def __init__(self, resource: str, *, keys: KeyAuthenticator | None = None,
                 jwt: JwtAuthenticator | None = None) -> None:
        self._keys = keys
        self._jwt = jwt
        self._missing, self._invalid = challenges(resource)
        # (header, authenticate, token) of the credential read last: the same header again
        # skips its parsing and hands the authenticator that very token object, whose hash
        # its cache lookup reuses. The authenticator still judges the token on every call.
        self._last: tuple[str, Callable[[str], Principal], str] = ("", _never, "")
        self._refused: RefusalObserver | None = None

    def observe_refusals(self, observer: RefusalObserver) -> None:
        """Tell ``observer`` of every refused credential from now on."""
        self._refused = observer

    def _tell(self, exc: AuthenticationError, facts: TransportFacts) -> None:
        observe_auth_refusal(exc.reason)  # (a no-op unless metrics run)
        observer = self._refused
        if observer is not None:
            era = era_of(facts.headers.get("mcp-protocol-version"))
            observer(exc.reason, exc.credential, None if era is None else era.value)

    def __call__(self, facts: TransportFacts) -> Principal:
        headers = facts.headers
        header = headers.get("authorization")
        if header is None:
            missing = AuthenticationError("missing", token_sent=False, challenge=self._missing)
            self._tell(missing, facts)
            raise missing
        try:
            if headers.repeats("authorization"):  # which one would speak?
                raise AuthenticationError("malformed")
            last = self._last
            if header == last[0]:
                return last[1](last[2])
            return self._read(header)
        except AuthenticationError as exc:
            self._tell(exc, facts)
            raise AuthenticationError(exc.reason, challenge=self._invalid,
                                      credential=exc.credential) from None

    def _read(self, header: str) -> Principal:
        scheme, _, token = header.partition(" ")
        token = token.strip(" \t")
        if scheme.lower() != "bearer" or not token or " " in token:
            raise AuthenticationError("malformed")
        authenticate: Callable[[str], Principal] | None = None
        if token.startswith(KEY_PREFIX):
            if self._keys is not None:
                authenticate = self._keys.authenticate
        elif self._jwt is not None:
            authenticate = self._jwt.authenticate
        if authenticate is None:
            raise AuthenticationError("malformed")  # a kind of credential not accepted here
        principal = authenticate(token)
        self._last = (header, authenticate, token)
        return principal


def _never(token: str) -> Principal:
    raise AuthenticationError("malformed")  # (the empty header never matches: see __call__)


def build_resolver(auth: AuthSettingsLike, registry: Registry, *, resource: str = ""
                   ) -> PrincipalResolver:
    """The HTTP principal resolver for ``[auth]`` (``resource``: the resource URL, default
    ``auth.resource``; required when a method is configured)."""
    methods = frozenset(auth.methods)
    if methods - METHODS:
        raise ConfigError(f"unknown auth method(s) {sorted(methods - METHODS)}",
                          code="config.auth_method", data={"key": "auth.methods"})
    if not methods:
        return LocalPrincipal(registry)
    resource = resource or auth.resource
    if not resource:
        raise ConfigError("the resource URL is needed for the 401 challenge",
                          code="config.resource", data={"key": "auth.resource"})
    return BearerResolver(
        resource,
        keys=key_authenticator(registry) if "keys" in methods else None,
        jwt=build_jwt(auth.jwt_issuers, resource,
                      max_lifetime_s=auth.jwt_max_token_lifetime_s)
        if "jwt" in methods else None)


def stdio_principal(auth: AuthSettingsLike | None, registry: Registry) -> PrincipalResolver:
    """The resolver of a stdio server: the ``[auth.stdio]`` principal (credential
    ``stdio``), or the anonymous local principal when that table is absent."""
    settings = None if auth is None else auth.stdio
    if settings is None:
        return LocalPrincipal(registry)
    try:
        principal = Principal.parse(settings.tenant, settings.scopes, settings.clearance,
                                    credential="stdio")
    except Exception as exc:
        raise ConfigError(str(exc), code="config.stdio_principal",
                          data={"key": "auth.stdio"}) from None
    return fixed_principal(principal)
