"""Schema-directed, idempotent argument repair (SPEC 1.3).

Rules, each a row in :data:`RULES` (never a guess: no pattern, enum or format is ever "fixed"):

* ``coerce.string_to_integer`` / ``_number`` / ``_boolean`` / ``_null``: a string that exactly
  spells the declared scalar type, and only when the string's own type is not allowed there
  (``"42"`` -> 42, ``"true"`` -> true; ``"yes"`` and ``"00713"`` stay as they are);
* ``coerce.integral_float``: an integral float where ``integer`` (and not ``number``) is declared
  becomes an int (lossless: ``5.0`` -> 5);
* ``drop.additional_property``: properties that ``additionalProperties: false`` forbids;
* ``fill.default``: missing properties that declare a ``default`` (the filled value is repaired
  too, so a second pass finds nothing to do). A ``default`` of ``null`` is never filled: an
  absent property and an explicit null differ (``Optional[x] = None`` in a Python SDK's schema
  means "may be left out"), and repair does not invent a value the caller did not give.

References: a local ``$ref`` is followed when it names exactly one schema of the document: a JSON
pointer (``#/$defs/leg``), a plain-name fragment (``#leg``, an ``$anchor`` or ``$dynamicAnchor``)
and ``$dynamicRef`` (``#leg``) as long as the document is one schema resource (no nested
``$id``, so the dynamic scope holds only the root and the reference lands where the static one
does). Anything else (a remote or relative URI, a nested resource, a pointer or anchor that names
nothing or two schemas, a cycle of references) is not resolved exactly, and nothing at or below
that value is repaired: repair never guesses a schema.

Filling defaults must not break arguments: a default can trip keywords that count or combine
properties (``oneOf``, ``maxProperties``, ``not: {required: ...}``, ``dependentRequired`` ...).
So the coercions and drops are applied first, then each missing default (with its own nested
fills, one unit) is tried in path order against the compiled validator and kept only when it
adds no error to those the arguments already have (on valid arguments: when they stay valid);
rejected fills are tried again after each accepted one, until a round accepts none.

Idempotence, ``repair(repair(x).arguments) == repair(x).arguments`` (SPEC invariant 9, asserted
by property tests): each rule is idempotent on its own and they touch disjoint keys; the second
pass finds every coercion and drop done and every kept fill present, and the fills it tries
again are exactly those the first pass's last round rejected against the same arguments, so it
rejects them again. Repair is for clients and explicit tools; the gateway never coerces
silently (SPEC 3.4).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import unquote

from toolkeeper.contracts.validate import CompiledSchema, Issue, compile_schema, format_path

__all__ = ["RULES", "Repair", "RepairResult", "repair", "repair_arguments"]

_INTEGER = re.compile(r"^-?(?:0|[1-9][0-9]*)$")
_NUMBER = re.compile(r"^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$")
_MAX_REF_HOPS = 64
_INDEX = re.compile(r"^(?:0|[1-9][0-9]*)$")
_ANCHORS = ("$anchor", "$dynamicAnchor")
_REFS = ("$ref", "$dynamicRef")
# Keywords of a schema object whose value is a schema or a list of schemas, and those whose value
# maps names to schemas: where anchors and nested resources ($id) are looked for.
_SUBSCHEMAS = frozenset({
    "additionalItems", "additionalProperties", "allOf", "anyOf", "contains", "contentSchema",
    "else", "if", "items", "not", "oneOf", "prefixItems", "propertyNames", "then",
    "unevaluatedItems", "unevaluatedProperties"})
_SCHEMA_MAPS = frozenset({"$defs", "definitions", "dependentSchemas", "patternProperties",
                          "properties"})


_ABSENT_SIDE: Final = {"fill.default": "before", "drop.additional_property": "after"}
"""Rule -> the side of its record where the value is absent (a fill had nothing before it, a
drop leaves nothing after it): left out of :meth:`Repair.to_dict`, since ``null`` would say a
null was there."""


@dataclass(frozen=True, slots=True)
class Repair:
    """One applied repair: where, which rule, the value before and after (``None`` on the side
    :data:`_ABSENT_SIDE` names for the rule: no value there)."""

    path: str
    rule: str
    before: Any
    after: Any

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON; the absent side of a fill or a drop is left out, not null."""
        record = {"path": self.path, "rule": self.rule, "before": self.before,
                  "after": self.after}
        absent = _ABSENT_SIDE.get(self.rule)
        if absent is not None:
            del record[absent]
        return record


@dataclass(frozen=True, slots=True)
class RepairResult:
    """Repaired arguments, the repairs applied (in path order), and the errors that remain."""

    arguments: Any
    repairs: tuple[Repair, ...]
    errors: tuple[Issue, ...]

    @property
    def repaired(self) -> bool:
        return bool(self.repairs)


def _parse_integer(text: str) -> int | None:
    if not _INTEGER.fullmatch(text):
        return None
    try:
        return int(text)
    except ValueError:  # beyond Python's int-from-string digit limit: not coercible, never a crash
        return None


def _parse_number(text: str) -> int | float | None:
    if not _NUMBER.fullmatch(text):
        return None
    if _INTEGER.fullmatch(text):
        return _parse_integer(text)
    value = float(text)
    return value if value not in (float("inf"), float("-inf")) else None


_MISSING = object()

# Coercions from a string, tried in this order when the declared types do not allow a string.
_STRING_COERCIONS: tuple[tuple[str, str, Callable[[str], Any]], ...] = (
    ("coerce.string_to_integer", "integer",
     lambda s: n if (n := _parse_integer(s)) is not None else _MISSING),
    ("coerce.string_to_number", "number",
     lambda s: n if (n := _parse_number(s)) is not None else _MISSING),
    ("coerce.string_to_boolean", "boolean",
     lambda s: {"true": True, "false": False}.get(s, _MISSING)),
    ("coerce.string_to_null", "null", lambda s: None if s == "null" else _MISSING),
)

#: Every rule id repair can record, with what it does.
RULES: Mapping[str, str] = {
    "coerce.string_to_integer": "a string spelling a canonical integer where integer is declared",
    "coerce.string_to_number": "a string spelling a JSON number where number is declared",
    "coerce.string_to_boolean": '"true"/"false" where boolean is declared',
    "coerce.string_to_null": '"null" where null is declared',
    "coerce.integral_float": "an integral float where integer (not number) is declared",
    "drop.additional_property": "a property that additionalProperties: false forbids",
    "fill.default": "a missing property that declares a default",
}


def _declared_types(schema: Mapping[str, Any]) -> list[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [t for t in declared if isinstance(t, str)]
    return []


def _allows(types: list[str], value: Any) -> bool:
    if isinstance(value, bool):
        return "boolean" in types
    if isinstance(value, int):
        return "integer" in types or "number" in types
    if isinstance(value, float):
        return "number" in types
    if isinstance(value, str):
        return "string" in types
    if value is None:
        return "null" in types
    if isinstance(value, list):
        return "array" in types
    return "object" in types


def _subschemas(schema: dict[str, Any]) -> Iterator[Any]:
    for key, value in schema.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            yield from value.values()
        elif key in _SUBSCHEMAS:
            yield from value if isinstance(value, list) else (value,)


@dataclass(slots=True)
class _Index:
    """What reference resolution needs to know of a document, gathered in one walk."""

    single_resource: bool = True
    anchors: dict[str, list[Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, root: Any) -> _Index:
        index = cls()
        seen: set[int] = set()
        stack = [root]
        while stack:
            node = stack.pop()
            if not isinstance(node, dict) or id(node) in seen:
                continue
            seen.add(id(node))
            if node is not root and "$id" in node:
                index.single_resource = False  # its anchors and pointers are its own
                continue
            for keyword in _ANCHORS:
                name = node.get(keyword)
                targets = index.anchors.setdefault(name, []) if isinstance(name, str) else None
                if targets is not None and not any(t is node for t in targets):
                    targets.append(node)
            stack.extend(_subschemas(node))
        return index


@dataclass(slots=True)
class _Fill:
    """A missing property's default, repaired, with the repairs it records: applied or not whole."""

    path: str
    container: dict[str, Any]
    key: str
    value: Any
    repairs: list[Repair]


_OPAQUE = object()  # a schema repair cannot know exactly: the value under it is left alone


class _Repairer:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.repairs: list[Repair] = []
        self.fills: list[_Fill] = []
        self.filling = 0
        self._index: _Index | None = None

    def resolve(self, schema: Any) -> Any:
        """Follow ``$ref``/``$dynamicRef`` to the one schema they name, or :data:`_OPAQUE`."""
        for _ in range(_MAX_REF_HOPS):
            if not isinstance(schema, dict):
                return schema
            refs = [schema[keyword] for keyword in _REFS if keyword in schema]
            if not refs:
                return schema
            if len(refs) > 1 or not isinstance(refs[0], str):
                return _OPAQUE
            schema = self.lookup(refs[0])
        return _OPAQUE  # a cycle of references

    def lookup(self, ref: str) -> Any:
        if self._index is None:
            self._index = _Index.of(self.root)
        if not ref.startswith("#") or not self._index.single_resource:
            return _OPAQUE
        fragment = unquote(ref[1:])
        if fragment and not fragment.startswith("/"):
            targets = self._index.anchors.get(fragment, [])
            return targets[0] if len(targets) == 1 else _OPAQUE
        target: Any = self.root
        for token in fragment.split("/")[1:]:
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and token in target:
                target = target[token]
            elif isinstance(target, list) and _INDEX.fullmatch(token) and int(token) < len(target):
                target = target[int(token)]
            else:
                return _OPAQUE
        return target

    def record(self, loc: tuple[str | int, ...], rule: str, before: Any, after: Any) -> None:
        self.repairs.append(Repair(format_path(loc), rule, before, after))

    def value(self, value: Any, schema: Any, loc: tuple[str | int, ...]) -> Any:
        schema = self.resolve(schema)
        if not isinstance(schema, dict):
            return value
        types = _declared_types(schema)
        if types and not _allows(types, value):
            value = self.scalar(value, types, loc)
        if isinstance(value, dict):
            return self.object(value, schema, loc)
        if isinstance(value, list):
            return self.array(value, schema, loc)
        return value

    def scalar(self, value: Any, types: list[str], loc: tuple[str | int, ...]) -> Any:
        if isinstance(value, str):
            for rule, target, convert in _STRING_COERCIONS:
                if target in types:
                    converted = convert(value)
                    if converted is not _MISSING:
                        self.record(loc, rule, value, converted)
                        return converted
        elif type(value) is float and "integer" in types and value.is_integer():
            converted = int(value)
            self.record(loc, "coerce.integral_float", value, converted)
            return converted
        return value

    def object(self, value: dict[str, Any], schema: dict[str, Any],
               loc: tuple[str | int, ...]) -> dict[str, Any]:
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        out: dict[str, Any] = {}
        for key in sorted(value):
            if key not in props and self.forbidden(key, schema):
                self.record((*loc, key), "drop.additional_property", value[key], None)
                continue
            sub = props.get(key)
            out[key] = self.value(value[key], sub, (*loc, key)) if sub is not None else value[key]
        for key in sorted(props):
            if key in out:
                continue
            sub = self.resolve(props[key])
            if isinstance(sub, dict) and "default" in sub and sub["default"] is not None:
                self.fill(out, key, sub, (*loc, key))
        return out

    def fill(self, container: dict[str, Any], key: str, schema: dict[str, Any],
             loc: tuple[str | int, ...]) -> None:
        """Repair a default into a unit; a top-level unit waits for :func:`_apply_fills`, one
        inside another unit's value goes with it."""
        outer, self.repairs = self.repairs, []
        self.filling += 1
        self.record(loc, "fill.default", None, copy.deepcopy(schema["default"]))
        value = self.value(copy.deepcopy(schema["default"]), schema, loc)
        self.filling -= 1
        unit, self.repairs = self.repairs, outer
        if self.filling:
            container[key] = value
            self.repairs.extend(unit)
        else:
            self.fills.append(_Fill(format_path(loc), container, key, value, unit))

    def forbidden(self, key: str, schema: dict[str, Any]) -> bool:
        if schema.get("additionalProperties") is not False:
            return False
        patterns = schema.get("patternProperties")
        if isinstance(patterns, dict):
            for pattern in patterns:
                if compile_schema({"type": "string", "pattern": pattern}).is_valid(key):
                    return False
        return True

    def array(self, value: list[Any], schema: dict[str, Any],
              loc: tuple[str | int, ...]) -> list[Any]:
        prefix = schema.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        items = schema.get("items")
        out = []
        for i, item in enumerate(value):
            sub = prefix[i] if i < len(prefix) else items
            out.append(self.value(item, sub, (*loc, i)) if sub is not None else item)
        return out


def repair(arguments: Any, schema: dict[str, Any], *, assert_formats: bool = False
           ) -> RepairResult:
    """Repair ``arguments`` against ``schema``; the input is not mutated."""
    worker = _Repairer(schema)
    repaired = worker.value(copy.deepcopy(arguments), schema, ())
    compiled = compile_schema(schema, assert_formats=assert_formats)
    errors = _apply_fills(compiled, repaired, worker.fills, worker.repairs)
    repairs = tuple(sorted(worker.repairs, key=lambda r: (r.path, r.rule)))
    return RepairResult(repaired, repairs, tuple(errors))


def _apply_fills(compiled: CompiledSchema, arguments: Any, fills: list[_Fill],
                 repairs: list[Repair]) -> list[Issue]:
    """Put each fill in (path order) and keep it when it adds no error, in rounds until one
    keeps none; returns the errors that remain."""
    errors = set(compiled.errors(arguments))
    pending = sorted(fills, key=lambda f: f.path)
    kept = True
    while kept:
        kept = False
        for fill in list(pending):
            fill.container[fill.key] = fill.value
            trial = set(compiled.errors(arguments))
            if trial <= errors:
                errors, kept = trial, True
                pending.remove(fill)
                repairs.extend(fill.repairs)
            else:
                del fill.container[fill.key]
    return sorted(errors)


def repair_arguments(arguments: Any, schema: dict[str, Any]) -> tuple[Any, list[Issue]]:
    """SPEC 1.3's shape: ``(repaired, remaining_errors)``. Use :func:`repair` for the record."""
    result = repair(arguments, schema)
    return result.arguments, list(result.errors)
