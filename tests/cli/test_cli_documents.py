"""Every document the CLI reads becomes JSON data or is refused as bad input (cli/documents.py).

Refusals are exit 2 through ``fail`` (a SystemExit, never a traceback) with a stable code and
the JSON path of the offending value; contracts that are refused are never written.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from toolkeeper.cli.documents import MAX_ALIAS_REUSE, MAX_DEPTH, json_data, parse_json
from toolkeeper.cli.main import cli
from toolkeeper.contracts.canonical import canonical_json
from toolkeeper.errors import ContractError

_SCHEMA = json.dumps({"type": "object", "properties": {"a": {"type": "number", "maximum": 5}}})
_HEAD = ("name: docs.tool\nversion: 1.0.0\ntitle: T\ndescription: D\n"
         "dataClassification: public\nsideEffect: read\n")


def _invoke(*args: str, stdin: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=stdin)


def _file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def _refusal(result: Result) -> dict[str, Any]:
    """The --json error of a bad-input exit (2, by sys.exit: no traceback)."""
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2, result.stdout
    error: dict[str, Any] = json.loads(result.stdout)["error"]
    return error


def _validate(tmp_path: Path, name: str, text: str) -> Result:
    schema = _file(tmp_path, "schema.json", _SCHEMA)
    return _invoke("validate", schema, _file(tmp_path, name, text), "--json")


def _rows(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        if not conn.execute("select 1 from sqlite_master where name = 'contracts'").fetchone():
            return 0
        count: int = conn.execute("select count(*) from contracts").fetchone()[0]
        return count


# (YAML arguments, code, path of the offending value, data)
_NOT_JSON: dict[str, tuple[str, str, str, dict[str, Any] | None]] = {
    "date": ("a: 2020-01-01\n", "json.not_json", "$.a", {"type": "date"}),
    "timestamp": ("a: [2020-01-01 10:00:00]\n", "json.not_json", "$.a[0]", {"type": "datetime"}),
    "binary": ("a: !!binary aGVsbG8=\n", "json.not_json", "$.a", {"type": "bytes"}),
    "set": ("a: {b: !!set {x, y}}\n", "json.not_json", "$.a.b", {"type": "set"}),
    "ordered pairs": ("a: !!omap [x: 1]\n", "json.not_json", "$.a[0]", {"type": "tuple"}),
    "integer key": ("a: {1: x}\n", "json.key_not_string", "$.a", {"keyType": "int"}),
    "boolean key (YAML 1.1 on)": ("on: x\n", "json.key_not_string", "$", {"keyType": "bool"}),
    "null key": ("a: [{~: x}]\n", "json.key_not_string", "$.a[0]", {"keyType": "NoneType"}),
    "lone surrogate": ('a: ["ok", "\\ud800"]\n', "json.lone_surrogate", "$.a[1]", None),
    "lone surrogate key": ('a: {"\\udfff": 1}\n', "json.lone_surrogate", '$.a["\\udfff"]', None),
    "NaN": ("a: .nan\n", "json.not_finite", "$.a", None),
    "infinity": ("a: .inf\n", "json.not_finite", "$.a", None),
    "negative infinity": ("a: [-.inf]\n", "json.not_finite", "$.a[0]", None),
    "overflowing float": ("a: 1.0e+400\n", "json.not_finite", "$.a", None),
}


@pytest.mark.parametrize("case", sorted(_NOT_JSON))
def test_yaml_arguments_that_are_not_json_data_are_refused_with_a_code_and_path(
        tmp_path: Path, case: str) -> None:
    text, code, path, data = _NOT_JSON[case]
    error = _refusal(_validate(tmp_path, "arguments.yaml", text))
    assert (error["code"], error["path"], error.get("data")) == (code, path, data)


@pytest.mark.parametrize("case", ["NaN", "integer key", "lone surrogate", "date"])
def test_a_contract_holding_a_value_that_is_not_json_is_refused_and_not_published(
        tmp_path: Path, case: str) -> None:
    text, code, path, _ = _NOT_JSON[case]
    schema = "inputSchema: {type: object, properties: {p: {const: X}}}\n"
    value = text.removeprefix("a: ").rstrip("\n")
    contract = _file(tmp_path, "contract.yaml", _HEAD + schema.replace("X", value))
    db = tmp_path / "registry.db"
    error = _refusal(_invoke("publish", contract, "--registry", f"sqlite:///{db}", "--json"))
    assert error["code"] == code
    assert error["path"] == path.replace("$.a", "$.inputSchema.properties.p.const")
    assert _rows(db) == 0


@pytest.mark.parametrize("command", ["validate", "diff"])
def test_a_schema_that_is_not_json_data_is_refused_by_validate_and_diff(
        tmp_path: Path, command: str) -> None:
    schema = _file(tmp_path, "schema.yaml", "type: object\nproperties: {a: {minimum: .inf}}\n")
    other = "{}" if command == "validate" else schema
    error = _refusal(_invoke(command, schema, other, "--json"))
    assert (error["code"], error["path"]) == ("json.not_finite", "$.properties.a.minimum")


def _nested(depth: int) -> str:
    return '{"a":' * (depth - 1) + "[]" + "}" * (depth - 1)


@pytest.mark.parametrize("name", ["arguments.json", "arguments.yaml"])
def test_arguments_nested_to_the_wire_bound_are_read(tmp_path: Path, name: str) -> None:
    result = _validate(tmp_path, name, _nested(MAX_DEPTH))
    assert result.exit_code == 1  # read and validated: `a` is not a number <= 5
    assert [e["path"] for e in json.loads(result.stdout)["errors"]] == ["$.a"]


@pytest.mark.parametrize("name", ["arguments.json", "arguments.yaml"])
def test_arguments_one_level_past_the_wire_bound_are_too_deep_at_that_level(
        tmp_path: Path, name: str) -> None:
    error = _refusal(_validate(tmp_path, name, _nested(MAX_DEPTH + 1)))
    assert (error["code"], error["data"]) == ("json.too_deep", {"maxDepth": MAX_DEPTH})
    assert error["path"] == "$" + ".a" * MAX_DEPTH


@pytest.mark.parametrize(("name", "depth"), [("arguments.yaml", 1_000), ("arguments.yaml", 50_000),
                                             ("arguments.json", 50_000)])
def test_pathologically_deep_documents_are_too_deep_not_a_recursion_error(
        tmp_path: Path, name: str, depth: int) -> None:
    error = _refusal(_validate(tmp_path, name, "[" * depth + "]" * depth))
    assert (error["code"], error["path"]) == ("json.too_deep", "$")


def test_a_contract_schema_nested_past_the_bound_is_refused_and_not_published(
        tmp_path: Path) -> None:
    schema = '{"type":"object","properties":{"a":' * 40 + "{}" + "}}" * 40
    contract = _file(tmp_path, "contract.yaml", _HEAD + f"inputSchema: {schema}\n")
    db = tmp_path / "registry.db"
    error = _refusal(_invoke("publish", contract, "--registry", f"sqlite:///{db}", "--json"))
    assert error["code"] == "json.too_deep"
    assert _rows(db) == 0


def test_a_yaml_alias_inside_its_own_anchor_is_a_recursive_alias(tmp_path: Path) -> None:
    error = _refusal(_validate(tmp_path, "arguments.yaml", "a: &x {b: [1, *x]}\n"))
    assert (error["code"], error["path"]) == ("yaml.recursive_alias", "$.a.b[1]")


def test_yaml_anchors_shared_without_a_cycle_are_read(tmp_path: Path) -> None:
    schema = _file(tmp_path, "schema.yaml",
                   "type: object\nproperties:\n  a: &num {type: integer, maximum: 5}\n"
                   "  b: *num\n  c: {<<: *num, maximum: 1}\n")
    result = _invoke("validate", schema, '{"a": 5, "b": 6, "c": 2}', "--json")
    assert result.exit_code == 1
    assert [(e["path"], e["keyword"]) for e in json.loads(result.stdout)["errors"]] == [
        ("$.b", "maximum"), ("$.c", "maximum")]


def _reusing(uses: int) -> str:
    """An anchor of 999 values (1,000 with its list) used ``uses`` times."""
    return f"a: &x [{', '.join(['0'] * 999)}]\nb: [{', '.join(['*x'] * uses)}]\n"


def test_yaml_aliases_may_repeat_up_to_the_bound(tmp_path: Path) -> None:
    assert MAX_ALIAS_REUSE % 1_000 == 0
    result = _validate(tmp_path, "arguments.yaml", _reusing(MAX_ALIAS_REUSE // 1_000))
    assert result.exit_code == 1  # read: `a` is a list, not a number
    assert [e["path"] for e in json.loads(result.stdout)["errors"]] == ["$.a"]


def test_yaml_aliases_repeating_past_the_bound_are_too_large(tmp_path: Path) -> None:
    error = _refusal(_validate(tmp_path, "arguments.yaml",
                               _reusing(MAX_ALIAS_REUSE // 1_000 + 1)))
    assert (error["code"], error["data"]) == ("yaml.too_large",
                                              {"maxAliasReuse": MAX_ALIAS_REUSE})


def test_a_yaml_alias_bomb_is_too_large_for_diff(tmp_path: Path) -> None:
    levels = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 9)]
    bomb = _file(tmp_path, "bomb.yaml", "\n".join(levels) + "\n")  # 10**9 values expanded
    assert _refusal(_invoke("diff", bomb, bomb, "--json"))["code"] == "yaml.too_large"


_DUPLICATES: dict[str, tuple[str, str]] = {
    "schema.json": ('{"type": "object", "properties": {"a": {}, "a": {"type": "string"}}}',
                    "$.properties.a"),
    "schema.yaml": ('type: object\nproperties:\n  a: {}\n  "a": {type: string}\n',
                    "$.properties.a"),
}


@pytest.mark.parametrize("name", sorted(_DUPLICATES))
def test_a_key_given_twice_in_a_schema_is_refused(tmp_path: Path, name: str) -> None:
    text, path = _DUPLICATES[name]
    error = _refusal(_invoke("validate", _file(tmp_path, name, text), "{}", "--json"))
    assert (error["code"], error["path"]) == ("json.duplicate_key", path)


def test_a_contract_with_its_version_given_twice_is_refused_and_not_published(
        tmp_path: Path) -> None:
    contract = _file(tmp_path, "contract.yaml",
                     _HEAD + "version: 2.0.0\ninputSchema: {type: object}\n")
    db = tmp_path / "registry.db"
    error = _refusal(_invoke("publish", contract, "--registry", f"sqlite:///{db}", "--json"))
    assert (error["code"], error["path"]) == ("json.duplicate_key", "$.version")
    assert _rows(db) == 0


@pytest.mark.parametrize("source", ["inline", "stdin"])
def test_arguments_with_a_key_given_twice_are_refused(tmp_path: Path, source: str) -> None:
    schema = _file(tmp_path, "schema.json", _SCHEMA)
    text = '{"b": [{"c": 1, "c": 2}]}'
    args = (text, None) if source == "inline" else ("-", text)
    error = _refusal(_invoke("validate", schema, args[0], "--json", stdin=args[1]))
    assert (error["code"], error["path"]) == ("json.duplicate_key", "$.b[0].c")


@pytest.mark.parametrize("length", [300, 5_000])
def test_inline_json_arguments_of_any_length_are_validated(tmp_path: Path,
                                                           length: int) -> None:
    schema = _file(tmp_path, "schema.json", _SCHEMA)
    result = _invoke("validate", schema, json.dumps({"b": "x" * length}), "--json")
    assert (result.exit_code, json.loads(result.stdout)) == (0, {"errors": [], "valid": True})


def test_a_long_name_that_is_neither_a_file_nor_json_is_an_unreadable_file(
        tmp_path: Path) -> None:
    schema = _file(tmp_path, "schema.json", _SCHEMA)
    error = _refusal(_invoke("validate", schema, "n" * 300 + ".json", "--json"))
    assert error["code"] == "file.unreadable"


def test_a_file_whose_name_starts_like_json_is_read_as_a_file(tmp_path: Path) -> None:
    schema = _file(tmp_path, "schema.json", _SCHEMA)
    arguments = _file(tmp_path, "[draft].json", '{"a": 6}')
    result = _invoke("validate", schema, arguments, "--json")
    assert result.exit_code == 1
    assert [e["path"] for e in json.loads(result.stdout)["errors"]] == ["$.a"]


def test_inline_text_that_is_not_unicode_is_invalid_json(tmp_path: Path) -> None:
    schema = _file(tmp_path, "schema.json", _SCHEMA)
    # undecodable bytes in argv reach Python as lone surrogates (surrogateescape)
    assert _refusal(_invoke("validate", schema, '"\udcff"', "--json"))["code"] == "json.invalid"


@pytest.mark.parametrize("as_json", [True, False])
def test_an_error_naming_an_undecodable_file_name_still_prints(as_json: bool) -> None:
    result = _invoke("validate", "\udcff.json", "{}", *(["--json"] if as_json else []))
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2
    if as_json:
        assert json.loads(result.stdout)["error"]["code"] == "file.unreadable"
    else:
        assert result.stderr.rstrip().endswith("[file.unreadable]")


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(_JSON_VALUES)
def test_json_data_is_returned_unchanged_and_survives_a_round_trip(value: Any) -> None:
    assert json_data(value) is value
    assert parse_json(canonical_json(value)) == value


@pytest.mark.parametrize("value", [(1, 2), {1, 2}, b"x", object(), {"a": [{"b": 1j}]}])
def test_json_data_refuses_python_values_json_does_not_have(value: Any) -> None:
    with pytest.raises(ContractError) as info:
        json_data(value)
    assert info.value.code == "json.not_json"


def test_json_data_refuses_a_cyclic_value_by_its_depth() -> None:
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(ContractError) as info:
        json_data(cyclic)
    assert info.value.code == "json.too_deep"
