"""The call log stored as segments, on SQLite and PostgreSQL (the ``calls`` table, migration 3).

The recorder's flusher appends a batch of calls as ONE row, a segment: the batch's
:data:`~toolkeeper.registry.call_rows.CallValues` tuples encoded as one msgpack array
(``body``), their number (``call_count``), the least and greatest ``at`` among them (``at_min``,
``at_max``, both indexed) and ``seq``, the sequence number of the segment's last call: its
calls are numbered ``seq - call_count + 1`` to ``seq`` in the order appended, and the next segment
continues from the greatest ``seq`` stored (so a call's number is the one a row per call
would have had). A batch costs one bound blob and two small index entries instead of ten
values and an index entry per call.

Reading (``toolkeeper calls``) walks the segments newest first, those whose ``at_max`` is at
or after ``--since``, decodes each and filters its calls in Python, newest first, until
``limit``.

Retention: by age, segments wholly older than the bound are deleted, and a segment that
starts older has the run of older calls at its start cut; a call dispatched before the
bound but completed after a newer one stays until its segment goes (calls are appended in
completion order: at most the calls overlapping one call's latency), and reads filter by
``since`` exactly. By rows, the oldest segments are deleted while more than ``keep_rows``
calls are stored, and the oldest calls of the segment the bound falls in are cut. The newest
segment is emptied (``call_count = 0``), never deleted, so a number is never given twice.

A SQLite writer uses ``synchronous = NORMAL`` (the registry's database is in WAL mode: a
commit survives a process crash; power loss may undo the last ones). PostgreSQL writers take
an ``EXCLUSIVE`` lock on the table for the transaction, so concurrent gateways number their
segments one after the other (readers are not blocked).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any
from urllib.parse import quote

import msgspec

from toolkeeper.errors import StoreError
from toolkeeper.registry.call_query import CallQuery, CallRow, CallValues
from toolkeeper.registry.masking import masked

__all__ = ["PostgresCallRows", "SQLiteCallRows"]

_encode = msgspec.msgpack.Encoder().encode
_decode = msgspec.msgpack.Decoder(list[CallValues]).decode
_at = itemgetter(0)  # a row's at: min and max compare it alone, not whole rows

_APPEND = ("INSERT INTO calls (seq, call_count, at_min, at_max, body)"
           " VALUES (COALESCE((SELECT MAX(seq) FROM calls), 0) + ?, ?, ?, ?, ?)")


_SEGMENTS = 64  # segments read per query page


class _SegmentRows:
    """The call log as segments, over any DB-API connection whose ``execute`` returns a
    cursor (sqlite3's and psycopg's both do); subclasses run the work in a transaction."""

    _mark = "?"
    _lock_sql: str | None = None  # run first in a writing transaction (PostgreSQL: one writer)

    def _run(self, work: Callable[[Any], Any], write: bool = False) -> Any:
        raise NotImplementedError

    def _sql(self, text: str) -> str:
        return text.replace("?", self._mark)

    def _begin_write(self, conn: Any) -> None:
        if self._lock_sql is not None:
            conn.execute(self._lock_sql)

    def append(self, rows: Sequence[CallValues]) -> None:
        if not rows:
            return
        count = len(rows)
        ats = list(map(_at, rows))
        params = (count, count, min(ats), max(ats), _encode(rows))
        sql = self._sql(_APPEND)

        def work(conn: Any) -> None:
            self._begin_write(conn)
            conn.execute(sql, params)
        self._run(work, write=True)

    def prune(self, before: int | None, keep_rows: int | None) -> int:
        def work(conn: Any) -> int:
            self._begin_write(conn)
            dropped = 0
            if before is not None:
                dropped += self._prune_age(conn, before)
            if keep_rows is not None:
                dropped += self._prune_rows(conn, keep_rows)
            return dropped
        return int(self._run(work, write=True))

    def _prune_age(self, conn: Any, before: int) -> int:
        """Delete the segments wholly older than ``before`` (the newest one is emptied
        instead, so its ``seq`` is never reused), then cut from each segment that starts
        older the longest run of older rows at its start."""
        newest = conn.execute("SELECT MAX(seq) FROM calls").fetchone()[0]
        if newest is None:
            return 0
        old = self._sql("FROM calls WHERE at_max < ? AND seq < ?")
        dropped = int(conn.execute(f"SELECT COALESCE(SUM(call_count), 0) {old}",
                                   (before, newest)).fetchone()[0])
        conn.execute(f"DELETE {old}", (before, newest))
        straddling = conn.execute(self._sql(
            "SELECT seq, call_count, body FROM calls WHERE at_min < ? AND call_count > 0"),
            (before,)).fetchall()
        for seq, count, body in straddling:
            values = _decode(body)
            cut = 0
            while cut < count and values[cut][0] < before:
                cut += 1
            if cut:
                self._rewrite(conn, seq, values[cut:])
                dropped += cut
        return dropped

    def _prune_rows(self, conn: Any, keep: int) -> int:
        """Delete the oldest segments while more than ``keep`` rows are stored, and cut the
        oldest rows from the segment the bound falls in."""
        total = int(conn.execute("SELECT COALESCE(SUM(call_count), 0) FROM calls").fetchone()[0])
        excess = total - keep
        if excess <= 0:
            return 0
        whole = None  # the newest segment deleted whole
        left = excess
        for seq, count in conn.execute("SELECT seq, call_count FROM calls ORDER BY seq").fetchall():
            if count > left:
                break
            whole, left = seq, left - count
        if whole is not None:
            conn.execute(self._sql("DELETE FROM calls WHERE seq <= ?"), (whole,))
        if left:
            seq, body = conn.execute(self._sql(
                "SELECT seq, body FROM calls WHERE seq > ? ORDER BY seq LIMIT 1"),
                (-1 if whole is None else whole,)).fetchone()
            self._rewrite(conn, seq, _decode(body)[left:])
        return excess

    def _rewrite(self, conn: Any, seq: int, values: list[CallValues]) -> None:
        """Keep only ``values``, the newest rows of segment ``seq`` (whose seq stays its
        last row's)."""
        if values:
            ats = list(map(_at, values))
            bounds = (min(ats), max(ats))
            conn.execute(self._sql(
                "UPDATE calls SET call_count = ?, at_min = ?, at_max = ?, body = ? WHERE seq = ?"),
                (len(values), *bounds, _encode(values), seq))
        else:
            conn.execute(self._sql("UPDATE calls SET call_count = 0, body = ? WHERE seq = ?"),
                         (_encode(values), seq))

    def query(self, query: CallQuery) -> list[CallRow]:
        since = -(2**62) if query.since is None else query.since
        sql = self._sql("SELECT seq, call_count, body FROM calls WHERE at_max >= ? AND seq < ?"
                        f" ORDER BY seq DESC LIMIT {_SEGMENTS}")

        def work(conn: Any) -> list[CallRow]:
            found: list[CallRow] = []
            below = 2**62
            while True:
                page = conn.execute(sql, (since, below)).fetchall()
                for seq, count, body in page:
                    first = seq - count + 1
                    values = _decode(body)
                    for index in range(count - 1, -1, -1):
                        row = CallRow.of(values[index], first + index)
                        if query.matches(row):
                            found.append(row)
                            if len(found) >= query.limit:
                                return found
                if len(page) < _SEGMENTS:
                    return found
                below = page[-1][0]
        return list(self._run(work))


class SQLiteCallRows(_SegmentRows):
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

    def _run(self, work: Callable[[Any], Any], write: bool = False) -> Any:
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

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class PostgresCallRows(_SegmentRows):
    _mark = "%s"
    _lock_sql = "LOCK TABLE calls IN EXCLUSIVE MODE"

    def __init__(self, url: str, read_only: bool) -> None:
        import psycopg

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

    def _run(self, work: Callable[[Any], Any], write: bool = False) -> Any:
        with self._lock:
            try:
                if self._conn.closed or self._conn.broken:
                    self._conn = self._psycopg.connect(self._url, autocommit=True,
                                                       connect_timeout=10)
                with self._conn.transaction():
                    return work(self._conn)
            except self._psycopg.Error as exc:
                raise self._error(exc) from None

    def close(self) -> None:
        with self._lock:
            self._conn.close()
