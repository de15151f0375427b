"""Fixtures for proxy evidence: the nginx binary (skipped when absent outside CI, a failure
under CI) and the demo gateway over HTTP as the origin (one per module, stopped by its pid)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from nginx_kit import require_nginx
from process_kit import serving_gateway


@pytest.fixture(scope="session")
def nginx() -> str:
    """The nginx binary. Absent: a skip on a workstation, a failure under CI (``.ci/run``
    installs it, so its absence there is a broken pipeline, not an optional test)."""
    return require_nginx()


@pytest.fixture(scope="module")
def demo_origin() -> Iterator[str]:
    """The URL of ``toolkeeper serve --demo`` on an ephemeral 127.0.0.1 port."""
    with serving_gateway(["--demo", "--registry", "memory:", "--port", "0",
                          "--log-level", "warning"]) as url:
        yield url
