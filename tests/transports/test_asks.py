"""Requests a legacy handler sends its client, over the in-process HTTP app and stdio: the
request travels on the call's stream with a server-chosen id, the response (a POST of the same
session, a stdio line) is routed back by id, and everything else a handler can meet is an
AskError with a stable code: the client's error, no answer in time (the client is then told
the request is cancelled), too many waiting, the session's end, no stream to carry it (JSON
mode), a result that is not an object. A response from another session is not routed; stateless
sessions declare no capabilities, so their asks are refused -32602 before anything is sent."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from bounds_kit import exchange, legacy_scope
from legacy_ask_kit import (
    ELICITING,
    SCHEMA,
    answer_of,
    elicit,
    make_app,
    messages,
    requests,
    respond,
    session,
    start,
)
from stream_kit import BOUND_S, INITIALIZED, Lines, demo_gateway, tool_call

from toolkeeper.errors import AskError
from toolkeeper.server import ToolContext
from toolkeeper.transports import HttpConfig, create_asgi_app
from toolkeeper.transports.asks import PendingAsks


def test_the_request_goes_on_the_calls_stream_and_its_response_comes_back_by_id() -> None:
    async def scenario() -> None:
        app, _ = make_app()
        session_id = await session(app, ELICITING)
        client, task = await start(app, session_id)
        (request,) = await requests(client, 1)
        assert request["method"] == "elicitation/create"
        assert request["params"] == {"mode": "form", "message": "Your name?",
                                     "requestedSchema": SCHEMA}
        assert dict(client.sent[0]["headers"])[b"content-type"] == b"text/event-stream"
        assert await respond(app, session_id, {"jsonrpc": "2.0", "id": request["id"],
                                                "result": {"action": "decline"}}) == 202
        assert await answer_of(client, task) == {"action": "decline"}
        assert len(app._legacy.asks) == 0

    asyncio.run(scenario())


@pytest.mark.parametrize(("response", "code"), [
    ({"error": {"code": -1, "message": "User rejected"}}, "ask.client_error"),
    ({"result": ["not", "an", "object"]}, "ask.bad_result"),
])
def test_an_error_or_a_result_that_is_no_object_is_an_ask_error(
        response: dict[str, Any], code: str) -> None:
    async def scenario() -> None:
        app, _ = make_app()
        session_id = await session(app, ELICITING)
        client, task = await start(app, session_id)
        (request,) = await requests(client, 1)
        await respond(app, session_id, {"jsonrpc": "2.0", "id": request["id"], **response})
        seen = await answer_of(client, task)
        assert seen["code"] == code
        if code == "ask.client_error":
            assert seen["data"]["error"] == response["error"]

    asyncio.run(scenario())


def test_a_response_from_another_session_is_not_routed() -> None:
    async def scenario() -> None:
        app, _ = make_app()
        owner, stranger = await session(app, ELICITING), await session(app, ELICITING)
        client, task = await start(app, owner)
        (request,) = await requests(client, 1)
        forged = {"jsonrpc": "2.0", "id": request["id"], "result": {"action": "accept",
                                                                      "content": {"name": "x"}}}
        assert await respond(app, stranger, forged) == 202
        for wrong_id in (True, [request["id"]], str(request["id"])):
            await respond(app, owner, {**forged, "id": wrong_id})
        assert not task.done() and len(app._legacy.asks) == 1
        await respond(app, owner, {"jsonrpc": "2.0", "id": request["id"],
                                    "result": {"action": "cancel"}})
        assert await answer_of(client, task) == {"action": "cancel"}

    asyncio.run(scenario())


def test_no_answer_in_time_is_ask_timeout_and_the_client_is_told_it_is_cancelled() -> None:
    async def scenario() -> None:
        app, _ = make_app(ask_timeout_s=0.05)
        session_id = await session(app, ELICITING)
        client, task = await start(app, session_id)
        seen = await answer_of(client, task)
        assert seen["code"] == "ask.timeout"
        request, cancelled = messages(client)[:2]
        assert cancelled["method"] == "notifications/cancelled"
        assert cancelled["params"]["requestId"] == request["id"]
        assert len(app._legacy.asks) == 0

    asyncio.run(scenario())


def test_asks_beyond_the_pending_bound_are_ask_busy() -> None:
    async def scenario() -> None:
        app, _ = make_app(max_pending_asks=1)
        session_id = await session(app, ELICITING)
        client, task = await start(app, session_id, "t.twice")
        (request,) = await requests(client, 1)
        await respond(app, session_id, {"jsonrpc": "2.0", "id": request["id"],
                                         "result": {"action": "decline"}})
        assert await answer_of(client, task) == ["answered", "ask.busy"]

    asyncio.run(scenario())


def test_one_session_cannot_take_every_pending_slot_from_the_others() -> None:
    async def scenario() -> None:
        app, _ = make_app(max_pending_asks=2, max_pending_asks_per_session=1)
        greedy, other = await session(app, ELICITING), await session(app, ELICITING)
        greedy_client, greedy_task = await start(app, greedy, "t.twice")
        (greedy_request,) = await requests(greedy_client, 1)
        other_client, other_task = await start(app, other)
        (other_request,) = await requests(other_client, 1)  # a slot was left for it
        for session_id, request in ((greedy, greedy_request), (other, other_request)):
            await respond(app, session_id, {"jsonrpc": "2.0", "id": request["id"],
                                            "result": {"action": "decline"}})
        assert await answer_of(greedy_client, greedy_task) == ["answered", "ask.busy"]
        assert await answer_of(other_client, other_task) == {"action": "decline"}

    asyncio.run(scenario())


@pytest.mark.parametrize(("asker", "bound"), [("greedy", "session"), ("third", "process")])
def test_a_busy_ask_names_the_bound_it_met(asker: str, bound: str) -> None:
    async def scenario() -> dict[str, Any]:
        asks = PendingAsks(max_pending=2, max_per_session=1)
        sent = asyncio.Event()

        async def write(message: dict[str, Any]) -> None:
            sent.set()

        waiting = []
        for owner in ("greedy", "other"):
            sent.clear()
            waiting.append(asyncio.ensure_future(asks.ask(owner, write, "roots/list", {})))
            await asyncio.wait_for(sent.wait(), BOUND_S)
        try:
            with pytest.raises(AskError) as refused:
                await asks.ask(asker, write, "roots/list", {})
        finally:
            for task in waiting:
                task.cancel()
            await asyncio.wait(waiting, timeout=BOUND_S)
        assert refused.value.code == "ask.busy" and len(asks) == 0
        return dict(refused.value.data)

    assert asyncio.run(scenario()) == {"method": "roots/list", "bound": bound, "limit": {
        "session": 1, "process": 2}[bound]}


def test_a_session_deleted_while_its_handler_waits_is_ask_gone() -> None:
    async def scenario() -> None:
        app, _ = make_app()
        session_id = await session(app, ELICITING)
        client, task = await start(app, session_id)
        await requests(client, 1)
        deleted = await exchange(app, legacy_scope("DELETE", session_id), b"")
        assert deleted.sent[0]["status"] == 200
        assert (await answer_of(client, task))["code"] == "ask.gone"
        assert len(app._legacy.asks) == 0

    asyncio.run(scenario())


def test_in_json_mode_nothing_can_carry_a_request_so_the_ask_is_unavailable() -> None:
    async def scenario() -> None:
        app, _ = make_app(json_response=True)
        session_id = await session(app, ELICITING)
        answer = await exchange(app, legacy_scope("POST", session_id),
                                json.dumps(tool_call("t.elicit", 1, era="legacy")).encode())
        body = json.loads(answer.body())
        assert json.loads(body["result"]["content"][0]["text"])["code"] == "ask.unavailable"

    asyncio.run(scenario())


@pytest.mark.parametrize("mode", ["undeclared", "stateless"])
def test_without_a_declared_capability_the_ask_is_minus_32602_before_anything_is_sent(
        mode: str) -> None:
    async def scenario() -> dict[str, Any]:
        gateway = demo_gateway({"t.elicit": elicit},
                               legacy_sessions="stateless" if mode == "stateless" else "stateful")
        app = create_asgi_app(gateway.kernel, HttpConfig(), changes=gateway.changes)
        session_id = None if mode == "stateless" else await session(app, {"sampling": {}})
        scope = legacy_scope("POST", session_id)
        answer = await exchange(app, scope, json.dumps(tool_call("t.elicit", 1, era="legacy"))
                                .encode())
        assert dict(answer.sent[0]["headers"])[b"content-type"] == b"application/json"
        error: dict[str, Any] = json.loads(answer.body())["error"]
        return error

    error = asyncio.run(scenario())
    assert (error["code"], error["data"]) == (-32602, {"requiredCapabilities": ELICITING})


def test_on_stdio_the_request_and_its_response_are_lines_of_the_pipe() -> None:
    async def scenario() -> None:
        gateway = demo_gateway({"t.elicit": elicit})
        lines = Lines()
        running = asyncio.ensure_future(lines.server(gateway).run())
        lines.put({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": ELICITING,
            "clientInfo": {"name": "t", "version": "1"}}}, INITIALIZED,
            tool_call("t.elicit", 1, era="legacy"))
        async with asyncio.timeout(BOUND_S):
            while not any(m.get("method") == "elicitation/create" for m in lines.out):
                lines.wrote.clear()
                await lines.wrote.wait()
        request = next(m for m in lines.out if m.get("method") == "elicitation/create")
        lines.put({"jsonrpc": "2.0", "id": request["id"], "result": {
            "action": "accept", "content": {"name": "Ada"}}})
        async with asyncio.timeout(BOUND_S):
            while not lines.answers(1):  # (the server's own request may have id 1 too)
                lines.wrote.clear()
                await lines.wrote.wait()
        (final,) = lines.answers(1)
        assert json.loads(final["result"]["content"][0]["text"]) == {
            "action": "accept", "content": {"name": "Ada"}}
        lines.put(None)
        await asyncio.wait_for(running, BOUND_S)

    asyncio.run(scenario())


def test_an_ask_made_after_its_session_was_deleted_is_ask_gone_at_once() -> None:
    # Nothing can answer it (the session's POSTs are 404 now): it must not wait the whole
    # ask timeout holding a pending slot, nor be written to the client.
    async def scenario() -> None:
        release = asyncio.Event()

        async def late(arguments: dict[str, Any], ctx: ToolContext) -> str:
            await release.wait()
            return await elicit(arguments, ctx)

        gateway = demo_gateway({"t.late": late})
        app = create_asgi_app(gateway.kernel, HttpConfig(ask_timeout_s=BOUND_S * 10),
                              changes=gateway.changes)
        session_id = await session(app, ELICITING)
        client, task = await start(app, session_id, "t.late")
        deleted = await exchange(app, legacy_scope("DELETE", session_id), b"")
        assert deleted.sent[0]["status"] == 200
        release.set()
        await asyncio.wait_for(task, BOUND_S)
        # Nothing was written before the answer, so it is a plain JSON body, not a stream.
        final = json.loads(client.body())
        assert final["id"] == 1
        assert json.loads(final["result"]["content"][0]["text"])["code"] == "ask.gone"
        assert len(app._legacy.asks) == 0

    asyncio.run(scenario())


def test_a_session_that_declared_url_elicitation_only_is_never_sent_a_form() -> None:
    async def scenario() -> dict[str, Any]:
        app, _ = make_app()
        session_id = await session(app, {"elicitation": {"url": {}}})
        answer = await exchange(app, legacy_scope("POST", session_id),
                                json.dumps(tool_call("t.elicit", 1, era="legacy")).encode())
        assert dict(answer.sent[0]["headers"])[b"content-type"] == b"application/json"
        error: dict[str, Any] = json.loads(answer.body())["error"]
        return error

    error = asyncio.run(scenario())
    assert (error["code"], error["data"]) == (
        -32602, {"requiredCapabilities": {"elicitation": {"form": {}}}})
