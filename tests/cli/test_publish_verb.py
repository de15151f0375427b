"""``toolkeeper publish`` says ``published`` or ``unchanged`` from what the publish guard decided
inside the transaction that stored (or did not store) the version, not from a look at the
store before or after it: another writer committing at the same moment does not change the
word. The race is made deterministic: every change transaction of the CLI's store is followed,
before the CLI goes on, by a real commit of another writer (another registry on the same
database, through its own connection). The verb is then checked against the store's audit
trail: ``published`` exactly when it holds an applied publish of that version by the CLI's
actor.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolkeeper.cli.main import cli
from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.registry import Registry
from toolkeeper.registry.postgres import PostgresStore
from toolkeeper.registry.sqlite import SQLiteStore
from toolkeeper.registry.store import StoreTransaction

NAME = "payments.lookup"
ACTOR = "cli-run"


def _contract(name: str = NAME, version: str = "1.0.0") -> dict[str, Any]:
    return {"name": name, "version": version, "title": "T", "description": "D",
            "dataClassification": "public", "sideEffect": "read",
            "inputSchema": {"type": "object"}}


StoreClass = type[SQLiteStore] | type[PostgresStore]


@contextmanager
def another_writer_commits_after_each_change(monkeypatch: pytest.MonkeyPatch,
                                             store_class: StoreClass, url: str
                                             ) -> Iterator[None]:
    """Every change transaction of ``store_class`` is followed, once it has ended, by another
    registry on ``url`` publishing a new version of another tool (committed)."""
    original: Callable[[Any, str], AbstractContextManager[StoreTransaction]] = (
        store_class.change)
    racer = Registry.open(url)
    versions = itertools.count(1)
    racing = False

    @contextmanager
    def change(self: Any, name: str) -> Iterator[StoreTransaction]:
        nonlocal racing
        with original(self, name) as tx:
            yield tx
        if not racing:
            racing = True
            try:
                racer.publish(spec_from_mapping(_contract("other.tool", f"0.1.{next(versions)}")),
                              actor="racer")
            finally:
                racing = False

    monkeypatch.setattr(store_class, "change", change)
    try:
        yield
    finally:
        monkeypatch.undo()
        racer.close()


def _published_by_the_cli(url: str) -> bool:
    with Registry.open(url) as registry:
        return any(e.applied and e.action == "publish" and e.actor == ACTOR and e.name == NAME
                   for e in registry.audit())


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[StoreClass, str]:
    if request.param == "sqlite":
        return SQLiteStore, f"sqlite://{tmp_path / 'registry.db'}"
    return PostgresStore, str(request.getfixturevalue("pg_url"))


@pytest.mark.parametrize("already_stored", [True, False], ids=["re-publish", "first publish"])
def test_the_verb_is_what_the_guard_decided_while_another_writer_commits(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, store: tuple[StoreClass, str],
        already_stored: bool) -> None:
    store_class, url = store
    contract = tmp_path / "contract.json"
    contract.write_text(json.dumps(_contract()))
    with Registry.open(url) as registry:
        registry.publish(spec_from_mapping(_contract("other.tool", "0.1.0")), actor="racer")
        if already_stored:
            registry.publish(spec_from_mapping(_contract()), actor="alice")
    with another_writer_commits_after_each_change(monkeypatch, store_class, url):
        result = CliRunner().invoke(cli, ["publish", str(contract), "--registry", url,
                                          "--actor", ACTOR])
    assert result.exit_code == 0, result.output
    verb = result.stdout.split()[0]
    assert verb == ("published" if _published_by_the_cli(url) else "unchanged")
    assert verb == ("unchanged" if already_stored else "published")
    with Registry.open(url) as registry:  # the other writer did commit
        assert len(registry.versions("other.tool")) >= 2
