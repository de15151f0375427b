"""What the auth features read of the configuration: ``[auth]``, ``[auth.stdio]`` and
``[[auth.jwt.issuers]]`` (field names are the TOML keys).

These are read-only protocols, not dataclasses of their own: the configuration loader's frozen
values (:mod:`toolkeeper.config.model`) satisfy them as they are, so one definition of each key
exists, and a test can pass any object with the same attributes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

__all__ = ["AuthSettingsLike", "JwtIssuerSettingsLike", "StdioSettingsLike"]


class JwtIssuerSettingsLike(Protocol):
    """One ``[[auth.jwt.issuers]]`` table."""

    @property
    def issuer(self) -> str: ...
    @property
    def audience(self) -> str: ...
    @property
    def algorithms(self) -> Sequence[str]: ...
    @property
    def secret_file(self) -> str: ...
    @property
    def public_key_file(self) -> str: ...
    @property
    def jwks_file(self) -> str: ...
    @property
    def jwks_url(self) -> str: ...
    @property
    def jwks_refresh_s(self) -> int: ...
    @property
    def leeway_s(self) -> int: ...
    @property
    def tenant_claim(self) -> str: ...
    @property
    def scopes_claim(self) -> str: ...
    @property
    def clearance_claim(self) -> str: ...


class StdioSettingsLike(Protocol):
    """``[auth.stdio]``."""

    @property
    def tenant(self) -> str: ...
    @property
    def scopes(self) -> Sequence[str]: ...
    @property
    def clearance(self) -> str: ...


class AuthSettingsLike(Protocol):
    """``[auth]`` with its sub-tables (``stdio`` None when ``[auth.stdio]`` is absent)."""

    @property
    def methods(self) -> Sequence[str]: ...
    @property
    def resource(self) -> str: ...
    @property
    def authorization_servers(self) -> Sequence[str]: ...
    @property
    def scopes_supported(self) -> Sequence[str]: ...
    @property
    def stdio(self) -> StdioSettingsLike | None: ...
    @property
    def jwt_issuers(self) -> Sequence[JwtIssuerSettingsLike]: ...
