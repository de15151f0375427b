"""Validation and repair on inputs a fuzzing pass found (contracts/validate.py, contracts/repair.py).

Validation: the strict-integer policy under property names that spell data keywords, schemas that
are not JSON or nest too deeply (SchemaError, never RecursionError/UnicodeEncodeError), non-finite
floats, and the errors of instances nested past jsonschema-rs's limit. Repair: references resolved
exactly (anchors, $dynamicRef, percent-encoded pointers) or not at all, and default fills that
never add an error.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolkeeper.contracts.canonical import loads_json
from toolkeeper.contracts.repair import repair
from toolkeeper.contracts.validate import compile_schema
from toolkeeper.errors import SchemaError

Schema = dict[str, Any]


def _pairs(schema: Schema, instance: Any) -> list[tuple[str, str]]:
    compiled = compile_schema(schema)
    issues = compiled.errors(instance)
    assert compiled.is_valid(instance) == (issues == [])
    assert issues == sorted(issues)
    return [(i.path, i.keyword) for i in issues]


def _nest(depth: int, leaf: Any, key: str = "a") -> Any:
    value = leaf
    for _ in range(depth):
        value = {key: value}
    return value


# ---------------------------------------------------------------- strict integers, by position


@pytest.mark.parametrize("name", ["const", "enum", "default", "examples", "dependentRequired",
                                  "properties", "type", "minimum"])
def test_integer_rejects_floats_under_any_property_name(name: str) -> None:
    schema = {"type": "object", "properties": {name: {"type": "integer"}}}
    assert _pairs(schema, {name: 5.0}) == [(f"$.{name}", "type")]
    assert _pairs(schema, {name: 5}) == []


def test_integer_rejects_floats_in_a_definition_named_like_a_data_keyword() -> None:
    schema = {"type": "object", "$defs": {"enum": {"type": "integer"}},
              "properties": {"n": {"$ref": "#/$defs/enum"}}}
    assert _pairs(schema, {"n": 5.0}) == [("$.n", "type")]


def test_a_const_that_looks_like_a_schema_is_compared_as_data() -> None:
    schema = {"type": "object", "properties": {"c": {"const": {"type": "integer", "minimum": 1}}}}
    assert _pairs(schema, {"c": {"type": "integer", "minimum": 1}}) == []
    assert _pairs(schema, {"c": 5}) == [("$.c", "const")]


@pytest.mark.parametrize("name", ["type", "minimum"])
def test_dependent_required_names_that_spell_keywords_stay_names(name: str) -> None:
    schema = {"type": "object", "dependentRequired": {name: ["b"]}}
    assert _pairs(schema, {name: 1}) == [("$.b", "required")]
    assert _pairs(schema, {name: 1, "b": 2}) == []


# ---------------------------------------------------------------- schemas that are not JSON


def _deep_schema(levels: int) -> Schema:
    text = '{"type":"object","properties":{"a":' * levels + '{"type":"integer"}' + "}}" * levels
    schema: Schema = loads_json(text)
    return schema


@pytest.mark.parametrize("levels", [130, 300, 450])
def test_a_schema_nested_past_the_library_limit_is_a_schema_error(levels: int) -> None:
    with pytest.raises(SchemaError) as caught:
        compile_schema(_deep_schema(levels))
    assert caught.value.code == "schema.invalid"


def test_a_schema_nested_beyond_the_interpreter_stack_is_a_schema_error() -> None:
    schema: Any = {}
    for _ in range(5000):
        schema = {"not": schema}
    with pytest.raises(SchemaError) as caught:
        compile_schema(schema)
    assert caught.value.code == "schema.invalid"


def test_a_schema_just_inside_the_library_limit_compiles_and_validates() -> None:
    assert _pairs(_deep_schema(120), _nest(120, 5.0)) == [("$" + ".a" * 120, "type")]


@pytest.mark.parametrize("schema", [
    {"type": "string", "pattern": "\ud800"},
    {"type": "object", "properties": {"\udfff": {}}},
    {"enum": [object()]},
    {"type": "object", "properties": {1: {}}},
], ids=["surrogate-value", "surrogate-key", "object", "int-key"])
def test_a_schema_that_is_not_json_is_a_schema_error(schema: Any) -> None:
    with pytest.raises(SchemaError) as caught:
        compile_schema(schema)
    assert caught.value.code == "schema.invalid"


# ---------------------------------------------------------------- non-finite floats


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan], ids=["inf", "-inf", "nan"])
@pytest.mark.parametrize("declared", [
    {"maximum": 5}, {"minimum": 5}, {"exclusiveMaximum": 5}, {"multipleOf": 2},
    {"type": "number"}, {"type": "integer"}, {"type": ["number", "null"], "maximum": 5},
], ids=lambda d: "-".join(sorted(d)))
def test_a_non_finite_float_is_one_type_error_wherever_numbers_are_checked(
        value: float, declared: Schema) -> None:
    schema = {"type": "object", "properties": {"a": declared}}
    assert _pairs(schema, {"a": value}) == [("$.a", "type")]
    message = compile_schema(schema).errors({"a": value})[0].message
    assert message == compile_schema(schema).errors({"a": math.inf})[0].message


def test_finite_floats_still_meet_numeric_bounds_without_a_declared_type() -> None:
    schema = {"type": "object", "properties": {"a": {"maximum": 5}}}
    assert _pairs(schema, {"a": 4.5}) == []
    assert _pairs(schema, {"a": 5.5}) == [("$.a", "maximum")]
    assert _pairs(schema, {"a": "text"}) == []


# ---------------------------------------------------------------- deeply nested instances


def test_a_deep_instance_lists_its_shallow_errors_exactly() -> None:
    schema = {"type": "object", "required": ["b"],
              "properties": {"a": {"type": "string"}, "e": {"enum": ["x"]}}}
    instance = {**_nest(300, 1), "e": "y"}
    assert _pairs(schema, instance) == [("$.a", "type"), ("$.b", "required"), ("$.e", "enum")]


def test_a_deep_array_instance_lists_the_type_error() -> None:
    schema = {"type": "array", "items": {"type": "integer"}}
    instance: Any = 1
    for _ in range(300):
        instance = [instance]
    assert _pairs(schema, instance) == [("$[0]", "type")]


def test_a_deep_instance_whose_error_cannot_be_listed_gets_one_depth_error() -> None:
    pairs = _pairs({"const": 1}, _nest(300, 1))
    assert pairs == [("$" + ".a" * 128, "depth")]


def test_errors_below_the_cut_of_a_recursive_schema_end_in_one_depth_error() -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["x"]}
    pairs = _pairs(schema, _nest(300, {}))
    assert [p for p in pairs if p[1] == "depth"] == [("$" + ".a" * 128, "depth")]
    assert ("$.x", "required") in pairs and ("$" + ".a" * 127 + ".x", "required") in pairs
    assert len(pairs) == 129


def test_a_deep_valid_instance_has_no_errors() -> None:
    assert _pairs({"type": "object"}, _nest(2000, 1)) == []


# ---------------------------------------------------------------- repair: references


def test_repair_follows_an_anchor_to_its_schema() -> None:
    schema = {"type": "object", "properties": {"p": {"$ref": "#leg"}},
              "$defs": {"leg": {"$anchor": "leg", "type": "object",
                                "properties": {"n": {"type": "integer"},
                                               "k": {"type": "string", "default": "x"}},
                                "additionalProperties": False}}}
    result = repair({"p": {"n": "1", "z": 0}}, schema)
    assert result.arguments == {"p": {"n": 1, "k": "x"}}
    assert [(r.path, r.rule) for r in result.repairs] == [
        ("$.p.k", "fill.default"), ("$.p.n", "coerce.string_to_integer"),
        ("$.p.z", "drop.additional_property")]
    assert result.errors == ()


@pytest.mark.parametrize("ref", [{"$dynamicRef": "#n"}, {"$ref": "#n"}])
def test_repair_follows_a_dynamic_anchor_in_a_single_resource_document(ref: Schema) -> None:
    schema = {"type": "object", "properties": {"p": ref},
              "$defs": {"n": {"$dynamicAnchor": "n", "type": "integer"}}}
    result = repair({"p": "7"}, schema)
    assert result.arguments == {"p": 7}
    assert result.errors == ()


@pytest.mark.parametrize("ref", ["#/$defs/a%20b", "#/$defs/list/prefixItems/0"])
def test_repair_follows_percent_encoded_pointers_and_array_indexes(ref: str) -> None:
    schema = {"type": "object", "properties": {"p": {"$ref": ref}},
              "$defs": {"a b": {"type": "integer"},
                        "list": {"type": "array", "prefixItems": [{"type": "integer"}]}}}
    assert repair({"p": "3"}, schema).arguments == {"p": 3}


_UNRESOLVED: dict[str, Schema] = {
    "anchor defined twice": {"$defs": {"a": {"$anchor": "x", "type": "integer"},
                                       "b": {"$anchor": "x", "type": "object"}}},
    "document with a nested resource": {"$defs": {
        "x": {"type": "integer"},
        "inner": {"$id": "https://example.com/inner", "type": "object"}}},
}


@pytest.mark.parametrize("case", sorted(_UNRESOLVED))
def test_repair_leaves_a_value_under_an_inexact_reference_alone(case: str) -> None:
    target = {"anchor defined twice": "#x",
              "document with a nested resource": "#/$defs/x"}[case]
    schema = {"type": "object", **_UNRESOLVED[case],
              "properties": {"p": {"$ref": target}, "q": {"type": "integer"},
                             "d": {"type": "integer", "default": 1}}}
    result = repair({"p": "1", "q": "2"}, schema)
    assert result.arguments == {"p": "1", "q": 2, "d": 1}
    assert [r.path for r in result.repairs] == ["$.d", "$.q"]


def test_repair_refuses_a_schema_whose_references_loop_without_descending() -> None:
    schema = {"type": "object", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
              "properties": {"p": {"$ref": "#/$defs/a"}}}
    with pytest.raises(SchemaError) as caught:
        repair({"p": "1"}, schema)
    assert (caught.value.code, caught.value.path) == ("schema.ref_cycle", '$["$defs"].b["$ref"]')


def test_repair_leaves_everything_below_an_unresolved_reference_alone() -> None:
    schema = {"type": "object", "$defs": {"a": {"$anchor": "x", "type": "object"},
                                          "b": {"$anchor": "x", "type": "object"}},
              "properties": {"p": {"$ref": "#x", "properties": {"n": {"type": "integer"}},
                                   "additionalProperties": False}}}
    result = repair({"p": {"n": "1", "z": 0}}, schema)
    assert result.arguments == {"p": {"n": "1", "z": 0}}
    assert result.repairs == ()


# ---------------------------------------------------------------- repair: default fills


def test_a_default_that_fixes_a_missing_required_property_is_filled() -> None:
    schema = {"type": "object", "required": ["a"], "maxProperties": 2,
              "properties": {"a": {"type": "integer", "default": 1}}}
    result = repair({"b": 2}, schema)
    assert result.arguments == {"a": 1, "b": 2}
    assert result.errors == ()


def test_only_the_fills_that_fit_a_property_count_are_applied_in_path_order() -> None:
    schema = {"type": "object", "maxProperties": 2, "properties": {
        name: {"type": "integer", "default": 0} for name in ("c", "a", "b")}}
    result = repair({}, schema)
    assert result.arguments == {"a": 0, "b": 0}
    assert [(r.path, r.rule) for r in result.repairs] == [("$.a", "fill.default"),
                                                          ("$.b", "fill.default")]
    assert repair(result.arguments, schema).repairs == ()


def test_a_fill_rejected_alone_is_applied_once_a_later_fill_makes_it_fit() -> None:
    schema = {"type": "object", "dependentRequired": {"a": ["b"]}, "properties": {
        "a": {"type": "integer", "default": 1}, "b": {"type": "integer", "default": 2}}}
    result = repair({}, schema)
    assert result.arguments == {"a": 1, "b": 2}
    assert [r.path for r in result.repairs] == ["$.a", "$.b"]


def test_on_invalid_arguments_a_fill_that_adds_an_error_is_skipped_and_others_applied() -> None:
    schema = {"type": "object", "required": ["z"],
              "not": {"required": ["a", "b"]},
              "properties": {"a": {"type": "integer", "default": 1},
                             "c": {"type": "string", "default": "x"},
                             "b": {"type": "integer"}, "z": {"type": "integer"}}}
    result = repair({"b": "2"}, schema)
    assert result.arguments == {"b": 2, "c": "x"}
    assert [(e.path, e.keyword) for e in result.errors] == [("$.z", "required")]
    assert [r.path for r in result.repairs] == ["$.b", "$.c"]


def test_a_default_object_is_filled_whole_with_its_own_defaults_or_not_at_all() -> None:
    schema = {"type": "object", "maxProperties": 1, "properties": {
        "x": {"type": "integer"},
        "o": {"type": "object", "default": {}, "properties": {
            "d": {"type": "integer", "default": "3"}}}}}
    assert repair({}, schema).arguments == {"o": {"d": 3}}
    kept = repair({"x": 1}, schema)
    assert kept.arguments == {"x": 1} and kept.repairs == () and kept.errors == ()


_CONSTRAINTS = st.sampled_from([
    {}, {"maxProperties": 1}, {"maxProperties": 2}, {"minProperties": 2},
    {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
    {"anyOf": [{"required": ["a"]}, {"required": ["c"]}]},
    {"not": {"required": ["a", "b"]}}, {"dependentRequired": {"a": ["b"], "c": ["a"]}},
    {"if": {"required": ["a"]}, "then": {"required": ["c"]}, "else": {"maxProperties": 1}},
    {"required": ["c"]}, {"additionalProperties": False},
])
_DEFAULTS = st.dictionaries(st.sampled_from(["a", "b", "c"]),
                            st.sampled_from([0, 1, "2", "x", 4.0, {}]), max_size=3)
_ARGUMENTS = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]),
                             st.sampled_from([0, 1, "2", "x", 4.0, None]), max_size=3)


@settings(max_examples=200, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(constraints=st.lists(_CONSTRAINTS, min_size=1, max_size=2), defaults=_DEFAULTS,
       arguments=_ARGUMENTS, anchored=st.booleans())
def test_repair_never_adds_errors_to_valid_arguments_and_is_idempotent(
        constraints: list[Schema], defaults: dict[str, Any], arguments: dict[str, Any],
        anchored: bool) -> None:
    props: dict[str, Any] = {
        name: {"type": "integer", **({"default": defaults[name]} if name in defaults else {})}
        for name in ("a", "b", "c")}
    schema: Schema = {"type": "object", "properties": props, "allOf": constraints}
    if anchored:
        schema["$defs"] = {"c": {"$anchor": "c", **props["c"]}}
        props["c"] = {"$ref": "#c"}
    was_valid = compile_schema(schema).is_valid(arguments)
    once = repair(arguments, schema)
    twice = repair(once.arguments, schema)
    assert twice.arguments == once.arguments
    assert twice.repairs == ()
    assert twice.errors == once.errors
    if was_valid:
        assert once.errors == ()
