"""The release gate's decision (SPEC 6, seed 004): one evidence bundle in, ``promote``,
``hold``, ``rollback`` or ``halt`` out, with every reason and its counts.

:func:`decide` first refuses what cannot be judged (ToolkeeperError, the CLI's exit 2): a
bundle that does not match its schema (``evidence.malformed``, with each path) or whose digests
do not hold (:func:`~toolkeeper.gate.evidence.verify_bundle`'s codes); an empty transcript set
(no live case: ``gate.no_transcripts``), SDK diff (no run that ran: ``gate.no_sdk_diffs``) or
proxy evidence (no exchange: ``gate.no_proxy_evidence``); a health window whose recorded result
is not what its observation gives (``gate.window_mismatch``: the gate judges what was observed,
never a verdict written down); windows and rollback evidence of different tools, or a baseline
that is not the rollback target (``gate.evidence_mismatch``).

Then each source gives its reasons (rule, status, measured, threshold):

* ``transcripts.live``: failed on any live failure (recorded cases are the harness's
  self-check, ``transcripts.selfcheck``: a failed self-check leaves the judgments unproven,
  inconclusive); ``transcripts.boundary.NAME``: each boundary the cases name, and each the
  policy's ``boundaries`` lists, needs a live case that ran, else it is unobserved
  (inconclusive): a green health window cannot fill it;
* ``sdk_diff.acceptable``: failed when the SDK diff's policy refused a run;
* ``proxy.findings``: failed on any proxy finding;
* each of the health window's rules, recomputed from the observed windows under the policy;
* ``rollback.verified``: the rollback evidence verifies under the trusted keys (active, healthy,
  signed by a trusted key): :func:`~toolkeeper.gate.rollback.verify`.

The outcome: a failed candidate rolls back when its rollback target is proven and halts when it
is not (stop traffic rather than guess); otherwise any inconclusive reason holds; and a
candidate with nothing against it is promoted only with a proven rollback target, else it
holds. A zero-traffic window is inconclusive, so it can only hold.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import metadata, resources
from typing import Any, Final

from toolkeeper.contracts.validate import validate
from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate.evidence import SECTIONS, verify_bundle
from toolkeeper.gate.observed import observed_from_json
from toolkeeper.gate.rollback import TrustedKey, verify
from toolkeeper.gate.statuses import FAILED, IGNORED, INCONCLUSIVE, PASSED
from toolkeeper.gate.windows import WindowPolicy, evaluate

__all__ = ["HALT", "HOLD", "OUTCOMES", "PASSED", "PROMOTE", "ROLLBACK", "Decision", "Reason",
           "bundle_schema", "decide", "gate_identity"]

PROMOTE: Final = "promote"
HOLD: Final = "hold"
ROLLBACK: Final = "rollback"
HALT: Final = "halt"
OUTCOMES: Final = (PROMOTE, HOLD, ROLLBACK, HALT)
STATUSES: Final = (PASSED, FAILED, INCONCLUSIVE, IGNORED)


@cache
def bundle_schema() -> dict[str, Any]:
    """The bundle's JSON Schema (``toolkeeper/gate/schemas/bundle.schema.json``)."""
    text = resources.files("toolkeeper.gate").joinpath("schemas/bundle.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


def gate_identity() -> dict[str, str]:
    """The gate that decides: its name and the installed package's version."""
    return {"name": "toolkeeper", "version": metadata.version("toolkeeper")}


@dataclass(frozen=True, slots=True)
class Reason:
    section: str
    rule: str
    status: str
    measured: Any
    threshold: Any
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"section": self.section, "rule": self.rule, "status": self.status,
                "measured": self.measured, "threshold": self.threshold, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class Decision:
    outcome: str
    reasons: tuple[Reason, ...]
    evidence_digest: str
    sections: Mapping[str, str]
    candidate: Mapping[str, Any]
    rollback_target: Mapping[str, Any]

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(STATUSES, 0)
        for reason in self.reasons:
            out[reason.status] += 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "reasons": [r.to_dict() for r in self.reasons],
                "counts": self.counts(), "evidenceDigest": self.evidence_digest,
                "sections": dict(self.sections), "candidate": dict(self.candidate),
                "rollbackTarget": dict(self.rollback_target), "gate": gate_identity()}


def _refuse(message: str, code: str, **data: Any) -> ToolkeeperError:
    return ToolkeeperError(message, code=code, data=data)


def _checked(bundle: Any) -> dict[str, Any]:
    issues = validate(bundle_schema(), bundle)
    if issues:
        raise _refuse(f"the evidence bundle is malformed: {issues[0].path}: {issues[0].message}",
                      "evidence.malformed", errors=[i.to_dict() for i in issues])
    refusals = verify_bundle(bundle)
    if refusals:
        first = refusals[0]
        raise _refuse(f"the evidence bundle does not verify: {first['code']} at "
                      f"{first['path']}", first["code"], errors=refusals)
    return {name: bundle["sections"][name]["content"] for name in SECTIONS}


def _first(names: Iterable[str], limit: int = 5) -> str:
    listed = sorted(set(names))
    more = f" and {len(listed) - limit} more" if len(listed) > limit else ""
    return ", ".join(listed[:limit]) + more


def _transcripts(content: Mapping[str, Any], policy: Mapping[str, Any]) -> list[Reason]:
    runs = content["runs"]
    cases = [case for run in runs for case in run["cases"]]
    live = [case for case in cases if case["mode"] == "live"]
    ran = [case for case in live if case["outcome"] != "skip"]
    if not ran:
        raise _refuse("the transcript evidence holds no live case that ran: the gate judges "
                      "what the candidate did on the wire", "gate.no_transcripts",
                      runs=len(runs))
    failed = [case["name"] for case in ran if case["outcome"] == "fail"]
    out = [Reason("transcripts", "transcripts.live", FAILED if failed else PASSED,
                  len(ran) - len(failed), len(ran),
                  f"failed: {_first(failed)}" if failed else "")]
    recorded = [case for case in cases if case["mode"] == "recorded"]
    broken = [case["name"] for case in recorded if case["outcome"] == "fail"]
    out.append(Reason("transcripts", "transcripts.selfcheck",
                      IGNORED if not recorded else INCONCLUSIVE if broken else PASSED,
                      len(recorded) - len(broken), len(recorded),
                      f"the harness's own check failed: {_first(broken)}" if broken else ""))
    boundaries = {case["boundary"] for case in cases if case["boundary"]}
    for boundary in sorted(boundaries | set(policy.get("boundaries", ()))):
        seen = sum(1 for case in ran if case["boundary"] == boundary)
        out.append(Reason("transcripts", f"transcripts.boundary.{boundary}",
                          PASSED if seen else INCONCLUSIVE, seen, 1,
                          "" if seen else "no live case ran at this boundary: unobserved"))
    return out


def _sdk_diffs(content: Mapping[str, Any]) -> list[Reason]:
    runs = [run for report in content["reports"] for run in report["runs"]
            if run["outcome"] == "ran"]
    if not runs:
        raise _refuse("the SDK diff holds no run that ran", "gate.no_sdk_diffs",
                      reports=len(content["reports"]))
    refused = sorted(f"{run['sdk']} {run['fixture']}: {', '.join(run['refused'])}"
                     for run in runs if run["refused"])
    lost = sorted({f"{run['sdk']}: {path}" for run in runs for path in run["semanticLoss"]})
    detail = "; ".join(refused + ([f"semantic loss: {_first(lost)}"] if lost else []))
    return [Reason("sdkDiffs", "sdk_diff.acceptable", FAILED if refused else PASSED,
                   len(refused), 0, detail)]


def _proxy(content: Mapping[str, Any]) -> list[Reason]:
    reports = content["reports"]
    if not any(report["exchanges"] for report in reports):
        raise _refuse("the proxy evidence holds no exchange through the proxy",
                      "gate.no_proxy_evidence", reports=len(reports))
    findings = sum(len(report["findings"]) for report in reports)
    issues = sorted({issue for report in reports for issue in report["issues"]})
    return [Reason("proxyEvidence", "proxy.findings", FAILED if findings else PASSED, findings,
                   0, "; ".join(issues))]


def _windows(content: Mapping[str, Any], policy: WindowPolicy,
             rollback: Mapping[str, Any]) -> list[Reason]:
    candidate, baseline = content["candidate"], content["baseline"]
    if rollback.get("tool") != candidate["tool"] or (
            baseline is not None and (baseline["tool"], baseline["version"]) != (
                rollback.get("tool"), rollback.get("version"))):
        raise _refuse("the health windows and the rollback evidence are not of one tool, or the "
                      "baseline window is not the rollback target's", "gate.evidence_mismatch",
                      candidate=[candidate["tool"], candidate["version"]],
                      rollbackTarget=[rollback.get("tool"), rollback.get("version")])
    observed = observed_from_json(candidate["source"], candidate["observed"])
    base = None if baseline is None else observed_from_json(baseline["source"],
                                                            baseline["observed"])
    result = evaluate(policy, observed, base).to_dict()
    for name, window, want in (("candidate", candidate, result),
                               ("baseline", baseline, None if base is None else
                                evaluate(policy.absolute(), base).to_dict())):
        if window is not None and window["result"] != want:
            raise _refuse(f"the {name} window's recorded result is not what its observation "
                          "gives under the policy", "gate.window_mismatch",
                          path=f"$.sections.healthWindows.content.{name}.result")
    return [Reason("healthWindows", v["rule"], v["status"], v["measured"], v["threshold"])
            for v in result["verdicts"]]


def _rollback(evidence: Mapping[str, Any], trusted: Mapping[str, TrustedKey]) -> Reason:
    refusals = verify(evidence, trusted)
    return Reason("rollbackEvidence", "rollback.verified", FAILED if refusals else PASSED,
                  len(refusals), 0, "; ".join(f"{r['code']} at {r['path']}" for r in refusals))


def _outcome(reasons: Iterable[Reason], on_unproven: str) -> str:
    candidate_failed = unproven = inconclusive = False
    for reason in reasons:
        if reason.section == "rollbackEvidence":
            unproven = unproven or reason.status not in (PASSED, IGNORED)
        elif reason.status == FAILED:
            candidate_failed = True
        elif reason.status == INCONCLUSIVE:
            inconclusive = True
    if candidate_failed:
        return HALT if unproven else ROLLBACK
    if unproven:
        return on_unproven
    return HOLD if inconclusive else PROMOTE


def decide(bundle: Any, trusted: Mapping[str, TrustedKey],
           checks: Iterable[Reason] = (), *, unproven: str = HOLD) -> Decision:
    """The decision on ``bundle`` with the rollback evidence verified under ``trusted`` (key
    id -> key); see the module docstring for what is refused and how it decides. ``checks``
    are more reasons the caller judged (a canary's: whether the stored rollback evidence still
    matches the store); one of section ``rollbackEvidence`` that is not passed leaves the
    rollback target unproven. ``unproven`` is the outcome for a candidate with nothing against
    it and an unproven target: ``hold`` before a rollout (prove the target first), ``halt``
    during one (callers already reach the candidate, and there is no proven place to return
    them to)."""
    content = _checked(bundle)
    policy_doc = content["policy"]
    policy = WindowPolicy.from_json(policy_doc["window"])
    rollback = content["rollbackEvidence"]
    reasons = [*_transcripts(content["transcripts"], policy_doc),
               *_sdk_diffs(content["sdkDiffs"]), *_proxy(content["proxyEvidence"]),
               *_windows(content["healthWindows"], policy, rollback),
               _rollback(rollback, trusted), *checks]
    reasons.sort(key=lambda r: (r.section, r.rule))
    candidate = content["healthWindows"]["candidate"]
    return Decision(
        outcome=_outcome(reasons, unproven), reasons=tuple(reasons), evidence_digest=bundle["digest"],
        sections={name: bundle["sections"][name]["digest"] for name in SECTIONS},
        candidate={"tool": candidate["tool"], "version": candidate["version"],
                   "descriptorSha256": candidate.get("descriptorSha256")},
        rollback_target={"tool": rollback.get("tool"), "version": rollback.get("version"),
                         "descriptorSha256": rollback.get("descriptorSha256")})
