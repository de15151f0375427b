"""The corpus against a server written with the TypeScript SDK 1.x (``@modelcontextprotocol/sdk``
McpServer from the interop kit's pinned Node install; started here over Streamable HTTP on
127.0.0.1): it speaks the legacy era only, so the modern era is one ``era.unserved`` verdict,
and the expected outcome of every live case is checked in as data
(``panel/ts-sdk-1.32.2-http.json``, each row with its level and citation). True findings at
their level: an unknown tool answered with an ``isError`` result (a warn)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conformance_kit import check_panel, run

from process_kit import serving_announced_port
from toolkeeper.client import Target

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "interop"))

from interop_kit import InstallError, cache_root
from node_clients import NODE_CLIENTS

SERVER = Path(__file__).resolve().parent / "ts_sdk_v1_panel_server.mjs"
UNKNOWN_TOOL = ("warn",
                "expect.outcome: $.result: a result (isError) where the case expects error -32602")


@pytest.fixture(scope="module")
def server_argv() -> list[str]:
    """``node`` of the kit's install and the server script placed inside that install (so its
    imports resolve from the install's ``node_modules``)."""
    spec = next(c for c in NODE_CLIENTS if c.name.startswith("@modelcontextprotocol/sdk "))
    try:
        node, _ = spec.prepare(cache_root())
    except InstallError as exc:  # no package registry reachable
        pytest.skip(f"the TypeScript SDK cannot be installed: {exc}")
    install = Path(node).parents[2]
    placed = install / "conformance-panel" / SERVER.name
    placed.parent.mkdir(exist_ok=True)
    shutil.copyfile(SERVER, placed)
    return [node, str(placed)]


@pytest.fixture(scope="module")
def ts_url(server_argv: list[str]) -> Iterator[str]:
    with serving_announced_port(server_argv) as url:
        yield url


def test_over_http_only_the_legacy_era_runs_and_an_unknown_tool_warns(ts_url: str) -> None:
    report = run(Target.from_url(ts_url))
    assert report.era == "2025-11-25"
    assert [(v.era, v.verdict) for v in report.eras] == [("2026-07-28", "era.unserved")]
    assert report.selfcheck["failed"] == 0
    check_panel(report, "ts-sdk-1.32.2-http")
    outcomes = {c.name: (c.outcome, c.finding) for c in report.cases}
    assert outcomes["negative-legacy-unknown-tool"] == UNKNOWN_TOOL
