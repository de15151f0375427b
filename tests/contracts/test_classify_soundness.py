"""Soundness of the change classifier (SPEC 1.4) on the shapes a fuzzing pass found: references
through the root ``$id``, ``$dynamicRef``, format assertion switched under non-monotone keywords,
properties an open object already names, and a ``oneOf`` reached through a recursive reference.
The validator is the oracle: an argument valid before and invalid after makes the verdict MAJOR.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from toolkeeper.contracts.changes import Bump
from toolkeeper.contracts.classify import classify_schemas
from toolkeeper.contracts.classify.walk import compare_documents
from toolkeeper.contracts.validate import compile_schema

Schema = dict[str, Any]


def _breaks(before: Schema, after: Schema, argument: Any) -> bool:
    return compile_schema(before).is_valid(argument) and not compile_schema(after).is_valid(argument)


def _rules(before: Schema, after: Schema, **options: bool) -> list[tuple[str, str]]:
    return [(c.path, c.rule) for c in classify_schemas(before, after, **options).changes]


# ---------------------------------------------------------------- references through the root $id

_NARROWED_AND_WIDENED = [("$.properties.a.type", "input.type.narrowed"),
                         ("$.properties.a.type", "input.type.widened")]


def _with_id(ref: str, target_type: str, root_id: str = "https://example.com/s") -> Schema:
    return {"$id": root_id, "type": "object", "$defs": {"x": {"type": target_type}},
            "properties": {"a": {"$ref": ref}}}


@pytest.mark.parametrize("ref", [
    "HTTPS://EXAMPLE.COM/./s#/$defs/x", "https://example.com/a/../s#/$defs/x", "./s#/$defs/x",
])
def test_a_reference_spelled_as_another_form_of_the_root_id_is_followed(ref: str) -> None:
    before, after = _with_id(ref, "integer"), _with_id(ref, "string")
    assert _breaks(before, after, {"a": 1})
    assert _rules(before, after) == _NARROWED_AND_WIDENED


def test_a_reference_through_the_default_base_uri_is_followed() -> None:
    def schema(target_type: str) -> Schema:
        return {"type": "object", "$defs": {"x": {"type": target_type}},
                "properties": {"a": {"$ref": "json-schema:///#/$defs/x"}}}

    before, after = schema("integer"), schema("string")
    assert _breaks(before, after, {"a": 1})
    assert _rules(before, after) == _NARROWED_AND_WIDENED


def test_a_reference_to_another_path_of_the_root_authority_fails_closed() -> None:
    ref = "https://example.com/other#/$defs/x"
    before, after = _with_id(ref, "integer"), _with_id(ref, "string")
    assert _rules(before, after) == [("$.properties.a[\"$ref\"]", "input.unanalysable")]


def test_a_reference_to_another_host_is_remote_and_equal_ones_are_unchanged() -> None:
    ref = "https://elsewhere.example/s#/$defs/x"
    before, after = _with_id(ref, "integer"), _with_id(ref, "string")
    assert classify_schemas(before, after).bump is Bump.PATCH


# ---------------------------------------------------------------- $dynamicRef


def _dynamic(ref: dict[str, Any], target_type: str, *, twice: bool = False) -> Schema:
    defs: Schema = {"m": {"$dynamicAnchor": "m", "type": target_type}}
    if twice:
        defs["n"] = {"$dynamicAnchor": "m", "type": "integer"}
    return {"type": "object", "$defs": defs, "properties": {"a": ref}}


@pytest.mark.parametrize("ref", [{"$dynamicRef": "#m"}, {"$dynamicRef": "#/$defs/m"},
                                 {"$ref": "#m"}, {"$dynamicRef": "#m", "minimum": 0}])
def test_a_dynamic_reference_or_a_reference_to_a_dynamic_anchor_follows_its_target(
        ref: dict[str, Any]) -> None:
    before, after = _dynamic(ref, "integer"), _dynamic(ref, "string")
    assert _breaks(before, after, {"a": 1})
    assert _rules(before, after) == _NARROWED_AND_WIDENED


def test_a_dynamic_reference_whose_target_only_widens_is_minor() -> None:
    before = _dynamic({"$dynamicRef": "#m"}, "integer")
    after = copy.deepcopy(before)
    after["$defs"]["m"]["type"] = ["integer", "string"]
    assert _rules(before, after) == [("$.properties.a.type", "input.type.widened")]


def test_an_anchor_named_twice_fails_closed_when_anything_changed() -> None:
    before = _dynamic({"$dynamicRef": "#m"}, "integer", twice=True)
    after = _dynamic({"$dynamicRef": "#m"}, "string", twice=True)
    assert _rules(before, after) == [("$.properties.a[\"$dynamicRef\"]", "input.unanalysable")]


# ---------------------------------------------------------------- format assertion switched

_FORMAT_SWITCHED: dict[str, tuple[Schema, list[tuple[str, str]], list[tuple[str, str]]]] = {
    # schema, changes when assertion is turned on, changes when it is turned off
    "dependentSchemas": (
        {"type": "object", "dependentSchemas": {"a": {"properties": {"b": {"format": "email"}}}}},
        [("$.dependentSchemas.a.properties.b.format", "input.format.added")],
        [("$.dependentSchemas.a.properties.b.format", "input.format.removed")]),
    "if condition": (
        {"if": {"format": "email"}, "then": {"type": "string"}},
        [("$.if", "input.unanalysable")], [("$.if", "input.unanalysable")]),
    "contains under maxContains": (
        {"type": "array", "contains": {"format": "email"}, "maxContains": 2},
        [("$.contains", "input.unanalysable")], [("$.contains", "input.unanalysable")]),
    "tuple items": (
        {"type": "array", "items": [{"format": "email"}]},
        [("$.items", "input.unanalysable")], [("$.items", "input.unanalysable")]),
    "a remote reference": (
        {"type": "object", "properties": {"a": {"$ref": "https://elsewhere.example/f.json"}}},
        [("$.properties.a[\"$ref\"]", "input.unanalysable")],
        [("$.properties.a[\"$ref\"]", "input.unanalysable")]),
}


@pytest.mark.parametrize("place", sorted(_FORMAT_SWITCHED))
def test_switching_format_assertion_reports_formats_under_non_monotone_keywords(
        place: str) -> None:
    schema, turned_on, turned_off = _FORMAT_SWITCHED[place]
    on = classify_schemas(schema, copy.deepcopy(schema), assert_formats=True)
    assert on.bump is Bump.PATCH  # the flag alone, not switched, changes nothing
    def changes(flags: tuple[bool, bool]) -> list[tuple[str, str]]:
        return [(c.path, c.rule) for c in sorted(compare_documents(
            schema, copy.deepcopy(schema), direction="input", path="$", assert_formats=flags))]

    assert changes((False, True)) == turned_on
    assert changes((True, False)) == turned_off


# ---------------------------------------------------------------- names an open object already uses

_NAMING: dict[str, tuple[Schema, Any]] = {
    "required in an allOf conjunct": (
        {"type": "object", "allOf": [{"required": ["b"]}]}, {"b": "s"}),
    "required in an if condition": (
        {"type": "object", "if": {"required": ["b"]}, "then": {"minProperties": 1}}, {"b": "s"}),
    "the target side of dependentRequired": (
        {"type": "object", "dependentRequired": {"a": ["b"]}}, {"a": 1, "b": "s"}),
    "a propertyNames const": ({"type": "object", "propertyNames": {"const": "b"}}, {"b": "s"}),
    "a propertyNames enum behind a reference": (
        {"type": "object", "$defs": {"n": {"enum": ["a", "b"]}},
         "propertyNames": {"$ref": "#/$defs/n"}}, {"b": "s"}),
}


@pytest.mark.parametrize("place", sorted(_NAMING))
def test_typing_a_property_an_open_object_names_is_a_redeclaration(place: str) -> None:
    before, argument = _NAMING[place]
    after = {**copy.deepcopy(before), "properties": {"b": {"type": "integer"}}}
    assert _breaks(before, after, argument)
    assert _rules(before, after) == [("$.properties.b", "input.property.redeclared")]


def test_declaring_a_named_property_that_accepts_anything_is_minor() -> None:
    before: Schema = {"type": "object", "required": ["b"]}
    after = {**before, "properties": {"b": {"description": "the b"}}}
    assert _rules(before, after) == [("$.properties.b", "input.property.added")]


def test_typing_a_property_nothing_names_stays_an_optional_property_added() -> None:
    before: Schema = {"type": "object", "required": ["a"], "propertyNames": {"maxLength": 3}}
    after = {**before, "properties": {"b": {"type": "integer"}}}
    assert _rules(before, after) == [("$.properties.b", "input.property.added")]


# ---------------------------------------------------------------- a oneOf inside a recursive schema


def _recursive_one_of(k_type: Any, *, nested: bool = False, disjoint: bool = False) -> Schema:
    one_of: list[Any] = [{"properties": {"n": {"$ref": "#"}}, "required": ["n"]},
                         {"required": ["m"]}]
    if disjoint:  # a required discriminator tells the branches apart
        for tag, branch in enumerate(one_of):
            branch["properties"] = {**branch.get("properties", {}), "t": {"const": tag}}
            branch["required"] = [*branch["required"], "t"]
    if nested:
        one_of = [{"oneOf": one_of}, {"required": ["z"]}]
    return {"type": "object", "properties": {"k": {"type": k_type}}, "oneOf": one_of}


def test_a_widening_reached_through_a_recursive_reference_in_a_nested_one_of_is_major() -> None:
    before = _recursive_one_of("integer", nested=True)
    after = _recursive_one_of(["integer", "string"], nested=True)
    assert _breaks(before, after, {"n": {"k": "s", "m": 1}, "m": 1})
    assert _rules(before, after) == [
        ("$.oneOf[0].oneOf", "input.branch.exclusivity_unproven"),
        ("$.properties.k.type", "input.type.widened")]


def test_a_widening_reached_through_a_recursive_reference_in_a_disjoint_one_of_is_minor() -> None:
    before = _recursive_one_of("integer", disjoint=True)
    after = _recursive_one_of(["integer", "string"], disjoint=True)
    assert _rules(before, after) == [("$.properties.k.type", "input.type.widened")]


def test_a_recursive_schema_with_a_one_of_and_no_change_is_patch() -> None:
    before = _recursive_one_of("integer")
    assert classify_schemas(before, copy.deepcopy(before)).bump is Bump.PATCH
