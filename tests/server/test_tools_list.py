"""``tools/list`` (SPEC 3.3): the caller's discovery view through ``to_mcp()``, sorted, cached
per (registry generation, principal) and serialized once per view."""

from __future__ import annotations

from gateway_kit import USER, Driver, contract, gateway_for

from toolkeeper.contracts.spec import DataClassification
from toolkeeper.registry import Principal, Registry


def test_the_list_is_the_callers_newest_visible_versions_in_name_order(registry: Registry
                                                                       ) -> None:
    tools = Driver(gateway_for(registry).kernel).tools()
    assert [(t["name"], t["_meta"]["schemaVersion"]) for t in tools] == \
        [("calc", "2.0.0"), ("vault", "1.0.0")]
    admin = Principal("acme", frozenset({"vault.admin"}), DataClassification.CONFIDENTIAL)
    tools = Driver(gateway_for(registry, principal=admin).kernel).tools()
    assert [(t["name"], t["_meta"]["schemaVersion"]) for t in tools] == \
        [("calc", "2.0.0"), ("secret", "1.0.0"), ("vault", "2.0.0")]


def test_each_descriptor_is_the_contracts_to_mcp(registry: Registry) -> None:
    (calc, _) = Driver(gateway_for(registry).kernel).tools()
    spec = registry.latest("calc")
    assert spec is not None and calc == spec.to_mcp()


def test_modern_lists_are_private_cacheable_results(registry: Registry) -> None:
    result = Driver(gateway_for(registry, list_ttl_ms=30_000).kernel).request("tools/list")
    assert (result["result"]["ttlMs"], result["result"]["cacheScope"],
            result["result"]["resultType"]) == (30_000, "private", "complete")


def test_legacy_lists_carry_no_modern_bookkeeping(registry: Registry) -> None:
    result = Driver(gateway_for(registry).kernel, legacy=True).request("tools/list")["result"]
    assert set(result) == {"tools"}


def test_a_view_is_built_once_and_reused_until_the_registry_changes(registry: Registry
                                                                     ) -> None:
    gateway = gateway_for(registry)
    driver = Driver(gateway.kernel)
    first = driver.request("tools/list")["result"]["tools"]
    for _ in range(5):
        assert driver.request("tools/list")["result"]["tools"] == first
    assert gateway.views.builds == 1
    registry.publish(contract("zeta", "1.0.0", {"type": "object"}))
    names = [t["name"] for t in driver.request("tools/list")["result"]["tools"]]
    assert names == ["calc", "vault", "zeta"] and gateway.views.builds == 2


def test_principals_with_the_same_entitlements_share_the_serialized_view(registry: Registry
                                                                         ) -> None:
    gateway = gateway_for(registry)
    view = gateway.views.view(USER)
    again = gateway.views.view(Principal(USER.tenant, frozenset(USER.scopes), USER.clearance))
    assert again is view and again.tools_json is view.tools_json


def test_a_cursor_that_is_not_one_we_sealed_is_invalid_params_with_a_relist(registry: Registry
                                                                           ) -> None:
    error = Driver(gateway_for(registry).kernel).request("tools/list", cursor="abc")["error"]
    assert (error["code"], error["data"]) == \
        (-32602, {"path": "$.params.cursor", "reason": "malformed", "relist": True})


def test_the_2025_list_leaves_out_an_output_schema_that_is_not_object_rooted(
        registry: Registry) -> None:
    registry.publish(contract("zeta", "1.0.0", {"type": "object"},
                              outputSchema={"type": "array", "items": {"type": "integer"}}))
    registry.publish(contract("omega", "1.0.0", {"type": "object"},
                              outputSchema={"type": "object"}))
    gateway = gateway_for(registry)
    modern = {t["name"]: t for t in Driver(gateway.kernel).tools()}
    legacy = {t["name"]: t for t in Driver(gateway.kernel, legacy=True).tools()}
    assert modern["zeta"]["outputSchema"]["type"] == "array"
    assert "outputSchema" not in legacy["zeta"]
    assert legacy["omega"]["outputSchema"] == modern["omega"]["outputSchema"] == {"type": "object"}
    assert {n: t for n, t in legacy.items() if n != "zeta"} == \
        {n: t for n, t in modern.items() if n != "zeta"}


def test_a_view_with_nothing_to_leave_out_serves_both_eras_the_same_bytes(registry: Registry
                                                                         ) -> None:
    view = gateway_for(registry).views.view(USER)
    assert view.legacy_tools_json is view.tools_json


def test_calls_to_unknown_tools_build_the_deprecated_inclusive_view_once(registry: Registry
                                                                          ) -> None:
    gateway = gateway_for(registry)
    driver = Driver(gateway.kernel)
    for attempt in range(5):
        answer = driver.call(f"nope{attempt}", {})
        assert answer["error"]["code"] == -32602
    assert gateway.views.builds == 2  # the served view and the one with deprecated versions
    registry.publish(contract("zeta", "1.0.0", {"type": "object"}))
    driver.call("nope", {})
    assert gateway.views.builds == 4
