"""The ASGI plumbing every HTTP exchange of the transport shares: the callable types, reading
a bounded request body, and writing a whole response (ASGI 3.0, HTTP scope).

These only frame bytes; what to answer is decided by :mod:`~toolkeeper.transports.http` and
the protocol kernel.
"""

from __future__ import annotations

import asyncio
import contextlib
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator, MutableMapping
from typing import Any, Final, TypeVar

from toolkeeper.protocol import Reply

__all__ = [
    "ASGIApp",
    "BodyTimeout",
    "BodyTooLarge",
    "ClientDisconnected",
    "Message",
    "Receive",
    "Scope",
    "Send",
    "cancel_and_wait",
    "encode_headers",
    "read_body",
    "respond",
    "respond_plain",
    "resume",
    "send_reply",
    "serve_lifespan",
    "until_disconnect",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_JSON: Final = (b"content-type", b"application/json")
_PLAIN: Final = (b"content-type", b"text/plain; charset=utf-8")


class BodyTooLarge(Exception):
    """The request body grew past its limit while it was read (413)."""


class BodyTimeout(Exception):
    """The next part of the request body did not arrive in time (408)."""


class ClientDisconnected(Exception):
    """The client went away before the request body was complete."""


async def read_body(receive: Receive, limit: int, timeout_s: float | None = None) -> bytes:
    """The whole request body, refused as soon as it passes ``limit`` bytes (nothing more of
    it is read or kept), or when its next part takes over ``timeout_s`` to arrive."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await (receive() if timeout_s is None else _received(receive, timeout_s))
        if message["type"] == "http.disconnect":
            raise ClientDisconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        if not message.get("more_body", False):
            return b"".join((*chunks, chunk)) if chunks else chunk
        chunks.append(chunk)


@types.coroutine
def _received(receive: Receive, timeout_s: float) -> Generator[Any, Any, Message]:
    """``await receive()``, bounded by ``timeout_s`` (BodyTimeout) only when it has to wait:
    a server usually hands over the body with the request, and a timer for every request
    would cost more than the rest of reading it."""
    waiting = receive().__await__()
    try:
        suspended_on = waiting.send(None)
    except StopIteration as ready:
        message: Message = ready.value
        return message
    return (yield from _bounded(waiting, suspended_on, timeout_s).__await__())


async def _bounded(waiting: Generator[Any, Any, Message], suspended_on: Any, timeout_s: float
                   ) -> Message:
    try:
        async with asyncio.timeout(timeout_s):
            return await resume(waiting, suspended_on)
    except TimeoutError:
        raise BodyTimeout from None


_T = TypeVar("_T")


@types.coroutine
def resume(awaiting: Coroutine[Any, Any, _T] | Generator[Any, Any, _T], suspended_on: Any
           ) -> Generator[Any, Any, _T]:
    """The rest of ``await awaiting`` for an awaitable already run to its first suspension
    (``suspended_on`` is what it yielded): PEP 380 delegation without the first ``send``.
    Lets a caller run the common case, an awaitable that completes at once, without the
    machinery (a watcher, a timer) that only waiting needs."""
    yielded = suspended_on
    while True:
        try:
            sent = yield yielded
        except GeneratorExit:
            awaiting.close()
            raise
        except BaseException as exc:  # thrown in by the task (cancellation): pass it on
            try:
                yielded = awaiting.throw(exc)
            except StopIteration as stop:
                thrown_out: _T = stop.value
                return thrown_out
        else:
            try:
                yielded = awaiting.send(sent)
            except StopIteration as stop:
                result: _T = stop.value
                return result


async def until_disconnect(receive: Receive) -> None:
    """Return when the client disconnects (every other message is dropped)."""
    while (await receive())["type"] != "http.disconnect":
        pass


async def cancel_and_wait(*tasks: asyncio.Future[Any]) -> None:
    """Cancel each of ``tasks`` still running, in order, and wait for it to end (what it
    raised while ending is dropped: the stream it served is over)."""
    for task in tasks:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


def encode_headers(headers: tuple[tuple[str, str], ...]) -> list[tuple[bytes, bytes]]:
    """Header pairs as ASGI wants them (the protocol kernel's are Latin-1 text)."""
    return [(n.encode("latin-1"), v.encode("latin-1")) for n, v in headers]


async def respond(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes
                  ) -> None:
    """A whole response: ``headers`` plus its Content-Length, then ``body``."""
    await send({"type": "http.response.start", "status": status,
                "headers": [*headers, (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def respond_plain(send: Send, status: int, text: bytes) -> None:
    """A transport-level refusal: a fixed text/plain body (never a traceback)."""
    await respond(send, status, [_PLAIN], text)


async def send_reply(send: Send, reply: Reply) -> None:
    """A kernel :class:`~toolkeeper.protocol.Reply` as a JSON response, with its headers."""
    body = reply.body
    headers = [_JSON, *encode_headers(reply.headers)] if reply.headers else [_JSON]
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": reply.status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def serve_lifespan(receive: Receive, send: Send) -> None:
    """The lifespan protocol, with nothing to start or stop."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
