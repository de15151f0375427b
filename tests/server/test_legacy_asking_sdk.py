"""The official ``mcp`` clients in the legacy era (``initialize``, 2025-11-25), over real HTTP
on 127.0.0.1, against the same handlers the modern-era tests use (written once, asking through
their context): each ask reaches the client as a server-to-client request on the call's stream,
its callback's answer comes back as a POST, and the call completes. A call the client cancels
while its elicitation is open ends on the server too: the handler is cancelled and no request
waits for an answer any more.

``mcp`` 2.3.0 runs in this process; the newest 1.x (1.30.0) runs in its own virtualenv from the
interop cache (installed on first use through the shared ``peers`` fixture), driven by
``tests/interop/drivers/py_ask_driver.py``."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from ask_kit import Served, outcomes, serving
from mcp import Client
from mcp.client import ClientRequestContext
from mcp.shared.exceptions import MCPError
from test_input_required_sdk import Callbacks

from toolkeeper.registry import Registry

BOUND_S = 10.0
INTEROP = Path(__file__).resolve().parents[1] / "interop"
sys.path.insert(0, str(INTEROP))  # the interop clients' pins and drivers
from python_clients import PYTHON_PINS  # noqa: E402

from peer_kit import Peers  # noqa: E402

NEWEST_1X = "mcp 1.30.0"


@pytest.fixture
def served(registry: Registry) -> Iterator[Served]:
    with serving(registry) as server:
        yield server


async def _call(url: str, tool: str, callbacks: Callbacks) -> tuple[bool, str, str]:
    with anyio.fail_after(BOUND_S):
        async with Client(url, mode="legacy", elicitation_callback=callbacks.elicit,
                          sampling_callback=callbacks.sample,
                          list_roots_callback=callbacks.roots) as client:
            result = await client.call_tool(tool, {"a": 1})
            version = client.protocol_version
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return result.is_error, block.text, version


@pytest.mark.parametrize(("tool", "text", "seen"), [
    ("greet", "Hello, name-1!", [("elicit", "Your name?")]),
    ("summarize", "summary: sampled", [("sample", (30, None, 0.5))]),
    ("roots", "file:///work sampled", [("roots", None), ("sample", (10, "be brief", None))]),
    ("two_steps", "name-1 likes color-1", [("elicit", "Your name?"), ("elicit", "Your color?")]),
])
def test_the_sdk_client_answers_a_legacy_handlers_requests_on_the_calls_stream(
        served: Served, tool: str, text: str, seen: list[tuple[str, object]]) -> None:
    callbacks = Callbacks()
    assert anyio.run(_call, served.url, tool, callbacks) == (False, text, "2025-11-25")
    assert callbacks.seen == seen
    assert served.tools.runs[tool] == 1  # the legacy era never re-runs a handler
    assert outcomes(served) == ["ok"]
    assert len(served.app._legacy.asks) == 0


def test_the_sdk_client_answers_three_concurrent_requests_of_one_handler(served: Served) -> None:
    callbacks = Callbacks()
    assert anyio.run(_call, served.url, "all_at_once", callbacks) == (
        False, "name-1|sampled|file:///work", "2025-11-25")
    assert sorted(kind for kind, _ in callbacks.seen) == ["elicit", "roots", "sample"]


def test_a_client_without_the_capability_gets_minus_32602_naming_it(served: Served) -> None:
    async def call() -> MCPError:
        with anyio.fail_after(BOUND_S):
            async with Client(served.url, mode="legacy") as client:
                with pytest.raises(MCPError) as caught:
                    await client.call_tool("greet", {"a": 1})
        return caught.value

    error = anyio.run(call).error
    assert (error.code, error.data) == (-32602, {"requiredCapabilities": {"elicitation": {}}})
    assert outcomes(served) == ["protocol_error"]


def test_a_call_the_client_cancels_mid_elicitation_ends_and_leaves_nothing_waiting(
        served: Served) -> None:
    async def scenario() -> None:
        asked = anyio.Event()

        async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams
                         ) -> types.ElicitResult:
            asked.set()
            await anyio.sleep_forever()  # the user never answers
            raise AssertionError("unreachable")

        with anyio.fail_after(BOUND_S):
            async with Client(served.url, mode="legacy", elicitation_callback=elicit) as client:
                async with anyio.create_task_group() as group:
                    group.start_soon(client.call_tool, "greet", {"a": 1})
                    await asked.wait()
                    assert len(served.app._legacy.asks) == 1
                    group.cancel_scope.cancel()  # the SDK sends notifications/cancelled
                assert await anyio.to_thread.run_sync(
                    _wait_for, lambda: outcomes(served) == ["cancelled"], served)
                assert len(served.app._legacy.asks) == 0

    anyio.run(scenario)
    assert served.app._legacy.in_flight == {}


def _wait_for(condition: Callable[[], bool], served: Served) -> bool:
    """Whether ``condition`` holds once the calls have completed (woken by each completion;
    ``BOUND_S`` only keeps a broken build from hanging)."""
    return served.log.wait_for(condition, BOUND_S)


def test_the_newest_1x_client_answers_the_same_handlers_and_cancels_mid_elicitation(
        served: Served, peers: Peers) -> None:
    python = peers.python_client(PYTHON_PINS[NEWEST_1X])
    done = subprocess.run(
        [*python, str(INTEROP / "drivers" / "py_ask_driver.py"), "--url", served.url,
         "--cancel", "greet", "greet", "summarize", "roots", "all_at_once"],
        capture_output=True, text=True, timeout=60, check=True)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert "failure" not in out, out
    assert out["era"] == "2025-11-25"
    assert out["calls"] == {
        "greet": {"isError": False, "text": "Hello, name-1!"},
        "summarize": {"isError": False, "text": "summary: sampled"},
        "roots": {"isError": False, "text": "file:///work sampled"},
        "all_at_once": {"isError": False, "text": "name-1|sampled|file:///work"}}
    assert out["seen"][:4] == [["elicit", "Your name?"], ["sample", [30, None, 0.5]],
                               ["roots", None], ["sample", [10, "be brief", None]]]
    assert out["cancelled"]["code"] == -32800  # the call was cancelled, and told so
    assert _wait_for(lambda: outcomes(served)[-1:] == ["cancelled"], served)
    assert len(served.app._legacy.asks) == 0 and served.app._legacy.in_flight == {}
    assert served.tools.runs["greet"] == 2
