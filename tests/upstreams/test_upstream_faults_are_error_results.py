"""An upstream that gives no answer gives the caller an ``isError`` result naming it, with a
stable code in ``_meta["io.toolkeeper/upstream"]``, within its ``call_timeout_s``, while
native tools and other upstreams keep answering: a hung upstream (``upstream.timeout``), one
that refuses connections (``upstream.unavailable``), one that answers garbage
(``upstream.protocol_error``), one that dies mid-call (``upstream.unavailable``). The
circuit breaker opens after consecutive failures and a half-open probe that succeeds closes
it."""

from __future__ import annotations

import logging
import socket
import sys
import time
from typing import Any

import anyio
import pytest
from forwarding_kit import SDK_SERVER, Clock, Imported, sdk_tools, serving_forwarder
from raw_upstream import RawUpstream

from process_kit import serving_announced_port
from toolkeeper.client import ClientTimeouts, Target, connect
from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.server import ToolHandlers
from toolkeeper.transports import serve_in_thread
from toolkeeper.upstreams import UpstreamDefinition
from toolkeeper.upstreams.supervision import Supervision

BOUNDS = ClientTimeouts(probe_s=10, request_s=20)
KEY = "io.toolkeeper/upstream"
TIMEOUT_S = 1.5


def _native() -> tuple[ToolHandlers, Any]:
    handlers = ToolHandlers()
    handlers.bind("native.ping", lambda arguments: "pong", inline=True)
    spec = spec_from_mapping({
        "name": "native.ping", "version": "1.0.0", "title": "ping", "description": "pong",
        "inputSchema": {"type": "object", "properties": {}}, "dataClassification": "public",
        "sideEffect": "read"})
    return handlers, spec


async def _call(url: str, name: str, arguments: dict[str, Any] | None = None
                ) -> dict[str, Any]:
    async with await connect(Target.from_url(url), era="modern", timeouts=BOUNDS) as session:
        reply = await session.call_tool(name, arguments or {})
        assert reply.result is not None, reply.error
        return reply.result


def _code(result: dict[str, Any]) -> str | None:
    assert result["isError"] is True, result
    return result["_meta"][KEY]["code"]  # type: ignore[no-any-return]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_hung_upstream_times_out_while_native_tools_and_other_upstreams_answer(
        sdk_url: str, raw: tuple[RawUpstream, str]) -> None:
    app, raw_url = raw
    app.hanging.clear()
    handlers, spec = _native()
    definitions = [UpstreamDefinition("sdk", url=sdk_url, prefix="sdk.",
                                      call_timeout_s=TIMEOUT_S),
                   UpstreamDefinition("raw", url=raw_url, prefix="raw.", era="legacy",
                                      call_timeout_s=TIMEOUT_S)]
    imported = [*sdk_tools("sdk", "sdk."), Imported("raw", "hang", prefix="raw."),
                Imported("raw", "whoami", prefix="raw.")]

    async def scenario(url: str) -> dict[str, Any]:
        out: dict[str, Any] = {}

        async def hang(name: str) -> None:
            started = time.monotonic()
            out[name] = await _call(url, name)
            out[name + ".elapsed"] = time.monotonic() - started

        async with anyio.create_task_group() as group:
            group.start_soon(hang, "raw.hang")
            group.start_soon(hang, "sdk.hang")
            assert await anyio.to_thread.run_sync(app.hanging.wait, 10)  # it is in flight
            out["native"] = await _call(url, "native.ping")
            out["echo"] = await _call(url, "sdk.echo", {"text": "still here"})
            out["answered_while_hung"] = "raw.hang" not in out
        return out

    with serving_forwarder(definitions, imported, handlers=handlers, native=[spec]) as served:
        out = anyio.run(scenario, served.url)
        status = {s["name"]: s for s in served.connections.status()}
    assert out["answered_while_hung"] is True
    assert out["native"]["content"][0]["text"] == "pong"
    assert out["echo"]["structuredContent"] == {"result": "still here"}
    for name, upstream in (("raw.hang", "raw"), ("sdk.hang", "sdk")):
        assert _code(out[name]) == "upstream.timeout"
        assert out[name]["_meta"][KEY]["upstream"] == upstream
        assert TIMEOUT_S <= out[name + ".elapsed"] < TIMEOUT_S + 5
    for upstream in ("raw", "sdk"):
        assert status[upstream]["lastError"] == "upstream.timeout"
        assert status[upstream]["failures"] == 1


def test_garbage_and_a_refused_connection_are_error_results(raw: tuple[RawUpstream, str]
                                                            ) -> None:
    definitions = [UpstreamDefinition("raw", url=raw[1], prefix="raw.", era="legacy",
                                      call_timeout_s=5),
                   UpstreamDefinition("gone", url=f"http://127.0.0.1:{_free_port()}/mcp",
                                      prefix="gone.", call_timeout_s=5)]
    imported = [Imported("raw", "garbage", prefix="raw."), Imported("gone", "echo",
                                                                    prefix="gone.")]
    with serving_forwarder(definitions, imported) as served:
        garbage = anyio.run(_call, served.url, "raw.garbage")
        refused = anyio.run(_call, served.url, "gone.echo")
    assert _code(garbage) == "upstream.protocol_error"
    assert _code(refused) == "upstream.unavailable"
    assert refused["_meta"][KEY]["upstream"] == "gone"


def test_the_breaker_opens_after_consecutive_failures_and_a_good_probe_closes_it(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="toolkeeper.upstreams.connections")
    port = _free_port()
    clock = Clock()
    defn = UpstreamDefinition("flaky", url=f"http://127.0.0.1:{port}/mcp", prefix="flaky.",
                              era="legacy", call_timeout_s=5)
    settings = Supervision(breaker_failures=2, breaker_cooldown_s=30)
    with serving_forwarder([defn], [Imported("flaky", "whoami", prefix="flaky.")],
                           supervision=settings, clock=clock) as served:
        first = [_code(anyio.run(_call, served.url, "flaky.whoami")) for _ in range(2)]
        assert first == ["upstream.unavailable"] * 2
        assert _code(anyio.run(_call, served.url, "flaky.whoami")) == "upstream.breaker_open"
        assert served.status("flaky")["state"] == "open-breaker"
        assert served.status("flaky")["calls"] == 2  # the refused call never reached it
        with serve_in_thread(RawUpstream(), port=port):
            # still open within the cool-down, though the upstream is back
            assert _code(anyio.run(_call, served.url, "flaky.whoami")) \
                == "upstream.breaker_open"
            clock.now += 30
            assert served.status("flaky")["breaker"] == "half-open"
            probe = anyio.run(_call, served.url, "flaky.whoami")
            assert probe["isError"] is False
            assert served.status("flaky")["breaker"] == "closed"
            assert served.status("flaky")["state"] == "connected"
    # one log line per change of its health, none per refused call
    assert [(r.levelname, getattr(r, "upstream_event", None)) for r in caplog.records
            if r.name == "toolkeeper.upstreams.connections"] == [
        ("WARNING", "failing"), ("WARNING", "breaker_open"), ("INFO", "recovered")]


def test_an_http_upstream_that_dies_mid_call_is_unavailable_and_others_answer(
        raw: tuple[RawUpstream, str]) -> None:
    with serving_announced_port([sys.executable, SDK_SERVER, "http"]) as url:
        definitions = [UpstreamDefinition("doomed", url=url, prefix="doomed.",
                                          call_timeout_s=10),
                       UpstreamDefinition("raw", url=raw[1], prefix="raw.", era="legacy",
                                          call_timeout_s=10)]
        imported = [*sdk_tools("doomed", "doomed."), Imported("raw", "whoami", prefix="raw.")]
        with serving_forwarder(definitions, imported) as served:
            died = anyio.run(_call, served.url, "doomed.die")
            after = anyio.run(_call, served.url, "doomed.echo", {"text": "x"})
            other = anyio.run(_call, served.url, "raw.whoami")
    assert _code(died) == "upstream.unavailable"
    assert _code(after) == "upstream.unavailable"  # nothing listens any more
    assert other["isError"] is False
