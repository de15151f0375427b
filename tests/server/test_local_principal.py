"""Without authentication the caller is the local anonymous principal: every scope of the
estate, clearance restricted, tenant ``local``."""

from __future__ import annotations

from gateway_kit import contract

from toolkeeper.contracts.spec import DataClassification
from toolkeeper.protocol import TransportFacts
from toolkeeper.registry import Registry
from toolkeeper.server import LocalPrincipal, build_gateway


def test_the_local_principal_holds_every_scope_and_follows_registry_changes(
        registry: Registry) -> None:
    resolve = LocalPrincipal(registry)
    principal = resolve(TransportFacts("http"))
    assert (principal.tenant, principal.scopes, principal.clearance) == \
        ("local", frozenset({"vault.admin"}), DataClassification.RESTRICTED)
    registry.publish(contract("x", "1.0.0", {"type": "object"}, requiredScopes=["x.use"]))
    assert resolve(TransportFacts("http")).scopes == {"vault.admin", "x.use"}


def test_the_default_gateway_shows_the_whole_estate(registry: Registry) -> None:
    gateway = build_gateway(registry)
    names = [s.name for s in gateway.views.view(gateway.resolve_principal(
        TransportFacts("stdio"))).specs]
    assert names == ["calc", "secret", "vault"]
