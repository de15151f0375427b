"""Stream transports: the first request decides the era of the connection, once."""

from __future__ import annotations

from kernel_kit import body, initialize, modern

from toolkeeper.protocol import Accepted, Era, Pending, ServerKernel
from toolkeeper.protocol.codes import INVALID_PARAMS, INVALID_REQUEST, UNSUPPORTED_PROTOCOL_VERSION


def test_an_enveloped_first_request_opens_a_modern_connection(kernel: ServerKernel) -> None:
    conn = kernel.open_stream()
    reply = body(kernel.handle_stream_message(conn, modern("tools/list")))
    assert conn.era is Era.MODERN and reply["result"]["resultType"] == "complete"


def test_initialize_on_a_modern_connection_is_unsupported_version(kernel: ServerKernel) -> None:
    conn = kernel.open_stream()
    body(kernel.handle_stream_message(conn, modern("server/discover")))
    error = body(kernel.handle_stream_message(conn, initialize(2)))["error"]
    assert error["code"] == UNSUPPORTED_PROTOCOL_VERSION
    # The connection is fixed to the modern era: only its versions are offered, never the one
    # just refused (a client re-probing from the list must not be sent back to it).
    assert error["data"] == {"supported": ["2026-07-28"], "requested": "2025-11-25"}
    assert error["data"]["requested"] not in error["data"]["supported"]


def test_a_request_without_the_envelope_on_a_modern_connection_is_invalid_params(
        kernel: ServerKernel) -> None:
    conn = kernel.open_stream()
    body(kernel.handle_stream_message(conn, modern("tools/list")))
    reply = body(kernel.handle_stream_message(conn, {"jsonrpc": "2.0", "id": 3,
                                                     "method": "tools/list"}))
    assert reply["error"]["code"] == INVALID_PARAMS


def test_initialize_first_opens_a_legacy_connection_even_when_enveloped(
        kernel: ServerKernel) -> None:
    conn = kernel.open_stream()
    message = initialize()
    message["params"]["_meta"] = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
    assert "result" in body(kernel.handle_stream_message(conn, message))
    assert conn.era is Era.LEGACY


def test_a_legacy_request_first_opens_a_legacy_connection_that_is_not_yet_live(
        kernel: ServerKernel) -> None:
    conn = kernel.open_stream()
    reply = body(kernel.handle_stream_message(conn, {"jsonrpc": "2.0", "id": 1,
                                                     "method": "tools/list"}))
    assert conn.era is Era.LEGACY and reply["error"]["code"] == INVALID_REQUEST


def test_notifications_and_junk_before_the_first_request_decide_nothing(
        kernel: ServerKernel) -> None:
    conn = kernel.open_stream()
    assert isinstance(kernel.handle_stream_message(
        conn, {"jsonrpc": "2.0", "method": "notifications/initialized"}), Accepted)
    assert body(kernel.handle_stream(conn, b"{oops"))["error"]["code"] == -32700
    assert conn.era is None
    body(kernel.handle_stream_message(conn, modern("tools/list")))
    assert conn.era is Era.MODERN


def test_modern_stream_notifications_can_cancel_a_request(kernel: ServerKernel) -> None:
    conn = kernel.open_stream()
    assert isinstance(kernel.handle_stream_message(conn, modern("tools/call", 5, name="slow")),
                      Pending)
    assert kernel.handle_stream_message(conn, {
        "jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}) \
        == Accepted(cancel=5)
