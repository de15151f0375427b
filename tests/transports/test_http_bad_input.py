"""Bad input on the Streamable HTTP path: what a fuzzing pass found, and the property it ran.

Each finding is reduced to its smallest request and written as the behaviour the wire rules
document (SPEC 3.2 / 3.4, mcp-wire 4.4 and 4.5); each failed before its fix (a schemaVersion of
thousands of digits, a handler result that is not JSON, non-ASCII port digits, ``q=0.``).
Requests are driven in-process (a constructed ASGI scope, ``receive``/``send``
callables), over the demo estate, on an app with the express lane and one without
(``app.express = False``): the answer must be the same on both.

One stdio finding shares the handler-output cause and sits here with its HTTP twins.

The closing property test is the fuzzer's harness kept as a regression net: random bodies
(every envelope field replaced by odd JSON values, raw-byte edits) and header edits for every
method of both eras, checked against the invariant: a documented status and code, never a 500,
never an exception escaping the app, the same bytes with and without the express lane, and
stored state (a live legacy session, the registry's tool list) not lost.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from typing import Any, Final

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stream_kit import Pairs, Sent, body_of, sent_by, status

from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.demo import demo_handlers, install_demo
from toolkeeper.registry import Registry
from toolkeeper.server import ToolContext, ToolHandlers, ToolResult, build_app, text
from toolkeeper.transports import HttpConfig, StdioServer, StreamableHTTPApp

VERSION: Final = "2026-07-28"
META: Final[dict[str, Any]] = {"io.modelcontextprotocol/protocolVersion": VERSION,
                               "io.modelcontextprotocol/clientCapabilities": {}}
HOST: Final = (b"host", b"127.0.0.1:8000")
JSON_TYPE: Final = (b"content-type", b"application/json")
ACCEPT: Final = (b"accept", b"application/json, text/event-stream")
INITIALIZE: Final[dict[str, Any]] = {
    "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "fuzz", "version": "1"}}}
STATUS_OF: Final[dict[int, int]] = {-32700: 400, -32600: 400, -32602: 400, -32020: 400,
                                    -32021: 400, -32022: 400, -32601: 404, -32603: 200}



# --- the in-process kit ------------------------------------------------------------------


def demo_app(*, express: bool = True, config: HttpConfig | None = None) -> StreamableHTTPApp:
    registry = Registry.open("memory:")
    install_demo(registry)
    app, _ = build_app(registry, demo_handlers(), http=config or HttpConfig(keepalive_s=30))
    app.express = express
    return app


def exchange(app: StreamableHTTPApp, pairs: Pairs, body: bytes, method: str = "POST") -> Sent:
    """Every ASGI message the app sent for one request."""
    return sent_by(app, pairs, body, method)


def content_type(sent: Sent) -> bytes | None:
    return dict(sent[0]["headers"]).get(b"content-type")


def modern_pairs(method: str, name: str | None = None) -> Pairs:
    pairs = [HOST, JSON_TYPE, ACCEPT, (b"mcp-protocol-version", VERSION.encode()),
             (b"mcp-method", method.encode())]
    if name is not None:
        pairs.append((b"mcp-name", name.encode()))
    return pairs


def tool_call(name: str, arguments: Any, request_id: int = 1, **meta: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {
        "name": name, "arguments": arguments, "_meta": {**META, **meta}}}).encode()


def legacy_session(app: StreamableHTTPApp) -> bytes:
    """A live legacy session: initialize, then notifications/initialized; its id."""
    sent = exchange(app, [HOST, JSON_TYPE, ACCEPT], json.dumps(INITIALIZE).encode())
    assert status(sent) == 200
    session: bytes = dict(sent[0]["headers"])[b"mcp-session-id"]
    sent = exchange(app, [HOST, JSON_TYPE, ACCEPT, (b"mcp-session-id", session)],
                    b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    assert status(sent) == 202
    return session


# --- finding 1: a schemaVersion the semver parser cannot turn into ints ------------------

HUGE: Final = "9" * 5000


@pytest.mark.parametrize("express", [True, False], ids=["express", "ladder"])
@pytest.mark.parametrize("requested", [f"{HUGE}.0.0", f"4.0.0-{HUGE}"],
                         ids=["major", "prerelease"])
def test_a_schema_version_with_thousands_of_digits_is_refused_as_unknown(
        express: bool, requested: str) -> None:
    app = demo_app(express=express)
    sent = exchange(app, modern_pairs("tools/call", "db.query"),
                    tool_call("db.query", {"sql": "select 1", "timeout": 5},
                              schemaVersion=requested))
    error = json.loads(body_of(sent))["error"]
    assert (status(sent), error["code"]) == (400, -32602)
    assert error["data"]["reason"] == "schema_version_unknown"


def test_a_schema_version_with_thousands_of_digits_is_refused_as_unknown_on_a_legacy_session(
        ) -> None:
    app = demo_app()
    session = legacy_session(app)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "db.query", "arguments": {"sql": "select 1", "timeout": 5},
        "_meta": {"schemaVersion": f"{HUGE}.0.0"}}}).encode()
    sent = exchange(app, [HOST, JSON_TYPE, ACCEPT, (b"mcp-session-id", session)], body)
    error = json.loads(body_of(sent))["error"]
    assert (status(sent), error["code"]) == (200, -32602)  # legacy: an answer is HTTP 200
    assert error["data"]["reason"] == "schema_version_unknown"


# --- finding 2: a handler result that cannot be written as JSON ---------------------------

OUTPUTS: Final[dict[str, Callable[[], Any]]] = {
    "text-with-lone-surrogate": lambda: "report-caf\udce9.txt",  # os.fsdecode of a bad name
    "tool-result-text-with-lone-surrogate": lambda: ToolResult((text("caf\udce9"),)),
    "structured-non-json-object": lambda: ToolResult((text("x"),), {"at": object()}),
    "structured-integer-keys": lambda: ToolResult((text("x"),), {1: "one"}),
    "content-block-non-json-value": lambda: [{"type": "text", "text": object()}],
    "content-not-blocks": lambda: ToolResult(("plain string",)),  # type: ignore[arg-type]
}


def _contract(name: str) -> Any:
    return spec_from_mapping({
        "name": name, "version": "1.0.0", "title": name, "description": f"{name} (fuzz)",
        "inputSchema": {"type": "object", "properties": {}}, "dataClassification": "public",
        "sideEffect": "read"})


def _plain(make: Callable[[], Any]) -> Callable[[dict[str, Any]], Any]:
    def handler(arguments: dict[str, Any]) -> Any:
        return make()
    return handler


def output_registry(kind: str) -> tuple[Registry, ToolHandlers]:
    """One tool per bad output, bound as a plain function (``inline``: run inside dispatch)
    or as an ``async`` handler with a context that reports progress first (``streamed``)."""
    registry = Registry.open("memory:")
    handlers = ToolHandlers()
    for label, make in OUTPUTS.items():
        registry.publish(_contract(f"out.{label}"))
        if kind == "inline":
            handlers.bind(f"out.{label}", _plain(make))
        else:
            async def streamed(arguments: dict[str, Any], ctx: ToolContext,
                               make: Callable[[], Any] = make) -> Any:
                await ctx.progress(1, 2, "working")
                return make()
            handlers.bind(f"out.{label}", streamed)
    return registry, handlers


@pytest.mark.parametrize("express", [True, False], ids=["express", "ladder"])
@pytest.mark.parametrize("label", sorted(OUTPUTS))
def test_a_handler_result_that_is_not_json_is_an_is_error_result_not_a_500(
        label: str, express: bool) -> None:
    registry, handlers = output_registry("inline")
    app, gateway = build_app(registry, handlers, http=HttpConfig(keepalive_s=30))
    app.express = express
    sent = exchange(app, modern_pairs("tools/call", f"out.{label}"),
                    tool_call(f"out.{label}", {}))
    assert status(sent) == 200 and content_type(sent) == b"application/json"
    assert json.loads(body_of(sent))["result"]["isError"] is True
    records = gateway.call_log.records  # type: ignore[attr-defined]
    assert [(r.tool, r.outcome) for r in records] == [(f"out.{label}", "exception")]


@pytest.mark.parametrize("label", ["text-with-lone-surrogate", "structured-non-json-object"])
def test_a_streamed_handler_result_that_is_not_json_still_ends_the_stream_with_an_answer(
        label: str) -> None:
    registry, handlers = output_registry("streamed")
    app, _ = build_app(registry, handlers, http=HttpConfig(keepalive_s=30))
    sent = exchange(app, modern_pairs("tools/call", f"out.{label}"),
                    tool_call(f"out.{label}", {}, progressToken="p"))
    assert status(sent) == 200 and content_type(sent) == b"text/event-stream"
    assert sent[-1]["type"] == "http.response.body" and sent[-1]["more_body"] is False
    frames = [f for f in body_of(sent).split(b"\r\n\r\n") if f.startswith(b"event: message")]
    final = json.loads(frames[-1].split(b"data: ", 1)[1])
    assert final["id"] == 1 and final["result"]["isError"] is True


class _Lines:
    """An in-memory line source and sink for :class:`StdioServer`."""

    def __init__(self, lines: list[bytes]) -> None:
        self.lines = lines
        self.out: list[bytes] = []

    async def read_line(self) -> bytes | None:
        await asyncio.sleep(0)  # let started requests run, as a real reader would
        return self.lines.pop(0) if self.lines else None

    async def write(self, data: bytes) -> None:
        self.out.append(data)


def test_stdio_answers_an_inline_handler_result_that_is_not_json_and_keeps_serving() -> None:
    registry, handlers = output_registry("inline")
    _, gateway = build_app(registry, handlers)
    name = "out.text-with-lone-surrogate"
    source = _Lines([tool_call(name, {}, 1), tool_call(name, {}, 2).replace(
        name.encode(), b"out.nope")])
    asyncio.run(asyncio.wait_for(StdioServer(gateway.kernel, source.read_line,
                                             source.write).run(), 5))
    answers = [json.loads(x) for x in source.out]
    assert [a["id"] for a in answers] == [1, 2]
    assert answers[0]["result"]["isError"] is True
    assert answers[1]["error"]["code"] == -32602  # the server still answers after it


# --- finding 3: Host and Origin ports of non-ASCII digits --------------------------------

@pytest.mark.parametrize("express", [True, False], ids=["express", "ladder"])
@pytest.mark.parametrize(("header", "value", "expected"), [
    (b"host", b"127.0.0.1:\xb2", 421),
    (b"host", b"localhost:\xb9\xb2\xb3", 421),
    (b"origin", b"http://localhost:\xb2", 403),
], ids=["host", "host-three-superscripts", "origin"])
def test_a_host_or_origin_port_of_non_ascii_digits_is_refused(
        express: bool, header: bytes, value: bytes, expected: int) -> None:
    pairs = [(n, v) for n, v in modern_pairs("tools/list") if n != b"host"]
    pairs += [(header, value)] if header == b"host" else [HOST, (header, value)]
    sent = exchange(demo_app(express=express), pairs, json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}).encode())
    assert status(sent) == expected


# --- finding 4: an Accept refusal written with a bare decimal point ----------------------

@pytest.mark.parametrize("express", [True, False], ids=["express", "ladder"])
def test_an_accept_that_refuses_sse_with_q_zero_point_is_406(express: bool) -> None:
    pairs = [(n, b"application/json, text/event-stream;q=0." if n == b"accept" else v)
             for n, v in modern_pairs("tools/list")]
    sent = exchange(demo_app(express=express), pairs, json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}).encode())
    assert status(sent) == 406


# --- the fuzzer's property, kept -----------------------------------------------------------

_ODD: Final[st.SearchStrategy[Any]] = st.sampled_from([
    None, True, False, 0, -1, 1.5, -0.0, 2**64, -(2**63) - 1, 1e308, 10**100, "", "x",
    "\u00e9", "\u2028", "\x00", "a" * 300, "=?base64?eA==?=", VERSION, "2025-11-25",
    "2099-01-01", "tools/call", "PMT-771", "3.0.0", "4.0.0", "9.9.9", [], {}, [1, "a"],
    {"a": None}, {"_meta": {}}, {"name": 1}])
_CALLS: Final = [  # (tool, arguments, schemaVersion pin)
    ("payments.lookup", {"reference": "PMT-771", "include_legs": True}, None),
    ("db.query", {"sql": "select 1", "timeout": 5}, None),
    ("db.query", {"sql": "select 1", "timeout_ms": 5}, "3.0.0"),  # retired: re-list
    ("tickets.create", {"title": "broken", "priority": "high"}, "1.0.0"),
]
_METHODS: Final = ["tools/call", "tools/list", "server/discover", "ping", "initialize",
                   "nope/nope", "notifications/cancelled", "logging/setLevel"]
_KEYS: Final = ["jsonrpc", "id", "method", "params", "name", "arguments", "_meta", "cursor",
                "schemaVersion", "progressToken", "io.modelcontextprotocol/protocolVersion",
                "io.modelcontextprotocol/clientCapabilities", "io.modelcontextprotocol/logLevel",
                "io.modelcontextprotocol/clientInfo", "reference", "sql", "timeout", "title"]
_RAW_EDITS: Final = [(b"", b"")] * 8 + [
    (b"\xef\xbb\xbf", b""), (b" \n", b"\r\n\r\n"), (b"", b"x"), (b"", b"{}"), (b"", b"\x00"),
    (b"", b"]")]
"""Bytes before and after the JSON text (BOM, whitespace, trailing data); mostly none."""
_HEADER_EDITS: Final = st.sampled_from([
    (b"mcp-method", None), (b"mcp-name", None), (b"mcp-protocol-version", None),
    (b"mcp-protocol-version", b"2025-11-25"), (b"mcp-protocol-version", b" 2026-07-28\t"),
    (b"Mcp-Method", b"tools/call"), (b"mcp-name", b"=?base64?cGF5bWVudHMubG9va3Vw?="),
    (b"mcp-name", b"=?base64?!?="), (b"mcp-session-id", b"\xff"), (b"x-extra", b"\x00"),
    (b"content-length", b"00012"), (b"mcp-param-reference", b"PMT-771")])


def _edit(node: Any, path: list[str], value: Any) -> None:
    """Walk ``path`` through the objects it names and set the member where the walk stops
    (the last key, or the first one that does not name an object)."""
    for depth, key in enumerate(path, 1):
        if depth < len(path) and isinstance(node.get(key), dict):
            node = node[key]
        else:
            node[key] = copy.deepcopy(value)
            return


def _message(method: str, call: int, era: str) -> dict[str, Any]:
    params: dict[str, Any] = {} if era == "legacy" else {"_meta": copy.deepcopy(META)}
    if method == "tools/call":
        name, arguments, pin = _CALLS[call]
        params.update(name=name, arguments=copy.deepcopy(arguments))
        if pin is not None:
            params.setdefault("_meta", {})["schemaVersion"] = pin
    elif method == "initialize":
        params.update(copy.deepcopy(INITIALIZE["params"]))
    return {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}


def _check_answer(sent: Sent, era: str) -> None:
    code = status(sent)
    assert code in (200, 202, 400, 404, 405, 406, 413), code
    payload = body_of(sent)
    assert b"Traceback" not in payload and b"Error:" not in payload
    if content_type(sent) == b"application/json":
        error = json.loads(payload).get("error")
        if error is not None:
            documented = STATUS_OF.get(error["code"])
            assert documented is not None, error
            session_gone = error["code"] == -32600 and code == 404  # "Session not found"
            # Legacy: a dispatched request's error is 200; the transport's own refusals (a body
            # that is not one JSON-RPC message, no session) keep their 4xx (mcp-wire 10).
            if era == "legacy":
                refused = code == 400 and error["code"] in (-32700, -32600)
                assert code == 200 or refused or session_gone, (code, error)
            else:  # modern, or a legacy session's request that names a modern version
                assert documented == code or session_gone, (code, error)
            assert error["code"] != -32603, error  # no input of this corpus is a server fault


@pytest.fixture(scope="module")
def twins() -> tuple[StreamableHTTPApp, StreamableHTTPApp]:
    return demo_app(), demo_app(express=False)


@settings(max_examples=200, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(era=st.sampled_from(["modern", "legacy"]), method=st.sampled_from(_METHODS),
       call=st.integers(0, len(_CALLS) - 1),
       edits=st.lists(st.tuples(st.lists(st.sampled_from(_KEYS), min_size=1, max_size=3),
                                _ODD), max_size=3),
       raw=st.sampled_from(_RAW_EDITS),
       headers=st.lists(_HEADER_EDITS, max_size=2))
def test_random_bad_input_of_both_eras_gets_documented_answers_alike_and_loses_no_state(
        twins: tuple[StreamableHTTPApp, StreamableHTTPApp], era: str, method: str, call: int,
        edits: list[tuple[list[str], Any]], raw: tuple[bytes, bytes],
        headers: list[tuple[bytes, bytes | None]]) -> None:
    message = _message(method, call, era)
    for path, value in edits:
        _edit(message, path, value)
    body = raw[0] + json.dumps(message).encode() + raw[1]
    name = message["params"].get("name") if isinstance(message.get("params"), dict) else None
    base = (modern_pairs(method, name if isinstance(name, str) else None) if era == "modern"
            else [HOST, JSON_TYPE, ACCEPT])
    answers = []
    for app in twins:
        pairs = list(base)
        if era == "legacy":
            pairs.append((b"mcp-session-id", legacy_session(app)))
        for header, value in headers:
            pairs = [(n, v) for n, v in pairs if n != header]
            if value is not None:
                pairs.append((header, value))
        sent = exchange(app, pairs, body)
        # A request whose MCP-Protocol-Version header was edited may be routed to the modern
        # era (select_http_era), whose status table then applies.
        named = [value for header, value in headers
                 if header == b"mcp-protocol-version" and value is not None]
        _check_answer(sent, "modern" if named and b"2026-07-28" in named[-1] else era)
        session = dict(pairs).get(b"mcp-session-id")
        answers.append((status(sent), body_of(sent).replace(session or b"\x01", b"<session>")))
        if era == "legacy" and session is not None and session != b"\xff":  # still alive
            ping = exchange(app, [HOST, JSON_TYPE, ACCEPT, (b"mcp-session-id", session)],
                            b'{"jsonrpc":"2.0","id":"p","method":"ping"}')
            assert status(ping) == 200
    assert answers[0] == answers[1]
    listed = [exchange(app, modern_pairs("tools/list"), json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}}).encode())
        for app in twins]
    assert [status(s) for s in listed] == [200, 200]
    tools = json.loads(body_of(listed[0]))["result"]["tools"]
    assert [(t["name"], t["_meta"]["schemaVersion"]) for t in tools] == [
        ("db.query", "4.0.0"), ("payments.lookup", "1.0.0"), ("tickets.create", "1.0.0")]
