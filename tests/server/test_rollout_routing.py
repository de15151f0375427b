"""Routing by principal while a tool version is rolled out: real gateways over one SQLite
registry, a rollout started through the registry's RolloutBook, principals that are real API
keys of one entitlement (so only the rollout's keyed hash tells them apart).

The share is checked exactly: the principals routed to the candidate are computed from
``bucket`` (the keyed hash), and the gateways must route exactly those; the share over the
principals used must also lie within 12 points of the step's (a stated tolerance for 120
principals, which the exact set meets by construction of the hash)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from gateway_kit import OPEN, contract
from tenant_kit import StreamPeer

from toolkeeper.auth.keys import KeyAuthenticator, issue_key
from toolkeeper.auth.resolver import BearerResolver
from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.semver import Version
from toolkeeper.protocol import decode_message
from toolkeeper.registry import Registry
from toolkeeper.registry.apikeys import key_store
from toolkeeper.registry.rollout_book import rollout_book
from toolkeeper.registry.rollouts import BUCKETS, HALTED, Rollout, bucket
from toolkeeper.server import Gateway, InMemoryCallLog, ToolHandlers, build_gateway

RESOURCE = "https://gw.test/mcp"
PRINCIPALS = 120
SALT = "5a17" * 8
STEPS = (25, 50, 100)


def handlers() -> ToolHandlers:
    out = ToolHandlers()
    for name in ("pay", "other"):
        out.bind(name, lambda arguments, ctx: {"ran": str(ctx.version)}, inline=True)
    return out


def publish(registry: Registry, *, candidate: bool = True) -> None:
    registry.publish(contract("pay", "1.0.0", OPEN))
    if candidate:
        registry.publish(contract("pay", "2.0.0", OPEN))
    registry.publish(contract("other", "1.0.0", OPEN))


def start(registry: Registry, step: int = 0) -> Rollout:
    now = time.time_ns() // 1000
    return rollout_book(registry).start(Rollout(
        "pay", Version.parse("2.0.0"), Version.parse("1.0.0"), STEPS, step, "running", SALT,
        {}, 300, 3, {}, now, now, now))


@dataclass
class Estate:
    registries: tuple[Registry, Registry]
    gateways: tuple[Gateway, Gateway]
    tokens: dict[str, str]  # key id -> token
    logs: tuple[InMemoryCallLog, InMemoryCallLog]

    def peer(self, key_id: str, which: int = 0) -> StreamPeer:
        return StreamPeer(self.gateways[which].kernel, self.tokens[key_id], legacy=False)


def gateway_over(registry: Registry, log: InMemoryCallLog) -> Gateway:
    resolver = BearerResolver(RESOURCE, keys=KeyAuthenticator(key_store(registry.store)))
    return build_gateway(registry, handlers(), resolve_principal=resolver, call_log=log)


@pytest.fixture
def estate(tmp_path: Path) -> Iterator[Estate]:
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    first = Registry.open(url)
    publish(first)
    store = key_store(first.store)
    tokens = {}
    for _ in range(PRINCIPALS):
        issued = issue_key(store, tenant="acme", scopes=[], clearance="internal")
        tokens[issued.record.id] = issued.token
    second = Registry.open(url)
    logs = (InMemoryCallLog(), InMemoryCallLog())
    yield Estate((first, second), (gateway_over(first, logs[0]), gateway_over(second, logs[1])),
                 tokens, logs)
    first.close()
    second.close()


def routed(key_ids: Any, share: int) -> set[str]:
    """The principals the keyed hash puts in the candidate's share."""
    return {k for k in key_ids if bucket(SALT, f"credential:{k}") < share * (BUCKETS // 100)}


def ran(reply: dict[str, Any]) -> str:
    assert "result" in reply, reply
    result = reply["result"]
    assert result["_meta"]["schemaVersion"] == result["structuredContent"]["ran"]
    return str(result["structuredContent"]["ran"])


def test_each_principal_sees_one_version_across_calls_and_gateways(estate: Estate) -> None:
    start(estate.registries[0])
    expected = routed(estate.tokens, STEPS[0])
    assert abs(len(expected) / PRINCIPALS * 100 - STEPS[0]) <= 12
    seen: dict[str, set[str]] = {}
    for key_id in estate.tokens:
        for which in (0, 1):
            peer = estate.peer(key_id, which)
            for _ in range(2):
                seen.setdefault(key_id, set()).add(ran(peer.decoded("tools/call", "pay")))
            assert ran(peer.decoded("tools/call", "other")) == "1.0.0"
    assert all(len(versions) == 1 for versions in seen.values())
    assert {k for k, versions in seen.items() if versions == {"2.0.0"}} == expected
    assert {k for k, versions in seen.items() if versions == {"1.0.0"}} == (
        set(estate.tokens) - expected)


def test_a_later_step_keeps_every_principal_of_the_earlier_one(estate: Estate) -> None:
    rollout = start(estate.registries[0])
    book = rollout_book(estate.registries[0])
    book.update(replace(rollout, step=1), expected_seq=rollout.seq)
    expected = routed(estate.tokens, STEPS[1])
    assert routed(estate.tokens, STEPS[0]) <= expected
    assert abs(len(expected) / PRINCIPALS * 100 - STEPS[1]) <= 12
    on_candidate = {k for k in estate.tokens
                    if ran(estate.peer(k, 1).decoded("tools/call", "pay")) == "2.0.0"}
    assert on_candidate == expected


def test_tools_list_per_cohort(estate: Estate) -> None:
    start(estate.registries[0])
    expected = routed(estate.tokens, STEPS[0])
    for key_id in list(estate.tokens)[:40]:
        for which in (0, 1):
            tools = estate.peer(key_id, which).decoded("tools/list")["result"]["tools"]
            assert sorted(tool["name"] for tool in tools) == ["other", "pay"]
            view = estate.gateways[which].views.view(
                estate.gateways[which].resolve_principal(estate.peer(key_id, which).conn.facts))
            assert str(view.by_name["pay"].version) == (
                "2.0.0" if key_id in expected else "1.0.0")


def test_two_principals_of_one_entitlement_share_a_view_only_within_a_cohort(
        estate: Estate) -> None:
    gateway = estate.gateways[0]
    keys = list(estate.tokens)
    for key_id in keys[:20]:
        estate.peer(key_id).decoded("tools/list")
    assert gateway.views.builds == 1  # no rollout: one entitlement, one view
    start(estate.registries[0])
    expected = routed(keys[:20], STEPS[0])
    assert expected and len(expected) < 20
    builds = gateway.views.builds
    for key_id in keys[:20]:
        estate.peer(key_id).decoded("tools/list")
    assert gateway.views.builds - builds == 2  # two cohorts, two views


def test_a_pin_to_the_target_works_for_everyone(estate: Estate) -> None:
    start(estate.registries[0])
    for key_id in estate.tokens:
        assert ran(estate.peer(key_id).decoded("tools/call", "pay", version="1.0.0")) == "1.0.0"


def test_a_pin_to_the_candidate_from_outside_the_share_is_the_unknown_version_answer(
        estate: Estate, tmp_path: Path) -> None:
    start(estate.registries[0])
    expected = routed(estate.tokens, STEPS[0])
    outside = sorted(set(estate.tokens) - expected)
    inside = sorted(expected)
    control_registry = Registry.open(f"sqlite:///{tmp_path / 'control.db'}")
    publish(control_registry, candidate=False)  # 2.0.0 never published
    control_key = issue_key(key_store(control_registry.store), tenant="acme", scopes=[],
                            clearance="internal")
    control = gateway_over(control_registry, InMemoryCallLog())
    never = StreamPeer(control.kernel, control_key.token, legacy=False).request(
        "tools/call", "pay", version="2.0.0")
    assert decode_message(never)["error"]["data"]["reason"] == "schema_version_unknown"
    for key_id in outside[:10]:
        for which in (0, 1):
            refused = estate.peer(key_id, which).request("tools/call", "pay", version="2.0.0")
            assert refused == never  # the reply, byte for byte
            error = decode_message(refused)["error"]
            assert canonical_json(error) == canonical_json(decode_message(never)["error"])
    for key_id in inside[:5]:
        assert ran(estate.peer(key_id).decoded("tools/call", "pay", version="2.0.0")) == "2.0.0"
    reasons = [r.reason for r in estate.logs[0].refusals]
    assert reasons == ["unentitled_version"] * 10
    control_registry.close()


def test_a_halted_rollout_refuses_every_call_with_release_halted(estate: Estate) -> None:
    rollout = start(estate.registries[0])
    rollout_book(estate.registries[0]).update(replace(rollout, state=HALTED),
                                              expected_seq=rollout.seq)
    for key_id in list(estate.tokens)[:30]:
        for which in (0, 1):
            peer = estate.peer(key_id, which)
            for version in (None, "1.0.0", "2.0.0"):
                error = peer.decoded("tools/call", "pay", version=version)["error"]
                assert (error["code"], error["data"]) == (
                    -32602, {"reason": "release.halted", "tool": "pay"})
            assert ran(peer.decoded("tools/call", "other")) == "1.0.0"
            view = estate.gateways[which].views.view(
                estate.gateways[which].resolve_principal(peer.conn.facts))
            assert str(view.by_name["pay"].version) == "1.0.0"  # listed: the target
    public = issue_key(key_store(estate.registries[0].store), tenant="acme", scopes=[],
                       clearance="public")  # may not see pay (internal): no oracle
    error = StreamPeer(estate.gateways[0].kernel, public.token, legacy=False).decoded(
        "tools/call", "pay")["error"]
    assert (error["code"], error["message"]) == (-32602, "Unknown tool: pay")
    assert {r.reason for r in estate.logs[0].refusals} == {"release.halted", "unentitled_tool"}
    assert {r.rollout_step for r in estate.logs[0].refusals} == {STEPS[0]}


def test_the_call_log_records_the_rollout_step(estate: Estate) -> None:
    keys = list(estate.tokens)[:20]
    for key_id in keys:
        estate.peer(key_id).decoded("tools/call", "pay")
    start(estate.registries[0])
    for key_id in keys:
        estate.peer(key_id).decoded("tools/call", "pay")
        estate.peer(key_id).decoded("tools/call", "other")
    records = estate.logs[0].records
    assert [r.rollout_step for r in records[:20]] == [None] * 20
    assert {(r.tool, r.rollout_step) for r in records[20:]} == {("pay", 25), ("other", None)}
    expected = routed(keys, STEPS[0])
    assert {r.credential for r in records[20:] if r.version == "2.0.0"} == expected


def test_toolkeeper_calls_shows_the_rollout_step_of_each_durable_row(
        estate: Estate, tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from toolkeeper.cli.main import cli
    from toolkeeper.observability.recorder import CallRecorder
    from toolkeeper.registry.call_rows import open_call_rows, open_refusal_rows

    url = f"sqlite:///{tmp_path / 'registry.db'}"
    recorder = CallRecorder(open_call_rows(url), refusal_rows=open_refusal_rows(url))
    registry = estate.registries[0]
    resolver = BearerResolver(RESOURCE, keys=KeyAuthenticator(key_store(registry.store)))
    gateway = build_gateway(registry, handlers(), resolve_principal=resolver,
                            call_log=recorder)
    start(registry)
    outside = sorted(set(estate.tokens) - routed(estate.tokens, STEPS[0]))[0]
    peer = StreamPeer(gateway.kernel, estate.tokens[outside], legacy=False)
    assert ran(peer.decoded("tools/call", "pay")) == "1.0.0"
    assert ran(peer.decoded("tools/call", "other")) == "1.0.0"
    assert "error" in peer.decoded("tools/call", "pay", version="2.0.0")
    recorder.stop()
    calls = json.loads(CliRunner().invoke(cli, ["calls", "--json", "--registry", url]).output)
    assert [(c["tool"], c["version"], c["rollout_step"]) for c in calls] == [
        ("other", "1.0.0", None), ("pay", "1.0.0", 25)]
    refused = json.loads(CliRunner().invoke(
        cli, ["calls", "--refused", "--json", "--registry", url]).output)
    assert [(r["reason"], r["version"], r["rollout_step"]) for r in refused] == [
        ("unentitled_version", "2.0.0", 25)]
