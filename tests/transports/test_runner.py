"""The background server: ephemeral loopback port, reachable at once, stopped cleanly."""

from __future__ import annotations

import httpx
import pytest

from toolkeeper.registry import Registry
from toolkeeper.server import build_app
from toolkeeper.transports import RunningServer, ServerThread, serve_in_thread, sse_frame


def test_a_thread_server_listens_on_an_ephemeral_port_and_stops() -> None:
    app, _ = build_app(Registry.open("memory:"))
    with serve_in_thread(app) as running:
        assert running.host == "127.0.0.1" and running.port > 0
        with httpx.Client(timeout=10) as http:
            assert http.get(running.url).status_code == 405
    with pytest.raises(httpx.ConnectError), httpx.Client(timeout=2) as http:
        http.get(running.url)


def test_a_thread_server_cannot_be_started_twice() -> None:
    app, _ = build_app(Registry.open("memory:"))
    thread = ServerThread(app)
    thread.start()
    try:
        with pytest.raises(RuntimeError):
            thread.start()
    finally:
        thread.stop()


def test_urls_bracket_ipv6_hosts() -> None:
    assert RunningServer("::1", 80).url == "http://[::1]:80/mcp"
    assert RunningServer("127.0.0.1", 8000, "/").base_url == "http://127.0.0.1:8000"


def test_sse_frames_are_event_message_with_crlf() -> None:
    assert sse_frame(b'{"a":1}') == b'event: message\r\ndata: {"a":1}\r\n\r\n'
