"""Rollout records on every backend (memory, SQLite, PostgreSQL): start and its refusals, the
compare-and-set, the operations, decisions, history, routing across replicas and the
evaluation lock."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from registry_kit import Backend, evolved, v

from toolkeeper.contracts.spec import DataClassification, Status
from toolkeeper.errors import ToolkeeperError
from toolkeeper.registry import Registry
from toolkeeper.registry.principal import Principal
from toolkeeper.registry.rollout_book import rollout_book
from toolkeeper.registry.rollouts import (
    ABORTED,
    HALTED,
    PAUSED,
    PROMOTED,
    ROLLED_BACK,
    RUNNING,
    Rollout,
    RolloutDecision,
)

NAME = "payments.lookup"


def _rollout(candidate: str = "2.0.0", target: str = "1.0.0", steps: tuple[int, ...] = (
        5, 25, 50, 100), **fields: object) -> Rollout:
    base = Rollout(tool=NAME, candidate=v(candidate), target=v(target), steps=steps, step=0,
                   state=RUNNING, salt="00" * 16, policy={"rules": []}, interval_s=300,
                   max_holds=6, rollback_evidence={"tool": NAME, "version": target},
                   started_us=1_000, step_started_us=1_000, updated_us=1_000, actor="alice",
                   extra={"evidence": {"transcripts": []}})
    return replace(base, **fields)  # type: ignore[arg-type]


def _published(registry: Registry, *versions: str) -> Registry:
    for version in versions:
        registry.publish(evolved(NAME, version))
    return registry


def _code(call: object) -> str:
    with pytest.raises(ToolkeeperError) as info:
        call()  # type: ignore[operator]
    return info.value.code


def test_a_started_rollout_reads_back_equal_and_routes(registry: Registry) -> None:
    book = rollout_book(_published(registry, "1.0.0", "2.0.0"))
    assert book.routing() == {} and book.get(NAME) is None
    stored = book.start(_rollout())
    assert stored.seq == 1 and stored.state == RUNNING
    assert book.get(NAME) == stored
    assert book.routing() == {NAME: stored}
    assert rollout_book(registry) is book  # one book (and routing cache) per registry


def test_routing_with_no_rollout_is_one_shared_empty_mapping(registry: Registry) -> None:
    book = rollout_book(_published(registry, "1.0.0"))
    first = book.routing()
    registry.publish(evolved(NAME, "2.0.0"))
    assert book.routing() is first and len(first) == 0


def test_a_rollout_write_moves_the_registry_generation(registry: Registry) -> None:
    book = rollout_book(_published(registry, "1.0.0", "2.0.0"))
    before = registry.generation
    book.start(_rollout())
    after_start = registry.generation
    book.pause(NAME, actor="bob")
    assert before < after_start < registry.generation


@pytest.mark.parametrize(("rollout", "code"), [
    (_rollout(steps=(5, 50)), "release.steps_invalid"),
    (_rollout(steps=(50, 25, 100)), "release.steps_invalid"),
    (_rollout(steps=(0, 100)), "release.steps_invalid"),
    (_rollout(steps=()), "release.steps_invalid"),
    (_rollout(candidate="1.0.0", target="2.0.0"), "release.version_invalid"),
    (_rollout(candidate="3.0.0"), "registry.not_found"),
    (_rollout(target="0.9.0"), "registry.not_found"),
])
def test_start_refuses_bad_steps_and_versions(registry: Registry, rollout: Rollout,
                                              code: str) -> None:
    book = rollout_book(_published(registry, "1.0.0", "2.0.0"))
    assert _code(lambda: book.start(rollout)) == code
    assert book.history(NAME) == ()


def test_start_refuses_a_target_not_active_and_a_second_rollout(registry: Registry) -> None:
    book = rollout_book(_published(registry, "1.0.0", "2.0.0", "3.0.0"))
    registry.deprecate(NAME, "1.0.0", message="old")
    assert _code(lambda: book.start(_rollout())) == "release.version_invalid"
    book.start(_rollout(candidate="3.0.0", target="2.0.0"))
    assert _code(lambda: book.start(_rollout(candidate="3.0.0", target="2.0.0"))) == (
        "release.in_progress")
    assert len(book.history(NAME)) == 1


def test_update_is_a_compare_and_set_on_seq(backend: Backend) -> None:
    here, there = backend.open(), backend.open()
    _published(here, "1.0.0", "2.0.0")
    stored = rollout_book(here).start(_rollout())
    there.generation  # noqa: B018 - a read: catches up with the start
    moved = rollout_book(there).update(replace(stored, holds=1), expected_seq=stored.seq)
    assert moved.seq == stored.seq + 1 and moved.holds == 1
    assert _code(lambda: rollout_book(here).update(replace(stored, holds=2),
                                                   expected_seq=stored.seq)) == "release.conflict"
    assert rollout_book(here).get(NAME) == moved


def test_the_operations_move_the_state_and_store_the_actor(registry: Registry) -> None:
    book = rollout_book(_published(registry, "1.0.0", "2.0.0"))
    book.start(_rollout())
    assert book.pause(NAME, actor="bob").state == PAUSED
    assert _code(lambda: book.pause(NAME)) == "release.state_invalid"
    resumed = book.resume(NAME, actor="carol")
    assert (resumed.state, resumed.actor) == (RUNNING, "carol")
    assert book.promote_step(NAME).share == 25
    assert book.halt(NAME, actor="gate").state == HALTED
    assert book.routing()[NAME].state == HALTED
    assert book.promote_step(NAME).share == 50
    done = book.promote_step(NAME, actor="dave")  # reaching 100 percent: the version in force
    assert (done.state, done.share, done.actor) == (PROMOTED, 100, "dave")
    assert book.routing() == {}
    assert registry.latest(NAME) is not None and registry.latest(NAME).version == v("2.0.0")
    actions = [e.action for e in registry.audit() if e.action.startswith("rollout.")]
    assert actions == ["rollout.start", "rollout.pause", "rollout.resume", "rollout.promote",
                       "rollout.halt", "rollout.promote", "rollout.promote"]
    assert _code(lambda: book.abort(NAME)) == "release.state_invalid"


@pytest.mark.parametrize(("operation", "state"), [("rollback", ROLLED_BACK), ("abort", ABORTED)])
def test_rollback_and_abort_deprecate_the_candidate_in_the_same_change(
        registry: Registry, operation: str, state: str) -> None:
    book = rollout_book(_published(registry, "1.0.0", "2.0.0", "3.0.0"))
    started = book.start(_rollout())
    ended = getattr(book, operation)(NAME, actor="gate", expected_seq=started.seq)
    assert ended.state == state and book.routing() == {}
    candidate = registry.get(NAME, "2.0.0")
    assert candidate is not None and candidate.status is Status.DEPRECATED
    assert f"{NAME}@{started.started_us}" in (candidate.deprecation_message or "")
    last_two = [(e.action, e.version) for e in registry.audit()][-2:]
    assert last_two == [(f"rollout.{operation}", "2.0.0"), ("deprecate", "2.0.0")]
    # over: a new rollout of the tool may start
    assert book.start(_rollout(candidate="3.0.0")).started_us > started.started_us


def test_decisions_are_kept_with_their_rollout_in_history(registry: Registry) -> None:
    book = rollout_book(_published(registry, "1.0.0", "2.0.0", "3.0.0"))
    first = book.start(_rollout())
    decision = RolloutDecision(tool=NAME, seq=first.seq, at_us=2_000, step=0, share=5,
                               outcome="hold", state_after=RUNNING,
                               envelope={"payloadType": "x", "signatures": []},
                               reasons=({"code": "gate.insufficient_samples"},))
    book.record_decision(decision)
    book.rollback(NAME)
    second = book.start(_rollout(candidate="3.0.0"))
    history = book.history(NAME)
    assert [(r.candidate, r.state) for r, _ in history] == [
        (v("2.0.0"), ROLLED_BACK), (v("3.0.0"), RUNNING)]
    [kept], later = history[0][1], history[1][1]
    assert (kept.seq, kept.at_us, kept.outcome, kept.share, dict(kept.reasons[0])) == (
        first.seq, 2_000, "hold", 5, {"code": "gate.insufficient_samples"})
    assert kept.envelope["payloadType"] == "x" and later == ()
    assert book.get(NAME) == second


def test_a_rollout_started_on_one_replica_routes_on_another_after_its_sync(
        backend: Backend) -> None:
    here, there = backend.open(), backend.open()
    _published(here, "1.0.0", "2.0.0")
    assert rollout_book(there).routing() == {}
    stored = rollout_book(here).start(_rollout())
    there.generation  # noqa: B018 - its next look at the store
    assert rollout_book(there).routing() == {NAME: stored}
    principal = Principal("acme", frozenset(), DataClassification.PUBLIC, credential="k1")
    assert rollout_book(there).routing()[NAME].sees_candidate(principal) == (
        stored.sees_candidate(principal))
    rollout_book(there).abort(NAME)
    here.generation  # noqa: B018
    assert rollout_book(here).routing() == {}


def test_the_evaluation_lock_is_exclusive_between_registries(backend: Backend) -> None:
    here, there = backend.open(), backend.open()
    book, other = rollout_book(here), rollout_book(there)
    with book.evaluation_lock() as first, other.evaluation_lock() as second:
        assert (first, second) == (True, False)
    with other.evaluation_lock() as again:
        assert again


_TRY_LOCK = """
import sys
from toolkeeper.registry import Registry
from toolkeeper.registry.rollout_book import rollout_book
with Registry.open(sys.argv[1]) as registry, rollout_book(registry).evaluation_lock() as taken:
    print(taken)
"""


def test_the_sqlite_evaluation_lock_holds_across_processes(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'registry.db'}"

    def other_process_takes_it() -> str:
        done = subprocess.run([sys.executable, "-c", _TRY_LOCK, url], capture_output=True,
                              text=True, timeout=60, check=True)
        return done.stdout.strip()

    with Registry.open(url) as registry:
        with rollout_book(registry).evaluation_lock() as taken:
            assert taken and other_process_takes_it() == "False"
        assert other_process_takes_it() == "True"
