"""The gate's decision on an evidence bundle (issue 23, SPEC 6): promote only a candidate with
nothing against it and a proven rollback target; hold on what is not yet enough (a window below
its minimum samples, a zero-traffic canary, an unobserved boundary, an unproven target); roll
back a failed candidate to a proven target and halt when the target is not proven; refuse
empty transcripts, SDK diffs and proxy evidence, a broken digest and a window whose recorded
result is not its observation's."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from decision_kit import (
    CANDIDATE,
    POLICY,
    TARGET,
    TRUSTED,
    case,
    evidence,
    make,
    rollback,
    run,
    sdk_run,
    window,
)
from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate.decision import decide
from toolkeeper.gate.evidence import bundle


def _decide(made: dict[str, Any]) -> Any:
    return decide(made, TRUSTED)


def _refused(made: Any) -> str:
    with pytest.raises(ToolkeeperError) as caught:
        decide(made, TRUSTED)
    return caught.value.code


def _windows(candidate: dict[str, Any], baseline: dict[str, Any] | None) -> dict[str, Any]:
    return {"candidate": candidate, "baseline": baseline}


def test_a_healthy_candidate_with_a_proven_target_is_promoted() -> None:
    decision = _decide(make())
    assert decision.outcome == "promote"
    assert decision.counts() == {"passed": 13, "failed": 0, "inconclusive": 0, "ignored": 0}
    assert decision.evidence_digest == make()["digest"]
    assert [(r.section, r.rule) for r in decision.reasons] == sorted(
        (r.section, r.rule) for r in decision.reasons)


def test_a_window_below_its_minimum_samples_holds() -> None:
    base = window(TARGET, 60)
    decision = _decide(make(healthWindows=_windows(window(CANDIDATE, 19, baseline=base), base)))
    assert decision.outcome == "hold"
    assert ("window.min_samples", "inconclusive", 19, 20) in {
        (r.rule, r.status, r.measured, r.threshold) for r in decision.reasons}


def test_a_zero_traffic_canary_holds_and_is_never_promoted() -> None:
    base = window(TARGET, 60)
    decision = _decide(make(healthWindows=_windows(window(CANDIDATE, 0, baseline=base), base)))
    assert decision.outcome == "hold"
    assert decision.counts()["failed"] == 0


def test_a_failed_candidate_with_a_proven_target_rolls_back() -> None:
    base = window(TARGET, 60)
    failing = window(CANDIDATE, 60, errors=12, baseline=base)
    decision = _decide(make(healthWindows=_windows(failing, base)))
    assert decision.outcome == "rollback"
    failed = {(r.rule, r.measured) for r in decision.reasons if r.status == "failed"}
    assert failed == {("window.error_rate", 0.2), ("window.baseline.error_rate_delta", 0.2)}


@pytest.mark.parametrize("target", [
    pytest.param({"healthy": "yes"}, id="healthy-yes"),
    pytest.param({"registryStatus": "deprecated"}, id="not-active"),
    pytest.param({"descriptorSha256": "4" * 63}, id="malformed-sha256"),
])
def test_a_failed_candidate_with_an_unproven_target_halts(target: dict[str, Any]) -> None:
    base = window(TARGET, 60)
    failing = window(CANDIDATE, 60, errors=12, baseline=base)
    decision = _decide(make(healthWindows=_windows(failing, base),
                            rollbackEvidence=rollback(**target)))
    assert decision.outcome == "halt"
    (verified,) = [r for r in decision.reasons if r.rule == "rollback.verified"]
    assert verified.status == "failed"


def test_an_untrusted_signer_or_a_payload_changed_after_signing_halts_a_failed_candidate(
        ) -> None:
    base = window(TARGET, 60)
    failing = _windows(window(CANDIDATE, 60, errors=12, baseline=base), base)
    changed = rollback()
    changed["artifactSha256"] = "f" * 64
    assert decide(make(healthWindows=failing), {"someone-else": b"s" * 32}).outcome == "halt"
    decision = _decide(make(healthWindows=failing, rollbackEvidence=changed))
    assert decision.outcome == "halt"
    assert "rollback.bad_signature at $.attestation.proofValue" in {
        r.detail for r in decision.reasons}


def test_a_healthy_candidate_without_a_proven_target_is_not_promoted() -> None:
    decision = _decide(make(rollbackEvidence=rollback(healthy=False)))
    assert decision.outcome == "hold"


def test_a_green_window_cannot_fill_an_unobserved_boundary() -> None:
    skipped = run([case("initialize", boundary="transport"), case("tools-list"),
                   case("tools-call", outcome="skip", boundary="tool")])
    decision = _decide(make(transcripts={"runs": [skipped]}))
    assert decision.outcome == "hold"
    assert [r.rule for r in decision.reasons if r.status == "inconclusive"] == [
        "transcripts.boundary.tool"]
    required = copy.deepcopy(evidence()["policy"])
    required["boundaries"] = ["proxy-hop"]
    assert _decide(make(policy=required)).outcome == "hold"


def test_a_live_failure_fails_the_candidate_and_a_failed_selfcheck_holds() -> None:
    failing = run([case("initialize", boundary="transport"), case("tools-list", outcome="fail")])
    assert _decide(make(transcripts={"runs": [failing]})).outcome == "rollback"
    broken = run([case("initialize", boundary="transport"), case("tools-list"),
                  case("tools-call", boundary="tool"),
                  case("bad-answer", outcome="fail", mode="recorded")])
    assert _decide(make(transcripts={"runs": [broken]})).outcome == "hold"


def test_sdk_refusals_and_proxy_findings_fail_the_candidate() -> None:
    sdk = copy.deepcopy(evidence()["sdkDiffs"])
    sdk["reports"][0]["runs"] = [sdk_run(refused=("semantic_loss",), lost=("$.futureHint",))]
    decision = _decide(make(sdkDiffs=sdk))
    assert decision.outcome == "rollback"
    (reason,) = [r for r in decision.reasons if r.rule == "sdk_diff.acceptable"]
    assert (reason.status, reason.measured) == ("failed", 1)
    proxy = {"reports": [{"config": "faulty", "exchanges": [{}], "issues": ["a", "b"],
                          "findings": [{"id": "a"}, {"id": "b"}, {"id": "a"}]}]}
    decision = _decide(make(proxyEvidence=proxy))
    assert decision.outcome == "rollback"
    (reason,) = [r for r in decision.reasons if r.rule == "proxy.findings"]
    assert (reason.status, reason.measured, reason.detail) == ("failed", 3, "a; b")


@pytest.mark.parametrize(("section", "content", "code"), [
    pytest.param("transcripts", {"runs": []}, "gate.no_transcripts", id="no-runs"),
    pytest.param("transcripts", {"runs": [run([case("x", outcome="skip"),
                                                case("y", mode="recorded")])]},
                 "gate.no_transcripts", id="no-live-case-ran"),
    pytest.param("sdkDiffs", {"reports": []}, "gate.no_sdk_diffs", id="no-sdk-diff"),
    pytest.param("proxyEvidence", {"reports": []}, "gate.no_proxy_evidence", id="no-proxy"),
    pytest.param("proxyEvidence", {"reports": [{"config": "correct", "exchanges": [],
                                                "findings": [], "issues": []}]},
                 "gate.no_proxy_evidence", id="no-exchange"),
    pytest.param("transcripts", {"cases": []}, "evidence.malformed", id="malformed"),
])
def test_empty_or_malformed_evidence_is_refused(section: str, content: Any, code: str) -> None:
    assert _refused(make(**{section: content})) == code


def test_a_broken_digest_is_refused() -> None:
    made = make()
    made["sections"]["policy"]["content"]["window"]["minSamples"] = 1
    assert _refused(made) == "evidence.digest_mismatch"


def test_a_recorded_window_result_must_be_its_observations() -> None:
    base = window(TARGET, 60)
    failing = window(CANDIDATE, 60, errors=12, baseline=base)
    failing["result"] = window(CANDIDATE, 60, baseline=base)["result"]  # a green verdict
    assert _refused(make(healthWindows=_windows(failing, base))) == "gate.window_mismatch"


def test_windows_of_another_tool_or_a_baseline_not_the_target_are_refused() -> None:
    other = window("3.9.0", 60)
    assert _refused(make(healthWindows=_windows(window(CANDIDATE, 60, baseline=other), other))
                    ) == "gate.evidence_mismatch"


def test_the_windows_are_judged_under_the_bundles_policy() -> None:
    strict: dict[str, Any] = {**POLICY, "minSamples": 100}
    base = window(TARGET, 60, policy=strict)
    windows = _windows(window(CANDIDATE, 60, baseline=base, policy=strict), base)
    held = bundle({**evidence(), "policy": {"window": strict}, "healthWindows": windows})
    assert _decide(held).outcome == "hold"
    # the same windows under a policy changed after they were judged
    assert _refused(bundle({**evidence(), "healthWindows": windows})) == "gate.window_mismatch"


def test_the_bundle_schema_is_a_valid_2020_12_schema_that_a_made_bundle_meets() -> None:
    from jsonschema import Draft202012Validator

    from toolkeeper.gate.decision import bundle_schema

    Draft202012Validator.check_schema(bundle_schema())
    assert list(Draft202012Validator(bundle_schema()).iter_errors(make())) == []
