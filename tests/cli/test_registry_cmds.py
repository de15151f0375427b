"""The registry commands end to end, over a real SQLite file (exit codes and JSON shapes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
import yaml
from click.testing import CliRunner

from toolkeeper.cli.registry_cmds import register


@click.group()
def cli() -> None:
    """A group holding only the registry commands."""


register(cli)


def contract(version: str = "1.0.0", *, required: tuple[str, ...] = ("reference",),
             **fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "payments.lookup", "version": version, "title": "Look up a payment",
        "description": "Returns a payment.", "dataClassification": "internal",
        "sideEffect": "read",
        "inputSchema": {"type": "object", "required": list(required),
                        "properties": {p: {"type": "string"} for p in required}},
    }
    data.update(fields)
    return data


class Cli:
    def __init__(self, tmp_path: Path) -> None:
        self.dir = tmp_path
        self.url = f"sqlite://{tmp_path / 'registry.db'}"

    def file(self, name: str, data: Any) -> str:
        path = self.dir / name
        text = yaml.safe_dump(data) if name.endswith(".yaml") else json.dumps(data)
        path.write_text(text)
        return str(path)

    def run(self, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
        result = CliRunner().invoke(cli, [*args, *(("--registry", self.url) if env is None
                                                   else ())], env=env)
        return result.exit_code, result.stdout, result.stderr

    def json(self, *args: str) -> tuple[int, Any]:
        code, out, _ = self.run(*args, "--json")
        return code, [json.loads(line) for line in out.splitlines()]


@pytest.fixture
def tk(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def test_publish_prints_the_stored_record(tk: Cli) -> None:
    code, [record] = tk.json("publish", tk.file("c.json", contract()), "--actor", "alice")
    assert code == 0
    assert record["status"] == "active" and record["publisher"] == "alice"
    assert record["version"] == "1.0.0" and "publishedAt" in record


def test_publish_reads_yaml_and_reports_an_identical_republish_as_unchanged(tk: Cli) -> None:
    path = tk.file("c.yaml", contract())
    assert tk.run("publish", path)[1].startswith("published payments.lookup 1.0.0")
    assert tk.run("publish", path)[1].startswith("unchanged payments.lookup 1.0.0")


def test_a_refused_publish_exits_1_with_rule_bump_changes_and_minimum_version(tk: Cli) -> None:
    tk.run("publish", tk.file("v1.json", contract()))
    breaking = tk.file("v11.json", contract("1.1.0", required=("reference", "currency")))
    code, [out] = tk.json("publish", breaking)
    assert code == 1
    assert set(out) == {"error"}
    error = out["error"]
    assert set(error) == {"code", "message", "data", "rule", "bump", "changes", "minimumVersion"}
    assert error["code"] == "publish.bump_required"
    assert {k: error["data"][k] for k in ("rule", "bump", "changes", "minimumVersion")} == {
        k: error[k] for k in ("rule", "bump", "changes", "minimumVersion")}
    assert (error["rule"], error["bump"], error["minimumVersion"]) == (
        "publish.bump_required", "major", "2.0.0")
    assert error["changes"] and {"rule", "path", "bump", "reason"} <= set(error["changes"][0])
    code, _, err = tk.run("publish", breaking)
    assert code == 1 and "[publish.bump_required]" in err


def test_a_malformed_file_exits_2_and_publishes_nothing(tk: Cli) -> None:
    good = tk.file("good.json", contract())
    bad = tk.file("bad.json", {**contract(), "dataClassification": "secret-ish"})
    code, [out] = tk.json("publish", good, bad)
    assert code == 2 and out["error"]["code"] == "contract.enum"
    assert out["error"]["path"] == "$.dataClassification"
    code, [out] = tk.json("versions", "payments.lookup")  # the registry was never even opened
    assert (code, out["error"]["code"]) == (2, "registry.missing")


def test_versions_lists_every_version_oldest_first(tk: Cli) -> None:
    tk.run("publish", tk.file("a.json", contract()),
           tk.file("b.json", contract("2.0.0", required=("reference", "currency"))))
    code, [records] = tk.json("versions", "payments.lookup")
    assert code == 0 and [r["version"] for r in records] == ["1.0.0", "2.0.0"]
    code, [out] = tk.json("versions", "no.such.tool")
    assert code == 1 and out["error"]["code"] == "registry.not_found"


def test_deprecate_and_retire_change_status_and_retired_is_terminal(tk: Cli) -> None:
    tk.run("publish", tk.file("a.json", contract()),
           tk.file("b.json", contract("2.0.0", required=("reference", "currency"))))
    code, [record] = tk.json("deprecate", "payments.lookup", "1.0.0", "--message", "move on",
                             "--successor", "2.0.0")
    assert code == 0 and record["status"] == "deprecated" and record["successor"] == "2.0.0"
    code, [record] = tk.json("retire", "payments.lookup", "1.0.0")
    assert code == 0 and record["status"] == "retired"
    code, [out] = tk.json("deprecate", "payments.lookup", "1.0.0")
    assert code == 1 and out["error"]["code"] == "lifecycle.retired_is_terminal"


def test_a_bad_version_argument_exits_2(tk: Cli) -> None:
    code, [out] = tk.json("retire", "payments.lookup", "1.0")
    assert code == 2 and out["error"]["code"] == "semver.invalid"


def test_discover_applies_scopes_and_refuses_an_unknown_clearance(tk: Cli) -> None:
    tk.run("publish", tk.file("a.json", contract()),
           tk.file("b.json", contract("2.0.0", required=("reference", "currency"),
                                      requiredScopes=["payments.admin"])))
    code, [found] = tk.json("discover", "--tenant", "acme", "--scope", "payments.read",
                            "--clearance", "confidential")
    assert code == 0 and [(r["name"], r["version"]) for r in found] == [
        ("payments.lookup", "1.0.0")]
    code, [found] = tk.json("discover", "--tenant", "acme", "--scope", "payments.admin",
                            "--clearance", "confidential")
    assert [r["version"] for r in found] == ["2.0.0"]
    code, [out] = tk.json("discover", "--tenant", "acme", "--clearance", "cosmic")
    assert code == 2 and out["error"]["code"] == "principal.clearance_unknown"


def test_audit_lists_applied_and_refused_changes(tk: Cli) -> None:
    tk.run("publish", tk.file("a.json", contract()), "--actor", "alice")
    tk.run("publish", tk.file("b.json", contract("0.9.0")), "--actor", "bob")
    code, [entries] = tk.json("audit")
    assert code == 0
    assert [(e["actor"], e["version"], e.get("rule")) for e in entries] == [
        ("alice", "1.0.0", None), ("bob", "0.9.0", "publish.not_monotonic")]


def test_the_registry_comes_from_the_environment_when_no_flag_is_given(tk: Cli) -> None:
    path = tk.file("a.json", contract())
    code, _, _ = tk.run("publish", path, env={"TOOLKEEPER_REGISTRY": tk.url})
    assert code == 0
    assert tk.json("versions", "payments.lookup")[0] == 0


def test_an_unusable_registry_url_exits_2(tk: Cli) -> None:
    result = CliRunner().invoke(cli, ["audit", "--registry", "mysql://x", "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["code"] == "registry.url_invalid"


@pytest.mark.parametrize("command", [("versions", "payments.lookup"), ("audit",),
                                     ("discover", "--tenant", "t", "--clearance", "public")])
def test_read_commands_refuse_a_missing_registry_and_create_nothing(
        tmp_path: Path, command: tuple[str, ...]) -> None:
    missing = tmp_path / "typo" / "dir" / "registry.db"
    result = CliRunner().invoke(cli, [*command, "--registry", f"sqlite://{missing}", "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["code"] == "registry.missing"
    assert not (tmp_path / "typo").exists()
    here = tmp_path / "registry.db"
    result = CliRunner().invoke(cli, [*command, "--registry", f"sqlite://{here}", "--json"])
    assert result.exit_code == 2 and not here.exists()


def test_a_write_into_a_missing_directory_is_refused(tk: Cli) -> None:
    missing = tk.dir / "typo" / "registry.db"
    result = CliRunner().invoke(cli, ["publish", tk.file("a.json", contract()),
                                      "--registry", f"sqlite://{missing}", "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["error"]["code"] == "registry.missing"
    assert not missing.parent.exists()
