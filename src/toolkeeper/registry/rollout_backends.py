"""The rollout rows (:mod:`~toolkeeper.registry.rollout_rows`) in each backend, as mixins of the
stores: :class:`MemoryRollouts`, :class:`SQLiteRollouts`, :class:`PostgresRollouts`.

A rollout is written inside the store's change transaction of its tool
(:meth:`RolloutStore.rollout_change`): serialised with every other writer of the tool across
processes, committed with the audit entry that makes it a registry change (so the generation
moves everywhere and PostgreSQL notifies the other replicas), and with a lifecycle change of
the candidate when one goes with it (a rollback deprecates the candidate in the same commit).
The SQL is written once in SQLite's ``:name`` form and turned into ``%(name)s`` for psycopg.

The evaluation lock (:meth:`RolloutStore.rollout_evaluation_lock`) is taken without waiting
and yields whether it was: a process-local flag per store's data; on PostgreSQL also a
session-level advisory lock (``pg_try_advisory_lock``) on the store's connection, so one
replica of those sharing the database evaluates at a time (a lost session releases it); on
SQLite also an exclusive ``flock`` of the file ``<database>.rollouts.lock`` beside the database
(released by the kernel when the holder exits, so no expiry is needed; where ``fcntl`` does not
exist, the process-local flag alone). It is never SQLite's write lock: an evaluation reads the
call log and signs, and holding ``BEGIN IMMEDIATE`` meanwhile would stop every other writer.
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import psycopg

from toolkeeper.contracts.spec import ToolSpec
from toolkeeper.errors import StoreError
from toolkeeper.registry.rollout_rows import (
    DECISION_COLUMNS,
    OPEN_STATES,
    ROLLOUT_COLUMNS,
    decision_from_row,
    decision_params,
    rollout_from_row,
    rollout_params,
    row_of,
)
from toolkeeper.registry.rollouts import Rollout, RolloutDecision
from toolkeeper.registry.store import AuditRecord

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: the process-local lock alone
    fcntl = None  # type: ignore[assignment]

__all__ = ["MemoryRollouts", "PostgresRollouts", "RolloutStore", "RolloutTransaction",
           "SQLiteRollouts", "rollout_store"]

_EVALUATION_LOCK = 0x746B05
"""The advisory lock namespace of rollout evaluation (``tk`` + 5; upstream syncs use 4)."""

_COLUMN_PARAMS = ", ".join(":" + c.strip() for c in ROLLOUT_COLUMNS.split(","))
_INSERT = f"INSERT INTO rollouts ({ROLLOUT_COLUMNS}) VALUES ({_COLUMN_PARAMS})"
_UPDATE = ("UPDATE rollouts SET " + ", ".join(
    f"{c} = :{c}" for c in (c.strip() for c in ROLLOUT_COLUMNS.split(","))
    if c not in ("tool", "started_us")) +
    " WHERE tool = :tool AND started_us = :started_us AND seq = :expected_seq")
_OF_TOOL = f"SELECT {ROLLOUT_COLUMNS} FROM rollouts WHERE tool = :tool ORDER BY started_us"
_ALL = f"SELECT {ROLLOUT_COLUMNS} FROM rollouts ORDER BY tool, started_us"
_OPEN = (f"SELECT {ROLLOUT_COLUMNS} FROM rollouts WHERE state IN "
         f"({', '.join(repr(s) for s in OPEN_STATES)}) ORDER BY tool")
_ADD_DECISION = (f"INSERT INTO rollout_decisions ({DECISION_COLUMNS}) VALUES "
                 f"({', '.join(':' + c.strip() for c in DECISION_COLUMNS.split(','))})")
_DECISIONS = (f"SELECT {DECISION_COLUMNS} FROM rollout_decisions WHERE tool = :tool"
              " AND started_us = :started_us ORDER BY id")


def _same(sql: str) -> str:
    return sql


def _pg(sql: str) -> str:
    return re.sub(r":(\w+)", r"%(\1)s", sql)


class RolloutTransaction(Protocol):
    """Writes to one tool's rollouts (and its contracts), all-or-nothing."""

    def versions(self) -> list[ToolSpec]: ...
    def update(self, spec: ToolSpec) -> None: ...
    def append_audit(self, record: AuditRecord) -> None: ...

    def rollouts(self) -> list[Rollout]:
        """The tool's rollouts, oldest first, read inside the transaction."""
        ...

    def insert_rollout(self, rollout: Rollout) -> None:
        """A new rollout; a second one of the tool not over is StoreError
        ``registry.conflict`` (the partial unique index)."""
        ...

    def replace_rollout(self, rollout: Rollout, expected_seq: int) -> bool:
        """Store ``rollout`` over the stored one of its start if that is at ``expected_seq``;
        False (nothing written) when it is not."""
        ...

    def add_decision(self, decision: RolloutDecision, started_us: int) -> None: ...


@runtime_checkable
class RolloutStore(Protocol):
    """A store that keeps rollouts (every backend)."""

    def rollout_change(self, tool: str) -> AbstractContextManager[RolloutTransaction]: ...
    def rollouts(self, tool: str | None = None) -> tuple[Rollout, ...]: ...
    def open_rollouts(self) -> tuple[Rollout, ...]: ...
    def rollout_decisions(self, tool: str, started_us: int) -> tuple[RolloutDecision, ...]: ...
    def rollout_evaluation_lock(self) -> AbstractContextManager[bool]: ...


def rollout_store(store: object) -> RolloutStore:
    """``store`` as a :class:`RolloutStore`; one that keeps none is
    ``registry.rollouts_unsupported``."""
    if not isinstance(store, RolloutStore):
        raise StoreError(f"{type(store).__name__} does not keep rollouts",
                         code="registry.rollouts_unsupported")
    return store


_HELD: set[str] = set()
_HELD_LOCK = threading.Lock()


@contextmanager
def _local_lock(key: str) -> Iterator[bool]:
    with _HELD_LOCK:
        taken = key not in _HELD
        _HELD.add(key)
    try:
        yield taken
    finally:
        if taken:
            with _HELD_LOCK:
                _HELD.discard(key)


class _Delegating:
    """The contract writes of a rollout transaction: the store's own transaction of the tool."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def versions(self) -> list[ToolSpec]:
        return list(self._inner.versions())

    def update(self, spec: ToolSpec) -> None:
        self._inner.update(spec)

    def append_audit(self, record: AuditRecord) -> None:
        self._inner.append_audit(record)


class _MemoryRolloutTx(_Delegating):
    def __init__(self, inner: Any, tool: str, rows: Mapping[tuple[str, int], tuple[Any, ...]]
                 ) -> None:
        super().__init__(inner)
        self._tool = tool
        self._rows = rows
        self.staged: dict[tuple[str, int], tuple[Any, ...]] = {}
        self.decisions: list[tuple[Any, ...]] = []

    def rollouts(self) -> list[Rollout]:
        merged = {**self._rows, **self.staged}
        return [rollout_from_row(merged[k]) for k in sorted(merged) if k[0] == self._tool]

    def insert_rollout(self, rollout: Rollout) -> None:
        key = (rollout.tool, rollout.started_us)
        if key in self._rows or key in self.staged or any(
                r.state in OPEN_STATES for r in self.rollouts()):
            raise StoreError(f"{rollout.tool} has a rollout not over", code="registry.conflict")
        self.staged[key] = row_of(rollout_params(rollout), ROLLOUT_COLUMNS)

    def replace_rollout(self, rollout: Rollout, expected_seq: int) -> bool:
        key = (rollout.tool, rollout.started_us)
        old = self.staged.get(key) or self._rows.get(key)
        if old is None or rollout_from_row(old).seq != expected_seq:
            return False
        self.staged[key] = row_of(rollout_params(rollout), ROLLOUT_COLUMNS)
        return True

    def add_decision(self, decision: RolloutDecision, started_us: int) -> None:
        self.decisions.append(row_of(decision_params(decision, started_us), DECISION_COLUMNS))


class MemoryRollouts:
    """Rollout rows in dictionaries (the host's ``_lock`` guards them; its ``change`` holds
    it across the transaction, so staged rows are applied before the host commits)."""

    _lock: threading.Lock
    change: Callable[[str], AbstractContextManager[Any]]

    def _init_rollouts(self) -> None:
        self._rollout_rows: dict[tuple[str, int], tuple[Any, ...]] = {}
        self._decision_rows: list[tuple[Any, ...]] = []

    @contextmanager
    def rollout_change(self, tool: str) -> Iterator[_MemoryRolloutTx]:
        with self.change(tool) as inner:
            tx = _MemoryRolloutTx(inner, tool, self._rollout_rows)
            yield tx
            self._rollout_rows.update(tx.staged)
            self._decision_rows.extend(tx.decisions)

    def rollouts(self, tool: str | None = None) -> tuple[Rollout, ...]:
        with self._lock:
            rows = [row for key, row in sorted(self._rollout_rows.items())
                    if tool is None or key[0] == tool]
        return tuple(rollout_from_row(row) for row in rows)

    def open_rollouts(self) -> tuple[Rollout, ...]:
        return tuple(r for r in self.rollouts() if r.state in OPEN_STATES)

    def rollout_decisions(self, tool: str, started_us: int) -> tuple[RolloutDecision, ...]:
        with self._lock:
            rows = [row for row in self._decision_rows if row[:2] == (tool, started_us)]
        return tuple(decision_from_row(row) for row in rows)

    def rollout_evaluation_lock(self) -> AbstractContextManager[bool]:
        return _local_lock(f"memory:{id(self)}")


class _SqlRolloutTx(_Delegating):
    def __init__(self, inner: Any, conn: Any, tool: str, sql: Callable[[str], str]) -> None:
        super().__init__(inner)
        self._conn = conn
        self._tool = tool
        self._sql = sql

    def rollouts(self) -> list[Rollout]:
        rows = self._conn.execute(self._sql(_OF_TOOL), {"tool": self._tool}).fetchall()
        return [rollout_from_row(tuple(row)) for row in rows]

    def insert_rollout(self, rollout: Rollout) -> None:
        self._conn.execute(self._sql(_INSERT), rollout_params(rollout))

    def replace_rollout(self, rollout: Rollout, expected_seq: int) -> bool:
        cur = self._conn.execute(self._sql(_UPDATE),
                                 {**rollout_params(rollout), "expected_seq": expected_seq})
        return bool(cur.rowcount == 1)

    def add_decision(self, decision: RolloutDecision, started_us: int) -> None:
        self._conn.execute(self._sql(_ADD_DECISION), decision_params(decision, started_us))


class _SqlRollouts:
    """The rollout reads of both SQL stores; a dialect supplies :meth:`_rollout_fetch` and
    the connection its change transaction runs on (``_conn``)."""

    _conn: Any  # the dialect's connection: each names its type
    change: Callable[[str], AbstractContextManager[Any]]
    _rollout_sql = staticmethod(_same)

    def _rollout_fetch(self, sql: str, params: Mapping[str, Any]) -> list[Any]:
        raise NotImplementedError

    @contextmanager
    def rollout_change(self, tool: str) -> Iterator[_SqlRolloutTx]:
        with self.change(tool) as inner:  # the host's transaction runs on its one connection
            yield _SqlRolloutTx(inner, self._conn, tool, self._rollout_sql)

    def rollouts(self, tool: str | None = None) -> tuple[Rollout, ...]:
        rows = (self._rollout_fetch(_ALL, {}) if tool is None
                else self._rollout_fetch(_OF_TOOL, {"tool": tool}))
        return tuple(rollout_from_row(tuple(row)) for row in rows)

    def open_rollouts(self) -> tuple[Rollout, ...]:
        return tuple(rollout_from_row(tuple(row)) for row in self._rollout_fetch(_OPEN, {}))

    def rollout_decisions(self, tool: str, started_us: int) -> tuple[RolloutDecision, ...]:
        rows = self._rollout_fetch(_DECISIONS, {"tool": tool, "started_us": started_us})
        return tuple(decision_from_row(tuple(row)) for row in rows)


class SQLiteRollouts(_SqlRollouts):
    """Rollout rows in the SQLite file (the host's ``_read`` transactions)."""

    path: Any
    _conn: sqlite3.Connection

    def _read(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def _rollout_fetch(self, sql: str, params: Mapping[str, Any]) -> list[Any]:
        with self._read() as conn:
            return list(conn.execute(sql, params).fetchall())

    @contextmanager
    def rollout_evaluation_lock(self) -> Iterator[bool]:
        with _local_lock(f"sqlite:{Path(self.path).resolve()}") as taken:
            if not taken or fcntl is None:
                yield taken
                return
            try:
                fd = os.open(f"{self.path}.rollouts.lock", os.O_RDWR | os.O_CREAT, 0o600)
            except OSError as exc:
                raise StoreError(f"cannot open the rollout evaluation lock beside {self.path}:"
                                 f" {exc.strerror}", code="registry.store") from None
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    yield False
                    return
                try:
                    yield True
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)


class PostgresRollouts(_SqlRollouts):
    """Rollout rows in PostgreSQL (the host's ``_transaction``), and the advisory lock."""

    url: str
    _lock: threading.Lock
    _conn: psycopg.Connection[Any]
    _rollout_sql = staticmethod(_pg)

    def _transaction(self, *, read_only: bool = False
                     ) -> AbstractContextManager[psycopg.Connection[Any]]:
        raise NotImplementedError

    def _live(self) -> psycopg.Connection[Any]:
        raise NotImplementedError

    def _rollout_fetch(self, sql: str, params: Mapping[str, Any]) -> list[Any]:
        with self._transaction(read_only=True) as conn:
            return list(conn.execute(_pg(sql), params).fetchall())

    @contextmanager
    def rollout_evaluation_lock(self) -> Iterator[bool]:
        with _local_lock(f"postgres:{self.url}:{id(self)}") as taken:
            if not taken:
                yield False
                return
            with self._transaction() as conn:  # autocommit session: the lock outlives it
                row = conn.execute("SELECT pg_try_advisory_lock(%s, 0)",
                                   (_EVALUATION_LOCK,)).fetchone()
            if not (row and row[0]):
                yield False
                return
            try:
                yield True
            finally:
                with self._lock, suppress(psycopg.Error):  # a lost session released it
                    self._live().execute("SELECT pg_advisory_unlock(%s, 0)",
                                         (_EVALUATION_LOCK,))
