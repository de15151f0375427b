"""The call log: one record per *dispatched* tool call (SPEC 3.4 step 4).

A call that fails the schema-version gate or argument validation never reaches the log
(invariant 2). Arguments are never stored, only the SHA-256 of their redacted canonical JSON.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping
from typing import Any, Protocol

import msgspec

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.redaction import redact

__all__ = ["CallLog", "CallRecord", "InMemoryCallLog", "arguments_digest"]


def arguments_digest(arguments: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of the canonical JSON of the arguments, redacted first (SPEC 3.4.4 and
    5.6: a password or a token does not change the digest, so the log cannot be used to guess
    one)."""
    data, _ = redact(arguments if type(arguments) is dict else dict(arguments))
    return "sha256:" + hashlib.sha256(canonical_json(data)).hexdigest()


class CallRecord(msgspec.Struct, frozen=True, gc=False):
    """One dispatched call. ``outcome`` is None while the handler runs, then ``ok``, ``error``
    (an ``isError`` result), ``exception`` (the handler raised, or returned what is not a
    result), ``invalid_output`` (its structured content broke the output schema),
    ``protocol_error`` (the handler raised a JSON-RPC error), ``cancelled`` or ``timeout``
    (the handler ran past its call timeout and was cancelled) or ``input_required`` (a modern
    round ended with questions for the caller; its retry is a record of its own); ``latency_ms``
    is set with it. (An immutable
    msgspec Struct, like a frozen dataclass but cheaper to build: one is built per call. Its
    fields are strings and numbers, which cannot form cycles, so the garbage collector need not
    track the up to 100,000 records a log keeps.)"""

    tool: str
    version: str
    principal: str
    arguments_digest: str
    era: str
    outcome: str | None = None
    latency_ms: float | None = None
    credential: str | None = None  # the principal's credential id (a key id, ``iss#sub``)
    request_id: str | int | None = None


class CallLog(Protocol):
    """Where dispatched calls are recorded: ``dispatched`` before the handler runs,
    ``completed`` after it, with the handle ``dispatched`` returned."""

    def dispatched(self, record: CallRecord) -> int: ...

    def completed(self, handle: int, outcome: str, latency_ms: float) -> None: ...

    def refused(self, reason: str) -> None:
        """A ``tools/call`` refused before dispatch: the schema gate's ``reason`` (or
        ``unknown_tool``, ``invalid_params``). Never a record (invariant 2); for metrics."""
        ...

    def invalid(self, tool: str, version: str) -> None:
        """A ``tools/call`` whose arguments failed validation (never a record either)."""
        ...


class InMemoryCallLog:
    """The in-memory call log (thread-safe), bounded to the newest ``max_records`` entries;
    ``records`` are in dispatch order.

    A completion is stored beside its record and merged into it when ``records`` is read, so
    the per-call cost stays two dictionary writes (the log is written on every call and read
    rarely)."""

    def __init__(self, max_records: int = 100_000) -> None:
        self._records: dict[int, CallRecord] = {}  # insertion order is dispatch order
        self._done: dict[int, tuple[str, float]] = {}
        self._next = 0
        self._max = max_records
        self._lock = threading.Lock()

    @property
    def records(self) -> tuple[CallRecord, ...]:
        with self._lock:
            done = self._done
            return tuple(
                record if handle not in done
                else msgspec.structs.replace(record, outcome=done[handle][0],
                                             latency_ms=done[handle][1])
                for handle, record in self._records.items())

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def dispatched(self, record: CallRecord) -> int:
        with self._lock:
            handle = self._next
            self._next = handle + 1
            records = self._records
            records[handle] = record
            if len(records) > self._max:
                dropped = handle - self._max  # handles are consecutive: the oldest one
                del records[dropped]
                self._done.pop(dropped, None)
            return handle

    def completed(self, handle: int, outcome: str, latency_ms: float) -> None:
        with self._lock:
            if handle in self._records:
                self._done[handle] = (outcome, latency_ms)

    def refused(self, reason: str) -> None:
        """Not recorded here (see :class:`CallLog`)."""

    def invalid(self, tool: str, version: str) -> None:
        """Not recorded here (see :class:`CallLog`)."""
