"""The legacy standalone GET stream over real HTTP: a registry change reaches the session as
``notifications/tools/list_changed``; one stream per session; DELETE and shutdown end it; the
refusals of the table in :mod:`toolkeeper.transports.session_stream`; a session the table evicts
or lets expire loses its stream. Every wait is bounded by the client's read timeout (or a
deadline while keepalives flow)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from sse_kit import sse_messages
from toolkeeper.contracts.spec import ToolSpec, spec_from_mapping
from toolkeeper.protocol import SessionTable
from toolkeeper.registry import Registry
from toolkeeper.server import build_app
from toolkeeper.server.changes import ChangeHub, ChangeStream
from toolkeeper.transports import HttpConfig, ServerThread, runner

ACCEPT = "application/json, text/event-stream"
LIST_CHANGED = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
FAST_KEEPALIVE = HttpConfig(keepalive_s=0.05)
HELD_S = 3600.0  # a wait that, if it were waited out, only pytest's timeout would end


def tool(name: str) -> ToolSpec:
    return spec_from_mapping({
        "name": name, "version": "1.0.0", "title": name, "description": f"{name} (tests)",
        "inputSchema": {"type": "object", "properties": {}}, "dataClassification": "public",
        "sideEffect": "read"})


def post(client: httpx.Client, url: str, body: dict[str, Any], session_id: str | None = None
         ) -> httpx.Response:
    headers = {"Accept": ACCEPT, "Content-Type": "application/json"}
    if session_id is not None:
        headers |= {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"}
    return client.post(url, content=json.dumps(body).encode(), headers=headers)


def initialize(client: httpx.Client, url: str, *, ready: bool = True) -> str:
    response = post(client, url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
    assert response.json()["result"]["capabilities"]["tools"] == {"listChanged": True}
    session_id = response.headers["mcp-session-id"]
    if ready:
        post(client, url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session_id)
    return session_id


def stream_headers(session_id: str | None, accept: str = "text/event-stream") -> dict[str, str]:
    out = {"Accept": accept, "MCP-Protocol-Version": "2025-11-25"}
    if session_id is not None:
        out["Mcp-Session-Id"] = session_id
    return out


@pytest.fixture
def registry() -> Iterator[Registry]:
    with Registry.open("memory:") as value:
        value.publish(tool("first.tool"))
        yield value


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=httpx.Timeout(5.0)) as http:
        yield http


@contextmanager
def served(registry: Registry, **options: Any) -> Iterator[tuple[str, ServerThread]]:
    app, _ = build_app(registry, **options)
    thread = ServerThread(app)
    running = thread.start()
    try:
        yield running.url, thread
    finally:
        thread.stop()


def test_a_publish_through_the_registry_reaches_the_session_stream_until_delete(
        registry: Registry, client: httpx.Client) -> None:
    with served(registry) as (url, _):
        session_id = initialize(client, url)
        with client.stream("GET", url, headers=stream_headers(session_id)) as response:
            assert response.status_code == 200
            assert response.headers["content-type"] == "text/event-stream"
            assert response.headers["mcp-session-id"] == session_id
            messages = sse_messages(response)
            registry.publish(tool("second.tool"))
            assert next(messages) == LIST_CHANGED
            second = client.get(url, headers=stream_headers(session_id))
            assert (second.status_code, second.json()["error"]["code"]) == (409, -32600)
            assert client.delete(url, headers=stream_headers(session_id)).status_code == 200
            assert list(messages) == []  # the stream ended with the session


def test_another_replica_publishing_into_the_same_sqlite_file_reaches_the_stream(
        tmp_path: Path, client: httpx.Client) -> None:
    url_db = f"sqlite:///{tmp_path / 'registry.db'}"
    with Registry.open(url_db) as mine, Registry.open(url_db) as replica, \
            served(mine, changes=ChangeHub.for_registry(mine, refresh_s=0.05)) as (url, _):
        session_id = initialize(client, url)
        with client.stream("GET", url, headers=stream_headers(session_id)) as response:
            messages = sse_messages(response)
            replica.publish(tool("from.replica"))
            assert next(messages) == LIST_CHANGED


def test_shutdown_ends_an_open_session_stream_promptly(
        registry: Registry, client: httpx.Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """uvicorn's grace and the stop's own wait are an hour here: a stop held by the open stream
    would run into pytest's timeout, and one that cancelled it would cut its body short (a
    read error, not the stream's clean end)."""
    monkeypatch.setattr(runner, "GRACEFUL_SHUTDOWN_S", HELD_S)
    with served(registry) as (url, thread):
        session_id = initialize(client, url)
        with client.stream("GET", url, headers=stream_headers(session_id)) as response:
            assert response.status_code == 200
            thread.stop(timeout=HELD_S)
            assert list(sse_messages(response)) == []


class LeaveSignallingHub(ChangeHub):
    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.left = threading.Event()

    def discard(self, stream: ChangeStream) -> None:
        super().discard(stream)
        self.left.set()


def test_a_client_that_hangs_up_frees_the_session_for_a_new_stream(
        registry: Registry, client: httpx.Client) -> None:
    hub = LeaveSignallingHub.for_registry(registry)
    with served(registry, changes=hub) as (url, _):
        session_id = initialize(client, url)
        with client.stream("GET", url, headers=stream_headers(session_id)) as response:
            assert response.status_code == 200
        assert hub.left.wait(5.0)  # the server noticed the disconnect
        with client.stream("GET", url, headers=stream_headers(session_id)) as again:
            assert again.status_code == 200


@pytest.mark.parametrize(("session", "accept", "status", "code"), [
    ("live", "application/json", 406, None),
    ("unknown", "text/event-stream", 404, -32600),
    ("not-ready", "text/event-stream", 400, -32600),
])
def test_a_stream_is_refused_without_event_stream_or_a_live_session(
        registry: Registry, client: httpx.Client, session: str, accept: str, status: int,
        code: int | None) -> None:
    with served(registry) as (url, _):
        session_id = {"live": lambda: initialize(client, url),
                      "unknown": lambda: "f" * 32,
                      "not-ready": lambda: initialize(client, url, ready=False)}[session]()
        response = client.get(url, headers=stream_headers(session_id, accept))
    assert response.status_code == status
    if code is not None:
        assert (response.json()["error"]["code"], response.json()["id"]) == (code, None)


def test_without_a_session_id_get_stays_405_and_a_full_hub_is_503(
        registry: Registry, client: httpx.Client) -> None:
    hub = ChangeHub.for_registry(registry, max_streams=0)
    with served(registry, changes=hub) as (url, _):
        bare = client.get(url, headers=stream_headers(None))
        assert (bare.status_code, bare.headers["allow"]) == (405, "POST")
        full = client.get(url, headers=stream_headers(initialize(client, url)))
    assert (full.status_code, full.json()["error"]["code"]) == (503, -32603)


def ends_within(chunks: Iterator[bytes], count: int) -> bool:
    """Whether the body ``chunks`` end within ``count`` reads (each a keepalive or more, so a
    stream still open after them has woken at least that often)."""
    for _, _ in zip(range(count), chunks, strict=False):
        pass
    return next(chunks, None) is None


def test_a_session_evicted_by_a_new_initialize_loses_its_stream_and_then_answers_404(
        registry: Registry, client: httpx.Client) -> None:
    # The default keepalive: the stream does not wake (and use its session) before the
    # evicting initialize; the publish afterwards wakes it, and it ends with nothing sent.
    with served(registry, sessions=SessionTable(max_sessions=2)) as (url, _):
        evicted = initialize(client, url)
        with client.stream("GET", url, headers=stream_headers(evicted)) as response:
            assert response.status_code == 200
            kept = initialize(client, url)  # used after `evicted`
            initialize(client, url)  # the table is full: its least recently used session goes
            registry.publish(tool("second.tool"))
            assert list(sse_messages(response)) == []
        gone = post(client, url, PING, evicted)
        assert (gone.status_code, gone.json()["error"]["code"]) == (404, -32600)
        assert post(client, url, PING, kept).json()["result"] == {}


class SteppingClock:
    """A clock that moves ``step`` seconds further at every reading."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_an_open_stream_keeps_its_listening_session_alive_past_the_idle_timeout(
        registry: Registry, client: httpx.Client) -> None:
    # 20 s pass at every reading of the clock and sessions idle out after 60 s: without the
    # keepalives' use the session would be gone after three wake-ups.
    sessions = SessionTable(idle_timeout_s=60, clock=SteppingClock(20))
    with served(registry, sessions=sessions, http=FAST_KEEPALIVE) as (url, _):
        session_id = initialize(client, url)
        with client.stream("GET", url, headers=stream_headers(session_id)) as response:
            assert response.status_code == 200
            assert not ends_within(response.iter_bytes(), 10)  # ten keepalives, at least
            assert post(client, url, PING, session_id).json()["result"] == {}


def test_a_session_that_idles_out_loses_its_stream(registry: Registry,
                                                   client: httpx.Client) -> None:
    clock = Clock()
    sessions = SessionTable(idle_timeout_s=60, clock=clock)
    with served(registry, sessions=sessions, http=FAST_KEEPALIVE) as (url, _):
        session_id = initialize(client, url)
        with client.stream("GET", url, headers=stream_headers(session_id)) as response:
            assert response.status_code == 200
            clock.now = 61  # no use for longer than the idle timeout
            assert ends_within(response.iter_bytes(), 40)  # its first wake-up ends it
        gone = client.get(url, headers=stream_headers(session_id))
        assert (gone.status_code, gone.json()["error"]["code"]) == (404, -32600)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now
