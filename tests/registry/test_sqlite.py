"""SQLite specifics: bounded waits for the write lock, and pull-side change detection."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from registry_kit import evolved

from toolkeeper.auth.keys import issue_key, revoke_key
from toolkeeper.errors import StoreError
from toolkeeper.registry import Registry
from toolkeeper.registry.sqlite import SQLiteStore


def test_a_writer_that_cannot_get_the_lock_gives_up_in_bounded_time_changing_nothing(
        tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    registry = Registry(SQLiteStore(path, busy_timeout=0.2))
    registry.publish(evolved("payments.lookup", "1.0.0"))
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError) as info:
            registry.publish(evolved("payments.lookup", "2.0.0"))
        assert info.value.code == "registry.busy"
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert [str(s.version) for s in registry.versions("payments.lookup")] == ["1.0.0"]
    assert registry.publish(evolved("payments.lookup", "2.0.0")).publisher == "anonymous"
    registry.close()


def test_a_commit_by_another_process_marks_the_store_stale_once(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    mine, theirs = SQLiteStore(path), Registry(SQLiteStore(path))
    try:
        assert not mine.stale()
        theirs.publish(evolved("payments.lookup", "1.0.0"))
        assert mine.stale()
        assert not mine.stale()
    finally:
        mine.close()
        theirs.close()


def test_an_unchanged_wal_index_answers_stale_without_a_query_and_any_commit_is_still_seen(
        tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    mine, theirs = SQLiteStore(path), Registry(SQLiteStore(path))
    statements: list[str] = []
    mine._conn.set_trace_callback(statements.append)
    try:
        for _ in range(3):
            assert not mine.stale()
        assert statements == []  # the WAL index header read as before: no statement ran
        for version in ("1.0.0", "1.1.0", "2.0.0"):
            theirs.publish(evolved("payments.lookup", version))
            assert mine.stale()
            assert statements[-1] == "PRAGMA data_version"
            asked = len(statements)
            assert not mine.stale()
            assert len(statements) == asked
    finally:
        mine.close()
        theirs.close()


def test_a_store_not_in_wal_mode_asks_data_version_every_time(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    SQLiteStore(path).close()
    mine = SQLiteStore(path, read_only=True)  # a read-only store never sets the journal mode
    statements: list[str] = []
    mine._conn.set_trace_callback(statements.append)
    try:
        assert not mine.stale()
        assert not mine.stale()
        assert statements == ["PRAGMA data_version"] * 2
    finally:
        mine.close()


def test_the_revoked_key_count_stands_while_the_wal_index_is_unchanged_and_any_revocation_is_seen(
        tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    mine, theirs = SQLiteStore(path), SQLiteStore(path)
    keys = [issue_key(theirs, tenant="acme", scopes=(), clearance="internal").record.id
            for _ in range(3)]
    statements: list[str] = []
    try:
        assert mine.key_revocations() == 0
        mine._conn.set_trace_callback(statements.append)
        for _ in range(3):
            assert mine.key_revocations() == 0
        assert statements == []  # the WAL index header read as before: no statement ran
        for revoked, key_id in enumerate(keys, start=1):
            revoke_key(theirs, key_id)  # another connection's commit
            assert mine.key_revocations() == revoked
            asked = len(statements)
            assert asked > 0
            assert mine.key_revocations() == revoked
            assert len(statements) == asked
    finally:
        mine.close()
        theirs.close()
    with pytest.raises(StoreError) as closed:
        mine.key_revocations()
    assert closed.value.code == "registry.closed"


def test_a_store_not_in_wal_mode_counts_revoked_keys_every_time(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    SQLiteStore(path).close()
    mine = SQLiteStore(path, read_only=True)
    statements: list[str] = []
    mine._conn.set_trace_callback(statements.append)
    try:
        assert mine.key_revocations() == 0
        assert mine.key_revocations() == 0
        assert sum("api_keys" in s for s in statements) == 2
    finally:
        mine.close()
