"""The call recorder: the gateway's call log when calls are kept durably, counted or traced.

A call costs a dictionary write on its path when dispatched (its record and start time, by
handle) and, when completed, that entry's removal and one ``deque.append`` of it with the
outcome and latency; nothing else: no lock, no I/O, no metric. One background thread, the
flusher, wakes every ``flush_interval_ms`` (sooner once ``max_batch`` calls were dispatched
since it last woke), drains the deque and hands the completed calls to the sinks: Prometheus
counters and histograms, OpenTelemetry spans (built after the fact with the call's own start
and end times), and the durable :class:`~toolkeeper.registry.call_rows.CallRows` (in batches
of at most ``max_batch`` rows, one transaction and one stored segment each). A metrics scrape
drains first (:meth:`CallRecorder.drain`), so a scrape counts every call answered before it.

What a crash loses: the calls completed since the flusher last wrote, at most one
``flush_interval_ms`` window (plus the time the write itself takes), and the calls still
running. A write that fails (the database is unreachable) is logged and retried on the next
wake, holding at most ``100 * max_batch`` rows; beyond that the oldest are dropped and
counted. Retention (rows older than ``retention_days``, all but the newest
``retention_rows``) is applied by the flusher once a minute (by age, a few rows completed
after a newer one may outlive the bound: :mod:`toolkeeper.registry.call_segments`).

Refusals (calls refused before dispatch, :class:`~toolkeeper.server.calllog.RefusalRecord`)
take the same way on their own path: one ``deque.append`` of the record and its time, the
sinks' counters, nothing else; the flusher writes them to the durable
:class:`~toolkeeper.registry.call_rows.RefusalRows` in the same batches, with the same
retention. Their buffer is bounded: at most ``100 * max_batch`` refusals wait to be written
(queued, or held across failing writes); past that the oldest are dropped, counted in
``refusals_dropped`` and said in one WARNING per flush, so a refusal flood costs a bounded
amount of memory whatever the database does. The flusher also wakes each time ``max_batch``
refusals are queued.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

import msgspec

from toolkeeper.registry.call_rows import CallRows, CallValues, RefusalRows, RefusalValues
from toolkeeper.server.calllog import CallRecord, RefusalRecord

__all__ = ["CallRecorder", "CallSink"]

_log = logging.getLogger("toolkeeper.calllog")

_PRUNE_EVERY_S = 60.0
_HELD_BATCHES = 100  # rows held across failing writes: this many batches
_json = msgspec.json.encode
_UNCOUNTED = frozenset({"rate_limited", "concurrency_limited", "capability_required"})
"""Refusals the sinks' gate-refusal count leaves out (authentication refusals too: the
``auth.`` reasons, counted where they happen, ``observe_auth_refusal``)."""
_COUNTED_AS = {"unentitled_tool": "unknown_tool", "retired_tool": "unknown_tool",
               "unavailable_tool": "unknown_tool",
               "unentitled_version": "schema_version_unknown"}
"""The gate-refusal count keeps the wire's reasons: the refusal log's finer ones, as sent."""


class CallSink(Protocol):
    """Something told of every completed call, from the flusher thread (or a scrape)."""

    def completed(self, record: CallRecord, at_ns: int, outcome: str,
                  latency_ms: float) -> None: ...

    def refused(self, reason: str) -> None: ...

    def invalid(self, tool: str, version: str) -> None: ...


class CallRecorder:
    """A :class:`~toolkeeper.server.calllog.CallLog`: see the module docstring. ``rows``:
    where completed calls are stored (None: not stored); ``sinks``: who else is told."""

    def __init__(self, rows: CallRows | None, sinks: Sequence[CallSink] = (), *,
                 flush_interval_ms: int = 200, max_batch: int = 1000,
                 retention_days: int = 30, retention_rows: int = 1_000_000,
                 clock_ns: Callable[[], int] = time.time_ns,
                 refusal_rows: RefusalRows | None = None) -> None:
        self._rows = rows
        self._refusal_rows = refusal_rows
        self._refusal_cap = max_batch * _HELD_BATCHES
        self._refusals: deque[tuple[RefusalRecord, int]] = deque(maxlen=self._refusal_cap)
        self._ready_refusals: list[RefusalValues] = []
        self.refusals_dropped = 0
        self._refusals_said = 0
        self._sinks = tuple(sinks)
        self._interval = flush_interval_ms / 1000.0
        self._max_batch = max_batch
        self._retention_days = retention_days
        self._retention_rows = retention_rows
        self._clock_ns = clock_ns
        self._handles = itertools.count()
        self._open: dict[int, tuple[CallRecord, int]] = {}  # running calls, by handle
        self._done: deque[tuple[tuple[CallRecord, int] | None, str, float]] = deque()
        self._ready: list[CallValues] = []
        self._drain_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = False
        self._pruned_at = 0.0
        self.dropped = 0
        self._thread: threading.Thread | None = None

    # --- the call's path -------------------------------------------------------------------

    def dispatched(self, record: CallRecord) -> int:
        handle = next(self._handles)
        self._open[handle] = (record, self._clock_ns())
        if handle % self._max_batch == self._max_batch - 1:
            self._wake.set()
        return handle

    def completed(self, handle: int, outcome: str, latency_ms: float) -> None:
        self._done.append((self._open.pop(handle, None), outcome, latency_ms))

    def refused(self, record: RefusalRecord) -> None:
        reason = record.reason
        if reason == "invalid_arguments":
            for sink in self._sinks:
                sink.invalid(record.tool or "", record.version or "")
        elif reason not in _UNCOUNTED and not reason.startswith("auth."):
            reason = _COUNTED_AS.get(reason, reason)
            for sink in self._sinks:
                sink.refused(reason)
        if self._refusal_rows is None:
            return
        refusals = self._refusals
        if len(refusals) == self._refusal_cap:
            self.refusals_dropped += 1  # the append below pushes the oldest out
        refusals.append((record, self._clock_ns()))
        if len(refusals) % self._max_batch == 0:
            self._wake.set()

    # --- the flusher -----------------------------------------------------------------------

    def start(self) -> None:
        """Start the flusher thread (idempotent)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="toolkeeper-calllog",
                                            daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the flusher, writing what is pending; then close the rows (idempotent)."""
        self._stopping = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        self.flush()
        if self._rows is not None:
            self._rows.close()
            self._rows = None
        if self._refusal_rows is not None:
            self._refusal_rows.close()
            self._refusal_rows = None

    def _loop(self) -> None:
        while not self._stopping:
            self._wake.wait(self._interval)
            self._wake.clear()
            try:
                self.flush()
            except Exception:  # never let the flusher die: the next wake retries
                _log.exception("call log: flush failed")

    def drain(self) -> None:
        """Tell the sinks of the completed calls queued and make their rows, and the rows of
        the refusals queued (thread-safe)."""
        with self._drain_lock:
            self._drain_refusals()
            done, keep = self._done, self._rows is not None
            tell = [sink.completed for sink in self._sinks]
            add = self._ready.append
            for _ in range(len(done)):
                started, outcome, latency_ms = done.popleft()
                if started is None:  # completed twice, or never dispatched here
                    continue
                record, at_ns = started
                for completed in tell:
                    completed(record, at_ns, outcome, latency_ms)
                if keep:
                    rid = record.request_id
                    add((at_ns // 1000, record.principal, record.credential or "", record.tool,
                         record.version, record.era, record.arguments_digest, outcome,
                         latency_ms, "" if rid is None else str(rid) if type(rid) is int
                         else _json(rid).decode(), record.rollout_step))

    def _drain_refusals(self) -> None:
        """The queued refusals as rows (under the drain lock)."""
        if self._refusal_rows is None:
            return
        queued, add = self._refusals, self._ready_refusals.append
        for _ in range(len(queued)):
            record, at_ns = queued.popleft()
            rid = record.request_id
            add((at_ns // 1000, record.tenant, record.credential, record.tool, record.version,
                 record.reason, record.era,
                 None if rid is None else str(rid) if type(rid) is int else _json(rid).decode(),
                 record.arguments_digest, record.rollout_step))
        excess = len(self._ready_refusals) - self._refusal_cap
        if excess > 0:  # held across failing writes: the newest are kept
            self.refusals_dropped += excess
            del self._ready_refusals[:excess]

    def flush(self) -> None:
        """Drain, then write the completed calls and the refusals in batches (and prune when
        it is time)."""
        self.drain()
        with self._write_lock:
            self._flush_refusals()
            rows = self._rows
            if rows is None:
                return
            with self._drain_lock:
                pending, self._ready = self._ready, []
            written = 0
            try:
                while written < len(pending):
                    rows.append(pending[written:written + self._max_batch])
                    written = min(len(pending), written + self._max_batch)
                self._prune(rows)
            except Exception as exc:
                _log.warning("call log: writing %d rows failed (%s); retrying",
                             len(pending) - written, getattr(exc, "code", type(exc).__name__))
                self._hold(pending[written:])

    def _flush_refusals(self) -> None:
        """Write the refusal rows made (under the write lock); on a failure, hold the rest
        for the next flush (bounded by :meth:`_drain_refusals`)."""
        rows = self._refusal_rows
        if rows is None:
            return
        with self._drain_lock:
            pending, self._ready_refusals = self._ready_refusals, []
        written = 0
        try:
            while written < len(pending):
                rows.append(pending[written:written + self._max_batch])
                written = min(len(pending), written + self._max_batch)
        except Exception as exc:
            _log.warning("refusal log: writing %d rows failed (%s); retrying",
                         len(pending) - written, getattr(exc, "code", type(exc).__name__))
            with self._drain_lock:
                self._ready_refusals = pending[written:] + self._ready_refusals
        dropped = self.refusals_dropped
        if dropped != self._refusals_said:
            _log.warning("refusal log: %d refusals dropped in all: more than %d waited to be "
                         "written", dropped, self._refusal_cap)
            self._refusals_said = dropped

    def _hold(self, unwritten: list[CallValues]) -> None:
        with self._drain_lock:
            held = unwritten + self._ready
            cap = self._max_batch * _HELD_BATCHES
            if len(held) > cap:
                self.dropped += len(held) - cap
                held = held[len(held) - cap:]
            self._ready = held

    def _prune(self, rows: CallRows) -> None:
        now = time.monotonic()
        if now - self._pruned_at < _PRUNE_EVERY_S:
            return
        self._pruned_at = now
        before = ((self._clock_ns() // 1000 - self._retention_days * 86_400 * 10**6)
                  if self._retention_days else None)
        keep = self._retention_rows or None
        if before is not None or keep is not None:
            rows.prune(before, keep)
            if self._refusal_rows is not None:
                self._refusal_rows.prune(before, keep)
