"""The HTTP transport reads an answer as JSON or as SSE (notifications before the response),
within its bounds, and the session rejects answers its era's validator rejects. Driven through
``httpx.MockTransport``: scripted answers, no server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from toolkeeper.client import (
    ClientAuthenticationError,
    ClientConnectionError,
    ClientSession,
    ClientTimeoutError,
    ClientTimeouts,
    Kernel,
    ProtocolViolationError,
    RequestRefusedError,
    RetryPolicy,
    ServerUnavailableError,
)
from toolkeeper.client.http_transport import HttpTransport
from toolkeeper.protocol.era_selection import (
    LegacyEvidence,
    ModernObservation,
    ProbeOutcome,
    SelectionMode,
    select_era,
)

URL = "http://127.0.0.1/mcp"
PROGRESS = {"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": "p", "progress": 1}}
CALL_RESULT = {"content": [{"type": "text", "text": "done"}], "isError": False,
               "resultType": "complete"}
Handler = Callable[[httpx.Request], Any]


def _sse(*messages: Any, tail: bytes = b"") -> httpx.Response:
    body = b"".join(b"event: message\r\ndata: " + json.dumps(m).encode() + b"\r\n\r\n"
                    for m in messages) + tail
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)


def _transport(handler: Handler) -> HttpTransport:
    return HttpTransport(URL, httpx.AsyncClient(transport=httpx.MockTransport(handler)))


def _exchange(handler: Handler, *, timeout: float = 5.0, max_bytes: int = 1 << 20) -> Any:
    async def run() -> Any:
        transport = _transport(handler)
        try:
            return await transport.exchange({"jsonrpc": "2.0", "id": 1, "method": "m"}, {},
                                            timeout=timeout, max_bytes=max_bytes)
        finally:
            await transport.aclose()

    return asyncio.run(run())


def _session_call(handler: Handler) -> Any:
    decision = select_era(ModernObservation(ProbeOutcome.DISCOVERED), SelectionMode.STRICT)

    async def run() -> Any:
        async with ClientSession(_transport(handler), decision, token="t0k",
                                 timeouts=ClientTimeouts()) as session:
            return await session.call_tool("echo", {"text": "hi"}, request_id=9)

    return asyncio.run(run())


def test_an_sse_answer_keeps_notifications_before_the_response_and_stops_at_it() -> None:
    response = {"jsonrpc": "2.0", "id": 1, "result": {}}
    exchange = _exchange(lambda _: _sse(PROGRESS, response, tail=b"data: not json\r\n\r\n"))
    assert (exchange.status, exchange.streamed) == (200, True)
    assert exchange.messages == (PROGRESS, response)


def test_a_call_reply_carries_the_notifications_that_came_before_it() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return _sse(PROGRESS, {"jsonrpc": "2.0", "id": 9, "result": CALL_RESULT})

    reply = _session_call(handler)
    assert reply.result == CALL_RESULT and reply.error is None
    assert reply.notifications == (PROGRESS,)
    headers = seen[0].headers
    assert (headers["mcp-method"], headers["mcp-name"]) == ("tools/call", "echo")
    assert headers["mcp-protocol-version"] == "2026-07-28"
    assert headers["authorization"] == "Bearer t0k"
    meta = json.loads(seen[0].content)["params"]["_meta"]
    assert meta["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert meta["io.modelcontextprotocol/clientCapabilities"] == {}


def test_a_modern_result_without_result_type_is_a_protocol_violation() -> None:
    answer = {"jsonrpc": "2.0", "id": 9, "result": {"content": [], "isError": False}}
    with pytest.raises(ProtocolViolationError) as caught:
        _session_call(lambda _: httpx.Response(200, json=answer))
    assert caught.value.data["problems"][0].startswith("$.result.resultType:")


def test_a_response_with_the_id_as_another_json_type_is_no_response() -> None:
    answer = {"jsonrpc": "2.0", "id": "9", "result": CALL_RESULT}
    with pytest.raises(ProtocolViolationError) as caught:
        _session_call(lambda _: httpx.Response(200, json=answer))
    assert caught.value.code == "client.no_response"


def test_an_error_answer_is_a_value_with_its_http_status() -> None:
    answer = {"jsonrpc": "2.0", "id": 9, "error": {"code": -32020, "message": "mismatch"}}
    reply = _session_call(lambda _: httpx.Response(400, json=answer))
    assert (reply.result, reply.error["code"], reply.http_status) == (None, -32020, 400)


def test_an_answer_over_the_byte_bound_is_refused() -> None:
    with pytest.raises(ProtocolViolationError) as caught:
        _exchange(lambda _: httpx.Response(200, json={"x": "y" * 4096}), max_bytes=1024)
    assert caught.value.code == "client.too_large"
    with pytest.raises(ProtocolViolationError) as caught:
        _exchange(lambda _: _sse({"x": "y" * 4096}), max_bytes=1024)
    assert caught.value.code == "client.too_large"


def test_a_body_that_is_not_json_is_undecodable() -> None:
    with pytest.raises(ProtocolViolationError) as caught:
        _exchange(lambda _: httpx.Response(200, headers={"content-type": "application/json"},
                                           content=b"{nope"))
    assert caught.value.code == "client.undecodable"


def test_503_is_server_unavailable() -> None:
    with pytest.raises(ServerUnavailableError) as caught:
        _exchange(lambda _: httpx.Response(503, headers={"retry-after": "3"}))
    assert caught.value.data["retryAfter"] == "3"


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_credential_is_an_authentication_error_without_the_token(status: int) -> None:
    with pytest.raises(ClientAuthenticationError) as caught:
        _session_call(lambda _: httpx.Response(status, json={"error": "invalid_token"}))
    assert caught.value.code == "client.unauthorized"
    assert caught.value.data == {"httpStatus": status}
    assert "t0k" not in str(caught.value.to_dict())


def test_an_answer_slower_than_the_bound_is_a_timeout() -> None:
    async def slow(_: httpx.Request) -> httpx.Response:
        await asyncio.Event().wait()  # never set: the answer never comes
        return httpx.Response(200)

    with pytest.raises(ClientTimeoutError) as caught:
        _exchange(slow, timeout=0.2)
    assert caught.value.code == "client.timeout"


def test_an_accepted_empty_answer_has_no_messages() -> None:
    exchange = _exchange(lambda _: httpx.Response(202))
    assert (exchange.status, exchange.messages, exchange.body_bytes) == (202, (), 0)
    assert exchange.streamed is False


def test_a_modern_listing_drops_a_tool_with_an_invalid_header_annotation() -> None:
    bad = {"name": "bad", "inputSchema": {"type": "object", "properties": {
        "n": {"type": "number", "x-mcp-header": "N"}}}}
    good = {"name": "good", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}}}
    page = {"tools": [bad, good], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"}
    decision = select_era(ModernObservation(ProbeOutcome.DISCOVERED), SelectionMode.STRICT)
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        body = json.loads(request.content)
        if body["method"] == "tools/list":
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"], "result": page})
        return httpx.Response(200, json={"jsonrpc": "2.0", "id": body["id"],
                                         "result": CALL_RESULT})

    async def run() -> Any:
        async with ClientSession(_transport(handler), decision, token=None,
                                 timeouts=ClientTimeouts()) as session:
            listing = await session.list_tools()
            await session.call_tool("good", {"region": "Zürich"})
            return listing

    listing = asyncio.run(run())
    assert [t["name"] for t in listing.tools] == ["good"]
    assert [(d["name"], d["path"]) for d in listing.dropped] == [("bad", ".properties.n")]
    assert seen[-1].headers["mcp-param-region"] == "=?base64?WsO8cmljaA==?="


@pytest.mark.parametrize(("answer", "status"), [
    (httpx.Response(405, headers={"allow": "POST"}), 405),
    (httpx.Response(406, json={"jsonrpc": "2.0", "id": None,
                               "error": {"code": -32600, "message": "m"}}), None),
])
def test_a_refused_change_stream_raises_with_its_status_or_error(answer: httpx.Response,
                                                                 status: int | None) -> None:
    decision = select_era(ModernObservation(ProbeOutcome.TIMEOUT), SelectionMode.LEGACY, True,
                          LegacyEvidence("2025-11-25"))

    async def run() -> None:
        async with ClientSession(_transport(lambda _: answer), decision, token=None,
                                 timeouts=ClientTimeouts(), session_id="s1") as session:
            async for _ in session.tools_changed():
                pass

    with pytest.raises(RequestRefusedError) as caught:
        asyncio.run(run())
    assert caught.value.code == "client.refused"
    assert caught.value.data.get("httpStatus") == status


def test_an_event_stream_that_ends_before_its_response_is_a_lost_connection() -> None:
    with pytest.raises(ClientConnectionError) as caught:
        _session_call(lambda _: _sse(PROGRESS))
    assert caught.value.code == "client.connection"


def test_a_read_whose_event_stream_ends_before_its_response_is_retried_with_the_same_id(
) -> None:
    ids: list[Any] = []
    tool = {"name": "echo", "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": True}}

    def handler(request: httpx.Request) -> httpx.Response:
        message = json.loads(request.content)
        if message["method"] == "tools/list":
            return httpx.Response(200, json={"jsonrpc": "2.0", "id": message["id"], "result": {
                "tools": [tool], "resultType": "complete", "ttlMs": 0,
                "cacheScope": "private"}})
        ids.append(message["id"])
        if len(ids) == 1:
            return _sse(PROGRESS)
        return _sse({"jsonrpc": "2.0", "id": message["id"], "result": CALL_RESULT})

    decision = select_era(ModernObservation(ProbeOutcome.DISCOVERED), SelectionMode.STRICT)

    async def run() -> Any:
        async with ClientSession(_transport(handler), decision, token=None,
                                 timeouts=ClientTimeouts()) as session:
            policy = RetryPolicy(attempts=2, delays=(), sleep=asyncio.sleep)
            return await Kernel(session, retry=policy).call("echo", {})

    outcome = asyncio.run(run())
    assert (outcome.ok, outcome.attempts) == (True, 2)
    assert len(ids) == 2 and ids[0] == ids[1]
