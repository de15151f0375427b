"""How rollouts (:mod:`toolkeeper.registry.rollouts`) are laid out in the stores: one
``rollouts`` row per rollout (keyed by tool and ``started_us``), and the append-only
``rollout_decisions`` rows of each. JSON columns hold canonical JSON text; the memory store
keeps the very same rows, so every backend reads a record back through one conversion.

A rollout write is audited (action ``rollout.<op>``, the tool, the candidate): the audit trail
is the registry's change feed, so the write moves the registry generation on every replica
(:attr:`~toolkeeper.registry.store.Snapshot.rollouts`) and, on PostgreSQL, is notified to
them as a contract change is.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final

from toolkeeper.contracts.canonical import canonical_json, loads_json
from toolkeeper.contracts.semver import Version
from toolkeeper.errors import StoreError
from toolkeeper.registry.rollouts import Rollout, RolloutDecision
from toolkeeper.registry.store import ROLLOUT_ACTION_PREFIX, AuditRecord, utc_now

__all__ = ["DECISION_COLUMNS", "OPEN_STATES", "ROLLOUT_COLUMNS", "audit_of", "decision_from_row",
           "decision_params", "normalised", "rollout_from_row", "rollout_params", "row_of", "thawed"]

ROLLOUT_COLUMNS: Final = ("tool, started_us, candidate, target, steps, step, state, salt, policy,"
                          " interval_s, max_holds, holds, rollback_evidence, step_started_us,"
                          " updated_us, seq, actor, extra")
DECISION_COLUMNS: Final = ("tool, started_us, seq, at_us, step, share, outcome, state_after,"
                           " envelope, reasons")
OPEN_STATES: Final = ("running", "paused", "halted")
"""The states of a rollout not over (the partial unique index of migration 9 names them)."""


def _json(value: Any) -> str:
    return canonical_json(value).decode("utf-8")


def _frozen(value: Any) -> Any:
    if isinstance(value, dict):
        return MappingProxyType({k: _frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    return value


def thawed(value: Any) -> Any:
    """A stored JSON value (read-only mappings and tuples) as plain dicts and lists."""
    if isinstance(value, Mapping):
        return {k: thawed(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thawed(v) for v in value]
    return value


def rollout_params(rollout: Rollout) -> dict[str, Any]:
    """Named parameters of a ``rollouts`` row."""
    return {
        "tool": rollout.tool, "started_us": rollout.started_us,
        "candidate": str(rollout.candidate), "target": str(rollout.target),
        "steps": _json(list(rollout.steps)), "step": rollout.step, "state": rollout.state,
        "salt": rollout.salt, "policy": _json(thawed(rollout.policy)),
        "interval_s": rollout.interval_s, "max_holds": rollout.max_holds,
        "holds": rollout.holds, "rollback_evidence": _json(thawed(rollout.rollback_evidence)),
        "step_started_us": rollout.step_started_us, "updated_us": rollout.updated_us,
        "seq": rollout.seq, "actor": rollout.actor, "extra": _json(thawed(rollout.extra)),
    }


def row_of(params: Mapping[str, Any], columns: str) -> tuple[Any, ...]:
    return tuple(params[c.strip()] for c in columns.split(","))


def rollout_from_row(row: tuple[Any, ...]) -> Rollout:
    """A ``rollouts`` row (:data:`ROLLOUT_COLUMNS` order) back to a :class:`Rollout`."""
    try:
        (tool, started_us, candidate, target, steps, step, state, salt, policy, interval_s,
         max_holds, holds, evidence, step_started_us, updated_us, seq, actor, extra) = row
        return Rollout(
            tool=str(tool), candidate=Version.parse(candidate), target=Version.parse(target),
            steps=tuple(int(s) for s in loads_json(steps)), step=int(step), state=str(state),
            salt=str(salt), policy=_frozen(loads_json(policy)), interval_s=int(interval_s),
            max_holds=int(max_holds), rollback_evidence=_frozen(loads_json(evidence)),
            started_us=int(started_us), step_started_us=int(step_started_us),
            updated_us=int(updated_us), holds=int(holds), seq=int(seq), actor=str(actor),
            extra=_frozen(loads_json(extra)))
    except (ValueError, TypeError) as exc:
        raise StoreError(f"a stored rollout is unreadable: {exc}",
                         code="registry.corrupt") from None


def normalised(rollout: Rollout) -> Rollout:
    """``rollout`` as a store reads it back (JSON fields read-only mappings and tuples)."""
    return rollout_from_row(row_of(rollout_params(rollout), ROLLOUT_COLUMNS))


def decision_params(decision: RolloutDecision, started_us: int) -> dict[str, Any]:
    """Named parameters of a ``rollout_decisions`` row of the rollout started at
    ``started_us``."""
    return {
        "tool": decision.tool, "started_us": started_us, "seq": decision.seq,
        "at_us": decision.at_us, "step": decision.step, "share": decision.share,
        "outcome": decision.outcome, "state_after": decision.state_after,
        "envelope": _json(thawed(decision.envelope)),
        "reasons": _json([thawed(r) for r in decision.reasons]),
    }


def decision_from_row(row: tuple[Any, ...]) -> RolloutDecision:
    """A ``rollout_decisions`` row (:data:`DECISION_COLUMNS` order) back to a decision."""
    try:
        tool, _, seq, at_us, step, share, outcome, state_after, envelope, reasons = row
        return RolloutDecision(
            tool=str(tool), seq=int(seq), at_us=int(at_us), step=int(step), share=int(share),
            outcome=str(outcome), state_after=str(state_after),
            envelope=_frozen(loads_json(envelope)),
            reasons=tuple(_frozen(r) for r in loads_json(reasons)))
    except (ValueError, TypeError) as exc:
        raise StoreError(f"a stored rollout decision is unreadable: {exc}",
                         code="registry.corrupt") from None


def audit_of(rollout: Rollout, op: str) -> AuditRecord:
    """The audit entry of a rollout write: who did it, and what the record says after it."""
    return AuditRecord(utc_now(), rollout.actor, ROLLOUT_ACTION_PREFIX + op, rollout.tool,
                       str(rollout.candidate), None, {
                           "rollout": rollout.started_us, "target": str(rollout.target),
                           "state": rollout.state, "step": rollout.step,
                           "share": rollout.share, "seq": rollout.seq})
