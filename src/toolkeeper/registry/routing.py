"""Routing by principal while a tool version is rolled out (docs/rollouts.md): what each
principal sees of the rollouts the call path honours (:meth:`RolloutBook.routing`).

A principal's *cohort* is the set of tools whose candidate it sees: those whose rollout routes
(running or paused) and whose share holds it (:meth:`Rollout.sees_candidate`). Every other
candidate of a rollout the call path honours is *hidden* from it: not discovered, not served,
and a pin to it is refused as a pin to a version that does not exist. A halted rollout routes
nobody to its candidate, so its candidate is hidden from everyone.

:class:`Routing` keeps the rollouts as of one registry generation (a rollout change moves the
generation, so nothing older is ever used) and the cohort of the most recent principal object,
so a resolver that hands the same principal object to every request computes its cohort once
per generation. With no rollout in play every principal's cohort is :data:`NO_COHORT` and
nothing is hidden: views and routes are shared exactly as without rollouts.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from toolkeeper.contracts.semver import Version
from toolkeeper.registry.principal import Principal
from toolkeeper.registry.rollout_book import rollout_book
from toolkeeper.registry.rollouts import HALTED, Rollout

if TYPE_CHECKING:
    from toolkeeper.registry.registry import Registry

__all__ = ["NOTHING_HIDDEN", "NO_COHORT", "Cohort", "Hidden", "Routing", "cohort_of",
           "hidden_of"]

Cohort = frozenset[str]
"""The tools whose candidate a principal sees."""
Hidden = frozenset[tuple[str, Version]]
"""The (tool, candidate) pairs a principal does not see."""

NO_COHORT: Final[Cohort] = frozenset()
NOTHING_HIDDEN: Final[Hidden] = frozenset()
_NO_ROLLOUTS: Final[Mapping[str, Rollout]] = MappingProxyType({})


def cohort_of(rollouts: Mapping[str, Rollout], principal: Principal) -> Cohort:
    """The tools of ``rollouts`` whose candidate ``principal`` sees."""
    if not rollouts:
        return NO_COHORT
    return frozenset(tool for tool, rollout in rollouts.items()
                     if rollout.routes and rollout.sees_candidate(principal)) or NO_COHORT


def hidden_of(rollouts: Mapping[str, Rollout], cohort: Cohort) -> Hidden:
    """The candidates of ``rollouts`` a principal of ``cohort`` does not see."""
    if not rollouts:
        return NOTHING_HIDDEN
    return frozenset((tool, rollout.candidate) for tool, rollout in rollouts.items()
                     if tool not in cohort) or NOTHING_HIDDEN


class Routing:
    """The rollouts the call path honours as of a registry generation, and the cohorts of
    principals under them. Thread-safe: its state is replaced whole, never changed."""

    def __init__(self, registry: Registry) -> None:
        self._book = rollout_book(registry)
        self._state: tuple[int, Mapping[str, Rollout], dict[Cohort, Hidden]] = (
            -1, _NO_ROLLOUTS, {})
        self._recent: tuple[Principal | None, int, Cohort, Hidden] = (
            None, -1, NO_COHORT, NOTHING_HIDDEN)

    def rollouts(self, generation: int) -> Mapping[str, Rollout]:
        """The rollouts the call path honours at ``generation`` (read once per generation)."""
        state = self._state
        if state[0] != generation:
            found = self._book.routing()
            state = (generation, found if found else _NO_ROLLOUTS, {})
            self._state = state
        return state[1]

    @property
    def current(self) -> Mapping[str, Rollout]:
        """The rollouts as of the generation last asked for."""
        return self._state[1]

    def of(self, principal: Principal, generation: int) -> tuple[Cohort, Hidden]:
        """``principal``'s cohort and the candidates hidden from it, at ``generation``."""
        recent = self._recent
        if recent[0] is principal and recent[1] == generation:
            return recent[2], recent[3]
        rollouts = self.rollouts(generation)
        if not rollouts:
            cohort, hidden = NO_COHORT, NOTHING_HIDDEN
        else:
            cohort = cohort_of(rollouts, principal)
            memo = self._state[2]
            known = memo.get(cohort)
            if known is None:
                known = memo[cohort] = hidden_of(rollouts, cohort)
            hidden = known
        self._recent = (principal, generation, cohort, hidden)
        return cohort, hidden

    def step(self, tool: str) -> int | None:
        """The share (percent) of the step of ``tool``'s rollout the call path honours
        (running, paused or halted), as of the generation last asked for; None: none."""
        rollout = self._state[1].get(tool)
        return None if rollout is None else rollout.share

    def halted(self, tool: str) -> Rollout | None:
        """``tool``'s rollout when it is halted (as of the generation last asked for)."""
        rollout = self._state[1].get(tool)
        return rollout if rollout is not None and rollout.state == HALTED else None
