"""First-cut behaviour of the in-memory registry (the full contract suite runs every backend)."""

from __future__ import annotations

import pytest
from specs import make_spec

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import Status
from toolkeeper.errors import PublishRefusedError
from toolkeeper.registry import Principal, Registry


def test_publish_returns_the_stored_record_and_republish_is_a_no_op() -> None:
    registry = Registry.open("memory:")
    stored = registry.publish(make_spec(), actor="alice")
    assert stored.status is Status.ACTIVE and stored.publisher == "alice"
    assert stored.published_at is not None
    assert registry.publish(make_spec(), actor="bob") == stored
    assert registry.latest("payments.lookup") == stored


def test_different_content_under_a_published_version_is_refused_as_immutable() -> None:
    registry = Registry.open("memory:")
    registry.publish(make_spec())
    with pytest.raises(PublishRefusedError) as info:
        registry.publish(make_spec(description="changed"))
    assert info.value.code == "publish.immutable"


def test_discovery_offers_the_newest_version_the_principal_may_see() -> None:
    registry = Registry.open("memory:")
    registry.publish(make_spec(version="1.0.0"))
    registry.publish(make_spec(version="2.0.0", requiredScopes=["payments.admin"],
                               inputSchema={"type": "object"}))
    reader = Principal.parse("acme", ["payments.read"], "confidential")
    admin = Principal.parse("acme", ["payments.admin"], "confidential")
    assert [s.version for s in registry.discover(reader)] == [Version.parse("1.0.0")]
    assert [s.version for s in registry.discover(admin)] == [Version.parse("2.0.0")]
