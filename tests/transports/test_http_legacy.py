"""The legacy era over real HTTP: initialize, the session id, gates, DELETE, and the same
endpoint serving modern requests at the same time."""

from __future__ import annotations

import httpx
from http_kit import error_code, legacy_headers, modern_body, modern_headers, post
from http_served_kit import Served


def _initialize(served: Served, client: httpx.Client) -> str:
    response = post(client, served.url, {
        "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}, legacy_headers())
    assert response.status_code == 200
    assert response.json()["result"]["protocolVersion"] == "2025-06-18"
    session_id = response.headers["mcp-session-id"]
    assert len(session_id) == 32
    return session_id


def test_a_legacy_session_goes_live_after_initialized_and_serves_tools(
        served: Served, client: httpx.Client) -> None:
    session_id = _initialize(served, client)
    early = post(client, served.url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                 legacy_headers(session_id))
    assert (early.status_code, error_code(early)) == (200, -32600)
    note = post(client, served.url, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                legacy_headers(session_id))
    assert (note.status_code, note.content) == (202, b"")
    listed = post(client, served.url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                  legacy_headers(session_id))
    assert listed.status_code == 200 and listed.headers["mcp-session-id"] == session_id
    result = listed.json()["result"]
    assert "resultType" not in result and "ttlMs" not in result
    called = post(client, served.url, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                       "params": {"name": "payments.lookup",
                                                  "arguments": {"reference": "PMT-771"}}},
                  legacy_headers(session_id))
    assert called.json()["result"]["content"][0]["text"].startswith("PMT-771: HELD")
    ping = post(client, served.url, {"jsonrpc": "2.0", "id": 4, "method": "ping"},
                legacy_headers(session_id))
    assert ping.json() == {"id": 4, "jsonrpc": "2.0", "result": {}}


def test_legacy_progress_streams_as_sse_too(served: Served, client: httpx.Client) -> None:
    session_id = _initialize(served, client)
    post(client, served.url, {"jsonrpc": "2.0", "method": "notifications/initialized"},
         legacy_headers(session_id))
    response = post(client, served.url, {
        "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
            "name": "payments.lookup", "arguments": {"reference": "PMT-771"},
            "_meta": {"progressToken": "t"}}}, legacy_headers(session_id))
    assert response.headers["content-type"] == "text/event-stream"
    assert response.headers["mcp-session-id"] == session_id


def test_delete_ends_a_session_and_later_use_is_404(served: Served, client: httpx.Client
                                                    ) -> None:
    session_id = _initialize(served, client)
    assert client.delete(served.url, headers=legacy_headers(session_id)).status_code == 200
    after = post(client, served.url, {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                 legacy_headers(session_id))
    assert (after.status_code, error_code(after)) == (404, -32600)
    assert client.delete(served.url, headers=legacy_headers(session_id)).status_code == 404


def test_requests_without_a_session_are_400_and_unknown_sessions_404(
        served: Served, client: httpx.Client) -> None:
    missing = post(client, served.url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                   legacy_headers())
    assert (missing.status_code, error_code(missing), missing.json()["id"]) == (400, -32600, 1)
    unknown = post(client, served.url, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                   legacy_headers("f" * 32))
    assert (unknown.status_code, error_code(unknown)) == (404, -32600)


def test_get_is_405_the_endpoint_offers_no_standalone_stream(served: Served,
                                                             client: httpx.Client) -> None:
    session_id = _initialize(served, client)
    response = client.get(served.url, headers={**legacy_headers(session_id),
                                               "Accept": "text/event-stream"})
    assert (response.status_code, response.headers["allow"]) == (405, "POST")


def test_both_eras_are_served_side_by_side_without_mixing_rules(served: Served,
                                                                client: httpx.Client) -> None:
    session_id = _initialize(served, client)
    modern = post(client, served.url, modern_body("server/discover"),
                  modern_headers("server/discover"))
    assert modern.status_code == 200 and "mcp-session-id" not in modern.headers
    on_session = post(client, served.url, modern_body("server/discover"),
                      {**modern_headers("server/discover"), "Mcp-Session-Id": session_id})
    assert on_session.status_code == 200 and "mcp-session-id" not in on_session.headers
    enveloped = post(client, served.url, modern_body("tools/list"),
                     {**legacy_headers(session_id), "Mcp-Method": "tools/list"})
    assert (enveloped.status_code, error_code(enveloped)) == (400, -32020)
