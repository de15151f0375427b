"""The legacy era: SPEC 3.1's five gates in order, ``initialize`` negotiation, sessions,
``ping`` and ``logging/setLevel`` (on stream connections and over HTTP sessions)."""

from __future__ import annotations

from typing import Any

import pytest
from kernel_kit import body, facts, initialize, modern, settle

from toolkeeper.protocol import Accepted, Phase, Reply, ServerKernel, StreamConnection
from toolkeeper.protocol.codes import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def request(method: str, request_id: Any = 2, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def live(kernel: ServerKernel) -> StreamConnection:
    conn = kernel.open_stream()
    assert "result" in body(kernel.handle_stream_message(conn, initialize()))
    assert isinstance(kernel.handle_stream_message(conn, INITIALIZED), Accepted)
    return conn


def test_initialize_negotiates_the_requested_handshake_version(kernel: ServerKernel) -> None:
    result = body(kernel.handle_stream_message(kernel.open_stream(),
                                               initialize(version="2025-03-26")))["result"]
    assert result["protocolVersion"] == "2025-03-26"
    assert result["serverInfo"] == {"name": "test-server", "version": "9.9.9"}
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert "resultType" not in result and "_meta" not in result


@pytest.mark.parametrize("asked", ["2026-07-28", "2099-01-01", "garbage"])
def test_initialize_counter_offers_the_latest_handshake_version(kernel: ServerKernel,
                                                                 asked: str) -> None:
    result = body(kernel.handle_stream_message(kernel.open_stream(), initialize(version=asked)))
    assert result["result"]["protocolVersion"] == "2025-11-25"


@pytest.mark.parametrize("params", [
    {"protocolVersion": 1, "capabilities": {}, "clientInfo": {"name": "a", "version": "1"}},
    {"protocolVersion": "2025-11-25", "capabilities": [], "clientInfo": {"name": "a",
                                                                          "version": "1"}},
    {"protocolVersion": "2025-11-25", "capabilities": {}},
])
def test_malformed_initialize_params_are_invalid_params(kernel: ServerKernel,
                                                        params: dict[str, Any]) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}
    assert body(kernel.handle_stream_message(kernel.open_stream(), message))["error"]["code"] \
        == INVALID_PARAMS


def test_gate_1_answers_an_envelope_error_with_the_message_id(kernel: ServerKernel) -> None:
    reply = body(kernel.handle_stream_message(kernel.open_stream(),
                                              {"jsonrpc": "1.0", "id": 7, "method": "ping"}))
    assert (reply["id"], reply["error"]["code"]) == (7, INVALID_REQUEST)


def test_gate_1_answers_with_a_null_id_when_the_id_is_what_is_malformed(
        kernel: ServerKernel) -> None:
    reply = body(kernel.handle_stream_message(kernel.open_stream(),
                                              {"jsonrpc": "2.0", "id": 1.5, "method": "ping"}))
    assert reply["id"] is None and reply["error"]["code"] == INVALID_REQUEST


def test_gate_2_comes_before_gate_3_so_initialized_makes_the_session_live(
        kernel: ServerKernel) -> None:
    conn = kernel.open_stream()
    settle(kernel.handle_stream_message(conn, initialize()))
    assert conn.session.phase is Phase.INITIALIZING
    assert isinstance(kernel.handle_stream_message(conn, INITIALIZED), Accepted)
    assert conn.session.phase is Phase.READY


def test_gate_2_answers_nothing_for_a_notifications_method_even_with_an_id(
        kernel: ServerKernel) -> None:
    conn = live(kernel)
    outcome = kernel.handle_stream_message(conn, request("notifications/progress"))
    assert isinstance(outcome, Accepted)


def test_gate_3_answers_nothing_for_an_id_less_message(kernel: ServerKernel) -> None:
    conn = live(kernel)
    assert isinstance(kernel.handle_stream_message(conn, {"jsonrpc": "2.0", "method": "ping"}),
                      Accepted)


@pytest.mark.parametrize("method", ["tools/list", "ping", "logging/setLevel", "nope"])
def test_gate_4_refuses_everything_but_initialize_before_the_session_is_live(
        kernel: ServerKernel, method: str) -> None:
    conn = kernel.open_stream()
    settle(kernel.handle_stream_message(conn, initialize()))  # answered, not yet initialized
    reply = body(kernel.handle_stream_message(conn, request(method)))
    assert (reply["id"], reply["error"]["code"]) == (2, INVALID_REQUEST)


def test_a_second_initialize_is_refused(kernel: ServerKernel) -> None:
    conn = live(kernel)
    assert body(kernel.handle_stream_message(conn, initialize(3)))["error"]["code"] == \
        INVALID_REQUEST


def test_gate_5_dispatches_and_unknown_methods_are_method_not_found(kernel: ServerKernel
                                                                     ) -> None:
    conn = live(kernel)
    assert body(kernel.handle_stream_message(conn, request("ping"))) == \
        {"jsonrpc": "2.0", "id": 2, "result": {}}
    listed = body(kernel.handle_stream_message(conn, request("tools/list")))["result"]
    assert set(listed) == {"tools"}  # no resultType, ttlMs, cacheScope or _meta stamp
    error = body(kernel.handle_stream_message(conn, request("server/discover")))["error"]
    assert (error["code"], error["data"]) == (METHOD_NOT_FOUND, "server/discover")


def test_gate_5_turns_an_unexpected_exception_into_a_generic_internal_error(
        kernel: ServerKernel) -> None:
    conn = live(kernel)
    reply = settle(kernel.handle_stream_message(conn, request("tools/call", name="boom")))
    assert isinstance(reply, Reply)
    assert b"secret" not in reply.body and b"Traceback" not in reply.body
    assert reply.message["error"] == {"code": -32603, "message": "Internal error"}


def test_set_level_is_remembered_by_the_session_and_validated(kernel: ServerKernel) -> None:
    conn = live(kernel)
    assert body(kernel.handle_stream_message(conn, request("logging/setLevel", level="warning"))
                )["result"] == {}
    seen = body(kernel.handle_stream_message(conn, request("tools/call", name="x")))
    assert seen["result"]["seen"]["logLevel"] == "warning"
    bad = body(kernel.handle_stream_message(conn, request("logging/setLevel", level="loud")))
    assert bad["error"]["code"] == INVALID_PARAMS


def test_a_legacy_connection_refuses_requests_carrying_the_modern_envelope(
        kernel: ServerKernel) -> None:
    conn = live(kernel)
    reply = body(kernel.handle_stream_message(conn, modern("tools/list", 5)))
    assert (reply["id"], reply["error"]["code"]) == (5, INVALID_REQUEST)


def test_cancellation_notifications_name_the_request_to_cancel(kernel: ServerKernel) -> None:
    conn = live(kernel)
    outcome = kernel.handle_stream_message(conn, {"jsonrpc": "2.0", "method":
                                                  "notifications/cancelled",
                                                  "params": {"requestId": 9}})
    assert outcome == Accepted(cancel=9)


# --- over HTTP sessions ------------------------------------------------------------------


def _http(kernel: ServerKernel, message: Any, headers: dict[str, str] | None = None) -> Any:
    from toolkeeper.protocol import encode_message

    return settle(kernel.handle_http(encode_message(message) if not isinstance(message, bytes)
                                     else message, facts(headers)))


def test_http_initialize_mints_a_session_id_and_the_session_serves_after_initialized(
        kernel: ServerKernel) -> None:
    reply = _http(kernel, initialize())
    assert isinstance(reply, Reply) and reply.status == 200
    (name, session_id), = reply.headers
    assert name == "mcp-session-id" and len(session_id) == 32
    headers = {"Mcp-Session-Id": session_id, "MCP-Protocol-Version": "2025-11-25"}
    assert isinstance(_http(kernel, INITIALIZED, headers), Accepted)
    listed = _http(kernel, request("tools/list"), headers)
    assert listed.status == 200 and listed.message["result"]["tools"][0]["name"] == "echo"


def test_http_requests_without_a_session_are_400_and_unknown_sessions_404(
        kernel: ServerKernel) -> None:
    missing = _http(kernel, request("tools/list"))
    assert (missing.status, missing.message["error"]["code"]) == (400, INVALID_REQUEST)
    unknown = _http(kernel, request("tools/list"), {"Mcp-Session-Id": "nope"})
    assert (unknown.status, unknown.message["error"]["code"]) == (404, INVALID_REQUEST)


def test_a_failed_initialize_creates_no_session(kernel: ServerKernel) -> None:
    # A dispatched request's error in the legacy era: HTTP 200 with the error (mcp-wire 10).
    reply = _http(kernel, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    assert (reply.status, reply.message["error"]["code"]) == (200, -32602)
    assert reply.headers == () and len(kernel.sessions) == 0


def test_deleting_a_session_ends_it(kernel: ServerKernel) -> None:
    session_id = _http(kernel, initialize()).headers[0][1]
    headers = facts({"Mcp-Session-Id": session_id})
    assert kernel.end_session(headers) == 200
    assert kernel.end_session(headers) == 404
    assert kernel.end_session(facts()) == 400


def test_a_legacy_initialize_the_principal_resolver_refuses_is_answered_with_http_200() -> None:
    # The resolver's refusal answers a dispatched request, as it does on every later request of
    # a session (mcp-wire 10); no session is opened.
    from toolkeeper.protocol import MethodTable, ServerIdentity, ServerKernel
    from toolkeeper.protocol.faults import invalid_params

    def refuse(facts: Any) -> Any:
        raise invalid_params("credential refused")

    kernel = ServerKernel(MethodTable([]), identity=ServerIdentity("t", "1"), capabilities={},
                          resolve_principal=refuse)
    reply = _http(kernel, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"}}})
    assert (reply.status, reply.message["error"]["code"]) == (200, -32602)
    assert reply.headers == () and len(kernel.sessions) == 0
