"""Raw exchanges (client/raw.py): exact bytes and headers out, everything back, nothing judged
(a status is data, an undecodable body is recorded); stdio settles on a barrier request."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import pytest

from toolkeeper.client import ClientTimeouts, Target
from toolkeeper.client.raw import RawAnswer, RawRequest
from toolkeeper.errors import ProtocolViolationError
from toolkeeper.protocol.client_requests import modern_request

SEEN: list[list[tuple[bytes, bytes]]] = []


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers by the request body's first word: sse, open, text, or status <n>."""
    body = (await receive())["body"].decode()
    SEEN.append(list(scope["headers"]))
    word, _, rest = body.partition(" ")
    if word in ("sse", "open"):
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        for event in ('{"jsonrpc":"2.0","method":"n"}', '{"jsonrpc":"2.0","id":1,"result":{}}'):
            await send({"type": "http.response.body", "more_body": True,
                        "body": f"event: message\ndata: {event}\n\n".encode()})
        if word == "open":
            while (await receive())["type"] != "http.disconnect":
                pass
        await send({"type": "http.response.body", "body": b""})
        return
    status = int(rest) if word == "status" else 200
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b"<html>no</html>" if word == "text"
                else b'{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}'})


def _send(body: bytes, **options: Any) -> RawAnswer:
    async def go() -> RawAnswer:
        transport: Any = await Target.from_asgi(_app).open(ClientTimeouts())
        try:
            answer: RawAnswer = await transport.send_raw(RawRequest(body, **options),
                                                         timeout=5, max_bytes=1 << 20)
            return answer
        finally:
            await transport.aclose()
    return asyncio.run(go())


def test_duplicated_headers_are_sent_as_duplicates() -> None:
    SEEN.clear()
    _send(b"status 400", headers=(("Mcp-Method", "a"), ("Mcp-Method", "a")))
    assert [v for k, v in SEEN[0] if k == b"mcp-method"] == [b"a", b"a"]


def test_a_refusal_status_and_an_undecodable_body_are_recorded_not_raised() -> None:
    refused = _send(b"status 401")
    assert refused.status == 401 and refused.messages[0]["error"]["code"] == -32600
    text = _send(b"text")
    assert (text.status, text.messages, text.undecodable, text.body) == (
        200, (), True, b"<html>no</html>")


def test_an_event_stream_records_each_message_its_read_and_its_end() -> None:
    answer = _send(b"sse")
    assert answer.streamed and answer.ended
    assert [m.get("id") for m in answer.messages] == [None, 1]
    assert answer.reads == (0, 1)


def test_a_stream_stopped_after_its_expected_messages_is_recorded_as_not_ended() -> None:
    answer = _send(b"open", stop_after=1)
    assert answer.streamed and not answer.ended
    assert len(answer.messages) == 1


STDIO = (sys.executable, "-m", "toolkeeper", "serve", "--demo", "--stdio",
         "--registry", "memory:")


def test_stdio_settles_on_the_barrier_for_what_gets_no_answer_and_refuses_two_lines() -> None:
    async def go() -> tuple[RawAnswer, RawAnswer]:
        transport: Any = await Target.from_stdio(STDIO).open(ClientTimeouts())
        try:
            barrier = modern_request("b-1", "server/discover", {})[0]
            notification = json.dumps({"jsonrpc": "2.0", "method": "com.example/x"}).encode()
            silent = await transport.send_raw(
                RawRequest(notification, awaits_answer=False, barrier=barrier),
                timeout=10, max_bytes=1 << 20)
            broken = await transport.send_raw(
                RawRequest(b"{nope", awaits_answer=False,
                           barrier=modern_request("b-2", "server/discover", {})[0]),
                timeout=10, max_bytes=1 << 20)
            with pytest.raises(ProtocolViolationError) as caught:
                await transport.send_raw(RawRequest(b"{}\n{}"), timeout=1, max_bytes=10)
            assert caught.value.code == "client.bad_request"
            return silent, broken
        finally:
            await transport.aclose()

    silent, broken = asyncio.run(go())
    assert (silent.status, silent.messages) == (None, ())
    assert [(m["id"], m["error"]["code"]) for m in broken.messages] == [(None, -32700)]
