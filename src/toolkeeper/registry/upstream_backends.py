"""The upstream rows (:mod:`~toolkeeper.registry.upstream_records`) in each backend, as mixins
of the stores: :class:`MemoryUpstreams`, :class:`SQLiteUpstreams`, :class:`PostgresUpstreams`.

The SQL is one text per statement, written with ``:name`` parameters (SQLite's) and turned
into ``%(name)s`` for psycopg; writes are upserts (``ON CONFLICT ... DO UPDATE``, the same in
both dialects). The memory twin keeps the very rows the SQL stores keep (canonical JSON text)
and reads them back through the same conversions, so a row it returns went through the same
checks.

The sync lock: a process-local set of held (store, upstream) keys, taken without waiting; on
PostgreSQL also a session-level advisory lock (``pg_try_advisory_lock``) on the store's
connection, keyed by the upstream's name, so one sync of an upstream runs at a time across every
process sharing the database. SQLite and memory hold it within the process only: a sync does
network I/O, and holding SQLite's single write lock (``BEGIN IMMEDIATE``) meanwhile would stop
every other writer of the registry.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import Any

import psycopg

from toolkeeper.registry.upstream_records import (
    DRIFT_COLUMNS,
    HEALTH_COLUMNS,
    TOOL_COLUMNS,
    UPSTREAM_COLUMNS,
    DriftRecord,
    HealthRecord,
    UpstreamRecord,
    UpstreamToolRecord,
    drift_from_row,
    drift_params,
    health_from_row,
    health_params,
    sync_busy,
    tool_from_row,
    tool_params,
    upstream_from_row,
    upstream_params,
)

__all__ = ["MemoryUpstreams", "PostgresUpstreams", "SQLiteUpstreams"]

_SYNC_LOCK = 0x746B04
"""The advisory lock namespace of upstream syncs (``tk`` + 4; the stores use 1 to 3)."""


def _columns(text: str) -> list[str]:
    return [c.strip() for c in text.split(",")]


def _upsert(table: str, columns: str, key: str) -> str:
    names = _columns(columns)
    keys = _columns(key)
    updates = ", ".join(f"{c} = excluded.{c}" for c in names if c not in keys)
    return (f"INSERT INTO {table} ({columns}) VALUES ({', '.join(':' + c for c in names)})"
            f" ON CONFLICT ({key}) DO UPDATE SET {updates}")


_PUT_UPSTREAM = _upsert("upstreams", UPSTREAM_COLUMNS, "name")
_PUT_TOOL = _upsert("upstream_tools", TOOL_COLUMNS, "upstream, tool")
_PUT_DRIFT = _upsert("upstream_drifts", DRIFT_COLUMNS, "id")
_PUT_HEALTH = _upsert("upstream_health", HEALTH_COLUMNS, "upstream, replica")
_HEALTH = (f"SELECT {HEALTH_COLUMNS} FROM upstream_health WHERE upstream = :upstream"
           " ORDER BY replica")
_GET_UPSTREAM = f"SELECT {UPSTREAM_COLUMNS} FROM upstreams WHERE name = :name"
_NAMES = "SELECT name FROM upstreams ORDER BY name"
_DELETE_TOOLS = "DELETE FROM upstream_tools WHERE upstream = :name"
_DELETE_HEALTH = "DELETE FROM upstream_health WHERE upstream = :name"
_DELETE_VIEW = "DELETE FROM upstream_health WHERE upstream = :upstream AND replica = :replica"
_DELETE_UPSTREAM = "DELETE FROM upstreams WHERE name = :name"
_DELETE_TOOL = "DELETE FROM upstream_tools WHERE upstream = :upstream AND tool = :tool"
_TOOLS = f"SELECT {TOOL_COLUMNS} FROM upstream_tools WHERE upstream = :upstream ORDER BY tool"
_DRIFTS = (f"SELECT {DRIFT_COLUMNS} FROM upstream_drifts WHERE upstream = :upstream"
           " AND (:tool IS NULL OR tool = :tool) ORDER BY seen_at, id")
_PG_DRIFTS = (f"SELECT {DRIFT_COLUMNS} FROM upstream_drifts WHERE upstream = :upstream"
              " AND (CAST(:tool AS TEXT) IS NULL OR tool = :tool) ORDER BY seen_at, id")


def _pg(sql: str) -> str:
    return re.sub(r":(\w+)", r"%(\1)s", sql)


_HELD: set[tuple[str, str]] = set()
_HELD_LOCK = threading.Lock()


@contextmanager
def _local_lock(scope: str, name: str) -> Iterator[None]:
    key = (scope, name)
    with _HELD_LOCK:
        if key in _HELD:
            raise sync_busy(name)
        _HELD.add(key)
    try:
        yield
    finally:
        with _HELD_LOCK:
            _HELD.discard(key)


def _row(params: Mapping[str, Any], columns: str) -> tuple[Any, ...]:
    return tuple(params[c] for c in _columns(columns))


class MemoryUpstreams:
    """Upstream rows in dictionaries (the host's ``_lock`` guards them)."""

    _lock: threading.Lock

    def _init_upstreams(self) -> None:
        self._upstreams: dict[str, tuple[Any, ...]] = {}
        self._upstream_tools: dict[tuple[str, str], tuple[Any, ...]] = {}
        self._drifts: dict[str, tuple[Any, ...]] = {}
        self._health: dict[tuple[str, str], tuple[Any, ...]] = {}

    def put_upstream(self, record: UpstreamRecord) -> None:
        row = _row(upstream_params(record), UPSTREAM_COLUMNS)
        with self._lock:
            self._upstreams[record.name] = row

    def get_upstream(self, name: str) -> UpstreamRecord | None:
        with self._lock:
            row = self._upstreams.get(name)
        return upstream_from_row(row) if row is not None else None

    def upstream_names(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(sorted(self._upstreams))

    def delete_upstream(self, name: str) -> bool:
        with self._lock:
            for key in [k for k in self._upstream_tools if k[0] == name]:
                del self._upstream_tools[key]
            for key in [k for k in self._health if k[0] == name]:
                del self._health[key]
            return self._upstreams.pop(name, None) is not None

    def put_upstream_tool(self, record: UpstreamToolRecord) -> None:
        row = _row(tool_params(record), TOOL_COLUMNS)
        with self._lock:
            self._upstream_tools[(record.upstream, record.tool)] = row

    def delete_upstream_tool(self, upstream: str, tool: str) -> None:
        with self._lock:
            self._upstream_tools.pop((upstream, tool), None)

    def upstream_tools(self, upstream: str) -> tuple[UpstreamToolRecord, ...]:
        with self._lock:
            rows = [row for key, row in sorted(self._upstream_tools.items())
                    if key[0] == upstream]
        return tuple(tool_from_row(row) for row in rows)

    def put_drift(self, record: DriftRecord) -> None:
        row = _row(drift_params(record), DRIFT_COLUMNS)
        with self._lock:
            self._drifts[record.id] = row

    def drifts(self, upstream: str, tool: str | None = None) -> tuple[DriftRecord, ...]:
        with self._lock:
            rows = [row for row in self._drifts.values()
                    if row[1] == upstream and (tool is None or row[2] == tool)]
        return tuple(drift_from_row(row) for row in sorted(rows, key=lambda r: (r[3], r[0])))

    def put_upstream_health(self, record: HealthRecord) -> None:
        row = _row(health_params(record), HEALTH_COLUMNS)
        with self._lock:
            self._health[(record.upstream, record.replica)] = row

    def upstream_health(self, upstream: str) -> tuple[HealthRecord, ...]:
        with self._lock:
            rows = [row for key, row in sorted(self._health.items()) if key[0] == upstream]
        return tuple(health_from_row(row) for row in rows)

    def delete_upstream_health(self, upstream: str, replica: str) -> None:
        with self._lock:
            self._health.pop((upstream, replica), None)

    def upstream_sync_lock(self, name: str) -> AbstractContextManager[None]:
        return _local_lock(f"memory:{id(self)}", name)


class _SqlUpstreams:
    """The upstream rows of both SQL stores: each statement written once, in SQLite's
    ``:name`` form; a dialect supplies its transactions (:meth:`_fetch`, :meth:`_write_all`)
    and, for PostgreSQL, its own text of :data:`_DRIFTS`."""

    _drifts_sql = _DRIFTS

    def _fetch(self, sql: str, params: Mapping[str, Any]) -> list[Any]:
        raise NotImplementedError

    def _write_all(self, statements: tuple[str, ...], params: Mapping[str, Any]) -> int:
        """Run ``statements`` in one transaction; the last one's row count."""
        raise NotImplementedError

    def put_upstream(self, record: UpstreamRecord) -> None:
        self._write_all((_PUT_UPSTREAM,), upstream_params(record))

    def get_upstream(self, name: str) -> UpstreamRecord | None:
        rows = self._fetch(_GET_UPSTREAM, {"name": name})
        return upstream_from_row(rows[0]) if rows else None

    def upstream_names(self) -> tuple[str, ...]:
        return tuple(str(r[0]) for r in self._fetch(_NAMES, {}))

    def delete_upstream(self, name: str) -> bool:
        return self._write_all((_DELETE_TOOLS, _DELETE_HEALTH, _DELETE_UPSTREAM),
                               {"name": name}) == 1

    def put_upstream_tool(self, record: UpstreamToolRecord) -> None:
        self._write_all((_PUT_TOOL,), tool_params(record))

    def delete_upstream_tool(self, upstream: str, tool: str) -> None:
        self._write_all((_DELETE_TOOL,), {"upstream": upstream, "tool": tool})

    def upstream_tools(self, upstream: str) -> tuple[UpstreamToolRecord, ...]:
        return tuple(tool_from_row(r) for r in self._fetch(_TOOLS, {"upstream": upstream}))

    def put_drift(self, record: DriftRecord) -> None:
        self._write_all((_PUT_DRIFT,), drift_params(record))

    def drifts(self, upstream: str, tool: str | None = None) -> tuple[DriftRecord, ...]:
        rows = self._fetch(self._drifts_sql, {"upstream": upstream, "tool": tool})
        return tuple(drift_from_row(r) for r in rows)

    def put_upstream_health(self, record: HealthRecord) -> None:
        self._write_all((_PUT_HEALTH,), health_params(record))

    def upstream_health(self, upstream: str) -> tuple[HealthRecord, ...]:
        return tuple(health_from_row(r) for r in self._fetch(_HEALTH, {"upstream": upstream}))

    def delete_upstream_health(self, upstream: str, replica: str) -> None:
        self._write_all((_DELETE_VIEW,), {"upstream": upstream, "replica": replica})


class SQLiteUpstreams(_SqlUpstreams):
    """Upstream rows in the SQLite file (the host's ``_read``/``_write`` transactions)."""

    path: Any

    def _read(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _fetch(self, sql: str, params: Mapping[str, Any]) -> list[Any]:
        with self._read() as conn:
            return conn.execute(sql, params).fetchall()

    def _write_all(self, statements: tuple[str, ...], params: Mapping[str, Any]) -> int:
        with self._write() as conn:
            counts = [conn.execute(sql, params).rowcount for sql in statements]
        return counts[-1]

    def upstream_sync_lock(self, name: str) -> AbstractContextManager[None]:
        return _local_lock(f"sqlite:{self.path}", name)


class PostgresUpstreams(_SqlUpstreams):
    """Upstream rows in PostgreSQL (the host's ``_transaction``), and the advisory sync lock."""

    url: str
    _lock: threading.Lock
    _drifts_sql = _PG_DRIFTS

    def _transaction(self, *, read_only: bool = False
                     ) -> AbstractContextManager[psycopg.Connection[Any]]:
        raise NotImplementedError

    def _live(self) -> psycopg.Connection[Any]:
        raise NotImplementedError

    def _fetch(self, sql: str, params: Mapping[str, Any]) -> list[Any]:
        with self._transaction(read_only=True) as conn:
            return conn.execute(_pg(sql), params).fetchall()

    def _write_all(self, statements: tuple[str, ...], params: Mapping[str, Any]) -> int:
        with self._transaction() as conn:
            counts = [conn.execute(_pg(sql), params).rowcount for sql in statements]
        return counts[-1]

    @contextmanager
    def upstream_sync_lock(self, name: str) -> Iterator[None]:
        with _local_lock(f"postgres:{self.url}:{id(self)}", name):
            sql = "SELECT pg_try_advisory_lock(%s, hashtext(%s))"
            with self._transaction() as conn:  # autocommit session: the lock outlives it
                row = conn.execute(sql, (_SYNC_LOCK, name)).fetchone()
            if not (row and row[0]):
                raise sync_busy(name)
            try:
                yield
            finally:
                with self._lock, suppress(psycopg.Error):  # a lost session released it
                    self._live().execute("SELECT pg_advisory_unlock(%s, hashtext(%s))",
                                         (_SYNC_LOCK, name))

