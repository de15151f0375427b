"""stdio: newline-delimited JSON-RPC on stdin/stdout, both eras (the first request decides),
logs on stderr only.

Requests run concurrently, so a long handler does not block ``ping`` and
``notifications/cancelled`` can stop it (a cancelled request gets no response). A request that
reuses the id of one still running is refused -32600 (ids name requests in flight). Notifications
a handler emits (progress, log) are written as their own lines before its response. A line
longer than ``max_line_bytes`` is discarded and answered -32600 with ``"id": null``. At end of
input the server cancels open streams (``subscriptions/listen``: they would never end) and
waits for the other in-flight requests, then returns. With a change feed, a legacy connection
hears ``notifications/tools/list_changed`` once its session is initialized (the 2025
mechanism; the modern era listens with ``subscriptions/listen``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO, Final

from toolkeeper.protocol import (
    Accepted,
    Era,
    Pending,
    Phase,
    Reply,
    RequestId,
    ServerKernel,
    TransportFacts,
    encode_message,
    error_message,
)
from toolkeeper.protocol.codes import INVALID_REQUEST
from toolkeeper.transports.http import DEFAULT_MAX_BODY
from toolkeeper.transports.session_stream import (
    ChangeFeed,
    ChangeSubscription,
    change_notifications,
)

__all__ = ["StdioServer", "run_stdio"]

_log = logging.getLogger("toolkeeper.transports.stdio")

class _Oversized:
    """What the line reader gives for a line over the size limit (discarded)."""


_TOO_LONG: Final = _Oversized()
ReadLine = Callable[[], Awaitable[bytes | _Oversized | None]]
Write = Callable[[bytes], Awaitable[None]]


class StdioServer:
    """The stream loop over a line source and a byte sink (stdin/stdout in production)."""

    def __init__(self, kernel: ServerKernel, read_line: ReadLine, write: Write, *,
                 changes: ChangeFeed | None = None) -> None:
        self._kernel = kernel
        self._read_line = read_line
        self._write_raw = write
        self._lock = asyncio.Lock()
        self._tasks: dict[RequestId, asyncio.Task[None]] = {}
        self._streams: set[asyncio.Task[None]] = set()
        self._changes = changes
        self._announcing: tuple[ChangeSubscription, asyncio.Task[None]] | None = None

    async def _write(self, data: bytes) -> None:
        async with self._lock:
            await self._write_raw(data + b"\n")

    async def run(self) -> None:
        conn = self._kernel.open_stream(TransportFacts("stdio"))
        while True:
            line = await self._read_line()
            if line is None:
                break
            if isinstance(line, _Oversized):
                await self._write(encode_message(error_message(None, {
                    "code": INVALID_REQUEST, "message": "message exceeds the size limit"})))
                continue
            if not line.strip():
                continue
            outcome = self._kernel.handle_stream(conn, line, time.perf_counter_ns(), self._tasks)
            if isinstance(outcome, Reply):
                await self._write(outcome.body)
            elif isinstance(outcome, Accepted):
                task = self._tasks.get(outcome.cancel) if outcome.cancel is not None else None
                if task is not None:
                    # After the task's first step, which is queued already: a request cancelled
                    # before it ran still starts, so its call is logged as cancelled and an
                    # awaitable its handler returned is awaited (closed), not left behind.
                    asyncio.get_running_loop().call_soon(task.cancel)
            else:
                self._start(outcome)
            if (self._announcing is None and self._changes is not None
                    and conn.era is Era.LEGACY and conn.session.phase is Phase.READY):
                self._announce(self._changes)
        for task in self._streams:
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        if self._announcing is not None:
            subscription, task = self._announcing
            subscription.close()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _announce(self, changes: ChangeFeed) -> None:
        """A legacy session is ready: write each change the feed reports as its own line."""
        try:
            subscription = changes.open()
        except Exception:  # the feed is full or closing: this connection hears nothing
            _log.warning("stdio: could not subscribe to registry changes", exc_info=True)
            return

        async def pump() -> None:
            while (batch := await subscription.next()) is not None:
                for line in change_notifications(batch):
                    await self._write(line)

        self._announcing = (subscription, asyncio.ensure_future(pump()))

    def _start(self, pending: Pending) -> None:
        finished: list[bool] = []  # the request is answered or cancelled: nothing more of it

        async def emit(message: dict[str, Any]) -> None:
            # A handler's leftover task may still report: progress and logs of a request end
            # with its response, as the HTTP exchange ends them with its stream.
            if not finished:
                await self._write(encode_message(message))

        async def complete() -> None:
            try:
                reply = await pending.complete(emit)
            except asyncio.CancelledError:
                finished.append(True)
                return  # cancelled by the client: no response (MCP cancellation)
            finished.append(True)
            await self._write(reply.body)

        task = asyncio.ensure_future(complete())
        self._tasks[pending.request_id] = task
        if pending.stream:
            self._streams.add(task)

        def forget(done: asyncio.Task[None]) -> None:
            self._streams.discard(done)
            if self._tasks.get(pending.request_id) is done:
                del self._tasks[pending.request_id]

        task.add_done_callback(forget)


def _reader(stream: BinaryIO, limit: int) -> Callable[[], bytes | _Oversized | None]:
    def read() -> bytes | _Oversized | None:
        line = stream.readline(limit + 1)
        if not line:
            return None
        if len(line) > limit and not line.endswith(b"\n"):
            while True:  # discard the rest of the oversized line
                rest = stream.readline(65536)
                if not rest or rest.endswith(b"\n"):
                    break
            return _TOO_LONG
        return line
    return read


async def serve_stdio(kernel: ServerKernel, *, stdin: BinaryIO | None = None,
                      stdout: BinaryIO | None = None,
                      max_line_bytes: int = DEFAULT_MAX_BODY,
                      changes: ChangeFeed | None = None) -> None:
    """Serve ``kernel`` on binary stdin/stdout until end of input (``changes``: the gateway's
    change hub, for a legacy session's list_changed notifications)."""
    source = stdin if stdin is not None else sys.stdin.buffer
    sink = stdout if stdout is not None else sys.stdout.buffer
    loop = asyncio.get_running_loop()
    read = _reader(source, max_line_bytes)

    async def read_line() -> bytes | _Oversized | None:
        return await loop.run_in_executor(None, read)

    async def write(data: bytes) -> None:
        sink.write(data)
        with contextlib.suppress(BrokenPipeError):
            sink.flush()

    await StdioServer(kernel, read_line, write, changes=changes).run()


def run_stdio(kernel: ServerKernel, **options: Any) -> None:
    """Blocking entry point of ``toolkeeper serve --stdio``."""
    asyncio.run(serve_stdio(kernel, **options))
