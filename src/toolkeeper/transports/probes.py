"""The liveness and readiness probes beside the MCP endpoint: ``GET /healthz`` and
``GET /readyz`` (``docs/operations.md``).

A probe is answered before every check of the MCP ladder: no credential, no ``Host`` or
``Origin`` allow list (a kubelet sends ``Host: <pod IP>:<port>``), no call-log row, span or
response count. What it tells is one status word and a reason code, the same to anyone, so
answering it to any host gives a rebinding page nothing to read. ``GET`` and ``HEAD`` only
(else 405 ``Allow: GET, HEAD``). The readiness check may touch the registry, so it runs in a
worker thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
from typing import Final, Protocol

from toolkeeper.transports.asgi_io import Scope, Send, respond

__all__ = ["LIVE_PATH", "PROBE_PATHS", "READY_PATH", "HealthProbes", "answer_probe"]

LIVE_PATH: Final = "/healthz"
READY_PATH: Final = "/readyz"
PROBE_PATHS: Final = frozenset({LIVE_PATH, READY_PATH})
_JSON: Final = (b"content-type", b"application/json")
_NO_STORE: Final = (b"cache-control", b"no-store")


class HealthProbes(Protocol):
    """The answers, as (status, canonical JSON body); ``ready`` may block (it is run in a
    thread)."""

    def live(self) -> tuple[int, bytes]: ...

    def ready(self) -> tuple[int, bytes]: ...


async def answer_probe(probes: HealthProbes, scope: Scope, send: Send) -> None:
    """Answer the probe at ``scope["path"]`` (one of :data:`PROBE_PATHS`)."""
    method = scope.get("method")
    if method not in ("GET", "HEAD"):
        await respond(send, 405, [(b"allow", b"GET, HEAD")], b"")
        return
    if scope["path"] == LIVE_PATH:
        status, body = probes.live()  # answered by the event loop itself: it is alive
    else:
        status, body = await asyncio.to_thread(probes.ready)
    headers = [_JSON, _NO_STORE]
    if method == "HEAD":
        await send({"type": "http.response.start", "status": status,
                    "headers": [*headers, (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return
    await respond(send, status, headers, body)
