"""The contracts engine (validation, repair, change classification) on edge-case schemas and
instances.

Each test is a minimal reproduction of one defect a fuzzing pass found, and failed before its
fix (a schema holding NaN or an infinity, written as null by the encoder, came after the pass:
the same cause as the CLI's NaN defect, from the Python API). Classifier cases use the
validator as the oracle: an argument set valid under the old input schema and invalid under the
new one must make the verdict MAJOR. The passing property test at the end is a bounded,
derandomized soundness check over keywords the generated family of test_classify_family.py does
not draw (dependent*, contains/min/maxContains, prefixItems, uniqueItems, if/then/else).
"""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolkeeper.contracts.canonical import loads_json
from toolkeeper.contracts.changes import Bump
from toolkeeper.contracts.classify import classify, classify_schemas
from toolkeeper.contracts.repair import repair
from toolkeeper.contracts.spec import ToolSpec, spec_from_mapping
from toolkeeper.contracts.validate import compile_schema
from toolkeeper.errors import SchemaError

Schema = dict[str, Any]


def _breaks(before: Schema, after: Schema, argument: Any) -> bool:
    """The oracle: valid before, invalid after."""
    return compile_schema(before).is_valid(argument) and not compile_schema(after).is_valid(argument)


def _contract(schema: Schema, *, assert_formats: bool, version: str) -> ToolSpec:
    return spec_from_mapping({
        "name": "fuzz.tool", "version": version, "title": "T", "description": "D",
        "dataClassification": "public", "sideEffect": "read", "inputSchema": schema,
        "assertFormats": assert_formats})


# ---------------------------------------------------------------- change classification


def test_a_widening_that_reaches_a_one_of_through_a_recursive_reference_is_major() -> None:
    def schema(k_type: Any) -> Schema:
        return {"type": "object", "properties": {"k": {"type": k_type}},
                "oneOf": [{"properties": {"n": {"$ref": "#"}}, "required": ["n"]},
                          {"required": ["m"]}]}

    before, after = schema("integer"), schema(["integer", "string"])
    argument = {"n": {"k": "s", "m": 1}, "m": 1}
    assert _breaks(before, after, argument)
    assert classify_schemas(before, after).bump is Bump.MAJOR


def test_a_changed_dynamic_ref_target_is_not_patch() -> None:
    def schema(target_type: str) -> Schema:
        return {"type": "object",
                "$defs": {"m": {"$dynamicAnchor": "m", "type": target_type}},
                "properties": {"a": {"$dynamicRef": "#m"}}}

    before, after = schema("integer"), schema("string")
    assert _breaks(before, after, {"a": 1})
    verdict = classify_schemas(before, after)
    assert verdict.bump is Bump.MAJOR
    assert verdict.changes != ()


@pytest.mark.parametrize("ref", ["https://example.com/s#/$defs/x", "s#/$defs/x"])
def test_a_reference_through_the_root_id_follows_its_target(ref: str) -> None:
    def schema(target_type: str) -> Schema:
        return {"$id": "https://example.com/s", "type": "object",
                "$defs": {"x": {"type": target_type}}, "properties": {"a": {"$ref": ref}}}

    before, after = schema("integer"), schema("string")
    assert _breaks(before, after, {"a": 1})
    assert classify_schemas(before, after).bump is Bump.MAJOR


_FORMAT_PLACES: dict[str, tuple[Schema, Any]] = {
    "if condition": ({"type": "object", "properties": {"e": {
        "if": {"not": {"format": "email"}}, "then": {"type": "integer"}}}}, {"e": "x"}),
    "dependentSchemas": ({"type": "object", "dependentSchemas": {
        "a": {"properties": {"b": {"format": "email"}}}}}, {"a": 1, "b": "x"}),
    "contains under maxContains": ({"type": "object", "properties": {"l": {
        "type": "array", "contains": {"format": "email"}, "maxContains": 5}}}, {"l": ["x"]}),
}


@pytest.mark.parametrize("place", sorted(_FORMAT_PLACES))
def test_turning_format_assertion_on_is_major_wherever_the_format_sits(place: str) -> None:
    schema, argument = _FORMAT_PLACES[place]
    assert compile_schema(schema).is_valid(argument)
    assert not compile_schema(schema, assert_formats=True).is_valid(argument)
    verdict = classify(_contract(schema, assert_formats=False, version="1.0.0"),
                       _contract(schema, assert_formats=True, version="1.0.1"))
    assert verdict.bump is Bump.MAJOR


_NAMED_ELSEWHERE: dict[str, tuple[Schema, Any]] = {
    "required": ({"type": "object", "required": ["b"]}, {"b": "s"}),
    "dependentRequired": ({"type": "object", "dependentRequired": {"a": ["b"]}},
                          {"a": 1, "b": "s"}),
    "dependentSchemas": ({"type": "object", "dependentSchemas": {"b": {}}}, {"b": "s"}),
    "propertyNames enum": ({"type": "object", "propertyNames": {"enum": ["b"]}}, {"b": "s"}),
}


@pytest.mark.parametrize("keyword", sorted(_NAMED_ELSEWHERE))
def test_typing_a_property_the_schema_already_names_is_major(keyword: str) -> None:
    before, argument = _NAMED_ELSEWHERE[keyword]
    after = {**copy.deepcopy(before), "properties": {"b": {"type": "integer"}}}
    assert _breaks(before, after, argument)
    verdict = classify_schemas(before, after)
    assert verdict.bump is Bump.MAJOR, [c.rule for c in verdict.changes]


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize("name", ["const", "default", "enum", "examples"])
def test_integer_rejects_floats_for_a_property_named_like_a_data_keyword(name: str) -> None:
    schema = {"type": "object", "properties": {name: {"type": "integer"}}}
    issues = compile_schema(schema).errors({name: 5.0})
    assert [(i.path, i.keyword) for i in issues] == [(f"$.{name}", "type")]


def _nested_schema(depth: int) -> Schema:
    text = '{"type":"object","properties":{"a":' * depth + '{"type":"integer"}' + "}}" * depth
    schema: Schema = loads_json(text)  # the JSON decoder accepts this depth
    return schema


def test_a_deeply_nested_schema_is_a_schema_error_not_a_recursion_error() -> None:
    with pytest.raises(SchemaError) as caught:
        compile_schema(_nested_schema(300))
    assert caught.value.code == "schema.invalid"


def test_errors_for_a_deeply_nested_invalid_instance_list_the_error() -> None:
    compiled = compile_schema({"type": "object", "properties": {"a": {"type": "string"}}})
    instance = loads_json('{"a":' * 300 + "1" + "}" * 300)
    assert not compiled.is_valid(instance)
    assert [(i.path, i.keyword) for i in compiled.errors(instance)] == [("$.a", "type")]


def test_an_infinite_float_does_not_satisfy_a_maximum() -> None:
    compiled = compile_schema({"type": "object", "properties": {"a": {"maximum": 5}}})
    assert not compiled.is_valid({"a": float("inf")})


def test_a_schema_holding_a_lone_surrogate_is_a_schema_error() -> None:
    with pytest.raises(SchemaError) as caught:
        compile_schema({"type": "string", "pattern": "\ud800"})
    assert caught.value.code == "schema.invalid"


# ---------------------------------------------------------------- repair


def test_repair_resolves_an_anchor_reference_to_its_anchor_not_the_root() -> None:
    schema = {"type": "object",
              "properties": {"p": {"$ref": "#node"}, "n": {"type": "integer", "default": 1}},
              "$defs": {"node": {"$anchor": "node", "type": "object",
                                 "additionalProperties": False}}}
    arguments = {"p": {}, "n": 2}
    assert compile_schema(schema).errors(arguments) == []
    result = repair(arguments, schema)
    assert result.arguments == arguments
    assert result.repairs == ()


@pytest.mark.parametrize("constraint", [
    {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
    {"maxProperties": 1},
    {"not": {"required": ["a", "b"]}},
])
def test_filling_defaults_never_turns_valid_arguments_invalid(constraint: Schema) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer", "default": 1},
                                               "b": {"type": "integer"}}, **constraint}
    arguments = {"b": 2}
    assert compile_schema(schema).errors(arguments) == []
    assert repair(arguments, schema).errors == ()


# ---------------------------------------------------------------- a passing property test

_FAST = settings(max_examples=60, derandomize=True, deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
_ITEMS = st.sampled_from([{"type": "integer"}, {"type": "integer", "minimum": 0},
                          {"type": "string"}, {"enum": [1, "a"]}, {}, {"type": "number"}])
_ARRAY_KEYWORDS = st.fixed_dictionaries({}, optional={
    "items": _ITEMS | st.booleans(), "prefixItems": st.lists(_ITEMS, min_size=1, max_size=2),
    "contains": _ITEMS, "minContains": st.integers(0, 2), "maxContains": st.integers(1, 3),
    "uniqueItems": st.booleans(), "minItems": st.integers(0, 2), "maxItems": st.integers(1, 3),
})
_OBJECT_KEYWORDS = st.fixed_dictionaries({}, optional={
    "dependentRequired": st.sampled_from([{"a": ["b"]}, {"b": ["a"]}, {"a": []}]),
    "dependentSchemas": st.sampled_from([{"a": {"required": ["b"]}}, {"b": {"maxProperties": 1}}]),
    "if": st.sampled_from([{"required": ["a"]}, {"properties": {"a": {"const": 1}}}]),
    "then": st.sampled_from([{"required": ["b"]}, {"maxProperties": 2}]),
    "else": st.sampled_from([{"properties": {"b": {"type": "string"}}}, {}]),
})
_ARRAYS = st.lists(st.sampled_from([0, 1, 2, -1, 1.5, "a", "b", None, 1]), max_size=4)
_OBJECTS = st.dictionaries(st.sampled_from(["a", "b"]), st.sampled_from([0, 1, "a", "s", None]),
                           max_size=2)


def _schema(array: Schema, members: Schema) -> Schema:
    return {"type": "object", "properties": {"a": {}, "b": {}, "l": {"type": "array", **array}},
            **members}


@_FAST
@given(data=st.data(), before_array=_ARRAY_KEYWORDS, after_array=_ARRAY_KEYWORDS,
       before_members=_OBJECT_KEYWORDS, after_members=_OBJECT_KEYWORDS)
def test_non_major_verdicts_on_array_and_dependency_keywords_keep_valid_arguments_valid(
        data: st.DataObject, before_array: Schema, after_array: Schema, before_members: Schema,
        after_members: Schema) -> None:
    before = _schema(before_array, before_members)
    after = _schema(after_array, data.draw(st.sampled_from([before_members, after_members])))
    try:
        compile_schema(before)
        compile_schema(after)
    except SchemaError:
        return
    verdict = classify_schemas(before, after)
    assert verdict == classify_schemas(copy.deepcopy(before), copy.deepcopy(after))
    assert [(c.path, c.rule) for c in verdict.changes] == sorted(
        (c.path, c.rule) for c in verdict.changes)
    if verdict.bump is Bump.MAJOR:
        return
    for _ in range(20):
        argument = {**data.draw(_OBJECTS), "l": data.draw(_ARRAYS)}
        assert not _breaks(before, after, argument), (json.dumps(verdict.to_dict()), argument)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("place", ["const", "maximum", "enum", "default"])
def test_a_schema_holding_nan_or_an_infinity_is_a_schema_error_not_a_null(
        value: float, place: str) -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {
        "a": {place: [value] if place == "enum" else value}}}
    with pytest.raises(SchemaError) as info:
        compile_schema(schema)
    assert info.value.code == "schema.invalid"
    assert compile_schema({"type": "object", "properties": {"a": {"const": None}}}).is_valid(
        {"a": None})
