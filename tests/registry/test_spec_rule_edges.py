"""The registry and the schema-version gate, rule by rule, against SPEC 2, 3.3-3.4
and 3.6, on the edges the main suites leave out: pre-release and build-metadata versions,
identical re-publishes in every status, deprecating the only version, retired successors,
principals who see only a deprecated version, tenant lists and scopes that change between
versions, the audit trail of refusals, and the CLI over a real SQLite file.

Two divergences it found are fixed (a deprecation's audit entry records what it set; a
successor is recorded as the published version it names); the other tests held under attack
and stay as coverage.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from registry_kit import evolved, make_spec, spec_mapping, v

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))  # gateway_kit

from gateway_kit import Driver, contract, gateway_for

from toolkeeper.cli.registry_cmds import register
from toolkeeper.contracts.changes import Bump, Verdict
from toolkeeper.contracts.classify import classify
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import Status, ToolSpec, classification_rank
from toolkeeper.errors import LifecycleError, PublishRefusedError
from toolkeeper.registry import MemoryStore, Principal, Registry
from toolkeeper.registry.guard import check_publish
from toolkeeper.server import ToolHandlers

NAME = "payments.lookup"
EVERYONE = Principal.parse("acme", [], "restricted")


@pytest.fixture(params=["memory", "sqlite"])
def reg(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Registry]:
    """A fresh registry on the in-memory store or a real SQLite file."""
    url = "memory:" if request.param == "memory" else f"sqlite://{tmp_path / 'audit.db'}"
    registry = Registry.open(url)
    yield registry
    registry.close()


def refused(registry: Registry, spec: ToolSpec) -> PublishRefusedError:
    with pytest.raises(PublishRefusedError) as info:
        registry.publish(spec)
    return info.value


def served(registry: Registry, principal: Principal = EVERYONE, *,
           include_deprecated: bool = False) -> dict[str, str]:
    return {s.name: str(s.version)
            for s in registry.discover(principal, include_deprecated=include_deprecated)}


# --- SPEC 2.1 (1): immutability and identical re-publishes ---------------------------------

def test_an_identical_republish_of_a_build_metadata_version_returns_it_and_another_build_is_immutable(
        reg: Registry) -> None:
    stored = reg.publish(evolved(NAME, "1.0.0+b1"))
    assert reg.publish(evolved(NAME, "1.0.0+b1")) == stored
    for other in ("1.0.0+b2", "1.0.0"):
        error = refused(reg, evolved(NAME, other))
        assert error.code == "publish.immutable"
        assert (error.data["against"], error.data["minimumVersion"]) == ("1.0.0+b1", "1.0.1")
    assert [str(s.version) for s in reg.versions(NAME)] == ["1.0.0+b1"]


def test_an_identical_republish_of_a_retired_version_returns_it_retired_and_revives_nothing(
        reg: Registry) -> None:
    reg.publish(evolved(NAME, "1.0.0"))
    reg.publish(evolved(NAME, "2.0.0"))
    retired = reg.retire(NAME, v("1.0.0"))
    audit = reg.audit()
    again = reg.publish(evolved(NAME, "1.0.0"))
    assert again == retired and again.status is Status.RETIRED
    assert reg.resolve(NAME, v("1.0.0")) is None
    assert reg.audit() == audit  # a no-op is no change, so nothing is recorded


def test_an_identical_republish_of_a_deprecated_version_below_the_latest_is_a_no_op(
        reg: Registry) -> None:
    reg.publish(evolved(NAME, "1.0.0"))
    reg.publish(evolved(NAME, "2.0.0"))
    deprecated = reg.deprecate(NAME, v("1.0.0"), message="move", successor=v("2.0.0"))
    generation = reg.generation
    assert reg.publish(evolved(NAME, "1.0.0"), actor="someone-else") == deprecated
    assert reg.generation == generation


# --- SPEC 2.1 (2, 3): monotonicity and bump enforcement ------------------------------------

def test_a_pre_release_of_a_published_release_is_not_monotonic(reg: Registry) -> None:
    reg.publish(evolved(NAME, "1.0.0"))
    error = refused(reg, evolved(NAME, "1.0.0-rc.1", shape="1.0.0"))
    assert error.code == "publish.not_monotonic"
    assert (error.data["against"], error.data["minimumVersion"]) == ("1.0.0", "1.0.1")


def test_a_version_between_the_latest_active_and_a_deprecated_newer_one_is_monotonic(
        reg: Registry) -> None:
    # SPEC 2.1 (2): "greater than the latest *active* version"
    reg.publish(evolved(NAME, "1.0.0"))
    reg.publish(evolved(NAME, "2.0.0"))
    reg.deprecate(NAME, v("2.0.0"), message="bad release")
    stored = reg.publish(evolved(NAME, "1.5.0"))
    assert stored.status is Status.ACTIVE
    assert reg.latest(NAME) == stored
    assert served(reg) == {NAME: "1.5.0"}


def test_a_breaking_change_after_a_deprecated_next_major_skips_to_its_next_free_version(
        reg: Registry) -> None:
    reg.publish(evolved(NAME, "1.0.0"))
    reg.publish(evolved(NAME, "2.0.0"))
    reg.deprecate(NAME, v("2.0.0"), message="bad release")
    error = refused(reg, evolved(NAME, "2.0.0", shape="2.1.0"))
    assert error.code == "publish.immutable" and error.data["minimumVersion"] == "2.0.1"
    assert reg.publish(evolved(NAME, "2.0.1", shape="2.1.0")).status is Status.ACTIVE


def test_a_release_after_its_pre_release_is_served_instead_of_it(reg: Registry) -> None:
    reg.publish(evolved(NAME, "1.0.0"))
    reg.publish(evolved(NAME, "2.0.0-rc.1", shape="2.0.0"))
    reg.publish(evolved(NAME, "2.0.0"))
    assert [str(s.version) for s in reg.versions(NAME)] == ["1.0.0", "2.0.0-rc.1", "2.0.0"]
    latest = reg.latest(NAME)
    assert latest is not None and str(latest.version) == "2.0.0"
    assert served(reg) == {NAME: "2.0.0"}
    error = refused(reg, evolved(NAME, "2.0.0-rc.2", shape="2.0.0"))
    assert error.code == "publish.not_monotonic"


@pytest.mark.parametrize(("before", "after", "bump"), [
    ({}, {"tenants": ["acme"]}, Bump.MAJOR),  # every tenant -> one tenant: tenants removed
    ({"tenants": ["acme"]}, {}, Bump.MINOR),  # one tenant -> every tenant
    ({"tenants": ["acme", "globex"]}, {"tenants": ["acme"]}, Bump.MAJOR),
    ({"tenants": ["acme"]}, {"tenants": ["acme", "globex"]}, Bump.MINOR),
    ({}, {"requiredScopes": ["admin"]}, Bump.MAJOR),
    ({"requiredScopes": ["admin"]}, {}, Bump.MINOR),
    ({}, {"dataClassification": "restricted"}, Bump.MAJOR),
    ({"dataClassification": "restricted"}, {}, Bump.MINOR),
    ({}, {"sideEffect": "write"}, Bump.MAJOR),
    ({"sideEffect": "destructive"}, {}, Bump.MINOR),
])
def test_policy_metadata_changes_carry_the_bump_spec_1_4_names(
        before: dict[str, Any], after: dict[str, Any], bump: Bump) -> None:
    assert classify(make_spec(NAME, "1.0.0", **before), make_spec(NAME, "1.1.0", **after)
                    ).bump is bump


def test_narrowing_an_open_tool_to_one_tenant_as_a_minor_release_is_refused(
        reg: Registry) -> None:
    reg.publish(make_spec(NAME, "1.0.0"))
    error = refused(reg, make_spec(NAME, "1.1.0", tenants=["acme"]))
    assert (error.code, error.data["bump"], error.data["minimumVersion"]) == (
        "publish.bump_required", "major", "2.0.0")
    assert [c["rule"] for c in error.data["changes"]] == ["contract.tenant.removed"]


# --- SPEC 2.1: minimumVersion is the smallest version that would pass ----------------------

_SHAPES = ["1.0.0", "1.0.5", "1.1.0", "1.2.1", "2.0.0", "2.1.0", "3.0.0", "4.0.0"]
_HISTORY = ["0.1.0", "1.0.0", "1.0.1", "1.1.0", "1.2.0", "2.0.0-rc.1", "2.0.0", "2.1.0",
            "3.0.0-alpha", "3.0.0"]
_GRID = sorted(v(f"{a}.{b}.{c}") for a in range(5) for b in range(4) for c in range(4))
_STATUSES = st.sampled_from([Status.ACTIVE, Status.ACTIVE, Status.DEPRECATED, Status.RETIRED])


def _passes(history: list[ToolSpec], version: Version, shape: str) -> bool:
    try:
        decision = check_publish(history, evolved(NAME, str(version), shape=shape), classify)
    except PublishRefusedError:
        return False
    return decision.existing is None


@settings(max_examples=120, deadline=None)
@given(versions=st.lists(st.sampled_from(_HISTORY), min_size=1, max_size=4, unique=True),
       statuses=st.lists(_STATUSES, min_size=4, max_size=4),
       shape=st.sampled_from(_SHAPES), candidate=st.sampled_from(_GRID))
def test_a_refusals_minimum_version_passes_and_no_smaller_new_release_does(
        versions: list[str], statuses: list[Status], shape: str, candidate: Version) -> None:
    history = [evolved(NAME, x, shape=x.split("-")[0]).with_lifecycle(status=s)
               for x, s in zip(sorted(versions, key=v), statuses, strict=False)]
    try:
        check_publish(history, evolved(NAME, str(candidate), shape=shape), classify)
        return
    except PublishRefusedError as exc:
        minimum = exc.data["minimumVersion"]
    taken = {s.version for s in history}
    first = next((g for g in _GRID if g not in taken and _passes(history, g, shape)), None)
    if minimum is None:
        assert first is None
        return
    assert _passes(history, v(minimum), shape)
    assert first is None or v(minimum) <= first


# --- SPEC 2.2: lifecycle and successors ------------------------------------------------------

def test_deprecating_the_only_version_leaves_no_latest_yet_it_still_resolves_and_guards(
        reg: Registry) -> None:
    reg.publish(evolved(NAME, "1.0.0"))
    deprecated = reg.deprecate(NAME, v("1.0.0"), message="going away")
    assert reg.latest(NAME) is None
    assert reg.resolve(NAME, v("1.0.0")) == deprecated
    assert served(reg) == {}
    assert served(reg, include_deprecated=True) == {NAME: "1.0.0"}
    error = refused(reg, evolved(NAME, "1.1.0", shape="2.0.0"))  # judged against 1.0.0
    assert (error.code, error.data["against"], error.data["minimumVersion"]) == (
        "publish.bump_required", "1.0.0", "2.0.0")


def test_a_successor_may_be_retired_later_but_never_named_once_retired(reg: Registry) -> None:
    reg.publish(evolved(NAME, "1.0.0"))
    reg.publish(evolved(NAME, "2.0.0"))
    reg.publish(evolved(NAME, "3.0.0"))
    reg.deprecate(NAME, v("1.0.0"), message="move", successor=v("2.0.0"))
    assert reg.retire(NAME, v("2.0.0")).status is Status.RETIRED
    with pytest.raises(LifecycleError) as info:
        reg.deprecate(NAME, v("1.0.0"), successor=v("2.0.0"))
    assert info.value.code == "lifecycle.successor_retired"
    moved = reg.deprecate(NAME, v("1.0.0"), successor=v("3.0.0"))
    assert moved.successor == v("3.0.0") and moved.deprecation_message == "move"


def test_a_version_cannot_be_its_own_successor(reg: Registry) -> None:
    reg.publish(evolved(NAME, "1.0.0"))
    with pytest.raises(LifecycleError) as info:
        reg.deprecate(NAME, v("1.0.0"), successor=v("1.0.0+other-build"))
    assert info.value.code == "lifecycle.successor_not_newer"
    assert reg.get(NAME, v("1.0.0")) is not None
    assert reg.get(NAME, v("1.0.0")).status is Status.ACTIVE  # type: ignore[union-attr]


def test_a_successor_is_recorded_as_the_published_version_it_names(reg: Registry) -> None:
    reg.publish(evolved(NAME, "1.0.0"))
    reg.publish(evolved(NAME, "2.0.0+b1"))
    done = reg.deprecate(NAME, v("1.0.0"), successor=v("2.0.0+typo"))
    assert str(done.successor) == "2.0.0+b1"


def test_a_refused_lifecycle_change_leaves_the_record_and_the_trail_alone(reg: Registry) -> None:
    reg.publish(evolved(NAME, "1.0.0"))
    reg.retire(NAME, v("1.0.0"))
    record, audit, generation = reg.get(NAME, v("1.0.0")), reg.audit(), reg.generation
    with pytest.raises(LifecycleError):
        reg.deprecate(NAME, v("1.0.0"), message="too late")
    assert (reg.get(NAME, v("1.0.0")), reg.audit(), reg.generation) == (
        record, audit, generation)


# --- SPEC 2.3: discovery per principal --------------------------------------------------------

def test_a_tenant_dropped_by_the_newest_version_still_sees_the_one_before(
        reg: Registry) -> None:
    reg.publish(make_spec(NAME, "1.0.0", tenants=["acme", "globex"]))
    reg.publish(make_spec(NAME, "2.0.0", tenants=["acme"]))
    reg.publish(make_spec(NAME, "3.0.0", tenants=["globex"]))
    globex = Principal.parse("globex", [], "internal")
    acme = Principal.parse("acme", [], "internal")
    initech = Principal.parse("initech", [], "restricted")
    assert (served(reg, globex), served(reg, acme), served(reg, initech)) == (
        {NAME: "3.0.0"}, {NAME: "2.0.0"}, {})


def test_a_principal_who_sees_only_a_deprecated_version_discovers_it_only_when_asked(
        reg: Registry) -> None:
    reg.publish(make_spec(NAME, "1.0.0"))
    reg.publish(make_spec(NAME, "2.0.0", requiredScopes=["admin"]))
    reg.deprecate(NAME, v("1.0.0"), successor=v("2.0.0"))
    reader = Principal.parse("acme", ["read"], "internal")
    assert served(reg, reader) == {}
    assert served(reg, reader, include_deprecated=True) == {NAME: "1.0.0"}
    assert served(reg, Principal.parse("acme", ["admin"], "internal")) == {NAME: "2.0.0"}


def test_clearance_is_ordered_public_internal_confidential_restricted(reg: Registry) -> None:
    levels = ["public", "internal", "confidential", "restricted"]
    for level in levels:
        reg.publish(make_spec(f"tool.{level}", "1.0.0", dataClassification=level))
    for rank, level in enumerate(levels):
        seen = served(reg, Principal.parse("acme", [], level))
        assert sorted(seen) == sorted(f"tool.{x}" for x in levels[:rank + 1])


_TENANTS = ["acme", "globex", "initech"]
_SCOPES = ["a", "b", "c"]
_LEVELS = ["public", "internal", "confidential", "restricted"]
_version_facts = st.tuples(st.lists(st.sampled_from(_TENANTS), max_size=2, unique=True),
                           st.lists(st.sampled_from(_SCOPES), max_size=2, unique=True),
                           st.sampled_from(_LEVELS),
                           st.sampled_from([Status.ACTIVE, Status.DEPRECATED, Status.RETIRED]))


def _patch_only(before: ToolSpec, after: ToolSpec) -> Verdict:
    return Verdict(Bump.PATCH, ())


def _expected_view(registry: Registry, principal: Principal, include_deprecated: bool
                   ) -> list[ToolSpec]:
    """SPEC 2.3 read literally: per name in sorted order, newest first, the first visible."""
    out = []
    for name in sorted(registry.names()):
        for spec in reversed(registry.versions(name)):
            if spec.status is Status.RETIRED or (
                    spec.status is Status.DEPRECATED and not include_deprecated):
                continue
            if spec.tenants and principal.tenant not in spec.tenants:
                continue
            if classification_rank(spec.data_classification) > classification_rank(
                    principal.clearance):
                continue
            if spec.required_scopes <= principal.scopes:
                out.append(spec)
                break
    return out


@settings(max_examples=60, deadline=None)
@given(estate=st.dictionaries(st.sampled_from(["x.tool", "y.tool", "z.tool"]),
                              st.lists(_version_facts, min_size=1, max_size=4),
                              min_size=1, max_size=3),
       principals=st.lists(st.tuples(st.sampled_from([*_TENANTS, "other"]),
                                     st.lists(st.sampled_from([*_SCOPES, "zz"]), max_size=3),
                                     st.sampled_from(_LEVELS)), min_size=1, max_size=4))
def test_discovery_is_the_first_visible_version_walking_newest_first_for_any_estate(
        estate: dict[str, list[tuple[list[str], list[str], str, Status]]],
        principals: list[tuple[str, list[str], str]]) -> None:
    registry = Registry(MemoryStore(), classifier=_patch_only)
    for name, facts in estate.items():
        for minor, (tenants, scopes, level, _) in enumerate(facts):
            registry.publish(make_spec(name, f"1.{minor}.0", tenants=tenants,
                                       requiredScopes=scopes, dataClassification=level))
        for minor, (_, _, _, status) in enumerate(facts):
            if status is Status.DEPRECATED:
                registry.deprecate(name, v(f"1.{minor}.0"))
            elif status is Status.RETIRED:
                registry.retire(name, v(f"1.{minor}.0"))
    for tenant, scopes, level in principals:
        principal = Principal.parse(tenant, scopes, level)
        for include in (False, True):
            assert list(registry.discover(principal, include_deprecated=include)) == \
                _expected_view(registry, principal, include)


# --- SPEC 2.4: the audit trail (who, what, when, verdict) -----------------------------------

def test_every_refusal_rule_is_audited_with_actor_version_rule_and_verdict(
        reg: Registry) -> None:
    reg.publish(evolved(NAME, "1.0.0"), actor="alice")
    reg.publish(evolved(NAME, "1.1.0"), actor="alice")
    attempts = [
        (evolved(NAME, "1.0.0", title="Other"), "publish.immutable", "patch"),
        (evolved(NAME, "1.0.5", shape="1.1.1"), "publish.not_monotonic", "patch"),
        (evolved(NAME, "1.2.0", shape="2.0.0"), "publish.bump_required", "major"),
        (evolved(NAME, "2.0.0", shape="1.2.0"), "publish.bump_unjustified", "minor"),
    ]
    for spec, rule, bump in attempts:
        with pytest.raises(PublishRefusedError) as info:
            reg.publish(spec, actor="mallory")
        assert info.value.code == rule
        last = reg.audit()[-1]
        assert (last.actor, last.action, last.name, last.version, last.rule, last.applied) == (
            "mallory", "publish", NAME, str(spec.version), rule, False)
        assert last.verdict is not None and last.verdict["bump"] == bump
        assert last.verdict["changes"] == info.value.data["changes"]
    entries = reg.audit()
    assert [e.seq for e in entries] == list(range(1, len(entries) + 1))
    assert [e.at for e in entries] == sorted(e.at for e in entries)
    assert all(e.at.endswith("Z") for e in entries)


def test_the_audit_trail_of_a_sqlite_file_survives_reopening_with_refusals(
        tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'trail.db'}"
    with Registry.open(url) as first:
        first.publish(evolved(NAME, "1.0.0"), actor="alice")
        with pytest.raises(PublishRefusedError):
            first.publish(evolved(NAME, "1.0.1", shape="2.0.0"), actor="mallory")
        trail = first.audit()
    with Registry.open(url) as second:
        assert second.audit() == trail
        assert [str(s.version) for s in second.versions(NAME)] == ["1.0.0"]


def test_the_audit_entry_of_a_deprecation_records_what_it_set(reg: Registry) -> None:
    reg.publish(evolved(NAME, "1.0.0"))
    reg.publish(evolved(NAME, "2.0.0"))
    reg.publish(evolved(NAME, "3.0.0"))
    reg.deprecate(NAME, v("1.0.0"), message="move", successor=v("2.0.0"))
    reg.deprecate(NAME, v("1.0.0"), successor=v("3.0.0"))
    first, second = reg.audit()[-2:]
    assert first.to_dict() | {"seq": 0, "at": ""} != second.to_dict() | {"seq": 0, "at": ""}
    assert "3.0.0" in json.dumps(second.to_dict())


# --- SPEC 3.4: the schema-version gate ----------------------------------------------------------

_S1 = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
_S2 = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
       "required": ["a", "b"]}


def _driver(registry: Registry, principal: Principal) -> Driver:
    handlers = ToolHandlers()
    handlers.bind("t", lambda arguments, ctx: {"ran": str(ctx.version)})
    return Driver(gateway_for(registry, handlers, principal=principal).kernel)


def _gate(response: dict[str, Any]) -> dict[str, Any]:
    assert response["error"]["code"] == -32602, response
    data: dict[str, Any] = response["error"]["data"]
    return data


@pytest.fixture
def memory() -> Iterator[Registry]:
    registry = Registry.open("memory:")
    yield registry
    registry.close()


def test_a_principal_seeing_only_a_deprecated_version_gets_unknown_tool_unpinned_and_runs_pinned(
        memory: Registry) -> None:
    memory.publish(contract("t", "1.0.0", _S1))
    memory.publish(contract("t", "2.0.0", _S2, requiredScopes=["admin"]))
    memory.deprecate("t", v("1.0.0"), message="move", successor=v("2.0.0"))
    reader = Principal.parse("acme", [], "internal")
    driver = _driver(memory, reader)
    assert driver.tools() == []
    unpinned = driver.call("t", {"a": 1})["error"]
    nonexistent = driver.call("nope", {"a": 1})["error"]
    assert (unpinned["code"], set(unpinned)) == (nonexistent["code"], set(nonexistent))
    result = driver.call("t", {"a": 1}, version="1.0.0")["result"]
    assert result["structuredContent"] == {"ran": "1.0.0"}
    assert "successor" not in result["_meta"]  # 2.0.0 is invisible to this caller
    data = _gate(driver.call("t", {"a": 1, "b": 2}, version="2.0.0"))
    assert (data["reason"], data["currentVersion"]) == ("schema_version_unknown", "1.0.0")


def test_a_tenant_dropped_by_the_newest_version_keeps_calling_the_one_before(
        memory: Registry) -> None:
    memory.publish(contract("t", "1.0.0", _S1))
    memory.publish(contract("t", "2.0.0", _S1, tenants=["acme"]))
    globex = _driver(memory, Principal.parse("globex", [], "internal"))
    acme = _driver(memory, Principal.parse("acme", [], "internal"))
    assert [t["_meta"]["schemaVersion"] for t in globex.tools()] == ["1.0.0"]
    assert globex.call("t", {"a": 1})["result"]["structuredContent"] == {"ran": "1.0.0"}
    data = _gate(globex.call("t", {"a": 1}, version="2.0.0"))
    assert data == {"reason": "schema_version_unknown", "tool": "t", "requestedVersion": "2.0.0",
                    "currentVersion": "1.0.0", "action": "relist"}
    pinned = acme.call("t", {"a": 1}, version="1.0.0")["result"]
    assert (pinned["structuredContent"], pinned["_meta"]["successor"]) == (
        {"ran": "1.0.0"}, "2.0.0")


def test_a_retired_version_is_refused_as_retired_and_the_call_never_runs(
        memory: Registry) -> None:
    ran: list[str] = []
    memory.publish(contract("t", "1.0.0", _S1))
    memory.publish(contract("t", "2.0.0", _S2))
    memory.retire("t", v("1.0.0"))

    def handler(arguments: Any, ctx: Any) -> dict[str, Any]:
        ran.append(str(ctx.version))
        return {"ok": True}

    handlers = ToolHandlers()
    handlers.bind("t", handler)
    driver = Driver(gateway_for(memory, handlers,
                                principal=Principal.parse("acme", [], "internal")).kernel)
    data = _gate(driver.call("t", {"a": 1}, version="1.0.0+any-build"))
    assert (data["reason"], data["requestedVersion"], data["currentVersion"]) == (
        "schema_version_retired", "1.0.0+any-build", "2.0.0")
    assert ran == []


def test_a_pin_spelled_with_build_metadata_runs_under_the_served_version(
        memory: Registry) -> None:
    memory.publish(contract("t", "1.0.0+b7", _S1))
    driver = _driver(memory, Principal.parse("acme", [], "internal"))
    result = driver.call("t", {"a": 1}, version="1.0.0")["result"]
    assert result["isError"] is False and result["_meta"]["schemaVersion"] == "1.0.0+b7"


def test_an_unpinned_call_runs_under_the_newest_visible_version_with_a_closed_schema(
        memory: Registry) -> None:
    memory.publish(contract("t", "1.0.0", _S1))
    memory.publish(contract("t", "2.0.0", _S2, requiredScopes=["admin"]))
    driver = _driver(memory, Principal.parse("acme", [], "internal"))
    ok = driver.call("t", {"a": 1})["result"]
    assert (ok["isError"], ok["structuredContent"]) == (False, {"ran": "1.0.0"})
    bad = driver.call("t", {"a": 1, "b": 2})["result"]  # b exists only in the invisible 2.0.0
    assert bad["isError"] is True
    assert [(e["path"], e["keyword"]) for e in bad["structuredContent"]["errors"]] == [
        ("$.b", "additionalProperties")]


# --- the CLI over a real SQLite file --------------------------------------------------------

@click.group()
def _cli() -> None:
    """Only the registry commands."""


register(_cli)


class _Tk:
    def __init__(self, tmp_path: Path) -> None:
        self.dir, self.url = tmp_path, f"sqlite://{tmp_path / 'cli.db'}"

    def file(self, name: str, data: dict[str, Any]) -> str:
        path = self.dir / name
        path.write_text(json.dumps(data))
        return str(path)

    def json(self, *args: str) -> tuple[int, Any]:
        result = CliRunner().invoke(_cli, [*args, "--registry", self.url, "--json"])
        lines = result.stdout.splitlines()
        return result.exit_code, json.loads(lines[-1]) if lines else None


def test_the_cli_refuses_a_retired_successor_and_discovers_a_deprecated_only_tool_on_request(
        tmp_path: Path) -> None:
    tk = _Tk(tmp_path)
    for version, required in (("1.0.0", ["reference"]), ("2.0.0", ["reference", "x"])):
        code, _ = tk.json("publish", tk.file(f"{version}.json",
                                             spec_mapping(version=version, required=required)))
        assert code == 0
    assert tk.json("retire", NAME, "2.0.0")[0] == 0
    code, out = tk.json("deprecate", NAME, "1.0.0", "--successor", "2.0.0")
    assert (code, out["error"]["code"]) == (1, "lifecycle.successor_retired")
    assert tk.json("deprecate", NAME, "1.0.0", "--message", "going")[0] == 0
    flags = ("--tenant", "acme", "--clearance", "internal")
    assert tk.json("discover", *flags) == (0, [])
    code, found = tk.json("discover", *flags, "--include-deprecated")
    assert (code, [(s["version"], s["status"]) for s in found]) == (0, [("1.0.0", "deprecated")])


def test_the_cli_audit_lists_a_refused_publish_with_its_rule_and_verdict(tmp_path: Path) -> None:
    tk = _Tk(tmp_path)
    tk.json("publish", tk.file("a.json", spec_mapping(version="1.0.0")), "--actor", "alice")
    code, refusal = tk.json("publish", tk.file("b.json", spec_mapping(
        version="1.0.1", required=["reference", "x"])), "--actor", "mallory")
    assert (code, refusal["error"]["rule"], refusal["error"]["minimumVersion"]) == (
        1, "publish.bump_required", "2.0.0")
    code, trail = tk.json("audit")
    assert code == 0
    assert [(e["actor"], e["version"], e.get("rule")) for e in trail] == [
        ("alice", "1.0.0", None), ("mallory", "1.0.1", "publish.bump_required")]
    assert trail[1]["verdict"]["bump"] == "major"
    assert trail[1]["verdict"]["changes"] == refusal["error"]["changes"]
