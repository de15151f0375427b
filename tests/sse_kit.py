"""Reading an SSE response of the gateway as the JSON-RPC messages it carries."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx

__all__ = ["sse_messages"]


def sse_messages(response: httpx.Response) -> Iterator[dict[str, Any]]:
    """The JSON-RPC messages of an SSE response as they arrive (keepalive comments and the
    priming event of a resumable legacy stream skipped; every other frame must be one
    ``event: message`` with its ``data:`` line, after an ``id:`` line on a resumable stream)."""
    buffer = b""
    for chunk in response.iter_bytes():
        buffer += chunk
        while b"\r\n\r\n" in buffer:
            frame, buffer = buffer.split(b"\r\n\r\n", 1)
            if frame.startswith(b":"):
                continue
            lines = frame.split(b"\r\n")
            if lines[0].startswith(b"id: "):
                lines = lines[1:]
            if lines[-1] == b"data: ":
                continue
            event, data = lines
            assert (event, data[:6]) == (b"event: message", b"data: ")
            yield json.loads(data[6:])
