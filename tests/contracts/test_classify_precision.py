"""Precision of the change classifier after today's soundness fixes (SPEC 1.4): a false MAJOR
blocks a legitimate publish, because the registry guard refuses a MINOR bump for it.

The old classifier (fa46714) and the current one were run over the fixture corpus, the example
and demo contracts with edited copies, and a generated family of ordinary edits. Where the
verdict got stricter, the validator (compile_schema) is the oracle: a real break is an argument
valid before and invalid after. The stricter verdicts without one (precision regressions) are
the first tests below; each failed before its fix. The other tests pin the stricter verdicts
that are justified (with their witness) and check that ordinary, provably non-breaking edits to
realistic tool schemas are never MAJOR.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from toolkeeper.contracts.changes import Bump, Verdict
from toolkeeper.contracts.classify import classify, classify_schemas
from toolkeeper.contracts.spec import ToolSpec, spec_from_mapping
from toolkeeper.contracts.validate import compile_schema

Schema = dict[str, Any]
DEMO = Path(__file__).resolve().parents[2] / "src" / "toolkeeper" / "demo"


def _contract(schema: Schema, *, assert_formats: bool) -> ToolSpec:
    return spec_from_mapping({
        "name": "precision.tool", "version": "1.0.0", "title": "T", "description": "D",
        "dataClassification": "public", "sideEffect": "read", "inputSchema": schema,
        "assertFormats": assert_formats})


def _majors(verdict: Verdict) -> list[tuple[str, str]]:
    return [(c.path, c.rule) for c in verdict.changes if c.bump is Bump.MAJOR]


def _breaks(before: Schema, after: Schema, argument: Any, *,
            formats: tuple[bool, bool] = (False, False)) -> bool:
    """The oracle: valid before, invalid after."""
    return (compile_schema(before, assert_formats=formats[0]).is_valid(argument)
            and not compile_schema(after, assert_formats=formats[1]).is_valid(argument))


def _with(schema: Schema, edit: Callable[[Schema], None]) -> Schema:
    out = copy.deepcopy(schema)
    edit(out)
    return out


# ------------------------------------------------ precision regressions (each failed before)

# A recursive schema whose oneOf branches are not provably disjoint (both objects).
_RECURSIVE_ONE_OF: Schema = {
    "type": "object",
    "properties": {
        "label": {"type": "string"},
        "child": {"oneOf": [{"$ref": "#"},
                            {"type": "object", "properties": {"leaf": {"type": "integer"}},
                             "required": ["leaf"]}]},
    },
}
# A realistic one: a filter expression (condition, and, or), recursive through oneOf.
_FILTER: Schema = {
    "type": "object",
    "properties": {"table": {"type": "string"}, "where": {"$ref": "#/$defs/filter"}},
    "required": ["table"],
    "$defs": {
        "filter": {"oneOf": [{"$ref": "#/$defs/cond"}, {"$ref": "#/$defs/and"}]},
        "cond": {"type": "object", "properties": {"field": {"type": "string"},
                                                  "op": {"enum": ["eq", "ne"]}, "value": {}},
                 "required": ["field", "op"], "additionalProperties": False},
        "and": {"type": "object",
                "properties": {"and": {"type": "array", "items": {"$ref": "#/$defs/filter"}}},
                "required": ["and"], "additionalProperties": False},
    },
}


def _describe_label(s: Schema) -> None:
    s["properties"]["label"]["description"] = "what the node is called"


def _describe_field(s: Schema) -> None:
    s["$defs"]["cond"]["properties"]["field"]["description"] = "column name"


@pytest.mark.parametrize(("before", "edit"), [(_RECURSIVE_ONE_OF, _describe_label),
                                               (_FILTER, _describe_field)],
                         ids=["minimal", "filter-expression"])
@pytest.mark.parametrize("output", [False, True], ids=["input", "output"])
def test_a_description_edited_inside_a_recursive_one_of_is_patch(
        before: Schema, edit: Callable[[Schema], None], output: bool) -> None:
    verdict = classify_schemas(before, _with(before, edit), output=output)
    assert verdict.bump is Bump.PATCH, _majors(verdict)


def _dynamic_tree(root_keyword: str) -> Schema:
    extra = {"$id": "https://example.com/tree"} if root_keyword == "$id" else {
        "$schema": "https://json-schema.org/draft/2020-12/schema"}
    return {**extra, "$dynamicAnchor": "node", "type": "object",
            "properties": {"name": {"type": "string"},
                           "children": {"type": "array", "items": {"$dynamicRef": "#node"}}}}


def _describe_items(s: Schema) -> None:
    s["properties"]["children"]["items"]["description"] = "a child node"


@pytest.mark.parametrize("root_keyword", ["$schema", "$id"])
def test_a_description_beside_a_dynamic_ref_to_the_root_is_patch(root_keyword: str) -> None:
    before = _dynamic_tree(root_keyword)
    verdict = classify_schemas(before, _with(before, _describe_items))
    assert verdict.bump is Bump.PATCH, _majors(verdict)


def test_a_description_beside_a_ref_to_a_root_with_an_id_is_patch() -> None:
    before: Schema = {"$id": "https://example.com/tree", "type": "object",
                      "properties": {"name": {"type": "string"},
                                     "children": {"type": "array", "items": {"$ref": "#"}}}}
    after = _with(before, _describe_items)
    verdict = classify_schemas(before, after)
    assert verdict.bump is Bump.PATCH, _majors(verdict)


_FORBIDS: dict[str, Schema] = {
    "not-required": {"type": "object", "properties": {"id": {"type": "string"}},
                     "not": {"required": ["legacy_id"]}},
    "not-anyOf-required": {"type": "object", "properties": {"id": {"type": "string"}},
                           "not": {"anyOf": [{"required": ["legacy_id"]},
                                             {"required": ["secret"]}]}},
}


@pytest.mark.parametrize("name", sorted(_FORBIDS))
def test_declaring_a_property_the_schema_forbids_under_not_is_minor(name: str) -> None:
    before = _FORBIDS[name]
    after = _with(before, lambda s: s["properties"].__setitem__(
        "legacy_id", {"type": "string", "deprecated": True}))
    assert not any(_breaks(before, after, {"legacy_id": v}) for v in (1, "x", None))
    verdict = classify_schemas(before, after)
    assert verdict.bump is Bump.MINOR, _majors(verdict)


# A property literally called "format" (an export format): no format keyword in the condition.
_FORMAT_NAMED_IN_IF: Schema = {
    "type": "object",
    "properties": {"format": {"enum": ["json", "csv"]}, "delimiter": {"type": "string"},
                   "since": {"type": "string", "format": "date"}},
    "if": {"properties": {"format": {"const": "csv"}}, "required": ["format"]},
    "then": {"required": ["delimiter"]},
}
_FORMAT_NAMED_IN_CONTAINS: Schema = {
    "type": "object",
    "properties": {"files": {"type": "array", "maxContains": 3, "contains": {
        "properties": {"format": {"const": "pdf"}}, "required": ["format"]}}},
}
# A vendor annotation keyword holding a format hint: the validator never applies it.
_FORMAT_IN_VENDOR_KEYWORD: Schema = {
    "type": "object",
    "properties": {"to": {"type": "string", "format": "email"},
                   "body": {"type": "string", "x-ui": {"widget": "textarea", "format": "markdown"}}},
    "required": ["to"],
}


@pytest.mark.parametrize("schema", [_FORMAT_NAMED_IN_IF, _FORMAT_NAMED_IN_CONTAINS,
                                    _FORMAT_IN_VENDOR_KEYWORD],
                         ids=["property-named-format-in-if", "property-named-format-in-contains",
                              "format-inside-x-ui"])
def test_turning_format_assertion_off_with_no_format_keyword_in_a_condition_is_not_major(
        schema: Schema) -> None:
    verdict = classify(_contract(schema, assert_formats=True),
                       _contract(schema, assert_formats=False))
    assert verdict.bump is not Bump.MAJOR, _majors(verdict)


# ------------------------------------------------ stricter verdicts that are justified


# Names an object already names but does not declare: callers send them, with any value.
_NAMED: list[tuple[str, Schema, str, Any]] = [
    ("required", {"type": "object", "properties": {"a": {"type": "string"}},
                  "required": ["a", "q"]}, "q", {"a": "x", "q": 5}),
    ("dependentRequired", {"type": "object", "properties": {"password": {"type": "string"}},
                           "dependentRequired": {"password": ["otp"]}},
     "otp", {"password": "p", "otp": 123}),
    ("propertyNames-enum", {"type": "object", "properties": {"user": {"type": "string"}},
                            "propertyNames": {"enum": ["user", "remember"]}},
     "remember", {"user": "u", "remember": 1}),
    ("dependentSchemas", {"type": "object", "dependentSchemas": {"card": {"required": ["zip"]}}},
     "card", {"card": 4111, "zip": "1"}),
    ("if-condition", {"type": "object", "properties": {"mode": {"enum": ["a"]}},
                      "if": {"required": ["x"]}, "then": {"required": ["mode"]}},
     "x", {"x": 5, "mode": "a"}),
    ("anyOf-required", {"type": "object", "anyOf": [{"required": ["id"]}, {"required": ["slug"]}]},
     "id", {"id": 7}),
]


@pytest.mark.parametrize(("before", "name", "witness"), [c[1:] for c in _NAMED],
                         ids=[c[0] for c in _NAMED])
def test_typing_a_name_callers_already_send_is_major_and_a_witness_breaks(
        before: Schema, name: str, witness: Any) -> None:
    after = _with(before, lambda s: s.setdefault("properties", {}).__setitem__(
        name, {"type": "string"}))
    assert _breaks(before, after, witness)
    assert _majors(classify_schemas(before, after)) == [
        (f"$.properties.{name}", "input.property.redeclared")]
    # Declaring it without constraining its values stays MINOR.
    loose = _with(before, lambda s: s.setdefault("properties", {}).__setitem__(
        name, {"description": "documented"}))
    assert classify_schemas(before, loose).bump is Bump.MINOR


def test_turning_format_assertion_off_under_a_real_format_in_an_if_is_major_and_a_witness_breaks(
) -> None:
    schema: Schema = {"type": "object",
                      "properties": {"contact": {"type": "string"}, "channel": {"type": "string"}},
                      "if": {"properties": {"contact": {"format": "email"}}},
                      "then": {"required": ["channel"]}}
    assert _breaks(schema, schema, {"contact": "not an email"}, formats=(True, False))
    verdict = classify(_contract(schema, assert_formats=True),
                       _contract(schema, assert_formats=False))
    assert ("$.inputSchema.if", "input.unanalysable") in _majors(verdict)


# ------------------------------------------------ ordinary edits are never MAJOR

_TREE: Schema = {  # recursive, its oneOf disjoint by type
    "type": "object", "required": ["root"],
    "properties": {"root": {"$ref": "#/$defs/node"}, "dryRun": {"type": "boolean"}},
    "$defs": {"node": {"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string", "maxLength": 64},
        "value": {"oneOf": [{"type": "string"}, {"type": "number"}, {"$ref": "#/$defs/node"}]},
        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
}
_SHAPES: Schema = {  # recursive, its oneOf discriminated by a const
    "type": "object", "required": ["shape"], "properties": {"shape": {"$ref": "#/$defs/shape"}},
    "$defs": {"shape": {"oneOf": [
        {"type": "object", "required": ["kind", "r"],
         "properties": {"kind": {"const": "circle"}, "r": {"type": "number", "minimum": 0}}},
        {"type": "object", "required": ["kind", "items"],
         "properties": {"kind": {"const": "group"},
                        "items": {"type": "array", "items": {"$ref": "#/$defs/shape"}}}}]}},
}
_SEARCH: Schema = {  # references spelled through the root $id
    "$id": "https://tools.example.com/schemas/search.json", "type": "object", "required": ["q"],
    "properties": {"q": {"$ref": "https://tools.example.com/schemas/search.json#/$defs/query"},
                   "page": {"$ref": "search.json#/$defs/page"},
                   "sort": {"$ref": "#/$defs/sort"}},
    "$defs": {"query": {"type": "string", "minLength": 1, "pattern": "\\S"},
              "page": {"type": "integer", "minimum": 1, "maximum": 100},
              "sort": {"enum": ["relevance", "date"]}},
}
_DYNAMIC_LIST: Schema = {  # $dynamicRef in a document without $id
    "$dynamicAnchor": "item", "type": "object",
    "properties": {"id": {"type": "string"},
                   "tags": {"type": "array", "items": {"$dynamicRef": "#tag"}, "maxItems": 5},
                   "children": {"type": "array", "items": {"$dynamicRef": "#item"}}},
    "$defs": {"tag": {"$dynamicAnchor": "tag", "type": "string", "maxLength": 32}},
}
_LOGIN: Schema = {  # names callers send, declared
    "type": "object", "required": ["user"],
    "properties": {"user": {"type": "string", "minLength": 3}, "password": {"type": "string"},
                   "otp": {"type": "string", "pattern": "^[0-9]{6}$"}},
    "dependentRequired": {"password": ["otp"]},
    "anyOf": [{"required": ["password"]}, {"required": ["otp"]}],
}


def _bases() -> dict[str, Schema]:
    bases = {"tree": _TREE, "shapes": _SHAPES, "search": _SEARCH, "dynamic-list": _DYNAMIC_LIST,
             "login": _LOGIN}
    for path in sorted(DEMO.glob("*.json")):
        bases[path.stem] = json.loads(path.read_text(encoding="utf-8"))["inputSchema"]
    return bases


_MAPS = ("properties", "$defs")
_ONE = ("items",)
_LISTS = ("anyOf", "oneOf", "allOf")


def _nodes(schema: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Schema]]:
    """Schema objects an edit may touch: not under if/not/contains/dependentSchemas, whose
    changes the SPEC makes MAJOR or unanalysable whatever they are."""
    if not isinstance(schema, dict):
        return
    yield path, schema
    for key in _MAPS:
        for name, sub in schema.get(key, {}).items():
            yield from _nodes(sub, (*path, key, name))
    for key in _ONE:
        if key in schema:
            yield from _nodes(schema[key], (*path, key))
    for key in _LISTS:
        for i, sub in enumerate(schema.get(key, [])):
            yield from _nodes(sub, (*path, key, i))


def _add_ref_property(node: Schema, root: Schema) -> None:
    root.setdefault("$defs", {})["zz_address"] = {
        "type": "object", "properties": {"city": {"type": "string"}}}
    node.setdefault("properties", {})["zz_address"] = {"$ref": "#/$defs/zz_address"}


def _loosen_bounds(node: Schema, root: Schema) -> None:
    for key in ("maximum", "maxLength", "maxItems"):
        if key in node:
            node[key] = node[key] * 10 + 1
    for key in ("minimum", "minLength", "minItems"):
        node.pop(key, None)


#: (edit name, applies to this node?, edit(node, root)); each is non-breaking for inputs.
_EDITS: tuple[tuple[str, Callable[[Schema], bool], Callable[[Schema, Schema], None]], ...] = (
    ("describe", lambda n: True, lambda n, r: n.__setitem__("description", "edited")),
    ("title", lambda n: True, lambda n, r: n.__setitem__("title", "A title")),
    ("examples", lambda n: "examples" not in n, lambda n, r: n.__setitem__("examples", ["x"])),
    ("add optional property", lambda n: "properties" in n and n.get("additionalProperties") is not False,
     lambda n, r: n["properties"].__setitem__("zz_new", {"type": "integer", "minimum": 0})),
    ("add optional property through a local $ref",
     lambda n: "properties" in n and n.get("additionalProperties") is not False, _add_ref_property),
    ("open the object", lambda n: n.get("additionalProperties") is False,
     lambda n, r: n.pop("additionalProperties")),
    ("allow null", lambda n: n.get("type") in ("string", "integer", "number", "array", "boolean"),
     lambda n, r: n.__setitem__("type", [n["type"], "null"])),
    ("integer to number", lambda n: n.get("type") == "integer",
     lambda n, r: n.__setitem__("type", "number")),
    ("widen enum", lambda n: isinstance(n.get("enum"), list),
     lambda n, r: n.__setitem__("enum", [*n["enum"], "zz_extra"])),
    ("loosen bounds", lambda n: bool(n.keys() & {"maximum", "maxLength", "maxItems", "minimum",
                                                 "minLength", "minItems"}), _loosen_bounds),
    ("drop pattern", lambda n: "pattern" in n, lambda n, r: n.pop("pattern")),
    ("drop a requirement", lambda n: bool(n.get("required")),
     lambda n, r: n.__setitem__("required", n["required"][:-1])),
    ("add an anyOf branch", lambda n: isinstance(n.get("anyOf"), list),
     lambda n, r: n["anyOf"].append({"required": ["user", "zz_token"]})),
)


def _ordinary_edits() -> Iterator[tuple[str, Schema, Schema]]:
    for base_name, base in _bases().items():
        for path, node in list(_nodes(base)):
            for edit_name, applies, edit in _EDITS:
                if not applies(node):
                    continue
                after = copy.deepcopy(base)
                target = after
                for key in path:
                    target = target[key]
                edit(target, after)
                yield f"{base_name} {'/'.join(map(str, path))}: {edit_name}", base, after
        after = copy.deepcopy(base)
        after.setdefault("$defs", {})["zz_unused"] = {"type": "string", "pattern": "^x"}
        yield f"{base_name}: add unused $defs", base, after
        yield f"{base_name}: reorder", base, {k: base[k] for k in reversed(list(base))}


def test_ordinary_non_breaking_edits_to_realistic_tool_schemas_are_never_major() -> None:
    offenders: list[tuple[str, list[tuple[str, str]]]] = []
    count = 0
    for name, before, after in _ordinary_edits():
        compile_schema(after)  # every edited copy is a schema the registry would accept
        verdict = classify_schemas(before, after)
        count += 1
        if verdict.bump is Bump.MAJOR:
            offenders.append((name, _majors(verdict)))
    assert count > 150
    assert offenders == []


def test_only_annotation_edits_are_patch() -> None:
    for name, before, after in _ordinary_edits():
        if name.endswith((": describe", ": title", ": examples", ": reorder",
                          ": add unused $defs")):
            assert classify_schemas(before, after).bump is Bump.PATCH, name
