"""The corpus against a server written with the official Python SDK (``mcp`` MCPServer; the
kernel's fixture server, started here on 127.0.0.1 and over stdio): its deviations are named
findings in the report (issue 16, acceptance 2), and nothing crashes on what it does not do.

The expected outcome of every live case is checked in as data
(``panel/mcp-2.3.0-mcpserver-{http,stdio}.json``, each row with its level and citation).
Deviations, at the level the spec text gives them: an unknown tool answered with an
``isError`` result instead of a -32602 error (server/tools.mdx, "Error Handling", no MUST: a
warn) in both eras; an id that could be read answered as null (a warn); over stdio, lines it
cannot read as a request left unanswered (a parse error and a bad ``jsonrpc`` are fails:
JSON-RPC 2.0, which the text requires, answers both; a batch and a null id warn, a fractional
id is a note)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conformance_kit import check_panel, run

from process_kit import serving_announced_port
from toolkeeper.client import Target

pytest.importorskip("mcp")

SERVER = str(Path(__file__).resolve().parents[1] / "client" / "kernel_sdk_server.py")
UNKNOWN_TOOL = "expect.outcome: $.result: a result (isError) where the case expects error -32602"


@pytest.fixture(scope="module")
def sdk_url() -> Iterator[str]:
    with serving_announced_port([sys.executable, SERVER, "http"]) as url:
        yield url


def _check(target: Target, name: str) -> None:
    report = run(target)
    assert report.era == "2026-07-28" and report.eras == ()
    assert report.selfcheck["failed"] == 0
    check_panel(report, name)
    outcomes = {c.name: (c.outcome, c.finding) for c in report.cases}
    for case in ("negative-unknown-tool", "negative-legacy-unknown-tool"):
        assert outcomes[case] == ("warn", UNKNOWN_TOOL)


def test_over_http_the_sdk_server_warns_on_the_unknown_tool_in_both_eras(sdk_url: str) -> None:
    _check(Target.from_url(sdk_url), "mcp-2.3.0-mcpserver-http")


def test_over_stdio_it_also_leaves_unreadable_lines_unanswered() -> None:
    _check(Target.from_stdio([sys.executable, SERVER, "stdio"]), "mcp-2.3.0-mcpserver-stdio")
