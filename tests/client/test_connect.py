"""``connect`` judges its inputs before it sends anything: a bearer token that cannot be an HTTP
header value is refused (``client.bad_token``, the token never quoted). The legacy probe judges
the ``Mcp-Session-Id`` that ``initialize`` mints by the 2025-11-25 transport: visible ASCII only
(0x21 to 0x7E); a server that mints anything else fails the probe (a recorded decision), never
a traceback on the next request. Driven in process: tiny ASGI apps, no socket."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from toolkeeper.client import ClientError, ClientTimeouts, EraSelectionError, Target, connect
from toolkeeper.transports.asgi_io import read_body

INITIALIZED = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
               "serverInfo": {"name": "legacy", "version": "1"}}


def _legacy_app(session_id: bytes) -> Any:
    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(receive, 1 << 20)
        message = json.loads(body) if body else {}
        if message.get("method") == "initialize":
            data = json.dumps({"jsonrpc": "2.0", "id": message["id"],
                               "result": INITIALIZED}).encode()
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", b"application/json"), (b"mcp-session-id", session_id)]})
            await send({"type": "http.response.body", "body": data})
            return
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    return app


@pytest.mark.parametrize("session_id", [b"caf\xe9", b"a b", b"tab\there", b""])
def test_a_session_id_outside_visible_ascii_fails_the_legacy_probe(session_id: bytes) -> None:
    async def run() -> None:
        await connect(Target.from_asgi(_legacy_app(session_id)), era="legacy")

    with pytest.raises(EraSelectionError) as caught:
        asyncio.run(run())
    decision = caught.value.data["decision"]
    assert decision["verdict"] == "refused.legacy_invalid"
    assert decision["legacyEvidence"]["problems"] == [
        "$.headers.mcp-session-id: must be visible ASCII (0x21 to 0x7E)"]


def test_a_visible_ascii_session_id_is_kept_for_the_session() -> None:
    async def run() -> str | None:
        async with await connect(Target.from_asgi(_legacy_app(b"s-1~!")), era="legacy") as s:
            return s.session_id

    assert asyncio.run(run()) == "s-1~!"


@pytest.mark.parametrize("token", ["t\u00f6k-s3cret", "two words-s3cret", "line\nbreak-s3cret",
                                   "nul\x00-s3cret"])
def test_a_token_that_is_not_a_header_value_is_refused_before_anything_is_sent(token: str
                                                                                ) -> None:
    sent: list[bytes] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        sent.append(scope["path"].encode())
        await send({"type": "http.response.start", "status": 500, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def run() -> None:
        await connect(Target.from_asgi(app), era="auto", token=token)

    with pytest.raises(ClientError) as caught:
        asyncio.run(run())
    assert caught.value.code == "client.bad_token"
    assert "s3cret" not in str(caught.value.to_dict())
    assert sent == []


def test_an_endless_answer_to_the_initialized_notification_is_not_read(
) -> None:
    sent = {"bytes": 0}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = await read_body(receive, 1 << 20)
        message = json.loads(body)
        if message.get("method") == "initialize":
            await _legacy_app(b"s-1")(scope, _replay(body), send)
            return
        await send({"type": "http.response.start", "status": 202, "headers": []})
        while True:  # a body that never ends
            sent["bytes"] += 65536
            await send({"type": "http.response.body", "body": b" " * 65536, "more_body": True})

    async def run() -> str:
        bounds = ClientTimeouts(probe_s=3.0, close_s=1.0)
        async with await connect(Target.from_asgi(app), era="legacy", timeouts=bounds) as s:
            return s.version

    assert asyncio.run(run()) == "2025-11-25"
    assert sent["bytes"] <= 128 * 65536


def _replay(body: bytes) -> Any:
    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    return receive


def test_an_endless_answer_to_the_closing_delete_is_not_read() -> None:
    sent = {"chunks": 0}

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["method"] != "DELETE":
            await _legacy_app(b"s-1")(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        while True:  # a body that never ends
            sent["chunks"] += 1
            await send({"type": "http.response.body", "body": b" " * 1024, "more_body": True})

    async def run() -> None:
        bounds = ClientTimeouts(close_s=1.0)
        async with await connect(Target.from_asgi(app), era="legacy", timeouts=bounds):
            pass

    asyncio.run(run())
    assert sent["chunks"] <= 128
