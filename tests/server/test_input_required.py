"""The modern era's ``input_required`` rounds (SEP-2322) for handlers that ask through their
context: one round, several rounds, several requests in a round, missing and extra input
responses, capabilities, the call log."""

from __future__ import annotations

from typing import Any

import pytest
from ask_kit import (
    ALL_CAPABILITIES,
    GREET,
    ROOTS,
    AskingTools,
    accept,
    asking_estate,
    retry,
    sampled,
)
from gateway_kit import Driver, gateway_for

from toolkeeper.registry import Registry
from toolkeeper.server import InMemoryCallLog


@pytest.fixture
def tools(registry: Registry) -> AskingTools:
    asking_estate(registry)
    return AskingTools()


def driver(registry: Registry, tools: AskingTools, capabilities: dict[str, Any] | None = None,
           **options: Any) -> Driver:
    gateway = gateway_for(registry, tools.handlers(), **options)
    return Driver(gateway.kernel, capabilities=ALL_CAPABILITIES if capabilities is None
                  else capabilities)


def test_an_elicitation_ends_the_round_with_its_request_under_its_key_and_a_request_state(
        registry: Registry, tools: AskingTools) -> None:
    result = driver(registry, tools).call("greet", {"a": 1})["result"]
    assert result["resultType"] == "input_required"
    assert result["inputRequests"] == {"who": {"method": "elicitation/create", "params": {
        "mode": "form", "message": "Your name?", "requestedSchema": {
            "type": "object", "properties": {"name": {"type": "string"}},
            "required": ["name"]}}}}
    assert isinstance(result["requestState"], str) and result["requestState"]
    assert "content" not in result and "ttlMs" not in result


def test_the_retry_with_the_answer_and_the_state_completes_the_call(
        registry: Registry, tools: AskingTools) -> None:
    d = driver(registry, tools)
    first = d.call("greet", {"a": 1})["result"]
    done = retry(d, "greet", {"a": 1}, first, {"who": accept(name="Ada")})["result"]
    assert done["resultType"] == "complete"
    assert done["content"] == [{"type": "text", "text": "Hello, Ada!"}]
    assert tools.runs["greet"] == 2


def test_two_sequential_asks_take_two_rounds_each_with_a_new_state(
        registry: Registry, tools: AskingTools) -> None:
    d = driver(registry, tools)
    first = d.call("two_steps", {"a": 1})["result"]
    assert list(first["inputRequests"]) == ["0"]
    second = retry(d, "two_steps", {"a": 1}, first, {"0": accept(name="Ada")})["result"]
    assert second["resultType"] == "input_required"
    assert list(second["inputRequests"]) == ["1"]
    assert second["requestState"] != first["requestState"]
    # The second retry carries only the second answer: the first travels in the state.
    done = retry(d, "two_steps", {"a": 1}, second, {"1": accept(color="blue")})["result"]
    assert done["content"][0]["text"] == "Ada likes blue"


def test_asks_made_together_are_one_round_of_several_requests(
        registry: Registry, tools: AskingTools) -> None:
    d = driver(registry, tools)
    first = d.call("all_at_once", {"a": 1})["result"]
    requests = first["inputRequests"]
    assert {key: r["method"] for key, r in requests.items()} == {
        "who": "elicitation/create", "hello": "sampling/createMessage", "where": "roots/list"}
    assert requests["hello"]["params"] == {"messages": GREET, "maxTokens": 20}
    done = retry(d, "all_at_once", {"a": 1}, first, {
        "who": accept(name="Ada"), "hello": sampled("hi"), "where": ROOTS})["result"]
    assert done["content"][0]["text"] == "Ada|hi|file:///work"


def test_a_missing_input_response_is_asked_again_and_the_given_ones_are_kept(
        registry: Registry, tools: AskingTools) -> None:
    d = driver(registry, tools)
    first = d.call("all_at_once", {"a": 1})["result"]
    again = retry(d, "all_at_once", {"a": 1}, first,
                  {"who": accept(name="Ada"), "where": ROOTS})["result"]
    assert again["resultType"] == "input_required"
    assert list(again["inputRequests"]) == ["hello"]
    done = retry(d, "all_at_once", {"a": 1}, again, {"hello": sampled("yo")})["result"]
    assert done["content"][0]["text"] == "Ada|yo|file:///work"


def test_responses_under_keys_the_round_did_not_ask_are_ignored(
        registry: Registry, tools: AskingTools) -> None:
    d = driver(registry, tools)
    first = d.call("two_steps", {"a": 1})["result"]
    assert list(first["inputRequests"]) == ["0"]
    # "1" answered early, beside the "0" that was asked: only "0" is taken, "1" is asked.
    again = retry(d, "two_steps", {"a": 1}, first,
                  {"0": accept(name="Ada"), "1": accept(color="red"), "extra": accept(x=1)}
                  )["result"]
    assert again["resultType"] == "input_required"
    assert list(again["inputRequests"]) == ["1"]
    done = retry(d, "two_steps", {"a": 1}, again, {"1": accept(color="blue")})["result"]
    assert done["content"][0]["text"] == "Ada likes blue"


def test_an_input_response_that_is_not_an_object_is_invalid_params_with_its_path(
        registry: Registry, tools: AskingTools) -> None:
    error = driver(registry, tools).request("tools/call", name="greet", arguments={"a": 1},
                                            inputResponses={"who": 12345})["error"]
    assert error["code"] == -32602
    assert error["data"]["path"] == "$.params.inputResponses.who"
    assert tools.runs["greet"] == 0


def test_roots_and_sampling_asks_resume_with_the_clients_results(
        registry: Registry, tools: AskingTools) -> None:
    d = driver(registry, tools)
    first = d.call("roots", {"a": 1})["result"]
    assert first["inputRequests"] == {"0": {"method": "roots/list", "params": {}}}
    second = retry(d, "roots", {"a": 1}, first, {"0": ROOTS})["result"]
    assert second["inputRequests"]["1"] == {"method": "sampling/createMessage", "params": {
        "messages": GREET, "maxTokens": 10, "systemPrompt": "be brief"}}
    done = retry(d, "roots", {"a": 1}, second, {"1": sampled("ok")})["result"]
    assert done["content"][0]["text"] == "file:///work ok"


def test_an_ask_for_a_capability_the_caller_did_not_declare_is_32021(
        registry: Registry, tools: AskingTools) -> None:
    error = driver(registry, tools, {"sampling": {}}).call("greet", {"a": 1})["error"]
    assert error["code"] == -32021
    assert error["data"]["requiredCapabilities"] == {"elicitation": {}}


@pytest.mark.parametrize(("declared", "answer"), [
    ({"url": {}}, {"elicitation": {"form": {}}}),
    ({"form": {}}, None),
    ({"form": {}, "url": {}}, None),
    ({}, None),  # no mode named: form only (backwards compatibility)
])
def test_a_form_elicitation_needs_form_mode_when_the_caller_names_its_modes(
        registry: Registry, tools: AskingTools, declared: dict[str, Any],
        answer: dict[str, Any] | None) -> None:
    # ClientCapabilities elicitation {form?, url?}: a client declaring URL mode only cannot
    # be sent a form (2025-11-25 elicitation "Capabilities"; the 2026 surface alike).
    response = driver(registry, tools, {"elicitation": declared}).call("greet", {"a": 1})
    if answer is None:
        assert response["result"]["resultType"] == "input_required"
    else:
        assert response["error"]["code"] == -32021
        assert response["error"]["data"]["requiredCapabilities"] == answer


def test_ask_all_checks_every_capability_before_asking_anything(
        registry: Registry, tools: AskingTools) -> None:
    error = driver(registry, tools, {"elicitation": {}, "sampling": {}}).call(
        "all_at_once", {"a": 1})["error"]
    assert error["code"] == -32021
    assert error["data"]["requiredCapabilities"] == {"roots": {}}


def test_a_round_is_logged_input_required_and_the_final_round_ok(
        registry: Registry, tools: AskingTools) -> None:
    log = InMemoryCallLog()
    d = driver(registry, tools, call_log=log)
    first = d.call("greet", {"a": 1})["result"]
    retry(d, "greet", {"a": 1}, first, {"who": accept(name="Ada")})
    assert [r.outcome for r in log.records] == ["input_required", "ok"]


def test_a_tool_that_does_not_ask_answers_complete_with_a_request_state_ignored_in_legacy(
        registry: Registry, tools: AskingTools) -> None:
    d = driver(registry, tools)
    assert d.call("plain", {"a": 1})["result"]["resultType"] == "complete"
    legacy = Driver(gateway_for(registry, tools.handlers()).kernel, legacy=True,
                    capabilities=ALL_CAPABILITIES)
    result = legacy.request("tools/call", name="plain", arguments={"a": 1},
                            requestState="garbage")["result"]
    assert result["content"][0]["text"] == "no questions"


def test_answers_too_large_to_seal_make_the_round_the_handlers_failure(
        registry: Registry, tools: AskingTools) -> None:
    log = InMemoryCallLog()
    d = driver(registry, tools, call_log=log)
    first = d.call("two_steps", {"a": 1})["result"]
    huge = retry(d, "two_steps", {"a": 1}, first, {"0": accept(name="x" * 800_000)})["result"]
    assert huge["isError"] is True and "requestState" not in huge
    assert [r.outcome for r in log.records] == ["input_required", "exception"]
