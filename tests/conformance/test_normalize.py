"""Matching an answer against a transcript's pattern after normalizing volatile fields: listed
keys only, arrays of equal length, scalars equal in value and JSON type, ``<absent>`` for a key
that must be missing, and a rule replacing only a value that satisfies it."""

from __future__ import annotations

from typing import Any

import pytest

from toolkeeper.conformance.normalize import matches, normalized


@pytest.mark.parametrize(("pattern", "value", "problem"), [
    ({"id": 1}, {"id": 1, "extra": True}, None),
    ({"id": 1}, {"id": "1"}, "$.id: '1' where the case expects 1"),
    ({"id": 1}, {"id": 1.0}, "$.id: 1.0 where the case expects 1"),
    ({"ok": True}, {"ok": 1}, "$.ok: 1 where the case expects True"),
    ({"id": 1}, {}, "$.id: missing"),
    ({"resultType": "<absent>"}, {"resultType": "complete"},
     "$.resultType: present where the case expects it absent"),
    ({"resultType": "<absent>"}, {}, None),
    ([1, 2], [1, 2, 3], "$: 3 items where the case expects 2 items"),
    ([{"a": 1}], [{"a": 2}], "$[0].a: 2 where the case expects 1"),
    ({"r": {}}, {"r": []}, "$.r: array where the case expects an object"),
])
def test_a_pattern_matches_by_listed_keys_and_exact_json_types(pattern: Any, value: Any,
                                                               problem: str | None) -> None:
    assert matches(pattern, value, "$") == problem


def test_a_rule_replaces_only_a_value_that_satisfies_it() -> None:
    rules = {"$.result.ttlMs": "integer", "$.result.tools": "array",
             "$.result.items[1]": "string", "$.result.gone": "present"}
    answer = {"result": {"ttlMs": "soon", "tools": [{"name": "x"}], "items": [1, "b"]}}
    assert normalized(answer, rules) == {
        "result": {"ttlMs": "soon", "tools": "<array>", "items": [1, "<string>"]}}
    assert answer["result"]["tools"] == [{"name": "x"}]


def test_a_value_under_a_denied_key_is_never_quoted() -> None:
    problem = matches({"password": "x"}, {"password": "hunter2-Qx81vLm"}, "$")
    assert problem == "$.password: [REDACTED] where the case expects [REDACTED]"
