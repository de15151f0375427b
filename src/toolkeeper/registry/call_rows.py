"""The durable call log's table (``calls``, migration 3) on SQLite and PostgreSQL.

A :class:`CallRows` owns its own connection to the registry's database, apart from the
registry store's, so the call log's background writer never waits on (or holds) the lock a
request's registry read takes. It appends batches, prunes by age and row count, and answers
filtered queries for ``toolkeeper calls``. :func:`open_call_rows` opens the store the URL names
first (so the URL is checked, and the database recognised and migrated, exactly as the registry
does it), then connects beside it. ``memory:`` has no table: its rows live in the process.

Rows are written as :data:`CallValues`, plain tuples in column order, built once by the
recorder's flusher: ``at`` is an integer of microseconds since the epoch (UTC; compared and
indexed as a number, formatted as text only when read, :func:`at_text`), and a missing
credential or request id is the empty string, which the ``INSERT`` turns into ``NULL``
(``NULLIF``; neither is ever empty: a credential id is a key id, ``iss#sub`` or ``stdio``,
a request id is JSON text). SQLite appends a batch as multi-row ``INSERT`` statements of
:data:`_CHUNKS` rows (one statement's work, and one ``sqlite_sequence`` update, per chunk),
the rest row by row; its writer uses ``synchronous = NORMAL`` (the registry's database is in
WAL mode: a commit survives a process crash; power loss may undo the last ones).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any, Protocol
from urllib.parse import quote

import msgspec

from toolkeeper.errors import StoreError
from toolkeeper.registry.location import open_store

__all__ = ["CallQuery", "CallRow", "CallRows", "CallValues", "MemoryCallRows", "at_text",
           "open_call_rows"]

_COLUMNS = ("at", "tenant", "credential", "tool", "version", "era", "arguments_digest",
            "outcome", "latency_ms", "request_id")


CallValues = tuple[int, str, str, str, str, str, str, str, float, str]
"""One row to store, in column order: ``at`` (microseconds since the epoch, UTC), tenant,
credential (``""``: none), tool, version, era, arguments digest, outcome, latency in
milliseconds, request id as JSON text (``""``: none)."""

_second: tuple[int, str] = (-1, "")  # the last whole second formatted, and its text


def at_text(at_us: int) -> str:
    """``at_us`` (microseconds since the epoch) as UTC ISO-8601 text with microseconds and
    ``Z`` (``2026-01-01T00:00:00.000001Z``). The text of the whole second is kept from one
    call to the next, so rows of one second format it once."""
    global _second
    seconds, micros = divmod(at_us, 1_000_000)
    known = _second
    if known[0] != seconds:
        known = _second = (seconds, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)))
    return f"{known[1]}.{micros:06d}Z"


class CallRow(msgspec.Struct, frozen=True, gc=False):
    """One completed, dispatched call as read. ``at_us``: when it was dispatched, in
    microseconds since the epoch (``at``: the same as UTC text); ``request_id``: the
    JSON-RPC id as JSON text."""

    at_us: int
    tenant: str
    credential: str | None
    tool: str
    version: str
    era: str
    arguments_digest: str
    outcome: str
    latency_ms: float
    request_id: str | None
    seq: int = 0

    @property
    def at(self) -> str:
        return at_text(self.at_us)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seq": self.seq}
        out.update((name, getattr(self, name)) for name in _COLUMNS)
        out["request_id"] = (None if self.request_id is None
                             else msgspec.json.decode(self.request_id))
        return out

    def values(self) -> CallValues:
        return (self.at_us, self.tenant, self.credential or "", self.tool, self.version,
                self.era, self.arguments_digest, self.outcome, self.latency_ms,
                self.request_id or "")

    @classmethod
    def of(cls, values: CallValues, seq: int = 0) -> CallRow:
        at_us, tenant, credential, tool, version, era, digest, outcome, latency, request_id = (
            values)
        return cls(at_us, tenant, credential or None, tool, version, era, digest, outcome,
                   latency, request_id or None, seq=seq)


@dataclass(frozen=True, slots=True)
class CallQuery:
    """A filter over the call log (``None``: any); rows come newest first, at most ``limit``."""

    tool: str | None = None
    tenant: str | None = None
    outcome: str | None = None
    since: int | None = None  # an ``at`` lower bound in microseconds (inclusive)
    limit: int = 100

    def matches(self, row: CallRow) -> bool:
        return ((self.tool is None or row.tool == self.tool)
                and (self.tenant is None or row.tenant == self.tenant)
                and (self.outcome is None or row.outcome == self.outcome)
                and (self.since is None or row.at_us >= self.since))

    def where(self, mark: str) -> tuple[str, list[Any]]:
        """The SQL ``WHERE`` clause (``mark``: the driver's placeholder) and its parameters."""
        terms: list[str] = []
        params: list[Any] = []
        for column, value, op in (("tool", self.tool, "="), ("tenant", self.tenant, "="),
                                  ("outcome", self.outcome, "="), ("at", self.since, ">=")):
            if value is not None:
                terms.append(f"{column} {op} {mark}")
                params.append(value)
        return (" WHERE " + " AND ".join(terms)) if terms else "", params


class CallRows(Protocol):
    """Where the call log's rows are kept. Written by one thread (the flusher); read by any."""

    def append(self, rows: Sequence[CallValues]) -> None:
        """Store ``rows`` in one transaction, in order."""
        ...

    def prune(self, before: int | None, keep_rows: int | None) -> int:
        """Delete rows dispatched before ``before`` (microseconds since the epoch) and all
        but the newest ``keep_rows`` (None: no such bound); the number deleted."""
        ...

    def query(self, query: CallQuery) -> list[CallRow]:
        ...

    def close(self) -> None:
        ...


class MemoryCallRows:
    """The in-process twin (``memory:`` registries and tests)."""

    def __init__(self) -> None:
        self._rows: list[CallRow] = []
        self._lock = threading.Lock()

    def append(self, rows: Sequence[CallValues]) -> None:
        with self._lock:
            seq = self._rows[-1].seq if self._rows else 0
            for offset, values in enumerate(rows, 1):
                self._rows.append(CallRow.of(values, seq + offset))

    def prune(self, before: int | None, keep_rows: int | None) -> int:
        with self._lock:
            kept = [r for r in self._rows if before is None or r.at_us >= before]
            if keep_rows is not None:
                kept = kept[max(0, len(kept) - keep_rows):]
            dropped = len(self._rows) - len(kept)
            self._rows = kept
            return dropped

    def query(self, query: CallQuery) -> list[CallRow]:
        with self._lock:
            found = [r for r in reversed(self._rows) if query.matches(r)]
        return found[:query.limit]

    def close(self) -> None:
        pass


def _row(values: Sequence[Any]) -> CallRow:
    seq, at, tenant, credential, tool, version, era, digest, outcome, latency, request_id = values
    return CallRow(int(at), tenant, credential, tool, version, era, digest, outcome,
                   float(latency), request_id, seq=int(seq))


_SELECT = "SELECT seq, " + ", ".join(_COLUMNS) + " FROM calls"
_CHUNKS = (64, 16, 4)  # rows per multi-row INSERT, largest first (64 * 10 < 999 parameters)


def _insert(mark: str, rows: int = 1) -> str:
    """The ``INSERT`` of ``rows`` rows (``mark``: the driver's placeholder)."""
    one = (f"({mark}, {mark}, NULLIF({mark}, ''), {mark}, {mark}, {mark}, {mark}, {mark}, "
           f"{mark}, NULLIF({mark}, ''))")
    return f"INSERT INTO calls ({', '.join(_COLUMNS)}) VALUES " + ", ".join([one] * rows)


_SQLITE_INSERTS = {size: _insert("?", size) for size in (1, *_CHUNKS)}


class _SQLiteCallRows:
    def __init__(self, path: str, read_only: bool) -> None:
        self._path = path
        mode = "ro" if read_only else "rw"
        try:
            uri = ("file://" if path.startswith("/") else "file:") + quote(path)
            self._conn = sqlite3.connect(f"{uri}?mode={mode}", uri=True, timeout=30.0,
                                         isolation_level=None, check_same_thread=False)
            if not read_only:
                self._conn.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.Error as exc:
            raise self._error(exc) from None
        self._lock = threading.Lock()

    def _error(self, exc: sqlite3.Error) -> StoreError:
        return StoreError(f"the call log in {self._path} failed: {exc}", code="calllog.store")

    def _run(self, work: Callable[[sqlite3.Connection], Any], write: bool = False) -> Any:
        with self._lock:
            try:
                self._conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    result = work(self._conn)
                except BaseException:
                    self._conn.rollback()
                    raise
                self._conn.execute("COMMIT")
                return result
            except sqlite3.Error as exc:
                raise self._error(exc) from None

    def append(self, rows: Sequence[CallValues]) -> None:
        def work(conn: sqlite3.Connection) -> None:
            start = 0
            for size in _CHUNKS:
                sql = _SQLITE_INSERTS[size]
                while len(rows) - start >= size:
                    conn.execute(sql, list(chain.from_iterable(rows[start:start + size])))
                    start += size
            conn.executemany(_SQLITE_INSERTS[1], rows[start:])
        self._run(work, write=True)

    def prune(self, before: int | None, keep_rows: int | None) -> int:
        def work(conn: sqlite3.Connection) -> int:
            dropped = 0
            if before is not None:
                dropped += conn.execute("DELETE FROM calls WHERE at < ?", (before,)).rowcount
            if keep_rows is not None:
                dropped += conn.execute(
                    "DELETE FROM calls WHERE seq <= (SELECT seq FROM calls ORDER BY seq DESC"
                    " LIMIT 1 OFFSET ?)", (keep_rows,)).rowcount
            return int(dropped)
        return int(self._run(work, write=True))

    def query(self, query: CallQuery) -> list[CallRow]:
        where, params = query.where("?")
        sql = f"{_SELECT}{where} ORDER BY seq DESC LIMIT ?"
        rows = self._run(lambda c: c.execute(sql, [*params, query.limit]).fetchall())
        return [_row(r) for r in rows]

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class _PostgresCallRows:
    def __init__(self, url: str, read_only: bool) -> None:
        import psycopg

        from toolkeeper.registry.location import masked

        self._url = url
        self._masked = masked
        self._psycopg = psycopg
        self._lock = threading.Lock()
        try:
            self._conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
            if read_only:
                self._conn.execute("SET default_transaction_read_only = on")
        except psycopg.Error as exc:
            raise self._error(exc) from None

    def _error(self, exc: Exception) -> StoreError:
        return StoreError(f"the call log failed: {self._masked(str(exc), self._url)}",
                          code="calllog.store")

    def _run(self, work: Callable[[Any], Any]) -> Any:
        with self._lock:
            try:
                if self._conn.closed or self._conn.broken:
                    self._conn = self._psycopg.connect(self._url, autocommit=True,
                                                       connect_timeout=10)
                with self._conn.transaction():
                    return work(self._conn)
            except self._psycopg.Error as exc:
                raise self._error(exc) from None

    def append(self, rows: Sequence[CallValues]) -> None:
        sql = _insert("%s")
        self._run(lambda c: c.cursor().executemany(sql, rows))

    def prune(self, before: int | None, keep_rows: int | None) -> int:
        def work(conn: Any) -> int:
            dropped = 0
            if before is not None:
                dropped += conn.execute("DELETE FROM calls WHERE at < %s", (before,)).rowcount
            if keep_rows is not None:
                dropped += conn.execute(
                    "DELETE FROM calls WHERE seq <= (SELECT seq FROM calls ORDER BY seq DESC"
                    " LIMIT 1 OFFSET %s)", (keep_rows,)).rowcount
            return int(dropped)
        return int(self._run(work))

    def query(self, query: CallQuery) -> list[CallRow]:
        where, params = query.where("%s")
        sql = f"{_SELECT}{where} ORDER BY seq DESC LIMIT %s"
        return [_row(r) for r in self._run(
            lambda c: c.execute(sql, [*params, query.limit]).fetchall())]

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _beside(store: object, read_only: bool) -> CallRows:
    """The call rows in the database ``store`` (an opened registry store) keeps."""
    path = getattr(store, "path", None)
    if path is not None:
        return _SQLiteCallRows(str(path), read_only)
    url = getattr(store, "url", None)
    if isinstance(url, str):
        return _PostgresCallRows(url, read_only)
    return MemoryCallRows()


def open_call_rows(url: str | None, *, read_only: bool = False) -> CallRows:
    """The call log of the registry at ``url`` (None: the default registry). The registry must
    exist; opening it to write migrates it (as any registry write does), opening it
    ``read_only`` never writes and needs it at the latest schema (``registry.schema_outdated``
    otherwise). ``memory:`` gives an empty in-process log."""
    store = open_store(url, create=False, read_only=read_only)
    try:
        return _beside(store, read_only)
    finally:
        store.close()
