"""The generated schema family, its instances and its edits, for the classifier's property tests
(tests/contracts/test_classify_properties.py); the tests here check the family itself.

Family (documents with ``$defs``): objects with properties, required lists, additionalProperties
(absent, true, false or a schema), patternProperties, propertyNames, unevaluatedProperties and
members declared again in an ``allOf``; arrays; integers, numbers, strings, booleans and nulls
with bounds, multipleOf, patterns, enums, consts, type lists and ``not``; anyOf/oneOf/allOf;
``$ref`` to ``$defs`` (sometimes beside unevaluatedProperties; one definition may be recursive).

Instances (:class:`Instances`) are drawn broadly from a schema's declared surface: through
references and branches (allOf members merged), declared properties, names matching a
patternProperties regex, and undeclared names where additionalProperties admits them. Callers
filter them with the validator. The caller model is SPEC 1.4's "optional property added is
MINOR": a caller sends a name to an object only when some subschema at that place declares or
matches it, or admits it through an additionalProperties schema, or when it is one of the
:data:`EXTRA` names, which no edit ever declares as a property. So undeclared names *are* sent to
open objects, and a pattern that takes them over must be judged.

Edits are named rows (predicate on a node, mutation) in three tables: :data:`LOOSEN` (never
breaks a caller), :data:`TIGHTEN` (always does) and :data:`NEUTRAL` (either, depending on what
they meet: where classifiers go wrong). Some rows target one classifier check each, so that
disabling that check makes a property test fail.
"""

from __future__ import annotations

import copy
import math
import random
import re
from collections.abc import Callable
from functools import cache, cached_property
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolkeeper.contracts.classify.refs import value_key
from toolkeeper.contracts.validate import compile_schema

SETTINGS = settings(max_examples=400, derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                           HealthCheck.data_too_large])

NAMES = ("a", "b", "c", "d")  # property names the generator and the edits declare
EXTRA = ("x1", "x2", "y")  # never declared as properties; sent wherever undeclared names are
KEYS = NAMES + EXTRA
PATTERNS = ("^a$", "^[ab]", "^x", "1$", "^[a-z]+$", "^x2$", "^y")
STRING_PATTERNS = {"^[a-z]*$": "abcxyz", "^[a-c]*$": "abc"}
PROPERTY_NAMES: tuple[Any, ...] = ({"maxLength": 2}, {"pattern": "^[a-x]"},
                                   {"enum": ["a", "b", "x1", "y"]}, {"minLength": 2})
WORDS = ("alpha", "beta", "gamma", "delta")
Schema = dict[str, Any]
Draw = Callable[..., Any]

# ---------------------------------------------------------------- the schema family


@cache
@st.composite
def integer_schemas(draw: Draw) -> Schema:
    schema: Schema = {"type": "integer"}
    if draw(st.booleans()):
        schema["enum"] = sorted(draw(st.sets(st.integers(-20, 20), min_size=1, max_size=4)))
        return schema
    low = draw(st.none() | st.integers(-50, 50))
    if low is not None:
        schema[draw(st.sampled_from(["minimum", "exclusiveMinimum"]))] = low
    if draw(st.booleans()):
        top = (low if low is not None else -50) + draw(st.integers(30, 100))
        schema[draw(st.sampled_from(["maximum", "exclusiveMaximum"]))] = top
    if draw(st.booleans()):
        schema["multipleOf"] = draw(st.sampled_from([2, 3, 5, 10]))
    if draw(st.booleans()):
        schema["default"] = draw(st.integers(-5, 5))
    return schema


@cache
@st.composite
def number_schemas(draw: Draw) -> Schema:
    schema: Schema = {"type": "number"}
    low = draw(st.none() | st.integers(-50, 50))
    if low is not None:
        schema["minimum"] = low
    if draw(st.booleans()):
        schema["maximum"] = (low if low is not None else -50) + draw(st.integers(1, 100)) + 0.5
    return schema


@cache
@st.composite
def string_schemas(draw: Draw) -> Schema:
    schema: Schema = {"type": "string"}
    choice = draw(st.sampled_from(["enum", "const", "free", "free"]))
    if choice == "enum":
        schema["enum"] = sorted(draw(st.sets(st.sampled_from(WORDS), min_size=1)))
    elif choice == "const":
        schema["const"] = draw(st.sampled_from(WORDS))
    else:
        low = draw(st.integers(0, 3))
        if low:
            schema["minLength"] = low
        if draw(st.booleans()):
            schema["maxLength"] = low + draw(st.integers(0, 5))
        if draw(st.booleans()):
            schema["pattern"] = draw(st.sampled_from(sorted(STRING_PATTERNS)))
    if draw(st.booleans()):
        schema["description"] = draw(st.sampled_from(WORDS))
    return schema


SCALAR_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(WORDS))


@cache
@st.composite
def loose_schemas(draw: Draw) -> Schema:
    """Type lists, consts and enums of mixed types, ``not``."""
    kind = draw(st.sampled_from(["types", "const", "enum", "not"]))
    if kind == "types":
        return {"type": sorted(draw(st.sets(st.sampled_from(
            ["integer", "number", "string", "boolean", "null"]), min_size=2, max_size=3)))}
    if kind == "const":
        return {"const": draw(SCALAR_VALUES)}
    if kind == "enum":
        values = draw(st.lists(SCALAR_VALUES, min_size=1, max_size=4, unique_by=value_key))
        return {"enum": values}
    return {"type": draw(st.sampled_from(["integer", "string"])),
            "not": {"enum": draw(st.lists(SCALAR_VALUES, min_size=1, max_size=3,
                                          unique_by=value_key))}}


@cache
def scalar_schemas() -> st.SearchStrategy[Schema]:
    nullable = st.sampled_from(["integer", "string"]).map(lambda t: {"type": [t, "null"]})
    # Fresh copies: edits mutate drawn nodes, and a shared value would change later draws.
    return st.one_of(integer_schemas(), number_schemas(), string_schemas(),
                     st.just({"type": "boolean"}), st.just({"type": "null"}), nullable,
                     loose_schemas(), st.just({})).map(copy.deepcopy)


@cache
@st.composite
def array_schemas(draw: Draw, depth: int, refs: tuple[str, ...]) -> Schema:
    schema: Schema = {"type": "array", "items": draw(node_schemas(depth - 1, refs))}
    low = draw(st.integers(0, 2))
    if low:
        schema["minItems"] = low
    if draw(st.booleans()):
        schema["maxItems"] = low + draw(st.integers(0, 3))
    if low == 0 and draw(st.booleans()):
        schema["uniqueItems"] = True
    return schema


@cache
@st.composite
def object_schemas(draw: Draw, depth: int, refs: tuple[str, ...] = (), *,
                   at_root: bool = False) -> Schema:
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, min_size=2 if at_root else 0,
                          max_size=4 if at_root else 3))
    schema: Schema = {"type": "object",
                      "properties": {name: draw(node_schemas(depth - 1, refs)) for name in names}}
    required = [n for n in names if draw(st.booleans())]
    if required:
        schema["required"] = required
    extra = draw(st.sampled_from(["absent", "true", "false", "schema"]))
    if extra != "absent":
        schema["additionalProperties"] = {"true": True, "false": False}.get(extra) \
            if extra != "schema" else draw(scalar_schemas())
    if draw(st.integers(0, 2)) == 0:
        patterns = draw(st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=2, unique=True))
        schema["patternProperties"] = {p: draw(scalar_schemas()) for p in patterns}
    if draw(st.integers(0, 4)) == 0:
        schema["propertyNames"] = copy.deepcopy(draw(st.sampled_from(PROPERTY_NAMES)))
    if extra == "absent" and draw(st.integers(0, 5)) == 0:
        schema["unevaluatedProperties"] = draw(st.just(False) | scalar_schemas())
    if depth > 0 and draw(st.integers(0, 3)) == 0:  # members declared at the same place
        schema["allOf"] = [draw(object_schemas(depth - 1, refs))]
    return schema


@cache
@st.composite
def combinator_schemas(draw: Draw, depth: int, refs: tuple[str, ...]) -> Schema:
    keyword = draw(st.sampled_from(["anyOf", "oneOf", "allOf"]))
    if keyword == "allOf":  # conjuncts that can hold together: open objects, or type + bound
        if draw(st.booleans()):
            return {"allOf": [draw(object_schemas(depth - 1, refs)) for _ in range(2)]}
        return {"allOf": [{"type": "integer"}, {"minimum": draw(st.integers(-5, 5))}]}
    branches = draw(st.lists(node_schemas(depth - 1, refs), min_size=2, max_size=3))
    schema: Schema = {keyword: branches}
    if draw(st.integers(0, 3)) == 0 and all(b.get("type") == "object" for b in branches):
        schema["unevaluatedProperties"] = False
    return schema


@cache
def node_schemas(depth: int, refs: tuple[str, ...] = ()) -> st.SearchStrategy[Schema]:
    options = [scalar_schemas()] * 3  # weights: most nodes are leaves
    if refs:  # a reference, sometimes beside unevaluatedProperties (it sees the target's members)
        options.append(st.tuples(st.sampled_from(refs), st.integers(0, 3)).map(
            lambda t: {"$ref": t[0], **({"unevaluatedProperties": False} if t[1] == 0 else {})}))
    if depth > 0:
        options += [array_schemas(depth, refs), object_schemas(depth, refs),
                    combinator_schemas(depth, refs)]
    return st.one_of(options)


TREE: Schema = {"type": "object", "properties": {
    "v": {"type": "integer"},
    "kids": {"type": "array", "maxItems": 2, "items": {"$ref": "#/$defs/tree"}}}}


@st.composite
def documents(draw: Draw) -> Schema:
    """A root object schema, with ``$defs`` its nodes may reference."""
    defs: Schema = {}
    for name in draw(st.lists(st.sampled_from(["d1", "d2"]), unique=True, max_size=2)):
        defs[name] = draw(st.one_of(scalar_schemas(), object_schemas(1)))
    if draw(st.integers(0, 3)) == 0:
        defs["tree"] = copy.deepcopy(TREE)
    refs = tuple(f"#/$defs/{name}" for name in sorted(defs))
    root = draw(object_schemas(2, refs, at_root=True))
    if defs:
        root["$defs"] = defs
    return root


# ---------------------------------------------------------------- instances of a schema
# Instances come from a seeded random.Random (the seed is drawn by Hypothesis, so the run stays
# deterministic): building Hypothesis strategies per schema node costs more than the tests.

SCALARS: tuple[Any, ...] = (None, True, False, 0, 1, -1, 5, 2.5, "", "a", "alpha", "zeta")


def _resolve(root: Schema, node: Any) -> Any:
    for _ in range(8):
        if not (isinstance(node, dict) and isinstance(node.get("$ref"), str)):
            break
        target: Any = root
        for part in node["$ref"].lstrip("#/").split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        node = target
    return node


def _int_range(schema: Schema) -> tuple[int, int]:
    low, high = -60, 60
    for name, bound in (("minimum", math.ceil), ("exclusiveMinimum", lambda v: math.floor(v) + 1)):
        if isinstance(schema.get(name), (int, float)):
            low = max(low, bound(schema[name]))
    for name, bound in (("maximum", math.floor), ("exclusiveMaximum", lambda v: math.ceil(v) - 1)):
        if isinstance(schema.get(name), (int, float)):
            high = min(high, bound(schema[name]))
    return low, high


def _admits_undeclared(extra: Any) -> str:
    if extra is False:
        return "closed"
    if extra is True or not isinstance(extra, dict) or not set(extra) - {"description"}:
        return "open"
    return "schema"


class Instances:
    """Values drawn from a schema's declared surface (through references, branches, patterns
    and additionalProperties), meant to be valid under it; callers filter with the validator."""

    def __init__(self, root: Schema, seed: int) -> None:
        self.root = root
        self.rng = random.Random(seed)

    def anything(self, depth: int) -> Any:
        roll = self.rng.random()
        if depth <= 0 or roll < 0.7:
            return self.rng.choice(SCALARS)
        if roll < 0.85:
            return [self.anything(depth - 1) for _ in range(self.rng.randint(0, 2))]
        return {k: self.anything(depth - 1) for k in self.rng.sample(EXTRA, self.rng.randint(0, 2))}

    def draw(self, schema: Any, depth: int = 4) -> Any:
        schema = _resolve(self.root, schema)
        if schema is False or not isinstance(schema, (dict, bool)):
            return self.anything(depth)
        if schema is True or not schema or self.rng.random() < 0.03:
            return self.anything(depth)
        if "const" in schema:
            return copy.deepcopy(schema["const"])
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return copy.deepcopy(self.rng.choice(schema["enum"]))
        for keyword in ("anyOf", "oneOf", "allOf"):
            if isinstance(schema.get(keyword), list) and schema[keyword]:
                rest = {k: v for k, v in schema.items() if k != keyword}
                branches = schema[keyword] if keyword == "allOf" else [
                    self.rng.choice(schema[keyword])]
                parts = [self.draw(sub, depth) for sub in [*branches, *([rest] if rest else [])]]
                if all(isinstance(part, dict) for part in parts):  # an object: merge members
                    self.rng.shuffle(parts)  # which part's value of a shared name wins varies
                    return {k: v for part in parts for k, v in part.items()}
                return self.rng.choice(parts)
        declared = schema.get("type")
        types = [declared] if isinstance(declared, str) else declared or list(self._BY_TYPE)
        kind = self.rng.choice([t for t in types if t in self._BY_TYPE] or ["null"])
        return self._BY_TYPE[kind](self, schema, depth)

    def integer(self, schema: Schema, depth: int) -> Any:
        low, high = _int_range(schema)
        step = schema.get("multipleOf", 1)
        step = step if isinstance(step, int) and step > 0 else 1
        first, last = -(-low // step), high // step
        if first > last:
            return low
        # Bounds and their neighbours are where classifiers go wrong: favour them.
        k = self.rng.choice([first, last, first + 1, last - 1, self.rng.randint(first, last)])
        return max(first, min(last, k)) * step

    def number(self, schema: Schema, depth: int) -> Any:
        value = self.integer({k: v for k, v in schema.items() if k != "multipleOf"}, depth)
        return value + 0.5 if self.rng.random() < 0.3 else value

    def string(self, schema: Schema, depth: int) -> Any:
        if self.rng.random() < 0.2:
            return self.rng.choice(WORDS)
        alphabet = STRING_PATTERNS.get(schema.get("pattern", ""), "abcxyz")
        low, high = schema.get("minLength", 0), schema.get("maxLength", 7)
        low, high = (low, high) if isinstance(low, int) and isinstance(high, int) else (0, 7)
        size = self.rng.randint(low, max(low, min(high, low + 6)))
        return "".join(self.rng.choice(alphabet) for _ in range(size))

    def array(self, schema: Schema, depth: int) -> Any:
        low = schema.get("minItems", 0) if isinstance(schema.get("minItems"), int) else 0
        high = schema.get("maxItems", low + 3) if isinstance(schema.get("maxItems"), int) else 3
        if depth <= 0:
            return []
        size = self.rng.randint(low, max(low, min(high, low + 3)))
        return [self.draw(schema.get("items", True), depth - 1) for _ in range(size)]

    def object(self, schema: Schema, depth: int) -> Any:
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        patterns = schema.get("patternProperties") or {}
        required = set(schema.get("required", []))
        extra = schema.get("additionalProperties", schema.get("unevaluatedProperties", True))
        kind = _admits_undeclared(_resolve(self.root, extra))
        out: dict[str, Any] = {}
        for key in KEYS:
            matching = [p for p in sorted(patterns) if re.search(p, key)]
            if key in props:
                source: Any = props[key]
            elif matching:
                source = patterns[self.rng.choice(matching)]
            elif kind == "schema" or (kind == "open" and key in EXTRA):
                source = extra
            else:
                continue
            if key in required or self.rng.random() < 0.4:
                out[key] = self.draw(source, depth - 1) if depth > 0 else None
        return out

    _BY_TYPE: ClassVar[dict[str, Callable[[Instances, Schema, int], Any]]] = {
        "integer": integer, "number": number, "string": string,
        "boolean": lambda self, s, d: self.rng.random() < 0.5,
        "null": lambda self, s, d: None, "array": array, "object": object,
    }


def valid(schema: Schema, instance: Any) -> bool:
    return compile_schema(schema).is_valid(instance)


def valid_instances(data: st.DataObject, schema: Schema, count: int = 8) -> list[Any]:
    source = Instances(schema, data.draw(st.integers(0, 2**32 - 1), label="instance seed"))
    return [x for x in (source.draw(schema) for _ in range(count)) if valid(schema, x)]


# ---------------------------------------------------------------- edits


def _nodes(node: Any, *, positive: bool = False) -> list[Schema]:
    """Every schema node of a document (root first), definitions and branches included; with
    ``positive``, only where a narrower node is a narrower document: not under ``not`` (which
    inverts), ``oneOf`` (exclusivity) or ``$defs`` (referenced from anywhere)."""
    if not isinstance(node, dict):
        return []
    found = [node]
    skip = {"not", "oneOf", "$defs"} if positive else set()
    for key in ("properties", "patternProperties", "$defs"):
        for sub in (node.get(key) or {}).values() if key not in skip else ():
            found.extend(_nodes(sub, positive=positive))
    for key in ("items", "additionalProperties", "propertyNames", "not"):
        if key not in skip:
            found.extend(_nodes(node.get(key), positive=positive))
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in node.get(key) or [] if key not in skip else ():
            found.extend(_nodes(sub, positive=positive))
    return found


def _types(node: Schema) -> list[str]:
    declared = node.get("type")
    return [declared] if isinstance(declared, str) else list(declared or [])


def _fresh_value(node: Schema) -> Any:
    if "integer" in _types(node) or "number" in _types(node):
        return max([v for v in node.get("enum", []) if isinstance(v, int)] + [0]) + 1
    return "zeta"


def _is_object(node: Schema) -> bool:
    return node.get("type") == "object"


class Facts:
    """A document being edited, with the facts edit predicates ask about (computed once, over
    the document and the original it is an edit of: edits compose)."""

    def __init__(self, root: Schema, origin: Schema | None = None) -> None:
        self.root = root
        self._origin = (origin,) if origin is not None else ()
        self._both = _nodes(root) + [n for doc in self._origin for n in _nodes(doc)]

    @cached_property
    def declared(self) -> frozenset[str]:
        """Property names some subschema declares, matches with a pattern or admits through an
        additionalProperties or unevaluatedProperties schema (any of them may be sent where
        that subschema applies)."""
        nodes = self._both
        if any(_admits_undeclared(n.get(key, True)) == "schema" for n in nodes
               for key in ("additionalProperties", "unevaluatedProperties")):
            return frozenset(NAMES)
        patterns = {p for node in nodes for p in node.get("patternProperties", {})}
        return frozenset({name for node in nodes for name in node.get("properties", {})}
                         | {name for name in NAMES if any(re.search(p, name) for p in patterns)})

    @cached_property
    def evaluated(self) -> int:
        """How often unevaluatedProperties occurs (what it sees moves with any member, and one
        inside another's in-place subschema changes what the outer one sees)."""
        return max(sum("unevaluatedProperties" in node for node in _nodes(doc))
                   for doc in (self.root, *self._origin))


# An edit: (applies to this node of this document?, apply it to the node (may draw)).
Edit = tuple[Callable[[Schema, Facts], bool], Callable[[Draw, Schema, Schema], None]]


def _set(key: str, value: Callable[[Schema], Any]) -> Callable[[Draw, Schema, Schema], None]:
    return lambda draw, node, doc: node.__setitem__(key, value(node))


def _drop(key: str) -> Callable[[Draw, Schema, Schema], None]:
    return lambda draw, node, doc: node.pop(key)


def _has(key: str) -> Callable[[Schema, Facts], bool]:
    return lambda node, doc: key in node


def _new_optional(taken: frozenset[str]) -> str | None:
    """A name no subschema declares or matches (SPEC 1.4: MINOR to add to an open object)."""
    return next((n for n in NAMES if n not in taken), None)


LOOSEN: dict[str, Edit] = {
    "type widened": (lambda n, d: isinstance(n.get("type"), str) and n["type"] != "null",
                     _set("type", lambda n: [n["type"], "null"])),
    "integer to number": (lambda n, d: n.get("type") == "integer",
                          _set("type", lambda n: "number")),
    "type dropped": (_has("type"), _drop("type")),
    "enum value added": (_has("enum"), _set("enum", lambda n: [*n["enum"], _fresh_value(n)])),
    "enum dropped": (_has("enum"), _drop("enum")),
    "const dropped": (_has("const"), _drop("const")),
    "minimum lowered": (lambda n, d: isinstance(n.get("minimum"), int),
                        _set("minimum", lambda n: n["minimum"] - 5)),
    "exclusiveMinimum dropped": (_has("exclusiveMinimum"), _drop("exclusiveMinimum")),
    "maximum raised": (lambda n, d: isinstance(n.get("maximum"), (int, float)),
                       _set("maximum", lambda n: n["maximum"] + 5)),
    "exclusiveMaximum dropped": (_has("exclusiveMaximum"), _drop("exclusiveMaximum")),
    "minLength dropped": (_has("minLength"), _drop("minLength")),
    "maxLength raised": (lambda n, d: isinstance(n.get("maxLength"), int),
                         _set("maxLength", lambda n: n["maxLength"] + 3)),
    "minItems dropped": (_has("minItems"), _drop("minItems")),
    "maxItems dropped": (_has("maxItems"), _drop("maxItems")),
    "multipleOf to a divisor": (lambda n, d: n.get("multipleOf", 1) != 1,
                                _set("multipleOf", lambda n: 1)),
    "multipleOf dropped": (_has("multipleOf"), _drop("multipleOf")),
    "uniqueItems dropped": (_has("uniqueItems"), _drop("uniqueItems")),
    "pattern dropped": (_has("pattern"), _drop("pattern")),
    "requirement dropped": (lambda n, d: bool(n.get("required")),
                            _set("required", lambda n: n["required"][1:])),
    "optional property added": (
        # additionalProperties absent or true: {} may be a loosened schema of an earlier edit
        lambda n, d: _is_object(n) and n.get("additionalProperties", True) is True
        and _new_optional(d.declared) is not None and not d.evaluated,
        lambda draw, n, d: n.setdefault("properties", {}).__setitem__(
            _new_optional(Facts(d).declared), {"type": "integer"})),
    "additionalProperties opened": (
        lambda n, d: n.get("additionalProperties") is False and not d.evaluated,
        _drop("additionalProperties")),
    "propertyNames dropped": (_has("propertyNames"), _drop("propertyNames")),
    "anyOf branch added": (lambda n, d: "anyOf" in n and not d.evaluated,
                           lambda draw, n, d: n["anyOf"].append(draw(scalar_schemas()))),
    "allOf conjunct dropped": (lambda n, d: len(n.get("allOf", [])) > 1 and not d.evaluated,
                               lambda draw, n, d: n["allOf"].pop()),
    "not subschema narrowed": (lambda n, d: len(n.get("not", {}).get("enum", [])) > 1,
                               lambda draw, n, d: n["not"]["enum"].pop()),
    # A default in it would be a default removed (SPEC); beside a $ref the classifier compares
    # allOf: [target] with the bare target, and beside another one it changes what that one
    # sees: both fail closed (imprecise, not unsound).
    "unevaluatedProperties dropped": (
        lambda n, d: "unevaluatedProperties" in n and "$ref" not in n and d.evaluated == 1
        and not (isinstance(n["unevaluatedProperties"], dict)
                 and "default" in n["unevaluatedProperties"]),
        _drop("unevaluatedProperties")),
    "pattern property added to a closed object": (
        lambda n, d: n.get("additionalProperties") is False and not n.get("patternProperties")
        and "y" not in n.get("properties", {}) and not d.evaluated,
        lambda draw, n, d: n.__setitem__("patternProperties", {"^y": draw(scalar_schemas())})),
    "pattern property added wider than additionalProperties": (
        lambda n, d: _admits_undeclared(n.get("additionalProperties", True)) == "schema"
        and "^x" not in n.get("patternProperties", {}) and not d.evaluated,
        lambda draw, n, d: n.setdefault("patternProperties", {}).__setitem__("^x", {})),
    "default added": (lambda n, d: "default" not in n, _set("default", lambda n: 0)),
    "description changed": (lambda n, d: True, _set("description", lambda n: "changed")),
}

TIGHTEN: dict[str, Edit] = {
    "nullable narrowed": (lambda n, d: isinstance(n.get("type"), list),
                          _set("type", lambda n: n["type"][0])),
    "number to integer": (lambda n, d: n.get("type") == "number",
                          _set("type", lambda n: "integer")),
    "enum introduced": (lambda n, d: "enum" not in n and "const" not in n,
                        _set("enum", lambda n: [_fresh_value(n)])),
    "enum value removed": (lambda n, d: len(n.get("enum", [])) >= 2,
                           _set("enum", lambda n: n["enum"][1:])),
    "minimum raised or set": (lambda n, d: "exclusiveMinimum" not in n,
                              _set("minimum", lambda n: n.get("minimum", -10) + 10)),
    "maximum lowered or set": (lambda n, d: "exclusiveMaximum" not in n,
                               _set("maximum", lambda n: n.get("maximum", 10) - 10)),
    "minLength raised": (lambda n, d: True,
                         _set("minLength", lambda n: n.get("minLength", 0) + 2)),
    "multipleOf set": (lambda n, d: "multipleOf" not in n, _set("multipleOf", lambda n: 7)),
    "multipleOf to a multiple": (_has("multipleOf"),
                                 _set("multipleOf", lambda n: n["multipleOf"] * 2)),
    "uniqueItems set": (lambda n, d: not n.get("uniqueItems"), _set("uniqueItems", lambda n: True)),
    "pattern set": (lambda n, d: n.get("pattern") != "^[a-c]*$",
                    _set("pattern", lambda n: "^[a-c]*$")),
    "property required": (
        lambda n, d: bool(set(n.get("properties", {})) - set(n.get("required", []))),
        _set("required", lambda n: [*n.get("required", []), sorted(
            set(n["properties"]) - set(n.get("required", [])))[0]])),
    "property removed": (lambda n, d: bool(n.get("properties")),
                         lambda draw, n, d: n["properties"].pop(sorted(n["properties"])[0])),
    "additionalProperties closed": (lambda n, d: n.get("additionalProperties", True) is not False,
                                    _set("additionalProperties", lambda n: False)),
    "default changed": (_has("default"), _set("default", lambda n: [n["default"]])),
    "default removed": (_has("default"), _drop("default")),
    "const set": (lambda n, d: "const" not in n, _set("const", lambda n: "omega")),
    "propertyNames set": (lambda n, d: _is_object(n) and "propertyNames" not in n,
                          _set("propertyNames", lambda n: {"maxLength": 1})),
    "branch removed": (lambda n, d: len(n.get("anyOf", n.get("oneOf", []))) > 1,
                       lambda draw, n, d: n["anyOf" if "anyOf" in n else "oneOf"].pop(0)),
    "allOf conjunct added": (_has("allOf"),
                             lambda draw, n, d: n["allOf"].append({"minProperties": 1})),
    "pattern property removed": (lambda n, d: bool(n.get("patternProperties")),
                                 lambda draw, n, d: n["patternProperties"].pop(
                                     sorted(n["patternProperties"])[0])),
    "pattern over a declared property": (  # of a closed object: only the declared name counts
        lambda n, d: bool(n.get("properties")) and n.get("additionalProperties") is False
        and f"^{sorted(n['properties'])[0]}$" not in n.get("patternProperties", {}),
        lambda draw, n, d: n.setdefault("patternProperties", {}).__setitem__(
            f"^{sorted(n['properties'])[0]}$", False)),
    "pattern over undeclared names": (
        lambda n, d: _is_object(n) and n.get("additionalProperties", True) is not False
        and "^x" not in n.get("patternProperties", {}),
        lambda draw, n, d: n.setdefault("patternProperties", {}).__setitem__("^x", False)),
    "pattern over an old pattern's names": (  # same names, another regex: only overlap sees it
        lambda n, d: any(f"(?:{p})" not in n["patternProperties"] for p in n["patternProperties"])
        if isinstance(n.get("patternProperties"), dict) else False,
        lambda draw, n, d: n["patternProperties"].__setitem__(
            "(?:" + min(p for p in n["patternProperties"] if f"(?:{p})" not in n[
                "patternProperties"]) + ")", False)),
    # Dropped too: kept, what it sees changes and that alone fails closed.
    "property declared where a dropped unevaluatedProperties admitted it": (
        lambda n, d: _admits_undeclared(n.get("unevaluatedProperties", True)) == "schema"
        and "additionalProperties" not in n and not n.get("patternProperties")
        and len(n.get("properties", {})) < len(NAMES),
        lambda draw, n, d: (n.pop("unevaluatedProperties"), n.setdefault(
            "properties", {}).__setitem__(min(set(NAMES) - set(n.get("properties", {}))), False))),
    "unevaluatedProperties closed": (lambda n, d: _is_object(n) and n.get(
        "unevaluatedProperties", True) is not False, _set("unevaluatedProperties", lambda n: False)),
}


def _random_pattern_added(draw: Draw, node: Schema, doc: Schema) -> None:
    pats = node.setdefault("patternProperties", {})
    # Patterns over declared names are where the bugs were: offer them as often as the pool.
    over = [f"^{name}$" for name in sorted(node.get("properties", {}))]
    pool = draw(st.sampled_from([PATTERNS, tuple(over) or PATTERNS]))
    choices = [p for p in pool if p not in pats]
    if choices:
        pats[draw(st.sampled_from(choices))] = draw(scalar_schemas())


def _declare_any(draw: Draw, node: Schema, doc: Schema) -> None:
    props = node.setdefault("properties", {})
    choices = [n for n in NAMES if n not in props]
    if choices:
        props[draw(st.sampled_from(choices))] = draw(scalar_schemas())


def _branch_objects(node: Schema) -> list[Schema]:
    """The object schemas applying at ``node``'s place: itself and its in-place branches."""
    branches = [b for key in ("allOf", "anyOf", "oneOf") for b in node.get(key) or []]
    return [b for b in [node, *branches] if isinstance(b, dict) and _is_object(b)]


def _shared_names(node: Schema) -> list[tuple[int, str]]:
    """(branch, name): a name some other branch at the same place declares and it does not."""
    objects = _branch_objects(node)
    return [(j, name) for i, source in enumerate(objects) for name in source.get("properties", {})
            for j, target in enumerate(objects)
            if j != i and name not in target.get("properties", {})]


def _redeclare(draw: Draw, node: Schema, doc: Schema) -> None:
    j, name = draw(st.sampled_from(_shared_names(node)))
    _branch_objects(node)[j].setdefault("properties", {})[name] = draw(scalar_schemas())


def _retarget(draw: Draw, node: Schema, doc: Schema) -> None:
    node["$ref"] = draw(st.sampled_from([f"#/$defs/{n}" for n in sorted(doc.get("$defs", {}))]))


# Edits whose verdict depends on what they meet: the classifier must get them right either way.
NEUTRAL: dict[str, Edit] = {
    "pattern property added": (lambda n, d: _is_object(n), _random_pattern_added),
    "pattern property replaced": (
        lambda n, d: bool(n.get("patternProperties")),
        lambda draw, n, d: n["patternProperties"].__setitem__(
            draw(st.sampled_from(sorted(n["patternProperties"]))), draw(scalar_schemas()))),
    "property declared anywhere": (lambda n, d: _is_object(n), _declare_any),
    "property redeclared beside a sibling": (lambda n, d: bool(_shared_names(n)), _redeclare),
    "propertyNames replaced": (lambda n, d: _is_object(n), lambda draw, n, d: n.__setitem__(
        "propertyNames", copy.deepcopy(draw(st.sampled_from(PROPERTY_NAMES))))),
    "additionalProperties schema set": (lambda n, d: _is_object(n), lambda draw, n, d: n.__setitem__(
        "additionalProperties", draw(scalar_schemas()))),
    "reference retargeted": (lambda n, d: "$ref" in n and len(d.root.get("$defs", {})) > 1,
                             _retarget),
    "oneOf branch added": (_has("oneOf"),
                           lambda draw, n, d: n["oneOf"].append(draw(scalar_schemas()))),
    "node replaced": (lambda n, d: n is not d.root, lambda draw, n, d: (
        n.clear(), n.update(draw(scalar_schemas())))),
}


EDITS: dict[str, Edit] = {**LOOSEN, **TIGHTEN, **NEUTRAL}
assert len(EDITS) == len(LOOSEN) + len(TIGHTEN) + len(NEUTRAL)  # names are unique


@st.composite
def edited(draw: Draw, doc: Schema, groups: tuple[dict[str, Edit], ...], count: int, *,
           positive: bool = False) -> Schema:
    """A copy of ``doc`` with ``count`` applicable edits applied at random nodes (``positive``:
    see :func:`_nodes`). Each edit comes from a group drawn with equal odds, so the few risky
    (neutral) edits are not drowned by the many plain ones."""
    out = copy.deepcopy(doc)
    for _ in range(count):
        # Edit first, then a node it applies to: every edit gets drawn, not just the common ones.
        facts, every = Facts(out, doc), _nodes(out, positive=positive)
        options = []
        for edits in groups:
            found = {name: [node for node in every if applies(node, facts)]
                     for name, (applies, _) in sorted(edits.items())}
            if any(found.values()):
                options.append({name: nodes for name, nodes in found.items() if nodes})
        if options:
            nodes = draw(st.sampled_from(options))
            name = draw(st.sampled_from(sorted(nodes)))
            EDITS[name][1](draw, draw(st.sampled_from(nodes[name])), out)
    return out


_INT: Schema = {"type": "integer"}
_INT_ARRAY: Schema = {"type": "array", "items": _INT}
_ONE_PROP: Schema = {"type": "object", "properties": {"a": _INT}}
# A node each edit applies to, planted as property "d" when a generated document has none.
SEEDS: dict[str, Schema] = {
    "type widened": {"type": "string"},
    "integer to number": {"type": "integer", "minimum": 0},
    "enum value added": {"type": "integer", "enum": [1, 2]},
    "enum dropped": {"type": "integer", "enum": [1, 2]},
    "const dropped": {"type": "string", "const": "alpha"},
    "minimum lowered": {"type": "integer", "minimum": 0},
    "exclusiveMinimum dropped": {"type": "integer", "exclusiveMinimum": 0},
    "maximum raised": {"type": "number", "maximum": 10.5},
    "exclusiveMaximum dropped": {"type": "integer", "exclusiveMaximum": 40},
    "minLength dropped": {"type": "string", "minLength": 2},
    "maxLength raised": {"type": "string", "maxLength": 3},
    "minItems dropped": {**_INT_ARRAY, "minItems": 1},
    "maxItems dropped": {**_INT_ARRAY, "maxItems": 2},
    "multipleOf to a divisor": {"type": "integer", "multipleOf": 5},
    "multipleOf dropped": {"type": "integer", "multipleOf": 5},
    "uniqueItems dropped": {**_INT_ARRAY, "uniqueItems": True},
    "pattern dropped": {"type": "string", "pattern": "^[a-c]*$"},
    "requirement dropped": {**_ONE_PROP, "required": ["a"]},
    "optional property added": {"type": "object", "properties": {}},
    "additionalProperties opened": {**_ONE_PROP, "additionalProperties": False},
    "propertyNames dropped": {"type": "object", "propertyNames": {"maxLength": 2}},
    "anyOf branch added": {"anyOf": [_INT, {"type": "string"}]},
    "allOf conjunct dropped": {"allOf": [_INT, {"minimum": 0}]},
    "not subschema narrowed": {"type": "integer", "not": {"enum": [1, 2]}},
    "unevaluatedProperties dropped": {**_ONE_PROP, "unevaluatedProperties": False},
    "pattern property added to a closed object": {**_ONE_PROP, "additionalProperties": False},
    "pattern property added wider than additionalProperties": {
        **_ONE_PROP, "additionalProperties": {"type": "integer"}},
    "nullable narrowed": {"type": ["string", "null"]},
    "number to integer": {"type": "number"},
    "enum value removed": {"type": "integer", "enum": [1, 2, 3]},
    "multipleOf to a multiple": {"type": "integer", "multipleOf": 3},
    "default changed": {"type": "integer", "default": 1},
    "default removed": {"type": "integer", "default": 1},
    "branch removed": {"anyOf": [_INT, {"type": "string"}]},
    "allOf conjunct added": {"allOf": [{"type": "object"}]},
    "pattern property removed": {"type": "object", "patternProperties": {"^x": _INT}},
    "pattern over a declared property": {**_ONE_PROP, "additionalProperties": False},
    "property declared where a dropped unevaluatedProperties admitted it": {
        **_ONE_PROP, "unevaluatedProperties": {"type": "integer"}},
    "pattern over an old pattern's names": {
        "type": "object", "additionalProperties": False, "patternProperties": {"^x": _INT}},
    "pattern property replaced": {"type": "object", "patternProperties": {"^x": _INT}},
    "oneOf branch added": {"oneOf": [_INT, {"type": "string"}]},
    "property redeclared beside a sibling": {"allOf": [
        {"type": "object", "properties": {"b": {"type": "string"}}},
        {"type": "object", "properties": {"c": {}}}]},
}
# Whole documents for edits a planted node cannot enable.
SEED_DOCUMENTS: dict[str, Schema] = {
    "reference retargeted": {"type": "object", "properties": {"d": {"$ref": "#/$defs/d1"}},
                             "$defs": {"d1": _INT, "d2": {"type": "string"}}},
}


@st.composite
def seeded_pairs(draw: Draw, edits: dict[str, Edit], name: str) -> tuple[Schema, Schema]:
    """(before, after): a generated document (with a seed node planted if the edit applies to
    none of its positive nodes) and a copy with that one edit applied at an applicable one."""
    before = draw(documents())
    applies, apply = edits[name]
    def applicable(doc: Schema) -> bool:
        facts = Facts(doc)
        return any(applies(node, facts) for node in _nodes(doc, positive=True))

    if not applicable(before):
        before["properties"]["d"] = copy.deepcopy(SEEDS.get(name, _INT))
    if not applicable(before):
        before = copy.deepcopy(SEED_DOCUMENTS.get(name) or {
            "type": "object", "properties": {"d": SEEDS.get(name, _INT)}})
    after = copy.deepcopy(before)
    facts = Facts(after)
    nodes = [node for node in _nodes(after, positive=True) if applies(node, facts)]
    apply(draw, draw(st.sampled_from(nodes)), after)
    return before, after


# ---------------------------------------------------------------- the family's own tests


@settings(SETTINGS, max_examples=60)
@given(data=st.data(), doc=documents())
def test_generated_and_edited_documents_are_valid_json_schema(data: st.DataObject,
                                                              doc: Schema) -> None:
    compile_schema(doc)
    compile_schema(data.draw(edited(doc, (LOOSEN, TIGHTEN, NEUTRAL), 3)))


@pytest.mark.parametrize("name", sorted(EDITS))
def test_every_edit_has_a_node_it_applies_to_in_its_seed(name: str) -> None:
    applies, _ = EDITS[name]
    doc = copy.deepcopy(SEED_DOCUMENTS.get(name) or {
        "type": "object", "properties": {"d": SEEDS.get(name, _INT)}})
    facts = Facts(doc)
    assert any(applies(node, facts) for node in _nodes(doc, positive=True))


def test_instances_follow_branches_patterns_and_additional_properties() -> None:
    doc: Schema = {"type": "object", "properties": {"a": {"type": "integer"}},
                   "patternProperties": {"^x": {"type": "string"}},
                   "additionalProperties": {"type": ["boolean", "integer"]},
                   "allOf": [{"type": "object", "properties": {"b": {"const": 1}}}]}
    source = Instances(doc, 0)
    drawn = [source.draw(doc) for _ in range(200)]
    good = [x for x in drawn if valid(doc, x)]
    assert len(good) > 30  # broad on purpose: the validator filters
    assert {"a", "b", "x1", "x2", "y", "c"} <= {key for x in good for key in x}
