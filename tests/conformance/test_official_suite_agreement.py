"""Where the official MCP conformance suite (``@modelcontextprotocol/conformance``, the version
``conformance/setup.sh`` pins) judges the same requirement on the same panel target as the
corpus, the two agree. ``panel/official-suite-2026-07-28.json`` is the comparison as data: per
target, each row names the suite's checks (scenario, check id and name), the statuses the suite
gave them, and the corpus cases that judge the same requirement with their panel outcomes; the
checks the suite judges and the corpus does not are listed apart with the reason
(``unmatched``).

The data test always runs: every row's outcomes are the panel files' and agree with the suite's
statuses. The live test runs the suite's three scenarios that hold those checks
(``dns-rebinding-protection``, ``http-header-validation``, ``server-stateless``: seconds per
target) against the official SDK 2.3.0 server and the TypeScript SDK v2 server over HTTP and
asserts the statuses recorded; without the suite installed (``conformance/setup.sh``) it is
skipped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conformance_kit import PANEL

from peer_kit import Peers
from process_kit import serving_announced_port

DATA = PANEL / "official-suite-2026-07-28.json"
SDK_SERVER = Path(__file__).resolve().parents[1] / "client" / "kernel_sdk_server.py"
V2_SERVER = Path(__file__).resolve().parent / "ts_sdk_v2_panel_server.mjs"
SUITE_TIMEOUT_S = 120
AGREES = {"SUCCESS": {"pass", "note"}, "WARNING": {"warn"}, "FAILURE": {"fail", "warn"}}
"""A suite status and the corpus outcomes it agrees with (a note is the reference's habit, no
finding; the suite has no level between its failure and its warning)."""


def _data() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(DATA.read_text("utf-8"))
    return loaded


def _panel(target: str) -> dict[str, Any]:
    cases: dict[str, Any] = json.loads((PANEL / f"{target}.json").read_text("utf-8"))["cases"]
    return cases


@pytest.mark.parametrize("target", sorted(_data()["targets"]))
def test_the_suite_and_the_corpus_agree_where_both_judge(target: str) -> None:
    panel = _panel(target)
    rows = _data()["targets"][target]
    assert rows
    for row in rows:
        for case, outcome in row["cases"].items():
            assert panel[case]["outcome"] == outcome, (target, case)
            assert panel[case]["level"] in ("MUST", "SHOULD", "reference"), (target, case)
        for status in row["official"]:
            assert set(row["cases"].values()) <= AGREES[status], (target, row)


def _suite() -> tuple[Path, Path]:
    conf = Path(os.environ.get("CONF", Path.home() / ".cache" / "toolkeeper-conformance"))
    suite, node = conf / "node_modules" / ".bin" / "conformance", conf / "node22" / "node_modules" / ".bin"
    if not suite.exists() or not (node / "node").exists():
        pytest.skip(f"the official conformance suite is not installed under {conf} "
                    "(conformance/setup.sh installs it)")
    return suite, node


def _statuses(url: str, scenarios: list[str]) -> dict[tuple[str, str, str], set[str]]:
    suite, node = _suite()
    env = {**os.environ, "PATH": f"{node}{os.pathsep}{os.environ.get('PATH', '')}"}
    seen: dict[tuple[str, str, str], set[str]] = {}
    with tempfile.TemporaryDirectory() as out:
        for scenario in scenarios:
            subprocess.run([str(suite), "server", "--url", url, "--spec-version", "2026-07-28",
                            "--scenario", scenario, "-o", str(Path(out) / scenario)],
                           env=env, capture_output=True, timeout=SUITE_TIMEOUT_S, check=False)
            for checks in sorted((Path(out) / scenario).glob("*/checks.json")):
                for check in json.loads(checks.read_text("utf-8")):
                    seen.setdefault((scenario, check["id"], check["name"]), set()).add(
                        check["status"])
    return seen


def _check_live(url: str, target: str) -> None:
    data = _data()
    seen = _statuses(url, data["scenarios"])
    for row in data["targets"][target]:
        observed = set().union(*(seen[(row["scenario"], c["id"], c["name"])]
                                 for c in row["checks"]))
        assert sorted(observed) == row["official"], (target, row["checks"])
    by_name = {(scenario, name): statuses for (scenario, _, name), statuses in seen.items()}
    for entry in data["unmatched"][target]:
        assert by_name[(entry["scenario"], entry["name"])] == {entry["official"]}, entry


@pytest.fixture(scope="module")
def sdk_url() -> Iterator[str]:
    pytest.importorskip("mcp")
    with serving_announced_port([sys.executable, str(SDK_SERVER), "http"]) as url:
        yield url


@pytest.fixture(scope="module")
def v2_url(peers: Peers) -> Iterator[str]:
    install = peers.ts_server_v2()
    placed = install / "conformance-panel" / V2_SERVER.name
    placed.parent.mkdir(exist_ok=True)
    shutil.copyfile(V2_SERVER, placed)
    with serving_announced_port([str(install / "node_modules" / ".bin" / "node"), str(placed),
                                 "http"]) as url:
        yield url


def test_the_suite_measures_on_the_sdk_server_what_the_table_records(sdk_url: str) -> None:
    _check_live(sdk_url, "mcp-2.3.0-mcpserver-http")


def test_the_suite_measures_on_the_ts_v2_server_what_the_table_records(v2_url: str) -> None:
    _check_live(v2_url, "ts-sdk-2.4.0-http")
