"""Raw exchanges: exact bytes and headers out, everything that came back in, judged by nobody.

The conformance harness replays transcripts through this (it opens no connection of its own;
STYLE "The next floors"): a :class:`RawRequest` carries the body bytes as the transcript holds
them (a malformed body included), the headers in order (a duplicated header included) and the
HTTP method; a :class:`RawAnswer` records the status, headers, every JSON-RPC message received
in order (the JSON body, each server-sent event, or each stdio line), whether the answer came
as events and whether its stream ended. Unlike :meth:`~toolkeeper.client.transport.Transport.
exchange`, no status is turned into an error and an undecodable body is recorded, not raised.

stdio has no status and no headers, and a notification (or a malformed line) may get no answer
at all, so a stdio raw exchange writes a *barrier* request after the line and waits for its
answer: whatever the server said about the line came before it (the line's own answer too,
unless the server answers out of order, which the exchange also waits for when the line is a
request).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from toolkeeper.errors import JsonRpcError
from toolkeeper.protocol.envelope import decode_message
from toolkeeper.protocol.sse_events import SseDecoder

__all__ = ["EventLog", "RawAnswer", "RawRequest", "RawTransport", "as_raw", "is_answer",
           "read_events", "settled", "without_barrier"]


@dataclass(frozen=True)
class RawRequest:
    """What to send: ``body`` bytes (one line on stdio), ``headers`` as ordered pairs (HTTP
    only), the HTTP ``http_method``; ``awaits_answer`` when the body is a request whose answer
    ends the exchange; ``stop_after`` ends a stream that never ends by itself (a listen
    stream) after that many messages; ``barrier`` is the stdio request described above."""

    body: bytes
    headers: tuple[tuple[str, str], ...] = ()
    http_method: str = "POST"
    awaits_answer: bool = True
    stop_after: int | None = None
    barrier: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class RawAnswer:
    """What came back. ``status`` None and ``headers`` empty on stdio; ``body`` the bytes of
    a plain (non-event) HTTP body; ``messages`` in arrival order; ``reads`` for each message
    the index of the body read that completed it (events that all completed in the last read
    arrived together); ``ended`` False when the reader stopped a stream still open."""

    status: int | None
    headers: Mapping[str, str]
    messages: tuple[Any, ...]
    body: bytes = b""
    streamed: bool = False
    ended: bool = True
    undecodable: bool = False
    reads: tuple[int, ...] = ()


class RawTransport(Protocol):
    """A transport that can replay raw requests (HTTP, the in-process twin, stdio)."""

    async def send_raw(self, request: RawRequest, *, timeout: float, max_bytes: int
                       ) -> RawAnswer:
        """Send ``request``; return what came back within ``timeout`` seconds."""
        ...


def as_raw(transport: object) -> RawTransport | None:
    """``transport`` as a :class:`RawTransport` when it can replay raw requests."""
    if callable(getattr(transport, "send_raw", None)):
        return transport  # type: ignore[return-value]  # checked structurally just above
    return None


def is_answer(message: object, barrier_id: object = None) -> bool:
    """Whether ``message`` is a response (no ``method``) other than the barrier's answer."""
    if not isinstance(message, dict) or "method" in message:
        return False
    got = message.get("id")
    return barrier_id is None or not (type(got) is type(barrier_id) and got == barrier_id)


def settled(messages: Sequence[Any], request: RawRequest) -> bool:
    """Whether a stdio raw exchange has everything it waits for (the barrier's answer is
    among ``messages``)."""
    barrier_id = None if request.barrier is None else request.barrier.get("id")
    if barrier_id is not None and not any(
            isinstance(m, dict) and "method" not in m and type(m.get("id")) is type(barrier_id)
            and m.get("id") == barrier_id for m in messages):
        return False
    own = [m for m in messages if not _is_barrier_answer(m, barrier_id)]
    if request.stop_after is not None and len(own) >= request.stop_after:
        return True
    return not request.awaits_answer or any(is_answer(m, barrier_id) for m in own)


def _is_barrier_answer(message: object, barrier_id: object) -> bool:
    return barrier_id is not None and isinstance(message, dict) and "method" not in message \
        and type(message.get("id")) is type(barrier_id) and message.get("id") == barrier_id


def without_barrier(messages: Sequence[Any], request: RawRequest) -> tuple[Any, ...]:
    barrier_id = None if request.barrier is None else request.barrier.get("id")
    return tuple(m for m in messages if not _is_barrier_answer(m, barrier_id))


@dataclass
class EventLog:
    """An event stream as read so far (kept by the caller, so a stream that outlives its
    bound still shows what it sent)."""

    messages: list[Any] = field(default_factory=list)
    reads: list[int] = field(default_factory=list)
    ended: bool = False
    undecodable: bool = False

    def answer(self, status: int, headers: Mapping[str, str]) -> RawAnswer:
        return RawAnswer(status, headers, tuple(self.messages), streamed=True,
                         ended=self.ended, undecodable=self.undecodable,
                         reads=tuple(self.reads))


def _take(log: EventLog, data: str, index: int) -> bool:
    try:
        log.messages.append(decode_message(data))
    except JsonRpcError:
        log.undecodable = True
        return False
    log.reads.append(index)
    return True


async def read_events(chunks: AsyncIterator[bytes], stop_after: int | None, log: EventLog
                      ) -> None:
    """Decode an event stream into ``log`` until it ends, an event is not JSON, or
    ``stop_after`` messages arrived. Reading goes on after the response: whether the stream
    ends after it is part of what is recorded."""
    decoder = SseDecoder()
    index = -1
    async for chunk in chunks:
        index += 1
        for event in decoder.feed(chunk):
            if event.event != "message":
                continue
            if not _take(log, event.data, index):
                return
            if stop_after is not None and len(log.messages) >= stop_after:
                return
    for event in decoder.end():
        if event.event == "message" and not _take(log, event.data, index):
            return
    log.ended = True
