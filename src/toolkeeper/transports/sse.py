"""Server-sent events framing of the modern entry (mcp-wire 9): one JSON-RPC message per
``event: message`` frame, no ids, no retry, no priming; a comment line as keepalive; the final
event is the response, then the body ends."""

from __future__ import annotations

from typing import Final

__all__ = ["KEEPALIVE", "SSE_HEADERS", "sse_frame"]

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
