"""What the HTTP transport keeps for the calls of stateful legacy sessions (a Pending whose
headers carry ``Mcp-Session-Id``): their cancellation by ``notifications/cancelled``
(answered -32800, mcp-wire 5), their resumable streams
(:mod:`~toolkeeper.transports.resumable`, 2025-11-25 sessions) and the requests their handlers
send the client (:mod:`~toolkeeper.transports.asks`), whose responses arrive as POSTs of the
same session. Everything is keyed by session: one session never touches another's calls.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from toolkeeper.protocol import Accepted, Pending, Reply, RequestId, error_reply
from toolkeeper.protocol.faults import request_cancelled
from toolkeeper.protocol.headers import MCP_SESSION_ID
from toolkeeper.protocol.outcome import ResumablePending
from toolkeeper.transports.asgi_io import Receive, Send, encode_headers, send_reply
from toolkeeper.transports.asks import LegacyChannel, PendingAsks
from toolkeeper.transports.pending import PlainExchange, answer_pending
from toolkeeper.transports.replay import ReplayConfig
from toolkeeper.transports.resumable import ResumableStreams

__all__ = ["LegacyCalls", "session_of"]


def session_of(headers: tuple[tuple[str, str], ...]) -> str | None:
    for name, value in headers:
        if name == MCP_SESSION_ID:
            return value
    return None


class LegacyCalls:
    """The legacy sessions' calls of one HTTP app (``replay`` off or JSON mode: no resumable
    streams; JSON mode: no requests to clients either, a JSON body has no room for one)."""

    def __init__(self, replay: ReplayConfig, asks: PendingAsks, *, keepalive_s: float,
                 json_response: bool) -> None:
        self._keepalive_s = keepalive_s
        self._json = json_response
        self.asks = asks
        self.resumable = (ResumableStreams(replay, keepalive_s)
                          if replay.enabled and not json_response else None)
        # (session id, request id) -> cancel, for requests whose handlers are suspended
        self.in_flight: dict[tuple[str, RequestId], Callable[[], None]] = {}

    async def answer(self, pending: Pending, receive: Receive, send: Send, sse_ok: bool
                     ) -> None:
        """Run a session's call and write its answer: a resumable stream when the session
        allows one, with a backchannel for the handler's requests unless in JSON mode."""
        session_id = session_of(pending.headers) or ""
        extra = encode_headers(pending.headers)
        json_only = self._json and not pending.stream
        if type(pending) is ResumablePending and sse_ok and self.resumable is not None:
            exchange = self.resumable.exchange(send, extra, session_id)
            channel = LegacyChannel(exchange.emit, self.asks, session_id,
                                    exchange.close_stream)
            await answer_pending(pending, receive, send, partial(send_reply, send), extra,
                                 json_only=False, keepalive_s=self._keepalive_s,
                                 cancellable=_SessionRequest(self.in_flight, session_id, pending),
                                 exchange=exchange, emit=channel)
            return
        plain = PlainExchange(send, extra, json_only)
        await answer_pending(pending, receive, send, partial(send_reply, send), extra,
                             json_only=json_only, keepalive_s=self._keepalive_s,
                             cancellable=_SessionRequest(self.in_flight, session_id, pending),
                             exchange=plain,
                             emit=None if json_only else LegacyChannel(plain.emit, self.asks,
                                                                       session_id))

    def accepted(self, outcome: Accepted) -> None:
        """A session's notification or response was accepted: act on a cancel, hand a
        response to the request awaiting it."""
        session_id = session_of(outcome.headers)
        if session_id is None:
            return
        if outcome.cancel is not None:
            cancel = self.in_flight.get((session_id, outcome.cancel))
            if cancel is not None:
                cancel()
        if outcome.response is not None:
            self.asks.answer(session_id, outcome.response)

    def end_session(self, session_id: str) -> None:
        """The session ended (deleted, expired, evicted): its replay logs go, its waiting
        requests fail."""
        if self.resumable is not None:
            self.resumable.logs.end_session(session_id)
        self.asks.end_session(session_id)

    async def resume(self, session_id: str, last_event_id: str, receive: Receive, send: Send
                     ) -> None:
        assert self.resumable is not None
        await self.resumable.resume(session_id, last_event_id, receive, send,
                                    [(MCP_SESSION_ID.encode(), session_id.encode("latin-1"))])


class _SessionRequest:
    """A legacy request in a session can be cancelled by a ``notifications/cancelled``
    naming its id in the same session, while its handler runs; it is then answered -32800
    (mcp-wire 5). (A :class:`~toolkeeper.transports.pending.Cancellable`, made per call:
    its registration and its reply are made only for a handler that suspends.)"""

    __slots__ = ("_in_flight", "_key", "_pending")

    def __init__(self, in_flight: dict[tuple[str, RequestId], Callable[[], None]],
                 session_id: str, pending: Pending) -> None:
        self._in_flight = in_flight
        self._key = (session_id, pending.request_id)
        self._pending = pending

    def register(self, cancel: Callable[[], None]) -> Callable[[], None]:
        in_flight, key = self._in_flight, self._key
        in_flight[key] = cancel

        def unregister() -> None:
            if in_flight.get(key) is cancel:
                del in_flight[key]
        return unregister

    def reply(self) -> Reply:
        pending = self._pending
        return error_reply(pending.request_id, request_cancelled(), pending.headers)
