"""A sealed ``requestState`` runs a ``write`` or ``destructive`` tool at most once: the state is
spent (in the registry store) before the handler runs, so a replay, sequential or concurrent,
is refused ``replayed`` and the side effect happens once; ``read`` and ``idempotent_write``
states may be resumed again. The state's lifetime is ``request_state_ttl_s``. A request with
``inputResponses`` and no ``requestState`` is a first round of a ``write`` or ``destructive``
tool; a ``read`` or ``idempotent_write`` tool takes the answers to the keys it asks (MRTR,
2026-07-28)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from typing import Any

import pytest
from ask_kit import ALL_CAPABILITIES, NAME_SCHEMA, accept
from gateway_kit import USER, Driver, contract, gateway_for

from toolkeeper.errors import JsonRpcError, StoreError
from toolkeeper.protocol import Pending, Reply, decode_message
from toolkeeper.protocol.sealing import Sealer
from toolkeeper.registry import MemoryStore, Registry
from toolkeeper.server import ToolContext, ToolHandlers
from toolkeeper.server.asking import InputRequired
from toolkeeper.server.resuming import PURGE_EVERY_S, RequestStates, SealedState, SpentStates

SIDE_EFFECTS = ("read", "idempotent_write", "write", "destructive")
ONCE = ("write", "destructive")
CONFIRM = {"confirm": accept(name="yes")}
OPEN = {"type": "object", "properties": {"a": {"type": "integer"}}}


class Effects:
    """One tool per side effect, each asking ``confirm`` then doing its effect:
    ``done[name]`` counts the effects (the handler's runs to completion)."""

    def __init__(self) -> None:
        self.done: Counter[str] = Counter()

    def handlers(self) -> ToolHandlers:
        handlers = ToolHandlers()
        for side_effect in SIDE_EFFECTS:
            handlers.bind(side_effect, self._tool(side_effect))
        return handlers

    def _tool(self, name: str) -> Any:
        async def tool(arguments: dict[str, Any], ctx: ToolContext) -> str:
            await ctx.elicit("Go ahead?", NAME_SCHEMA, key="confirm")
            self.done[name] += 1
            return f"{name} done"
        return tool


@pytest.fixture
def effects(registry: Registry) -> Effects:
    for side_effect in SIDE_EFFECTS:
        registry.publish(contract(side_effect, "1.0.0", OPEN,
                                  sideEffect=side_effect))
    return Effects()


def _driver(registry: Registry, effects: Effects, **options: Any) -> Driver:
    return Driver(gateway_for(registry, effects.handlers(), **options).kernel,
                  capabilities=ALL_CAPABILITIES)


def _first_state(d: Driver, name: str) -> str:
    first = d.call(name, {"a": 1})["result"]
    assert first["resultType"] == "input_required"
    state = first["requestState"]
    assert isinstance(state, str)
    return state


def _retry(d: Driver, name: str, state: str) -> dict[str, Any]:
    return d.request("tools/call", name=name, arguments={"a": 1}, requestState=state,
                     inputResponses=CONFIRM)


def _seal_reason(response: dict[str, Any]) -> str:
    error = response["error"]
    assert error["code"] == -32602, response
    assert (error["data"]["reason"], error["data"]["path"]) == ("invalid_request_state",
                                                                "$.params.requestState")
    reason = error["data"]["sealReason"]
    assert isinstance(reason, str)
    return reason


@pytest.mark.parametrize("name", ONCE)
def test_a_completed_write_state_replayed_is_refused_and_the_effect_happened_once(
        registry: Registry, effects: Effects, name: str) -> None:
    d = _driver(registry, effects)
    state = _first_state(d, name)
    done = _retry(d, name, state)["result"]
    assert done["content"] == [{"type": "text", "text": f"{name} done"}]
    for _ in range(3):
        assert _seal_reason(_retry(d, name, state)) == "replayed"
    assert effects.done[name] == 1
    # The call itself may be made again: afresh, it asks again and gets a state of its own.
    fresh = _first_state(d, name)
    assert fresh != state
    assert _retry(d, name, fresh)["result"]["content"][0]["text"] == f"{name} done"
    assert effects.done[name] == 2


@pytest.mark.parametrize("name", ["read", "idempotent_write"])
def test_a_read_or_idempotent_state_may_be_resumed_again(
        registry: Registry, effects: Effects, name: str) -> None:
    d = _driver(registry, effects)
    state = _first_state(d, name)
    for _ in range(3):
        assert _retry(d, name, state)["result"]["content"][0]["text"] == f"{name} done"
    assert effects.done[name] == 3


def test_a_replay_is_refused_on_another_gateway_sharing_the_registry(
        registry: Registry, effects: Effects) -> None:
    sealer = Sealer([bytes(range(32))])
    one = _driver(registry, effects, sealer=sealer)
    other = _driver(registry, effects, sealer=sealer)
    state = _first_state(one, "write")
    assert "result" in _retry(one, "write", state)
    assert _seal_reason(_retry(other, "write", state)) == "replayed"
    assert effects.done["write"] == 1


def test_of_two_concurrent_retries_with_one_state_exactly_one_runs(
        registry: Registry, effects: Effects) -> None:
    d = _driver(registry, effects)
    state = _first_state(d, "destructive")

    def message(request_id: int) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {
            "name": "destructive", "arguments": {"a": 1}, "requestState": state,
            "inputResponses": CONFIRM, "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": ALL_CAPABILITIES}}}

    pending = [d.kernel.handle_stream_message(d.conn, message(i)) for i in (10, 11)]
    assert all(isinstance(p, Pending) for p in pending)

    async def both() -> list[Reply]:
        async def emit(message: dict[str, Any]) -> None:
            return None
        return list(await asyncio.gather(*(p.complete(emit) for p in pending
                                           if isinstance(p, Pending))))

    replies = [decode_message(reply.body) for reply in asyncio.run(both())]
    ran = [r for r in replies if "result" in r]
    refused = [r for r in replies if "error" in r]
    assert (len(ran), len(refused)) == (1, 1)
    assert _seal_reason(refused[0]) == "replayed"
    assert effects.done["destructive"] == 1


def test_a_state_that_asked_again_is_spent_and_the_new_state_carries_the_call(
        registry: Registry) -> None:
    registry.publish(contract("twice", "1.0.0", OPEN, sideEffect="write"))
    done: list[str] = []

    async def twice(arguments: dict[str, Any], ctx: ToolContext) -> str:
        first = await ctx.elicit("Sure?", NAME_SCHEMA, key="one")
        second = await ctx.elicit("Really sure?", NAME_SCHEMA, key="two")
        done.append(f"{first['content']['name']}/{second['content']['name']}")
        return "written"

    handlers = ToolHandlers()
    handlers.bind("twice", twice)
    d = Driver(gateway_for(registry, handlers).kernel, capabilities=ALL_CAPABILITIES)
    state = _first_state(d, "twice")
    again = d.request("tools/call", name="twice", arguments={"a": 1}, requestState=state,
                      inputResponses={"one": accept(name="a")})["result"]
    assert again["resultType"] == "input_required"
    replay = d.request("tools/call", name="twice", arguments={"a": 1}, requestState=state,
                       inputResponses={"one": accept(name="a")})
    assert _seal_reason(replay) == "replayed"
    final = d.request("tools/call", name="twice", arguments={"a": 1},
                      requestState=again["requestState"],
                      inputResponses={"two": accept(name="b")})["result"]
    assert final["content"] == [{"type": "text", "text": "written"}]
    assert done == ["a/b"]


@pytest.mark.parametrize("name", ONCE)
def test_input_responses_without_a_request_state_are_a_first_round_of_a_write(
        registry: Registry, effects: Effects, name: str) -> None:
    # mrtr.mdx (2026-07-28): every InputRequiredResult of this gateway has a requestState,
    # which a retry MUST echo; a tool that runs once per sealed state runs only on answers to
    # asks it made, so responses without a state are ignored and the ask is asked.
    d = _driver(registry, effects)
    result = d.request("tools/call", name=name, arguments={"a": 1},
                       inputResponses=CONFIRM)["result"]
    assert result["resultType"] == "input_required"
    assert list(result["inputRequests"]) == ["confirm"]
    assert isinstance(result["requestState"], str)
    assert effects.done[name] == 0


@pytest.mark.parametrize("name", ("read", "idempotent_write"))
def test_input_responses_without_a_request_state_answer_a_repeatable_tool(
        registry: Registry, effects: Effects, name: str) -> None:
    # mrtr.mdx (2026-07-28): "the server SHOULD ignore any information it does not
    # recognize or need": the key the tool asks is answered, the extra keys are ignored.
    d = _driver(registry, effects)
    result = d.request("tools/call", name=name, arguments={"a": 1},
                       inputResponses={**CONFIRM, "unknown_extra_key": accept(name="x")}
                       )["result"]
    assert result.get("resultType", "complete") == "complete", result
    assert result["content"] == [{"type": "text", "text": f"{name} done"}]
    assert effects.done[name] == 1


def test_input_responses_without_a_request_state_that_answer_no_ask_are_a_first_round(
        registry: Registry, effects: Effects) -> None:
    d = _driver(registry, effects)
    result = d.request("tools/call", name="read", arguments={"a": 1},
                       inputResponses={"another": accept(name="x")})["result"]
    assert result["resultType"] == "input_required"
    assert list(result["inputRequests"]) == ["confirm"]
    assert effects.done["read"] == 0


def test_a_state_lives_for_the_configured_lifetime_and_is_expired_after() -> None:
    now = [1_000_000.0]
    states = RequestStates(Sealer.ephemeral(), ttl_s=5.0, clock=lambda: now[0])
    signal = InputRequired({"confirm": {"method": "elicitation/create", "params": {}}}, {})
    token = states.input_required(signal, "write", "1.0.0", {"a": 1}, USER)["requestState"]
    now[0] += 4.999
    assert states.resume({"requestState": token}, "write", "1.0.0", {"a": 1}, USER)
    now[0] += 0.001
    with pytest.raises(JsonRpcError) as refused:
        states.resume({"requestState": token}, "write", "1.0.0", {"a": 1}, USER)
    assert refused.value.rpc_code == -32602
    assert refused.value.rpc_data["sealReason"] == "expired"
    assert states.ttl_s == 5.0


def test_the_gateway_seals_states_for_request_state_ttl_s(registry: Registry,
                                                         effects: Effects) -> None:
    sealer = Sealer([bytes(range(32))])
    d = _driver(registry, effects, sealer=sealer, request_state_ttl_s=42.0)
    before = time.time()
    state = _first_state(d, "write")
    after = time.time()
    _, expires_at = sealer.open_expiring(state, "tools/call", {
        "tool": "write", "version": "1.0.0",
        "arguments": _arguments_digest({"a": 1}),
        "principal": f"{USER.tenant}\n{USER.credential or ''}"}, now=after)
    assert before + 42.0 <= expires_at <= after + 42.0


def _arguments_digest(arguments: dict[str, Any]) -> str:
    from toolkeeper.server.calllog import arguments_digest
    return arguments_digest(arguments)


def test_spending_purges_expired_records_at_most_once_a_minute() -> None:
    store = MemoryStore()
    now = [1000.0]
    spent = SpentStates(store, clock=lambda: now[0])
    assert spent.spend(SealedState("a", 1010.0))
    assert not spent.spend(SealedState("a", 1010.0))
    assert spent.spend(SealedState("b", 2000.0))
    now[0] = 1011.0  # "a" has expired, but the last purge was under a minute ago
    assert store.purge_spent_states(0.0) == 0  # (nothing at or before 0)
    assert not spent.spend(SealedState("a", 1010.0))
    now[0] = 1000.0 + PURGE_EVERY_S
    assert spent.spend(SealedState("c", 3000.0))  # purges "a" first
    assert spent.spend(SealedState("a", 1010.0))  # its record was dropped with its expiry
    assert store.purge_spent_states(2500.0) == 2  # "a" and "b"


class _FailingStore(MemoryStore):
    """A store whose spent-state writes fail (as a locked or read-only database would)."""

    def spend_state(self, digest: str, expires_at: float) -> bool:
        raise StoreError("the registry stayed locked", code="registry.busy")


def test_a_state_that_cannot_be_recorded_as_spent_is_refused_and_never_runs(
        effects: Effects, caplog: pytest.LogCaptureFixture) -> None:
    registry = Registry(_FailingStore())
    for side_effect in SIDE_EFFECTS:
        registry.publish(contract(side_effect, "1.0.0", OPEN, sideEffect=side_effect))
    d = _driver(registry, effects)
    state = _first_state(d, "write")
    with caplog.at_level(logging.WARNING, logger="toolkeeper.server"):
        error = _retry(d, "write", state)["error"]
    assert (error["code"], error["message"]) == (-32603, "Internal error")
    assert effects.done["write"] == 0
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        "tool write 1.0.0: the request state could not be recorded as spent "
        "(registry.busy); the call is refused"]
    assert not any(r.exc_info for r in caplog.records)
    # A read tool's state is never recorded, so the same store failure does not touch it.
    read_state = _first_state(d, "read")
    assert _retry(d, "read", read_state)["result"]["content"][0]["text"] == "read done"
