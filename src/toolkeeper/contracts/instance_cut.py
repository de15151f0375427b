"""Cutting an instance down to what validation lists errors for (SPEC 1.2).

jsonschema-rs cannot build an error for a value more than 255 containers deep, and builds every
error of an instance before it yields the first. :class:`Cut` copies an instance keeping at most
:data:`CUT_DEPTH` containers of depth and, given a budget, at most that many values (:func:`fits`
tells whether a cut is needed); :func:`exact_despite_cuts` tells which errors of the cut copy
hold for the instance itself. :class:`~toolkeeper.contracts.validate.CompiledSchema` validates
the cut copy and lists those errors.
"""

from __future__ import annotations

import heapq
from typing import Any

from toolkeeper.contracts.issues import value_at
from toolkeeper.contracts.strict_integer import STRICT_INT

__all__ = ["CUT_DEPTH", "TOO_DEEP", "TOO_WIDE", "Cut", "exact_despite_cuts", "fits"]

# The errors of an instance nested too deeply for jsonschema-rs to build them: the instance is cut
# at CUT_DEPTH containers (deeper non-empty ones emptied, keeping their JSON type) and validated
# again. Kept, being exact on the cut instance: errors of keywords that look at their value's own
# shape (_SHAPE_KINDS; at a cut, its type only: _TYPE_KINDS) or compare a scalar (_SCALAR_KINDS),
# reached through no keyword whose outcome hangs on deeper content (_CONTENT_GATED). The rest is
# dropped, represented by one ``depth`` error at the first cut that no kept ``type`` error covers
# (a value of the wrong type must change whatever it holds): an invalid instance lists something.
CUT_DEPTH = 128
_TYPE_KINDS = frozenset({"type", "falseSchema"})
_SHAPE_KINDS = _TYPE_KINDS | {
    STRICT_INT, "required", "additionalProperties", "propertyNames", "minProperties",
    "maxProperties", "minItems", "maxItems", "minLength", "maxLength", "pattern", "format",
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
_SCALAR_KINDS = frozenset({"enum", "const"})
_CONTENT_GATED = frozenset({"if", "then", "else", "not", "anyOf", "oneOf", "contains",
                            "unevaluatedProperties", "unevaluatedItems"})
# At a container cut short, the errors its kept values alone prove (a ``required`` error is
# checked against the uncut container: :func:`exact_despite_cuts`).
_WIDE_KINDS = _TYPE_KINDS | {"additionalProperties", "propertyNames", "maxItems",
                             "maxProperties", "uniqueItems"}
TOO_DEEP = "is nested too deeply for its errors to be listed"
TOO_WIDE = "holds more values than are checked for errors"


def exact_despite_cuts(error: Any, deep_at: set[tuple[str | int, ...]],
                       wide_at: set[tuple[str | int, ...]], instance: Any) -> bool:
    loc = tuple(error.instance_path)
    name = error.kind.name
    if loc in deep_at:
        kinds = _TYPE_KINDS
    elif loc in wide_at:
        kinds = _WIDE_KINDS
        whole = value_at(instance, loc)
        if name == "required" and isinstance(whole, dict) and error.kind.value not in whole:
            kinds = kinds | {"required"}  # the uncut container lacks the property as well
    else:
        kinds = _SHAPE_KINDS
    if not isinstance(error.instance, (dict, list)):
        kinds = kinds | _SCALAR_KINDS  # a scalar is never cut: comparing it is exact
    return name in kinds and _CONTENT_GATED.isdisjoint(
        part for part in error.schema_path if isinstance(part, str))


def fits(value: Any, budget: int) -> bool:
    """Whether ``value`` holds at most ``budget`` values (a walk of at most ``budget + 1``)."""
    stack = [value]
    left = budget
    while stack:
        node = stack.pop()
        left -= 1
        if left < 0:
            return False
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return True


class Cut:
    """Copies an instance keeping at most ``budget`` values (None: any number): each non-empty
    container :data:`CUT_DEPTH` deep is emptied (its location appended to ``deep``), each
    container whose values past the budget are left out is cut short (its location appended to
    ``wide``). Values are taken depth first, an array's by index, an object's by key in sorted
    order; recursion is bounded by the cut depth."""

    __slots__ = ("deep", "left", "wide")

    def __init__(self, budget: int | None) -> None:
        self.left = budget
        self.deep: list[tuple[str | int, ...]] = []
        self.wide: list[tuple[str | int, ...]] = []

    def copy(self, value: Any, loc: tuple[str | int, ...]) -> Any:
        if self.left is not None:
            self.left -= 1
        if not isinstance(value, (dict, list)) or not value:
            return value
        if len(loc) >= CUT_DEPTH:
            self.deep.append(loc)
            return {} if isinstance(value, dict) else []
        if self.left is None:
            if isinstance(value, dict):
                return {key: self.copy(item, (*loc, key)) for key, item in value.items()}
            return [self.copy(item, (*loc, index)) for index, item in enumerate(value)]
        if isinstance(value, list):
            items: list[Any] = []
            for index, item in enumerate(value):
                if self.left <= 0:
                    break
                items.append(self.copy(item, (*loc, index)))
            if len(items) < len(value):
                self.wide.append(loc)
            return items
        members: dict[Any, Any] = {}
        for key in _first_keys(value, self.left):
            if self.left <= 0:
                break
            members[key] = self.copy(value[key], (*loc, key))
        if len(members) < len(value):
            self.wide.append(loc)
        return members


def _first_keys(value: dict[Any, Any], count: int) -> list[Any]:
    """The ``count`` smallest keys, sorted (insertion order when keys do not compare: a value
    that is not JSON data, from the Python API)."""
    try:
        return sorted(value) if len(value) <= count else heapq.nsmallest(count, value)
    except TypeError:
        return list(value)[:count]
