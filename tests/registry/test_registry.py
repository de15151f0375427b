"""The registry contract suite: every test runs on memory, SQLite and PostgreSQL (SPEC 2, 3.6)."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import pytest
from registry_kit import Backend, evolved, make_spec, v

from toolkeeper.contracts.spec import Status
from toolkeeper.errors import LifecycleError, NotFoundError, PublishRefusedError
from toolkeeper.registry import Principal, Registry

NAME = "payments.lookup"
READER = Principal.parse("acme", ["payments.read"], "confidential")


def test_first_publish_stores_an_active_record_with_publisher_and_time(
        registry: Registry) -> None:
    stored = registry.publish(evolved(NAME, "1.0.0"), actor="alice")
    assert stored.status is Status.ACTIVE
    assert stored.publisher == "alice" and stored.published_at is not None
    assert registry.get(NAME, v("1.0.0")) == stored
    assert registry.versions(NAME) == (stored,)
    assert registry.names() == (NAME,)


def test_an_identical_republish_returns_the_existing_record_and_changes_nothing(
        registry: Registry) -> None:
    stored = registry.publish(evolved(NAME, "1.0.0"), actor="alice")
    generation, audit = registry.generation, registry.audit()
    again = registry.publish(evolved(NAME, "1.0.0"), actor="bob")
    assert again == stored and again.publisher == "alice"
    assert registry.generation == generation and registry.audit() == audit


def test_invariant_6_a_published_version_is_never_mutated_or_replaced(
        registry: Registry) -> None:
    original = registry.publish(evolved(NAME, "1.0.0"))
    registry.publish(evolved(NAME, "2.0.0"))
    for attempt in (evolved(NAME, "1.0.0", title="Replaced"),
                    evolved(NAME, "1.0.0+rebuild"),
                    evolved(NAME, "1.0.0", shape="3.0.0")):
        with pytest.raises(PublishRefusedError) as info:
            registry.publish(attempt)
        assert info.value.code == "publish.immutable"
    registry.deprecate(NAME, v("1.0.0"), message="use 2", successor=v("2.0.0"))
    registry.retire(NAME, v("1.0.0"))
    kept = registry.get(NAME, v("1.0.0"))
    assert kept is not None
    assert kept.content_digest == original.content_digest
    assert kept.content_mapping() == original.content_mapping()
    assert (kept.publisher, kept.published_at) == (original.publisher, original.published_at)


def test_refusals_name_the_rule_list_changes_give_the_minimum_and_are_audited(
        registry: Registry) -> None:
    registry.publish(evolved(NAME, "1.0.0"))
    before = registry.versions(NAME)
    with pytest.raises(PublishRefusedError) as info:
        registry.publish(evolved(NAME, "1.1.0", shape="2.0.0"), actor="mallory")
    error = info.value
    assert error.code == "publish.bump_required"
    assert error.data["bump"] == "major" and error.data["minimumVersion"] == "2.0.0"
    assert error.data["changes"] and all("rule" in c and "path" in c
                                         for c in error.data["changes"])
    assert registry.versions(NAME) == before
    last = registry.audit()[-1]
    assert (last.actor, last.action, last.version, last.rule) == (
        "mallory", "publish", "1.1.0", "publish.bump_required")
    assert last.verdict is not None and last.verdict["bump"] == "major"


def test_a_version_below_the_latest_active_is_refused(registry: Registry) -> None:
    registry.publish(evolved(NAME, "2.0.0"))
    with pytest.raises(PublishRefusedError) as info:
        registry.publish(evolved(NAME, "1.0.0"))
    assert info.value.code == "publish.not_monotonic"


def test_after_deprecating_the_newest_the_next_publish_evolves_from_the_live_contract(
        registry: Registry) -> None:
    registry.publish(evolved(NAME, "1.0.0"))
    registry.publish(evolved(NAME, "2.0.0"))
    registry.deprecate(NAME, v("2.0.0"), message="bad release")
    assert registry.latest(NAME) is not None
    with pytest.raises(PublishRefusedError) as info:
        registry.publish(evolved(NAME, "1.0.1", shape="2.0.0"))
    assert info.value.data["against"] == "1.0.0"


def test_deprecate_keeps_resolution_but_leaves_latest(registry: Registry) -> None:
    registry.publish(evolved(NAME, "1.0.0"))
    registry.publish(evolved(NAME, "2.0.0"))
    deprecated = registry.deprecate(NAME, v("2.0.0"), message="m", successor=None, actor="ops")
    assert deprecated.status is Status.DEPRECATED and deprecated.deprecation_message == "m"
    latest = registry.latest(NAME)
    assert latest is not None and latest.version == v("1.0.0")
    assert registry.resolve(NAME, v("2.0.0")) == deprecated
    assert registry.audit()[-1].action == "deprecate"


def test_deprecate_records_a_successor_that_must_be_newer_and_published(
        registry: Registry) -> None:
    registry.publish(evolved(NAME, "1.0.0"))
    registry.publish(evolved(NAME, "2.0.0"))
    for successor, code in ((v("9.0.0"), "lifecycle.successor_unknown"),
                            (v("1.0.0"), "lifecycle.successor_not_newer")):
        with pytest.raises(LifecycleError) as info:
            registry.deprecate(NAME, v("1.0.0"), successor=successor)
        assert info.value.code == code
    done = registry.deprecate(NAME, v("1.0.0"), message="move", successor=v("2.0.0"))
    assert done.successor == v("2.0.0")
    assert registry.get(NAME, v("1.0.0")) == done


def test_deprecating_again_keeps_what_is_not_given(registry: Registry) -> None:
    registry.publish(evolved(NAME, "1.0.0"))
    registry.publish(evolved(NAME, "2.0.0"))
    registry.deprecate(NAME, v("1.0.0"), message="move", successor=v("2.0.0"))
    again = registry.deprecate(NAME, v("1.0.0"))
    assert (again.deprecation_message, again.successor) == ("move", v("2.0.0"))
    changed = registry.deprecate(NAME, v("1.0.0"), message="moved to 2")
    assert (changed.deprecation_message, changed.successor) == ("moved to 2", v("2.0.0"))
    assert registry.get(NAME, v("1.0.0")) == changed


def test_retired_is_terminal_and_kept_forever(registry: Registry) -> None:
    registry.publish(evolved(NAME, "1.0.0"))
    retired = registry.retire(NAME, v("1.0.0"), actor="ops")
    assert retired.status is Status.RETIRED
    with pytest.raises(LifecycleError) as info:
        registry.deprecate(NAME, v("1.0.0"))
    assert info.value.code == "lifecycle.retired_is_terminal"
    assert registry.retire(NAME, v("1.0.0")) == retired  # idempotent
    assert registry.get(NAME, v("1.0.0")) == retired
    assert registry.versions(NAME) == (retired,)
    assert registry.latest(NAME) is None and registry.resolve(NAME, v("1.0.0")) is None


def test_lifecycle_on_an_unknown_version_is_not_found(registry: Registry) -> None:
    registry.publish(evolved(NAME, "1.0.0"))
    for call in (lambda: registry.deprecate(NAME, v("1.5.0")),
                 lambda: registry.retire("no.such.tool", v("1.0.0"))):
        with pytest.raises(NotFoundError) as info:
            call()
        assert info.value.code == "registry.not_found"


def _estate(registry: Registry) -> None:
    """Four tools whose versions cover every status combination."""
    statuses = {
        "a.tool": ["active", "active", "active"],
        "b.tool": ["active", "deprecated", "retired"],
        "c.tool": ["retired", "deprecated", "active"],
        "d.tool": ["deprecated", "retired", "deprecated"],
    }
    for name, plan in statuses.items():
        for major in range(1, len(plan) + 1):
            registry.publish(evolved(name, f"{major}.0.0"))
        for major, status in enumerate(plan, start=1):
            if status == "deprecated":
                registry.deprecate(name, v(f"{major}.0.0"))
            elif status == "retired":
                registry.retire(name, v(f"{major}.0.0"))


def test_invariant_7_latest_is_never_deprecated_or_retired_and_resolve_never_retired(
        registry: Registry) -> None:
    _estate(registry)
    expected_latest = {"a.tool": "3.0.0", "b.tool": "1.0.0", "c.tool": "3.0.0", "d.tool": None}
    for name, want in expected_latest.items():
        latest = registry.latest(name)
        assert (str(latest.version) if latest else None) == want
        for spec in registry.versions(name):
            resolved = registry.resolve(name, spec.version)
            if spec.status is Status.RETIRED:
                assert resolved is None and registry.get(name, spec.version) == spec
            else:
                assert resolved == spec
    assert len(registry.versions("b.tool")) == 3  # retired versions are kept


@pytest.mark.parametrize("include_deprecated", [False, True])
def test_invariant_8_discover_returns_at_most_one_version_per_tool_in_name_order(
        registry: Registry, include_deprecated: bool) -> None:
    _estate(registry)
    for name in ("z.last", "m.middle", "0.first"):
        registry.publish(evolved(name, "1.0.0"))
    found = registry.discover(READER, include_deprecated=include_deprecated)
    names = [s.name for s in found]
    assert names == sorted(set(names))
    by_name = {s.name: str(s.version) for s in found}
    assert by_name["a.tool"] == "3.0.0" and by_name["c.tool"] == "3.0.0"
    assert by_name["b.tool"] == ("2.0.0" if include_deprecated else "1.0.0")
    assert ("d.tool" in by_name) is include_deprecated


def test_discovery_offers_the_newest_version_the_principal_may_see(registry: Registry) -> None:
    registry.publish(evolved(NAME, "1.0.0"))
    registry.publish(evolved(NAME, "2.0.0", requiredScopes=["payments.admin"]))
    admin = Principal.parse("acme", ["payments.read", "payments.admin"], "confidential")
    assert [str(s.version) for s in registry.discover(READER)] == ["1.0.0"]
    assert [str(s.version) for s in registry.discover(admin)] == ["2.0.0"]


def test_discovery_honours_tenants_and_clearance(registry: Registry) -> None:
    registry.publish(evolved("acme.only", "1.0.0", tenants=["acme"]))
    registry.publish(evolved("secret.tool", "1.0.0", dataClassification="restricted"))
    registry.publish(evolved("open.tool", "1.0.0", dataClassification="public"))
    other = Principal.parse("globex", [], "restricted")
    public = Principal.parse("acme", [], "public")
    assert [s.name for s in registry.discover(other)] == ["open.tool", "secret.tool"]
    assert [s.name for s in registry.discover(public)] == ["open.tool"]
    assert [s.name for s in registry.discover(READER)] == ["acme.only", "open.tool"]


def test_cached_views_are_invalidated_by_every_change(registry: Registry) -> None:
    registry.publish(evolved(NAME, "1.0.0"))
    first = registry.discover(READER)
    assert registry.discover(READER) is first  # served from the cached view
    registry.publish(evolved(NAME, "2.0.0"))
    assert [str(s.version) for s in registry.discover(READER)] == ["2.0.0"]
    registry.deprecate(NAME, v("2.0.0"))
    assert [str(s.version) for s in registry.discover(READER)] == ["1.0.0"]
    registry.retire(NAME, v("1.0.0"))
    assert registry.discover(READER) == ()


def test_generation_grows_and_subscribers_hear_every_change(registry: Registry) -> None:
    heard: list[int] = []
    unsubscribe = registry.subscribe(lambda: heard.append(registry.generation))
    start = registry.generation
    registry.publish(evolved(NAME, "1.0.0"))
    registry.deprecate(NAME, v("1.0.0"))
    registry.retire(NAME, v("1.0.0"))
    assert registry.generation == start + 3 and len(heard) == 3
    unsubscribe()
    registry.publish(evolved(NAME, "2.0.0"))
    assert len(heard) == 3


def test_a_change_through_one_replica_reaches_the_other(backend: Backend) -> None:
    writer, reader = backend.open(), backend.open()
    changed = threading.Event()
    reader.subscribe(changed.set)
    assert reader.discover(READER) == ()
    writer.publish(evolved(NAME, "1.0.0"))
    if backend.kind == "sqlite":
        # SQLite cannot push: the reader notices on its next read (PRAGMA data_version).
        assert reader.generation > 0
    assert changed.wait(5.0)
    assert [str(s.version) for s in reader.discover(READER)] == ["1.0.0"]


def test_the_audit_trail_records_who_did_what_to_which_version(registry: Registry) -> None:
    registry.publish(evolved(NAME, "1.0.0"), actor="alice")
    registry.publish(evolved(NAME, "2.0.0"), actor="bob")
    registry.deprecate(NAME, v("1.0.0"), actor="carol")
    registry.retire(NAME, v("1.0.0"), actor="dave")
    entries = registry.audit()
    assert [(e.seq, e.actor, e.action, e.version, e.applied) for e in entries] == [
        (1, "alice", "publish", "1.0.0", True),
        (2, "bob", "publish", "2.0.0", True),
        (3, "carol", "deprecate", "1.0.0", True),
        (4, "dave", "retire", "1.0.0", True),
    ]
    assert entries[1].verdict is not None and entries[1].verdict["bump"] == "major"
    assert all(e.name == NAME and e.at.endswith("Z") for e in entries)


def test_a_registry_reopened_on_the_same_store_sees_everything(backend: Backend) -> None:
    first = backend.open()
    first.publish(make_spec(NAME, "1.0.0"))
    first.deprecate(NAME, v("1.0.0"), message="m")
    second = backend.open()
    assert second.versions(NAME) == first.versions(NAME)
    assert second.audit() == first.audit()


def test_a_failing_subscriber_neither_undoes_the_change_nor_silences_the_others(
        registry: Registry, caplog: pytest.LogCaptureFixture) -> None:
    heard: list[str] = []

    def broken() -> None:
        raise RuntimeError("subscriber bug")

    registry.subscribe(broken)
    registry.subscribe(lambda: heard.append("ok"))
    stored = registry.publish(evolved(NAME, "1.0.0"))
    assert heard == ["ok"] and registry.latest(NAME) == stored
    assert "subscriber" in caplog.text


@pytest.mark.parametrize("enabled", [True, False])
def test_opening_a_registry_leaves_the_garbage_collector_as_it_found_it(
        tmp_path: Path, enabled: bool) -> None:
    # The initial load pauses the collector; it must come back exactly as it was.
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    Registry.open(url).close()
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        with Registry.open(url) as registry:
            assert registry.discover(Principal.parse("local", [], "public")) == ()
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
