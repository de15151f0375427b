"""The wire rules of the legacy era (2025-11-25 and the older handshake versions) and of stdio in
both eras, rule by rule against mcp-wire.md (SPEC.md section 3 decides where mcp-wire says the
SDK diverges). Each test names the rule it checks; gate-order tests send a message that fails
two gates at once and check that the earlier gate answers.

Real components only: the demo gateway, its kernel behind the stdio loop (lines queued in
memory) or behind the ASGI app (in-process exchanges), and the CLI as a subprocess for the
stdout/stderr split.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import subprocess
import sys
from typing import Any, Final

import pytest
from bounds_kit import app_for, exchange
from stream_kit import BOUND_S, INITIALIZED, META, Lines, asgi_scope, contract, demo_gateway

from toolkeeper.server import Gateway
from toolkeeper.transports import StreamableHTTPApp, serve_stdio

HANDSHAKE: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_ONLY: Final = ("resultType", "ttlMs", "cacheScope")
DISCOVER: Final[dict[str, Any]] = {"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                                   "params": {"_meta": META}}
LOOKUP: Final[dict[str, Any]] = {"name": "payments.lookup", "arguments": {"reference": "PMT-771"}}


def init(version: str = "2025-11-25", request_id: Any = "init", **params: Any
         ) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "audit", "version": "1"}, **params}}


def req(method: str, request_id: Any, **params: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params:
        message["params"] = params
    return message


# --- stdio, in process ---------------------------------------------------------------------


def run_stdio(*messages: dict[str, Any] | bytes, gateway: Gateway | None = None
              ) -> list[dict[str, Any]]:
    """Every line the stdio loop wrote for ``messages`` followed by end of input."""
    async def go() -> list[dict[str, Any]]:
        lines = Lines()
        lines.put(*messages, None)
        await asyncio.wait_for(lines.server(gateway or demo_gateway()).run(), BOUND_S)
        return lines.out
    return asyncio.run(go())


def answers(out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The responses among written lines (notifications left out)."""
    return [m for m in out if "method" not in m]


@pytest.mark.parametrize("version", HANDSHAKE)
def test_stdio_initialize_negotiates_each_handshake_version_as_asked(version: str) -> None:
    # mcp-wire 2 / 10: negotiated = requested if it is a handshake version.
    (answer,) = run_stdio(init(version))
    result = answer["result"]
    assert result["protocolVersion"] == version
    assert set(result) <= {"protocolVersion", "capabilities", "serverInfo", "instructions"}
    assert set(result["serverInfo"]) >= {"name", "version"}


@pytest.mark.parametrize("version", HANDSHAKE)
def test_stdio_legacy_results_of_every_handshake_version_carry_no_modern_bookkeeping(
        version: str) -> None:
    # mcp-wire 3: "Legacy wire: resultType, ttlMs, cacheScope never emitted"; no serverInfo
    # stamp either (mcp-wire 3 step 5 is modern only).
    out = answers(run_stdio(init(version), INITIALIZED, req("ping", 2),
                            req("logging/setLevel", 3, level="error"), req("tools/list", 4),
                            req("tools/call", 5, **LOOKUP)))
    assert [m["id"] for m in out] == ["init", 2, 3, 4, 5]
    assert out[1]["result"] == {} and out[2]["result"] == {}
    for message in out:
        assert not set(message["result"]) & set(MODERN_ONLY)
        assert "io.modelcontextprotocol/serverInfo" not in message["result"].get("_meta", {})


@pytest.mark.parametrize(("version", "structured"), [
    ("2024-11-05", False), ("2025-03-26", False), ("2025-06-18", True), ("2025-11-25", True)])
def test_stdio_structured_content_follows_the_negotiated_version(version: str,
                                                                 structured: bool) -> None:
    # mcp-wire 7.2: structuredContent exists from 2025-06-18 on (object-only until 2026).
    out = answers(run_stdio(init(version), INITIALIZED, req("tools/call", 2, **LOOKUP)))
    result = out[1]["result"]
    assert result["isError"] is False
    assert ("structuredContent" in result) is structured
    if structured:
        assert isinstance(result["structuredContent"], dict)


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_stdio_an_advertised_output_schema_always_comes_with_structured_content(
        version: str) -> None:
    # Either rule keeps the pair consistent: mcp-wire 0 (the SDK judges every pre-2026 version
    # by the 2025-11-25 models: outputSchema listed and structuredContent kept), or the 2025
    # revisions themselves (no outputSchema before 2025-06-18, and from then on "a tool that
    # declares an outputSchema MUST return structuredContent"; mcp-wire 7.2: the SDK client
    # raises "has an output schema but did not return structured content").
    call = {"name": "tickets.create", "arguments": {"title": "audit"}}
    out = answers(run_stdio(init(version), INITIALIZED, req("tools/list", 2),
                            req("tools/call", 3, **call)))
    (tool,) = [t for t in out[1]["result"]["tools"] if t["name"] == "tickets.create"]
    result = out[2]["result"]
    assert result["isError"] is False
    assert ("outputSchema" in tool) == ("structuredContent" in result)


def test_stdio_frames_crlf_lines_like_lf_lines() -> None:
    # Newline framing: a trailing CR is JSON whitespace, the message is the same.
    out = run_stdio(json.dumps(init()).encode() + b"\r\n", json.dumps(INITIALIZED).encode()
                    + b"\r\n", json.dumps(req("ping", 3)).encode() + b"\r\n")
    assert [m["id"] for m in out] == ["init", 3]
    assert out[1]["result"] == {}


def test_stdio_two_messages_on_one_line_are_one_parse_error_not_two_answers() -> None:
    # stdio: one message per line; a line is one JSON text or a parse error (id null).
    pair = json.dumps(req("ping", 3)).encode() + json.dumps(req("ping", 4)).encode() + b"\n"
    out = run_stdio(init(), INITIALIZED, pair)
    assert out[1] == {"jsonrpc": "2.0", "id": None,
                      "error": {"code": -32700, "message": "Parse error"}}
    assert len(out) == 2


def test_stdio_an_invalid_first_request_decides_no_era() -> None:
    # mcp-wire 2 (stream transports): the first *request* decides; a message that is not a
    # valid request (a float id, even with the modern envelope) decides nothing.
    out = run_stdio(req("tools/list", 1.5, _meta=META), init())
    assert (out[0]["id"], out[0]["error"]["code"]) == (None, -32600)
    assert out[1]["result"]["protocolVersion"] == "2025-11-25"


def test_stdio_a_half_built_envelope_first_opens_a_modern_connection() -> None:
    # mcp-wire 2: the version key alone routes modern; the ladder then names the missing key
    # (-32602), and the connection stays modern (a later initialize is -32022).
    half = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    out = run_stdio(req("tools/list", 1, _meta=half), init(request_id=2))
    assert out[0]["error"]["code"] == -32602
    assert (out[1]["id"], out[1]["error"]["code"]) == (2, -32022)


def test_stdio_an_enveloped_initialize_on_a_modern_connection_is_still_unsupported_version(
        ) -> None:
    # mcp-wire 2: initialize on a modern connection -> -32022 naming the served modern versions
    # and the version asked, whatever else initialize carries.
    out = run_stdio(DISCOVER, init(request_id=2, _meta=META))
    error = out[1]["error"]
    assert (out[1]["id"], error["code"]) == (2, -32022)
    assert error["data"] == {"supported": ["2026-07-28"], "requested": "2025-11-25"}


@pytest.mark.parametrize("broken", [
    {"jsonrpc": "1.0"}, {"id": 2.5}, {"id": None}, {"params": []}, {"result": {}}],
    ids=["jsonrpc-1.0", "float-id", "null-id", "array-params", "carries-result"])
def test_stdio_a_malformed_initialize_on_a_modern_connection_fails_the_envelope_rung_first(
        broken: dict[str, Any]) -> None:
    # mcp-wire 4.4 rung 7 (a single valid JSON-RPC request, else -32600 with id null) comes
    # before the version rung (14, -32022); modern.py's own ladder table says the same.
    out = run_stdio(DISCOVER, {**init(request_id=2), **broken})
    # The id is echoed where it could be read (2026-07-28 basic/index.mdx, "Error Responses").
    readable = None if "id" in broken else 2
    assert (out[1]["id"], out[1]["error"]["code"]) == (readable, -32600)


def test_stdio_unsupported_version_on_a_modern_connection_offers_only_what_it_will_serve(
        ) -> None:
    # mcp-wire 2 (stream transports): the first request fixes the era for the connection;
    # initialize on it is -32022 with supported = ["2026-07-28"] (the kernel's own stream-era
    # test: "only its versions are offered, never the one just refused"). The -32022 for an
    # envelope naming 2025-11-25 must not offer 2025-11-25 either: a client that believes it
    # and sends initialize is refused on this connection.
    stale = {**META, "io.modelcontextprotocol/protocolVersion": "2025-11-25"}
    out = run_stdio(req("tools/list", 1, _meta=stale), init(request_id=2))
    first, second = (m["error"] for m in out)
    assert (first["code"], second["code"]) == (-32022, -32022)
    assert second["data"]["supported"] == ["2026-07-28"]
    assert first["data"]["requested"] not in first["data"]["supported"]
    assert first["data"]["supported"] == second["data"]["supported"]


def test_stdio_initialized_before_initialize_counts_for_nothing() -> None:
    # SPEC 3.1 gate 2 + gate 4: notifications/initialized only makes an *initializing*
    # session live; one sent before initialize is accepted silently and forgotten.
    out = run_stdio(INITIALIZED, init(), req("ping", 2), INITIALIZED, req("ping", 3))
    assert [(m["id"], "error" in m) for m in out] == [("init", False), (2, True), (3, False)]
    assert out[1]["error"]["code"] == -32600


def test_stdio_a_refused_initialize_leaves_the_session_new_so_a_retry_opens_it() -> None:
    out = run_stdio(init(request_id=1, capabilities=[]), init(request_id=2), INITIALIZED,
                    req("ping", 3))
    assert (out[0]["id"], out[0]["error"]["code"]) == (1, -32602)
    assert out[1]["result"]["protocolVersion"] == "2025-11-25"
    assert out[2] == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_stdio_a_last_line_without_a_newline_is_answered_and_empty_input_says_nothing(
        ) -> None:
    # Framing at end of input: the final line needs no newline; EOF with nothing read ends
    # the server without a byte on stdout.
    def serve(stdin: bytes) -> bytes:
        stdout = io.BytesIO()
        asyncio.run(asyncio.wait_for(serve_stdio(
            demo_gateway().kernel, stdin=io.BytesIO(stdin), stdout=stdout), BOUND_S))
        return stdout.getvalue()

    written = serve(json.dumps(init()).encode())
    assert written.endswith(b"\n") and json.loads(written)["id"] == "init"
    assert serve(b"") == b""


def test_stdio_a_response_sent_to_a_legacy_connection_is_never_answered() -> None:
    # mcp-wire 2 / SPEC 3.1: a response sent to the server awaits nothing and gets nothing.
    out = run_stdio(init(), INITIALIZED, {"jsonrpc": "2.0", "id": 99, "result": {}},
                    {"jsonrpc": "2.0", "id": 98, "error": {"code": 1, "message": "x"}},
                    req("ping", 3))
    assert [m["id"] for m in out] == ["init", 3]


def test_stdio_ping_before_initialize_is_gate_4_and_initialize_still_opens_the_session(
        ) -> None:
    # SPEC 3.1 gate 4 (any method but initialize before the session is live: -32600) decides
    # over mcp-wire's SDK note (-32602, ping exempt). The refused ping fixed the era: legacy.
    out = run_stdio(req("ping", 1), init(), INITIALIZED, req("tools/list", 2, _meta=META),
                    req("ping", 3))
    assert (out[0]["id"], out[0]["error"]["code"]) == (1, -32600)
    assert out[1]["result"]["protocolVersion"] == "2025-11-25"
    assert (out[2]["id"], out[2]["error"]["code"]) == (2, -32600)  # envelope on legacy
    assert out[3] == {"jsonrpc": "2.0", "id": 3, "result": {}}


def test_stdio_handshake_only_methods_are_not_found_on_a_modern_connection() -> None:
    # mcp-wire 0: ping, logging/setLevel are removed in 2026 (-32601, data = the method);
    # notifications/initialized is a notification: no answer.
    out = run_stdio(DISCOVER, INITIALIZED, req("ping", 2, _meta=META),
                    req("logging/setLevel", 3, level="info", _meta=META))
    assert [(m["id"], m["error"]["code"], m["error"]["data"]) for m in out[1:]] == [
        (2, -32601, "ping"), (3, -32601, "logging/setLevel")]


def test_stdio_log_lines_follow_set_level_on_a_legacy_connection() -> None:
    # logging/setLevel (legacy only): at "error" an info log of the tool is not sent; at
    # "debug" it is, before the response.
    quiet = run_stdio(init(), INITIALIZED, req("logging/setLevel", 2, level="error"),
                      req("tools/call", 3, **LOOKUP))
    assert not [m for m in quiet if m.get("method") == "notifications/message"]
    loud = run_stdio(init(), INITIALIZED, req("logging/setLevel", 2, level="debug"),
                     req("tools/call", 3, **LOOKUP))
    kinds = [m.get("method", m.get("id")) for m in loud]
    assert kinds.index("notifications/message") < kinds.index(3)


def test_stdio_a_legacy_session_hears_tools_list_changed_when_the_estate_changes() -> None:
    # SPEC 2.3: a registry change fires notifications/tools/list_changed to listening
    # clients; mcp-wire 7.7 (legacy): list_changed is spontaneous, and initialize advertised
    # capabilities.tools.listChanged = true on this connection. On stdio the legacy client has
    # no other channel (subscriptions/listen is modern only).
    gateway = demo_gateway()

    async def go() -> list[dict[str, Any]]:
        lines = Lines()
        server = asyncio.ensure_future(lines.server(gateway).run())
        lines.put(init(), INITIALIZED, req("ping", 2))
        async with asyncio.timeout(BOUND_S):
            while len(lines.out) < 2:
                lines.wrote.clear()
                await lines.wrote.wait()
        assert lines.out[0]["result"]["capabilities"]["tools"]["listChanged"] is True
        gateway.registry.publish(contract("audit.new"))
        try:
            async with asyncio.timeout(BOUND_S):
                while not any(m.get("method") == "notifications/tools/list_changed"
                              for m in lines.out):
                    lines.wrote.clear()
                    await lines.wrote.wait()
        except TimeoutError:
            pass
        finally:
            lines.put(None)
            await asyncio.wait_for(server, BOUND_S)
        return lines.out

    out = asyncio.run(go())
    assert [m for m in out if m.get("method") == "notifications/tools/list_changed"]


@pytest.mark.parametrize("opening", ["legacy-not-initialized", "modern"])
def test_stdio_a_connection_without_a_ready_legacy_session_hears_no_spontaneous_list_changed(
        opening: str) -> None:
    # The 2025 mechanism is for initialized legacy sessions only (gate 4); a modern connection
    # listens with subscriptions/listen instead.
    gateway = demo_gateway()
    first = [init()] if opening != "modern" else [DISCOVER]

    async def go() -> list[dict[str, Any]]:
        lines = Lines()
        server = asyncio.ensure_future(lines.server(gateway).run())
        lines.put(*first, req("tools/list", 2) if opening == "modern" else req("ping", 2))
        async with asyncio.timeout(BOUND_S):
            while len(lines.out) < 2:
                lines.wrote.clear()
                await lines.wrote.wait()
        gateway.registry.publish(contract("audit.quiet"))
        lines.put(req("ping" if opening != "modern" else "tools/list", 3), None)
        await asyncio.wait_for(server, BOUND_S)
        return lines.out

    out = asyncio.run(go())
    assert len(out) == 3
    assert not [m for m in out if m.get("method") == "notifications/tools/list_changed"]


# --- stdio, the CLI as a subprocess ------------------------------------------------------


def test_the_cli_stdio_server_writes_only_json_rpc_to_stdout_logs_to_stderr_and_exits_at_eof(
        ) -> None:
    # stdio: stdout carries only newline-delimited JSON-RPC messages, logs go to stderr; at
    # end of input the server answers what it read and exits 0.
    lines = [init(), INITIALIZED, req("tools/call", 2, **LOOKUP), req("nope", 3)]
    stdin = b"".join(json.dumps(m).encode() + b"\n" for m in lines) + b"{junk\n"
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        [sys.executable, "-m", "toolkeeper", "serve", "--demo", "--stdio", "--registry",
         "memory:", "--log-level", "debug"],
        input=stdin, capture_output=True, timeout=30, env=env, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    written = [json.loads(line) for line in done.stdout.splitlines()]
    assert all(m.get("jsonrpc") == "2.0" for m in written)
    replies = answers(written)
    assert [m["id"] for m in replies] == ["init", 2, 3, None]
    assert replies[2]["error"]["code"] == -32601 and replies[3]["error"]["code"] == -32700
    assert b"serving on stdio" in done.stderr


# --- legacy HTTP, in-process ASGI exchanges ----------------------------------------------

Headers = list[tuple[bytes, bytes]]


def scope(method: str = "POST", session: str | None = None,
          version: bytes | None = b"2025-11-25", extra: Headers | None = None) -> dict[str, Any]:
    headers: Headers = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
                        (b"accept", b"application/json, text/event-stream")]
    if session is not None:
        headers.append((b"mcp-session-id", session.encode()))
    if version is not None:
        headers.append((b"mcp-protocol-version", version))
    return asgi_scope(method, headers + (extra or []))


class Answer:
    """One HTTP answer: status, headers (lowercase names) and body."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    @property
    def message(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.body)
        return value

    @property
    def code(self) -> int:
        assert self.headers["content-type"] == "application/json"
        code: int = self.message["error"]["code"]
        return code


async def send(app: StreamableHTTPApp, body: Any, where: dict[str, Any]) -> Answer:
    client = await exchange(app, where, body if isinstance(body, bytes)
                            else json.dumps(body).encode())
    start = client.sent[0]
    headers = {k.decode(): v.decode() for k, v in start["headers"]}
    return Answer(start["status"], headers, client.body())


async def opened(app: StreamableHTTPApp, version: str = "2025-11-25", live: bool = True) -> str:
    """A session (live after notifications/initialized unless ``live`` is False): its id."""
    answer = await send(app, init(version), scope(version=None))
    assert answer.status == 200 and answer.message["result"]["protocolVersion"] == version
    session = answer.headers["mcp-session-id"]
    if live:
        assert (await send(app, INITIALIZED, scope(session=session))).status == 202
    return session


def http(scenario: Any) -> None:
    asyncio.run(scenario(app_for(demo_gateway())))


@pytest.mark.parametrize("version", HANDSHAKE)
def test_http_initialize_negotiates_each_handshake_version_and_mints_a_session(
        version: str) -> None:
    # mcp-wire 10: initialize without the header -> InitializeResult; the session id is minted.
    async def scenario(app: StreamableHTTPApp) -> None:
        session = await opened(app, version)
        answer = await send(app, req("ping", 2), scope(session=session,
                                                        version=version.encode()))
        assert (answer.status, answer.message["result"]) == (200, {})
        assert answer.headers["mcp-session-id"] == session
    http(scenario)


def test_http_gate_2_before_gate_4_a_notifications_method_with_an_id_is_202_before_live(
        ) -> None:
    # SPEC 3.1: gate 2 (notifications/* never answered) precedes gate 4 (not yet live).
    async def scenario(app: StreamableHTTPApp) -> None:
        session = await opened(app, live=False)
        answer = await send(app, req("notifications/progress", 5), scope(session=session))
        assert (answer.status, answer.body) == (202, b"")
    http(scenario)


def test_http_gate_3_before_gate_4_an_id_less_request_is_202_before_live() -> None:
    async def scenario(app: StreamableHTTPApp) -> None:
        session = await opened(app, live=False)
        answer = await send(app, {"jsonrpc": "2.0", "method": "tools/list"},
                            scope(session=session))
        assert (answer.status, answer.body) == (202, b"")
    http(scenario)


def test_http_gate_4_before_gate_5_an_unknown_method_before_live_is_32600_not_32601() -> None:
    # Both are answers to a dispatched request: HTTP 200 in the legacy era (mcp-wire 10).
    async def scenario(app: StreamableHTTPApp) -> None:
        session = await opened(app, live=False)
        early = await send(app, req("nope", 6), scope(session=session))
        assert (early.status, early.code, early.message["id"]) == (200, -32600, 6)
        assert (await send(app, INITIALIZED, scope(session=session))).status == 202
        late = await send(app, req("nope", 7), scope(session=session))
        assert (late.status, late.code, late.message["error"]["data"]) == (200, -32601, "nope")
    http(scenario)


def test_http_gate_1_before_gate_2_a_malformed_initialized_is_refused_and_changes_nothing(
        ) -> None:
    # SPEC 3.1 gate 1 (envelope validation, answered with the id, here null) precedes gate 2;
    # the refused notification must not make the session live.
    async def scenario(app: StreamableHTTPApp) -> None:
        session = await opened(app, live=False)
        bad = await send(app, {**INITIALIZED, "params": []}, scope(session=session))
        assert (bad.status, bad.code, bad.message["id"]) == (400, -32600, None)
        still = await send(app, req("tools/list", 2), scope(session=session))
        assert (still.status, still.code) == (200, -32600)
    http(scenario)


def test_http_initialize_on_an_existing_session_is_refused_and_mints_nothing() -> None:
    async def scenario(app: StreamableHTTPApp) -> None:
        session = await opened(app)
        again = await send(app, init(request_id=9), scope(session=session))
        assert (again.status, again.code, again.message["id"]) == (200, -32600, 9)
        assert again.headers.get("mcp-session-id") in (None, session)
        assert (await send(app, req("ping", 3), scope(session=session))).status == 200
    http(scenario)


@pytest.mark.parametrize("header", [None, *HANDSHAKE])
def test_http_a_session_accepts_any_handshake_version_header_or_none(header: str | None
                                                                      ) -> None:
    # mcp-wire 10: the legacy transport no longer checks the header against the negotiated
    # version (any handshake version is accepted).
    async def scenario(app: StreamableHTTPApp) -> None:
        session = await opened(app, "2025-06-18")
        answer = await send(app, req("ping", 2), scope(
            session=session, version=None if header is None else header.encode()))
        assert (answer.status, answer.message) == (200, {"jsonrpc": "2.0", "id": 2,
                                                          "result": {}})
    http(scenario)


@pytest.mark.parametrize("header", [b"", b"garbage", b"2026-07-28"])
def test_http_a_non_handshake_version_header_routes_initialize_to_the_modern_entry(
        header: bytes) -> None:
    # mcp-wire 2 / trap 1: a header that is not a handshake version ("" and garbage included)
    # is the modern entry, where initialize without _meta is 400 -32602 (O: M28).
    async def scenario(app: StreamableHTTPApp) -> None:
        answer = await send(app, init(request_id=4), scope(version=header, extra=[
            (b"mcp-method", b"initialize")]))
        assert (answer.status, answer.code, answer.message["id"]) == (400, -32602, 4)
        assert "mcp-session-id" not in answer.headers
    http(scenario)


def test_http_initialize_with_the_modern_header_and_envelope_is_404_method_not_found() -> None:
    # mcp-wire 2 (O: M29): with _meta -> 404 -32601 data "initialize".
    async def scenario(app: StreamableHTTPApp) -> None:
        answer = await send(app, init(request_id=4, _meta=META), scope(
            version=b"2026-07-28", extra=[(b"mcp-method", b"initialize")]))
        assert (answer.status, answer.code) == (404, -32601)
        assert answer.message["error"]["data"] == "initialize"
    http(scenario)


def test_http_an_enveloped_initialize_without_the_header_opens_a_legacy_session() -> None:
    # mcp-wire 2: legacy initialize is sent without the header; a dual-era client may stamp
    # the envelope on it, and it still opens a legacy session.
    async def scenario(app: StreamableHTTPApp) -> None:
        answer = await send(app, init(_meta=META), scope(version=None))
        assert answer.status == 200 and len(answer.headers["mcp-session-id"]) == 32
        assert not set(answer.message["result"]) & {*MODERN_ONLY, "_meta"}
    http(scenario)


def test_http_a_notification_or_a_posted_response_is_202_empty_with_the_session_header(
        ) -> None:
    # mcp-wire 6 (legacy): notifications and JSON-RPC responses -> 202, empty body,
    # mcp-session-id still sent.
    async def scenario(app: StreamableHTTPApp) -> None:
        session = await opened(app)
        for body in ({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
                     {"jsonrpc": "2.0", "id": 77, "result": {}},
                     {"jsonrpc": "2.0", "id": 78, "error": {"code": -1, "message": "no"}}):
            answer = await send(app, body, scope(session=session))
            assert (answer.status, answer.body) == (202, b"")
            assert answer.headers["mcp-session-id"] == session
    http(scenario)


def test_http_legacy_answers_travel_with_200_and_transport_refusals_with_400() -> None:
    # mcp-wire 4.5 and 10: a dispatched request's error is HTTP 200 in the legacy era (the
    # modern status table never applies); a body that is not one JSON-RPC message is the
    # transport's own refusal, 400.
    async def scenario(app: StreamableHTTPApp) -> None:
        session = await opened(app)
        where = scope(session=session)
        unknown = await send(app, req("resources/list", 2), where)
        bad_level = await send(app, req("logging/setLevel", 3, level="loud"), where)
        no_level = await send(app, req("logging/setLevel", 4), where)
        batch = await send(app, [req("ping", 5)], where)
        assert [(a.status, a.code) for a in (unknown, bad_level, no_level, batch)] == [
            (200, -32601), (200, -32602), (200, -32602), (400, -32600)]
        assert unknown.message["error"]["data"] == "resources/list"
        assert batch.message["id"] is None
    http(scenario)


def test_http_a_duplicated_session_header_is_400_whatever_the_message() -> None:
    async def scenario(app: StreamableHTTPApp) -> None:
        session = await opened(app)
        twice: Headers = [(b"mcp-session-id", session.encode())]
        for body, answered_id in ((req("ping", 3), 3),
                                  ({"jsonrpc": "2.0", "method": "notifications/x"}, None)):
            answer = await send(app, body, scope(session=session, extra=twice))
            assert (answer.status, answer.code, answer.message["id"]) == (400, -32600,
                                                                        answered_id)
    http(scenario)


def test_http_missing_session_is_400_and_an_unknown_one_404_for_notifications_too() -> None:
    # mcp-wire 10: missing id -> 400 -32600; unknown -> 404 -32600 (a notification included:
    # without a session there is nothing to accept it into).
    async def scenario(app: StreamableHTTPApp) -> None:
        note = {"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 1}}
        missing = await send(app, note, scope(version=None))
        unknown = await send(app, note, scope(session="f" * 32))
        assert [(a.status, a.code) for a in (missing, unknown)] == [(400, -32600),
                                                                     (404, -32600)]
        reopen = await send(app, init(request_id=5), scope(session="f" * 32))
        assert (reopen.status, reopen.code, reopen.message["id"]) == (404, -32600, 5)
        assert "mcp-session-id" not in reopen.headers
    http(scenario)


def test_http_get_and_delete_follow_the_session_rules() -> None:
    # mcp-wire 10: DELETE -> 200, then the session is gone (404 for DELETE, GET and POST);
    # GET on a session not yet live is 400, on an unknown one 404.
    async def scenario(app: StreamableHTTPApp) -> None:
        pending = await opened(app, live=False)
        get = await send(app, b"", scope("GET", session=pending, extra=[]))
        assert get.status == 400
        session = await opened(app)
        assert (await send(app, b"", scope("DELETE", session=session))).status == 200
        assert (await send(app, b"", scope("DELETE", session=session))).status == 404
        assert (await send(app, b"", scope("GET", session=session))).status == 404
        after = await send(app, req("ping", 1), scope(session=session))
        assert (after.status, after.code) == (404, -32600)
    http(scenario)


@pytest.mark.parametrize(("version", "structured"), [
    ("2024-11-05", False), ("2025-03-26", False), ("2025-06-18", True), ("2025-11-25", True)])
def test_http_structured_content_and_bookkeeping_follow_the_negotiated_version(
        version: str, structured: bool) -> None:
    async def scenario(app: StreamableHTTPApp) -> None:
        session = await opened(app, version)
        answer = await send(app, req("logging/setLevel", 1, level="emergency"),
                            scope(session=session))
        assert answer.message["result"] == {}
        called = await send(app, req("tools/call", 2, **LOOKUP), scope(session=session))
        assert called.status == 200 and called.headers["content-type"] == "application/json"
        result = called.message["result"]
        assert ("structuredContent" in result) is structured
        assert not set(result) & set(MODERN_ONLY)
        listed = (await send(app, req("tools/list", 3), scope(session=session))).message
        assert set(listed["result"]) == {"tools"}
    http(scenario)
