"""How records are laid out in SQL rows, and what happens when a row stops making sense."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from registry_kit import evolved, v

from toolkeeper.errors import StoreError
from toolkeeper.registry import Registry
from toolkeeper.registry.rows import spec_from_document, version_key


@pytest.mark.parametrize(("text", "key"), [
    ("1.2.3", "1.2.3"), ("1.2.3+build.5", "1.2.3"), ("1.0.0-rc.1+b", "1.0.0-rc.1"),
])
def test_the_version_key_is_the_precedence_identity_without_build_metadata(
        text: str, key: str) -> None:
    assert version_key(v(text)) == key


def test_a_stored_row_with_an_unknown_classification_is_refused_never_defaulted(
        tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'r.db'}"
    with Registry.open(url) as registry:
        registry.publish(evolved("payments.lookup", "1.0.0"))
    conn = sqlite3.connect(tmp_path / "r.db", isolation_level=None)
    conn.execute("UPDATE contracts SET document = replace(document, '\"internal\"', "
                 "'\"secret-ish\"')")
    conn.close()
    with pytest.raises(StoreError) as info:
        Registry.open(url)
    assert info.value.code == "registry.corrupt"


def test_a_row_that_is_not_json_is_corrupt() -> None:
    with pytest.raises(StoreError) as info:
        spec_from_document("{not json")
    assert info.value.code == "registry.corrupt"
