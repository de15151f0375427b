"""The modern era (2026-07-28) against mcp-wire.md, rule by rule, over the ASGI app
in process (no sockets) and the kernel's stream entry.

Each test names the rule it checks (mcp-wire section / row, or SPEC section). Where mcp-wire
says the SDK diverges from the specification, SPEC.md decides. Rung-order tests send requests
that fail two rungs at once and check that the earlier rung answers. The divergences these
tests found are fixed; the tests stay as the rules' coverage.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any

import pytest
from express_kit import build_gateway_for_tests, build_registry
from kernel_kit import build_kernel, envelope, modern

from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.protocol import SERVER_INFO_KEY, SUBSCRIPTION_ID_KEY, Reply
from toolkeeper.protocol.codes import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from toolkeeper.protocol.versions import supported_versions
from toolkeeper.registry import Registry
from toolkeeper.server import InMemoryCallLog, ToolContext, ToolHandlers, build_gateway
from toolkeeper.transports import HttpConfig, create_asgi_app
from toolkeeper.transports.http import StreamableHTTPApp

VERSION = "2026-07-28"
FUTURE = "2099-01-01"
CAPS = "io.modelcontextprotocol/clientCapabilities"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
WAIT_S = 5.0

# --- an in-process ASGI client ----------------------------------------------------------------

Pairs = list[tuple[str, str]]


@dataclass
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        found = [v for k, v in self.headers if k == name]
        return found[0] if found else None

    def json(self) -> Any:
        assert self.header("content-type") == "application/json", self.headers
        return json.loads(self.body)

    def error(self) -> tuple[int, Any, int]:
        """(HTTP status, response id, error code) of a JSON error reply."""
        message = self.json()
        return self.status, message["id"], message["error"]["code"]

    def events(self) -> list[dict[str, Any]]:
        """The JSON-RPC messages of an SSE body, checking the exact frame format (mcp-wire 9)."""
        assert self.header("content-type") == "text/event-stream", self.headers
        out = []
        for frame in self.body.decode().split("\r\n\r\n"):
            if not frame or frame.startswith(":"):
                continue
            event, data = frame.split("\r\n")
            assert event == "event: message" and data.startswith("data: "), frame
            out.append(json.loads(data[len("data: "):]))
        return out


async def exchange(app: StreamableHTTPApp, headers: Pairs, body: bytes, *,
                   method: str = "POST", frames: int | None = None,
                   after_first: Callable[[], Awaitable[None]] | None = None) -> Answer:
    """One request to ``app``. ``frames``: disconnect once that many SSE frames arrived (a
    stream that never ends by itself); ``after_first``: run once the first frame arrived."""
    status: list[int] = []
    head: list[tuple[str, str]] = []
    chunks: list[bytes] = []
    gone, progressed = asyncio.Event(), asyncio.Event()
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])
            head.extend((k.decode(), v.decode()) for k, v in message["headers"])
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
        progressed.set()

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": method, "scheme": "http", "path": "/mcp", "raw_path": b"/mcp",
             "query_string": b"", "root_path": "", "client": ("127.0.0.1", 40000),
             "server": ("127.0.0.1", 8000),
             "headers": [(k.encode(), v.encode("latin-1")) for k, v in headers]}
    task = asyncio.ensure_future(app(scope, receive, send))
    async with asyncio.timeout(WAIT_S):
        if frames is not None or after_first is not None:
            ran = after_first is None
            while not task.done():
                count = b"".join(chunks).count(b"\r\n\r\n")
                if not ran and count >= 1:
                    ran = True
                    assert after_first is not None
                    await after_first()
                    continue
                if frames is not None and count >= frames:
                    break
                progressed.clear()
                waiter = asyncio.ensure_future(progressed.wait())
                await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
                waiter.cancel()
            gone.set()
        await task
    return Answer(status[0], head, b"".join(chunks))


def run(app: StreamableHTTPApp, headers: Pairs, body: bytes, **options: Any) -> Answer:
    async def go() -> Answer:
        answer = await exchange(app, headers, body, **options)
        # let the waiter tasks exchange() left behind finish before the loop closes
        await asyncio.sleep(0)
        return answer
    return asyncio.run(go())


def hdrs(method: str, name: str | None = None, version: str = VERSION, *,
         accept: str = "application/json, text/event-stream", **extra: str) -> Pairs:
    out = [("host", "127.0.0.1:8000"), ("accept", accept),
           ("content-type", "application/json"), ("mcp-protocol-version", version),
           ("mcp-method", method)]
    if name is not None:
        out.append(("mcp-name", name))
    out += [(k.replace("_", "-").lower(), v) for k, v in extra.items()]
    return out


def req(method: str, request_id: Any = 1, *, meta: dict[str, Any] | None = None,
        **params: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                       "params": {**params, "_meta": envelope() if meta is None else meta}}
                      ).encode()


def raw(message: Any) -> bytes:
    return json.dumps(message).encode()


def at(version: str) -> dict[str, Any]:
    return envelope(version)


def meta_with(**extra: Any) -> dict[str, Any]:
    """The default envelope plus ``extra`` keys."""
    return {**envelope(), **extra}


def with_caps(caps: Any) -> dict[str, Any]:
    return {**envelope(), CAPS: caps}


def replaced(pairs: Pairs, name: str, value: str) -> Pairs:
    return [(k, value if k == name else v) for k, v in pairs]


# --- estates ----------------------------------------------------------------------------------


def _contract(name: str, properties: dict[str, Any]) -> Any:
    return spec_from_mapping({
        "name": name, "version": "1.0.0", "title": name, "description": f"{name} (audit)",
        "inputSchema": {"type": "object", "properties": properties},
        "dataClassification": "public", "sideEffect": "read"})


def _audit_app() -> StreamableHTTPApp:
    """Tools the express estate lacks: one that commits to SSE then demands a capability, and
    one with an ``x-mcp-header`` argument whose binding requires sampling."""
    registry = Registry.open("memory:")
    registry.publish(_contract("a.emit_then_require", {}))
    registry.publish(_contract("a.header_needs", {
        "region": {"type": "string", "x-mcp-header": "Region"}}))
    handlers = ToolHandlers()

    @handlers.tool("a.emit_then_require")
    async def emit_then_require(arguments: dict[str, Any], ctx: ToolContext) -> str:
        await ctx.progress(1, 2, "before the demand")
        ctx.require_capabilities({"sampling": {}})
        return "sampling declared"

    @handlers.tool("a.header_needs", requires={"sampling": {}})
    async def header_needs(arguments: dict[str, Any], ctx: ToolContext) -> str:
        return "ran"

    gateway = build_gateway(registry, handlers, call_log=InMemoryCallLog())
    return create_asgi_app(gateway.kernel, HttpConfig(), changes=gateway.changes)


@pytest.fixture(scope="module")
def app() -> Iterator[StreamableHTTPApp]:
    gateway = build_gateway_for_tests()
    yield create_asgi_app(gateway.kernel, HttpConfig(), changes=gateway.changes)


@pytest.fixture(scope="module")
def json_app() -> Iterator[StreamableHTTPApp]:
    gateway = build_gateway_for_tests()
    yield create_asgi_app(gateway.kernel, HttpConfig(json_response=True),
                          changes=gateway.changes)


@pytest.fixture(scope="module")
def audit_app() -> StreamableHTTPApp:
    return _audit_app()


# --- mcp-wire 4.4: the request ladder, first failure wins ---------------------------------------

_DUP_METHOD = [*hdrs("tools/list"), ("mcp-method", "tools/list")]
_DUP_VERSION = [*hdrs("tools/list"), ("mcp-protocol-version", VERSION)]

LADDER_PAIRS = [
    # (id, headers, body, status, response id, code)
    pytest.param(replaced(hdrs("tools/list"), "mcp-method", "nope"), b"{not json",
                 400, None, PARSE_ERROR, id="5-parse-beats-method-header"),
    pytest.param(_DUP_METHOD, raw({"jsonrpc": "2.0", "id": 1.5, "method": "tools/list",
                                   "params": {"_meta": envelope()}}),
                 400, None, INVALID_REQUEST, id="7-float-id-beats-9-duplicate-header"),
    pytest.param(_DUP_METHOD, raw([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}]),
                 400, None, INVALID_REQUEST, id="7-batch-beats-9-duplicate-header"),
    pytest.param(_DUP_VERSION, raw({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                                    "params": {}}),
                 400, 2, HEADER_MISMATCH, id="9-duplicate-beats-10-missing-envelope"),
    pytest.param(hdrs("tools/call"), raw({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
                 400, 3, INVALID_PARAMS, id="10-missing-envelope-beats-12-method-header"),
    pytest.param(hdrs("tools/call", "a"), raw({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                              "params": {"name": "b"}}),
                 400, 3, INVALID_PARAMS, id="10-missing-envelope-beats-13-name-header"),
    pytest.param(hdrs("tools/list", version=FUTURE),
                 raw({"jsonrpc": "2.0", "id": 3, "method": "tools/list",
                      "params": {"_meta": {VERSION_KEY: FUTURE}}}),
                 400, 3, INVALID_PARAMS, id="10-missing-capabilities-beats-14-version"),
    pytest.param(hdrs("tools/call", "a", version=FUTURE), req("tools/call", meta=at(FUTURE),
                                                              name="b"),
                 400, 1, HEADER_MISMATCH, id="13-name-header-beats-14-version"),
    pytest.param(hdrs("resources/read", "file:///a"), req("resources/read", uri="file:///b"),
                 400, 1, HEADER_MISMATCH, id="13-uri-header-beats-16-unserved-method"),
    pytest.param(hdrs("prompts/get", "a"), req("prompts/get", name="b"),
                 400, 1, HEADER_MISMATCH, id="13-name-header-beats-16-unserved-method"),
    pytest.param(hdrs("foo/bar", version=FUTURE), req("foo/bar", meta=at(FUTURE)),
                 400, 1, UNSUPPORTED_PROTOCOL_VERSION, id="14-version-beats-16-unknown-method"),
    pytest.param(hdrs("tools/call", "t.region", version=FUTURE, mcp_param_region="eu"),
                 req("tools/call", meta=at(FUTURE), name="t.region",
                     arguments={"region": "us"}),
                 400, 1, UNSUPPORTED_PROTOCOL_VERSION, id="14-version-beats-15-param-header"),
    pytest.param(hdrs("tools/call", "t.region", mcp_param_region="eu"),
                 req("tools/call", name="t.region", arguments={"region": "us", "count": "x"}),
                 400, 1, HEADER_MISMATCH, id="15-param-header-beats-invalid-arguments"),
    pytest.param(hdrs("prompts/get", "a"), req("prompts/get", name="a", arguments=5),
                 404, 1, METHOD_NOT_FOUND, id="16-unknown-method-beats-17-params"),
    pytest.param(hdrs("tools/call", "x"), req("tools/call", arguments={}),
                 400, 1, INVALID_PARAMS, id="trap5-name-header-skipped-when-body-name-absent"),
    pytest.param(hdrs("notifications/x", version=FUTURE),
                 raw({"jsonrpc": "1.0", "method": "notifications/x"}),
                 400, None, INVALID_REQUEST, id="6-notification-shape-beats-its-version"),
]


@pytest.mark.parametrize(("headers", "body", "status", "request_id", "code"), LADDER_PAIRS)
def test_a_request_failing_two_rungs_is_answered_by_the_earlier_rung(
        app: StreamableHTTPApp, headers: Pairs, body: bytes, status: int, request_id: Any,
        code: int) -> None:
    assert run(app, headers, body).error() == (status, request_id, code)


def test_a_mcp_param_mismatch_is_answered_before_a_missing_client_capability(
        audit_app: StreamableHTTPApp) -> None:
    """SPEC 3.2: only after header/body equality is established are the version and
    capabilities judged; rung 15 precedes the handler (row 18, -32021)."""
    body = req("tools/call", name="a.header_needs", arguments={"region": "eu"})
    bad = run(audit_app, hdrs("tools/call", "a.header_needs", mcp_param_region="us"), body)
    assert bad.error() == (400, 1, HEADER_MISMATCH)
    good = run(audit_app, hdrs("tools/call", "a.header_needs", mcp_param_region="eu"), body)
    assert good.error() == (400, 1, MISSING_REQUIRED_CLIENT_CAPABILITY)
    assert good.json()["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}


# --- mcp-wire 4.4 rows 0a-4: the transport's rungs ---------------------------------------------

_OK = hdrs("tools/list")

TRANSPORT_PAIRS = [
    pytest.param("POST", [*replaced(_OK, "content-type", "text/plain"),
                          ("content-length", str(5 * 1024 * 1024))], 413,
                 id="0a-body-size-beats-1-content-type"),
    pytest.param("POST", replaced(replaced(_OK, "content-type", "text/plain"), "host", "evil.test"),
                 400, id="1-content-type-beats-2-host"),
    pytest.param("POST", [*replaced(_OK, "host", "evil.test"), ("origin", "http://evil.test")],
                 421, id="2-host-beats-origin"),
    pytest.param("POST", [*replaced(_OK, "accept", "text/html"), ("origin", "http://evil.test")],
                 403, id="2-origin-beats-4-accept"),
    pytest.param("GET", [*_OK, ("origin", "http://evil.test")], 403,
                 id="2-origin-beats-3-method"),
    pytest.param("GET", replaced(_OK, "accept", "text/html"), 405, id="3-method-beats-4-accept"),
    pytest.param("POST", replaced(_OK, "accept", "application/json"), 406,
                 id="4-accept-needs-sse-outside-json-mode"),
]


@pytest.mark.parametrize(("method", "headers", "status"), TRANSPORT_PAIRS)
def test_the_transport_rungs_answer_in_table_order(app: StreamableHTTPApp, method: str,
                                                   headers: Pairs, status: int) -> None:
    answer = run(app, headers, b"{not json" if method == "POST" else b"", method=method)
    assert answer.status == status
    if status == 405:
        assert answer.header("allow") == "POST" and answer.body == b""


@pytest.mark.parametrize("body", [
    pytest.param(req("subscriptions/listen", notifications={}), id="valid"),
    pytest.param(raw({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
                      "params": {"notifications": {}}}), id="beats-10-missing-envelope"),
    pytest.param(req("subscriptions/listen", meta=at(FUTURE), notifications={}),
                 id="beats-14-version"),
    pytest.param(req("subscriptions/listen", notifications=5), id="beats-17-params"),
])
def test_in_json_mode_listen_without_event_stream_in_accept_is_406_before_any_later_rung(
        json_app: StreamableHTTPApp, body: bytes) -> None:
    """mcp-wire 4.4 row 8 (``subscriptions/listen`` needs ``text/event-stream`` in Accept, any
    server mode) precedes rows 9-18."""
    version = FUTURE if b"2099" in body else VERSION
    answer = run(json_app, hdrs("subscriptions/listen", version=version,
                                accept="application/json"), body)
    assert (answer.status, answer.body) == (406, b"")


def test_in_json_mode_listen_without_event_stream_is_406_before_a_header_mismatch(
        json_app: StreamableHTTPApp) -> None:
    answer = run(json_app, hdrs("tools/list", accept="application/json"),
                 req("subscriptions/listen", notifications={}))
    assert answer.status == 406


# --- mcp-wire 1 / 4.4 row 17: the envelope and params as the 2026 model types them -------------


def test_unknown_meta_keys_and_an_omitted_client_info_are_accepted(
        app: StreamableHTTPApp) -> None:
    """mcp-wire 1: unknown extra ``_meta`` keys allowed (O: X03), W3C trace keys reserved,
    clientInfo optional (O: M06)."""
    meta = meta_with(**{"com.example/x": {"a": 1}, "traceparent": "00-0af7-b7ad-01",
                       "tracestate": "k=v", "baggage": "a=b"})
    answer = run(app, hdrs("tools/list"), req("tools/list", meta=meta))
    assert answer.status == 200 and answer.json()["result"]["resultType"] == "complete"


@pytest.mark.parametrize(("method", "name", "body"), [
    pytest.param("tools/list", None, req("tools/list", meta=with_caps({"roots": 1})),
                 id="caps-roots-not-object"),
    pytest.param("tools/list", None, req("tools/list", meta=with_caps({"elicitation": "x"})),
                 id="caps-elicitation-not-object"),
    pytest.param("tools/list", None, req("tools/list", meta=with_caps({"extensions": []})),
                 id="caps-extensions-not-object"),
    pytest.param("tools/list", None, req("tools/list", meta=meta_with(**{
        "io.modelcontextprotocol/clientInfo": {"name": "a", "version": "1", "title": 5}})),
                 id="client-info-title-not-string"),
    pytest.param("tools/call", "t.sync_ctx", req("tools/call", name="t.sync_ctx",
                                                  requestState=5),
                 id="request-state-not-string"),
    pytest.param("tools/call", "t.sync_ctx", req("tools/call", name="t.sync_ctx",
                                                  inputResponses="x"),
                 id="input-responses-not-object"),
    pytest.param("tools/call", "t.sync_ctx", req("tools/call", name="t.sync_ctx", arguments=[1]),
                 id="arguments-not-object"),
    pytest.param("tools/list", None, req("tools/list", cursor=5), id="cursor-not-string"),
    pytest.param("tools/list", None, req("tools/list", meta=envelope(progressToken=1.5)),
                 id="progress-token-float"),
])
def test_params_the_2026_model_refuses_are_invalid_params(
        app: StreamableHTTPApp, method: str, name: str | None, body: bytes) -> None:
    assert run(app, hdrs(method, name), body).error() == (400, 1, INVALID_PARAMS)


# --- mcp-wire 4.1/4.2, SPEC 3.2: the header codec -----------------------------------------------


def test_a_sentinel_encoded_plain_name_matches_and_upper_case_markers_are_a_literal(
        app: StreamableHTTPApp) -> None:
    """mcp-wire 4.2: servers decode before comparing; markers are case-sensitive (O: M16)."""
    body = req("tools/call", name="t.sync_ctx")
    ok = run(app, hdrs("tools/call", "=?base64?dC5zeW5jX2N0eA==?="), body)
    assert ok.status == 200 and ok.json()["result"]["isError"] is False
    literal = run(app, hdrs("tools/call", "=?BASE64?dC5zeW5jX2N0eA==?="), body)
    assert literal.error() == (400, 1, HEADER_MISMATCH)


@pytest.mark.parametrize("value", ["=?base64?dC5zeW5jX2N0eA==", "=?base64?"])
def test_a_value_without_the_closing_marker_is_a_literal_that_matches_the_same_body(
        app: StreamableHTTPApp, value: str) -> None:
    """The official conformance suite (SEP-2243, ServerLiteralMissingBase64Suffix): a value
    without the ``?=`` suffix is a literal, not Base64, and the server MUST accept it when the
    body holds the same characters. (The modern audit read SPEC 3.2's "incomplete sentinel"
    as this case; acceptance 3 of issue 4 requires the suite to pass, so it decides.)"""
    answer = run(app, hdrs("resources/read", value), req("resources/read", uri=value))
    assert answer.error()[2] != HEADER_MISMATCH


@pytest.mark.parametrize(("header", "arguments", "status"), [
    pytest.param("42", {"count": 42}, 200, id="int-int"),
    pytest.param("42.0", {"count": 42}, 200, id="decimal-header-int-body"),
    pytest.param("042", {"count": 42}, 200, id="leading-zero-is-canonical-decimal"),
    pytest.param("+42", {"count": 42}, 400, id="plus-sign-is-not"),
    pytest.param("42", {"count": 42.0}, 200, id="int-header-integral-float-body"),
    pytest.param("42.0", {"count": 42.0}, 200, id="sdk-rendering-of-integral-float"),
    pytest.param(None, {"count": 42.0}, 400, id="integral-float-without-header"),
    pytest.param("2.5", {"count": 2.5}, 200, id="a-fraction-compares-as-rendered"),
    pytest.param("2.50", {"count": 2.5}, 400, id="a-fraction-in-another-spelling"),
])
def test_integer_param_headers_compare_numerically(app: StreamableHTTPApp, header: str | None,
                                                   arguments: dict[str, Any],
                                                   status: int) -> None:
    """mcp-wire 4.3: integer-typed + canonical decimal header -> numeric compare. (A 200 here
    only means the header rung passed: the strict validator may still refuse a float.)"""
    extra = {} if header is None else {"mcp_param_count": header}
    answer = run(app, hdrs("tools/call", "t.region", **extra),
                 req("tools/call", name="t.region", arguments=arguments))
    assert answer.status == status
    if status == 400:
        assert answer.error() == (400, 1, HEADER_MISMATCH)


def test_a_null_argument_with_its_header_is_a_mismatch_and_unrecognised_duplicates_are_ignored(
        app: StreamableHTTPApp) -> None:
    """mcp-wire 4.3: null counts as absent, so a header for it is -32020 (O: P04); an
    unrecognised ``Mcp-Param-*`` is ignored even when repeated (O: P07)."""
    null = run(app, hdrs("tools/call", "t.region", mcp_param_region="x"),
               req("tools/call", name="t.region", arguments={"region": None}))
    assert null.error() == (400, 1, HEADER_MISMATCH)
    ignored = run(app, [*hdrs("tools/call", "t.sync_ctx", mcp_param_zzz="a"),
                        ("mcp-param-zzz", "b")], req("tools/call", name="t.sync_ctx"))
    assert ignored.status == 200


# --- mcp-wire 4.1, 6: sessions and notifications on the modern entry ----------------------------


def test_a_session_id_on_a_modern_request_is_ignored_and_none_is_minted(
        app: StreamableHTTPApp) -> None:
    """mcp-wire 4.1 (O: H12)."""
    answer = run(app, hdrs("tools/list", mcp_session_id="not-a-session"), req("tools/list"))
    assert answer.status == 200 and answer.header("mcp-session-id") is None


@pytest.mark.parametrize("method", ["notifications/initialized", "notifications/cancelled",
                                    "notifications/anything"])
def test_a_modern_notification_is_202_with_an_empty_body_and_no_json_rpc(
        app: StreamableHTTPApp, method: str) -> None:
    """mcp-wire 6: accepted -> 202, no body; only the version header is judged."""
    answer = run(app, hdrs("wrong/method"), raw({"jsonrpc": "2.0", "method": method,
                                                  "params": {"requestId": 1}}))
    assert (answer.status, answer.body) == (202, b"")


# --- mcp-wire 4.5, 9: statuses and SSE ------------------------------------------------------------


def test_an_error_after_the_stream_committed_is_the_last_event_with_status_200(
        audit_app: StreamableHTTPApp) -> None:
    """mcp-wire 4.5: once SSE is committed the status is always 200 and the error is the last
    SSE event (here -32021, 400 as JSON)."""
    answer = run(audit_app, hdrs("tools/call", "a.emit_then_require"),
                 req("tools/call", 7, meta=envelope(progressToken="p"),
                     name="a.emit_then_require"))
    assert answer.status == 200
    events = answer.events()
    assert [e.get("method") for e in events[:-1]] == ["notifications/progress"]
    assert events[-1]["id"] == 7
    assert events[-1]["error"]["code"] == MISSING_REQUIRED_CLIENT_CAPABILITY
    assert events[-1]["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}


def test_capabilities_are_judged_per_request_never_remembered(app: StreamableHTTPApp) -> None:
    """mcp-wire 1: ``{}`` = no optional capabilities; the server MUST NOT infer them from
    earlier requests. -32021 is 400 with ``requiredCapabilities`` (mcp-wire 4.5, 5)."""
    declared = run(app, hdrs("tools/call", "t.needs"),
                   req("tools/call", meta=with_caps({"sampling": {}}), name="t.needs"))
    assert declared.status == 200 and declared.json()["result"]["isError"] is False
    again = run(app, hdrs("tools/call", "t.needs"), req("tools/call", 2, name="t.needs"))
    assert again.error() == (400, 2, MISSING_REQUIRED_CLIENT_CAPABILITY)
    assert again.json()["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}


def test_without_a_log_level_no_message_is_sent_and_the_answer_stays_json(
        app: StreamableHTTPApp) -> None:
    """mcp-wire 1: logLevel absent => the server MUST NOT send notifications/message."""
    answer = run(app, hdrs("tools/call", "t.chatty"), req("tools/call", name="t.chatty"))
    assert answer.status == 200 and answer.json()["result"]["resultType"] == "complete"


def test_log_messages_below_the_requested_level_are_not_sent(app: StreamableHTTPApp) -> None:
    answer = run(app, hdrs("tools/call", "t.chatty"), req("tools/call", meta=meta_with(**{
        "io.modelcontextprotocol/logLevel": "error"}), name="t.chatty"))
    events = answer.events()
    levels = [e["params"]["level"] for e in events if e.get("method") == "notifications/message"]
    assert levels == ["error", "emergency"]
    assert "result" in events[-1] and not any(e.get("method") == "notifications/progress"
                                              for e in events)


# --- mcp-wire 7.1, 7.2, 3: result shapes --------------------------------------------------------

SPEC_DESCRIPTOR_KEYS = {"name", "title", "description", "inputSchema", "_meta", "outputSchema",
                        "annotations"}


def test_tools_list_is_a_sorted_private_cacheable_complete_result_of_spec_descriptors(
        app: StreamableHTTPApp) -> None:
    """mcp-wire 7.1 (ttlMs int >= 0, cacheScope, resultType, serverInfo stamp; inputSchema
    object-rooted; no 2025-only ``execution``), SPEC 3.3 (sorted, private), SPEC 1.1."""
    result = run(app, hdrs("tools/list"), req("tools/list")).json()["result"]
    assert type(result["ttlMs"]) is int and result["ttlMs"] >= 0
    assert (result["cacheScope"], result["resultType"]) == ("private", "complete")
    assert SERVER_INFO_KEY in result["_meta"] and "nextCursor" not in result
    names = [tool["name"] for tool in result["tools"]]
    assert names == sorted(names) and len(set(names)) == len(names)
    for tool in result["tools"]:
        assert set(tool) <= SPEC_DESCRIPTOR_KEYS, tool["name"]
        assert tool["inputSchema"]["type"] == "object"
        assert isinstance(tool["_meta"]["schemaVersion"], str)


def test_tools_call_results_carry_content_is_error_and_no_cache_hints(
        app: StreamableHTTPApp) -> None:
    """mcp-wire 7.2: ``content`` required; ``isError``; ``resultType``; tools/call is not
    cacheable (mcp-wire 7.6) so no ttlMs/cacheScope; the id keeps its JSON type."""
    for name in ("t.sync_ctx", "t.raise", "t.iserror", "t.goodout"):
        message = run(app, hdrs("tools/call", name), req("tools/call", "s-1", name=name)).json()
        result = message["result"]
        assert message["id"] == "s-1"
        assert isinstance(result["content"], list) and isinstance(result["isError"], bool)
        assert result["resultType"] == "complete" and SERVER_INFO_KEY in result["_meta"]
        assert "ttlMs" not in result and "cacheScope" not in result


# --- mcp-wire 7.7: subscriptions/listen -----------------------------------------------------------


def test_listen_acknowledges_the_honored_subset_then_tags_each_change_with_its_id() -> None:
    """mcp-wire 7.7: first frame ``notifications/subscriptions/acknowledged`` with the honored
    subset and ``_meta`` subscriptionId = listen id (a string id stays a string); then the
    opted-in notification, tagged the same. list_changed never rides another response."""
    gateway = build_gateway_for_tests(build_registry())
    listener = create_asgi_app(gateway.kernel, HttpConfig(), changes=gateway.changes)
    seen: list[Answer] = []

    async def change() -> None:
        seen.append(await exchange(listener, hdrs("tools/call", "t.changed"),
                                   req("tools/call", 2, name="t.changed")))

    async def go() -> Answer:
        answer = await exchange(listener, hdrs("subscriptions/listen"), req(
            "subscriptions/listen", "L7", notifications={
                "toolsListChanged": True, "promptsListChanged": True,
                "resourceSubscriptions": ["file:///x"]}), frames=2, after_first=change)
        await asyncio.sleep(0)
        return answer

    answer = asyncio.run(go())
    assert answer.status == 200
    ack, changed = answer.events()
    assert ack == {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                   "params": {"notifications": {"toolsListChanged": True},
                              "_meta": {SUBSCRIPTION_ID_KEY: "L7"}}}
    assert changed == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                       "params": {"_meta": {SUBSCRIPTION_ID_KEY: "L7"}}}
    (call,) = seen
    assert call.status == 200 and call.json()["result"]["isError"] is False


def test_a_listen_ended_by_the_server_closes_with_its_tagged_complete_result() -> None:
    """mcp-wire 7.7: graceful end = final ``{"resultType":"complete","_meta":{subscriptionId}}``;
    mcp-wire 3: every modern result carries the serverInfo stamp."""
    gateway = build_gateway_for_tests(build_registry())
    listener = create_asgi_app(gateway.kernel, HttpConfig(), changes=gateway.changes)

    async def stop() -> None:
        listener.begin_shutdown()

    answer = run(listener, hdrs("subscriptions/listen"),
                 req("subscriptions/listen", 9, notifications={}), after_first=stop)
    ack, final = answer.events()
    assert ack["params"] == {"notifications": {}, "_meta": {SUBSCRIPTION_ID_KEY: 9}}
    assert final["id"] == 9 and final["result"]["resultType"] == "complete"
    assert final["result"]["_meta"][SUBSCRIPTION_ID_KEY] == 9
    assert SERVER_INFO_KEY in final["result"]["_meta"]


# --- mcp-wire 5 / 2: -32022 data -----------------------------------------------------------------


@pytest.mark.parametrize("version", ["2025-11-25", FUTURE])
def test_unsupported_version_on_a_modern_stream_offers_only_the_connections_versions(
        version: str) -> None:
    """mcp-wire 2 (dual-era on stream transports: a modern connection offers
    ``supported:["2026-07-28"]``) and the project's own rule (test_stream_era: never offer
    the version just refused)."""
    kernel = build_kernel()
    conn = kernel.open_stream()
    opened = kernel.handle_stream_message(conn, modern("tools/list"))
    assert isinstance(opened, Reply)
    reply = kernel.handle_stream_message(conn, modern("tools/list", 2, meta=envelope(version)))
    assert isinstance(reply, Reply)
    error = reply.message["error"]
    assert error["code"] == UNSUPPORTED_PROTOCOL_VERSION
    assert error["data"] == {"supported": ["2026-07-28"], "requested": version}


def test_over_http_an_envelope_naming_a_handshake_version_is_told_every_version_served(
        app: StreamableHTTPApp) -> None:
    """Issue 4: -32022 data lists every version the server speaks, both eras; this endpoint
    does serve 2025-11-25, through ``initialize`` (the SDK would route such a request to its
    legacy path instead; the audit found the difference, and the issue decides it)."""
    answer = run(app, hdrs("tools/list", version="2025-11-25"),
                 req("tools/list", meta=at("2025-11-25")))
    error = answer.json()["error"]
    assert error["code"] == UNSUPPORTED_PROTOCOL_VERSION
    assert error["data"] == {"supported": supported_versions(), "requested": "2025-11-25"}


def test_a_modern_stream_refuses_a_non_string_version_as_invalid_params() -> None:
    """mcp-wire 1 ladder step 3 (no headers on stdio: a non-string version is -32602)."""
    kernel = build_kernel()
    conn = kernel.open_stream()
    kernel.handle_stream_message(conn, modern("tools/list"))
    reply = kernel.handle_stream_message(conn, modern("tools/list", 3, meta={
        VERSION_KEY: 20260728, CAPS: {}}))
    assert isinstance(reply, Reply)
    assert (reply.message["id"], reply.message["error"]["code"]) == (3, INVALID_PARAMS)


@pytest.mark.parametrize("meta", [
    with_caps({"roots": {}, "sampling": {"tools": {}}, "elicitation": {"form": {}},
               "extensions": {"com.example/x": {"on": True}}, "experimental": {}, "vendor": 5}),
    meta_with(**{"io.modelcontextprotocol/clientInfo": {
        "name": "a", "version": "1", "title": None, "websiteUrl": "https://a.example",
        "icons": []}}),
], ids=["typed-capabilities-and-an-unknown-member", "client-info-optional-fields"])
def test_well_typed_capabilities_and_client_info_are_served(
        app: StreamableHTTPApp, meta: dict[str, Any]) -> None:
    answer = run(app, hdrs("tools/list"), req("tools/list", meta=meta))
    assert answer.status == 200 and answer.json()["result"]["resultType"] == "complete"
