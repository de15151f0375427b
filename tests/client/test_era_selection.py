"""``select_era`` judges exactly as SPEC 5.1 writes it: one row per case of the table in
``toolkeeper.protocol.era_selection``, and the decision's canonical JSON form."""

from __future__ import annotations

import json

import pytest

from toolkeeper.protocol.era_selection import (
    INCONCLUSIVE,
    LegacyEvidence,
    ModernObservation,
    Next,
    ProbeOutcome,
    SelectionMode,
    select_era,
)
from toolkeeper.protocol.versions import Era

STRICT, FALLBACK, LEGACY = SelectionMode.STRICT, SelectionMode.FALLBACK, SelectionMode.LEGACY
DISCOVERED = ModernObservation(ProbeOutcome.DISCOVERED, 200, versions=("2026-07-28",))
NO_MUTUAL = ModernObservation(ProbeOutcome.NO_MUTUAL_VERSION, 200, versions=("2099-01-01",))
VALID = LegacyEvidence("2025-11-25", (), 200)
OLDER_VALID = LegacyEvidence("2024-11-05", (), 200)
MODERN_REVISION = LegacyEvidence("2026-07-28", (), 200)
UNKNOWN_REVISION = LegacyEvidence("2031-01-01", (), 200)
BROKEN = LegacyEvidence("2025-11-25", ("$.result.serverInfo: missing",), 200)
NO_ANSWER = LegacyEvidence(None, ("$: client.timeout",), failure="client.timeout")
CLOSED_ANSWER = LegacyEvidence(None, ("$: client.connection",), failure="client.connection")
REFUSED_MODERN = LegacyEvidence(None, ("$.error: initialize refused with code -32022",), 400,
                                error_code=-32022)
REFUSED_OTHER = LegacyEvidence(None, ("$.error: initialize refused with code -32601",), 200,
                               error_code=-32601)


def modern_error(code: int) -> ModernObservation:
    return ModernObservation(ProbeOutcome.MODERN_ERROR, 400, code)


def inconclusive(outcome: ProbeOutcome) -> ModernObservation:
    return ModernObservation(outcome)


EVERY_EVIDENCE = (None, VALID, BROKEN)
ROWS = [
    # (mode, observation, allow-listed, evidence) -> (verdict, era, next)
    *[(mode, None, allowed, None, "probe.modern", None, Next.MODERN_PROBE)
      for mode in (STRICT, FALLBACK) for allowed in (False, True)],
    *[(mode, DISCOVERED, allowed, evidence, "modern.discovered", Era.MODERN, None)
      for mode in (STRICT, FALLBACK) for allowed in (False, True) for evidence in EVERY_EVIDENCE],
    *[(mode, modern_error(code), allowed, evidence, "modern.recognised_error", Era.MODERN, None)
      for mode in (STRICT, FALLBACK) for code in (-32020, -32021, -32022)
      for allowed in (False, True) for evidence in EVERY_EVIDENCE],
    *[(mode, NO_MUTUAL, allowed, evidence, "refused.no_mutual_version", None, None)
      for mode in (STRICT, FALLBACK) for allowed in (False, True) for evidence in EVERY_EVIDENCE],
    *[(STRICT, inconclusive(outcome), allowed, evidence, "refused.strict_unproven", None, None)
      for outcome in INCONCLUSIVE for allowed in (False, True) for evidence in EVERY_EVIDENCE],
    *[(FALLBACK, inconclusive(outcome), False, evidence, "refused.legacy_not_allowed", None, None)
      for outcome in INCONCLUSIVE for evidence in EVERY_EVIDENCE],
    *[(FALLBACK, inconclusive(outcome), True, None, "probe.legacy", None, Next.LEGACY_PROBE)
      for outcome in INCONCLUSIVE],
    *[(FALLBACK, inconclusive(outcome), True, evidence, "legacy.initialized", Era.LEGACY, None)
      for outcome in INCONCLUSIVE for evidence in (VALID, OLDER_VALID)],
    *[(FALLBACK, inconclusive(outcome), True, evidence, "refused.legacy_invalid", None, None)
      for outcome in INCONCLUSIVE
      for evidence in (BROKEN, MODERN_REVISION, UNKNOWN_REVISION, CLOSED_ANSWER, REFUSED_OTHER)],
    # Silence to both probes is no era's verdict: the target is unreachable.
    (FALLBACK, inconclusive(ProbeOutcome.TIMEOUT), True, NO_ANSWER, "unreachable.timeout",
     None, None),
    *[(FALLBACK, inconclusive(outcome), True, NO_ANSWER, "refused.legacy_invalid", None, None)
      for outcome in INCONCLUSIVE - {ProbeOutcome.TIMEOUT}],
    # initialize refused with a recognised modern error: the peer is modern-only.
    *[(FALLBACK, inconclusive(outcome), True, REFUSED_MODERN, "era.legacy_refused", None, None)
      for outcome in INCONCLUSIVE],
    *[(LEGACY, observation, False, evidence, "refused.legacy_not_allowed", None, None)
      for observation in (None, DISCOVERED) for evidence in EVERY_EVIDENCE],
    (LEGACY, None, True, None, "probe.legacy", None, Next.LEGACY_PROBE),
    (LEGACY, None, True, VALID, "legacy.initialized", Era.LEGACY, None),
    (LEGACY, None, True, BROKEN, "refused.legacy_invalid", None, None),
    (LEGACY, None, True, MODERN_REVISION, "refused.legacy_invalid", None, None),
    (LEGACY, None, True, NO_ANSWER, "unreachable.timeout", None, None),
    (LEGACY, None, True, CLOSED_ANSWER, "refused.legacy_invalid", None, None),
    (LEGACY, None, True, REFUSED_MODERN, "era.legacy_refused", None, None),
    (LEGACY, None, True, REFUSED_OTHER, "refused.legacy_invalid", None, None),
]


@pytest.mark.parametrize(("mode", "observation", "allowed", "evidence", "verdict", "era", "step"),
                         ROWS)
def test_select_era_follows_spec_5_1(mode: SelectionMode, observation: ModernObservation | None,
                                     allowed: bool, evidence: LegacyEvidence | None,
                                     verdict: str, era: Era | None, step: Next | None) -> None:
    decision = select_era(observation, mode, legacy_allowed=allowed, legacy_evidence=evidence)
    assert (decision.verdict, decision.era, decision.next) == (verdict, era, step)
    assert decision.observation == observation
    assert decision.legacy_evidence == evidence


@pytest.mark.parametrize("code", [-32020, -32021, -32022])
def test_a_recognised_modern_error_never_falls_back_even_when_legacy_would_validate(
        code: int) -> None:
    decision = select_era(modern_error(code), FALLBACK, legacy_allowed=True,
                          legacy_evidence=VALID)
    assert decision.era is Era.MODERN and decision.next is None


def test_an_inconclusive_probe_alone_never_selects_legacy() -> None:
    for outcome in INCONCLUSIVE:
        for mode in (STRICT, FALLBACK):
            assert select_era(inconclusive(outcome), mode, legacy_allowed=True).era is None


def test_the_selected_version_is_the_negotiated_legacy_revision() -> None:
    decision = select_era(inconclusive(ProbeOutcome.TIMEOUT), FALLBACK, True, OLDER_VALID)
    assert decision.version == "2024-11-05"
    assert select_era(DISCOVERED, STRICT).version == "2026-07-28"


def test_the_decision_has_a_canonical_json_form_recording_policy_observation_and_evidence(
        ) -> None:
    observation = ModernObservation(ProbeOutcome.TIMEOUT, detail="client.timeout")
    decision = select_era(observation, FALLBACK, True, VALID)
    assert json.loads(decision.canonical()) == {
        "policy": {"mode": "fallback", "legacyAllowed": True},
        "observation": {"outcome": "timeout", "httpStatus": None, "errorCode": None,
                        "versions": [], "detail": "client.timeout"},
        "legacyEvidence": {"negotiatedVersion": "2025-11-25", "problems": [],
                           "httpStatus": 200, "valid": True, "failure": None,
                           "errorCode": None},
        "verdict": "legacy.initialized", "era": "legacy", "version": "2025-11-25",
        "next": None,
    }
    assert decision.canonical() == select_era(observation, FALLBACK, True, VALID).canonical()
