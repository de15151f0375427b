"""Proxy evidence through a real nginx (SPEC 5.5, issue 16 acceptance 5 and 6): the demo
gateway as the origin, a recording tap between nginx and it. The faulty configuration reports
exactly the two seed findings, the correct one none, and no artefact written holds a secret of
the redaction corpus."""

from __future__ import annotations

import json
import os
import socket
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from nginx_kit import require_nginx
from redaction_kit import CORPUS, leaks
from toolkeeper.conformance import (
    DEFAULT_EXCHANGES,
    NginxProxy,
    ProxyReport,
    modern_request,
    run_proxy_evidence,
)
from toolkeeper.conformance.nginx import load_template
from toolkeeper.errors import ConformanceError

SEEDS = {"proxy collapsed a protocol error into HTTP 500",
         "proxy changed the origin JSON-RPC body"}
ISSUES = ["proxy changed the origin JSON-RPC body", "proxy collapsed a protocol error into HTTP 500"]
"""Seed 004's ``proxyIssues``: the distinct finding titles, sorted."""
CALL = modern_request("golden-tools-call", "tools/call",
                      {"name": "payments.lookup", "arguments": {"reference": "PMT-771"}},
                      request_id=4)
MISMATCH = modern_request("negative-header-body-mismatch", "tools/call",
                          {"name": "payments.lookup", "arguments": {"reference": "PMT-771"}},
                          request_id=5, headers={"Mcp-Name": "db.query"})
EXCHANGES = (DEFAULT_EXCHANGES[0], MISMATCH, CALL)


def _by_exchange(report: ProxyReport) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {e.name: [] for e in report.exchanges}
    for finding in report.findings:
        found[finding.exchange].append(finding.id)
    return found


def test_faulty_nginx_reports_exactly_the_two_seed_findings(nginx: str, demo_origin: str) -> None:
    report = run_proxy_evidence(demo_origin, "faulty", EXCHANGES)
    assert report.titles == SEEDS
    assert json.loads(report.canonical())["issues"] == ISSUES
    assert _by_exchange(report) == {
        "golden-tools-list": [],
        "negative-header-body-mismatch": ["proxy.collapsed_protocol_error",
                                          "proxy.changed_body"],
        "golden-tools-call": ["proxy.changed_body"],
    }
    mismatch = report.exchanges[1]
    assert mismatch.origin is not None
    assert (mismatch.origin.status, mismatch.origin.body.value["error"]["code"]) == (400, -32020)
    assert (mismatch.egress.status, mismatch.egress.body.kind) == (500, "text")
    [changed] = [f for f in report.findings if f.exchange == "golden-tools-call"]
    assert changed.detail["paths"] == ["$.result.isError"]


def test_correct_nginx_reports_no_finding_and_passes_every_answer_through(
        nginx: str, demo_origin: str) -> None:
    report = run_proxy_evidence(demo_origin, "correct", (*DEFAULT_EXCHANGES, MISMATCH, CALL))
    assert report.findings == ()
    assert json.loads(report.canonical())["issues"] == []
    for exchange in report.exchanges:
        assert exchange.origin is not None, exchange.name
        assert exchange.origin.status == exchange.egress.status, exchange.name
        assert exchange.origin.body.digest == exchange.egress.body.digest, exchange.name
        assert exchange.origin.forwarded_body.digest == exchange.ingress.body.digest
    assert [e.egress.status for e in report.exchanges] == [200, 400, 404, 400, 200]


def test_the_report_is_canonical_json_stable_across_runs(nginx: str, demo_origin: str) -> None:
    first = run_proxy_evidence(demo_origin, "correct", EXCHANGES)
    second = run_proxy_evidence(demo_origin, "correct", EXCHANGES)
    assert first.canonical() == second.canonical()  # other ports, other times, same bytes
    assert first.digest() == second.digest()
    assert json.loads(first.canonical())["config"] == "correct"


def _secret_exchanges() -> list[Any]:
    requests = []
    for index, case in enumerate(CORPUS):
        arguments = {"reference": "PMT-771", **case.arguments()}
        headers: dict[str, str | None] = {"Authorization": f"Bearer tkn-{index}-Ab3dE6gH9jK"}
        if case.key is not None and case.key.replace("-", "").replace("_", "").isalnum():
            headers[case.key] = case.secrets[0]
        requests.append(modern_request(f"secret-{case.name}", "tools/call",
                                       {"name": "payments.lookup", "arguments": arguments},
                                       request_id=index + 10, headers=headers))
    return requests


@pytest.mark.parametrize("config", ["faulty", "correct"])
def test_no_artefact_holds_a_secret_of_the_redaction_corpus(
        nginx: str, demo_origin: str, tmp_path: Path, config: str) -> None:
    report = run_proxy_evidence(demo_origin, config, _secret_exchanges())
    artefact = tmp_path / "proxy-report.json"
    artefact.write_bytes(report.canonical())
    written = artefact.read_text() + repr(report)
    assert {case.name: hits for case in CORPUS if (hits := leaks(written, case))} == {}
    rules = {(e.name, r) for e in report.exchanges for _, r in e.redactions}
    assert ("secret-password", "key.denylist") in rules
    assert ("secret-jwt", "value.jwt") in rules


def test_nginx_is_stopped_by_its_pid_and_its_prefix_removed(nginx: str) -> None:
    proxy = NginxProxy(load_template("correct"), "127.0.0.1:9")
    with proxy:
        pid = proxy.pid
        assert pid is not None
        os.kill(pid, 0)  # running
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_an_unknown_configuration_is_a_stable_error() -> None:
    with pytest.raises(ConformanceError) as caught:
        run_proxy_evidence("http://127.0.0.1:9/mcp", "no-such-config")
    assert caught.value.code == "conformance.proxy_config"


def test_a_missing_nginx_binary_is_a_stable_error(tmp_path: Path) -> None:
    with pytest.raises(ConformanceError) as caught, NginxProxy(
            load_template("correct"), "127.0.0.1:9", binary=str(tmp_path / "nginx")):
        pass
    assert caught.value.code == "conformance.proxy_missing"


def test_a_configuration_nginx_refuses_is_a_stable_error_with_its_log(
        nginx: str, tmp_path: Path) -> None:
    template = tmp_path / "broken.conf"
    template.write_text(load_template("correct").replace("proxy_buffering off;",
                                                         "proxy_buffering sideways;"))
    with pytest.raises(ConformanceError) as caught, NginxProxy(template.read_text(),
                                                               "127.0.0.1:9"):
        pass
    assert caught.value.code == "conformance.proxy_start"
    assert "proxy_buffering" in caught.value.data["log"]


def test_the_templates_ship_as_package_data() -> None:
    folder = resources.files("toolkeeper.conformance") / "nginx"
    correct, faulty = (folder / "correct.conf").read_text(), (folder / "faulty.conf").read_text()
    assert "proxy_buffering off;" in correct and "proxy_http_version 1.1;" in correct
    assert "proxy_intercept_errors" not in correct and "sub_filter" not in correct
    assert "proxy_intercept_errors on;" in faulty and "sub_filter " in faulty


def test_a_missing_nginx_fails_under_ci_and_skips_elsewhere() -> None:
    with pytest.raises(pytest.fail.Exception):
        require_nginx(lambda: None, {"CI": "true"})
    with pytest.raises(pytest.skip.Exception):
        require_nginx(lambda: None, {})
    assert require_nginx(lambda: "/usr/sbin/nginx", {"CI": "true"}) == "/usr/sbin/nginx"


@pytest.mark.parametrize("directive", ["", "daemon on;\n"])
def test_a_template_that_would_daemonize_nginx_still_runs_it_under_its_pid(
        nginx: str, directive: str) -> None:
    template = load_template("correct").replace("daemon off;\n", directive)
    proxy = NginxProxy(template, "127.0.0.1:9")
    with proxy:
        pid, port = proxy.pid, proxy.port
        assert pid is not None
        os.kill(pid, 0)  # the master nginx runs as the child started, not a daemon it forked
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(OSError):  # nothing is left listening on the proxy's port
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
