"""Helpers for tests that drive toolkeeper as a real subprocess."""

from __future__ import annotations

import os
import re
import selectors
import time
from typing import IO, Any

__all__ = ["read_until"]


def read_until(stream: IO[bytes] | Any, pattern: re.Pattern[bytes], timeout: float
               ) -> re.Match[bytes]:
    """Read a child's pipe until ``pattern`` matches; TimeoutError or EOFError (with what was
    read) when it does not within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    buffer = b""
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        while (match := pattern.search(buffer)) is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(buffer.decode(errors="replace"))
            if selector.select(remaining):
                chunk = os.read(stream.fileno(), 65536)
                if not chunk:
                    raise EOFError(buffer.decode(errors="replace"))
                buffer += chunk
    return match
