"""A legacy call that ends while its handler awaits the client's answer to a request (the
call's timeout, the client cancelling the call, the session ending) tells the client, on the
call's stream, that the request is cancelled (``notifications/cancelled`` naming the request's
id), as an ask that times out does; a request the client already answered is never cancelled."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from bounds_kit import exchange, legacy_scope
from legacy_ask_kit import ELICITING, SCHEMA, messages, requests, session, start
from stream_kit import BOUND_S, Client, demo_gateway

from toolkeeper.protocol.envelope import InboundResponse
from toolkeeper.server import ToolContext
from toolkeeper.server.limits import LimitsSettings, ToolLimits, build_limits
from toolkeeper.transports import HttpConfig, StreamableHTTPApp, create_asgi_app

LONG_ASK_S = BOUND_S * 30


async def elicit_then_hold(arguments: dict[str, Any], ctx: ToolContext) -> str:
    """Asks once, then waits until cancelled."""
    await ctx.elicit("Your name?", SCHEMA)
    await asyncio.Event().wait()
    return "never"


async def elicit_only(arguments: dict[str, Any], ctx: ToolContext) -> str:
    return json.dumps(dict(await ctx.elicit("Your name?", SCHEMA)))


def _app(**options: Any) -> StreamableHTTPApp:
    gateway = demo_gateway({"t.elicit": elicit_only, "t.hold": elicit_then_hold}, **options)
    return create_asgi_app(gateway.kernel, HttpConfig(ask_timeout_s=LONG_ASK_S),
                           changes=gateway.changes)


def _cancels(client: Client) -> list[Any]:
    return [m["params"]["requestId"] for m in messages(client)
            if m.get("method") == "notifications/cancelled"]


async def _cancel_call(app: StreamableHTTPApp, session_id: str) -> None:
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled",
              "params": {"requestId": 1, "reason": "user stop"}}
    answer = await exchange(app, legacy_scope("POST", session_id), json.dumps(cancel).encode())
    assert answer.sent[0]["status"] == 202


async def _final(client: Client, task: asyncio.Task[None]) -> dict[str, Any]:
    await asyncio.wait_for(task, BOUND_S)
    final: dict[str, Any] = messages(client)[-1]
    assert final["id"] == 1
    return final


def test_a_call_timing_out_while_its_ask_waits_cancels_the_ask_on_the_stream() -> None:
    async def scenario() -> None:
        app = _app(limits=build_limits(LimitsSettings(
            tools={"t.elicit": ToolLimits(call_timeout_s=BOUND_S / 8)})))
        session_id = await session(app, ELICITING)
        client, task = await start(app, session_id)
        (request,) = await requests(client, 1)
        final = await _final(client, task)
        assert final["result"]["isError"] is True
        assert _cancels(client) == [request["id"]]
        assert len(app._legacy.asks) == 0

    asyncio.run(scenario())


def test_the_client_cancelling_the_call_while_its_ask_waits_cancels_the_ask_too() -> None:
    async def scenario() -> None:
        app = _app()
        session_id = await session(app, ELICITING)
        client, task = await start(app, session_id)
        (request,) = await requests(client, 1)
        await _cancel_call(app, session_id)
        final = await _final(client, task)
        assert final["error"]["code"] == -32800
        assert _cancels(client) == [request["id"]]
        assert len(app._legacy.asks) == 0

    asyncio.run(scenario())


def test_the_session_ending_while_an_ask_waits_cancels_the_ask_on_the_stream() -> None:
    async def scenario() -> None:
        app = _app()
        session_id = await session(app, ELICITING)
        client, task = await start(app, session_id)
        (request,) = await requests(client, 1)
        deleted = await exchange(app, legacy_scope("DELETE", session_id), b"")
        assert deleted.sent[0]["status"] == 200
        await asyncio.wait_for(task, BOUND_S)
        assert _cancels(client) == [request["id"]]

    asyncio.run(scenario())


def test_an_ask_the_client_answered_is_never_cancelled_when_the_call_ends() -> None:
    async def scenario() -> None:
        app = _app()
        session_id = await session(app, ELICITING)
        client, task = await start(app, session_id, "t.hold")
        (request,) = await requests(client, 1)
        answer = await exchange(app, legacy_scope("POST", session_id), json.dumps(
            {"jsonrpc": "2.0", "id": request["id"], "result": {"action": "decline"}}).encode())
        assert answer.sent[0]["status"] == 202
        await _cancel_call(app, session_id)
        final = await _final(client, task)
        assert final["error"]["code"] == -32800
        assert _cancels(client) == []

    asyncio.run(scenario())


def test_an_answered_ask_is_not_cancelled_by_a_cancel_arriving_before_its_handler_resumes(
) -> None:
    async def scenario() -> None:
        app = _app()
        session_id = await session(app, ELICITING)
        client, task = await start(app, session_id)
        (request,) = await requests(client, 1)
        # The answer and the call's cancel in one turn of the loop, as the routing of two
        # POSTs read together does it: the handler has its answer but has not run since.
        assert app._legacy.asks.answer(session_id, InboundResponse(
            id=request["id"], result={"action": "decline"}))
        app._legacy.in_flight[(session_id, 1)]()
        final = await _final(client, task)
        assert final["error"]["code"] == -32800
        assert _cancels(client) == []

    asyncio.run(scenario())
