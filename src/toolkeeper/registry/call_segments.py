"""The call log stored as segments, on SQLite and PostgreSQL (the ``calls`` table, migration 3),
and the refusal log in the same form (the ``refusals`` table, migration 5: its rows are
:data:`~toolkeeper.registry.refusal_query.RefusalValues`; everything below holds for it too).

The recorder's flusher appends a batch of calls as ONE row, a segment: the batch's
:data:`~toolkeeper.registry.call_rows.CallValues` tuples encoded as one msgpack array
(``body``), their number (``call_count``), the least and greatest ``at`` among them (``at_min``,
``at_max``, both indexed) and ``seq``, the sequence number of the segment's last call: its
calls are numbered ``seq - call_count + 1`` to ``seq`` in the order appended, and the next segment
continues from the greatest ``seq`` stored (so a call's number is the one a row per call
would have had). A batch costs one bound blob and two small index entries instead of ten
values and an index entry per call. ``layout`` (migration 10) tells the rows' form: 1, each row
ends with the rollout step that served the call; 0, a segment written before, whose rows are
read with that value None (a segment rewritten by retention is written in layout 1).

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
from typing import Any, Generic, Protocol, TypeVar
from urllib.parse import quote

import msgspec

from toolkeeper.errors import StoreError
from toolkeeper.registry.call_query import CallRow, CallValues
from toolkeeper.registry.masking import masked
from toolkeeper.registry.refusal_query import RefusalRow, RefusalValues

__all__ = ["PostgresCallRows", "PostgresRefusalRows", "SQLiteCallRows", "SQLiteRefusalRows"]

_encode = msgspec.msgpack.Encoder().encode
_at = itemgetter(0)  # a row's at: min and max compare it alone, not whole rows

_APPEND = ("INSERT INTO {t} (seq, call_count, at_min, at_max, body, layout)"
           " VALUES (COALESCE((SELECT MAX(seq) FROM {t}), 0) + ?, ?, ?, ?, ?, 1)")


_SEGMENTS = 64  # segments read per query page

_V = TypeVar("_V", bound=tuple[Any, ...])  # a row as written, ``at`` first
_R = TypeVar("_R")  # a row as read
_R_contra = TypeVar("_R_contra", contravariant=True)


class _Query(Protocol[_R_contra]):
    """A filter over rows (:class:`CallQuery`, :class:`RefusalQuery`)."""

    @property
    def since(self) -> int | None: ...
    @property
    def limit(self) -> int: ...
    def matches(self, row: _R_contra) -> bool: ...


class _SegmentRows(Generic[_V, _R]):
    """A log as segments in ``_table``, over any DB-API connection whose ``execute`` returns
    a cursor (sqlite3's and psycopg's both do); subclasses run the work in a transaction. The
    call log's table is ``calls``, the refusal log's ``refusals``: the same columns, rows of
    their own values."""

    _mark = "?"
    _table = "calls"
    _what = "call log"
    _decode: Callable[[bytes], list[_V]]
    _decode_before: Callable[[bytes], list[tuple[Any, ...]]]
    """Layout 0's rows: one value fewer (no rollout step)."""
    _of: Callable[[_V, int], _R]

    def _values(self, layout: int, body: bytes) -> list[_V]:
        """A segment's rows, each with its rollout step (None in layout 0)."""
        if layout:
            return self._decode(body)
        return [(*row, None) for row in self._decode_before(body)]  # type: ignore[misc]

    @property
    def _lock_sql(self) -> str | None:
        """Run first in a writing transaction (PostgreSQL: one writer)."""
        return None

    def _run(self, work: Callable[[Any], Any], write: bool = False) -> Any:
        raise NotImplementedError

    def _sql(self, text: str) -> str:
        return text.replace("{t}", self._table).replace("?", self._mark)

    def _begin_write(self, conn: Any) -> None:
        lock = self._lock_sql
        if lock is not None:
            conn.execute(lock)

    def append(self, rows: Sequence[_V]) -> None:
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
        newest = conn.execute(self._sql("SELECT MAX(seq) FROM {t}")).fetchone()[0]
        if newest is None:
            return 0
        old = self._sql("FROM {t} WHERE at_max < ? AND seq < ?")
        dropped = int(conn.execute(f"SELECT COALESCE(SUM(call_count), 0) {old}",
                                   (before, newest)).fetchone()[0])
        conn.execute(f"DELETE {old}", (before, newest))
        straddling = conn.execute(self._sql(
            "SELECT seq, call_count, body, layout FROM {t} WHERE at_min < ? AND call_count > 0"),
            (before,)).fetchall()
        for seq, count, body, layout in straddling:
            values = self._values(layout, body)
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
        total = int(conn.execute(self._sql("SELECT COALESCE(SUM(call_count), 0) FROM {t}"))
                    .fetchone()[0])
        excess = total - keep
        if excess <= 0:
            return 0
        whole = None  # the newest segment deleted whole
        left = excess
        for seq, count in conn.execute(
                self._sql("SELECT seq, call_count FROM {t} ORDER BY seq")).fetchall():
            if count > left:
                break
            whole, left = seq, left - count
        if whole is not None:
            conn.execute(self._sql("DELETE FROM {t} WHERE seq <= ?"), (whole,))
        if left:
            seq, body, layout = conn.execute(self._sql(
                "SELECT seq, body, layout FROM {t} WHERE seq > ? ORDER BY seq LIMIT 1"),
                (-1 if whole is None else whole,)).fetchone()
            self._rewrite(conn, seq, self._values(layout, body)[left:])
        return excess

    def _rewrite(self, conn: Any, seq: int, values: list[_V]) -> None:
        """Keep only ``values``, the newest rows of segment ``seq`` (whose seq stays its
        last row's)."""
        if values:
            ats = list(map(_at, values))
            bounds = (min(ats), max(ats))
            conn.execute(self._sql(
                "UPDATE {t} SET call_count = ?, at_min = ?, at_max = ?, body = ?, layout = 1"
                " WHERE seq = ?"),
                (len(values), *bounds, _encode(values), seq))
        else:
            conn.execute(self._sql(
                "UPDATE {t} SET call_count = 0, body = ?, layout = 1 WHERE seq = ?"),
                         (_encode(values), seq))

    def query(self, query: _Query[_R]) -> list[_R]:
        since = -(2**62) if query.since is None else query.since
        sql = self._sql("SELECT seq, call_count, body, layout FROM {t}"
                        f" WHERE at_max >= ? AND seq < ? ORDER BY seq DESC LIMIT {_SEGMENTS}")
        values_of, of = self._values, self._of

        def work(conn: Any) -> list[_R]:
            found: list[_R] = []
            below = 2**62
            while True:
                page = conn.execute(sql, (since, below)).fetchall()
                for seq, count, body, layout in page:
                    first = seq - count + 1
                    values = values_of(layout, body)
                    for index in range(count - 1, -1, -1):
                        row = of(values[index], first + index)
                        if query.matches(row):
                            found.append(row)
                            if len(found) >= query.limit:
                                return found
                if len(page) < _SEGMENTS:
                    return found
                below = page[-1][0]
        return list(self._run(work))


class _SQLiteSegments(_SegmentRows[_V, _R]):
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
        return StoreError(f"the {self._what} in {self._path} failed: {exc}",
                          code="calllog.store")

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


class _PostgresSegments(_SegmentRows[_V, _R]):
    _mark = "%s"

    @property
    def _lock_sql(self) -> str | None:
        return f"LOCK TABLE {self._table} IN EXCLUSIVE MODE"

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
        return StoreError(f"the {self._what} failed: {self._masked(str(exc), self._url)}",
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


_decode_calls = msgspec.msgpack.Decoder(list[CallValues]).decode
_decode_refusals = msgspec.msgpack.Decoder(list[RefusalValues]).decode
_decode_calls_before = msgspec.msgpack.Decoder(
    list[tuple[int, str, str, str, str, str, str, str, float, str]]).decode
_decode_refusals_before = msgspec.msgpack.Decoder(
    list[tuple[int, str | None, str | None, str | None, str | None, str, str | None, str | None,
               str | None]]).decode


class SQLiteCallRows(_SQLiteSegments[CallValues, CallRow]):
    """The call log (``calls``) on SQLite."""

    _decode = staticmethod(_decode_calls)
    _decode_before = staticmethod(_decode_calls_before)
    _of = staticmethod(CallRow.of)


class PostgresCallRows(_PostgresSegments[CallValues, CallRow]):
    """The call log (``calls``) on PostgreSQL."""

    _decode = staticmethod(_decode_calls)
    _decode_before = staticmethod(_decode_calls_before)
    _of = staticmethod(CallRow.of)


class SQLiteRefusalRows(_SQLiteSegments[RefusalValues, RefusalRow]):
    """The refusal log (``refusals``) on SQLite."""

    _table = "refusals"
    _what = "refusal log"
    _decode = staticmethod(_decode_refusals)
    _decode_before = staticmethod(_decode_refusals_before)
    _of = staticmethod(RefusalRow.of)


class PostgresRefusalRows(_PostgresSegments[RefusalValues, RefusalRow]):
    """The refusal log (``refusals``) on PostgreSQL."""

    _table = "refusals"
    _what = "refusal log"
    _decode = staticmethod(_decode_refusals)
    _decode_before = staticmethod(_decode_refusals_before)
    _of = staticmethod(RefusalRow.of)
