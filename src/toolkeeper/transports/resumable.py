"""Resumable legacy SSE streams over HTTP (2025-11-25 transport, "Resumability and
Redelivery"; SEP-1699): the POST's response stream kept in a replay log, and a ``GET`` with
``Last-Event-ID`` taking it up again.

A legacy request of a 2025-11-25 session whose answer turns into SSE (its handler emits a
notification or a request, stays silent for ``keepalive_s``, or ends the stream) opens with a
priming event (an id, the ``retry`` hint, no data), and every event after it carries an id and
is kept in the stream's :class:`~toolkeeper.transports.replay.ReplayLog`. A request answered
with plain JSON keeps nothing.

When the POST's connection drops after that, the request goes on: its events are kept, and a
``GET`` of the same session with ``Last-Event-ID`` gets every event after that id, once and in
order, then the live rest of the stream up to the response. One connection carries a stream at
a time: a newer resumption takes over from the older (which is ended). A stream nobody takes up
again within ``resume_window_s`` has its request cancelled (nothing will hear the answer) and
its log dropped. A handler may end the response early itself (``ToolContext.close_stream``):
the client polls back after the ``retry`` hint.

A ``Last-Event-ID`` that cannot be answered exactly (unknown, malformed, another session's,
expired, or with events after it already dropped) is answered as the official SDK answers it:
``200`` ``text/event-stream`` with no events, the body ended at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from toolkeeper.protocol import Reply, encode_message
from toolkeeper.transports.asgi_io import Receive, Send, cancel_and_wait, until_disconnect
from toolkeeper.transports.replay import ReplayConfig, ReplayLog, ReplayLogs
from toolkeeper.transports.sse import KEEPALIVE, SSE_HEADERS

__all__ = ["ResumableExchange", "ResumableStreams", "Sink"]

SendReply = Callable[[Reply], Any]


class Sink:
    """One HTTP response a resumable stream is written to (the POST's own, or a resuming
    GET's): the SSE head and ``preamble`` go first, writes are serialized, and a write that
    finds the connection closed closes the sink."""

    def __init__(self, send: Send, headers: list[tuple[bytes, bytes]], preamble: bytes = b"",
                 ended: asyncio.Event | None = None) -> None:
        self._send = send
        self._headers = headers
        self._preamble = preamble
        self._lock = asyncio.Lock()
        self.started = False
        self.closed = False
        self.ended = ended if ended is not None else asyncio.Event()
        """Set once nothing more will be written (ended, taken over, or the client left)."""

    async def write(self, body: bytes, *, last: bool = False) -> bool:
        """Write ``body`` (``last``: and end the response); False when the sink is closed."""
        async with self._lock:
            if self.closed:
                return False
            try:
                if not self.started:
                    self.started = True
                    await self._send({"type": "http.response.start", "status": 200,
                                      "headers": self._headers})
                    body = self._preamble + body
                await self._send({"type": "http.response.body", "body": body,
                                  "more_body": not last})
            except OSError:  # ASGI 2.4: the connection is closed
                self.abandon()
                return False
            if last:
                self.abandon()
        return True

    async def close(self) -> None:
        """End the response (sending the head first if nothing was sent yet)."""
        await self.write(b"", last=True)

    def abandon(self) -> None:
        """Write nothing more (the response is over, or its client has gone)."""
        self.closed = True
        self.ended.set()


class ResumableStreams:
    """The app's resumable streams: their replay logs, which connection carries each, and
    the timers that give up on streams whose client has gone."""

    def __init__(self, config: ReplayConfig, keepalive_s: float) -> None:
        self.config = config
        self.logs = ReplayLogs(config)
        self._keepalive_s = keepalive_s
        self._sinks: dict[ReplayLog, Sink] = {}
        self._abandon: dict[ReplayLog, Callable[[], None]] = {}
        self._timers: dict[ReplayLog, asyncio.TimerHandle] = {}

    def exchange(self, send: Send, extra: list[tuple[bytes, bytes]], session_id: str
                 ) -> ResumableExchange:
        return ResumableExchange(self, send, extra, session_id)

    def open(self, session_id: str, sink_for: Callable[[ReplayLog], Sink],
             abandon: Callable[[], None]) -> ReplayLog:
        log = self.logs.open(session_id)
        self._sinks[log] = sink_for(log)
        self._abandon[log] = abandon
        return log

    async def publish(self, log: ReplayLog, message_json: bytes, *, final: bool = False
                      ) -> None:
        """Record the next event of ``log`` and write it to the connection carrying it."""
        frame = log.record(message_json, final=final)
        if final:
            self._settled(log)
        sink = self._sinks.get(log)
        if sink is None:
            return
        if final:
            del self._sinks[log]
        if not await sink.write(frame, last=final) and not final:
            self.detach(log, sink)

    async def ping(self, log: ReplayLog, sink: Sink) -> None:
        if self._sinks.get(log) is sink and not await sink.write(KEEPALIVE):
            self.detach(log, sink)

    async def close_current(self, log: ReplayLog) -> None:
        """End the response now carrying ``log`` (the client polls back with its last id)."""
        sink = self._sinks.get(log)
        if sink is not None:
            self.detach(log, sink)
            await sink.close()

    def detach(self, log: ReplayLog, sink: Sink) -> None:
        """``sink`` no longer carries ``log``; an unfinished stream then waits
        ``resume_window_s`` for a resumption before its request is given up."""
        if self._sinks.get(log) is not sink:
            return
        del self._sinks[log]
        if not log.finished and log not in self._timers:
            self._timers[log] = asyncio.get_running_loop().call_later(
                self.config.resume_window_s, self._give_up, log)

    def _give_up(self, log: ReplayLog) -> None:
        self._timers.pop(log, None)
        abandon = self._abandon.pop(log, None)
        if log in self._sinks or log.finished:
            return
        self.logs.drop(log)
        if abandon is not None:
            abandon()

    def _settled(self, log: ReplayLog) -> None:
        self._abandon.pop(log, None)
        timer = self._timers.pop(log, None)
        if timer is not None:
            timer.cancel()

    def forget(self, log: ReplayLog) -> None:
        """The request ended without a response (abandoned): nothing more is kept for it."""
        self._settled(log)
        self._sinks.pop(log, None)
        self.logs.drop(log)

    async def resume(self, session_id: str, last_event_id: str, receive: Receive, send: Send,
                     extra: list[tuple[bytes, bytes]]) -> None:
        """Answer a ``GET`` with ``Last-Event-ID`` of a live session (already checked)."""
        headers = [*SSE_HEADERS, *extra]
        found = self.logs.find(session_id, last_event_id)
        if found is None:
            await Sink(send, headers).close()
            return
        log, frames = found
        if log.finished:
            await Sink(send, headers, b"".join(frames)).close()
            return
        # The frames recorded so far are the preamble; every later one goes to this sink
        # (attached before any await, so none is missed or sent twice).
        sink = Sink(send, headers, b"".join(frames))
        previous = self._sinks.get(log)
        self._sinks[log] = sink
        timer = self._timers.pop(log, None)
        if timer is not None:
            timer.cancel()
        if previous is not None:
            await previous.close()
        await sink.write(b"")
        await self._carry(log, sink, receive)

    async def _carry(self, log: ReplayLog, sink: Sink, receive: Receive) -> None:
        """Keep a resuming connection until the stream ends on it or its client leaves."""
        leaving = asyncio.ensure_future(until_disconnect(receive))
        ended = asyncio.ensure_future(sink.ended.wait())
        try:
            while True:
                done, _ = await asyncio.wait({leaving, ended}, timeout=self._keepalive_s,
                                             return_when=asyncio.FIRST_COMPLETED)
                if leaving in done:
                    sink.abandon()
                    self.detach(log, sink)
                    return
                if ended in done:
                    return
                await self.ping(log, sink)
        finally:
            await cancel_and_wait(leaving, ended)


class ResumableExchange:
    """One legacy POST whose answer may become a resumable stream (the
    :func:`~toolkeeper.transports.pending.answer_pending` exchange for it). Also the
    handler's emit: calling it sends a notification; :meth:`close_stream` ends the response
    early."""

    json_only = False

    def __init__(self, streams: ResumableStreams, send: Send,
                 extra: list[tuple[bytes, bytes]], session_id: str) -> None:
        self._streams = streams
        self._send = send
        self._extra = extra
        self._session_id = session_id
        self._log: ReplayLog | None = None
        self._sink: Sink | None = None
        self._request: asyncio.Task[Any] | None = None
        self._left = asyncio.Event()
        self.committed = False
        self.disconnected = False
        """Nothing more can reach the client: it left before the answer became a stream,
        or it never resumed the stream in time."""
        self.cancelled = False

    def _commit(self) -> ReplayLog:
        """The stream's log, opened (with the POST's connection carrying it, the SSE head and
        priming event first) on first use."""
        if self._log is None:
            self.committed = True
            retry = self._streams.config.retry_ms

            def post_sink(log: ReplayLog) -> Sink:
                sink = Sink(self._send, [*SSE_HEADERS, *self._extra], log.priming(retry),
                            self._left)
                self._sink = sink
                return sink

            self._log = self._streams.open(self._session_id, post_sink, self._abandoned)
        return self._log

    def _abandoned(self) -> None:
        self.disconnected = True
        if self._request is not None:
            self._request.cancel()

    async def __call__(self, message: dict[str, Any]) -> None:
        await self.emit(message)

    async def emit(self, message: dict[str, Any]) -> None:
        if self.disconnected:
            return
        await self._streams.publish(self._commit(), encode_message(message))
        await asyncio.sleep(0)  # let the watcher see a client that left (see PlainExchange)

    async def close_stream(self) -> bool:
        """End the response now (committing it to SSE first, so the client has the priming
        event's id and ``retry``): the client resumes with ``Last-Event-ID``."""
        if self.disconnected:
            return False
        log = self._commit()
        await self._streams.close_current(log)
        return True

    def cancel(self, request: asyncio.Task[Any]) -> None:
        if not self.cancelled and not self.disconnected:
            self.cancelled = True
            request.cancel()

    async def finish(self, reply: Reply, send_reply: SendReply) -> None:
        await self.write_final(reply, send_reply)

    async def write_final(self, reply: Reply, send_reply: SendReply) -> None:
        if self.disconnected:
            if self._log is not None:
                self._streams.forget(self._log)
            return
        if self._log is None:
            with contextlib.suppress(OSError):  # the client left: nothing to answer
                await send_reply(reply)
            return
        await self._streams.publish(self._log, reply.body, final=True)

    async def watch(self, receive: Receive, request: asyncio.Task[Any], keepalive_s: float
                    ) -> None:
        """Until cancelled or the POST's connection is done with: keepalives, and when the
        client leaves, cancel ``request`` if it had no event id yet, else let the request go
        on for a resumption."""
        self._request = request
        receiving = asyncio.ensure_future(until_disconnect(receive))
        ending = asyncio.ensure_future(self._left.wait())
        try:
            while True:
                done, _ = await asyncio.wait({receiving, ending}, timeout=keepalive_s,
                                             return_when=asyncio.FIRST_COMPLETED)
                if receiving in done:
                    if self._log is None:
                        self.disconnected = True
                        request.cancel()
                    elif self._sink is not None:
                        self._sink.abandon()
                        self._streams.detach(self._log, self._sink)
                    return
                if ending in done:
                    return  # ended or taken over: the connection is no longer this stream's
                log = self._commit()
                if self._sink is not None:
                    await self._streams.ping(log, self._sink)
                    if self._sink.closed:
                        return
        finally:
            await cancel_and_wait(receiving, ending)
