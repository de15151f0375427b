"""``toolkeeper diff``: contracts and bare schemas, JSON shape, human table, exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from toolkeeper.cli import diff_cmd


@pytest.fixture
def group() -> click.Group:
    @click.group()
    def cli() -> None:
        """Test group."""

    diff_cmd.register(cli)
    return cli


def _run(group: click.Group, *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(group, ["diff", *args], input=stdin)
    return result.exit_code, result.stdout, result.stderr


def _write(tmp_path: Path, name: str, value: Any) -> str:
    path = tmp_path / name
    path.write_text(value if isinstance(value, str) else json.dumps(value), encoding="utf-8")
    return str(path)


def test_db_query_3_to_4_is_major_with_every_change_as_json(group: click.Group,
                                                           examples_dir: Path) -> None:
    code, out, _ = _run(group, str(examples_dir / "db.query-3.0.0.json"),
                        str(examples_dir / "db.query-4.0.0.json"), "--json")
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"bump", "changes"}
    assert data["bump"] == "major"
    for change in data["changes"]:
        assert set(change) == {"rule", "path", "bump", "reason"}
    found = {(c["path"], c["rule"]) for c in data["changes"]}
    assert {
        ("$.inputSchema.properties.timeout_ms", "input.property.removed"),
        ("$.inputSchema.required[1]", "input.required.added"),
        ("$.inputSchema.properties.mode.enum", "input.enum.narrowed"),
        ("$.sideEffect", "contract.side_effect.deescalated"),
    } <= found


def test_json_output_is_canonical_and_sorted(group: click.Group, examples_dir: Path) -> None:
    _, out, _ = _run(group, str(examples_dir / "db.query-3.0.0.json"),
                     str(examples_dir / "db.query-4.0.0.json"), "--json")
    data = json.loads(out)
    assert out == json.dumps(data, sort_keys=True, separators=(",", ":"),
                             ensure_ascii=False) + "\n"
    keys = [(c["path"], c["rule"]) for c in data["changes"]]
    assert keys == sorted(keys)


def test_human_output_is_an_aligned_table_with_a_summary(group: click.Group,
                                                         examples_dir: Path) -> None:
    code, out, _ = _run(group, str(examples_dir / "db.query-3.0.0.json"),
                        str(examples_dir / "db.query-4.0.0.json"))
    assert code == 0
    lines = out.splitlines()
    table, summary = lines[:-1], lines[-1]
    assert summary.startswith("MAJOR: 8 changes (3 major, 2 minor, 3 patch)")
    assert "flagged for review" in summary
    assert len({line.index("$.") for line in table}) == 1  # the path column is aligned
    assert any(line.startswith("MAJOR") and "input.property.removed" in line for line in table)


def test_same_contract_twice_is_patch_with_no_changes(group: click.Group,
                                                      examples_dir: Path) -> None:
    path = str(examples_dir / "payments.lookup.json")
    code, out, _ = _run(group, path, path, "--json")
    assert (code, json.loads(out)) == (0, {"bump": "patch", "changes": []})
    code, out, _ = _run(group, path, path)
    assert (code, out) == (0, "PATCH: no changes\n")


def test_bare_schemas_are_compared_as_input_schemas(group: click.Group, tmp_path: Path) -> None:
    before = _write(tmp_path, "a.json", {"type": "integer"})
    after = _write(tmp_path, "b.json", {"type": "number"})
    code, out, _ = _run(group, before, after, "--json")
    assert code == 0
    data = json.loads(out)
    assert data["bump"] == "minor"
    assert [(c["path"], c["rule"]) for c in data["changes"]] == [("$.type", "input.type.widened")]


def test_output_flag_compares_bare_schemas_covariantly(group: click.Group,
                                                       tmp_path: Path) -> None:
    before = _write(tmp_path, "a.json", {"type": "integer"})
    after = _write(tmp_path, "b.json", {"type": "number"})
    code, out, _ = _run(group, before, after, "--output", "--json")
    assert (code, json.loads(out)["bump"]) == (0, "major")
    assert json.loads(out)["changes"][0]["rule"] == "output.type.widened"


def test_contract_against_a_bare_schema_compares_input_schemas(
        group: click.Group, tmp_path: Path, examples_dir: Path) -> None:
    contract = json.loads((examples_dir / "payments.lookup.json").read_text())
    schema = dict(contract["inputSchema"])
    schema["required"] = ["reference", "include_legs"]
    bare = _write(tmp_path, "bare.json", schema)
    code, out, _ = _run(group, str(examples_dir / "payments.lookup.json"), bare, "--json")
    assert code == 0
    data = json.loads(out)
    assert data["bump"] == "major"
    assert [(c["path"], c["rule"]) for c in data["changes"]] == [
        ("$.required[1]", "input.required.added")]


def test_yaml_contracts_are_read(group: click.Group, tmp_path: Path,
                                 examples_dir: Path) -> None:
    import yaml

    contract = json.loads((examples_dir / "payments.lookup.json").read_text())
    contract["requiredScopes"] = ["payments.read", "payments.audit"]
    after = _write(tmp_path, "after.yaml", yaml.safe_dump(contract))
    code, out, _ = _run(group, str(examples_dir / "payments.lookup.json"), after, "--json")
    assert code == 0
    assert [c["rule"] for c in json.loads(out)["changes"]] == ["contract.scope.added"]


def test_stdin_is_accepted_for_one_side(group: click.Group, examples_dir: Path) -> None:
    text = (examples_dir / "payments.lookup.json").read_text()
    code, out, _ = _run(group, "-", str(examples_dir / "payments.lookup.json"), "--json",
                        stdin=text)
    assert (code, json.loads(out)["bump"]) == (0, "patch")


@pytest.mark.parametrize(("content", "code"), [
    (None, "file.unreadable"),
    ("{not json", "json.invalid"),
    ('{"name": "x", "version": "1.0.0"}', "contract.missing_key"),
    ('{"name": "x", "version": "one", "title": "t", "description": "d", '
     '"inputSchema": {"type": "object"}, "dataClassification": "public", '
     '"sideEffect": "read"}', "contract.version"),
    ('[1, 2]', "schema.invalid"),
    ('{"type": 12}', "schema.invalid"),
])
def test_bad_input_exits_2_with_a_stable_error_code(group: click.Group, tmp_path: Path,
                                                    content: str | None, code: str) -> None:
    good = _write(tmp_path, "good.json", {"type": "object"})
    bad = str(tmp_path / "missing.json") if content is None else _write(tmp_path, "bad.json",
                                                                         content)
    exit_code, out, _ = _run(group, good, bad, "--json")
    assert exit_code == 2
    error = json.loads(out)["error"]
    assert error["code"] == code
    assert bad in error["message"]


def test_bad_input_without_json_goes_to_stderr(group: click.Group, tmp_path: Path) -> None:
    good = _write(tmp_path, "good.json", {"type": "object"})
    exit_code, out, err = _run(group, good, str(tmp_path / "missing.json"))
    assert exit_code == 2
    assert out == ""
    assert "[file.unreadable]" in err


def test_output_flag_with_a_contract_without_output_schema_exits_2(
        group: click.Group, examples_dir: Path) -> None:
    path = str(examples_dir / "payments.lookup.json")
    exit_code, out, _ = _run(group, path, path, "--output", "--json")
    assert exit_code == 2
    assert json.loads(out)["error"]["code"] == "diff.no_output_schema"
