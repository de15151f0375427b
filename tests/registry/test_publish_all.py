"""``Registry.publish_all``: a batch in one store transaction, all or none, on every backend."""

from __future__ import annotations

import pytest
from registry_kit import evolved, v

from toolkeeper.errors import PublishRefusedError
from toolkeeper.registry import Registry


def test_a_batch_is_stored_together_with_an_audit_row_each(registry: Registry) -> None:
    outcomes = registry.publish_all([evolved("a.tool", "1.0.0"), evolved("a.tool", "1.1.0"),
                                     evolved("b.tool", "1.0.0")], actor="ci")
    assert [o.created for o in outcomes] == [True, True, True]
    assert registry.names() == ("a.tool", "b.tool")
    assert [str(s.version) for s in registry.versions("a.tool")] == ["1.0.0", "1.1.0"]
    assert [(e.name, e.version, e.rule) for e in registry.audit()] == [
        ("a.tool", "1.0.0", None), ("a.tool", "1.1.0", None), ("b.tool", "1.0.0", None)]


def test_a_refusal_anywhere_stores_nothing_of_the_batch_and_audits_the_refusal(
        registry: Registry) -> None:
    registry.publish(evolved("b.tool", "1.0.0"))
    generation = registry.generation
    with pytest.raises(PublishRefusedError) as refused:
        registry.publish_all([evolved("a.tool", "1.0.0"),  # fine on its own
                              evolved("b.tool", "1.1.0", shape="2.0.0")])  # MAJOR as MINOR
    assert refused.value.code == "publish.bump_required"
    assert registry.names() == ("b.tool",)
    assert registry.get("a.tool", v("1.0.0")) is None
    assert [(e.name, e.version, e.rule) for e in registry.audit()] == [
        ("b.tool", "1.0.0", None), ("b.tool", "1.1.0", "publish.bump_required")]
    assert registry.generation >= generation


def test_an_identical_republish_in_a_batch_creates_nothing(registry: Registry) -> None:
    registry.publish(evolved("a.tool", "1.0.0"))
    audit = registry.audit()
    outcomes = registry.publish_all([evolved("a.tool", "1.0.0")])
    assert [o.created for o in outcomes] == [False]
    assert registry.audit() == audit
    assert registry.publish_all([]) == []
