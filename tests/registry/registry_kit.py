"""Registry test kit: contract builders and storage backends (importable by spawned workers)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import psycopg

from toolkeeper.contracts.semver import Version
from toolkeeper.contracts.spec import ToolSpec, spec_from_mapping
from toolkeeper.registry import MemoryStore, Registry, RegistryStore, open_store

__all__ = ["Backend", "PgServer", "evolved", "make_spec", "spec_mapping", "v"]


def v(text: str) -> Version:
    return Version.parse(text)


def spec_mapping(name: str = "payments.lookup", version: str = "1.0.0", *,
                 required: Iterable[str] = ("reference",), optional: Iterable[str] = (),
                 **fields: Any) -> dict[str, Any]:
    """A valid contract mapping: string properties ``required`` (all required) and
    ``optional``; ``fields`` override or add camelCase keys."""
    required = list(required)
    props = {p: {"type": "string"} for p in [*required, *optional]}
    data: dict[str, Any] = {
        "name": name,
        "version": version,
        "title": "Look up a payment",
        "description": "Returns the status of a payment by reference.",
        "inputSchema": {"type": "object", "properties": props, "required": required},
        "dataClassification": "internal",
        "sideEffect": "read",
    }
    data.update(fields)
    return data


def make_spec(name: str = "payments.lookup", version: str = "1.0.0", **fields: Any) -> ToolSpec:
    return spec_from_mapping(spec_mapping(name, version, **fields))


def evolved(name: str, version: str, *, shape: str | None = None, **fields: Any) -> ToolSpec:
    """The contract whose shape follows a version (``shape``, default ``version``), so
    consecutive versions differ exactly by the bump they name: one required property per major,
    one optional property per minor, the description per patch."""
    parsed = v(shape or version)
    return make_spec(
        name, version,
        required=[f"r{i}" for i in range(parsed.major + 1)],
        optional=[f"o{i}" for i in range(parsed.minor)],
        description=f"patch level {parsed.patch}",
        **fields,
    )


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
