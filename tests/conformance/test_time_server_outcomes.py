"""The corpus against ``mcp-server-time`` (the reference time server from PyPI, in its own
virtualenv installed by the ``peers`` fixture; started here over stdio): the expected outcome of
every live case is checked in as data (``panel/mcp-server-time-stdio.json``, each row with its
level and citation). It advertises tools only, so the subscription, prompt and resource cases
are skips with the reason, never failures; the lines it leaves unanswered are ones the stdio
text forbids the client to write, so they are notes with the reason."""

from __future__ import annotations

from conformance_kit import check_panel, run

from peer_kit import Peers
from toolkeeper.client import Target
from toolkeeper.conformance import builtin_corpus


def test_over_stdio_unadvertised_capabilities_are_skipped(peers: Peers) -> None:
    report = run(Target.from_stdio(peers.mcp_server_time()))
    assert report.selfcheck["failed"] == 0
    check_panel(report, "mcp-server-time-stdio")
    outcomes = {c.name: c.outcome for c in report.cases}
    assert outcomes["golden-modern-subscriptions-listen-sse"] == "skip"
    assert outcomes["golden-modern-tools-list"] == "pass"


STDIO = {"file": "2026-07-28/basic/transports/stdio.mdx", "section": "stdio"}
LEGACY_STDIO = {"file": "2025-11-25/basic/transports.mdx", "section": "stdio"}
REQUESTS = {"file": "2026-07-28/basic/index.mdx", "section": "Requests"}
LEGACY_REQUESTS = {"file": "2025-11-25/basic/index.mdx", "section": "Requests"}
CLIENT_DUTY = "stdio: the spec puts this duty on the client"
INPUT_CASES = {
    # name: (outcome, level, citation, finding code, why the level)
    "negative-malformed-json": ("note", "reference", STDIO, "response.missing", CLIENT_DUTY),
    "negative-legacy-malformed-json": ("note", "reference", LEGACY_STDIO, "response.missing",
                                       CLIENT_DUTY),
    "negative-wrong-jsonrpc-version": ("note", "reference", STDIO, "target.timeout",
                                       CLIENT_DUTY),
    "negative-legacy-wrong-jsonrpc-version": ("note", "reference", LEGACY_STDIO,
                                              "target.timeout", CLIENT_DUTY),
    "negative-batch-request": ("note", "reference", STDIO, "response.missing", CLIENT_DUTY),
    "negative-legacy-batch-request": ("note", "reference", LEGACY_STDIO, "response.missing",
                                      CLIENT_DUTY),
    "negative-modern-params-not-object": ("note", "reference", STDIO, "target.timeout",
                                          CLIENT_DUTY),
    "negative-null-request-id": ("note", "reference", REQUESTS, "response.missing",
                                 "the rule on a null id binds the sender"),
    "negative-legacy-null-request-id": ("note", "reference", LEGACY_REQUESTS,
                                        "response.missing",
                                        "the rule on a null id binds the sender"),
}


def test_over_stdio_input_the_client_may_not_send_is_a_note_not_a_failure(peers: Peers
                                                                          ) -> None:
    # The server leaves a line it cannot take unanswered: over stdio the text forbids the
    # client to write it, and a null id is the sender's fault on every transport.
    corpus = [t for t in builtin_corpus() if t.name in INPUT_CASES]
    report = run(Target.from_stdio(peers.mcp_server_time()), corpus)
    seen = {c.name: (c.outcome, c.level, c.citation, (c.finding or "").split(":", 1)[0],
                     c.finding or "") for c in report.cases}
    assert {name: row[:4] for name, row in seen.items()} == {
        name: row[:4] for name, row in INPUT_CASES.items()}
    for name, (*_, why) in INPUT_CASES.items():
        assert f"({why}" in seen[name][4], (name, seen[name][4])
    assert report.live["failed"] == report.live["warned"] == 0
