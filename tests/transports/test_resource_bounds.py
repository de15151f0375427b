"""Resource bounds of the gateway under attack: memory kept per request (caches keyed on what a
caller sends), legacy sessions and their standalone streams, tasks and timers left after
clients leave, and stdio at end of input.

Memory is measured with tracemalloc as the growth of the traced heap over a second batch of
requests, after a first batch that brought every count-bounded cache to its bound (see
:func:`bounds_kit.growth`): a cache that evicts frees an entry for each one it makes, so only
what is kept *per request*, or kept *bigger*, shows. Every wait is bounded (``BOUND_S``).
"""

from __future__ import annotations

import asyncio
import gc
import json
import tracemalloc
from collections.abc import Callable
from typing import Any, Final

import httpx
import pytest
from bounds_kit import (
    Scope,
    app_for,
    exchange,
    growth,
    initialize,
    legacy_scope,
    small_log_gateway,
)
from stream_kit import (
    BOUND_S,
    VERSION,
    Client,
    Lines,
    bounded,
    listen,
    modern_post,
    others,
    outcomes,
    tool_call,
)

from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.protocol import SessionTable
from toolkeeper.registry import Registry
from toolkeeper.server import ToolContext, ToolHandlers, build_app
from toolkeeper.transports import serve_in_thread

WARM_UP: Final = 600
"""Requests of the first batch: more than the biggest count bound of a header memo (512)."""
REQUESTS: Final = 3000
"""Requests of the measured (second) batch of the plateau tests."""
PER_REQUEST_BOUND: Final = 24
"""Bytes a request may leave behind on average: less than one small int (28 bytes), so a
structure that keeps anything per request fails, while the loop's and allocator's noise
(a few KiB per batch, and up to about 27 KiB when a memo's dict table made before tracing
started is rebuilt during the measured batch) passes."""


def echo(arguments: dict[str, Any]) -> str:
    return "ok"


def call_scope_and_body(request_id: int, name: str = "t.echo", *,
                        arguments: dict[str, Any] | None = None,
                        headers: dict[bytes, bytes] | None = None, **meta: Any
                        ) -> tuple[Scope, bytes]:
    message = tool_call(name, request_id, **meta)
    if arguments is not None:
        message["params"]["arguments"] = arguments
    scope = modern_post("tools/call", name)
    if headers:
        scope["headers"] = [h for h in scope["headers"] if h[0] not in headers]
        scope["headers"] += list(headers.items())
    return scope, json.dumps(message).encode()


Make = Callable[[int], tuple[Scope, bytes]]


def legacy_ping(request_id: int) -> tuple[Scope, bytes]:
    return (legacy_scope("POST", f"unknown-{request_id:06d}"),
            json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode())


def batches(gateway_options: dict[str, Any], make: Make, count: int, *,
            second: Make | None = None, warm_up: int = WARM_UP) -> tuple[int, list[int], Any]:
    """Heap growth over a second batch of ``count`` requests (made by ``second``, else by
    ``make`` with fresh numbers) after ``warm_up`` made by ``make``; also each status of the
    second batch, and the gateway."""
    gateway = small_log_gateway({"t.echo": echo}, **gateway_options)
    app = app_for(gateway)
    statuses: list[int] = []

    async def first() -> None:
        for number in range(warm_up):
            await exchange(app, *make(number))

    async def then() -> None:
        for number in range(warm_up, warm_up + count):
            sent = (await exchange(app, *(second or make)(number))).sent
            statuses.append(sent[0]["status"])

    async def run() -> int:
        return await growth(first, then)

    return asyncio.run(run()), statuses, gateway


# --- memory plateaus that held ----------------------------------------------------------------

PLATEAUS: Final[dict[str, Make]] = {
    "distinct-request-ids": lambda i: call_scope_and_body(i),
    "distinct-argument-values": lambda i: call_scope_and_body(
        i, arguments={"value": f"v{i:06d}"}, schemaVersion="1.0.0"),
    "unknown-tool-names": lambda i: call_scope_and_body(i, f"no.such.tool{i:06d}"),
    "unpublished-schema-versions": lambda i: call_scope_and_body(i, schemaVersion=f"9.{100_000 + i}.0"),
    "malformed-schema-versions": lambda i: call_scope_and_body(i, schemaVersion=f"v{i:06d}"),
    "distinct-user-agents": lambda i: call_scope_and_body(
        i, headers={b"user-agent": f"agent/{i:06d}".encode()}),
    "distinct-short-accept-values": lambda i: call_scope_and_body(
        i, headers={b"accept": f"application/json, text/event-stream, x/{i:06d}".encode()}),
    "distinct-refused-hosts": lambda i: call_scope_and_body(
        i, headers={b"host": f"h{i:06d}.example:80".encode()}),
    "distinct-refused-origins": lambda i: call_scope_and_body(
        i, headers={b"origin": f"http://o{i:06d}.example".encode()}),
    "unknown-legacy-session-ids": legacy_ping,
}


@pytest.mark.parametrize("make", list(PLATEAUS.values()), ids=list(PLATEAUS))
def test_requests_varying_what_a_cache_could_key_on_leave_nothing_behind_per_request(
        make: Make) -> None:
    grown, statuses, _ = batches({}, make, REQUESTS)
    assert len(set(statuses)) == 1  # every request of the batch took the same path
    assert grown < REQUESTS * PER_REQUEST_BOUND, grown


def test_an_initialize_flood_keeps_the_session_table_at_its_bound() -> None:
    grown, statuses, gateway = batches(
        {"sessions": SessionTable(max_sessions=32)},
        lambda i: (legacy_scope("POST"), json.dumps({
            "jsonrpc": "2.0", "id": i, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": f"flood-{i:06d}", "version": "1"}}}).encode()),
        REQUESTS, warm_up=100)
    assert set(statuses) == {200}
    assert len(gateway.kernel.sessions) == 32
    assert grown < REQUESTS * PER_REQUEST_BOUND, grown


# --- findings: caches whose entries are as big as the caller makes them ------------------------

LONG: Final = 16 * 1024
"""A long header value: h11's whole header block limit (httptools has none, see the real
HTTP test)."""
LONG_REQUESTS: Final = 200
LONG_BOUND: Final = 256 * 1024
"""What 200 requests with a 16 KiB value each (3.2 MiB of header text) may leave behind: a
memo that keeps only short values (as :func:`~toolkeeper.protocol.raw_headers.asgi_index`
does for header names, 64 bytes) keeps nothing of them; under a tenth of the text allows
noise."""

HEADER_VALUES: Final[dict[str, Callable[[int, str], tuple[bytes, bytes]]]] = {
    "accept": lambda i, pad: (b"accept",
                              f"application/json, text/event-stream, x/{i:06d}{pad}".encode()),
    "content-type": lambda i, pad: (b"content-type", f"application/json; x={i:06d}{pad}".encode()),
    "host": lambda i, pad: (b"host", f"h{i:06d}{pad}.example".encode()),
    "origin": lambda i, pad: (b"origin", f"http://o{i:06d}{pad}.example".encode()),
}


@pytest.mark.parametrize("header", list(HEADER_VALUES))
def test_long_distinct_header_values_are_not_kept_by_the_transports_memos(header: str) -> None:
    value = HEADER_VALUES[header]

    def short(i: int) -> tuple[Scope, bytes]:
        name, raw = value(i, "")
        return call_scope_and_body(i, headers={name: raw})

    def long(i: int) -> tuple[Scope, bytes]:
        name, raw = value(i, "x" * LONG)
        return call_scope_and_body(i, headers={name: raw})

    # the first batch fills every memo (512 entries at most) with short values
    grown, statuses, _ = batches({}, short, LONG_REQUESTS, second=long)
    assert len(set(statuses)) == 1
    assert grown < LONG_BOUND, grown


def test_schema_versions_spelled_with_distinct_build_metadata_are_not_kept_per_spelling(
        ) -> None:
    grown, statuses, _ = batches(
        {}, lambda i: call_scope_and_body(i, schemaVersion=f"1.0.0+s{i:06d}"), 300, warm_up=300,
        second=lambda i: call_scope_and_body(i, schemaVersion=f"1.0.0+l{i:06d}.{'x' * 65536}"))
    assert set(statuses) == {200}  # every spelling names the served 1.0.0: accepted
    assert grown < 1024 * 1024, grown  # 300 spellings of 64 KiB are 19 MiB


def test_over_real_http_megabyte_accept_headers_do_not_outlive_their_requests() -> None:
    app, gateway = build_app(*_demo_registry_and_handlers())
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
    statuses: list[int] = []
    with serve_in_thread(app) as running, httpx.Client(timeout=BOUND_S * 5) as client:
        for warm in range(2):  # the connection and the server's per-request state
            client.post(running.url, content=body, headers=_list_headers(f"w{warm}"))
        tracemalloc.start()
        try:
            for number in range(8):
                response = client.post(running.url, content=body, headers=_list_headers(
                    f"{number}{'y' * (1 << 20)}"))
                statuses.append(response.status_code)
            for after in range(2):  # what the server and client keep of the last request
                client.post(running.url, content=body, headers=_list_headers(f"a{after}"))
            gc.collect()
            kept, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    gateway.changes.close()
    assert set(statuses) == {200}
    assert kept < 2 * 1024 * 1024, kept  # the 8 values are 8 MiB


def test_an_initialize_flood_with_padded_client_info_keeps_at_most_the_tables_byte_budget(
        ) -> None:
    def initialize_with(pad: str) -> Make:
        return lambda i: (legacy_scope("POST"), json.dumps({
            "jsonrpc": "2.0", "id": i, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"experimental": {"pad": pad}},
                "clientInfo": {"name": f"flood-{i:06d}", "version": "1", "pad": pad}}}).encode())

    budget = 256 * 1024
    table = SessionTable(max_sessions=64, max_bytes=budget)
    grown, statuses, gateway = batches({"sessions": table}, initialize_with(""), 64, warm_up=64,
                                       second=initialize_with("x" * 32768))
    assert set(statuses) == {200}  # never refused: older sessions make room
    assert table.weight <= budget
    # each session keeps a little over 64 KiB: at most four fit, and the newest is always kept
    assert 1 <= len(gateway.kernel.sessions) < budget // (2 * 32768)
    # 64 sessions sent 64 KiB each (4 MiB): what is kept stays within about the budget
    assert grown < 2 * budget, grown


def _demo_registry_and_handlers() -> tuple[Registry, ToolHandlers]:
    registry = Registry.open("memory:")
    install_demo(registry)
    return registry, demo_handlers()


def _list_headers(tag: str) -> dict[str, str]:
    return {"content-type": "application/json", "mcp-protocol-version": VERSION,
            "mcp-method": "tools/list", "accept": f"application/json, text/event-stream, x/{tag}"}


# --- legacy standalone streams and the change hub ---------------------------------------------

async def _open_stream(app: Any, session_id: str) -> tuple[Client, asyncio.Future[None]]:
    client = Client(None)
    task = asyncio.ensure_future(app(legacy_scope("GET", session_id, b"text/event-stream"),
                                     client.inbox.get, client.send))
    await client.wait_for_sent(1)
    assert client.sent[0]["status"] == 200
    return client, task


def test_a_session_stream_ends_when_an_initialize_flood_evicts_its_session_and_leaves_the_hub(
        ) -> None:
    async def scenario() -> None:
        gateway = small_log_gateway(sessions=SessionTable(max_sessions=4))
        app = app_for(gateway, keepalive_s=0.02)
        session_id = await initialize(app)
        client, task = await _open_stream(app, session_id)
        assert len(gateway.changes) == 1
        for _ in range(8):
            await initialize(app)
        assert await bounded(task)
        assert client.sent[-1] == {"type": "http.response.body", "body": b"",
                                   "more_body": False}
        assert len(gateway.changes) == 0
        assert others() == set()
        assert _live_timers(asyncio.get_running_loop()) == []  # no keepalive left armed
        gone = await exchange(app, legacy_scope("GET", session_id, b"text/event-stream"), b"")
        assert gone.sent[0]["status"] == 404

    asyncio.run(scenario())


def test_many_session_streams_end_at_once_when_their_sessions_are_deleted() -> None:
    async def scenario() -> None:
        gateway = small_log_gateway()
        app = app_for(gateway, keepalive_s=30)  # no keepalive wakes a stream in the test
        opened = [(sid, *await _open_stream(app, sid))
                  for sid in [await initialize(app) for _ in range(20)]]
        assert len(gateway.changes) == 20
        for session_id, _, _ in opened:
            deleted = await exchange(app, legacy_scope("DELETE", session_id), b"")
            assert deleted.sent[0]["status"] == 200
        assert all([await bounded(task) for _, _, task in opened])
        assert (len(gateway.changes), len(gateway.kernel.sessions)) == (0, 0)
        assert others() == set()

    asyncio.run(scenario())


def test_shutdown_ends_every_listen_and_session_stream_and_empties_the_hub() -> None:
    async def scenario() -> None:
        gateway = small_log_gateway()
        app = app_for(gateway, keepalive_s=30)
        listens: list[tuple[Client, asyncio.Future[None]]] = []
        for number in range(10):
            client = Client(json.dumps(listen(number)).encode())
            listens.append((client, asyncio.ensure_future(app(
                modern_post("subscriptions/listen"), client.inbox.get, client.send))))
            await client.wait_for_sent(2)  # the SSE start and the acknowledgement
        streams = [await _open_stream(app, await initialize(app)) for _ in range(10)]
        assert len(gateway.changes) == 20
        app.begin_shutdown()
        assert all([await bounded(task) for _, task in [*listens, *streams]])
        assert len(gateway.changes) == 0
        assert others() == set()
        assert _live_timers(asyncio.get_running_loop()) == []
        for client, _ in listens:  # each listen ends with its final result
            assert client.sent[-1]["more_body"] is False
            assert b'"result"' in client.sent[-1]["body"]

    asyncio.run(scenario())


# --- tasks and timers after clients leave -----------------------------------------------------

def _live_timers(loop: asyncio.AbstractEventLoop) -> list[Any]:
    # CPython's BaseEventLoop keeps its timer heap in _scheduled: a cancelled handle stays
    # there until the heap is cleaned, so only live ones count.
    return [h for h in getattr(loop, "_scheduled", []) if not h.cancelled()]


def test_clients_that_leave_mid_sse_cancel_their_handlers_and_leave_no_task_or_timer() -> None:
    cancelled: list[int] = []

    async def scenario() -> Any:
        release = asyncio.Event()

        async def hang(arguments: dict[str, Any], ctx: ToolContext) -> str:
            await ctx.progress(0, None, "waiting")
            try:
                await release.wait()
            except asyncio.CancelledError:
                cancelled.append(1)
                raise
            return "released"

        gateway = small_log_gateway({"t.hang": hang})
        app = app_for(gateway, keepalive_s=0.005)  # keepalives flow while they wait
        clients = []
        for number in range(40):
            client = Client(json.dumps(tool_call("t.hang", number,
                                                 progressToken=number)).encode())
            clients.append((client, asyncio.ensure_future(app(
                modern_post("tools/call", "t.hang"), client.inbox.get, client.send))))
        for client, _ in clients:
            await client.wait_for_sent(4)  # start, progress, two keepalives at least
        for client, _ in clients:
            client.leave()
        assert all([await bounded(task) for _, task in clients])
        assert all(task.exception() is None for _, task in clients)
        assert others() == set()
        assert _live_timers(asyncio.get_running_loop()) == []
        return gateway

    gateway = asyncio.run(scenario())
    assert len(cancelled) == 40
    assert set(outcomes(gateway)) == {("t.hang", "cancelled")}


def test_a_client_that_leaves_while_sending_its_body_in_chunks_leaves_nothing_running() -> None:
    async def scenario() -> None:
        gateway = small_log_gateway({"t.echo": echo})
        app = app_for(gateway)
        tasks = []
        for number in range(50):
            client = Client(None)
            body = json.dumps(tool_call("t.echo", number)).encode()
            for start in range(0, len(body) // 2, 7):
                client.inbox.put_nowait({"type": "http.request", "body": body[start:start + 7],
                                         "more_body": True})
            client.leave()
            tasks.append((client, asyncio.ensure_future(app(
                modern_post("tools/call", "t.echo"), client.inbox.get, client.send))))
        assert all([await bounded(task) for _, task in tasks])
        assert [client.sent for client, _ in tasks] == [[]] * 50
        assert others() == set()
        assert outcomes(gateway) == []

    asyncio.run(scenario())


# --- stdio ------------------------------------------------------------------------------------

def test_stdio_end_of_input_with_hundreds_in_flight_ends_streams_at_once_and_every_task() -> None:
    async def scenario() -> tuple[Lines, Any]:
        release = asyncio.Event()

        async def hang(arguments: dict[str, Any]) -> str:
            await release.wait()
            return "released"

        gateway = small_log_gateway({"t.hang": hang})
        lines = Lines()
        run = asyncio.ensure_future(lines.server(gateway).run())
        lines.put(*(listen(1000 + number) for number in range(5)))
        async with asyncio.timeout(BOUND_S):
            while len(lines.out) < 5:  # the five acknowledgements
                lines.wrote.clear()
                await lines.wrote.wait()
        assert len(gateway.changes) == 5
        lines.put(*(tool_call("t.hang", number) for number in range(300)), None)
        async with asyncio.timeout(BOUND_S):
            while len(gateway.changes) or lines.queue.qsize():
                await asyncio.sleep(0)  # end of input cancels the listens at once
        assert not run.done()  # ... and waits for the 300 calls
        release.set()
        assert await bounded(run)
        assert others() == set()
        return lines, gateway

    lines, gateway = asyncio.run(scenario())
    answered = sorted(m["id"] for m in lines.out if "method" not in m)
    assert answered == list(range(300))  # every call once, no listen answered
    assert outcomes(gateway) == [("t.hang", "ok")] * 16  # the log's newest 16


def test_stdio_keeps_no_state_per_finished_request() -> None:
    async def scenario() -> int:
        gateway = small_log_gateway({"t.echo": echo})

        async def feed(offset: int) -> None:
            lines = Lines()
            run = asyncio.ensure_future(lines.server(gateway).run())
            lines.put(*(tool_call("t.echo", offset + n) for n in range(REQUESTS)), None)
            await run  # bounded by count: the server ends at the end of its REQUESTS lines
            assert len(lines.out) == REQUESTS
            lines.out.clear()

        async def first() -> None:
            await feed(0)

        async def second() -> None:
            await feed(REQUESTS)

        return await growth(first, second)

    assert asyncio.run(scenario()) < REQUESTS * PER_REQUEST_BOUND

