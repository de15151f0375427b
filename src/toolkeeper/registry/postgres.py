"""The shared store for several gateway replicas: PostgreSQL through psycopg 3.

Writers of one name serialise with ``pg_advisory_xact_lock`` (held to commit); the unique key
on (name, version_key) backs the guard regardless. Audit rows are appended under a second,
global transaction lock, so sequence numbers are assigned in commit order and a replica's
cursor never skips a late commit. Every change transaction ends with ``pg_notify`` on
:data:`~toolkeeper.registry.rows.CHANNEL`; :class:`~toolkeeper.registry.listener.PgListener`
delivers it to the other replicas' subscribers (change streams). Reads do not wait for it:
``stale()`` compares the newest audit sequence number with the newest one read, so a request
that arrives after a change committed on any replica is judged against it. Every wait is
bounded (``connect_timeout``, ``lock_timeout``).
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg import errors as pg_errors

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import ToolSpec
from toolkeeper.errors import StoreError
from toolkeeper.registry.admission import AdmissionRecord, admission_from_row, admission_params
from toolkeeper.registry.apikeys import KEY_COLUMNS, ApiKeyRecord, key_from_row, key_params
from toolkeeper.registry.listener import PgListener
from toolkeeper.registry.masking import masked
from toolkeeper.registry.migrations import (
    POSTGRES_MIGRATIONS,
    SCHEMA_TABLE,
    check_usable,
    recognise_schema,
)
from toolkeeper.registry.rollout_backends import PostgresRollouts
from toolkeeper.registry.rows import (
    CHANNEL,
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
from toolkeeper.registry.upstream_backends import PostgresUpstreams

_log = logging.getLogger(__name__)

__all__ = ["PostgresStore"]

# Advisory lock namespaces (first key of the two-int form): "tk" + a role digit.
PING_CONNECT_TIMEOUT_S = 2  # libpq rounds a smaller value up to 2 seconds
_NAME_LOCK = 0x746B01
_AUDIT_LOCK = 0x746B02
_MIGRATION_LOCK = 0x746B03

_ERRORS: tuple[tuple[type[Exception], str, str], ...] = (
    (pg_errors.UniqueViolation, "registry.conflict", "the version is already stored"),
    (pg_errors.ReadOnlySqlTransaction, "registry.read_only", "the registry is open read-only"),
    (pg_errors.LockNotAvailable, "registry.busy", "the registry stayed locked by another writer"),
    (pg_errors.IntegrityConstraintViolation, "registry.conflict", "the database refused"),
    (psycopg.OperationalError, "registry.unavailable", "the PostgreSQL registry is unreachable"),
)


def _store_error(exc: psycopg.Error, url: str = "") -> StoreError:
    """The StoreError for a driver error; libpq may quote the connection URL, so its
    password is masked."""
    detail = masked(str(exc), url)
    for kind, code, text in _ERRORS:
        if isinstance(exc, kind):
            return StoreError(f"{text}: {detail}", code=code)
    return StoreError(f"the PostgreSQL registry failed: {detail}", code="registry.store")


def _schema_facts(conn: psycopg.Connection[Any]
                  ) -> tuple[set[str], list[tuple[int, str]] | None]:
    """The current schema's table names, and its ``schema_version`` rows when it has that
    table with toolkeeper's columns and types (else None)."""
    tables = {str(row[0]) for row in conn.execute(
        "SELECT table_name FROM information_schema.tables"
        " WHERE table_schema = current_schema()").fetchall()}
    if SCHEMA_TABLE not in tables:
        return tables, None
    columns = {str(row[0]): str(row[1]) for row in conn.execute(
        "SELECT column_name, data_type FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND table_name = %s",
        (SCHEMA_TABLE,)).fetchall()}
    if columns.get("version") != "integer" or columns.get("description") != "text":
        return tables, None
    rows = conn.execute(f"SELECT version, description FROM {SCHEMA_TABLE} ORDER BY version"
                        ).fetchall()
    return tables, [(int(v), str(d)) for v, d in rows]


class _PgTransaction:
    def __init__(self, conn: psycopg.Connection[Any], name: str) -> None:
        self._conn = conn
        self._name = name
        self.audited = False

    def versions(self) -> list[ToolSpec]:
        rows = self._conn.execute("SELECT document FROM contracts WHERE name = %s",
                                  (self._name,)).fetchall()
        return sorted((spec_from_document(r[0]) for r in rows), key=lambda s: s.version)

    def insert(self, spec: ToolSpec) -> None:
        self._check(spec)
        self._conn.execute(
            "INSERT INTO contracts (name, version_key, version, content_digest, status, document)"
            " VALUES (%(name)s, %(version_key)s, %(version)s, %(content_digest)s, %(status)s,"
            " %(document)s)", contract_params(spec))

    def update(self, spec: ToolSpec) -> None:
        self._check(spec)
        cur = self._conn.execute(
            "UPDATE contracts SET status = %(status)s, document = %(document)s,"
            " version = %(version)s, content_digest = %(content_digest)s"
            " WHERE name = %(name)s AND version_key = %(version_key)s", contract_params(spec))
        if cur.rowcount != 1:
            raise StoreError(f"{spec.name} {spec.version} is not stored", code="registry.missing")

    def append_audit(self, record: AuditRecord) -> None:
        if not self.audited:
            # Taken once, held to commit: sequence numbers are handed out in commit order.
            self._conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (_AUDIT_LOCK,))
            self.audited = True
        self._conn.execute(
            "INSERT INTO audit (at, actor, action, name, version, rule, verdict) VALUES"
            " (%(at)s, %(actor)s, %(action)s, %(name)s, %(version)s, %(rule)s, %(verdict)s)",
            audit_params(record))

    def record_admission(self, record: AdmissionRecord) -> None:
        if record.tool != self._name:
            raise StoreError(f"transaction on {self._name!r} cannot write {record.tool!r}",
                             code="registry.wrong_name")
        self._conn.execute(
            "INSERT INTO admissions (name, version_key, version, digest, record) VALUES"
            " (%(name)s, %(version_key)s, %(version)s, %(digest)s, %(record)s)",
            admission_params(record, version_key(Version.parse(record.version))))

    def _check(self, spec: ToolSpec) -> None:
        if spec.name != self._name:
            raise StoreError(f"transaction on {self._name!r} cannot write {spec.name!r}",
                             code="registry.wrong_name")


class PostgresStore(PostgresUpstreams, PostgresRollouts):
    """A registry store in a PostgreSQL database, shared by any number of processes."""

    def __init__(self, url: str, *, connect_timeout: int = 10, lock_timeout: float = 30.0,
                 ping_idle_s: float = 30.0, create: bool = True,
                 read_only: bool = False) -> None:
        """``ping_idle_s``: a connection idle at least this long is checked with one round
        trip before use, and replaced if the server or something between (a proxy's or a
        firewall's idle timeout) has closed it, instead of failing that call. ``create``: a
        database without tables may become a registry. ``read_only``: every transaction of the
        session is read-only and nothing is migrated; the database must be a registry at the
        latest schema. A database that is not toolkeeper's is refused, never migrated."""
        self.url = url
        self._create = create and not read_only
        self._read_only = read_only
        self._connect_timeout = connect_timeout
        self._lock_timeout_ms = int(lock_timeout * 1000)
        self._ping_idle_s = ping_idle_s
        self._used = time.monotonic()
        self._lock = threading.Lock()
        self._closed = False
        self._origin = secrets.token_hex(8)  # tags our NOTIFYs so our own listener skips them
        self._listener: PgListener | None = None
        self._read_seq = 0  # the newest audit sequence number a snapshot or delta has read
        self._conn = self._connect()
        try:
            if read_only:
                with self._transaction(read_only=True) as conn:
                    self._usable(conn)
            else:
                self._migrate()
        except BaseException:
            self._conn.close()
            raise

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            conn = psycopg.connect(self.url, autocommit=True,
                                   connect_timeout=self._connect_timeout)
        except psycopg.Error as exc:
            raise _store_error(exc, self.url) from None
        try:
            conn.execute(f"SET lock_timeout = {self._lock_timeout_ms}")
            if self._read_only:
                conn.execute("SET default_transaction_read_only = on")
        except psycopg.Error as exc:
            conn.close()  # not left open behind the error
            raise _store_error(exc, self.url) from None
        return conn

    def _live(self) -> psycopg.Connection[Any]:
        if self._closed:
            raise StoreError("the store is closed", code="registry.closed")
        if not (self._conn.closed or self._conn.broken) and (
                time.monotonic() - self._used >= self._ping_idle_s):
            try:
                self._conn.execute("SELECT 1")
            except psycopg.Error:
                _log.info("registry: the idle PostgreSQL session was closed; reconnecting")
        if self._conn.closed or self._conn.broken:
            self._conn.close()
            self._conn = self._connect()
        return self._conn

    @contextmanager
    def _transaction(self, *, read_only: bool = False) -> Iterator[psycopg.Connection[Any]]:
        with self._lock:
            conn = self._live()
            try:
                with conn.transaction():
                    if read_only:
                        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    yield conn
            except psycopg.Error as exc:
                raise _store_error(exc, self.url) from None
            finally:
                self._used = time.monotonic()

    def _usable(self, conn: psycopg.Connection[Any]) -> int:
        where = masked(self.url, self.url)
        version = recognise_schema(where, *_schema_facts(conn), POSTGRES_MIGRATIONS)
        check_usable(where, version, POSTGRES_MIGRATIONS, create=self._create,
                     read_only=self._read_only)
        return version

    def _migrate(self) -> None:
        with self._transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (_MIGRATION_LOCK,))
            current = self._usable(conn)
            conn.execute(f"CREATE TABLE IF NOT EXISTS {SCHEMA_TABLE} (version INTEGER PRIMARY"
                         " KEY, description TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)")
            for migration in POSTGRES_MIGRATIONS:
                if migration.version > current:
                    for statement in migration.statements:
                        conn.execute(statement)
                    conn.execute(f"INSERT INTO {SCHEMA_TABLE} VALUES (%s, %s, now())",
                                 (migration.version, migration.description))

    def schema_version(self) -> int:
        with self._transaction(read_only=True) as conn:
            row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
        return int(row[0]) if row else 0

    @contextmanager
    def change(self, name: str) -> Iterator[_PgTransaction]:
        with self._transaction() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_NAME_LOCK, name))
            tx = _PgTransaction(conn, name)
            yield tx
            if tx.audited:
                conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"{self._origin} {name}"))

    @contextmanager
    def change_many(self, names: Sequence[str]) -> Iterator[dict[str, _PgTransaction]]:
        with self._transaction() as conn:
            for name in sorted(set(names)):  # one order for every writer: no deadlock
                conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))",
                             (_NAME_LOCK, name))
            txs = {name: _PgTransaction(conn, name) for name in names}
            yield txs
            for name, tx in txs.items():
                if tx.audited:
                    conn.execute("SELECT pg_notify(%s, %s)",
                                 (CHANNEL, f"{self._origin} {name}"))

    def snapshot(self) -> Snapshot:
        with self._transaction(read_only=True) as conn:
            row = conn.execute(NEWEST_SEQ).fetchone()
            rows = conn.execute("SELECT document FROM contracts").fetchall()
        return self._read(Snapshot(int(row[0]) if row else 0,
                                   tuple(spec_from_document(r[0]) for r in rows)))

    def _read(self, snapshot: Snapshot) -> Snapshot:
        self._read_seq = max(self._read_seq, snapshot.cursor)
        return snapshot

    def changes_since(self, cursor: int) -> Snapshot:
        with self._transaction(read_only=True) as conn:
            row = conn.execute(NEWEST_SEQ).fetchone()
            # Never a prepared (generic) plan: with an unknown cursor PostgreSQL may pick a
            # sequential scan of the whole trail; the literal cursor gets the primary key.
            audited = conn.execute("SELECT name, version, action FROM audit WHERE seq > %s"
                                   " AND rule IS NULL", (cursor,), prepare=False).fetchall()
            keys = changed_keys(audited)
            rows = conn.execute(
                "SELECT c.document FROM contracts c"
                " JOIN unnest(%s::text[], %s::text[]) AS k(name, version_key)"
                " ON c.name = k.name AND c.version_key = k.version_key",
                ([k[0] for k in keys], [k[1] for k in keys]), prepare=False,
            ).fetchall() if keys else []
        return self._read(Snapshot(int(row[0]) if row else 0,
                                   tuple(spec_from_document(r[0]) for r in rows),
                                   moves_rollouts(audited)))

    def audit(self) -> tuple[AuditEntry, ...]:
        with self._transaction(read_only=True) as conn:
            rows = conn.execute("SELECT seq, at, actor, action, name, version, rule, verdict"
                                " FROM audit ORDER BY seq").fetchall()
        return tuple(audit_from_row(r) for r in rows)

    def admission(self, name: str, version: Version) -> AdmissionRecord | None:
        with self._transaction(read_only=True) as conn:
            row = conn.execute("SELECT record, digest FROM admissions WHERE name = %s"
                               " AND version_key = %s", (name, version_key(version))).fetchone()
        return admission_from_row(row[0], row[1]) if row else None

    # --- API keys (registry.apikeys.KeyStore) ----------------------------------------------

    def add_key(self, record: ApiKeyRecord) -> None:
        with self._transaction() as conn:
            conn.execute(f"INSERT INTO api_keys ({KEY_COLUMNS}) VALUES (%(id)s, %(salt)s,"
                         " %(hash)s, %(tenant)s, %(scopes)s, %(clearance)s, %(name)s,"
                         " %(created)s, %(expires)s, %(revoked_at)s)", key_params(record))

    def find_key(self, key_id: str) -> ApiKeyRecord | None:
        with self._transaction(read_only=True) as conn:
            row = conn.execute(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE id = %s",
                               (key_id,)).fetchone()
        return key_from_row(row) if row else None

    def list_keys(self) -> tuple[ApiKeyRecord, ...]:
        with self._transaction(read_only=True) as conn:
            rows = conn.execute(f"SELECT {KEY_COLUMNS} FROM api_keys ORDER BY created, id"
                                ).fetchall()
        return tuple(key_from_row(r) for r in rows)

    def revoke_key(self, key_id: str, at: str) -> ApiKeyRecord | None:
        with self._transaction() as conn:
            conn.execute("UPDATE api_keys SET revoked_at = %s"
                         " WHERE id = %s AND revoked_at IS NULL", (at, key_id))
            row = conn.execute(f"SELECT {KEY_COLUMNS} FROM api_keys WHERE id = %s",
                               (key_id,)).fetchone()
        return key_from_row(row) if row else None

    def key_revocations(self) -> int:
        """One round trip outside a transaction block (autocommit): the verifier's periodic
        look at the revocation generation."""
        with self._lock:
            try:
                row = self._live().execute(
                    "SELECT COUNT(*) FROM api_keys WHERE revoked_at IS NOT NULL").fetchone()
            except psycopg.Error as exc:
                raise _store_error(exc, self.url) from None
            finally:
                self._used = time.monotonic()
        return int(row[0]) if row else 0

    # --- spent request states (registry.spent_states.SpentStateStore) ----------------------

    def spend_state(self, digest: str, expires_at: float) -> bool:
        with self._transaction() as conn:
            cur = conn.execute("INSERT INTO spent_states (digest, expires_at) VALUES (%s, %s)"
                               " ON CONFLICT (digest) DO NOTHING", (digest, expires_at))
        return cur.rowcount == 1

    def purge_spent_states(self, now: float) -> int:
        with self._transaction() as conn:
            cur = conn.execute("DELETE FROM spent_states WHERE expires_at <= %s", (now,))
        return max(0, cur.rowcount)

    def watch(self, callback: Callable[[], None]) -> None:
        """Deliver other replicas' commits: starts the LISTEN thread on first use."""
        if self._listener is None:
            listener = PgListener(self.url, CHANNEL, origin=self._origin,
                                  connect_timeout=self._connect_timeout)
            listener.add(callback)
            self._listener = listener
            if not listener.start(timeout=self._connect_timeout):
                self._listener = None  # a later watch starts afresh; this one is stopped
                listener.stop(self._send_token)
                raise StoreError("could not LISTEN for registry changes",
                                 code="registry.unavailable")
        else:
            self._listener.add(callback)

    def stale(self) -> bool:
        """Whether a change was committed that we have not read: one round trip (the newest
        audit sequence number against the newest we have read). So a read begun after another
        replica's change committed is judged against it, as on SQLite; a NOTIFY alone arrives
        a little later (the LISTEN thread pushes changes to subscribers as they happen)."""
        with self._lock:
            try:
                row = self._live().execute(NEWEST_SEQ).fetchone()
            except psycopg.Error as exc:
                raise _store_error(exc, self.url) from None
            finally:
                self._used = time.monotonic()
        return (int(row[0]) if row else 0) > self._read_seq

    def _send_token(self, token: str) -> None:
        with self._lock:
            self._live().execute("SELECT pg_notify(%s, %s)", (CHANNEL, token))

    def ping(self) -> None:
        """A new session (connect timeout :data:`PING_CONNECT_TIMEOUT_S`) reads the schema
        table and closes: never the store's own connection, so a probe waits neither behind a
        call holding it nor for its longer connect timeout."""
        if self._closed:
            raise StoreError("the store is closed", code="registry.closed")
        try:
            with psycopg.connect(self.url, autocommit=True,
                                 connect_timeout=PING_CONNECT_TIMEOUT_S) as conn:
                conn.execute(f"SELECT MAX(version) FROM {SCHEMA_TABLE}").fetchone()
        except psycopg.Error as exc:
            raise _store_error(exc, self.url) from None

    def close(self) -> None:
        if self._closed:
            return
        if self._listener is not None:
            self._listener.stop(self._send_token)
        with self._lock:
            self._closed = True
            self._conn.close()
