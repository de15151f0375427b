"""The gate's report of a rollout (docs/rollouts.md): one self-contained HTML page of a rollout
and the decisions the gate took on it, as the registry keeps them.

The page holds, in order: the rollout (its tool, candidate, target, steps, step and share,
state, holds, interval, times, revision, actor, the evidence bundle it started with and who
signed the target's rollback evidence); every decision in order (its time, step, share,
outcome, the state it moved the rollout to, its reasons that did not pass, the signer its
envelope names and whether the envelope verifies under the trusted keys); and for the last
decision what its signed statement carries: the gate, the evidence digest, the count per
status, each input's digest and the gate's verdicts on the health windows. The windows' samples
are not kept with a decision (only their digest, as the ``healthWindows`` input), so no chart
is drawn: the page shows what the statement holds and says so.

As the bundle's report (:mod:`toolkeeper.gate.report`): its styles are inline, it loads
nothing, every value taken from the store is escaped, and the same rollout and decisions give
the same bytes (times are the stored ones, in UTC).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from toolkeeper.errors import ToolkeeperError
from toolkeeper.gate.attestation import verify_envelope
from toolkeeper.gate.report import page
from toolkeeper.gate.report_html import as_map, esc, maps, paragraph, shown, table
from toolkeeper.gate.rollback import TrustedKey
from toolkeeper.registry.rollout_rows import thawed
from toolkeeper.registry.rollouts import Rollout, RolloutDecision

__all__ = ["render_rollout", "statement_of"]

_STATE_CLASSES: Final = {"promoted": "passed", "running": "held", "paused": "held",
                         "halted": "failed", "rolled_back": "failed", "aborted": "failed"}
"""The heading's CSS class by rollout state (a fixed set: never a class taken from the store)."""
_STATUSES: Final = ("passed", "failed", "inconclusive", "ignored")
_HEALTH: Final = "healthWindows"
_NOT_CHECKED: Final = "not checked (no trusted key)"


def _time(us: Any) -> str:
    """Microseconds since the epoch as UTC ISO 8601 to the millisecond ('' when not one)."""
    if isinstance(us, bool) or not isinstance(us, int):
        return ""
    return datetime.fromtimestamp(us / 1e6, UTC).isoformat(timespec="milliseconds")


def statement_of(envelope: Any, trusted: Mapping[str, TrustedKey]) -> tuple[
        Mapping[str, Any], str]:
    """The Statement a decision's envelope carries and whether it verifies: ``verified``,
    the first refusal's code, ``malformed``, or (no trusted key) not checked, its payload
    read as it is."""
    if trusted:
        try:
            body, refusals = verify_envelope(thawed(envelope), trusted)
        except ToolkeeperError as exc:
            return {}, exc.code
        return body, refusals[0]["code"] if refusals else "verified"
    try:
        body = json.loads(base64.b64decode(as_map(envelope).get("payload", ""), validate=True))
    except (ValueError, TypeError, binascii.Error):
        return {}, "attestation.malformed"
    return as_map(body), _NOT_CHECKED


def _reason(reason: Mapping[str, Any]) -> str:
    """A reason in a line: its rule and status, with what was measured against what."""
    text = f"{shown(reason.get('rule'))} {shown(reason.get('status'))}"
    parts = [f"{key} {shown(reason.get(key))}" for key in ("measured", "threshold")
             if reason.get(key) is not None]
    if reason.get("detail"):
        parts.append(shown(reason.get("detail")))
    return text + (f" ({'; '.join(parts)})" if parts else "")


def _signer(predicate: Mapping[str, Any]) -> str:
    signer = as_map(predicate.get("signer"))
    if not signer:
        return ""
    return f"{shown(signer.get('keyid'))} ({shown(signer.get('algorithm'))})"


def _header(rollout: Rollout) -> str:
    css = _STATE_CLASSES.get(rollout.state, "other")
    evidence = as_map(thawed(rollout.extra.get("evidence", {})))
    attestation = as_map(as_map(thawed(rollout.rollback_evidence)).get("attestation"))
    fields: list[list[Any]] = [
        ["tool", rollout.tool], ["candidate", str(rollout.candidate)],
        ["rollback target", str(rollout.target)],
        ["steps", ", ".join(f"{s}%" for s in rollout.steps)],
        ["step", f"{rollout.step + 1} of {len(rollout.steps)} ({rollout.share}%)"],
        ["state", rollout.state], ["holds", f"{rollout.holds} of {rollout.max_holds}"],
        ["interval", f"{rollout.interval_s} s"], ["started", _time(rollout.started_us)],
        ["step started", _time(rollout.step_started_us)],
        ["updated", _time(rollout.updated_us)], ["revision", rollout.seq],
        ["actor", rollout.actor], ["evidence bundle", evidence.get("bundleDigest")],
        ["rollback evidence signed by", f"{shown(attestation.get('signer'))} "
         f"({shown(attestation.get('algorithm'))})" if attestation else None]]
    return "\n".join([
        '<header id="rollout">',
        f'<h1 class="{css}">Rollout: {esc(rollout.state)} \u2014 {esc(rollout.tool)} '
        f"{esc(str(rollout.candidate))}</h1>",
        paragraph(f"{rollout.tool} {rollout.candidate} against the rollback target "
                  f"{rollout.target}"),
        table(["field", "value"], fields),
        "</header>"])


def _decisions(decisions: Sequence[RolloutDecision],
               statements: Sequence[tuple[Mapping[str, Any], str]], steps: int) -> str:
    rows = []
    for number, (decision, (body, verified)) in enumerate(zip(decisions, statements,
                                                              strict=True), 1):
        reasons = [_reason(r) for r in (thawed(x) for x in decision.reasons)]
        rows.append([number, decision.outcome, _time(decision.at_us),
                     f"{decision.step + 1} of {steps}", f"{decision.share}%",
                     decision.state_after, "; ".join(reasons) or None,
                     _signer(as_map(body.get("predicate"))) or None, verified])
    return "\n".join([
        '<section id="decisions">', "<h2>Decisions</h2>",
        table(["#", "outcome", "time (UTC)", "step", "share", "state after",
               "reasons not passed", "signer", "envelope"], rows, status_column=1,
              empty="no decision yet"),
        "</section>"])


def _last(decision: RolloutDecision, body: Mapping[str, Any], verified: str) -> str:
    predicate = as_map(body.get("predicate"))
    gate = as_map(predicate.get("gate"))
    counts = as_map(predicate.get("counts"))
    inputs = as_map(predicate.get("inputs"))
    reasons = maps(predicate.get("reasons"))
    health = [[r.get("rule"), r.get("status"), r.get("measured"), r.get("threshold"),
               r.get("detail")] for r in reasons if r.get("section") == _HEALTH]
    parts = [
        '<section id="last-decision">', "<h2>Last decision</h2>",
        paragraph(f"{decision.outcome} at step {decision.step + 1} ({decision.share}%), "
                  f"{_time(decision.at_us)}: the rollout {decision.state_after} after it; "
                  f"envelope {verified}"),
    ]
    if not predicate:
        parts += [paragraph("its envelope carries no statement that can be read", "empty"),
                  "</section>"]
        return "\n".join(parts)
    parts += [
        paragraph(f"Decided by {shown(gate.get('name'))} {shown(gate.get('version'))}; "
                  f"signed by {_signer(predicate) or shown(None)}") if gate else "",
        f'<p>Evidence digest: <code>{esc(predicate.get("evidenceDigest"))}</code></p>',
        "<h3>Counts</h3>", table(list(_STATUSES), [[counts.get(s, 0) for s in _STATUSES]]),
        "<h3>Inputs</h3>",
        table(["section", "digest"], sorted(inputs.items()), empty="no input digests"),
        '<h3 id="health">Health windows</h3>',
    ]
    if _HEALTH in inputs:
        parts += [
            f'<p>The windows the gate judged: <code>{esc(inputs[_HEALTH])}</code>. Their '
            "samples are not kept with the decision; shown are the gate's verdicts on them.</p>",
            table(["rule", "status", "measured", "threshold", "detail"], health,
                  status_column=1, empty="no verdict on the health windows")]
    else:
        parts.append(paragraph("the decision's statement names no health windows", "empty"))
    parts += ["<h3>Every reason</h3>",
              table(["status", "rule", "section", "measured", "threshold", "detail"],
                    [[r.get("status"), r.get("rule"), r.get("section"), r.get("measured"),
                      r.get("threshold"), r.get("detail")] for r in reasons],
                    status_column=0, empty="no reasons given"),
              "</section>"]
    return "\n".join(parts)


def render_rollout(rollout: Rollout, decisions: Sequence[RolloutDecision],
                   trusted: Mapping[str, TrustedKey]) -> str:
    """The HTML page of ``rollout`` and its ``decisions`` (in the order given: the store's),
    each envelope checked under ``trusted`` (empty: read, not checked)."""
    statements = [statement_of(d.envelope, trusted) for d in decisions]
    body = [_header(rollout), _decisions(decisions, statements, len(rollout.steps))]
    if decisions:
        body.append(_last(decisions[-1], *statements[-1]))
    return page(f"Rollout: {rollout.state} \u2014 {rollout.tool} {rollout.candidate}", body)
