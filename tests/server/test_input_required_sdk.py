"""The official ``mcp`` 2.3.0 client in the modern era, over real HTTP on 127.0.0.1, against
handlers that ask back: it answers each ``input_required`` round through its elicitation,
sampling and roots callbacks and retries with the ``requestState``, until the call completes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
import pytest
from ask_kit import Served, outcomes, serving
from mcp import Client
from mcp.client import ClientRequestContext

from toolkeeper.registry import Registry

BOUND_S = 10.0
"""Every session of a test runs under this bound (anyio.fail_after)."""


@pytest.fixture
def served(registry: Registry) -> Iterator[Served]:
    with serving(registry) as server:
        yield server


@dataclass
class Callbacks:
    """The client's side of the asks: what each callback saw, in order."""

    seen: list[tuple[str, Any]] = field(default_factory=list)

    async def elicit(self, context: ClientRequestContext, params: types.ElicitRequestParams
                     ) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.seen.append(("elicit", params.message))
        field_name = next(iter(params.requested_schema["properties"]))
        return types.ElicitResult(action="accept", content={field_name: f"{field_name}-1"})

    async def sample(self, context: ClientRequestContext,
                     params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self.seen.append(("sample", (params.max_tokens, params.system_prompt,
                                     params.temperature)))
        return types.CreateMessageResult(role="assistant", model="test-model",
                                         content=types.TextContent(text="sampled"),
                                         stop_reason="endTurn")

    async def roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        self.seen.append(("roots", None))
        return types.ListRootsResult(roots=[types.Root(uri="file:///work", name="work")])


async def _call(url: str, tool: str, callbacks: Callbacks) -> tuple[bool, str]:
    with anyio.fail_after(BOUND_S):
        async with Client(url, mode="2026-07-28", elicitation_callback=callbacks.elicit,
                          sampling_callback=callbacks.sample,
                          list_roots_callback=callbacks.roots) as client:
            result = await client.call_tool(tool, {"a": 1})
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return result.is_error, block.text


def test_the_sdk_client_completes_an_elicitation_round(served: Served) -> None:
    callbacks = Callbacks()
    assert anyio.run(_call, served.url, "greet", callbacks) == (False, "Hello, name-1!")
    assert callbacks.seen == [("elicit", "Your name?")]
    assert outcomes(served) == ["input_required", "ok"]


def test_the_sdk_client_completes_a_sampling_round(served: Served) -> None:
    callbacks = Callbacks()
    assert anyio.run(_call, served.url, "summarize", callbacks) == (False, "summary: sampled")
    assert callbacks.seen == [("sample", (30, None, 0.5))]
    assert outcomes(served) == ["input_required", "ok"]


def test_the_sdk_client_completes_a_roots_round_then_a_sampling_round(served: Served) -> None:
    callbacks = Callbacks()
    assert anyio.run(_call, served.url, "roots", callbacks) == (False, "file:///work sampled")
    assert callbacks.seen == [("roots", None), ("sample", (10, "be brief", None))]
    assert outcomes(served) == ["input_required", "input_required", "ok"]


def test_the_sdk_client_completes_a_two_round_call(served: Served) -> None:
    callbacks = Callbacks()
    assert anyio.run(_call, served.url, "two_steps", callbacks) == (False,
                                                                    "name-1 likes color-1")
    assert callbacks.seen == [("elicit", "Your name?"), ("elicit", "Your color?")]
    assert served.tools.runs["two_steps"] == 3


def test_the_sdk_client_answers_three_requests_of_one_round(served: Served) -> None:
    callbacks = Callbacks()
    assert anyio.run(_call, served.url, "all_at_once", callbacks) == (
        False, "name-1|sampled|file:///work")
    assert sorted(kind for kind, _ in callbacks.seen) == ["elicit", "roots", "sample"]
    assert outcomes(served) == ["input_required", "ok"]
