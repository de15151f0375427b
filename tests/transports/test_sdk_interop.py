"""Interop smoke test: the official ``mcp`` 2.3.0 client lists and calls a demo tool over
Streamable HTTP in each connect mode (auto probe, legacy handshake, modern version pin)."""

from __future__ import annotations

import anyio
import pytest
from http_served_kit import Served
from mcp import Client
from mcp.shared.exceptions import MCPError


async def _session(url: str, mode: str) -> tuple[str, list[str], str, bool, object]:
    with anyio.fail_after(30):
        async with Client(url, mode=mode) as client:
            tools = await client.list_tools()
            ok = await client.call_tool("payments.lookup", {"reference": "PMT-771"})
            bad = await client.call_tool("payments.lookup", {"reference": "PMT771"})
            text = ok.content[0].text  # type: ignore[union-attr]
            return (client.protocol_version, [t.name for t in tools.tools], text,
                    bad.is_error, bad.structured_content)


@pytest.mark.parametrize(("mode", "version"), [
    ("auto", "2026-07-28"), ("2026-07-28", "2026-07-28"), ("legacy", "2025-11-25"),
])
def test_the_official_client_lists_and_calls_in_every_mode(served: Served, mode: str,
                                                           version: str) -> None:
    negotiated, names, text, bad_is_error, errors = anyio.run(_session, served.url, mode)
    assert negotiated == version
    assert "payments.lookup" in names and "db.query" in names
    assert text.startswith("PMT-771: HELD, 250000 AED")
    assert bad_is_error is True
    assert errors == {"errors": [{"keyword": "pattern", "path": "$.reference",
                                  "message": "does not match pattern '^PMT-\\d{3,}$'"}]}


async def _stale_call(url: str) -> MCPError:
    with anyio.fail_after(30):
        async with Client(url, mode="2026-07-28") as client:
            try:
                await client.call_tool("db.query", {"sql": "select 1", "timeout_ms": 5},
                                       meta={"schemaVersion": "3.0.0"})
            except MCPError as exc:
                return exc
            raise AssertionError("a retired schema version must be refused")


def test_the_official_client_surfaces_the_schema_version_gate(served: Served) -> None:
    error = anyio.run(_stale_call, served.url)
    assert error.error.code == -32602
    assert error.error.data["reason"] == "schema_version_retired"  # type: ignore[index]
