"""What the kernel hands a transport for one inbound message."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

import msgspec

from toolkeeper.protocol.envelope import (
    InboundResponse,
    RequestId,
    encode_message,
    error_message,
    safe_id,
)
from toolkeeper.protocol.faults import wire_error

__all__ = ["Accepted", "Emit", "Finish", "Outcome", "Pending", "Reply", "ResumablePending"]

Emit = Callable[[dict[str, Any]], Awaitable[None]]
"""Sends one JSON-RPC notification on the request's response stream (SSE or stdout)."""


class Reply(msgspec.Struct, frozen=True):
    """A complete JSON-RPC response (result or error) and the HTTP status it travels with.
    (An immutable msgspec Struct: one is built per request; change one with
    ``msgspec.structs.replace``.)"""

    message: dict[str, Any]
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    encoded: bytes | None = None
    """``message`` already encoded (by whoever built the reply), or None to encode it here."""

    @property
    def body(self) -> bytes:
        """The encoded message. One that cannot be encoded (a server bug: tool results are
        encoded when the tool returns) becomes the generic -32603 error to the same id, logged,
        so a transport always has an answer to send."""
        if self.encoded is not None:
            return self.encoded
        try:
            return encode_message(self.message)
        except Exception as exc:
            return encode_message(error_message(safe_id(self.message), wire_error(exc)))

    @property
    def is_error(self) -> bool:
        return "error" in self.message


@dataclass(frozen=True, slots=True)
class Accepted:
    """No JSON-RPC response (a notification, or a response sent to us): HTTP 202, empty body.
    ``cancel`` names an in-flight request the peer cancelled (stream transports act on it);
    ``response`` is the peer's answer to a request the server sent it (the transport hands it
    to whoever awaits it)."""

    cancel: RequestId | None = None
    headers: tuple[tuple[str, str], ...] = ()
    response: InboundResponse | None = None


class Pending(msgspec.Struct, frozen=True):
    """A request whose handler must run on the transport's loop: ``await complete(emit)``
    gives the Reply; notifications emitted meanwhile belong on the same response stream.
    ``stream``: see :class:`~toolkeeper.protocol.methods.Deferred`. (An immutable msgspec
    Struct: one is built per tool call, about five times faster than a frozen dataclass.)"""

    request_id: RequestId
    run: Callable[[Emit], Coroutine[Any, Any, Reply]]
    headers: tuple[tuple[str, str], ...] = ()
    stream: bool = False

    def complete(self, emit: Emit) -> Coroutine[Any, Any, Reply]:
        """The coroutine that gives the Reply (``run``'s own, not a wrapper around it: one
        frame less per call, and a transport may step it with ``send``)."""
        return self.run(emit)


class ResumablePending(Pending, frozen=True):
    """A legacy request of an HTTP session at a
    :data:`~toolkeeper.protocol.versions.RESUMABLE_VERSIONS` version: its response stream may
    carry event ids and be resumed. (A subclass rather than a field: a field would be filled
    on every modern call too, and callgrind counts it, about 700 instructions a call.)"""


Outcome = Reply | Accepted | Pending

Finish = Callable[[RequestId, dict[str, Any]], Reply]
"""Finishes a result the way the kernel does in the call's era (modern: ``resultType``, cache
hints, ``serverInfo``; legacy: those fields stripped, the session's header on the reply, see
:class:`~toolkeeper.protocol.dispatch.LegacyFinish`) and makes it the Reply to a request id,
its body encoded at once (a result that is not JSON raises there, msgspec's TypeError or
ValueError); the kernel hands one to an express lane. The result is handed over: the result
dict and (modern) its ``_meta`` dict, which it must have, are the callee's to change."""
