"""The call log: one record per *dispatched* tool call (SPEC 3.4 step 4), and the refusal log
beside it: one :class:`RefusalRecord` per call refused before dispatch.

A call that fails the schema-version gate or argument validation never reaches the call log
(invariant 2); it is a refusal instead, told through :meth:`CallLog.refused` on the refusal
path only. Arguments are never stored, only the SHA-256 of their redacted canonical JSON; the
tool name and version a refused call asked for are kept as text, redacted
(:func:`~toolkeeper.contracts.redaction.redact_text`) and clipped (:func:`asked_text`).
"""

from __future__ import annotations

import hashlib
import threading
from collections import deque
from collections.abc import Mapping
from typing import Any, Final, Protocol

import msgspec

from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.contracts.redaction import redact, redact_text

__all__ = ["ASKED_TEXT_LIMIT", "CallLog", "CallRecord", "InMemoryCallLog", "RefusalRecord",
           "arguments_digest", "asked_text"]

ASKED_TEXT_LIMIT: Final = 256
"""The most characters of a refused call's tool name or version that are kept: a caller
chooses them, so a refusal never costs the log more than this for either."""


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
    rollout_step: int | None = None
    """The share (percent) of the step of the tool's rollout the call was routed under; None:
    no rollout routes the tool."""


def asked_text(value: object) -> str | None:
    """What a refused call asked for (its tool name, its pinned version) as it is kept: a
    string redacted and clipped to :data:`ASKED_TEXT_LIMIT` characters (a clipped one ends
    with ``…``); anything else (a name that is not a string, no version) None."""
    if type(value) is not str:
        return None
    if len(value) > ASKED_TEXT_LIMIT:
        value = value[:ASKED_TEXT_LIMIT - 1] + "\u2026"
    return redact_text(value)


class RefusalRecord(msgspec.Struct, frozen=True, gc=False):
    """One call refused before dispatch (docs/refusal-log.md lists the ``reason`` codes).
    ``tool`` and ``version``: as asked (:func:`asked_text`); ``tenant`` and ``credential``:
    the principal's, None before one is known (a failed authentication); ``era``:
    ``modern`` or ``legacy`` when known; ``arguments_digest``: as the call log's, when the
    call carried an arguments object; ``rollout_step``: the step (its share in percent) of the
    tool's rollout the gate judged the call under, None when none (or a limit refused it)."""

    reason: str
    tool: str | None = None
    version: str | None = None
    tenant: str | None = None
    credential: str | None = None
    era: str | None = None
    request_id: str | int | None = None
    arguments_digest: str | None = None
    rollout_step: int | None = None


class CallLog(Protocol):
    """Where dispatched calls are recorded: ``dispatched`` before the handler runs,
    ``completed`` after it, with the handle ``dispatched`` returned; and refused ones."""

    def dispatched(self, record: CallRecord) -> int: ...

    def completed(self, handle: int, outcome: str, latency_ms: float) -> None: ...

    def refused(self, record: RefusalRecord) -> None:
        """A ``tools/call`` refused before dispatch (or a request whose credential was
        refused). Never a call record (invariant 2): a refusal record, and a metric."""
        ...


class InMemoryCallLog:
    """The in-memory call log (thread-safe), bounded to the newest ``max_records`` entries;
    ``records`` are in dispatch order.

    A completion is stored beside its record and merged into it when ``records`` is read, so
    the per-call cost stays two dictionary writes (the log is written on every call and read
    rarely)."""

    def __init__(self, max_records: int = 100_000) -> None:
        self._records: dict[int, CallRecord] = {}  # insertion order is dispatch order
        self._refusals: deque[RefusalRecord] = deque(maxlen=max_records)
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

    @property
    def refusals(self) -> tuple[RefusalRecord, ...]:
        """The newest ``max_records`` refusals, oldest first."""
        with self._lock:
            return tuple(self._refusals)

    def refused(self, record: RefusalRecord) -> None:
        self._refusals.append(record)  # (a bounded deque: the oldest one goes)
