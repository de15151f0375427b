"""The corpus against ``@modelcontextprotocol/server-everything`` (npm, pinned; the kernel's
interop install, started here over Streamable HTTP on 127.0.0.1 and over stdio): it speaks the
legacy era only, so the report's era is 2025-11-25, its modern cases are skipped with the
decision's verdict (one ``era.unserved`` verdict, never failed, never crashed), and its
deviations are named findings at their level (every live case's expected outcome is checked in
as data, ``panel/server-everything-{http,stdio}.json``): an unknown tool answered with an
``isError`` result (server/tools.mdx, "Error Handling": a warn); over HTTP a foreign
``Origin`` accepted (transports.mdx, "Security Warning": a MUST, a fail). Naming the modern
era it does not serve is that one verdict too, with every live modern case skipped."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conformance_kit import check_panel, run

from toolkeeper.client import Target
from toolkeeper.conformance import Report, RunOptions, builtin_corpus

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "client"))

from kernel_everything_kit import everything_argv, everything_http

from peer_kit import Peers

MODERN_SKIP = "the target does not serve the modern era (refused.strict_unproven)"
UNKNOWN_TOOL = "expect.outcome: $.result: a result (isError) where the case expects error -32602"


@pytest.fixture(scope="module")
def everything(peers: Peers) -> Path:
    return peers.everything()


def _check(report: Report, name: str) -> None:
    assert report.era == "2025-11-25"
    assert report.era_decision is not None
    assert report.era_decision["verdict"] == "legacy.initialized"
    live_modern = {t.name for t in builtin_corpus()
                   if t.mode == "live" and t.version == "2026-07-28"}
    skipped = {c.name: c.finding for c in report.cases if c.outcome == "skip"}
    assert set(skipped) >= live_modern
    assert MODERN_SKIP in {skipped[name] for name in live_modern}
    assert [(v.era, v.verdict, v.reason) for v in report.eras] == [
        ("2026-07-28", "era.unserved", MODERN_SKIP)]
    outcomes = {c.name: (c.outcome, c.finding) for c in report.cases}
    assert outcomes["negative-legacy-unknown-tool"] == ("warn", UNKNOWN_TOOL)
    assert report.selfcheck["failed"] == 0
    check_panel(report, name)


def test_over_stdio_only_the_legacy_era_runs_and_the_unknown_tool_is_a_finding(
        everything: Path) -> None:
    _check(run(Target.from_stdio(everything_argv(everything, "stdio"))),
           "server-everything-stdio")


def test_over_http_the_same(everything: Path) -> None:
    with everything_http(everything) as url:
        report = run(Target.from_url(url))
    _check(report, "server-everything-http")
    # Both eras' transports: a foreign Origin is answered 403; server-everything answers it.
    origin = next(c for c in report.cases if c.name == "negative-legacy-foreign-origin")
    assert (origin.outcome, origin.observed_status) == ("fail", 200)


def test_naming_the_modern_era_it_does_not_serve_is_one_verdict(everything: Path) -> None:
    report = run(Target.from_stdio(everything_argv(everything, "stdio")),
                 options=RunOptions(era="2026-07-28"))
    assert [(v.era, v.verdict) for v in report.eras] == [("2026-07-28", "era.unserved")]
    assert report.live["failed"] == report.live["passed"] == 0
    assert report.live["skipped"] == sum(1 for c in report.cases if c.mode == "live")
