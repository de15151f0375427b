"""Whether a test that needs a real SDK client runs: an absent SDK is a skip on a workstation
and a failure under CI. The cached SDKs are installed by the shared ``peers`` fixture
(``tests/peer_kit.py``) before a test asks here."""

from __future__ import annotations

import os

import pytest
from conformance_kit import demo_app, served_url

from toolkeeper.conformance import Host
from toolkeeper.conformance.sdk_clients import locate

__all__ = ["HOST", "require_sdk"]

HOST = Host(demo_app, served_url)
"""Replay origins on the demo gateway, served on an ephemeral 127.0.0.1 port."""


def require_sdk(sdk: str) -> None:
    """Skip when ``sdk`` is not installed; fail under CI, where its absence is a broken job."""
    reason = locate(sdk).reason
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{sdk} is required under CI: {reason}")
        pytest.skip(reason)
