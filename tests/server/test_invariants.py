"""SPEC 3.6 invariants 1 to 5, asserted against the assembled gateway."""

from __future__ import annotations

from typing import Any

import pytest
from gateway_kit import USER, Driver, calc_estate, gateway_for
from hypothesis import given, settings
from hypothesis import strategies as st

from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.protocol import Accepted
from toolkeeper.registry import Principal, Registry

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)


# 1. A notification never produces a response.

@settings(max_examples=60, deadline=None)
@given(method=st.text(max_size=30), params=st.dictionaries(st.text(max_size=5), JSON,
                                                            max_size=3),
       legacy=st.booleans(), prefixed=st.booleans())
def test_1_a_notification_never_produces_a_response(method: str, params: dict[str, Any],
                                                    legacy: bool, prefixed: bool) -> None:
    registry = Registry.open("memory:")
    driver = Driver(gateway_for(registry).kernel, legacy=legacy)
    if not legacy:
        driver.tools()  # decide the connection's era first
    name = ("notifications/" + method) if prefixed else (method or "x")
    outcome = driver.outcome({"jsonrpc": "2.0", "method": name, "params": params})
    assert isinstance(outcome, Accepted)


@pytest.mark.parametrize("legacy", [True, False])
def test_1_the_lifecycle_notifications_produce_no_response_either(legacy: bool) -> None:
    driver = Driver(gateway_for(Registry.open("memory:")).kernel, legacy=legacy)
    for method in ("notifications/initialized", "notifications/cancelled",
                   "notifications/progress", "notifications/roots/list_changed"):
        assert isinstance(driver.outcome({"jsonrpc": "2.0", "method": method}), Accepted)


# 2. A schema violation leaves the call log untouched.

@pytest.mark.parametrize(("name", "arguments", "version"), [
    ("calc", {"a": "1", "b": 2}, None),            # type, no coercion
    ("calc", {"a": 1, "b": 2, "z": 0}, None),      # unknown property, strict when unpinned
    ("calc", {"a": 1}, "2.0.0"),                   # required b under the pinned current
    ("calc", {"a": 1}, "1.0.0"),                   # retired: gate rejection
    ("calc", {"a": 1}, "9.9.9"),                   # unknown version
    ("secret", {"a": 1}, None),                    # invisible tool
])
def test_2_a_schema_violation_leaves_the_call_log_untouched(
        registry: Registry, name: str, arguments: dict[str, Any], version: str | None) -> None:
    gateway = gateway_for(registry)
    response = Driver(gateway.kernel).call(name, arguments, version=version)
    assert "error" in response or response["result"]["isError"] is True
    assert len(gateway.call_log) == 0


def test_2_a_valid_call_is_logged_once_it_is_dispatched(registry: Registry) -> None:
    gateway = gateway_for(registry)
    assert Driver(gateway.kernel).call("calc", {"a": 1, "b": 2})["result"]["isError"] is False
    assert len(gateway.call_log) == 1


# 3. An unentitled tool and a nonexistent tool produce the same error code.

@pytest.mark.parametrize("legacy", [True, False])
def test_3_an_unentitled_tool_and_a_nonexistent_tool_are_indistinguishable(
        registry: Registry, legacy: bool) -> None:
    driver = Driver(gateway_for(registry).kernel, legacy=legacy)
    invisible = driver.call("secret", {"a": 1})["error"]
    missing = driver.call("secreu", {"a": 1})["error"]
    assert invisible["code"] == missing["code"] == -32602
    assert invisible.get("data") == missing.get("data")
    assert invisible["message"].replace("secret", "NAME") == \
        missing["message"].replace("secreu", "NAME")


def test_3_the_same_holds_for_a_tool_visible_only_to_another_tenant() -> None:
    registry = Registry.open("memory:")
    calc_estate(registry)
    other = Principal("globex", frozenset(), USER.clearance)
    driver = Driver(gateway_for(registry, principal=other).kernel)
    assert driver.call("calc", {"a": 1, "b": 1})["result"]["isError"] is False
    assert driver.call("secret", {})["error"]["code"] == driver.call("zzz", {})["error"]["code"]


# 4. Descriptors carry only the fields of SPEC 1.1.

def test_4_descriptors_carry_only_the_contract_fields_never_policy() -> None:
    registry = Registry.open("memory:")
    install_demo(registry)
    everyone = Principal("local", frozenset({"payments.read", "db.query", "tickets.write"}),
                         Principal.parse("x", [], "restricted").clearance)
    tools = Driver(gateway_for(registry, demo_handlers(), principal=everyone).kernel).tools()
    assert [t["name"] for t in tools] == ["db.query", "payments.lookup", "tickets.create"]
    allowed = {"name", "title", "description", "inputSchema", "_meta", "outputSchema",
               "annotations"}
    for tool in tools:
        assert set(tool) <= allowed
        assert {"name", "title", "description", "inputSchema", "_meta"} <= set(tool)
        assert set(tool["_meta"]) == {"schemaVersion"}
        text = str(tool).lower()
        for policy in ("tenant", "requiredscopes", "classification", "payments.read"):
            assert policy not in text


# 5. Validation errors are sorted by (path, message).

def test_5_validation_errors_are_sorted_and_byte_identical_across_runs() -> None:
    registry = Registry.open("memory:")
    install_demo(registry)
    arguments = {"urgent": True, "reference": "PMT771", "include_legs": "yes"}
    first = Driver(gateway_for(registry, demo_handlers(), principal=Principal(
        "t", frozenset({"payments.read"}), Principal.parse("x", [], "confidential").clearance),
    ).kernel).call("payments.lookup", arguments)["result"]
    errors = first["structuredContent"]["errors"]
    assert [(e["path"], e["message"]) for e in errors] == sorted(
        (e["path"], e["message"]) for e in errors)
    assert [e["path"] for e in errors] == ["$.include_legs", "$.reference", "$.urgent"]
    again = Driver(gateway_for(registry, demo_handlers(), principal=Principal(
        "t", frozenset({"payments.read"}), Principal.parse("x", [], "confidential").clearance),
    ).kernel).call("payments.lookup", dict(reversed(list(arguments.items()))))["result"]
    assert again["content"] == first["content"]
    assert again["structuredContent"] == first["structuredContent"]
