"""What the before schema declares at one instance location, across its in-place subschemas.

SPEC 1.4 makes "optional property added" MINOR on an open object: callers do not send a name
the schema never declared. But a schema object is not alone at its instance location: its
``allOf``/``anyOf``/``oneOf``/``not``/``if``/``then``/``else``/``dependentSchemas`` subschemas
(and ``$ref`` targets) apply to the same value, and a name one of them declares *is* sent by
callers: declared in ``properties``, matched by a ``patternProperties`` regex, or admitted by an
``additionalProperties`` schema. So is a name any of them (the object itself too) *names*: in
``required``, ``dependentRequired``, ``dependentSchemas`` or a ``propertyNames`` enum/const.
Declaring it on another, open, subschema constrains values callers already send.

:func:`location_of` walks the before side from the schema at a location (the root of a document,
a property value, an item, ...) through its in-place subschemas and keeps every object schema
met, marking the *conjunctive* ones (reached only through ``allOf`` and references): every value
of a member satisfies what each of those applies to its name. A name a conjunctive ``not``
forbids outright (``not: {required: [x]}``, or an ``anyOf`` of such) is in no valid value, so no
subschema "declares" it, whatever names it under that ``not``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from toolkeeper.contracts.classify.patterns import openness, pattern_matches
from toolkeeper.contracts.classify.refs import SchemaDocument, Unresolvable

__all__ = ["Location", "location_of"]

# In-place applicators: (keyword, holds a list?, conjunctive?).
_IN_PLACE: tuple[tuple[str, bool, bool], ...] = (
    ("allOf", True, True), ("anyOf", True, False), ("oneOf", True, False),
    ("not", False, False), ("if", False, False), ("then", False, False), ("else", False, False),
)
# A walk visits at most this many schemas; a bigger location is unknown (fails closed).
_BUDGET = 2000


@dataclass(frozen=True, slots=True)
class _Members:
    """What one subschema at the location says about members."""

    node: dict[str, Any]
    properties: dict[str, Any]
    patterns: dict[str, Any]
    additional: Any  # the additionalProperties schema as written
    kind: str  # openness of the resolved additionalProperties
    admits: bool  # undeclared names are admitted by an additionalProperties schema or by
    # unevaluatedProperties (which names it sees depends on the rest: no use as a conjunct)
    conjunctive: bool
    named: frozenset[str]  # names the subschema mentions without declaring them

    def governing(self, name: str) -> list[Any] | None:
        """The schemas this subschema applies to member ``name`` (None: a regex is unknown)."""
        found = [self.properties[name]] if name in self.properties else []
        for pattern, sub in sorted(self.patterns.items()):
            hit = pattern_matches(pattern, name)
            if hit is None:
                return None
            if hit:
                found.append(sub)
        if found:
            return found
        return [{"open": True, "closed": False}.get(self.kind, self.additional)]


@dataclass(frozen=True)
class Location:
    """The object subschemas at a location (``known`` is False when the walk could not see
    everything)."""

    known: bool = True
    members: tuple[_Members, ...] = ()
    #: Names no valid value holds: a conjunctive subschema forbids each (``not: {required}``).
    forbidden: frozenset[str] = frozenset()

    def declares(self, name: str, *, excluding: Any = None) -> bool | None:
        """Whether some subschema (other than ``excluding``) declares ``name``, matches it with
        a regex, or admits it through an additionalProperties or unevaluatedProperties schema,
        or whether any subschema (``excluding`` too) names it (None: unknown)."""
        if not self.known:
            return None
        if name in self.forbidden:
            return False  # no value holds it: declaring it cannot reject one
        for member in self.members:
            if name in member.named:
                return True
            if member.node is excluding:
                continue
            hits = [pattern_matches(pattern, name) for pattern in member.patterns]
            if None in hits:
                return None
            if name in member.properties or any(hits) or member.admits:
                return True
        return False

    def conjunctive(self, name: str) -> list[Any]:
        """Before schemas every value of member ``name`` satisfies."""
        found: list[Any] = []
        for member in self.members:
            if member.conjunctive:
                found.extend(member.governing(name) or [])
        return found


def _strings(value: Any) -> list[str]:
    return [x for x in value if isinstance(x, str)] if isinstance(value, list) else []


def _named(document: SchemaDocument, node: dict[str, Any]) -> frozenset[str]:
    """Member names a schema mentions outside properties/patternProperties: callers send those
    (``required``, both sides of ``dependentRequired``, ``dependentSchemas`` triggers, the
    names a ``propertyNames`` enum or const allows)."""
    names = set(_strings(node.get("required")))
    for key in ("dependentRequired", "dependentSchemas"):
        value = node.get(key)
        if isinstance(value, dict):
            names.update(value)
            if key == "dependentRequired":
                names.update(x for sub in value.values() for x in _strings(sub))
    allowed = document.resolve(node.get("propertyNames"))
    if isinstance(allowed, dict):
        names.update(_strings(allowed.get("enum")))
        if isinstance(allowed.get("const"), str):
            names.add(allowed["const"])
    return frozenset(names)


# Keywords that constrain nothing, for :func:`_forbidding`.
_INERT = frozenset({"$comment", "deprecated", "description", "examples", "readOnly", "title",
                    "writeOnly", "default", "$defs", "definitions", "$anchor", "$dynamicAnchor"})


def _forbidding(document: SchemaDocument, node: Any, depth: int = 0) -> frozenset[str] | None:
    """Names any object holding one of them satisfies ``node`` with (so ``not: node`` forbids
    them); None: every object satisfies it. Exact only for ``required`` of one name, ``type``
    object, ``anyOf`` and ``allOf`` of such; anything else forbids nothing."""
    node = document.resolve(node)
    if not isinstance(node, dict) or depth > 32:
        return frozenset()
    found: frozenset[str] | None = None
    for key, value in node.items():
        part: frozenset[str] | None
        if key in _INERT:
            continue
        if key == "required" and isinstance(value, list) and len(value) <= 1:
            part = frozenset(_strings(value)) if value else None
        elif key == "type" and (value == "object" or (isinstance(value, list) and "object" in value)):
            part = None
        elif key in ("anyOf", "allOf") and isinstance(value, list) and value:
            parts = [_forbidding(document, sub, depth + 1) for sub in value]
            if key == "anyOf":
                part = None if None in parts else frozenset().union(*(p or () for p in parts))
            else:
                known = [p for p in parts if p is not None]
                part = frozenset.intersection(*known) if known else None
        else:
            return frozenset()
        found = part if found is None else found if part is None else found & part
    return found


def location_of(document: SchemaDocument, node: Any) -> Location:
    """Every object subschema of ``node`` (of ``document``) at its instance location."""
    members: list[_Members] = []
    forbidden: set[str] = set()
    seen: set[int] = set()
    stack: list[tuple[Any, bool]] = [(node, True)]
    while stack:
        current, conjunctive = stack.pop()
        current = document.resolve(current)
        if isinstance(current, Unresolvable) or len(seen) > _BUDGET:
            return Location(known=False)
        if not isinstance(current, dict) or id(current) in seen:
            continue
        seen.add(id(current))
        props, patterns = current.get("properties"), current.get("patternProperties")
        additional = current.get("additionalProperties", True)
        kind = openness(document.resolve(additional))
        unevaluated = openness(document.resolve(current.get("unevaluatedProperties", True)))
        members.append(_Members(current, props if isinstance(props, dict) else {},
                                patterns if isinstance(patterns, dict) else {}, additional, kind,
                                kind == "schema" or (kind == "open" and unevaluated == "schema"),
                                conjunctive, _named(document, current)))
        if conjunctive and "not" in current:
            forbidden.update(_forbidding(document, current["not"]) or ())
        for keyword, many, conjunct in _IN_PLACE:
            value = current.get(keyword)
            for sub in (value if isinstance(value, list) else []) if many else (
                    [value] if keyword in current else []):
                stack.append((sub, conjunctive and conjunct))
        dependent = current.get("dependentSchemas")
        if isinstance(dependent, dict):
            stack.extend((sub, False) for sub in dependent.values())
    return Location(True, tuple(members), frozenset(forbidden))
