"""A gateway lists and serves only the versions something in this process can run
(:mod:`toolkeeper.server.runnable`): the newest runnable visible version is served, a tool
with none is not listed, and a pin to a version that cannot run is
``schema_version_unavailable`` with the retired pin's shape."""

from __future__ import annotations

from gateway_kit import USER, Driver, contract

from toolkeeper.contracts.semver import Version
from toolkeeper.registry import Registry
from toolkeeper.server import ToolHandlers, build_gateway, fixed_principal
from toolkeeper.server.runnable import AnyOf, coverage

OPEN = {"type": "object"}


def _registry() -> Registry:
    registry = Registry.open("memory:")
    registry.publish(contract("calc", "1.0.0", {"type": "object", "properties": {
        "a": {"type": "integer"}}}))
    registry.publish(contract("calc", "2.0.0", {"type": "object", "properties": {
        "a": {"type": "string"}}}))
    registry.publish(contract("orphan", "1.0.0", OPEN))
    return registry


def _driver(registry: Registry, handlers: ToolHandlers) -> Driver:
    return Driver(build_gateway(registry, handlers,
                                resolve_principal=fixed_principal(USER)).kernel)


def _handlers(version: str) -> ToolHandlers:
    handlers = ToolHandlers()
    handlers.bind("calc", lambda arguments: f"ran {version}", version=version, inline=True)
    return handlers


def test_only_versions_with_a_handler_are_listed() -> None:
    listed = {t["name"]: t["_meta"]["schemaVersion"]
              for t in _driver(_registry(), _handlers("2.0.0")).tools()}
    assert listed == {"calc": "2.0.0"}


def test_the_newest_version_that_can_run_is_served_when_the_newest_cannot() -> None:
    driver = _driver(_registry(), _handlers("1.0.0"))
    assert [(t["name"], t["_meta"]["schemaVersion"]) for t in driver.tools()] == [
        ("calc", "1.0.0")]
    result = driver.call("calc", {"a": 1})["result"]
    assert (result["isError"], result["_meta"]["schemaVersion"]) == (False, "1.0.0")


def test_a_pin_to_a_version_without_a_handler_is_unavailable_with_a_relist() -> None:
    error = _driver(_registry(), _handlers("2.0.0")).call("calc", {"a": 1},
                                                          version="1.0.0")["error"]
    assert (error["code"], error["data"]) == (-32602, {
        "reason": "schema_version_unavailable", "tool": "calc", "requestedVersion": "1.0.0",
        "currentVersion": "2.0.0", "action": "relist"})


def test_a_pin_to_a_tool_no_version_of_which_can_run_is_unavailable_without_current() -> None:
    error = _driver(_registry(), _handlers("2.0.0")).call("orphan", {},
                                                          version="1.0.0")["error"]
    assert error["data"]["reason"] == "schema_version_unavailable"
    assert error["data"]["currentVersion"] is None


def test_an_unpinned_call_to_a_tool_nothing_runs_is_an_unknown_tool() -> None:
    error = _driver(_registry(), _handlers("2.0.0")).call("orphan", {})["error"]
    assert error["code"] == -32602 and "data" not in error


def test_a_binding_added_later_is_listed_at_once() -> None:
    handlers = _handlers("2.0.0")
    driver = _driver(_registry(), handlers)
    assert [t["name"] for t in driver.tools()] == ["calc"]
    handlers.bind("orphan", lambda arguments: "now", inline=True)
    assert [t["name"] for t in driver.tools()] == ["calc", "orphan"]


def test_any_of_joins_sources_and_coverage_reports_both_directions() -> None:
    joined = AnyOf(_handlers("1.0.0"), _handlers("2.0.0"))
    assert joined.can_run("calc", Version.parse("1.0.0"))
    assert joined.can_run("calc", Version.parse("2.0.0"))
    assert not joined.can_run("orphan", Version.parse("1.0.0"))
    registry = _registry()
    handlers = _handlers("2.0.0")
    handlers.bind("ghost", lambda arguments: "boo")
    specs = [s for n in registry.names() for s in registry.versions(n)]
    report = coverage(specs, handlers, handlers.bound())
    assert report.unbound == (("calc", "1.0.0"), ("orphan", "1.0.0"))
    assert report.uncontracted == (("ghost", None),)
    assert not report.complete
