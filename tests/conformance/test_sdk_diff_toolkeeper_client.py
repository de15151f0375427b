"""toolkeeper's own client as one more SDK in the SDK diff (SPEC 5.4): each high-risk fixture's
answer served byte for byte from a replay origin on 127.0.0.1 to ``toolkeeper_driver.py``,
which asks through ``toolkeeper.client`` in the fixture's era, and judged by the same policy
rows as the official SDKs. It is this package, so it always runs (never skipped)."""

from __future__ import annotations

import json
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sdk_kit import HOST

from toolkeeper.cli.main import cli
from toolkeeper.conformance import SDK_DIFF_FIXTURES, SdkDiffReport, run_sdk_diff
from toolkeeper.conformance.sdk_clients import SDKS, locate, run_driver

FUTURE = {"x": 1}


@pytest.fixture(scope="module")
def diff() -> SdkDiffReport:
    return run_sdk_diff(HOST, ["toolkeeper"], "intermediary", require=True)


def _run(report: SdkDiffReport, fixture: str) -> dict[str, Any]:
    (found,) = [r.to_json() for r in report.runs if r.fixture == fixture]
    assert found["outcome"] == "ran"
    assert found["label"].startswith("toolkeeper ")
    return found


def test_the_toolkeeper_client_is_an_sdk_that_is_always_located_with_its_shipped_driver(
        ) -> None:
    assert "toolkeeper" in SDKS
    found = locate("toolkeeper")
    assert found.reason is None
    assert Path(found.argv[-1]).name == "toolkeeper_driver.py"
    assert Path(found.argv[-1]).is_file()
    root = Path(__file__).resolve().parents[2]
    declared = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["toolkeeper"]
    assert resources.files("toolkeeper.conformance").joinpath(
        "sdk_drivers", "toolkeeper_driver.py").is_file()
    assert any(Path("conformance/sdk_drivers/toolkeeper_driver.py").match(p) for p in declared)


def test_every_high_risk_fixture_runs_and_the_intermediary_policy_accepts_every_run(
        diff: SdkDiffReport) -> None:
    report = diff.to_json()
    assert [r["fixture"] for r in report["runs"]] == list(SDK_DIFF_FIXTURES)
    assert (report["ran"], report["skipped"], report["refused"]) == (6, 0, 0)


def test_futurehint_is_kept_in_the_modern_era_with_no_change_at_all(
        diff: SdkDiffReport) -> None:
    run = _run(diff, "golden-unknown-additive-field")
    assert run["negotiatedEra"] == "2026-07-28"
    assert run["sdkRequests"] == ["server/discover", "tools/call"]
    assert run["normalized"]["value"]["futureHint"] == FUTURE
    assert run["normalized"]["value"]["resultType"] == "complete"
    assert run["normalized"]["value"]["_meta"] == {"com.example/extra": True}
    assert (run["semanticLoss"], run["accountedRemovals"], run["changes"]) == ([], [], [])
    assert (run["refused"], run["acceptable"]) == ([], True)


def test_futurehint_is_kept_in_the_legacy_era_after_the_initialize_handshake(
        diff: SdkDiffReport) -> None:
    run = _run(diff, "golden-sdk-legacy-additive-field")
    assert run["negotiatedEra"] == "2025-11-25"
    assert run["sdkRequests"] == ["initialize", "notifications/initialized", "tools/call"]
    assert run["normalized"]["value"]["futureHint"] == FUTURE
    assert (run["semanticLoss"], run["changes"], run["acceptable"]) == ([], [], True)


def test_the_tools_list_listing_keeps_every_field_of_the_result(
        diff: SdkDiffReport) -> None:
    run = _run(diff, "golden-sdk-tools-list-cache-hints")
    value = run["normalized"]["value"]
    assert (value["ttlMs"], value["cacheScope"]) == (0, "private")
    assert value["tools"] == [{"description": "Look up", "inputSchema": {"type": "object"},
                               "name": "lookup"}]
    assert (value["resultType"], value["_meta"]) == (
        "complete", {"io.modelcontextprotocol/serverInfo": {"name": "replay", "version": "0.0.1"}})
    assert (run["accountedRemovals"], run["semanticLoss"], run["changes"]) == ([], [], [])
    assert run["acceptable"] is True


def test_an_unknown_result_type_is_refused_by_the_client_as_a_protocol_violation(
        diff: SdkDiffReport) -> None:
    run = _run(diff, "negative-unknown-result-type")
    assert run["normalized"]["outcome"] == "exception"
    assert run["normalized"]["exception"]["type"] == "ProtocolViolationError"
    assert run["normalized"]["exception"]["message"].startswith("client.protocol_violation:")
    assert (run["changes"], run["acceptable"]) == ([], True)


def test_a_json_rpc_error_on_http_400_reaches_the_caller_with_its_code(
        diff: SdkDiffReport) -> None:
    run = _run(diff, "negative-sdk-tool-error-on-400")
    assert run["raw"]["status"] == 400
    assert run["normalized"]["exception"]["type"] == "CallReply.error"
    assert run["normalized"]["exception"]["code"] == -32602
    assert run["expected"] == {"outcome": "exception", "code": -32602}
    assert run["changes"] == []


def test_input_required_is_handed_to_the_caller_unchanged(diff: SdkDiffReport) -> None:
    run = _run(diff, "golden-input-required-result")
    value = run["normalized"]["value"]
    assert (value["resultType"], value["requestState"]) == ("input_required", "opaque")
    assert list(value["inputRequests"]) == ["who"]
    assert run["changes"] == []


def test_an_era_the_client_does_not_speak_is_unsupported_with_the_reason() -> None:
    out = run_driver(locate("toolkeeper"), "http://127.0.0.1:9/mcp", "2024-11-05",
                     "tools/call", "lookup", {})
    assert (out["outcome"], out["era"]) == ("unsupported", None)
    assert "2024-11-05" in out["reason"]


def test_sdk_diff_cli_with_the_toolkeeper_client_exits_0_for_an_intermediary() -> None:
    result = CliRunner().invoke(cli, [
        "conformance", "sdk-diff", "--sdk", "toolkeeper", "--role", "intermediary",
        "--fixture", "golden-unknown-additive-field", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["sdks"] == ["toolkeeper"]
    (run,) = report["runs"]
    assert (run["semanticLoss"], run["refused"], run["acceptable"]) == ([], [], True)
