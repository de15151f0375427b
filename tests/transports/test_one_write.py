"""A response in one write (``transports.one_write``): the runner's connections send a response's
head together with its body, never hold a head past the event loop's next turn, keep every
write in order, send what is held before closing and drop it on abort. Over real HTTP on
127.0.0.1, each answer of a kept-alive connection is one write system call and arrives whole
in the first read after its request. Every wait is bounded."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from toolkeeper.registry import Registry
from toolkeeper.server import build_app
from toolkeeper.transports import serve_in_thread
from toolkeeper.transports.one_write import OneWrite


class _Recorded:
    """The transport calls a protocol makes, as (method, data)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, bytes]] = []
        self.closing = False

    def write(self, data: bytes) -> None:
        self.calls.append(("write", bytes(data)))

    def close(self) -> None:
        self.closing = True
        self.calls.append(("close", b""))

    def abort(self) -> None:
        self.closing = True
        self.calls.append(("abort", b""))

    def is_closing(self) -> bool:
        return self.closing

    def get_write_buffer_size(self) -> int:
        return 0


def _one_write(recorded: _Recorded) -> OneWrite:
    return OneWrite(recorded, asyncio.get_running_loop())  # type: ignore[arg-type]


async def _turn() -> None:
    """One turn of the loop: what was scheduled with call_soon before it has run (FIFO)."""
    loop = asyncio.get_running_loop()
    turned = loop.create_future()
    loop.call_soon(turned.set_result, None)
    await turned


def test_a_held_head_goes_out_with_the_body_in_one_write() -> None:
    async def scenario() -> None:
        recorded = _Recorded()
        transport = _one_write(recorded)
        transport.hold_next()
        transport.write(b"HEAD")
        assert recorded.calls == [] and transport.get_write_buffer_size() == 4
        transport.write(b"BODY")
        transport.write(b"MORE")
        await _turn()
        assert recorded.calls == [("write", b"HEADBODY"), ("write", b"MORE")]

    asyncio.run(scenario())


def test_a_head_with_nothing_after_it_goes_out_at_the_next_turn() -> None:
    async def scenario() -> None:
        recorded = _Recorded()
        transport = _one_write(recorded)
        transport.hold_next()
        transport.write(b"HEAD")
        await _turn()
        assert recorded.calls == [("write", b"HEAD")]
        transport.write(b"EVENT")  # not held: only the write after hold_next is
        assert recorded.calls == [("write", b"HEAD"), ("write", b"EVENT")]

    asyncio.run(scenario())


@pytest.mark.parametrize(("end", "expected"), [
    ("close", [("write", b"HEAD"), ("close", b"")]),
    ("abort", [("abort", b"")]),
])
def test_closing_sends_what_is_held_first_and_aborting_drops_it(
        end: str, expected: list[tuple[str, bytes]]) -> None:
    async def scenario() -> None:
        recorded = _Recorded()
        transport = _one_write(recorded)
        transport.hold_next()
        transport.write(b"HEAD")
        getattr(transport, end)()
        await _turn()  # the scheduled release finds nothing left to send
        assert recorded.calls == expected

    asyncio.run(scenario())


def test_nothing_is_written_to_a_transport_already_closing() -> None:
    async def scenario() -> None:
        recorded = _Recorded()
        transport = _one_write(recorded)
        transport.hold_next()
        transport.write(b"HEAD")
        recorded.closing = True  # the peer went away before the loop's next turn
        await _turn()
        assert recorded.calls == []

    asyncio.run(scenario())


LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()


def _request(port: int) -> bytes:
    return (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n"
            f"Content-Length: {len(LIST)}\r\n\r\n").encode() + LIST


def _lengths(head: bytes) -> list[int]:
    """The Content-Length values of a response head."""
    return [int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")]


def _whole(first: bytes) -> bool:
    head, _, body = first.partition(b"\r\n\r\n")
    lengths = _lengths(head)
    return len(lengths) == 1 and len(body) == lengths[0]


def _writes() -> int:
    """This process's write system calls so far (``syscw`` of ``/proc/self/io``: write and
    writev, which the event loop sends with; a socket's ``send``, the client's here, is not
    one)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("syscw:"):
            return int(line.split()[1])
    raise AssertionError("no syscw in /proc/self/io")


def _read_answer(sock: socket.socket, first: bytes = b"") -> tuple[bytes, bytes]:
    """One whole answer (head, body) from ``sock``, and what came after it."""
    data = first
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(1 << 20)
        assert chunk, data
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    length = _lengths(head)[0]
    while len(rest) < length:
        chunk = sock.recv(1 << 20)
        assert chunk, rest
        rest += chunk
    return head + b"\r\n\r\n" + rest[:length], rest[length:]


IMPLEMENTATIONS = pytest.mark.parametrize("http", ["httptools", "h11"])


@contextmanager
def _connection(http: str) -> Iterator[tuple[int, socket.socket]]:
    """A kept-alive connection to a gateway served with uvicorn's ``http`` implementation:
    (its port, the socket)."""
    app: Any
    app, _ = build_app(Registry.open("memory:"))
    with (serve_in_thread(app, http=http) as running,
          socket.create_connection(("127.0.0.1", running.port), timeout=10) as sock):
        yield running.port, sock


@IMPLEMENTATIONS
@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="counts writes through /proc")
def test_each_answer_of_a_kept_alive_connection_is_one_write_and_arrives_whole(
        http: str) -> None:
    requests = 40
    with _connection(http) as (port, sock):
        sock.sendall(_request(port))  # the connection's first answer, not counted
        first = sock.recv(1 << 20)
        assert _whole(first)
        assert b"\r\nserver:" not in first.partition(b"\r\n\r\n")[0].lower()
        before = _writes()
        for _ in range(requests):
            sock.sendall(_request(port))
            first = sock.recv(1 << 20)
            assert first.startswith(b"HTTP/1.1 200 ") and _whole(first), first[:200]
        written = _writes() - before
    # one a request (a stray write elsewhere in the process may add a few); two without it
    assert requests <= written < requests * 3 // 2, written


@IMPLEMENTATIONS
@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="counts writes through /proc")
def test_an_interim_100_continue_goes_out_at_once_and_the_answer_after_it_whole(
        http: str) -> None:
    requests = 10
    with _connection(http) as (port, sock):
        head, _, body = _request(port).partition(b"\r\n\r\n")
        before = _writes()
        for _ in range(requests):
            sock.sendall(head + b"\r\nExpect: 100-continue\r\n\r\n")
            interim = sock.recv(1 << 20)  # the body is not sent until this arrives
            assert interim == b"HTTP/1.1 100 Continue\r\n\r\n", interim
            sock.sendall(body)
            answer, rest = _read_answer(sock)
            assert answer.startswith(b"HTTP/1.1 200 ") and rest == b""
        written = _writes() - before
    # the interim response and the answer: two writes a request (three if the interim one
    # took the hold meant for the head)
    assert 2 * requests <= written < 2 * requests + requests // 2, written


@IMPLEMENTATIONS
def test_pipelined_requests_are_answered_in_order_each_whole(http: str) -> None:
    with _connection(http) as (port, sock):
        sock.sendall(b"".join(_request(port).replace(b'"id": 1', f'"id": {n}'.encode())
                              for n in (7, 8, 9)))
        rest = b""
        for n in (7, 8, 9):
            answer, rest = _read_answer(sock, rest)
            assert answer.startswith(b"HTTP/1.1 200 "), answer[:100]
            assert json.loads(answer.partition(b"\r\n\r\n")[2])["id"] == n
        assert rest == b""
