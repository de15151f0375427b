"""The Streamable HTTP transport's connection and stream lifecycle, over a real uvicorn
on 127.0.0.1 driven by raw sockets (SPEC 3.2, mcp-wire 4.4, 6, 9, 10): clients that leave
before the reply or mid-stream, slow readers, pipelining, chunked and ``Expect: 100-continue``
bodies, other methods and paths, the legacy standalone GET stream, and a ``toolkeeper serve``
process stopped by SIGTERM while streams and calls are open.

Every wait is bounded (``BOUND_S`` unless said otherwise).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest
from lifecycle_kit import (
    BOUND_S,
    Conn,
    Live,
    call_body,
    contract,
    legacy_call_body,
    legacy_head,
    legacy_session,
    listen_request,
    live_server,
    modern_call_head,
    sse_messages,
    wait_until,
    write_estate,
)

from process_kit import read_until
from toolkeeper.protocol import SessionTable
from toolkeeper.transports import HttpConfig

KIT: Final = Path(__file__).resolve().parent / "lifecycle_kit.py"


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    with live_server(HttpConfig(keepalive_s=0.05, max_body_bytes=10_000,
                                body_timeout_s=1.0)) as value:
        yield value


@pytest.fixture
def fresh(live: Live) -> Live:
    probe = live.probe
    probe.release.clear()
    probe.started.clear()
    for kept in (probe.cancelled, probe.finished, probe.emitted):
        kept.clear()
    return live


def _post(port: int, name: str, body: bytes, **head: Any) -> Conn:
    return Conn(port, modern_call_head(name, port, length=len(body), **head) + body)


def _loop_state(port: int) -> dict[str, int]:
    """The server loop's live tasks and armed timers, asked through a tool."""
    conn = _post(port, "t.tasks", call_body("t.tasks", "tasks"))
    try:
        status, _, body = conn.response()
    finally:
        conn.close()
    assert status == 200
    state: dict[str, int] = json.loads(body)["result"]["structuredContent"]
    return state


def _read_stream(conn: Conn, seconds: float = BOUND_S) -> bytes:
    """The rest of a chunked response, to its last chunk."""
    deadline = time.monotonic() + seconds
    data = bytearray()
    while (chunk := conn.chunk(deadline=deadline)) is not None:
        data += chunk
    return bytes(data)


# --- clients that leave ---------------------------------------------------------------------

def test_two_hundred_clients_that_leave_before_the_reply_or_mid_stream_leave_nothing_behind(
        fresh: Live) -> None:
    """Half wait silently (the reply would be JSON), half have committed to SSE (a progress
    event); a quarter reset the connection instead of closing it. Every handler is cancelled and
    logged so, and the loop's tasks and timers, and the legacy in-flight table, are back to
    what they were."""
    port = fresh.server.port
    baseline = _loop_state(port)
    for number in range(200):
        fresh.probe.started.clear()
        meta: dict[str, Any] = {"progressToken": number} if number % 2 else {}
        conn = _post(port, "t.hang", call_body("t.hang", number, **meta))
        assert fresh.probe.started.wait(BOUND_S)
        if number % 2:
            assert conn.head()[0] == 200  # committed to SSE before the client leaves
        if number % 4 == 0:
            conn.abort()
        else:
            conn.close()
    session_id = legacy_session(port)
    for number in range(20):
        fresh.probe.started.clear()
        body = legacy_call_body("t.hang", number)
        conn = Conn(port, legacy_head(port, session_id, length=len(body)) + body)
        assert fresh.probe.started.wait(BOUND_S)
        conn.close()
    assert wait_until(lambda: len(fresh.probe.cancelled) == 220)
    assert wait_until(lambda: _loop_state(port) == baseline)
    assert fresh.app._legacy.in_flight == {}
    hangs = Counter(outcome for tool, outcome in fresh.outcomes() if tool == "t.hang")
    assert hangs == {"cancelled": 220}
    assert fresh.probe.finished == []


def test_a_client_that_leaves_mid_progress_stream_cancels_a_handler_that_only_awaits_progress(
        fresh: Live) -> None:
    count = 20_000  # 1 KiB each: far more than the socket buffers hold
    conn = _post(fresh.server.port, "t.chatty",
                 call_body("t.chatty", 1, arguments={"n": count}, progressToken="p"))
    assert conn.head()[0] == 200
    assert conn.chunk() is not None  # the stream runs
    conn.abort()
    assert wait_until(lambda: bool(fresh.probe.cancelled or fresh.probe.finished))
    assert fresh.probe.cancelled == ["t.chatty"]
    assert len(fresh.probe.emitted) < count
    assert [o for t, o in fresh.outcomes() if t == "t.chatty"][-1:] == ["cancelled"]


def test_a_slow_reader_holds_a_chatty_handler_at_the_socket_buffers_and_loses_nothing(
        fresh: Live) -> None:
    """Backpressure: while the client reads nothing, the handler is held once the buffers are
    full (memory stays bounded); then every event arrives, in order, the response last."""
    count = 20_000
    conn = _post(fresh.server.port, "t.chatty",
                 call_body("t.chatty", 7, arguments={"n": count}, progressToken="p"))
    try:
        status, headers = conn.head()
        assert (status, headers["content-type"]) == (200, "text/event-stream")
        assert not wait_until(lambda: len(fresh.probe.emitted) >= count, 1.0)
        assert fresh.probe.finished == []
        messages = sse_messages(_read_stream(conn, 15))
    finally:
        conn.close()
    progress = [m["params"]["progress"] for m in messages[:-1]]
    assert progress == list(range(count))
    assert messages[-1]["id"] == 7
    assert messages[-1]["result"]["content"] == [{"type": "text", "text": "done"}]


# --- one connection, several requests --------------------------------------------------------

@pytest.mark.parametrize("first_meta", [{}, {"progressToken": "p"}], ids=["json", "sse"])
def test_pipelined_posts_on_one_connection_are_answered_in_order(
        fresh: Live, first_meta: dict[str, Any]) -> None:
    port = fresh.server.port
    first, second = call_body("t.hang", 1, **first_meta), call_body("t.echo", 2)
    conn = Conn(port, modern_call_head("t.hang", port, length=len(first)) + first
                + modern_call_head("t.echo", port, length=len(second)) + second)
    try:
        assert fresh.probe.started.wait(BOUND_S)
        fresh.probe.release.set()
        status, headers, body = conn.response()
        assert (status, headers["content-type"]) == (
            200, "text/event-stream" if first_meta else "application/json")
        answer = (sse_messages(body)[-1] if first_meta else json.loads(body))
        assert answer["id"] == 1
        assert answer["result"]["content"][0]["text"] == "released"
        status, _, body = conn.response()
        assert (status, json.loads(body)["id"]) == (200, 2)
    finally:
        conn.close()


# --- request bodies ------------------------------------------------------------------------

def test_a_chunked_body_under_the_limit_is_served(live: Live) -> None:
    port = live.server.port
    body = call_body("t.echo", 3)
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 7]), body[i:i + 7])
                      for i in range(0, len(body), 7))
    conn = Conn(port, modern_call_head("t.echo", port, length=None,
                                       extra="Transfer-Encoding: chunked\r\n")
                + chunks + b"0\r\n\r\n")
    try:
        status, _, answer = conn.response()
    finally:
        conn.close()
    assert (status, json.loads(answer)["id"]) == (200, 3)


def test_a_chunked_body_over_the_limit_is_413_before_the_client_has_sent_it_all(
        live: Live) -> None:
    """The limit is 10,000 bytes; the client sends 1,000-byte chunks and looks for an answer
    after each: the 413 comes after at most 11 of 100 (the body is never buffered whole), and
    the connection then serves another request."""
    port = live.server.port
    conn = Conn(port, modern_call_head("t.echo", port, length=None,
                                       extra="Transfer-Encoding: chunked\r\n"))
    try:
        sent = 0
        answered = False
        for _ in range(100):
            conn.send(b"3e8\r\n" + b"x" * 1000 + b"\r\n")
            sent += 1000
            if conn.closed_by_server(0.05) or conn.buffer:
                answered = True
                break
        assert answered
        assert sent <= 11_000
        status, _, text = conn.response()
        assert (status, text) == (413, b"Request body too large")
        conn.send(b"0\r\n\r\n")  # the rest of the refused body: discarded
        body = call_body("t.echo", 4)
        conn.send(modern_call_head("t.echo", port, length=len(body)) + body)
        status, _, answer = conn.response()
        assert (status, json.loads(answer)["id"]) == (200, 4)
    finally:
        conn.close()


def test_expect_100_continue_gets_100_then_the_answer(live: Live) -> None:
    port = live.server.port
    body = call_body("t.echo", 5)
    conn = Conn(port, modern_call_head("t.echo", port, length=len(body),
                                       extra="Expect: 100-continue\r\n"))
    try:
        assert conn.response()[0] == 100
        conn.send(body)
        status, _, answer = conn.response()
    finally:
        conn.close()
    assert (status, json.loads(answer)["id"]) == (200, 5)


def test_expect_100_continue_with_a_declared_length_over_the_limit_is_413_without_100(
        live: Live) -> None:
    port = live.server.port
    conn = Conn(port, modern_call_head("t.echo", port, length=20_000,
                                       extra="Expect: 100-continue\r\n"))
    try:
        status, _, text = conn.response()
    finally:
        conn.close()
    assert (status, text) == (413, b"Request body too large")


@pytest.mark.parametrize("sent", [0, 10])
def test_a_request_body_that_stalls_is_cut_off_within_a_bound(live: Live, sent: int) -> None:
    """HttpConfig.body_timeout_s (1 s here) bounds the wait for the next part of a body, the
    first included: the stalled request is answered 408 and its connection closed."""
    port = live.server.port
    body = call_body("t.echo", 6)
    conn = Conn(port, modern_call_head("t.echo", port, length=len(body)) + body[:sent])
    try:
        status, headers, text = conn.response()
        assert (status, headers["connection"], text) == (408, "close", b"Request body timed out")
        assert conn.closed_by_server(6.0)
    finally:
        conn.close()



# --- methods and paths ----------------------------------------------------------------------

@pytest.mark.parametrize("method", ["HEAD", "OPTIONS", "PUT", "PATCH", "TRACE", "GET", "DELETE"])
def test_other_methods_on_the_endpoint_are_405_allowing_post(live: Live, method: str) -> None:
    port = live.server.port
    conn = Conn(port, f"{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                      f"Content-Length: 0\r\n\r\n".encode())
    try:
        status, headers, body = conn.response(head_only=method == "HEAD")
    finally:
        conn.close()
    assert (status, headers["allow"], body) == (405, "POST", b"")


@pytest.mark.parametrize("path", ["/mcp/", "//mcp", "/MCP", "/mcp/x", "/mcp%2F", "/"])
def test_other_paths_and_a_trailing_slash_are_404(live: Live, path: str) -> None:
    conn = _post(live.server.port, "t.echo", call_body("t.echo", 1), path=path)
    try:
        status, _, body = conn.response()
    finally:
        conn.close()
    assert (status, body) == (404, b"Not Found")


def test_a_query_string_on_the_endpoint_is_still_the_endpoint(live: Live) -> None:
    conn = _post(live.server.port, "t.echo", call_body("t.echo", 8), path="/mcp?x=1")
    try:
        status, _, body = conn.response()
    finally:
        conn.close()
    assert (status, json.loads(body)["id"]) == (200, 8)


# --- the legacy standalone GET stream ---------------------------------------------------------

def _get_stream(port: int, session_id: str, extra: str = "") -> Conn:
    return Conn(port, legacy_head(port, session_id, method="GET", accept="text/event-stream",
                                  extra=extra))


def test_a_second_get_stream_for_a_session_is_409_but_a_resumption_is_not_a_stream(
        live: Live) -> None:
    """A GET with Last-Event-ID asks for a POST stream's replay (the SDK answers it before
    the 409 check): an id naming nothing is an empty event stream, not a conflict."""
    port = live.server.port
    session_id = legacy_session(port)
    first = _get_stream(port, session_id)
    try:
        assert first.head()[0] == 200
        second = _get_stream(port, session_id)
        try:
            status, _, body = second.response()
        finally:
            second.close()
        assert (status, json.loads(body)["error"]["code"]) == (409, -32600)
        resuming = _get_stream(port, session_id, "Last-Event-ID: 0\r\n")
        try:
            status, headers, body = resuming.response()
        finally:
            resuming.close()
        assert (status, headers["content-type"], body) == (200, "text/event-stream", b"")
    finally:
        first.close()


def test_the_standalone_get_stream_carries_no_event_ids(live: Live) -> None:
    """Its list_changed hints are not kept for a replay (a client re-lists when it comes
    back); only a POST's response stream is resumable."""
    port = live.server.port
    session_id = legacy_session(port)
    conn = _get_stream(port, session_id)
    try:
        status, headers = conn.head()
        assert (status, headers["mcp-session-id"]) == (200, session_id)
        live.gateway.registry.publish(contract(f"t.new{session_id[:6]}"))
        data = conn.chunk()
        while data is not None and not data.startswith(b"event:"):
            data = conn.chunk()  # skip keepalives
        assert data is not None
        assert b"\nid:" not in data and not data.startswith(b"id:")
        assert sse_messages(data) == [{"jsonrpc": "2.0",
                                       "method": "notifications/tools/list_changed"}]
    finally:
        conn.close()


def test_delete_while_a_get_stream_is_open_ends_the_stream_at_once(live: Live) -> None:
    port = live.server.port
    session_id = legacy_session(port)
    conn = _get_stream(port, session_id)
    try:
        assert conn.head()[0] == 200
        delete = Conn(port, legacy_head(port, session_id, method="DELETE"))
        try:
            assert delete.response()[0] == 200
        finally:
            delete.close()
        _read_stream(conn, 1.0)  # the last chunk arrives
    finally:
        conn.close()
    assert wait_until(lambda: len(live.app._session_streams or ()) == 0)


def test_a_session_that_expires_while_its_get_stream_is_open_ends_the_stream() -> None:
    clock = [0.0]
    with live_server(HttpConfig(keepalive_s=0.05),
                     sessions=SessionTable(idle_timeout_s=60, clock=lambda: clock[0])) as live:
        port = live.server.port
        session_id = legacy_session(port)
        conn = _get_stream(port, session_id)
        try:
            assert conn.head()[0] == 200
            clock[0] = 1000.0
            _read_stream(conn, 1.0)
        finally:
            conn.close()
        assert wait_until(lambda: len(live.gateway.changes) == 0)
        gone = _get_stream(port, session_id)
        try:
            assert gone.response()[0] == 404
        finally:
            gone.close()


def test_a_session_evicted_while_its_get_stream_is_open_ends_the_stream_at_once() -> None:
    """Eviction (a new session over ``max_sessions``) ends the evicted session's standalone
    stream when the table lets the session go, not at the stream's next keepalive (an hour
    here, far past every bound of this test)."""
    with live_server(HttpConfig(keepalive_s=3600.0),
                     sessions=SessionTable(max_sessions=1)) as live:
        port = live.server.port
        session_id = legacy_session(port)
        conn = _get_stream(port, session_id)
        try:
            assert conn.head()[0] == 200
            legacy_session(port)  # evicts the first session
            _read_stream(conn, BOUND_S)  # the stream's last chunk arrives within the bound
        finally:
            conn.close()
        assert wait_until(lambda: len(live.gateway.changes) == 0)


# --- SIGTERM to `toolkeeper serve` with streams and calls open ---------------------------------

@dataclass
class Stopped:
    """What each open exchange saw when the server process was told to stop."""

    exit_code: int | None = None
    stderr: str = ""
    seen: dict[str, tuple[str, Any]] = field(default_factory=dict)


def _watch(name: str, conn: Conn, stopped: Stopped, stream: bool) -> None:
    try:
        if stream:
            stopped.seen[name] = ("ended", _read_stream(conn, 20))
        else:
            stopped.seen[name] = ("answered", conn.response(deadline=time.monotonic() + 20))
    except (EOFError, OSError) as exc:
        stopped.seen[name] = ("cut", type(exc).__name__)


@pytest.fixture(scope="module")
def stopped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stopped]:
    """One ``toolkeeper serve`` process with an SSE call (progress sent), a silent call, a
    listen stream and a legacy GET stream open, sent SIGTERM."""
    estate = tmp_path_factory.mktemp("estate")
    write_estate(estate)
    proc = subprocess.Popen(
        [sys.executable, "-m", "toolkeeper.cli.serve_cmd", "--registry", "memory:", "--estate",
         str(estate), "--handlers", f"{KIT}:process_handlers", "--port", "0",
         "--log-level", "warning"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    result = Stopped()
    conns: dict[str, tuple[Conn, bool]] = {}
    try:
        url = read_until(proc.stderr, re.compile(rb"toolkeeper gateway on (\S+/mcp)\n"),
                         30).group(1).decode()
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        sse = _post(port, "t.hang", call_body("t.hang", 1, progressToken="p"))
        assert sse.head()[0] == 200 and sse.chunk() is not None
        conns["sse call"] = (sse, True)
        listen = Conn(port, listen_request(port, 3))
        assert listen.head()[0] == 200 and listen.chunk() is not None
        conns["listen"] = (listen, True)
        session_id = legacy_session(port)
        get = _get_stream(port, session_id)
        assert get.head()[0] == 200
        conns["get stream"] = (get, True)
        silent = _post(port, "t.hang", call_body("t.hang", 2))
        conns["silent call"] = (silent, False)
        # the silent call is running once a later request on another connection is answered
        assert legacy_session(port)
        proc.send_signal(signal.SIGTERM)
        watchers = [threading.Thread(target=_watch, args=(name, conn, result, stream))
                    for name, (conn, stream) in conns.items()]
        for watcher in watchers:
            watcher.start()
        result.exit_code = proc.wait(timeout=20)  # a bound: the grace is 5 s
        for watcher in watchers:
            watcher.join(25)
        assert proc.stderr is not None
        result.stderr = proc.stderr.read().decode(errors="replace")
        yield result
    finally:
        for conn, _ in conns.values():
            conn.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def test_sigterm_exits_zero_within_the_graceful_bound_without_a_traceback(
        stopped: Stopped) -> None:
    assert stopped.exit_code == 0  # within the wait's bound, so the silent call was cut
    assert "Traceback" not in stopped.stderr


def test_sigterm_ends_listen_and_get_streams_at_once_and_answers_a_silent_call_503(
        stopped: Stopped) -> None:
    kind, data = stopped.seen["listen"]
    assert kind == "ended"
    final = sse_messages(data)[-1]
    assert (final["id"], final["result"]["resultType"]) == (3, "complete")
    assert stopped.seen["get stream"][0] == "ended"
    kind, (status, headers, body) = stopped.seen["silent call"]
    assert (kind, status, headers["content-type"], body) == (
        "answered", 503, "text/plain; charset=utf-8",
        b"Service Unavailable: the server is stopping")


def test_sigterm_ends_a_call_streaming_sse_with_a_complete_response(stopped: Stopped) -> None:
    assert stopped.seen["sse call"][0] == "ended"
    assert "ASGI callable returned without completing response" not in stopped.stderr
