"""Bad input over real HTTP: each fault gets its documented status and code, never a 500,
never a traceback (SPEC 3.2, mcp-wire 4.4)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from http_kit import error_code, legacy_headers, modern_body, modern_headers, post
from http_served_kit import Served, start

from toolkeeper.transports import HttpConfig

LIST = modern_headers("tools/list")


@pytest.mark.parametrize(("raw", "headers", "status", "code", "request_id"), [
    (b"{not json", LIST, 400, -32700, None),
    (b'{"jsonrpc":"2.0","id":1,"method":"\xff"}', LIST, 400, -32700, None),
    (b"[" * 65 + b"]" * 65, LIST, 400, -32700, None),
    (b'{"a":' * 10_000 + b"1" + b"}" * 10_000, LIST, 400, -32700, None),
    (b"", LIST, 400, -32700, None),
    (b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]', LIST, 400, -32600, None),
    # An id that could be read is echoed (2026-07-28 basic/index.mdx, "Error Responses").
    (b'{"jsonrpc":"1.0","id":1,"method":"tools/list","params":{}}', LIST, 400, -32600, 1),
    (b'{"jsonrpc":"2.0","id":1.0,"method":"tools/list","params":{}}', LIST, 400, -32600, None),
    (b'{"jsonrpc":"2.0","id":null,"method":"tools/list","params":{}}', LIST, 400, -32600, None),
    (b'{"jsonrpc":"2.0","id":"1.0","method":"tools/list","params":[]}', LIST, 400, -32600,
     "1.0"),
    (b'{"jsonrpc":"2.0","id":1,"result":{}}', LIST, 400, -32600, None),
    (b"[]", legacy_headers(), 400, -32600, None),
    (b'{"jsonrpc":"1.0","id":5,"method":"initialize"}', legacy_headers(), 400, -32600, 5),
    (b'{"jsonrpc":"2.0","id":2.5,"method":"initialize"}', legacy_headers(), 400, -32600, None),
    # A dispatched request's error in the legacy era: 200 (mcp-wire 10).
    (b'{"jsonrpc":"2.0","id":9,"method":"initialize","params":{}}', legacy_headers(), 200,
     -32602, 9),
])
def test_malformed_bodies_get_their_documented_status_code_and_id(
        served: Served, client: httpx.Client, raw: bytes, headers: dict[str, str], status: int,
        code: int, request_id: Any) -> None:
    response = client.post(served.url, content=raw, headers=headers)
    assert (response.status_code, error_code(response), response.json()["id"]) == \
        (status, code, request_id)
    assert b"Traceback" not in response.content


def test_a_body_over_the_limit_is_413_by_declared_length(served: Served,
                                                         client: httpx.Client) -> None:
    response = client.post(served.url, content=b" " * (4 * 1024 * 1024 + 1), headers=LIST)
    assert (response.status_code, response.text) == (413, "Request body too large")


def test_a_streamed_body_over_the_limit_is_413(served: Served, client: httpx.Client) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(5):
            yield b" " * (1024 * 1024)

    response = client.post(served.url, content=chunks(), headers=LIST)
    assert response.status_code == 413


def test_a_body_just_under_the_limit_is_parsed(served: Served, client: httpx.Client) -> None:
    body = modern_body("tools/list", pad="x" * (4 * 1024 * 1024 - 500))
    response = post(client, served.url, body, LIST)
    assert response.status_code == 200


@pytest.mark.parametrize(("headers", "status"), [
    ({**LIST, "Content-Type": "text/plain"}, 400),
    ({k: v for k, v in LIST.items() if k != "Content-Type"}, 400),
    ({**LIST, "Accept": "application/json"}, 406),
    ({**LIST, "Accept": "text/event-stream"}, 406),
    ({**LIST, "Accept": ""}, 406),
    ({**LIST, "Accept": "application/json, text/event-stream;q=0"}, 406),
    ({**LIST, "Host": "evil.example.com"}, 421),
    ({**LIST, "Host": "127.0.0.1.evil.example.com:80"}, 421),
    ({**LIST, "Origin": "http://evil.example.com"}, 403),
    ({**LIST, "Origin": "null"}, 403),
])
def test_transport_faults_are_refused_before_the_body_is_read(
        served: Served, client: httpx.Client, headers: dict[str, str], status: int) -> None:
    response = post(client, served.url, modern_body("tools/list"), headers)
    assert response.status_code == status
    assert b"Traceback" not in response.content


@pytest.mark.parametrize("headers", [
    {**LIST, "Accept": "*/*"},
    {**LIST, "Accept": "application/*, text/*"},
    {**LIST, "Origin": "http://localhost:3000"},
    {**LIST, "Host": "localhost:9"},
    {**LIST, "Content-Type": "application/json; charset=utf-8"},
])
def test_equivalent_allowed_forms_are_served(served: Served, client: httpx.Client,
                                             headers: dict[str, str]) -> None:
    assert post(client, served.url, modern_body("tools/list"), headers).status_code == 200


def test_other_paths_are_404(served: Served, client: httpx.Client) -> None:
    response = post(client, served.server.base_url + "/other", modern_body("tools/list"), LIST)
    assert response.status_code == 404


def test_a_configured_allow_list_admits_a_real_hostname() -> None:
    from toolkeeper.transports import OriginPolicy

    served, context = start(HttpConfig(policy=OriginPolicy(
        allowed_hosts=("gateway.internal:*",), allowed_origins=("https://app.internal",))))
    try:
        with httpx.Client(timeout=10) as http:
            ok = post(http, served.url, modern_body("tools/list"),
                      {**LIST, "Host": "gateway.internal:443", "Origin": "https://app.internal"})
            assert ok.status_code == 200
            assert post(http, served.url, modern_body("tools/list"), LIST).status_code == 421
    finally:
        context.__exit__(None, None, None)


def test_json_response_mode_never_streams_and_needs_only_json_in_accept() -> None:
    from http_kit import envelope


    served, context = start(HttpConfig(json_response=True))
    try:
        with httpx.Client(timeout=10) as http:
            body = modern_body("tools/call", name="payments.lookup",
                               arguments={"reference": "PMT-771"},
                               meta=envelope(progressToken="p"))
            response = post(http, served.url, body, {
                **modern_headers("tools/call", "payments.lookup"), "Accept": "application/json"})
            assert response.headers["content-type"] == "application/json"
            assert response.json()["result"]["isError"] is False
    finally:
        context.__exit__(None, None, None)


@pytest.mark.parametrize("duplicate", [
    [b"Host: 127.0.0.1", b"Host: evil.example.com"],
    [b"Host: 127.0.0.1", b"Host: 127.0.0.1"],
    [b"Host: 127.0.0.1", b"Origin: http://localhost", b"Origin: http://evil.example.com"],
])
def test_duplicate_host_or_origin_headers_are_400(served: Served, duplicate: list[bytes]) -> None:
    import json
    import socket

    body = json.dumps(modern_body("tools/list")).encode()
    raw = b"\r\n".join([
        b"POST " + served.url.split(served.server.base_url, 1)[1].encode() + b" HTTP/1.1",
        *duplicate,
        *[f"{k}: {v}".encode() for k, v in LIST.items() if k.lower() != "host"],
        b"Content-Length: " + str(len(body)).encode(), b"Connection: close", b"", b""]) + body
    host, port = served.server.base_url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        conn.sendall(raw)
        response = b""
        while chunk := conn.recv(65536):
            response += chunk
    assert response.startswith(b"HTTP/1.1 400 ")
    assert b"Duplicate Host or Origin header" in response


@pytest.mark.parametrize("options", [
    {"keepalive_s": 0.0}, {"keepalive_s": -1.0}, {"keepalive_s": float("nan")},
    {"max_body_bytes": -1}, {"head_timeout_s": 0.0}, {"head_timeout_s": float("inf")},
    {"idle_timeout_s": float("nan")}, {"idle_timeout_s": float("inf")},
    {"max_connections": 0}, {"backlog": 0},
])
def test_a_transport_config_that_would_spin_or_refuse_everything_is_a_value_error(
        options: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        HttpConfig(**options)  # type: ignore[arg-type]
