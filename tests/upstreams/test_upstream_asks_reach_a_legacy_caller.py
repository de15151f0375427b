"""A legacy upstream that asks its client during a call (``elicitation/create``) asks the
gateway's legacy caller, whose answer goes back to the upstream; a modern caller is never
asked (refused across eras: the upstream's ask gets -32601 with ``data.reason``
``caller_cannot_be_asked``, which the SDK tool raises on, so the caller gets that error)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import mcp_types as types
import pytest
from forwarding_kit import SDK_STDIO, Forwarder, sdk_tools, serving_forwarder
from mcp import Client
from mcp.shared.exceptions import MCPError

from toolkeeper.upstreams import UpstreamDefinition


@pytest.fixture(scope="module")
def forwarder(sdk_url: str) -> Iterator[Forwarder]:
    definitions = [UpstreamDefinition("sdk", url=sdk_url, prefix="sdk.", era="legacy",
                                      call_timeout_s=15),
                   UpstreamDefinition("local", command=SDK_STDIO, prefix="local.",
                                      era="legacy", call_timeout_s=15)]
    with serving_forwarder(definitions, [*sdk_tools("sdk", "sdk."),
                                         *sdk_tools("local", "local.")]) as served:
        yield served


async def _confirm(url: str, mode: str, name: str) -> tuple[Any, list[str]]:
    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"ok": True})

    with anyio.fail_after(30):
        async with Client(url, mode=mode, elicitation_callback=elicit) as client:
            try:
                result = await client.call_tool(name, {})
            except MCPError as exc:
                return exc.error, asked
            return (result.is_error, result.content[0].text), asked  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["sdk.confirm", "local.confirm"])
def test_an_upstream_elicitation_is_asked_of_a_legacy_caller(forwarder: Forwarder,
                                                             name: str) -> None:
    (is_error, text), asked = anyio.run(_confirm, forwarder.url, "legacy", name)
    assert asked == ["Proceed?"]
    assert (is_error, text) == (False, "accept:True")


def test_a_modern_caller_is_never_asked_and_the_upstream_gets_an_error(
        forwarder: Forwarder) -> None:
    error, asked = anyio.run(_confirm, forwarder.url, "2026-07-28", "sdk.confirm")
    assert asked == []
    assert error.code == -32601
    assert error.data == {"reason": "caller_cannot_be_asked", "upstream": "sdk"}
