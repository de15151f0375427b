"""Spent request states in every registry backend: recording a digest is insert-if-absent
(exactly one of any number of racing store instances records it), every instance over the
same data sees it, and purging drops exactly the records whose expiry has passed."""

from __future__ import annotations

import threading

import pytest
from registry_kit import Backend

from toolkeeper.errors import StoreError
from toolkeeper.registry.spent_states import SpentStateStore, spent_state_store

RACERS = 6
DIGESTS = [f"{i:064x}" for i in range(12)]


def _spent(backend: Backend) -> SpentStateStore:
    return spent_state_store(backend.store())


def test_a_digest_is_recorded_once_and_every_instance_sees_it(backend: Backend) -> None:
    one, other = _spent(backend), _spent(backend)
    assert one.spend_state(DIGESTS[0], 2000.0) is True
    assert one.spend_state(DIGESTS[0], 2000.0) is False
    assert other.spend_state(DIGESTS[0], 2000.0) is False
    assert other.spend_state(DIGESTS[1], 2000.0) is True
    assert one.spend_state(DIGESTS[1], 9999.0) is False


def test_purging_drops_exactly_the_expired_records(backend: Backend) -> None:
    store = _spent(backend)
    for index, expiry in enumerate((100.0, 200.0, 300.0)):
        assert store.spend_state(DIGESTS[index], expiry)
    assert store.purge_spent_states(99.9) == 0
    assert store.purge_spent_states(200.0) == 2  # at or before now
    assert store.spend_state(DIGESTS[0], 400.0) is True  # dropped: may be recorded anew
    assert store.spend_state(DIGESTS[2], 400.0) is False  # kept
    assert store.purge_spent_states(1000.0) == 2


def test_of_racing_instances_exactly_one_records_each_digest(backend: Backend) -> None:
    stores = [_spent(backend) for _ in range(RACERS)]
    barrier = threading.Barrier(RACERS)
    won: list[list[str]] = [[] for _ in stores]
    errors: list[BaseException] = []

    def race(index: int) -> None:
        try:
            barrier.wait(30)
            for digest in DIGESTS:
                if stores[index].spend_state(digest, 5000.0):
                    won[index].append(digest)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=race, args=(i,)) for i in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    assert sorted(d for wins in won for d in wins) == DIGESTS


def test_a_store_that_keeps_no_spent_states_is_refused_by_code() -> None:
    with pytest.raises(StoreError) as refused:
        spent_state_store(object())
    assert refused.value.code == "registry.spent_states_unsupported"
