"""Evidence for the gate's decision tests, built the way the gate's own commands build it: the
windows observed and judged under the policy (so their recorded results hold), harness runs,
SDK diff and proxy reports shaped as the harness writes them, and rollback evidence signed with
a test key. Each piece can be swapped for the case a test pins."""

from __future__ import annotations

import copy
from typing import Any

from toolkeeper.gate import Sample, Window, WindowPolicy, evaluate
from toolkeeper.gate.evidence import bundle
from toolkeeper.gate.observed import observed_to_json
from toolkeeper.gate.rollback import sign_hmac

__all__ = ["KEY", "KEY_ID", "POLICY", "TRUSTED", "case", "evidence", "make", "window"]

KEY_ID, KEY = "release-controller", b"r" * 32
TRUSTED: dict[str, Any] = {KEY_ID: KEY}
TOOL, CANDIDATE, TARGET = "payments.lookup", "4.1.0", "4.0.0"
POLICY: dict[str, Any] = {"minSamples": 20, "maxErrorRate": 0.05,
                          "latency": {"percentile": 95, "maxMs": 200},
                          "baseline": {"maxErrorRateDelta": 0.05}}


def window(version: str, calls: int, errors: int = 0, *, ms: float = 20.0,
           baseline: dict[str, Any] | None = None,
           policy: dict[str, Any] | None = None) -> dict[str, Any]:
    """A healthWindows entry of ``calls`` calls (the first ``errors`` of them failing), its
    result judged under ``policy`` against ``baseline`` (an entry) as the gate judges it (with
    no baseline: as a baseline, under the policy's absolute rules)."""
    samples = tuple(Sample("exception" if i < errors else "ok", ms + i % 7, 100.0 + i)
                    for i in range(calls))
    observed = Window(100.0, 400.0, samples)
    base = None if baseline is None else Window.from_json(baseline["observed"])
    judged = WindowPolicy.from_json(policy or POLICY)
    result = evaluate(judged if base is not None else judged.absolute(), observed, base)
    return {"tool": TOOL, "version": version, "descriptorSha256": (version[0] * 64)[:64]
            if version[0] in "0123456789abcdef" else "e" * 64,
            "source": "samples", "observed": observed_to_json(observed),
            "result": result.to_dict()}


def case(name: str, outcome: str = "pass", boundary: str | None = "method",
         mode: str = "live") -> dict[str, Any]:
    return {"name": name, "class": "golden", "mode": mode, "requirements": [], "level": "MUST",
            "citation": None, "outcome": outcome, "boundary": boundary, "expectedCode": None,
            "observedStatus": 200, "observedCode": None, "tool": None, "arguments": None,
            "finding": None if outcome == "pass" else f"{name} went wrong"}


def run(cases: list[dict[str, Any]]) -> dict[str, Any]:
    live = [c for c in cases if c["mode"] == "live"]
    recorded = [c for c in cases if c["mode"] == "recorded"]
    count = {k: sum(1 for c in live if c["outcome"] == o) for k, o in (
        ("passed", "pass"), ("failed", "fail"), ("warned", "warn"), ("noted", "note"),
        ("skipped", "skip"))}
    return {"target": "http://127.0.0.1:8000/mcp", "era": "2026-07-28", "eraDecision": None,
            "eras": [], "live": count,
            "selfcheck": {"passed": sum(1 for c in recorded if c["outcome"] == "pass"),
                          "failed": sum(1 for c in recorded if c["outcome"] == "fail")},
            "total": len(cases), "cases": cases}


def sdk_run(sdk: str = "python", refused: tuple[str, ...] = (), lost: tuple[str, ...] = ()
            ) -> dict[str, Any]:
    return {"fixture": "golden-unknown-additive-field", "sdk": sdk, "era": "2026-07-28",
            "outcome": "ran", "reason": None, "semanticLoss": list(lost),
            "refused": list(refused), "acceptable": not refused, "changes": []}


def rollback(**changes: Any) -> dict[str, Any]:
    payload = {"tool": TOOL, "version": TARGET, "admissionDigest": "a" * 64,
               "artifactSha256": "b" * 64, "descriptorSha256": "4" * 64,
               "registryStatus": "active", "healthy": True,
               "routeRestore": f"toolkeeper deprecate {TOOL} {CANDIDATE}"}
    return sign_hmac({**payload, **changes}, KEY_ID, KEY)


def evidence() -> dict[str, Any]:
    """Evidence a healthy candidate with a proven rollback target is promoted on."""
    base = window(TARGET, 60)
    return {
        "transcripts": {"runs": [run([case("initialize", boundary="transport"),
                                      case("tools-list"), case("tools-call", boundary="tool"),
                                      case("bad-answer", mode="recorded")])]},
        "sdkDiffs": {"reports": [{"role": "application", "policyDigest": "sha256:" + "c" * 64,
                                  "sdks": ["python"], "ran": 1, "skipped": 0, "refused": 0,
                                  "disagreements": [], "runs": [sdk_run()]}]},
        "proxyEvidence": {"reports": [{"config": "correct",
                                       "exchanges": [{"name": "initialize"}],
                                       "findings": [], "issues": []}]},
        "healthWindows": {"candidate": window(CANDIDATE, 60, baseline=base), "baseline": base},
        "rollbackEvidence": rollback(),
        "policy": {"window": POLICY},
    }


def make(**sections: Any) -> dict[str, Any]:
    """The bundle of :func:`evidence` with ``sections`` replaced."""
    made = copy.deepcopy(evidence())
    made.update(sections)
    return bundle(made)
