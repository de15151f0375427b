"""The corpus against a server written with the official Python SDK (``mcp`` MCPServer; the
kernel's fixture server, started here on 127.0.0.1 and over stdio): its deviations are named
findings in the report (issue 16, acceptance 2), and nothing crashes on what it does not do.

Pinned deviations: it answers an unknown tool with an ``isError`` result instead of -32602
(mcp-wire 5, DIVERGES), in both eras; over stdio it does not answer a line it cannot read as
a request (a parse error, a batch, a bad ``jsonrpc``, a null or fractional id)."""

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
UNKNOWN_TOOL = "expect.outcome: $.result: a result (isError) where the case expects error -32602"
BOTH = {"negative-unknown-tool": UNKNOWN_TOOL, "negative-legacy-unknown-tool": UNKNOWN_TOOL}
UNANSWERED = "response.missing: $: no JSON-RPC response to the request"
STDIO_ONLY = {name: UNANSWERED for name in (
    "negative-batch-request", "negative-float-request-id", "negative-malformed-json",
    "negative-null-request-id", "negative-wrong-jsonrpc-version")}


@pytest.fixture(scope="module")
def sdk_url() -> Iterator[str]:
    with serving_announced_port([sys.executable, SERVER, "http"]) as url:
        yield url


def _failures(target: Target) -> dict[str, str | None]:
    report = run(target)
    assert report.era == "2026-07-28"
    assert [c.name for c in report.cases if c.outcome == "skip"] == [
        "negative-missing-required-capability"]
    return {case.name: case.finding for case in report.cases if case.outcome == "fail"}


def test_over_http_the_sdk_server_fails_exactly_the_unknown_tool_cases(sdk_url: str) -> None:
    assert _failures(Target.from_url(sdk_url)) == BOTH


def test_over_stdio_it_also_leaves_unreadable_lines_unanswered() -> None:
    assert _failures(Target.from_stdio([sys.executable, SERVER, "stdio"])) == {
        **BOTH, **STDIO_ONLY}
