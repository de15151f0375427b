"""A call to an imported upstream tool is forwarded and comes back as the upstream sent it:
listed and called through the gateway by the official SDK client in both eras; an ``isError``
result stays a result; additive unknown fields (``futureHint``), ``structuredContent`` and
the upstream's non-reserved ``_meta`` survive (the reserved per-hop keys do not); a JSON-RPC
error keeps its custom code, message and data (``data.upstream`` added)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from forwarding_kit import Forwarder, Imported, sdk_tools, serving_forwarder
from mcp import Client
from mcp.shared.exceptions import MCPError
from raw_upstream import RawUpstream

from toolkeeper.client import ClientTimeouts, Target, connect
from toolkeeper.upstreams import UpstreamDefinition

MODES = [("auto", "2026-07-28"), ("legacy", "2025-11-25")]
BOUNDS = ClientTimeouts(probe_s=10, request_s=20)


@pytest.fixture(scope="module")
def forwarder(sdk_url: str, raw: tuple[RawUpstream, str]) -> Iterator[Forwarder]:
    definitions = [UpstreamDefinition("sdk", url=sdk_url, prefix="sdk.", call_timeout_s=10),
                   UpstreamDefinition("raw", url=raw[1], prefix="raw.", era="legacy",
                                      call_timeout_s=10)]
    imported = [*sdk_tools("sdk", "sdk."),
                *(Imported("raw", name, prefix="raw.")
                  for name in ("future", "failing"))]
    with serving_forwarder(definitions, imported) as served:
        yield served


async def _sdk_session(url: str, mode: str) -> dict[str, Any]:
    with anyio.fail_after(30):
        async with Client(url, mode=mode) as client:
            listed = await client.list_tools()
            echo = await client.call_tool("sdk.echo", {"text": "hi"})
            fails = await client.call_tool("sdk.fails", {})
            invalid = await client.call_tool("sdk.echo", {"text": 7})
            try:
                await client.call_tool("sdk.quota", {})
                error: Any = None
            except MCPError as exc:
                error = exc.error
            return {"version": client.protocol_version,
                    "names": sorted(t.name for t in listed.tools),
                    "echo": (echo.is_error, echo.content[0].text,  # type: ignore[union-attr]
                             echo.structured_content),
                    "fails": (fails.is_error, fails.content[0].text),  # type: ignore[union-attr]
                    "invalid": (invalid.is_error, invalid.structured_content),
                    "error": (error.code, error.message, error.data)}


@pytest.mark.parametrize(("mode", "version"), MODES)
def test_the_official_client_lists_and_calls_an_upstream_tool(forwarder: Forwarder, mode: str,
                                                              version: str) -> None:
    seen = anyio.run(_sdk_session, forwarder.url, mode)
    assert seen["version"] == version
    assert {"sdk.echo", "sdk.fails", "sdk.quota", "raw.future"} <= set(seen["names"])
    assert seen["echo"] == (False, "hi", {"result": "hi"})
    # the upstream's isError result is a result, its text as the upstream wrote it
    assert seen["fails"] == (True, "Error executing tool fails")
    # the contract's input validation runs first: the upstream never sees the call
    assert seen["invalid"][0] is True
    assert seen["invalid"][1]["errors"][0]["path"] == "$.text"
    # a custom JSON-RPC error code comes back with its message and data
    assert seen["error"] == (4001, "quota exceeded", {"retryAfterS": 7, "upstream": "sdk"})


async def _raw_results(url: str, era: str) -> dict[str, Any]:
    async with await connect(Target.from_url(url), era=era, legacy_allowed=True,  # type: ignore[arg-type]
                             timeouts=BOUNDS) as session:
        future = await session.call_tool("raw.future", {})
        failing = await session.call_tool("raw.failing", {})
        return {"future": future.result, "failing": failing.result}


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_unknown_fields_structured_content_and_meta_survive(forwarder: Forwarder,
                                                            era: str) -> None:
    results = anyio.run(_raw_results, forwarder.url, era)
    future = results["future"]
    assert future["futureHint"] == {"kind": "additive", "level": 3}
    assert future["structuredContent"] == {"answer": 42}
    assert future["content"] == [{"type": "text", "text": "from the future"}]
    assert future["isError"] is False
    meta = future["_meta"]
    assert meta["example.com/trace"] == "abc"
    assert meta["schemaVersion"] == "1.0.0"  # the gateway's own key, set on every result
    assert "io.modelcontextprotocol/related-task" not in meta  # the upstream hop's, not passed
    assert (future.get("resultType") == "complete") is (era == "modern")
    failing = results["failing"]
    assert failing["isError"] is True
    assert failing["structuredContent"] == {"why": "upstream"}


def test_the_upstream_gets_no_reserved_meta_of_the_caller(forwarder: Forwarder,
                                                          raw: tuple[RawUpstream, str]) -> None:
    anyio.run(_raw_results, forwarder.url, "modern")
    metas = [call["meta"] or {} for call in raw[0].calls() if call["tool"] == "future"]
    assert metas
    for meta in metas:
        assert not [key for key in meta if key.startswith("io.modelcontextprotocol/")]
        assert "schemaVersion" not in meta and "progressToken" not in meta
