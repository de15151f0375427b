"""The embedded default store: one SQLite file (stdlib ``sqlite3``), nothing to start.

Writers serialise with ``BEGIN IMMEDIATE`` (the database's single write lock, across
processes), waiting at most ``busy_timeout`` seconds; the unique key on (name, version_key)
backs the guard. WAL journaling lets readers run beside a writer. SQLite cannot push changes to
other processes, so ``stale()`` compares ``PRAGMA data_version``, which moves exactly when
another connection committed: a read-time check, not a polling loop.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from toolkeeper.contracts.spec import ToolSpec
from toolkeeper.errors import StoreError
from toolkeeper.registry.migrations import SQLITE_MIGRATIONS, latest_version
from toolkeeper.registry.rows import (
    NEWEST_SEQ,
    audit_from_row,
    audit_params,
    changed_keys,
    contract_params,
    spec_from_document,
)
from toolkeeper.registry.store import AuditEntry, AuditRecord, Snapshot

__all__ = ["SQLiteStore"]

_AUDIT_COLUMNS = "seq, at, actor, action, name, version, rule, verdict"


def _store_error(exc: sqlite3.Error) -> StoreError:
    if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
        return StoreError("the SQLite registry stayed locked by another writer",
                          code="registry.busy")
    if isinstance(exc, sqlite3.IntegrityError):
        return StoreError(f"the SQLite registry refused the write: {exc}",
                          code="registry.conflict")
    return StoreError(f"the SQLite registry failed: {exc}", code="registry.store")


class _SQLiteTransaction:
    def __init__(self, conn: sqlite3.Connection, name: str) -> None:
        self._conn = conn
        self._name = name

    def versions(self) -> list[ToolSpec]:
        rows = self._conn.execute("SELECT document FROM contracts WHERE name = ?",
                                  (self._name,)).fetchall()
        return sorted((spec_from_document(r[0]) for r in rows), key=lambda s: s.version)

    def insert(self, spec: ToolSpec) -> None:
        self._check(spec)
        self._conn.execute(
            "INSERT INTO contracts (name, version_key, version, content_digest, status, document)"
            " VALUES (:name, :version_key, :version, :content_digest, :status, :document)",
            contract_params(spec))

    def update(self, spec: ToolSpec) -> None:
        self._check(spec)
        cur = self._conn.execute(
            "UPDATE contracts SET status = :status, document = :document, version = :version,"
            " content_digest = :content_digest WHERE name = :name AND version_key = :version_key",
            contract_params(spec))
        if cur.rowcount != 1:
            raise StoreError(f"{spec.name} {spec.version} is not stored", code="registry.missing")

    def append_audit(self, record: AuditRecord) -> None:
        self._conn.execute(
            "INSERT INTO audit (at, actor, action, name, version, rule, verdict)"
            " VALUES (:at, :actor, :action, :name, :version, :rule, :verdict)",
            audit_params(record))

    def _check(self, spec: ToolSpec) -> None:
        if spec.name != self._name:
            raise StoreError(f"transaction on {self._name!r} cannot write {spec.name!r}",
                             code="registry.wrong_name")


class SQLiteStore:
    """A registry store in one SQLite file; safe across threads and processes."""

    def __init__(self, path: str | Path, *, busy_timeout: float = 30.0) -> None:
        self.path = Path(path)
        try:
            self._conn = sqlite3.connect(self.path, timeout=busy_timeout,
                                         isolation_level=None, check_same_thread=False)
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as exc:
            raise _store_error(exc) from None
        self._lock = threading.Lock()
        self._closed = False
        try:
            self._migrate()
        except BaseException:
            self._conn.close()
            raise
        self._data_version = self._pragma_data_version()

    # --- schema ----------------------------------------------------------------------------

    def _migrate(self) -> None:
        with self._write():
            conn = self._conn
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version ("
                         "version INTEGER PRIMARY KEY, description TEXT NOT NULL,"
                         " applied_at TEXT NOT NULL)")
            current = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_version"
                                   ).fetchone()[0]
            if current > latest_version(SQLITE_MIGRATIONS):
                raise StoreError(f"{self.path} has schema version {current}, newer than this "
                                 "toolkeeper understands", code="registry.schema_too_new")
            for migration in SQLITE_MIGRATIONS:
                if migration.version > current:
                    for statement in migration.statements:
                        conn.execute(statement)
                    conn.execute("INSERT INTO schema_version VALUES (?, ?, datetime('now'))",
                                 (migration.version, migration.description))

    def schema_version(self) -> int:
        with self._read() as conn:
            return int(conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0])

    # --- transactions ----------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._check_open()
            try:
                self._conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise _store_error(exc) from None
            try:
                yield self._conn
            except BaseException:
                self._conn.rollback()
                raise
            try:
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                self._conn.rollback()
                raise _store_error(exc) from None

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._check_open()
            try:
                self._conn.execute("BEGIN")
                try:
                    yield self._conn
                finally:
                    self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise _store_error(exc) from None

    @contextmanager
    def change(self, name: str) -> Iterator[_SQLiteTransaction]:
        with self._write() as conn:
            try:
                yield _SQLiteTransaction(conn, name)
            except sqlite3.Error as exc:
                raise _store_error(exc) from None

    # --- reads -----------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        with self._read() as conn:
            cursor = conn.execute(NEWEST_SEQ).fetchone()[0]
            rows = conn.execute("SELECT document FROM contracts").fetchall()
        return Snapshot(int(cursor), tuple(spec_from_document(r[0]) for r in rows))

    def changes_since(self, cursor: int) -> Snapshot:
        with self._read() as conn:
            new_cursor = conn.execute(NEWEST_SEQ).fetchone()[0]
            keys = changed_keys(conn.execute(
                "SELECT name, version FROM audit WHERE seq > ? AND rule IS NULL",
                (cursor,)).fetchall())
            documents = [conn.execute(
                "SELECT document FROM contracts WHERE name = ? AND version_key = ?", key
            ).fetchone()[0] for key in keys]
        return Snapshot(int(new_cursor), tuple(spec_from_document(d) for d in documents))

    def audit(self) -> tuple[AuditEntry, ...]:
        with self._read() as conn:
            rows = conn.execute(f"SELECT {_AUDIT_COLUMNS} FROM audit ORDER BY seq").fetchall()
        return tuple(audit_from_row(r) for r in rows)

    # --- change propagation ----------------------------------------------------------------

    def watch(self, callback: Callable[[], None]) -> None:
        """SQLite cannot push; other processes' commits are found by :meth:`stale`."""

    def stale(self) -> bool:
        current = self._pragma_data_version()
        if current == self._data_version:
            return False
        self._data_version = current
        return True

    def _pragma_data_version(self) -> int:
        with self._lock:
            self._check_open()
            try:
                return int(self._conn.execute("PRAGMA data_version").fetchone()[0])
            except sqlite3.Error as exc:
                raise _store_error(exc) from None

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the store is closed", code="registry.closed")

