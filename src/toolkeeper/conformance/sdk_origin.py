"""The replay origin of an SDK diff (SPEC 5.4): a real MCP server (an ASGI app the caller gives,
e.g. toolkeeper's demo gateway) with one method's answer replaced by a recorded transcript's
response, byte for byte. Serving it on a socket is the caller's (the harness does no server
I/O of its own: ``conformance`` sits below ``transports`` in the layering).

Everything an SDK sends before the interesting request (``initialize``, ``server/discover``,
notifications, a ``tools/list`` it makes on its own) is answered by the real server, so each
era's handshake is correct without the harness re-implementing it. The first request whose
method (and, for ``tools/call``, tool name) is the fixture's gets the fixture's status, headers
and body, the body's ``id`` replaced by the request's own (an SDK picks its ids; the recorded
one would answer another request). Every answer served that way is recorded raw, as the bytes
that left the origin: the SDK diff redacts them before anything is kept.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, Final

from toolkeeper.conformance.evidence import RawResponse
from toolkeeper.conformance.transcript import Transcript

__all__ = ["App", "ReplayOrigin"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

_MAX_BODY: Final = 1024 * 1024


def _with_id(body: Any, request_id: Any) -> bytes:
    if isinstance(body, dict) and "id" in body:
        body = {**body, "id": request_id}
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


@dataclass
class ReplayOrigin:
    """An ASGI app: ``inner`` for everything but the fixture's request. ``served`` holds the raw
    answers given from the fixture, ``methods`` every JSON-RPC method the SDK sent, in order."""

    inner: App
    transcript: Transcript

    def __post_init__(self) -> None:
        self.served: list[RawResponse] = []
        self.methods: list[str] = []
        self._lock = threading.Lock()
        request = self.transcript.request.body
        params = request.get("params") if isinstance(request, dict) else None
        self._method = request.get("method") if isinstance(request, dict) else None
        self._tool = params.get("name") if isinstance(params, dict) else None

    def _is_fixture(self, message: Any) -> bool:
        if not isinstance(message, dict) or message.get("method") != self._method:
            return False
        params = message.get("params")
        return self._method != "tools/call" or (
            isinstance(params, dict) and params.get("name") == self._tool)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.inner(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            event = await receive()
            chunks.append(event.get("body", b""))
            more = bool(event.get("more_body")) and sum(map(len, chunks)) <= _MAX_BODY
        raw = b"".join(chunks)
        try:
            message = json.loads(raw)
        except ValueError:
            message = None
        with self._lock:
            if isinstance(message, dict) and isinstance(message.get("method"), str):
                self.methods.append(message["method"])
            replay = self._is_fixture(message)
        if replay:
            await self._answer(message, send)
            return
        delivered = False

        async def replayed() -> Message:
            nonlocal delivered
            if delivered:
                return await receive()
            delivered = True
            return {"type": "http.request", "body": raw, "more_body": False}

        await self.inner(scope, replayed, send)

    async def _answer(self, message: dict[str, Any], send: Send) -> None:
        recorded = self.transcript.response
        assert recorded is not None
        body = _with_id(recorded.body, message.get("id"))
        headers = tuple((k.lower(), v) for k, v in sorted(recorded.headers.items()))
        status = recorded.status if isinstance(recorded.status, int) else 200
        with self._lock:
            self.served.append(RawResponse(status, headers, body))
        await send({"type": "http.response.start", "status": status,
                    "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
                    + [(b"content-length", str(len(body)).encode("ascii"))]})
        await send({"type": "http.response.body", "body": body})
