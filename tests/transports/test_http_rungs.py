"""The transport's header rungs as pure functions (mcp-wire 4.4 steps 0a, 1, 4 and 8)."""

from __future__ import annotations

import pytest

from toolkeeper.protocol import HeaderView
from toolkeeper.transports.http_rungs import (
    MEMO_LONGEST,
    asks_for_a_stream,
    check_post_headers,
    is_json_type,
    judge_accept,
    length_refusal,
    short_memo,
)


@pytest.mark.parametrize(("accept", "verdict"), [
    (None, (False, False)),
    ("application/json, text/event-stream", (True, True)),
    ("*/*", (True, True)),
    ("application/*", (True, False)),
    ("text/*", (False, True)),
    ("APPLICATION/JSON ; charset=utf-8", (True, False)),
    ("application/json;q=0, text/event-stream", (False, True)),
    ("application/json;q=0.000", (False, False)),
    ("application/json;q=0.001", (True, False)),
    ("application/json;q=1", (True, False)),
])
def test_accept_is_judged_per_media_range_with_zero_quality_refusing(
        accept: str | None, verdict: tuple[bool, bool]) -> None:
    assert judge_accept(accept) == verdict


@pytest.mark.parametrize(("lengths", "refusal"), [
    ([], None),
    (["10"], None),
    (["0010"], None),
    (["11"], (413, b"Request body too large")),
    (["0" * 5000 + "9"], None),
    (["9" * 5000], (413, b"Request body too large")),
    (["10", "10"], None),
    (["10", "9"], (400, b"Invalid Content-Length header")),
    (["-1"], (400, b"Invalid Content-Length header")),
    (["\u00b2"], (400, b"Invalid Content-Length header")),
    ([""], (400, b"Invalid Content-Length header")),
])
def test_content_length_is_refused_when_malformed_conflicting_or_over_the_limit(
        lengths: list[str], refusal: tuple[int, bytes] | None) -> None:
    assert length_refusal(lengths, 10) == refusal


def test_post_headers_need_a_json_content_type_after_a_valid_length() -> None:
    def view(*pairs: tuple[str, str]) -> HeaderView:
        return HeaderView.from_asgi([(n.encode(), v.encode()) for n, v in pairs])

    assert check_post_headers(view(("content-type", "application/json")), 10) is None
    assert check_post_headers(view(("content-type", "text/plain")), 10) == (
        400, b"Invalid Content-Type header")
    assert check_post_headers(view(("content-length", "99"), ("content-type", "text/plain")),
                              10) == (413, b"Request body too large")
    assert is_json_type(" Application/JSON; charset=utf-8") is True
    assert is_json_type(None) is False


def test_a_short_memo_keeps_short_values_only() -> None:
    seen: list[object] = []

    def judge(value: str | None) -> int:
        seen.append(value)
        return 0 if value is None else len(value)

    memo = short_memo(judge, 8)
    short, long = "x" * MEMO_LONGEST, "y" * (MEMO_LONGEST + 1)
    assert [memo(short), memo(short), memo(None), memo(None)] == [MEMO_LONGEST] * 2 + [0, 0]
    assert [memo(long), memo(long)] == [MEMO_LONGEST + 1] * 2
    assert seen == [short, None, long, long]


_LISTEN = (b'{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":'
           b'{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}')


@pytest.mark.parametrize(("body", "headers", "stream"), [
    (_LISTEN, [(b"mcp-protocol-version", b"2026-07-28")], True),
    (_LISTEN.replace(b'"id":1,', b""), [(b"mcp-protocol-version", b"2026-07-28")], False),
    (b'{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen"}', [], False),
    (b"not json subscriptions/listen", [], False),
    (_LISTEN.replace(b"subscriptions/listen", b"tools/list"), [], False),
])
def test_only_a_modern_listen_request_asks_for_a_stream(
        body: bytes, headers: list[tuple[bytes, bytes]], stream: bool) -> None:
    assert asks_for_a_stream(body, headers, None) is stream
