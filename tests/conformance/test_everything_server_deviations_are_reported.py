"""The corpus against ``@modelcontextprotocol/server-everything`` (npm, pinned; the kernel's
interop install, started here over Streamable HTTP on 127.0.0.1 and over stdio): it speaks the
legacy era only, so the report's era is 2025-11-25, its modern cases are skipped with the
decision's verdict (never failed, never crashed), and its one deviation is a named finding:
an unknown tool answered with an ``isError`` result (issue 16, acceptance 2)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conformance_kit import run

from toolkeeper.client import Target
from toolkeeper.conformance import Report, builtin_corpus

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "client"))

from kernel_everything_kit import everything_argv, everything_http

from peer_kit import Peers

MODERN_SKIP = "the target does not serve the modern era (refused.strict_unproven)"
UNKNOWN_TOOL = "expect.outcome: $.result: a result (isError) where the case expects error -32602"


@pytest.fixture(scope="module")
def everything(peers: Peers) -> Path:
    return peers.everything()


def _check(report: Report) -> None:
    assert report.era == "2025-11-25"
    assert report.era_decision is not None
    assert report.era_decision["verdict"] == "legacy.initialized"
    live_modern = {t.name for t in builtin_corpus()
                   if t.mode == "live" and t.version == "2026-07-28"}
    assert {c.name: c.finding for c in report.cases if c.outcome == "skip"} == {
        name: MODERN_SKIP for name in live_modern}
    assert {c.name: c.finding for c in report.cases if c.outcome == "fail"} == {
        "negative-legacy-unknown-tool": UNKNOWN_TOOL}


def test_over_stdio_only_the_legacy_era_runs_and_the_unknown_tool_is_a_finding(
        everything: Path) -> None:
    _check(run(Target.from_stdio(everything_argv(everything, "stdio"))))


def test_over_http_the_same(everything: Path) -> None:
    with everything_http(everything) as url:
        _check(run(Target.from_url(url)))
