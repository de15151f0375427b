from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from toolkeeper.cli.main import cli

BAD_ARGS = '{"reference": "PMT771", "include_legs": "yes", "urgent": true}'


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout


def test_invalid_arguments_exit_1_with_sorted_errors(examples_dir: Path) -> None:
    code, out = _run("validate", str(examples_dir / "payments.lookup.json"), BAD_ARGS, "--json")
    assert code == 1
    data = json.loads(out)
    assert data["valid"] is False
    assert [(e["path"], e["keyword"]) for e in data["errors"]] == [
        ("$.include_legs", "type"), ("$.reference", "pattern"), ("$.urgent", "additionalProperties")]
    assert set(data) == {"valid", "errors"}


def test_repair_reports_repairs_and_remaining_errors(examples_dir: Path) -> None:
    code, out = _run("validate", str(examples_dir / "payments.lookup.json"),
                     str(examples_dir / "payments.lookup.bad-args.json"), "--repair", "--json")
    assert code == 1
    data = json.loads(out)
    assert data["repaired"] == {"reference": "PMT771", "include_legs": "yes"}
    assert data["repairs"] == [{"path": "$.urgent", "rule": "drop.additional_property",
                                "before": True}]
    assert [e["path"] for e in data["errors"]] == ["$.include_legs", "$.reference"]


def test_valid_arguments_exit_0(examples_dir: Path) -> None:
    code, out = _run("validate", str(examples_dir / "payments.lookup.json"),
                     '{"reference": "PMT-771", "include_legs": true}', "--json")
    assert (code, json.loads(out)) == (0, {"valid": True, "errors": []})


def test_bare_schema_is_accepted(tmp_path: Path) -> None:
    schema = tmp_path / "s.json"
    schema.write_text('{"type": "integer", "minimum": 1}')
    code, out = _run("validate", str(schema), str(_write(tmp_path, '"abc"')), "--json")
    assert code == 1
    assert [(e["path"], e["keyword"]) for e in json.loads(out)["errors"]] == [("$", "type")]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "args.json"
    path.write_text(text)
    return path


def test_bad_input_exits_2_with_a_stable_code(tmp_path: Path, examples_dir: Path) -> None:
    contract = str(examples_dir / "payments.lookup.json")
    code, out = _run("validate", str(tmp_path / "missing.json"), "{}", "--json")
    assert (code, json.loads(out)["error"]["code"]) == (2, "file.unreadable")
    code, out = _run("validate", contract, "{not json", "--json")
    assert (code, json.loads(out)["error"]["code"]) == (2, "json.invalid")
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x", "version": "1", "inputSchema": {"type": "object"}}')
    code, out = _run("validate", str(bad), "{}", "--json")
    assert code == 2 and json.loads(out)["error"]["code"].startswith("contract.")
    schema = tmp_path / "s.json"
    schema.write_text('{"type": "objekt"}')
    code, out = _run("validate", str(schema), "{}", "--json")
    assert (code, json.loads(out)["error"]["code"]) == (2, "schema.invalid")


def test_yaml_contracts_are_accepted(tmp_path: Path, examples_dir: Path) -> None:
    import yaml

    contract = json.loads((examples_dir / "payments.lookup.json").read_text())
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(contract))
    code, _ = _run("validate", str(path), '{"reference": "PMT-100"}')
    assert code == 0


def test_inline_scalars_are_accepted(tmp_path: Path) -> None:
    schema = tmp_path / "s.json"
    schema.write_text('{"type": "integer", "minimum": 1}')
    code, out = _run("validate", str(schema), '"abc"', "--json")
    assert (code, [e["keyword"] for e in json.loads(out)["errors"]]) == (1, ["type"])
    code, out = _run("validate", str(schema), "5", "--json")
    assert (code, json.loads(out)["valid"]) == (0, True)


def test_a_contract_missing_a_key_is_refused_not_read_as_a_bare_schema(
        tmp_path: Path, examples_dir: Path) -> None:
    contract = json.loads((examples_dir / "payments.lookup.json").read_text())
    del contract["version"]
    path = tmp_path / "nover.json"
    path.write_text(json.dumps(contract))
    code, out = _run("validate", str(path), str(examples_dir / "payments.lookup.bad-args.json"),
                     "--json")
    error = json.loads(out)["error"]
    assert (code, error["code"], error["path"]) == (2, "contract.missing_key", "$.version")
