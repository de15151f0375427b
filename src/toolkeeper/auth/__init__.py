"""Principals from credentials: API keys (:mod:`~toolkeeper.auth.keys`), JWT bearer tokens
(:mod:`~toolkeeper.auth.jwt`), the resolver that reads them from ``Authorization``
(:mod:`~toolkeeper.auth.resolver`, which says how ``serve`` wires it) and the RFC 9728
protected-resource metadata (:mod:`~toolkeeper.auth.metadata`)."""

from __future__ import annotations

from typing import Final

from toolkeeper.auth.jwt import JwtAuthenticator, build_jwt
from toolkeeper.auth.metadata import (
    challenges,
    default_resource,
    metadata_documents,
    metadata_url,
    resource_metadata,
)
from toolkeeper.auth.resolver import METHODS, BearerResolver, build_resolver, stdio_principal
from toolkeeper.auth.settings import AuthSettingsLike, JwtIssuerSettingsLike, StdioSettingsLike

__all__ = [
    "METHODS",
    "REASONS",
    "AuthSettingsLike",
    "BearerResolver",
    "JwtAuthenticator",
    "JwtIssuerSettingsLike",
    "StdioSettingsLike",
    "build_jwt",
    "build_resolver",
    "challenges",
    "default_resource",
    "metadata_documents",
    "metadata_url",
    "resource_metadata",
    "stdio_principal",
]

REASONS: Final = frozenset({
    "missing", "malformed", "expired", "not_yet_valid", "bad_issuer", "bad_audience",
    "bad_signature", "unknown_key", "revoked", "bad_claims", "duplicate_claim",
    "bad_time_claim", "lifetime_too_long", "tenant_not_allowed",
})
"""Every :class:`~toolkeeper.errors.AuthenticationError` reason (a closed set: metrics may
label by it)."""
