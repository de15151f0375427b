"""Registry URLs (``--registry`` / ``TOOLKEEPER_REGISTRY``) and the default location."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolkeeper.errors import StoreError
from toolkeeper.registry import MemoryStore, default_url, open_store
from toolkeeper.registry.sqlite import SQLiteStore


def test_memory_url_opens_an_in_memory_store() -> None:
    assert isinstance(open_store("memory:"), MemoryStore)


def test_sqlite_url_with_three_slashes_names_an_absolute_file(tmp_path: Path) -> None:
    store = open_store(f"sqlite://{tmp_path / 'r.db'}")
    try:
        assert isinstance(store, SQLiteStore)
        assert store.path == tmp_path / "r.db" and store.path.is_file()
    finally:
        store.close()


def test_a_missing_directory_is_an_error_not_a_new_tree(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as info:
        open_store(f"sqlite://{tmp_path / 'nested' / 'r.db'}")
    assert info.value.code == "registry.missing"
    assert not (tmp_path / "nested").exists()


def test_read_only_opening_refuses_a_file_that_is_not_there(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as info:
        open_store(f"sqlite://{tmp_path / 'r.db'}", create=False)
    assert info.value.code == "registry.missing"
    assert not (tmp_path / "r.db").exists()


def test_sqlite_url_with_two_slashes_is_relative(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = open_store("sqlite://here.db")
    store.close()
    assert (tmp_path / "here.db").is_file()


@pytest.mark.parametrize("url", ["mysql://db", "sqlite:", "sqlite:relative.db", "memory:x",
                                 "no-scheme", "", "  "])
def test_an_unusable_url_is_refused_with_a_stable_code(url: str) -> None:
    with pytest.raises(StoreError) as info:
        open_store(url)
    assert info.value.code == "registry.url_invalid"


def test_the_environment_variable_wins_over_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLKEEPER_REGISTRY", "memory:")
    assert default_url() == "memory:"
    assert isinstance(open_store(None), MemoryStore)


def test_the_default_is_a_sqlite_file_in_the_user_data_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOOLKEEPER_REGISTRY", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_url() == f"sqlite://{tmp_path / 'toolkeeper' / 'registry.db'}"
    open_store().close()
    assert (tmp_path / "toolkeeper" / "registry.db").is_file()


def test_an_empty_environment_variable_is_refused_not_read_as_the_default(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLKEEPER_REGISTRY", "")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    with pytest.raises(StoreError) as info:
        open_store(None)
    assert info.value.code == "registry.url_invalid"
    assert list(tmp_path.iterdir()) == []


def test_a_path_that_is_not_a_file_is_refused(tmp_path: Path) -> None:
    for create in (True, False):
        with pytest.raises(StoreError) as info:
            open_store(f"sqlite://{tmp_path}", create=create)
        assert info.value.code == "registry.not_a_file"


@pytest.mark.parametrize("name", ["r x?y#z%20.db", "\u00e9t\u00e9.db"])
def test_a_file_name_is_taken_literally_not_as_a_uri(tmp_path: Path, name: str) -> None:
    doubled = "/" + str(tmp_path / name)  # a path starting with // is not a host name
    open_store(f"sqlite://{doubled}").close()
    assert [p.name for p in tmp_path.iterdir()] == [name]
    open_store(f"sqlite://{doubled}", read_only=True).close()
