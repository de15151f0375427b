"""``RegistryStore.ping`` (the readiness check) on every backend: it passes while the data can
be read over a fresh connection, and raises a StoreError with a stable code when it cannot
(the store closed; the SQLite file removed while the store's own connection still reads it;
a PostgreSQL URL whose server is not there), without a password in the message."""

from __future__ import annotations

from pathlib import Path

import pytest
from registry_kit import Backend

from toolkeeper.errors import StoreError
from toolkeeper.registry import open_store
from toolkeeper.registry.postgres import PostgresStore


def test_ping_passes_on_an_open_store_and_refuses_a_closed_one(backend: Backend) -> None:
    store = backend.store()
    store.ping()
    store.close()
    with pytest.raises(StoreError) as caught:
        store.ping()
    assert caught.value.code == "registry.closed"


def test_sqlite_ping_fails_while_the_file_is_gone_though_the_store_still_reads(
        tmp_path: Path) -> None:
    db = tmp_path / "registry.db"
    store = open_store(f"sqlite://{db}")
    try:
        db.rename(tmp_path / "moved.db")
        store.snapshot()  # its own connection keeps reading the unlinked file
        with pytest.raises(StoreError) as caught:
            store.ping()
        assert caught.value.code == "registry.store"
        (tmp_path / "moved.db").rename(db)
        store.ping()
    finally:
        store.close()


@pytest.mark.postgres
def test_postgres_ping_opens_its_own_session_and_masks_the_password(
        pg_url: str, tmp_path: Path) -> None:
    store = open_store(pg_url)
    assert isinstance(store, PostgresStore)
    try:
        store.ping()
        secret = "pw-never-shown-93"
        store.url = f"postgresql://postgres:{secret}@/postgres?host={tmp_path / 'nowhere'}"
        with pytest.raises(StoreError) as caught:
            store.ping()
        assert caught.value.code == "registry.unavailable"
        assert secret not in str(caught.value)
    finally:
        store.close()
