"""The registry's rollouts (docs/rollouts.md): the one place rollout records are read and
written, on every backend, so every replica routes the same way.

Every write runs in the store's change transaction of the tool, re-reads the tool's versions
and rollouts there, and is audited (``rollout.<op>``), so it moves the registry generation on
this registry at once and on every other one at its next look at the store (PostgreSQL: LISTEN
as well). :meth:`RolloutBook.routing` is what the gateway's call path reads: the rollouts that
route, cached per generation (one store read when the generation moves, none per call; with no
rollout, one shared empty mapping). A rollback or an abort deprecates the candidate in the same
commit that ends the rollout.
"""

from __future__ import annotations

import itertools
import threading
import time
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

from toolkeeper.contracts.spec import Status, ToolSpec
from toolkeeper.errors import StoreError, ToolkeeperError
from toolkeeper.registry import lifecycle
from toolkeeper.registry.records import deprecation_of, not_found
from toolkeeper.registry.rollout_backends import (
    RolloutStore,
    RolloutTransaction,
    rollout_store,
)
from toolkeeper.registry.rollout_rows import audit_of, normalised
from toolkeeper.registry.rollouts import (
    ABORTED,
    FINAL_STATES,
    HALTED,
    PAUSED,
    ROLLED_BACK,
    RUNNING,
    STATES,
    Rollout,
    RolloutDecision,
)
from toolkeeper.registry.store import AuditRecord, utc_now

if TYPE_CHECKING:
    from toolkeeper.registry.registry import Registry

__all__ = ["RolloutBook", "check_steps", "rollout_book", "rollout_id"]

_EMPTY: Final[Mapping[str, Rollout]] = MappingProxyType({})
_OPEN: Final = frozenset({RUNNING, PAUSED, HALTED})
"""The states of a rollout not over: the ones routing() returns."""


def _now_us() -> int:
    return time.time_ns() // 1000


def rollout_id(rollout: Rollout) -> str:
    """How messages name a rollout: its tool and start time (µs), unique per tool."""
    return f"{rollout.tool}@{rollout.started_us}"


def check_steps(steps: tuple[int, ...]) -> None:
    """Refuse steps that are not percentages strictly ascending and ending at 100
    (``release.steps_invalid``)."""
    if not steps or steps[-1] != 100 or any(
            type(s) is not int or not 0 < s <= 100 for s in steps) or any(
            a >= b for a, b in itertools.pairwise(steps)):
        raise ToolkeeperError(f"steps {','.join(map(str, steps))} are not percentages "
                              "ascending and ending at 100", code="release.steps_invalid",
                              data={"steps": list(steps)})


def _refused(code: str, message: str, **data: Any) -> ToolkeeperError:
    return ToolkeeperError(message, code=code, data=data)


class RolloutBook:
    """The rollouts of one registry."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._cached: tuple[int, Mapping[str, Rollout]] = (-1, _EMPTY)

    # --- reads -----------------------------------------------------------------------------

    def routing(self) -> Mapping[str, Rollout]:
        """The rollouts the call path honours, by tool: those running, paused or halted.
        Cached per registry generation (a rollout change moves the generation), as of the
        registry's last look at the store (the call path's ``generation_since``, or any read):
        no store read while the generation stands."""
        generation = self._registry.generation_since(1)  # as of any check that succeeded
        cached = self._cached
        if cached[0] == generation:
            return cached[1]
        found = self._store().open_rollouts()  # read after the generation: as fresh as it
        routes = MappingProxyType({r.tool: r for r in found}) if found else _EMPTY
        self._cached = (generation, routes)
        return routes

    def get(self, tool: str) -> Rollout | None:
        """The tool's rollout that is not over, else its most recent one, else None."""
        return _current(list(self._store().rollouts(tool)))

    def history(self, tool: str) -> tuple[tuple[Rollout, tuple[RolloutDecision, ...]], ...]:
        """Every rollout of ``tool``, oldest first, each with its decisions in order."""
        store = self._store()
        return tuple((r, store.rollout_decisions(r.tool, r.started_us))
                     for r in store.rollouts(tool))

    def decisions(self, rollout: Rollout) -> tuple[RolloutDecision, ...]:
        return self._store().rollout_decisions(rollout.tool, rollout.started_us)

    # --- writes ----------------------------------------------------------------------------

    def start(self, rollout: Rollout) -> Rollout:
        """Store a new rollout (revision 1). Refused: another rollout of the tool not over
        (``release.in_progress``), a candidate or target unknown (``registry.not_found``) or
        not active, or a candidate not newer than the target (``release.version_invalid``),
        steps not ascending to 100 (``release.steps_invalid``), a step, state, interval or
        hold limit out of range (``release.invalid``)."""
        check_steps(rollout.steps)
        if not 0 <= rollout.step < len(rollout.steps) or rollout.state not in (RUNNING, PAUSED) \
                or rollout.interval_s < 1 or rollout.max_holds < 1 or not rollout.salt:
            raise _refused("release.invalid", f"rollout of {rollout.tool}: step, state, interval,"
                           " hold limit or salt out of range", tool=rollout.tool)
        if not rollout.candidate > rollout.target:
            raise _refused("release.version_invalid", f"candidate {rollout.candidate} is not "
                           f"newer than target {rollout.target}", tool=rollout.tool,
                           candidate=str(rollout.candidate), target=str(rollout.target))
        with self._change(rollout.tool) as tx:
            versions = {s.version: s for s in tx.versions()}
            for role, version in (("candidate", rollout.candidate), ("target", rollout.target)):
                spec = versions.get(version)
                if spec is None:
                    raise not_found(rollout.tool, version)
                if spec.status is not Status.ACTIVE:
                    raise _refused("release.version_invalid", f"{role} {rollout.tool} {version}"
                                   f" is {spec.status.value}, not active", tool=rollout.tool,
                                   role=role, version=str(version), status=spec.status.value)
            earlier = tx.rollouts()
            unfinished = _current(earlier)
            if unfinished is not None and unfinished.state in _OPEN:
                raise _in_progress(unfinished)
            started = max([rollout.started_us, *(r.started_us + 1 for r in earlier)])
            stored = normalised(replace(
                rollout, candidate=versions[rollout.candidate].version,
                target=versions[rollout.target].version, started_us=started,
                step_started_us=max(rollout.step_started_us, started),
                updated_us=max(rollout.updated_us, started), seq=1, holds=0))
            try:
                tx.insert_rollout(stored)
            except StoreError as exc:
                if exc.code == "registry.conflict":
                    raise _in_progress(stored) from None
                raise
            tx.append_audit(audit_of(stored, "start"))
        self._committed()
        return stored

    def update(self, rollout: Rollout, *, expected_seq: int, op: str = "update") -> Rollout:
        """Store ``rollout`` over its stored record if that is still at ``expected_seq``
        (a compare-and-set: ``release.conflict`` when another writer moved it); returns the
        stored record (``seq`` ``expected_seq + 1``). A state entering ``rolled_back`` or
        ``aborted`` deprecates the candidate in the same commit. Its tool, start, candidate,
        target, steps and salt are the stored ones (``release.invalid`` otherwise)."""
        if rollout.state not in STATES or not 0 <= rollout.step < len(rollout.steps):
            raise _refused("release.invalid", f"rollout of {rollout.tool}: state "
                           f"{rollout.state!r} or step {rollout.step} out of range",
                           tool=rollout.tool)
        with self._change(rollout.tool) as tx:
            stored = next((r for r in tx.rollouts() if r.started_us == rollout.started_us), None)
            if stored is None:
                raise _refused("release.not_found", f"{rollout.tool} has no rollout started "
                               f"at {rollout.started_us}", tool=rollout.tool)
            if (stored.candidate, stored.target, stored.steps, stored.salt) != (
                    rollout.candidate, rollout.target, rollout.steps, rollout.salt):
                raise _refused("release.invalid", f"rollout {rollout_id(stored)}: its candidate"
                               ", target, steps and salt are fixed", tool=rollout.tool)
            if stored.seq != expected_seq:
                raise _conflict(stored, expected_seq)
            new = normalised(replace(rollout, seq=expected_seq + 1,
                                     updated_us=max(rollout.updated_us, _now_us())))
            if not tx.replace_rollout(new, expected_seq):
                raise _conflict(stored, expected_seq)
            tx.append_audit(audit_of(new, op))
            if new.state in (ROLLED_BACK, ABORTED) and stored.state not in FINAL_STATES:
                _deprecate_candidate(tx, new)
        self._committed()
        return new

    def record_decision(self, decision: RolloutDecision) -> None:
        """Keep ``decision`` with the tool's current rollout (append-only; it moves no
        routing, so it is not a registry change)."""
        with self._change(decision.tool) as tx:
            current = _current(tx.rollouts())
            if current is None:
                raise _refused("release.not_found", f"{decision.tool} has no rollout",
                               tool=decision.tool)
            tx.add_decision(decision, current.started_us)

    # --- operations (the operator's and the evaluator's) -------------------------------------

    def promote_step(self, tool: str, *, actor: str = "anonymous",
                     expected_seq: int | None = None) -> Rollout:
        """The next step (holds reset); reaching the last, ``promoted``: the candidate is then
        the newest visible version for everyone (:meth:`Rollout.promoted`). A halted rollout
        promoted runs again."""
        return self._move(tool, "promote", (RUNNING, PAUSED, HALTED),
                          lambda r, now: r.promoted(now), actor, expected_seq)

    def pause(self, tool: str, *, actor: str = "anonymous",
              expected_seq: int | None = None) -> Rollout:
        """Routing as at its step, no evaluation."""
        return self._move(tool, "pause", (RUNNING,), lambda r, _: replace(r, state=PAUSED),
                          actor, expected_seq)

    def resume(self, tool: str, *, actor: str = "anonymous",
               expected_seq: int | None = None) -> Rollout:
        """A paused or halted rollout running again, its step's interval and holds afresh."""
        return self._move(tool, "resume", (PAUSED, HALTED), lambda r, now: replace(
            r, state=RUNNING, holds=0, step_started_us=now), actor, expected_seq)

    def halt(self, tool: str, *, actor: str = "anonymous",
             expected_seq: int | None = None) -> Rollout:
        """Calls to the tool refused until an operator acts (resume, promote, abort)."""
        return self._move(tool, "halt", (RUNNING, PAUSED), lambda r, _: replace(r, state=HALTED),
                          actor, expected_seq)

    def rollback(self, tool: str, *, actor: str = "anonymous",
                 expected_seq: int | None = None) -> Rollout:
        """Every principal back on the target, the candidate deprecated (one commit)."""
        return self._move(tool, "rollback", (RUNNING, PAUSED, HALTED),
                          lambda r, _: replace(r, state=ROLLED_BACK), actor, expected_seq)

    def abort(self, tool: str, *, actor: str = "anonymous",
              expected_seq: int | None = None) -> Rollout:
        """As :meth:`rollback`, by an operator's decision (state ``aborted``)."""
        return self._move(tool, "abort", (RUNNING, PAUSED, HALTED),
                          lambda r, _: replace(r, state=ABORTED), actor, expected_seq)

    @contextmanager
    def evaluation_lock(self) -> Iterator[bool]:
        """Whether this process may evaluate rollouts now (one replica at a time): taken
        without waiting, held to the end of the block (see
        :mod:`toolkeeper.registry.rollout_backends` for each backend's lock)."""
        with self._store().rollout_evaluation_lock() as taken:
            yield taken

    # --- internals -------------------------------------------------------------------------

    def _move(self, tool: str, op: str, allowed: tuple[str, ...], change: Any, actor: str,
              expected_seq: int | None) -> Rollout:
        current = self.get(tool)
        if current is None:
            raise _refused("release.not_found", f"{tool} has no rollout", tool=tool)
        if current.state not in allowed:
            raise _refused("release.state_invalid", f"rollout {rollout_id(current)} is "
                           f"{current.state}: cannot {op} it", tool=tool, state=current.state,
                           operation=op)
        if expected_seq is not None and current.seq != expected_seq:
            raise _conflict(current, expected_seq)
        moved = replace(change(current, _now_us()), actor=actor)
        return self.update(moved, expected_seq=current.seq, op=op)

    def _store(self) -> RolloutStore:
        return rollout_store(self._registry.store)

    @contextmanager
    def _change(self, tool: str) -> Iterator[RolloutTransaction]:
        try:
            with self._store().rollout_change(tool) as tx:
                yield tx
        except StoreError:
            self._registry._mark_behind()  # it may have committed (a lost COMMIT reply)
            raise

    def _committed(self) -> None:
        self._registry._after_commit()  # our own change: the generation moves now


def _current(rollouts: list[Rollout]) -> Rollout | None:
    unfinished = [r for r in rollouts if r.state in _OPEN]
    if unfinished:
        return unfinished[-1]
    return max(rollouts, key=lambda r: r.started_us) if rollouts else None


def _in_progress(rollout: Rollout) -> ToolkeeperError:
    return _refused("release.in_progress", f"{rollout.tool} has a rollout not over: "
                    f"{rollout_id(rollout)} ({rollout.state})", tool=rollout.tool,
                    rollout=rollout.started_us, state=rollout.state)


def _conflict(stored: Rollout, expected: int) -> ToolkeeperError:
    return _refused("release.conflict", f"rollout {rollout_id(stored)} is at revision "
                    f"{stored.seq}, not {expected}: another writer moved it", tool=stored.tool,
                    seq=stored.seq, expected=expected)


def _deprecate_candidate(tx: RolloutTransaction, rollout: Rollout) -> None:
    """(In the rollout's transaction.) The candidate deprecated, with a message naming the
    rollout; one already deprecated or retired is left as it is."""
    history = tx.versions()
    spec: ToolSpec | None = next((s for s in history if s.version == rollout.candidate), None)
    if spec is None or spec.status is not Status.ACTIVE:
        return
    how = "rolled back" if rollout.state == ROLLED_BACK else "aborted"
    message = (f"{how} by rollout {rollout_id(rollout)}: {rollout.tool} {rollout.target} "
               f"is the version in force")
    updated = lifecycle.deprecated(spec, history, message=message, successor=None)
    tx.update(updated)
    tx.append_audit(AuditRecord(utc_now(), rollout.actor, lifecycle.DEPRECATE, rollout.tool,
                                str(spec.version), None, deprecation_of(updated)))


_BOOKS: weakref.WeakKeyDictionary[Registry, RolloutBook] = weakref.WeakKeyDictionary()
_BOOKS_LOCK = threading.Lock()


def rollout_book(registry: Registry) -> RolloutBook:
    """The registry's book (one per registry, so its routing cache is shared)."""
    book = _BOOKS.get(registry)
    if book is None:
        with _BOOKS_LOCK:
            book = _BOOKS.get(registry)
            if book is None:
                book = _BOOKS[registry] = RolloutBook(registry)
    return book

