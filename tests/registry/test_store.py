"""The store seam: all-or-nothing transactions, unique keys, append-only audit, change feed.

Runs on every backend. Faults are injected into *real* stores: the audit append raises inside
the transaction after the record was written, or (PostgreSQL) the server kills the session.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import psycopg
import pytest
from registry_kit import Backend, evolved, v

from toolkeeper.contracts.spec import Status
from toolkeeper.errors import StoreError
from toolkeeper.registry import RegistryStore, StoreTransaction
from toolkeeper.registry.store import AuditRecord, utc_now

NAME = "payments.lookup"


class _FaultyTransaction:
    def __init__(self, inner: StoreTransaction, fault: Callable[[], None]) -> None:
        self._inner = inner
        self._fault = fault

    def versions(self) -> list[Any]:
        return self._inner.versions()

    def insert(self, spec: Any) -> None:
        self._inner.insert(spec)

    def update(self, spec: Any) -> None:
        self._inner.update(spec)

    def append_audit(self, record: AuditRecord) -> None:
        self._fault()
        self._inner.append_audit(record)


class FaultyStore:
    """A real store whose audit append fails (after the record write) while ``armed``."""

    def __init__(self, inner: RegistryStore, fault: Callable[[], None]) -> None:
        self.inner = inner
        self.fault = fault
        self.armed = False

    def change(self, name: str) -> AbstractContextManager[StoreTransaction]:
        @contextmanager
        def transaction() -> Iterator[StoreTransaction]:
            with self.inner.change(name) as tx:
                yield _FaultyTransaction(tx, self._maybe_fail) if self.armed else tx
        return transaction()

    def _maybe_fail(self) -> None:
        self.fault()

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.inner, attr)


def _raise() -> None:
    raise StoreError("injected failure", code="test.injected")


def _state(backend: Backend) -> tuple[Any, ...]:
    fresh = backend.open()
    return fresh.versions(NAME), fresh.audit()


def test_a_failure_inside_publish_leaves_every_stored_thing_unchanged(backend: Backend) -> None:
    faulty: list[FaultyStore] = []
    registry = backend.wrap(lambda s: faulty.append(FaultyStore(s, _raise)) or faulty[0])
    registry.publish(evolved(NAME, "1.0.0"))
    before, generation = _state(backend), registry.generation
    faulty[0].armed = True
    with pytest.raises(StoreError) as info:
        registry.publish(evolved(NAME, "2.0.0"))
    assert info.value.code == "test.injected"
    with pytest.raises(StoreError):
        registry.deprecate(NAME, v("1.0.0"), message="never applied")
    assert _state(backend) == before
    assert registry.generation == generation and registry.versions(NAME) == before[0]
    faulty[0].armed = False
    assert registry.publish(evolved(NAME, "2.0.0")).version == v("2.0.0")


@pytest.mark.postgres
def test_a_killed_postgres_session_mid_publish_changes_nothing_and_the_store_recovers(
        pg_backend: Backend) -> None:
    backend = pg_backend
    stores: list[Any] = []

    def kill_session() -> None:
        pid = stores[0].inner._conn.info.backend_pid
        with psycopg.connect(backend.url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))

    registry = backend.wrap(lambda s: stores.append(FaultyStore(s, kill_session)) or stores[0])
    registry.publish(evolved(NAME, "1.0.0"))
    before = _state(backend)
    stores[0].armed = True
    with pytest.raises(StoreError) as info:
        registry.publish(evolved(NAME, "2.0.0"))
    assert info.value.code == "registry.unavailable"
    assert _state(backend) == before
    stores[0].armed = False
    assert registry.publish(evolved(NAME, "2.0.0")).version == v("2.0.0")  # reconnected


def test_the_unique_key_refuses_a_second_record_of_the_same_version(backend: Backend) -> None:
    store = backend.store()
    with store.change(NAME) as tx:
        tx.insert(evolved(NAME, "1.0.0+a"))
    with pytest.raises(StoreError) as info, store.change(NAME) as tx:
        tx.insert(evolved(NAME, "1.0.0+b"))  # build metadata does not make a new version
    assert info.value.code == "registry.conflict"
    assert [str(s.version) for s in store.snapshot().specs] == ["1.0.0+a"]


def test_an_update_may_change_lifecycle_fields_only(backend: Backend) -> None:
    store = backend.store()
    with store.change(NAME) as tx:
        tx.insert(evolved(NAME, "1.0.0"))
    with pytest.raises(StoreError), store.change(NAME) as tx:
        tx.update(evolved(NAME, "1.0.0", title="Changed"))
    with store.change(NAME) as tx:
        tx.update(evolved(NAME, "1.0.0").with_lifecycle(status=Status.DEPRECATED))
    assert [s.status for s in store.snapshot().specs] == [Status.DEPRECATED]


def test_the_change_feed_returns_each_changed_record_once_after_a_cursor(
        backend: Backend) -> None:
    store = backend.store()
    start = store.snapshot().cursor
    for version in ("1.0.0", "2.0.0"):
        with store.change(NAME) as tx:
            tx.insert(evolved(NAME, version))
            tx.append_audit(AuditRecord(utc_now(), "t", "publish", NAME, version))
    with store.change(NAME) as tx:
        tx.append_audit(AuditRecord(utc_now(), "t", "publish", NAME, "3.0.0",
                                    rule="publish.bump_required"))
    delta = store.changes_since(start)
    assert delta.cursor == start + 3
    assert sorted(str(s.version) for s in delta.specs) == ["1.0.0", "2.0.0"]
    assert store.changes_since(delta.cursor).specs == ()
    assert [e.seq for e in store.audit()] == [start + 1, start + 2, start + 3]


class FlakyFeedStore(FaultyStore):
    """A real store whose change feed fails while ``armed`` (after a commit succeeded)."""

    def change(self, name: str) -> AbstractContextManager[StoreTransaction]:
        return self.inner.change(name)

    def changes_since(self, cursor: int) -> Any:
        if self.armed:
            self.fault()
        return self.inner.changes_since(cursor)


def test_a_committed_publish_whose_read_back_fails_is_returned_and_caught_up_later(
        backend: Backend) -> None:
    flaky: list[FlakyFeedStore] = []
    registry = backend.wrap(lambda s: flaky.append(FlakyFeedStore(s, _raise)) or flaky[0])
    flaky[0].armed = True
    stored = registry.publish(evolved(NAME, "1.0.0"))  # durable: not reported as a failure
    assert stored.version == v("1.0.0")
    flaky[0].armed = False
    assert registry.latest(NAME) == stored  # the next read catches up
    assert registry.generation == 1
