"""``toolkeeper conformance sdk-diff`` and ``toolkeeper conformance proxy``: the --json report
fields, exit 0 (accepted / no finding), 1 (the policy refuses / any finding), 2 (setup failure),
the Markdown page, and the faulty proxy reporting exactly the two seed findings."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sdk_kit import require_sdk

from toolkeeper.cli.main import cli

SEEDS = {"proxy collapsed a protocol error into HTTP 500",
         "proxy changed the origin JSON-RPC body"}
ISSUES = ["proxy changed the origin JSON-RPC body", "proxy collapsed a protocol error into HTTP 500"]
"""Seed 004's ``proxyIssues``: the distinct finding titles, sorted."""
REPORT_FIELDS = {"role", "policyDigest", "sdks", "ran", "skipped", "refused", "disagreements",
                 "runs", "digest"}
RUN_FIELDS = {"fixture", "sdk", "era", "outcome", "reason", "label", "negotiatedEra", "raw",
              "normalized", "expected", "accountedRemovals", "semanticLoss", "changes",
              "refused", "acceptable", "sdkRequests", "redactions"}
FUTURE = ("--sdk", "python", "--fixture", "golden-unknown-additive-field", "--json")


def _invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, ["conformance", *args])


def test_sdk_diff_json_has_the_report_fields_and_exits_0_when_the_application_accepts() -> None:
    require_sdk("python")
    result = _invoke("sdk-diff", *FUTURE)
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert set(report) == REPORT_FIELDS
    (run,) = report["runs"]
    assert set(run) == RUN_FIELDS
    assert (report["role"], report["refused"], run["semanticLoss"]) == (
        "application", 0, ["$.futureHint"])
    assert report["digest"].startswith("sha256:")


def test_sdk_diff_exits_1_when_the_intermediary_policy_refuses_the_loss(tmp_path: Path) -> None:
    require_sdk("python")
    page = tmp_path / "sdk-diff.md"
    result = _invoke("sdk-diff", *FUTURE, "--role", "intermediary", "--markdown", str(page))
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert (report["refused"], report["runs"][0]["refused"]) == (1, ["semantic_loss"])
    assert "| golden-unknown-additive-field | mcp " in page.read_text()


def test_sdk_diff_exits_2_when_an_sdk_is_missing_under_ci(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLKEEPER_INTEROP_CACHE", str(tmp_path))
    monkeypatch.setenv("CI", "true")
    result = _invoke("sdk-diff", "--sdk", "typescript", "--json")
    assert result.exit_code == 2
    assert json.loads(result.output)["error"]["code"] == "conformance.sdk_missing"


def test_sdk_diff_exits_2_when_no_sdk_is_installed_and_skips_outside_ci(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLKEEPER_INTEROP_CACHE", str(tmp_path))
    monkeypatch.delenv("CI", raising=False)
    result = _invoke("sdk-diff", "--sdk", "typescript", "--sdk", "python1", "--json")
    assert result.exit_code == 2
    assert json.loads(result.output)["error"]["code"] == "conformance.sdk_missing"


def test_sdk_diff_exits_2_on_an_unknown_fixture_or_a_bad_policy(tmp_path: Path) -> None:
    unknown = _invoke("sdk-diff", "--fixture", "golden-nothing", "--json")
    assert unknown.exit_code == 2
    assert json.loads(unknown.output)["error"]["code"] == "conformance.no_transcripts"
    policy = tmp_path / "policy.json"
    policy.write_text("{}")
    bad = _invoke("sdk-diff", "--policy", str(policy), "--json")
    assert bad.exit_code == 2
    assert json.loads(bad.output)["error"]["code"] == "conformance.bad_policy"


def _titles(report: dict[str, Any]) -> set[str]:
    return {finding["title"] for finding in report["findings"]}


def test_proxy_faulty_config_reports_exactly_the_two_seed_findings_and_exits_1(
        nginx: str, tmp_path: Path) -> None:
    page = tmp_path / "proxy.md"
    result = _invoke("proxy", "--app", "--config", "faulty", "--json", "--markdown", str(page))
    assert result.exit_code == 1, result.output
    report = json.loads(result.output)
    assert set(report) == {"config", "exchanges", "findings", "issues", "digest"}
    assert (report["config"], _titles(report), report["issues"]) == ("faulty", SEEDS, ISSUES)
    markdown = page.read_text()
    assert "proxy.collapsed_protocol_error" in markdown
    assert markdown.split("## Issues\n\n", 1)[1].startswith(
        "".join(f"- {issue}\n" for issue in ISSUES) + "\n")


def test_proxy_app_exchanges_catch_the_faulty_rewrite_of_a_success_body(nginx: str) -> None:
    report = json.loads(_invoke("proxy", "--app", "--config", "faulty", "--json").output)
    found = {(f["exchange"], f["id"]): f["detail"] for f in report["findings"]}
    assert [e["name"] for e in report["exchanges"]] == [
        "golden-tools-list", "negative-header-body-mismatch", "negative-method-not-found",
        "golden-tools-call"]
    assert sorted(found) == [
        ("golden-tools-call", "proxy.changed_body"),
        ("negative-header-body-mismatch", "proxy.changed_body"),
        ("negative-header-body-mismatch", "proxy.collapsed_protocol_error"),
        ("negative-method-not-found", "proxy.changed_body"),
        ("negative-method-not-found", "proxy.collapsed_protocol_error")]
    changed = found[("golden-tools-call", "proxy.changed_body")]
    assert (changed["originKind"], changed["egressKind"], changed["paths"]) == (
        "json", "json", ["$.result.isError"])


def test_proxy_terminal_output_lists_each_issue_once(nginx: str) -> None:
    result = _invoke("proxy", "--app", "--config", "faulty")
    assert result.exit_code == 1, result.output
    issues = [line.split("  ", 1)[1] for line in result.output.splitlines()
              if line.startswith("ISSUE  ")]
    assert issues == ISSUES


def test_proxy_correct_config_reports_none_and_exits_0(nginx: str, demo_origin: str) -> None:
    result = _invoke("proxy", "--origin", demo_origin, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["config"], report["findings"], report["issues"], len(report["exchanges"])) \
        == ("correct", [], [], 3)


def test_proxy_app_correct_config_reports_no_issue_and_exits_0(nginx: str) -> None:
    result = _invoke("proxy", "--app", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert (report["findings"], report["issues"], len(report["exchanges"])) == ([], [], 4)


def test_proxy_exits_2_on_an_unreadable_config_or_no_origin(tmp_path: Path) -> None:
    missing = _invoke("proxy", "--app", "--config", str(tmp_path / "none.conf"), "--json")
    assert missing.exit_code == 2
    assert json.loads(missing.output)["error"]["code"] == "conformance.proxy_config"
    neither = _invoke("proxy", "--json")
    assert neither.exit_code == 2
    assert json.loads(neither.output)["error"]["code"] == "cli.bad_target"


def test_proxy_exits_2_when_the_origin_cannot_be_reached(nginx: str) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = _invoke("proxy", "--origin", f"http://127.0.0.1:{port}/mcp", "--json")
    assert result.exit_code == 2, result.output[-300:]
    error = json.loads(result.output)["error"]
    assert (error["code"], error["data"]["exchange"]) == (
        "conformance.origin_unreachable", "golden-tools-list")
