"""Handler-bound prompts to the official ``mcp`` client (2.3.0) over real HTTP on 127.0.0.1,
in both eras: ``list_prompts`` and ``get_prompt`` (with arguments, content blocks), an unknown
prompt as its -32602, and, in the modern era, a prompt that asks back answered through the
client's elicitation callback."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client import ClientRequestContext
from mcp.shared.exceptions import MCPError
from prompt_kit import PromptSet

from toolkeeper.registry import Registry
from toolkeeper.server import build_app
from toolkeeper.transports import ServerThread

MODES = ["2026-07-28", "legacy"]
BOUND_S = 10.0


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    registry = Registry.open("memory:")
    app, _ = build_app(registry, PromptSet().handlers())
    thread = ServerThread(app)
    running = thread.start()
    try:
        yield running.url
    finally:
        thread.stop()
        registry.close()


async def _elicit(context: ClientRequestContext, params: types.ElicitRequestParams
                  ) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def _session(url: str, mode: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    with anyio.fail_after(BOUND_S):
        async with Client(url, mode=mode, elicitation_callback=_elicit) as client:
            listed = await client.list_prompts()
            seen["names"] = [p.name for p in listed.prompts]
            seen["greeting"] = next(p for p in listed.prompts if p.name == "greeting")
            seen["get"] = await client.get_prompt("greeting", {"name": "Ada"})
            seen["blocks"] = await client.get_prompt("blocks")
            try:
                await client.get_prompt("nope")
            except MCPError as exc:
                seen["unknown"] = (exc.error.code, exc.error.data)
    return seen


@pytest.mark.parametrize("mode", MODES)
def test_the_sdk_client_lists_and_gets_prompts(url: str, mode: str) -> None:
    seen = anyio.run(_session, url, mode)
    assert seen["names"] == ["asking", "blocks", "broken", "greeting", "other_asking", "plain",
                             "unreadable"]
    greeting = seen["greeting"]
    assert greeting.description == "Greets someone"
    assert [(a.name, a.required) for a in greeting.arguments or []] == [
        ("name", True), ("tone", False)]
    got = seen["get"]
    assert got.description == "Greets someone"
    assert [m.role for m in got.messages] == ["user"]
    assert isinstance(got.messages[0].content, types.TextContent)
    assert got.messages[0].content.text == "Greet Ada (warmly)."
    kinds = [type(m.content).__name__ for m in seen["blocks"].messages]
    assert kinds == ["ImageContent", "EmbeddedResource", "TextContent", "TextContent"]
    assert seen["unknown"] == (-32602, {"path": "$.params.name", "reason": "unknown_prompt"})


async def _ask(url: str) -> types.GetPromptResult:
    with anyio.fail_after(BOUND_S):
        async with Client(url, mode="2026-07-28", elicitation_callback=_elicit) as client:
            return await client.get_prompt("asking", {"topic": "poems"})


def test_the_sdk_client_answers_a_prompts_elicitation_round(url: str) -> None:
    result = anyio.run(_ask, url)
    assert isinstance(result.messages[0].content, types.TextContent)
    assert result.messages[0].content.text == "poems for Ada"
