"""Helpers for tests that drive toolkeeper as a real subprocess."""

from __future__ import annotations

import os
import re
import selectors
import subprocess
import time
from typing import IO, Any

__all__ = ["read_until", "stop_process"]


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


def stop_process(proc: subprocess.Popen[Any], grace: float = 20) -> None:
    """SIGTERM ``proc`` if it still runs, wait up to ``grace`` seconds, then SIGKILL; close
    its standard error pipe."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    if proc.stderr is not None:
        proc.stderr.close()
