"""What is not JSON data, and where: :mod:`toolkeeper.contracts.json_values`."""

from __future__ import annotations

import enum
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolkeeper.contracts.json_values import NOT_JSON_MESSAGES, find_not_json, is_json_data


def test_each_part_that_is_not_json_is_found_at_its_path_with_its_reason() -> None:
    value = {"a": [1, 2.5, math.nan, "ok", "caf\udce9"], 1: "x", "d": {1, 2},
             "k\udce9": 0, "n": {"inf": -math.inf}}
    assert sorted(find_not_json(value), key=repr) == sorted([
        ((), "key_not_string"),
        (("a", 2), "not_finite"),
        (("a", 4), "lone_surrogate"),
        (("d",), "not_json"),
        (("k\udce9",), "lone_surrogate"),
        (("n", "inf"), "not_finite"),
    ], key=repr)
    assert set(NOT_JSON_MESSAGES) >= {reason for _, reason in find_not_json(value)}
    assert is_json_data(value) is False


def test_subclasses_of_json_scalars_are_json_data() -> None:
    class Colour(enum.StrEnum):
        RED = "red"

    class Size(enum.IntEnum):
        BIG = 3

    class Ratio(float):
        pass

    value = {"colour": Colour.RED, "size": Size.BIG, "ratio": Ratio(0.5), "bad": Ratio("nan")}
    assert find_not_json(value) == [(("bad",), "not_finite")]
    assert is_json_data({k: v for k, v in value.items() if k != "bad"}) is True
    assert is_json_data(value) is False


def test_a_shared_container_is_json_data_and_a_cycle_is_not() -> None:
    shared = {"x": [1, "two", None, True]}
    assert find_not_json([shared, shared, (shared,)]) == []
    assert is_json_data([shared, shared]) is True
    cycle: dict[str, Any] = {"ok": 1}
    cycle["self"] = cycle
    assert find_not_json(cycle) == [(("self",), "not_json")]
    assert is_json_data(cycle) is False


def test_any_depth_is_walked_without_recursion() -> None:
    deep: Any = math.nan
    for _ in range(100_000):
        deep = [deep]
    found = find_not_json(deep)
    assert [(len(loc), reason) for loc, reason in found] == [(100_000, "not_finite")]
    assert is_json_data(deep) is False


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20)
_bad_leaf = st.sampled_from([math.nan, math.inf, "\ud800", b"bytes", frozenset()])


@settings(max_examples=200, derandomize=True)
@given(_json, st.lists(_bad_leaf, max_size=2))
def test_the_fast_answer_agrees_with_the_walk_that_finds_the_paths(
        value: Any, bad: list[Any]) -> None:
    candidate = [value, *bad] if bad else value
    assert is_json_data(candidate) is (find_not_json(candidate) == [])
    assert is_json_data(candidate) is (not bad)
