"""Upstream servers the forwarding tests share: the official SDK fixture over HTTP (a
subprocess, stopped by its pid) and the hand-written legacy fixture (in a thread)."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
from forwarding_kit import SDK_SERVER
from raw_upstream import RawUpstream

from process_kit import serving_announced_port
from toolkeeper.transports import serve_in_thread


@pytest.fixture(scope="session")
def sdk_url() -> Iterator[str]:
    with serving_announced_port([sys.executable, SDK_SERVER, "http"]) as url:
        yield url


@pytest.fixture(scope="session")
def raw() -> Iterator[tuple[RawUpstream, str]]:
    app = RawUpstream()
    with serve_in_thread(app) as running:
        yield app, running.url
