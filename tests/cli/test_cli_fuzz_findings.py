"""Bugs found by feeding the CLI malformed documents (JSON and YAML) over a real SQLite registry.

The invariant: bad input is a clear error (exit 2, a stable code in the ``--json`` error), never
a Python traceback and never a write to the registry. Each test reproduces one finding of a
fuzzing pass and failed before its fix (``cli/documents.py`` turns every document and argument
the CLI reads into JSON data or refuses it).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from toolkeeper.cli.main import cli

_HEAD = ("name: fuzz.tool\nversion: 1.0.0\ntitle: {title}\ndescription: D\n"
         "dataClassification: public\nsideEffect: read\n")
_BAD_INPUT_CODES = ("contract.", "schema.", "json.", "yaml.", "file.")


def _yaml_contract(schema: str, title: str = "T") -> str:
    return _HEAD.format(title=title) + f"inputSchema: {schema}\n"


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _assert_bad_input(result: Result) -> None:
    """Exit 2 by sys.exit (no traceback) with a stable bad-input code in the JSON error."""
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["code"].startswith(_BAD_INPUT_CODES), error


def _contract_rows(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        tables = {row[0] for row in conn.execute("select name from sqlite_master")}
        if "contracts" not in tables:
            return 0
        count: int = conn.execute("select count(*) from contracts").fetchone()[0]
        return count


def _file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


_BAD_CONTRACTS: dict[str, str] = {
    # a YAML mapping key that is not a string, inside the schema
    "integer key in the schema": _yaml_contract("{type: object, properties: {1: {type: integer}}}"),
    # a YAML alias that refers to itself: a cyclic mapping
    "recursive alias": _yaml_contract("&s {type: object, properties: {a: *s}}"),
    # a lone surrogate (YAML decodes the escape; JSON decoding refuses it)
    "lone surrogate in a pattern": _yaml_contract('{type: object, properties: {a: {pattern: "\\ud800"}}}'),
    "lone surrogate in the title": _yaml_contract("{type: object}", title='"\\ud800"'),
    # JSON nesting the decoder accepts but the schema compiler recurses too deep on
    "schema nested 300 deep": _yaml_contract(
        '{"type":"object","properties":{"a":' * 300 + '{"type":"integer"}' + "}}" * 300),
}


@pytest.mark.parametrize("case", sorted(_BAD_CONTRACTS))
def test_publishing_a_contract_that_is_not_json_is_bad_input_and_writes_nothing(
        tmp_path: Path, case: str) -> None:
    db = tmp_path / "registry.db"
    path = _file(tmp_path, "contract.yaml", _BAD_CONTRACTS[case])
    result = _invoke("publish", path, "--registry", f"sqlite:///{db}", "--json")
    assert _contract_rows(db) == 0
    _assert_bad_input(result)


@pytest.mark.parametrize("command", ["validate", "diff"])
def test_a_schema_with_a_non_string_key_is_bad_input_for_validate_and_diff(
        tmp_path: Path, command: str) -> None:
    path = _file(tmp_path, "schema.yaml", "{type: object, properties: {1: {type: integer}}}\n")
    other = '{"a": 1}' if command == "validate" else path
    _assert_bad_input(_invoke(command, path, other, "--json"))


_SCHEMA = json.dumps({"type": "object", "properties": {"a": {"type": "string"}}})

_BAD_ARGUMENTS: dict[str, str] = {
    "YAML date": "a: 2020-01-01\n",
    "YAML binary": "a: !!binary aGVsbG8=\n",
    "YAML set": "a: !!set {x, y}\n",
    "YAML integer key": "1: x\n",
    "YAML recursive alias": "&a [*a]\n",
}


@pytest.mark.parametrize("case", sorted(_BAD_ARGUMENTS))
def test_arguments_that_are_not_json_are_bad_input(tmp_path: Path, case: str) -> None:
    schema = _file(tmp_path, "schema.json", _SCHEMA)
    arguments = _file(tmp_path, "arguments.yaml", _BAD_ARGUMENTS[case])
    _assert_bad_input(_invoke("validate", schema, arguments, "--json"))


def test_deeply_nested_invalid_arguments_are_reported_not_a_traceback(tmp_path: Path) -> None:
    schema = _file(tmp_path, "schema.json", _SCHEMA)
    arguments = _file(tmp_path, "arguments.json", '{"a":' * 301 + "1" + "}" * 301)
    result = _invoke("validate", schema, arguments, "--json")
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (1, 2)


def test_an_infinite_yaml_argument_is_not_valid_under_a_maximum(tmp_path: Path) -> None:
    schema = _file(tmp_path, "schema.json",
                   json.dumps({"type": "object", "properties": {"a": {"maximum": 5}}}))
    arguments = _file(tmp_path, "arguments.yaml", "a: .inf\n")
    result = _invoke("validate", schema, arguments, "--json")
    assert result.exit_code in (1, 2), result.stdout


def test_long_inline_json_arguments_are_validated(tmp_path: Path) -> None:
    schema = _file(tmp_path, "schema.json", _SCHEMA)
    result = _invoke("validate", schema, json.dumps({"a": "x" * 300}), "--json")
    assert result.exception is None, repr(result.exception)
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"errors": [], "valid": True}


def test_a_nan_in_a_yaml_schema_is_refused_not_published_as_null(tmp_path: Path) -> None:
    db = tmp_path / "registry.db"
    path = _file(tmp_path, "contract.yaml",
                 _yaml_contract("{type: object, properties: {a: {const: .nan}}}"))
    result = _invoke("publish", path, "--registry", f"sqlite:///{db}", "--json")
    stored: Any = [json.loads(line) for line in result.stdout.splitlines()]
    assert _contract_rows(db) == 0, stored
    _assert_bad_input(result)
