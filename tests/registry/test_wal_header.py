"""The WAL index header of a SQLite registry file (``registry.wal_header``): it reads the same
until a connection of any process commits, is then seen to change, and, once the ``-shm`` file
is mapped, is compared without a read system call. A missing ``-shm`` file reads as unknown."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from toolkeeper.registry.sqlite import SQLiteStore
from toolkeeper.registry.wal_header import WAL_HEADER_BYTES, WalIndexHeader


def _reads() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("syscr:"):
            return int(line.split()[1])
    raise AssertionError("no syscr in /proc/self/io")


@pytest.fixture
def store(tmp_path: Path) -> SQLiteStore:
    store = SQLiteStore(tmp_path / "registry.db")
    yield store  # type: ignore[misc]
    store.close()


def test_the_header_reads_the_same_until_another_connection_commits(
        store: SQLiteStore, tmp_path: Path) -> None:
    header = WalIndexHeader(tmp_path / "registry.db")
    try:
        first = header.read()
        assert len(first) == WAL_HEADER_BYTES and header.unchanged(first)
        with sqlite3.connect(tmp_path / "registry.db") as other:
            other.execute("CREATE TABLE IF NOT EXISTS elsewhere (x)")
            other.execute("INSERT INTO elsewhere VALUES (1)")
        assert not header.unchanged(first)
        assert header.unchanged(header.read())
    finally:
        header.close()


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="counts reads through /proc")
def test_a_mapped_header_is_compared_without_a_read_system_call(
        store: SQLiteStore, tmp_path: Path) -> None:
    header = WalIndexHeader(tmp_path / "registry.db")
    try:
        first = header.read()
        before = _reads()
        assert all(header.unchanged(first) for _ in range(200))
        assert _reads() - before < 50  # 200 with pread; a stray read elsewhere may add a few
    finally:
        header.close()


def test_a_database_without_a_shm_file_has_no_header(tmp_path: Path) -> None:
    header = WalIndexHeader(tmp_path / "absent.db")
    assert header.read() == b"" and not header.unchanged(b"x" * WAL_HEADER_BYTES)
    header.close()
    header.close()  # idempotent


def _shm_locks(database: Path) -> list[str]:
    """This process's locks on the database's ``-shm`` file, as ``/proc/locks`` lists them."""
    inode = (database.parent / f"{database.name}-shm").stat().st_ino
    pid = str(os.getpid())
    return [line for line in Path("/proc/locks").read_text().splitlines()
            if f":{inode} " in line and pid in line.split()]


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="reads locks through /proc")
def test_closing_one_of_two_stores_on_a_file_keeps_the_other_s_shared_memory_lock(
        tmp_path: Path) -> None:
    database = tmp_path / "registry.db"
    first = SQLiteStore(database)
    try:
        first.stale()
        held = _shm_locks(database)
        assert held  # SQLite's lock on -shm while a connection is open
        second = SQLiteStore(database)
        second.stale()
        second.close()  # closing a descriptor of -shm would drop every lock of the process
        assert _shm_locks(database) == held
        assert not first.stale()
    finally:
        first.close()
