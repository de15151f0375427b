"""``prompts/get`` with a handler that asks back, modern era: the round answers
``input_required`` with a ``requestState`` sealed for ``prompts/get``; the retry completes the
prompt; a state that cannot be used is refused with its ``sealReason`` before the handler runs,
as a tool call's is; an ask the caller has no capability for is -32021."""

from __future__ import annotations

from typing import Any

import pytest
from ask_kit import ALL_CAPABILITIES, AskingTools, accept, asking_estate
from gateway_kit import USER, Driver, gateway_for
from prompt_kit import PromptSet, get, refused

from toolkeeper.protocol.sealing import Sealer
from toolkeeper.registry import Principal, Registry

OTHER = Principal.parse("globex", ["payments.read"], "internal")
ANSWER = {"who": accept(name="Ada")}
TOPIC = {"topic": "poems"}


@pytest.fixture
def prompts() -> PromptSet:
    return PromptSet()


def driver(registry: Registry, prompts: PromptSet, capabilities: dict[str, Any] | None = None,
           **options: Any) -> Driver:
    tools = AskingTools()
    asking_estate(registry)
    gateway = gateway_for(registry, prompts.handlers(tools.handlers()), **options)
    return Driver(gateway.kernel, capabilities=ALL_CAPABILITIES if capabilities is None
                  else capabilities)


def first_round(d: Driver, name: str = "asking") -> dict[str, Any]:
    result = get(d, name, TOPIC)["result"]
    assert result["resultType"] == "input_required", result
    return result


def seal_reason(response: dict[str, Any]) -> str:
    code, data = refused(response)
    assert code == -32602
    assert (data["reason"], data["path"]) == ("invalid_request_state", "$.params.requestState")
    reason = data["sealReason"]
    assert isinstance(reason, str)
    return reason


def test_a_prompt_that_asks_answers_input_required_with_its_request_and_a_state(
        registry: Registry, prompts: PromptSet) -> None:
    result = first_round(driver(registry, prompts))
    assert result["inputRequests"] == {"who": {"method": "elicitation/create", "params": {
        "mode": "form", "message": "Your name?", "requestedSchema": {
            "type": "object", "properties": {"name": {"type": "string"}},
            "required": ["name"]}}}}
    assert isinstance(result["requestState"], str) and result["requestState"]
    assert not {"messages", "ttlMs", "cacheScope"} & set(result)


def test_the_retry_with_the_answer_and_the_state_completes_the_prompt(
        registry: Registry, prompts: PromptSet) -> None:
    d = driver(registry, prompts)
    state = first_round(d)["requestState"]
    done = get(d, "asking", TOPIC, requestState=state, inputResponses=ANSWER)["result"]
    assert done["resultType"] == "complete"
    assert done["messages"] == [{"role": "user",
                                 "content": {"type": "text", "text": "poems for Ada"}}]
    assert prompts.runs["asking"] == 2


def test_a_state_begun_on_one_gateway_completes_on_another_sharing_the_key(
        registry: Registry, prompts: PromptSet) -> None:
    shared = bytes(range(32))
    state = first_round(driver(registry, prompts, sealer=Sealer([shared])))["requestState"]
    other = driver(registry, PromptSet(), sealer=Sealer([shared]))
    done = get(other, "asking", TOPIC, requestState=state, inputResponses=ANSWER)["result"]
    assert done["messages"][0]["content"]["text"] == "poems for Ada"


def test_a_tampered_state_is_unsealable_and_the_handler_never_runs(
        registry: Registry, prompts: PromptSet) -> None:
    d = driver(registry, prompts)
    state = first_round(d)["requestState"]
    middle = len(state) // 2
    tampered = state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1:]
    response = get(d, "asking", TOPIC, requestState=tampered, inputResponses=ANSWER)
    assert seal_reason(response) == "unsealable"
    assert prompts.runs["asking"] == 1


def test_a_prompt_state_replayed_for_another_prompt_is_a_prompt_mismatch(
        registry: Registry, prompts: PromptSet) -> None:
    d = driver(registry, prompts)
    state = first_round(d)["requestState"]
    response = get(d, "other_asking", TOPIC, requestState=state, inputResponses=ANSWER)
    assert seal_reason(response) == "prompt_mismatch"
    assert prompts.runs["asking"] == 1  # both prompts run the same handler


def test_a_state_for_other_arguments_is_an_arguments_mismatch(
        registry: Registry, prompts: PromptSet) -> None:
    d = driver(registry, prompts)
    state = first_round(d)["requestState"]
    response = get(d, "asking", {"topic": "songs"}, requestState=state, inputResponses=ANSWER)
    assert seal_reason(response) == "arguments_mismatch"
    assert prompts.runs["asking"] == 1


def test_a_state_replayed_by_another_principal_is_a_principal_mismatch(
        registry: Registry, prompts: PromptSet) -> None:
    sealer = Sealer.ephemeral()
    state = first_round(driver(registry, prompts, sealer=sealer, principal=USER))["requestState"]
    thief = driver(registry, prompts, sealer=sealer, principal=OTHER)
    response = get(thief, "asking", TOPIC, requestState=state, inputResponses=ANSWER)
    assert seal_reason(response) == "principal_mismatch"
    assert prompts.runs["asking"] == 1


def test_an_expired_state_is_refused_as_expired(registry: Registry,
                                                prompts: PromptSet) -> None:
    d = driver(registry, prompts, request_state_ttl_s=-1.0)
    state = first_round(d)["requestState"]
    response = get(d, "asking", TOPIC, requestState=state, inputResponses=ANSWER)
    assert seal_reason(response) == "expired"
    assert prompts.runs["asking"] == 1


def test_a_tool_calls_state_offered_to_prompts_get_is_a_purpose_mismatch(
        registry: Registry, prompts: PromptSet) -> None:
    d = driver(registry, prompts)
    tool_round = d.call("greet", {"a": 1})["result"]
    assert tool_round["resultType"] == "input_required"
    response = get(d, "asking", TOPIC, requestState=tool_round["requestState"],
                   inputResponses=ANSWER)
    assert seal_reason(response) == "purpose_mismatch"
    assert prompts.runs["asking"] == 0


def test_a_prompts_state_offered_to_tools_call_is_a_purpose_mismatch(
        registry: Registry, prompts: PromptSet) -> None:
    d = driver(registry, prompts)
    state = first_round(d)["requestState"]
    response = d.request("tools/call", name="greet", arguments={"a": 1}, requestState=state,
                         inputResponses=ANSWER)
    assert seal_reason(response) == "purpose_mismatch"


def test_an_input_response_that_is_not_an_object_is_refused_at_its_path(
        registry: Registry, prompts: PromptSet) -> None:
    d = driver(registry, prompts)
    response = get(d, "asking", TOPIC, inputResponses={"who": "Ada"})
    assert refused(response) == (-32602, {"path": "$.params.inputResponses.who"})
    assert prompts.runs["asking"] == 0


def test_an_ask_the_caller_declared_no_capability_for_is_missing_capability(
        registry: Registry, prompts: PromptSet) -> None:
    response = get(driver(registry, prompts, capabilities={}), "asking", TOPIC)
    code, data = refused(response)
    assert code == -32021
    assert data["requiredCapabilities"] == {"elicitation": {}}
