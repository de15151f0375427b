"""Legacy HTTP cancellation: a ``notifications/cancelled`` POST in a session cancels that
session's request with that id while its handler runs; the request is answered -32800
(mcp-wire 5), the call log records ``cancelled``, and nothing else is touched. A call the
server itself cancels at shutdown is answered 503, not raised into the server."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from bounds_kit import app_for, initialize, legacy_scope, small_log_gateway
from stream_kit import BOUND_S, Client, cancel, outcomes, tool_call

from toolkeeper.protocol.codes import REQUEST_CANCELLED
from toolkeeper.server import ToolContext
from toolkeeper.transports.http import StreamableHTTPApp


class Gate:
    """A tool that waits until released (or cancelled), optionally after one progress."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    async def wait(self, arguments: dict[str, Any], ctx: ToolContext) -> str:
        self.started.set()
        await self.release.wait()
        return "released"

    async def wait_after_progress(self, arguments: dict[str, Any], ctx: ToolContext) -> str:
        await ctx.progress(1, 2)
        return await self.wait(arguments, ctx)


async def _start(app: StreamableHTTPApp, session_id: str, request_id: int, tool: str,
                 **meta: Any) -> tuple[Client, asyncio.Task[None]]:
    client = Client(json.dumps(tool_call(tool, request_id, era="legacy", **meta)).encode())
    task = asyncio.ensure_future(app(legacy_scope("POST", session_id), client.inbox.get,
                                     client.send))
    return client, task


async def _notify(app: StreamableHTTPApp, session_id: str, request_id: Any) -> int:
    client = Client(json.dumps(cancel(request_id)).encode())
    await asyncio.wait_for(app(legacy_scope("POST", session_id), client.inbox.get, client.send),
                           BOUND_S)
    status: int = client.sent[0]["status"]
    return status


def _last_message(client: Client) -> dict[str, Any]:
    body = client.body().decode()
    if client.sent[0]["headers"] and (b"content-type", b"text/event-stream") in \
            client.sent[0]["headers"]:
        body = [line for line in body.splitlines() if line.startswith("data: ")][-1][6:]
    message: dict[str, Any] = json.loads(body)
    return message


def test_a_cancelled_legacy_call_is_answered_minus_32800_and_logged_cancelled() -> None:
    async def scenario() -> None:
        gate = Gate()
        gateway = small_log_gateway({"gate.wait": gate.wait})
        app = app_for(gateway)
        session_id = await initialize(app)
        client, task = await _start(app, session_id, 7, "gate.wait")
        await asyncio.wait_for(gate.started.wait(), BOUND_S)
        assert await _notify(app, session_id, 7) == 202
        await asyncio.wait_for(task, BOUND_S)
        message = _last_message(client)
        assert (message["id"], message["error"]["code"]) == (7, REQUEST_CANCELLED)
        assert outcomes(gateway)[-1] == ("gate.wait", "cancelled")
        assert app._legacy.in_flight == {}

    asyncio.run(scenario())


def test_a_call_cancelled_after_its_response_turned_to_sse_ends_with_the_error_event() -> None:
    async def scenario() -> None:
        gate = Gate()
        gateway = small_log_gateway({"gate.progress": gate.wait_after_progress})
        app = app_for(gateway)
        session_id = await initialize(app)
        client, task = await _start(app, session_id, 8, "gate.progress", progressToken="p")
        await asyncio.wait_for(gate.started.wait(), BOUND_S)
        assert await _notify(app, session_id, 8) == 202
        await asyncio.wait_for(task, BOUND_S)
        assert (b"content-type", b"text/event-stream") in client.sent[0]["headers"]
        message = _last_message(client)
        assert (message["id"], message["error"]["code"]) == (8, REQUEST_CANCELLED)
        assert outcomes(gateway)[-1] == ("gate.progress", "cancelled")

    asyncio.run(scenario())


def test_a_cancel_from_another_session_or_for_another_id_touches_nothing() -> None:
    async def scenario() -> None:
        gate = Gate()
        gateway = small_log_gateway({"gate.wait": gate.wait})
        app = app_for(gateway)
        owner, stranger = await initialize(app), await initialize(app)
        client, task = await _start(app, owner, 9, "gate.wait")
        await asyncio.wait_for(gate.started.wait(), BOUND_S)
        assert await _notify(app, stranger, 9) == 202  # same id, another session
        assert await _notify(app, owner, "9") == 202  # the string "9" is another id
        assert await _notify(app, owner, 10) == 202  # no such request
        assert not task.done()
        gate.release.set()
        await asyncio.wait_for(task, BOUND_S)
        message = _last_message(client)
        assert message["id"] == 9 and message["result"]["isError"] is False
        assert outcomes(gateway)[-1] == ("gate.wait", "ok")
        assert await _notify(app, owner, 9) == 202  # too late: nothing left to cancel
        assert app._legacy.in_flight == {}

    asyncio.run(scenario())


def test_a_call_the_server_cancels_after_shutdown_began_is_answered_503_not_raised() -> None:
    async def scenario() -> None:
        gate = Gate()
        gateway = small_log_gateway({"gate.wait": gate.wait})
        app = app_for(gateway)
        session_id = await initialize(app)
        client, task = await _start(app, session_id, 11, "gate.wait")
        await asyncio.wait_for(gate.started.wait(), BOUND_S)
        app.begin_shutdown()
        task.cancel()  # what uvicorn does once its graceful wait is over
        await asyncio.wait_for(task, BOUND_S)  # returns: nothing escapes to the server
        assert not task.cancelled()
        assert client.sent[0]["status"] == 503
        assert outcomes(gateway)[-1] == ("gate.wait", "cancelled")

    asyncio.run(scenario())


def test_a_call_cancelled_while_the_server_runs_stays_cancelled() -> None:
    async def scenario() -> None:
        gate = Gate()
        gateway = small_log_gateway({"gate.wait": gate.wait})
        app = app_for(gateway)
        session_id = await initialize(app)
        client, task = await _start(app, session_id, 12, "gate.wait")
        await asyncio.wait_for(gate.started.wait(), BOUND_S)
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=BOUND_S)
        assert task in done and task.cancelled()
        assert client.sent == []

    asyncio.run(scenario())
