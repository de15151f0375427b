"""The embedded default store: one SQLite file (stdlib ``sqlite3``), nothing to start.

Writers serialise with ``BEGIN IMMEDIATE`` (the database's single write lock, across
processes), waiting at most ``busy_timeout`` seconds; the unique key on (name, version_key)
backs the guard. WAL journaling lets readers run beside a writer. SQLite cannot push changes to
other processes, so ``stale()`` compares ``PRAGMA data_version``, which moves exactly when
another connection committed: a read-time check, not a polling loop. In WAL mode it first
reads the WAL index header (the first 48 bytes of the ``-shm`` file, one ``pread``): every
commit by any connection rewrites it (its change counter moves), so while it reads as it did
at the last ``data_version`` query nothing was committed since, and the query is skipped;
when it differs, or cannot be read, the query decides as before.

A file is recognised before anything is written to it (even the journal mode): one that is not
toolkeeper's (:func:`~toolkeeper.registry.migrations.recognise_schema`) or not a SQLite
database at all is refused and left as it was. A read-only store opens the file with
``mode=ro`` and never migrates it.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from urllib.parse import quote

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import ToolSpec
from toolkeeper.errors import StoreError
from toolkeeper.registry.admission import AdmissionRecord, admission_from_row, admission_params
from toolkeeper.registry.apikeys import KEY_COLUMNS, ApiKeyRecord, key_from_row, key_params
from toolkeeper.registry.migrations import (
    SCHEMA_TABLE,
    SQLITE_MIGRATIONS,
    check_usable,
    recognise_schema,
)
from toolkeeper.registry.rollout_backends import SQLiteRollouts
from toolkeeper.registry.rows import (
    NEWEST_SEQ,
    audit_from_row,
    audit_params,
    changed_keys,
    contract_params,
    moves_rollouts,
    spec_from_document,
    version_key,
)
from toolkeeper.registry.store import AuditEntry, AuditRecord, Snapshot
from toolkeeper.registry.upstream_backends import SQLiteUpstreams
from toolkeeper.registry.wal_header import WalIndexHeader

__all__ = ["SQLiteStore"]

_PING_BUSY_S = 1.0
_AUDIT_COLUMNS = "seq, at, actor, action, name, version, rule, verdict"


def _store_error(exc: sqlite3.Error, path: Path) -> StoreError:
    name = getattr(exc, "sqlite_errorname", "")
    if name.startswith("SQLITE_CORRUPT") or name == "SQLITE_NOTADB":
        return StoreError(f"{path} is damaged or not a SQLite database: {exc}",
                          code="registry.damaged", data={"path": str(path)})
    if name.startswith("SQLITE_READONLY"):
        return StoreError(f"the SQLite registry {path} is open read-only: {exc}",
                          code="registry.read_only")
    if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
        return StoreError(f"the SQLite registry {path} stayed locked by another writer",
                          code="registry.busy")
    if isinstance(exc, sqlite3.IntegrityError):
        return StoreError(f"the SQLite registry {path} refused the write: {exc}",
                          code="registry.conflict")
    return StoreError(f"the SQLite registry {path} failed: {exc}", code="registry.store")


def _uri(path: Path) -> str:
    """A ``file:`` URI for ``path``; an absolute one gets an empty authority, so a path that
    starts with ``//`` is not read as a host name."""
    return ("file://" if path.is_absolute() else "file:") + quote(str(path))


def _schema_facts(conn: sqlite3.Connection) -> tuple[set[str], list[tuple[int, str]] | None]:
    """The database's table names, and its ``schema_version`` rows when it has that table
    with toolkeeper's columns and types (else None)."""
    tables = {row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite~_%'"
        " ESCAPE '~'")}
    if SCHEMA_TABLE not in tables:
        return tables, None
    columns = {row[1] for row in conn.execute(f"PRAGMA table_info({SCHEMA_TABLE})")}
    if not {"version", "description"} <= columns:
        return tables, None
    rows = conn.execute(f"SELECT version, description FROM {SCHEMA_TABLE} ORDER BY version"
                        ).fetchall()
    if not all(type(v) is int and type(d) is str for v, d in rows):
        return tables, None
    return tables, [(v, d) for v, d in rows]


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

    def record_admission(self, record: AdmissionRecord) -> None:
        if record.tool != self._name:
            raise StoreError(f"transaction on {self._name!r} cannot write {record.tool!r}",
                             code="registry.wrong_name")
        self._conn.execute(
            "INSERT INTO admissions (name, version_key, version, digest, record) VALUES"
            " (:name, :version_key, :version, :digest, :record)",
            admission_params(record, version_key(Version.parse(record.version))))

    def _check(self, spec: ToolSpec) -> None:
        if spec.name != self._name:
            raise StoreError(f"transaction on {self._name!r} cannot write {spec.name!r}",
                             code="registry.wrong_name")


class SQLiteStore(SQLiteUpstreams, SQLiteRollouts):
    """A registry store in one SQLite file; safe across threads and processes."""

    def __init__(self, path: str | Path, *, busy_timeout: float = 30.0, create: bool = True,
                 read_only: bool = False) -> None:
        """``create``: a missing or empty file may become a new registry. ``read_only``: the
        file is opened read-only (``mode=ro``) and never written; it must be a registry at the
        latest schema. Either way a file that is not toolkeeper's is refused before anything
        is written to it (``registry.foreign``, ``registry.damaged``), never migrated."""
        self.path = Path(path)
        self._create = create and not read_only
        self._lock = threading.Lock()
        self._closed = False
        self._wal = False
        self._shm = WalIndexHeader(self.path)
        self._wal_header = b""
        self._revocations = (b"", 0)  # (WAL index header, revoked keys): key_revocations
        mode = "ro" if read_only else "rwc" if self._create else "rw"
        try:
            self._conn = sqlite3.connect(f"{_uri(self.path)}?mode={mode}", uri=True,
                                         timeout=busy_timeout, isolation_level=None,
                                         check_same_thread=False)
        except sqlite3.Error as exc:
            raise _store_error(exc, self.path) from None
        try:
            self._open(read_only)
        except BaseException:
            self._conn.close()
            raise
        self._data_version = self._pragma_data_version()

    def _open(self, read_only: bool) -> None:
        with self._read() as conn:
            self._usable(conn, read_only=read_only)
        if read_only:
            return
        try:  # only now that the file is known to be ours (or new): the header is written
            wal = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as exc:
            raise _store_error(exc, self.path) from None
        self._migrate()
        self._wal = bool(wal) and str(wal[0]).lower() == "wal"

    # --- schema ----------------------------------------------------------------------------

    def _usable(self, conn: sqlite3.Connection, *, read_only: bool) -> int:
        version = recognise_schema(str(self.path), *_schema_facts(conn), SQLITE_MIGRATIONS)
        check_usable(str(self.path), version, SQLITE_MIGRATIONS, create=self._create,
                     read_only=read_only)
        return version

    def _migrate(self) -> None:
        with self._write() as conn:  # looked at again under the write lock: another process
            current = self._usable(conn, read_only=False)  # may have migrated it meanwhile
            conn.execute(f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} ("
                         "version INTEGER PRIMARY KEY, description TEXT NOT NULL,"
                         " applied_at TEXT NOT NULL)")
            for migration in SQLITE_MIGRATIONS:
                if migration.version > current:
                    for statement in migration.statements:
                        conn.execute(statement)
                    conn.execute(f"INSERT INTO {SCHEMA_TABLE} VALUES (?, ?, datetime('now'))",
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
                raise _store_error(exc, self.path) from None
            try:
                yield self._conn
            except sqlite3.Error as exc:
                self._rollback()
                raise _store_error(exc, self.path) from None
            except BaseException:
                self._rollback()
                raise
            try:
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                self._rollback()
                raise _store_error(exc, self.path) from None

    def _rollback(self) -> None:
        with suppress(sqlite3.Error):  # a damaged file can refuse even that; the first error
            self._conn.rollback()      # is the one told

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
                raise _store_error(exc, self.path) from None

    @contextmanager
    def change(self, name: str) -> Iterator[_SQLiteTransaction]:
        with self._write() as conn:
            yield _SQLiteTransaction(conn, name)

    @contextmanager
    def change_many(self, names: Sequence[str]) -> Iterator[dict[str, _SQLiteTransaction]]:
        with self._write() as conn:
            yield {name: _SQLiteTransaction(conn, name) for name in names}

    # --- reads -----------------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        with self._read() as conn:
            cursor = conn.execute(NEWEST_SEQ).fetchone()[0]
            rows = conn.execute("SELECT document FROM contracts").fetchall()
        return Snapshot(int(cursor), tuple(spec_from_document(r[0]) for r in rows))

    def changes_since(self, cursor: int) -> Snapshot:
        with self._read() as conn:
            new_cursor = conn.execute(NEWEST_SEQ).fetchone()[0]
            audited = conn.execute("SELECT name, version, action FROM audit WHERE seq > ?"
                                   " AND rule IS NULL", (cursor,)).fetchall()
            keys = changed_keys(audited)
            documents = [conn.execute(
                "SELECT document FROM contracts WHERE name = ? AND version_key = ?", key
            ).fetchone()[0] for key in keys]
        return Snapshot(int(new_cursor), tuple(spec_from_document(d) for d in documents),
                        moves_rollouts(audited))

    def audit(self) -> tuple[AuditEntry, ...]:
        with self._read() as conn:
            rows = conn.execute(f"SELECT {_AUDIT_COLUMNS} FROM audit ORDER BY seq").fetchall()
        return tuple(audit_from_row(r) for r in rows)

    def admission(self, name: str, version: Version) -> AdmissionRecord | None:
        with self._read() as conn:
            row = conn.execute("SELECT record, digest FROM admissions WHERE name = ?"
                               " AND version_key = ?", (name, version_key(version))).fetchone()
        return admission_from_row(*row) if row else None

    # --- API keys (registry.apikeys.KeyStore) ----------------------------------------------

    def add_key(self, record: ApiKeyRecord) -> None:
        with self._write() as conn:
            conn.execute(f"INSERT INTO api_keys ({KEY_COLUMNS}) VALUES (:id, :salt, :hash,"
                         " :tenant, :scopes, :clearance, :name, :created, :expires, :revoked_at)",
                         key_params(record))

    def find_key(self, key_id: str) -> ApiKeyRecord | None:
        with self._read() as conn:
            row = conn.execute(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE id = ?",
                               (key_id,)).fetchone()
        return key_from_row(row) if row else None

    def list_keys(self) -> tuple[ApiKeyRecord, ...]:
        with self._read() as conn:
            rows = conn.execute(f"SELECT {KEY_COLUMNS} FROM api_keys ORDER BY created, id"
                                ).fetchall()
        return tuple(key_from_row(r) for r in rows)

    def revoke_key(self, key_id: str, at: str) -> ApiKeyRecord | None:
        with self._write() as conn:
            conn.execute("UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                         (at, key_id))
            row = conn.execute(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE id = ?",
                               (key_id,)).fetchone()
        return key_from_row(row) if row else None

    def key_revocations(self) -> int:
        """The number of revoked keys. In WAL mode the count is kept with the WAL index header
        read before it was queried: while the header reads the same nothing was committed (by
        any connection), so the count stands without a query (as :meth:`stale`)."""
        with self._lock:
            self._check_open()
            header, count = self._revocations
            if header and self._shm.unchanged(header):
                return count
            header = self._read_wal_header()  # before the query: a commit after it moves it
        with self._read() as conn:
            row = conn.execute("SELECT COUNT(*) FROM api_keys WHERE revoked_at IS NOT NULL"
                               ).fetchone()
        count = int(row[0])
        with self._lock:
            self._revocations = (header, count)
        return count

    # --- spent request states (registry.spent_states.SpentStateStore) ----------------------

    def spend_state(self, digest: str, expires_at: float) -> bool:
        with self._write() as conn:
            cur = conn.execute("INSERT INTO spent_states (digest, expires_at) VALUES (?, ?)"
                               " ON CONFLICT (digest) DO NOTHING", (digest, expires_at))
        return cur.rowcount == 1

    def purge_spent_states(self, now: float) -> int:
        with self._write() as conn:
            cur = conn.execute("DELETE FROM spent_states WHERE expires_at <= ?", (now,))
        return max(0, cur.rowcount)

    # --- change propagation ----------------------------------------------------------------

    def watch(self, callback: Callable[[], None]) -> None:
        """SQLite cannot push; other processes' commits are found by :meth:`stale`."""

    def stale(self) -> bool:
        with self._lock:
            if self._wal_header and self._shm.unchanged(self._wal_header):
                return False  # nothing committed since data_version was last read
        current = self._pragma_data_version()
        if current == self._data_version:
            return False
        self._data_version = current
        return True

    def _pragma_data_version(self) -> int:
        with self._lock:
            self._check_open()
            try:
                # The header is read before the query: a commit between the two moves
                # data_version now and leaves the header kept different, so it is queried
                # again next time; none is ever missed.
                self._wal_header = self._read_wal_header()
                return int(self._conn.execute("PRAGMA data_version").fetchone()[0])
            except sqlite3.Error as exc:
                raise _store_error(exc, self.path) from None

    def _read_wal_header(self) -> bytes:
        """(Under the lock.) The WAL index header as it reads now, b"" when unknown: not in
        WAL mode, or no ``-shm`` file (opened once; it exists while a connection is open)."""
        return self._shm.read() if self._wal else b""

    def ping(self) -> None:
        """A new read-only connection to the file reads its schema table: the store's own
        connection keeps reading a file removed from under it, this one does not."""
        self._check_open()
        try:
            conn = sqlite3.connect(f"{_uri(self.path)}?mode=ro", uri=True, timeout=_PING_BUSY_S,
                                   isolation_level=None)
        except sqlite3.Error as exc:
            raise _store_error(exc, self.path) from None
        try:
            conn.execute(f"SELECT MAX(version) FROM {SCHEMA_TABLE}").fetchone()
        except sqlite3.Error as exc:
            raise _store_error(exc, self.path) from None
        finally:
            conn.close()

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                self._conn.close()
                self._shm.close()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the store is closed", code="registry.closed")

