"""stdio client transport: a subprocess speaking newline-delimited JSON-RPC (mcp-wire 2).

One reader task routes each line: a response to the request waiting for its id; a request
from the server is answered at once (:func:`~toolkeeper.protocol.client_requests.
server_request_answer`: ``ping``; -32601 for the rest; or, during an exchange given an
``on_request``, by it, in a task of its own); anything else (notifications) to the
waiting requests' collected messages and to the unasked-message queue that
:meth:`StdioTransport.stream` reads.

The server is stopped by its pid: stdin closed, a bounded wait, then SIGTERM, then SIGKILL.
Its stderr goes to the null device (a chatty server never blocks on a full pipe), or, given a
``stderr`` sink, line by line to it (each line cut at :data:`STDERR_LINE_MAX` bytes, read as
it comes, so the pipe never fills either).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from toolkeeper.client.raw import RawAnswer, RawRequest, settled, without_barrier
from toolkeeper.client.transport import (
    SPAWN_FAILED,
    STREAM_OPEN,
    Exchange,
    ServerRequestHandler,
    too_deep,
    too_large,
)
from toolkeeper.errors import (
    ClientConnectionError,
    ClientTimeoutError,
    JsonRpcError,
    ProtocolViolationError,
)
from toolkeeper.protocol.client_requests import server_request_answer
from toolkeeper.protocol.envelope import MAX_DEPTH, decode_message, encode_message, nesting_exceeds

__all__ = ["StdioTransport"]

STDERR_LINE_MAX: Final = 4096
"""A stderr line longer than this reaches the sink cut to it (the rest of the line dropped)."""
_QUEUE_MAX: Final = 1024
"""Unasked messages kept for :meth:`StdioTransport.stream`; the oldest are dropped beyond."""


@dataclass
class _Tap:
    """The messages one exchange has seen, and their size in bytes on the wire."""

    messages: list[Any] = field(default_factory=list)
    size: int = 0


class StdioTransport:
    """One server process and the requests waiting on it."""

    def __init__(self, process: asyncio.subprocess.Process, *, close_s: float,
                 max_line_bytes: int, stderr: Callable[[str], None] | None = None) -> None:
        self._process = process
        self._close_s = close_s
        self._max_line_bytes = max_line_bytes
        self._waiting: dict[object, tuple[asyncio.Future[Any], _Tap, int,
                                          Callable[[Any], None] | None,
                                          ServerRequestHandler | None]] = {}
        self._answering: set[asyncio.Task[None]] = set()
        self._unasked: asyncio.Queue[Any] = asyncio.Queue(_QUEUE_MAX)
        self._failure: Exception | None = None
        self._taps: list[_Tap] = []
        self._tapped = asyncio.Event()
        self._reader = asyncio.create_task(self._read_loop())
        self._reader.add_done_callback(_retrieve)
        self._errors: asyncio.Task[None] | None = None
        if stderr is not None and process.stderr is not None:
            self._errors = asyncio.create_task(_read_stderr(process.stderr, stderr))
            self._errors.add_done_callback(_retrieve)

    @classmethod
    async def start(cls, argv: Sequence[str], *, env: Mapping[str, str] | None,
                    max_line_bytes: int, close_s: float,
                    stderr: Callable[[str], None] | None = None) -> StdioTransport:
        """Start ``argv``; ``stderr``, when given, hears each line of its standard error."""
        try:
            process = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL if stderr is None else asyncio.subprocess.PIPE,
                env=None if env is None else dict(env), limit=max_line_bytes)
        except OSError as exc:
            raise ClientConnectionError(
                f"the server command could not start: {exc.strerror or type(exc).__name__} "
                f"({type(exc).__name__})", code=SPAWN_FAILED,
                data={"kind": type(exc).__name__, "errno": exc.errno,
                      "error": exc.strerror}) from None
        return cls(process, close_s=close_s, max_line_bytes=max_line_bytes, stderr=stderr)

    @property
    def pid(self) -> int:
        return self._process.pid

    async def _read_loop(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        try:
            while line := await stdout.readline():
                if line.strip():
                    await self._route(line)
            self._fail(ClientConnectionError("the server closed its output"))
        except (ValueError, asyncio.LimitOverrunError):
            self._fail(too_large(self._max_line_bytes))
        except JsonRpcError:
            self._fail(ProtocolViolationError("the server wrote a line that is not JSON",
                                              code="client.undecodable"))

    async def _route(self, line: bytes) -> None:
        try:
            message = decode_message(line)
        except JsonRpcError:
            if not nesting_exceeds(line):
                raise
            # A line is a whole message, so the next one is readable: the requests waiting
            # now fail (the deep line may be any one's answer), the session carries on.
            self._fail_waiting(too_deep(MAX_DEPTH))
            return
        for tap in self._taps:
            tap.messages.append(message)
            tap.size += len(line)
        self._tapped.set()
        if isinstance(message, dict) and "method" not in message and "id" in message:
            rid = message["id"]
            # An array or object id answers no request of ours (and is unhashable): ignored,
            # so one stray line cannot stop the reader and leave every request to time out.
            waiting = None if isinstance(rid, (list, dict)) else self._waiting.get(_key(rid))
            if waiting is not None and not waiting[0].done():
                waiting[0].set_result(message)
            return
        if isinstance(message, dict) and "method" in message and "id" in message:
            handler = next((w[4] for w in self._waiting.values() if w[4] is not None), None)
            if handler is None or message.get("method") == "ping":
                await self._answer(message)
            else:  # answered in its own task: the reader goes on reading meanwhile
                task = asyncio.ensure_future(self._answer_with(handler, message))
                self._answering.add(task)
                task.add_done_callback(self._answering.discard)
            return
        for future, collected, max_bytes, on_message, _ in list(self._waiting.values()):
            collected.messages.append(message)
            collected.size += len(line)
            if collected.size > max_bytes and not future.done():
                future.set_exception(too_large(max_bytes))  # a flood before the answer
            elif on_message is not None and isinstance(message, dict):
                on_message(message)
        if self._unasked.full():
            self._unasked.get_nowait()
        self._unasked.put_nowait(message)

    async def _answer(self, request: dict[str, Any]) -> None:
        await self._write(server_request_answer(request))

    async def _answer_with(self, handler: ServerRequestHandler, request: dict[str, Any]
                           ) -> None:
        with contextlib.suppress(ClientConnectionError, ProtocolViolationError):
            await self._write(await handler(request))

    def _fail_waiting(self, error: Exception) -> None:
        for future, *_ in self._waiting.values():
            if not future.done():
                future.set_exception(error)

    def _fail(self, error: Exception) -> None:
        self._failure = error
        self._tapped.set()
        self._fail_waiting(error)
        if self._unasked.full():
            self._unasked.get_nowait()
        self._unasked.put_nowait(None)

    async def _write(self, message: Mapping[str, Any]) -> None:
        await self._write_line(encode_message(message))

    async def exchange(self, message: Mapping[str, Any], headers: Mapping[str, str], *,
                       timeout: float, max_bytes: int,
                       on_message: Callable[[Any], None] | None = None,
                       on_request: ServerRequestHandler | None = None) -> Exchange:
        key = _key(message.get("id"))
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        collected = _Tap()
        self._waiting[key] = (future, collected, max_bytes, on_message, on_request)
        try:
            async with asyncio.timeout(timeout):  # the write too: a server may stop reading
                await self._write(message)
                response = await future
        except TimeoutError:
            raise ClientTimeoutError(f"no answer within {timeout}s",
                                     data={"timeoutS": timeout}) from None
        finally:
            del self._waiting[key]
        return Exchange(None, {}, (*collected.messages, response))

    async def send_raw(self, request: RawRequest, *, timeout: float, max_bytes: int
                       ) -> RawAnswer:
        """Write ``request.body`` as one line, then its barrier; every message until the
        exchange settles (:func:`toolkeeper.client.raw.settled`). Headers do not exist here."""
        if b"\n" in request.body or b"\r" in request.body:
            raise ProtocolViolationError("a stdio message is one line",
                                         code="client.bad_request")
        tap = _Tap()
        self._taps.append(tap)
        try:
            async with asyncio.timeout(timeout):
                await self._write_line(request.body)
                if request.barrier is not None:
                    await self._write(request.barrier)
                while True:
                    self._tapped.clear()
                    if settled(tap.messages, request):
                        break
                    if tap.size > max_bytes:  # a server that floods messages, never settling
                        raise too_large(max_bytes)
                    if self._failure is not None:
                        raise self._failure
                    await self._tapped.wait()
        except TimeoutError:
            raise ClientTimeoutError(f"no answer within {timeout}s",
                                     data={"timeoutS": timeout}) from None
        finally:
            self._taps.remove(tap)
        return RawAnswer(None, {}, without_barrier(tap.messages, request))

    async def _write_line(self, line: bytes) -> None:
        stdin = self._process.stdin
        if self._failure is not None:
            raise self._failure
        assert stdin is not None
        try:
            stdin.write(line + b"\n")
            await stdin.drain()
        except (ConnectionError, RuntimeError):
            raise ClientConnectionError("the server closed its input") from None

    async def notify(self, message: Mapping[str, Any], headers: Mapping[str, str], *,
                     timeout: float) -> int | None:
        try:
            async with asyncio.timeout(timeout):
                await self._write(message)
        except TimeoutError:
            raise ClientTimeoutError(f"the notification was not taken within {timeout}s",
                                     data={"timeoutS": timeout}) from None
        return None

    async def stream(self, message: Mapping[str, Any] | None, headers: Mapping[str, str], *,
                     max_bytes: int) -> AsyncIterator[Any]:
        if message is not None:
            await self._write(message)
        yield STREAM_OPEN
        while True:
            item = await self._unasked.get()
            if item is None:
                if self._failure is not None:
                    raise self._failure
                return
            yield item

    async def end_session(self, headers: Mapping[str, str], *, timeout: float) -> None:
        return None

    async def aclose(self) -> None:
        """Close the server's input, then wait ``close_s`` for it to exit, then terminate it,
        then kill it. A close that is itself cancelled or fails on the way (its caller
        stopping, say a gateway shutting down) kills the process before it goes: the server
        never outlives the transport."""
        for task in list(self._answering):
            task.cancel()
        process = self._process
        try:
            if process.stdin is not None and not process.stdin.is_closing():
                process.stdin.close()
            for stop in (None, process.terminate, process.kill):
                if process.returncode is not None:
                    break
                if stop is not None:
                    with contextlib.suppress(ProcessLookupError):
                        stop()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._close_s):
                        await process.wait()
        except BaseException:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
            self._reader.cancel()
            if self._errors is not None:
                self._errors.cancel()
            with contextlib.suppress(BaseException):  # reaped, so its pipes close in this loop
                async with asyncio.timeout(self._close_s):
                    await process.wait()
                    await self._drain_output(process)
            raise
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._reader
        await self._drain_output(process)
        if self._errors is not None:  # the process is gone: its stderr ends, bounded still
            with contextlib.suppress(TimeoutError, asyncio.CancelledError, Exception):
                async with asyncio.timeout(self._close_s):
                    await asyncio.shield(self._errors)
            self._errors.cancel()  # a child of the server may hold the pipe open

    async def _drain_output(self, process: asyncio.subprocess.Process) -> None:
        """Read what is left of a stopped server's output to its end (discarded): a reader
        that stopped early (a line over the bound) leaves the pipe paused, and the process's
        transport would stay open until the event loop is gone."""
        stdout = process.stdout
        if process.returncode is None or stdout is None:
            return
        with contextlib.suppress(TimeoutError, Exception):
            async with asyncio.timeout(self._close_s):
                while await stdout.read(1 << 16):
                    pass


async def _read_stderr(stream: asyncio.StreamReader, sink: Callable[[str], None]) -> None:
    """Each line of ``stream`` to ``sink`` (decoded, replacing what is not UTF-8; a line over
    :data:`STDERR_LINE_MAX` bytes cut to it), to the stream's end."""
    pending, cut = b"", False
    while chunk := await stream.read(65536):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if not cut:
                _hear(sink, line)
            cut = False
        if len(pending) > STDERR_LINE_MAX:
            if not cut:
                _hear(sink, pending)
            pending, cut = b"", True
    if pending and not cut:
        _hear(sink, pending)


def _hear(sink: Callable[[str], None], line: bytes) -> None:
    text = line[:STDERR_LINE_MAX].decode("utf-8", "replace").rstrip("\r")
    if text.strip():
        with contextlib.suppress(Exception):  # a sink that fails never stops the reading
            sink(text)


def _retrieve(task: asyncio.Task[None]) -> None:
    """The read loop's end is the transport's: its exception (an answer it could not write to
    a server that closed its input) is never left for the loop to report as not retrieved."""
    if not task.cancelled():
        task.exception()


def _key(request_id: object) -> tuple[str, object]:
    """Ids match in value and JSON type: ``1`` and ``"1"`` are different requests."""
    return (type(request_id).__name__, request_id)
