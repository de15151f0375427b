"""Principals are parsed strictly: nothing about who is asking is ever defaulted."""

from __future__ import annotations

import pytest

import toolkeeper.registry
from toolkeeper.contracts.spec import DataClassification
from toolkeeper.errors import PrincipalError
from toolkeeper.registry import Principal


def test_a_principal_parses_tenant_scopes_and_clearance() -> None:
    principal = Principal.parse("acme", ["b", "a", "a"], "confidential")
    assert principal == Principal("acme", frozenset({"a", "b"}),
                                  DataClassification.CONFIDENTIAL)


@pytest.mark.parametrize(("tenant", "scopes", "clearance", "code"), [
    ("acme", [], "Confidential", "principal.clearance_unknown"),
    ("acme", [], "", "principal.clearance_unknown"),
    ("", [], "public", "principal.tenant_invalid"),
    ("  ", [], "public", "principal.tenant_invalid"),
    ("acme", ["ok", ""], "public", "principal.scope_invalid"),
])
def test_a_malformed_principal_is_refused_with_a_stable_code(
        tenant: str, scopes: list[str], clearance: str, code: str) -> None:
    with pytest.raises(PrincipalError) as info:
        Principal.parse(tenant, scopes, clearance)
    assert info.value.code == code


def test_the_registry_public_surface_is_pinned() -> None:
    assert sorted(toolkeeper.registry.__all__) == sorted([
        "PUBLISH_RULES", "AuditEntry", "MemoryStore", "Principal", "PublishOutcome", "Registry",
        "RegistryStore", "Snapshot", "StoreTransaction", "default_url", "is_visible",
        "open_store",
    ])
    for name in toolkeeper.registry.__all__:
        assert hasattr(toolkeeper.registry, name), name
