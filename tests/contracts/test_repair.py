from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolkeeper.contracts.repair import RULES, repair, repair_arguments


def _payments_schema(examples: Path) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((examples / "payments.lookup.json").read_text())[
        "inputSchema"]
    return schema


def test_seed_repair_drops_urgent_and_leaves_yes_and_pattern(examples_dir: Path) -> None:
    args = {"reference": "PMT771", "include_legs": "yes", "urgent": True}
    result = repair(args, _payments_schema(examples_dir))
    assert result.arguments == {"reference": "PMT771", "include_legs": "yes"}
    assert [(r.path, r.rule) for r in result.repairs] == [("$.urgent", "drop.additional_property")]
    assert [(e.path, e.keyword) for e in result.errors] == [
        ("$.include_legs", "type"), ("$.reference", "pattern")]
    assert args["urgent"] is True  # input not mutated


def test_repair_arguments_returns_repaired_and_remaining_errors(examples_dir: Path) -> None:
    repaired, errors = repair_arguments({"reference": "PMT-771"}, _payments_schema(examples_dir))
    assert repaired == {"reference": "PMT-771", "include_legs": False}
    assert errors == []


SCALARS = {
    "type": "object",
    "properties": {
        "i": {"type": "integer"}, "n": {"type": "number"}, "b": {"type": "boolean"},
        "z": {"type": "null"}, "s": {"type": "string"}, "either": {"type": ["integer", "string"]},
    },
}


def test_strings_that_spell_the_declared_scalar_are_coerced_and_recorded() -> None:
    result = repair({"i": "42", "n": "-2.5e3", "b": "false", "z": "null"}, SCALARS)
    assert result.arguments == {"i": 42, "n": -2500.0, "b": False, "z": None}
    assert [(r.path, r.rule, r.before, r.after) for r in result.repairs] == [
        ("$.b", "coerce.string_to_boolean", "false", False),
        ("$.i", "coerce.string_to_integer", "42", 42),
        ("$.n", "coerce.string_to_number", "-2.5e3", -2500.0),
        ("$.z", "coerce.string_to_null", "null", None),
    ]


def test_near_misses_are_never_guessed() -> None:
    result = repair({"i": "00713", "b": "yes", "n": "1,5", "s": "42", "either": "42"}, SCALARS)
    assert result.arguments == {"i": "00713", "b": "yes", "n": "1,5", "s": "42", "either": "42"}
    assert result.repairs == ()
    assert sorted(e.path for e in result.errors) == ["$.b", "$.i", "$.n"]


def test_integral_float_becomes_int_but_fractional_float_stays() -> None:
    result = repair({"i": 5.0}, SCALARS)
    assert result.arguments == {"i": 5} and type(result.arguments["i"]) is int
    assert [r.rule for r in result.repairs] == ["coerce.integral_float"]
    kept = repair({"i": 5.5}, SCALARS)
    assert kept.arguments == {"i": 5.5} and [e.keyword for e in kept.errors] == ["type"]


def test_pattern_enum_and_format_are_never_repaired() -> None:
    schema = {"type": "object", "properties": {
        "p": {"type": "string", "pattern": "^A"}, "e": {"enum": ["x", "y"]},
        "f": {"type": "string", "format": "email"}}}
    result = repair({"p": "a", "e": "X", "f": "nope"}, schema, assert_formats=True)
    assert result.repairs == ()
    assert [e.keyword for e in result.errors] == ["enum", "format", "pattern"]


def test_defaults_fill_nested_objects_and_arrays_through_refs() -> None:
    schema = {
        "$defs": {"leg": {"type": "object", "properties": {
            "n": {"type": "integer"}, "kind": {"type": "string", "default": "debit"}},
            "additionalProperties": False}},
        "type": "object",
        "properties": {"legs": {"type": "array", "items": {"$ref": "#/$defs/leg"}},
                       "opts": {"type": "object", "default": {},
                                "properties": {"depth": {"type": "integer", "default": "3"}}}},
    }
    result = repair({"legs": [{"n": "1", "x": 0}, {"n": 2.0}]}, schema)
    assert result.arguments == {
        "legs": [{"n": 1, "kind": "debit"}, {"n": 2, "kind": "debit"}],
        "opts": {"depth": 3},
    }
    assert result.errors == ()
    assert {r.rule for r in result.repairs} == set(RULES) - {
        "coerce.string_to_number", "coerce.string_to_boolean", "coerce.string_to_null"}


def test_pattern_properties_are_not_dropped() -> None:
    schema = {"type": "object", "patternProperties": {"^x-": {}}, "additionalProperties": False}
    result = repair({"x-a": 1, "b": 2}, schema)
    assert result.arguments == {"x-a": 1}


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=False,
                                                                          allow_infinity=False)
    | st.sampled_from(["42", "true", "false", "null", "00713", "yes", "-1.5", "x"]),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(["a", "b", "c", "i", "n", "legs"]), children, max_size=4),
    max_leaves=12,
)

_REPAIR_SCHEMA = {
    "type": "object",
    "properties": {
        "i": {"type": "integer", "default": "7"},
        "n": {"type": "number"},
        "a": {"type": "boolean", "default": False},
        "b": {"type": ["null", "integer"]},
        "legs": {"type": "array", "items": {"type": "object", "properties": {
            "i": {"type": "integer"}, "c": {"type": "string", "default": "x"}},
            "additionalProperties": False}},
    },
    "additionalProperties": False,
}


@settings(max_examples=300, derandomize=True)
@given(st.dictionaries(st.sampled_from(["a", "b", "c", "i", "n", "legs"]), _json, max_size=6))
def test_repair_is_idempotent(arguments: dict[str, Any]) -> None:
    once = repair(arguments, _REPAIR_SCHEMA)
    twice = repair(once.arguments, _REPAIR_SCHEMA)
    assert twice.arguments == once.arguments
    assert twice.repairs == ()
    assert twice.errors == once.errors


def test_strings_with_trailing_newlines_are_not_coerced() -> None:
    result = repair({"i": "42\n", "b": "true\n"}, SCALARS)
    assert result.repairs == ()


def test_integer_strings_beyond_the_digit_limit_are_left_alone_not_a_crash() -> None:
    huge = "9" * 5000
    result = repair({"i": huge}, SCALARS)
    assert result.arguments == {"i": huge}
    assert result.repairs == ()
    assert [e.keyword for e in result.errors] == ["type"]


_SCALAR_TYPES = st.sampled_from(["integer", "number", "boolean", "null", "string"])
_DEFAULTS = st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(
    ["3", "true", "null", "x", "-2.5", "00713"]) | st.just(4.0)


def _leaf() -> st.SearchStrategy[dict[str, Any]]:
    typed = st.builds(
        lambda t, d: {"type": t, **({"default": d[0]} if d else {})},
        _SCALAR_TYPES | st.lists(_SCALAR_TYPES, min_size=1, max_size=2, unique=True),
        st.lists(_DEFAULTS, max_size=1))
    return typed | st.just({"$ref": "#/$defs/n"}) | st.just({})


def _schema(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    names = st.sampled_from(["a", "b", "i", "n", "x-y"])
    obj = st.builds(
        lambda props, closed, pattern, default: {
            "type": "object", "properties": props,
            **({"additionalProperties": False} if closed else {}),
            **({"patternProperties": {"^x-": {"type": "integer"}}} if pattern else {}),
            **({"default": {}} if default else {})},
        st.dictionaries(names, children, max_size=4), st.booleans(), st.booleans(), st.booleans())
    arr = st.builds(lambda items: {"type": "array", "items": items}, children)
    return obj | arr


_SCHEMAS = st.recursive(_leaf(), _schema, max_leaves=8).map(
    lambda s: {**s, "$defs": {"n": {"type": "integer", "default": "7"}}} if "type" in s and
    s["type"] == "object" else {"type": "object", "properties": {"v": s},
                                "$defs": {"n": {"type": "integer", "default": "7"}}})


@settings(max_examples=300, derandomize=True)
@given(_SCHEMAS, st.dictionaries(st.sampled_from(["a", "b", "i", "n", "x-y", "v", "z"]), _json,
                                 max_size=6))
def test_repair_is_idempotent_for_generated_schemas(schema: dict[str, Any],
                                                    arguments: dict[str, Any]) -> None:
    once = repair(arguments, schema)
    twice = repair(once.arguments, schema)
    assert twice.arguments == once.arguments
    assert twice.repairs == ()
    assert twice.errors == once.errors


def test_a_null_default_is_never_filled_so_no_explicit_null_is_sent() -> None:
    schema = {"type": "object", "properties": {
        "query": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "limit": {"type": "integer", "default": 10}}}
    result = repair({}, schema)
    assert result.arguments == {"limit": 10}
    assert [r.to_dict() for r in result.repairs] == [
        {"path": "$.limit", "rule": "fill.default", "after": 10}]


def test_a_record_leaves_out_the_absent_side_of_a_fill_or_a_drop() -> None:
    schema = {"type": "object", "additionalProperties": False,
              "properties": {"a": {"type": "null", "default": None}}}
    result = repair({"a": None, "b": None}, schema)
    assert [r.to_dict() for r in result.repairs] == [
        {"path": "$.b", "rule": "drop.additional_property", "before": None}]
