"""Server-sent events framing (mcp-wire 9): one JSON-RPC message per ``event: message`` frame;
a comment line as keepalive; the final event is the response, then the body ends.

The modern entry's frames carry no ids, no ``retry`` and no priming event (SEP-2575 removed
resumability). A resumable legacy stream (2025-11-25, SEP-1699: see
:mod:`~toolkeeper.transports.replay`) gives every frame an ``id:`` and opens with a priming
event: an id, a ``retry`` hint and empty data, which a client keeps as its resumption cursor
without dispatching anything.
"""

from __future__ import annotations

from typing import Final

__all__ = ["KEEPALIVE", "SSE_HEADERS", "priming_frame", "sse_frame", "sse_frame_with_id"]

SSE_HEADERS: Final = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"connection", b"keep-alive"),
    (b"x-accel-buffering", b"no"),
]

KEEPALIVE: Final = b": ping\r\n\r\n"


def sse_frame(message_json: bytes) -> bytes:
    """One ``event: message`` frame around compact JSON (which never contains a raw newline)."""
    return b"event: message\r\ndata: " + message_json + b"\r\n\r\n"


def sse_frame_with_id(event_id: bytes, message_json: bytes) -> bytes:
    """:func:`sse_frame` with an ``id:`` line (an ASCII id without line breaks)."""
    return b"id: " + event_id + b"\r\nevent: message\r\ndata: " + message_json + b"\r\n\r\n"


def priming_frame(event_id: bytes, retry_ms: int | None) -> bytes:
    """The priming event: an id, the ``retry`` hint (milliseconds) when given, empty data
    (the 2025-11-25 transport; the official SDK's ``_mint_priming_event``)."""
    retry = b"" if retry_ms is None else b"retry: " + str(retry_ms).encode() + b"\r\n"
    return b"id: " + event_id + b"\r\n" + retry + b"data: \r\n\r\n"
