"""The module fixtures of the HTTP transport tests: a real gateway over HTTP on an ephemeral
127.0.0.1 port (``http_served_kit``), a client, and the streaming tools' gates."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from http_served_kit import Gates, Served, start

from toolkeeper.transports import HttpConfig


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    value, context = start(HttpConfig(keepalive_s=0.3))
    try:
        yield value
    finally:
        value.gates.release.set()  # let any waiting worker thread finish before shutdown
        context.__exit__(None, None, None)


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as http:
        yield http


@pytest.fixture
def gates(served: Served) -> Gates:
    served.gates.release.clear()
    served.gates.cancelled.clear()
    return served.gates
