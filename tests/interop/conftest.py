"""Fixtures for the interop matrix: the demo gateway over HTTP (one per session, stopped by its
pid), the stdio server's argv (a fresh registry per cell), and every selected client installed
through the shared ``peers`` fixture (``tests/peer_kit.py``), in parallel, before the first cell
runs."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from interop_kit import ClientSpec

from peer_kit import Peers
from process_kit import SRC, serving_gateway

__all__ = ["driver_prefix", "http_gateway", "stdio_argv"]

# The gateway under test is this checkout's (SRC), also in servers the clients spawn over stdio
# (the MCP SDKs start them with a scrubbed environment, so the path goes on the command line).


def _demo_args(registry: Path, *transport: str) -> list[str]:
    return ["--demo", *transport, "--registry", f"sqlite:///{registry}"]


@pytest.fixture(scope="session")
def http_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of `toolkeeper serve --demo` on an ephemeral 127.0.0.1 port."""
    registry = tmp_path_factory.mktemp("interop-http") / "registry.db"
    with serving_gateway([*_demo_args(registry, "--port", "0"), "--log-level",
                          "warning"]) as url:
        yield url


@pytest.fixture
def stdio_argv(tmp_path: Path) -> list[str]:
    """The argv that starts `toolkeeper serve --demo --stdio` on a fresh registry."""
    env = shutil.which("env") or "/usr/bin/env"
    return [env, f"PYTHONPATH={SRC}", sys.executable, "-m", "toolkeeper", "serve",
            *_demo_args(tmp_path / "registry.db", "--stdio")]


def _selected_specs(session: pytest.Session) -> set[ClientSpec]:
    specs: set[ClientSpec] = set()
    for item in session.items:
        spec = getattr(item, "callspec", None) and item.callspec.params.get("spec")  # type: ignore[attr-defined]
        if isinstance(spec, ClientSpec):
            specs.add(spec)  # by value: one client may have several specs under one name
    return specs


@pytest.fixture(scope="session")
def driver_prefix(request: pytest.FixtureRequest, peers: Peers) -> Callable[[ClientSpec], list[str]]:
    """Install every client the run selected (cached, in parallel), then hand out each one's
    driver argv prefix; a client whose install failed fails its cells with the install's error."""
    peers.interop_all(_selected_specs(request.session))
    return peers.interop
