"""Stateless legacy mode over real HTTP: no session is minted or needed; a legacy request is
served at its ``MCP-Protocol-Version`` (2025-03-26 without one), as the official SDK's
stateless mode serves it, to raw ``mcp`` 1.x-style requests and to the official ``mcp`` 2.3.0
client in legacy mode."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from http_kit import ACCEPT, sse_events
from mcp import Client

from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.registry import Registry
from toolkeeper.server import build_gateway
from toolkeeper.transports import create_asgi_app, serve_in_thread


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    registry = Registry.open("memory:")
    install_demo(registry)
    gateway = build_gateway(registry, demo_handlers(), legacy_sessions="stateless")
    with serve_in_thread(create_asgi_app(gateway.kernel)) as running:
        yield running.url


def _post(client: httpx.Client, url: str, body: dict[str, Any], version: str | None = None
          ) -> httpx.Response:
    headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
    if version is not None:
        headers["MCP-Protocol-Version"] = version
    return client.post(url, content=json.dumps({"jsonrpc": "2.0", **body}), headers=headers)


def _message(response: httpx.Response) -> dict[str, Any]:
    if response.headers["content-type"].startswith("text/event-stream"):
        message: dict[str, Any] = sse_events(response.text)[-1]
        return message
    decoded: dict[str, Any] = response.json()
    return decoded


_CALL = {"id": 3, "method": "tools/call", "params": {
    "name": "payments.lookup", "arguments": {"reference": "PMT-771"}}}


def test_initialize_is_answered_without_a_session_id(url: str) -> None:
    with httpx.Client(timeout=10) as client:
        init = _post(client, url, {"id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
        assert init.status_code == 200 and "mcp-session-id" not in init.headers
        assert _message(init)["result"]["protocolVersion"] == "2025-06-18"
        initialized = _post(client, url, {"method": "notifications/initialized"}, "2025-06-18")
        assert initialized.status_code == 202


def test_a_request_without_a_session_is_served_at_its_header_version(url: str) -> None:
    with httpx.Client(timeout=10) as client:
        listed = _message(_post(client, url, {"id": 2, "method": "tools/list"}, "2025-06-18"))
        tickets = next(t for t in listed["result"]["tools"] if t["name"] == "tickets.create")
        assert "outputSchema" in tickets  # 2025-06-18 has structured output
        called = _post(client, url, _CALL, "2025-11-25")
        assert called.status_code == 200 and "mcp-session-id" not in called.headers
        result = _message(called)["result"]
        assert result["isError"] is False and "structuredContent" in result


def test_a_request_without_a_version_header_is_served_at_2025_03_26(url: str) -> None:
    with httpx.Client(timeout=10) as client:
        listed = _message(_post(client, url, {"id": 2, "method": "tools/list"}))
        assert all("outputSchema" not in t for t in listed["result"]["tools"])
        result = _message(_post(client, url, _CALL))["result"]
        assert result["isError"] is False and "structuredContent" not in result


async def _official_legacy(url: str) -> tuple[str, list[str], bool]:
    with anyio.fail_after(30):
        async with Client(url, mode="legacy") as client:
            tools = await client.list_tools()
            called = await client.call_tool("payments.lookup", {"reference": "PMT-771"})
            return client.protocol_version, [t.name for t in tools.tools], called.is_error


def test_the_official_client_in_legacy_mode_lists_and_calls_on_a_stateless_gateway(
        url: str) -> None:
    version, names, is_error = anyio.run(_official_legacy, url)
    assert version == "2025-11-25"
    assert "payments.lookup" in names
    assert is_error is False
