"""The SDK diff against the real SDK clients (SPEC 5.4): the official Python ``mcp`` 2.x in this
venv, its newest 1.x and the TypeScript SDK's client on Node 22 from the interop cache. Each
high-risk fixture's answer is served byte for byte from a replay origin on 127.0.0.1; what each
SDK handed back is recorded beside the raw answer, the futureHint loss apart from the accounted
removals, and judged by the role's policy. The cached SDKs are installed on first use by the
shared ``peers`` fixture; one that cannot be installed is skipped here with the reason, and fails
the test under CI."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sdk_kit import HOST, require_sdk

from peer_kit import Peers
from toolkeeper.conformance import SdkDiffReport, run_sdk_diff, sdk_fixtures
from toolkeeper.errors import ConformanceError

SDKS = ("python", "python1", "typescript")


@pytest.fixture(scope="module")
def diff(peers: Peers) -> Iterator[SdkDiffReport]:
    peers.sdks(SDKS)
    yield run_sdk_diff(HOST, SDKS, "application")


def _run(report: SdkDiffReport, fixture: str, sdk: str) -> dict[str, Any]:
    require_sdk(sdk)
    found = [r.to_json() for r in report.runs if r.fixture == fixture and r.sdk == sdk]
    assert len(found) == 1
    return found[0]


def test_python_sdk_loses_futurehint_as_semantic_loss_apart_from_accounted_removals(
        diff: SdkDiffReport) -> None:
    run = _run(diff, "golden-unknown-additive-field", "python")
    assert run["raw"]["status"] == 200
    assert run["raw"]["body"]["value"]["result"]["futureHint"] == {"x": 1}
    assert run["normalized"]["outcome"] == "value"
    assert "futureHint" not in run["normalized"]["value"]
    assert run["semanticLoss"] == ["$.futureHint"]
    assert run["accountedRemovals"] == []
    assert run["expected"]["projection"]["futureHint"] == {"x": 1}
    assert (run["refused"], run["acceptable"]) == ([], True)


def test_the_policy_refuses_the_futurehint_loss_for_an_intermediary() -> None:
    require_sdk("python")
    report = run_sdk_diff(HOST, ["python"], "intermediary",
                          fixtures=sdk_fixtures(["golden-unknown-additive-field"]))
    (run,) = [r.to_json() for r in report.runs]
    assert run["semanticLoss"] == ["$.futureHint"]
    assert (run["refused"], run["acceptable"], report.refused) == (["semantic_loss"], False, 1)


def test_typescript_sdk_keeps_futurehint_and_strips_resulttype_as_an_accounted_removal(
        diff: SdkDiffReport) -> None:
    run = _run(diff, "golden-unknown-additive-field", "typescript")
    assert run["normalized"]["value"]["futureHint"] == {"x": 1}
    assert (run["accountedRemovals"], run["semanticLoss"]) == (["$.resultType"], [])
    assert run["sdkRequests"] == ["server/discover", "tools/call"]


def test_sdks_normalizing_a_fixture_differently_are_grouped_in_the_report(
        diff: SdkDiffReport) -> None:
    require_sdk("python")
    require_sdk("typescript")
    groups = {d["fixture"]: d["groups"] for d in diff.to_json()["disagreements"]}
    assert groups["golden-unknown-additive-field"] == [["python"], ["typescript"]]


def test_a_json_rpc_error_on_http_400_surfaces_with_its_code_in_every_sdk(
        diff: SdkDiffReport) -> None:
    for sdk in ("python", "typescript"):
        run = _run(diff, "negative-sdk-tool-error-on-400", sdk)
        assert run["raw"]["status"] == 400
        assert run["raw"]["body"]["value"]["error"]["code"] == -32602
        assert run["normalized"]["exception"]["code"] == -32602, sdk
        assert run["expected"] == {"outcome": "exception", "code": -32602}
        assert run["changes"] == [], sdk


def test_an_unknown_result_type_accepted_by_the_python_sdk_is_refused(
        diff: SdkDiffReport) -> None:
    run = _run(diff, "negative-unknown-result-type", "python")
    assert {"kind": "accepted_invalid", "path": "$"} in run["changes"]
    assert "accepted_invalid" in run["refused"]


def test_an_unknown_result_type_refused_by_the_typescript_sdk_is_no_change(
        diff: SdkDiffReport) -> None:
    run = _run(diff, "negative-unknown-result-type", "typescript")
    assert run["normalized"]["outcome"] == "exception"
    assert (run["changes"], run["acceptable"]) == ([], True)


def test_input_required_reaches_the_application_unchanged_through_the_manual_path(
        diff: SdkDiffReport) -> None:
    for sdk in ("python", "typescript"):
        run = _run(diff, "golden-input-required-result", sdk)
        assert run["normalized"]["value"]["resultType"] == "input_required", sdk
        assert run["changes"] == [], sdk


def test_bookkeeping_on_tools_list_is_kept_by_python_and_resulttype_dropped_by_typescript(
        diff: SdkDiffReport) -> None:
    assert _run(diff, "golden-sdk-tools-list-cache-hints", "python")["changes"] == []
    ts = _run(diff, "golden-sdk-tools-list-cache-hints", "typescript")
    assert (ts["accountedRemovals"], ts["semanticLoss"]) == (["$.resultType"], [])


def test_mcp_1x_runs_the_legacy_fixture_and_skips_modern_ones_with_the_reason(
        diff: SdkDiffReport) -> None:
    legacy = _run(diff, "golden-sdk-legacy-additive-field", "python1")
    assert (legacy["outcome"], legacy["negotiatedEra"], legacy["changes"]) == (
        "ran", "2025-11-25", [])
    modern = _run(diff, "golden-unknown-additive-field", "python1")
    assert modern["outcome"] == "skipped"
    assert "2026-07-28" in modern["reason"]


def test_the_report_is_canonical_json_with_a_digest(diff: SdkDiffReport) -> None:
    assert diff.digest.startswith("sha256:")
    assert diff.canonical() == SdkDiffReport(diff.role, diff.policy_digest, diff.sdks,
                                             diff.runs).canonical()


def test_an_absent_sdk_is_skipped_with_the_reason_and_refused_when_required(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLKEEPER_INTEROP_CACHE", str(tmp_path))
    report = run_sdk_diff(HOST, ["typescript"], fixtures=[])
    assert report.runs == ()
    (run,) = run_sdk_diff(HOST, ["typescript"],
                          fixtures=sdk_fixtures(["golden-unknown-additive-field"])).runs
    assert run.skipped is not None and "Node 22" in run.skipped
    with pytest.raises(ConformanceError) as caught:
        run_sdk_diff(HOST, ["typescript"], require=True)
    assert caught.value.code == "conformance.sdk_missing"
    assert caught.value.data["sdks"] == ["typescript"]
