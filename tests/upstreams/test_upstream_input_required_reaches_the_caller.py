"""A modern upstream's ``input_required`` (the official SDK's own resolver flow, its
``requestState`` sealed by the SDK) reaches a modern caller as the gateway's own: the
upstream's ``inputRequests`` as given, and the gateway's sealed ``requestState`` carrying
the upstream's inside it (bound to the principal, the exposed tool, its version and the
arguments). The retry is opened by the gateway (a tampered, another tool's, another
principal's or a spent write state is refused -32602 ``invalid_request_state`` with its
``sealReason``) and forwarded with the answers and the upstream's own state, which the SDK
verifies. A legacy caller is bridged: the upstream's ask is a request on its stream."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import mcp_types as types
import pytest
from forwarding_kit import Forwarder, Imported, by_token, serving_forwarder
from mcp import Client

from toolkeeper.client import ClientTimeouts, Target, connect
from toolkeeper.upstreams import UpstreamDefinition
from toolkeeper.upstreams.forwarding import INPUT_REQUIRED, MAX_ROUNDS, UPSTREAM_META_KEY

GREET = {"type": "object", "properties": {"greeting": {"type": "string"}},
         "required": ["greeting"]}
TOKENS = {"alice-secret": "key-alice", "bob-secret": "key-bob"}
BOUNDS = ClientTimeouts(probe_s=10, request_s=20)
ASKS = {"elicitation": {}}
ADA = {"action": "accept", "content": {"name": "Ada"}}


@pytest.fixture(scope="module")
def forwarder(sdk_url: str) -> Iterator[Forwarder]:
    definitions = [UpstreamDefinition("sdk", url=sdk_url, prefix="sdk.", era="modern",
                                      call_timeout_s=15),
                   UpstreamDefinition("w", url=sdk_url, prefix="w.", era="modern",
                                      call_timeout_s=15)]
    imported = [Imported("sdk", "greet", GREET, prefix="sdk."),
                Imported("sdk", "introduce", prefix="sdk."),
                Imported("sdk", "insists", prefix="sdk."),
                Imported("w", "greet", GREET, prefix="w.", side_effect="write")]
    with serving_forwarder(definitions, imported,
                           resolve_principal=by_token(TOKENS)) as served:
        yield served


async def _rounds(url: str, name: str, *retries: tuple[str, dict[str, Any] | None, Any],
                  arguments: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Round one of ``name`` as alice, then each retry ``(token, inputResponses, state)``
    where a state of ``None`` echoes the first round's and a callable edits it."""
    arguments = arguments or {"greeting": "Hi"}
    replies: list[dict[str, Any]] = []
    sessions = {}
    try:
        for token in TOKENS:
            sessions[token] = await connect(Target.from_url(url), era="modern", token=token,
                                            timeouts=BOUNDS)
        first = await sessions["alice-secret"].call_tool(name, arguments, capabilities=ASKS)
        replies.append(first.result or {"error": first.error})
        for token, responses, state in retries:
            given = replies[0].get("requestState")
            retry: dict[str, Any] = {"requestState": state(given) if callable(state)
                                     else state or given}
            if responses is not None:
                retry["inputResponses"] = responses
            reply = await sessions[token].call_tool(name, arguments, capabilities=ASKS,
                                                    retry=retry)
            replies.append(reply.result or {"error": reply.error})
    finally:
        for session in sessions.values():
            await session.aclose()
    return replies


def _answers(reply: dict[str, Any]) -> dict[str, Any]:
    return {key: ADA for key in reply["inputRequests"]}


def test_the_upstream_asks_reach_a_modern_caller_under_the_gateways_sealed_state(
        forwarder: Forwarder) -> None:
    async def run() -> list[dict[str, Any]]:
        first = await _rounds(forwarder.url, "sdk.greet")
        keys = {key: ADA for key in first[0]["inputRequests"]}
        return first + (await _rounds(forwarder.url, "sdk.greet",
                                      ("alice-secret", keys, None)))[1:]
    asked, done = anyio.run(run)
    assert asked["resultType"] == "input_required"
    [(key, request)] = asked["inputRequests"].items()
    assert key.endswith("ask_name")  # the SDK's key, as the SDK gave it
    assert request["method"] == "elicitation/create"
    assert request["params"]["message"] == "What is your name?"
    # the gateway's state, not the SDK's ("v1." tokens); the SDK's travels sealed inside it
    assert not asked["requestState"].startswith("v1.")
    assert done["resultType"] == "complete" and done["isError"] is False
    assert done["content"][0]["text"] == "Hi, Ada!"


def _sdk_greet(url: str, mode: str, name: str, greeting: str) -> tuple[list[str], Any]:
    """The official SDK client, in ``mode``, calls ``sdk.greet`` answering its one question
    with ``name``: what it was asked, and the call's result."""
    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": name})

    async def run() -> Any:
        with anyio.fail_after(30):
            async with Client(url, mode=mode, elicitation_callback=elicit) as client:
                return await client.call_tool("sdk.greet", {"greeting": greeting})
    return asked, anyio.run(run)


def test_the_official_sdk_client_completes_a_forwarded_input_required_call(
        forwarder: Forwarder) -> None:
    asked, result = _sdk_greet(forwarder.url, "2026-07-28", "Grace", "Hello")
    assert asked == ["What is your name?"]
    assert (result.is_error, result.content[0].text) == (False, "Hello, Grace!")


def test_each_round_of_a_multi_round_upstream_call_reaches_the_caller(
        forwarder: Forwarder) -> None:
    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        content = {"name": "Ada"} if len(asked) == 1 else {"colour": "teal"}
        return types.ElicitResult(action="accept", content=content)

    async def run() -> Any:
        with anyio.fail_after(30):
            async with Client(forwarder.url, mode="2026-07-28",
                              elicitation_callback=elicit) as client:
                return await client.call_tool("sdk.introduce", {})
    result = anyio.run(run)
    # the second round's upstream state (with the first answer) came back sealed, then out
    assert asked == ["What is your name?", "Ada, your colour?"]
    assert (result.is_error, result.content[0].text) == (False, "Ada likes teal")


def _tampered(state: str) -> str:
    return state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")


@pytest.mark.parametrize(("name", "retry", "reason"), [
    ("sdk.greet", ("alice-secret", None, _tampered), "unsealable"),
    ("sdk.greet", ("bob-secret", None, None), "principal_mismatch"),
])
def test_a_retry_the_gateways_state_does_not_bind_is_refused_before_forwarding(
        forwarder: Forwarder, name: str, retry: tuple[str, Any, Any], reason: str) -> None:
    first, refused = anyio.run(_rounds, forwarder.url, name, retry)
    assert first["resultType"] == "input_required"
    error = refused["error"]
    assert error["code"] == -32602
    assert error["data"]["reason"] == "invalid_request_state"
    assert error["data"]["sealReason"] == reason


def test_another_tools_state_is_refused(forwarder: Forwarder) -> None:
    async def run() -> dict[str, Any]:
        [first] = await _rounds(forwarder.url, "sdk.greet")
        [_, refused] = await _rounds(forwarder.url, "w.greet",
                                     ("alice-secret", _answers(first),
                                      first["requestState"]))
        return refused
    error = anyio.run(run)["error"]
    assert (error["code"], error["data"]["sealReason"]) == (-32602, "tool_mismatch")


def test_a_write_tools_state_runs_the_upstream_once(forwarder: Forwarder) -> None:
    async def run() -> list[dict[str, Any]]:
        [first] = await _rounds(forwarder.url, "w.greet")
        answers = _answers(first)
        return await _rounds(forwarder.url, "w.greet", ("alice-secret", answers, None),
                             ("alice-secret", answers, None))
    _, done, again = anyio.run(run)
    assert done["content"][0]["text"] == "Hi, Ada!"
    assert again["error"]["data"]["sealReason"] == "replayed"


def test_a_caller_that_cannot_answer_the_upstreams_ask_is_told_its_missing_capability(
        forwarder: Forwarder) -> None:
    async def run() -> Any:
        async with await connect(Target.from_url(forwarder.url), era="modern",
                                 token="alice-secret", timeouts=BOUNDS) as session:
            return await session.call_tool("sdk.greet", {"greeting": "Hi"})
    reply = anyio.run(run)
    # the upstream was declared only what the caller declared (nothing), and refused
    assert reply.error["code"] == -32021
    assert reply.error["data"]["upstream"] == "sdk"


def test_an_upstream_ask_the_caller_did_not_declare_is_never_passed_on(
        forwarder: Forwarder) -> None:
    async def run() -> Any:
        async with await connect(Target.from_url(forwarder.url), era="modern",
                                 token="alice-secret", timeouts=BOUNDS) as session:
            return await session.call_tool("sdk.insists", {}, capabilities={"roots": {}})
    reply = anyio.run(run)
    # insists asks whatever it was declared: the gateway refuses it, as for its own asks
    assert reply.result is None
    assert reply.error["code"] == -32021
    assert reply.error["data"]["requiredCapabilities"] == {"elicitation": {}}
    assert "upstream" not in reply.error["data"]


def test_a_legacy_caller_is_asked_on_its_stream_and_the_upstream_retried(
        forwarder: Forwarder) -> None:
    asked, result = _sdk_greet(forwarder.url, "legacy", "Lin", "Hey")
    assert asked == ["What is your name?"]
    assert (result.is_error, result.content[0].text) == (False, "Hey, Lin!")


def test_a_bridged_call_ends_after_its_rounds_as_an_error_result_naming_the_upstream(
        forwarder: Forwarder) -> None:
    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={})

    async def run() -> Any:
        with anyio.fail_after(30):
            async with Client(forwarder.url, mode="legacy",
                              elicitation_callback=elicit) as client:
                return await client.call_tool("sdk.insists", {})
    result = anyio.run(run)
    # each round's state went back to the upstream (its round count grew); the last round's
    # ask was not put to the caller
    assert asked == [f"Again? (round {n})" for n in range(1, MAX_ROUNDS)]
    assert result.is_error is True
    assert result.meta[UPSTREAM_META_KEY] == {"upstream": "sdk", "code": INPUT_REQUIRED}
