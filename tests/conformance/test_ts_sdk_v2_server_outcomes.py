"""The corpus against a server written with the TypeScript SDK v2 (``@modelcontextprotocol/server``
2.4.0, installed by the ``peers`` fixture; ``ts_sdk_v2_panel_server.mjs`` started here over
Streamable HTTP on 127.0.0.1 and over stdio): both eras come from one factory, and the expected
outcome of every live case is checked in as data (``panel/ts-sdk-2.4.0-{http,stdio}.json``, each
row with its level and citation).

A true finding at its level: over stdio the connection is pinned to the era of its opening
exchange, so once it has served 2026-07-28 requests a request whose ``_meta`` asks for
``2099-01-01`` is answered with a result, where the version-negotiation text
(2026-07-28/basic/versioning.mdx, "Protocol Version Negotiation") requires the server to answer
an unimplemented version with ``UnsupportedProtocolVersionError`` (a MUST: a fail). Over HTTP
the same request is refused with -32022."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from conformance_kit import check_panel, run

from peer_kit import Peers
from process_kit import serving_announced_port
from toolkeeper.client import Target
from toolkeeper.conformance import Report, RunOptions

SERVER = Path(__file__).resolve().parent / "ts_sdk_v2_panel_server.mjs"
VERSION_CASE = "negative-unsupported-protocol-version"
VERSION_FINDING = "expect.outcome: $.result: a result where the case expects error -32022"
STDIO_CASE_TIMEOUT_S = 5.0
"""Over stdio a line the server leaves unanswered is the finding: a case waits this long for
it, not the default 10 s (Node starts the server, for the cases that start it afresh, well
within it)."""


@pytest.fixture(scope="module")
def server_argv(peers: Peers) -> list[str]:
    """``node`` of the fixture's install and the server script placed inside that install (so
    its imports resolve from the install's ``node_modules``)."""
    install = peers.ts_server_v2()
    placed = install / "conformance-panel" / SERVER.name
    placed.parent.mkdir(exist_ok=True)
    shutil.copyfile(SERVER, placed)
    return [str(install / "node_modules" / ".bin" / "node"), str(placed)]


@pytest.fixture(scope="module")
def ts_url(server_argv: list[str]) -> Iterator[str]:
    with serving_announced_port([*server_argv, "http"]) as url:
        yield url


def _checked(report: Report, name: str) -> dict[str, tuple[str, str | None]]:
    assert report.selfcheck["failed"] == 0
    check_panel(report, name)
    return {c.name: (c.outcome, c.finding) for c in report.cases}


def test_over_http_both_eras_are_judged(ts_url: str) -> None:
    report = run(Target.from_url(ts_url))
    assert report.era == "2026-07-28" and report.eras == ()
    outcomes = _checked(report, "ts-sdk-2.4.0-http")
    assert outcomes[VERSION_CASE] == ("pass", None)


def test_over_stdio_both_eras_are_judged(server_argv: list[str]) -> None:
    report = run(Target.from_stdio([*server_argv, "stdio"]),
                 options=RunOptions(case_timeout_s=STDIO_CASE_TIMEOUT_S))
    assert report.era == "2026-07-28" and report.eras == ()
    outcomes = _checked(report, "ts-sdk-2.4.0-stdio")
    names = [c.name for c in report.cases]  # run in this order, on one connection per era
    assert names.index("golden-modern-tools-list") < names.index(VERSION_CASE)
    assert outcomes["golden-modern-tools-list"] == ("pass", None)
    assert outcomes[VERSION_CASE] == ("fail", VERSION_FINDING)
