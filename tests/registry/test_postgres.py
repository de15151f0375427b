"""PostgreSQL specifics: bounded lock waits, and a listener that survives losing its session."""

from __future__ import annotations

import gc
import threading
import time

import psycopg
import pytest
from registry_kit import Backend, evolved

from toolkeeper.errors import StoreError
from toolkeeper.registry import Registry
from toolkeeper.registry.postgres import PostgresStore

pytestmark = pytest.mark.postgres


def test_a_writer_blocked_on_the_name_lock_gives_up_in_bounded_time(pg_url: str) -> None:
    registry = Registry(PostgresStore(pg_url, lock_timeout=0.2))
    registry.publish(evolved("payments.lookup", "1.0.0"))
    with psycopg.connect(pg_url) as blocker:  # holds the name's advisory lock, uncommitted
        blocker.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                        (0x746B01, "payments.lookup"))
        with pytest.raises(StoreError) as info:
            registry.publish(evolved("payments.lookup", "2.0.0"))
        assert info.value.code == "registry.busy"
        blocker.rollback()
    assert [str(s.version) for s in registry.versions("payments.lookup")] == ["1.0.0"]
    registry.publish(evolved("payments.lookup", "2.0.0"))
    registry.close()


def test_a_replica_whose_listener_session_is_killed_reconnects_and_catches_up(
        pg_backend: Backend) -> None:
    reader, writer = pg_backend.open(), pg_backend.open()
    heard = threading.Event()
    reader.subscribe(heard.set)
    with psycopg.connect(pg_backend.url, autocommit=True) as admin:
        killed = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND query LIKE 'LISTEN%%'").fetchall()
    assert len(killed) == 2  # both replicas' listeners
    writer.publish(evolved("payments.lookup", "1.0.0"))
    assert heard.wait(10.0), "the reader never caught up after its listener was killed"
    assert [str(s.version) for s in reader.versions("payments.lookup")] == ["1.0.0"]


def test_a_read_begun_after_another_replicas_commit_sees_it_with_or_without_its_listener(
        pg_backend: Backend) -> None:
    # A read first compares the newest audit sequence number with the newest one read (one
    # round trip), so it never waits for a NOTIFY, and a stopped listener loses nothing.
    reader, writer = pg_backend.open(), pg_backend.open()
    store = reader._store
    assert isinstance(store, PostgresStore) and store._listener is not None
    writer.publish(evolved("payments.lookup", "1.0.0"))
    assert [str(s.version) for s in reader.versions("payments.lookup")] == ["1.0.0"]
    store._listener.stop(store._send_token)
    assert not store.stale()  # nothing committed since that read
    writer.publish(evolved("payments.lookup", "2.0.0"))
    assert store.stale()
    assert [str(s.version) for s in reader.versions("payments.lookup")] == ["1.0.0", "2.0.0"]
    assert not store.stale()


def test_a_connection_whose_session_settings_are_refused_is_closed_not_leaked(
        pg_url: str) -> None:
    # PostgreSQL refuses a negative lock_timeout when the session is set up; the connection
    # opened for it must be closed (left open, psycopg warns when it is collected).
    with pytest.raises(StoreError) as info:
        PostgresStore(pg_url, lock_timeout=-1)
    assert info.value.code.startswith("registry.")
    del info
    gc.collect()
    deadline = time.monotonic() + 2.0  # a closed session's backend exits asynchronously
    with psycopg.connect(pg_url, autocommit=True) as admin:
        while True:
            others = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid()").fetchone()
            if others == (0,) or time.monotonic() > deadline:
                break
    assert others == (0,)
