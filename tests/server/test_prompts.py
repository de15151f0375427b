"""Handler-bound prompts in both eras: ``prompts/list`` lists them (modern: with the caching
hints of ``tools/list``), ``prompts/get`` renders them, bad requests are -32602 at a JSON path
before any handler runs, a failing handler is a generic -32603, and the ``prompts`` capability
and methods exist only when a prompt is bound."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from gateway_kit import Driver, gateway_for
from prompt_kit import PromptSet, get, refused

from toolkeeper.registry import Registry
from toolkeeper.server import ToolHandlers

ERAS = ["modern", "legacy"]


def driver(registry: Registry, prompts: PromptSet, era: str = "modern",
           **options: Any) -> Driver:
    gateway = gateway_for(registry, prompts.handlers(), **options)
    return Driver(gateway.kernel, legacy=era == "legacy",
                  capabilities={"elicitation": {}})


@pytest.fixture
def prompts() -> PromptSet:
    return PromptSet()


@pytest.mark.parametrize("era", ERAS)
def test_prompts_list_lists_every_bound_prompt_in_name_order(
        registry: Registry, prompts: PromptSet, era: str) -> None:
    listed = driver(registry, prompts, era).request("prompts/list")["result"]["prompts"]
    assert [p["name"] for p in listed] == ["asking", "blocks", "broken", "greeting",
                                           "other_asking", "plain", "unreadable"]
    greeting = next(p for p in listed if p["name"] == "greeting")
    assert greeting == {"name": "greeting", "title": "Greeting", "description": "Greets someone",
                        "arguments": [
                            {"name": "name", "description": "Who to greet", "required": True},
                            {"name": "tone", "description": "How", "required": False}]}
    assert next(p for p in listed if p["name"] == "asking")["arguments"] == [
        {"name": "topic", "required": True}]


def test_modern_prompts_list_carries_the_caching_hints_of_tools_list(
        registry: Registry, prompts: PromptSet) -> None:
    d = driver(registry, prompts, list_ttl_ms=5000)
    listed = d.request("prompts/list")["result"]
    tools = d.request("tools/list")["result"]
    assert (listed["ttlMs"], listed["cacheScope"]) == (5000, "private")
    assert (listed["ttlMs"], listed["cacheScope"]) == (tools["ttlMs"], tools["cacheScope"])
    assert listed["resultType"] == "complete"


def test_legacy_prompts_list_carries_no_caching_hints(registry: Registry,
                                                      prompts: PromptSet) -> None:
    listed = driver(registry, prompts, "legacy", list_ttl_ms=5000).request(
        "prompts/list")["result"]
    assert not {"ttlMs", "cacheScope", "resultType"} & set(listed)


@pytest.mark.parametrize("era", ERAS)
def test_a_prompts_list_cursor_is_refused_since_none_is_issued(
        registry: Registry, prompts: PromptSet, era: str) -> None:
    response = driver(registry, prompts, era).request("prompts/list", cursor="x")
    assert refused(response) == (-32602, {"path": "$.params.cursor"})


@pytest.mark.parametrize("era", ERAS)
def test_a_string_is_one_user_text_message_with_the_prompt_description(
        registry: Registry, prompts: PromptSet, era: str) -> None:
    result = get(driver(registry, prompts, era), "plain")["result"]
    assert result["description"] == "No arguments"
    assert result["messages"] == [{"role": "user",
                                   "content": {"type": "text", "text": "Say hello."}}]


@pytest.mark.parametrize("era", ERAS)
def test_arguments_reach_the_handler_and_optional_ones_may_be_left_out(
        registry: Registry, prompts: PromptSet, era: str) -> None:
    d = driver(registry, prompts, era)
    both = get(d, "greeting", {"name": "Ada", "tone": "briskly"})["result"]
    assert both["messages"][0]["content"]["text"] == "Greet Ada (briskly)."
    one = get(d, "greeting", {"name": "Ada"})["result"]
    assert one["messages"][0]["content"]["text"] == "Greet Ada (warmly)."


@pytest.mark.parametrize("era", ERAS)
def test_content_blocks_and_prompt_messages_become_messages(
        registry: Registry, prompts: PromptSet, era: str) -> None:
    messages = get(driver(registry, prompts, era), "blocks")["result"]["messages"]
    assert [(m["role"], m["content"]["type"]) for m in messages] == [
        ("user", "image"), ("user", "resource"), ("assistant", "text"), ("user", "text")]
    assert messages[0]["content"]["mimeType"] == "image/png"
    assert messages[0]["content"]["data"] == "iVBORw0KGgo="
    assert messages[1]["content"]["resource"] == {"uri": "test://doc", "mimeType": "text/plain",
                                                  "text": "body"}
    assert messages[3]["content"]["text"] == "from blocks"


@pytest.mark.parametrize("era", ERAS)
def test_an_unknown_prompt_is_invalid_params_at_the_name(
        registry: Registry, prompts: PromptSet, era: str) -> None:
    response = get(driver(registry, prompts, era), "nope")
    assert refused(response) == (-32602, {"path": "$.params.name", "reason": "unknown_prompt"})


@pytest.mark.parametrize("era", ERAS)
def test_a_missing_required_argument_is_refused_at_its_path_before_the_handler_runs(
        registry: Registry, prompts: PromptSet, era: str) -> None:
    response = get(driver(registry, prompts, era), "greeting", {"tone": "x"})
    assert refused(response) == (-32602, {"path": "$.params.arguments.name",
                                          "reason": "missing_argument"})
    assert prompts.runs["greeting"] == 0


@pytest.mark.parametrize("era", ERAS)
def test_an_undeclared_argument_is_refused_at_its_path(
        registry: Registry, prompts: PromptSet, era: str) -> None:
    response = get(driver(registry, prompts, era), "greeting", {"name": "Ada", "nmae": "x"})
    assert refused(response) == (-32602, {"path": "$.params.arguments.nmae",
                                          "reason": "unknown_argument"})
    assert prompts.runs["greeting"] == 0


@pytest.mark.parametrize(("params", "path"), [
    ({"name": 7}, "$.params.name"),
    ({}, "$.params.name"),
    ({"name": "greeting", "arguments": ["Ada"]}, "$.params.arguments"),
    ({"name": "greeting", "arguments": {"name": 3}}, "$.params.arguments.name"),
    ({"name": "asking", "arguments": {"topic": "t"}, "requestState": 5},
     "$.params.requestState"),
    ({"name": "asking", "arguments": {"topic": "t"}, "inputResponses": []},
     "$.params.inputResponses"),
])
def test_malformed_params_are_invalid_params_at_their_path(
        registry: Registry, prompts: PromptSet, params: dict[str, Any], path: str) -> None:
    response = driver(registry, prompts).request("prompts/get", **params)
    assert refused(response) == (-32602, {"path": path})
    assert sum(prompts.runs.values()) == 0


@pytest.mark.parametrize("era", ERAS)
def test_a_handler_that_raises_is_a_generic_internal_error_logged_not_sent(
        registry: Registry, prompts: PromptSet, era: str,
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, "toolkeeper.server"):
        response = get(driver(registry, prompts, era), "broken")
    assert response["error"]["code"] == -32603
    assert "hunter2" not in str(response) and "data" not in response["error"]
    assert any("prompt broken raised" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("era", ERAS)
def test_a_handler_returning_what_is_not_messages_is_a_generic_internal_error(
        registry: Registry, prompts: PromptSet, era: str) -> None:
    response = get(driver(registry, prompts, era), "unreadable")
    assert response["error"]["code"] == -32603 and "data" not in response["error"]
    assert prompts.runs["unreadable"] == 1


@pytest.mark.parametrize("era", ERAS)
def test_the_prompts_capability_is_advertised_when_a_prompt_is_bound(
        registry: Registry, prompts: PromptSet, era: str) -> None:
    d = driver(registry, prompts, era)
    assert _capabilities(d)["prompts"] == {"listChanged": False}


@pytest.mark.parametrize("era", ERAS)
def test_without_a_bound_prompt_there_is_no_capability_and_no_prompts_method(
        registry: Registry, era: str) -> None:
    d = Driver(gateway_for(registry, ToolHandlers()).kernel, legacy=era == "legacy")
    assert "prompts" not in _capabilities(d)
    assert "tools" in _capabilities(d)
    assert d.request("prompts/list")["error"]["code"] == -32601
    assert get(d, "plain")["error"]["code"] == -32601


def _capabilities(d: Driver) -> dict[str, Any]:
    if d.legacy:  # the initialize of a fresh connection
        session, d.conn = d.conn, d.kernel.open_stream()
        reply = d.send({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "kit", "version": "1"}}})
        d.conn = session
    else:
        reply = d.request("server/discover")
    capabilities = reply["result"]["capabilities"]
    assert isinstance(capabilities, dict)
    return capabilities


def test_merging_handler_sets_carries_their_prompts(prompts: PromptSet) -> None:
    merged = ToolHandlers()
    merged.merge(prompts.handlers())
    assert [p.name for p in merged.prompts][:2] == ["asking", "blocks"]
    with pytest.raises(ValueError, match="already bound"):
        merged.merge(PromptSet().handlers())


@pytest.mark.parametrize(("name", "options"), [
    ("p", {"description": ""}),
    ("", {"description": "d"}),
    ("p", {"description": "d", "arguments": ["a", {"name": "a"}]}),
    ("p", {"description": "d", "arguments": [{"description": "no name"}]}),
])
def test_a_prompt_without_a_name_or_description_or_with_an_argument_twice_is_refused(
        name: str, options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ToolHandlers().prompt(name, **options)(lambda arguments: "x")
