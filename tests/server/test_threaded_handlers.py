"""A plain ``def`` handler runs in a worker thread: one that blocks delays neither
``tools/list`` nor another call (real HTTP on 127.0.0.1); ``inline=True`` keeps a quick one on
the event loop; a threaded call past its timeout is answered at the deadline."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.registry import Registry
from toolkeeper.server import ToolHandlers, build_app
from toolkeeper.server.limits import TIMEOUT_META_KEY, LimitsSettings, ToolLimits, build_limits
from toolkeeper.transports import ServerThread

MODERN = "2026-07-28"
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {}}
WAIT_S = 20.0
"""A bound on every wait; the blocked handler is released by the test, never by time."""
_ids = itertools.count(1)


def _contract(name: str) -> Any:
    return spec_from_mapping({
        "name": name, "version": "1.0.0", "title": name, "description": f"The {name} tool.",
        "inputSchema": {"type": "object"}, "dataClassification": "internal",
        "sideEffect": "read"})


def _post(client: httpx.Client, url: str, method: str, params: dict[str, Any]
          ) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": next(_ids), "method": method,
            "params": {**params, "_meta": dict(ENVELOPE)}}
    headers = {"Accept": "application/json, text/event-stream",
               "Content-Type": "application/json", "MCP-Protocol-Version": MODERN,
               "Mcp-Method": method}
    if "name" in params:
        headers["Mcp-Name"] = params["name"]
    reply: dict[str, Any] = client.post(url, content=json.dumps(body), headers=headers).json()
    return reply


class Blocking:
    """A plain ``def`` handler that blocks on an event the test sets."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.thread: str | None = None

    def __call__(self, arguments: dict[str, Any]) -> str:
        self.thread = threading.current_thread().name
        self.entered.set()
        assert self.release.wait(WAIT_S), "never released"
        return "released"


@pytest.fixture
def served() -> Iterator[tuple[str, Blocking, dict[str, str]]]:
    registry = Registry.open("memory:")
    for name in ("slow.block", "quick.threaded", "quick.inline", "slow.timed"):
        registry.publish(_contract(name))
    blocking, timed = Blocking(), Blocking()
    seen: dict[str, str] = {}

    def quick(arguments: dict[str, Any]) -> str:
        seen["threaded"] = threading.current_thread().name
        return "quick"

    def inline(arguments: dict[str, Any]) -> str:
        seen["inline"] = threading.current_thread().name
        return "inline"

    handlers = ToolHandlers()
    handlers.bind("slow.block", blocking)
    handlers.bind("quick.threaded", quick)
    handlers.bind("quick.inline", inline, inline=True)
    handlers.bind("slow.timed", timed)
    limits = build_limits(LimitsSettings(call_timeout_s=0.0,
                                         tools={"slow.timed": _timeout(0.2)}))
    app, _ = build_app(registry, handlers, limits=limits)
    thread = ServerThread(app)
    try:
        yield thread.start().url, blocking, seen
    finally:
        blocking.release.set()
        timed.release.set()
        thread.stop()
        registry.close()


def _timeout(seconds: float) -> ToolLimits:
    return ToolLimits(call_timeout_s=seconds)


def test_a_blocked_def_handler_delays_neither_tools_list_nor_another_call(
        served: tuple[str, Blocking, dict[str, str]]) -> None:
    url, blocking, _ = served
    with httpx.Client(timeout=WAIT_S) as client, ThreadPoolExecutor(1) as pool:
        pending = pool.submit(_post, client, url, "tools/call",
                              {"name": "slow.block", "arguments": {}})
        assert blocking.entered.wait(WAIT_S)
        listed = _post(client, url, "tools/list", {})
        assert sorted(t["name"] for t in listed["result"]["tools"]) == [
            "quick.inline", "quick.threaded", "slow.block", "slow.timed"]
        other = _post(client, url, "tools/call", {"name": "quick.threaded", "arguments": {}})
        assert other["result"]["content"] == [{"type": "text", "text": "quick"}]
        assert not pending.done()  # the blocked call is still running meanwhile
        blocking.release.set()
        done = pending.result(WAIT_S)
    assert done["result"]["content"] == [{"type": "text", "text": "released"}]
    assert blocking.thread is not None and not blocking.thread.startswith("toolkeeper-http-")


def test_inline_keeps_a_def_handler_on_the_event_loop_thread(
        served: tuple[str, Blocking, dict[str, str]]) -> None:
    url, _, seen = served
    with httpx.Client(timeout=WAIT_S) as client:
        _post(client, url, "tools/call", {"name": "quick.inline", "arguments": {}})
        _post(client, url, "tools/call", {"name": "quick.threaded", "arguments": {}})
    assert seen["inline"].startswith("toolkeeper-http-")  # the server's loop thread
    assert not seen["threaded"].startswith("toolkeeper-http-")  # a worker thread


def test_a_threaded_call_past_its_timeout_is_answered_at_the_deadline(
        served: tuple[str, Blocking, dict[str, str]]) -> None:
    url, _, _ = served
    with httpx.Client(timeout=WAIT_S) as client:
        reply = _post(client, url, "tools/call", {"name": "slow.timed", "arguments": {}})
    assert reply["result"]["isError"] is True
    assert reply["result"]["_meta"][TIMEOUT_META_KEY] == {"timeoutS": 0.2}
