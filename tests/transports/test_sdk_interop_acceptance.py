"""Issue 4 acceptance 2: the official ``mcp`` 2.3.0 client, in ``auto`` (modern) and ``legacy``
modes and pinned to 2026-07-28, lists and calls the demo tools over Streamable HTTP and over
stdio; a call pinned to the retired ``db.query`` 3.0.0 gets the re-list error; the seed's bad
``payments.lookup`` call gets the three sorted errors as an ``isError`` result."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from http_served_kit import Served
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

MODES = [("auto", "2026-07-28"), ("2026-07-28", "2026-07-28"), ("legacy", "2025-11-25")]
SEED_BAD = {"reference": "PMT771", "include_legs": "yes", "urgent": True}


async def _exercise(server: Any, mode: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with anyio.fail_after(30):
        async with Client(server, mode=mode) as client:
            out["version"] = client.protocol_version
            out["names"] = sorted(t.name for t in (await client.list_tools()).tools)
            ok = await client.call_tool("payments.lookup",
                                        {"reference": "PMT-771", "include_legs": True})
            out["ok"] = (ok.is_error, ok.content[0].text)  # type: ignore[union-attr]
            bad = await client.call_tool("payments.lookup", SEED_BAD)
            out["bad"] = (bad.is_error, bad.structured_content)
            current = await client.call_tool("db.query", {"sql": "select 1", "timeout": 5})
            out["current"] = current.is_error
            try:
                await client.call_tool("db.query", {"sql": "select 1", "timeout_ms": 5},
                                       meta={"schemaVersion": "3.0.0"})
                out["stale"] = None
            except MCPError as exc:
                out["stale"] = (exc.error.code, exc.error.data)
    return out


def _check(out: dict[str, Any], version: str) -> None:
    assert out["version"] == version
    assert {"db.query", "payments.lookup", "tickets.create"} <= set(out["names"])
    is_error, text = out["ok"]
    assert is_error is False and text.startswith("PMT-771: HELD, 250000 AED")
    is_error, structured = out["bad"]
    assert is_error is True
    assert [(e["path"], e["keyword"]) for e in structured["errors"]] == [
        ("$.include_legs", "type"), ("$.reference", "pattern"), ("$.urgent", "additionalProperties")]
    assert out["current"] is False
    code, data = out["stale"]
    assert code == -32602
    assert data["reason"] == "schema_version_retired"
    assert (data["tool"], data["requestedVersion"], data["currentVersion"], data["action"]) == (
        "db.query", "3.0.0", "4.0.0", "relist")


@pytest.mark.parametrize(("mode", "version"), MODES)
def test_official_client_over_http(served: Served, mode: str, version: str) -> None:
    _check(anyio.run(_exercise, served.url, mode), version)


@pytest.mark.parametrize(("mode", "version"), MODES)
def test_official_client_over_stdio(tmp_path: Path, mode: str, version: str) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "toolkeeper", "serve", "--demo", "--stdio",
              "--registry", f"sqlite:///{tmp_path / 'registry.db'}"],
    )
    _check(anyio.run(_exercise, params, mode), version)
