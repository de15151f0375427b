"""stdio: newline-delimited JSON-RPC on stdin/stdout, both eras (the first request decides),
logs on stderr only.

Requests run concurrently, so a handler that awaits does not block ``ping`` and
``notifications/cancelled`` can stop it (a cancelled request gets no response); a plain
``def`` handler runs on the event loop (see :mod:`toolkeeper.server.handlers`). A request that
reuses the id of one still running is refused -32600 (ids name requests in flight). Notifications
a handler emits (progress, log) are written as their own lines before its response, never after
it. A line longer than ``max_line_bytes`` is discarded and answered -32600 with ``"id": null``.

The server stops at end of input, on :meth:`StdioServer.stop` (``run_stdio`` calls it on
SIGINT and SIGTERM), or when its output fails (the reader closed it: nothing written can be
heard). It then ends open streams (``subscriptions/listen``, which would never end by
themselves): with their final result when it owns the change feed (``run_stdio``: one
connection per process), else cancelled. It gives the other in-flight requests ``GRACE_S`` to
finish and write their replies (none when the output failed), and cancels what is left.

With a change feed, a legacy connection hears ``notifications/tools/list_changed`` once its
session is initialized (the 2025 mechanism; the modern era listens with
``subscriptions/listen``). A legacy handler's requests to the client (elicitation, sampling,
roots) are lines of the same pipe, and the client's response lines are routed back to them by
id (:mod:`~toolkeeper.transports.asks`).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import queue
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Generator
from functools import partial
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
from toolkeeper.transports.asgi_io import resume
from toolkeeper.transports.asks import LegacyChannel, PendingAsks
from toolkeeper.transports.http_config import DEFAULT_MAX_BODY
from toolkeeper.transports.session_stream import (
    ChangeFeed,
    ChangeSubscription,
    change_notifications,
)

__all__ = ["GRACE_S", "StdioServer", "run_stdio", "serve_stdio"]

_log = logging.getLogger("toolkeeper.transports.stdio")

_CONNECTION: Final = ""
"""The session key of this connection's requests to the client (the connection is the
session)."""

GRACE_S: Final = 5.0
"""How long requests in flight may take to finish once the server stops (HTTP's bound)."""

class _Oversized:
    """What the line reader gives for a line over the size limit (discarded)."""


_TOO_LONG: Final = _Oversized()
ReadLine = Callable[[], Awaitable[bytes | _Oversized | None]]
Write = Callable[[bytes], Awaitable[None]]


class StdioServer:
    """The stream loop over a line source and a byte sink (stdin/stdout in production)."""

    def __init__(self, kernel: ServerKernel, read_line: ReadLine, write: Write, *,
                 changes: ChangeFeed | None = None, grace_s: float = GRACE_S,
                 own_changes: bool = False, asks: PendingAsks | None = None) -> None:
        self._kernel = kernel
        self._asks = asks if asks is not None else PendingAsks()
        self._own_changes = own_changes  # one connection per process: its feed is ours
        self._read_line = read_line
        self._write_raw = write
        self._grace_s = grace_s
        self._lock = asyncio.Lock()
        self._tasks: dict[RequestId, asyncio.Task[None]] = {}
        self._streams: set[asyncio.Task[None]] = set()
        self._changes = changes
        self._announcing: tuple[ChangeSubscription, asyncio.Task[None]] | None = None
        self._stopping: asyncio.Future[None] | None = None
        self.output_error: OSError | None = None
        """Why the output refused a write (a closed stream is EBADF), if it did: the server
        then stopped."""

    def stop(self) -> None:
        """End the session as end of input would (idempotent; call from the loop's thread)."""
        if self._stopping is None:
            self._stopping = asyncio.get_running_loop().create_future()
        if not self._stopping.done():
            self._stopping.set_result(None)

    async def _write(self, data: bytes) -> None:
        async with self._lock:
            if self.output_error is not None:
                return  # nobody can hear it
            try:
                await self._write_raw(data + b"\n")
            except (OSError, ValueError) as exc:  # EPIPE, ENOSPC; ValueError: stream closed
                self.output_error = (exc if isinstance(exc, OSError)
                                     else OSError(errno.EBADF, "stream closed"))
                _log.warning("stdio: output failed (%s): stopping",
                             self.output_error.strerror or "stream closed")
                self.stop()

    async def _next_line(self) -> bytes | _Oversized | None:
        """The next input line, or None at end of input or once stopped."""
        stopping = self._stopping
        assert stopping is not None
        if stopping.done():
            return None
        # A line at hand is taken without a turn of the loop, so the lines that arrived
        # together are dispatched in one go (a cancel then finds its request not yet started).
        waiting = self._read_line().__await__()
        try:
            suspended_on = waiting.send(None)
        except StopIteration as ready:
            line: bytes | _Oversized | None = ready.value
            return line
        reading = asyncio.ensure_future(_rest_of(waiting, suspended_on))
        await asyncio.wait((reading, stopping), return_when=asyncio.FIRST_COMPLETED)
        if reading.done():
            return reading.result()
        reading.cancel()
        return None

    async def run(self) -> None:
        if self._stopping is None:
            self._stopping = asyncio.get_running_loop().create_future()
        conn = self._kernel.open_stream(TransportFacts("stdio"))
        while True:
            line = await self._next_line()
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
                if outcome.response is not None:
                    self._asks.answer(_CONNECTION, outcome.response)
                task = self._tasks.get(outcome.cancel) if outcome.cancel is not None else None
                if task is not None:
                    # After the task's first step, which is queued already: a request cancelled
                    # before it ran still starts, so its call is logged as cancelled and an
                    # awaitable its handler returned is awaited (closed), not left behind.
                    asyncio.get_running_loop().call_soon(task.cancel)
            else:
                self._start(outcome, conn.era is Era.LEGACY)
            if (self._announcing is None and self._changes is not None
                    and conn.era is Era.LEGACY and conn.session.phase is Phase.READY):
                self._announce(self._changes)
        await self._finish_in_flight()
        if self._announcing is not None:
            subscription, task = self._announcing
            subscription.close()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _finish_in_flight(self) -> None:
        """End open streams (gracefully, with their final result, when this server owns the
        change feed: it closes it; else cancelled), give the other requests the grace period
        (none when the output failed), then cancel what is left and wait for it to unwind
        (bounded as well)."""
        if self._own_changes and self._changes is not None and self.output_error is None:
            self._changes.close()
        else:
            for task in self._streams:
                task.cancel()
        tasks = set(self._tasks.values())
        if tasks and self.output_error is None:
            _, tasks = await asyncio.wait(tasks, timeout=self._grace_s)
        for task in tasks:
            task.cancel()
        if tasks:
            _, stuck = await asyncio.wait(tasks, timeout=self._grace_s)
            if stuck:
                _log.warning("stdio: %d request(s) did not end when cancelled", len(stuck))

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

    def _start(self, pending: Pending, legacy: bool) -> None:
        finished: list[bool] = []  # the request is answered or cancelled: nothing more of it

        async def emit(message: dict[str, Any]) -> None:
            # A handler's leftover task may still report: progress and logs of a request end
            # with its response, as the HTTP exchange ends them with its stream.
            if not finished:
                await self._write(encode_message(message))

        async def complete() -> None:
            try:
                reply = await pending.complete(
                    LegacyChannel(emit, self._asks, _CONNECTION) if legacy else emit)
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


async def _rest_of(waiting: Generator[Any, Any, bytes | _Oversized | None], suspended_on: Any
                   ) -> bytes | _Oversized | None:
    return await resume(waiting, suspended_on)


def _line_reader(read_chunk: Callable[[], bytes], limit: int
                 ) -> Callable[[], bytes | _Oversized | None]:
    """Lines (newline kept) from ``read_chunk`` (b"" at end of input), the last one without
    its newline; a line longer than ``limit`` before its newline is skipped up to the next one
    and given as ``_TOO_LONG``; None at end of input. Fed from the file descriptor with
    ``os.read`` in production: no Python file object, so a daemon thread blocked here holds no
    lock the interpreter's shutdown (which closes ``sys.stdin``) would wait for."""
    buffer = bytearray()
    eof = False

    def fill() -> bool:
        nonlocal eof
        if eof:
            return False
        chunk = read_chunk()
        if chunk:
            buffer.extend(chunk)
        else:
            eof = True
        return bool(chunk)

    def read() -> bytes | _Oversized | None:
        while True:
            newline = buffer.find(b"\n")
            if newline >= 0:
                line = bytes(buffer[:newline + 1])
                del buffer[:newline + 1]
                return _TOO_LONG if newline > limit else line
            if len(buffer) > limit:  # over the limit with no end in sight: skip to the next
                buffer.clear()
                while fill():
                    newline = buffer.find(b"\n")
                    if newline >= 0:
                        del buffer[:newline + 1]
                        break
                    buffer.clear()
                return _TOO_LONG
            if not fill():
                if not buffer:
                    return None
                line = bytes(buffer)  # the last line, without its newline
                buffer.clear()
                return line

    return read


_CHUNK: Final = 65536


def _line_source(stream: BinaryIO, limit: int) -> Callable[[], bytes | _Oversized | None]:
    """:func:`_line_reader` over ``stream``: its descriptor when it has one, else (an
    in-memory stream) its own ``read1``/``read``."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        read = getattr(stream, "read1", stream.read)
        return _line_reader(partial(read, _CHUNK), limit)
    return _line_reader(partial(os.read, fd, _CHUNK), limit)


class _DaemonReader:
    """Lines read by one daemon thread, one at a time as asked: a thread blocked in
    ``readline`` never holds up the loop's shutdown or the interpreter's exit, as a worker of
    the loop's default executor would (``asyncio.run`` joins those)."""

    def __init__(self, read: Callable[[], bytes | _Oversized | None]) -> None:
        self._read = read
        self._asks: queue.SimpleQueue[tuple[asyncio.AbstractEventLoop, asyncio.Future[Any]]] = (
            queue.SimpleQueue())
        self._thread: threading.Thread | None = None

    async def __call__(self) -> bytes | _Oversized | None:
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[bytes | _Oversized | None] = loop.create_future()
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="toolkeeper-stdin",
                                            daemon=True)
            self._thread.start()
        self._asks.put((loop, answer))
        return await answer

    def _serve(self) -> None:
        while True:
            loop, answer = self._asks.get()
            line: bytes | _Oversized | None = None
            error: BaseException | None = None
            try:
                line = self._read()
            except BaseException as exc:  # handed to the awaiting coroutine
                error = exc
            try:
                loop.call_soon_threadsafe(_settle, answer, line, error)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                return


def _settle(answer: asyncio.Future[Any], line: Any, error: BaseException | None) -> None:
    """Hand a read's outcome to its reader, unless it stopped waiting (cancelled)."""
    if answer.done():
        return
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(line)


async def serve_stdio(kernel: ServerKernel, *, stdin: BinaryIO | None = None,
                      stdout: BinaryIO | None = None,
                      max_line_bytes: int = DEFAULT_MAX_BODY,
                      changes: ChangeFeed | None = None, grace_s: float = GRACE_S,
                      signals: bool = False, own_changes: bool = False,
                      asks: PendingAsks | None = None,
                      on_stop: Callable[[], Awaitable[None]] | None = None) -> None:
    """Serve ``kernel`` on binary stdin/stdout until end of input (``changes``: the gateway's
    change hub, for a legacy session's list_changed notifications, and ``own_changes`` when
    this connection is its only user, so stopping ends listen streams with their final
    result; ``signals``: SIGINT and
    SIGTERM stop it gracefully, main thread only; ``asks``: the bounds of a legacy handler's
    requests to the client; ``on_stop``: awaited on the loop once serving ended, so what
    the gateway opened on it, such as upstream processes, is closed before the loop is).
    Raises ValueError when a standard stream
    is closed at the start, and the OSError of the write the output refused, if one did."""
    if (stdin is None and sys.stdin is None) or (stdout is None and sys.stdout is None):
        raise ValueError("standard input or output is closed")
    source = stdin if stdin is not None else sys.stdin.buffer
    sink = stdout if stdout is not None else sys.stdout.buffer
    loop = asyncio.get_running_loop()

    async def write(data: bytes) -> None:
        sink.write(data)
        sink.flush()

    server = StdioServer(kernel, _DaemonReader(_line_source(source, max_line_bytes)), write,
                         changes=changes, grace_s=grace_s, own_changes=own_changes, asks=asks)
    installed: list[signal.Signals] = []
    if signals:
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(number, server.stop)
            installed.append(number)
    try:
        await server.run()
    finally:
        for number in installed:
            loop.remove_signal_handler(number)
        if on_stop is not None:
            await on_stop()
    if server.output_error is not None:
        raise server.output_error


def run_stdio(kernel: ServerKernel, **options: Any) -> None:
    """Blocking entry point of ``toolkeeper serve --stdio`` (SIGINT and SIGTERM stop it
    gracefully)."""
    asyncio.run(serve_stdio(kernel, signals=True, own_changes=True, **options))
