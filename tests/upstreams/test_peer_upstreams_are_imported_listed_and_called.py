"""Issue 22, acceptance 1: MCP servers nobody here wrote (the official SDK 2.3.0 MCPServer
over HTTP and stdio, ``mcp`` 1.x over HTTP (legacy only), the newest FastMCP over HTTP and
stdio, ``@modelcontextprotocol/server-everything`` over stdio, a TypeScript SDK 1.x McpServer
over HTTP) are imported with ``toolkeeper upstream add`` and ``sync``, then listed and called
through ``toolkeeper serve`` by the official SDK client in both eras and by ``mcp`` 1.x in the
legacy era. One gateway per upstream kind (module scope); each cell is one caller session.

The cells are the "Upstream servers" table of ``docs/compatibility.md``: written with
``TOOLKEEPER_WRITE_COMPAT=1``, otherwise compared row by row, and the table holds exactly these
cells."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from interop_kit import (
    UPSTREAM_HEAD,
    cache_root,
    hand_written,
    locked,
    parse_rows,
    parse_upstream_rows,
    render_doc,
)
from mcp import Client
from node_clients import NODE_CLIENTS
from peer_upstreams import MCP1, PEER_UPSTREAMS, PeerUpstream, Served, served_upstream
from python_clients import PYTHON_CLIENTS, PYTHON_PINS

from peer_kit import Peers

DOC = Path(__file__).resolve().parents[2] / "docs" / "compatibility.md"
WRITE = os.environ.get("TOOLKEEPER_WRITE_COMPAT") == "1"
CALLER_1X = Path(__file__).with_name("mcp1_caller.py")
CALLERS = [("mcp 2.3.0", "auto", "2026-07-28"), ("mcp 2.3.0", "legacy", "2025-11-25"),
           (MCP1, "legacy", "2025-11-25")]
CELLS = [(kind, caller) for kind in PEER_UPSTREAMS for caller in CALLERS]
SESSION_S = 30


@pytest.fixture(scope="module", params=PEER_UPSTREAMS, ids=lambda kind: kind.id)
def served(request: pytest.FixtureRequest, peers: Peers,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    kind: PeerUpstream = request.param
    with served_upstream(kind, peers, tmp_path_factory.mktemp(kind.id)) as running:
        yield running


async def _sdk_call(url: str, mode: str, tool: str, arguments: dict[str, Any]
                    ) -> dict[str, Any]:
    with anyio.fail_after(SESSION_S):
        async with Client(url, mode=mode) as client:
            tools: list[dict[str, Any]] = []
            cursor: str | None = None
            while True:
                page = await client.list_tools(cursor=cursor)
                tools += [{"name": t.name, "description": t.description,
                           "inputSchema": t.input_schema, "outputSchema": t.output_schema,
                           "annotations": None if t.annotations is None else
                           t.annotations.model_dump(by_alias=True, exclude_none=True)}
                          for t in page.tools]
                cursor = page.next_cursor
                if cursor is None:
                    break
            result = await client.call_tool(tool, arguments)
            texts = [block.text for block in result.content if block.type == "text"]
            return {"era": client.protocol_version, "tools": tools,
                    "isError": result.is_error, "text": texts[0] if texts else None,
                    "structured": result.structured_content}


def _mcp1_call(peers: Peers, url: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    python = peers.python_client(PYTHON_PINS[MCP1])
    done = subprocess.run([*python, str(CALLER_1X), url, tool, json.dumps(arguments)],
                          capture_output=True, text=True, timeout=SESSION_S * 2, check=False)
    lines = done.stdout.strip().splitlines()
    assert lines, f"the mcp 1.x caller printed nothing (exit {done.returncode}): {done.stderr}"
    out: dict[str, Any] = json.loads(lines[-1])
    return out


def _row(served: Served, caller: tuple[str, str, str], upstream_era: str,
         seen: dict[str, Any]) -> list[str]:
    kind = served.kind
    name, mode, _ = caller
    counts = ", ".join(f"{count} {action}" for action, count in served.report["counts"].items())
    if "failure" in seen:
        return [kind.label, kind.transport, name, mode, upstream_era,
                f"FAIL: {seen['failure']}", counts, "FAIL", "FAIL"]
    list_cell = _judge_listing(served, seen["tools"])
    call_cell = _judge_call(served, seen)
    return [_cell(cell) for cell in (kind.label, kind.transport, name, mode, upstream_era,
                                     seen["era"], counts, list_cell, call_cell)]


def _judge_listing(served: Served, tools: list[dict[str, Any]]) -> str:
    """``pass`` when every imported tool is listed, once, with the upstream's description and
    both schemas, and annotations that claim no less risk than the upstream's own; else the
    first tool and field that differ."""
    listed = {t["name"]: t for t in tools if t["name"].startswith(served.prefix)}
    if sorted(listed) != served.imported:
        return f"FAIL: listed {sorted(listed)}"
    for name in served.imported:
        upstream, got = served.descriptors[name], listed[name]
        for field in ("description", "inputSchema", "outputSchema"):
            if upstream.get(field) is not None and got[field] != upstream[field]:
                return f"FAIL: {name} {field} {json.dumps(got[field])[:80]}"
        theirs, ours = upstream.get("annotations") or {}, got["annotations"] or {}
        if theirs.get("readOnlyHint") is False and ours.get("readOnlyHint") is not False:
            return f"FAIL: {name} readOnlyHint {ours.get('readOnlyHint')} (upstream: false)"
        if theirs.get("destructiveHint") is True and ours.get("destructiveHint") is not True:
            return f"FAIL: {name} destructiveHint {ours.get('destructiveHint')} (upstream: true)"
    return "pass"


def _judge_call(served: Served, seen: dict[str, Any]) -> str:
    """``pass`` when the call answered the upstream's text, ``isError`` false, with structured
    content where the upstream's tool declares an output schema."""
    kind = served.kind
    answer = (seen["isError"], seen["text"])
    if answer != (False, kind.answer):
        return f"FAIL: {answer}"
    declared = served.descriptors[served.prefix + kind.tool].get("outputSchema") is not None
    if declared and not isinstance(seen["structured"], dict):
        return f"FAIL: structuredContent {seen['structured']!r}"
    return "pass"


def _cell(text: str) -> str:
    """A table cell: one line, no column separator."""
    return " ".join(str(text).replace("|", "/").split())


def _write(update: dict[tuple[str, ...], list[str]] | None, keep: set[tuple[str, ...]] | None
           ) -> None:
    with locked(cache_root() / "compatibility.md.lock"):
        doc = DOC.read_text()
        rows = parse_upstream_rows(doc)
        rows.update(update or {})
        if keep is not None:
            rows = {key: row for key, row in rows.items() if key in keep}
        clients = [spec.name for spec in PYTHON_CLIENTS + NODE_CLIENTS]
        DOC.write_text(render_doc(clients, parse_rows(doc), rows, hand_written(doc)))


@pytest.mark.parametrize("caller", CALLERS, ids=lambda c: f"{c[0]}-{c[1]}".replace(" ", "_"))
def test_an_imported_peer_is_listed_and_called_through_the_gateway(
        served: Served, caller: tuple[str, str, str], peers: Peers) -> None:
    kind = served.kind
    assert served.imported, served.report  # the sync imported the upstream's tools
    assert served.prefix + kind.tool in served.imported
    name, mode, era = caller
    exposed = served.prefix + kind.tool
    if name == MCP1:
        seen = _mcp1_call(peers, served.gateway, exposed, kind.arguments)
    else:
        seen = anyio.run(_sdk_call, served.gateway, mode, exposed, kind.arguments)
    row = _row(served, caller, served.upstream_era, seen)
    expected = [kind.label, kind.transport, name, mode, served.upstream_era, era,
                row[6], "pass", "pass"]
    if WRITE:
        _write({tuple(row[:4]): row}, None)
    else:
        documented = parse_upstream_rows(DOC.read_text()).get(tuple(row[:4]))
        assert documented == row, (
            f"docs/compatibility.md documents {documented}, the run gives {row} "
            "(TOOLKEEPER_WRITE_COMPAT=1 rewrites it)")
    assert row == expected


def test_the_upstream_table_has_a_row_for_exactly_these_cells() -> None:
    cells = {(kind.label, kind.transport, name, mode) for kind, (name, mode, _) in CELLS}
    if WRITE:
        _write(None, cells)
    rows = parse_upstream_rows(DOC.read_text())
    assert sorted(set(rows) ^ cells) == [], "upstream rows missing from or extra in the doc"
    assert all(len(row) == len(UPSTREAM_HEAD) for row in rows.values())
