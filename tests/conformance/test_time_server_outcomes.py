"""The corpus against ``mcp-server-time`` (the reference time server from PyPI, in its own
virtualenv installed by the ``peers`` fixture; started here over stdio): the expected outcome of
every live case is checked in as data (``panel/mcp-server-time-stdio.json``, each row with its
level and citation). It advertises tools only, so the subscription, prompt and resource cases
are skips with the reason, never failures."""

from __future__ import annotations

from conformance_kit import check_panel, run

from peer_kit import Peers
from toolkeeper.client import Target


def test_over_stdio_unadvertised_capabilities_are_skipped(peers: Peers) -> None:
    report = run(Target.from_stdio(peers.mcp_server_time()))
    assert report.selfcheck["failed"] == 0
    check_panel(report, "mcp-server-time-stdio")
    outcomes = {c.name: c.outcome for c in report.cases}
    assert outcomes["golden-modern-subscriptions-listen-sse"] == "skip"
    assert outcomes["golden-modern-tools-list"] == "pass"
