"""The legacy era's standalone SSE stream: ``GET`` with an ``Mcp-Session-Id`` (2025-11-25).

It carries what the server says on its own, which for the gateway is
``notifications/tools/list_changed`` (spontaneous list_changed is the legacy mechanism; the
modern era uses ``subscriptions/listen`` instead). Rules, as the SDK's transport has them:

======================================================  ======================================
request                                                 answer
======================================================  ======================================
``Accept`` without ``text/event-stream``                406
no (or a duplicated) session id / not yet initialized   400 ``-32600``
unknown or expired session                              404 ``-32600``
a second stream for the same session                    409 ``-32600``
the change feed is full or closing                      503 ``-32603``
otherwise                                               200 SSE, ``mcp-session-id`` echoed
======================================================  ======================================

The stream ends when the client leaves, when its session is deleted (at once), when the
session table evicts it or it idles out (:class:`~toolkeeper.protocol.SessionTable`: noticed
at the stream's next wake-up, a notification or a keepalive, and nothing is sent to a session
that is gone), or at server shutdown (the feed closes every stream). Each wake-up counts as use
of the session, as in the official SDK, so a client that only listens keeps its session. The
stream carries no event ids (its list_changed hints are not kept for a replay: a client that
comes back lists again; a POST's response stream is the resumable one,
:mod:`~toolkeeper.transports.resumable`) and is pinged after ``keepalive_s`` of silence.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

import msgspec

from toolkeeper.protocol import Reply, ServerKernel, TransportFacts, encode_message
from toolkeeper.protocol.dispatch import error_reply
from toolkeeper.protocol.envelope import notification_message
from toolkeeper.protocol.faults import invalid_request
from toolkeeper.protocol.headers import MCP_SESSION_ID
from toolkeeper.transports.asgi_io import (
    Receive,
    Send,
    cancel_and_wait,
    send_reply,
    until_disconnect,
)
from toolkeeper.transports.sse import KEEPALIVE, SSE_HEADERS, sse_frame

__all__ = ["ChangeFeed", "ChangeSubscription", "SessionStreams", "change_notifications"]



class ChangeSubscription(Protocol):
    """One open stream of the feed (see :class:`toolkeeper.server.changes.ChangeStream`)."""

    async def next(self) -> tuple[str, ...] | None: ...

    def end(self) -> None: ...

    def close(self) -> None: ...


class ChangeFeed(Protocol):
    """Where list_changed notifications come from (the gateway's change hub)."""

    def open(self) -> ChangeSubscription: ...

    def close(self) -> None: ...


def change_notifications(batch: tuple[str, ...]) -> list[bytes]:
    """A feed's batch as the encoded notifications a listening client is sent, in order."""
    return [encode_message(notification_message(method)) for method in batch]


class SessionStreams:
    """At most one standalone stream per legacy session, fed by a :class:`ChangeFeed`."""

    def __init__(self, kernel: ServerKernel, feed: ChangeFeed, *, keepalive_s: float = 15.0
                 ) -> None:
        self._kernel = kernel
        self._feed = feed
        self._keepalive_s = keepalive_s
        self._open: dict[str, ChangeSubscription] = {}

    def __len__(self) -> int:
        return len(self._open)

    def end(self, session_id: str) -> None:
        """The session is gone (deleted, expired or evicted: the session table's ``ended``
        callback): finish its stream, if one is open."""
        stream = self._open.get(session_id)
        if stream is not None:
            stream.end()

    async def serve(self, facts: TransportFacts, sse_ok: bool, receive: Receive, send: Send
                    ) -> None:
        """Answer one GET (already past the Host/Origin checks)."""
        if not sse_ok:
            await send({"type": "http.response.start", "status": 406,
                        "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        target = self._kernel.session_for_stream(facts)
        if isinstance(target, Reply):
            await send_reply(send, target)
            return
        if target in self._open:
            reply = error_reply(None, invalid_request(
                "Conflict: only one standalone stream is allowed per session"))
            await send_reply(send, msgspec.structs.replace(reply, status=409))
            return
        try:
            stream = self._feed.open()
        except Exception as exc:  # full or closing (-32603); wire_error hides anything else
            await send_reply(send, msgspec.structs.replace(error_reply(None, exc), status=503))
            return
        self._open[target] = stream
        try:
            await send({"type": "http.response.start", "status": 200, "headers": [
                *SSE_HEADERS, (MCP_SESSION_ID.encode(), target.encode("latin-1"))]})
            await self._pump(target, stream, receive, send)
        except OSError:
            return  # ASGI 2.4: a send on a closed connection may raise; the client left
        finally:
            if self._open.get(target) is stream:
                del self._open[target]
            stream.close()

    async def _pump(self, session_id: str, stream: ChangeSubscription, receive: Receive,
                    send: Send) -> None:
        watcher: asyncio.Future[Any] = asyncio.ensure_future(until_disconnect(receive))
        upcoming: asyncio.Future[Any] = asyncio.ensure_future(stream.next())
        try:
            while True:
                done, _ = await asyncio.wait({upcoming, watcher}, timeout=self._keepalive_s,
                                             return_when=asyncio.FIRST_COMPLETED)
                if watcher in done:
                    return  # the client left: nothing more to send
                # An open stream is use of its session (as in the official SDK): a client that
                # only listens keeps it. One evicted or expired meanwhile ends the stream.
                if self._kernel.sessions.get(session_id) is None:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                    return
                if upcoming not in done:
                    await send({"type": "http.response.body", "body": KEEPALIVE,
                                "more_body": True})
                    continue
                batch: tuple[str, ...] | None = upcoming.result()
                if batch is None:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                    return
                body = b"".join(map(sse_frame, change_notifications(batch)))
                await send({"type": "http.response.body", "body": body, "more_body": True})
                upcoming = asyncio.ensure_future(stream.next())
        finally:
            await cancel_and_wait(upcoming, watcher)
