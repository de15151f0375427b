"""HTTP statuses of the legacy era (2025-11-25) over real HTTP: a JSON-RPC error answering a
request the session dispatched travels with HTTP 200, on a JSON answer and on an SSE stream;
4xx stays for what the legacy transport rejects itself (no or unknown session, a body that is
not one JSON-RPC message). The modern era keeps its status table for the same errors
(mcp-wire 4.5 and 10: era rules never mix)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from http_kit import legacy_headers, modern_body, modern_headers, post
from http_served_kit import Served

RETIRED_PIN = {"name": "db.query", "arguments": {"sql": "select 1", "timeout_ms": 5},
               "_meta": {"schemaVersion": "3.0.0"}}
UNKNOWN_TOOL = {"name": "no.such.tool", "arguments": {}}

# (case, method, params, code, modern status)
DISPATCHED_ERRORS = [
    ("unknown-tool", "tools/call", UNKNOWN_TOOL, -32602, 400),
    ("retired-pin", "tools/call", RETIRED_PIN, -32602, 400),
    ("unknown-method", "resources/list", {}, -32601, 404),
    ("bad-set-level", "logging/setLevel", {"level": "loud"}, -32602, None),
]


def _live_session(served: Served, client: httpx.Client) -> str:
    opened = post(client, served.url, {
        "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}}, legacy_headers())
    session_id = opened.headers["mcp-session-id"]
    note = post(client, served.url, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                legacy_headers(session_id))
    assert note.status_code == 202
    return session_id


def _request(method: str, params: dict[str, Any], request_id: int = 7) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


@pytest.mark.parametrize(("case", "method", "params", "code", "modern_status"), DISPATCHED_ERRORS,
                         ids=[c[0] for c in DISPATCHED_ERRORS])
def test_a_dispatched_requests_error_is_http_200_with_the_error_in_the_body(
        served: Served, client: httpx.Client, case: str, method: str, params: dict[str, Any],
        code: int, modern_status: int | None) -> None:
    session_id = _live_session(served, client)
    answer = post(client, served.url, _request(method, params), legacy_headers(session_id))
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers["mcp-session-id"] == session_id
    body = answer.json()
    assert (body["id"], body["error"]["code"]) == (7, code)
    # The session survives: the next request is served.
    ping = post(client, served.url, _request("ping", {}, 8), legacy_headers(session_id))
    assert (ping.status_code, ping.json()) == (200, {"jsonrpc": "2.0", "id": 8, "result": {}})


def test_the_retired_pin_refusal_keeps_its_relist_data_in_the_legacy_era(
        served: Served, client: httpx.Client) -> None:
    session_id = _live_session(served, client)
    answer = post(client, served.url, _request("tools/call", RETIRED_PIN),
                  legacy_headers(session_id))
    data = answer.json()["error"]["data"]
    assert (answer.status_code, data["reason"], data["action"]) == (
        200, "schema_version_retired", "relist")


def test_a_refusal_before_any_stream_is_committed_is_a_json_answer_with_http_200(
        served: Served, client: httpx.Client) -> None:
    # A progress token may commit a legacy answer to SSE, but only at the handler's first
    # notification; the gate refuses before the handler runs, so the answer is plain JSON.
    session_id = _live_session(served, client)
    params = {**RETIRED_PIN, "_meta": {**RETIRED_PIN["_meta"], "progressToken": "p"}}
    answer = post(client, served.url, _request("tools/call", params), legacy_headers(session_id))
    assert (answer.status_code, answer.headers["content-type"]) == (200, "application/json")
    error = answer.json()["error"]
    assert (error["code"], error["data"]["reason"]) == (-32602, "schema_version_retired")


@pytest.mark.parametrize(("case", "method", "params", "code", "modern_status"),
                         [c for c in DISPATCHED_ERRORS if c[4] is not None],
                         ids=[c[0] for c in DISPATCHED_ERRORS if c[4] is not None])
def test_the_modern_era_keeps_its_status_table_for_the_same_errors(
        served: Served, client: httpx.Client, case: str, method: str, params: dict[str, Any],
        code: int, modern_status: int) -> None:
    body = modern_body(method, 7)
    body["params"].update({k: v for k, v in params.items() if k != "_meta"})
    body["params"]["_meta"].update(params.get("_meta", {}))
    name = params.get("name")
    answer = post(client, served.url, body, modern_headers(method, name))
    assert (answer.status_code, answer.json()["error"]["code"]) == (modern_status, code)


def test_the_legacy_transports_own_refusals_stay_4xx(served: Served, client: httpx.Client) -> None:
    session_id = _live_session(served, client)
    missing = post(client, served.url, _request("tools/list", {}), legacy_headers())
    unknown = post(client, served.url, _request("tools/list", {}), legacy_headers("0" * 32))
    batch = post(client, served.url, [_request("ping", {})], legacy_headers(session_id))
    not_json = post(client, served.url, b"{nope", legacy_headers(session_id))
    assert [(r.status_code, r.json()["error"]["code"]) for r in (missing, unknown, batch,
                                                                 not_json)] == [
        (400, -32600), (404, -32600), (400, -32600), (400, -32700)]
