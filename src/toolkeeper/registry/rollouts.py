"""Progressive rollouts of a tool version (docs/rollouts.md): the record the registry keeps, and
who a running rollout routes to its candidate.

A rollout makes a published version (the candidate) the newest visible version for a share of
principals, step by step (``steps``: percentages ascending, the last 100), while every other
principal keeps the version in force (the target, the rollback target). Who is in the share is
a pure function of the rollout and the principal: the keyed hash (HMAC-SHA-256, keyed by the
rollout's ``salt``) of the principal's credential id, or of its tenant for an anonymous caller,
read as a bucket in ``[0, 10000)``; the principal is in the share at ``p`` percent when its
bucket is below ``p * 100``. So one principal sees one version across replicas and calls, a
principal in the share at one step stays in it at every later step, and two rollouts (their own
salts) choose independently.

States: ``running`` (the gate evaluates it at each interval) and ``paused`` (routing as at its
step, no evaluation) route by share; ``halted`` refuses calls to the tool until an operator
acts; ``promoted`` (the candidate is the version in force for everyone), ``rolled_back`` and
``aborted`` (every principal back on the target, the candidate deprecated) route nothing.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from toolkeeper.contracts.semver import Version
from toolkeeper.registry.principal import Principal

__all__ = ["ABORTED", "BUCKETS", "FINAL_STATES", "HALTED", "PAUSED", "PROMOTED", "ROLLED_BACK",
           "ROUTING_STATES", "RUNNING", "STATES", "Rollout", "RolloutDecision", "bucket",
           "cohort_key"]

RUNNING: Final = "running"
PAUSED: Final = "paused"
HALTED: Final = "halted"
PROMOTED: Final = "promoted"
ROLLED_BACK: Final = "rolled_back"
ABORTED: Final = "aborted"
STATES: Final = (RUNNING, PAUSED, HALTED, PROMOTED, ROLLED_BACK, ABORTED)
ROUTING_STATES: Final = frozenset({RUNNING, PAUSED})
"""The states in which the share decides who gets the candidate."""
FINAL_STATES: Final = frozenset({PROMOTED, ROLLED_BACK, ABORTED})
"""A rollout in one of these is over: a tool has at most one rollout not in them."""
BUCKETS: Final = 10_000


def cohort_key(principal: Principal) -> str:
    """What a principal is hashed by: its credential id, or its tenant when anonymous."""
    return (f"credential:{principal.credential}" if principal.credential is not None
            else f"tenant:{principal.tenant}")


def bucket(salt: str, key: str) -> int:
    """The bucket in ``[0, BUCKETS)`` of ``key`` under ``salt`` (the keyed hash)."""
    digest = hmac.new(salt.encode(), key.encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") % BUCKETS


@dataclass(frozen=True, slots=True)
class Rollout:
    """One rollout of ``tool``: ``candidate`` against ``target``, at ``steps[step]`` percent."""

    tool: str
    candidate: Version
    target: Version
    steps: tuple[int, ...]
    step: int
    state: str
    salt: str
    """The keyed hash's key (hex): unguessable, so no caller can pick its own bucket."""
    policy: Mapping[str, Any]
    """The health-window policy the gate judges each interval's windows under."""
    interval_s: int
    max_holds: int
    """Consecutive ``hold`` decisions at one step after which the rollout halts."""
    rollback_evidence: Mapping[str, Any]
    """The target's signed rollback evidence, made before any caller saw the candidate."""
    started_us: int
    step_started_us: int
    updated_us: int
    holds: int = 0
    seq: int = 0
    """The record's revision: every change stores ``seq + 1`` (a compare-and-set, so two
    replicas never both move one rollout)."""
    actor: str = "anonymous"
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def share(self) -> int:
        """The candidate's share of principals at this step, in percent."""
        return self.steps[self.step]

    @property
    def routes(self) -> bool:
        return self.state in ROUTING_STATES

    def promoted(self, now_us: int) -> Rollout:
        """The rollout one step on: the next share, its interval and holds afresh; reaching the
        last step (100 percent) ends it ``promoted``: the candidate is then the version in
        force, the newest visible version for everyone, so no step runs at 100 percent (where
        the target would have no traffic left to compare with)."""
        if self.step + 1 >= len(self.steps) - 1:
            return replace(self, step=len(self.steps) - 1, state=PROMOTED, holds=0,
                           step_started_us=now_us)
        return replace(self, step=self.step + 1, holds=0, step_started_us=now_us,
                       state=RUNNING if self.state == HALTED else self.state)

    def sees_candidate(self, principal: Principal) -> bool:
        """Whether ``principal`` is in the candidate's share at this step."""
        return bucket(self.salt, cohort_key(principal)) < self.share * (BUCKETS // 100)


@dataclass(frozen=True, slots=True)
class RolloutDecision:
    """One evaluation of a rollout, kept with it: the step it was taken at, the outcome, what
    it moved the rollout to, and the gate's attested decision (a DSSE envelope)."""

    tool: str
    seq: int
    at_us: int
    step: int
    share: int
    outcome: str
    state_after: str
    envelope: Mapping[str, Any]
    reasons: tuple[Mapping[str, Any], ...] = ()
