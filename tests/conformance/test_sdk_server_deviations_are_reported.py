"""The corpus against a server written with the official Python SDK (``mcp`` MCPServer; the
kernel's fixture server, started here on 127.0.0.1 and over stdio): its deviations are named
findings in the report (issue 16, acceptance 2), and nothing crashes on what it does not do.

Pinned deviations, at the level the spec text gives them: it answers an unknown tool with an
``isError`` result instead of a -32602 error (2026-07-28 and 2025-11-25 server/tools.mdx,
"Error Handling", no MUST: a warn), in both eras; it answers ``"jsonrpc": "1.0"`` with id null
where the id could be read (a warn); over stdio it does not answer a line it cannot read as a
request: a parse error and a bad ``jsonrpc`` are fails (JSON-RPC 2.0, which the text requires,
answers both), a batch and a null id warns, a fractional id a note (the text is unclear)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conformance_kit import run

from process_kit import serving_announced_port
from toolkeeper.client import Target

pytest.importorskip("mcp")

SERVER = str(Path(__file__).resolve().parents[1] / "client" / "kernel_sdk_server.py")
UNKNOWN_TOOL = ("warn",
                "expect.outcome: $.result: a result (isError) where the case expects error -32602")
BOTH = {"negative-unknown-tool": UNKNOWN_TOOL, "negative-legacy-unknown-tool": UNKNOWN_TOOL}
HTTP_ONLY = {"negative-wrong-jsonrpc-version": (
    "warn", "response.id: $.id: must equal the request id in value and JSON type")}
UNANSWERED = "response.missing: $: no JSON-RPC response to the request"
STDIO_ONLY = {"negative-batch-request": ("warn", UNANSWERED),
              "negative-float-request-id": ("note", UNANSWERED),
              "negative-malformed-json": ("fail", UNANSWERED),
              "negative-null-request-id": ("warn", UNANSWERED),
              "negative-wrong-jsonrpc-version": ("fail", "target.timeout: $: no answer within "
                                                 "10.0s")}


@pytest.fixture(scope="module")
def sdk_url() -> Iterator[str]:
    with serving_announced_port([sys.executable, SERVER, "http"]) as url:
        yield url


def _findings(target: Target) -> dict[str, tuple[str, str | None]]:
    report = run(target)
    assert report.era == "2026-07-28" and report.eras == ()
    assert [c.name for c in report.cases if c.outcome == "skip"] == [
        "negative-missing-required-capability"]
    assert report.selfcheck["failed"] == 0
    return {case.name: (case.outcome, case.finding) for case in report.cases
            if case.outcome in ("fail", "warn", "note")}


def test_over_http_the_sdk_server_warns_on_the_unknown_tool_and_the_unread_id(
        sdk_url: str) -> None:
    assert _findings(Target.from_url(sdk_url)) == {**BOTH, **HTTP_ONLY}


def test_over_stdio_it_also_leaves_unreadable_lines_unanswered() -> None:
    assert _findings(Target.from_stdio([sys.executable, SERVER, "stdio"])) == {
        **BOTH, **STDIO_ONLY}
