"""Many processes, one registry (SPEC 2.4): racing publishers and replicas that hear changes.

Workers are spawned (not forked) processes with their own connections; every wait is bounded.
"""

from __future__ import annotations

import multiprocessing
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from registry_kit import Backend
from registry_workers import RACE_NAMES, race_spec, race_worker, replica_worker

from toolkeeper.contracts.classify import classify
from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import ToolSpec
from toolkeeper.errors import PublishRefusedError
from toolkeeper.registry import Principal, Registry
from toolkeeper.registry.guard import check_publish

WORKERS = 8
HEARD_S = 30.0  # a safety bound: the LISTEN thread is woken by the notification itself
SPAWN = multiprocessing.get_context("spawn")


def _race(url: str) -> dict[int, list[tuple[str, str, str]]]:
    Registry.open(url).close()  # migrate once up front; the race is about publishing
    barrier, results = SPAWN.Barrier(WORKERS), SPAWN.Queue()
    procs = [SPAWN.Process(target=race_worker, args=(url, w, barrier, results))
             for w in range(WORKERS)]
    for proc in procs:
        proc.start()
    try:
        collected = [results.get(timeout=120) for _ in procs]
    finally:
        for proc in procs:
            proc.join(timeout=30)
            if proc.is_alive():
                proc.kill()
    errors = [(w, err) for w, _, err in collected if err]
    assert not errors, errors
    return {w: outcomes for w, outcomes, _ in collected}


def _replay(registry: Registry) -> None:
    """Re-run the guard over the audit trail in commit order: each decision must match."""
    history: dict[str, list[ToolSpec]] = {name: [] for name in RACE_NAMES}
    for entry in registry.audit():
        worker = int(entry.actor.removeprefix("worker-"))
        candidate = race_spec(entry.name, entry.version, worker)
        past = history[entry.name]
        try:
            decision = check_publish(past, candidate, classify)
        except PublishRefusedError as exc:
            assert entry.rule == exc.code, (entry, exc.code)
        else:
            assert entry.applied and decision.existing is None, entry
            past.append(candidate)
            past.sort(key=lambda s: s.version)


def _check_race(url: str, outcomes: dict[int, list[tuple[str, str, str]]]) -> None:
    registry = Registry.open(url)
    try:
        assert not [o for os_ in outcomes.values() for o in os_ if o[2].startswith("error:")]
        wins = Counter((n, ver) for os_ in outcomes.values() for n, ver, o in os_ if o == "won")
        for name in RACE_NAMES:
            stored = registry.versions(name)
            keys = [s.version for s in stored]
            assert len(keys) == len(set(keys)), "duplicate version"
            for spec in stored:  # every stored version was won by exactly one worker
                assert wins[(name, str(spec.version))] == 1, (name, spec.version)
                worker = int((spec.publisher or "").removeprefix("worker-"))
                assert spec.content_digest == race_spec(name, str(spec.version),
                                                        worker).content_digest
        for worker, results in outcomes.items():  # no win or no-op was lost
            for name, version, outcome in results:
                stored_spec = registry.get(name, Version.parse(version))
                if outcome in ("won", "same"):
                    assert stored_spec is not None
                    assert stored_spec.content_digest == race_spec(name, version,
                                                                   worker).content_digest
                if outcome == "won":
                    assert stored_spec is not None
                    assert stored_spec.publisher == f"worker-{worker}"
        refusals = Counter((f"worker-{w}", n, ver, o) for w, os_ in outcomes.items()
                           for n, ver, o in os_ if o.startswith("publish."))
        audited = Counter((e.actor, e.name, e.version, e.rule) for e in registry.audit()
                          if not e.applied)
        assert refusals == audited
        _replay(registry)
    finally:
        registry.close()


def test_eight_processes_racing_on_one_sqlite_file_lose_nothing_and_agree(
        tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'race.db'}"
    _check_race(url, _race(url))


@pytest.mark.postgres
def test_eight_processes_racing_on_one_postgres_registry_lose_nothing_and_agree(
        pg_url: str) -> None:
    _check_race(pg_url, _race(pg_url))


def _reply(replies: Any, kind: str) -> Any:
    got, value = replies.get(timeout=60)
    assert got == kind, (got, value)
    return value


@pytest.mark.postgres
def test_a_publish_in_one_process_reaches_another_by_its_notification(
        pg_backend: Backend) -> None:
    local = pg_backend.open()
    heard = threading.Event()
    local.subscribe(heard.set)
    commands, replies = SPAWN.Queue(), SPAWN.Queue()
    proc = SPAWN.Process(target=replica_worker, args=(pg_backend.url, commands, replies))
    proc.start()
    try:
        _reply(replies, "ready")
        generation = local.generation
        commands.put("publish")
        _reply(replies, "published")
        assert heard.wait(HEARD_S), "the other replica's publish was not heard"
        assert local.generation > generation
        reader = Principal.parse("acme", [], "restricted")
        assert [(s.name, str(s.version)) for s in local.discover(reader)] == [
            ("replica.tool", "1.0.0")]
        # and the other way round: the child hears our publish
        commands.put("await-change")
        _reply(replies, "waiting")
        local.publish(race_spec("local.tool", "1.0.0", 0), actor="local")
        seen, names = _reply(replies, "heard")
        assert seen, "the child did not hear our publish"
        assert [n for n, _ in names] == ["local.tool", "replica.tool"]
        commands.put("stop")
        _reply(replies, "stopped")
    finally:
        proc.join(timeout=30)
        if proc.is_alive():
            proc.kill()
