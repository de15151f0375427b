"""The transport's own rungs of mcp-wire 4.4 (0a: Content-Length, 1: Content-Type, 4: Accept,
and rung 8's stream-method check), judged on header values, with the bounded memos that let
the express lane judge a repeated header value once.

Every function here is pure: values in, a verdict out. :mod:`~toolkeeper.transports.http`
decides when each is asked and answers the refusals.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sized
from functools import lru_cache
from typing import Final, TypeVar

from toolkeeper.protocol import HeaderView
from toolkeeper.protocol.envelope import InboundRequest, classify_inbound, decode_message
from toolkeeper.protocol.kernel import select_http_era
from toolkeeper.protocol.versions import Era

__all__ = [
    "MEMO_LONGEST",
    "STREAM_METHOD",
    "accepts",
    "asks_for_a_stream",
    "check_post_headers",
    "is_json_type",
    "judge_accept",
    "length_refusal",
    "short_memo",
]

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")

MEMO_LONGEST: Final = 256
"""The longest header value (characters or bytes) the transport's memos keep: a longer one is
judged afresh on every request, so what a memo holds is bounded in size as well as in count
(a caller chooses its header values; httptools sets no length limit)."""


def short_memo(function: Callable[[_K], _V], maxsize: int) -> Callable[[_K], _V]:
    """``function`` of one header value (or None), memoized for values up to
    :data:`MEMO_LONGEST` long."""
    cached = lru_cache(maxsize=maxsize)(function)

    def call(value: _K) -> _V:
        if value is None or (isinstance(value, Sized) and len(value) <= MEMO_LONGEST):
            return cached(value)
        return function(value)

    return call


# RFC 9110 12.4.2: qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ); zero refuses.
_ZERO_Q: Final = re.compile(r"q\s*=\s*0(?:\.0{0,3})?")


def judge_accept(accept: str | None) -> tuple[bool, bool]:
    """(JSON acceptable, SSE acceptable), with ``*/*``, ``application/*``, ``text/*``."""
    types: set[str] = set()
    for item in (accept or "").split(","):
        media, *params = (p.strip().lower() for p in item.split(";"))
        if any(_ZERO_Q.fullmatch(p) for p in params):
            continue
        types.add(media)
    json = bool(types & {"application/json", "application/*", "*/*"})
    sse = bool(types & {"text/event-stream", "text/*", "*/*"})
    return json, sse


accepts: Final = short_memo(judge_accept, 512)  # a pure function; clients send a few values


STREAM_METHOD: Final = b"subscriptions/listen"


def asks_for_a_stream(body: bytes, raw: list[tuple[bytes, bytes]] | tuple[
        tuple[bytes, bytes], ...], headers: HeaderView | None) -> bool:
    """Whether the body is a valid modern request to a method answered as a stream (mcp-wire
    4.4 rung 8: it needs ``text/event-stream`` in Accept, in every server mode). Judged only
    when SSE is not acceptable and the body names the method somewhere."""
    try:
        message = decode_message(body)
        inbound = classify_inbound(message)
    except Exception:  # a JsonRpcError: the kernel answers it at its own rung
        return False
    return (isinstance(inbound, InboundRequest)
            and inbound.method == STREAM_METHOD.decode()
            and select_http_era(message, headers if headers is not None
                                else HeaderView.from_asgi(raw)) is Era.MODERN)


def _is_digits(value: str) -> bool:
    # ASCII only: str.isdigit() also accepts digits int() refuses, such as U+00B2 (Latin-1 0xB2).
    return value.isascii() and value.isdigit()


def length_refusal(lengths: list[str], limit: int) -> tuple[int, bytes] | None:
    """Step 0a on the Content-Length values given (none: nothing to refuse)."""
    if lengths:
        digits = lengths[0].strip()
        if len(set(lengths)) != 1 or not _is_digits(digits):
            return 400, b"Invalid Content-Length header"
        significant = digits.lstrip("0") or "0"  # int() refuses over 4,300 digits
        if len(significant) > len(str(limit)) or int(significant) > limit:
            return 413, b"Request body too large"
    return None


def check_post_headers(headers: HeaderView, limit: int) -> tuple[int, bytes] | None:
    """Steps 0a and 1 on a decoded header view: (status, text) to refuse with, or None."""
    refusal = length_refusal(headers.get_all("content-length"), limit)
    if refusal is not None:
        return refusal
    if not is_json_type(headers.get("content-type")):
        return 400, b"Invalid Content-Type header"
    return None


def _judge_json_type(content_type: str | None) -> bool:
    return content_type is not None and content_type.strip().lower().startswith(
        "application/json")


is_json_type: Final = short_memo(_judge_json_type, 256)  # a pure function of one value
