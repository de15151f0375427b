"""Requests a legacy-era handler sends its client (``elicitation/create``,
``sampling/createMessage``, ``roots/list``; 2025-11-25 "server-to-client requests"), and the
client's responses routed back to them.

A request is a real JSON-RPC request with a server-chosen integer id (unique in the process),
written on the calling request's own response stream: over HTTP the POST's answer, which turns
into SSE for it as it does for a progress notification (and, for a 2025-11-25 session, is
kept for a resumption like any event); on stdio a line of the same pipe. The client answers
with a JSON-RPC response: over HTTP a POST of the same session (202), on stdio a line. The
response is routed by (session, id): a response from another session, or for an id nobody
awaits (answered already, timed out, never sent), is dropped.

What a handler sees (:class:`~toolkeeper.errors.AskError` codes): the result object; a
JSON-RPC error response is ``ask.client_error`` with the error in ``data.error``; no answer
within ``timeout_s`` is ``ask.timeout``; more than ``max_pending`` requests awaiting answers
in the process, or more than ``max_per_session`` in the session, is ``ask.busy``
(``data.bound``: ``"process"`` or ``"session"``; the session bound keeps one session from
starving the others); a session that ends (deleted, expired or evicted: its POSTs are 404
from then on, nothing could answer) fails its waiting requests at once with
``ask.gone``, and so does a request its handler makes once the session has ended, before
anything is sent. A call
cancelled while it waits (its timeout, the client's ``notifications/cancelled`` for the call,
its stream abandoned, the server stopping) ends the wait with it: the entry is
removed whatever ends it, so the pending map never holds more than the requests awaited now.
Whatever ends a wait but the answer (the ask's timeout, the session's end, the call's end),
the client is sent ``notifications/cancelled`` for the request on the call's stream while one
exists, so it can drop its prompt; a request it answered is never cancelled.

Where this works: a stateful legacy HTTP session (its POSTs answered in SSE: not in JSON mode,
where the answer is a single JSON body with no room for a request), and a legacy stdio
connection. Stateless legacy HTTP has no session to route a response to (any replica may get
it) and no declared client capabilities, so its handlers' asks are refused before anything is
sent (-32602 with ``requiredCapabilities``); so are the asks of a session that did not declare
the capability at ``initialize``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from toolkeeper.protocol import AskError, Emit, notification_message, request_message
from toolkeeper.protocol.envelope import InboundResponse

__all__ = ["DEFAULT_ASK_TIMEOUT_S", "DEFAULT_MAX_PENDING", "DEFAULT_MAX_PENDING_PER_SESSION",
           "LegacyChannel", "PendingAsks"]

DEFAULT_ASK_TIMEOUT_S: Final = 300.0
DEFAULT_MAX_PENDING: Final = 1000
DEFAULT_MAX_PENDING_PER_SESSION: Final = 100


class PendingAsks:
    """Requests sent to clients and awaiting their responses, by (session, request id)."""

    def __init__(self, timeout_s: float = DEFAULT_ASK_TIMEOUT_S,
                 max_pending: int = DEFAULT_MAX_PENDING, *,
                 max_per_session: int = DEFAULT_MAX_PENDING_PER_SESSION,
                 remaining: Callable[[str], float | None] | None = None) -> None:
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be positive, not {timeout_s}")
        for name, bound in (("max_pending", max_pending), ("max_per_session", max_per_session)):
            if bound < 1:
                raise ValueError(f"{name} must be at least 1, not {bound}")
        self._timeout_s = timeout_s
        self._max = max_pending
        self._max_per_session = max_per_session
        self._per_session: dict[str, int] = {}
        """Requests awaited per session (a session awaiting none has no entry)."""
        self._remaining = remaining
        """The seconds a session has before it expires unused, None once it ended (None: a
        session that lasts as long as its connection, as on stdio)."""
        self._ids = itertools.count(1)
        self._waiting: dict[tuple[str, Any], asyncio.Future[InboundResponse]] = {}

    def __len__(self) -> int:
        return len(self._waiting)

    async def ask(self, session: str, write: Emit, method: str, params: Mapping[str, Any]
                  ) -> dict[str, Any]:
        """Send ``method`` with ``params`` through ``write`` and await the response."""
        if self._left(session) is None:
            raise AskError("the session ended before the request was sent", code="ask.gone",
                           data={"method": method})
        self._check_room(session, method)
        request_id = next(self._ids)
        key = (session, request_id)
        waiting: asyncio.Future[InboundResponse] = asyncio.get_running_loop().create_future()
        self._waiting[key] = waiting
        per_session = self._per_session
        per_session[session] = per_session.get(session, 0) + 1
        try:
            await write(request_message(request_id, method, params))
            try:
                response = await self._response(session, waiting, method)
            except TimeoutError:
                await _cancel(write, request_id, "no answer in time")
                raise AskError(f"the client did not answer {method} within "
                               f"{self._timeout_s:g} s", code="ask.timeout",
                               data={"method": method, "timeoutS": self._timeout_s}) from None
            except AskError:  # the session ended
                await _cancel(write, request_id, "the session ended")
                raise
            except asyncio.CancelledError:  # the call ended (its timeout, its cancel, ...)
                if not _answered(waiting):
                    await _cancel(write, request_id, "the call ended")
                raise
        finally:
            del self._waiting[key]
            if per_session[session] == 1:
                del per_session[session]
            else:
                per_session[session] -= 1
        return _result_of(method, response)

    def _check_room(self, session: str, method: str) -> None:
        """``ask.busy`` when the process, or the session, awaits as many answers as it may
        (``data.bound``: which): one session cannot take every slot from the others."""
        for bound, limit, used in (
                ("session", self._max_per_session, self._per_session.get(session, 0)),
                ("process", self._max, len(self._waiting))):
            if used >= limit:
                raise AskError(f"{limit} requests to clients await answers already in this "
                               f"{bound}", code="ask.busy",
                               data={"method": method, "bound": bound, "limit": limit})

    def _left(self, session: str) -> float | None:
        return math.inf if self._remaining is None else self._remaining(session)

    async def _response(self, session: str, waiting: asyncio.Future[InboundResponse],
                        method: str) -> InboundResponse:
        """The response ``waiting`` gets within the timeout (else TimeoutError), while the
        session lasts: a session that ends fails it (:meth:`end_session`), and so does one
        that expires unused while nothing else looks at the table (each wait lasts until the
        session would expire at the latest; a session used meanwhile is waited on again)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._timeout_s
        while not waiting.done():
            left = self._left(session)  # an expired session is let go here: waiting fails
            if waiting.done():
                break
            if left is None:
                raise AskError("the session ended before the client answered",
                               code="ask.gone", data={"method": method})
            now = loop.time()
            if now >= deadline:
                raise TimeoutError
            # asyncio.wait, not wait_for: cancelling the caller leaves ``waiting`` as it is,
            # so whether the client answered stays known.
            await asyncio.wait((waiting,), timeout=min(deadline - now, left))
        return waiting.result()

    def answer(self, session: str, response: InboundResponse) -> bool:
        """Hand a client's response to the request awaiting it (False: nobody awaits it).
        A boolean id is not an id (``True == 1`` in Python, never on the wire)."""
        if type(response.id) is bool:
            return False
        try:
            waiting = self._waiting.get((session, response.id))
        except TypeError:  # an id that is not hashable (a list, an object): nobody's
            return False
        if waiting is None or waiting.done():
            return False
        waiting.set_result(response)
        return True

    def end_session(self, session: str) -> None:
        """The session ended (deleted, expired, evicted): its waiting requests fail with
        ``ask.gone`` at once."""
        for (owner, _), waiting in list(self._waiting.items()):
            if owner == session and not waiting.done():
                waiting.set_exception(AskError("the session ended before the client answered",
                                               code="ask.gone"))


def _answered(waiting: asyncio.Future[InboundResponse]) -> bool:
    if not waiting.done() or waiting.cancelled():
        return False
    return waiting.exception() is None  # (retrieved: a session's end is not logged unseen)


async def _cancel(write: Emit, request_id: int, reason: str) -> None:
    """Tell the client a request of ours it has not answered is cancelled (2025-11-25
    "Cancellation"), so it can drop its prompt: on the call's stream, while one exists (a
    stream whose client left takes nothing, a closed connection refuses it)."""
    with contextlib.suppress(OSError):
        await write(notification_message("notifications/cancelled", {
            "requestId": request_id, "reason": reason}))


def _result_of(method: str, response: InboundResponse) -> dict[str, Any]:
    if response.error is not None:
        error = response.error
        code = error.get("code") if isinstance(error, dict) else None
        raise AskError(f"the client answered {method} with an error"
                       + (f" ({code})" if isinstance(code, int) else ""),
                       code="ask.client_error", data={"method": method, "error": error})
    if not isinstance(response.result, dict):
        raise AskError(f"the client's result for {method} is not an object",
                       code="ask.bad_result", data={"method": method})
    return response.result


class LegacyChannel:
    """The legacy era's :class:`~toolkeeper.protocol.Backchannel` for one call: notifications
    and requests written through ``emit`` (the call's stream), requests awaited in ``asks``
    under ``session``; ``close`` ends a resumable stream early (None: it cannot)."""

    __slots__ = ("_asks", "_close", "_emit", "_session")

    def __init__(self, emit: Emit, asks: PendingAsks, session: str,
                 close: Callable[[], Awaitable[bool]] | None = None) -> None:
        self._emit = emit
        self._asks = asks
        self._session = session
        self._close = close

    async def __call__(self, message: dict[str, Any]) -> None:
        await self._emit(message)

    async def close_stream(self) -> bool:
        return False if self._close is None else await self._close()

    async def ask(self, method: str, params: Mapping[str, Any], *, key: str | None = None
                  ) -> Mapping[str, Any]:
        return await self._asks.ask(self._session, self._emit, method, params)
