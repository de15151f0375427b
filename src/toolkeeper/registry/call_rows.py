"""The durable call log's table (``calls``, migration 3) on SQLite and PostgreSQL.

A :class:`CallRows` owns its own connection to the registry's database, apart from the
registry store's, so the call log's background writer never waits on (or holds) the lock a
request's registry read takes. It appends batches, prunes by age and row count, and answers
filtered queries for ``toolkeeper calls``. :func:`open_call_rows` opens the store the URL names
first (so the URL is checked, and the database recognised and migrated, exactly as the registry
does it), then connects beside it. ``memory:`` has no table: its rows live in the process.

Rows are written as :data:`CallValues`, plain tuples in column order, built once by the
recorder's flusher: ``at`` is an integer of microseconds since the epoch (UTC; compared as a
number, formatted as text only when read, :func:`at_text`), and a missing credential or
request id is the empty string, read back as ``None`` (neither is ever empty: a credential id
is a key id, ``iss#sub`` or ``stdio``, a request id is JSON text). The SQL backends store each
appended batch as one row, a segment (:mod:`toolkeeper.registry.call_segments`). The row and
query values live in :mod:`toolkeeper.registry.call_query`, below both.

The refusal log (:class:`RefusalRows`, the ``refusals`` table, migration 5) is kept the same
way beside it, opened by :func:`open_refusal_rows`; its values live in
:mod:`toolkeeper.registry.refusal_query`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from toolkeeper.registry.call_query import CallQuery, CallRow, CallValues, at_text
from toolkeeper.registry.call_segments import (
    PostgresCallRows,
    PostgresRefusalRows,
    SQLiteCallRows,
    SQLiteRefusalRows,
)
from toolkeeper.registry.location import open_store
from toolkeeper.registry.refusal_query import RefusalQuery, RefusalRow, RefusalValues

__all__ = ["CallQuery", "CallRow", "CallRows", "CallValues", "MemoryCallRows",
           "MemoryRefusalRows", "RefusalQuery", "RefusalRow", "RefusalRows", "RefusalValues",
           "at_text", "open_call_rows", "open_refusal_rows"]

_V = TypeVar("_V", bound=tuple[Any, ...])
_R = TypeVar("_R", CallRow, RefusalRow)


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


class RefusalRows(Protocol):
    """Where the refusal log's rows are kept (as :class:`CallRows`, with refusals)."""

    def append(self, rows: Sequence[RefusalValues]) -> None: ...

    def prune(self, before: int | None, keep_rows: int | None) -> int: ...

    def query(self, query: RefusalQuery) -> list[RefusalRow]: ...

    def close(self) -> None: ...


class _MemoryRows(Generic[_V, _R]):
    """The in-process twin of a log (``memory:`` registries and tests)."""

    def __init__(self, of: Callable[[_V, int], _R]) -> None:
        self._of: Callable[[_V, int], _R] = of
        self._rows: list[_R] = []
        self._lock = threading.Lock()

    def append(self, rows: Sequence[_V]) -> None:
        with self._lock:
            seq = self._rows[-1].seq if self._rows else 0
            for offset, values in enumerate(rows, 1):
                self._rows.append(self._of(values, seq + offset))

    def prune(self, before: int | None, keep_rows: int | None) -> int:
        with self._lock:
            kept = [r for r in self._rows if before is None or r.at_us >= before]
            if keep_rows is not None:
                kept = kept[max(0, len(kept) - keep_rows):]
            dropped = len(self._rows) - len(kept)
            self._rows = kept
            return dropped

    def close(self) -> None:
        pass


class MemoryCallRows(_MemoryRows[CallValues, CallRow]):
    """The call log's in-process twin."""

    def __init__(self) -> None:
        super().__init__(CallRow.of)

    def query(self, query: CallQuery) -> list[CallRow]:
        with self._lock:
            found = [r for r in reversed(self._rows) if query.matches(r)]
        return found[:query.limit]


class MemoryRefusalRows(_MemoryRows[RefusalValues, RefusalRow]):
    """The refusal log's in-process twin."""

    def __init__(self) -> None:
        super().__init__(RefusalRow.of)

    def query(self, query: RefusalQuery) -> list[RefusalRow]:
        with self._lock:
            found = [r for r in reversed(self._rows) if query.matches(r)]
        return found[:query.limit]


def _beside(store: object, read_only: bool) -> CallRows:
    """The call rows in the database ``store`` (an opened registry store) keeps."""
    path = getattr(store, "path", None)
    if path is not None:
        return SQLiteCallRows(str(path), read_only)
    url = getattr(store, "url", None)
    if isinstance(url, str):
        return PostgresCallRows(url, read_only)
    return MemoryCallRows()


def _refusals_beside(store: object, read_only: bool) -> RefusalRows:
    path = getattr(store, "path", None)
    if path is not None:
        return SQLiteRefusalRows(str(path), read_only)
    url = getattr(store, "url", None)
    if isinstance(url, str):
        return PostgresRefusalRows(url, read_only)
    return MemoryRefusalRows()


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


def open_refusal_rows(url: str | None, *, read_only: bool = False) -> RefusalRows:
    """The refusal log of the registry at ``url``, opened as :func:`open_call_rows` opens the
    call log (``registry.schema_outdated`` when reading one not yet migrated to it)."""
    store = open_store(url, create=False, read_only=read_only)
    try:
        return _refusals_beside(store, read_only)
    finally:
        store.close()
