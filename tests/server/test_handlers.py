"""The handler API: binding per name or per version, decorator and explicit forms, sync and
async functions, and result normalisation."""

from __future__ import annotations

from typing import Any

import pytest
from gateway_kit import Driver, contract, gateway_for

from toolkeeper.contracts.semver import Version
from toolkeeper.registry import Registry
from toolkeeper.server import ToolContext, ToolHandlers, ToolResult, to_tool_result


def test_a_version_binding_wins_over_a_name_binding() -> None:
    handlers = ToolHandlers()
    handlers.bind("t", lambda arguments: "any")
    handlers.bind("t", lambda arguments: "v2", version="2.0.0")
    v2 = handlers.lookup("t", Version.parse("2.0.0"))
    v1 = handlers.lookup("t", Version.parse("1.0.0"))
    assert v2 is not None and v2.function({}) == "v2"
    assert v1 is not None and v1.function({}) == "any"
    assert handlers.lookup("u", Version.parse("1.0.0")) is None


def test_binding_twice_is_refused() -> None:
    handlers = ToolHandlers()
    handlers.bind("t", lambda arguments: "x")
    with pytest.raises(ValueError):
        handlers.bind("t", lambda arguments: "y")
    handlers.bind("t", lambda arguments: "y", version="1.0.0")
    with pytest.raises(ValueError):
        handlers.bind("t", lambda arguments: "z", version=Version.parse("1.0.0"))


def test_the_decorator_binds_sync_and_async_functions_with_or_without_context() -> None:
    registry = Registry.open("memory:")
    for name in ("plain", "ctx", "coro"):
        registry.publish(contract(name, "1.0.0", {"type": "object", "properties": {
            "x": {"type": "integer"}}}))
    handlers = ToolHandlers()

    @handlers.tool("plain")
    def plain(arguments: dict[str, Any]) -> str:
        return f"plain {arguments['x']}"

    @handlers.tool("ctx")
    def with_context(arguments: dict[str, Any], ctx: ToolContext) -> str:
        return f"{ctx.tool} {ctx.version}"

    @handlers.tool("coro")
    async def coro(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        return {"doubled": arguments["x"] * 2}

    driver = Driver(gateway_for(registry, handlers).kernel)
    assert driver.call("plain", {"x": 1})["result"]["content"][0]["text"] == "plain 1"
    assert driver.call("ctx", {"x": 1})["result"]["content"][0]["text"] == "ctx 1.0.0"
    assert driver.call("coro", {"x": 2})["result"]["structuredContent"] == {"doubled": 4}


@pytest.mark.parametrize(("value", "wire"), [
    (None, {"content": [], "isError": False}),
    ("hi", {"content": [{"type": "text", "text": "hi"}], "isError": False}),
    ({"b": 1, "a": [2]}, {"content": [{"type": "text", "text": '{"a":[2],"b":1}'}],
                          "isError": False, "structuredContent": {"b": 1, "a": [2]}}),
    ([{"type": "text", "text": "x"}], {"content": [{"type": "text", "text": "x"}],
                                       "isError": False}),
    (ToolResult(structured=[1, 2]), {"content": [], "isError": False,
                                     "structuredContent": [1, 2]}),
])
def test_handler_return_values_normalise_to_call_tool_results(value: Any,
                                                              wire: dict[str, Any]) -> None:
    assert to_tool_result(value).to_wire() == wire


@pytest.mark.parametrize("value", [42, 1.5, [1, 2], object()])
def test_unsupported_return_values_are_handler_bugs(value: Any) -> None:
    with pytest.raises(TypeError):
        to_tool_result(value)


def test_merging_handler_sets_keeps_every_binding_and_refuses_clashes() -> None:
    one, two = ToolHandlers(), ToolHandlers()
    one.bind("a", lambda arguments: "a")
    two.bind("b", lambda arguments: "b", version="1.0.0")
    one.merge(two)
    assert one.lookup("b", Version.parse("1.0.0")) is not None
    with pytest.raises(ValueError):
        one.merge(two)


@pytest.mark.parametrize(("progress", "total", "refused"), [
    (1, 2, False), (0.5, None, False), (10**30, None, False),
    (float("nan"), None, True), (1, float("inf"), True), (-float("inf"), None, True),
    (True, None, True), (1, False, True), ("1", None, True),
])
def test_a_progress_that_is_not_a_finite_number_is_the_handlers_failure_with_or_without_a_token(
        registry: Registry, progress: Any, total: Any, refused: bool) -> None:
    registry.publish(contract("steps", "1.0.0", {"type": "object"}))
    handlers = ToolHandlers()

    @handlers.tool("steps")
    async def steps(arguments: dict[str, Any], ctx: ToolContext) -> str:
        await ctx.progress(progress, total)
        return "done"

    driver = Driver(gateway_for(registry, handlers).kernel)
    for meta in ({}, {"progressToken": "t"}):
        assert driver.call("steps", {}, **meta)["result"]["isError"] is refused
