"""Reading a bounded request body and writing whole responses over ASGI."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from toolkeeper.protocol import Reply
from toolkeeper.transports.asgi_io import (
    BodyTimeout,
    BodyTooLarge,
    ClientDisconnected,
    Message,
    read_body,
    send_reply,
)


def _receiver(*messages: dict[str, Any]) -> Any:
    queue = list(messages)
    taken: list[int] = []

    async def receive() -> Message:
        taken.append(1)
        return queue.pop(0)

    receive.taken = taken  # type: ignore[attr-defined]  # test bookkeeping
    return receive


def test_a_chunked_body_is_joined() -> None:
    receive = _receiver({"type": "http.request", "body": b"ab", "more_body": True},
                        {"type": "http.request", "body": b"cd"})
    assert asyncio.run(read_body(receive, 4)) == b"abcd"


def test_a_body_over_the_limit_is_refused_at_the_chunk_that_passes_it() -> None:
    receive = _receiver({"type": "http.request", "body": b"abc", "more_body": True},
                        {"type": "http.request", "body": b"de", "more_body": True},
                        {"type": "http.request", "body": b"never read"})
    with pytest.raises(BodyTooLarge):
        asyncio.run(read_body(receive, 4))
    assert len(receive.taken) == 2


def test_a_body_part_that_never_comes_times_out_and_one_at_hand_needs_no_timer() -> None:
    async def never() -> Message:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def stalled_after_first() -> bytes:
        parts = [{"type": "http.request", "body": b"ab", "more_body": True}]

        async def receive() -> Message:
            if parts:
                return parts.pop()
            return await never()

        return await read_body(receive, 100, 0.05)

    with pytest.raises(BodyTimeout):
        asyncio.run(read_body(never, 100, 0.05))
    with pytest.raises(BodyTimeout):
        asyncio.run(stalled_after_first())
    ready = _receiver({"type": "http.request", "body": b"ab"})

    async def read_ready() -> tuple[bytes, int]:
        body = await read_body(ready, 100, 0.05)
        return body, len(asyncio.get_running_loop()._scheduled)  # type: ignore[attr-defined]

    assert asyncio.run(read_ready()) == (b"ab", 0)  # no timer was ever scheduled


def test_a_disconnect_before_the_body_ends_is_reported() -> None:
    receive = _receiver({"type": "http.request", "body": b"ab", "more_body": True},
                        {"type": "http.disconnect"})
    with pytest.raises(ClientDisconnected):
        asyncio.run(read_body(receive, 100))


def test_a_reply_is_sent_as_json_with_its_headers_and_length() -> None:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    reply = Reply({"a": 1}, status=404, headers=(("mcp-session-id", "s1"),))
    asyncio.run(send_reply(send, reply))
    assert sent == [
        {"type": "http.response.start", "status": 404,
         "headers": [(b"content-type", b"application/json"), (b"mcp-session-id", b"s1"),
                     (b"content-length", b"7")]},
        {"type": "http.response.body", "body": b'{"a":1}', "more_body": False}]
