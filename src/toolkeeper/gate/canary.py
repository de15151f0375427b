"""The release gate during a canary (issue 24, docs/rollouts.md): one evaluation of a running
rollout, and what it moves the rollout to.

At each interval the candidate's window and the target's (the baseline, over the same time:
from the step's start to now) are read from the durable call log and judged under the
rollout's policy; the evidence the rollout started with (its transcripts, SDK diffs and proxy
evidence) and the target's rollback evidence, signed before any caller saw the candidate, make
the rest of the bundle, and the gate decides on it (:func:`~toolkeeper.gate.decision.decide`)
as it does before a rollout, but for one thing: a target that is no longer proven halts the
rollout even when the candidate passed (callers already reach the candidate, and there is no
proven place to return them to). Two more checks stand beside the signature's: the stored evidence
must still match the store (``rollback.matches_store``: the target's admission record, contract
digest and status as the registry holds them now), and the target must not be failing now
(``rollback.target_healthy``: its window failed; a thin one says nothing and is ignored).

The decision moves the rollout (:func:`transition`): ``promote`` to the next step (past the
last but one, the candidate becomes the version in force for everyone: ``promoted``); ``hold``
keeps the step and counts, halting past the rollout's ``max_holds``; ``rollback`` returns every
principal to the target and deprecates the candidate; ``halt`` stops calls to the tool until
an operator acts. Each decision is signed (the gate's attested decision) and kept with the
rollout.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from toolkeeper.gate.attestation import Signer, sign_decision
from toolkeeper.gate.call_windows import windows_from_calls
from toolkeeper.gate.decision import HALT, HOLD, PROMOTE, ROLLBACK, Decision, Reason, decide
from toolkeeper.gate.evidence import bundle
from toolkeeper.gate.observed import health_section
from toolkeeper.gate.rollback import TrustedKey
from toolkeeper.gate.statuses import FAILED, HEALTHY, IGNORED, PASSED
from toolkeeper.gate.windows import WindowPolicy
from toolkeeper.registry import Registry
from toolkeeper.registry.call_rows import CallRows
from toolkeeper.registry.rollout_book import rollout_book
from toolkeeper.registry.rollout_rows import thawed
from toolkeeper.registry.rollouts import (
    HALTED,
    ROLLED_BACK,
    RUNNING,
    Rollout,
    RolloutDecision,
)

__all__ = ["Evaluation", "ResourcePeaks", "due", "due_at_us", "evaluate_and_store",
           "evaluate_rollout", "store_checks", "transition"]

_SECTIONS = ("transcripts", "sdkDiffs", "proxyEvidence")


@dataclass(frozen=True, slots=True)
class Evaluation:
    """One evaluation: the gate's decision, its signed envelope, the rollout it moves to, and
    the record kept of it."""

    decision: Decision
    envelope: dict[str, Any]
    rollout: Rollout
    record: RolloutDecision


def store_checks(registry: Registry, rollout: Rollout, target_status: str | None
                 ) -> list[Reason]:
    """Whether the stored rollback evidence still matches the store, and whether the target's
    window (``target_status``: its status, None when not read) says it is failing now."""
    evidence = thawed(rollout.rollback_evidence)
    spec = registry.get(rollout.tool, rollout.target)
    admission = registry.admission(rollout.tool, rollout.target)
    changed = sorted(name for name, now in (
        ("admissionDigest", None if admission is None else admission.digest),
        ("descriptorSha256", None if spec is None else spec.content_digest),
        ("registryStatus", None if spec is None else spec.status.value))
        if evidence.get(name) != now)
    out = [Reason("rollbackEvidence", "rollback.matches_store", FAILED if changed else PASSED,
                  len(changed), 0, f"changed in the store: {', '.join(changed)}" if changed
                  else "")]
    if target_status is not None:
        out.append(Reason("rollbackEvidence", "rollback.target_healthy",
                          FAILED if target_status == "failed" else
                          PASSED if target_status == HEALTHY else IGNORED,
                          target_status, HEALTHY))
    return out


def transition(rollout: Rollout, outcome: str, now_us: int) -> Rollout:
    """The rollout after ``outcome`` (the record's store write is the caller's: a CAS on its
    ``seq``)."""
    if outcome == PROMOTE:
        return replace(rollout.promoted(now_us), updated_us=now_us)
    if outcome == HOLD:
        holds = rollout.holds + 1
        return replace(rollout, holds=holds, updated_us=now_us,
                       state=HALTED if holds > rollout.max_holds else rollout.state)
    if outcome == ROLLBACK:
        return replace(rollout, state=ROLLED_BACK, updated_us=now_us)
    assert outcome == HALT
    return replace(rollout, state=HALTED, updated_us=now_us)


def evaluate_rollout(registry: Registry, rows: CallRows, rollout: Rollout, now_us: int,
                     signer: Signer, trusted: Mapping[str, TrustedKey],
                     resources: Mapping[str, int] | None = None) -> Evaluation:
    """Decide on ``rollout``'s current step from the call log ``rows`` up to ``now_us``, with
    the serving process's highest ``resources`` readings over the step (``rssBytes``,
    ``openFds``, ``openStreams``: what the policy's resource rules judge; None: not known, so
    those rules are inconclusive); the evaluation (nothing is stored here)."""
    policy_doc, kept = thawed(rollout.policy), thawed(rollout.extra.get("evidence", {}))
    policy = WindowPolicy.from_json(policy_doc)
    candidate, target = str(rollout.candidate), str(rollout.target)
    found = windows_from_calls(rows, rollout.tool, [candidate, target],
                               rollout.step_started_us, now_us)
    if resources:
        found[candidate] = replace(found[candidate], resources=dict(resources))
    windows = health_section(policy, "calls", (rollout.tool, candidate, found[candidate]),
                             (rollout.tool, target, found[target]), registry)
    made = bundle({**{name: kept.get(name) for name in _SECTIONS},
                   "healthWindows": windows,
                   "rollbackEvidence": thawed(rollout.rollback_evidence),
                   "policy": {"window": policy_doc}})
    checks = store_checks(registry, rollout, windows["baseline"]["result"]["status"])
    decision = decide(made, trusted, checks, unproven=HALT)
    envelope = sign_decision(decision, made["sections"]["policy"]["content"], signer)
    moved = transition(rollout, decision.outcome, now_us)
    record = RolloutDecision(
        tool=rollout.tool, seq=rollout.seq, at_us=now_us, step=rollout.step,
        share=rollout.share, outcome=decision.outcome, state_after=moved.state,
        envelope=envelope,
        reasons=tuple(r.to_dict() for r in decision.reasons if r.status != PASSED))
    return Evaluation(decision, envelope, moved, record)


class ResourcePeaks:
    """The serving process's resource readings (``rssBytes``, ``openFds``, ``openStreams``),
    each with when it was taken, the newest ``keep`` of them; :meth:`since` is what a
    candidate's window judges (:func:`evaluate_and_store`'s ``resources``)."""

    def __init__(self, keep: int = 100_000) -> None:  # one per look: at 5 s, six days of a step
        self._taken: deque[tuple[int, dict[str, int]]] = deque(maxlen=keep)

    def add(self, at_us: int, reading: Mapping[str, int]) -> None:
        if reading:
            self._taken.append((at_us, dict(reading)))

    def since(self, since_us: int) -> dict[str, int] | None:
        """The highest of each reading taken since ``since_us`` (None: none taken)."""
        taken = [reading for at, reading in self._taken if at >= since_us]
        if not taken:
            return None
        return {key: max(r[key] for r in taken if key in r)
                for key in sorted({key for r in taken for key in r})}


def due_at_us(rollout: Rollout) -> int:
    """When ``rollout`` is next evaluated: an interval after its step began or after its last
    change (a ``hold`` is one), whichever is later; the window still spans the whole step."""
    return max(rollout.step_started_us, rollout.updated_us) + rollout.interval_s * 1_000_000


def due(rollout: Rollout, now_us: int) -> bool:
    """Whether ``rollout`` is running and its interval is up (:func:`due_at_us`)."""
    return rollout.state == RUNNING and now_us >= due_at_us(rollout)


def evaluate_and_store(registry: Registry, rows: CallRows, tool: str, now_us: int,
                       signer: Signer, trusted: Mapping[str, TrustedKey], *,
                       actor: str = "release-controller",
                       resources: Callable[[int], Mapping[str, int] | None] | None = None
                       ) -> Evaluation | None:
    """Evaluate ``tool``'s running rollout now and store what it moves to (a compare-and-set:
    ``release.conflict`` when another replica moved it first) with the decision; None when
    the tool has no running rollout. ``resources``: the highest readings since a time (the
    step's start, µs), for the candidate's window."""
    book = rollout_book(registry)
    rollout = book.get(tool)
    if rollout is None or rollout.state != RUNNING:
        return None
    evaluation = evaluate_rollout(registry, rows, rollout, now_us, signer, trusted,
                                  None if resources is None else
                                  resources(rollout.step_started_us))
    stored = book.update(replace(evaluation.rollout, actor=actor), expected_seq=rollout.seq,
                         op=f"evaluate.{evaluation.decision.outcome}")
    record = replace(evaluation.record, seq=stored.seq, state_after=stored.state)
    book.record_decision(record)
    return replace(evaluation, rollout=stored, record=record)
