"""What the before schema declares at one instance location, across its in-place subschemas.

SPEC 1.4 makes "optional property added" MINOR on an open object: callers do not send a name
the schema never declared. But a schema object is not alone at its instance location: its
``allOf``/``anyOf``/``oneOf``/``not``/``if``/``then``/``else``/``dependentSchemas`` subschemas
(and ``$ref`` targets) apply to the same value, and a name one of them declares *is* sent by
callers. Declaring it on another, open, subschema constrains values callers already send.

:func:`location_of` walks the before side from the schema at a location (the root of a document,
a property value, an item, ...) through its in-place subschemas and collects every declared
property name and ``patternProperties`` regex, plus the *conjunctive* declarations: schemas
reached only through ``allOf`` and references, which every value of the name satisfies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from toolkeeper.contracts.classify_members import pattern_matches
from toolkeeper.contracts.classify_refs import SchemaDocument, Unresolvable

__all__ = ["Location", "location_of"]

# In-place applicators: (keyword, holds a list?, conjunctive?).
_IN_PLACE: tuple[tuple[str, bool, bool], ...] = (
    ("allOf", True, True), ("anyOf", True, False), ("oneOf", True, False),
    ("not", False, False), ("if", False, False), ("then", False, False), ("else", False, False),
)
# A walk visits at most this many schemas; a bigger location is unknown (fails closed).
_BUDGET = 2000


@dataclass(frozen=True)
class Location:
    """Names and regexes declared at a location (``known`` is False when the walk could not see
    everything), and the conjunctive declarations: name or regex -> before schemas."""

    known: bool = True
    names: frozenset[str] = frozenset()
    patterns: frozenset[str] = frozenset()
    conjuncts: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    pattern_conjuncts: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)

    def declares(self, name: str) -> bool | None:
        """Whether some subschema declares ``name`` or has a regex matching it (None: unknown)."""
        if not self.known:
            return None
        if name in self.names:
            return True
        hits = [pattern_matches(p, name) for p in sorted(self.patterns)]
        return None if None in hits else any(hits)

    def conjunctive(self, name: str) -> list[Any]:
        """Before schemas every value of member ``name`` satisfies (matching regexes included)."""
        found = list(self.conjuncts.get(name, ()))
        for pattern, schemas in sorted(self.pattern_conjuncts.items()):
            if pattern_matches(pattern, name):
                found.extend(schemas)
        return found


def location_of(document: SchemaDocument, node: Any) -> Location:
    """Everything the schema ``node`` (of ``document``) declares at its instance location."""
    names: set[str] = set()
    patterns: set[str] = set()
    conjuncts: dict[str, list[Any]] = {}
    pattern_conjuncts: dict[str, list[Any]] = {}
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
        for key, target, into in (("properties", names, conjuncts),
                                  ("patternProperties", patterns, pattern_conjuncts)):
            declared = current.get(key)
            if not isinstance(declared, dict):
                continue
            target.update(declared)
            if conjunctive:
                for name, schema in declared.items():
                    into.setdefault(name, []).append(schema)
        for keyword, many, conjunct in _IN_PLACE:
            value = current.get(keyword)
            for sub in (value if isinstance(value, list) else []) if many else (
                    [value] if keyword in current else []):
                stack.append((sub, conjunctive and conjunct))
        dependent = current.get("dependentSchemas")
        if isinstance(dependent, dict):
            stack.extend((sub, False) for sub in dependent.values())
    return Location(True, frozenset(names), frozenset(patterns),
                    {k: tuple(v) for k, v in conjuncts.items()},
                    {k: tuple(v) for k, v in pattern_conjuncts.items()})
