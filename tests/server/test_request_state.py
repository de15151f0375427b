"""The sealed ``requestState`` of ``input_required`` rounds: every state that cannot be used is
refused with -32602 and its ``sealReason`` before the handler runs; a state opens on any
gateway sharing the sealing key; a version retired between rounds meets the gate."""

from __future__ import annotations

import time
from typing import Any

import pytest
from ask_kit import ALL_CAPABILITIES, AskingTools, accept, asking_estate, retry
from gateway_kit import USER, Driver, contract, gateway_for

from toolkeeper.contracts.semver import Version
from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol.sealing import Sealer
from toolkeeper.registry import Principal, Registry
from toolkeeper.server.asking import InputRequired
from toolkeeper.server.resuming import RequestStates

OTHER = Principal.parse("globex", ["payments.read"], "internal")
ANSWER = {"who": accept(name="Ada")}


@pytest.fixture
def tools(registry: Registry) -> AskingTools:
    asking_estate(registry)
    return AskingTools()


def driver(registry: Registry, tools: AskingTools, **options: Any) -> Driver:
    gateway = gateway_for(registry, tools.handlers(), **options)
    return Driver(gateway.kernel, capabilities=ALL_CAPABILITIES)


def refusal(response: dict[str, Any]) -> str:
    """The ``sealReason`` of a requestState refusal (asserting its code and data)."""
    error = response["error"]
    assert error["code"] == -32602, response
    data = error["data"]
    assert data["reason"] == "invalid_request_state"
    assert data["path"] == "$.params.requestState"
    reason = data["sealReason"]
    assert isinstance(reason, str)
    return reason


def first_round(d: Driver, name: str = "greet", arguments: Any = None) -> dict[str, Any]:
    result = d.call(name, arguments or {"a": 1})["result"]
    assert result["resultType"] == "input_required"
    return result


def flipped(token: str) -> str:
    middle = len(token) // 2
    return token[:middle] + ("A" if token[middle] != "A" else "B") + token[middle + 1:]


def test_tampered_bytes_are_unsealable_and_the_handler_never_runs(
        registry: Registry, tools: AskingTools) -> None:
    d = driver(registry, tools)
    state = first_round(d)["requestState"]
    runs = tools.runs["greet"]
    response = d.request("tools/call", name="greet", arguments={"a": 1},
                         requestState=flipped(state), inputResponses=ANSWER)
    assert refusal(response) == "unsealable"
    assert tools.runs["greet"] == runs


def test_a_state_with_text_appended_is_malformed(registry: Registry,
                                                 tools: AskingTools) -> None:
    d = driver(registry, tools)
    state = first_round(d)["requestState"]
    # Text that makes a length no base64url spelling has (1 more than a multiple of 4).
    appended = state + "-TAMPERED"[:(1 - len(state)) % 4 or 4] + "-TAMPERED"[:4]
    assert len(appended) % 4 == 1
    response = d.request("tools/call", name="greet", arguments={"a": 1},
                         requestState=appended, inputResponses=ANSWER)
    assert refusal(response) == "malformed"
    assert tools.runs["greet"] == 1


def test_a_state_replayed_for_another_tool_is_a_tool_mismatch(
        registry: Registry, tools: AskingTools) -> None:
    d = driver(registry, tools)
    first = first_round(d)
    assert refusal(retry(d, "two_steps", {"a": 1}, first, {"0": accept(name="x")})) \
        == "tool_mismatch"
    assert tools.runs["two_steps"] == 0


def test_a_state_replayed_with_other_arguments_is_an_arguments_mismatch(
        registry: Registry, tools: AskingTools) -> None:
    d = driver(registry, tools)
    first = first_round(d)
    assert refusal(retry(d, "greet", {"a": 2}, first, ANSWER)) == "arguments_mismatch"
    assert tools.runs["greet"] == 1


def test_a_state_replayed_by_another_principal_is_a_principal_mismatch(
        registry: Registry, tools: AskingTools) -> None:
    sealer = Sealer.ephemeral()
    first = first_round(driver(registry, tools, sealer=sealer, principal=USER))
    thief = driver(registry, tools, sealer=sealer, principal=OTHER)
    assert refusal(retry(thief, "greet", {"a": 1}, first, ANSWER)) == "principal_mismatch"
    assert tools.runs["greet"] == 1


def test_an_expired_state_is_refused_as_expired(registry: Registry,
                                                tools: AskingTools) -> None:
    d = driver(registry, tools, request_state_ttl_s=-1.0)
    first = first_round(d)
    assert refusal(retry(d, "greet", {"a": 1}, first, ANSWER)) == "expired"
    assert tools.runs["greet"] == 1


def test_a_state_from_a_gateway_with_another_key_is_unsealable(
        registry: Registry, tools: AskingTools) -> None:
    first = first_round(driver(registry, tools, sealer=Sealer.ephemeral()))
    other = driver(registry, tools, sealer=Sealer.ephemeral())
    assert refusal(retry(other, "greet", {"a": 1}, first, ANSWER)) == "unsealable"
    assert tools.runs["greet"] == 1


def test_a_call_begun_on_one_gateway_completes_on_another_sharing_the_key(
        registry: Registry, tools: AskingTools) -> None:
    shared = bytes(range(32))
    first = first_round(driver(registry, tools, sealer=Sealer([shared])))
    other = driver(registry, tools, sealer=Sealer([bytes(32), shared]))  # rotated: opens old
    done = retry(other, "greet", {"a": 1}, first, ANSWER)["result"]
    assert done["content"][0]["text"] == "Hello, Ada!"


def test_a_version_published_between_rounds_is_a_version_mismatch(
        registry: Registry, tools: AskingTools) -> None:
    d = driver(registry, tools)
    first = first_round(d)
    registry.publish(contract("greet", "1.1.0", {"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a"]}))
    assert refusal(retry(d, "greet", {"a": 1}, first, ANSWER)) == "version_mismatch"
    assert tools.runs["greet"] == 1


def test_a_version_retired_between_rounds_is_refused_by_the_schema_version_gate(
        registry: Registry, tools: AskingTools) -> None:
    d = driver(registry, tools)
    registry.publish(contract("greet", "1.1.0", {"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a"]}))
    first = d.call("greet", {"a": 1}, version="1.0.0")["result"]
    assert first["resultType"] == "input_required"
    registry.retire("greet", Version.parse("1.0.0"))
    response = d.request("tools/call", name="greet", arguments={"a": 1},
                         requestState=first["requestState"], inputResponses=ANSWER,
                         _meta={"schemaVersion": "1.0.0"})
    assert response["error"]["code"] == -32602
    assert response["error"]["data"]["reason"] == "schema_version_retired"
    assert tools.runs["greet"] == 1


def _resume(states: RequestStates, token: str) -> str:
    """The sealReason of resuming ``greet`` 1.0.0 for USER with ``token``."""
    with pytest.raises(JsonRpcError) as refused:
        states.resume({"requestState": token}, "greet", "1.0.0", {"a": 1}, USER)
    assert refused.value.rpc_code == -32602
    reason = refused.value.rpc_data["sealReason"]
    assert isinstance(reason, str)
    return reason


def test_a_token_sealed_for_another_purpose_is_a_purpose_mismatch() -> None:
    sealer = Sealer.ephemeral()
    cursor = sealer.seal("tools/list", {}, {"page": 1}, ttl_s=60, now=time.time())
    assert _resume(RequestStates(sealer), cursor) == "purpose_mismatch"


class _OtherShape(Sealer):
    """Opens what it sealed, then hands back a payload of another shape (as a token from an
    incompatible release would carry)."""

    def open_expiring(self, token: str, purpose: str, binding: Any, *, now: float
                      ) -> tuple[Any, float]:
        expiry = super().open_expiring(token, purpose, binding, now=now)[1]
        return {"answers": ["not", "a", "map"]}, expiry


def test_an_authentic_state_of_another_shape_is_malformed() -> None:
    states = RequestStates(_OtherShape([bytes(32)]))
    signal = InputRequired({"who": {"method": "roots/list", "params": {}}}, {})
    token = states.input_required(signal, "greet", "1.0.0", {"a": 1}, USER)["requestState"]
    assert _resume(states, token) == "malformed"
