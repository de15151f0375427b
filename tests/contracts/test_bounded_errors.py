"""CompiledSchema.bounded_errors: the errors of at most a given number of an instance's values.
Within the bound it is exactly ``errors``; past it the instance is cut (arrays by index, objects
by sorted key), the validator builds errors for the cut instance only, and only errors the cut
cannot have changed are listed, ``truncated``."""

from __future__ import annotations

from typing import Any

from toolkeeper.contracts.validate import BoundedIssues, CompiledSchema, Issue

ENUM = [f"value-{i:03d}" for i in range(200)]
SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "required": ["n"],
    "properties": {
        "n": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "minItems": 5, "items": {"enum": ENUM}},
        "map": {"type": "object", "required": ["zz"], "additionalProperties": {"type": "integer"}},
    },
}


class _Counting:
    """Stands in for the jsonschema-rs validator: counts the errors it builds."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.built = 0

    def iter_errors(self, instance: Any) -> Any:
        errors = list(self.inner.iter_errors(instance))
        self.built += len(errors)
        return iter(errors)


def _counted() -> tuple[CompiledSchema, _Counting]:
    compiled = CompiledSchema(SCHEMA)  # not the cached one: this test swaps its validator
    counting = _Counting(compiled._validator)
    compiled._validator = counting
    return compiled, counting


def _paths(found: BoundedIssues) -> list[tuple[str, str]]:
    return [(issue.path, issue.keyword) for issue in found.issues]


def test_an_instance_within_the_bound_gets_exactly_its_errors_untruncated() -> None:
    compiled, _ = _counted()
    instance = {"n": -1, "tags": [0, "value-001"], "x": 1}
    assert compiled.bounded_errors(instance, 1000) == BoundedIssues(
        compiled.errors(instance), False)
    assert compiled.bounded_errors({"n": 1}, 1) == BoundedIssues([], False)


def test_the_validator_builds_errors_for_the_first_values_only() -> None:
    compiled, counting = _counted()
    found = compiled.bounded_errors({"n": 1, "tags": [0] * 100_000}, 1000)
    assert counting.built <= 1000
    assert found.truncated is True
    # the object, "n", "tags", then the first 997 items; minItems holds for the whole array
    assert _paths(found) == sorted((f"$.tags[{i}]", "enum") for i in range(997))


def test_an_object_is_cut_by_sorted_key_whatever_order_its_keys_come_in() -> None:
    compiled, _ = _counted()
    extra = {f"k{i:04d}": 0 for i in range(5000)}
    forward = compiled.bounded_errors({"n": 1, **extra}, 100)
    backward = compiled.bounded_errors(dict(reversed(list({"n": 1, **extra}.items()))), 100)
    assert forward == backward
    assert _paths(forward) == [(f"$.k{i:04d}", "additionalProperties") for i in range(99)]


def test_a_required_property_past_the_cut_is_missing_only_when_the_instance_lacks_it() -> None:
    compiled, _ = _counted()
    present = compiled.bounded_errors(
        {"map": {f"a{i:03d}": 0 for i in range(50)} | {"a000": "x", "zz": 0}, "n": 1}, 20)
    assert present.truncated is True  # "zz" and "n" sort past the 20 values checked
    assert _paths(present) == [("$.map.a000", "type")]
    absent = compiled.bounded_errors({"map": {f"a{i:03d}": 0 for i in range(50)}}, 20)
    assert ("$.map.zz", "required") in _paths(absent)
    assert ("$.n", "required") in _paths(absent)


def test_a_count_keyword_the_cut_can_break_is_not_reported_at_a_cut_container() -> None:
    compiled, _ = _counted()
    found = compiled.bounded_errors({"n": 1, "tags": ["value-000"] * 10 + [0]}, 6)
    assert found.truncated is True  # 3 of the 11 items are checked: minItems is not judged
    assert found.issues == [Issue("$.tags", "holds more values than are checked for errors",
                                  "size")]


def test_an_invalid_instance_whose_errors_are_all_past_the_cut_lists_one_size_error() -> None:
    compiled, _ = _counted()
    instance = {"n": 1, "tags": ["value-000"] * 20 + [0]}
    assert not compiled.is_valid(instance)
    found = compiled.bounded_errors(instance, 10)
    assert (found.truncated, _paths(found)) == (True, [("$.tags", "size")])
