"""``toolkeeper keys add|list|revoke`` end to end, over a SQLite file and the embedded PostgreSQL
(exit codes, JSON shapes, and that a key is shown once and never listed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolkeeper.auth.keys import KeyAuthenticator
from toolkeeper.cli import keys_cmd
from toolkeeper.cli.main import cli
from toolkeeper.errors import AuthenticationError
from toolkeeper.registry import RegistryStore, open_store
from toolkeeper.registry.apikeys import key_store


class Keys:
    def __init__(self, url: str) -> None:
        self.url = url

    def run(self, *args: str) -> tuple[int, str, str]:
        result = CliRunner().invoke(cli, ["keys", *args, "--registry", self.url])
        return result.exit_code, result.stdout, result.stderr

    def json(self, *args: str) -> tuple[int, Any]:
        code, out, _ = self.run(*args, "--json")
        return code, json.loads(out)

    def add(self, *args: str) -> dict[str, Any]:
        code, out = self.json("add", "--create", "--tenant", "acme", "--clearance", "internal",
                              *args)
        assert code == 0, out
        return dict(out)

    def authenticate(self, token: str) -> str:
        store = open_store(self.url, read_only=True)
        try:
            return KeyAuthenticator(key_store(store)).authenticate(token).tenant
        except AuthenticationError as exc:
            return exc.reason
        finally:
            store.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def keys(request: pytest.FixtureRequest, tmp_path: Path) -> Keys:
    if request.param == "sqlite":
        return Keys(f"sqlite://{tmp_path / 'registry.db'}")
    return Keys(request.getfixturevalue("pg_url"))


def test_add_prints_the_key_once_as_canonical_json(keys: Keys) -> None:
    code, out, _ = keys.run("add", "--create", "--tenant", "acme", "--scope", "b", "--scope", "a",
                            "--clearance", "internal", "--json")
    assert code == 0
    added = json.loads(out)
    assert sorted(added) == ["clearance", "id", "key", "scopes", "tenant"]
    assert out == json.dumps(added, sort_keys=True, separators=(",", ":")) + "\n"
    assert (added["tenant"], added["scopes"], added["clearance"]) == ("acme", ["a", "b"],
                                                                     "internal")
    assert added["key"].startswith(f"tk_{added['id']}_")
    assert keys.authenticate(added["key"]) == "acme"


def test_add_without_json_prints_only_the_key_on_stdout(keys: Keys) -> None:
    code, out, err = keys.run("add", "--create", "--tenant", "acme", "--clearance", "public")
    assert code == 0
    assert out.count("\n") == 1 and out.startswith("tk_")
    assert keys.authenticate(out.strip()) == "acme"
    assert out.strip() not in err


def test_list_shows_every_key_but_never_the_key_salt_or_hash(keys: Keys) -> None:
    first = keys.add("--name", "ci", "--expires", "30d", "--scope", "x")
    second = keys.add()
    code, listed = keys.json("list")
    assert code == 0
    assert [k["id"] for k in listed] == [first["id"], second["id"]]
    assert sorted(listed[0]) == ["clearance", "created", "expires", "id", "name", "revokedAt",
                                 "scopes", "tenant"]
    assert (listed[0]["name"], listed[0]["scopes"], listed[1]["expires"]) == ("ci", ["x"], None)
    store = open_store(keys.url, read_only=True)
    records = key_store(store).list_keys()
    store.close()
    _, text, _ = keys.run("list")
    _, as_json, _ = keys.run("list", "--json")
    for output in (text, as_json):
        for added, record in zip((first, second), records, strict=True):
            assert added["key"].split("_", 2)[2] not in output
            assert record.hash not in output and record.salt not in output
        assert first["id"] in output


def test_a_revoked_key_is_refused_and_listed_as_revoked(keys: Keys) -> None:
    added = keys.add()
    code, revoked = keys.json("revoke", added["id"])
    assert code == 0
    assert revoked["id"] == added["id"] and revoked["revokedAt"]
    assert keys.authenticate(added["key"]) == "revoked"
    _, listed = keys.json("list")
    assert listed[0]["revokedAt"] == revoked["revokedAt"]
    assert keys.json("revoke", added["id"]) == (0, revoked)  # again: unchanged


def test_revoking_an_unknown_id_exits_1_with_keys_not_found(keys: Keys) -> None:
    keys.add()
    code, out = keys.json("revoke", "0123456789ab")
    assert (code, out["error"]["code"]) == (1, "keys.not_found")


@pytest.mark.parametrize(("args", "error"), [
    (("--tenant", "acme", "--clearance", "secret"), "principal.clearance_unknown"),
    (("--tenant", " ", "--clearance", "public"), "principal.tenant_invalid"),
    (("--tenant", "acme", "--clearance", "public", "--scope", ""), "principal.scope_invalid"),
    (("--tenant", "acme", "--clearance", "public", "--expires", "later"),
     "keys.expires_invalid"),
    (("--tenant", "acme", "--clearance", "public", "--expires", "2001-01-01"),
     "keys.expires_past"),
])
def test_a_bad_add_exits_2_with_its_code_and_stores_nothing(
        keys: Keys, args: tuple[str, ...], error: str) -> None:
    keys.add()
    code, out = keys.json("add", *args)
    assert (code, out["error"]["code"]) == (2, error)
    assert len(keys.json("list")[1]) == 1


def test_list_and_revoke_never_create_a_registry(tmp_path: Path) -> None:
    keys = Keys(f"sqlite://{tmp_path / 'absent.db'}")
    for args in (("list",), ("revoke", "0123456789ab")):
        code, out = keys.json(*args)
        assert (code, out["error"]["code"]) == (2, "registry.missing")
    assert not (tmp_path / "absent.db").exists()


def test_list_opens_the_store_read_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keys = Keys(f"sqlite://{tmp_path / 'registry.db'}")
    keys.add()
    opened: list[dict[str, bool]] = []

    def spy(url: str, **options: bool) -> RegistryStore:
        opened.append(options)
        return open_store(url, **options)

    monkeypatch.setattr(keys_cmd, "open_store", spy)
    code, listed = keys.json("list")
    assert code == 0 and len(listed) == 1
    assert opened == [{"create": False, "read_only": True}]
