"""However a legacy session ends (deleted, evicted by a newer session, expired unused), the
requests its handlers await from the client fail at once with ``ask.gone``: nothing can answer
them any more (the session's POSTs are 404), so they must not hold a pending slot for the
whole ask timeout."""

from __future__ import annotations

import asyncio
import json

from bounds_kit import exchange, legacy_scope
from legacy_ask_kit import ELICITING, answer_of, elicit, requests, session, start
from stream_kit import BOUND_S, demo_gateway

from toolkeeper.protocol import SessionTable
from toolkeeper.transports import HttpConfig, StreamableHTTPApp, create_asgi_app

LONG_ASK_S = BOUND_S * 30
"""An ask timeout no test waits out: an ask that ends within BOUND_S ended for another reason."""


def _app(sessions: SessionTable) -> StreamableHTTPApp:
    gateway = demo_gateway({"t.elicit": elicit}, sessions=sessions)
    return create_asgi_app(gateway.kernel, HttpConfig(ask_timeout_s=LONG_ASK_S),
                           changes=gateway.changes)


def test_an_ask_waiting_when_a_newer_session_evicts_its_session_is_ask_gone_at_once() -> None:
    async def scenario() -> None:
        app = _app(SessionTable(max_sessions=1))
        session_id = await session(app, ELICITING)
        client, task = await start(app, session_id)
        await requests(client, 1)
        await session(app, ELICITING)  # the table holds one session: the first goes
        seen = await answer_of(client, task)
        assert seen["code"] == "ask.gone"
        assert len(app._legacy.asks) == 0
        assert (await exchange(app, legacy_scope("POST", session_id), json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/initialized"}).encode())
        ).sent[0]["status"] == 404

    asyncio.run(scenario())


def test_an_ask_waiting_when_its_session_expires_unused_is_ask_gone_at_once() -> None:
    async def scenario() -> None:
        app = _app(SessionTable(idle_timeout_s=BOUND_S / 4))
        session_id = await session(app, ELICITING)
        client, task = await start(app, session_id)
        await requests(client, 1)
        # No request of any session follows: the expiry itself must end the wait.
        seen = await answer_of(client, task)
        assert seen["code"] == "ask.gone"
        assert len(app._legacy.asks) == 0

    asyncio.run(scenario())


def test_a_session_used_meanwhile_does_not_expire_under_its_waiting_ask() -> None:
    async def scenario() -> None:
        idle_s = BOUND_S / 2
        app = _app(SessionTable(idle_timeout_s=idle_s))
        session_id = await session(app, ELICITING)
        client, task = await start(app, session_id)
        (request,) = await requests(client, 1)
        loop = asyncio.get_running_loop()
        until = loop.time() + idle_s * 1.5  # the ask wakes at least once to look again
        while loop.time() < until:  # each request of the session renews it
            assert not task.done()
            await exchange(app, legacy_scope("POST", session_id), json.dumps(
                {"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                    "progressToken": "x", "progress": 1}}).encode())
            await asyncio.wait({task}, timeout=idle_s / 4)
        await exchange(app, legacy_scope("POST", session_id), json.dumps(
            {"jsonrpc": "2.0", "id": request["id"], "result": {"action": "decline"}}).encode())
        assert await answer_of(client, task) == {"action": "decline"}

    asyncio.run(scenario())
