"""A resumable legacy stream whose client leaves goes on without it, but not forever: if no
``Last-Event-ID`` takes it up within ``resume_window_s`` its request is cancelled (logged
``cancelled``) and its replay log dropped; a client that leaves before the answer became a
stream (it holds no event id) cancels the request at once, as before."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from bounds_kit import initialize, legacy_scope, small_log_gateway
from stream_kit import BOUND_S, Client, outcomes, tool_call

from toolkeeper.server import ToolContext
from toolkeeper.transports import HttpConfig, StreamableHTTPApp, create_asgi_app
from toolkeeper.transports.replay import ReplayConfig


class Gate:
    def __init__(self) -> None:
        self.reported = asyncio.Event()
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    async def report_then_wait(self, arguments: dict[str, Any], ctx: ToolContext) -> str:
        await ctx.progress(1, 2)
        self.reported.set()
        await self.release.wait()
        return "released"

    async def wait(self, arguments: dict[str, Any], ctx: ToolContext) -> str:
        self.started.set()
        await self.release.wait()
        return "released"


def _app(gate: Gate, window_s: float) -> tuple[StreamableHTTPApp, Any]:
    gateway = small_log_gateway({"gate.report": gate.report_then_wait, "gate.wait": gate.wait})
    app = create_asgi_app(gateway.kernel, HttpConfig(
        keepalive_s=30.0, replay=ReplayConfig(resume_window_s=window_s)),
        changes=gateway.changes)
    return app, gateway


async def _call(app: StreamableHTTPApp, session_id: str, tool: str
                ) -> tuple[Client, asyncio.Task[None]]:
    client = Client(json.dumps(tool_call(tool, 5, era="legacy", progressToken="p")).encode())
    task = asyncio.ensure_future(app(legacy_scope("POST", session_id), client.inbox.get,
                                     client.send))
    return client, task


def test_a_stream_nobody_resumes_within_the_window_has_its_request_cancelled() -> None:
    async def scenario() -> None:
        gate = Gate()
        app, gateway = _app(gate, 0.05)
        session_id = await initialize(app)
        client, task = await _call(app, session_id, "gate.report")
        await asyncio.wait_for(gate.reported.wait(), BOUND_S)
        assert b"id: " in client.body()  # the client holds event ids: it could resume
        client.leave()
        await asyncio.wait_for(task, BOUND_S)  # ends once the window is over
        assert outcomes(gateway)[-1] == ("gate.report", "cancelled")
        assert len(app._legacy.resumable.logs) == 0  # type: ignore[union-attr]

    asyncio.run(scenario())


def test_a_client_that_leaves_before_holding_an_event_id_cancels_at_once() -> None:
    async def scenario() -> None:
        gate = Gate()
        app, gateway = _app(gate, 3600.0)
        session_id = await initialize(app)
        client, task = await _call(app, session_id, "gate.wait")
        await asyncio.wait_for(gate.started.wait(), BOUND_S)
        client.leave()
        await asyncio.wait_for(task, BOUND_S)
        assert client.sent == []
        assert outcomes(gateway)[-1] == ("gate.wait", "cancelled")
        assert len(app._legacy.resumable.logs) == 0  # type: ignore[union-attr]

    asyncio.run(scenario())


def test_a_left_stream_goes_on_within_the_window_and_its_answer_is_kept() -> None:
    async def scenario() -> None:
        gate = Gate()
        app, gateway = _app(gate, 3600.0)
        session_id = await initialize(app)
        client, task = await _call(app, session_id, "gate.report")
        await asyncio.wait_for(gate.reported.wait(), BOUND_S)
        client.leave()
        await asyncio.sleep(0)
        assert not task.done()
        gate.release.set()
        await asyncio.wait_for(task, BOUND_S)
        assert outcomes(gateway)[-1] == ("gate.report", "ok")
        logs = app._legacy.resumable.logs  # type: ignore[union-attr]
        assert len(logs) == 1 and logs.bytes > 0

    asyncio.run(scenario())
