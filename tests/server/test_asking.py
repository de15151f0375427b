"""The asking seam (``toolkeeper.server.asking``): the capability each ask needs, and the
modern asker's answers by key and rounds of asks made together."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from ask_kit import ALL_CAPABILITIES, NAME_SCHEMA, accept
from gateway_kit import OPEN, Driver, contract, gateway_for

from toolkeeper.registry import Registry
from toolkeeper.server import ToolContext, ToolHandlers
from toolkeeper.server.asking import InputRequired, ModernAsker, ask_all, required_capabilities


@pytest.mark.parametrize(("method", "params", "needs"), [
    ("elicitation/create", {"mode": "form"}, {"elicitation": {}}),
    ("elicitation/create", {}, {"elicitation": {}}),
    ("elicitation/create", {"mode": "url", "url": "https://x"}, {"elicitation": {"url": {}}}),
    ("sampling/createMessage", {"messages": []}, {"sampling": {}}),
    ("sampling/createMessage", {"tools": []}, {"sampling": {"tools": {}}}),
    ("sampling/createMessage", {"includeContext": "none"}, {"sampling": {}}),
    ("sampling/createMessage", {"includeContext": "thisServer"}, {"sampling": {"context": {}}}),
    ("sampling/createMessage", {"includeContext": "allServers", "tools": []},
     {"sampling": {"context": {}, "tools": {}}}),
    ("roots/list", {}, {"roots": {}}),
])
def test_each_ask_needs_its_methods_client_capability(method: str, params: dict[str, Any],
                                                      needs: dict[str, Any]) -> None:
    assert required_capabilities(method, params) == needs


@pytest.mark.parametrize(("params", "declared", "needs"), [
    ({"mode": "form"}, {"elicitation": {"url": {}}}, {"elicitation": {"form": {}}}),
    ({}, {"elicitation": {"url": {}}}, {"elicitation": {"form": {}}}),
    ({"mode": "form"}, {"elicitation": {}}, {"elicitation": {}}),
    ({"mode": "form"}, {}, {"elicitation": {}}),
    ({"mode": "url", "url": "https://x"}, {"elicitation": {"form": {}}},
     {"elicitation": {"url": {}}}),
])
def test_a_form_needs_form_mode_named_when_the_client_names_its_elicitation_modes(
        params: dict[str, Any], declared: dict[str, Any], needs: dict[str, Any]) -> None:
    assert required_capabilities("elicitation/create", params, declared) == needs


def test_a_method_a_handler_cannot_ask_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="cannot ask"):
        required_capabilities("tools/call", {})


def test_an_answered_key_returns_its_answer_and_an_unanswered_one_ends_the_round() -> None:
    asker = ModernAsker({"0": {"roots": []}})

    async def run() -> None:
        assert await asker.ask("roots/list", {}) == {"roots": []}
        await asker.ask("roots/list", {})

    with pytest.raises(InputRequired) as ended:
        asyncio.run(run())
    assert ended.value.requests == {"1": {"method": "roots/list", "params": {}}}
    assert ended.value.answers == {"0": {"roots": []}}


def test_asks_gathered_together_all_land_in_one_round() -> None:
    asker = ModernAsker({"b": {"roots": []}})
    with pytest.raises(InputRequired) as ended:
        asyncio.run(ask_all(asker, {"a": ("roots/list", {}), "b": ("roots/list", {}),
                                    "c": ("elicitation/create", {"message": "m"})}))
    assert sorted(ended.value.requests) == ["a", "c"]
    assert ended.value.answers == {"b": {"roots": []}}


def test_a_handler_that_catches_exception_still_ends_its_round(registry: Registry) -> None:
    registry.publish(contract("careless", "1.0.0", OPEN))
    handlers = ToolHandlers()

    @handlers.tool("careless")
    async def careless(arguments: dict[str, Any], ctx: ToolContext) -> str:
        try:
            answer = await ctx.elicit("Name?", NAME_SCHEMA)
        except Exception:  # what a careless handler does
            return "swallowed"
        return str(answer["content"]["name"])

    d = Driver(gateway_for(registry, handlers).kernel, capabilities=ALL_CAPABILITIES)
    first = d.call("careless", {"a": 1})["result"]
    assert first["resultType"] == "input_required"
    done = d.request("tools/call", name="careless", arguments={"a": 1},
                     requestState=first["requestState"],
                     inputResponses={"0": accept(name="Ada")})["result"]
    assert done["content"][0]["text"] == "Ada"


@pytest.mark.parametrize("keys", [("1", None), (None, "0"), ("x", "x")])
def test_a_key_asked_twice_in_one_run_is_a_value_error_not_another_asks_answer(
        keys: tuple[str | None, str | None]) -> None:
    # A positional key is the ask's position ("0", "1", ...): an explicit key of digits can
    # name the same request as a positional ask; the second ask must not be handed the
    # first's answer (an ElicitResult where a CreateMessageResult was expected).
    first, second = keys
    answers = {key: accept(name="Ada") for key in ("0", "1", "x")}
    asker = ModernAsker(answers)

    async def run() -> None:
        await asker.ask("elicitation/create", {}, key=first)
        await asker.ask("sampling/createMessage", {"messages": []}, key=second)

    with pytest.raises(ValueError, match="asked twice"):
        asyncio.run(run())
