"""The modern era over real HTTP: discovery, listing, calls, SSE progress, and every header
fault of SPEC 3.2 with its documented status and code."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from http_kit import (
    VERSION,
    envelope,
    error_code,
    modern_body,
    modern_headers,
    post,
    sse_events,
)
from http_served_kit import Gates, Served

from toolkeeper.protocol import encode_header_value

SUPPORTED = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]


def test_discover_answers_json_with_both_eras(served: Served, client: httpx.Client) -> None:
    response = post(client, served.url, modern_body("server/discover"),
                    modern_headers("server/discover"))
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert "mcp-session-id" not in response.headers
    result = response.json()["result"]
    assert result["supportedVersions"] == SUPPORTED
    assert (result["resultType"], result["cacheScope"]) == ("complete", "public")


def test_tools_list_serves_the_demo_estate(served: Served, client: httpx.Client) -> None:
    response = post(client, served.url, modern_body("tools/list"), modern_headers("tools/list"))
    result = response.json()["result"]
    assert [t["name"] for t in result["tools"]] == [
        "db.query", "payments.lookup", "test.silent", "test.wait", "tickets.create"]
    assert (result["cacheScope"], result["ttlMs"]) == ("private", 0)


def test_a_silent_call_is_answered_with_plain_json(served: Served, client: httpx.Client) -> None:
    response = post(client, served.url,
                    modern_body("tools/call", name="payments.lookup",
                                arguments={"reference": "PMT-771"}),
                    modern_headers("tools/call", "payments.lookup"))
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    result = response.json()["result"]
    assert result["content"][0]["text"].startswith("PMT-771: HELD, 250000 AED")


def test_progress_streams_as_sse_and_the_response_is_the_last_event(
        served: Served, client: httpx.Client) -> None:
    body = modern_body("tools/call", 7, name="payments.lookup",
                       arguments={"reference": "PMT-771", "include_legs": True},
                       meta=envelope(progressToken="p1"))
    response = post(client, served.url, body, modern_headers("tools/call", "payments.lookup"))
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["cache-control"] == "no-cache, no-transform"
    assert response.headers["x-accel-buffering"] == "no"
    events = sse_events(response.text)
    assert [e.get("method") for e in events] == [
        "notifications/progress", "notifications/progress", None]
    assert [e["params"]["progress"] for e in events[:2]] == [1, 2]
    assert events[-1]["id"] == 7 and events[-1]["result"]["isError"] is False


def test_log_messages_stream_only_when_the_request_asks(served: Served,
                                                        client: httpx.Client) -> None:
    body = modern_body("tools/call", name="payments.lookup", arguments={"reference": "PMT-100"},
                       meta=envelope(**{"io.modelcontextprotocol/logLevel": "info"}))
    events = sse_events(post(client, served.url, body,
                             modern_headers("tools/call", "payments.lookup")).text)
    assert [e.get("method") for e in events] == ["notifications/message", None]
    assert events[0]["params"]["logger"] == "payments"


def test_a_silent_handler_is_kept_alive_with_pings_then_answered(
        served: Served, gates: Gates, client: httpx.Client) -> None:
    body = modern_body("tools/call", name="test.silent", arguments={})
    with client.stream("POST", served.url, json=body,
                       headers=modern_headers("tools/call", "test.silent")) as response:
        assert response.headers["content-type"] == "text/event-stream"
        chunks = []
        for chunk in response.iter_text():
            chunks.append(chunk)
            if ": ping" in "".join(chunks):
                gates.release.set()
        text = "".join(chunks)
    assert text.startswith(": ping\r\n\r\n")
    (final,) = sse_events(text)
    assert final["result"]["content"][0]["text"] == "released"


def test_a_client_that_disconnects_cancels_its_handler(served: Served, gates: Gates,
                                                       client: httpx.Client) -> None:
    body = modern_body("tools/call", name="test.wait", arguments={},
                       meta=envelope(progressToken=1))
    with client.stream("POST", served.url, json=body,
                       headers=modern_headers("tools/call", "test.wait")) as response:
        first = next(response.iter_text())
        assert "notifications/progress" in first
    assert gates.cancelled.wait(10)
    assert served.gateway.call_log.records[-1].outcome == "cancelled"  # type: ignore[attr-defined]


def test_header_names_are_case_insensitive(served: Served, client: httpx.Client) -> None:
    headers = {k.upper(): v for k, v in modern_headers("tools/list").items()}
    assert post(client, served.url, modern_body("tools/list"), headers).status_code == 200
    headers = {k.lower(): v for k, v in modern_headers("tools/list").items()}
    assert post(client, served.url, modern_body("tools/list"), headers).status_code == 200


def test_a_base64_name_header_matches_a_body_name_with_edge_whitespace(
        served: Served, client: httpx.Client) -> None:
    response = post(client, served.url, modern_body("tools/call", name=" payments.lookup"),
                    modern_headers("tools/call", encode_header_value(" payments.lookup")))
    assert error_code(response) == -32602  # passed the header rung; the tool is unknown


CALL = modern_body("tools/call", 3, name="payments.lookup", arguments={"reference": "PMT-771"})


@pytest.mark.parametrize(("headers", "status", "code"), [
    ({**modern_headers("tools/call", "payments.lookup"), "MCP-Protocol-Version": "2026-07-29"},
     400, -32020),
    ({k: v for k, v in modern_headers("tools/call", "payments.lookup").items()
      if k != "Mcp-Method"}, 400, -32020),
    (modern_headers("tools/list", "payments.lookup"), 400, -32020),
    (modern_headers("tools/call"), 400, -32020),
    (modern_headers("tools/call", "db.query"), 400, -32020),
    (modern_headers("tools/call", "=?base64?cGF5bWVudHMubG9va3Vw"), 400, -32020),
    (modern_headers("tools/call", "=?base64?cGF5bWVudHMubG9va3Vw!?="), 400, -32020),
    (modern_headers("tools/call", "=?BASE64?cGF5bWVudHMubG9va3Vw?="), 400, -32020),
    (modern_headers("tools/call", "=?base64?/w==?="), 400, -32020),
    ([*modern_headers("tools/call", "payments.lookup").items(),
      ("Mcp-Name", "payments.lookup")], 400, -32020),
    ([*modern_headers("tools/call", "payments.lookup").items(),
      ("mcp-method", "tools/call")], 400, -32020),
    ([*modern_headers("tools/call", "payments.lookup").items(),
      ("MCP-Protocol-Version", VERSION)], 400, -32020),
])
def test_every_header_fault_is_a_400_header_mismatch_with_the_request_id(
        served: Served, client: httpx.Client, headers: Any, status: int, code: int) -> None:
    response = post(client, served.url, CALL, headers)
    assert (response.status_code, error_code(response), response.json()["id"]) == \
        (status, code, 3)


def test_a_raw_non_ascii_name_header_is_a_mismatch_even_if_the_body_agrees(
        served: Served, client: httpx.Client) -> None:
    headers = [(k.encode(), v.encode()) for k, v in modern_headers("tools/call").items()]
    headers.append((b"Mcp-Name", "Zürich".encode()))
    response = client.post(served.url, content=httpx.Request(
        "POST", served.url, json=modern_body("tools/call", name="Zürich")).read(),
        headers=headers)
    assert (response.status_code, error_code(response)) == (400, -32020)


def test_an_unsupported_version_is_400_with_every_served_version(served: Served,
                                                                 client: httpx.Client) -> None:
    body = modern_body("tools/list", meta={**envelope(),
                                           "io.modelcontextprotocol/protocolVersion": "2099-01-01"})
    response = post(client, served.url, body,
                    {**modern_headers("tools/list"), "MCP-Protocol-Version": "2099-01-01"})
    assert (response.status_code, error_code(response)) == (400, -32022)
    assert response.json()["error"]["data"] == {"supported": SUPPORTED, "requested": "2099-01-01"}


@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel"])
def test_handshake_methods_are_404_method_not_found(served: Served, client: httpx.Client,
                                                    method: str) -> None:
    response = post(client, served.url, modern_body(method), modern_headers(method))
    assert (response.status_code, error_code(response)) == (404, -32601)


def test_a_missing_envelope_is_400_invalid_params(served: Served, client: httpx.Client) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    response = post(client, served.url, body, modern_headers("tools/list"))
    assert (response.status_code, error_code(response)) == (400, -32602)


def test_a_modern_body_without_the_header_is_a_mismatch(served: Served,
                                                        client: httpx.Client) -> None:
    headers = {k: v for k, v in modern_headers("tools/list").items()
               if k != "MCP-Protocol-Version"}
    response = post(client, served.url, modern_body("tools/list"), headers)
    assert (response.status_code, error_code(response)) == (400, -32020)


def test_a_gate_rejection_is_400_with_structured_data(served: Served,
                                                      client: httpx.Client) -> None:
    body = modern_body("tools/call", name="db.query", arguments={"sql": "x"},
                       meta=envelope(schemaVersion="3.0.0"))
    response = post(client, served.url, body, modern_headers("tools/call", "db.query"))
    assert (response.status_code, error_code(response)) == (400, -32602)
    assert response.json()["error"]["data"]["reason"] == "schema_version_retired"


def test_a_modern_notification_is_202_with_an_empty_body(served: Served,
                                                        client: httpx.Client) -> None:
    response = post(client, served.url, {"jsonrpc": "2.0", "method": "ext.example/ping"},
                    {**modern_headers("ext.example/ping")})
    assert (response.status_code, response.content) == (202, b"")


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
def test_other_http_methods_are_405_on_the_modern_path(served: Served, client: httpx.Client,
                                                       method: str) -> None:
    response = client.request(method, served.url, headers=modern_headers("tools/list"))
    assert (response.status_code, response.headers["allow"]) == (405, "POST")
