"""Resumable legacy SSE streams over real HTTP (2025-11-25 transport, SEP-1699): a 2025-11-25
session's response stream opens with a priming event (id, ``retry``, empty data), every event
carries an id, and a stream whose connection dropped mid-call is taken up again by a GET with
``Last-Event-ID``: every event after that id, exactly once and in order, then the rest live up
to the response. Unknown ids are answered as the official SDK answers them (200 SSE, no
events); an older session, the modern era and JSON mode keep plain frames."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from stream_kit import contract

from toolkeeper.registry import Registry
from toolkeeper.server import ToolContext, ToolHandlers, build_gateway
from toolkeeper.transports import HttpConfig, RunningServer, create_asgi_app, serve_in_thread
from toolkeeper.transports.replay import ReplayConfig

BOUND_S = 10.0
RETRY_MS = 250


@dataclass
class Frame:
    """One SSE event as sent: its id, retry and data lines (None when absent)."""

    id: str | None
    retry: int | None
    data: str | None

    @property
    def message(self) -> dict[str, Any] | None:
        return json.loads(self.data) if self.data else None


def iter_frames(response: httpx.Response) -> Iterator[Frame]:
    buffer = b""
    for chunk in response.iter_bytes():
        buffer += chunk
        while b"\r\n\r\n" in buffer:
            raw, buffer = buffer.split(b"\r\n\r\n", 1)
            if raw.startswith(b":"):
                continue
            fields: dict[str, str] = {}
            for line in raw.decode().split("\r\n"):
                name, _, value = line.partition(": ")
                fields[name] = value
            yield Frame(fields.get("id"), int(fields["retry"]) if "retry" in fields else None,
                        fields.get("data"))


class Steps:
    """A handler that reports in two bursts, waiting between them until released."""

    def __init__(self) -> None:
        self.release = threading.Event()

    async def run(self, arguments: dict[str, Any], ctx: ToolContext) -> str:
        await ctx.progress(1, 4, "first")
        await ctx.log("info", "one")
        released = await asyncio.to_thread(self.release.wait, BOUND_S)
        await ctx.progress(2, 4, "second")
        await ctx.log("info", "two")
        await ctx.progress(3, 4, "third")
        return "done" if released else "timed out"

    async def asks(self, arguments: dict[str, Any], ctx: ToolContext) -> str:
        answer = await ctx.elicit("Your name?", {"type": "object", "properties": {
            "name": {"type": "string"}}})
        return f"Hello, {answer['content']['name']}"

    async def closes(self, arguments: dict[str, Any], ctx: ToolContext) -> str:
        await ctx.progress(1, 2, "before")
        assert await ctx.close_stream()
        released = await asyncio.to_thread(self.release.wait, BOUND_S)
        await ctx.progress(2, 2, "after")
        return "polled" if released else "timed out"


@pytest.fixture
def served() -> Iterator[tuple[RunningServer, Steps]]:
    registry = Registry.open("memory:")
    steps = Steps()
    handlers = ToolHandlers()
    for name, function in (("test.steps", steps.run), ("test.closes", steps.closes),
                           ("test.asks", steps.asks)):
        registry.publish(contract(name))
        handlers.bind(name, function)
    gateway = build_gateway(registry, handlers)
    app = create_asgi_app(gateway.kernel, HttpConfig(replay=ReplayConfig(retry_ms=RETRY_MS)),
                          changes=gateway.changes)
    with serve_in_thread(app) as running:
        yield running, steps
    steps.release.set()


def _headers(session_id: str | None = None, version: str = "2025-11-25",
             **extra: str) -> dict[str, str]:
    out = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    if session_id is not None:
        out.update({"Mcp-Session-Id": session_id, "MCP-Protocol-Version": version})
    return out | extra


def _session(client: httpx.Client, url: str, version: str = "2025-11-25") -> str:
    answer = client.post(url, headers=_headers(), json={
        "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "t", "version": "0"}}})
    session_id = answer.headers["mcp-session-id"]
    assert client.post(url, headers=_headers(session_id, version), json={
        "jsonrpc": "2.0", "method": "notifications/initialized"}).status_code == 202
    assert client.post(url, headers=_headers(session_id, version), json={
        "jsonrpc": "2.0", "id": "lvl", "method": "logging/setLevel",
        "params": {"level": "info"}}).status_code == 200
    return session_id


def _call(request_id: int, tool: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": tool, "arguments": {}, "_meta": {"progressToken": "p"}}}


def _what(frame: Frame) -> Any:
    """What an event said: a notification's progress or log data, or the response's text."""
    message = frame.message
    assert message is not None
    if "result" in message:
        return message["result"]["content"][0]["text"]
    params = message["params"]
    return params.get("message", params.get("data"))


def _resume(client: httpx.Client, url: str, session_id: str, last_event_id: str,
            attached: threading.Event | None = None) -> list[Frame]:
    """The frames of a GET with ``Last-Event-ID`` (``attached`` is set once its head has
    arrived: the server has taken the stream up on it)."""
    with client.stream("GET", url, headers={
            "Accept": "text/event-stream", "Mcp-Session-Id": session_id,
            "MCP-Protocol-Version": "2025-11-25", "Last-Event-ID": last_event_id}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        if attached is not None:
            attached.set()
        return list(iter_frames(response))


def test_a_dropped_stream_resumed_with_last_event_id_delivers_every_event_once_in_order(
        served: tuple[RunningServer, Steps]) -> None:
    running, steps = served
    with httpx.Client(timeout=BOUND_S) as client:
        session_id = _session(client, running.url)
        first: list[Frame] = []
        with client.stream("POST", running.url, headers=_headers(session_id),
                           json=_call(7, "test.steps")) as response:
            assert response.headers["content-type"] == "text/event-stream"
            for frame in iter_frames(response):
                first.append(frame)
                if len(first) == 3:
                    break  # the connection is dropped mid-call
        # The handler goes on once the stream is taken up again: the rest arrives live.
        rest = _resume(client, running.url, session_id, first[-1].id or "", steps.release)
    priming = first[0]
    assert (priming.data, priming.retry) == ("", RETRY_MS) and priming.id is not None
    events = first[1:] + rest
    assert [_what(f) for f in events] == ["first", "one", "second", "two", "third", "done"]
    ids = [f.id for f in events]
    assert None not in ids and len(set(ids)) == len(ids)
    assert [f.retry for f in events] == [None] * len(events)


def test_resuming_from_the_priming_event_replays_the_whole_stream_again(
        served: tuple[RunningServer, Steps]) -> None:
    running, steps = served
    steps.release.set()
    with httpx.Client(timeout=BOUND_S) as client:
        session_id = _session(client, running.url)
        with client.stream("POST", running.url, headers=_headers(session_id),
                           json=_call(8, "test.steps")) as response:
            sent = list(iter_frames(response))
        replayed = _resume(client, running.url, session_id, sent[0].id or "")
        after_second = _resume(client, running.url, session_id, sent[2].id or "")
    assert [(f.id, f.data) for f in replayed] == [(f.id, f.data) for f in sent[1:]]
    assert [(f.id, f.data) for f in after_second] == [(f.id, f.data) for f in sent[3:]]
    assert _resume_nothing_after(sent)


def _resume_nothing_after(sent: list[Frame]) -> bool:
    message = sent[-1].message
    return message is not None and message["id"] == 8 and "result" in message


def test_a_handler_that_closes_its_stream_is_polled_back_and_answered_on_the_get(
        served: tuple[RunningServer, Steps]) -> None:
    running, steps = served
    with httpx.Client(timeout=BOUND_S) as client:
        session_id = _session(client, running.url)
        with client.stream("POST", running.url, headers=_headers(session_id),
                           json=_call(9, "test.closes")) as response:
            first = list(iter_frames(response))  # the server ends it
        rest = _resume(client, running.url, session_id, first[-1].id or "", steps.release)
    assert first[0].data == "" and first[0].retry == RETRY_MS
    assert [_what(f) for f in first[1:]] == ["before"]
    assert [_what(f) for f in rest] == ["after", "polled"]


@pytest.mark.parametrize("last_event_id", ["999-0", "nonsense", "1-99", ""])
def test_an_unknown_event_id_is_answered_with_an_empty_event_stream(
        served: tuple[RunningServer, Steps], last_event_id: str) -> None:
    running, _ = served
    with httpx.Client(timeout=BOUND_S) as client:
        session_id = _session(client, running.url)
        assert _resume(client, running.url, session_id, last_event_id) == []


def test_another_sessions_event_id_replays_nothing(
        served: tuple[RunningServer, Steps]) -> None:
    running, steps = served
    steps.release.set()
    with httpx.Client(timeout=BOUND_S) as client:
        owner, stranger = _session(client, running.url), _session(client, running.url)
        with client.stream("POST", running.url, headers=_headers(owner),
                           json=_call(10, "test.steps")) as response:
            sent = list(iter_frames(response))
        assert _resume(client, running.url, stranger, sent[0].id or "") == []
        assert len(_resume(client, running.url, owner, sent[0].id or "")) == len(sent) - 1


def test_an_older_session_keeps_plain_frames_without_ids(
        served: tuple[RunningServer, Steps]) -> None:
    running, steps = served
    steps.release.set()
    with httpx.Client(timeout=BOUND_S) as client:
        session_id = _session(client, running.url, "2025-06-18")
        with client.stream("POST", running.url, headers=_headers(session_id, "2025-06-18"),
                           json=_call(11, "test.steps")) as response:
            sent = list(iter_frames(response))
    assert [f.id for f in sent] == [None] * 6
    assert [_what(f) for f in sent] == ["first", "one", "second", "two", "third", "done"]


def test_a_request_to_the_client_is_replayed_to_a_resuming_client_which_answers_it(
        served: tuple[RunningServer, Steps]) -> None:
    running, _ = served
    with httpx.Client(timeout=BOUND_S) as client, httpx.Client(timeout=BOUND_S) as other:
        session_id = _session(client, running.url)
        with client.stream("POST", running.url, headers=_headers(session_id),
                           json=_call(12, "test.asks")) as response:
            frames = iter_frames(response)
            priming = next(frames)
            assert (next(frames).message or {}).get("method") == "elicitation/create"
        # Dropped before answering: the request comes again on the resumed stream.
        with client.stream("GET", running.url, headers={
                "Accept": "text/event-stream", "Mcp-Session-Id": session_id,
                "MCP-Protocol-Version": "2025-11-25",
                "Last-Event-ID": priming.id or ""}) as resumed:
            frames = iter_frames(resumed)
            request = next(frames).message
            assert request is not None and request["method"] == "elicitation/create"
            assert other.post(running.url, headers=_headers(session_id), json={
                "jsonrpc": "2.0", "id": request["id"],
                "result": {"action": "accept", "content": {"name": "Ada"}}}).status_code == 202
            rest = list(frames)
    assert [_what(f) for f in rest] == ["Hello, Ada"]


def test_a_resumption_that_does_not_accept_an_event_stream_is_406(
        served: tuple[RunningServer, Steps]) -> None:
    running, _ = served
    with httpx.Client(timeout=BOUND_S) as client:
        session_id = _session(client, running.url)
        answer = client.get(running.url, headers={
            "Accept": "application/json", "Mcp-Session-Id": session_id,
            "MCP-Protocol-Version": "2025-11-25", "Last-Event-ID": "1-0"})
    assert answer.status_code == 406


def test_with_no_events_kept_a_2025_11_25_stream_carries_no_ids_and_no_priming() -> None:
    registry = Registry.open("memory:")
    steps = Steps()
    steps.release.set()
    handlers = ToolHandlers()
    registry.publish(contract("test.steps"))
    handlers.bind("test.steps", steps.run)
    gateway = build_gateway(registry, handlers)
    app = create_asgi_app(gateway.kernel, HttpConfig(replay=ReplayConfig(max_events=0)))
    with serve_in_thread(app) as running, httpx.Client(timeout=BOUND_S) as client:
        session_id = _session(client, running.url)
        with client.stream("POST", running.url, headers=_headers(session_id),
                           json=_call(13, "test.steps")) as response:
            sent = list(iter_frames(response))
    assert [f.id for f in sent] == [None] * 6 and sent[0].data != ""
