"""Registry test backends: one storage backend per test, and the session PostgreSQL server."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg

from toolkeeper.registry import MemoryStore, Registry, RegistryStore, open_store

__all__ = ["Backend", "PgServer"]

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


@dataclass
class Backend:
    """One storage backend for a test: open registries (replicas) that share its data."""

    kind: str
    url: str
    _opened: list[Registry] = field(default_factory=list)
    _stores: list[RegistryStore] = field(default_factory=list)
    _memory: MemoryStore | None = None

    def store(self) -> RegistryStore:
        """A new store instance over this backend's data (memory: the one shared store)."""
        if self.kind == "memory":
            if self._memory is None:
                self._memory = MemoryStore()
            return self._memory
        store = open_store(self.url)
        self._stores.append(store)
        return store

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
        for store in self._stores:
            store.close()
