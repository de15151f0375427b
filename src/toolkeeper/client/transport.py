"""The one small interface every client transport implements, and what an exchange returns.

A transport moves JSON-RPC messages and nothing else: it neither builds nor judges them (the
session does, with :mod:`toolkeeper.protocol`). Failures are the client's errors:
:class:`~toolkeeper.errors.ClientConnectionError` (refused, dropped),
:class:`~toolkeeper.errors.ClientTimeoutError` (the bound passed),
:class:`~toolkeeper.errors.ServerUnavailableError` (HTTP 503),
:class:`~toolkeeper.errors.ClientAuthenticationError` (HTTP 401, 403) and
:class:`~toolkeeper.errors.ProtocolViolationError` (an answer over the byte bound, or not JSON).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from toolkeeper.errors import ProtocolViolationError

__all__ = ["REFUSED", "SPAWN_FAILED", "STREAM_OPEN", "Exchange", "ServerRequestHandler",
           "Transport", "find_response", "too_deep", "too_large", "undecodable"]

STREAM_OPEN: Any = object()
"""Yielded first by :meth:`Transport.stream` once the stream is established (the HTTP answer's
head arrived with 200 and ``text/event-stream``; on stdio, at once)."""

REFUSED = "client.connection_refused"
"""The code of a :class:`~toolkeeper.errors.ClientConnectionError` raised before any byte was
exchanged (nothing listens): not an era observation."""

SPAWN_FAILED = "client.spawn_failed"
"""The code of a :class:`~toolkeeper.errors.ClientConnectionError` raised when a stdio server
command cannot start (the OS error's name, errno and text in its data)."""


@dataclass(frozen=True)
class Exchange:
    """The answer to one request: the HTTP status and headers (None and empty on stdio), every
    message received for it in order (notifications first, the response last), the size of
    the body read (JSON answers), and whether it came as server-sent events."""

    status: int | None
    headers: Mapping[str, str] = field(default_factory=dict)
    messages: tuple[Any, ...] = ()
    body_bytes: int = 0
    streamed: bool = False


def find_response(exchange: Exchange, request_id: object) -> Any | None:
    """The message of ``exchange`` that answers ``request_id`` (a response object whose id is
    equal in value and JSON type), or None."""
    for message in exchange.messages:
        if isinstance(message, dict) and "method" not in message:
            got = message.get("id")
            if type(got) is type(request_id) and got == request_id:
                return message
    return None


ServerRequestHandler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
"""Answers a request the server sent during an exchange (legacy era: ``elicitation/create``,
``sampling/createMessage``, ``roots/list``) with the whole response message (a result or an
error); it must not raise. Without one, the client answers ``ping`` and -32601 for the rest."""


class Transport(Protocol):
    """One connection to one MCP endpoint."""

    async def exchange(self, message: Mapping[str, Any], headers: Mapping[str, str], *,
                       timeout: float, max_bytes: int,
                       on_message: Callable[[Any], None] | None = None,
                       on_request: ServerRequestHandler | None = None) -> Exchange:
        """Send a request; return once its response (or the end of a plain answer) arrived.
        An event stream that ends before the response is a lost connection
        (:class:`~toolkeeper.errors.ClientConnectionError`). ``on_message`` is called with
        each notification received for the request as it arrives (on stdio: every
        notification received meanwhile, which carries no request id); ``on_request``
        answers the server's requests (but ``ping``) received meanwhile."""
        ...

    async def notify(self, message: Mapping[str, Any], headers: Mapping[str, str], *,
                     timeout: float) -> int | None:
        """Send a notification; the HTTP status of its acknowledgement (None on stdio)."""
        ...

    def stream(self, message: Mapping[str, Any] | None, headers: Mapping[str, str], *,
               max_bytes: int) -> AsyncIterator[Any]:
        """Messages of a long-lived stream: the answer to ``message`` (a modern
        ``subscriptions/listen``), or with None the legacy standalone stream (HTTP GET;
        on stdio, every message the server sends unasked); :data:`STREAM_OPEN` first when the
        stream is established. A refusal (an HTTP error status) yields its JSON body, if any,
        and ends."""
        ...

    async def end_session(self, headers: Mapping[str, str], *, timeout: float) -> None:
        """End a legacy HTTP session (DELETE); nothing elsewhere. Best effort."""
        ...

    async def aclose(self) -> None:
        """Release the connection (stop the stdio server by its pid)."""
        ...


def too_large(max_bytes: int) -> ProtocolViolationError:
    return ProtocolViolationError(f"the answer exceeds the bound of {max_bytes} bytes",
                                  code="client.too_large", data={"maxBytes": max_bytes})


def too_deep(max_depth: int) -> ProtocolViolationError:
    return ProtocolViolationError(f"the answer nests deeper than the bound of {max_depth} levels",
                                  code="client.too_deep", data={"maxDepth": max_depth})


def undecodable(where: str) -> ProtocolViolationError:
    return ProtocolViolationError(f"the answer is not a JSON-RPC message ({where})",
                                  code="client.undecodable",
                                  data={"problems": [f"$: not JSON ({where})"]})
