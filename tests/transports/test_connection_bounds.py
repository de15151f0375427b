"""Connection bounds of ``toolkeeper serve`` over HTTP (``HttpConfig.head_timeout_s``,
``idle_timeout_s``, ``max_connections``; :mod:`toolkeeper.transports.connection_bounds`): idle
and slow-header floods are closed at their limits while a normal client is still answered
within a second, a kept-alive connection that stays silent is closed, and beyond the cap a new
connection is refused at once while the clients already connected keep working.

Each server is a real ``python -m toolkeeper serve`` process on 127.0.0.1 with short limits,
stopped by its pid, except for the last tests, which run both uvicorn HTTP implementations
(httptools, what ``serve`` uses, and h11) in process. Floods are raw sockets watched with
``select`` under a deadline.
"""

from __future__ import annotations

import contextlib
import json
import re
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

import pytest
from lifecycle_kit import BOUND_S, Conn, call_body, live_server, modern_call_head

from process_kit import read_until
from toolkeeper.transports import HttpConfig, runner
from toolkeeper.transports.connection_bounds import bounded_protocol

HEAD_S: Final = 0.5
"""The head (and, where said, idle) limit the servers are started with."""
EARLY_S: Final = 0.05
"""How early a limit may seem to fire: the event loop's clock is read once per iteration."""
WATCH_S: Final = 30.0
"""How long a close is watched for: a safety bound only (a loaded machine closes late, never
early), so the limits are asserted from below and a limit that never fires fails the count."""
ANSWER_S: Final = 1.0
"""How soon a normal client must be answered during a flood."""
ARGUMENTS: Final = {"reference": "PMT-771", "include_legs": True}


@contextmanager
def serving(*options: str, open_files: int | None = None) -> Iterator[int]:
    """A ``toolkeeper serve --demo`` process with ``options``; yields its port. With
    ``open_files``, its descriptor limit (RLIMIT_NOFILE) is lowered to that first."""
    command = [sys.executable, "-m", "toolkeeper", "serve", "--registry", "memory:", "--demo",
               "--port", "0", "--log-level", "warning", *options]
    if open_files is not None:
        command = ["sh", "-c", f'ulimit -n {open_files} && exec "$@"', "sh", *command]
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = read_until(proc.stderr, re.compile(rb"toolkeeper gateway on (\S+/mcp)\n"),
                         30).group(1).decode()
        yield int(url.rsplit(":", 1)[1].split("/")[0])
    finally:
        proc.kill()
        proc.wait(timeout=10)
        assert proc.stderr is not None
        proc.stderr.close()


def ask(conn: Conn, port: int, deadline_s: float = ANSWER_S) -> int:
    """One normal ``tools/call`` on ``conn``: its status, the result checked when 200."""
    body = call_body("payments.lookup", 7, arguments=ARGUMENTS)
    conn.send(modern_call_head("payments.lookup", port, length=len(body)) + body)
    status, _, data = conn.response(deadline=time.monotonic() + deadline_s)
    if status == 200:
        assert json.loads(data)["result"]["isError"] is False
    return status


def answered_anew(port: int) -> int:
    """A new client's normal request: the status it gets within ``ANSWER_S`` of connecting."""
    conn = Conn(port, timeout=ANSWER_S)
    try:
        return ask(conn, port)
    finally:
        conn.close()


def connect_silently(port: int, count: int) -> list[tuple[socket.socket, float]]:
    """``count`` connections that send nothing (non-blocking connects), with when each began."""
    out = []
    for _ in range(count):
        began = time.monotonic()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", port))
        out.append((sock, began))
    return out


def _ended(sock: socket.socket, received: bytearray) -> bool:
    """Read what ``sock`` (readable now) has into ``received``: whether the server closed it."""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except BlockingIOError:
        return False
    except (ConnectionResetError, ConnectionRefusedError):
        pass
    return True


def closings(socks: list[tuple[socket.socket, float]], seconds: float,
             trickle: bytes = b"") -> dict[int, tuple[float, bytes]]:
    """Watch ``socks`` until all are closed or ``seconds`` pass: for each closed one (by
    index), how long after its start it closed and what the server sent. With ``trickle``,
    every open socket is sent its next byte on each round (about every 50 ms)."""
    for sock, _ in socks:
        sock.setblocking(False)
    received = [bytearray() for _ in socks]
    done: dict[int, tuple[float, bytes]] = {}
    sent = 0
    deadline = time.monotonic() + seconds
    while len(done) < len(socks) and time.monotonic() < deadline:
        open_ = {sock: i for i, (sock, _) in enumerate(socks) if i not in done}
        if trickle:
            for sock in list(open_):
                with contextlib.suppress(OSError):  # closed by the server: the read sees it
                    sock.send(trickle[sent % len(trickle):][:1])
            sent += 1
        readable, _, _ = select.select(list(open_), [], [], 0.05)
        for sock in readable:
            index = open_[sock]
            if _ended(sock, received[index]):
                done[index] = (time.monotonic() - socks[index][1], bytes(received[index]))
    return done


def drop(socks: list[tuple[socket.socket, float]]) -> None:
    for sock, _ in socks:
        sock.close()


# A request head that never completes: one header line that goes on and on.
ENDLESS_HEAD: Final = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 4000


@pytest.fixture(scope="module")
def fast() -> Iterator[int]:
    with serving("--head-timeout", str(HEAD_S), "--idle-timeout", str(HEAD_S)) as port:
        yield port


def test_an_idle_connection_flood_leaves_a_new_client_answered_and_ends_at_the_head_limit(
        fast: int) -> None:
    flood = connect_silently(fast, 200)
    try:
        assert answered_anew(fast) == 200
        closed = closings(flood, WATCH_S)
        assert len(closed) == 200
        assert all(after >= HEAD_S - EARLY_S and data == b"" for after, data in closed.values())
    finally:
        drop(flood)


def test_a_slow_header_flood_leaves_a_new_client_answered_and_ends_at_the_head_limit(
        fast: int) -> None:
    flood = []
    for _ in range(100):
        began = time.monotonic()
        flood.append((socket.create_connection(("127.0.0.1", fast), timeout=5), began))
    try:
        for sock, _ in flood:
            sock.sendall(ENDLESS_HEAD[:1])
        assert answered_anew(fast) == 200
        closed = closings(flood, WATCH_S, trickle=ENDLESS_HEAD[1:])
        assert len(closed) == 100
        assert all(after >= HEAD_S - EARLY_S and data == b"" for after, data in closed.values())
    finally:
        drop(flood)


def test_a_head_trickled_after_a_response_is_cut_off_at_the_head_limit_from_that_response(
        fast: int) -> None:
    conn = Conn(fast)
    try:
        assert ask(conn, fast) == 200
        answered_at = time.monotonic()
        conn.send(ENDLESS_HEAD[:1])  # a first byte: uvicorn's idle timer no longer runs
        closed = closings([(conn.sock, answered_at)], WATCH_S, trickle=ENDLESS_HEAD[1:])
        assert list(closed) == [0]
        assert closed[0][0] >= HEAD_S - EARLY_S
    finally:
        conn.close()


def test_a_kept_alive_connection_silent_after_a_response_is_closed_at_the_idle_limit() -> None:
    with serving("--head-timeout", "60", "--idle-timeout", str(HEAD_S)) as port:
        conn = Conn(port)
        try:
            assert ask(conn, port) == 200
            answered_at = time.monotonic()
            closed = closings([(conn.sock, answered_at)], WATCH_S)
            assert list(closed) == [0]
            assert closed[0][0] >= HEAD_S - EARLY_S and closed[0][1] == b""
        finally:
            conn.close()


def test_beyond_the_connection_cap_a_new_connection_is_refused_at_once_and_the_others_work(
        ) -> None:
    with serving("--max-connections", "20", "--max-connections-per-ip", "20",
                 "--head-timeout", "60", "--idle-timeout", "60") as port:
        clients = [Conn(port) for _ in range(20)]
        try:
            assert [ask(conn, port) for conn in clients] == [200] * 20
            extra = connect_silently(port, 1)
            try:
                closed = closings(extra, ANSWER_S)
                assert list(closed) == [0]
                assert closed[0][1].startswith(b"HTTP/1.1 503 ")
                assert b"\r\nconnection: close\r\n" in closed[0][1]
            finally:
                drop(extra)
            assert [ask(conn, port) for conn in clients] == [200] * 20
            clients.pop().close()  # room again: a new client is served once the server sees it
            statuses = (answered_anew(port) for _ in range(50))  # each a whole round trip
            assert next((s for s in statuses if s != 503), 503) == 200
        finally:
            for conn in clients:
                conn.close()


def test_under_a_small_descriptor_limit_a_larger_idle_flood_starves_no_client() -> None:
    """256 descriptors: the default cap is lowered below it (256 less the headroom), so 300
    silent connections are refused or closed at the head limit, a client connected before the
    flood is answered within a second during it, and a new one after it."""
    with serving("--head-timeout", str(HEAD_S), "--idle-timeout", "60",
                 open_files=256) as port:
        early = Conn(port)
        flood = connect_silently(port, 300)
        try:
            assert ask(early, port) == 200
            closed = closings(flood, WATCH_S)
            assert len(closed) == 300
            assert {data[:13] for _, data in closed.values()} <= {b"", b"HTTP/1.1 503 "}
            assert answered_anew(port) == 200
        finally:
            drop(flood)
            early.close()


@pytest.fixture(params=["httptools", "h11"])
def implementation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The runner's servers use this uvicorn HTTP implementation for the test."""
    http: str = request.param
    monkeypatch.setattr(runner, "bounded_protocol",  # in place of the runner's own choice
                        lambda head, cap, http=http, **bounds: bounded_protocol(
                            head, cap, request.param, **bounds))
    return http


def test_a_pipelined_request_served_past_the_head_limit_is_not_cut_off(
        implementation: str) -> None:
    """The head deadline stops when a head is complete (here the second, pipelined one is
    complete before the first response ends) and restarts after the last response."""
    with live_server(HttpConfig(head_timeout_s=HEAD_S, idle_timeout_s=60)) as live:
        port = live.server.port
        echo, hang = call_body("t.echo", 1), call_body("t.hang", 2)
        conn = Conn(port, modern_call_head("t.echo", port, length=len(echo)) + echo
                    + modern_call_head("t.hang", port, length=len(hang)) + hang)
        try:
            status, _, body = conn.response()
            assert (status, json.loads(body)["id"]) == (200, 1)
            assert live.probe.started.wait(BOUND_S)
            assert not conn.closed_by_server(HEAD_S * 2)
            live.probe.release.set()
            status, _, body = conn.response()
            assert (status, json.loads(body)["id"]) == (200, 2)
            answered_at = time.monotonic()
            assert conn.closed_by_server(WATCH_S)
            assert time.monotonic() - answered_at >= HEAD_S - EARLY_S
        finally:
            conn.close()


def test_a_silent_connection_is_closed_at_the_head_limit_and_one_over_the_cap_refused(
        implementation: str) -> None:
    with live_server(HttpConfig(head_timeout_s=HEAD_S, max_connections=1)) as live:
        silent = connect_silently(live.server.port, 1)
        try:
            over = connect_silently(live.server.port, 1)
            try:
                refused = closings(over, ANSWER_S)
                assert refused[0][1].startswith(b"HTTP/1.1 503 ")
            finally:
                drop(over)
            closed = closings(silent, WATCH_S)
            assert closed[0][0] >= HEAD_S - EARLY_S and closed[0][1] == b""
        finally:
            drop(silent)


def test_an_unknown_http_implementation_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        bounded_protocol(1.0, 10, "zttp")
