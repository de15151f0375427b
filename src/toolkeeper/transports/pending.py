"""Answering a :class:`~toolkeeper.protocol.Pending` over HTTP: JSON if the handler stays
silent, SSE from its first notification on (or once it has been silent for ``keepalive_s``,
then pinged), and a client that disconnects cancels it.

The handler runs *in the request's own task*, started eagerly: most handlers finish without
ever suspending, and those are answered with no extra task, timer or disconnect watcher. A
handler that suspends is resumed in the same task (so ``asyncio.current_task()``, timeouts and
cancel scopes entered before the suspension stay valid) while a watcher task sends keepalives
and, if the client leaves, cancels the request task.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Protocol

from toolkeeper.protocol import Emit, Pending, Reply, encode_message, error_reply
from toolkeeper.protocol.faults import server_stopping
from toolkeeper.transports.asgi_io import Receive, Send, resume, until_disconnect
from toolkeeper.transports.sse import KEEPALIVE, SSE_HEADERS, sse_frame

__all__ = ["Cancellable", "Exchange", "PlainExchange", "answer_pending"]

SendReply = Callable[[Reply], Awaitable[None]]


class Exchange(Protocol):
    """How one pending request's response is written (the plain one here; the resumable
    legacy stream of :mod:`~toolkeeper.transports.resumable`)."""

    committed: bool
    disconnected: bool
    cancelled: bool

    async def emit(self, message: dict[str, Any]) -> None: ...

    def cancel(self, request: asyncio.Task[Any]) -> None: ...

    async def finish(self, reply: Reply, send_reply: SendReply) -> None: ...

    async def write_final(self, reply: Reply, send_reply: SendReply) -> None: ...

    async def watch(self, receive: Receive, request: asyncio.Task[Any], keepalive_s: float
                    ) -> None: ...


class Cancellable(Protocol):
    """How a client may cancel a pending request: ``register(cancel)`` is called when its
    handler suspends and returns the function that unregisters it; ``reply()`` answers it
    once cancelled (made only then)."""

    def register(self, cancel: Callable[[], None]) -> Callable[[], None]: ...

    def reply(self) -> Reply: ...


class PlainExchange:
    """One pending request's response: committed to SSE or not, and its write lock. A send
    that raises OSError (ASGI 2.4: the connection is closed) means the client left: nothing
    more is written, and the watcher, once running, cancels the request."""

    def __init__(self, send: Send, extra: list[tuple[bytes, bytes]], json_only: bool) -> None:
        self.send = send
        self.extra = extra
        self.json_only = json_only
        self.committed = False
        self.disconnected = False
        self.cancelled = False
        """The client cancelled the request (legacy ``notifications/cancelled``)."""
        self._lock: asyncio.Lock | None = None
        self._gone: asyncio.Event | None = None

    @property
    def lock(self) -> asyncio.Lock:
        """Serializes writes once a watcher may write too (made on first use)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    def cancel(self, request: asyncio.Task[Any]) -> None:
        """The client cancelled the request: cancel its task (the handler), which is then
        answered with the cancellation reply."""
        if not self.cancelled and not self.disconnected:
            self.cancelled = True
            request.cancel()

    def _client_left(self) -> None:
        self.disconnected = True
        if self._gone is not None:
            self._gone.set()

    async def _commit(self) -> None:
        if not self.committed:
            self.committed = True
            await self.send({"type": "http.response.start", "status": 200,
                             "headers": [*SSE_HEADERS, *self.extra]})

    async def emit(self, message: dict[str, Any]) -> None:
        if self.json_only or self.disconnected:
            return
        await self._stream(sse_frame(encode_message(message)))

    async def ping(self) -> None:
        await self._stream(KEEPALIVE)

    async def _stream(self, body: bytes) -> None:
        """Commit to SSE if not yet, then write ``body`` as more of the response, then give
        the loop a turn: a server may drop writes to a closed connection silently (uvicorn
        does), so a handler that reports without awaiting anything else would otherwise
        never let the watcher see its client leave (nor other requests run)."""
        async with self.lock:
            try:
                await self._commit()
                await self.send({"type": "http.response.body", "body": body, "more_body": True})
            except OSError:
                self._client_left()
        await asyncio.sleep(0)

    async def finish(self, reply: Reply, send_reply: SendReply) -> None:
        if self.json_only:  # the only writer: the watcher writes nothing in this mode
            await self.write_final(reply, send_reply)
            return
        async with self.lock:
            await self.write_final(reply, send_reply)

    async def write_final(self, reply: Reply, send_reply: SendReply) -> None:
        if self.disconnected:
            return
        try:
            if self.committed:
                await self.send({"type": "http.response.body", "body": sse_frame(reply.body),
                                 "more_body": False})
            else:
                await send_reply(reply)
        except OSError:
            self._client_left()

    async def watch(self, receive: Receive, request: asyncio.Task[Any], keepalive_s: float
                    ) -> None:
        """Until cancelled: keepalives (SSE mode) and, when the client leaves (a disconnect,
        or a send that found the connection closed), cancel ``request``. JSON only: nothing
        is written while the handler runs (``emit`` drops notifications), so only a disconnect
        can tell, and it is awaited in this task alone."""
        if self.json_only:
            if not self.disconnected:
                # A receive that fails: the client is gone too. (Not contextlib.suppress: a
                # try costs nothing until it catches, suppress an object and two calls.)
                try:  # noqa: SIM105
                    await until_disconnect(receive)
                except Exception:
                    pass
                self.disconnected = True
            request.cancel()
            return
        self._gone = gone = asyncio.Event()
        if self.disconnected:
            gone.set()
        receiving = asyncio.ensure_future(until_disconnect(receive))
        leaving = asyncio.ensure_future(gone.wait())
        try:
            while True:
                done, _ = await asyncio.wait({receiving, leaving}, timeout=keepalive_s,
                                             return_when=asyncio.FIRST_COMPLETED)
                if done:
                    self.disconnected = True
                    request.cancel()
                    return
                if not self.json_only:
                    await self.ping()
        finally:
            for task in (receiving, leaving):
                if not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task


async def answer_pending(pending: Pending, receive: Receive, send: Send, send_reply: SendReply,
                         extra: list[tuple[bytes, bytes]], *, json_only: bool,
                         keepalive_s: float, cancellable: Cancellable | None = None,
                         exchange: Exchange | None = None, emit: Emit | None = None) -> None:
    """Run ``pending`` and write its response (``send_reply`` writes a JSON reply; ``extra``
    headers go on an SSE response; ``json_only``: never SSE, notifications are dropped).
    ``cancellable``: the request may be cancelled by its client while its handler is suspended
    (registered then, unregistered when the handler is done), and is then answered with the
    cancellation reply. ``exchange``: another way of writing the response (then ``extra`` and
    ``json_only`` are its own), with ``emit`` the handler's (the exchange's by default)."""
    if exchange is None:
        exchange = PlainExchange(send, extra, json_only)
    run = pending.complete(exchange.emit if emit is None else emit)
    try:
        suspended_on = run.send(None)
    except StopIteration as stop:  # done without suspending: no other writer exists
        await exchange.write_final(stop.value, send_reply)
        return
    request = asyncio.current_task()
    assert request is not None
    watcher = asyncio.ensure_future(exchange.watch(receive, request, keepalive_s))
    unregister = (None if cancellable is None
                  else cancellable.register(partial(exchange.cancel, request)))
    try:
        reply = await resume(run, suspended_on)
        if unregister is not None:
            unregister()  # a cancel from now on comes too late: the reply is written
        watcher.cancel()
        await exchange.finish(reply, send_reply)
    except asyncio.CancelledError:
        if exchange.cancelled and cancellable is not None:
            request.uncancel()
            await exchange.finish(cancellable.reply(), send_reply)
        elif not exchange.disconnected:
            if exchange.committed:
                # The server cancels a streamed answer (it is stopping): end the stream with
                # an error event for the request rather than leave it cut off mid-response.
                await exchange.finish(error_reply(pending.request_id, server_stopping()),
                                      send_reply)
            raise
        else:
            request.uncancel()  # the client left: nothing to answer
    finally:
        if unregister is not None:
            unregister()
        if not watcher.done():
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await watcher
