"""FastMCP's version pin (``call_tool(..., version=V)`` sends ``params._meta.fastmcp.version``)
is read as ``schemaVersion`` when it is a semver string, in both eras: FastMCP users get the
gate's pinning and re-list refusals without changing code. Another value is ignored; a
conflict with ``schemaVersion`` is -32602 ``schema_version_conflict``."""

from __future__ import annotations

from typing import Any

import pytest
from gateway_kit import Driver, calc_estate, gateway_for

from toolkeeper.registry import Registry


@pytest.fixture
def estate() -> Registry:
    registry = Registry.open("memory:")
    calc_estate(registry)
    return registry


def _fastmcp(version: Any, **more: Any) -> dict[str, Any]:
    return {"fastmcp": {"version": version}, **more}


@pytest.mark.parametrize("legacy", [False, True], ids=["modern", "legacy"])
def test_a_fastmcp_pin_to_an_older_active_version_runs_under_exactly_that_version(
        estate: Registry, legacy: bool) -> None:
    result = Driver(gateway_for(estate).kernel, legacy=legacy).call(
        "calc", {"a": 1}, **_fastmcp("1.2.0"))["result"]
    assert (result["isError"], result["structuredContent"]["ran"]) == (False, "1.2.0")
    assert result["_meta"]["successor"] == "2.0.0"


@pytest.mark.parametrize("legacy", [False, True], ids=["modern", "legacy"])
def test_a_fastmcp_pin_to_a_retired_version_gets_the_relist_refusal(
        estate: Registry, legacy: bool) -> None:
    error = Driver(gateway_for(estate).kernel, legacy=legacy).call(
        "calc", {"a": 1}, **_fastmcp("1.0.0"))["error"]
    assert error["code"] == -32602
    assert (error["data"]["reason"], error["data"]["requestedVersion"],
            error["data"]["action"]) == ("schema_version_retired", "1.0.0", "relist")


@pytest.mark.parametrize("value", ["v2", "2", 2, None, ["1.0.0"], "latest"])
def test_a_fastmcp_version_that_is_not_semver_is_ignored(estate: Registry, value: Any) -> None:
    # Unpinned: the served version, strictly validated (b is required in 2.0.0).
    result = Driver(gateway_for(estate).kernel).call(
        "calc", {"a": 1, "b": 2}, **_fastmcp(value))["result"]
    assert (result["isError"], result["structuredContent"]["ran"]) == (False, "2.0.0")


def test_a_fastmcp_meta_that_is_not_an_object_is_ignored(estate: Registry) -> None:
    result = Driver(gateway_for(estate).kernel).call("calc", {"a": 1, "b": 2},
                                                      fastmcp="1.0.0")["result"]
    assert result["structuredContent"]["ran"] == "2.0.0"


def test_the_same_version_in_both_keys_is_one_pin(estate: Registry) -> None:
    result = Driver(gateway_for(estate).kernel).call(
        "calc", {"a": 1}, version="1.2.0", **_fastmcp("1.2.0"))["result"]
    assert result["structuredContent"]["ran"] == "1.2.0"


@pytest.mark.parametrize("legacy", [False, True], ids=["modern", "legacy"])
def test_a_fastmcp_pin_that_conflicts_with_schema_version_is_refused(
        estate: Registry, legacy: bool) -> None:
    error = Driver(gateway_for(estate).kernel, legacy=legacy).call(
        "calc", {"a": 1}, version="1.2.0", **_fastmcp("2.0.0"))["error"]
    assert error["code"] == -32602
    assert error["data"] == {"path": "$.params._meta.fastmcp.version",
                             "reason": "schema_version_conflict"}
