"""``toolkeeper keys`` refuses a registry that is not there (unless ``keys add --create``) and
refuses ``memory:``: one error line or JSON error with a stable code, exit 2, nothing created."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from toolkeeper.cli.main import cli

_ADD = ("add", "--tenant", "acme", "--clearance", "internal")
_COMMANDS = (_ADD, ("list",), ("revoke", "0123456789ab"))


def _keys(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["keys", *args], env=env)
    return result.exit_code, result.stdout, result.stderr


def _error(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    code, out, _ = _keys(*args, "--json", env=env)
    return code, json.loads(out)["error"]["code"]


def test_add_refuses_a_missing_sqlite_file_and_creates_nothing(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'absent.db'}"
    assert _error(*_ADD, "--registry", url) == (2, "registry.missing")
    assert list(tmp_path.iterdir()) == []


def test_the_refusal_is_one_line_on_stderr_naming_create(tmp_path: Path) -> None:
    code, out, err = _keys(*_ADD, "--registry", f"sqlite://{tmp_path / 'absent.db'}")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.endswith("[registry.missing]\n")
    assert "--create" in err


def test_add_with_create_makes_the_registry_and_the_others_then_use_it(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'registry.db'}"
    code, out, _ = _keys(*_ADD, "--create", "--registry", url, "--json")
    assert code == 0 and (tmp_path / "registry.db").is_file()
    key_id = json.loads(out)["id"]
    assert _keys(*_ADD, "--registry", url, "--json")[0] == 0  # it exists now: no --create
    code, out, _ = _keys("list", "--registry", url, "--json")
    ids = [k["id"] for k in json.loads(out)]
    assert code == 0 and len(ids) == 2 and ids[0] == key_id
    assert _keys("revoke", key_id, "--registry", url)[0] == 0


def test_create_does_not_make_a_missing_directory(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'no' / 'such' / 'registry.db'}"
    assert _error(*_ADD, "--create", "--registry", url) == (2, "registry.missing")
    assert not (tmp_path / "no").exists()


def test_the_default_registry_is_refused_when_absent_and_its_directory_not_made(
        tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    for args in _COMMANDS:
        assert _error(*args, env=env) == (2, "registry.missing"), args
    assert not (tmp_path / "data").exists()
    assert _keys(*_ADD, "--create", env=env)[0] == 0
    assert (tmp_path / "data" / "toolkeeper" / "registry.db").is_file()


@pytest.mark.parametrize("url", ["memory:", "MEMORY:", " memory:"])
def test_every_keys_command_refuses_memory(url: str) -> None:
    for args in (*_COMMANDS, (*_ADD, "--create")):
        assert _error(*args, "--registry", url) == (2, "registry.memory_refused"), args


def test_memory_from_the_environment_is_refused_too() -> None:
    assert _error(*_ADD, "--create", env={"TOOLKEEPER_REGISTRY": "memory:"}) == (
        2, "registry.memory_refused")


def _tables(url: str) -> list[str]:
    with psycopg.connect(url, connect_timeout=10) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
                            ).fetchall()
    return sorted(row[0] for row in rows)


@pytest.mark.postgres
def test_an_empty_postgres_database_is_refused_without_create_and_left_empty(
        pg_url: str) -> None:
    for args in _COMMANDS:
        assert _error(*args, "--registry", pg_url) == (2, "registry.missing"), args
    assert _tables(pg_url) == []
    assert _keys(*_ADD, "--create", "--registry", pg_url)[0] == 0
    assert "api_keys" in _tables(pg_url)
