"""Versioned migrations and the database-enforced rules of the SQL stores (SPEC 2.4)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from registry_kit import Backend, evolved

from toolkeeper.errors import StoreError
from toolkeeper.registry import open_store
from toolkeeper.registry.migrations import (
    POSTGRES_MIGRATIONS,
    SQLITE_MIGRATIONS,
    latest_version,
)

NAME = "payments.lookup"


@contextmanager
def raw(backend: Backend) -> Iterator[Any]:
    """A plain DB-API connection to the backend's database, outside toolkeeper."""
    if backend.kind == "sqlite":
        conn = sqlite3.connect(backend.url.removeprefix("sqlite://"), isolation_level=None)
        try:
            yield conn
        finally:
            conn.close()
    else:
        with psycopg.connect(backend.url, autocommit=True) as pg:
            yield pg


_REFUSED = (sqlite3.IntegrityError, psycopg.errors.IntegrityConstraintViolation)


@pytest.mark.parametrize("migrations", [SQLITE_MIGRATIONS, POSTGRES_MIGRATIONS])
def test_migrations_are_numbered_from_one_without_gaps(migrations: Any) -> None:
    assert [m.version for m in migrations] == list(range(1, len(migrations) + 1))


def test_a_new_database_is_migrated_once_to_the_latest_version(sql_backend: Backend) -> None:
    sql_backend.open().publish(evolved(NAME, "1.0.0"))
    sql_backend.open()  # reopening applies nothing twice
    with raw(sql_backend) as conn:
        rows = conn.execute("SELECT version FROM schema_version ORDER BY version").fetchall()
    wanted = SQLITE_MIGRATIONS if sql_backend.kind == "sqlite" else POSTGRES_MIGRATIONS
    assert [r[0] for r in rows] == list(range(1, latest_version(wanted) + 1))


def test_a_database_from_a_newer_toolkeeper_is_refused(sql_backend: Backend) -> None:
    sql_backend.open()
    with raw(sql_backend) as conn:
        conn.execute("INSERT INTO schema_version VALUES (999, 'from the future', "
                     + ("datetime('now'))" if sql_backend.kind == "sqlite" else "now())"))
    with pytest.raises(StoreError) as info:
        open_store(sql_backend.url)
    assert info.value.code == "registry.schema_too_new"


@pytest.mark.parametrize("statement", [
    "UPDATE audit SET actor = 'someone else'",
    "DELETE FROM audit",
    "DELETE FROM contracts",
    "UPDATE contracts SET content_digest = 'forged'",
    "UPDATE contracts SET version_key = '9.9.9'",
])
def test_the_database_itself_keeps_audit_append_only_and_content_immutable(
        sql_backend: Backend, statement: str) -> None:
    registry = sql_backend.open()
    registry.publish(evolved(NAME, "1.0.0"), actor="alice")
    before = (registry.versions(NAME), registry.audit())
    with raw(sql_backend) as conn, pytest.raises(_REFUSED):
        conn.execute(statement)
    fresh = sql_backend.open()
    assert (fresh.versions(NAME), fresh.audit()) == before
