"""The corpus against a server written with the official Python SDK 1.x (``mcp`` 1.30.0, the
newest 1.x, its FastMCP; the virtualenv installed by the ``peers`` fixture with the interop
kit's pin; ``mcp1_panel_server.py`` started here over Streamable HTTP on 127.0.0.1 and over
stdio): it speaks the legacy era only, so the modern era is one ``era.unserved`` verdict, and the
expected outcome of every live case is checked in as data (``panel/mcp-1.30.0-fastmcp-{http,
stdio}.json``, each row with its level and citation).

A true finding at its level: an unknown method answered with -32602 where JSON-RPC 2.0, which
every MCP message follows (2025-11-25/basic/index.mdx, "Messages", a MUST), sets -32601 "Method
not found": a fail."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conformance_kit import check_panel, run

from peer_kit import Peers
from process_kit import serving_announced_port
from toolkeeper.client import Target
from toolkeeper.conformance import Report

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))

from python_clients import PYTHON_PINS

SERVER = str(Path(__file__).resolve().parent / "mcp1_panel_server.py")
UNKNOWN_METHOD = "negative-legacy-unknown-method"


@pytest.fixture(scope="module")
def python(peers: Peers) -> list[str]:
    return peers.python_client(PYTHON_PINS["mcp 1.30.0"])


@pytest.fixture(scope="module")
def mcp1_url(python: list[str]) -> Iterator[str]:
    with serving_announced_port([*python, SERVER, "http"]) as url:
        yield url


def _checked(report: Report, name: str) -> dict[str, tuple[str, str | None, int | str | None]]:
    assert report.era == "2025-11-25"
    assert [(v.era, v.verdict) for v in report.eras] == [("2026-07-28", "era.unserved")]
    assert report.selfcheck["failed"] == 0
    check_panel(report, name)
    return {c.name: (c.outcome, c.level, c.observed_code) for c in report.cases}


def test_over_http_an_unknown_method_is_answered_invalid_params(mcp1_url: str) -> None:
    outcomes = _checked(run(Target.from_url(mcp1_url)), "mcp-1.30.0-fastmcp-http")
    assert outcomes[UNKNOWN_METHOD] == ("fail", "MUST", -32602)


def test_over_stdio_an_unknown_method_is_answered_invalid_params(python: list[str]) -> None:
    # The default case bound: a case that starts the server afresh waits out its import (seconds
    # on a loaded machine), so a shorter bound would turn a slow start into a finding.
    outcomes = _checked(run(Target.from_stdio([*python, SERVER, "stdio"])),
                        "mcp-1.30.0-fastmcp-stdio")
    assert outcomes[UNKNOWN_METHOD] == ("fail", "MUST", -32602)
