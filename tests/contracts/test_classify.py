"""The change classifier (SPEC 1.4) against the fixture corpus in tests/fixtures/classify, plus the
tricky cases spelled out: cycle-safe refs, multipleOf divisors, absent-bound infinities, and an edit
that is both MINOR and MAJOR."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from toolkeeper.contracts.changes import Bump, Verdict
from toolkeeper.contracts.classify import classify, classify_schemas
from toolkeeper.contracts.classify.rules import DIRECTIONS, RULES
from toolkeeper.contracts.spec import spec_from_mapping
from toolkeeper.contracts.validate import compile_schema

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "classify"


def _load() -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = []
    for path in sorted(FIXTURES.glob("*.json")):
        cases.extend(json.loads(path.read_text(encoding="utf-8")))
    return cases


CASES = _load()


def _run(case: dict[str, Any]) -> Verdict:
    if case["kind"] == "contract":
        return classify(spec_from_mapping(case["before"]), spec_from_mapping(case["after"]))
    return classify_schemas(case["before"], case["after"], output=case["kind"] == "output",
                            assert_formats=case.get("assertFormats", False))


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_fixture_case_gets_its_exact_bump_and_rules(case: dict[str, Any]) -> None:
    verdict = _run(case)
    assert verdict.bump.value == case["bump"]
    assert sorted({c.rule for c in verdict.changes}) == case["rules"]
    if "changes" in case:
        assert [[c.path, c.rule] for c in verdict.changes] == case["changes"]


def test_corpus_has_at_least_eighty_uniquely_named_cases_of_every_kind() -> None:
    names = [c["name"] for c in CASES]
    assert len(names) >= 80
    assert len(set(names)) == len(names)
    assert {c["kind"] for c in CASES} == {"input", "output", "contract"}
    for case in CASES:
        assert set(case) <= {"name", "kind", "before", "after", "bump", "rules", "changes",
                             "assertFormats", "schemaValid"}, case["name"]
        assert case["rules"] == sorted(set(case["rules"])), case["name"]


def test_fixture_files_are_canonical_json() -> None:
    for path in sorted(FIXTURES.glob("*.json")):
        text = path.read_text(encoding="utf-8")
        canonical = json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False)
        assert text == canonical + "\n", path.name


def test_fixture_schemas_are_valid_json_schema_unless_marked() -> None:
    for case in CASES:
        if case["kind"] == "contract":
            continue
        for schema in (case["before"], case["after"]):
            if case.get("schemaValid", True):
                compile_schema(schema, assert_formats=case.get("assertFormats", False))


def test_every_rule_in_the_table_is_exercised_by_a_fixture() -> None:
    seen = {rule for case in CASES for rule in case["rules"]}
    assert sorted(set(RULES) - seen) == []
    assert sorted(seen - set(RULES)) == []


def test_every_bump_level_of_every_direction_appears_in_the_corpus() -> None:
    for kind in ("input", "output", "contract"):
        assert {c["bump"] for c in CASES if c["kind"] == kind} == {"major", "minor", "patch"}


def test_rule_ids_are_dotted_lowercase_and_prefixed() -> None:
    for rule_id, row in RULES.items():
        assert rule_id == row.id
        assert rule_id.split(".", 1)[0] in (*DIRECTIONS, "contract")
        assert all(part and part.replace("_", "").isalpha() and part.islower()
                   for part in rule_id.split(".")), rule_id


def test_review_rules_are_patch_and_unanalysable_is_major_both_ways() -> None:
    for row in RULES.values():
        if row.review:
            assert row.bump is Bump.PATCH, row.id
    assert RULES["input.unanalysable"].bump is Bump.MAJOR
    assert RULES["output.unanalysable"].bump is Bump.MAJOR


def _tree(value_type: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "object", "properties": {
        "value": {"type": value_type},
        "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
        **(extra or {}),
    }}
    return {"$ref": "#/$defs/node", "$defs": {"node": node}}


def test_recursive_schema_terminates_and_reports_the_change_once() -> None:
    verdict = classify_schemas(_tree("number"), _tree("integer"))
    assert verdict.bump is Bump.MAJOR
    assert [(c.path, c.rule) for c in verdict.changes] == [
        ("$.properties.value.type", "input.type.narrowed")]


def test_self_referencing_root_without_content_is_unchanged() -> None:
    looped = {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
              "$ref": "#/$defs/a"}
    assert classify_schemas(looped, json.loads(json.dumps(looped))).changes == ()


def test_ref_cycle_against_an_inline_schema_fails_closed() -> None:
    looped = {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}
    verdict = classify_schemas({"type": "object"}, looped)
    assert [c.rule for c in verdict.changes] == ["input.unanalysable"]


def test_identical_remote_refs_are_unchanged_but_different_ones_fail_closed() -> None:
    same = {"properties": {"a": {"$ref": "https://example.com/a.json"}}}
    assert classify_schemas(same, json.loads(json.dumps(same))).bump is Bump.PATCH
    other = {"properties": {"a": {"$ref": "https://example.com/b.json"}}}
    verdict = classify_schemas(same, other)
    assert verdict.bump is Bump.MAJOR
    assert "fails closed" in verdict.changes[0].reason


@pytest.mark.parametrize(("old", "new", "rule"), [
    (10, 5, "input.multiple_of.divisor"),
    (10, 2.5, "input.multiple_of.divisor"),
    (0.3, 0.1, "input.multiple_of.divisor"),
    (1, 0.01, "input.multiple_of.divisor"),
    (5, 10, "input.multiple_of.multiple"),
    (0.1, 0.3, "input.multiple_of.multiple"),
    (4, 6, "input.multiple_of.changed"),
    (0.2, 0.3, "input.multiple_of.changed"),
    (2**70, 2**69, "input.multiple_of.divisor"),
])
def test_multiple_of_change_is_classified_by_exact_divisibility(old: Any, new: Any,
                                                                rule: str) -> None:
    verdict = classify_schemas({"type": "number", "multipleOf": old},
                               {"type": "number", "multipleOf": new})
    assert [c.rule for c in verdict.changes] == [rule]
    assert verdict.bump is RULES[rule].bump


@pytest.mark.parametrize("keyword", ["minimum", "exclusiveMinimum", "minLength", "minItems",
                                     "minProperties"])
def test_adding_a_lower_bound_of_zero_is_judged_against_minus_infinity(keyword: str) -> None:
    verdict = classify_schemas({}, {keyword: 0})
    if keyword in ("minimum", "exclusiveMinimum"):
        assert [c.rule for c in verdict.changes] == ["input.bound.lower_raised"]
        assert verdict.bump is Bump.MAJOR
    else:  # a count cannot be negative: 0 is the absent bound itself
        assert verdict.changes == ()


@pytest.mark.parametrize("keyword", ["maximum", "exclusiveMaximum", "maxLength", "maxItems",
                                     "maxProperties", "maxContains"])
def test_adding_any_upper_bound_is_judged_against_plus_infinity(keyword: str) -> None:
    verdict = classify_schemas({}, {keyword: 10**9})
    assert [c.rule for c in verdict.changes] == ["input.bound.upper_lowered"]
    assert verdict.bump is Bump.MAJOR


def test_an_edit_that_is_both_minor_and_major_is_major_and_lists_both() -> None:
    before = {"type": "object", "properties": {"mode": {"enum": ["r", "w"]}}}
    after = {"type": "object", "properties": {"mode": {"enum": ["r"]}, "extra": {"type": "string"}}}
    verdict = classify_schemas(before, after)
    assert verdict.bump is Bump.MAJOR
    assert {(c.rule, c.bump) for c in verdict.changes} == {
        ("input.enum.narrowed", Bump.MAJOR), ("input.property.added", Bump.MINOR)}


def test_output_direction_flips_the_same_edit() -> None:
    before, after = {"type": "integer"}, {"type": "number"}
    assert classify_schemas(before, after).bump is Bump.MINOR
    assert classify_schemas(before, after, output=True).bump is Bump.MAJOR


def test_changes_are_sorted_by_path_then_rule_and_deterministic() -> None:
    before = {"type": "object", "properties": {"b": {"type": "string"}, "a": {"enum": [1, 2]}},
              "required": ["b"]}
    after = {"type": "object", "properties": {"a": {"enum": [1, 3]}, "c": {"type": "integer"}},
             "required": ["c"]}
    first = classify_schemas(before, after)
    keys = [(c.path, c.rule) for c in first.changes]
    assert keys == sorted(keys)
    assert first == classify_schemas(json.loads(json.dumps(before)), json.loads(json.dumps(after)))


def test_classify_does_not_mutate_its_inputs() -> None:
    before = {"type": "object", "properties": {"a": {"$ref": "#/$defs/s", "maxLength": 3}},
              "$defs": {"s": {"type": "string"}}}
    after = {"type": "object", "properties": {"a": {"$ref": "#/$defs/s"}},
             "$defs": {"s": {"type": "string"}}}
    snapshot = json.dumps([before, after], sort_keys=True)
    classify_schemas(before, after)
    assert json.dumps([before, after], sort_keys=True) == snapshot


def test_unanalysable_reason_says_it_fails_closed() -> None:
    verdict = classify_schemas({"propertyNames": {"type": "string"}, "x-vendor": 1},
                               {"propertyNames": {"type": "string"}, "x-vendor": 2})
    assert [(c.path, c.rule) for c in verdict.changes] == [('$["x-vendor"]', "input.unanalysable")]
    assert "fails closed" in verdict.changes[0].reason


def test_doc_change_reason_flags_review_because_descriptions_steer_models() -> None:
    verdict = classify_schemas({"description": "a"}, {"description": "b"})
    assert verdict.bump is Bump.PATCH
    assert "review" in verdict.changes[0].reason and "steer models" in verdict.changes[0].reason


def test_db_query_example_is_major(examples_dir: Path) -> None:
    def load(name: str) -> Any:
        return spec_from_mapping(json.loads((examples_dir / name).read_text()))

    verdict = classify(load("db.query-3.0.0.json"), load("db.query-4.0.0.json"))
    assert verdict.bump is Bump.MAJOR
    rules = {c.rule for c in verdict.changes}
    assert {"input.property.removed", "input.required.added", "input.enum.narrowed"} <= rules


def test_verdict_to_dict_has_the_wire_shape() -> None:
    verdict = classify_schemas({"type": "string"}, {"type": "integer"})
    data = verdict.to_dict()
    assert data["bump"] == "major"
    assert data["changes"][0] == {"rule": "input.type.narrowed", "path": "$.type",
                                  "bump": "major", "reason": data["changes"][0]["reason"]}


def _paths_rules(verdict: Verdict) -> list[tuple[str, str]]:
    return [(c.path, c.rule) for c in verdict.changes]


def test_ref_whose_sibling_repeats_a_target_keyword_is_an_all_of_of_both() -> None:
    def schema(limit: int) -> dict[str, Any]:
        return {"properties": {"a": {"$ref": "#/$defs/s", "maxLength": limit}},
                "$defs": {"s": {"type": "string", "maxLength": 10}}}

    verdict = classify_schemas(schema(5), schema(3))
    assert _paths_rules(verdict) == [("$.properties.a.allOf[1].maxLength",
                                      "input.bound.upper_lowered")]


def test_ref_to_the_root_recurses_and_terminates() -> None:
    def schema(kind: str) -> dict[str, Any]:
        return {"type": "object", "properties": {"v": {"type": kind}, "child": {"$ref": "#"}}}

    verdict = classify_schemas(schema("number"), schema("integer"))
    assert _paths_rules(verdict) == [("$.properties.v.type", "input.type.narrowed")]


def test_json_pointer_through_an_array_index_and_escapes_resolves() -> None:
    def schema(limit: int) -> dict[str, Any]:
        return {"$defs": {"a/b": {"anyOf": [{"type": "string", "maxLength": limit}]}},
                "properties": {"x": {"$ref": "#/$defs/a~1b/anyOf/0"}}}

    verdict = classify_schemas(schema(5), schema(4))
    assert _paths_rules(verdict) == [("$.properties.x.maxLength", "input.bound.upper_lowered")]


def test_ref_to_a_true_schema_with_a_sibling_is_the_sibling() -> None:
    before = {"properties": {"x": {"$ref": "#/$defs/t", "type": "string"}}, "$defs": {"t": True}}
    after = {"properties": {"x": {"type": "integer"}}}
    assert {c.rule for c in classify_schemas(before, after).changes} == {
        "input.type.narrowed", "input.type.widened"}


def test_ref_to_something_that_is_not_a_schema_fails_closed() -> None:
    before = {"required": ["a"], "properties": {"x": {"$ref": "#/required", "type": "string"}}}
    after = {"required": ["a"], "properties": {"x": {"type": "string"}}}
    assert _paths_rules(classify_schemas(before, after)) == [
        ('$.properties.x["$ref"]', "input.unanalysable")]


@pytest.mark.parametrize("patterns", [{"^a": {}, "a$": {}}, {"(": {}}])
def test_property_declared_where_patterns_are_ambiguous_or_invalid_fails_closed(
        patterns: dict[str, Any]) -> None:
    before = {"type": "object", "patternProperties": patterns}
    after = {"type": "object", "patternProperties": patterns, "properties": {"aa": {}}}
    assert _paths_rules(classify_schemas(before, after)) == [
        ("$.properties.aa", "input.unanalysable")]


def test_a_value_that_is_not_a_schema_fails_closed() -> None:
    verdict = classify_schemas({"properties": {"a": 1}}, {"properties": {"a": 2}})
    assert _paths_rules(verdict) == [("$.properties.a", "input.unanalysable")]


def test_a_numeric_keyword_holding_a_string_fails_closed() -> None:
    verdict = classify_schemas({"minimum": "5"}, {"minimum": "6"})
    assert _paths_rules(verdict) == [("$.minimum", "input.unanalysable")]


def test_one_of_with_disjoint_const_branches_stays_minor_when_a_branch_is_added() -> None:
    before = {"oneOf": [{"const": 1}, {"const": 2}]}
    after = {"oneOf": [{"const": 1}, {"const": 2}, {"const": 3}]}
    assert _paths_rules(classify_schemas(before, after)) == [("$.oneOf[2]", "input.branch.added")]


def test_doc_only_change_under_not_is_a_doc_change() -> None:
    before = {"not": {"const": 1, "description": "a"}}
    after = {"not": {"const": 1, "description": "b"}}
    verdict = classify_schemas(before, after)
    assert verdict.bump is Bump.PATCH
    assert _paths_rules(verdict) == [("$.not.description", "input.doc.changed")]


def test_a_property_declared_under_a_unicode_class_pattern_is_compared_with_that_pattern() -> None:
    # The regex is read by the validator's engine (ECMA 262 \p{L}), not Python's re.
    before = {"type": "object", "patternProperties": {"^\\p{L}+$": {"type": "string"}}}
    after = {**before, "properties": {"é": {"type": "string", "maxLength": 3}}}
    assert _paths_rules(classify_schemas(before, after)) == [
        ('$.properties["é"].maxLength', "input.bound.upper_lowered")]


def test_not_over_a_recursive_reference_terminates() -> None:
    def schema(kind: str) -> dict[str, Any]:
        return {"type": "object",
                "properties": {"v": {"type": kind}, "n": {"not": {"$ref": "#"}}}}

    verdict = classify_schemas(schema("integer"), schema("number"))
    assert verdict.bump is Bump.MAJOR
    assert ("$.properties.v.type", "input.type.widened") in _paths_rules(verdict)


def test_a_pattern_added_over_a_recursive_property_compares_it_once() -> None:
    before = {"type": "object", "additionalProperties": False,
              "properties": {"a": {"$ref": "#"}}}
    after = {**before, "patternProperties": {"^a$": {"$ref": "#"}}}
    assert _paths_rules(classify_schemas(before, after)) == [
        ('$.patternProperties["^a$"]', "input.pattern_property.added_to_closed")]
