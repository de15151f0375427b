"""A stdio upstream is a process the gateway starts on first use and supervises: one that is
killed, or dies mid-call, gives an ``upstream.unavailable`` result, then ``upstream.backoff``
until its backoff has passed, then a new process answers; a crash loop (more restarts than
the limit inside the window) ends in ``failed`` until an operator resets it. A legacy-era stdio
upstream runs one process per principal. Every process is stopped by its pid at the end.
The supervisor's clock is the test's."""

from __future__ import annotations

import os
import signal
from typing import Any

import anyio
from forwarding_kit import SDK_STDIO, Clock, by_token, sdk_tools, serving_forwarder

from toolkeeper.client import ClientTimeouts, Target, connect
from toolkeeper.upstreams import UpstreamDefinition
from toolkeeper.upstreams.supervision import Supervision

BOUNDS = ClientTimeouts(probe_s=10, request_s=30)
KEY = "io.toolkeeper/upstream"


async def _call(url: str, name: str, token: str | None = None) -> dict[str, Any]:
    async with await connect(Target.from_url(url), era="modern", token=token,
                             timeouts=BOUNDS) as session:
        reply = await session.call_tool(name, {"text": "x"} if name.endswith("echo") else {})
        assert reply.result is not None, reply.error
        return reply.result


def _code(result: dict[str, Any]) -> str:
    assert result["isError"] is True, result
    return str(result["_meta"][KEY]["code"])


def _pid(result: dict[str, Any]) -> int:
    assert result["isError"] is False, result
    return int(result["structuredContent"]["result"])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_killed_stdio_upstream_is_back_after_its_backoff() -> None:
    clock = Clock()
    defn = UpstreamDefinition("local", command=SDK_STDIO, prefix="local.", call_timeout_s=20)
    with serving_forwarder([defn], sdk_tools("local", "local."), clock=clock,
                           supervision=Supervision(backoff_initial_s=5)) as served:
        first = _pid(anyio.run(_call, served.url, "local.pid"))
        assert served.status("local")["pids"] == [first]
        os.kill(first, signal.SIGKILL)
        assert _code(anyio.run(_call, served.url, "local.pid")) == "upstream.unavailable"
        assert _code(anyio.run(_call, served.url, "local.pid")) == "upstream.backoff"
        assert served.status("local")["state"] == "backoff"
        clock.now += 5
        second = _pid(anyio.run(_call, served.url, "local.pid"))
        status = served.status("local")
        assert second != first
        assert status["restarts"] == 1 and status["state"] == "connected"
    assert not _alive(second)  # stopped with the gateway


def test_a_crash_loop_ends_failed_until_reset() -> None:
    clock = Clock()
    defn = UpstreamDefinition("local", command=SDK_STDIO, prefix="local.", call_timeout_s=20)
    settings = Supervision(backoff_initial_s=1, restart_limit=1, restart_window_s=600)
    with serving_forwarder([defn], sdk_tools("local", "local."), clock=clock,
                           supervision=settings) as served:
        # dies mid-call, twice: more restarts than the limit inside the window
        assert _code(anyio.run(_call, served.url, "local.die")) == "upstream.unavailable"
        clock.now += 1
        assert _code(anyio.run(_call, served.url, "local.die")) == "upstream.unavailable"
        clock.now += 100
        assert _code(anyio.run(_call, served.url, "local.echo")) == "upstream.failed"
        assert served.status("local")["state"] == "failed"
        served.connections.reset("local")
        assert anyio.run(_call, served.url, "local.echo")["structuredContent"] == {
            "result": "x"}


def test_a_legacy_stdio_upstream_runs_one_process_per_principal() -> None:
    defn = UpstreamDefinition("local", command=SDK_STDIO, prefix="local.", era="legacy",
                              call_timeout_s=20)
    tokens = {"alice-secret": "key-alice", "bob-secret": "key-bob"}
    with serving_forwarder([defn], sdk_tools("local", "local."),
                           resolve_principal=by_token(tokens)) as served:
        alice = [_pid(anyio.run(_call, served.url, "local.pid", "alice-secret"))
                 for _ in range(2)]
        bob = _pid(anyio.run(_call, served.url, "local.pid", "bob-secret"))
        pids = served.status("local")["pids"]
    assert alice[0] == alice[1] != bob
    assert pids == sorted([alice[0], bob])
    assert not _alive(alice[0]) and not _alive(bob)
