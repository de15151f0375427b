"""The modern era on HTTP: the envelope ladder in order, ``server/discover``, result stamping,
and the handshake methods answered 404 / -32601."""

from __future__ import annotations

from typing import Any

import pytest
from kernel_kit import body, envelope, facts, modern, modern_headers, settle

from toolkeeper.protocol import (
    SERVER_INFO_KEY,
    Accepted,
    Reply,
    ServerKernel,
    encode_message,
    supported_versions,
)
from toolkeeper.protocol.codes import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
)

BOTH_ERAS = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]


def post(kernel: ServerKernel, message: Any, headers: Any) -> Reply | Accepted:
    raw = message if isinstance(message, bytes) else encode_message(message)
    return settle(kernel.handle_http(raw, facts(headers)))


def error_of(outcome: Reply | Accepted) -> tuple[int, Any, int]:
    assert isinstance(outcome, Reply)
    return outcome.status, outcome.message["id"], outcome.message["error"]["code"]


def test_discover_lists_every_version_of_both_eras_with_capabilities(kernel: ServerKernel
                                                                      ) -> None:
    reply = post(kernel, modern("server/discover"), modern_headers("server/discover"))
    result = reply.message["result"]
    assert result["supportedVersions"] == BOTH_ERAS == supported_versions()
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert (result["resultType"], result["ttlMs"], result["cacheScope"]) == \
        ("complete", 0, "public")
    assert result["_meta"][SERVER_INFO_KEY] == {"name": "test-server", "version": "9.9.9"}
    assert "serverInfo" not in result and "protocolVersion" not in result


def test_every_modern_result_carries_result_type_and_the_server_info_stamp(
        kernel: ServerKernel) -> None:
    listed = post(kernel, modern("tools/list"), modern_headers("tools/list")).message["result"]
    assert (listed["resultType"], listed["ttlMs"], listed["cacheScope"]) == \
        ("complete", 5, "private")
    called = post(kernel, modern("tools/call", name="x"),
                  modern_headers("tools/call", "x")).message["result"]
    assert called["resultType"] == "complete" and SERVER_INFO_KEY in called["_meta"]
    assert "ttlMs" not in called and "cacheScope" not in called


def test_the_envelope_reaches_the_method_and_no_handshake_is_needed(kernel: ServerKernel
                                                                     ) -> None:
    meta = envelope(**{"io.modelcontextprotocol/logLevel": "error"})
    meta["io.modelcontextprotocol/clientCapabilities"] = {"roots": {}}
    seen = post(kernel, modern("tools/call", name="x", meta=meta),
                modern_headers("tools/call", "x")).message["result"]["seen"]
    assert seen == {"era": "modern", "version": "2026-07-28", "logLevel": "error",
                    "caps": {"roots": {}}}


@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel",
                                    "resources/subscribe", "nope/nope"])
def test_handshake_era_methods_are_404_method_not_found_on_the_modern_path(
        kernel: ServerKernel, method: str) -> None:
    reply = post(kernel, modern(method), modern_headers(method))
    assert error_of(reply) == (404, 1, METHOD_NOT_FOUND)
    assert isinstance(reply, Reply) and reply.message["error"]["data"] == method


@pytest.mark.parametrize("meta", [
    None, "x", {}, {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
    {"io.modelcontextprotocol/clientCapabilities": {}},
    envelope(**{"io.modelcontextprotocol/clientCapabilities": "x"}),
    envelope(**{"io.modelcontextprotocol/protocolVersion": 20260728}),
    envelope(**{"io.modelcontextprotocol/logLevel": "verbose"}),
    envelope(**{"io.modelcontextprotocol/clientInfo": {"name": "x"}}),
    envelope(progressToken=True),
])
def test_a_missing_or_mistyped_envelope_is_invalid_params_before_any_header_check(
        kernel: ServerKernel, meta: Any) -> None:
    message = {"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {"_meta": meta}}
    if meta is None:
        message["params"] = {}
    assert error_of(post(kernel, message, {"MCP-Protocol-Version": "2026-07-28"})) == \
        (400, 4, INVALID_PARAMS)


@pytest.mark.parametrize("headers", [
    modern_headers("tools/call", "echo", version="2026-07-29"),
    modern_headers("tools/list", "echo"),
    modern_headers("tools/call", "other"),
    {"MCP-Protocol-Version": "2026-07-28", "Mcp-Name": "echo"},
    [*modern_headers("tools/call", "echo").items(), ("mcp-method", "tools/call")],
])
def test_header_body_disagreements_are_header_mismatch_with_the_request_id(
        kernel: ServerKernel, headers: Any) -> None:
    assert error_of(post(kernel, modern("tools/call", 9, name="echo"), headers)) == \
        (400, 9, HEADER_MISMATCH)


def test_a_modern_body_without_the_version_header_is_a_mismatch_not_a_legacy_call(
        kernel: ServerKernel) -> None:
    assert error_of(post(kernel, modern("tools/list"), {"Mcp-Method": "tools/list"})) == \
        (400, 1, HEADER_MISMATCH)


def test_header_agreement_is_checked_before_the_version_is_judged(kernel: ServerKernel
                                                                   ) -> None:
    message = modern("tools/list", meta=envelope("2099-01-01"))
    assert error_of(post(kernel, message, modern_headers("tools/list"))) == \
        (400, 1, HEADER_MISMATCH)
    reply = post(kernel, message, modern_headers("tools/list", version="2099-01-01"))
    assert error_of(reply) == (400, 1, UNSUPPORTED_PROTOCOL_VERSION)
    assert isinstance(reply, Reply)
    assert reply.message["error"]["data"] == {"supported": BOTH_ERAS, "requested": "2099-01-01"}


def test_a_handshake_version_in_the_envelope_is_unsupported_on_the_modern_path(
        kernel: ServerKernel) -> None:
    reply = post(kernel, modern("tools/list", meta=envelope("2025-11-25")),
                 modern_headers("tools/list", version="2025-11-25"))
    assert error_of(reply) == (400, 1, UNSUPPORTED_PROTOCOL_VERSION)


def test_param_headers_are_checked_against_the_tool_schema(kernel: ServerKernel) -> None:
    message = modern("tools/call", name="echo", arguments={"region": "eu"})
    assert error_of(post(kernel, message, modern_headers("tools/call", "echo"))) == \
        (400, 1, HEADER_MISMATCH)
    ok = post(kernel, message, modern_headers("tools/call", "echo", Mcp_Param_Region="eu"))
    assert isinstance(ok, Reply) and ok.status == 200


@pytest.mark.parametrize("message", [
    [modern("tools/list")],
    {**modern("tools/list"), "id": 1.0},
    {**modern("tools/list"), "id": None},
    {"jsonrpc": "2.0", "id": 1, "result": {}},
])
def test_anything_but_one_valid_request_is_invalid_request_with_a_null_id(
        kernel: ServerKernel, message: Any) -> None:
    assert error_of(post(kernel, message, modern_headers("tools/list"))) == \
        (400, None, INVALID_REQUEST)


@pytest.mark.parametrize("message", [
    {**modern("tools/list"), "jsonrpc": "1.0"},
    {**modern("tools/list"), "params": [1]},
])
def test_an_invalid_request_whose_id_could_be_read_is_answered_with_that_id(
        kernel: ServerKernel, message: Any) -> None:
    # 2026-07-28 basic/index.mdx, "Error Responses": the same id as the request, except
    # where it could not be read.
    assert error_of(post(kernel, message, modern_headers("tools/list"))) == \
        (400, message["id"], INVALID_REQUEST)


def test_a_modern_notification_is_accepted_without_a_response(kernel: ServerKernel) -> None:
    outcome = post(kernel, {"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": 1}}, {"MCP-Protocol-Version": "2026-07-28"})
    assert outcome == Accepted()


def test_a_notification_at_an_unserved_version_is_refused_with_a_null_id(
        kernel: ServerKernel) -> None:
    outcome = post(kernel, {"jsonrpc": "2.0", "method": "x/y"},
                   {"MCP-Protocol-Version": "2099-01-01"})
    assert error_of(outcome) == (400, None, UNSUPPORTED_PROTOCOL_VERSION)


def test_unexpected_handler_exceptions_are_generic_internal_errors_with_status_200(
        kernel: ServerKernel) -> None:
    reply = post(kernel, modern("tools/call", name="boom"), modern_headers("tools/call", "boom"))
    assert isinstance(reply, Reply) and reply.status == 200
    assert reply.message["error"] == {"code": -32603, "message": "Internal error"}
    assert b"secret" not in reply.body


def test_the_body_decides_nothing_when_the_header_says_legacy(kernel: ServerKernel) -> None:
    legacy = post(kernel, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                  {"MCP-Protocol-Version": "2025-11-25"})
    assert error_of(legacy) == (400, 1, INVALID_REQUEST)  # a legacy call without a session
    stamped = body(kernel.handle_http(encode_message(modern("initialize")), facts()))
    assert stamped["error"]["code"] == INVALID_PARAMS  # legacy initialize, params checked
