"""Versioned migrations, how a store recognises a database as toolkeeper's before touching
it, read-only opening, and the database-enforced rules of the SQL stores (SPEC 2.4)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from registry_kit import Backend, evolved

from toolkeeper.errors import StoreError
from toolkeeper.registry import Registry, open_store
from toolkeeper.registry import postgres as postgres_module
from toolkeeper.registry import sqlite as sqlite_module
from toolkeeper.registry.migrations import (
    POSTGRES_MIGRATIONS,
    SQLITE_MIGRATIONS,
    Migration,
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


# --- recognising a database before touching it --------------------------------------------

_SCHEMA_TABLE = ("CREATE TABLE schema_version (version INTEGER PRIMARY KEY,"
                 " description TEXT NOT NULL, applied_at TEXT NOT NULL)")

FOREIGN: dict[str, list[str]] = {
    "an unrelated contracts table": [
        "CREATE TABLE contracts (id INTEGER PRIMARY KEY, body TEXT)",
        "INSERT INTO contracts VALUES (1, 'theirs')"],
    "another program's tables": ["CREATE TABLE t (x INTEGER)"],
    "another program's schema_version": [
        "CREATE TABLE schema_version (version INTEGER)", "INSERT INTO schema_version VALUES (1)"],
    "a schema_version recording other migrations": [
        _SCHEMA_TABLE, "INSERT INTO schema_version VALUES (1, 'theirs', 'then')"],
    "toolkeeper's history without its tables": [
        _SCHEMA_TABLE, "INSERT INTO schema_version VALUES"
        f" (1, '{SQLITE_MIGRATIONS[0].description}', 'then')"],
}


def _fingerprint(backend: Backend) -> Any:
    """What a write would change: the SQLite file's bytes, or PostgreSQL's table names."""
    if backend.kind == "sqlite":
        return Path(backend.url.removeprefix("sqlite://")).read_bytes()
    with raw(backend) as conn:
        return conn.execute("SELECT table_name FROM information_schema.tables"
                            " WHERE table_schema = current_schema() ORDER BY 1").fetchall()


@pytest.mark.parametrize("read_only", [False, True], ids=["writer", "reader"])
@pytest.mark.parametrize("case", sorted(FOREIGN))
def test_a_database_that_is_not_toolkeepers_is_refused_and_left_as_it_was(
        sql_backend: Backend, case: str, read_only: bool) -> None:
    with raw(sql_backend) as conn:
        for statement in FOREIGN[case]:
            conn.execute(statement)
    before = _fingerprint(sql_backend)
    with pytest.raises(StoreError) as info:
        open_store(sql_backend.url, read_only=read_only)
    assert info.value.code == "registry.foreign"
    assert _fingerprint(sql_backend) == before


def test_a_reader_refuses_an_empty_database_and_creates_nothing(sql_backend: Backend) -> None:
    with raw(sql_backend):
        pass  # SQLite: an empty file
    before = _fingerprint(sql_backend)
    for options in ({"read_only": True}, {"create": False}):
        with pytest.raises(StoreError) as info:
            open_store(sql_backend.url, **options)
        assert info.value.code == "registry.missing"
    assert _fingerprint(sql_backend) == before


def test_a_read_only_registry_reads_and_refuses_to_write(sql_backend: Backend) -> None:
    sql_backend.open().publish(evolved(NAME, "1.0.0"), actor="alice")
    reader = Registry.open(sql_backend.url, read_only=True)
    try:
        assert [str(s.version) for s in reader.versions(NAME)] == ["1.0.0"]
        with pytest.raises(StoreError) as info:
            reader.publish(evolved(NAME, "1.0.1"))
        assert info.value.code == "registry.read_only"
        assert [e.version for e in reader.audit()] == ["1.0.0"]
    finally:
        reader.close()


def test_a_reader_never_migrates_an_outdated_schema_and_the_next_writer_does(
        sql_backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    sql_backend.open().publish(evolved(NAME, "1.0.0"))
    module, attribute = ((sqlite_module, "SQLITE_MIGRATIONS") if sql_backend.kind == "sqlite"
                         else (postgres_module, "POSTGRES_MIGRATIONS"))
    current = getattr(module, attribute)
    monkeypatch.setattr(module, attribute, (*current, Migration(
        len(current) + 1, "a note table", ("CREATE TABLE note (text TEXT)",))))
    with pytest.raises(StoreError) as info:
        open_store(sql_backend.url, read_only=True)
    assert info.value.code == "registry.schema_outdated"
    open_store(sql_backend.url).close()  # a writer migrates
    open_store(sql_backend.url, read_only=True).close()
    with raw(sql_backend) as conn:
        assert conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == len(
            current) + 1
