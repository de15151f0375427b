"""The corpus against a server written with FastMCP (the interop kit's pinned ``fastmcp``,
installed into its cache by the kit; started here on 127.0.0.1 and over stdio): the expected
outcome of every live case is checked in as data (``panel/fastmcp-4.2.3-{http,stdio}.json``,
each row with its level and citation). True findings at their level: an unknown tool answered
with an ``isError`` result (server/tools.mdx, "Error Handling": a warn) in both eras, and over
HTTP a foreign ``Origin`` accepted (streamable-http.mdx, "Security & Endpoint", and
transports.mdx, "Security Warning": a MUST, a fail)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conformance_kit import check_panel, run

from process_kit import serving_announced_port
from toolkeeper.client import Target

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))

from interop_kit import InstallError, cache_root
from python_clients import PYTHON_PINS, client_python

SERVER = str(Path(__file__).resolve().parent / "fastmcp_panel_server.py")
UNKNOWN_TOOL = ("warn",
                "expect.outcome: $.result: a result (isError) where the case expects error -32602")


@pytest.fixture(scope="module")
def python() -> list[str]:
    try:
        return client_python(PYTHON_PINS["fastmcp 4.2.3"], cache_root())
    except InstallError as exc:  # no package index reachable
        pytest.skip(f"fastmcp cannot be installed: {exc}")


@pytest.fixture(scope="module")
def fastmcp_url(python: list[str]) -> Iterator[str]:
    with serving_announced_port([*python, SERVER, "http"]) as url:
        yield url


def _outcomes(target: Target, name: str) -> dict[str, tuple[str, str | None]]:
    report = run(target)
    assert report.selfcheck["failed"] == 0
    check_panel(report, name)
    return {c.name: (c.outcome, c.finding) for c in report.cases}


def test_over_http_an_unknown_tool_warns_and_a_foreign_origin_fails(fastmcp_url: str) -> None:
    outcomes = _outcomes(Target.from_url(fastmcp_url), "fastmcp-4.2.3-http")
    assert outcomes["negative-unknown-tool"] == UNKNOWN_TOOL
    assert outcomes["negative-legacy-unknown-tool"] == UNKNOWN_TOOL
    assert outcomes["negative-modern-foreign-origin"][0] == "fail"


def test_over_stdio_an_unknown_tool_warns(python: list[str]) -> None:
    outcomes = _outcomes(Target.from_stdio([*python, SERVER, "stdio"]), "fastmcp-4.2.3-stdio")
    assert outcomes["negative-unknown-tool"] == UNKNOWN_TOOL
