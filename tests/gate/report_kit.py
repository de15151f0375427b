"""A realistic evidence bundle and its decision for the HTML report's tests, shaped as bundle.md
gives them: two sample windows with ``atS`` (a candidate slower and failing more than its
baseline), a transcripts run with a failing live case, an SDK diff with a semantic loss, a proxy
report with a finding, signed rollback evidence and the window policy, each window's result
and the decision made by the gate itself (so they are what the gate gives), and the
compatibility matrix of the run; ``hostile`` puts markup where evidence text goes."""

from __future__ import annotations

from typing import Any

from toolkeeper.gate import WindowPolicy, evaluate
from toolkeeper.gate.decision import decide
from toolkeeper.gate.evidence import bundle
from toolkeeper.gate.matrix import Defaults, Party, build_matrix
from toolkeeper.gate.observed import observed_from_json
from toolkeeper.gate.rollback import sign_hmac

__all__ = ["DECISION", "HOSTILE", "KEY", "SIGNER", "decision_for", "evidence", "make_bundle", "matrix"]

SIGNER, KEY = "release-controller", b"k" * 32
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'
TOOL, CANDIDATE, BASELINE = "payments.lookup", "4.1.0", "4.0.0"
POLICY = {"minSamples": 20, "maxErrorRate": 0.05,
          "latency": {"percentile": 99, "maxMs": 250},
          "baseline": {"maxErrorRateDelta": 0.02, "maxLatencyRatio": 1.5}}


def _samples(count: int, slow_every: int, error_every: int, base_ms: float
             ) -> list[dict[str, Any]]:
    return [{"outcome": "error" if i % error_every == 0 else "ok",
             "latencyMs": base_ms + (i % 17) * 3 + (400 if i % slow_every == 0 else 0),
             "atS": 1_700_000_000 + i * 3} for i in range(count)]


def _window(version: str, samples: list[dict[str, Any]]) -> dict[str, Any]:
    """A sample window and its result under :data:`POLICY`'s absolute rules, as the gate judges
    a baseline on its own (a candidate's is rejudged against the baseline: :func:`_judged`)."""
    observed = {"startS": 1_700_000_000, "endS": 1_700_000_300, "samples": samples,
                "resources": {"rssBytes": 81_000_000, "openStreams": 2, "openFds": 31}}
    result = evaluate(WindowPolicy.from_json(POLICY).absolute(),
                      observed_from_json("samples", observed))
    return {"tool": TOOL, "version": version, "source": "samples", "observed": observed,
            "result": result.to_dict()}


def _judged(candidate: dict[str, Any], baseline: dict[str, Any]) -> dict[str, Any]:
    """The candidate's result judged against the baseline (the policy's comparisons)."""
    policy = WindowPolicy.from_json(POLICY)
    result = evaluate(policy, observed_from_json("samples", candidate["observed"]),
                      observed_from_json("samples", baseline["observed"]))
    return {**candidate, "result": result.to_dict()}


def _case(name: str, outcome: str, finding: str | None, tool: str = TOOL) -> dict[str, Any]:
    return {"name": name, "class": "tools-call", "mode": "live", "requirements": ["R-07"],
            "level": "MUST", "outcome": outcome, "boundary": "result",
            "citation": {"file": "2025-06-18/server/tools.mdx", "section": "Structured Content"},
            "expectedCode": None, "observedStatus": 200, "observedCode": None, "tool": tool,
            "arguments": {"id": "42"}, "finding": finding}


def evidence(hostile: bool = False) -> dict[str, Any]:
    """The six sections (``hostile``: markup in a finding, a tool name and a proxy title)."""
    text = HOSTILE if hostile else "structuredContent does not match outputSchema at $.amount"
    run = {"target": "http://127.0.0.1:8000/mcp", "era": "2025-06-18", "eraDecision": None,
           "eras": [], "live": {"passed": 1, "failed": 1, "warned": 0, "noted": 0, "skipped": 0},
           "selfcheck": {"passed": 0, "failed": 0}, "total": 2,
           "cases": [_case("tools-call-valid", "pass", None),
                     _case("tools-call-output-schema", "fail", text,
                           tool=HOSTILE if hostile else TOOL)]}
    sdk = {"role": "server", "policyDigest": "sha256:" + "a" * 64, "sdks": ["python", "typescript"],
           "ran": 2, "skipped": 0, "refused": 1, "disagreements": [],
           "runs": [{"fixture": "tools-call-structured", "sdk": "typescript", "era": "2025-06-18",
                     "outcome": "ran", "reason": None, "semanticLoss": ["$.result._meta.hint"],
                     "refused": ["server"], "acceptable": False, "changes": []},
                    {"fixture": "tools-call-structured", "sdk": "python", "era": "2025-06-18",
                     "outcome": "ran", "reason": None, "semanticLoss": [], "refused": [],
                     "acceptable": True, "changes": []}]}
    proxy = {"config": "buffering", "exchanges": [{"name": "sse-stream"}],
             "findings": [{"id": "proxy.buffered_stream",
                           "title": HOSTILE if hostile else "buffered event stream",
                           "exchange": "sse-stream", "hop": "egress",
                           "detail": {"firstByteMs": 1800}}],
             "issues": [HOSTILE if hostile else "buffered event stream"]}
    rollback = sign_hmac({"tool": TOOL, "version": BASELINE, "admissionDigest": "b" * 64,
                          "artifactSha256": "c" * 64, "descriptorSha256": "d" * 64,
                          "registryStatus": "active", "healthy": True,
                          "routeRestore": "route payments.lookup to 4.0.0"},
                         SIGNER, KEY)
    candidate = _window(CANDIDATE, _samples(100, 9, 10, 40.0))
    baseline = _window(BASELINE, _samples(100, 50, 50, 30.0))
    return {
        "transcripts": {"runs": [run]},
        "sdkDiffs": {"reports": [sdk]},
        "proxyEvidence": {"reports": [proxy]},
        "healthWindows": {"candidate": _judged(candidate, baseline), "baseline": baseline},
        "rollbackEvidence": rollback,
        "policy": {"window": POLICY},
    }


def make_bundle(hostile: bool = False) -> dict[str, Any]:
    return bundle(evidence(hostile))


def decision_for(made: dict[str, Any]) -> dict[str, Any]:
    """The gate's decision on ``made``, its rollback evidence's signer trusted."""
    return decide(made, {SIGNER: KEY}).to_dict()


DECISION = decision_for(make_bundle())


def matrix() -> dict[str, Any]:
    """The compatibility matrix of the transcripts' run, the decision beside it."""
    runs = [("run.json", run) for run in evidence()["transcripts"]["runs"]]
    return build_matrix(runs, Defaults(client=Party("toolkeeper", "0.1.0")), DECISION)
