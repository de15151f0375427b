"""The in-process twin of HTTP: an httpx transport that calls an ASGI app directly, as
``httpx.ASGITransport`` does, but *streams* the response body, so a long-lived answer (a
``subscriptions/listen`` stream, the legacy GET stream, a slow SSE call) reaches the client as
it is sent instead of after the app returns. No socket is opened.

Closing the response tells the app the client left (``http.disconnect``), then waits a bounded
time for it to finish before cancelling it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

import httpx

__all__ = ["StreamingASGITransport"]

_CHUNKS_MAX: Final = 64
"""Body chunks buffered between the app and the reader (the app waits beyond: backpressure)."""
_END: Final = b""


class _Body(httpx.AsyncByteStream):
    def __init__(self, chunks: asyncio.Queue[bytes | BaseException], left: asyncio.Event,
                 task: asyncio.Task[None], close_s: float) -> None:
        self._chunks, self._left, self._task, self._close_s = chunks, left, task, close_s

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            chunk = await self._chunks.get()
            if isinstance(chunk, BaseException):
                raise httpx.ReadError("the app failed while sending the body") from chunk
            if chunk is _END:
                return
            yield chunk

    async def aclose(self) -> None:
        self._left.set()
        with contextlib.suppress(TimeoutError, asyncio.CancelledError, Exception):
            async with asyncio.timeout(self._close_s):
                await asyncio.shield(self._task)
        if not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task


class StreamingASGITransport(httpx.AsyncBaseTransport):
    """Serve httpx requests from ``app`` in the running event loop."""

    def __init__(self, app: Callable[..., Any], *, client: tuple[str, int] = ("127.0.0.1", 50000),
                 close_s: float = 5.0) -> None:
        self._app = app
        self._client = client
        self._close_s = close_s

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        url = request.url
        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": request.method, "scheme": url.scheme, "path": url.path,
            "raw_path": url.raw_path.split(b"?")[0], "query_string": url.query,
            "root_path": "", "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "server": (url.host, url.port or (443 if url.scheme == "https" else 80)),
            "client": self._client,
        }
        started: asyncio.Future[tuple[int, list[tuple[bytes, bytes]]]] = \
            asyncio.get_running_loop().create_future()
        chunks: asyncio.Queue[bytes | BaseException] = asyncio.Queue(_CHUNKS_MAX)
        left = asyncio.Event()
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await left.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and not started.done():
                started.set_result((message["status"], list(message.get("headers", []))))
            elif message["type"] == "http.response.body" and not left.is_set():
                chunk = message.get("body", b"")
                if chunk:
                    await chunks.put(chunk)
                if not message.get("more_body", False):
                    await chunks.put(_END)

        async def run() -> None:
            try:
                await self._app(scope, receive, send)
            except Exception as exc:
                if not started.done():
                    started.set_exception(httpx.ReadError("the app failed"))
                else:
                    with contextlib.suppress(asyncio.QueueFull):
                        chunks.put_nowait(exc)
                return
            if not started.done():
                started.set_exception(httpx.ReadError("the app sent no response"))
            with contextlib.suppress(asyncio.QueueFull):
                chunks.put_nowait(_END)  # the body's end when the app never said it

        task = asyncio.create_task(run())
        try:
            status, headers = await started
        except BaseException:
            left.set()
            task.cancel()
            raise
        return httpx.Response(status, headers=headers,
                              stream=_Body(chunks, left, task, self._close_s), request=request)
